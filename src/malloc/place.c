/*
 * place.c — thread placement at thread start (see place.h). A choice counts the thread on its
 * node at once (pending[]) until the thread's page cache counts it (np_pcp_threads), so threads
 * created back to back do not all pick the same node.
 */
#include "malloc/place.h"

#include <errno.h>
#include <pthread.h>

#include "malloc/init.h"
#include "options.h"
#include "os.h"
#include "pcp/pcp.h"
#include "pool/pool.h"
#include "topology/topology.h"

static pthread_mutex_t place_lock = PTHREAD_MUTEX_INITIALIZER;
static int pending[NP_MAX_NODES];
static int policy = -1; /* -1: not read from the options yet */

int np_place_policy(void)
{
	int p = __atomic_load_n(&policy, __ATOMIC_RELAXED);
	return p >= 0 ? p : np_opt.place;
}

/* The allowed CPUs of node n into out (may be NULL: count only). */
static int allowed_cpus(const struct np_topo *t, int n, int *out)
{
	int k = 0;
	const uint16_t *cpus = np_topo_node_cpu_list(t, n);
	for (int i = 0; i < t->node[n].ncpus; i++)
		if (t->cpu_allowed[cpus[i]]) {
			if (out)
				out[k] = cpus[i];
			k++;
		}
	return k;
}

static int cpu_buf[NP_MAX_CPUS]; /* under place_lock */

/* Free pages the node's threads can get without going far: its first-choice pool's free
 * pages plus what that pool may still map. */
static size_t free_nearby(int n)
{
	const struct np_pool *p = &np_pools[np_pool_primary(n)];
	size_t room = p->limit_pages > p->mapped_pages ? p->limit_pages - p->mapped_pages : 0;
	return __atomic_load_n(&p->free_pages, __ATOMIC_RELAXED) + room;
}

static int choose_locked(const struct np_topo *t, int pol)
{
	int best = -1;
	long best_threads = 0;
	size_t best_free = 0;
	for (int n = 0; n < t->nnodes; n++) {
		if (!t->node[n].cpus_allowed)
			continue;
		long threads = __atomic_load_n(&np_pcp_threads[n], __ATOMIC_RELAXED) + pending[n];
		if (pol == NP_PLACE_FILL) {
			if (threads < allowed_cpus(t, n, NULL))
				return n; /* the first node (by id) with a free CPU */
			/* every node full: fall through to the least loaded, as spread does */
		}
		size_t free = free_nearby(n);
		if (best < 0 || threads < best_threads || (threads == best_threads && free > best_free)) {
			best = n;
			best_threads = threads;
			best_free = free;
		}
	}
	return best;
}

int np_place_new_thread(bool *fixed, bool inherited_mask)
{
	*fixed = false;
	int pol = np_place_policy();
	if (pol == NP_PLACE_NONE)
		return -1;
	const struct np_topo *t = &np_topo_table;
	if (t->is_system && !inherited_mask) {
		int n = np_os_affinity_count();
		if (n > 0 && n < t->nallowed_cpus)
			return -1; /* the program chose this thread's CPUs */
	}
	pthread_mutex_lock(&place_lock);
	int node = choose_locked(t, pol);
	if (node >= 0) {
		pending[node]++;
		if (t->is_system)
			np_os_set_affinity(cpu_buf, allowed_cpus(t, node, cpu_buf));
		else
			*fixed = true; /* a rehearsed node has no real CPUs to follow */
	}
	pthread_mutex_unlock(&place_lock);
	return node;
}

void np_place_done(int node)
{
	pthread_mutex_lock(&place_lock);
	pending[node]--;
	pthread_mutex_unlock(&place_lock);
}

void np_place_atfork_prepare(void)
{
	pthread_mutex_lock(&place_lock);
}

void np_place_atfork_parent(void)
{
	pthread_mutex_unlock(&place_lock);
}

void np_place_atfork_child(void)
{
	pthread_mutex_init(&place_lock, NULL);
	/* Choices in flight belonged to threads that did not survive. */
	for (int i = 0; i < NP_MAX_NODES; i++)
		pending[i] = 0;
}

int numa_page_thread_place(int pol)
{
	if (pol < NP_PLACE_NONE || pol > NP_PLACE_FILL) {
		errno = EINVAL;
		return -1;
	}
	np_ensure_ready();
	__atomic_store_n(&policy, pol, __ATOMIC_RELAXED);
	return 0;
}
