/*
 * large-calloc — big zeroed buffers, a few live at a time: each thread keeps 3 blocks of
 * 5..25 MiB and replaces a random one per step, as a program that takes a fresh zeroed buffer
 * per image, matrix or request does. Three in four come from calloc, one in four from malloc
 * followed by the program's own memset. Every page is used: one word written per 4 KiB page
 * (which faults it in if the allocator handed out fresh pages), and one other word of the same
 * page must read as zero (so the zeroing is checked on every page, without a second fault);
 * the first and last 64 bytes are checked in full. At free, every page's word and the stamps
 * must still be there. Whether freed huge blocks stay mapped (and calloc then clears them) or go
 * back to the kernel (and fault in again) decides this benchmark. 2,000 blocks at scale 1, split
 * over the threads.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define LC_LIVE 3
#define LC_MIN (5ul << 20)
#define LC_MAX (25ul << 20)
#define LC_PAGE 4096

struct lc_worker {
	int id;
	uint64_t seed;
	uint64_t blocks;
	uint64_t sum;
	char pad[64];
};

/* The word of page `off` that must read zero: never the page's first word (which is written),
 * never the block's first word or last byte (the stamps). */
static size_t lc_probe(size_t off, size_t size, uint64_t key)
{
	size_t at = off + 8 + (((off >> 12) * 0x9e3779b1u + key) & (LC_PAGE - 16) & ~(size_t)7);
	return at + 16 <= size ? at : (size_t)-1;
}

static void lc_use(unsigned char *p, size_t size, uint64_t key)
{
	for (size_t i = 0; i < 64; i++)
		if (p[i] || p[size - 1 - i])
			bench_fail("large-calloc: block %p (%zu bytes) not zeroed at its %s", (void *)p, size,
				   p[i] ? "start" : "end");
	uint64_t *w = (uint64_t *)p;
	for (size_t off = LC_PAGE; off + 8 < size; off += LC_PAGE) {
		w[off / 8] = key ^ off;
		size_t at = lc_probe(off, size, key);
		if (at != (size_t)-1 && w[at / 8])
			bench_fail("large-calloc: block %p (%zu bytes) not zeroed at byte %zu", (void *)p, size, at);
	}
	bench_stamp(p, size, key);
}

static void lc_check(const unsigned char *p, size_t size, uint64_t key)
{
	bench_check_stamp(p, size, key, "large-calloc free");
	const uint64_t *w = (const uint64_t *)p;
	for (size_t off = LC_PAGE; off + 8 < size; off += LC_PAGE)
		if (w[off / 8] != (key ^ off))
			bench_fail("large-calloc: block %p (%zu bytes) lost the word at %zu", (const void *)p, size, off);
}

static void *lc_thread(void *arg)
{
	struct lc_worker *w = arg;
	struct bench_rng rng = bench_rng_make(w->seed, (uint64_t)w->id + 1);
	unsigned char *blk[LC_LIVE] = {0};
	size_t size[LC_LIVE] = {0};
	uint64_t key[LC_LIVE] = {0};
	for (uint64_t i = 0; i < w->blocks; i++) {
		int k = (int)(bench_rng_next(&rng) % LC_LIVE);
		if (blk[k]) {
			lc_check(blk[k], size[k], key[k]);
			free(blk[k]);
		}
		size_t sz = bench_rng_range(&rng, LC_MIN, LC_MAX);
		uint64_t x = bench_rng_next(&rng);
		unsigned char *p;
		if (x % 4) {
			/* calloc(n, size) with the element size a program would use */
			size_t elem = (size_t)1 << (x >> 8) % 4; /* 1, 2, 4, 8 */
			sz -= sz % elem;
			p = calloc(sz / elem, elem);
			if (!p)
				bench_fail("large-calloc: calloc(%zu, %zu) returned NULL", sz / elem, elem);
		} else {
			p = bench_xmalloc_or_fail(sz);
			memset(p, 0, sz);
		}
		blk[k] = p;
		size[k] = sz;
		key[k] = bench_rng_next(&rng);
		lc_use(p, sz, key[k]);
		w->sum += sz;
	}
	for (int k = 0; k < LC_LIVE; k++) {
		if (blk[k]) {
			lc_check(blk[k], size[k], key[k]);
			free(blk[k]);
		}
	}
	return NULL;
}

int bench_large_calloc(const struct bench_args *a, struct bench_result *r)
{
	uint64_t total = bench_scaled(2000, a->scale, 20);
	struct lc_worker *w = calloc((size_t)a->threads, sizeof *w);
	if (!w)
		bench_fail("large-calloc: calloc failed");
	for (int t = 0; t < a->threads; t++) {
		w[t].id = t;
		w[t].seed = a->seed;
		w[t].blocks = bench_share(total, a->threads, t);
	}
	bench_run_threads(a->threads, lc_thread, w, sizeof *w);
	for (int t = 0; t < a->threads; t++) {
		r->ops += w[t].blocks;
		r->checksum += w[t].sum;
	}
	free(w);
	return 0;
}
