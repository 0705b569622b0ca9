/*
 * churn — the fast path: each thread replaces random objects in its own small window of 256
 * live objects (16..255 bytes, one in eight 256..2047), so nearly every malloc can be served from
 * what the previous free gave back. At 1 thread this is single-thread churn, at more threads
 * multi-thread churn with no sharing at all. Fixed total ops, split over the threads.
 */
#include <stdlib.h>

#include "bench.h"

#define CH_WINDOW 256

struct ch_worker {
	int id;
	uint64_t seed;
	uint64_t ops;
	uint64_t sum;
	char pad[64];
};

static void *ch_thread(void *arg)
{
	struct ch_worker *w = arg;
	struct bench_rng rng = bench_rng_make(w->seed, (uint64_t)w->id + 1);
	void *obj[CH_WINDOW] = {0};
	uint32_t size[CH_WINDOW] = {0};
	for (uint64_t i = 0; i < w->ops; i++) {
		uint64_t x = bench_rng_next(&rng);
		size_t k = (size_t)(x % CH_WINDOW);
		if (obj[k]) {
			bench_check_stamp(obj[k], size[k], k, "churn free");
			free(obj[k]);
		}
		size_t sz = (x >> 40) % 8 == 0 ? 256 + (x >> 16) % 1792 : 16 + (x >> 16) % 240;
		obj[k] = bench_xmalloc_or_fail(sz);
		size[k] = (uint32_t)sz;
		bench_stamp(obj[k], sz, k);
		w->sum += sz;
	}
	for (size_t k = 0; k < CH_WINDOW; k++) {
		if (obj[k]) {
			bench_check_stamp(obj[k], size[k], k, "churn final free");
			free(obj[k]);
		}
	}
	return NULL;
}

int bench_churn(const struct bench_args *a, struct bench_result *r)
{
	uint64_t total = bench_scaled(30000000, a->scale, 1000);
	struct ch_worker *w = calloc((size_t)a->threads, sizeof *w);
	if (!w)
		bench_fail("churn: calloc failed");
	for (int t = 0; t < a->threads; t++) {
		w[t].id = t;
		w[t].seed = a->seed;
		w[t].ops = bench_share(total, a->threads, t);
	}
	bench_run_threads(a->threads, ch_thread, w, sizeof *w);
	for (int t = 0; t < a->threads; t++) {
		r->ops += w[t].ops;
		r->checksum += w[t].sum;
	}
	free(w);
	return 0;
}
