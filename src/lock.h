/*
 * lock.h — the library's mutexes, each with a rank: the lock order written as code. A thread
 * may take a lock only when it holds none of a higher rank, nor one of the same rank at the
 * same or a higher index (the per-node locks of one rank are taken in node order, as fork
 * does). At debug_level >= 2 every acquisition checks that (jemalloc's witness is the model);
 * other builds compile the check away. Held locks are one bit each in a thread-local mask per
 * rank, so the check costs a few instructions and any release order is fine. Layer 0: nothing
 * of the project below it but internal.h.
 *
 * The order, outermost first (fork_prepare in malloc/init.c takes them all in this order):
 */
#ifndef NP_LOCK_H
#define NP_LOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

enum np_lock_rank {
	NP_LOCK_RANK_PLACE = 0,   /* malloc/place.c: thread placement choices */
	NP_LOCK_RANK_VMSTAT = 1,  /* vmstat/vmstat.c: the registry of live threads' deltas */
	NP_LOCK_RANK_THREADS = 2, /* malloc/thread.c: the live and recycled thread structs */
	NP_LOCK_RANK_ORPHANS = 3, /* malloc/slab.c: one orphan list per node */
	NP_LOCK_RANK_POOL = 4,    /* pool/pool.c: one page pool per node */
	NP_LOCK_RANK_HUGE = 5,    /* pool/huge.c: one cache of freed huge chunks per node */
	NP_LOCK_RANKS
};

/* A line each: locks side by side (the lock page, below) are taken by threads of different
 * CPUs, and must not share a line. */
struct np_lock {
	pthread_mutex_t mutex;
	uint8_t rank;  /* enum np_lock_rank */
	uint8_t index; /* order within the rank (a node index), < 64 */
} NP_ALIGNED(NP_CACHELINE);

/* A lock with static storage: struct np_lock l = NP_LOCK_INITIALIZER(NP_LOCK_RANK_..., 0). */
#define NP_LOCK_INITIALIZER(rank, index) {PTHREAD_MUTEX_INITIALIZER, (rank), (index)}

/*
 * Every lock fork takes, on as few pages as the machine allows. fork_prepare takes them all;
 * after the fork the parent releases them while its child still shares their pages, and the
 * child re-creates them: each page they lie on is copied twice at every fork of a program with
 * threads. Kept in their modules' tables, they lay on five pages: ten page faults a fork
 * (docs/perf-issue15.md section 45). The locks with static storage and the start-up
 * allocator's spin lock are fields of the page; the per-node locks (orphan lists, pool shards,
 * huge caches) are handed out by np_lock_new in the order their modules set them up, on the
 * page while it has room (a machine of up to 60 such locks: two nodes of 28 CPUs), past it
 * after.
 */
#define NP_LOCK_PAGE_SLOTS 60
struct np_lock_page {
	struct np_lock place;   /* malloc/place.c */
	struct np_lock vmstat;  /* vmstat/vmstat.c: the registry */
	struct np_lock threads; /* malloc/thread.c */
	struct np_lock slot[NP_LOCK_PAGE_SLOTS];
	int bootstrap;          /* malloc/bootstrap.c's spin lock (0: free) */
} NP_ALIGNED(4096);
/* In BSS, not data: a page of data with the locks' initialisers made 12 KiB more of the
 * library's data resident at start-up. All zeros is an unlocked mutex (PTHREAD_MUTEX_INITIALIZER);
 * the fixed locks' ranks are read from their places (np_lock_rank) until np_lock_init writes
 * them. */
extern struct np_lock_page np_lock_page;

/* l's rank: the page's fixed locks' from their places (zero in BSS, as set up by nobody). */
NP_INLINE unsigned np_lock_rank(const struct np_lock *l)
{
	if (l == &np_lock_page.vmstat)
		return NP_LOCK_RANK_VMSTAT;
	if (l == &np_lock_page.threads)
		return NP_LOCK_RANK_THREADS;
	return l->rank; /* place: rank 0, index 0, as in BSS */
}

/* A lock for good (never given back), set up as np_lock_init does. A module keeps the ones it
 * got across a second set-up of its tables (tests load several topologies): there are slots
 * for every per-node lock of NP_MAX_NODES nodes once each. */
