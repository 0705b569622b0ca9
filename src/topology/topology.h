/*
 * topology.h — the machine as a frozen table. Only src/topology/ includes <hwloc.h>.
 *
 * np_topo_load() discovers the machine once with hwloc (or loads an hwloc XML file or synthetic
 * string to rehearse another machine; a machine of one node needs no discovery and no hwloc)
 * and fills a plain struct np_topo that nothing changes afterwards. Everything else in the library reads that table; the running library's table is
 * np_topo_table, filled once at initialisation.
 *
 * Nodes are kept in a dense index 0..nnodes-1 in increasing OS id order; node[i].os_id maps back
 * to the kernel's number (ids may be sparse). Invariants: see np_topo_check().
 */
#ifndef NP_TOPOLOGY_H
#define NP_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "internal.h"

#define NP_MAX_CPUS 4096
#define NP_DISTANCE_LOCAL 10
#define NP_DISTANCE_REMOTE 20
/* A node's memory, at most: 64 PiB, more than any machine has, so that sums over the nodes
 * and percentages of a node's size cannot overflow 64 bits. */
#define NP_TOPO_NODE_MEM_MAX ((uint64_t)1 << 56)

enum np_topo_source {
	NP_TOPO_SYSTEM,    /* discovered on this machine: binding is real */
	NP_TOPO_XML,       /* rehearsal from an hwloc XML file */
	NP_TOPO_SYNTHETIC, /* rehearsal from an hwloc synthetic string */
	NP_TOPO_FALLBACK,  /* loading failed: one node with every CPU and all memory */
};

struct np_topo_node {
	int os_id;             /* the kernel's node number */
	uint64_t mem_bytes;    /* local memory; 0 = memoryless */
	int ncpus;             /* CPUs of this node (allowed or not) */
	int cpu_first;         /* cpu[cpu_first .. cpu_first + ncpus).list: OS CPU ids, ascending */
	bool has_memory;       /* mem_bytes > 0 */
	bool has_cpus;         /* ncpus > 0; false for a CPU-less memory node (CXL, HBM) */
	bool mem_allowed;      /* has memory, and the process may take memory from it (cpuset, membind) */
	bool cpus_allowed;     /* at least one of its CPUs is in the process's allowed set */
	int nfallback;         /* entries in fallback[] */
	/* Allowed nodes with memory, nearest first by distance from this node; ties broken by
	 * OS id, so equidistant nodes stand next to each other and fallback_dist[] shows the
	 * groups. A node with allowed memory lists itself first. */
	uint8_t fallback[NP_MAX_NODES];
	uint8_t fallback_dist[NP_MAX_NODES];
	uint8_t distance[NP_MAX_NODES]; /* SLIT row: to each node, by dense index */
};

/* Entry c of the per-CPU table: what CPU id c is, and the c-th entry of the nodes' CPU lists
 * (np_topo_node.cpu_first). One array of them, not three, so that a machine's entries lie
 * together at its start. */
struct np_topo_cpu {
	int16_t node;    /* dense node of CPU id c, -1 for an id that is no CPU */
	uint16_t list;   /* the nodes' CPU lists, end to end */
	uint8_t allowed; /* 1 when CPU id c is in the process's allowed set */
};

/* A memory policy (set_mempolicy(2), numactl) as the library applies it: in the dense nodes of
 * a table, only those with allowed memory. MPOL_BIND at start-up makes the nodes outside it not
 * allowed when the table is loaded (np_topo_node.mem_allowed); one a thread sets since over
 * fewer nodes is PREFERRED over them (kernel_mode says MPOL_BIND). */
enum np_topo_policy_mode {
	NP_POLICY_DEFAULT = 0,    /* the library's own placement: the thread's CPU's node */
	NP_POLICY_PREFERRED = 1,  /* MPOL_PREFERRED, MPOL_PREFERRED_MANY: these nodes first */
	NP_POLICY_INTERLEAVE = 2, /* MPOL_INTERLEAVE, MPOL_WEIGHTED_INTERLEAVE: spread over them */
};

struct np_topo_policy {
	uint8_t mode;     /* enum np_topo_policy_mode */
	int kernel_mode;  /* the MPOL_* mode the kernel reported (flags stripped), -1 when unknown */
	uint64_t nodes;   /* dense nodes with allowed memory it names (0 for DEFAULT) */
};

/* The parts a machine uses lie at the start of each array, and the arrays after the header
 * in the order node, cpu: a machine of up to 16 nodes and about 290 CPUs writes two of the
 * pages of a page-aligned table (np_topo_table is), each a page fault at every process start
 * (docs/perf-issue15.md, section 46). */
struct np_topo {
	enum np_topo_source source;
	bool is_system;              /* source == NP_TOPO_SYSTEM */
	int nnodes;                  /* >= 1 */
	int ncpus;                   /* cpu[] covers OS CPU ids 0 .. ncpus-1 */
	int nallowed_cpus;           /* CPUs in the allowed set */
	int nmem_nodes;              /* nodes with allowed memory (>= 1) */
	uint64_t total_mem;          /* bytes over all nodes */
	char desc[256];              /* what was loaded: "this machine", the XML path, ... */
	/* The loading thread's memory policy (np_topo_read_policy), for `numapage topology`. */
	struct np_topo_policy policy;
	struct np_topo_node node[NP_MAX_NODES];
	/* CPU ids 0 .. ncpus-1; entries from ncpus on are 0 and unused (np_topo_cpu_node bounds
	 * the id): nothing writes the pages of CPU ids a machine does not have. */
	struct np_topo_cpu cpu[NP_MAX_CPUS];
};

