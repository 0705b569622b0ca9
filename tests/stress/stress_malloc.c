/*
 * stress_malloc.c — the malloc layer under threads, one scenario per run (argv[1]):
 *   larson       threads take random blocks from a shared table, check and free them, put new
 *                ones back: most frees are remote, many blocks outlive the thread that made them
 *   prodcons     producers allocate, consumers check and free: every free is remote
 *   threads10k   10,000 short-lived threads; some blocks outlive their thread and are freed by
 *                later ones; at the end pages, threads and RSS are back at the baseline
 *   fork         fork 20 times while 4 threads churn; each child checks and frees blocks of
 *                threads it no longer has, mallocs and frees in a loop (and in a new thread)
 *   exact_stats  the statistics after threads exit equal what the threads did, byte for byte;
 *                and a thread's frees of a live thread's blocks count exactly at its own read
 *   orphans      an exited thread's slabs, emptied by another thread's frees, give their pages
 *                back at that thread's next sweep, with no trim
 *   beyond_node_memory  (run with a rehearsed topology of two 16 MiB nodes) 32 times the
 *                memory of the nodes in small blocks, each written once: address space is not
 *                memory, nothing may be refused because of what is mapped (issue 13)
 *   address_limit  under RLIMIT_AS (a child exec'd with the limit), blocks of 70 KB-3 MiB fill
 *                at least 90% of the address space left, and fit again once freed (issue 13;
 *                skipped under a sanitizer, whose shadow memory is address space)
 * Fixed seeds; every block carries a header and a pattern that are checked before its free.
 * Each scenario does a fixed amount of work sized to finish in a few seconds on 2 cores and
 * is sized by NP_TEST_TIME_SCALE (see scaled). Between its baseline and its final reading the main
 * thread allocates nothing (only worker threads do), so the statistics can be compared exactly.
 * Libc names where libnumapage exports them (-DSTRESS_LIBC), else numa_page_*.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/api_common.h"
#include "stress_common.h"

#ifdef STRESS_LIBC
#define S_MALLOC malloc
#define S_FREE free
#define S_TRIM() malloc_trim(0)
#include <malloc.h>
#else
#define S_MALLOC numa_page_malloc
#define S_FREE numa_page_free
#define S_TRIM() numa_page_trim()
#endif

/* Under AddressSanitizer its runtime's own per-thread memory (shadow, quarantine, fake stacks)
 * is in the resident set, and its leak checker at a forked child's exit reports the parent's
 * threads: the RSS comparison and the child's exit handlers are left to the other builds. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static double t_start;

/* NP_TEST_TIME_SCALE (the vm tier under TCG sets 10): the thread-heavy cases divide their
 * thread and fork counts by it, so they still finish in about the same time on an emulated
 * machine. Nothing here measures time: meson's timeout catches a hang. */
static double time_scale = 1.0;

static int scaled(int n)
{
	int k = (int)(n / time_scale);
	return k > 0 ? k : 1;
}

/* Mostly small, some medium, a few page runs: the mix of a real program. */
static size_t rnd_size(uint64_t *s)
{
	uint64_t r = rnd(s) % 1000;
	if (r < 700)
		return 16 + rnd(s) % 240;
	if (r < 900)
		return 256 + rnd(s) % 3840;
	if (r < 995)
		return 4096 + rnd(s) % (28 * KiB);
	return 32 * KiB + rnd(s) % (260 * KiB);
}

/* A block: {size, tag, check word} then the pattern of seed tag. */
struct hdr {
	uint64_t size, tag, sum;
};

static void *make_block(size_t n, uint64_t tag)
{
	if (n < sizeof(struct hdr))
		n = sizeof(struct hdr);
	struct hdr *h = S_MALLOC(n);
	CHECK(h != NULL, "malloc(%zu) failed: %s", n, strerror(errno));
	h->size = n;
	h->tag = tag;
	h->sum = n * 0x9e3779b97f4a7c15ULL ^ tag;
	np_t_fill(h + 1, n - sizeof *h, tag);
	return h;
}

static void check_block(const void *p)
{
	const struct hdr *h = p;
	CHECK(h->sum == (h->size * 0x9e3779b97f4a7c15ULL ^ h->tag), "block %p: header overwritten", p);
	size_t bad = np_t_check(h + 1, h->size - sizeof *h, h->tag);
	CHECK(bad == SIZE_MAX, "block %p (%llu bytes, tag %llu): byte %zu overwritten", p,
	      (unsigned long long)h->size, (unsigned long long)h->tag, bad + sizeof *h);
}

static void drop_block(void *p)
{
	check_block(p);
	S_FREE(p);
}

/* Every CPU of the process, as main found it before it pinned itself (see main): the workers
 * run on all of them. Made once, before any baseline: setting an affinity in attributes
 * allocates. */
