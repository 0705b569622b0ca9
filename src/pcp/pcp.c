/*
 * pcp.c — per-thread page caches (see pcp.h). Everything here runs on the owning thread; the
 * only shared state it touches is a pool, through np_pool_* (which lock once per batch).
 * Accounting follows Linux's numastat: the intended node is the one the request named, or the
 * thread's home node; the served node is where the page lives.
 */
#include "pcp/pcp.h"

#include "node/node.h"
#include "options.h"
#include "os.h"
#include "topology/topology.h"

#define MAX_BATCH_RUNS 64

int np_pcp_threads[NP_MAX_NODES];

static void count_thread(struct np_pcp *pcp, int node, int delta)
{
	__atomic_add_fetch(&np_pcp_threads[node], delta, __ATOMIC_RELAXED);
	np_vmstat_add(pcp->st, node, NUMA_PAGE_STAT_threads, delta);
}

static void flush_runs(struct np_pcp *pcp, int keep);

static void push_head(struct np_page_list *l, struct np_page *pg)
{
	pg->prev = NULL;
	pg->next = l->head;
	if (l->head)
		l->head->prev = pg;
	else
		l->tail = pg;
	l->head = pg;
}

static void push_tail(struct np_page_list *l, struct np_page *pg)
{
	pg->next = NULL;
	pg->prev = l->tail;
	if (l->tail)
		l->tail->next = pg;
	else
		l->head = pg;
	l->tail = pg;
}

static void unlink_run(struct np_page_list *l, struct np_page *pg)
{
	if (pg->prev)
		pg->prev->next = pg->next;
	else
		l->head = pg->next;
	if (pg->next)
		pg->next->prev = pg->prev;
	else
		l->tail = pg->prev;
	pg->next = pg->prev = NULL;
}

void np_pcp_init(struct np_pcp *pcp, int home, struct np_vmstat_diffs *st, const struct np_topo_policy *pol)
{
	*pcp = (struct np_pcp){.st = st, .home = home};
	long batch = np_opt_load(pcp_batch), high = np_opt_load(pcp_high);
	pcp->batch = batch > 0 ? (int)batch : NP_PCP_BATCH_DEFAULT;
	pcp->high = high > 0 ? (int)high : NP_PCP_HIGH_FACTOR * pcp->batch;
	if (pcp->high < pcp->batch)
		pcp->high = pcp->batch;
	pcp->rotor = 0; /* the first batch from the first choice, then its group in turn */
	pcp->ilv_rotor = (unsigned)np_os_tid(); /* threads start their interleaves apart */
	pcp->policy = pol ? *pol : (struct np_topo_policy){.mode = NP_POLICY_DEFAULT, .kernel_mode = -1};
	pcp->target = np_node_target(&pcp->policy, home, &pcp->ilv_rotor);
	pcp->near = np_node_target_near(&pcp->policy, pcp->target);
}

void np_pcp_count_thread(struct np_pcp *pcp)
{
	count_thread(pcp, pcp->home, 1);
}

void np_pcp_fini(struct np_pcp *pcp)
{
	count_thread(pcp, pcp->home, -1);
}

NP_FORK_CHILD void np_pcp_atfork_child(struct np_pcp *survivor)
{
	for (int n = 0; n < NP_MAX_NODES; n++) {
		int now = survivor && survivor->home == n, had = np_pcp_threads[n];
		if (had == now)
			continue;
		np_pcp_threads[n] = now;
		np_vmstat_add(survivor ? survivor->st : NULL, n, NUMA_PAGE_STAT_threads, now - had);
	}
}