/* Restrictions applied on top of what hwloc reports; OS ids; NULL arrays mean "no restriction".
 * Used to apply numactl --membind / --cpunodebind and cgroup cpusets, and by tests. */
struct np_topo_allow {
	const uint8_t *cpus;   /* cpus[id] != 0: CPU id allowed; ids >= ncpus not allowed */
	int ncpus;
	const uint8_t *nodes;  /* nodes[id] != 0: memory may come from OS node id */
	int nnodes;
};

/* The running library's table (valid after initialisation; zero-filled before). */
extern struct np_topo np_topo_table;

/*
 * Fills *t. spec NULL or "" = this machine (restricted by the process's cpuset, affinity-free
 * allowed set and memory policy; on a machine of one node, where hwloc is not run, the allowed
 * CPUs are the start-up affinity); "synthetic:<string>" = hwloc synthetic topology; anything else
 * = an hwloc XML file (a regular file of at most 16 MiB). allow (may be NULL) restricts further.
 * On any failure *t becomes one node holding every CPU and all memory, one warning naming the
 * cause is printed, and -1 is returned; otherwise 0. What the user names (spec, or hwloc's
 * HWLOC_XMLFILE, HWLOC_SYNTHETIC, HWLOC_FSROOT) is loaded in a child process with bounded time
 * and memory (np_os_isolate), so a crash or a runaway in hwloc is a warning, not the end of
 * the program; where no child can be made, it is not loaded (a failure as above). hwloc sees
 * only the HWLOC_* variables (none in a secure process, where spec is ignored too) and loads
 * no plugin unless HWLOC_PLUGINS_PATH says so. Allocates only through
 * hwloc (inside the library: the bootstrap allocator) and frees everything before returning.
 * If the environment redirects hwloc away from this machine, the table says it is not this
 * machine (is_system false) unless HWLOC_THISSYSTEM=1 asserts it is.
 */
int np_topo_load(struct np_topo *t, const char *spec, const struct np_topo_allow *allow);
/* The tables np_topo_load and np_topo_fallback fill must be zero-filled (static) or filled by
 * them before: they clear only what the table's ncpus and nnodes say is in use (the header,
 * the nodes up to nnodes, the CPU entries up to ncpus), and write nothing beyond what the new
 * table uses. A small machine's table then lies in two of its ten pages; the others are never
 * touched, so never resident (a read allocates a page too where a kernel has no shared zero
 * page: docs/perf-issue15.md sections 15 and 46).
 * np_topo_clear zeroes a table that way; np_topo_copy copies one. */
void np_topo_clear(struct np_topo *t);
void np_topo_copy(struct np_topo *dst, const struct np_topo *src);
/* Fills *t with the one-node fallback for a machine of ncpus CPUs and mem_bytes of memory;
 * why goes into t->desc. Prints nothing (np_topo_load prints the one warning). */
void np_topo_fallback(struct np_topo *t, int ncpus, uint64_t mem_bytes, const char *why);

/* Dense index of OS node id, or -1. */
int np_topo_node_index(const struct np_topo *t, int os_id);
/* Dense node index of an OS CPU id. In a rehearsal, ids beyond the fixture wrap modulo its CPU
 * count, so any real CPU maps to some rehearsed node. Unknown CPU (or -1): node 0's index of
 * the first node with CPUs. */
int np_topo_cpu_node(const struct np_topo *t, int cpu);
/* The dense node of the CPU the calling thread runs on. One the table lacks (offline when this
 * machine's topology was read, online since) is the kernel's node for it (np_os_current_os_node),
 * where np_topo_cpu_node would give the first node with CPUs. */
int np_topo_current_node(const struct np_topo *t);
/* The k-th OS CPU id of node i (k < its ncpus), ascending in k. */
static inline int np_topo_node_cpu(const struct np_topo *t, int i, int k)
{
	return t->cpu[t->node[i].cpu_first + k].list;
}

/* The calling thread's memory policy over t's nodes: MPOL_PREFERRED(_MANY) -> PREFERRED,
 * MPOL_INTERLEAVE and MPOL_WEIGHTED_INTERLEAVE (weights not applied) -> INTERLEAVE, MPOL_BIND
 * over fewer than the allowed nodes -> PREFERRED, anything else -> DEFAULT (MPOL_DEFAULT,
 * MPOL_LOCAL, MPOL_BIND over all of them: see np_topo_policy). DEFAULT as well
 * when t is not this machine (a rehearsal's nodes are not the kernel's) or when the policy
 * names no node of t with allowed memory. One get_mempolicy(2). */
void np_topo_read_policy(const struct np_topo *t, struct np_topo_policy *out);
/* What a policy says, for messages: "interleave over nodes 0-3 (MPOL_INTERLEAVE)". */
void np_topo_policy_describe(const struct np_topo *t, const struct np_topo_policy *pol, char *buf, size_t size);

/* Checks every invariant of the table (fallback lists sorted and complete, cpu[].node agrees
 * with the CPU lists, distances sane); returns NULL when sound, else a description. */
const char *np_topo_check(const struct np_topo *t);

/* Prints the table as `numapage topology` shows it: text, or JSON when json is true. */
void np_topo_print(const struct np_topo *t, FILE *out, bool json);

#endif /* NP_TOPOLOGY_H */