static pthread_attr_t worker_attr;

static pthread_t spawn(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	int rc = pthread_create(&t, &worker_attr, fn, arg);
	CHECK(rc == 0, "pthread_create: %s", strerror(rc));
	return t;
}

static void join(pthread_t t)
{
	int rc = pthread_join(t, NULL);
	CHECK(rc == 0, "pthread_join: %s", strerror(rc));
}

/* ---- baselines ---------------------------------------------------------------------------- */

struct baseline {
	struct numa_page_node_stats st;
	size_t rss;
};

static struct baseline take_baseline(void)
{
	struct baseline b = {np_t_stats(), np_t_rss()};
	return b;
}

/* After every worker thread has exited and freed what it allocated, and trim: the pages in use,
 * the pages held outside the pools, the live threads and the malloc bytes in use are the
 * baseline's exactly; the resident set is within `rss_slack` of it. */
static void check_back_to_baseline(const char *what, const struct baseline *b, size_t rss_slack)
{
	S_TRIM();
	struct numa_page_node_stats e = np_t_stats();
	size_t rss = np_t_rss();
	printf("%s: pages_in_use %llu -> %llu, pool out %lld -> %lld, threads %llu -> %llu, "
	       "malloc_in_use %llu -> %llu, rss %zu KiB -> %zu KiB, %.2f s\n",
	       what, (unsigned long long)b->st.pages_in_use, (unsigned long long)e.pages_in_use,
	       (long long)(b->st.pages_alloc - b->st.pages_free), (long long)(e.pages_alloc - e.pages_free),
	       (unsigned long long)b->st.threads, (unsigned long long)e.threads,
	       (unsigned long long)b->st.malloc_in_use, (unsigned long long)e.malloc_in_use, b->rss >> 10,
	       rss >> 10, now() - t_start);
	CHECK(e.threads == b->st.threads, "%s: live threads", what);
	CHECK(e.pages_in_use == b->st.pages_in_use, "%s: pages in use", what);
	CHECK(e.malloc_in_use == b->st.malloc_in_use, "%s: malloc bytes in use", what);
	/* Pages out of the pools: trim drained the main thread's page cache, which may have
	 * held pages at the baseline. */
	CHECK(e.pages_alloc - e.pages_free <= b->st.pages_alloc - b->st.pages_free, "%s: pool pages", what);
	if (!UNDER_ASAN && !NP_TEST_TSAN) /* ThreadSanitizer's shadow memory is resident too */
		CHECK(rss <= b->rss + rss_slack, "%s: resident set grew by %zu KiB", what, (rss - b->rss) >> 10);
}

/* Runs `n` threads at once that allocate and free a little: the allocator's per-thread
 * structures (recycled, never unmapped) and the C library's stack cache exist for as many
 * threads as the scenario runs at once before its baseline is taken. */
static pthread_barrier_t warm_barrier;

static void *warm_one(void *arg)
{
	(void)arg;
	void *p = make_block(100, 1), *q = make_block(50000, 2);
	pthread_barrier_wait(&warm_barrier);
	drop_block(p);
	drop_block(q);
	return NULL;
}

static void warm_up(int n)
{
	pthread_t t[64];
	CHECK(pthread_barrier_init(&warm_barrier, NULL, (unsigned)n) == 0, "barrier");
	for (int i = 0; i < n; i++)
		t[i] = spawn(warm_one, NULL);
	for (int i = 0; i < n; i++)
		join(t[i]);
	pthread_barrier_destroy(&warm_barrier);
	S_TRIM();
}

/* ---- larson --------------------------------------------------------------------------------- */

#define LARSON_SLOTS 4096
#define LARSON_THREADS 4
#define LARSON_ROUNDS 4
#define LARSON_OPS 40000

static _Atomic(void *) larson_table[LARSON_SLOTS];

static void *larson_worker(void *arg)
{
	uint64_t s = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1;
	for (int i = 0; i < LARSON_OPS; i++) {
		unsigned k = (unsigned)(rnd(&s) % LARSON_SLOTS);
		void *old = atomic_exchange(&larson_table[k], NULL);
		if (old)
			drop_block(old);
		void *p = make_block(rnd_size(&s), (uint64_t)(uintptr_t)arg << 32 | (uint64_t)i);
		old = atomic_exchange(&larson_table[k], p);
		if (old)
			drop_block(old);
	}
	return NULL;
}

static void *larson_drain(void *arg)
{
	(void)arg;
	for (int k = 0; k < LARSON_SLOTS; k++) {
		void *p = atomic_exchange(&larson_table[k], NULL);
		if (p)
			drop_block(p);
	}
	return NULL;
}

