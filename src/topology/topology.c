/*
 * topology.c — discovers the machine once with hwloc (or loads an XML file or synthetic string to
 * rehearse another one) and freezes it into struct np_topo: nodes by OS id, memory, CPUs,
 * distances, the allowed sets and every node's fallback order. Invariants: np_topo_check().
 * No lock: np_topo_load() fills a table before anything reads it, and np_topo_table is written
 * once at initialisation. Runs inside malloc start-up under LD_PRELOAD, so hwloc is asked for as
 * little as possible (no caches, I/O, plugins, CPU kinds, memory attributes) and every hwloc
 * object is destroyed before returning; the table keeps no pointer into hwloc memory.
 */
#include "topology/topology.h"

#include <errno.h>
#include <hwloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "os.h"

struct np_topo np_topo_table;

#define SYNTHETIC_PREFIX "synthetic:"
#define MPOL_BIND_MODE 2          /* MPOL_BIND in <linux/mempolicy.h> */
#define MPOL_MODE_MASK 0xff       /* get_mempolicy ORs MPOL_F_* flags into the mode */
#define MEMPOLICY_BITS 1024       /* >= the kernel's MAX_NUMNODES (CONFIG_NODES_SHIFT=10) */
#define BITS_PER_LONG (8 * sizeof(unsigned long))

/* Error text of an errno value without allocating (strerror may format into a buffer). */
static const char *errtext(int err)
{
	const char *s = err ? strerrordesc_np(err) : NULL;
	return s ? s : "unknown error";
}

static void set_desc(struct np_topo *t, const char *prefix, const char *what)
{
	np_format(t->desc, sizeof t->desc, "%s%s", prefix, what);
}

void np_topo_fallback(struct np_topo *t, int ncpus, uint64_t mem_bytes, const char *why)
{
	memset(t, 0, sizeof *t);
	if (ncpus < 1)
		ncpus = 1;
	if (ncpus > NP_MAX_CPUS)
		ncpus = NP_MAX_CPUS;
	/* The size may be unknown; the one node must still count as a memory node. */
	if (!mem_bytes)
		mem_bytes = 1;
	t->source = NP_TOPO_FALLBACK;
	t->is_system = false;
	t->nnodes = 1;
	t->ncpus = ncpus;
	t->nallowed_cpus = ncpus;
	t->nmem_nodes = 1;
	t->total_mem = mem_bytes;
	set_desc(t, "fallback: ", why ? why : "no topology");
	for (int c = 0; c < NP_MAX_CPUS; c++)
		t->cpu_to_node[c] = -1;
	for (int c = 0; c < ncpus; c++) {
		t->cpu_to_node[c] = 0;
		t->cpu_allowed[c] = 1;
		t->node_cpus[c] = (uint16_t)c;
	}
	t->distance[0][0] = NP_DISTANCE_LOCAL;
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

/* The fallback for this machine: sysconf is cheap and cannot fail in a way that matters. */
static int fail(struct np_topo *t, const char *why)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	long pages = sysconf(_SC_PHYS_PAGES);
	long psize = sysconf(_SC_PAGESIZE);
	uint64_t mem = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
	np_warn("topology: %s; using one node with every CPU and all memory", why);
	np_topo_fallback(t, cpus > 0 ? (int)cpus : 1, mem, why);
	return -1;
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
	if (NP_LIKELY(cpu >= 0 && cpu < t->ncpus && t->cpu_to_node[cpu] >= 0))
		return t->cpu_to_node[cpu];
	for (int i = 0; i < t->nnodes; i++)
		if (t->node[i].has_cpus)
			return i;
	return 0;
}

/*
 * hwloc dlopen()s every plugin in its plugin directory when the first topology of the process is
 * initialised (hwloc_topology_init -> hwloc_components_init). Debian's hwloc_gl and hwloc_opencl
 * would pull X11 and OpenCL into every process we are preloaded into. hwloc has no API to stop
 * that (hwloc_topology_set_components() blacklists components only after they were loaded, and
 * HWLOC_PLUGINS_BLACKLIST needs every plugin's name), but it reads HWLOC_PLUGINS_PATH, a
 * colon-separated list of directories, with getenv at that moment: an empty list loads nothing
 * and opens no directory. So we set it to "" around hwloc_topology_init, unless the user set it
 * (then they chose their plugins), and remove it afterwards. setenv allocates (the bootstrap
 * arena serves it inside the library); it runs once, during start-up.
 * Without plugins, XML is read by hwloc's built-in minimalistic parser, not libxml2.
 */
