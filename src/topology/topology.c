/*
 * topology.c — the frozen table of the machine (see topology.h): the one-node fallback, lookups
 * by OS id and CPU, every node's fallback order, and the invariant checker. Loading it is
 * topology_load.c's (and topology_hwloc.c's, for hwloc). No lock: a table is filled before
 * anything reads it, and np_topo_table is written once at initialisation.
 */
#include "topology/topology.h"

#include <string.h>

#include "log.h"
#include "os.h"
#include "topology/topology_hwloc.h"

/* Page-aligned, so that a small machine's entries lie in two pages (topology.h). */
struct np_topo np_topo_table NP_LARGE_BSS NP_ALIGNED(4096);

const char *np_topo_errtext(int err)
{
	const char *s = err ? strerrordesc_np(err) : NULL;
	return s ? s : "unknown error";
}

void np_topo_set_desc(struct np_topo *t, const char *prefix, const char *what)
{
	size_t n = np_format(t->desc, sizeof t->desc, "%s%s", prefix, what);
	if (strlen(prefix) + strlen(what) > n && n >= 3) {
		/* Cut: say so, and not in the middle of a character (the JSON output is UTF-8). */
		n -= 3;
		while (n && ((unsigned char)t->desc[n] & 0xc0) == 0x80)
			n--;
		memcpy(t->desc + n, "...", 4);
	}
}

/* The parts of a table that its counts say are in use: the header up to the nodes (the counts
 * and the policy among it), one entry per node below nnodes and one per CPU id below ncpus.
 * np_topo_clear and np_topo_copy walk this one list. */
enum part_count { ONCE, PER_CPU, PER_NODE };
static const struct part {
	size_t off, size; /* the first entry's offset, and one entry's bytes */
	enum part_count count;
} parts[] = {
#define ARRAY_PART(field, count) {offsetof(struct np_topo, field), sizeof(((struct np_topo *)0)->field[0]), count}
	ARRAY_PART(node, PER_NODE),
	ARRAY_PART(cpu, PER_CPU),
#undef ARRAY_PART
	{0, offsetof(struct np_topo, node), ONCE}, /* the header, counts included: last */
};

/* Bytes of part p in use in t, by t's counts (clamped: a half-filled table's). */
static size_t part_bytes(const struct part *p, const struct np_topo *t)
{
	if (p->count == ONCE)
		return p->size;
	int n = p->count == PER_CPU ? NP_MIN(NP_MAX(t->ncpus, 0), NP_MAX_CPUS)
				    : NP_MIN(NP_MAX(t->nnodes, 0), NP_MAX_NODES);
	return (size_t)n * p->size;
}

void np_topo_clear(struct np_topo *t)
{
	for (size_t k = 0; k < NP_ARRAY_SIZE(parts); k++)
		memset((char *)t + parts[k].off, 0, part_bytes(&parts[k], t));
}

void np_topo_copy(struct np_topo *dst, const struct np_topo *src)
{
	np_topo_clear(dst);
	for (size_t k = 0; k < NP_ARRAY_SIZE(parts); k++)
		memcpy((char *)dst + parts[k].off, (const char *)src + parts[k].off, part_bytes(&parts[k], src));
}

void np_topo_fallback(struct np_topo *t, int ncpus, uint64_t mem_bytes, const char *why)
{
	np_topo_clear(t);
	if (ncpus < 1)
		ncpus = 1;
	if (ncpus > NP_MAX_CPUS)
		ncpus = NP_MAX_CPUS;
	/* The size may be unknown; the one node must still count as a memory node. */
	if (!mem_bytes)
		mem_bytes = 1;
	if (mem_bytes > NP_TOPO_NODE_MEM_MAX)
		mem_bytes = NP_TOPO_NODE_MEM_MAX;
	t->source = NP_TOPO_FALLBACK;
	t->is_system = false;
	t->nnodes = 1;
	t->ncpus = ncpus;
	t->nallowed_cpus = ncpus;
	t->nmem_nodes = 1;
	t->total_mem = mem_bytes;
	np_topo_set_desc(t, "fallback: ", why ? why : "no topology");
	for (int c = 0; c < ncpus; c++) {
		t->cpu[c].node = 0;
		t->cpu[c].allowed = 1;
		t->cpu[c].list = (uint16_t)c;
	}
	t->node[0].distance[0] = NP_DISTANCE_LOCAL;
	struct np_topo_node *n = &t->node[0];
	n->os_id = 0;
	n->mem_bytes = mem_bytes;
	n->ncpus = ncpus;
	n->cpu_first = 0;
	n->has_memory = n->has_cpus = n->mem_allowed = n->cpus_allowed = true;
	n->nfallback = 1;
	n->fallback[0] = 0;
	n->fallback_dist[0] = NP_DISTANCE_LOCAL;
}

