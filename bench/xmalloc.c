/*
 * xmalloc — producer/consumer after xmalloc-test: T producers each allocate objects (24..256
 * bytes) in batches of 64 and hand the batches to their own consumer thread, which checks and
 * frees every object and the batch itself. So every free is remote. "threads" counts the pairs
 * (2T threads run). Each pair's queue is a bounded ring under one mutex, which bounds the live
 * memory to QUEUE_LEN batches per pair.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define XM_BATCH 64
#define XM_QUEUE_LEN 32
#define XM_MIN 24 /* word 0 stamp, word 1 sequence, tail byte after both */
#define XM_MAX 256

struct xm_batch {
	int n;
	void *obj[XM_BATCH];
	uint32_t size[XM_BATCH];
};

struct xm_pair {
	pthread_mutex_t lock;
	pthread_cond_t not_empty, not_full;
	struct xm_batch *ring[XM_QUEUE_LEN];
	unsigned head, tail; /* head: next to pop; tail: next to push; tail - head <= QUEUE_LEN */
	int done;
	int id;
	uint64_t objects; /* producer's share */
	uint64_t seed;
	/* consumer's findings */
	uint64_t consumed, seq_sum, size_sum;
	char pad[64];
};

static void xm_push(struct xm_pair *p, struct xm_batch *b)
{
	pthread_mutex_lock(&p->lock);
	while (p->tail - p->head == XM_QUEUE_LEN)
		pthread_cond_wait(&p->not_full, &p->lock);
	p->ring[p->tail++ % XM_QUEUE_LEN] = b;
	pthread_cond_signal(&p->not_empty);
	pthread_mutex_unlock(&p->lock);
}

static struct xm_batch *xm_pop(struct xm_pair *p)
{
	struct xm_batch *b = NULL;
	pthread_mutex_lock(&p->lock);
	while (p->tail == p->head && !p->done)
		pthread_cond_wait(&p->not_empty, &p->lock);
	if (p->tail != p->head) {
		b = p->ring[p->head++ % XM_QUEUE_LEN];
		pthread_cond_signal(&p->not_full);
	}
	pthread_mutex_unlock(&p->lock);
	return b;
}

static void *xm_producer(void *arg)
{
	struct xm_pair *p = arg;
	struct bench_rng rng = bench_rng_make(p->seed, (uint64_t)p->id + 1);
	uint64_t seq = 0;
	while (seq < p->objects) {
		struct xm_batch *b = bench_xmalloc_or_fail(sizeof *b);
		b->n = 0;
		while (b->n < XM_BATCH && seq < p->objects) {
			size_t sz = bench_rng_range(&rng, XM_MIN, XM_MAX);
			uint64_t *o = bench_xmalloc_or_fail(sz);
			o[1] = seq;
			bench_stamp(o, sz, (uint64_t)p->id);
			b->obj[b->n] = o;
			b->size[b->n] = (uint32_t)sz;
			b->n++;
			seq++;
		}
		xm_push(p, b);
	}
	pthread_mutex_lock(&p->lock);
	p->done = 1;
	pthread_cond_signal(&p->not_empty);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void *xm_consumer(void *arg)
{
	struct xm_pair *p = arg;
	uint64_t expect = 0;
	struct xm_batch *b;
	while ((b = xm_pop(p))) {
		for (int i = 0; i < b->n; i++) {
			uint64_t *o = b->obj[i];
			bench_check_stamp(o, b->size[i], (uint64_t)p->id, "xmalloc consumer");
			if (o[1] != expect)
				bench_fail("xmalloc: pair %d got object %llu, expected %llu", p->id,
					   (unsigned long long)o[1], (unsigned long long)expect);
			expect++;
			p->seq_sum += o[1];
			p->size_sum += b->size[i];
			free(o);
		}
		free(b);
	}
	p->consumed = expect;
	return NULL;
}

struct xm_role {
	struct xm_pair *pair;
	int consumer;
};

static void *xm_thread(void *arg)
{
	struct xm_role *role = arg;
	return role->consumer ? xm_consumer(role->pair) : xm_producer(role->pair);
}

int bench_xmalloc(const struct bench_args *a, struct bench_result *r)
{
	int n = a->threads;
	uint64_t total = bench_scaled(6000000, a->scale, 1000);
	struct xm_pair *pairs = calloc((size_t)n, sizeof *pairs);
	struct xm_role *roles = calloc(2 * (size_t)n, sizeof *roles);
	if (!pairs || !roles)
		bench_fail("xmalloc: setup allocation failed");
	for (int i = 0; i < n; i++) {
		struct xm_pair *p = &pairs[i];
		pthread_mutex_init(&p->lock, NULL);
		pthread_cond_init(&p->not_empty, NULL);
		pthread_cond_init(&p->not_full, NULL);
		p->id = i;
		p->seed = a->seed;
		p->objects = bench_share(total, n, i);
		roles[2 * i] = (struct xm_role){p, 0};
		roles[2 * i + 1] = (struct xm_role){p, 1};
	}
	bench_run_threads(2 * n, xm_thread, roles, sizeof *roles);
	for (int i = 0; i < n; i++) {
		struct xm_pair *p = &pairs[i];
		if (p->consumed != p->objects)
			bench_fail("xmalloc: pair %d consumed %llu of %llu", i,
				   (unsigned long long)p->consumed, (unsigned long long)p->objects);
		if (p->seq_sum != p->objects * (p->objects - 1) / 2)
			bench_fail("xmalloc: pair %d sequence sum mismatch", i);
		r->ops += p->consumed;
		r->checksum += p->size_sum;
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->not_empty);
		pthread_cond_destroy(&p->not_full);
	}
	free(roles);
	free(pairs);
	return 0;
}
