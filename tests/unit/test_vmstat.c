/*
 * Unit tests of src/vmstat/: the threshold formula and its table, folding with overstep, int32
 * deltas under large adds, byte thresholds, threshold 0, exactness under threads, thread-exit
 * folding, the public getters, table and JSON output (JSON checked by a parser here and by
 * python3 when present), the live-view file (creation, contents, stale file, failure, removal)
 * and fork. Topology: a hand-built 3-node table (OS ids 0, 2, 5; node 2 memoryless).
 */
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_os.h"
#include "json.h"
#include "options.h"
#include "os.h"
#include "topology/topology.h"
#include "vmstat/vmstat.h"

#define GB (1ULL << 30)
#define HIT NUMA_PAGE_STAT_numa_hit
#define IN_USE NUMA_PAGE_STAT_pages_in_use
#define REQ NUMA_PAGE_STAT_malloc_requested
#define MIN_USE NUMA_PAGE_STAT_malloc_in_use

static struct np_topo topo;

/* Dense 0 = OS node 0 (1 GB), dense 1 = OS node 2 (memoryless, served by node 0),
 * dense 2 = OS node 5 (16 GB); 16 allowed CPUs. */
static void make_topo(struct np_topo *t)
{
	memset(t, 0, sizeof *t);
	t->nnodes = 3;
	t->ncpus = 16;
	t->nallowed_cpus = 16;
	t->nmem_nodes = 2;
	t->total_mem = 17 * GB;
	const int os[3] = {0, 2, 5};
	const uint64_t mem[3] = {1 * GB, 0, 16 * GB};
	const uint8_t fb[3][2] = {{0, 2}, {0, 2}, {2, 0}};
	for (int i = 0; i < 3; i++) {
		t->node[i].os_id = os[i];
		t->node[i].mem_bytes = mem[i];
		t->node[i].has_memory = mem[i] > 0;
		t->node[i].mem_allowed = mem[i] > 0;
		t->node[i].nfallback = 2;
		t->node[i].fallback[0] = fb[i][0];
		t->node[i].fallback[1] = fb[i][1];
	}
}

/* Every test starts from defaults, zero totals, and the 3-node table. */
static int setup(void **state)
{
	(void)state;
	np_options_reset();
	np_vmstat_reset();
	make_topo(&topo);
	np_vmstat_init(&topo);
	return 0;
}

static void init_with_threshold(const char *value)
{
	assert_int_equal(np_options_set("STAT_THRESHOLD", value), 0);
	np_vmstat_init(&topo);
}

static struct np_vmstat_diffs *new_diffs(void)
{
	struct np_vmstat_diffs *th = calloc(1, sizeof *th);
	assert_non_null(th);
	return th;
}

/* ---- The formula -------------------------------------------------------------------------- */

static void formula_matches_table(void **state)
{
	(void)state;
	/* The table in the comment above np_vmstat_threshold_for, row by row. */
	static const int cpus[5] = {1, 4, 16, 128, 1024};
	static const uint64_t mem[3] = {1 * GB, 16 * GB, 1024 * GB};
	static const int want[5][3] = {
		{10, 18, 30}, {30, 54, 90}, {50, 90, 125}, {80, 125, 125}, {110, 125, 125},
	};
	for (int c = 0; c < 5; c++)
		for (int m = 0; m < 3; m++)
			assert_int_equal(np_vmstat_threshold_for(cpus[c], mem[m]), want[c][m]);
	/* Edges: no memory -> 2 * fls(cpus); 0 CPUs count as 1; the cap holds for anything. */
	assert_int_equal(np_vmstat_threshold_for(1, 0), 2);
	assert_int_equal(np_vmstat_threshold_for(0, 1 * GB), 10);
	assert_int_equal(np_vmstat_threshold_for(1 << 20, ~0ULL), 125);
}

static void init_computes_node_thresholds(void **state)
{
	(void)state;
	long ps = (long)np_os_page_size();
	assert_int_equal(np_vmstat_nnodes(), 3);
	assert_int_equal(np_vmstat_threshold(0), 50);
	assert_int_equal(np_vmstat_threshold(1), 50); /* memoryless: its fallback node 0's 1 GB */
	assert_int_equal(np_vmstat_threshold(2), 90);
	assert_int_equal(np_vmstat_thr[0][HIT], 50);
	assert_int_equal(np_vmstat_thr[2][IN_USE], 90);
	assert_int_equal(np_vmstat_thr[0][REQ], 50 * ps);
	assert_int_equal(np_vmstat_thr[2][MIN_USE], 90 * ps);
	assert_int_equal(np_vmstat_thr[3][HIT], 0); /* beyond nnodes: fold always */
	assert_int_equal(np_vmstat_os_id(1), 2);
	assert_int_equal(np_vmstat_node_index(5), 2);
	assert_int_equal(np_vmstat_node_index(1), -1);

	init_with_threshold("32");
	for (int i = 0; i < 3; i++) {
		assert_int_equal(np_vmstat_threshold(i), 32);
		assert_int_equal(np_vmstat_thr[i][REQ], 32 * ps);
	}
	init_with_threshold("0");
	for (int i = 0; i < 3; i++) {
		assert_int_equal(np_vmstat_threshold(i), 0);
		assert_int_equal(np_vmstat_thr[i][REQ], 0);
	}
}

static void fixture_memoryless_nodes_use_nearest_memory(void **state)
{
	(void)state;
	/* Dell R7425: 8 nodes of 1 CPU, memory only on nodes 1 (458 MiB) and 5 (501 MiB). */
	static struct np_topo r7425;
	assert_int_equal(np_topo_load(&r7425, NP_TOPOLOGIES "/r7425.xml", NULL), 0);
	assert_int_equal(r7425.nnodes, 8);
	assert_int_equal(r7425.nallowed_cpus, 8);
	np_vmstat_init(&r7425);
	assert_int_equal(np_vmstat_nnodes(), 8);
	/* 2 * fls(8) * (1 + fls(458 / 128)) = 24 on every node; a memoryless node computed with
	 * its own 0 bytes would get 2 * fls(8) = 8. */
	assert_int_equal(np_vmstat_threshold_for(8, 0), 8);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(np_vmstat_os_id(i), r7425.node[i].os_id);
		assert_int_equal(np_vmstat_threshold(i), 24);
	}
	np_vmstat_init(&topo);
}

/* ---- Folding ------------------------------------------------------------------------------ */