static void larson(void)
{
	warm_up(LARSON_THREADS);
	struct baseline b = take_baseline();
	/* Rounds of new threads: blocks of a round's threads are freed by the next round's. */
	for (int r = 0; r < LARSON_ROUNDS; r++) {
		pthread_t t[LARSON_THREADS];
		for (int i = 0; i < LARSON_THREADS; i++)
			t[i] = spawn(larson_worker, (void *)(uintptr_t)(r * LARSON_THREADS + i + 1));
		for (int i = 0; i < LARSON_THREADS; i++)
			join(t[i]);
	}
	join(spawn(larson_drain, NULL));
	check_back_to_baseline("larson", &b, 8 * MiB);
}

/* ---- producer / consumer ------------------------------------------------------------------- */

#define PC_PAIRS 2
#define PC_BLOCKS 150000
#define PC_RING 1024

struct ring {
	_Atomic(void *) slot[PC_RING];
	_Atomic unsigned long head, tail;
	int id;
};

static struct ring rings[PC_PAIRS];

static void *producer(void *arg)
{
	struct ring *r = arg;
	uint64_t s = 1000 + (uint64_t)r->id;
	for (unsigned long i = 0; i < PC_BLOCKS; i++) {
		void *p = make_block(rnd_size(&s), i);
		while (atomic_load(&r->head) - atomic_load(&r->tail) >= PC_RING)
			sched_yield();
		atomic_store(&r->slot[atomic_load(&r->head) % PC_RING], p);
		atomic_fetch_add(&r->head, 1);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct ring *r = arg;
	for (unsigned long i = 0; i < PC_BLOCKS; i++) {
		while (atomic_load(&r->tail) == atomic_load(&r->head))
			sched_yield();
		void *p = atomic_exchange(&r->slot[i % PC_RING], NULL);
		atomic_fetch_add(&r->tail, 1);
		CHECK(((struct hdr *)p)->tag == i, "ring %d: block %lu out of order", r->id, i);
		drop_block(p);
	}
	return NULL;
}

static void prodcons(void)
{
	warm_up(2 * PC_PAIRS);
	struct baseline b = take_baseline();
	pthread_t t[2 * PC_PAIRS];
	for (int i = 0; i < PC_PAIRS; i++) {
		rings[i].id = i;
		t[2 * i] = spawn(consumer, &rings[i]);
		t[2 * i + 1] = spawn(producer, &rings[i]);
	}
	for (int i = 0; i < 2 * PC_PAIRS; i++)
		join(t[i]);
	check_back_to_baseline("prodcons", &b, 8 * MiB);
}

/* ---- 10,000 short-lived threads ----------------------------------------------------------- */

#define TT_THREADS 10000
#define TT_WAVE 8
#define TT_BLOCKS 24
#define TT_HANDOFF 4 /* blocks each thread leaves to later threads */
#define TT_QUEUE 4096

static pthread_mutex_t tt_lock = PTHREAD_MUTEX_INITIALIZER;
static void *tt_queue[TT_QUEUE];
static unsigned tt_head, tt_tail; /* under tt_lock */

static void *tt_worker(void *arg)
{
	uint64_t s = (uint64_t)(uintptr_t)arg * 0x2545f4914f6cdd1dULL + 7;
	void *mine[TT_BLOCKS];
	for (int i = 0; i < TT_BLOCKS; i++)
		mine[i] = make_block(rnd_size(&s), (uint64_t)(uintptr_t)arg * TT_BLOCKS + (uint64_t)i);
	/* Free most of ours, take blocks of earlier (mostly exited) threads, leave some of ours. */
	for (int i = TT_HANDOFF; i < TT_BLOCKS; i++)
		drop_block(mine[i]);
	void *theirs[TT_HANDOFF];
	int n = 0;
	pthread_mutex_lock(&tt_lock);
	while (n < TT_HANDOFF && tt_tail != tt_head)
		theirs[n++] = tt_queue[tt_tail++ % TT_QUEUE];
	for (int i = 0; i < TT_HANDOFF; i++)
		tt_queue[tt_head++ % TT_QUEUE] = mine[i];
	pthread_mutex_unlock(&tt_lock);
	for (int i = 0; i < n; i++)
		drop_block(theirs[i]);
	return NULL;
}

static void *tt_drain(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&tt_lock);
	while (tt_tail != tt_head)
		drop_block(tt_queue[tt_tail++ % TT_QUEUE]);
	pthread_mutex_unlock(&tt_lock);
	return NULL;
}

static void threads10k(void)
{
	warm_up(TT_WAVE);
	struct baseline b = take_baseline();
	pthread_t t[TT_WAVE];
	for (int i = 0; i < scaled(TT_THREADS); i += TT_WAVE) {
		for (int j = 0; j < TT_WAVE; j++)
			t[j] = spawn(tt_worker, (void *)(uintptr_t)(i + j + 1));
		for (int j = 0; j < TT_WAVE; j++)
			join(t[j]);
	}
	join(spawn(tt_drain, NULL));
	check_back_to_baseline("threads10k", &b, 8 * MiB);
}

