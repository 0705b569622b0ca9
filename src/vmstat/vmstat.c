/*
 * vmstat.c — per-node counters: thresholds, per-thread deltas folded into shared totals, the
 * registry of live threads, cheap and exact readers, fork handling, and the public
 * numa_page_stats_get* / numa_page_stat_name / numa_page_stat_desc.
 * Invariants: see vmstat.h (|diff| <= threshold; total + live diffs = truth).
 * Lock: reg_lock guards reg_head and every registered diffs' next/prev/registered. It is an
 * outer lock: never taken while an allocator pool lock is held, and it is held only for list
 * updates and snapshot walks (no system call, no allocation under it).
 */
#include "vmstat.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "lock.h"
#include "options.h"
#include "os.h"

int32_t np_vmstat_thr[NP_MAX_NODES][NUMA_PAGE_STAT_NITEMS] NP_LARGE_BSS;

/* What a fork's child writes here, on one page with the first node's totals (it zeroes their
 * events): each page it writes is a copy (docs/perf-issue15.md section 45). Aligned to what
 * they span, not to a page: a page of its own made one more page resident at start-up.
 * totals: private to the process: what every reader reads, and what a fork copies at the
 * instant of the fork.
 * mirror: the live-view file's totals (NULL: none), which every fold adds to as well: set once
 * by np_vmstat_use_totals (release), cleared in a forked child. The file was once the totals
 * themselves; a child then took its copy from the shared pages in its fork handler, after the
 * parent's other threads had gone on folding into them.
 * reg_head: the registry of live threads' diffs (reg_lock). */
static struct {
	struct np_vmstat_totals *mirror;
	struct np_vmstat_diffs *reg_head;
	struct np_vmstat_totals totals[NP_MAX_NODES];
} state NP_LARGE_BSS NP_ALIGNED(256); /* the pointers and node 0's row: 256 bytes, on one page */
_Static_assert(offsetof(__typeof__(state), totals[1]) <= 256, "node 0's totals within the first 256 bytes");

static int nnodes;
/* The most nodes any init had: rows past it were never written (the zeroing of events stops
 * there: a write of zeros makes a page resident, a page of the totals for every 16 nodes). */
static int rows_used;
static int os_ids[NP_MAX_NODES];
static int page_thr[NP_MAX_NODES];

static struct np_lock *const reg_lock = &np_lock_page.vmstat;

static const uint8_t item_kind[NUMA_PAGE_STAT_NITEMS] = {
#define KIND_(name, kind, desc) NP_VMSTAT_KIND_##kind,
	NUMA_PAGE_STAT_ITEMS(KIND_)
#undef KIND_
};
static const char *const item_name[NUMA_PAGE_STAT_NITEMS] = {
#define NAME_(name, kind, desc) #name,
	NUMA_PAGE_STAT_ITEMS(NAME_)
#undef NAME_
};
static const char *const item_desc[NUMA_PAGE_STAT_NITEMS] = {
#define DESC_(name, kind, desc) desc,
	NUMA_PAGE_STAT_ITEMS(DESC_)
#undef DESC_
};

/* ---- Thresholds ---------------------------------------------------------------------------- */

static int fls64(uint64_t x)
{
	return x ? 64 - __builtin_clzll(x) : 0;
}

/*
 * Linux's calculate_normal_threshold: the threshold grows with the logarithm of the number of
 * CPUs (more threads folding = more contention on a total) and of the node's memory (a large
 * node's counters tolerate a larger absolute lag), capped at 125:
 *
 *	threshold = min(125, 2 * fls(cpus) * (1 + fls(node_memory_MB / 128)))
 *
 *	cpus \ node memory    1 GB    16 GB    1 TB
 *	   1                    10       18      30
 *	   4                    30       54      90
 *	  16                    50       90     125
 *	 128                    80      125     125
 *	1024                   110      125     125
 *
 * "CPUs" is the number of CPUs the process may run on: deltas are per thread, and at most that
 * many threads fold at the same time. (tests/unit/test_vmstat.c checks this table.)
 */
