/*
 * home.h — a thread's home node as the thread moves, and the memory policy it follows as it sets
 * new ones. The scheduler moves threads that are not pinned; the home node follows the CPU,
 * noticed on the slow paths (a slab miss, a large block), where reading the CPU is one load
 * from the rseq area (np_os_current_cpu). On a move the page cache is re-homed (its pages of
 * the old node go to the tail and drain home), the fast path's byte counters are folded, and
 * the slabs of the old node leave the thread's rings for their node's orphans, so that its next
 * blocks of every class come from the new node within one slab miss, and large blocks at once.
 * A home set by numa_page_set_home_node (or a rehearsed placement) does not follow the CPU.
 */
#ifndef NP_HOME_H
#define NP_HOME_H

#include <stdbool.h>

#include "internal.h"
#include "malloc/thread.h"
#include "os.h"
#include "topology/topology.h"

/* Moves th (the calling thread's state) to dense node `node`. */
NP_NOINLINE void np_home_move(struct np_thread *th, int node);

/* The thread's memory policy (set_mempolicy(2), libnuma's numa_set_*) is read when its state
 * is made, and read again:
 *   - at its next slow path after it set one through the C wrapper (np_tls.policy_set), which
 *     the shared library wraps (set_mempolicy.c) where it comes before libnuma in the symbol
 *     search order (LD_PRELOAD, or -lnumapage before -lnuma): libnuma's numa_set_* calls reach
 *     the wrapper too; and after placement made its state before its start routine ran;
 *   - otherwise (a raw system call, a static link, libnuma first) at the first slow path
 *     NP_POLICY_LOOK_NS or more after the last read: every NP_POLICY_LOOK_EVERY'th slow path
 *     reads the clock, and every large block of NP_POLICY_LOOK_PAGES or more.
 * A new policy moves the thread's target as a new home does (its page cache's near pages to
 * the head, slabs of nodes no longer near leave its rings). A read is get_mempolicy(2): a
 * system call, never on a fast path. */
#define NP_POLICY_LOOK_NS (10 * 1000 * 1000ull)
#define NP_POLICY_LOOK_EVERY 8
#define NP_POLICY_LOOK_PAGES 256
/* A look: the policy read when it was set through the wrapper, or when the last read is
 * NP_POLICY_LOOK_NS old. */
NP_NOINLINE void np_home_look_policy(struct np_thread *th);

/* On every slow path: reads the policy the calling thread set since (a look every
 * NP_POLICY_LOOK_EVERY), and re-homes it when it runs on another node's CPU now. */
NP_INLINE void np_home_follow(struct np_thread *th)
{
	if (NP_UNLIKELY(np_tls.policy_set) || NP_UNLIKELY(++th->policy_calls >= NP_POLICY_LOOK_EVERY))
		np_home_look_policy(th);
	if (th->pcp.home_fixed)
		return;
	int node = np_topo_current_node(&np_topo_table);
	if (NP_UNLIKELY(node != th->pcp.home) && node >= 0)
		np_home_move(th, node);
}

/* numa_page_set_home_node: a fixed home (node >= 0, dense), or back to following the CPU
 * (node < 0). */
void np_home_set(struct np_thread *th, int node);

#endif /* NP_HOME_H */
