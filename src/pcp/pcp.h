/*
 * pcp.h — per-thread page caches, after Linux's per-cpu pagesets. A thread keeps free runs of
 * 1 << order pages (order 0..NP_PCP_ORDERS-1) in one list per order. Allocation takes from
 * the head. On free, a run of a node near the thread (its own node, or for a memoryless node
 * its nearest memory nodes) goes to the head, so it is reused first while still hot; a run of
 * any other node goes to the tail, so remote pages are the last to be reused and the first to
 * leave. When count reaches high, a batch leaves from the tail, each run back to its own
 * node's pool (remote pages drain home); when a list is empty it refills a batch from the
 * target node's pool (or its fallback) in one lock hold.
 *
 * Two nodes per thread. The home node is where the thread is: its CPU's node (the malloc layer
 * re-homes a thread the scheduler moved, np_pcp_set_home), the node placement put it on, or
 * the one numa_page_set_home_node named; threads and local_node/other_node are counted by it.
 * The target node is where its memory is intended to be: the home node, or under the task's
 * memory policy the preferred node nearest home, or for each batch the next node of an
 * interleave (np_node_target); numa_hit, numa_miss and numa_foreign are counted against it.
 *
 * A pcp belongs to one thread: no lock. Invariants: see np_pcp_check().
 */
#ifndef NP_PCP_H
#define NP_PCP_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "pool/pool.h"
#include "topology/topology.h"
#include "vmstat/vmstat.h"

/* 4 KiB .. 128 KiB: the last order is a one-step slab's run (malloc/sizeclass.h), so that slabs
 * come in batches from lists of their own, whatever long runs the program also asks for. */
#define NP_PCP_ORDERS 6
/* Runs of more than NP_PCP_LONG_MIN pages that are no order's run (a page-API call or a large
 * malloc of 68 KiB and more, a slab of 256 KiB) that a thread keeps after freeing them, for
 * the next request of the same length: up to NP_PCP_RUNS of them, NP_PCP_RUN_PAGES pages in
 * all; a request that finds none of its length gives them all back. Without them every such
 * call took the node's pool lock twice. They move to and from the pool in batches, one lock
 * hold each: a full cache gives its older half back, and a second miss in a row for the same
 * length takes up to NP_PCP_RUNS / 2 runs of it (one for the request, the rest kept). */
#define NP_PCP_LONG_MIN 16
#define NP_PCP_RUNS 8
#define NP_PCP_RUN_PAGES 1024
#define NP_PCP_BATCH_DEFAULT 64
#define NP_PCP_HIGH_FACTOR 6

struct np_page_list {
	struct np_page *head, *tail;
};

struct np_pcp {
	struct np_page_list list[NP_PCP_ORDERS];
	int count;             /* pages held over all lists */
	int high, batch;       /* drain a batch once count >= high; refill batch pages */
	int home;              /* dense node the thread is on (its CPU's, placed, or set) */
	int target;            /* dense node its memory is intended for (np_node_target) */
	bool home_fixed;       /* set by numa_page_set_home_node or placement: do not follow the CPU */
	uint64_t near;         /* dense nodes whose pages count as local (bit per node) */
	unsigned rotor;        /* rotating iterator for sharing among equidistant pools */
	unsigned ilv_rotor;    /* the next node of an interleave */
	struct np_topo_policy policy; /* the task memory policy the thread follows */
	struct np_page *runs[NP_PCP_RUNS]; /* freed long runs of near nodes, oldest first */
	int nruns, run_pages;
	size_t run_missed;     /* the length of the last request the kept runs did not have */
	struct np_vmstat_diffs *st;
};

/* Threads homed on each dense node right now (exact; the `threads` statistic is the same
 * count through per-thread deltas). Changed only by np_pcp_count_thread, np_pcp_set_home and
 * np_pcp_fini. */
extern int np_pcp_threads[NP_MAX_NODES];

/* Prepares an empty cache for a thread homed on dense node `home` that follows policy pol
 * (NULL: the default). The thread is not counted on its node yet: np_pcp_count_thread. */
void np_pcp_init(struct np_pcp *pcp, int home, struct np_vmstat_diffs *st, const struct np_topo_policy *pol);
/* Counts the thread on its home node (placement does it under its lock, so that threads
 * placed at once see each other). */
void np_pcp_count_thread(struct np_pcp *pcp);
/* The thread leaves: its home node loses a thread (drain the cache first). */
void np_pcp_fini(struct np_pcp *pcp);
/* In a fork child: only the forking thread runs (survivor: its cache, or NULL when it has no
 * state), so the threads counted on each node become it alone, the statistic with them. */
void np_pcp_atfork_child(struct np_pcp *survivor);
/* Re-homes the cache: the target follows (np_node_target), near pages move to the head of each
 * list, the others to the tail, and the thread counts on its new node. */
void np_pcp_set_home(struct np_pcp *pcp, int home);
/* The thread follows policy pol from now on (it set another): the target and near mask
 * follow, as for a new home. */
void np_pcp_set_policy(struct np_pcp *pcp, const struct np_topo_policy *pol);

/* A run of 1 << order pages for a request intended for dense node `node` (-1: the thread's
 * target). The target's requests go through the cache; others go to that node's pool (and
 * its fallback order) directly. Counts hit/miss/foreign/local/other and pages in use. NULL
 * when no allowed node has memory left. */
struct np_page *np_pcp_get(struct np_pcp *pcp, unsigned order, int node);
/* A run of 1 << order pages back into the cache (head if near, tail if remote). */
void np_pcp_put(struct np_pcp *pcp, struct np_page *run);
/* Runs that are not cache-sized (any length, a page run of the page API or a large malloc):
 * a run of the same length the thread freed lately (NP_PCP_RUNS), else straight from the pools
 * along the fallback order, with the same accounting. */
struct np_page *np_pcp_get_run(struct np_pcp *pcp, size_t npages, size_t align_pages, int node);
void np_pcp_put_run(struct np_pcp *pcp, struct np_page *run);
/* Pages the library held for itself and no longer needs (an emptied slab's run), back as
 * np_pcp_put (pcp non-NULL, a cache size) or np_pcp_put_run would: out of pages_in_use, but
 * not counted as remote_free, which counts the program's frees (pcp may be NULL). */
void np_pcp_put_held(struct np_pcp *pcp, struct np_page *run);
/* Gives every cached run back to its pool (thread exit, trim). */
void np_pcp_drain(struct np_pcp *pcp);

/* Accounting shared with callers that place memory themselves (huge chunks): counts npages
 * served on dense node `served` for a request intended for `intended` (a node of the
 * thread's interleave is where it was intended: numa_hit and interleave_hit there, unless
 * named: the program named `intended` itself, numa_page_alloc_onnode). */
void np_pcp_count_alloc(struct np_pcp *pcp, int intended, int served, long npages, bool named);
/* True when pages of dense node `node` count as local to the pcp's thread (its near mask). */
NP_INLINE bool np_pcp_near(const struct np_pcp *pcp, int node)
{
	return (pcp->near >> node) & 1;
}
/* True when pages of dense node `node` are remote to the pcp's thread (pcp NULL: to the
 * calling thread's CPU). */
bool np_pcp_is_remote(const struct np_pcp *pcp, int node);
/* ... and npages of dense node `node` given back (pcp may be NULL: a thread without state). */
void np_pcp_count_free(struct np_pcp *pcp, int node, long npages);

/* Checks the lists (orders, states, count); NULL when sound, else what is wrong. */
const char *np_pcp_check(const struct np_pcp *pcp);

#endif /* NP_PCP_H */
