/*
 * topology_hwloc.c — one hwloc session (see topology_hwloc.h): the environment hwloc may see,
 * what we ask of it, and the extraction of what it found into struct np_topo. The only file of
 * the library that includes <hwloc.h>. It runs inside malloc start-up under LD_PRELOAD, so
 * hwloc is asked for as little as possible (no caches, I/O,
 * plugins, CPU kinds, memory attributes) and every hwloc object is destroyed before returning;
 * the table keeps no pointer into hwloc memory.
 */
#include <errno.h>
#include <hwloc.h>
#include <string.h>

#include "log.h"
#include "os.h"
#include "topology/topology_hwloc.h"

/*
 * libhwloc is not linked: it is loaded (np_os_library_open) the first time a table needs it, so
 * a program on a machine of one node, which needs no discovery (topology_load.c), maps neither
 * libhwloc nor the libraries it needs (libm, libudev on Debian): half a megabyte of a small
 * program's resident memory. Every hwloc function this file calls is a pointer here, resolved
 * by name; header functions that are inline call others (hwloc_get_nbobjs_by_type), so this
 * file uses none of them, and the library's link, which has no -lhwloc and allows no undefined
 * symbol, fails on any direct call. The soname is the one of the headers' ABI (meson.build).
 */
#define HW_FN(f) __typeof__(&f) f
static struct np_hwloc {
	HW_FN(hwloc_topology_init);
	HW_FN(hwloc_topology_destroy);
	HW_FN(hwloc_topology_load);
	HW_FN(hwloc_topology_set_flags);
	HW_FN(hwloc_topology_set_type_filter);
	HW_FN(hwloc_topology_set_cache_types_filter);
	HW_FN(hwloc_topology_set_icache_types_filter);
	HW_FN(hwloc_topology_set_components);
	HW_FN(hwloc_topology_set_synthetic);
	HW_FN(hwloc_topology_set_xml);
	HW_FN(hwloc_topology_is_thissystem);
	HW_FN(hwloc_topology_get_allowed_cpuset);
	HW_FN(hwloc_topology_get_allowed_nodeset);
	HW_FN(hwloc_get_type_depth);
	HW_FN(hwloc_get_nbobjs_by_depth);
	HW_FN(hwloc_get_obj_by_depth);
	HW_FN(hwloc_distances_get_by_type);
	HW_FN(hwloc_distances_get_name);
	HW_FN(hwloc_distances_release);
	HW_FN(hwloc_bitmap_isset);
	HW_FN(hwloc_bitmap_weight);
} H;
#undef HW_FN

#define HW_NAME(f) {#f, offsetof(struct np_hwloc, f)}
static const struct {
	const char *name;
	size_t off;
} hw_names[] = {
	HW_NAME(hwloc_topology_init), HW_NAME(hwloc_topology_destroy),
	HW_NAME(hwloc_topology_load), HW_NAME(hwloc_topology_set_flags),
	HW_NAME(hwloc_topology_set_type_filter), HW_NAME(hwloc_topology_set_cache_types_filter),
	HW_NAME(hwloc_topology_set_icache_types_filter), HW_NAME(hwloc_topology_set_components),
	HW_NAME(hwloc_topology_set_synthetic), HW_NAME(hwloc_topology_set_xml),
	HW_NAME(hwloc_topology_is_thissystem), HW_NAME(hwloc_topology_get_allowed_cpuset),
	HW_NAME(hwloc_topology_get_allowed_nodeset), HW_NAME(hwloc_get_type_depth),
	HW_NAME(hwloc_get_nbobjs_by_depth), HW_NAME(hwloc_get_obj_by_depth),
	HW_NAME(hwloc_distances_get_by_type), HW_NAME(hwloc_distances_get_name),
	HW_NAME(hwloc_distances_release), HW_NAME(hwloc_bitmap_isset), HW_NAME(hwloc_bitmap_weight),
};
#undef HW_NAME
_Static_assert(sizeof hw_names / sizeof hw_names[0] * sizeof(void (*)(void)) == sizeof(struct np_hwloc),
	       "every pointer of struct np_hwloc has its name");

bool np_topo_hwloc_open(char *why, size_t why_size)
{
	void *lib = np_os_library_open(NP_HWLOC_SONAME, why, why_size);
	if (!lib)
		return false;
	/* The ABI of the headers we were built with (the same major API version) first: another
	 * major version may lack or change what we would resolve. */
	__typeof__(&hwloc_get_api_version) api_version;
	void *fn = np_os_library_symbol(lib, "hwloc_get_api_version");
	if (!fn) {
		np_format(why, why_size, "%s has no hwloc_get_api_version", NP_HWLOC_SONAME);
		return false;
	}
	memcpy(&api_version, &fn, sizeof fn);
	unsigned version = api_version();
	if (version >> 16 != HWLOC_API_VERSION >> 16) {
		np_format(why, why_size, "%s has API version 0x%x, built for 0x%x", NP_HWLOC_SONAME, version,
			  (unsigned)HWLOC_API_VERSION);
		return false;
	}
	struct np_hwloc h;
	for (size_t k = 0; k < NP_ARRAY_SIZE(hw_names); k++) {
		fn = np_os_library_symbol(lib, hw_names[k].name);
		if (!fn) {
			np_format(why, why_size, "%s has no %s", NP_HWLOC_SONAME, hw_names[k].name);
			return false;
		}
		memcpy((char *)&h + hw_names[k].off, &fn, sizeof fn);
	}
	H = h;
	return true;
}

