/*
 * thread.h — a thread's allocator state. The fast paths touch only np_tls, a small
 * initial-exec thread-local block (no allocation, no lazy TLS call): the current slab of every
 * class and a pointer to the thread's np_thread. np_tls starts with every class on
 * np_slab_empty and self == NULL, so the first malloc of a thread misses and initialises it in
 * the slow path. struct np_thread (the page cache, the statistics deltas, the slab rings) lives
 * in pages of the thread's node and is recycled, never unmapped, so a stale owner pointer in a
 * slab never points at unmapped memory.
 *
 * Lock: threads_lock guards the live list and the recycle list. The slab rings are ring.c's
 * (invariants: np_ring_check()).
 */
#ifndef NP_THREAD_H
#define NP_THREAD_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "malloc/sizeclass.h"
#include "malloc/slab.h"
#include "pcp/pcp.h"
#include "vmstat/vmstat.h"

struct np_tls {
	struct np_slab *cur[NP_NCLASSES]; /* current slab per class (== self->ring[c]) */
	/* The thread's cache of its own freed blocks of the classes from NP_CACHE_FIRST on
	 * (cache.h): per class the head of a stack, last freed first, and its length. */
	uintptr_t cache[NP_NCLASSES - NP_CACHE_FIRST];
	uint8_t cache_n[NP_NCLASSES - NP_CACHE_FIRST];
	struct np_thread *self;           /* NULL until the thread's first slow path */
	/* Bytes of blocks of node count_node (the thread's first-choice memory node) that this
	 * thread freed for other threads' slabs, next to self: the remote free touches no other
	 * line for them (mstress, whose random object accesses evict everything else, paid for
	 * the thread struct's line and page on every call). Blocks of other nodes count in
	 * self->in_use. Folded into that by np_thread_fold_bytes. The owner's own mallocs and
	 * frees count in the slab (`used`, `requested`: np_ring_count). */
	int64_t in_use;
	/* Bytes asked for by mallocs served from the cache (blocks of count_node), folded with
	 * in_use into the thread's requested[count_node]. */
	uint64_t requested;
	uint32_t cache_popped;            /* bit k: malloc took from class NP_CACHE_FIRST + k since the
					   * last periodic point (np_cache_age) */
	uint16_t cache_streak;            /* pushes since the last malloc of a cached class (cache.h) */
	uint8_t count_node;
	bool exited;                      /* the thread-exit destructor ran */
	uint16_t frees_without_state;     /* np_thread_for_free: frees before a state is made */
	bool place_at_start;              /* thread_start.c: placing a thread that inherited its mask */
	bool never_place;                 /* thread_start.c: its attributes carried an affinity, or it was
					   * created while placement was off */
	uint8_t placed_mask;              /* placement set this thread's affinity to the CPUs of node
					   * placed_mask - 1 (0: it did not): np_place_mask_chosen */
	bool policy_set;                  /* set_mempolicy.c: it set its memory policy (or thread_start.c
					   * placed it) since the policy was read: read it again (home.h) */
};

extern NP_TLS struct np_tls np_tls;

struct np_thread {
	/* Bytes counted by the slabs (np_ring_count) and remote frees, by the dense node of the
	 * slab (its memory's node, which for a thread of a memoryless node is not its home), folded
	 * into the statistics by the slow path: block bytes handed out minus freed, and bytes
	 * requested. Here rather than in np_tls, which stays small: initial-exec TLS must fit the
	 * static TLS surplus when the library is dlopen()ed. */
	int64_t in_use[NP_MAX_NODES];
	uint64_t requested[NP_MAX_NODES];
	struct np_pcp pcp;
	struct np_slab *ring[NP_NCLASSES];   /* owned slabs of each class, a ring; NULL = none */
	struct np_thread *next, *prev;        /* live list */
	int tid;
	struct np_tls *tls;                   /* its thread's np_tls (read by a fork's child) */
	unsigned slow_calls;                  /* slow paths since the last np_ring_periodic */
	unsigned decay_calls;                 /* slow paths since the pools' decay was checked */
	/* Slab misses left before slabs of a node it fell back to are passed over again: a new
	 * slab came from such a node although its own node could serve one (ring.c: spilled). */
	unsigned spill_hold;
	/* The decay of its slabs (np_ring_decay): when its pass began (np_os_clock_ns; 0: none
	 * yet), how many began (mod 256: slabs carry the count), and where the pass is: the class,
	 * and the slab of its ring the next step looks at first (NULL: the one after the current
	 * one). A slab that leaves the ring moves decay_at on to its successor (ring.c). */
	uint64_t decay_began;
	/* np_os_clock_ns until which it takes no decay step (ring.c: DECAY_REST). */
	uint64_t decay_rest_until;
	/* np_os_clock_ns from which a look reads its memory policy again, and slow paths since
	 * the last look (home.h). */
	uint64_t policy_look_at;
	unsigned policy_calls;
	uint8_t decay_passes;
	uint8_t decay_class;
	struct np_slab *decay_at;
	/* Full slabs this thread let float, and how many of those other threads' frees claimed
	 * (from claimed_away), since the ring last judged them; keep_more: it keeps more full
	 * slabs (ring.c, KEEP_FULL_CLAIMED). */
	unsigned floats, floats_away;
	bool keep_more;
	size_t struct_pages;
	uint64_t born_exits;                  /* np_thread_exits when this state was made */
	/* Set by another thread whose free made one of our slabs' remote lists non-empty: only
	 * then can a sweep find a slab emptied behind our back. On a line of its own, with
	 * claimed_away, the fields other threads write. */
	int remote_pending NP_ALIGNED(NP_CACHELINE);
	/* Added to by a thread whose free claimed a slab this one let float (free.c): a hint. */
	unsigned claimed_away;
	struct np_vmstat_diffs st NP_ALIGNED(NP_CACHELINE); /* last: large */
};

