/*
 * mstress — after mimalloc's test-stress: T worker threads run at a time, each for a short life
 * of random replacements in one table shared by all threads (an atomic exchange puts the new
 * object in and takes the old one out, which the taker checks and frees). When a worker dies the
 * main thread starts its replacement, so objects outlive the threads that allocated them and are
 * freed by threads that did not exist yet. Sizes: mostly 32..256 bytes, one in 64 up to 32 KiB.
 * The table is the only shared state; slots hold a pointer whose size and key live in the
 * object itself.
 */
#include <stdlib.h>

#include "bench.h"

#define MS_SLOTS 65536
#define MS_LIVES_PER_THREAD 8

struct ms_shared {
	_Atomic(uint64_t *) *slot;
	uint64_t seed;
};

struct ms_life {
	struct ms_shared *sh;
	uint64_t id;
	uint64_t ops;
	uint64_t sum;
	char pad[64]; /* lives sit side by side, two run at once and write sum on every op */
};

/* Object layout: word 0 stamp, word 1 size, word 2 key; tail byte. */
static void ms_release(uint64_t *o)
{
	if (!o)
		return;
	bench_check_stamp(o, (size_t)o[1], o[2], "mstress free");
	free(o);
}

static void *ms_thread(void *arg)
{
	struct ms_life *l = arg;
	struct bench_rng rng = bench_rng_make(l->sh->seed, l->id + 1);
	for (uint64_t i = 0; i < l->ops; i++) {
		uint64_t x = bench_rng_next(&rng);
		size_t sz = (x & 63) == 0 ? bench_rng_range(&rng, 257, 32768) : bench_rng_range(&rng, 32, 256);
		uint64_t *o = bench_xmalloc_or_fail(sz);
		o[1] = sz;
		o[2] = l->id;
		bench_stamp(o, sz, l->id);
		l->sum += sz;
		size_t k = (size_t)((x >> 8) % MS_SLOTS);
		ms_release(atomic_exchange_explicit(&l->sh->slot[k], o, memory_order_acq_rel));
	}
	return NULL;
}

int bench_mstress(const struct bench_args *a, struct bench_result *r)
{
	struct ms_shared sh = {.seed = a->seed};
	sh.slot = calloc(MS_SLOTS, sizeof *sh.slot);
	int n = a->threads;
	uint64_t lives = (uint64_t)n * MS_LIVES_PER_THREAD;
	uint64_t total = bench_scaled(2000000, a->scale, 1000);
	struct ms_life *life = calloc(lives, sizeof *life);
	pthread_t *tid = calloc((size_t)n, sizeof *tid);
	if (!sh.slot || !life || !tid)
		bench_fail("mstress: setup allocation failed");
	for (uint64_t i = 0; i < lives; i++) {
		life[i].sh = &sh;
		life[i].id = i;
		life[i].ops = bench_share(total, (int)lives, (int)i);
	}
	/* Keep n threads alive: when the oldest ends, start the next life in its place. */
	uint64_t next = 0;
	for (int t = 0; t < n; t++, next++)
		bench_start_thread(&tid[t], t, ms_thread, &life[next]);
	for (int t = 0; next < lives; t = (t + 1) % n, next++) {
		pthread_join(tid[t], NULL);
		bench_start_thread(&tid[t], t, ms_thread, &life[next]);
	}
	for (int t = 0; t < n; t++)
		pthread_join(tid[t], NULL);
	for (size_t k = 0; k < MS_SLOTS; k++)
		ms_release(atomic_load(&sh.slot[k]));
	for (uint64_t i = 0; i < lives; i++) {
		r->ops += life[i].ops;
		r->checksum += life[i].sum;
	}
	if (r->ops != total)
		bench_fail("mstress: did %llu ops, expected %llu", (unsigned long long)r->ops,
			   (unsigned long long)total);
	free(tid);
	free(life);
	free(sh.slot);
	return 0;
}