/* The objects of a type and, in *depth, the depth to fetch them at (hwloc_get_obj_by_depth):
 * hwloc's inline hwloc_get_nbobjs_by_type through the pointers. A type at several depths (none
 * that we ask for) counts as absent. */
static int count_of(hwloc_topology_t topo, hwloc_obj_type_t type, int *depth)
{
	*depth = H.hwloc_get_type_depth(topo, type);
	if (*depth == HWLOC_TYPE_DEPTH_UNKNOWN || *depth == HWLOC_TYPE_DEPTH_MULTIPLE)
		return 0;
	return (int)H.hwloc_get_nbobjs_by_depth(topo, *depth);
}

#define MPOL_BIND_MODE 2          /* MPOL_BIND in <linux/mempolicy.h> */
#define MPOL_MODE_MASK 0xff       /* get_mempolicy ORs MPOL_F_* flags into the mode */
#define MEMPOLICY_BITS NP_OS_NODE_IDS
#define BITS_PER_LONG (8 * sizeof(unsigned long))

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

bool np_topo_hwloc_steered(void)
{
	for (char **e = environ; e && *e; e++)
		if (strncmp(*e, "HWLOC_", 6) == 0)
			return true;
	return false;
}

bool np_topo_hwloc_redirects(void)
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
	H.hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED |
					       HWLOC_TOPOLOGY_FLAG_DONT_CHANGE_BINDING |
					       HWLOC_TOPOLOGY_FLAG_NO_MEMATTRS |
					       HWLOC_TOPOLOGY_FLAG_NO_CPUKINDS);
	static const hwloc_obj_type_t none[] = {HWLOC_OBJ_BRIDGE, HWLOC_OBJ_PCI_DEVICE, HWLOC_OBJ_OS_DEVICE,
						 HWLOC_OBJ_MISC}; /* the I/O types, and Misc */
	for (size_t k = 0; k < NP_ARRAY_SIZE(none); k++)
		H.hwloc_topology_set_type_filter(topo, none[k], HWLOC_TYPE_FILTER_KEEP_NONE);
	H.hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
	if (src == NP_TOPO_SYSTEM) {
		H.hwloc_topology_set_cache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
		H.hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
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
	if (H.hwloc_topology_is_thissystem(topo))
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

/* Fills the nodes' distance rows from hwloc's NUMA latency matrix (the SLIT); 10 local / 20 remote where
 * hwloc has none. A matrix that makes no sense for us (a zero, a value over 255, a diagonal that
 * is not the row's minimum) is ignored as a whole. */
static void read_distances(struct np_topo *t, hwloc_topology_t topo, hwloc_obj_t *nodes)
{
	int n = t->nnodes;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			t->node[i].distance[j] = i == j ? NP_DISTANCE_LOCAL : NP_DISTANCE_REMOTE;

	struct hwloc_distances_s *dist[4];
	unsigned nr = NP_ARRAY_SIZE(dist);
	if (H.hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, dist,
					HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) < 0)
		return;
	if (nr > NP_ARRAY_SIZE(dist))
		nr = NP_ARRAY_SIZE(dist);
	/* Prefer the kernel's NUMALatency matrix; else the first one. */
	struct hwloc_distances_s *d = NULL;
	for (unsigned k = 0; k < nr; k++) {
		const char *name = H.hwloc_distances_get_name(topo, dist[k]);
		if (!d || (name && strcmp(name, "NUMALatency") == 0))
			d = dist[k];
	}
	if (d) {
		uint8_t m[NP_MAX_NODES][NP_MAX_NODES];
		for (int i = 0; i < n; i++)
			memcpy(m[i], t->node[i].distance, sizeof m[i]);
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
		if (ok) /* the rows of the n nodes */
			for (int i = 0; i < n; i++)
				memcpy(t->node[i].distance, m[i], sizeof m[i]);
		else
			np_verbose("topology: hwloc's NUMA distances are unusable; using 10/20");
	}
	for (unsigned k = 0; k < nr; k++)
		H.hwloc_distances_release(topo, dist[k]);
}