/* ---- fork in a multi-threaded program -------------------------------------------------------- */

#define FORKS 20
#define FORK_WORKERS 4
#define FORK_SLOTS 1024
#define FORK_MINE 256

static _Atomic(void *) fork_table[FORK_SLOTS];
static atomic_bool fork_stop, fork_pause;
static atomic_int fork_started;

static void *fork_worker(void *arg)
{
	uint64_t s = (uint64_t)(uintptr_t)arg + 99;
	atomic_fetch_add(&fork_started, 1);
	for (uint64_t i = 0; !atomic_load(&fork_stop); i++) {
		/* Idle while a child runs: on 2 cores it would otherwise starve. */
		while (atomic_load(&fork_pause) && !atomic_load(&fork_stop))
			usleep(1000);
		unsigned k = (unsigned)(rnd(&s) % FORK_SLOTS);
		void *old = atomic_exchange(&fork_table[k], NULL);
		if (old)
			drop_block(old);
		old = atomic_exchange(&fork_table[k], make_block(rnd_size(&s), i));
		if (old)
			drop_block(old);
	}
	return NULL;
}

static void *child_thread(void *arg)
{
	uint64_t s = (uint64_t)(uintptr_t)arg;
	for (int i = 0; i < 2000; i++)
		drop_block(make_block(rnd_size(&s), (uint64_t)i));
	return NULL;
}

/* In the child: only this thread survives. Blocks of the vanished threads are checked and
 * freed, then malloc and free work as usual, in this thread and in a new one. */
static void fork_child(void **mine, int round)
{
	alarm(20); /* a deadlock in the child fails the test instead of hanging it */
	for (int i = 0; i < FORK_MINE; i++)
		drop_block(mine[i]);
	for (int k = 0; k < FORK_SLOTS; k++) {
		void *p = atomic_exchange(&fork_table[k], NULL);
		if (p)
			drop_block(p);
	}
	uint64_t s = 5 + (uint64_t)round;
	void *keep[64] = {0};
	for (int i = 0; i < 10000; i++) {
		unsigned k = (unsigned)(rnd(&s) % 64);
		if (keep[k])
			drop_block(keep[k]);
		keep[k] = make_block(rnd_size(&s), (uint64_t)i);
	}
	pthread_t t = spawn(child_thread, (void *)(uintptr_t)(round + 1));
	join(t);
	for (int k = 0; k < 64; k++)
		if (keep[k])
			drop_block(keep[k]);
	if (UNDER_ASAN)
		_exit(0);
	exit(0); /* exit handlers (libnumapage's statistics report among them) run in the child */
}

static void forks(void)
{
	pthread_t t[FORK_WORKERS];
	for (int i = 0; i < FORK_WORKERS; i++)
		t[i] = spawn(fork_worker, (void *)(uintptr_t)i);
	/* Fork only once every worker runs its loop: the forks land mid-churn, and never while a
	 * thread is still starting (gcc 12's ASan runtime has no fork handler for its thread
	 * registry: a child forked then deadlocks creating a thread, whatever the allocator). */
	while (atomic_load(&fork_started) < FORK_WORKERS)
		usleep(1000);
	void *mine[FORK_MINE];
	for (int r = 0; r < scaled(FORKS); r++) {
		for (int i = 0; i < FORK_MINE; i++)
			mine[i] = make_block(16 + (size_t)(i * 37 % 5000), (uint64_t)(r * FORK_MINE + i));
		usleep(20000); /* let the workers run so the fork lands mid-churn */
		fflush(stdout);
		fflush(stderr);
		pid_t pid = fork();
		CHECK(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0)
			fork_child(mine, r);
		atomic_store(&fork_pause, true);
		int status;
		CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork %d: child %s %d", r,
		      WIFSIGNALED(status) ? "killed by signal" : "exit status",
		      WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		atomic_store(&fork_pause, false);
		/* The parent's copies are untouched by the child's frees. */
		for (int i = 0; i < FORK_MINE; i++)
			drop_block(mine[i]);
	}
	atomic_store(&fork_stop, true);
	for (int i = 0; i < FORK_WORKERS; i++)
		join(t[i]);
	for (int k = 0; k < FORK_SLOTS; k++) {
		void *p = atomic_exchange(&fork_table[k], NULL);
		if (p)
			drop_block(p);
	}
	printf("fork: %d children of a %d-thread parent exited 0, %.2f s\n", FORKS, FORK_WORKERS + 1,
	       now() - t_start);
}

/* ---- exact statistics after threads exit ---------------------------------------------------- */

#define ES_THREADS 4
#define ES_SMALL 1000
#define ES_SMALL_SIZE 48 /* a class size: in-use bytes are exactly 48 per block */
#define ES_RUN_SIZE 100000
#define ES_RUNS 3
#define ES_HUGE_SIZE (6 * MiB)