int np_vmstat_threshold_for(int cpus, uint64_t node_mem_bytes)
{
	if (cpus < 1)
		cpus = 1;
	long t = 2L * fls64((uint64_t)cpus) * (1 + fls64(node_mem_bytes >> 27));
	return (int)NP_MIN(t, (long)NP_STAT_THRESHOLD_MAX);
}

void np_vmstat_init(const struct np_topo *t)
{
	int n = NP_MIN(NP_MAX(t->nnodes, 1), NP_MAX_NODES);
	long fixed = np_opt.stat_threshold;
	long ps = (long)np_os_page_size();
	for (int i = 0; i < n; i++) {
		const struct np_topo_node *nd = &t->node[i];
		uint64_t mem = nd->mem_bytes;
		/* A memoryless node's threads are served by its nearest memory node: that node's
		 * size is what its counters measure. */
		if (mem == 0 && nd->nfallback > 0 && nd->fallback[0] < t->nnodes)
			mem = t->node[nd->fallback[0]].mem_bytes;
		int thr = fixed >= 0 ? (int)NP_MIN(fixed, (long)NP_STAT_THRESHOLD_MAX) : np_vmstat_threshold_for(t->nallowed_cpus, mem);
		os_ids[i] = nd->os_id;
		page_thr[i] = thr;
		/* Bytes fold at the same number of pages' worth: 125 x 64 KiB pages < 2^23, far
		 * inside int32 even after a large delta is added in a long. */
		long bthr = NP_MIN((long)thr * ps, (long)(INT32_MAX / 4));
		for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
			np_vmstat_thr[i][k] = NP_VMSTAT_KIND_IS_BYTES(item_kind[k]) ? (int32_t)bthr : thr;
	}
	/* Nodes an earlier init had and this one has not: 0. Entries of nodes no init had are
	 * zero, never touched (start-up RSS: docs/perf-issue15.md section 15). */
	for (int i = n; i < nnodes; i++) {
		page_thr[i] = 0;
		memset(np_vmstat_thr[i], 0, sizeof np_vmstat_thr[i]);
	}
	if (n > rows_used)
		rows_used = n;
	__atomic_store_n(&nnodes, n, __ATOMIC_RELEASE);
}

int np_vmstat_threshold(int node)
{
	return node >= 0 && node < NP_MAX_NODES ? page_thr[node] : -1;
}

/* ---- Counting -------------------------------------------------------------------------------- */

static inline struct np_vmstat_totals *cur_mirror(void)
{
	return __atomic_load_n(&state.mirror, __ATOMIC_ACQUIRE);
}

/* Adds to the totals and to the live file's copy (two adds on a path that is already rare). */
static inline void total_add(int node, int item, long delta)
{
	atomic_fetch_add_explicit(&state.totals[node].v[item], delta, memory_order_relaxed);
	struct np_vmstat_totals *m = cur_mirror();
	if (m)
		atomic_fetch_add_explicit(&m[node].v[item], delta, memory_order_relaxed);
}

NP_FORK_CHILD void np_vmstat_add_shared(int node, int item, long delta)
{
	total_add(node, item, delta);
}

/*
 * |x| passed the threshold t: fold x plus half the threshold in x's direction and keep minus
 * that half, so a steady stream of increments folds every t + t/2 + 1 events instead of every
 * t + 1 (Linux's overstep in __inc_zone_state). The stored diff is +-t/2, inside [-t, t].
 */
void np_vmstat_fold_slow(struct np_vmstat_diffs *th, int node, int item, long x)
{
	long over = np_vmstat_thr[node][item] / 2;
	long fold = x > 0 ? x + over : x - over;
	total_add(node, item, fold);
	__atomic_store_n(&th->d[node][item], (int32_t)(x > 0 ? -over : over), __ATOMIC_RELAXED);
}

/* Moves every diff of th into the totals. Called by the owner thread (unregister) or with
 * the owner gone (fork child), so the diffs do not change under us. */