/* The lists re-sorted for a new near mask: near runs to the head, the others behind them. */
static void resort(struct np_pcp *pcp)
{
	for (int o = 0; o < NP_PCP_ORDERS; o++) {
		struct np_page_list near = {0}, far = {0};
		struct np_page *pg = pcp->list[o].head;
		while (pg) {
			struct np_page *next = pg->next;
			push_tail(np_pcp_near(pcp, np_page_node(pg)) ? &near : &far, pg);
			pg = next;
		}
		if (near.tail) {
			near.tail->next = far.head;
			if (far.head)
				far.head->prev = near.tail;
			near.tail = far.tail ? far.tail : near.tail;
			pcp->list[o] = near;
		} else {
			pcp->list[o] = far;
		}
	}
}

/* The target for the home and policy now, and the near mask with it. */
static void retarget(struct np_pcp *pcp, bool keep_interleave)
{
	if (!keep_interleave || pcp->policy.mode != NP_POLICY_INTERLEAVE)
		pcp->target = np_node_target(&pcp->policy, pcp->home, &pcp->ilv_rotor);
	uint64_t near = np_node_target_near(&pcp->policy, pcp->target);
	if (near != pcp->near) {
		/* Pages that were local are remote now: near ones to the head, the rest to the tail;
		 * cached long runs go home. */
		pcp->near = near;
		resort(pcp);
		flush_runs(pcp, 0);
	}
}

void np_pcp_set_home(struct np_pcp *pcp, int home)
{
	if (home == pcp->home)
		return;
	count_thread(pcp, pcp->home, -1);
	count_thread(pcp, home, 1);
	pcp->home = home;
	retarget(pcp, true); /* an interleave's target moves by itself */
}

void np_pcp_set_policy(struct np_pcp *pcp, const struct np_topo_policy *pol)
{
	pcp->policy = *pol;
	retarget(pcp, false);
}

void np_pcp_count_alloc(struct np_pcp *pcp, int intended, int served, long npages, bool named)
{
	struct np_vmstat_diffs *st = pcp ? pcp->st : NULL;
	int home = pcp ? pcp->home : intended;
	if (pcp && !named && np_node_interleaves(&pcp->policy, served)) {
		/* Under an interleave every node of it is where the page was meant to go (a full
		 * one is passed over: its batches come from the next). Not for a node the program
		 * named: that is where its pages were meant to go. */
		intended = served;
		np_vmstat_add(st, served, NUMA_PAGE_STAT_interleave_hit, npages);
	}
	if (served == intended) {
		np_vmstat_add(st, served, NUMA_PAGE_STAT_numa_hit, npages);
	} else {
		np_vmstat_add(st, served, NUMA_PAGE_STAT_numa_miss, npages);
		np_vmstat_add(st, intended, NUMA_PAGE_STAT_numa_foreign, npages);
	}
	np_vmstat_add(st, served, served == home ? NUMA_PAGE_STAT_local_node : NUMA_PAGE_STAT_other_node, npages);
	np_vmstat_add(st, served, NUMA_PAGE_STAT_pages_in_use, npages);
}

bool np_pcp_is_remote(const struct np_pcp *pcp, int node)
{
	if (pcp)
		return !np_pcp_near(pcp, node);
	/* A thread without state (it never allocated): judge by the CPU it runs on. */
	int here = np_topo_current_node(&np_topo_table);
	return here >= 0 && !((np_node_near(here) >> node) & 1);
}

void np_pcp_count_free(struct np_pcp *pcp, int node, long npages)
{
	struct np_vmstat_diffs *st = pcp ? pcp->st : NULL;
	np_vmstat_add(st, node, NUMA_PAGE_STAT_pages_in_use, -npages);
	if (np_pcp_is_remote(pcp, node))
		np_vmstat_add(st, node, NUMA_PAGE_STAT_remote_free, npages);
}

/* One pool's try of a batch or a run, for np_node_walk. */
struct take {
	struct np_pcp *pcp;
	unsigned order;     /* batch: runs of 1 << order pages */
	int want;           /* runs wanted (of 1 << order pages, or of npages) */
	size_t npages, align_pages;
	struct np_page **runs;
	int got;
	bool shared;        /* the runs came from a pool shared with the home's group */
};