struct es_kept {
	void *small[ES_SMALL / 2];
	void *run;
	void *huge;
};

static struct es_kept es_kept[ES_THREADS];

static void *es_worker(void *arg)
{
	struct es_kept *k = arg;
	void *small[ES_SMALL], *runs[ES_RUNS];
	for (int i = 0; i < ES_SMALL; i++) {
		small[i] = S_MALLOC(ES_SMALL_SIZE);
		CHECK(small[i] != NULL, "malloc");
		memset(small[i], i, ES_SMALL_SIZE);
	}
	for (int i = 0; i < ES_RUNS; i++) {
		runs[i] = S_MALLOC(ES_RUN_SIZE);
		CHECK(runs[i] != NULL, "malloc");
		memset(runs[i], i, ES_RUN_SIZE);
	}
	k->huge = S_MALLOC(ES_HUGE_SIZE);
	CHECK(k->huge != NULL, "malloc");
	for (int i = 0; i < ES_SMALL; i += 2) {
		S_FREE(small[i]);
		k->small[i / 2] = small[i + 1];
	}
	for (int i = 1; i < ES_RUNS; i++)
		S_FREE(runs[i]);
	k->run = runs[0];
	return NULL;
}

/* Phase 2: es_owner allocates ES_REMOTE blocks and stays alive while es_freer frees them all
 * (remote frees into slabs a live thread owns, fewer bytes than a freer folds by itself). */
#define ES_REMOTE 1000
static void *es_remote[ES_REMOTE];
static pthread_barrier_t es_allocated, es_freed;
static struct numa_page_node_stats es_before, es_owner_read, es_freer_read;

static void *es_owner(void *arg)
{
	(void)arg;
	for (int i = 0; i < ES_REMOTE; i++) {
		es_remote[i] = S_MALLOC(ES_SMALL_SIZE);
		CHECK(es_remote[i] != NULL, "malloc");
		memset(es_remote[i], i, ES_SMALL_SIZE);
	}
	es_owner_read = np_t_stats(); /* an exact read folds this thread's counts */
	pthread_barrier_wait(&es_allocated);
	pthread_barrier_wait(&es_freed);
	return NULL;
}

static void *es_freer(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&es_allocated);
	for (int i = 0; i < ES_REMOTE; i++)
		S_FREE(es_remote[i]);
	es_freer_read = np_t_stats();
	pthread_barrier_wait(&es_freed);
	return NULL;
}

static void exact_stats_remote(void)
{
	CHECK(pthread_barrier_init(&es_allocated, NULL, 2) == 0 && pthread_barrier_init(&es_freed, NULL, 2) == 0,
	      "barriers");
	es_before = np_t_stats();
	pthread_t t[2] = {spawn(es_owner, NULL), spawn(es_freer, NULL)};
	join(t[0]);
	join(t[1]);
	struct numa_page_node_stats e = np_t_stats();
	printf("exact_stats: remote frees: malloc_in_use %+lld at the owner's read, %+lld at the freer's, "
	       "%+lld after both exited\n",
	       (long long)(es_owner_read.malloc_in_use - es_before.malloc_in_use),
	       (long long)(es_freer_read.malloc_in_use - es_before.malloc_in_use),
	       (long long)(e.malloc_in_use - es_before.malloc_in_use));
	CHECK(es_owner_read.malloc_in_use - es_before.malloc_in_use == ES_REMOTE * ES_SMALL_SIZE,
	      "owner's read: bytes in use");
	CHECK(es_freer_read.malloc_in_use == es_before.malloc_in_use, "freer's read: bytes in use");
	CHECK(e.malloc_in_use == es_before.malloc_in_use, "bytes in use after both exited");
	pthread_barrier_destroy(&es_allocated);
	pthread_barrier_destroy(&es_freed);
}

