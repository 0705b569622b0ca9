/*
 * topology_load.c — np_topo_load (see topology.h): which inputs are acceptable at all, and where
 * hwloc runs: in this process for this machine's own discovery, in a child process with bounded
 * time and memory for anything the user names. Any failure gives the one-node fallback and one
 * warning.
 */
#include <errno.h>
#include <string.h>

#include "log.h"
#include "os.h"
#include "topology/topology_hwloc.h"

/* The fallback for this machine: its CPU count and memory as the C library reports them. */
static int fail(struct np_topo *t, const char *why)
{
	int cpus = np_os_cpu_count();
	np_warn("topology: %s; using one node with every CPU and all memory", why);
	np_topo_fallback(t, cpus > 0 ? cpus : 1, np_os_memory_bytes(), why);
	return -1;
}

/*
 * What the user names (NUMAPAGE_TOPOLOGY, HWLOC_XMLFILE, HWLOC_SYNTHETIC, HWLOC_FSROOT) is
 * loaded in a child process (np_os_isolate): hwloc can crash on a malformed XML file, read
 * /dev/zero forever, or spend minutes and gigabytes on a synthetic topology of 70,000 PUs,
 * and none of that may take the program down. The child hands the finished table back
 * through shared memory; a child that crashes, runs out of its memory or time, or hands back
 * a table that fails np_topo_check gives the one-node fallback and a warning. Where no child
 * can be made (a used-up RLIMIT_NPROC, a sandbox that forbids clone), a named input is not
 * loaded at all, sound or not: in this process a crash or a runaway in hwloc would be the
 * program's. Only regular files of at most NP_TOPO_XML_MAX bytes are given to hwloc at all.
 * Discovering this machine without redirection runs in-process: it is every program's
 * start-up, and its input is the kernel's.
 */
#define NP_TOPO_XML_MAX ((uint64_t)16 << 20)
#define NP_TOPO_SPEC_MAX 1024
#define NP_TOPO_LOAD_TIMEOUT_MS 10000
#define NP_TOPO_LOAD_MEMORY ((size_t)1 << 30)

struct isolated_load {
	struct np_topo_job job;
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
		np_format(why, why_size, "cannot read hwloc XML '%s': %s", spec, np_topo_errtext(-rc));
	else if (size > NP_TOPO_XML_MAX)
		np_format(why, why_size, "hwloc XML '%s' is larger than %d MiB", spec, (int)(NP_TOPO_XML_MAX >> 20));
	return rc == 0 && size <= NP_TOPO_XML_MAX;
}

/* A table loaded: the thread's memory policy over it, and (debug builds) its invariants. */
static int loaded(struct np_topo *t)
{
	np_topo_read_policy(t, &t->policy);
	if (np_config_debug >= 2) {
		const char *bad = np_topo_check(t);
		if (bad)
			np_fatal("topology: invariant broken: %s", bad);
	}
	return 0;
}

/*
 * A machine with one node needs no discovery, nor libnuma (its binds and policies would name
 * node 0, where memory goes anyway): every CPU is node 0's, node 0 has all the memory
 * (the kernel's total, which is node 0's MemTotal that hwloc reads: a system call, where the
 * node's meminfo file took 14 us to read, the kernel formatting thirty lines), and the distance is 10. Where /sys/devices/system/node
 * lists node0 alone (np_os_node_max), hwloc is not run at all: its discovery (thousands of sysfs files on a large machine, a few for
 * each CPU even with caches filtered out) was about 80% of a small program's start-up time, and
 * the library code it runs a third of a megabyte of its resident memory (docs/perf-issue15.md).
 * The table is the one hwloc gives, but for two things: the CPUs are every configured id (hwloc
 * lists the online ones), and the allowed ones are the process's affinity at start-up (hwloc
 * reads the cgroup's cpuset, which a container's affinity equals but a `taskset` narrows). On a
 * one-node machine neither changes where memory goes. Returns -1 where the machine is not
 * known to have one node, or where allow restricts it: the full path then fills t, with its
 * messages.
 */
