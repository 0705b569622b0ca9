/*
 * pool.h — one page pool per node with allowed memory: the free runs of that node's chunks,
 * binned by length, coalesced on return. A pool is split into shards (up to NP_POOL_SHARDS,
 * as many as the process has CPUs): each shard owns whole chunks, their free runs and a mutex
 * taken once per batch (not per page). A thread takes runs from its shard: the one of the CPU
 * it first took on, kept while the scheduler moves it, changed when it finds that shard's lock
 * taken or moves to another node; when that has none that fits, a wholly free chunk of another
 * shard moves over, and only then does its own shard grow: into the first granule of a freed
 * huge block the node's huge cache keeps resident (made a chunk in place, its pages reused), or
 * a chunk it maps (a node that may not grow, or
 * a process short of address space, borrows other shards' runs); a run always returns to the
 * shard of its chunk. So threads on different CPUs do not queue on one lock, nor write each
 * other's bins and page descriptors (jemalloc's arenas per CPU, per node here). Free memory goes back to
 * the OS (madvise) once a pool's shards hold more dirty free pages together than
 * NUMAPAGE_PURGE_MB plus the most pages the pool had in use in this decay period and the one
 * before (np_pool_purge_mark), and by time: a free run carries the
 * number of the decay period it was returned in, and when a period of NUMAPAGE_DECAY_MS ends, the dirty runs returned before it began
 * (free all through it: nobody needed them that long) go back; checked on returns and now and
 * then by the malloc slow path (jemalloc's dirty decay, without a background thread). A pool only ever
 * holds pages of its own node: memory never changes node.
 *
 * Freed huge chunks (allocations too large for a chunk) are kept by the node's huge cache
 * (pool/huge.h), with its own budget and lock.
 *
 * Lock: one per shard, rank NP_LOCK_RANK_POOL (lock.h), index the node: the innermost lock; a
 * thread holds at most one shard lock at a time (fork takes them all, in node and shard
 * order). The pool's files: pool.c (taking runs: bins, growth, shards), pool_return.c (runs
 * coming back, purge and trim). Invariants: see np_pool_check().
 */
#ifndef NP_POOL_H
#define NP_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "lock.h"
#include "pool/chunk.h"
#include "topology/topology.h"
#include "vmstat/vmstat.h"

/* Free runs of 1..NP_POOL_EXACT_BINS pages sit in exact bins; longer ones in the last bin. */
#define NP_POOL_EXACT_BINS 256
#define NP_POOL_BINS (NP_POOL_EXACT_BINS + 1)
/* Longest run a pool hands out; longer requests get a huge chunk of their own. */
#define NP_POOL_MAX_RUN NP_CHUNK_DATA_PAGES

/* Runs a purge takes out of a shard's bins at once, listed in the shard while it madvises. */
#define NP_POOL_PURGE_BATCH 32
struct np_pool_purge_batch {
	struct np_pool_purge_batch *next;
	unsigned n;
	struct np_page *runs[NP_POOL_PURGE_BATCH];
};

/* Shards per pool, at most (a power of two is not needed): a shard per CPU up to 64. With 8,
 * the CPUs of a 16-CPU machine shared each shard's lock two by two, which cost realloc-grow
 * x1.5 (docs/perf-issue15.md section 23). */
#define NP_POOL_SHARDS 64

struct np_pool_shard {
	struct np_lock *lock;        /* rank NP_LOCK_RANK_POOL, index node; on the lock page */
	int node;                    /* dense node index */
	uint8_t index;               /* this shard's place in its pool */
	unsigned grow_backoff;       /* growth attempts to skip after the kernel refused one */
	size_t free_pages;           /* pages in free runs (racy reads allowed: a hint) */
	size_t dirty_pages;          /* free pages that may be resident (an upper bound) */
	/* Batches of runs out of the bins for a purge's madvise (the lock dropped; each on its
	 * purging thread's stack): a fork's child, where those threads do not exist, puts them
	 * back. */
	struct np_pool_purge_batch *purging;
	/* What dirty_pages was when last folded into the pool's dirty_approx (at an unlock: pool.c). */
	size_t dirty_folded;
	size_t mapped_pages;         /* data pages of this shard's chunks */
	size_t purging_pages;        /* pages of the runs listed in `purging` */
	/* Pages of this shard's chunks in use (mapped, not free, not out for a purge) when last
	 * folded into the pool's used_approx (at an unlock, as dirty_folded). */
	size_t used_folded;
	struct np_chunk *chunks;     /* this shard's normal chunks */
	/* Under the lock: the last take found a run but the kernel refused to commit its pages
	 * (np_chunk_commit): no memory, so the shard does not grow for it, and takes again only
	 * among pages already committed (committed_only). */
	bool no_commit, committed_only;
	uint64_t bin_mask[(NP_POOL_BINS + 63) / 64];
	/* NP_POOL_BINS lists, kept apart from the shards (pool.c): a pool's shards are a few pages,
	 * and a shard's bins are written only once it holds a run (with the bins in the shards,
	 * setting up 64 of them made 144 KiB resident at start-up). */
	struct np_page **bins;
} NP_ALIGNED(NP_CACHELINE);