static void folds_past_threshold_with_overstep(void **state)
{
	(void)state;
	init_with_threshold("32");
	struct np_vmstat_diffs *th = new_diffs();
	np_vmstat_register(th);
	for (int i = 0; i < 32; i++)
		np_vmstat_add(th, 0, HIT, 1);
	assert_int_equal(np_vmstat_read(0, HIT), 0); /* |diff| == threshold: not past it */
	assert_int_equal(th->d[0][HIT], 32);
	assert_int_equal(np_vmstat_snapshot(0, HIT), 32);
	np_vmstat_add(th, 0, HIT, 1); /* 33 > 32: fold 33 + 16, keep -16 */
	assert_int_equal(np_vmstat_read(0, HIT), 49);
	assert_int_equal(th->d[0][HIT], -16);
	assert_int_equal(np_vmstat_snapshot(0, HIT), 33);
	/* The next fold is t + t/2 + 1 = 49 events away, not 33. */
	for (int i = 0; i < 48; i++)
		np_vmstat_add(th, 0, HIT, 1);
	assert_int_equal(np_vmstat_read(0, HIT), 49);
	assert_int_equal(th->d[0][HIT], 32);
	np_vmstat_add(th, 0, HIT, 1);
	assert_int_equal(np_vmstat_read(0, HIT), 98);
	assert_int_equal(th->d[0][HIT], -16);
	assert_int_equal(np_vmstat_snapshot(0, HIT), 82);

	/* Downwards: a gauge oversteps the other way; the cheap read clamps at 0. */
	for (int i = 0; i < 33; i++)
		np_vmstat_add(th, 2, IN_USE, -1);
	assert_int_equal(th->d[2][IN_USE], 16);
	assert_int_equal(np_vmstat_read(2, IN_USE), 0); /* total is -49: clamped */
	for (int i = 0; i < 40; i++)
		np_vmstat_add(th, 2, IN_USE, 2); /* +80: net +47 */
	assert_int_equal(np_vmstat_snapshot(2, IN_USE), 47);
	long v[NUMA_PAGE_STAT_NITEMS];
	np_vmstat_snapshot_node(2, v, true);
	assert_int_equal(v[IN_USE], 47);
	np_vmstat_unregister(th);
	assert_int_equal(np_vmstat_read(2, IN_USE), 47);
	assert_int_equal(np_vmstat_read(0, HIT), 82);
	free(th);
}

static void large_deltas_never_overflow_int32(void **state)
{
	(void)state;
	init_with_threshold("125"); /* the cap: the largest diffs the scheme ever keeps */
	long ps = (long)np_os_page_size();
	struct np_vmstat_diffs *th = new_diffs();
	np_vmstat_register(th);
	const long big[] = {1L << 40, (long)INT32_MAX + 5, 3, -(1L << 35), (long)INT32_MIN - 7, 125 * ps,
			    -125 * ps, 1, (1L << 31) * 1000};
	long sum_bytes = 0, sum_pages = 0, sum_gauge = 0;
	for (int r = 0; r < 50; r++)
		for (size_t i = 0; i < NP_ARRAY_SIZE(big); i++) {
			np_vmstat_add(th, 1, REQ, big[i]);
			sum_bytes += big[i];
			np_vmstat_add(th, 1, HIT, big[i] / 4096);
			sum_pages += big[i] / 4096;
			np_vmstat_add(th, 1, MIN_USE, big[i] > 0 ? big[i] : 0);
			np_vmstat_add(th, 1, MIN_USE, big[i] > 0 ? -big[i] / 2 : 0);
			sum_gauge += big[i] > 0 ? big[i] - big[i] / 2 : 0;
			/* The invariant that keeps int32 safe: |diff| <= threshold after every add. */
			assert_true(labs((long)th->d[1][REQ]) <= 125 * ps);
			assert_true(labs((long)th->d[1][HIT]) <= 125);
			assert_true(labs((long)th->d[1][MIN_USE]) <= 125 * ps);
		}
	assert_int_equal(np_vmstat_snapshot(1, REQ), sum_bytes);
	assert_int_equal(np_vmstat_snapshot(1, HIT), sum_pages);
	assert_int_equal(np_vmstat_snapshot(1, MIN_USE), sum_gauge);
	/* Long runs of small adds at the cap, both directions. */
	for (int i = 0; i < 1000000; i++)
		np_vmstat_add(th, 1, IN_USE, (i & 1) ? -125 : 126);
	assert_true(labs((long)th->d[1][IN_USE]) <= 125);
	assert_int_equal(np_vmstat_snapshot(1, IN_USE), 500000);
	np_vmstat_unregister(th);
	assert_int_equal(np_vmstat_read(1, REQ), sum_bytes);
	assert_int_equal(np_vmstat_read(1, IN_USE), 500000);
	free(th);
}

static void byte_items_fold_at_pages_worth(void **state)
{
	(void)state;
	long ps = (long)np_os_page_size();
	long bthr = 50 * ps; /* node 0: threshold 50 pages */
	assert_int_equal(np_vmstat_thr[0][REQ], bthr);
	struct np_vmstat_diffs *th = new_diffs();
	np_vmstat_register(th);
	/* 16-byte mallocs: bthr / 16 of them stay private... */
	for (long i = 0; i < bthr / 16; i++)
		np_vmstat_add(th, 0, REQ, 16);
	assert_int_equal(np_vmstat_read(0, REQ), 0);
	assert_int_equal(th->d[0][REQ], bthr);
	/* ...and the next one folds, overstepping by half the byte threshold. */
	np_vmstat_add(th, 0, REQ, 16);
	assert_int_equal(np_vmstat_read(0, REQ), bthr + 16 + bthr / 2);
	assert_int_equal(th->d[0][REQ], -bthr / 2);
	assert_int_equal(np_vmstat_snapshot(0, REQ), bthr + 16);
	/* A page item on the same node folds after 51 events, not 51 * page size. */
	for (int i = 0; i < 51; i++)
		np_vmstat_add(th, 0, HIT, 1);
	assert_int_equal(np_vmstat_read(0, HIT), 51 + 25);
	np_vmstat_unregister(th);
	free(th);
}

static void threshold_zero_folds_every_event(void **state)
{
	(void)state;
	init_with_threshold("0");
	struct np_vmstat_diffs *th = new_diffs();
	np_vmstat_register(th);
	for (int i = 1; i <= 100; i++) {
		np_vmstat_add(th, 2, HIT, 1);
		np_vmstat_add(th, 2, REQ, 24);
		assert_int_equal(np_vmstat_read(2, HIT), i);
		assert_int_equal(np_vmstat_read(2, REQ), 24 * i);
		assert_int_equal(th->d[2][HIT], 0);
		assert_int_equal(th->d[2][REQ], 0);
	}
	np_vmstat_add(th, 2, IN_USE, -3);
	assert_int_equal(th->d[2][IN_USE], 0);
	np_vmstat_unregister(th);
	free(th);
}

static void null_thread_adds_to_total(void **state)
{
	(void)state;
	np_vmstat_add(NULL, 1, HIT, 7);
	np_vmstat_add(NULL, 1, REQ, 1000);
	assert_int_equal(np_vmstat_read(1, HIT), 7);
	assert_int_equal(np_vmstat_read(1, REQ), 1000);
	assert_int_equal(np_vmstat_snapshot(1, HIT), 7);
}

/* ---- Threads ------------------------------------------------------------------------------- */

#define NTHREADS 8
#define EVENTS 200000

static pthread_barrier_t counted, may_exit;

struct worker {
	int id;
	struct np_vmstat_diffs *th;
};