static bool take_batch(int node, bool shared, bool grow, void *arg)
{
	struct take *t = arg;
	t->got = np_pool_get_batch(node, t->order, t->want, t->runs, t->pcp->st, grow);
	if (t->got && shared)
		np_vmstat_add(t->pcp->st, node, NUMA_PAGE_STAT_pages_stolen, (long)t->got << t->order);
	return t->got > 0;
}

static bool take_run(int node, bool shared, bool grow, void *arg)
{
	struct take *t = arg;
	t->got = np_pool_get_runs(node, t->npages, t->align_pages, t->want, t->runs, t->pcp->st, grow);
	t->shared = shared; /* pages_stolen is counted by the caller, for the runs it keeps */
	return t->got > 0;
}

/* The node a request for the thread's own memory is for: its target; under an interleave, the
 * next node of it (each batch and each run in turn). */
static int next_target(struct np_pcp *pcp)
{
	if (pcp->policy.mode == NP_POLICY_INTERLEAVE)
		pcp->target = np_node_target(&pcp->policy, pcp->home, &pcp->ilv_rotor);
	return pcp->target;
}

/* Refills list[order] with a batch: from the target node's pool (a memoryless home's next
 * group member), else along the target's fallback order. near_only: the list still holds
 * remote runs, so only a near pool may serve; they are used up before another remote batch is
 * fetched (otherwise a thread whose near nodes are exhausted would pull a whole batch per page
 * it takes and hoard them). Returns false when no allowed node had memory. */
static bool refill(struct np_pcp *pcp, unsigned order, bool near_only)
{
	int want = pcp->batch >> order;
	want = want < 1 ? 1 : want > MAX_BATCH_RUNS ? MAX_BATCH_RUNS : want;
	struct np_page *runs[MAX_BATCH_RUNS];
	struct take t = {.pcp = pcp, .order = order, .want = want, .runs = runs};
	/* With remote runs still cached, a full near node is not grown: those runs serve first. */
	struct np_node_req r = {.intended = next_target(pcp),
				.flags = NP_WALK_PICK | (near_only ? NP_WALK_ROOM_ONLY : 0),
				.only = near_only ? pcp->near : 0, .prefer = np_node_interleave_set(&pcp->policy),
				.pages = (size_t)want << order, .rotor = &pcp->rotor};
	int from = np_node_walk(&r, take_batch, &t);
	if (from < 0)
		return false;
	int got = t.got;
	np_vmstat_add(pcp->st, from, NUMA_PAGE_STAT_pcp_refill, 1);
	struct np_page_list *l = &pcp->list[order];
	bool near = np_pcp_near(pcp, from);
	for (int i = got - 1; i >= 0; i--) {
		np_page_set_state(runs[i], NP_PAGE_PCP);
		if (near)
			push_head(l, runs[i]);
		else
			push_tail(l, runs[i]);
	}
	pcp->count += got << order;
	return true;
}

/* A run of 1 << order pages from a pool for a request aimed at `node`, bypassing the cache. */
static struct np_page *get_direct(struct np_pcp *pcp, unsigned order, int node)
{
	struct np_page *run;
	struct take t = {.pcp = pcp, .order = order, .want = 1, .runs = &run};
	struct np_node_req r = {.intended = node, .pages = (size_t)1 << order};
	int from = np_node_walk(&r, take_batch, &t);
	if (from < 0)
		return NULL;
	np_pcp_count_alloc(pcp, node, from, 1L << order, true);
	return run;
}

/* No pool had what a request needs: the thread's own cache may hold it in pieces (runs of
 * other orders, long runs it keeps), which its pool merges with their free neighbours. Before
 * the request fails (no memory, or no address space under RLIMIT_AS), the cache goes back.
 * True when it held anything. Once a failure: a program that goes on failing finds it empty. */
NP_NOINLINE NP_COLD static bool drain_before_failing(struct np_pcp *pcp)
{
	if (pcp->count == 0 && pcp->nruns == 0)
		return false;
	np_pcp_drain(pcp);
	return true;
}

