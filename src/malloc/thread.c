/*
 * thread.c — creation, exit and fork of per-thread allocator state (see thread.h).
 */
#include "malloc/thread.h"

#include <pthread.h>
#include <string.h>

#include "lock.h"
#include "log.h"
#include "malloc/place.h"
#include "malloc/ready.h"
#include "malloc/ring.h"
#include "node/node.h"
#include "os.h"
#include "pool/pool.h"
#include "topology/topology.h"

NP_TLS struct np_tls np_tls = {.cur = {[0 ... NP_NCLASSES - 1] = &np_slab_empty}};

static struct np_lock *const threads_lock = &np_lock_page.threads;
static struct np_thread *live, *recycled;
static pthread_key_t exit_key;
int np_threads_seen;
uint64_t np_thread_exits;
int np_threads_live;
static bool exit_key_ok;

void np_thread_init_key(void (*on_exit)(void *))
{
	exit_key_ok = pthread_key_create(&exit_key, on_exit) == 0;
}

static bool struct_run(int node, bool shared, bool grow, void *arg)
{
	(void)shared;
	struct np_page **run = arg;
	size_t pages = (sizeof(struct np_thread) + NP_PAGE_SIZE - 1) >> NP_PAGE_SHIFT;
	*run = np_pool_get_run(node, pages, 1, NULL, grow);
	return *run != NULL;
}

/* Pages for a new struct np_thread, near the thread's node. */
static struct np_thread *map_struct(int home)
{
	struct np_page *run = NULL;
	struct np_node_req r = {.intended = home, .pages = (sizeof(struct np_thread) + NP_PAGE_SIZE - 1) >> NP_PAGE_SHIFT};
	if (np_node_walk(&r, struct_run, &run) < 0)
		return NULL;
	struct np_thread *th = np_page_addr(run);
	memset(th, 0, sizeof *th);
	th->struct_pages = run->npages;
	return th;
}

struct np_thread *np_thread_get(void)
{
	if (NP_LIKELY(np_tls.self))
		return np_tls.self;
	if (!np_is_ready())
		return NULL;
	bool fixed = false;
	/* A thread whose attributes pinned it is the program's to place, and one created while
	 * placement was off is not placed (thread_start.c). */
	int placed = np_tls.never_place ? -1 : np_place_new_thread(&fixed, np_tls.place_at_start);
	if (placed >= 0 && !fixed) /* its affinity is now its node's CPUs: ours, not the program's */
		np_tls.placed_mask = (uint8_t)(placed + 1);
	int home = placed >= 0 ? placed : np_topo_current_node(&np_topo_table);
	np_lock(threads_lock);
	struct np_thread *th = recycled;
	if (th)
		recycled = th->next;
	np_unlock(threads_lock);
	if (th) {
		size_t pages = th->struct_pages;
		memset(th, 0, sizeof *th);
		th->struct_pages = pages;
	} else if (!(th = map_struct(home))) {
		if (placed >= 0)
			np_place_done(placed, NULL);
		return NULL;
	}
	th->tid = np_os_tid();
	th->born_exits = __atomic_load_n(&np_thread_exits, __ATOMIC_RELAXED);
	__atomic_add_fetch(&np_threads_seen, 1, __ATOMIC_RELAXED);
	np_vmstat_register(&th->st);
	struct np_topo_policy pol;
	np_tls.policy_set = false; /* one it set before: read now */
	np_node_policy(&pol);      /* the task policy the thread inherited or set (numactl) */
	np_pcp_init(&th->pcp, home, &th->st, &pol);
	th->pcp.home_fixed = fixed;
	/* Counted on its node at once, and a placed thread under the placement lock: between
	 * its choice and its count no other thread may see it on neither node, or twice. */
	if (placed >= 0)
		np_place_done(placed, &th->pcp);
	else
		np_pcp_count_thread(&th->pcp);
	np_lock(threads_lock);
	th->tls = &np_tls;
	th->prev = NULL;
	th->next = live;
	if (live)
		live->prev = th;
	live = th;
	__atomic_store_n(&np_threads_live, np_threads_live + 1, __ATOMIC_RELAXED);
	np_unlock(threads_lock);
	np_tls.in_use = 0;
	np_tls.requested = 0;
	np_tls.count_node = (uint8_t)np_node_primary(th->pcp.target);
	np_tls.self = th;
	np_tls.exited = false;
	/* After self is set: setspecific may allocate (keys past the first 32), and that
	 * allocation must find this thread ready. */
	if (exit_key_ok)
		pthread_setspecific(exit_key, th);
	return th;
}