static int topology_init_without_plugins(hwloc_topology_t *topo)
{
	bool set = getenv("HWLOC_PLUGINS_PATH") == NULL;
	if (set)
		setenv("HWLOC_PLUGINS_PATH", "", 1);
	int err = hwloc_topology_init(topo);
	if (set)
		unsetenv("HWLOC_PLUGINS_PATH");
	return err;
}

/*
 * Ask hwloc for little: no I/O or Misc objects, CPU kinds or memory attributes, and not the x86
 * backend (it would rebind the thread to every CPU to run cpuid). Caches go too when discovering
 * this machine (the Linux backend reads several sysfs files per CPU for them). The structural
 * types (Package, Die, Group, Core) stay at hwloc's defaults: a NUMA node's cpuset is its
 * parent's, so dropping the object that carries a node's locality would widen its CPU set; on
 * Linux, hwloc inserts a Group where no kept object matches a node's CPUs exactly. Rehearsals keep
 * caches as well, since an XML file may attach a node to an L3.
 */
static void restrict_discovery(hwloc_topology_t topo, enum np_topo_source src)
{
	hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED |
					       HWLOC_TOPOLOGY_FLAG_DONT_CHANGE_BINDING |
					       HWLOC_TOPOLOGY_FLAG_NO_MEMATTRS |
					       HWLOC_TOPOLOGY_FLAG_NO_CPUKINDS);
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_type_filter(topo, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
	if (src == NP_TOPO_SYSTEM) {
		hwloc_topology_set_cache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
		hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
	}
}

/*
 * Asked for this machine, hwloc still obeys HWLOC_XMLFILE, HWLOC_SYNTHETIC and HWLOC_FSROOT in
 * the environment (the last one set in that order of precedence wins; blacklisting the xml and
 * synthetic components does not stop it). What it loaded then is a rehearsal we must not bind
 * to, unless the user asserts with HWLOC_THISSYSTEM=1 that it describes this machine, which
 * hwloc_topology_is_thissystem() reports. For our own XML and synthetic specs its answer is
 * ignored: the source decides.
 */
static enum np_topo_source redirected_source(hwloc_topology_t topo, char *what, size_t size)
{
	static const char *const vars[] = {"HWLOC_XMLFILE", "HWLOC_SYNTHETIC", "HWLOC_FSROOT"};
	if (hwloc_topology_is_thissystem(topo))
		return NP_TOPO_SYSTEM;
	for (size_t k = 0; k < NP_ARRAY_SIZE(vars); k++) {
		const char *v = getenv(vars[k]);
		if (v) {
			np_format(what, size, "%s=%s", vars[k], v);
			return k == 1 ? NP_TOPO_SYNTHETIC : NP_TOPO_XML;
		}
	}
	np_format(what, size, "hwloc's environment (not this machine)");
	return NP_TOPO_XML;
}

static bool allow_cpu(const struct np_topo_allow *allow, int cpu)
{
	if (!allow || !allow->cpus)
		return true;
	return cpu < allow->ncpus && allow->cpus[cpu];
}

static bool allow_node(const struct np_topo_allow *allow, int os_id)
{
	if (!allow || !allow->nodes)
		return true;
	return os_id < allow->nnodes && allow->nodes[os_id];
}

/* The calling thread's MPOL_BIND node mask (numactl --membind), if it has one. */
static bool membind_mask(unsigned long *mask)
{
	int mode = 0;
	if (np_os_mempolicy(&mode, mask, MEMPOLICY_BITS) < 0) {
		np_verbose("topology: get_mempolicy failed; memory policy not applied");
		return false;
	}
	return (mode & MPOL_MODE_MASK) == MPOL_BIND_MODE;
}

/* Fills t->distance from hwloc's NUMA latency matrix (the SLIT); 10 local / 20 remote where
 * hwloc has none. A matrix that makes no sense for us (a zero, a value over 255, a diagonal that
 * is not the row's minimum) is ignored as a whole. */
