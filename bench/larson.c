/*
 * larson — a server simulation after Larson & Krishnan's benchmark: each thread owns a table of
 * live objects and replaces random ones (free + malloc of a new random size). Between epochs the
 * tables move on to the next thread, so most frees hit objects another thread allocated; the
 * first table fill is done by the main thread, as in the original. Sizes 16..1024 bytes.
 * Tables change hands only at the barrier, so no table is touched by two threads at once.
 */
#include <stdlib.h>

#include "bench.h"

#define LARSON_EPOCHS 16
#define LARSON_MIN 16
#define LARSON_MAX 1024

struct larson_table {
	void **obj;
	uint32_t *size;
	size_t n;
};

struct larson_shared {
	struct larson_table *tables;
	pthread_barrier_t barrier;
	int threads;
	uint64_t ops_per_epoch_total;
	uint64_t seed;
};

struct larson_worker {
	struct larson_shared *sh;
	int id;
	uint64_t ops;
	uint64_t sum;
	char pad[64]; /* workers sit side by side and write sum on every op: never on one line */
};

static void *larson_thread(void *arg)
{
	struct larson_worker *w = arg;
	struct larson_shared *sh = w->sh;
	struct bench_rng rng = bench_rng_make(sh->seed, (uint64_t)w->id + 1);
	for (int e = 0; e < LARSON_EPOCHS; e++) {
		struct larson_table *t = &sh->tables[(w->id + e) % sh->threads];
		uint64_t ops = bench_share(sh->ops_per_epoch_total, sh->threads, w->id);
		for (uint64_t i = 0; i < ops; i++) {
			size_t k = (size_t)(bench_rng_next(&rng) % t->n);
			bench_check_stamp(t->obj[k], t->size[k], k, "larson free");
			free(t->obj[k]);
			size_t sz = bench_rng_range(&rng, LARSON_MIN, LARSON_MAX);
			void *p = bench_xmalloc_or_fail(sz);
			bench_stamp(p, sz, k);
			t->obj[k] = p;
			t->size[k] = (uint32_t)sz;
			w->sum += sz;
		}
		w->ops += ops;
		pthread_barrier_wait(&sh->barrier);
	}
	return NULL;
}

int bench_larson(const struct bench_args *a, struct bench_result *r)
{
	struct larson_shared sh = {
		.threads = a->threads,
		.seed = a->seed,
		.ops_per_epoch_total = bench_scaled(3000000, a->scale, 1000) / LARSON_EPOCHS,
	};
	/* 32768 live objects in all (~17 MB), split over the threads' tables. */
	size_t live = 32768;
	sh.tables = bench_xmalloc_or_fail(sizeof *sh.tables * (size_t)a->threads);
	struct bench_rng rng = bench_rng_make(a->seed, 0);
	for (int t = 0; t < a->threads; t++) {
		struct larson_table *tb = &sh.tables[t];
		tb->n = bench_share(live, a->threads, t);
		if (tb->n == 0)
			tb->n = 1;
		tb->obj = bench_xmalloc_or_fail(sizeof *tb->obj * tb->n);
		tb->size = bench_xmalloc_or_fail(sizeof *tb->size * tb->n);
		for (size_t k = 0; k < tb->n; k++) {
			size_t sz = bench_rng_range(&rng, LARSON_MIN, LARSON_MAX);
			tb->obj[k] = bench_xmalloc_or_fail(sz);
			tb->size[k] = (uint32_t)sz;
			bench_stamp(tb->obj[k], sz, k);
		}
	}
	pthread_barrier_init(&sh.barrier, NULL, (unsigned)a->threads);
	struct larson_worker *w = calloc((size_t)a->threads, sizeof *w);
	if (!w)
		bench_fail("larson: calloc failed");
	for (int t = 0; t < a->threads; t++) {
		w[t].sh = &sh;
		w[t].id = t;
	}
	bench_run_threads(a->threads, larson_thread, w, sizeof *w);
	pthread_barrier_destroy(&sh.barrier);
	for (int t = 0; t < a->threads; t++) {
		r->ops += w[t].ops;
		r->checksum += w[t].sum;
		struct larson_table *tb = &sh.tables[t];
		for (size_t k = 0; k < tb->n; k++) {
			bench_check_stamp(tb->obj[k], tb->size[k], k, "larson final free");
			free(tb->obj[k]);
		}
		free(tb->obj);
		free(tb->size);
	}
	if (r->ops != sh.ops_per_epoch_total * LARSON_EPOCHS)
		bench_fail("larson: did %llu ops, expected %llu", (unsigned long long)r->ops,
			   (unsigned long long)(sh.ops_per_epoch_total * LARSON_EPOCHS));
	free(w);
	free(sh.tables);
	return 0;
}
