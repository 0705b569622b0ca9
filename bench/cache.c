/*
 * cache-scratch and cache-thrash — allocator-induced false sharing, after Hoard's benchmarks.
 * Each thread repeatedly allocates a small object (8 bytes), writes every byte of it many times,
 * checks it and frees it. cache-thrash: objects come straight from the allocator, so an
 * allocator that hands neighbouring bytes of one cache line to different threads makes them
 * fight over the line (active false sharing). cache-scratch: the main thread first allocates one
 * object per thread back to back and each thread starts by freeing "its" object; an allocator
 * that then reuses that memory for the thread inherits the main thread's line layout (passive
 * false sharing). The work is fixed in total and split over the threads.
 */
#include <stdlib.h>

#include "bench.h"

#define CACHE_OBJ 8
#define CACHE_REPS 64

struct cache_worker {
	void *initial; /* cache-scratch: the main thread's object to free first */
	uint64_t iterations;
	uint64_t sum;
	char pad[64];
};

static void *cache_thread(void *arg)
{
	struct cache_worker *w = arg;
	if (w->initial)
		free(w->initial);
	for (uint64_t i = 0; i < w->iterations; i++) {
		volatile unsigned char *p = bench_xmalloc_or_fail(CACHE_OBJ);
		for (int b = 0; b < CACHE_OBJ; b++)
			p[b] = (unsigned char)b;
		for (int r = 0; r < CACHE_REPS; r++)
			for (int b = 0; b < CACHE_OBJ; b++)
				p[b]++;
		for (int b = 0; b < CACHE_OBJ; b++) {
			if (p[b] != (unsigned char)(b + CACHE_REPS))
				bench_fail("cache: byte %d of %p is %u, expected %u", b, (void *)p, p[b],
					   (unsigned)(unsigned char)(b + CACHE_REPS));
			w->sum += p[b];
		}
		free((void *)p);
	}
	return NULL;
}

static int cache_run(const struct bench_args *a, struct bench_result *r, int scratch)
{
	uint64_t total = bench_scaled(1500000, a->scale, 1000);
	struct cache_worker *w = calloc((size_t)a->threads, sizeof *w);
	if (!w)
		bench_fail("cache: calloc failed");
	for (int t = 0; t < a->threads; t++) {
		w[t].iterations = bench_share(total, a->threads, t);
		if (scratch)
			w[t].initial = bench_xmalloc_or_fail(CACHE_OBJ);
	}
	bench_run_threads(a->threads, cache_thread, w, sizeof *w);
	for (int t = 0; t < a->threads; t++) {
		r->ops += w[t].iterations;
		r->checksum += w[t].sum;
	}
	free(w);
	return 0;
}

int bench_cache_scratch(const struct bench_args *a, struct bench_result *r)
{
	return cache_run(a, r, 1);
}

int bench_cache_thrash(const struct bench_args *a, struct bench_result *r)
{
	return cache_run(a, r, 0);
}
