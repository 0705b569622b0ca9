/*
 * ring.h — a thread's slabs of each size class: a ring whose head is the current slab, the one
 * the malloc fast path pops from (mirrored in np_tls.cur). This module moves slabs in and out
 * of the rings: when the current slab is empty it finds a block in the others, in the orphans
 * of nearby nodes, or in a new slab; it lets full slabs float beyond the first few; it gives
 * back slabs that frees emptied (at once for the owner's frees, by a periodic sweep for other
 * threads'); it takes back a floating slab that the owner's own free claimed; and at thread
 * exit it hands every slab over. Everything runs on the owning thread, without a lock (the
 * orphan lists have theirs, in slab.c). Invariants: see np_ring_check().
 */
#ifndef NP_RING_H
#define NP_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "malloc/slab.h"
#include "malloc/thread.h"

/* Every this many slow paths of a thread (slab misses and large blocks), np_ring_periodic. */
#define NP_RING_PERIOD 64
/* A thread's periodic work: its current slabs counted, its byte counts folded, its rings swept
 * when other threads' frees may have emptied slabs, and the process's slow paths counted for
 * the orphans' sweep (which may run here). */
NP_NOINLINE void np_ring_periodic(struct np_thread *th);
/* On every slow path of th (the calling thread): the decay's look now and then
 * (np_thread_tick_decay), and np_ring_periodic every NP_RING_PERIOD. Large blocks count as
 * well as slab misses: a program whose only slow paths were large blocks never swept the
 * orphans an exited thread left, 300 MB of emptied slabs kept for good. */
NP_INLINE void np_ring_tick(struct np_thread *th)
{
	np_thread_tick_decay(th);
	if (NP_UNLIKELY(++th->slow_calls >= NP_RING_PERIOD))
		np_ring_periodic(th);
}
/* A block of class cls for thread th (the calling thread), after the fast path found the
 * current slab empty; NULL when no memory is left. */
void *np_ring_alloc(struct np_thread *th, unsigned cls);
/* The owner's free made used 0: a slab that is not current gives its pages back. */
NP_NOINLINE void np_ring_emptied(struct np_slab *s);
/* The decay of th's slabs, a step at every np_ring_periodic: once a NUMAPAGE_DECAY_MS period
 * a pass begins (when the last one is over), which gives back the free pages (np_slab_decay)
 * of the slabs that were not current and joined no ring of th since before the pass before
 * it, NP_DECAY_SLABS of them a step, NP_DECAY_LOOKS looked at, each step going on from the
 * slab where the last stopped; and a step of the orphans' decay (np_slab_decay_orphans). A
 * class's current slab is kept: its next malloc takes it. Returns the slabs of th's rings the
 * step looked at. */
unsigned np_ring_decay(struct np_thread *th);
/* Collects every slab of the rings and gives back the pages of those that other threads'
 * frees emptied (all but each class's current slab). Returns slabs released. */
unsigned np_ring_sweep(struct np_thread *th);
/* An allocation of th (the calling thread) is about to fail (no memory, or no address space
 * under RLIMIT_AS): what th holds and does not use goes back, so that the chunks it alone kept
 * can be unmapped: its cached blocks home, its empty slabs (current ones too), its page cache,
 * the orphans other threads emptied; then every mapping nobody uses
 * (np_pool_give_back_space). True when any of it went: try once more. */
bool np_ring_give_back(struct np_thread *th);
/* malloc_trim's part in th's rings: the free pages inside its slabs given back
 * (np_slab_purge_free). Returns the pages. */
size_t np_ring_purge(struct np_thread *th);
/* A free by th claimed floating slab s, which th itself had let go: back into th's ring,
 * behind the current slab, with the claiming free collected. */
void np_ring_take_back(struct np_thread *th, struct np_slab *s);
/* th (the calling thread) is about to free a block of s, an orphan that its owner's exit or
 * move left on th's first-choice node (np_slab_left_by_exit): th adopts s, into its ring behind
 * the current slab, when th allocates blocks of s's class (its ring of the class is not empty),
 * no other live thread does, and th came after that exit or is the only thread. True when th
 * owns s: the free, and th's later ones of s's blocks, are the owner's (mstress, whose threads
 * die while their objects live on: a third of its frees had been remote frees into such slabs).
 * Otherwise s stays on the orphan list for the malloc of whichever thread runs out first: taken
 * at the frees of one thread (the exited one's successor, or an older thread in the moments
 * before the successor's first malloc of the class), the slabs left the other none, and it made
 * new ones (mstress/2's peak RSS +18%). */
bool np_ring_adopt_on_free(struct np_thread *th, struct np_slab *s);
/* Thread exit: every slab collected; the empty ones give their pages back, the others become
 * orphans of their node, tagged with the exit's number (np_thread_exits, np_slab_exit_tag).
 * The rings are empty afterwards. */
void np_ring_abandon(struct np_thread *th);
/* The calling thread's state goes (thread exit, or a page API call after it): its byte counts
 * folded, its fast path emptied (np_thread_forget_tls), its slabs handed over
 * (np_ring_abandon), its page cache drained and its struct recycled (np_thread_release). */
void np_ring_leave(struct np_thread *th);
/* The thread moved to another node: every slab whose node is not in `near` (a bit per dense
 * node) leaves its ring, current slabs included, as an orphan of its node (empty ones too: the
 * orphan sweep gives those back; tagged as an exit's, number 0), so the next allocations of
 * each class come from near memory.
 * Returns how many left. */
unsigned np_ring_leave_far(struct np_thread *th, uint64_t near);
/* Takes the owner's mallocs and frees since the last count (slab `used` against `counted`,
 * and `requested`) into th's byte counters, for the current slab of every class (whose beats
 * restart: the periodic point) or, with `every`, for every slab of the rings (an exact read,
 * trim, fork; beats go on: a program that read its statistics often put off its slab misses,
 * and the decay they drive). Slabs that leave a ring are counted as they leave. */
void np_ring_count(struct np_thread *th, bool every);
/* Adds to bytes[node] what th's slabs hold and have not counted yet (np_ring_count), by the
 * slab's node: bytes in use (blocks times block size) when in_use, else bytes requested. Only
 * reads: in a fork's child, where each slab written would be a page copied (a thread that fork
 * left behind, and the forking one). The rings may be mid-change there, so each slab is added
 * once however the links run (ring_members); a slab being changed may be one block off. */
void np_ring_uncounted(const struct np_thread *th, bool in_use, int64_t bytes[NP_MAX_NODES]);
/* Walks th's rings (and its page cache); NULL when sound, else what is wrong. */
const char *np_ring_check(const struct np_thread *th);

#endif /* NP_RING_H */