/* What worker id counts, deterministically, so the main thread knows the sums. */
static void expected_of(int id, long want[NP_MAX_NODES][NUMA_PAGE_STAT_NITEMS])
{
	for (int i = 0; i < EVENTS; i++) {
		int node = (i + id) % 3;
		want[node][HIT] += 1;
		want[node][IN_USE] += (i % 3 == 2) ? -1 : 1;
		want[node][REQ] += (i % 97) * 8;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	w->th = new_diffs();
	np_vmstat_register(w->th);
	for (int i = 0; i < EVENTS; i++) {
		int node = (i + w->id) % 3;
		np_vmstat_add(w->th, node, HIT, 1);
		np_vmstat_add(w->th, node, IN_USE, (i % 3 == 2) ? -1 : 1);
		np_vmstat_add(w->th, node, REQ, (i % 97) * 8);
	}
	pthread_barrier_wait(&counted);
	pthread_barrier_wait(&may_exit);
	np_vmstat_unregister(w->th); /* what the allocator does at thread exit */
	free(w->th);
	return NULL;
}

static void check_lag(long want, long got, long bound)
{
	if (labs(want - got) > bound)
		fail_msg("cheap read %ld, truth %ld: lag beyond %ld", got, want, bound);
}

static void exact_under_threads(void **state)
{
	(void)state;
	static long want[NP_MAX_NODES][NUMA_PAGE_STAT_NITEMS];
	memset(want, 0, sizeof want);
	for (int id = 0; id < NTHREADS; id++)
		expected_of(id, want);
	pthread_barrier_init(&counted, NULL, NTHREADS + 1);
	pthread_barrier_init(&may_exit, NULL, NTHREADS + 1);
	pthread_t tid[NTHREADS];
	struct worker w[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){.id = i};
		assert_int_equal(pthread_create(&tid[i], NULL, worker_main, &w[i]), 0);
	}
	pthread_barrier_wait(&counted);
	/* Every thread has counted and is still alive: the snapshot adds their diffs. */
	const int items[3] = {HIT, IN_USE, REQ};
	long lagged = 0;
	for (int n = 0; n < 3; n++)
		for (int k = 0; k < 3; k++) {
			int it = items[k];
			assert_int_equal(np_vmstat_snapshot(n, it), want[n][it]);
			long cheap = np_vmstat_read(n, it);
			check_lag(want[n][it], cheap, (long)np_vmstat_thr[n][it] * NTHREADS);
			lagged += cheap != want[n][it];
		}
	assert_true(lagged > 0); /* the cheap reader really is the lagging one */
	struct numa_page_node_stats st;
	assert_int_equal(numa_page_stats_get(5, &st), 0);
	assert_int_equal(st.node, 5);
	assert_int_equal(st.numa_hit, want[2][HIT]);
	assert_int_equal(st.malloc_requested, want[2][REQ]);
	pthread_barrier_wait(&may_exit);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(tid[i], NULL);
	/* Every thread folded at exit: the cheap reader is exact. */
	for (int n = 0; n < 3; n++)
		for (int k = 0; k < 3; k++)
			assert_int_equal(np_vmstat_read(n, items[k]), want[n][items[k]]);
	assert_int_equal(numa_page_stats_get_cheap(0, &st), 0);
	assert_int_equal(st.pages_in_use, want[0][IN_USE]);
	pthread_barrier_destroy(&counted);
	pthread_barrier_destroy(&may_exit);
}

static void *short_thread(void *arg)
{
	struct np_vmstat_diffs *th = arg;
	np_vmstat_register(th);
	for (int i = 0; i < 10; i++)
		np_vmstat_add(th, 0, NUMA_PAGE_STAT_remote_free, 1);
	np_vmstat_add(th, 2, MIN_USE, 4096);
	np_vmstat_unregister(th);
	return NULL;
}

static void thread_exit_folds_everything(void **state)
{
	(void)state;
	struct np_vmstat_diffs *th = new_diffs();
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, short_thread, th), 0);
	pthread_join(t, NULL);
	/* Below the threshold all along, yet nothing is lost. */
	assert_int_equal(np_vmstat_read(0, NUMA_PAGE_STAT_remote_free), 10);
	assert_int_equal(np_vmstat_read(2, MIN_USE), 4096);
	assert_false(th->registered);
	for (int n = 0; n < NP_MAX_NODES; n++)
		for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
			assert_int_equal(th->d[n][k], 0);
	/* Registering again (a recycled thread state) and unregistering twice are harmless. */
	np_vmstat_register(th);
	np_vmstat_register(th);
	np_vmstat_unregister(th);
	np_vmstat_unregister(th);
	assert_int_equal(np_vmstat_read(0, NUMA_PAGE_STAT_remote_free), 10);
	free(th);
}

/* ---- Public getters -------------------------------------------------------------------------- */

static void public_getters(void **state)
{
	(void)state;
	struct numa_page_node_stats st;
	errno = 0;
	assert_int_equal(numa_page_stats_get(1, &st), -1); /* OS node 1 does not exist here */
	assert_int_equal(errno, EINVAL);
	assert_int_equal(numa_page_stats_get_cheap(64, &st), -1);
	assert_int_equal(numa_page_stats_get(0, NULL), -1);
	struct np_vmstat_diffs *th = new_diffs();
	np_vmstat_register(th);
	np_vmstat_add(th, 1, NUMA_PAGE_STAT_numa_miss, 3);
	np_vmstat_add(th, 1, NUMA_PAGE_STAT_threads, -1); /* gauge below zero: clamped to 0 */
	assert_int_equal(numa_page_stats_get(2, &st), 0);
	assert_int_equal(st.node, 2);
	assert_int_equal(st.numa_miss, 3);
	assert_int_equal(st.threads, 0);
	assert_int_equal(numa_page_stats_get_cheap(2, &st), 0);
	assert_int_equal(st.numa_miss, 0); /* still in the thread's diff */
	np_vmstat_unregister(th);
	free(th);

	assert_string_equal(numa_page_stat_name(0), "numa_hit");
	assert_string_equal(numa_page_stat_name(NUMA_PAGE_STAT_malloc_in_use), "malloc_in_use");
	assert_string_equal(numa_page_stat_desc(NUMA_PAGE_STAT_numa_foreign),
			    "pages intended for this node but served elsewhere");
	assert_null(numa_page_stat_name(NUMA_PAGE_STAT_NITEMS));
	assert_null(numa_page_stat_name(-1));
	assert_null(numa_page_stat_desc(NUMA_PAGE_STAT_NITEMS));
	assert_int_equal(np_vmstat_item_kind(REQ), NP_VMSTAT_KIND_BYTE_EVENT);
	assert_int_equal(np_vmstat_item_kind(MIN_USE), NP_VMSTAT_KIND_BYTE_GAUGE);
	assert_int_equal(np_vmstat_item_kind(IN_USE), NP_VMSTAT_KIND_GAUGE);
	assert_int_equal(np_vmstat_item_kind(HIT), NP_VMSTAT_KIND_EVENT);
}

/* ---- Output ---------------------------------------------------------------------------------- */

/* A strict JSON checker (RFC 8259 grammar, no extensions), enough to prove well-formedness. */
struct jp {
	const char *s;
};

static void ws(struct jp *p)
{
	while (*p->s == ' ' || *p->s == '\n' || *p->s == '\t' || *p->s == '\r')
		p->s++;
}

static bool value(struct jp *p);

static bool string(struct jp *p)
{
	if (*p->s != '"')
		return false;
	for (p->s++; *p->s != '"'; p->s++) {
		if ((unsigned char)*p->s < 0x20)
			return false;
		if (*p->s == '\\') {
			p->s++;
			if (*p->s == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", p->s[i]) || !p->s[i])
						return false;
				p->s += 4;
			} else if (!*p->s || !strchr("\"\\/bfnrt", *p->s)) {
				return false;
			}
		}
	}
	p->s++;
	return true;
}

