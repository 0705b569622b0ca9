/*
 * home.c — a thread's home node as the thread moves, and its memory policy (see home.h). Runs
 * on the owning thread.
 */
#include "malloc/home.h"

#include "malloc/cache.h"
#include "malloc/ring.h"
#include "node/node.h"
#include "os.h"
#include "pcp/pcp.h"
#include "pool/pool.h"

/* Before th's target changes: the cache holds blocks of count_node, and the remote frees'
 * byte counter counts them: empty the one and fold the other. */
static void before_retarget(struct np_thread *th)
{
	if (th == np_tls.self)
		np_cache_flush();
	np_thread_fold_bytes(th);
}

/* After: the fast path counts for the new target, and slabs of nodes no longer near leave. */
static void after_retarget(struct np_thread *th)
{
	if (th == np_tls.self)
		np_tls.count_node = (uint8_t)np_node_primary(th->pcp.target);
	np_ring_leave_far(th, th->pcp.near);
}

void np_home_move(struct np_thread *th, int node)
{
	before_retarget(th);
	np_pcp_set_home(&th->pcp, node);
	if (th == np_tls.self)
		np_pool_rehome_thread();
	after_retarget(th);
}

/* The thread's policy read now (get_mempolicy), and followed when it changed. */
static void read_policy(struct np_thread *th)
{
	np_tls.policy_set = false;
	th->policy_look_at = np_os_clock_ns() + NP_POLICY_LOOK_NS;
	if (!np_topo_table.is_system) /* a rehearsal's nodes are not the kernel's: never read */
		return;
	struct np_topo_policy pol;
	np_node_policy(&pol);
	struct np_pcp *pcp = &th->pcp;
	if (pol.mode == pcp->policy.mode && pol.nodes == pcp->policy.nodes) {
		pcp->policy.kernel_mode = pol.kernel_mode;
		return;
	}
	before_retarget(th);
	np_pcp_set_policy(pcp, &pol);
	after_retarget(th);
}

void np_home_look_policy(struct np_thread *th)
{
	th->policy_calls = 0;
	if (np_tls.policy_set || (int64_t)(np_os_clock_ns() - th->policy_look_at) >= 0)
		read_policy(th);
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