struct np_lock *np_lock_new(enum np_lock_rank rank, int index, bool adaptive);
/* A module's set-up of its lock *l: np_lock_new the first time, np_lock_init after. */
void np_lock_setup(struct np_lock **l, enum np_lock_rank rank, int index, bool adaptive);

/* adaptive: a waiter spins briefly before it sleeps (PTHREAD_MUTEX_ADAPTIVE_NP), for locks
 * held for a few list operations. Also re-creates a lock in a fork child (the calling thread
 * then no longer holds it). */
void np_lock_init(struct np_lock *l, enum np_lock_rank rank, int index, bool adaptive);
/* In a fork child: np_lock_init, unless the mutex is free (nobody held it at the fork: fork
 * took no lock, the process having one thread), which is left as it is: a write copies its
 * page in the child (three of its page faults at every fork of a one-thread program). Free is
 * read from glibc's mutex; with another C library the lock is always re-created. */
void np_lock_atfork_child(struct np_lock *l, enum np_lock_rank rank, int index, bool adaptive);

/* The calling thread's held locks, by rank (bit = index). */
extern NP_TLS uint64_t np_lock_held[NP_LOCK_RANKS];
/* Locks the calling thread holds or is taking, in every build (np_lock_held is debug only),
 * the start-up allocator's spin lock included. fork_prepare takes none while it is not zero: a
 * signal handler's fork that interrupted this thread inside the allocator would wait for it
 * (with the library's background thread beside the program's one, a hang at every such fork).
 * Raised before a take, lowered after a release: never below what the thread holds. */
extern NP_TLS unsigned np_lock_depth;

NP_INLINE void np_lock_depth_add(int d)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	np_lock_depth += (unsigned)d;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* Checks that taking l keeps the order. */
NP_COLD void np_lock_order_broken(const struct np_lock *l);

NP_INLINE void np_lock_check(const struct np_lock *l)
{
	if (np_config_debug < 2)
		return;
	for (int r = (int)np_lock_rank(l) + 1; r < NP_LOCK_RANKS; r++)
		if (np_lock_held[r])
			np_lock_order_broken(l);
	if (np_lock_held[np_lock_rank(l)] >> l->index)
		np_lock_order_broken(l);
}

NP_INLINE void np_lock_note(const struct np_lock *l, bool held)
{
	if (np_config_debug < 2)
		return;
	if (held)
		np_lock_held[np_lock_rank(l)] |= 1ULL << l->index;
	else
		np_lock_held[np_lock_rank(l)] &= ~(1ULL << l->index);
}

NP_INLINE void np_lock(struct np_lock *l)
{
	np_lock_check(l);
	np_lock_depth_add(1);
	pthread_mutex_lock(&l->mutex);
	np_lock_note(l, true);
}

/* Takes l while the caller holds a lock of the same rank and index: the next shard of a pool
 * (pool.h), which only fork takes together with the others, in shard order. */
NP_INLINE void np_lock_nested(struct np_lock *l)
{
	np_lock_depth_add(1);
	pthread_mutex_lock(&l->mutex);
	np_lock_note(l, true);
}

/* True when it took the lock without waiting. */
NP_INLINE bool np_trylock(struct np_lock *l)
{
	np_lock_check(l);
	np_lock_depth_add(1);
	if (pthread_mutex_trylock(&l->mutex) != 0) {
		np_lock_depth_add(-1);
		return false;
	}
	np_lock_note(l, true);
	return true;
}

NP_INLINE void np_unlock(struct np_lock *l)
{
	np_lock_note(l, false);
	pthread_mutex_unlock(&l->mutex);
	np_lock_depth_add(-1);
}

/* For functions named *_locked: the caller must hold l (checked at debug_level >= 2). */
NP_INLINE void np_assert_locked(const struct np_lock *l)
{
	if (np_config_debug >= 2 && !((np_lock_held[np_lock_rank(l)] >> l->index) & 1))
		np_fatal("lock: a _locked function called without its lock (rank %u, index %d)", np_lock_rank(l), l->index);
}

/* In a fork child: only the forking thread survives, and every lock is re-created. */
void np_lock_forget_all(void);

#endif /* NP_LOCK_H */
