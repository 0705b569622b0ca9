/*
 * fuzz_block.h — a live allocation as the fuzz target tracks it, the content pattern it carries
 * and the check macro every contract goes through (header only).
 *
 * The pattern is a function of the block's seed and the byte's offset (tests/api's np_t_word),
 * so a block that realloc moved still matches at every offset it kept. It covers the first
 * 64 KiB of a block and then 64 bytes of every further 64 KiB: filling every byte (or even
 * every page) of a 64 MiB block would cost a page fault per page per input, and the fuzzer's
 * speed is its coverage. Overlapping blocks still show: two blocks never share a first byte.
 */
#ifndef NP_FUZZ_BLOCK_H
#define NP_FUZZ_BLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/api_common.h"
#include "numapage.h"

/* A failed contract: say which, then trap, so libFuzzer saves the input and prints the stack. */
#define NP_FZ_CHECK(cond, ...)                                                                  \
	do {                                                                                    \
		if (__builtin_expect(!(cond), 0)) {                                             \
			fprintf(stderr, "fuzz_api: %s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                           \
			fputc('\n', stderr);                                                    \
			__builtin_trap();                                                       \
		}                                                                               \
	} while (0)

enum np_fz_kind {
	NP_FZ_EMPTY = 0,
	NP_FZ_MALLOC,      /* the malloc family: numa_page_malloc, calloc, realloc, memalign, ... */
	NP_FZ_PAGES,       /* numa_page_alloc, numa_page_alloc_onnode */
	NP_FZ_INTERLEAVED, /* numa_page_alloc_interleaved */
};

struct np_fz_block {
	void *p;
	size_t size;   /* bytes that carry the pattern: requested, or usable once asked */
	size_t usable; /* numa_page_usable_size at allocation: what the live-bytes cap counts */
	uint64_t seed;
	int kind;
	int node;       /* numa_page_node_of(p) at allocation (interleaved: of the first page) */
	bool zero_head; /* its first 8 bytes hold zeros instead of the pattern (OP_ZERO_HEAD) */
};

/* The pattern loops are the target's own hot code: without this, coverage hooks on their
 * compares took 60% of the time, and their loop counts only fed the fuzzer noise. The entry
 * points are also kept out of line: inlined into an instrumented caller, a loop is
 * instrumented again. */
#if defined(__clang__)
#define NP_FZ_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define NP_FZ_NO_COVERAGE
#endif
#define NP_FZ_PATTERN_ENTRY NP_FZ_NO_COVERAGE __attribute__((noinline))

#define NP_FZ_DENSE ((size_t)64 << 10)
#define NP_FZ_STRIPE ((size_t)64)

/* The covered ranges of [from, to), in order: start with *k = 0; false when there are no more. */
NP_FZ_NO_COVERAGE static inline bool np_fz_range(size_t *k, size_t from, size_t to, size_t *lo, size_t *hi)
{
	if (*k < from / NP_FZ_DENSE)
		*k = from / NP_FZ_DENSE;
	for (; *k * NP_FZ_DENSE < to; (*k)++) {
		size_t a = *k * NP_FZ_DENSE, e = a + (*k ? NP_FZ_STRIPE : NP_FZ_DENSE);
		*lo = a < from ? from : a;
		*hi = e > to ? to : e;
		if (*lo < *hi) {
			(*k)++;
			return true;
		}
	}
	return false;
}

/* Writes the pattern of seed at bytes [lo, hi) of p (offsets from p, any alignment). */
NP_FZ_NO_COVERAGE static inline void np_fz_fill_range(uint8_t *p, size_t lo, size_t hi, uint64_t seed)
{
	size_t i = lo;
	for (; i < hi && (i & 7); i++)
		p[i] = np_t_byte(seed, i);
	for (; i + 8 <= hi; i += 8) {
		uint64_t x = np_t_word(seed, i >> 3);
		memcpy(p + i, &x, 8);
	}
	for (; i < hi; i++)
		p[i] = np_t_byte(seed, i);
}

/* First offset in [lo, hi) that does not hold the pattern, or SIZE_MAX. */
NP_FZ_NO_COVERAGE static inline size_t np_fz_check_range(const uint8_t *p, size_t lo, size_t hi, uint64_t seed)
{
	size_t i = lo;
	for (; i < hi && (i & 7); i++)
		if (p[i] != np_t_byte(seed, i))
			return i;
	for (; i + 8 <= hi; i += 8) {
		uint64_t x;
		memcpy(&x, p + i, 8);
		if (x != np_t_word(seed, i >> 3))
			break;
	}
	for (; i < hi; i++)
		if (p[i] != np_t_byte(seed, i))
			return i;
	return SIZE_MAX;
}

NP_FZ_NO_COVERAGE static inline size_t np_fz_zero_range(const uint8_t *p, size_t lo, size_t hi)
{
	size_t i = lo;
	for (; i < hi && (i & 7); i++)
		if (p[i])
			return i;
	for (uint64_t x; i + 8 <= hi; i += 8) {
		memcpy(&x, p + i, 8);
		if (x)
			break;
	}
	for (; i < hi; i++)
		if (p[i])
			return i;
	return SIZE_MAX;
}

NP_FZ_PATTERN_ENTRY static inline void np_fz_fill(void *p, size_t from, size_t to, uint64_t seed)
{
	for (size_t k = 0, lo, hi; np_fz_range(&k, from, to, &lo, &hi);)
		np_fz_fill_range(p, lo, hi, seed);
}

/* First covered offset of [from, to) that lost the pattern, or SIZE_MAX. */
NP_FZ_PATTERN_ENTRY static inline size_t np_fz_bad_offset(const void *p, size_t from, size_t to, uint64_t seed)
{
	for (size_t k = 0, lo, hi; np_fz_range(&k, from, to, &lo, &hi);) {
		size_t bad = np_fz_check_range(p, lo, hi, seed);
		if (bad != SIZE_MAX)
			return bad;
	}
	return SIZE_MAX;
}

/* First covered offset of [0, n) that is not zero, or SIZE_MAX (calloc). */
NP_FZ_PATTERN_ENTRY static inline size_t np_fz_nonzero_offset(const void *p, size_t n)
{
	for (size_t k = 0, lo, hi; np_fz_range(&k, 0, n, &lo, &hi);) {
		size_t bad = np_fz_zero_range(p, lo, hi);
		if (bad != SIZE_MAX)
			return bad;
	}
	return SIZE_MAX;
}

/* Bytes at the start of a block that OP_ZERO_HEAD zeroes. free() decodes a block's first word
 * as a free-list link to spot double frees; malloc leaves 0 there, and a program that writes 0
 * back (or never writes it, as calloc's callers often do) must not be taken for one. */
#define NP_FZ_HEAD ((size_t)8)

/* What b should hold over [from, to), written at p (b's block, or where realloc moved it). */
NP_FZ_PATTERN_ENTRY static inline void np_fz_block_fill(const struct np_fz_block *b, void *p, size_t from, size_t to)
{
	size_t head = b->zero_head ? NP_FZ_HEAD : 0;
	if (from < head)
		memset((char *)p + from, 0, (to < head ? to : head) - from);
	np_fz_fill(p, from > head ? from : head, to, b->seed);
}

/* First covered offset of [0, n) at p that differs from what b holds, or SIZE_MAX. */
NP_FZ_PATTERN_ENTRY static inline size_t np_fz_block_bad(const struct np_fz_block *b, const void *p, size_t n)
{
	size_t head = b->zero_head ? (n < NP_FZ_HEAD ? n : NP_FZ_HEAD) : 0;
	size_t bad = np_fz_zero_range(p, 0, head);
	return bad != SIZE_MAX ? bad : np_fz_bad_offset(p, head, n, b->seed);
}

/* The whole block still holds its contents (before every free and realloc). */
static inline void np_fz_verify(const struct np_fz_block *b, const char *when)
{
	size_t bad = np_fz_block_bad(b, b->p, b->size);
	NP_FZ_CHECK(bad == SIZE_MAX, "%s: block %p (%zu bytes, kind %d, seed %llu) changed at offset %zu", when,
		    b->p, b->size, b->kind, (unsigned long long)b->seed, bad);
}

#endif /* NP_FUZZ_BLOCK_H */