static void read_distances(struct np_topo *t, hwloc_topology_t topo, hwloc_obj_t *nodes)
{
	int n = t->nnodes;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			t->distance[i][j] = i == j ? NP_DISTANCE_LOCAL : NP_DISTANCE_REMOTE;

	struct hwloc_distances_s *dist[4];
	unsigned nr = NP_ARRAY_SIZE(dist);
	if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, dist,
					HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) < 0)
		return;
	if (nr > NP_ARRAY_SIZE(dist))
		nr = NP_ARRAY_SIZE(dist);
	/* Prefer the kernel's NUMALatency matrix; else the first one. */
	struct hwloc_distances_s *d = NULL;
	for (unsigned k = 0; k < nr; k++) {
		const char *name = hwloc_distances_get_name(topo, dist[k]);
		if (!d || (name && strcmp(name, "NUMALatency") == 0))
			d = dist[k];
	}
	if (d) {
		uint8_t m[NP_MAX_NODES][NP_MAX_NODES];
		memcpy(m, t->distance, sizeof m);
		int idx[NP_MAX_NODES];
		bool ok = d->nbobjs <= NP_MAX_NODES;
		for (unsigned a = 0; a < d->nbobjs && ok; a++) {
			idx[a] = -1;
			for (int i = 0; i < n; i++)
				if (nodes[i] == d->objs[a])
					idx[a] = i;
			ok = idx[a] >= 0;
		}
		for (unsigned a = 0; a < d->nbobjs && ok; a++)
			for (unsigned b = 0; b < d->nbobjs && ok; b++) {
				hwloc_uint64_t v = d->values[a * d->nbobjs + b];
				ok = v > 0 && v <= 255;
				if (ok)
					m[idx[a]][idx[b]] = (uint8_t)v;
			}
		for (int i = 0; i < n && ok; i++)
			for (int j = 0; j < n && ok; j++)
				ok = m[i][i] <= m[i][j];
		if (ok)
			memcpy(t->distance, m, sizeof m);
		else
			np_verbose("topology: hwloc's NUMA distances are unusable; using 10/20");
	}
	for (unsigned k = 0; k < nr; k++)
		hwloc_distances_release(topo, dist[k]);
}

/* Orders node i's candidates: self first, then by distance, ties by OS id (= dense index). */
static bool nearer(const struct np_topo *t, int i, int a, int b)
{
	if (a == i || b == i)
		return a == i;
	if (t->distance[i][a] != t->distance[i][b])
		return t->distance[i][a] < t->distance[i][b];
	return a < b;
}

static void build_fallback(struct np_topo *t)
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
			n->fallback_dist[k] = t->distance[i][n->fallback[k]];
	}
}

/*
 * Which node a PU belongs to. Linux gives every CPU exactly one node; hwloc gives each NUMA node
 * a cpuset (its locality), and a CPU-less node may share its neighbour's (KNL's MCDRAM, HBM) or
 * sit at the machine level. The owner is the node with the smallest cpuset holding the PU, ties
 * to the lowest OS id (the DDR node before the HBM node that shares its locality), so a node that
 * only shares CPUs it does not own shows up as CPU-less, as the kernel sees it.
 */
static int pu_owner(hwloc_obj_t pu, hwloc_obj_t *nodes, int n)
{
	int best = -1, best_w = 0;
	for (int pass = 0; pass < 2 && best < 0; pass++)
		for (int i = 0; i < n; i++) {
			bool in = pass == 0 ? hwloc_bitmap_isset(nodes[i]->cpuset, pu->os_index)
					    : hwloc_bitmap_isset(pu->nodeset, nodes[i]->os_index);
			if (!in)
				continue;
			int w = hwloc_bitmap_weight(nodes[i]->cpuset);
			if (best < 0 || w < best_w) {
				best = i;
				best_w = w;
			}
		}
	return best;
}

