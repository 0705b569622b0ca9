/*
 * home.h — a thread's home node as the thread moves. The scheduler moves threads that are not
 * pinned; the home node follows the CPU, noticed on the slow paths (a slab miss, a large
 * block), where reading the CPU is one load from the rseq area (np_os_current_cpu). On a move
 * the page cache is re-homed (its pages of the old node go to the tail and drain home), the
 * fast path's byte counters are folded, and the slabs of the old node leave the thread's rings
 * for their node's orphans, so that its next blocks of every class come from the new node
 * within one slab miss, and large blocks at once. A home set by numa_page_set_home_node (or a
 * rehearsed placement) does not follow the CPU.
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

/* On every slow path: re-homes the calling thread when it runs on another node's CPU now. */
NP_INLINE void np_home_follow(struct np_thread *th)
{
	if (th->pcp.home_fixed)
		return;
	int node = np_topo_cpu_node(&np_topo_table, np_os_current_cpu());
	if (NP_UNLIKELY(node != th->pcp.home) && node >= 0)
		np_home_move(th, node);
}

/* numa_page_set_home_node: a fixed home (node >= 0, dense), or back to following the CPU
 * (node < 0). */
void np_home_set(struct np_thread *th, int node);

#endif /* NP_HOME_H */
