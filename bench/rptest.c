/*
 * rptest — after the pattern of rpmalloc's benchmark (rptest), written from its description:
 * every thread keeps a working set of its own (RP_SLOTS blocks of random sizes, 16..16000 bytes,
 * log-uniform, so most are small) and in each loop replaces random blocks of it (free + malloc,
 * every block stamped and checked). After every RP_CROSS_EVERY loops a thread hands a batch of
 * its live blocks (one in eight slots) to the next thread, which frees them at the start of its
 * next loop: those frees are cross-thread frees, mixed with the owner's own. At one thread the
 * batch goes to the thread itself. A sender waits (freeing what it was sent meanwhile) while
 * RP_INFLIGHT of its batches are still unfreed: without that bound a receiver the scheduler
 * held off for a while let the batches pile up, and the run measured the scheduler (2 threads
 * on a loaded 2-CPU machine: peak RSS 33-605 MB and 0.4-3.8 s in six runs of one build, the
 * same spread under mimalloc and tcmalloc). Every thread frees what reaches it until all have
 * sent their last batch; the last batches and the working sets are then freed. Fixed total
 * loops, split over the threads.
 */
#include <math.h>
#include <sched.h>
#include <stdlib.h>

#include "bench.h"

#define RP_SLOTS 1024
#define RP_OPS_PER_LOOP 256
#define RP_CROSS_EVERY 2
#define RP_BATCH (RP_SLOTS / 8)
#define RP_MIN 16
#define RP_MAX 16000
#define RP_INFLIGHT 4 /* batches sent to a thread and not yet freed by it, at most */

/* A batch of blocks on its way to another thread; itself allocated, and freed by the receiver. */
struct rp_batch {
	struct rp_batch *next;
	int n;
	void *ptr[RP_BATCH];
	uint32_t size[RP_BATCH];
	uint64_t key[RP_BATCH];
};

struct rp_worker {
	int id;
	int threads;
	uint64_t seed;
	uint64_t loops;
	uint64_t ops;
	uint64_t sum;
	uint64_t sent;
	uint64_t received;
	struct rp_worker *all;
	atomic_int *finished;              /* threads that have sent their last batch */
	_Atomic(struct rp_batch *) inbox; /* a stack: senders push with a CAS, the owner takes it whole */
	atomic_int pending;                /* batches in the inbox */
	char pad[64];
};

static size_t rp_size(struct bench_rng *rng)
{
	double u = (double)(bench_rng_next(rng) >> 11) * 0x1.0p-53;
	size_t s = (size_t)(RP_MIN * exp(u * log((double)RP_MAX / RP_MIN)));
	return s < RP_MIN ? RP_MIN : s > RP_MAX ? RP_MAX : s;
}

static void rp_send(struct rp_worker *to, struct rp_batch *b)
{
	struct rp_batch *head = atomic_load_explicit(&to->inbox, memory_order_relaxed);
	do
		b->next = head;
	while (!atomic_compare_exchange_weak_explicit(&to->inbox, &head, b, memory_order_release,
						      memory_order_relaxed));
}

static void rp_drain(struct rp_worker *w)
{
	struct rp_batch *b = atomic_exchange_explicit(&w->inbox, NULL, memory_order_acquire);
	int n = 0;
	for (; b; n++) {
		struct rp_batch *next = b->next;
		for (int i = 0; i < b->n; i++) {
			bench_check_stamp(b->ptr[i], b->size[i], b->key[i], "rptest remote free");
			free(b->ptr[i]);
		}
		w->received += (uint64_t)b->n;
		free(b);
		b = next;
	}
	if (n)
		atomic_fetch_sub_explicit(&w->pending, n, memory_order_release);
}

/* Waits, freeing what reaches w meanwhile, until `to` has fewer than RP_INFLIGHT batches
 * unfreed: every waiting thread frees its own inbox, so a ring of waiting threads moves on. */
static void rp_wait_room(struct rp_worker *w, struct rp_worker *to)
{
	while (atomic_load_explicit(&to->pending, memory_order_acquire) >= RP_INFLIGHT) {
		rp_drain(w);
		if (atomic_load_explicit(&to->pending, memory_order_acquire) >= RP_INFLIGHT)
			sched_yield();
	}
}