void np_thread_fold_bytes(struct np_thread *th)
{
	if (th == np_tls.self && (np_tls.in_use || np_tls.requested)) {
		th->in_use[np_tls.count_node] += np_tls.in_use;
		th->requested[np_tls.count_node] += np_tls.requested;
		np_tls.in_use = 0;
		np_tls.requested = 0;
	}
	for (int n = 0; n < np_topo_table.nnodes; n++) {
		if (th->in_use[n]) {
			np_vmstat_add(&th->st, n, NUMA_PAGE_STAT_malloc_in_use, (long)th->in_use[n]);
			th->in_use[n] = 0;
		}
		/* Not below zero: a fork's child's debt (np_thread_atfork_count) waits for its
		 * slabs' counts, so that the events never run backwards. */
		if ((int64_t)th->requested[n] > 0) {
			np_vmstat_add(&th->st, n, NUMA_PAGE_STAT_malloc_requested, (long)th->requested[n]);
			th->requested[n] = 0;
		}
	}
}

void np_thread_release(struct np_thread *th)
{
	np_pcp_drain(&th->pcp);
	np_pcp_fini(&th->pcp);
	np_vmstat_unregister(&th->st);
	np_lock(threads_lock);
	if (th->prev)
		th->prev->next = th->next;
	else if (live == th)
		live = th->next;
	if (th->next)
		th->next->prev = th->prev;
	th->next = recycled;
	recycled = th;
	__atomic_store_n(&np_threads_live, np_threads_live - 1, __ATOMIC_RELAXED);
	np_unlock(threads_lock);
}

void np_thread_forget_tls(void)
{
	for (int c = 0; c < NP_NCLASSES; c++)
		np_tls.cur[c] = &np_slab_empty;
	for (int k = 0; k < NP_NCLASSES - NP_CACHE_FIRST; k++)
		np_assert(!np_tls.cache[k]); /* flushed by np_ring_leave */
	np_tls.self = NULL;
	np_tls.exited = true;
}

NP_FORK_CHILD void np_thread_atfork_count(void)
{
	int64_t bytes[NP_MAX_NODES];
	int nodes = np_topo_table.nnodes;
	/* The survivor's requests before the fork are the parent's events, which the child drops.
	 * Its counters' are dropped here; those its slabs have not counted yet become a debt of
	 * its requested counter, paid as those slabs are counted. Its bytes in use stay where
	 * they are and count in the child as they come. */
	struct np_thread *self = np_tls.self;
	if (self) {
		memset(bytes, 0, sizeof bytes);
		np_ring_uncounted(self, false, bytes);
		NP_RESET(&np_tls.requested, 0);
		for (int n = 0; n < nodes; n++)
			NP_RESET(&self->requested[n], (uint64_t)-bytes[n]);
	}
	/* The others' bytes in use are memory the child holds: into the totals. Their events are
	 * dropped. threads_lock was held across fork: the live list is whole. */
	for (struct np_thread *th = live; th; th = th->next) {
		if (th == self)
			continue;
		memset(bytes, 0, sizeof bytes);
		np_ring_uncounted(th, true, bytes);
		/* Its thread-local count, as its thread left it (its TLS block is memory of the
		 * child too): the blocks it freed into its cache, and its frees of other threads'
		 * blocks, are free in the child as well. */
		bytes[th->tls->count_node] += th->tls->in_use;
		for (int n = 0; n < nodes; n++)
			if (bytes[n] + th->in_use[n])
				np_vmstat_add_shared(n, NUMA_PAGE_STAT_malloc_in_use, (long)(bytes[n] + th->in_use[n]));
	}
}

void np_thread_atfork_prepare(void)
{
	np_lock(threads_lock);
}

void np_thread_atfork_parent(void)
{
	np_unlock(threads_lock);
}

NP_FORK_CHILD void np_thread_atfork_child(void)
{
	np_lock_atfork_child(threads_lock, NP_LOCK_RANK_THREADS, 0, false);
	/* Only the forking thread survives. The others may have been in the middle of a fast
	 * path or a page-cache update when fork copied memory (their state has no lock), so
	 * their caches and slabs are not walked: they are left behind, as glibc and mimalloc
	 * do. Their objects stay valid; frees of them in the child go on their slabs' remote
	 * lists. Their statistics deltas were folded by np_vmstat_atfork_child. */
	struct np_thread *self = np_tls.self;
	NP_RESET(&live, self); /* only what changed: a write copies the page */
	NP_RESET(&np_threads_live, self != NULL);
	if (self) {
		NP_RESET(&self->next, NULL);
		NP_RESET(&self->prev, NULL);
	}
	np_pcp_atfork_child(self ? &self->pcp : NULL); /* one thread counted: this one */
}
