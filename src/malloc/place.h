/*
 * place.h — node-aware placement of new threads (opt-in: NUMAPAGE_PLACE, numapage run --place,
 * numa_page_thread_place). The shared library places every new thread as it starts
 * (thread_start.c wraps pthread_create), the main thread at its first allocation, and a static
 * link every thread at its first allocation. `spread` homes a thread on the allowed node with
 * CPUs that has the fewest threads (ties: most free memory nearby, then lowest id), `fill`
 * fills one node's CPUs before the next; its CPU affinity is set to that node's allowed CPUs.
 * A thread the program pinned (an affinity in its attributes, which the wrapper marks, or a
 * mask it did not inherit that is narrower than the process's CPUs; in a rehearsal, other than
 * the process's real mask at start-up) is left alone, and affinity a thread sets later is
 * respected (the home node then follows its CPU). In a rehearsal (a fixture topology) the
 * home node is set without touching the real affinity.
 *
 * Lock: place_lock serialises choices, so threads starting together spread.
 */
#ifndef NP_PLACE_H
#define NP_PLACE_H

#include <stdbool.h>

#include "internal.h"

/* The home node (dense) for a thread starting now, after pinning it there; -1 when the
 * policy is none or the program pinned the thread itself (a mask narrower than the process's
 * CPUs, unless inherited_mask says the thread only inherited its creator's: thread_start.c). *fixed: the home must not follow
 * the CPU (rehearsals). A non-negative result must be followed by np_place_done(node, pcp),
 * which counts the thread on its node. */
int np_place_new_thread(bool *fixed, bool inherited_mask);
/* At start-up, once: the process's CPU mask, against which a rehearsal judges a thread's. */
void np_place_init(void);
/* The thread placed on `node` is counted there now: np_pcp_count_thread(pcp) under the
 * placement lock (pcp NULL: it got no state, and is not counted). */
struct np_pcp;
void np_place_done(int node, struct np_pcp *pcp);
/* fork: place_lock is the outermost allocator lock. */
void np_place_atfork_prepare(void);
void np_place_atfork_parent(void);
void np_place_atfork_child(void);
/* The policy in force (enum np_place_policy): the option `place` (NUMAPAGE_PLACE, or the last
 * numa_page_thread_place or numa_page_option_set). */
int np_place_policy(void);
/* Whether the calling thread's CPU mask is one the program chose: other than the machine's
 * allowed CPUs, and not the one placement gave it (the CPUs of node placed_node; -1: it gave
 * none; NP_PLACE_CREATOR_UNKNOWN: the thread's own mask, inherited from a creator it does not
 * know, as in a static link: the CPUs of any node placement gave some thread count as placement's,
 * though a program may have chosen exactly those); in a rehearsal, whose CPUs are not the real ones, other than the process's real mask
 * at start-up (a count alone missed a thread pinned under `taskset -c 0`, or to as many other
 * CPUs: a review). The pthread_create wrapper asks it of the creator: a thread that inherits a
 * chosen mask is the program's to place. */
#define NP_PLACE_CREATOR_UNKNOWN (-2)
bool np_place_mask_chosen(int placed_node);

#endif
