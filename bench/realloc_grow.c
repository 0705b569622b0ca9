/*
 * realloc-grow — each thread grows 16 buffers, picked at random, by realloc (25%..100% plus a
 * few bytes each step) from 16 bytes up to 512 KiB, then frees the buffer and starts it over.
 * Every buffer carries a marker byte each 256 bytes and at its end; after every realloc all
 * markers of the old contents are checked (a lost or partial copy fails). Fixed total number of
 * reallocs, split over the threads; no sharing between threads.
 */
#include <stdlib.h>

#include "bench.h"

#define RG_BUFFERS 16
#define RG_START_MAX 64
#define RG_LIMIT (512 * 1024)
#define RG_STRIDE 256

struct rg_buf {
	unsigned char *p;
	size_t size;
	uint32_t serial;
};

struct rg_worker {
	int id;
	uint64_t seed;
	uint64_t reallocs;
	uint64_t sum;
	char pad[64];
};

static unsigned char rg_mark(uint32_t serial, size_t off)
{
	return (unsigned char)(serial * 31u + (uint32_t)(off / RG_STRIDE) * 7u + 1u);
}

static void rg_write(struct rg_buf *b, size_t from, size_t to)
{
	for (size_t off = (from + RG_STRIDE - 1) / RG_STRIDE * RG_STRIDE; off < to; off += RG_STRIDE)
		b->p[off] = rg_mark(b->serial, off);
	b->p[to - 1] = (unsigned char)~rg_mark(b->serial, to - 1);
}

static void rg_check(const struct rg_buf *b, size_t upto, size_t end_marker)
{
	for (size_t off = 0; off < upto; off += RG_STRIDE)
		if (b->p[off] != rg_mark(b->serial, off) && !(off == end_marker - 1))
			bench_fail("realloc-grow: buffer %p lost byte %zu of %zu", (void *)b->p, off, upto);
	if (b->p[end_marker - 1] != (unsigned char)~rg_mark(b->serial, end_marker - 1))
		bench_fail("realloc-grow: buffer %p lost its end marker at %zu", (void *)b->p, end_marker - 1);
}

static void *rg_thread(void *arg)
{
	struct rg_worker *w = arg;
	struct bench_rng rng = bench_rng_make(w->seed, (uint64_t)w->id + 1);
	struct rg_buf buf[RG_BUFFERS] = {{0}};
	uint32_t serial = (uint32_t)w->id * 1000003u;
	for (uint64_t i = 0; i < w->reallocs; i++) {
		struct rg_buf *b = &buf[bench_rng_next(&rng) % RG_BUFFERS];
		size_t old = b->size;
		size_t grow = old * bench_rng_range(&rng, 25, 100) / 100 + bench_rng_range(&rng, 1, 16);
		size_t size = old + grow;
		if (!b->p || size > RG_LIMIT) {
			if (b->p) {
				rg_check(b, old, old);
				w->sum += old;
				free(b->p);
			}
			b->serial = ++serial;
			old = 0;
			size = bench_rng_range(&rng, 16, RG_START_MAX);
			b->p = NULL;
		}
		unsigned char *p = realloc(b->p, size);
		if (!p)
			bench_fail("realloc-grow: realloc(%p, %zu) returned NULL", (void *)b->p, size);
		b->p = p;
		if (old) {
			/* The old end marker must have moved along; then it becomes ordinary data. */
			rg_check(b, old, old);
			b->p[old - 1] = (old - 1) % RG_STRIDE == 0 ? rg_mark(b->serial, old - 1) : 0;
		}
		b->size = size;
		rg_write(b, old, size);
	}
	for (int j = 0; j < RG_BUFFERS; j++) {
		if (buf[j].p) {
			rg_check(&buf[j], buf[j].size, buf[j].size);
			w->sum += buf[j].size;
			free(buf[j].p);
		}
	}
	return NULL;
}

int bench_realloc_grow(const struct bench_args *a, struct bench_result *r)
{
	uint64_t total = bench_scaled(200000, a->scale, 1000);
	struct rg_worker *w = calloc((size_t)a->threads, sizeof *w);
	if (!w)
		bench_fail("realloc-grow: calloc failed");
	for (int t = 0; t < a->threads; t++) {
		w[t].id = t;
		w[t].seed = a->seed;
		w[t].reallocs = bench_share(total, a->threads, t);
	}
	bench_run_threads(a->threads, rg_thread, w, sizeof *w);
	for (int t = 0; t < a->threads; t++) {
		r->ops += w[t].reallocs;
		r->checksum += w[t].sum;
	}
	free(w);
	return 0;
}
