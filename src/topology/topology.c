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

/* The fallback for this machine: its CPU count and memory as the C library reports them. */
static int fail(struct np_topo *t, const char *why)
{
	int cpus = np_os_cpu_count();
	np_warn("topology: %s; using one node with every CPU and all memory", why);
	np_topo_fallback(t, cpus > 0 ? cpus : 1, np_os_memory_bytes(), why);
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
 * hwloc's view of the environment. hwloc reads HWLOC_* variables with getenv at every step:
 * HWLOC_PLUGINS_PATH when the first topology is initialised (it dlopen()s every hwloc_*.so of
 * that directory list, or of its plugin directory when unset: Debian's hwloc_gl and
 * hwloc_opencl would pull X11 and OpenCL into every process we are preloaded into), and
 * HWLOC_XMLFILE, HWLOC_SYNTHETIC, HWLOC_FSROOT, HWLOC_THISSYSTEM, HWLOC_ALLOW and more at load.
 * hwloc has no API to ignore them (hwloc_topology_set_components() blacklists components only
 * after they were loaded). So while hwloc runs, `environ` points at a view built here, without
 * allocating: only the HWLOC_* entries, plus an empty HWLOC_PLUGINS_PATH (no plugin is loaded,
 * no directory opened) unless the user set one; and in a secure process (setuid, setgid, file
 * capabilities: the user is not who the program runs as) nothing but the empty plugin path,
 * so no variable of the caller's can load code as root or change the topology. Without
 * plugins, XML is read by hwloc's built-in parser, not libxml2.
 * The view lasts for one load, at start-up; a setenv by another thread meanwhile would be lost.
 */
extern char **environ;
#define HWLOC_ENV_MAX 64
static char *hwloc_env[HWLOC_ENV_MAX + 2];
static char **saved_env;
static char no_plugins[] = "HWLOC_PLUGINS_PATH=";

static bool env_is(const char *entry, const char *name)
{
	size_t n = strlen(name);
	return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

static void hwloc_env_enter(bool secure)
{
	int n = 0;
	bool plugins_path = false;
	for (char **e = environ; !secure && e && *e && n < HWLOC_ENV_MAX; e++) {
		if (strncmp(*e, "HWLOC_", 6) != 0)
			continue;
		plugins_path |= env_is(*e, "HWLOC_PLUGINS_PATH");
		hwloc_env[n++] = *e;
	}
	if (!plugins_path)
		hwloc_env[n++] = no_plugins;
	hwloc_env[n] = NULL;
	saved_env = environ;
	environ = hwloc_env;
}

static void hwloc_env_leave(void)
{
	environ = saved_env;
}

/* True when the caller's environment sends hwloc elsewhere than this machine. */
static bool hwloc_env_redirects(void)
{
	for (char **e = environ; e && *e; e++)
		if (env_is(*e, "HWLOC_XMLFILE") || env_is(*e, "HWLOC_SYNTHETIC") || env_is(*e, "HWLOC_FSROOT"))
			return true;
	return false;
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
	if (nodes[nn - 1]->os_index >= MEMPOLICY_BITS) {
		np_format(why_buf, why_size, "NUMA node id %u is beyond the kernel's limit of %d",
			  nodes[nn - 1]->os_index, MEMPOLICY_BITS - 1);
		return why_buf;
	}

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

/* One load, as the child process of an isolated load runs it (or this process when the load
 * is not steered by the user). Inputs, then what came out: *out filled when ok, else why. */
struct load_job {
	const char *spec;
	enum np_topo_source src;
	const struct np_topo_allow *allow;
	bool secure;
	bool ok;
	char why[200];
	struct np_topo *out;
};

static int run_hwloc(void *arg)
{
	struct load_job *job = arg;
	struct np_topo *t = job->out;
	const char *spec = job->spec;
	enum np_topo_source src = job->src;
	char *why = job->why;
	size_t why_size = sizeof job->why;
	char what[sizeof t->desc]; /* what was loaded, for the table's desc and the warning */
	np_format(what, sizeof what, "%s", src == NP_TOPO_SYSTEM ? "this machine" : spec);

	hwloc_env_enter(job->secure);
	hwloc_topology_t topo;
	if (hwloc_topology_init(&topo) < 0) {
		np_format(why, why_size, "hwloc_topology_init failed: %s", errtext(errno));
		hwloc_env_leave();
		return 0;
	}
	restrict_discovery(topo, src);

	int err = 0;
	if (src == NP_TOPO_SYNTHETIC) {
		err = hwloc_topology_set_synthetic(topo, spec + strlen(SYNTHETIC_PREFIX));
		if (err < 0)
			np_format(why, why_size, "bad hwloc synthetic topology '%s'", spec + strlen(SYNTHETIC_PREFIX));
	} else if (src == NP_TOPO_XML) {
		/* hwloc opens the file here; it reports a missing or unreadable file by errno,
		 * and a file it cannot parse by EINVAL (here or at load). */
		errno = 0;
		err = hwloc_topology_set_xml(topo, spec);
		if (err < 0 && errno && errno != EINVAL)
			np_format(why, why_size, "cannot read hwloc XML '%s': %s", spec, errtext(errno));
		else if (err < 0)
			np_format(why, why_size, "cannot parse hwloc XML '%s'", spec);
	}
	if (!err) {
		err = hwloc_topology_load(topo);
		if (err < 0 && src == NP_TOPO_XML)
			np_format(why, why_size, "cannot parse hwloc XML '%s'", spec);
		else if (err < 0)
			np_format(why, why_size, "hwloc could not load %s: %s", what, errtext(errno));
	}
	if (!err && src == NP_TOPO_SYSTEM)
		src = redirected_source(topo, what, sizeof what);
	if (!err) {
		memset(t, 0, sizeof *t);
		t->source = src;
		t->is_system = src == NP_TOPO_SYSTEM;
		const char *cause = extract(t, topo, job->allow, why, why_size);
		if (cause) {
			if (cause != why)
				np_format(why, why_size, "%s", cause);
			size_t len = strlen(why);
			np_format(why + len, why_size - len, " in %s", what);
			err = -1;
		}
	}
	hwloc_topology_destroy(topo);
	hwloc_env_leave();
	if (!err) {
		set_desc(t, "", what);
		job->ok = true;
	}
	return 0;
}

/*
 * What the user names (NUMAPAGE_TOPOLOGY, HWLOC_XMLFILE, HWLOC_SYNTHETIC, HWLOC_FSROOT) is
 * loaded in a child process (np_os_isolate): hwloc can crash on a malformed XML file, read
 * /dev/zero forever, or spend minutes and gigabytes on a synthetic topology of 70,000 PUs,
 * and none of that may take the program down. The child hands the finished table back
 * through shared memory; a child that crashes, runs out of its memory or time, or hands back
 * a table that fails np_topo_check gives the one-node fallback and a warning. Only regular
 * files of at most NP_TOPO_XML_MAX bytes are given to hwloc at all. Discovering this machine
 * without redirection runs in-process: it is every program's start-up, and its input is the
 * kernel's.
 */
#define NP_TOPO_XML_MAX ((uint64_t)16 << 20)
#define NP_TOPO_SPEC_MAX 1024
#define NP_TOPO_LOAD_TIMEOUT_MS 10000
#define NP_TOPO_LOAD_MEMORY ((size_t)1 << 30)

struct isolated_load {
	struct load_job job;
	struct np_topo t;
};

static bool spec_acceptable(const char *spec, enum np_topo_source src, char *why, size_t why_size)
{
	if (strlen(spec) > NP_TOPO_SPEC_MAX) {
		np_format(why, why_size, "topology name longer than %d characters", NP_TOPO_SPEC_MAX);
		return false;
	}
	if (src != NP_TOPO_XML)
		return true;
	uint64_t size = 0;
	int rc = np_os_file_info(spec, &size);
	if (rc == -EINVAL)
		np_format(why, why_size, "'%s' is not a regular file", spec);
	else if (rc < 0)
		np_format(why, why_size, "cannot read hwloc XML '%s': %s", spec, errtext(-rc));
	else if (size > NP_TOPO_XML_MAX)
		np_format(why, why_size, "hwloc XML '%s' is larger than %d MiB", spec, (int)(NP_TOPO_XML_MAX >> 20));
	return rc == 0 && size <= NP_TOPO_XML_MAX;
}

int np_topo_load(struct np_topo *t, const char *spec, const struct np_topo_allow *allow)
{
	bool secure = np_os_is_secure();
	if (secure)
		spec = NULL; /* a secure process is what it is: no rehearsal */
	enum np_topo_source src = NP_TOPO_SYSTEM;
	if (spec && strncmp(spec, SYNTHETIC_PREFIX, strlen(SYNTHETIC_PREFIX)) == 0)
		src = NP_TOPO_SYNTHETIC;
	else if (spec && spec[0])
		src = NP_TOPO_XML;
	char why[sizeof ((struct load_job *)0)->why];
	if (src != NP_TOPO_SYSTEM && !spec_acceptable(spec, src, why, sizeof why))
		return fail(t, why);

	bool isolate = src != NP_TOPO_SYSTEM || (!secure && hwloc_env_redirects());
	struct isolated_load *shared = isolate ? np_os_map_shared(sizeof *shared) : NULL;
	struct load_job local, *job = shared ? &shared->job : &local;
	*job = (struct load_job){.spec = spec, .src = src, .allow = allow, .secure = secure,
				 .out = shared ? &shared->t : t};
	int rc = -ENOSYS, sig = 0;
	if (shared)
		rc = np_os_isolate(run_hwloc, job, NP_TOPO_LOAD_MEMORY, NP_TOPO_LOAD_TIMEOUT_MS, &sig);
	const char *what = src == NP_TOPO_SYSTEM ? "this machine's topology" : spec;
	if (rc == -ETIMEDOUT)
		np_format(job->why, sizeof job->why, "hwloc did not finish loading '%s' within %d s", what,
			  NP_TOPO_LOAD_TIMEOUT_MS / 1000);
	else if (rc == -ECHILD)
		np_format(job->why, sizeof job->why, "hwloc crashed loading '%s' (signal %d)", what, sig);
	else if (rc < 0)
		run_hwloc(job); /* no child process to be had (or not asked for): load here */
	else if (rc > 0 || (!job->ok && !job->why[0]))
		np_format(job->why, sizeof job->why, "loading '%s' failed (status %d)", what, rc);
	bool ok = job->ok && rc <= 0;
	if (ok && shared) {
		/* Made by another process: take it only when it is sound. */
		const char *bad = np_topo_check(&shared->t);
		if (bad) {
			np_format(job->why, sizeof job->why, "the table loaded from '%s' is inconsistent: %s", what, bad);
			ok = false;
		} else {
			memcpy(t, &shared->t, sizeof *t);
		}
	}
	memcpy(why, job->why, sizeof why);
	if (shared)
		np_os_unmap(shared, sizeof *shared);
	if (!ok)
		return fail(t, why);
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