static void *rp_thread(void *arg)
{
	struct rp_worker *w = arg;
	struct bench_rng rng = bench_rng_make(w->seed, (uint64_t)w->id + 1);
	void **obj = calloc(RP_SLOTS, sizeof *obj);
	uint32_t *size = calloc(RP_SLOTS, sizeof *size);
	uint64_t *key = calloc(RP_SLOTS, sizeof *key);
	if (!obj || !size || !key)
		bench_fail("rptest: table allocation failed");
	struct rp_worker *next = &w->all[(w->id + 1) % w->threads];
	uint64_t serial = (uint64_t)w->id << 48;
	for (uint64_t loop = 0; loop < w->loops; loop++) {
		rp_drain(w);
		for (int i = 0; i < RP_OPS_PER_LOOP; i++) {
			size_t k = (size_t)(bench_rng_next(&rng) % RP_SLOTS);
			if (obj[k]) {
				bench_check_stamp(obj[k], size[k], key[k], "rptest free");
				free(obj[k]);
			}
			size_t sz = rp_size(&rng);
			obj[k] = bench_xmalloc_or_fail(sz);
			size[k] = (uint32_t)sz;
			key[k] = ++serial;
			bench_stamp(obj[k], sz, key[k]);
			w->sum += sz;
		}
		w->ops += RP_OPS_PER_LOOP;
		if (loop % RP_CROSS_EVERY == RP_CROSS_EVERY - 1) {
			struct rp_batch *b = bench_xmalloc_or_fail(sizeof *b);
			b->n = 0;
			size_t k = (size_t)(bench_rng_next(&rng) % RP_SLOTS);
			for (int i = 0; i < RP_SLOTS && b->n < RP_BATCH; i += 8, k = (k + 8) % RP_SLOTS) {
				if (!obj[k])
					continue;
				b->ptr[b->n] = obj[k];
				b->size[b->n] = size[k];
				b->key[b->n] = key[k];
				b->n++;
				obj[k] = NULL;
			}
			w->sent += (uint64_t)b->n;
			rp_wait_room(w, next);
			atomic_fetch_add_explicit(&next->pending, 1, memory_order_relaxed);
			rp_send(next, b);
		}
	}
	/* Free what arrives until every thread has sent its last batch (a thread still sending
	 * may wait for this one to make room), then what is left. */
	atomic_fetch_add_explicit(w->finished, 1, memory_order_release);
	while (atomic_load_explicit(w->finished, memory_order_acquire) < w->threads) {
		rp_drain(w);
		sched_yield();
	}
	rp_drain(w);
	for (size_t k = 0; k < RP_SLOTS; k++) {
		if (obj[k]) {
			bench_check_stamp(obj[k], size[k], key[k], "rptest final free");
			free(obj[k]);
		}
	}
	free(obj);
	free(size);
	free(key);
	return NULL;
}

int bench_rptest(const struct bench_args *a, struct bench_result *r)
{
	uint64_t total = bench_scaled(24000, a->scale, 40);
	struct rp_worker *w = calloc((size_t)a->threads, sizeof *w);
	atomic_int finished;
	if (!w)
		bench_fail("rptest: calloc failed");
	atomic_init(&finished, 0);
	for (int t = 0; t < a->threads; t++) {
		w[t].id = t;
		w[t].threads = a->threads;
		w[t].seed = a->seed;
		w[t].loops = bench_share(total, a->threads, t);
		w[t].all = w;
		w[t].finished = &finished;
		atomic_init(&w[t].inbox, NULL);
		atomic_init(&w[t].pending, 0);
	}
	bench_run_threads(a->threads, rp_thread, w, sizeof *w);
	uint64_t sent = 0, received = 0;
	for (int t = 0; t < a->threads; t++) {
		r->ops += w[t].ops;
		r->checksum += w[t].sum;
		sent += w[t].sent;
		received += w[t].received;
	}
	if (sent != received)
		bench_fail("rptest: %llu blocks handed over, %llu freed by their receivers",
			   (unsigned long long)sent, (unsigned long long)received);
	if (r->ops != total * RP_OPS_PER_LOOP)
		bench_fail("rptest: did %llu ops, expected %llu", (unsigned long long)r->ops,
			   (unsigned long long)(total * RP_OPS_PER_LOOP));
	r->checksum += received;
	free(w);
	return 0;
}
