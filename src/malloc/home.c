/*
 * home.c — a thread's home node as the thread moves (see home.h). Runs on the owning thread.
 */
#include "malloc/home.h"

#include "malloc/cache.h"
#include "malloc/ring.h"
#include "node/node.h"
#include "pcp/pcp.h"
#include "pool/pool.h"

void np_home_move(struct np_thread *th, int node)
{
	/* The cache holds blocks of count_node, and the remote frees' byte counter counts them:
	 * empty the one and fold the other before it changes. */
	if (th == np_tls.self)
		np_cache_flush();
	np_thread_fold_bytes(th);
	np_pcp_set_home(&th->pcp, node);
	if (th == np_tls.self) {
		np_tls.count_node = (uint8_t)np_node_primary(th->pcp.target);
		np_pool_rehome_thread();
	}
	np_ring_leave_far(th, th->pcp.near);
}

void np_home_set(struct np_thread *th, int node)
{
	if (node < 0) {
		th->pcp.home_fixed = false;
		np_home_follow(th);
		return;
	}
	if (node != th->pcp.home)
		np_home_move(th, node);
	th->pcp.home_fixed = true;
}