static void fold_all(struct np_vmstat_diffs *th)
{
	for (int n = 0; n < NP_MAX_NODES; n++)
		for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++) {
			int32_t v = th->d[n][k];
			if (v) {
				total_add(n, k, v);
				__atomic_store_n(&th->d[n][k], 0, __ATOMIC_RELAXED);
			}
		}
}

void np_vmstat_register(struct np_vmstat_diffs *th)
{
	np_lock(reg_lock);
	if (!th->registered) {
		th->prev = NULL;
		th->next = state.reg_head;
		if (state.reg_head)
			state.reg_head->prev = th;
		state.reg_head = th;
		th->registered = true;
	}
	np_unlock(reg_lock);
}

void np_vmstat_unregister(struct np_vmstat_diffs *th)
{
	np_lock(reg_lock);
	/* Folding under the lock: a snapshot sees these deltas either in the thread or in the
	 * totals, never in both and never in neither. */
	fold_all(th);
	if (th->registered) {
		if (th->prev)
			th->prev->next = th->next;
		else
			state.reg_head = th->next;
		if (th->next)
			th->next->prev = th->prev;
		th->next = th->prev = NULL;
		th->registered = false;
	}
	np_unlock(reg_lock);
}

/* ---- Readers --------------------------------------------------------------------------------- */

/* The shared total. */
static long total(int node, int item)
{
	return atomic_load_explicit(&state.totals[node].v[item], memory_order_relaxed);
}

static long clamp(int item, long v)
{
	return NP_VMSTAT_KIND_IS_GAUGE(item_kind[item]) && v < 0 ? 0 : v;
}

long np_vmstat_read(int node, int item)
{
	np_assert(node >= 0 && node < NP_MAX_NODES && item >= 0 && item < NUMA_PAGE_STAT_NITEMS);
	return clamp(item, total(node, item));
}

/*
 * The walk reads other threads' int32 diffs while they may be adding to them. That is safe:
 * each diff is one aligned 32-bit word written with a single (relaxed atomic) store, so a read
 * sees an old or a new value, never a torn one; a thread's diff may change right after we read
 * it, so a snapshot is exact for counts made before it started by threads that are not counting
 * during it, and otherwise off by the events in flight. A fold racing with the walk can be seen
 * twice (total already added, diff not yet reset) for that instant: the same bound.
 */
long np_vmstat_snapshot(int node, int item)
{
	np_assert(node >= 0 && node < NP_MAX_NODES && item >= 0 && item < NUMA_PAGE_STAT_NITEMS);
	np_lock(reg_lock);
	long v = total(node, item);
	for (struct np_vmstat_diffs *th = state.reg_head; th; th = th->next)
		v += __atomic_load_n(&th->d[node][item], __ATOMIC_RELAXED);
	np_unlock(reg_lock);
	return clamp(item, v);
}

void np_vmstat_snapshot_node(int node, long out[NUMA_PAGE_STAT_NITEMS], bool exact)
{
	if (exact)
		np_lock(reg_lock);
	for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
		out[k] = total(node, k);
	if (exact) {
		for (struct np_vmstat_diffs *th = state.reg_head; th; th = th->next)
			for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
				out[k] += __atomic_load_n(&th->d[node][k], __ATOMIC_RELAXED);
		np_unlock(reg_lock);
	}
	for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
		out[k] = clamp(k, out[k]);
}

/* ---- The live file mirrors the totals --------------------------------------------------------- */

void np_vmstat_add_events_before_exec(const struct np_vmstat_totals *node_totals, const int32_t *os_id, int n)
{
	for (int j = 0; j < n; j++) {
		int i = np_vmstat_node_index(os_id[j]);
		if (i < 0)
			continue; /* a node this process no longer has (another topology given) */
		for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
			if (!NP_VMSTAT_KIND_IS_GAUGE(item_kind[k]))
				atomic_fetch_add_explicit(&state.totals[i].v[k], node_totals[j].v[k], memory_order_relaxed);
	}
}