struct np_page *np_pcp_get(struct np_pcp *pcp, unsigned order, int node)
{
	np_assert(order < NP_PCP_ORDERS);
	if (node >= 0 && (node != pcp->target || pcp->policy.mode == NP_POLICY_INTERLEAVE))
		return get_direct(pcp, order, node);
	struct np_page_list *l = &pcp->list[order];
	struct np_page *pg = l->head;
	/* Only remote pages left (or none): prefer a fresh batch of near ones. */
	if (!pg || !np_pcp_near(pcp, np_page_node(pg))) {
		refill(pcp, order, pg != NULL);
		pg = l->head;
		if (!pg && drain_before_failing(pcp)) {
			refill(pcp, order, false);
			pg = l->head;
		}
		if (!pg)
			return NULL;
	}
	unlink_run(l, pg);
	pcp->count -= 1 << order;
	np_page_set_state(pg, NP_PAGE_USED);
	np_pcp_count_alloc(pcp, pcp->target, np_page_node(pg), 1L << order, node >= 0);
	return pg;
}

/* Sends at least a batch of pages, tail first, back to their pools. */
static void flush(struct np_pcp *pcp, int pages)
{
	struct np_page *runs[MAX_BATCH_RUNS];
	while (pages > 0 && pcp->count > 0) {
		int n = 0;
		uint64_t drained = 0;
		/* Remote runs first (they sit at the tails), then round-robin over the orders. */
		for (int pass = 0; pass < 2 && n < MAX_BATCH_RUNS && pages > 0; pass++) {
			bool progress = true;
			while (progress && n < MAX_BATCH_RUNS && pages > 0) {
				progress = false;
				for (int o = 0; o < NP_PCP_ORDERS && n < MAX_BATCH_RUNS && pages > 0; o++) {
					struct np_page *pg = pcp->list[o].tail;
					if (!pg || (pass == 0 && np_pcp_near(pcp, np_page_node(pg))))
						continue;
					unlink_run(&pcp->list[o], pg);
					pcp->count -= 1 << o;
					pages -= 1 << o;
					drained |= 1ULL << np_page_node(pg);
					runs[n++] = pg;
					progress = true;
				}
			}
		}
		if (n == 0)
			break;
		for (int node = 0; drained; node++, drained >>= 1)
			if (drained & 1)
				np_vmstat_add(pcp->st, node, NUMA_PAGE_STAT_pcp_drain, 1);
		np_pool_put_batch(runs, n, pcp->st);
	}
}

/* np_pcp_put without the counting. */
static void cache(struct np_pcp *pcp, struct np_page *run)
{
	int node = np_page_node(run);
	unsigned order = run->order;
	np_assert(order < NP_PCP_ORDERS && run->npages == 1u << order);
	np_page_set_state(run, NP_PAGE_PCP);
	np_page_set_owner(run, NULL);
	if (np_pcp_near(pcp, node))
		push_head(&pcp->list[order], run);
	else
		push_tail(&pcp->list[order], run);
	pcp->count += 1 << order;
	if (NP_UNLIKELY(pcp->count >= pcp->high))
		flush(pcp, pcp->batch);
	if (np_config_debug >= 3) {
		const char *err = np_pcp_check(pcp);
		if (err)
			np_fatal("page cache corrupt: %s", err);
	}
}

void np_pcp_put(struct np_pcp *pcp, struct np_page *run)
{
	np_chunk_rebind_run(run);
	np_pcp_count_free(pcp, np_page_node(run), 1L << run->order);
	cache(pcp, run);
}

