/*
 * bench.h — what the allocator workloads of npbench share: arguments, a seeded generator,
 * object stamps that prove memory was not corrupted or handed out twice, thread start-up, and
 * the one result line the runner (bench/run.py) parses. Workloads run against whatever malloc
 * the process was given (LD_PRELOAD); each does a fixed amount of work from a fixed seed and
 * exits non-zero (bench_fail) when one of its own checks fails. No locks here but the caller's.
 */
#ifndef NPBENCH_BENCH_H
#define NPBENCH_BENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct bench_args {
	int threads;	/* worker threads (pairs for xmalloc) */
	double scale;	/* multiplies the fixed amount of work; 1.0 is the "moderate" scale */
	uint64_t seed;	/* every generator derives from it */
};

/* What a workload reports: ops it did and a checksum the runner prints (not compared across
 * allocators: each workload checks its own results). */
struct bench_result {
	uint64_t ops;
	uint64_t checksum;
};

typedef int (*bench_fn)(const struct bench_args *, struct bench_result *);

/* The workloads, one file each. */
int bench_larson(const struct bench_args *, struct bench_result *);
int bench_xmalloc(const struct bench_args *, struct bench_result *);
int bench_cache_scratch(const struct bench_args *, struct bench_result *);
int bench_cache_thrash(const struct bench_args *, struct bench_result *);
int bench_alloc_test(const struct bench_args *, struct bench_result *);
int bench_mstress(const struct bench_args *, struct bench_result *);
int bench_fork(const struct bench_args *, struct bench_result *);
int bench_exec(const struct bench_args *, struct bench_result *);
/* The exec workload's child (npbench exec-child): its exit status. */
int bench_exec_child(void);
int bench_realloc_grow(const struct bench_args *, struct bench_result *);
int bench_large_blocks(const struct bench_args *, struct bench_result *);
int bench_churn(const struct bench_args *, struct bench_result *);
int bench_large_calloc(const struct bench_args *, struct bench_result *);
int bench_rptest(const struct bench_args *, struct bench_result *);

/* ---- generator: splitmix64, so a seed of 0 is fine and streams for different threads differ */
struct bench_rng {
	uint64_t s;
};

static inline uint64_t bench_rng_next(struct bench_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline struct bench_rng bench_rng_make(uint64_t seed, uint64_t stream)
{
	struct bench_rng r = {seed * 0x2545f4914f6cdd1dull + stream * 0x9e3779b97f4a7c15ull + 1};
	bench_rng_next(&r);
	return r;
}

/* Uniform in [lo, hi]. The modulo bias is irrelevant for workload shapes. */
static inline size_t bench_rng_range(struct bench_rng *r, size_t lo, size_t hi)
{
	return lo + (size_t)(bench_rng_next(r) % (hi - lo + 1));
}

/* ---- stamps: every object of >= 16 bytes carries a word derived from its address, size and
 * key at the start and a byte at its end. A double hand-out, a write by the allocator into a
 * live object, or a lost realloc copy breaks one of them. */
#define BENCH_STAMP_MIN 16

static inline uint64_t bench_stamp_word(const void *p, size_t size, uint64_t key)
{
	return ((uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull) ^ (size << 20) ^ key;
}

static inline void bench_stamp(void *p, size_t size, uint64_t key)
{
	unsigned char *b = p;
	b[size - 1] = (unsigned char)(key ^ size);
	*(uint64_t *)p = bench_stamp_word(p, size, key);
}

/* Checks a stamp and calls bench_fail on a mismatch. */
void bench_check_stamp(const void *p, size_t size, uint64_t key, const char *where);

/* Prints "npbench: CHECK FAILED: ..." on stderr and exits with status 2. */
__attribute__((noreturn, format(printf, 1, 2))) void bench_fail(const char *fmt, ...);

/* malloc that fails the benchmark instead of returning NULL. */
void *bench_xmalloc_or_fail(size_t size);

double bench_now(void);

/* Set by `npbench --pin`: worker slot i runs on the (i mod n)-th of the n CPUs the process may
 * use, for every allocator alike. With more threads than CPUs, where the scheduler puts them
 * otherwise decides the result more than the allocator does: xmalloc/2's four threads on two
 * CPUs took 0.11 s with each producer beside its consumer and 0.28 s with the pairs split, in
 * runs of one build, so an unpinned row measured which arrangement the scheduler settled into
 * (docs/perf-issue15.md, section 21). */
extern int bench_pin;

/* pthread_create for the thread in worker slot `slot` (pinned as bench_pin says); fails the
 * benchmark when it cannot start. */
void bench_start_thread(pthread_t *tid, int slot, void *(*fn)(void *), void *arg);

/* The calling thread runs where worker slot `slot` would (as bench_pin says). */
void bench_pin_self(int slot);

/* Starts n threads running fn(arg + i * arg_size), slots 0..n-1, and joins them all. */
void bench_run_threads(int n, void *(*fn)(void *), void *args, size_t arg_size);

/* Splits total work over n workers: worker i's share; the shares add up to total. */
static inline uint64_t bench_share(uint64_t total, int n, int i)
{
	return total / (uint64_t)n + ((uint64_t)i < total % (uint64_t)n ? 1 : 0);
}

/* Scales a base amount of work, at least min. */
uint64_t bench_scaled(uint64_t base, double scale, uint64_t min);

#endif