struct np_pool {
	int node;                    /* dense node index */
	bool exists;                 /* the node has allowed memory */
	unsigned nshards;            /* shards in use, 1..NP_POOL_SHARDS */
	unsigned shards_used;        /* shards any np_pool_init set up: those past it were never written */
	size_t mapped_pages;         /* data pages of all chunks (relaxed atomic) */
	size_t mapped_peak;          /* the most mapped_pages has been (relaxed atomic) */
	size_t limit_pages;          /* the node's memory size (a hint for placement, not a cap) */
	uint8_t spilled;             /* a chunk mapped for the node landed elsewhere (np_pool_note_spill) */
	uint8_t low;                 /* the node is nearly full: verify new chunks page by page (np_pool_set_low) */
	uint64_t decay_began;        /* relaxed atomic: np_os_clock_ns when the decay period began
					(0: none yet) */
	uint64_t decay_period;       /* relaxed atomic: the period's number, stamped (mod 256) on
					every run returned in it */
	/* The shards' dirty pages as they last folded them (a shard folds at an unlock when its count
	 * has moved more than dirty_step from what it folded), so the node's dirty pages are within
	 * dirty_approx plus dirty_step per shard: a return sums the shards' own counts (a line of
	 * another CPU each) only when that bound passes NUMAPAGE_PURGE_MB (np_pool_dirty_may_pass).
	 * dirty_step is the option over twice the shards. On a line of its own: it is written by
	 * every shard, the line above is read by every take. Relaxed atomic. */
	size_t dirty_step;
	size_t dirty_approx NP_ALIGNED(NP_CACHELINE);
	/* The pages in use the same way (each shard folds its pages in use, mapped and not free
	 * nor out for a purge, by the same step), and the most that total reached in a decay
	 * period: slot period % 2 for the period under way, the other for the one before when its
	 * stamp says so (np_pool_used_pages: the purge watermark's recent peak). A slot is one word,
	 * the period's number (mod 2^32) above the pages (capped at 2^32 - 1), raised by a
	 * compare-and-swap at a fold that passes it and when a period begins (what a program holds
	 * through a period is a peak of it too); every period's start writes its slot, so no stamp
	 * is older than the period before. The node's peak, not a sum of the shards' own: threads on
	 * several CPUs take from each one's shard, and the shards' peaks summed
	 * kept 4,800 pages against a real peak of 608 (a helper's review). Within half the option
	 * of the real peak either way: each shard may hold a step it has not folded (up or down).
	 * Relaxed atomics. */
	size_t used_approx;
	uint64_t peak[2];
	struct np_pool_shard shard[NP_POOL_SHARDS];
};

extern struct np_pool np_pools[NP_MAX_NODES];

/* The kernel put the first page of a chunk mapped for `node` on another node: the node is
 * full. A flag the node layer takes (np_pool_take_spill) to pass over the node for a while. */
NP_INLINE void np_pool_note_spill(int node)
{
	__atomic_store_n(&np_pools[node].spilled, 1, __ATOMIC_RELAXED);
}
/* The node layer's judgement that the node is nearly full (racy hint): its new chunks are
 * faulted in and checked when mapped (np_chunk_map). */
NP_INLINE void np_pool_set_low(int node, bool low)
{
	if (__atomic_load_n(&np_pools[node].low, __ATOMIC_RELAXED) != low)
		__atomic_store_n(&np_pools[node].low, low, __ATOMIC_RELAXED);
}
NP_INLINE bool np_pool_is_low(int node)
{
	return __atomic_load_n(&np_pools[node].low, __ATOMIC_RELAXED);
}
NP_INLINE bool np_pool_take_spill(int node)
{
	uint8_t *f = &np_pools[node].spilled;
	return __atomic_load_n(f, __ATOMIC_RELAXED) && __atomic_exchange_n(f, 0, __ATOMIC_RELAXED);
}

/* Sets up one pool per node with allowed memory of the frozen topology. */
void np_pool_init(const struct np_topo *t);

/* Up to n runs of exactly 1 << order pages from node's pool, in one lock hold, growing the
 * pool by a chunk if it is empty and grow allows (the node layer's room check said the node
 * can take more). Without grow, only runs whose pages are all resident: a page never touched
 * or purged would fault in wherever the kernel finds room then (pool.c: get_runs). Returns
 * how many were stored in out[]. Runs come back with state NP_PAGE_USED and their order set.
 * st: the caller's statistics deltas (may be NULL). */