/* A cached long run of npages at align_pages, off the list; NULL when none. */
static struct np_page *take_cached_run(struct np_pcp *pcp, size_t npages, size_t align_pages)
{
	for (int i = pcp->nruns - 1; i >= 0; i--) {
		struct np_page *r = pcp->runs[i];
		struct np_chunk *c = np_chunk_of(r);
		if (r->npages != npages || ((size_t)(r - c->pages) & (align_pages ? align_pages - 1 : 0)))
			continue;
		for (int k = i; k + 1 < pcp->nruns; k++)
			pcp->runs[k] = pcp->runs[k + 1];
		pcp->nruns--;
		pcp->run_pages -= (int)npages;
		np_page_set_state(r, NP_PAGE_USED);
		return r;
	}
	return NULL;
}

/* The cached long runs back to their pools: all of them (keep 0), or the oldest until `keep`
 * are left. */
static void flush_runs(struct np_pcp *pcp, int keep)
{
	int n = pcp->nruns - keep;
	if (n <= 0)
		return;
	struct np_page *out[NP_PCP_RUNS];
	for (int i = 0; i < n; i++) {
		out[i] = pcp->runs[i];
		pcp->run_pages -= (int)out[i]->npages;
	}
	for (int i = n; i < pcp->nruns; i++)
		pcp->runs[i - n] = pcp->runs[i];
	pcp->nruns = keep;
	np_pool_put_batch(out, n, pcp->st);
}

/* Run r goes into the cache of long runs, newest last (the caller made room). */
static void keep_run(struct np_pcp *pcp, struct np_page *r)
{
	np_page_set_state(r, NP_PAGE_PCP);
	pcp->runs[pcp->nruns++] = r;
	pcp->run_pages += (int)r->npages;
}

/* A run of npages is one the cache keeps (longer than NP_PCP_LONG_MIN pages, at most half its
 * pages). A run of 32 pages is kept only when it has no order (a large block's, taken at any
 * alignment); a slab's run of 32 has order 5 and goes to that list (np_pcp_put_held). */
static bool keepable(size_t npages)
{
	return npages > NP_PCP_LONG_MIN && npages <= NP_PCP_RUN_PAGES / 2;
}

struct np_page *np_pcp_get_run(struct np_pcp *pcp, size_t npages, size_t align_pages, int node)
{
	bool own = (node < 0 || node == pcp->target) && pcp->policy.mode != NP_POLICY_INTERLEAVE;
	if (own && pcp->nruns) {
		struct np_page *r = take_cached_run(pcp, npages, align_pages);
		if (r) {
			np_pcp_count_alloc(pcp, node >= 0 ? node : pcp->target, np_page_node(r), (long)npages, node >= 0);
			return r;
		}
		/* A miss: the program's long runs are not of a few repeated lengths, and kept ones
		 * would only stop the pool from merging them (large-blocks, 64 KiB..4 MiB at
		 * random, ran 15% slower): they go back now. */
		flush_runs(pcp, 0);
	}
	/* The second miss in a row for one length (the cache is empty now): the program asks for
	 * it again and again (page_bench's 16 at a time took the pool lock for 12 of them), so a
	 * few come in one lock hold, the rest kept. */
	int want = 1;
	if (own && keepable(npages)) {
		if (pcp->run_missed == npages)
			want = (int)NP_MIN((size_t)NP_PCP_RUNS / 2, NP_PCP_RUN_PAGES / 2 / npages);
		pcp->run_missed = npages;
	}
	int intended = node >= 0 ? node : next_target(pcp);
	struct np_page *runs[NP_PCP_RUNS / 2];
	struct take t = {.pcp = pcp, .want = want, .npages = npages, .align_pages = align_pages, .runs = runs};
	struct np_node_req r = {.intended = intended, .flags = node < 0 ? NP_WALK_PICK : 0,
				.prefer = node < 0 ? np_node_interleave_set(&pcp->policy) : 0, .pages = npages, .rotor = &pcp->rotor};
	int from = np_node_walk(&r, take_run, &t);
	if (from < 0 && drain_before_failing(pcp))
		from = np_node_walk(&r, take_run, &t);
	if (from < 0)
		return NULL;
	np_pcp_count_alloc(pcp, intended, from, (long)npages, node >= 0);
	int kept = 1;
	if (t.got > 1) {
		if (np_pcp_near(pcp, from)) {
			kept = t.got;
			/* The next takes (newest first) get them in address order. */
			for (int i = t.got - 1; i >= 1; i--)
				keep_run(pcp, runs[i]);
		} else {
			np_pool_put_batch(runs + 1, t.got - 1, pcp->st); /* far memory is not kept */
		}
	}
	if (t.shared)
		np_vmstat_add(pcp->st, from, NUMA_PAGE_STAT_pages_stolen, (long)npages * kept);
	return runs[0];
}