/* Reads the loaded topology into t. Returns NULL or why it cannot be used (why_buf filled). */
static const char *extract(struct np_topo *t, hwloc_topology_t topo, const struct np_topo_allow *allow,
			   char *why_buf, size_t why_size)
{
	hwloc_obj_t nodes[NP_MAX_NODES];
	int nn = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
	if (nn < 1)
		return "hwloc found no NUMA node";
	if (nn > NP_MAX_NODES) {
		np_format(why_buf, why_size, "%d NUMA nodes, more than the %d supported", nn,
			  NP_MAX_NODES);
		return why_buf;
	}
	/* Dense indices in increasing OS id order (hwloc's logical order need not be). */
	int k = 0;
	for (hwloc_obj_t o = NULL; (o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, o));) {
		if (k == nn)
			break;
		int j = k++;
		while (j > 0 && nodes[j - 1]->os_index > o->os_index) {
			nodes[j] = nodes[j - 1];
			j--;
		}
		nodes[j] = o;
	}
	t->nnodes = nn = k;
	for (int i = 1; i < nn; i++)
		if (nodes[i]->os_index == nodes[i - 1]->os_index)
			return "two NUMA nodes share an OS id";

	for (int c = 0; c < NP_MAX_CPUS; c++)
		t->cpu_to_node[c] = -1;
	int npus = 0;
	for (hwloc_obj_t pu = NULL; (pu = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, pu));) {
		if (pu->os_index >= NP_MAX_CPUS) {
			np_format(why_buf, why_size, "CPU id %u is beyond the %d supported",
				  pu->os_index, NP_MAX_CPUS);
			return why_buf;
		}
		int owner = pu_owner(pu, nodes, nn);
		if (owner < 0) {
			np_format(why_buf, why_size, "CPU %u belongs to no NUMA node", pu->os_index);
			return why_buf;
		}
		t->cpu_to_node[pu->os_index] = (int16_t)owner;
		if ((int)pu->os_index >= t->ncpus)
			t->ncpus = (int)pu->os_index + 1;
		npus++;
	}
	if (!npus)
		return "hwloc found no CPU";

	hwloc_const_cpuset_t cpus_ok = hwloc_topology_get_allowed_cpuset(topo);
	hwloc_const_nodeset_t nodes_ok = hwloc_topology_get_allowed_nodeset(topo);
	unsigned long policy[MEMPOLICY_BITS / BITS_PER_LONG + 1];
	memset(policy, 0, sizeof policy);
	bool membind = t->source == NP_TOPO_SYSTEM && membind_mask(policy);

	/* CPU lists by a counting pass: ascending ids within each node. */
	int first = 0;
	for (int i = 0; i < nn; i++) {
		struct np_topo_node *n = &t->node[i];
		n->os_id = (int)nodes[i]->os_index;
		n->cpu_first = first;
		for (int c = 0; c < t->ncpus; c++) {
			if (t->cpu_to_node[c] != i)
				continue;
			t->node_cpus[first++] = (uint16_t)c;
			if (hwloc_bitmap_isset(cpus_ok, (unsigned)c) && allow_cpu(allow, c)) {
				t->cpu_allowed[c] = 1;
				t->nallowed_cpus++;
				n->cpus_allowed = true;
			}
		}
		n->ncpus = first - n->cpu_first;
		n->has_cpus = n->ncpus > 0;
		n->mem_bytes = nodes[i]->attr ? nodes[i]->attr->numanode.local_memory : 0;
		n->has_memory = n->mem_bytes > 0;
		n->mem_allowed = n->has_memory && hwloc_bitmap_isset(nodes_ok, nodes[i]->os_index) &&
				 allow_node(allow, n->os_id);
		if (membind)
			n->mem_allowed = n->mem_allowed && n->os_id < MEMPOLICY_BITS &&
					 (policy[n->os_id / BITS_PER_LONG] >> (n->os_id % BITS_PER_LONG) & 1);
		t->total_mem += n->mem_bytes;
		t->nmem_nodes += n->mem_allowed;
	}
	if (!t->nmem_nodes)
		return "no allowed NUMA node has memory";

	read_distances(t, topo, nodes);
	build_fallback(t);
	return NULL;
}