int np_pool_get_batch(int node, unsigned order, int n, struct np_page **out, struct np_vmstat_diffs *st, bool grow);
/* One run of npages (<= NP_POOL_MAX_RUN) whose address is aligned to align_pages (a power of
 * two), growing the pool when no free run fits and grow allows (without it, resident runs
 * only, as for np_pool_get_batch); NULL when the node gives
 * none, or at once when no chunk could hold it at that alignment (the caller maps it as a huge
 * chunk instead). */
struct np_page *np_pool_get_run(int node, size_t npages, size_t align_pages, struct np_vmstat_diffs *st, bool grow);
/* The calling thread takes its runs from the shard of the CPU it runs on at its next take,
 * and keeps that shard while it moves between CPUs (pool.c: home_shard): for a thread moved to
 * another node (malloc/home.c). */
void np_pool_rehome_thread(void);
/* Up to n such runs in one lock hold (growing only when empty-handed); how many were stored in
 * out[]. */
int np_pool_get_runs(int node, size_t npages, size_t align_pages, int n, struct np_page **out,
		     struct np_vmstat_diffs *st, bool grow);
/* Returns runs (of any nodes and lengths) to their own nodes' pools, one lock hold per node,
 * and purges a pool that passed its watermark or its decay period. Consumes runs[]: every slot
 * is set to NULL. */
void np_pool_put_batch(struct np_page **runs, int n, struct np_vmstat_diffs *st);
void np_pool_put_run(struct np_page *run, struct np_vmstat_diffs *st);
/* Grows a run handed out by np_pool_get_run in place to new_npages by taking the free run
 * right behind it; false (nothing changed) when that run is not free or too short. */
bool np_pool_grow_run(struct np_page *run, size_t new_npages, struct np_vmstat_diffs *st);
/* Gives dirty free pages of node's pool back to the OS (madvise) until at most keep_pages
 * remain dirty, largest runs first. The system calls are made outside the lock. Returns pages
 * given back. */
size_t np_pool_purge(int node, size_t keep_pages, struct np_vmstat_diffs *st);

/* The decay of every node's pool whose period has ended (the returns check their own node's):
 * the malloc slow path calls it now and then, so that a program whose frees stay in its
 * threads' caches still gives back what its pools kept unused. */
void np_pool_decay(struct np_vmstat_diffs *st);

/* malloc_trim's part: every free run of the pool's chunks given back to the OS, clean ones
 * included (transparent huge pages may have backed them), but only the pages that were dirty
 * (np_pool_run_dirty's estimate) counted in pages_purged: a trim with nothing dirty adds 0.
 * Returns the pages known to have been resident (dirty runs), malloc_trim's answer. */
size_t np_pool_trim(int node, struct np_vmstat_diffs *st);
/* Unmaps node's normal chunks that hold nothing (each one free run): their address space goes
 * back to the kernel (their pages too). Returns the chunks unmapped. */
size_t np_pool_unmap_free_chunks(int node, struct np_vmstat_diffs *st);
/* A mapping failed for want of address space: gives back what the pools keep mapped and
 * unused, every node's cached huge chunks and empty normal chunks (under `ulimit -v`, a
 * program that freed 200 MB of small blocks could not get a 100 MB block: the chunks stayed
 * mapped). True when anything went back, so that the mapping is worth trying once more. */
bool np_pool_give_back_space(struct np_vmstat_diffs *st);

/* Pages in node's free runs, and of those the ones that may be resident, over its shards
 * (racy reads: hints, and exact when no other thread uses the pool). */
size_t np_pool_free_pages(int node);
size_t np_pool_dirty_pages(int node);
/* False when node's dirty free pages are surely within NUMAPAGE_PURGE_MB (the pool's folded
 * total, one load); true when they may be past it, which np_pool_dirty_pages then tells. */
bool np_pool_dirty_may_pass(int node);

/* The dirty free pages node's pool may keep before a return purges it (pool_return.c). */
size_t np_pool_purge_mark(int node);
/* Pages of node's chunks in use (not free, not out for a purge), over its shards: *now, and
 * *recent, the larger of *now and the node's most in use in this decay period and the one
 * before (np_pool.peak: folded by steps, so within half the option either way). Racy reads:
 * hints, exact when no other thread uses the pool. */
void np_pool_used_pages(int node, size_t *now, size_t *recent);

/* Pages mapped and free over all pools (racy reads: mallinfo2's answer). */
void np_pool_totals(size_t *mapped_pages, size_t *free_pages);
/* One node's pool: its data pages mapped now and at most since start-up, and those free. False
 * (and zeros) for a node without a pool. Racy reads, as np_pool_totals (malloc_info's answer). */
bool np_pool_node_totals(int node, size_t *mapped_pages, size_t *mapped_peak, size_t *free_pages);

/* fork(): hold every pool lock across the fork, release (parent) or re-create (child). */
void np_pool_atfork_prepare(void);
void np_pool_atfork_parent(void);
void np_pool_atfork_child(void);

/* Walks every free run of a pool; NULL when sound, else what is wrong. Takes the lock. */
const char *np_pool_check(int node);

#endif /* NP_POOL_H */
