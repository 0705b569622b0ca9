/*
 * large-blocks — each thread keeps 4 large blocks live and replaces a random one per step with
 * a block of 64 KiB..4 MiB (log-uniform), writing one word in every 4 KiB page, as a program
 * that uses its buffers does. Whether the allocator keeps freed large blocks mapped or gives them
 * back (and takes the page faults again) decides this benchmark. Freed blocks are checked: every
 * page's word must still be there. Fixed total number of blocks, split over the threads.
 */
#include <stdlib.h>

#include "bench.h"

#define LB_LIVE 4
#define LB_MIN_SHIFT 16 /* 64 KiB */
#define LB_MAX_SHIFT 22 /* 4 MiB */
#define LB_PAGE 4096

struct lb_worker {
	int id;
	uint64_t seed;
	uint64_t blocks;
	uint64_t sum;
	char pad[64];
};

static void lb_fill(uint64_t *p, size_t size, uint64_t key)
{
	/* "off + 8 < size": the word fits and does not hold the stamp's tail byte. */
	for (size_t off = 0; off + 8 < size; off += LB_PAGE)
		p[off / 8] = key ^ off;
	bench_stamp(p, size, key);
}

static void lb_check(const uint64_t *p, size_t size, uint64_t key)
{
	bench_check_stamp(p, size, key, "large-blocks free");
	for (size_t off = LB_PAGE; off + 8 < size; off += LB_PAGE)
		if (p[off / 8] != (key ^ off))
			bench_fail("large-blocks: block %p (%zu bytes) lost the word at %zu", (const void *)p, size, off);
}

static void *lb_thread(void *arg)
{
	struct lb_worker *w = arg;
	struct bench_rng rng = bench_rng_make(w->seed, (uint64_t)w->id + 1);
	uint64_t *blk[LB_LIVE] = {0};
	size_t size[LB_LIVE] = {0};
	uint64_t key[LB_LIVE] = {0};
	for (uint64_t i = 0; i < w->blocks; i++) {
		int k = (int)(bench_rng_next(&rng) % LB_LIVE);
		if (blk[k]) {
			lb_check(blk[k], size[k], key[k]);
			free(blk[k]);
		}
		unsigned shift = (unsigned)bench_rng_range(&rng, LB_MIN_SHIFT, LB_MAX_SHIFT - 1);
		size_t sz = ((size_t)1 << shift) + bench_rng_next(&rng) % ((size_t)1 << shift);
		blk[k] = bench_xmalloc_or_fail(sz);
		size[k] = sz;
		key[k] = bench_rng_next(&rng);
		lb_fill(blk[k], sz, key[k]);
		w->sum += sz;
	}
	for (int k = 0; k < LB_LIVE; k++) {
		if (blk[k]) {
			lb_check(blk[k], size[k], key[k]);
			free(blk[k]);
		}
	}
	return NULL;
}

int bench_large_blocks(const struct bench_args *a, struct bench_result *r)
{
	uint64_t total = bench_scaled(3000, a->scale, 100);
	struct lb_worker *w = calloc((size_t)a->threads, sizeof *w);
	if (!w)
		bench_fail("large-blocks: calloc failed");
	for (int t = 0; t < a->threads; t++) {
		w[t].id = t;
		w[t].seed = a->seed;
		w[t].blocks = bench_share(total, a->threads, t);
	}
	bench_run_threads(a->threads, lb_thread, w, sizeof *w);
	for (int t = 0; t < a->threads; t++) {
		r->ops += w[t].blocks;
		r->checksum += w[t].sum;
	}
	free(w);
	return 0;
}