/* Orders node i's candidates: self first, then by distance, ties by OS id (= dense index). */
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
			bool in = pass == 0 ? H.hwloc_bitmap_isset(nodes[i]->cpuset, pu->os_index)
					    : H.hwloc_bitmap_isset(pu->nodeset, nodes[i]->os_index);
			if (!in)
				continue;
			int w = H.hwloc_bitmap_weight(nodes[i]->cpuset);
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
	int node_depth, pu_depth;
	int nn = count_of(topo, HWLOC_OBJ_NUMANODE, &node_depth);
	if (nn < 1)
		return "hwloc found no NUMA node";
	if (nn > NP_MAX_NODES) {
		np_format(why_buf, why_size, "%d NUMA nodes, more than the %d supported", nn,
			  NP_MAX_NODES);
		return why_buf;
	}
	/* Dense indices in increasing OS id order (hwloc's logical order need not be). */
	int k = 0;
	for (hwloc_obj_t o; k < nn && (o = H.hwloc_get_obj_by_depth(topo, node_depth, (unsigned)k));) {
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

	/* Owners are stored plus one while ncpus grows, then shifted: ids that are no CPU become
	 * -1 up to ncpus, and the entries beyond stay 0, unwritten. */
	int npus = 0;
	int npu_objs = count_of(topo, HWLOC_OBJ_PU, &pu_depth);
	for (int p = 0; p < npu_objs; p++) {
		hwloc_obj_t pu = H.hwloc_get_obj_by_depth(topo, pu_depth, (unsigned)p);
		if (!pu)
			break;
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
		t->cpu[pu->os_index].node = (int16_t)(owner + 1);
		if ((int)pu->os_index >= t->ncpus)
			t->ncpus = (int)pu->os_index + 1;
		npus++;
	}
	if (!npus)
		return "hwloc found no CPU";
	for (int c = 0; c < t->ncpus; c++)
		t->cpu[c].node--;

	hwloc_const_cpuset_t cpus_ok = H.hwloc_topology_get_allowed_cpuset(topo);
	hwloc_const_nodeset_t nodes_ok = H.hwloc_topology_get_allowed_nodeset(topo);
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
			if (t->cpu[c].node != i)
				continue;
			t->cpu[first++].list = (uint16_t)c;
			if (H.hwloc_bitmap_isset(cpus_ok, (unsigned)c) && allow_cpu(allow, c)) {
				t->cpu[c].allowed = 1;
				t->nallowed_cpus++;
				n->cpus_allowed = true;
			}
		}
		n->ncpus = first - n->cpu_first;
		n->has_cpus = n->ncpus > 0;
		n->mem_bytes = nodes[i]->attr ? nodes[i]->attr->numanode.local_memory : 0;
		if (n->mem_bytes > NP_TOPO_NODE_MEM_MAX) {
			np_format(why_buf, why_size, "NUMA node %d has more than %d PiB of memory", n->os_id,
				  (int)(NP_TOPO_NODE_MEM_MAX >> 50));
			return why_buf;
		}
		n->has_memory = n->mem_bytes > 0;
		n->mem_allowed = n->has_memory && H.hwloc_bitmap_isset(nodes_ok, nodes[i]->os_index) &&
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
	np_topo_build_fallback(t);
	return NULL;
}

int np_topo_hwloc_run(void *arg)
{
	struct np_topo_job *job = arg;
	struct np_topo *t = job->out;
	const char *spec = job->spec;
	enum np_topo_source src = job->src;
	char *why = job->why;
	size_t why_size = sizeof job->why;
	char what[4096 + 64]; /* what was loaded, for the warning whole and the table's desc (cut there) */
	np_format(what, sizeof what, "%s", src == NP_TOPO_SYSTEM ? "this machine" : spec);

	hwloc_env_enter(job->secure);
	hwloc_topology_t topo;
	if (H.hwloc_topology_init(&topo) < 0) {
		np_format(why, why_size, "hwloc_topology_init failed: %s", np_topo_errtext(errno));
		hwloc_env_leave();
		return 0;
	}
	restrict_discovery(topo, src);

	int err = 0;
	if (src == NP_TOPO_SYNTHETIC) {
		err = H.hwloc_topology_set_synthetic(topo, spec + strlen(NP_TOPO_SYNTHETIC_PREFIX));
		if (err < 0)
			np_format(why, why_size, "bad hwloc synthetic topology '%s'", spec + strlen(NP_TOPO_SYNTHETIC_PREFIX));
	} else if (src == NP_TOPO_XML) {
		/* hwloc opens the file here; it reports a missing or unreadable file by errno,
		 * and a file it cannot parse by EINVAL (here or at load). */
		errno = 0;
		err = H.hwloc_topology_set_xml(topo, spec);
		if (err < 0 && errno && errno != EINVAL)
			np_format(why, why_size, "cannot read hwloc XML '%s': %s", spec, np_topo_errtext(errno));
		else if (err < 0)
			np_format(why, why_size, "cannot parse hwloc XML '%s'", spec);
	}
	if (!err) {
		err = H.hwloc_topology_load(topo);
		if (err < 0 && src == NP_TOPO_XML)
			np_format(why, why_size, "cannot parse hwloc XML '%s'", spec);
		else if (err < 0)
			np_format(why, why_size, "hwloc could not load %s: %s", what, np_topo_errtext(errno));
	}
	if (!err && src == NP_TOPO_SYSTEM)
		src = redirected_source(topo, what, sizeof what);
	if (!err) {
		np_topo_clear(t);
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
	H.hwloc_topology_destroy(topo);
	hwloc_env_leave();
	if (!err) {
		np_topo_set_desc(t, "", what);
		job->ok = true;
	}
	return 0;
}

