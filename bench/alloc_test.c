/*
 * alloc-test — after the alloc-test benchmark: each thread keeps a live working set of objects
 * whose sizes follow a Pareto distribution (most 16..128 bytes, a heavy tail to 64 KiB) and
 * replaces random ones; one allocation in eight is a calloc whose zeroing is checked. The work
 * and the working set are fixed in total and split over the threads. No sharing between threads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define AT_MIN 16
#define AT_MAX (64 * 1024)
#define AT_LIVE 65536

struct at_worker {
	int id;
	uint64_t seed;
	uint64_t ops;
	size_t live;
	uint64_t sum;
	char pad[64];
};

/* Pareto with shape 1.2 and scale 16: half the sizes are below ~28 bytes, 1% above ~750. */
static size_t at_size(struct bench_rng *rng)
{
	double u = ((double)(bench_rng_next(rng) >> 11) + 1.0) * 0x1.0p-53;
	double s = AT_MIN / pow(u, 1.0 / 1.2);
	return s >= AT_MAX ? AT_MAX : (size_t)s;
}

static void at_check_zero(const unsigned char *p, size_t size)
{
	/* All of a small object, else the first and last 256 bytes and one byte per 512. */
	size_t edge = size < 1024 ? size : 256;
	for (size_t i = 0; i < edge; i++) {
		size_t at = p[i] ? i : size - 1 - i;
		if (p[at])
			bench_fail("alloc-test: calloc(%zu) at %p not zeroed: byte %zu is 0x%02x", size,
				   (const void *)p, at, p[at]);
	}
	for (size_t i = edge; i < size; i += 512)
		if (p[i])
			bench_fail("alloc-test: calloc(%zu) at %p not zeroed: byte %zu is 0x%02x", size,
				   (const void *)p, i, p[i]);
}

static void *at_thread(void *arg)
{
	struct at_worker *w = arg;
	struct bench_rng rng = bench_rng_make(w->seed, (uint64_t)w->id + 1);
	void **obj = calloc(w->live, sizeof *obj);
	uint32_t *size = calloc(w->live, sizeof *size);
	if (!obj || !size)
		bench_fail("alloc-test: table allocation failed");
	for (uint64_t i = 0; i < w->ops; i++) {
		size_t k = (size_t)(bench_rng_next(&rng) % w->live);
		if (obj[k]) {
			bench_check_stamp(obj[k], size[k], k, "alloc-test free");
			free(obj[k]);
		}
		size_t sz = at_size(&rng);
		void *p;
		if ((bench_rng_next(&rng) & 7) == 0) {
			p = calloc(1, sz);
			if (!p)
				bench_fail("alloc-test: calloc(1, %zu) returned NULL", sz);
			at_check_zero(p, sz);
		} else {
			p = bench_xmalloc_or_fail(sz);
		}
		bench_stamp(p, sz, k);
		obj[k] = p;
		size[k] = (uint32_t)sz;
		w->sum += sz;
	}
	for (size_t k = 0; k < w->live; k++) {
		if (obj[k]) {
			bench_check_stamp(obj[k], size[k], k, "alloc-test final free");
			free(obj[k]);
		}
	}
	free(obj);
	free(size);
	return NULL;
}

int bench_alloc_test(const struct bench_args *a, struct bench_result *r)
{
	uint64_t total = bench_scaled(3000000, a->scale, 1000);
	struct at_worker *w = calloc((size_t)a->threads, sizeof *w);
	if (!w)
		bench_fail("alloc-test: calloc failed");
	for (int t = 0; t < a->threads; t++) {
		w[t].id = t;
		w[t].seed = a->seed;
		w[t].ops = bench_share(total, a->threads, t);
		w[t].live = bench_share(AT_LIVE, a->threads, t);
		if (w[t].live == 0)
			w[t].live = 1;
	}
	bench_run_threads(a->threads, at_thread, w, sizeof *w);
	for (int t = 0; t < a->threads; t++) {
		r->ops += w[t].ops;
		r->checksum += w[t].sum;
	}
	free(w);
	return 0;
}
