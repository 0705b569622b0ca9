/*
 * place.c — thread placement at thread start (see place.h). A choice counts the thread on its
 * node at once (pending[]) until the thread's page cache counts it (np_pcp_threads), so threads
 * created back to back do not all pick the same node; the one count replaces the other under
 * place_lock, so a choice never sees a thread counted twice or not at all (threads started
 * together once ended 4/3/5/5 over 4 nodes that way).
 */
#include "malloc/place.h"

#include <pthread.h>
#include <string.h>

#include "lock.h"
#include "node/node.h"
#include "options.h"
#include "os.h"
#include "pcp/pcp.h"
#include "topology/topology.h"

static struct np_lock *const place_lock = &np_lock_page.place;
static int pending[NP_MAX_NODES];
static uint64_t start_mask[NP_OS_CPU_IDS / 64]; /* the process's CPU mask at start-up */
/* Nodes whose CPUs placement made some thread's affinity (bit n, relaxed): a thread that finds
 * such a mask on itself without knowing its creator (a static link has no pthread_create
 * wrapper) took it from a placed creator, most often the main thread. */
static uint64_t placed_nodes;

int np_place_policy(void)
{
	return (int)np_opt_load(place);
}

/* The allowed CPUs of node n into out (may be NULL: count only). */
static int allowed_cpus(const struct np_topo *t, int n, int *out)
{
	int k = 0;
	for (int i = 0; i < t->node[n].ncpus; i++) {
		int c = np_topo_node_cpu(t, n, i);
		if (t->cpu[c].allowed) {
			if (out)
				out[k] = c;
			k++;
		}
	}
	return k;
}

static int cpu_buf[NP_MAX_CPUS] NP_LARGE_BSS; /* under place_lock */

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
		size_t free = np_node_free_nearby(n);
		if (best < 0 || threads < best_threads || (threads == best_threads && free > best_free)) {
			best = n;
			best_threads = threads;
			best_free = free;
		}
	}
	return best;
}

void np_place_init(void)
{
	np_os_affinity(start_mask);
}

/* Whether the n CPUs of mask are exactly the allowed CPUs of node `node`. */
static bool mask_is_node(const struct np_topo *t, int node, const uint64_t *mask, int n)
{
	int k = 0;
	for (int i = 0; i < t->node[node].ncpus; i++) {
		unsigned c = (unsigned)np_topo_node_cpu(t, node, i);
		if (!t->cpu[c].allowed)
			continue;
		if (c >= NP_OS_CPU_IDS || !((mask[c / 64] >> (c % 64)) & 1))
			return false;
		k++;
	}
	return k == n;
}

/* Whether mask holds every one of the process's allowed CPUs (CPUs beyond them, offline or
 * outside its cpuset, restrict nothing). */
static bool mask_has_allowed(const struct np_topo *t, const uint64_t *mask)
{
	for (int c = 0; c < t->ncpus && c < NP_OS_CPU_IDS; c++)
		if (t->cpu[c].allowed && !((mask[c / 64] >> (c % 64)) & 1))
			return false;
	return true;
}

bool np_place_mask_chosen(int placed_node)
{
	const struct np_topo *t = &np_topo_table;
	uint64_t mask[NP_OS_CPU_IDS / 64];
	int n = np_os_affinity(mask);
	if (n <= 0)
		return false;
	if (!t->is_system) /* placement never sets a rehearsal's real masks */
		return memcmp(mask, start_mask, sizeof mask) != 0;
	if (mask_has_allowed(t, mask))
		return false; /* a count alone took another set of as many CPUs for this one */
	if (placed_node >= 0)
		return placed_node >= t->nnodes || !mask_is_node(t, placed_node, mask, n);
	if (placed_node == NP_PLACE_CREATOR_UNKNOWN) {
		uint64_t nodes = __atomic_load_n(&placed_nodes, __ATOMIC_RELAXED);
		for (int k = 0; nodes && k < t->nnodes && k < 64; k++)
			if (((nodes >> k) & 1) && mask_is_node(t, k, mask, n))
				return false;
	}
	return true;
}

int np_place_new_thread(bool *fixed, bool inherited_mask)
{
	*fixed = false;
	int pol = np_place_policy();
	if (pol == NP_PLACE_NONE)
		return -1;
	const struct np_topo *t = &np_topo_table;
	if (!inherited_mask && np_place_mask_chosen(NP_PLACE_CREATOR_UNKNOWN))
		return -1; /* the program chose this thread's CPUs */
	np_lock(place_lock);
	int node = choose_locked(t, pol);
	if (node >= 0) {
		pending[node]++;
		if (t->is_system) {
			np_os_set_affinity(cpu_buf, allowed_cpus(t, node, cpu_buf));
			if (node < 64)
				__atomic_or_fetch(&placed_nodes, 1ull << node, __ATOMIC_RELAXED);
		} else
			*fixed = true; /* a rehearsed node has no real CPUs to follow */
	}
	np_unlock(place_lock);
	return node;
}

void np_place_done(int node, struct np_pcp *pcp)
{
	np_lock(place_lock);
	pending[node]--;
	if (pcp)
		np_pcp_count_thread(pcp);
	np_unlock(place_lock);
}

void np_place_atfork_prepare(void)
{
	np_lock(place_lock);
}

void np_place_atfork_parent(void)
{
	np_unlock(place_lock);
}

NP_FORK_CHILD void np_place_atfork_child(void)
{
	np_lock_atfork_child(place_lock, NP_LOCK_RANK_PLACE, 0, false);
	/* Choices in flight belonged to threads that did not survive. */
	for (int i = 0; i < NP_MAX_NODES; i++)
		NP_RESET(&pending[i], 0);
}