void np_vmstat_use_totals(struct np_vmstat_totals *dst)
{
	if (dst == cur_mirror())
		return;
	__atomic_store_n(&state.mirror, dst, __ATOMIC_RELEASE);
	/* Folds now add to dst too; it starts with what the totals held. A fold in flight
	 * meanwhile may count there twice or not at all: the file is a view from outside,
	 * already short of every thread's unfolded deltas (this runs once, at start-up). */
	int n = __atomic_load_n(&nnodes, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
			atomic_store_explicit(&dst[i].v[k], total(i, k), memory_order_relaxed);
}

/* ---- Fork ------------------------------------------------------------------------------------ */

void np_vmstat_atfork_prepare(void)
{
	np_lock(reg_lock);
}

void np_vmstat_atfork_parent(void)
{
	np_unlock(reg_lock);
}

/* Zeroes every event (gauges keep their level) in the totals t and in the diffs th; only
 * those that are not zero already: in a fork's child a write copies the page. */
static void zero_events(struct np_vmstat_totals *t, int n, struct np_vmstat_diffs *th)
{
	for (int i = 0; i < n; i++)
		for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
			if (!NP_VMSTAT_KIND_IS_GAUGE(item_kind[k])) {
				if (t && atomic_load_explicit(&t[i].v[k], memory_order_relaxed))
					atomic_store_explicit(&t[i].v[k], 0, memory_order_relaxed);
				if (th && __atomic_load_n(&th->d[i][k], __ATOMIC_RELAXED))
					__atomic_store_n(&th->d[i][k], 0, __ATOMIC_RELAXED);
			}
}

NP_FORK_CHILD void np_vmstat_atfork_child(struct np_vmstat_diffs *survivor)
{
	/* Only this thread exists now; the lock was held by it across fork. */
	np_lock_atfork_child(reg_lock, NP_LOCK_RANK_VMSTAT, 0, false);
	/* The totals are this process's copy, as they were at the fork; the file's mapping is
	 * shared with the parent: no more adds there, before anything below counts. */
	__atomic_store_n(&state.mirror, NULL, __ATOMIC_RELEASE);
	/* What the threads counted outside their diffs (malloc's byte counters) is settled now
	 * (np_vmstat_fork_hook), before the survivor's events are dropped below. Settled here, in
	 * the child, not by the prepare handler in the parent: a fork from a signal
	 * handler may interrupt this thread's malloc, and the parent's counts then drifted for
	 * good (a hostile test: malloc_requested 86-238 KB off, malloc_in_use 69-187 KB left
	 * after every free, in 3 of 4 runs). np_vmstat_fork_hook, not the read hook: its walk
	 * is bounded (a full one never ended on a ring caught mid-change). */
	if (np_vmstat_fork_hook)
		np_vmstat_fork_hook();
	/* The other threads' states were copied into the child but their threads were not: their
	 * gauge deltas are levels of memory the child holds, so they go into the totals; their
	 * events, like the survivor's, are the parent's history (the parent still counts them) and
	 * are dropped. Their diffs are only read: nothing walks them again (they leave the
	 * registry), and each one written was a page copied by every child. */
	bool keep = false;
	/* The rows in use only: a write of zeros to the others made pages resident in every child
	 * (two faults a fork on one node: docs/perf-issue15.md section 39). */
	int n = rows_used;
	for (const struct np_vmstat_diffs *th = state.reg_head; th; th = th->next) {
		if (th == survivor) {
			keep = true;
			continue;
		}
		for (int i = 0; i < n; i++)
			for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
				if (NP_VMSTAT_KIND_IS_GAUGE(item_kind[k]) && th->d[i][k])
					total_add(i, k, th->d[i][k]);
	}
	if (survivor && keep) {
		NP_RESET(&survivor->next, NULL);
		NP_RESET(&survivor->prev, NULL);
	}
	NP_RESET(&state.reg_head, survivor && keep ? survivor : NULL);
	/* The child's own counting starts here, as a new process's does (Linux's per-process
	 * fault counters restart at fork too). */
	if (survivor)
		zero_events(NULL, n, survivor);
	zero_events(state.totals, n, NULL);
}

/* numa_page_stats_reset: events only (see numapage.h); under reg_lock so a thread that exits
 * meanwhile folds either before (and is zeroed) or after (and is kept, being newer). */
void np_vmstat_reset_events(void)
{
	np_lock(reg_lock);
	int n = __atomic_load_n(&nnodes, __ATOMIC_ACQUIRE);
	struct np_vmstat_totals *m = cur_mirror();
	zero_events(state.totals, rows_used, NULL);
	if (m)
		zero_events(m, n, NULL);
	for (struct np_vmstat_diffs *th = state.reg_head; th; th = th->next)
		zero_events(NULL, rows_used, th);
	np_unlock(reg_lock);
}

NUMA_PAGE_API int numa_page_stats_reset(void)
{
	/* The caller's own unfolded byte counters first, so they are reset with the rest. */
	if (np_vmstat_read_hook)
		np_vmstat_read_hook();
	np_vmstat_reset_events();
	return 0;
}

void np_vmstat_reset(void)
{
	np_lock(reg_lock);
	struct np_vmstat_totals *m = cur_mirror();
	for (int i = 0; i < NP_MAX_NODES; i++)
		for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++) {
			atomic_store_explicit(&state.totals[i].v[k], 0, memory_order_relaxed);
			if (m && i < nnodes)
				atomic_store_explicit(&m[i].v[k], 0, memory_order_relaxed);
		}
	for (struct np_vmstat_diffs *th = state.reg_head; th; th = th->next)
		for (int i = 0; i < NP_MAX_NODES; i++)
			for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
				__atomic_store_n(&th->d[i][k], 0, __ATOMIC_RELAXED);
	np_unlock(reg_lock);
}