/* Slow paths (slab misses and large allocations) between two looks at the pools' decay. */
#define NP_DECAY_CHECK_EVERY 64

/* The decay's look now: the pools whose decay period ended give back what stayed free
 * (np_pool_decay: a coarse clock read when nothing is due), and the count to the next look
 * begins again. At once for a slow path that is rare by itself (ring.c: a slab miss the beat
 * made due). */
NP_INLINE void np_thread_decay_now(struct np_thread *th)
{
	th->decay_calls = 0;
	np_pool_decay(&th->st);
}

/* A slow path: the decay's look every NP_DECAY_CHECK_EVERY of them. */
NP_INLINE void np_thread_tick_decay(struct np_thread *th)
{
	if (NP_UNLIKELY(++th->decay_calls >= NP_DECAY_CHECK_EVERY))
		np_thread_decay_now(th);
}

/* Threads the allocator has given state to since start-up (a fork's child keeps the count). */
extern int np_threads_seen;
/* Threads whose exit handed their slabs over (np_ring_abandon), since start-up. */
extern NP_HIDDEN uint64_t np_thread_exits;
/* Threads with state now (the live list's length; written under its lock, read relaxed). */
extern NP_HIDDEN int np_threads_live;

/* The calling thread's state, created on first use; NULL while the allocator is not ready
 * (start-up: the caller serves from the bootstrap arena) or when no memory is left. */
struct np_thread *np_thread_get(void);
/* The last of a thread's exit (its slabs already handed over, ring.c): drains the page cache,
 * folds the statistics, recycles the struct. */
void np_thread_release(struct np_thread *th);
/* The calling thread leaves: its fast path sees no state any more (every class on
 * np_slab_empty, self NULL) and a later free by it counts without state (exited). */
void np_thread_forget_tls(void);
/* Folds the fast path's byte counters into the statistics. */
void np_thread_fold_bytes(struct np_thread *th);
/* Creates the thread-exit key, whose destructor (init.c) gets each thread's struct. */
void np_thread_init_key(void (*on_exit)(void *));
/* The freeing thread's state, or NULL: the caller then counts in the shared statistics (an
 * atomic add). A thread that only frees (a consumer) gets one at its NP_FREES_BEFORE_STATE-th
 * free, so that its counts go to its own deltas; never once its exit handler ran. Not at its
 * first: a detached thread that never allocated frees blocks after its TSD destructors ran
 * (glibc frees the DTVs of the stacks it drops from its cache there), and a state made then
 * has no exit handler left to give it back: each such exit kept one, for good. The frees of a
 * thread's exit are a few; a consumer's are many. */
#define NP_FREES_BEFORE_STATE 256
NP_INLINE struct np_thread *np_thread_for_free(void)
{
	struct np_thread *th = np_tls.self;
	if (th || np_tls.exited)
		return th;
	if (np_tls.frees_without_state < NP_FREES_BEFORE_STATE) {
		np_tls.frees_without_state++;
		return NULL;
	}
	return np_thread_get();
}

/* fork */
/* In the child, before the statistics deltas fold or drop their events (np_vmstat_fork_hook),
 * writing no slab and no left-behind thread (each page written is a copy): the surviving
 * thread's counted requests are dropped and its slabs' uncounted ones become a debt of its
 * requested counter; the bytes in use of the threads that did not come along (their slabs',
 * their counters', as np_ring_uncounted reads them) go into the totals. What the others had
 * counted for other threads' blocks they freed, in their own thread-local counter, is lost: at
 * most REMOTE_FOLD_BYTES each (free.c). */
void np_thread_atfork_count(void);
void np_thread_atfork_prepare(void);
void np_thread_atfork_parent(void);
void np_thread_atfork_child(void);

#endif /* NP_THREAD_H */