static void exact_stats(void)
{
	warm_up(ES_THREADS);
	struct numa_page_node_stats b = np_t_stats();
	struct numa_page_node_stats bc;
	memset(&bc, 0, sizeof bc);
	for (int n = 0; n <= numa_page_max_node(); n++) {
		struct numa_page_node_stats one;
		if (numa_page_stats_get_cheap(n, &one) == 0) {
			bc.malloc_requested += one.malloc_requested;
			bc.malloc_in_use += one.malloc_in_use;
		}
	}
	pthread_t t[ES_THREADS];
	for (int i = 0; i < ES_THREADS; i++)
		t[i] = spawn(es_worker, &es_kept[i]);
	for (int i = 0; i < ES_THREADS; i++)
		join(t[i]);
	struct numa_page_node_stats s = np_t_stats();
	struct numa_page_node_stats sc;
	memset(&sc, 0, sizeof sc);
	for (int n = 0; n <= numa_page_max_node(); n++) {
		struct numa_page_node_stats one;
		if (numa_page_stats_get_cheap(n, &one) == 0) {
			sc.malloc_requested += one.malloc_requested;
			sc.malloc_in_use += one.malloc_in_use;
		}
	}
	uint64_t want_req = (uint64_t)ES_THREADS * (ES_SMALL * ES_SMALL_SIZE + ES_RUNS * ES_RUN_SIZE + ES_HUGE_SIZE);
	/* In use: the small blocks each thread kept, and its kept run and huge block (large
	 * blocks count with their usable size, whole pages). */
	uint64_t want_use = (uint64_t)ES_THREADS * (ES_SMALL / 2) * ES_SMALL_SIZE;
	for (int i = 0; i < ES_THREADS; i++)
		want_use += numa_page_usable_size(es_kept[i].run) + numa_page_usable_size(es_kept[i].huge);
	printf("exact_stats: malloc_requested +%llu (want %llu), malloc_in_use +%lld (want %llu), "
	       "pages_in_use +%lld, threads %llu -> %llu\n",
	       (unsigned long long)(s.malloc_requested - b.malloc_requested), (unsigned long long)want_req,
	       (long long)(s.malloc_in_use - b.malloc_in_use), (unsigned long long)want_use,
	       (long long)(s.pages_in_use - b.pages_in_use), (unsigned long long)b.threads,
	       (unsigned long long)s.threads);
	CHECK(s.threads == b.threads, "threads gauge after join");
	CHECK(s.malloc_requested - b.malloc_requested == want_req, "bytes requested");
	CHECK(s.malloc_in_use - b.malloc_in_use == want_use, "bytes in use");
	/* The exited threads folded everything: the cheap reader moved by the same amounts. */
	CHECK(sc.malloc_requested - bc.malloc_requested == want_req, "cheap reader: bytes requested");
	CHECK(sc.malloc_in_use - bc.malloc_in_use == want_use, "cheap reader: bytes in use");
	uint64_t kept_pages = ES_THREADS * ((ES_RUN_SIZE + 4095) / 4096 + ES_HUGE_SIZE / 4096);
	CHECK(s.pages_in_use >= b.pages_in_use + kept_pages, "pages in use");

	/* The main thread frees what the exited threads left: every byte and page comes back. */
	for (int i = 0; i < ES_THREADS; i++) {
		for (int j = 0; j < ES_SMALL / 2; j++)
			S_FREE(es_kept[i].small[j]);
		S_FREE(es_kept[i].run);
		S_FREE(es_kept[i].huge);
	}
	struct numa_page_node_stats e = np_t_stats();
	CHECK(e.malloc_in_use == b.malloc_in_use, "bytes in use after the frees: %lld off",
	      (long long)(e.malloc_in_use - b.malloc_in_use));
	CHECK(e.malloc_requested == s.malloc_requested, "frees request nothing");
	S_TRIM();
	e = np_t_stats();
	CHECK(e.pages_in_use == b.pages_in_use, "pages in use after the frees and trim: %lld off",
	      (long long)(e.pages_in_use - b.pages_in_use));
	CHECK(e.threads == b.threads, "threads");
	exact_stats_remote();
}

/* ---- orphans emptied by remote frees ----------------------------------------------------- */

#define OR_BLOCKS 20000 /* 48-byte blocks: 8 slabs */

static void *or_blocks[OR_BLOCKS];

static void *or_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < OR_BLOCKS; i++) {
		or_blocks[i] = S_MALLOC(ES_SMALL_SIZE);
		CHECK(or_blocks[i] != NULL, "malloc");
		memset(or_blocks[i], i, ES_SMALL_SIZE);
	}
	return NULL; /* its slabs become orphans: every block is still in use */
}

static void orphans(void)
{
	warm_up(1);
	join(spawn(or_worker, NULL));
	struct numa_page_node_stats held = np_t_stats();
	for (int i = 0; i < OR_BLOCKS; i++)
		S_FREE(or_blocks[i]); /* remote frees into orphans: nobody owns them */
	/* This thread's slab slow paths (a class of its own, 16 bytes: one every 256 blocks
	 * while its slab grows) reach the periodic sweep, which must find the emptied orphans. */
	static void *mine[40000];
	for (int i = 0; i < 40000; i++)
		CHECK((mine[i] = S_MALLOC(16)) != NULL, "malloc");
	struct numa_page_node_stats after = np_t_stats();
	for (int i = 0; i < 40000; i++)
		S_FREE(mine[i]);
	long long orphan_pages = (long long)(OR_BLOCKS * ES_SMALL_SIZE / 4096);
	long long mine_pages = 40000 * 16 / 4096 + 16;
	printf("orphans: pages_in_use %lld with the orphans held, %lld after their frees and %d mallocs "
	       "(the orphans' blocks fill about %lld pages)\n",
	       (long long)held.pages_in_use, (long long)after.pages_in_use, 40000, orphan_pages);
	CHECK(after.pages_in_use <= held.pages_in_use - orphan_pages + mine_pages,
	      "the emptied orphans were not given back: %lld pages in use, %lld before their frees",
	      (long long)after.pages_in_use, (long long)held.pages_in_use);
}