static bool number(struct jp *p)
{
	const char *s = p->s;
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return false;
	if (*s == '.') {
		if (!(*++s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	p->s = s;
	return true;
}

static bool value(struct jp *p)
{
	ws(p);
	char c = *p->s;
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		p->s++;
		ws(p);
		if (*p->s == close) {
			p->s++;
			return true;
		}
		for (;;) {
			if (c == '{') {
				ws(p);
				if (!string(p))
					return false;
				ws(p);
				if (*p->s++ != ':')
					return false;
			}
			if (!value(p))
				return false;
			ws(p);
			if (*p->s == ',') {
				p->s++;
				continue;
			}
			if (*p->s++ != close)
				return false;
			return true;
		}
	}
	if (c == '"')
		return string(p);
	if (strncmp(p->s, "true", 4) == 0 || strncmp(p->s, "null", 4) == 0) {
		p->s += 4;
		return true;
	}
	if (strncmp(p->s, "false", 5) == 0) {
		p->s += 5;
		return true;
	}
	return number(p);
}

static bool json_ok(const char *s)
{
	struct jp p = {s};
	if (!value(&p))
		return false;
	ws(&p);
	return *p.s == '\0';
}

static void checker_rejects_bad_json(void **state)
{
	(void)state;
	assert_true(json_ok("{\"nodes\":[{\"node\":0,\"a\":-12},{}]}\n"));
	assert_false(json_ok("{\"nodes\":[{\"node\":0,}]}"));
	assert_false(json_ok("{\"nodes\":[{\"node\":0}]"));
	assert_false(json_ok("{\"a\":01}"));
	assert_false(json_ok("{\"a\":1}x"));
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void count_some(void)
{
	np_vmstat_add(NULL, 0, HIT, 11);
	np_vmstat_add(NULL, 2, HIT, 22);
	np_vmstat_add(NULL, 1, NUMA_PAGE_STAT_numa_foreign, 5);
	np_vmstat_add(NULL, 2, REQ, 123456789012L);
}

/* JSON text is UTF-8: a string with bytes that are not (a path cut in the middle of a
 * character, a file name in Latin-1) is written with U+FFFD in their place, valid ones as they
 * are. A review found `numapage topology --json` with a path cut at 255 bytes mid-character
 * give a document python's json module refused. */
static void json_strings_are_utf8(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"plain \"q\" \\ \n", "\"plain \\\"q\\\" \\\\ \\u000a\""},
		{"\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
		{"cut \xc3", "\"cut \\ufffd\""},                     /* a character cut at the end */
		{"\xe2\x82x", "\"\\ufffd\\ufffdx\""},                  /* cut inside, then ASCII */
		{"latin1 \xe9t\xe9", "\"latin1 \\ufffdt\\ufffd\""},
		{"\xc0\xaf \xed\xa0\x80 \xf5\x80\x80\x80", /* overlong, a surrogate, past U+10FFFF */
		 "\"\\ufffd\\ufffd \\ufffd\\ufffd\\ufffd \\ufffd\\ufffd\\ufffd\\ufffd\""},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char buf[256] = "";
		FILE *f = fmemopen(buf, sizeof buf - 1, "w");
		assert_non_null(f);
		np_json_string(f, cases[k].in);
		fclose(f);
		assert_string_equal(buf, cases[k].out);
	}
}

/* The reader gives back what the writer wrote (a review found `numapage run` show a tab in a
 * command's name as "u0009"), decodes what other writers may use (a surrogate pair, \/),
 * replaces what is no character, and cuts only between characters. */
static void json_strings_read_back(void **state)
{
	(void)state;
	static const char *const round[] = {"tab\there \"q\" \\ \x01", "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"};
	for (size_t k = 0; k < sizeof round / sizeof round[0]; k++) {
		char buf[256] = "", back[256];
		FILE *f = fmemopen(buf, sizeof buf - 1, "w");
		assert_non_null(f);
		np_json_string(f, round[k]);
		fclose(f);
		const char *c = buf + 1;
		assert_int_equal(np_json_read_string(&c, back, sizeof back), strlen(round[k]));
		assert_string_equal(back, round[k]);
		assert_int_equal(*c, '\0'); /* past the closing quote: the end of buf */
	}
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"bad\\ufffdbyte\"", "bad\xef\xbf\xbd" "byte"},
		{"\\ud83d\\ude00 \\/ \\b\"", "\xf0\x9f\x98\x80 / \b"},
		{"lone \\ud800 \\q\"", "lone \xef\xbf\xbd \xef\xbf\xbd"},
		{"unterminated", "unterminated"},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char back[64];
		const char *c = cases[k].in;
		np_json_read_string(&c, back, sizeof back);
		assert_string_equal(back, cases[k].out);
	}
	/* Cut: the euro sign (3 bytes) does not fit after "ab" in 5 bytes: left out whole. */
	char small[5];
	const char *c = "ab\xe2\x82\xac\"";
	assert_int_equal(np_json_read_string(&c, small, sizeof small), 2);
	assert_string_equal(small, "ab");
	assert_int_equal(*c, '\0');
}

static void json_is_well_formed(void **state)
{
	(void)state;
	count_some();
	char path[] = "/tmp/np_vmstat_json_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(numa_page_stats_print(f, NUMA_PAGE_STATS_JSON), 0);
	fclose(f);
	const char *text = read_file(path);
	assert_true(json_ok(text));
	assert_non_null(strstr(text, "{\"nodes\":[{\"node\":0,\"numa_hit\":11,"));
	assert_non_null(strstr(text, "{\"node\":5,\"numa_hit\":22,"));
	assert_non_null(strstr(text, "\"malloc_requested\":123456789012,"));
	/* A second, independent parser when the machine has one. */
	if (system("command -v python3 >/dev/null 2>&1") == 0) {
		char cmd[512];
		snprintf(cmd, sizeof cmd,
			 "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); n=d[\"nodes\"]; "
			 "assert [x[\"node\"] for x in n]==[0,2,5]; assert n[1][\"numa_foreign\"]==5; "
			 "assert all(len(x)==%d+1 for x in n)' %s",
			 NUMA_PAGE_STAT_NITEMS, path);
		assert_int_equal(system(cmd), 0);
	}
	unlink(path);
	errno = 0;
	assert_int_equal(numa_page_stats_print(stdout, 7), -1);
	assert_int_equal(errno, EINVAL);
}

/* numa_page_stats_print answers for its own writes: an error indicator the program's earlier use
 * of the stream left made a report written whole return -1 (found by a hostile review of
 * malloc_info, which had the same test), and a device that refuses every write is -1 with
 * ENOSPC, buffered or not. */
static void print_answers_for_its_own_writes(void **state)
{
	(void)state;
	count_some();
	for (int format = NUMA_PAGE_STATS_TABLE; format <= NUMA_PAGE_STATS_JSON; format++) {
		char path[] = "/tmp/np_vmstat_stale_XXXXXX";
		int fd = mkstemp(path);
		assert_true(fd >= 0);
		FILE *f = fdopen(fd, "w");
		assert_non_null(f);
		(void)fgetc(f); /* a read of a write-only stream sets its error indicator */
		assert_true(ferror(f));
		assert_int_equal(numa_page_stats_print(f, format), 0);
		fclose(f);
		const char *text = read_file(path);
		unlink(path);
		assert_non_null(strstr(text, "numa_hit"));
		assert_non_null(strstr(text, "threads"));
		assert_int_equal(text[strlen(text) - 1], '\n');
		for (int buffered = 0; buffered <= 1; buffered++) {
			FILE *full = fopen("/dev/full", "w");
			assert_non_null(full);
			if (!buffered)
				assert_int_equal(setvbuf(full, NULL, _IONBF, 0), 0);
			errno = 0;
			assert_int_equal(numa_page_stats_print(full, format), -1);
			assert_int_equal(errno, ENOSPC);
			fclose(full);
		}
	}
}

