/*
 * sizeclass.h — the small-object size classes: 16-byte steps up to 128 bytes, then four
 * classes per doubling up to 64 KiB (at most 25% internal waste above 128 bytes), but eight
 * from 4 KiB to 8 KiB (512-byte steps from 2 KiB to 8 KiB; at most 12.5% there): a page and a
 * small header is a common block (sqlite's page cache: 4,096 + 272 bytes), and four classes
 * there would waste a sixth of every one (5,120 bytes for 4,368; 4,608 with eight). Every class
 * is a multiple of 16 bytes, so every block is 16-aligned, as glibc's: C++'s new and vectorised
 * code rely on it, which is why there are no 8-byte steps below 128. Up to 2 KiB
 * (nearly every request of real programs) the class comes from a 129-byte table indexed by
 * the size in 16-byte units: one load, and no branch on the size that a mix of small and
 * larger sizes would mispredict (churn, with the formula: docs/design.md).
 * Above 2 KiB it is computed.
 *
 *   class:  0   1  ...  7    8    9  ...  23    24  ...  27    28    29  ...  35     36  ...  47
 *   size:  16  32  ... 128  160  192  ... 2048  2560 ... 4096  4608  5120 ... 8192  10240 ... 65536
 */
#ifndef NP_SIZECLASS_H
#define NP_SIZECLASS_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "pool/chunk.h"

#define NP_NCLASSES 48
#define NP_SMALL_MAX 65536

#define NP_TABLE_MAX 2048
/* The first class above NP_TABLE_MAX (2,560 bytes): from it on, a thread caches the blocks it
 * frees (cache.h). */
#define NP_CACHE_FIRST 24

extern const uint32_t np_class_size[NP_NCLASSES];
/* np_class_of16[(size + 15) >> 4]: the class of size, for size <= NP_TABLE_MAX. */
extern const uint8_t np_class_of16[NP_TABLE_MAX / 16 + 1];

/* The class of a request of size bytes (size <= NP_SMALL_MAX; 0 counts as 1). */
NP_INLINE unsigned np_size_class(size_t size)
{
	if (NP_LIKELY(size <= NP_TABLE_MAX))
		return np_class_of16[(size + 15) >> 4];
	if (size <= 8192) /* (2 KiB, 8 KiB]: 512-byte steps */
		return 20 + (unsigned)((size - 1) >> 9);
	unsigned lg = 63u - (unsigned)__builtin_clzll(size - 1); /* 13..15 */
	return 36 + (lg - 13) * 4 + (unsigned)(((size - 1) >> (lg - 2)) & 3);
}

/* Bytes of the slab of a class (a page run aligned to a metadata slot, pool/chunk.h): at
 * least a slot's 128 KiB and 8 blocks. */
NP_INLINE size_t np_class_slab_bytes(unsigned c)
{
	size_t want = (size_t)np_class_size[c] * 8;
	size_t b = (size_t)1 << NP_META_SHIFT;
	while (b < want)
		b <<= 1;
	return b;
}

#endif /* NP_SIZECLASS_H */