enum { BNM_BLOCK = 32 * 1024, BNM_TOTAL_MIB = 1024 };

static void beyond_node_memory(void)
{
	int nodes = numa_page_node_count();
	CHECK(nodes >= 1, "node count");
	enum { N = BNM_TOTAL_MIB * (int)(MiB / BNM_BLOCK) };
	static char *blocks[N];
	for (int i = 0; i < N; i++) {
		blocks[i] = S_MALLOC(BNM_BLOCK);
		CHECK(blocks[i] != NULL, "block %d of %d (%d MiB) refused: errno %d", i, N,
		      (int)((size_t)i * BNM_BLOCK / MiB), errno);
		blocks[i][0] = (char)i;
		blocks[i][BNM_BLOCK - 1] = (char)~i;
	}
	for (int i = 0; i < N; i++) {
		CHECK(blocks[i][0] == (char)i && blocks[i][BNM_BLOCK - 1] == (char)~i, "block %d", i);
		S_FREE(blocks[i]);
	}
	printf("beyond_node_memory: %d MiB in %d-byte blocks on %d node(s)\n", BNM_TOTAL_MIB, BNM_BLOCK, nodes);
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRESS_ASAN 1
#endif
#endif
#ifdef __SANITIZE_ADDRESS__
#define STRESS_ASAN 1
#endif

enum { AL_HEADROOM_MIB = 256, AL_MAX = 4096, AL_SMALL = 65536 };

/* Under RLIMIT_AS (issue 13): blocks of one size until malloc says ENOMEM must fill at least 90%
 * of the address space left (glibc fills 99%; 1 MiB blocks three to a 4 MiB chunk filled 76%),
 * a few freed make room for a block of another size, and, all freed, as many fit again. Runs in a process of its own exec'd under the limit, so
 * that the allocator starts with it (address_limit_child). */
static void address_limit_child(size_t size)
{
	static char *blocks[AL_MAX];
	struct rlimit rl;
	CHECK(getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY, "the child runs under RLIMIT_AS");
	size_t mapped = np_t_mapped();
	CHECK(mapped > 0, "read VmSize from /proc/self/statm");
	size_t left = rl.rlim_cur - mapped;
	int n = 0;
	while (n < AL_MAX && (blocks[n] = S_MALLOC(size)) != NULL) {
		blocks[n][0] = 1;
		blocks[n][size - 1] = 2;
		n++;
	}
	CHECK(n < AL_MAX && errno == ENOMEM, "the last malloc of %zu bytes: errno %d", size, errno);
	double filled = (double)n * (double)size / (double)left;
	CHECK(filled >= 0.90, "%d blocks of %zu bytes filled %.0f%% of the %zu MiB of address space left", n, size,
	      filled * 100, left >> 20);
	for (int i = 0; i < n; i++)
		S_FREE(blocks[i]);
	int again = 0;
	while (again < n && (blocks[again] = S_MALLOC(size)) != NULL)
		again++;
	CHECK(again == n, "after freeing all %d, only %d fit again", n, again);
	n = again;
	/* Then blocks of 5,000 bytes until ENOMEM too: what was left besides (pages the thread's
	 * cache held, ends of chunks) is used up. */
	static char *small[AL_SMALL];
	int m = 0;
	while (m < AL_SMALL && (small[m] = S_MALLOC(5000)) != NULL)
		m++;
	CHECK(m < AL_SMALL && errno == ENOMEM, "the last malloc of 5000 bytes: errno %d", errno);
	/* The last four of size freed: a block of another size fits in their pages (two of them
	 * side by side hold a slab's 32 pages), though the thread's page cache keeps them. It
	 * failed with ENOMEM while the cache held the runs of 70,000-byte to 1 MiB blocks. Blocks
	 * above 1 MiB have chunks of their own here: theirs give back address space, and a new
	 * chunk of the pool takes 16 MiB of it (32 when the kernel's placement is not aligned). */
	size_t need = size > (1u << 20) ? (32u << 20) / size + 1 : 4;
	int back = n < (int)need ? n : (int)need;
	for (int i = n - back; i < n; i++)
		S_FREE(blocks[i]);
	char *other = S_MALLOC(5000);
	CHECK(other != NULL, "after %d blocks of %zu bytes were freed, malloc(5000) failed (errno %d)", back, size,
	      errno);
	S_FREE(other);
	/* All freed, the small ones first: blocks of size fit again, but for what the small
	 * blocks' slabs left between their runs (within 1%). 2 MiB blocks fitted 102 of 118:
	 * the empty slabs and the runs in the thread's page cache kept two chunks mapped. */
	for (int i = 0; i < m; i++)
		S_FREE(small[i]);
	for (int i = 0; i < n - back; i++)
		S_FREE(blocks[i]);
	int third = 0;
	while (third < n && (blocks[third] = S_MALLOC(size)) != NULL)
		third++;
	CHECK(third >= n - n / 100, "after 5,000-byte blocks came and went, %d of %d blocks of %zu bytes fit", third, n,
	      size);
	for (int i = 0; i < third; i++)
		S_FREE(blocks[i]);
	printf("address_limit: %d blocks of %zu KiB, %.0f%% of %zu MiB left; all again after free; %d of 5,000 bytes "
	       "after it, and room for one when %d went; %d again after those\n", n, size >> 10, filled * 100, left >> 20,
	       m, back, third);
}

/* Each size in a child exec'd under RLIMIT_AS = what this process maps now + AL_HEADROOM_MIB. */
static void address_limit(void)
{
#ifdef STRESS_ASAN
	printf("address_limit: skipped under AddressSanitizer (its shadow memory is address space)\n");
	exit(77);
#endif
	/* 70,000 and 100,000 bytes: runs of 18 and 25 pages, off the 16-page grid that long runs
	 * start on (large.c), which left 22% of the space between 25-page runs unused. */
	static const char *sizes[] = {"1048576", "2097152", "3145728", "700000", "300000", "100000", "70000"};
	for (size_t k = 0; k < NP_ARRAY_SIZE_(sizes); k++) {
		size_t mapped = np_t_mapped();
		CHECK(mapped > 0, "read VmSize from /proc/self/statm");
		size_t limit = mapped + ((size_t)AL_HEADROOM_MIB << 20);
		struct rlimit now;
		CHECK(getrlimit(RLIMIT_AS, &now) == 0, "getrlimit");
		if (now.rlim_max != RLIM_INFINITY && now.rlim_max < limit) {
			printf("address_limit: skipped: the hard RLIMIT_AS is below what the test needs\n");
			exit(77);
		}
		fflush(stdout);
		pid_t pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0) {
			struct rlimit rl = {.rlim_cur = limit, .rlim_max = now.rlim_max};
			if (setrlimit(RLIMIT_AS, &rl) != 0)
				_exit(3);
			execl("/proc/self/exe", "stress_malloc", "address_limit_child", sizes[k], (char *)NULL);
			_exit(4);
		}
		int st;
		CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child for %s-byte blocks failed (status 0x%x)", sizes[k], st);
	}
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*run)(void);
	} cases[] = {
		{"larson", larson}, {"prodcons", prodcons}, {"threads10k", threads10k},
		{"fork", forks},    {"exact_stats", exact_stats}, {"beyond_node_memory", beyond_node_memory},
		{"orphans", orphans}, {"address_limit", address_limit},
	};
	/* A static stdout buffer: printing must not allocate between baseline and reading. */
	static char outbuf[4096];
	setvbuf(stdout, outbuf, _IOLBF, sizeof outbuf);
	/* The main thread stays on one CPU: a main thread the scheduler moves to another node is
	 * re-homed and hands its slabs of the old node over (empty ones go back), which moves
	 * pages_in_use between the baseline and the final reading by what it held, not by any
	 * leak. The workers run on every CPU. */
	cpu_set_t all_cpus;
	pthread_attr_init(&worker_attr);
	if (sched_getaffinity(0, sizeof all_cpus, &all_cpus) == 0) {
		pthread_attr_setaffinity_np(&worker_attr, sizeof all_cpus, &all_cpus);
		int cpu = sched_getcpu();
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpu >= 0 ? cpu : 0, &one);
		sched_setaffinity(0, sizeof one, &one);
	}
	/* Initialise the main thread's allocator state before any baseline. */
	S_FREE(S_MALLOC(1));
	const char *scale = getenv("NP_TEST_TIME_SCALE");
	if (scale && atof(scale) >= 1.0)
		time_scale = atof(scale);
	t_start = now();
	if (argc == 3 && !strcmp(argv[1], "address_limit_child")) {
		address_limit_child((size_t)strtoul(argv[2], NULL, 10));
		return 0;
	}
	for (size_t i = 0; argc == 2 && i < NP_ARRAY_SIZE_(cases); i++)
		if (!strcmp(argv[1], cases[i].name)) {
			cases[i].run();
			return 0;
		}
	fprintf(stderr, "usage: %s larson|prodcons|threads10k|fork|exact_stats|orphans|beyond_node_memory|address_limit\n", argv[0]);
	return 2;
}