static void table_is_numastat_like(void **state)
{
	(void)state;
	count_some();
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(numa_page_stats_print(f, NUMA_PAGE_STATS_TABLE), 0);
	fclose(f);
	/* Header: one column per node by OS id, then Total; one row per counter. */
	char *nl = strchr(buf, '\n');
	assert_non_null(nl);
	*nl = '\0';
	char h0[16], h1[16], h2[16], h3[16];
	assert_int_equal(sscanf(buf, "%15s %15s %15s %15s", h0, h1, h2, h3), 4);
	assert_string_equal(h0, "node0");
	assert_string_equal(h1, "node2");
	assert_string_equal(h2, "node5");
	assert_string_equal(h3, "Total");
	int rows = 0;
	bool saw_hit = false;
	for (char *line = nl + 1; *line; line = strchr(line, '\n') + 1) {
		char name[64];
		long a, b, c, total;
		assert_int_equal(sscanf(line, "%63s %ld %ld %ld %ld", name, &a, &b, &c, &total), 5);
		assert_string_equal(name, numa_page_stat_name(rows));
		assert_int_equal(a + b + c, total);
		if (rows == HIT) {
			assert_int_equal(a, 11);
			assert_int_equal(c, 22);
			saw_hit = true;
		}
		rows++;
	}
	assert_int_equal(rows, NUMA_PAGE_STAT_NITEMS);
	assert_true(saw_hit);
	free(buf);
}

/* ---- The live-view file ---------------------------------------------------------------------- */

static void shm_failure_publishes_nothing(void **state)
{
	(void)state;
	np_fake_os_fail_shm(-EACCES);
	assert_null(np_vmstat_shm_create(0));
	assert_null(np_vmstat_shm_published());
	np_fake_os_fail_shm(0);
	/* Counting goes on in static memory. */
	np_vmstat_add(NULL, 0, HIT, 3);
	assert_int_equal(np_vmstat_read(0, HIT), 3);
}

static const struct np_vmstat_shm_header *map_ro(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_uid, geteuid());
	*size = (size_t)st.st_size;
	void *p = mmap(NULL, *size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(p != MAP_FAILED);
	return p;
}

static long file_value(const struct np_vmstat_shm_header *h, int node, int item)
{
	const char *base = (const char *)h + h->totals_off + (size_t)node * h->node_stride;
	return __atomic_load_n((const int64_t *)base + item, __ATOMIC_RELAXED);
}

static void live_file_lifecycle(void **state)
{
	(void)state;
	char path[128];
	np_vmstat_shm_path(path, sizeof path, np_os_euid(), np_os_pid(), np_os_pid_ns());
	/* A file left by an earlier process that had our pid is replaced. */
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	assert_true(fd >= 0);
	close(fd);

	struct np_vmstat_diffs *th = new_diffs();
	np_vmstat_register(th);
	np_vmstat_add(NULL, 2, HIT, 40); /* before the file exists: moved into it */
	np_vmstat_add(th, 0, HIT, 2);    /* a pending diff: not in any total yet */
	struct np_vmstat_totals *t = np_vmstat_shm_create(4321); /* as if forked from 4321 */
	assert_non_null(t);
	assert_string_equal(np_vmstat_shm_published(), path);
	np_vmstat_use_totals(t);

	size_t size;
	const struct np_vmstat_shm_header *h = map_ro(path, &size);
	assert_true(h->magic == NP_VMSTAT_SHM_MAGIC);
	assert_int_equal(h->version, NP_VMSTAT_SHM_VERSION);
	assert_int_equal(h->size, size);
	assert_int_equal(h->pid, getpid());
	assert_int_equal(h->parent, 4321);
	assert_int_equal(h->uid, geteuid());
	assert_int_equal(h->nnodes, 3);
	assert_int_equal(h->nitems, NUMA_PAGE_STAT_NITEMS);
	assert_int_equal(h->os_id[2], 5);
	assert_int_equal(h->threshold[2], 90);
	assert_true(h->totals_off % NP_CACHELINE == 0);
	assert_true(h->totals_off + 3 * h->node_stride <= size);
	const struct np_vmstat_shm_name *names = (const void *)((const char *)h + h->names_off);
	for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++) {
		assert_string_equal(names[k].name, numa_page_stat_name(k));
		assert_int_equal(names[k].kind, np_vmstat_item_kind(k));
	}
	assert_int_equal(file_value(h, 2, HIT), 40);
	/* Counting now lands in the file itself. */
	np_vmstat_add(NULL, 1, NUMA_PAGE_STAT_numa_miss, 9);
	assert_int_equal(file_value(h, 1, NUMA_PAGE_STAT_numa_miss), 9);
	np_vmstat_unregister(th);
	assert_int_equal(file_value(h, 0, HIT), 2);
	assert_int_equal(np_vmstat_read(2, HIT), 40);
	assert_int_equal(np_vmstat_snapshot(1, NUMA_PAGE_STAT_numa_miss), 9);
	/* Only one file per process. */
	assert_null(np_vmstat_shm_create(0));

	/* Fork: the child counts privately, as a process of its own: its events restart at zero
	 * (the parent's history, unfolded diffs of vanished threads included, stays the
	 * parent's), its gauges keep the levels it inherited (folded from vanished threads too);
	 * the parent's file does not see the child's counts. */
	struct np_vmstat_diffs *me = new_diffs(), *other = new_diffs();
	np_vmstat_register(me);
	np_vmstat_register(other);
	np_vmstat_add(other, 0, NUMA_PAGE_STAT_pages_stolen, 6); /* "another thread", unfolded */
	np_vmstat_add(other, 0, NUMA_PAGE_STAT_pages_in_use, 4); /* a level, unfolded */
	np_vmstat_atfork_prepare();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Another thread of the parent folds into the shared file after the fork and
		 * before this handler: not the child's memory. Taking the totals from the file in
		 * the handler counted such folds (a hostile review: 149 of 300 children saw a
		 * wrong malloc_in_use while a parent thread allocated). Undone below, as the
		 * parent's thread would free it. */
		atomic_fetch_add_explicit(&t[0].v[NUMA_PAGE_STAT_pages_in_use], 1000, memory_order_relaxed);
		np_vmstat_atfork_child(me);
		atomic_fetch_add_explicit(&t[0].v[NUMA_PAGE_STAT_pages_in_use], -1000, memory_order_relaxed);
		np_vmstat_output_atfork_child(); /* forgets the parent's file here */
		int bad = 0;
		bad |= np_vmstat_shm_published() != NULL;
		bad |= (np_vmstat_read(0, NUMA_PAGE_STAT_pages_stolen) != 0) << 1;
		/* The vanished thread's diffs are read, never written: a write copies a page in
		 * every child. They are out of the registry (bit 4: the snapshot skips them). */
		bad |= (other->d[0][NUMA_PAGE_STAT_pages_stolen] != 6 || other->d[0][NUMA_PAGE_STAT_pages_in_use] != 4) << 2;
		bad |= (!me->registered) << 3;
		np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_stolen, 1000);
		np_vmstat_add(me, 0, HIT, 1);
		bad |= (np_vmstat_snapshot(0, NUMA_PAGE_STAT_pages_stolen) != 1000) << 4;
		bad |= (np_vmstat_snapshot(0, HIT) != 1) << 5;
		bad |= (np_vmstat_read(2, HIT) != 0) << 6;
		bad |= (np_vmstat_read(0, NUMA_PAGE_STAT_pages_in_use) != 4) << 7;
		np_vmstat_exit_report(); /* no report asked for; the parent's file is not ours */
		_exit(bad);
	}
	np_vmstat_atfork_parent();
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(file_value(h, 0, NUMA_PAGE_STAT_pages_stolen), 0);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(np_vmstat_snapshot(0, NUMA_PAGE_STAT_pages_stolen), 6);
	assert_int_equal(np_vmstat_snapshot(0, NUMA_PAGE_STAT_pages_in_use), 4);
	np_vmstat_add(other, 0, NUMA_PAGE_STAT_pages_in_use, -4);
	np_vmstat_unregister(other);
	np_vmstat_unregister(me);
	assert_int_equal(file_value(h, 0, NUMA_PAGE_STAT_pages_stolen), 6);

	/* Exit: the JSON report is written and the file goes away. */
	char json[] = "/tmp/np_vmstat_exit_XXXXXX";
	fd = mkstemp(json);
	assert_true(fd >= 0);
	close(fd);
	char opt[160];
	snprintf(opt, sizeof opt, "json:%s", json);
	assert_int_equal(np_options_set("STATS", opt), 0);
	np_vmstat_exit_report();
	const char *text = read_file(json);
	assert_true(json_ok(text));
	assert_non_null(strstr(text, "{\"node\":5,\"numa_hit\":40,"));
	assert_non_null(strstr(text, "\"pages_stolen\":6,"));
	assert_int_equal(access(path, F_OK), -1);
	assert_null(np_vmstat_shm_published());
	/* The mapping stays valid for threads still counting during exit. */
	np_vmstat_add(NULL, 0, HIT, 1);
	assert_int_equal(file_value(h, 0, HIT), 3);
	unlink(json);
	munmap((void *)h, size);
	np_options_reset();
	free(me);
	free(other);
	free(th);
}