int np_topo_load(struct np_topo *t, const char *spec, const struct np_topo_allow *allow)
{
	char why[200];
	char what[sizeof t->desc]; /* what was loaded, for the table's desc and the warning */
	enum np_topo_source src = NP_TOPO_SYSTEM;
	if (spec && strncmp(spec, SYNTHETIC_PREFIX, strlen(SYNTHETIC_PREFIX)) == 0)
		src = NP_TOPO_SYNTHETIC;
	else if (spec && spec[0])
		src = NP_TOPO_XML;
	np_format(what, sizeof what, "%s", src == NP_TOPO_SYSTEM ? "this machine" : spec);

	hwloc_topology_t topo;
	if (topology_init_without_plugins(&topo) < 0) {
		np_format(why, sizeof why, "hwloc_topology_init failed: %s", errtext(errno));
		return fail(t, why);
	}
	restrict_discovery(topo, src);

	int err = 0;
	if (src == NP_TOPO_SYNTHETIC) {
		err = hwloc_topology_set_synthetic(topo, spec + strlen(SYNTHETIC_PREFIX));
		if (err < 0)
			np_format(why, sizeof why, "bad hwloc synthetic topology '%s'",
				  spec + strlen(SYNTHETIC_PREFIX));
	} else if (src == NP_TOPO_XML) {
		/* hwloc opens the file here; it reports a missing or unreadable file by errno,
		 * and a file it cannot parse by EINVAL (here or at load). */
		errno = 0;
		err = hwloc_topology_set_xml(topo, spec);
		if (err < 0 && errno && errno != EINVAL)
			np_format(why, sizeof why, "cannot read hwloc XML '%s': %s", spec, errtext(errno));
		else if (err < 0)
			np_format(why, sizeof why, "cannot parse hwloc XML '%s'", spec);
	}
	if (!err) {
		err = hwloc_topology_load(topo);
		if (err < 0 && src == NP_TOPO_XML)
			np_format(why, sizeof why, "cannot parse hwloc XML '%s'", spec);
		else if (err < 0)
			np_format(why, sizeof why, "hwloc could not load %s: %s", what, errtext(errno));
	}
	if (!err && src == NP_TOPO_SYSTEM)
		src = redirected_source(topo, what, sizeof what);
	if (!err) {
		memset(t, 0, sizeof *t);
		t->source = src;
		t->is_system = src == NP_TOPO_SYSTEM;
		const char *cause = extract(t, topo, allow, why, sizeof why);
		if (cause) {
			if (cause != why)
				np_format(why, sizeof why, "%s", cause);
			size_t len = strlen(why);
			np_format(why + len, sizeof why - len, " in %s", what);
			err = -1;
		}
	}
	hwloc_topology_destroy(topo);
	if (err)
		return fail(t, why);

	set_desc(t, "", what);
	if (np_config_debug >= 2) {
		const char *bad = np_topo_check(t);
		if (bad)
			np_fatal("topology: invariant broken: %s", bad);
	}
	return 0;
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
		CHECK(n->has_cpus == (n->ncpus > 0), "has_cpus disagrees with ncpus");
		CHECK(!n->mem_allowed || n->has_memory, "memory allowed on a memoryless node");
		CHECK(n->cpu_first == listed, "CPU lists not contiguous");
		CHECK(n->ncpus >= 0 && listed + n->ncpus <= t->ncpus, "CPU list too long");
		bool any_allowed = false;
		for (int k = 0; k < n->ncpus; k++) {
			int c = t->node_cpus[n->cpu_first + k];
			CHECK(c < t->ncpus, "CPU id beyond ncpus in a CPU list");
			CHECK(k == 0 || c > t->node_cpus[n->cpu_first + k - 1], "CPU list not ascending");
			CHECK(t->cpu_to_node[c] == i, "cpu_to_node disagrees with the CPU lists");
			any_allowed |= t->cpu_allowed[c] != 0;
		}
		CHECK(n->cpus_allowed == any_allowed, "cpus_allowed disagrees with cpu_allowed");
		listed += n->ncpus;
		nmem += n->mem_allowed;
		total += n->mem_bytes;

		for (int j = 0; j < t->nnodes; j++) {
			CHECK(t->distance[i][j] > 0, "zero distance");
			CHECK(t->distance[i][i] <= t->distance[i][j], "diagonal distance not minimal");
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
			CHECK(n->fallback_dist[k] == t->distance[i][j], "fallback_dist disagrees");
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
		int i = t->cpu_to_node[c];
		CHECK(i >= -1 && i < t->nnodes, "cpu_to_node out of range");
		CHECK(i < 0 || c < t->ncpus, "cpu_to_node maps an id beyond ncpus");
		CHECK(i >= 0 || !t->cpu_allowed[c], "an id that is no CPU is allowed");
		mapped += i >= 0;
		nallowed += t->cpu_allowed[c] != 0;
	}
	CHECK(mapped == listed, "cpu_to_node maps CPUs no list holds");
	CHECK(nallowed == t->nallowed_cpus, "nallowed_cpus wrong");
	CHECK(t->ncpus == 0 || t->cpu_to_node[t->ncpus - 1] >= 0, "ncpus larger than the last CPU id + 1");
	return NULL;
}
