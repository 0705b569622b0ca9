/*
 * page_api.c — the public calls that are not the malloc family: pages on a node
 * (numa_page_alloc, _onnode, _interleaved; freed with numa_page_free), where memory is
 * (numa_page_node_of), the calling thread's home node, the node count, and thread placement.
 * Each makes sure the allocator is ready first (np_ensure_ready), and reports errors by errno.
 */
#include <errno.h>
#include <stdint.h>

#include "malloc/alloc.h"
#include "malloc/home.h"
#include "malloc/init.h"
#include "malloc/large.h"
#include "malloc/place.h"
#include "malloc/ptr.h"
#include "malloc/ring.h"
#include "options.h"
#include "os.h"
#include "pcp/pcp.h"
#include "topology/topology.h"

/* Pages for a page API call: on the dense node `node` (-1: where the thread's policy puts
 * them), or interleaved over the nodes the policy allows. */
static void *pages_for(size_t size, int node, bool interleaved)
{
	if (!np_ensure_ready())
		return np_enomem();
	if (size > NP_MAX_REQUEST)
		return np_enomem();
	bool leave;
	struct np_thread *th = np_thread_for_pages(&leave);
	if (!th)
		return np_enomem();
	size_t dirty;
	void *p = interleaved ? np_large_interleaved(th, size, 0)
			      : np_large_alloc(th, size, NP_PAGE_SIZE, node, &dirty);
	if (leave)
		np_ring_leave(th);
	return p ? p : np_enomem();
}

void *numa_page_alloc(size_t size)
{
	return pages_for(size, -1, false);
}

void *numa_page_alloc_onnode(size_t size, int node)
{
	if (!np_ensure_ready())
		return np_enomem();
	int dense = np_topo_node_index(&np_topo_table, node);
	if (dense < 0) {
		errno = EINVAL;
		return NULL;
	}
	return pages_for(size, dense, false);
}

void *numa_page_alloc_interleaved(size_t size)
{
	return pages_for(size, -1, true);
}

int numa_page_node_of(const void *p)
{
	struct np_ptr d;
	/* Any address: the program's own page beside a chunk too (np_chunk_guard_enter). */
	np_chunk_guard_enter();
	np_ptr_decode(p, true, &d);
	int node = d.kind == NP_PTR_BAD || d.kind == NP_PTR_BOOT ? -1 : np_ptr_node(&d, p);
	np_chunk_guard_leave();
	/* The start-up allocator's blocks are on no node of ours (numapage.h). */
	if (node < 0) {
		errno = EINVAL;
		return -1;
	}
	/* On this machine, a page already touched is wherever the kernel put it: a full node's
	 * pages may have gone elsewhere after we checked (another process took its memory), and
	 * the answer must never name a node the memory is not on. Untouched: where it will go. */
	if (np_topo_table.is_system) {
		void *page = (void *)((uintptr_t)p & ~(uintptr_t)(NP_PAGE_SIZE - 1));
		int status = -1;
		if (np_os_nodes_of(&page, 1, &status) == 0 && status >= 0 && np_topo_node_index(&np_topo_table, status) >= 0)
			return status;
	}
	return np_topo_table.node[node].os_id;
}

int numa_page_set_home_node(int node)
{
	if (!np_ensure_ready())
		return errno = EAGAIN, -1;
	struct np_thread *th = np_thread_or_init();
	if (!th)
		return errno = ENOMEM, -1;
	if (node == -1) {
		np_home_set(th, -1);
		return 0;
	}
	int dense = np_topo_node_index(&np_topo_table, node);
	if (dense < 0)
		return errno = EINVAL, -1;
	np_home_set(th, dense);
	return 0;
}

int numa_page_home_node(void)
{
	if (!np_ensure_ready())
		return errno = EAGAIN, -1;
	struct np_thread *th = np_thread_or_init();
	if (th) /* where its next allocation goes: a move since its last slow path counts */
		np_home_follow(th);
	int dense = th ? th->pcp.home : np_topo_current_node(&np_topo_table);
	return np_topo_table.node[dense].os_id;
}

int numa_page_node_count(void)
{
	if (!np_ensure_ready())
		return errno = EAGAIN, -1;
	return np_topo_table.nnodes;
}

int numa_page_max_node(void)
{
	if (!np_ensure_ready())
		return errno = EAGAIN, -1;
	return np_topo_table.node[np_topo_table.nnodes - 1].os_id;
}

int numa_page_thread_place(int pol)
{
	if (pol < NP_PLACE_NONE || pol > NP_PLACE_FILL) {
		errno = EINVAL;
		return -1;
	}
	np_ensure_ready();
	/* The option itself, so that numa_page_option_get and `numapage options`-style listings
	 * say what is in force (a private copy of the policy left the option saying the old one). */
	int saved = errno;
	int rc = numa_page_option_set("place", np_place_names[pol]);
	if (rc == 0)
		errno = saved;
	return rc;
}