/* A pid that no process has (its child has been reaped). */
static int dead_pid(void)
{
	/* One whose live-file name is free: another job of this user may hold a file at a pid
	 * that was reused since (numapage run keeps its gone processes' files until it ends), and
	 * a test that plants a file there found the name taken (CI beside a helper's jobs). */
	for (int tries = 0;; tries++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(0);
		assert_int_equal(waitpid(pid, NULL, 0), pid);
		char path[128];
		np_vmstat_shm_path(path, sizeof path, np_os_euid(), (int)pid, np_os_pid_ns());
		if (access(path, F_OK) != 0 || tries == 1000)
			return (int)pid;
	}
}

/* The start-up sweep removes the files this user's dead processes left, and nothing else with
 * such a name: not a symlink, not another user's file (root's sweep removed a file of nobody's
 * named with uid 0: a hostile review). */
static void sweep_removes_only_own_files(void **state)
{
	(void)state;
	unsigned me = np_os_euid();
	char stale[128], link[128], other[128];
	uint64_t ns = np_os_pid_ns();
	np_vmstat_shm_path(stale, sizeof stale, me, dead_pid(), ns);
	np_vmstat_shm_path(link, sizeof link, me, dead_pid(), ns);
	np_vmstat_shm_path(other, sizeof other, me, dead_pid(), ns);
	int fd = open(stale, O_CREAT | O_EXCL | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink("/tmp", link), 0);
	fd = open(other, O_CREAT | O_EXCL | O_WRONLY, 0600);
	assert_true(fd >= 0);
	bool chowned = geteuid() == 0 && fchown(fd, 65534, 65534) == 0;
	close(fd);
	if (!chowned)
		unlink(other);
	/* Not how many it removed: any process of this user that starts the library meanwhile
	 * (the programs tier beside this one) sweeps too, and may have removed stale first; a
	 * count of 1 failed so in a parallel run of the test suite. */
	np_vmstat_shm_sweep();
	assert_int_equal(access(stale, F_OK), -1);
	struct stat st;
	assert_int_equal(lstat(link, &st), 0); /* kept */
	unlink(link);
	if (chowned) {
		assert_int_equal(access(other, F_OK), 0); /* kept */
		unlink(other);
	}
}

/* A live-view header at path (created, mode 0600) saying it was published in pid namespace ns. */
static void plant_header(const char *path, uint64_t ns)
{
	struct np_vmstat_shm_header h = {.magic = NP_VMSTAT_SHM_MAGIC, .version = NP_VMSTAT_SHM_VERSION, .pid_ns = ns};
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, &h, sizeof h), (ssize_t)sizeof h);
	close(fd);
}

/* Another pid namespace's files (a container's, or `unshare -p`, sharing /dev/shm) are left
 * alone: their pids mean other processes there, maybe live ones. That holds for a file named
 * with that namespace, and for one named with ours whose header says another (planted). A
 * review saw a process in a new pid namespace remove the host's live files, and two
 * namespaces' pid 1 remove each other's. And another namespace's file at our pid does not
 * keep us from publishing: until the namespace was in the name, it held our name, and CI
 * failed on a file an earlier run (another namespace, the same small pids) left there. */
static void files_of_other_pid_namespaces_are_left_alone(void **state)
{
	(void)state;
	unsigned me = np_os_euid();
	uint64_t ns = np_os_pid_ns();
	char theirs[128], planted[128], ours[128];
	int gone = dead_pid();
	np_vmstat_shm_path(theirs, sizeof theirs, me, gone, ns + 7);
	np_vmstat_shm_path(ours, sizeof ours, me, gone, ns);
	np_vmstat_shm_path(planted, sizeof planted, me, dead_pid(), ns);
	plant_header(theirs, ns + 7);
	plant_header(ours, ns);
	plant_header(planted, ns + 7);
	np_vmstat_shm_sweep();
	assert_int_equal(access(theirs, F_OK), 0);  /* another namespace's: kept */
	assert_int_equal(access(planted, F_OK), 0); /* says another namespace: kept */
	assert_int_equal(access(ours, F_OK), -1);   /* this namespace's, its process gone */
	unlink(theirs);
	unlink(planted);
	/* Our own pid: in a child, which may drop the file this process already maps. */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char mine[128], other[128];
		np_vmstat_shm_path(mine, sizeof mine, me, np_os_pid(), ns);
		np_vmstat_shm_path(other, sizeof other, me, np_os_pid(), ns + 7);
		plant_header(other, ns + 7); /* another namespace's process with our pid */
		plant_header(mine, ns + 7);  /* our name, another namespace's header: planted */
		np_vmstat_shm_forget();
		bool kept = np_vmstat_shm_create(0) == NULL && access(mine, F_OK) == 0; /* not published */
		unlink(mine);
		bool made = np_vmstat_shm_create(0) != NULL; /* beside the other namespace's file */
		size_t size;
		bool tagged = made && map_ro(mine, &size)->pid_ns == ns;
		bool theirs_kept = access(other, F_OK) == 0;
		np_vmstat_shm_remove();
		bool removed = access(mine, F_OK) == -1;
		unlink(other);
		_exit(kept && made && tagged && theirs_kept && removed ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A header of process `pid` (dead) at its name, naming parent and keeper. */
static void plant_kept(char *path, size_t size, int pid, int parent, int keeper)
{
	struct np_vmstat_shm_header h = {.magic = NP_VMSTAT_SHM_MAGIC, .version = NP_VMSTAT_SHM_VERSION,
					 .pid_ns = np_os_pid_ns(), .parent = parent, .keeper = keeper};
	np_vmstat_shm_path(path, size, np_os_euid(), pid, h.pid_ns);
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, &h, sizeof h), (ssize_t)sizeof h);
	close(fd);
}