int np_topo_node_index(const struct np_topo *t, int os_id)
{
	for (int i = 0; i < t->nnodes; i++)
		if (t->node[i].os_id == os_id)
			return i;
	return -1;
}

int np_topo_cpu_node(const struct np_topo *t, int cpu)
{
	if (cpu >= t->ncpus && !t->is_system && t->ncpus > 0)
		cpu %= t->ncpus;
	if (NP_LIKELY(cpu >= 0 && cpu < t->ncpus && t->cpu[cpu].node >= 0))
		return t->cpu[cpu].node;
	for (int i = 0; i < t->nnodes; i++)
		if (t->node[i].has_cpus)
			return i;
	return 0;
}

static bool nearer(const struct np_topo *t, int i, int a, int b)
{
	if (a == i || b == i)
		return a == i;
	if (t->node[i].distance[a] != t->node[i].distance[b])
		return t->node[i].distance[a] < t->node[i].distance[b];
	return a < b;
}

int np_topo_current_node(const struct np_topo *t)
{
	int cpu = np_os_current_cpu();
	if (NP_LIKELY(cpu >= 0 && cpu < t->ncpus && t->cpu[cpu].node >= 0))
		return t->cpu[cpu].node;
	if (t->is_system) {
		int os_node = np_os_current_os_node();
		int dense = os_node >= 0 ? np_topo_node_index(t, os_node) : -1;
		if (dense >= 0)
			return dense;
	}
	return np_topo_cpu_node(t, cpu);
}

void np_topo_build_fallback(struct np_topo *t)
{
	for (int i = 0; i < t->nnodes; i++) {
		struct np_topo_node *n = &t->node[i];
		n->nfallback = 0;
		for (int j = 0; j < t->nnodes; j++) {
			if (!t->node[j].mem_allowed)
				continue;
			int k = n->nfallback++;
			while (k > 0 && nearer(t, i, j, n->fallback[k - 1])) {
				n->fallback[k] = n->fallback[k - 1];
				k--;
			}
			n->fallback[k] = (uint8_t)j;
		}
		for (int k = 0; k < n->nfallback; k++)
			n->fallback_dist[k] = t->node[i].distance[n->fallback[k]];
	}
}

#define CHECK(cond, msg)                                                                            \
	do {                                                                                       \
		if (!(cond))                                                                       \
			return msg;                                                                \
	} while (0)