/* ---- Items and nodes ------------------------------------------------------------------------- */

int np_vmstat_item_kind(int item)
{
	return item >= 0 && item < NUMA_PAGE_STAT_NITEMS ? item_kind[item] : -1;
}

int np_vmstat_nnodes(void)
{
	return __atomic_load_n(&nnodes, __ATOMIC_ACQUIRE);
}

int np_vmstat_os_id(int node)
{
	return node >= 0 && node < np_vmstat_nnodes() ? os_ids[node] : -1;
}

int np_vmstat_node_index(int os_id)
{
	int n = np_vmstat_nnodes();
	for (int i = 0; i < n; i++)
		if (os_ids[i] == os_id)
			return i;
	return -1;
}

/* ---- Public API ------------------------------------------------------------------------------ */

static int stats_get(int node, struct numa_page_node_stats *out, bool exact)
{
	int i = np_vmstat_node_index(node);
	if (i < 0 || !out) {
		errno = EINVAL;
		return -1;
	}
	long v[NUMA_PAGE_STAT_NITEMS];
	np_vmstat_snapshot_node(i, v, exact);
	out->node = node;
	/* Only gauges can go below zero (a cheap read while deltas are pending); they are
	 * clamped already, so every value fits the unsigned field. */
#define FILL_(name, kind, desc) out->name = (uint64_t)NP_MAX(v[NUMA_PAGE_STAT_##name], 0L);
	NUMA_PAGE_STAT_ITEMS(FILL_)
#undef FILL_
	return 0;
}

void (*np_vmstat_read_hook)(void);
void (*np_vmstat_fork_hook)(void);

NUMA_PAGE_API int numa_page_stats_get(int node, struct numa_page_node_stats *out)
{
	if (np_vmstat_read_hook)
		np_vmstat_read_hook();
	return stats_get(node, out, true);
}

NUMA_PAGE_API int numa_page_stats_get_cheap(int node, struct numa_page_node_stats *out)
{
	return stats_get(node, out, false);
}

NUMA_PAGE_API const char *numa_page_stat_name(int item)
{
	return item >= 0 && item < NUMA_PAGE_STAT_NITEMS ? item_name[item] : NULL;
}

NUMA_PAGE_API const char *numa_page_stat_desc(int item)
{
	return item >= 0 && item < NUMA_PAGE_STAT_NITEMS ? item_desc[item] : NULL;
}
