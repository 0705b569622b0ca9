/*
 * node.c — which node serves a request (see node.h). The tables are filled once by
 * np_node_init from the frozen topology and the pools; the only shared state read afterwards is
 * the pools' free-page counts, racily, as hints.
 */
#include "node/node.h"

#include "pool/pool.h"

/* Per node: where its threads go first, and the equidistant group it may steal within. */
static int primary[NP_MAX_NODES];
static uint8_t group[NP_MAX_NODES][NP_MAX_NODES];
static int group_n[NP_MAX_NODES];
static uint64_t near[NP_MAX_NODES];
static size_t cpus_served[NP_MAX_NODES];
static const struct np_topo *topo;

void np_node_init(const struct np_topo *t)
{
	topo = t;
	/* Equidistant nearest groups; memoryless nodes sharing a group are dealt its members in
	 * turn, so their threads do not all start on one pool (the kernel spreads them too). */
	int dealt[NP_MAX_NODES] = {0};
	for (int n = 0; n < NP_MAX_NODES; n++) {
		group_n[n] = 0;
		near[n] = 0;
		cpus_served[n] = 0;
		primary[n] = n;
	}
	for (int n = 0; n < t->nnodes; n++) {
		const struct np_topo_node *nd = &t->node[n];
		for (int k = 0; k < nd->nfallback && nd->fallback_dist[k] == nd->fallback_dist[0]; k++)
			group[n][group_n[n]++] = nd->fallback[k];
		near[n] = nd->mem_allowed ? 1ULL << n : 0;
		for (int k = 0; !nd->mem_allowed && k < group_n[n]; k++)
			near[n] |= 1ULL << group[n][k];
		if (nd->mem_allowed || group_n[n] <= 1) {
			primary[n] = group_n[n] ? group[n][0] : n;
			continue;
		}
		int first = group[n][0];
		primary[n] = group[n][dealt[first] % group_n[n]];
		dealt[first]++;
	}
	for (int c = 0; c < t->ncpus; c++) {
		int n = t->cpu_to_node[c];
		if (n >= 0 && t->cpu_allowed[c] && np_pools[primary[n]].exists)
			cpus_served[primary[n]]++;
	}
}

int np_node_primary(int node)
{
	return primary[node];
}

size_t np_node_cpus_served(int node)
{
	return cpus_served[node];
}

uint64_t np_node_near(int home)
{
	return near[home];
}

static size_t free_pages(int node)
{
	return __atomic_load_n(&np_pools[node].free_pages, __ATOMIC_RELAXED);
}

int np_node_pick(int home, unsigned *rotor, bool *stolen)
{
	int first = primary[home];
	*stolen = false;
	if (group_n[home] <= 1)
		return first;
	/* Average free pages per CPU over all pools; racy reads are fine: it is a hint. */
	size_t sum_free = 0, sum_cpus = 0;
	for (int i = 0; i < NP_MAX_NODES; i++)
		if (np_pools[i].exists) {
			sum_free += free_pages(i);
			sum_cpus += cpus_served[i];
		}
	size_t cpus = cpus_served[first] ? cpus_served[first] : 1;
	if (!sum_cpus || free_pages(first) * sum_cpus >= sum_free * cpus)
		return first;
	/* Below average: steal from the next pool of the group that is above it. */
	for (int k = 0; k < group_n[home]; k++) {
		int cand = group[home][(*rotor + (unsigned)k) % (unsigned)group_n[home]];
		size_t qc = cpus_served[cand] ? cpus_served[cand] : 1;
		if (cand != first && free_pages(cand) * sum_cpus > sum_free * qc) {
			*rotor += (unsigned)k + 1;
			*stolen = true;
			return cand;
		}
	}
	return first;
}

size_t np_node_free_nearby(int node)
{
	const struct np_pool *p = &np_pools[primary[node]];
	size_t room = p->limit_pages > p->mapped_pages ? p->limit_pages - p->mapped_pages : 0;
	return __atomic_load_n(&p->free_pages, __ATOMIC_RELAXED) + room;
}

int np_node_walk(int intended, unsigned flags, unsigned *rotor, np_node_try_fn try, void *arg)
{
	uint64_t tried = 0, allowed = flags & NP_WALK_NEAR_ONLY ? near[intended] : ~0ULL;
	if (flags & NP_WALK_PICK) {
		bool stolen;
		int first = np_node_pick(intended, rotor, &stolen);
		if ((allowed >> first) & 1) {
			if (try(first, stolen, arg))
				return first;
			tried |= 1ULL << first;
		}
	}
	const struct np_topo_node *nd = &topo->node[intended];
	for (int k = 0; k < nd->nfallback; k++) {
		int n = nd->fallback[k];
		if ((tried >> n) & 1 || !((allowed >> n) & 1))
			continue;
		if (try(n, false, arg))
			return n;
	}
	return -1;
}