static int load_one_node(struct np_topo *t, const struct np_topo_allow *allow, bool secure)
{
	if (np_os_node_max() != 0 || (allow && (allow->cpus || allow->nodes)) ||
	    (!secure && np_topo_hwloc_steered()))
		return -1;
	uint64_t mask[NP_OS_CPU_IDS / 64];
	if (np_os_affinity(mask) <= 0)
		return -1;
	/* The configured count, or past the highest allowed id where ids have gaps. */
	int ncpus = np_os_cpu_count();
	for (int c = NP_MIN(NP_OS_CPU_IDS, NP_MAX_CPUS) - 1; c >= ncpus; c--)
		if (mask[c / 64] >> (c % 64) & 1) {
			ncpus = c + 1;
			break;
		}
	np_topo_fallback(t, ncpus > 0 ? ncpus : 1, np_os_memory_bytes(), NULL);
	t->source = NP_TOPO_SYSTEM;
	t->is_system = true;
	np_topo_set_desc(t, "", "this machine");
	t->nallowed_cpus = 0;
	for (int c = 0; c < t->ncpus; c++) {
		t->cpu[c].allowed = c < NP_OS_CPU_IDS && (mask[c / 64] >> (c % 64) & 1);
		t->nallowed_cpus += t->cpu[c].allowed;
	}
	if (!t->nallowed_cpus)
		return -1; /* an affinity beyond the ids we keep: let hwloc sort it out */
	np_verbose("topology: this machine has one node; hwloc not run");
	return 0;
}

int np_topo_load(struct np_topo *t, const char *spec, const struct np_topo_allow *allow)
{
	bool secure = np_os_is_secure();
	if (secure)
		spec = NULL; /* a secure process is what it is: no rehearsal */
	enum np_topo_source src = NP_TOPO_SYSTEM;
	if (spec && strncmp(spec, NP_TOPO_SYNTHETIC_PREFIX, strlen(NP_TOPO_SYNTHETIC_PREFIX)) == 0)
		src = NP_TOPO_SYNTHETIC;
	else if (spec && spec[0])
		src = NP_TOPO_XML;
	char why[sizeof ((struct np_topo_job *)0)->why];
	if (src != NP_TOPO_SYSTEM && !spec_acceptable(spec, src, why, sizeof why))
		return fail(t, why);

	bool isolate = src != NP_TOPO_SYSTEM || (!secure && np_topo_hwloc_redirects());
	if (!isolate && load_one_node(t, allow, secure) == 0)
		return loaded(t);
	/* Here, before any child is made: a child's dlopen could wait for ever on a loader lock
	 * that this thread held when it was cloned (its first malloc can come from inside dlopen).
	 * This machine, of several nodes (or read through hwloc's variables, HWLOC_THISSYSTEM=1
	 * making the table this machine's: a review found such a table's binds all refused with
	 * -ENOSYS): its memory is bound and its pages asked where they are, its threads' policies
	 * read, through libnuma (os.h), loaded now as hwloc is. A machine of one node that
	 * load_one_node serves never loads it: nothing there can go elsewhere. */
	if (src == NP_TOPO_SYSTEM && !np_os_numa_open(why, sizeof why))
		np_warn("cannot load libnuma (%s): memory is not bound to nodes", why);
	if (!np_topo_hwloc_open(why, sizeof why)) {
		char cause[sizeof why];
		np_format(cause, sizeof cause, "cannot load hwloc (%s)", why);
		return fail(t, cause);
	}
	struct isolated_load *shared = isolate ? np_os_map_shared(sizeof *shared) : NULL;
	struct np_topo_job local, *job = shared ? &shared->job : &local;
	*job = (struct np_topo_job){.spec = spec, .src = src, .allow = allow, .secure = secure,
				 .out = shared ? &shared->t : t};
	int rc = -ENOSYS, sig = 0;
	if (shared)
		rc = np_os_isolate(np_topo_hwloc_run, job, NP_TOPO_LOAD_MEMORY, NP_TOPO_LOAD_TIMEOUT_MS, &sig);
	const char *what = src == NP_TOPO_SYSTEM ? "this machine's topology" : spec;
	if (rc == -ETIMEDOUT)
		np_format(job->why, sizeof job->why, "hwloc did not finish loading '%s' within %d s", what,
			  NP_TOPO_LOAD_TIMEOUT_MS / 1000);
	else if (rc == -ECHILD)
		np_format(job->why, sizeof job->why, "hwloc crashed loading '%s' (signal %d)", what, sig);
	else if (rc < 0 && isolate)
		np_format(job->why, sizeof job->why, "'%s' is not loaded: no child process to contain hwloc (%s)",
			  what, shared ? np_topo_errtext(-rc) : "no shared memory");
	else if (rc < 0)
		np_topo_hwloc_run(job); /* this machine, not redirected: load here */
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
			np_topo_copy(t, &shared->t);
		}
	}
	memcpy(why, job->why, sizeof why);
	if (shared)
		np_os_unmap(shared, sizeof *shared);
	if (!ok)
		return fail(t, why);
	return loaded(t);
}