/* np_pcp_put_run without the counting. */
static void cache_run(struct np_pcp *pcp, struct np_page *run)
{
	np_page_set_owner(run, NULL);
	if (pcp && keepable(run->npages) && np_pcp_near(pcp, np_page_node(run))) {
		run->clean = 0;
		if (pcp->nruns == NP_PCP_RUNS || pcp->run_pages + (int)run->npages > NP_PCP_RUN_PAGES) {
			flush_runs(pcp, pcp->nruns / 2); /* the older half, in one lock hold */
			while (pcp->nruns && pcp->run_pages + (int)run->npages > NP_PCP_RUN_PAGES)
				flush_runs(pcp, pcp->nruns - 1);
		}
		keep_run(pcp, run);
		return;
	}
	np_pool_put_run(run, pcp ? pcp->st : NULL);
}

void np_pcp_put_run(struct np_pcp *pcp, struct np_page *run)
{
	np_chunk_rebind_run(run);
	np_pcp_count_free(pcp, np_page_node(run), run->npages);
	cache_run(pcp, run);
}

void np_pcp_put_held(struct np_pcp *pcp, struct np_page *run)
{
	/* Out of pages_in_use only: remote_free counts the program's frees, and the frees that
	 * emptied the slab were counted one by one (a moved thread's exit counted 1000 remote
	 * frees of 200 B objects, then 1081 more for their slabs' pages). */
	np_vmstat_add(pcp ? pcp->st : NULL, np_page_node(run), NUMA_PAGE_STAT_pages_in_use,
		      -(long)run->npages);
	np_chunk_rebind_run(run);
	if (pcp && run->order < NP_PCP_ORDERS)
		cache(pcp, run);
	else
		cache_run(pcp, run);
}

void np_pcp_drain(struct np_pcp *pcp)
{
	flush(pcp, pcp->count);
	flush_runs(pcp, 0);
}

const char *np_pcp_check(const struct np_pcp *pcp)
{
	int count = 0;
	for (int o = 0; o < NP_PCP_ORDERS; o++) {
		const struct np_page *prev = NULL;
		bool seen_far = false;
		for (const struct np_page *pg = pcp->list[o].head; pg; prev = pg, pg = pg->next) {
			if (pg->prev != prev)
				return "broken back link";
			if (pg->state != NP_PAGE_PCP)
				return "a cached run is not in state PCP";
			if (pg->order != o || pg->npages != 1u << o)
				return "a cached run sits in the list of another order";
			bool near = np_pcp_near(pcp, np_page_node(pg));
			if (near && seen_far)
				return "a near run stands behind a remote one";
			seen_far |= !near;
			count += 1 << o;
		}
		if (pcp->list[o].tail != prev)
			return "tail pointer disagrees with the list";
	}
	int run_pages = 0;
	for (int i = 0; i < pcp->nruns; i++) {
		const struct np_page *r = pcp->runs[i];
		if (r->state != NP_PAGE_PCP)
			return "a cached long run is not in state PCP";
		if (!np_pcp_near(pcp, np_page_node(r)))
			return "a cached long run is not near";
		run_pages += (int)r->npages;
	}
	if (pcp->nruns < 0 || pcp->nruns > NP_PCP_RUNS || run_pages != pcp->run_pages || run_pages > NP_PCP_RUN_PAGES)
		return "cached long runs disagree with their count";
	return count == pcp->count ? NULL : "count disagrees with the lists";
}