const char *np_topo_check(const struct np_topo *t)
{
	CHECK(t->nnodes >= 1 && t->nnodes <= NP_MAX_NODES, "node count out of range");
	CHECK(t->ncpus >= 1 && t->ncpus <= NP_MAX_CPUS, "CPU count out of range");
	CHECK(t->is_system == (t->source == NP_TOPO_SYSTEM), "is_system disagrees with the source");
	CHECK(memchr(t->desc, '\0', sizeof t->desc) != NULL, "desc is not terminated");

	int listed = 0, nmem = 0, nallowed = 0;
	uint64_t total = 0;
	for (int i = 0; i < t->nnodes; i++) {
		const struct np_topo_node *n = &t->node[i];
		CHECK(n->os_id >= 0, "negative OS node id");
		CHECK(i == 0 || n->os_id > t->node[i - 1].os_id, "nodes not in increasing OS id order");
		CHECK(n->has_memory == (n->mem_bytes > 0), "has_memory disagrees with mem_bytes");
		CHECK(n->mem_bytes <= NP_TOPO_NODE_MEM_MAX, "a node larger than 64 PiB");
		CHECK(n->has_cpus == (n->ncpus > 0), "has_cpus disagrees with ncpus");
		CHECK(!n->mem_allowed || n->has_memory, "memory allowed on a memoryless node");
		CHECK(n->cpu_first == listed, "CPU lists not contiguous");
		CHECK(n->ncpus >= 0 && listed + n->ncpus <= t->ncpus, "CPU list too long");
		bool any_allowed = false;
		for (int k = 0; k < n->ncpus; k++) {
			int c = t->cpu[n->cpu_first + k].list;
			CHECK(c < t->ncpus, "CPU id beyond ncpus in a CPU list");
			CHECK(k == 0 || c > t->cpu[n->cpu_first + k - 1].list, "CPU list not ascending");
			CHECK(t->cpu[c].node == i, "cpu[].node disagrees with the CPU lists");
			any_allowed |= t->cpu[c].allowed != 0;
		}
		CHECK(n->cpus_allowed == any_allowed, "cpus_allowed disagrees with cpu[].allowed");
		listed += n->ncpus;
		nmem += n->mem_allowed;
		total += n->mem_bytes;

		for (int j = 0; j < t->nnodes; j++) {
			CHECK(t->node[i].distance[j] > 0, "zero distance");
			CHECK(t->node[i].distance[i] <= t->node[i].distance[j], "diagonal distance not minimal");
		}

		/* The fallback list: exactly the allowed memory nodes, self first when allowed,
		 * then by distance, ties by OS id. */
		CHECK(n->nfallback >= 0 && n->nfallback <= t->nnodes, "fallback length out of range");
		uint64_t seen = 0;
		for (int k = 0; k < n->nfallback; k++) {
			int j = n->fallback[k];
			CHECK(j < t->nnodes, "fallback entry out of range");
			CHECK(t->node[j].mem_allowed, "fallback lists a node without allowed memory");
			CHECK(!(seen >> j & 1), "fallback lists a node twice");
			seen |= 1ULL << j;
			CHECK(n->fallback_dist[k] == t->node[i].distance[j], "fallback_dist disagrees");
			if (k == 0)
				continue;
			int p = n->fallback[k - 1];
			CHECK(j != i, "a node with allowed memory is not its own first fallback");
			if (p == i)
				continue;
			CHECK(n->fallback_dist[k - 1] <= n->fallback_dist[k], "fallback not sorted");
			CHECK(n->fallback_dist[k - 1] < n->fallback_dist[k] || p < j,
			      "equidistant fallbacks not in OS id order");
		}
	}
	CHECK(listed <= t->ncpus, "more listed CPUs than CPU ids");
	CHECK(nmem >= 1 && nmem == t->nmem_nodes, "nmem_nodes wrong");
	CHECK(total == t->total_mem, "total_mem wrong");
	for (int i = 0; i < t->nnodes; i++)
		CHECK(t->node[i].nfallback == nmem, "fallback list incomplete");

	int mapped = 0;
	for (int c = 0; c < NP_MAX_CPUS; c++) {
		int i = t->cpu[c].node;
		CHECK(c < t->ncpus || (i == 0 && !t->cpu[c].allowed), "an entry beyond ncpus is set");
		if (c >= t->ncpus)
			continue;
		CHECK(i >= -1 && i < t->nnodes, "cpu[].node out of range");
		CHECK(i >= 0 || !t->cpu[c].allowed, "an id that is no CPU is allowed");
		mapped += i >= 0;
		nallowed += t->cpu[c].allowed != 0;
	}
	CHECK(mapped == listed, "cpu[].node maps CPUs no list holds");
	CHECK(nallowed == t->nallowed_cpus, "nallowed_cpus wrong");
	CHECK(t->ncpus == 0 || t->cpu[t->ncpus - 1].node >= 0, "ncpus larger than the last CPU id + 1");
	return NULL;
}
