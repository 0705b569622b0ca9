/*
 * fuzz_input.h — how the fuzz target reads its input: a byte stream consumed from the front,
 * where a missing byte reads as 0 (so every input is a valid program and a truncated one means
 * the same up to where it stops), and the decoders of its operands: sizes, alignments, counts,
 * node ids. Each decoder starts with a selector byte that picks a range, then reads what that
 * range needs. gen_corpus.py writes the same encoding: keep the two in step.
 */
#ifndef NP_FUZZ_INPUT_H
#define NP_FUZZ_INPUT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "fuzz_ops.h"

struct np_fz_in {
	const uint8_t *p, *base; /* next byte; the first */
	size_t n;                /* bytes left */
};

static inline uint8_t np_fz_u8(struct np_fz_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static inline uint32_t np_fz_u16(struct np_fz_in *in)
{
	uint32_t lo = np_fz_u8(in);
	return lo | (uint32_t)np_fz_u8(in) << 8;
}

static inline uint32_t np_fz_u32(struct np_fz_in *in)
{
	uint32_t lo = np_fz_u16(in);
	return lo | np_fz_u16(in) << 16;
}

#define NP_FZ_KiB ((size_t)1 << 10)
#define NP_FZ_MiB ((size_t)1 << 20)

/* Size class c (0..NP_FZ_NCLASSES - 1) as sizeclass.h defines them: 16-byte steps to 128, then
 * 4 per doubling to 64 KiB, but 8 from 4 KiB to 8 KiB. Only the public behaviour depends on it (a class boundary is where a request
 * moves to the next slab); written out here, the target needs nothing internal. */
#define NP_FZ_NCLASSES 48
static inline size_t np_fz_class_size(unsigned c)
{
	if (c < 8)
		return 16 * (size_t)(c + 1);
	if (c >= 28 && c < 36) /* 4,608 .. 8,192 */
		return 4096 + 512 * (size_t)(c - 27);
	if (c >= 36)
		c -= 4;
	size_t base = (size_t)128 << ((c - 8) / 4);
	return base + base / 4 * ((c - 8) % 4 + 1);
}

/* Sizes no machine can serve (at or above NP_FZ_IMPOSSIBLE): each must fail with ENOMEM. */
static const size_t np_fz_impossible[] = {
	(size_t)1 << 47, ((size_t)1 << 47) + 1, (size_t)PTRDIFF_MAX, (size_t)PTRDIFF_MAX + 1,
	SIZE_MAX - 4095, SIZE_MAX - 15, SIZE_MAX,
};

/* selector % 9: tiny (0..64), a class size +-1, any small size, a 1-16 page run +-1, an exact
 * run up to a chunk's data, around a chunk (4 MiB +-64 KiB), huge (4 MiB .. 68 MiB), a power
 * of two +-1 up to 64 MiB, or impossible. */
static inline size_t np_fz_size(struct np_fz_in *in)
{
	uint8_t sel = np_fz_u8(in);
	switch (sel % 9) {
	case 0:
		return np_fz_u8(in) % 65;
	case 1: {
		size_t c = np_fz_class_size(np_fz_u8(in) % NP_FZ_NCLASSES);
		return c + np_fz_u8(in) % 3 - 1;
	}
	case 2:
		return 1 + np_fz_u16(in) % (32 * NP_FZ_KiB);
	case 3: {
		size_t pages = 1 + np_fz_u8(in) % 16;
		return pages * 4096 + np_fz_u8(in) % 3 - 1;
	}
	case 4:
		return 64 * NP_FZ_KiB + (np_fz_u32(in) & 0xffffff) % (4 * NP_FZ_MiB - 64 * NP_FZ_KiB);
	case 5:
		return 4 * NP_FZ_MiB - 64 * NP_FZ_KiB + 2 * (size_t)np_fz_u16(in);
	case 6:
		return 4 * NP_FZ_MiB + (size_t)np_fz_u16(in) * NP_FZ_KiB;
	case 7: {
		size_t p = (size_t)1 << (np_fz_u8(in) % 27);
		return p + np_fz_u8(in) % 3 - 1;
	}
	default:
		return np_fz_impossible[np_fz_u8(in) % (sizeof np_fz_impossible / sizeof np_fz_impossible[0])];
	}
}

/* Alignments that are not powers of two, or too large to serve. */
static const size_t np_fz_bad_align[] = {
	0, 3, 24, 48, 4097, ((size_t)1 << 20) + 16, SIZE_MAX, (size_t)1 << 47, (size_t)1 << 63,
};

/* selector % 64: 0..30 -> 2^s, 31..33 -> 2^32, 2^36, 2^40, 34..42 -> np_fz_bad_align,
 * 43..63 -> 16 .. 16 MiB again (the alignments programs use, weighted up). Above 2^30 only
 * three: each such block costs the library a walk of alignment / 4 MiB granule bytes per free,
 * usable_size and node_of (0.3 ms at 2^36 under the sanitizers), and with every exponent the
 * fuzzer's corpus filled up with them and ran at a tenth of its speed. */
static inline size_t np_fz_align(struct np_fz_in *in)
{
	unsigned s = np_fz_u8(in) % 64;
	if (s <= 30)
		return (size_t)1 << s;
	if (s <= 33)
		return (size_t)1 << (32 + 4 * (s - 31));
	if (s <= 42)
		return np_fz_bad_align[s - 34];
	return (size_t)1 << (4 + s - 43);
}

/* A count for calloc and reallocarray. selector % 4: small (0..255), 1..4096, a power of two
 * up to 2^63 (the product may overflow), or SIZE_MAX >> k (it nearly always does). */
static inline size_t np_fz_count(struct np_fz_in *in)
{
	switch (np_fz_u8(in) % 4) {
	case 0:
		return np_fz_u8(in);
	case 1:
		return 1 + np_fz_u16(in) % 4096;
	case 2:
		return (size_t)1 << (np_fz_u8(in) % 64);
	default:
		return SIZE_MAX >> (np_fz_u8(in) % 64);
	}
}

/* A node id: selector < 192 -> a node that exists (by rank), else one from a list of ids that
 * do not exist (-1 included: it means "follow the CPU" to numa_page_set_home_node) and, in a
 * sparse topology, the first missing id. */
static inline int np_fz_node(struct np_fz_in *in)
{
	uint8_t sel = np_fz_u8(in);
	if (sel < 192)
		return np_fz_topo.id[sel % np_fz_topo.nvalid];
	int gap = -2;
	for (int n = 0; n < np_fz_topo.max_node; n++)
		if (!np_fz_topo.valid[n]) {
			gap = n;
			break;
		}
	const int bad[] = {-1, -2, INT_MIN, INT_MAX, np_fz_topo.max_node + 1, NP_FZ_MAX_NODES, 1000, gap};
	return bad[sel % (sizeof bad / sizeof bad[0])];
}

#endif /* NP_FUZZ_INPUT_H */