/* A file whose keeper lives (NUMAPAGE_SHM_KEEPER: `numapage run --stats`, which reads the files
 * of its job's processes that ended without their report once the job is over) stays, whoever
 * sweeps but the keeper, and goes at the first sweep after the keeper is gone. Before, such a
 * file stayed only while the process it was forked from lived: a grandchild's, whose parent
 * had ended, went with the next program's start unless numapage run's watcher had opened it
 * first (under load it had not: note68). A live parent no longer keeps its dead child's file:
 * nobody but a keeper reads it. And the library writes the keeper it was given. */
static void a_file_stays_while_its_keeper_lives(void **state)
{
	(void)state;
	int sv[2];
	assert_int_equal(pipe(sv), 0);
	pid_t keeper = fork();
	assert_true(keeper >= 0);
	if (keeper == 0) { /* lives until the pipe closes */
		close(sv[1]);
		char c;
		while (read(sv[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(sv[0]);
	char kept[128], grand[128], mine[128], child[128];
	int gone = dead_pid();
	plant_kept(kept, sizeof kept, gone, 0, keeper);                /* started by exec */
	plant_kept(grand, sizeof grand, dead_pid(), gone, keeper);     /* its parent gone too */
	plant_kept(mine, sizeof mine, dead_pid(), 0, np_os_pid());     /* we are its keeper: ours to take */
	plant_kept(child, sizeof child, dead_pid(), keeper, 0);        /* a live parent, no keeper */
	np_vmstat_shm_sweep();
	assert_int_equal(access(kept, F_OK), 0);
	assert_int_equal(access(grand, F_OK), 0);
	assert_int_equal(access(mine, F_OK), -1);
	assert_int_equal(access(child, F_OK), -1);
	close(sv[1]);
	assert_int_equal(waitpid(keeper, NULL, 0), keeper);
	np_vmstat_shm_sweep();
	assert_int_equal(access(kept, F_OK), -1); /* its keeper gone: removed */
	assert_int_equal(access(grand, F_OK), -1);

	/* What the library writes: the keeper NUMAPAGE_SHM_KEEPER names, in a forked child. */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		np_vmstat_shm_forget();
		np_opt.shm_keeper = 4242;
		bool made = np_vmstat_shm_create(getppid()) != NULL;
		char me[128];
		np_vmstat_shm_path(me, sizeof me, np_os_euid(), np_os_pid(), np_os_pid_ns());
		size_t size;
		const struct np_vmstat_shm_header *h = made ? map_ro(me, &size) : NULL;
		bool named = h && h->keeper == 4242 && h->parent == getppid();
		np_vmstat_shm_remove();
		_exit(named ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A file at our own pid whose keeper lives (`numapage run --stats`): a gone process's (another
 * start time: a pid used again) is set aside, <name>.<inode>, not removed: the keeper reads it
 * at the job's end, and a sweep judges it by its pid and keeper; our own before an exec (our
 * start time) gives its events to our totals and goes. One without a keeper is removed, as
 * before. Until this, either was removed, and the job lost that process, or the part of it
 * before the exec (a shell's child, `env`, `bash -c`). */
static void a_kept_file_at_our_pid_is_taken_over(void **state)
{
	(void)state;
	char aside[400];
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		np_vmstat_shm_forget();
		char p[128];
		plant_kept(p, sizeof p, getpid(), 0, getppid()); /* the test process keeps it */
		struct stat before, after;
		bool ok = stat(p, &before) == 0;
		snprintf(aside, sizeof aside, "%s.%llu", p, (unsigned long long)before.st_ino);
		ok = ok && np_vmstat_shm_create(0) != NULL;
		ok = ok && access(aside, F_OK) == 0 && stat(p, &after) == 0 && after.st_ino != before.st_ino;
		unsigned uid;
		int apid;
		uint64_t ns;
		ok = ok && np_vmstat_shm_parse_aside(strrchr(aside, '/') + 1, &uid, &apid, &ns) && apid == getpid() &&
		     ns == np_os_pid_ns() && !np_vmstat_shm_parse_name(strrchr(aside, '/') + 1, &uid, &apid, &ns);
		np_vmstat_shm_remove();
		ok = ok && access(p, F_OK) == -1 && access(aside, F_OK) == 0;
		/* Our own file before an exec (its start time ours, a keeper named): its events are
		 * added to ours, its gauges are not (the memory went with the exec), and it goes. */
		np_vmstat_shm_forget();
		np_opt.shm_keeper = getppid();
		struct np_vmstat_totals *t = np_vmstat_shm_create(0);
		int ev = -1, ga = -1;
		for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++) {
			if (ev < 0 && !NP_VMSTAT_KIND_IS_GAUGE(np_vmstat_item_kind(k)))
				ev = k;
			if (ga < 0 && NP_VMSTAT_KIND_IS_GAUGE(np_vmstat_item_kind(k)))
				ga = k;
		}
		ok = ok && t && ev >= 0 && ga >= 0 && stat(p, &before) == 0;
		long ev0 = np_vmstat_read(0, ev), ga0 = np_vmstat_read(0, ga);
		if (t) {
			t[0].v[ev] += 1234; /* what it counted before the exec */
			t[0].v[ga] += 99;
		}
		np_vmstat_shm_forget(); /* the exec: the file stays, unmapped */
		int held = open(p, O_RDONLY); /* as numapage run's watcher holds it */
		ok = ok && held >= 0 && np_vmstat_shm_create(0) != NULL && stat(p, &after) == 0 &&
		     after.st_ino != before.st_ino;
		/* Its magic zeroed: whoever holds it open does not count it again (a review saw the
		 * watcher count it beside the exec'd program's report). */
		uint64_t magic = 1;
		ok = ok && pread(held, &magic, sizeof magic, 0) == (ssize_t)sizeof magic && magic == 0;
		if (held >= 0)
			close(held);
		snprintf(aside, sizeof aside, "%s.%llu", p, (unsigned long long)before.st_ino);
		ok = ok && access(aside, F_OK) == -1 && np_vmstat_read(0, ev) == ev0 + 1234 && np_vmstat_read(0, ga) == ga0;
		np_vmstat_shm_remove();
		np_opt.shm_keeper = 0;
		/* No keeper: removed. */
		np_vmstat_shm_forget();
		plant_kept(p, sizeof p, getpid(), 0, 0);
		ok = ok && stat(p, &before) == 0 && np_vmstat_shm_create(0) != NULL;
		char other[160];
		snprintf(other, sizeof other, "%s.%llu", p, (unsigned long long)before.st_ino);
		ok = ok && access(other, F_OK) == -1;
		np_vmstat_shm_remove();
		_exit(ok ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	char p[128];
	np_vmstat_shm_path(p, sizeof p, np_os_euid(), pid, np_os_pid_ns());
	/* The child's copy of aside is not ours: find the set-aside file by its prefix. */
	DIR *d = opendir(NP_VMSTAT_SHM_DIR);
	assert_non_null(d);
	aside[0] = '\0';
	for (struct dirent *e; (e = readdir(d));)
		if (strncmp(e->d_name, strrchr(p, '/') + 1, strlen(strrchr(p, '/') + 1)) == 0 &&
		    e->d_name[strlen(strrchr(p, '/') + 1)] == '.')
			snprintf(aside, sizeof aside, "%s/%s", NP_VMSTAT_SHM_DIR, e->d_name);
	closedir(d);
	assert_true(aside[0]);
	/* Its process gone and we its keeper: our sweep takes it. */
	np_vmstat_shm_sweep();
	assert_int_equal(access(aside, F_OK), -1);
	/* One whose keeper is gone goes at the next sweep, whoever has its pid now (a live
	 * process here: it stayed as long as that newcomer lived, a review). */
	char live_pid[128];
	plant_kept(live_pid, sizeof live_pid, getpid(), 0, dead_pid());
	snprintf(aside, sizeof aside, "%s.7", live_pid);
	assert_int_equal(rename(live_pid, aside), 0);
	np_vmstat_shm_sweep();
	assert_int_equal(access(aside, F_OK), -1);
}

/* A file of the library before the namespace was in the name (numapage.<uid>.<pid>), left by
 * a process that is gone: removed when its header says this namespace (they stayed for good
 * after an upgrade: a hostile test), kept when it says another. */
static void sweep_removes_files_of_the_old_name(void **state)
{
	(void)state;
	uint64_t ns = np_os_pid_ns();
	char ours[128], theirs[128];
	snprintf(ours, sizeof ours, "%s/%s%u.%d", NP_VMSTAT_SHM_DIR, NP_VMSTAT_SHM_PREFIX, np_os_euid(), dead_pid());
	snprintf(theirs, sizeof theirs, "%s/%s%u.%d", NP_VMSTAT_SHM_DIR, NP_VMSTAT_SHM_PREFIX, np_os_euid(), dead_pid());
	unlink(ours); /* an old library's leftover at that pid */
	unlink(theirs);
	plant_header(ours, ns);
	plant_header(theirs, ns + 7);
	np_vmstat_shm_sweep();
	assert_int_equal(access(ours, F_OK), -1);
	assert_int_equal(access(theirs, F_OK), 0);
	unlink(theirs);
}

/* Names: what np_vmstat_shm_path writes parses back; anything else is no process's. */
static void live_file_names_parse_only_as_written(void **state)
{
	(void)state;
	char path[128];
	size_t dir = sizeof NP_VMSTAT_SHM_DIR; /* the directory and its slash */
	unsigned uid;
	int pid;
	uint64_t ns;
	np_vmstat_shm_path(path, sizeof path, 4294967295u, 2147483647, UINT64_MAX);
	assert_true(np_vmstat_shm_parse_name(path + dir, &uid, &pid, &ns));
	assert_true(uid == 4294967295u && pid == 2147483647 && ns == UINT64_MAX);
	np_vmstat_shm_path(path, sizeof path, 0, 1, 0);
	assert_string_equal(path + dir, "numapage.0.1.0");
	assert_true(np_vmstat_shm_parse_name(path + dir, &uid, &pid, &ns));
	assert_true(uid == 0 && pid == 1 && ns == 0);
	static const char *const bad[] = {
		"numapage.0.1",                            /* no namespace: the old name */
		"numapage.0.0.5",                          /* pid 0 */
		"numapage.0.1.05", "numapage.00.1.5",      /* leading zeros */
		"numapage.0.+1.5", "numapage.0.1.5.",      /* a sign, a trailing dot */
		"numapage.4294967296.1.5",                 /* uid above UINT_MAX */
		"numapage.0.2147483648.5",                 /* pid above INT_MAX */
		"numapage.0.1.18446744073709551616",       /* namespace above UINT64_MAX */
		"numapage.0.1.5x", "numapage..1.5", "numapage.0.1.", "numapge.0.1.5",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (np_vmstat_shm_parse_name(bad[i], &uid, &pid, &ns))
			fail_msg("%s parsed", bad[i]);
}

static void exit_table_goes_to_stderr(void **state)
{
	(void)state;
	count_some();
	char path[] = "/tmp/np_vmstat_err_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	fflush(stderr);
	int saved = dup(2);
	dup2(fd, 2);
	assert_int_equal(np_options_set("STATS", "1"), 0);
	np_vmstat_exit_report();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	const char *text = read_file(path);
	assert_non_null(strstr(text, "numapage: per-node statistics of process"));
	assert_non_null(strstr(text, "node5"));
	assert_non_null(strstr(text, "Total"));
	assert_non_null(strstr(text, "malloc_requested"));
	unlink(path);
	np_options_reset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(formula_matches_table, setup),
		cmocka_unit_test_setup(init_computes_node_thresholds, setup),
		cmocka_unit_test_setup(fixture_memoryless_nodes_use_nearest_memory, setup),
		cmocka_unit_test_setup(folds_past_threshold_with_overstep, setup),
		cmocka_unit_test_setup(large_deltas_never_overflow_int32, setup),
		cmocka_unit_test_setup(byte_items_fold_at_pages_worth, setup),
		cmocka_unit_test_setup(threshold_zero_folds_every_event, setup),
		cmocka_unit_test_setup(null_thread_adds_to_total, setup),
		cmocka_unit_test_setup(exact_under_threads, setup),
		cmocka_unit_test_setup(thread_exit_folds_everything, setup),
		cmocka_unit_test_setup(public_getters, setup),
		cmocka_unit_test_setup(checker_rejects_bad_json, setup),
		cmocka_unit_test_setup(json_is_well_formed, setup),
		cmocka_unit_test_setup(print_answers_for_its_own_writes, setup),
		cmocka_unit_test_setup(table_is_numastat_like, setup),
		/* In this order: the failure first, then the one file this process may create. */
		cmocka_unit_test_setup(shm_failure_publishes_nothing, setup),
		cmocka_unit_test_setup(live_file_lifecycle, setup),
		cmocka_unit_test_setup(sweep_removes_only_own_files, setup),
		cmocka_unit_test_setup(files_of_other_pid_namespaces_are_left_alone, setup),
		cmocka_unit_test_setup(live_file_names_parse_only_as_written, setup),
		cmocka_unit_test_setup(a_file_stays_while_its_keeper_lives, setup),
		cmocka_unit_test_setup(a_kept_file_at_our_pid_is_taken_over, setup),
		cmocka_unit_test_setup(sweep_removes_files_of_the_old_name, setup),
		cmocka_unit_test_setup(exit_table_goes_to_stderr, setup),
		cmocka_unit_test(json_strings_are_utf8),
		cmocka_unit_test(json_strings_read_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
