/*
 * Unit tests of src/topology: every fixture in tests/topologies (node count, memoryless and
 * CPU-less nodes, distances, fallback orders, cpu -> node with wrap-around, sparse ids), the
 * allowed-set restriction, each bad input's one-node fallback with exactly one warning, the real
 * machine, and np_topo_check() catching broken tables. Linked with the fake OS (memory policy:
 * default).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake_os.h"
#include "log.h"
#include "os.h"
#include "topology/topology.h"
#include "topology/topology_hwloc.h"

#define FIXTURE(name) NP_TOPOLOGIES "/" name

/* hwloc 2.9's XML import leaks the object it was reading (and its bitmaps, ~800 bytes) when the
 * file ends inside a tag, as broken.xml does, even though np_topo_load destroys the topology.
 * LeakSanitizer builds would fail on that; a topology we forget to destroy still shows, as its
 * allocation comes from hwloc_topology_init. Read only by LeakSanitizer; harmless elsewhere. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:hwloc_alloc_setup_object\n";
}

static struct np_topo t;
static char err[4096];

/* Loads with fd 2 redirected to a temporary file; err receives what was printed. */
static int load(const char *spec, const struct np_topo_allow *allow)
{
	fflush(stderr);
	FILE *f = tmpfile();
	assert_non_null(f);
	int saved = dup(2);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(f), 2) >= 0);
	int rc = np_topo_load(&t, spec, allow);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	size_t n = fread(err, 1, sizeof err - 1, f);
	err[n] = '\0';
	fclose(f);
	return rc;
}

static int occurrences(const char *s, const char *sub)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, sub)); p += strlen(sub))
		n++;
	return n;
}

/* Loads a fixture that must load cleanly: no output, a sound table, a rehearsal. */
static void load_ok(const char *spec)
{
	assert_int_equal(load(spec, NULL), 0);
	assert_string_equal(err, "");
	assert_null(np_topo_check(&t));
	assert_false(t.is_system);
	assert_string_equal(t.desc, spec);
}

static int idx(int os_id)
{
	int i = np_topo_node_index(&t, os_id);
	assert_true(i >= 0);
	return i;
}

/* Node os_id's fallback order, as OS ids and distances, must be exactly want/dist[0..n). */
static void expect_fallback(int os_id, int n, const int *want, const int *dist)
{
	const struct np_topo_node *node = &t.node[idx(os_id)];
	assert_int_equal(node->nfallback, n);
	for (int k = 0; k < n; k++) {
		assert_int_equal(t.node[node->fallback[k]].os_id, want[k]);
		assert_int_equal(node->fallback_dist[k], dist[k]);
	}
}
#define FALLBACK(os_id, ...) \
	expect_fallback(os_id, (int)NP_ARRAY_SIZE(((int[]){__VA_ARGS__})), (int[]){__VA_ARGS__}, dist)
#define DIST(...) dist = (int[]){__VA_ARGS__}

static int count_memoryless(void)
{
	int n = 0;
	for (int i = 0; i < t.nnodes; i++)
		n += !t.node[i].has_memory;
	return n;
}

static int count_cpuless(void)
{
	int n = 0;
	for (int i = 0; i < t.nnodes; i++)
		n += !t.node[i].has_cpus;
	return n;
}

static void r7425(void **state)
{
	(void)state;
	const int *dist;
	load_ok(FIXTURE("r7425.xml"));
	assert_int_equal(t.source, NP_TOPO_XML);
	assert_int_equal(t.nnodes, 8);
	assert_int_equal(t.ncpus, 8);
	assert_int_equal(count_memoryless(), 6);
	assert_int_equal(count_cpuless(), 0);
	assert_int_equal(t.nmem_nodes, 2);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(t.node[i].os_id, i);
		assert_int_equal(t.node[i].has_memory, i == 1 || i == 5);
		assert_int_equal(t.node[i].ncpus, 1);
		assert_int_equal(np_topo_node_cpu(&t, i, 0), i);
		assert_int_equal(np_topo_cpu_node(&t, i), i);
	}
	assert_int_equal(t.node[0].distance[0], 10);
	assert_int_equal(t.node[0].distance[3], 16);
	assert_int_equal(t.node[0].distance[4], 32);
	assert_int_equal(t.node[7].distance[4], 16);
	DIST(16, 32);
	FALLBACK(0, 1, 5);
	FALLBACK(2, 1, 5);
	FALLBACK(3, 1, 5);
	FALLBACK(4, 5, 1);
	FALLBACK(6, 5, 1);
	FALLBACK(7, 5, 1);
	DIST(10, 32);
	FALLBACK(1, 1, 5);
	FALLBACK(5, 5, 1);
	/* Rehearsal: CPU ids past the fixture wrap around it. */
	assert_int_equal(np_topo_cpu_node(&t, 8), 0);
	assert_int_equal(np_topo_cpu_node(&t, 13), 5);
	assert_int_equal(np_topo_cpu_node(&t, 8 * 100 + 7), 7);
	assert_int_equal(np_topo_cpu_node(&t, -1), 0);
	/* This machine's table: a CPU it lacks (offline when it was read, online since) is on
	 * the kernel's node for it, not on the first node with CPUs (a helper's guest: cpu 6 of
	 * memoryless node 6 got node 0's nearest memory, in the other package). */
	t.is_system = true;
	t.cpu[6].node = -1;
	np_fake_os_set_cpu(6);
	np_fake_os_set_os_node(6);
	assert_int_equal(np_topo_current_node(&t), 6);
	np_fake_os_set_cpu(8);
	np_fake_os_set_os_node(5);
	assert_int_equal(np_topo_current_node(&t), 5);
	np_fake_os_set_os_node(-1); /* the kernel does not say: as before */
	assert_int_equal(np_topo_current_node(&t), 0);
	np_fake_os_set_cpu(3);
	np_fake_os_set_os_node(5); /* a CPU the table has: the table answers */
	assert_int_equal(np_topo_current_node(&t), 3);
	np_fake_os_set_cpu(0);
	np_fake_os_set_os_node(-1);
}

static void amd_2990wx(void **state)
{
	(void)state;
	const int *dist;
	load_ok(FIXTURE("2990wx.xml"));
	assert_int_equal(t.nnodes, 4);
	assert_int_equal(count_memoryless(), 2);
	assert_int_equal(count_cpuless(), 0);
	assert_false(t.node[1].has_memory);
	assert_false(t.node[3].has_memory);
	assert_int_equal(t.node[1].ncpus, 2);
	assert_int_equal(np_topo_node_cpu(&t, 1, 0), 2);
	assert_int_equal(np_topo_node_cpu(&t, 1, 1), 3);
	/* Memoryless nodes: both memory nodes at distance 16, kept together, ties by id. */
	DIST(16, 16);
	FALLBACK(1, 0, 2);
	FALLBACK(3, 0, 2);
	DIST(10, 16);
	FALLBACK(0, 0, 2);
	FALLBACK(2, 2, 0);
	assert_int_equal(np_topo_cpu_node(&t, 3), 1);
	assert_int_equal(np_topo_cpu_node(&t, 6), 3);
	assert_int_equal(np_topo_cpu_node(&t, 8 + 3), 1);
}

static void cxl(void **state)
{
	(void)state;
	const int *dist;
	load_ok(FIXTURE("cxl.xml"));
	assert_int_equal(t.nnodes, 3);
	assert_int_equal(count_memoryless(), 0);
	assert_int_equal(count_cpuless(), 1);
	assert_false(t.node[2].has_cpus);
	assert_int_equal(t.node[2].ncpus, 0);
	assert_false(t.node[2].cpus_allowed);
	assert_true(t.node[2].mem_allowed);
	assert_int_equal(t.nmem_nodes, 3);
	assert_int_equal(t.node[0].distance[1], 20);
	assert_int_equal(t.node[1].distance[2], 30);
	/* The CPU-less node takes its own memory first. */
	DIST(10, 30, 30);
	FALLBACK(2, 2, 0, 1);
	DIST(10, 20, 30);
	FALLBACK(0, 0, 1, 2);
	FALLBACK(1, 1, 0, 2);
	assert_int_equal(np_topo_cpu_node(&t, 2), 1);
	assert_int_equal(np_topo_cpu_node(&t, 4), 0); /* wraps: 4 CPUs */
}

static void two_and_four_nodes(void **state)
{
	(void)state;
	const int *dist;
	load_ok(FIXTURE("2node.xml"));
	assert_int_equal(t.nnodes, 2);
	assert_int_equal(count_memoryless(), 0);
	assert_int_equal(count_cpuless(), 0);
	DIST(10, 20);
	FALLBACK(0, 0, 1);
	FALLBACK(1, 1, 0);
	assert_int_equal(np_topo_cpu_node(&t, 1), 0);
	assert_int_equal(np_topo_cpu_node(&t, 2), 1);

	load_ok(FIXTURE("4node.xml"));
	assert_int_equal(t.nnodes, 4);
	assert_int_equal(t.ncpus, 8);
	assert_int_equal(count_memoryless(), 0);
	DIST(10, 20, 20, 20);
	FALLBACK(0, 0, 1, 2, 3);
	FALLBACK(2, 2, 0, 1, 3);
	FALLBACK(3, 3, 0, 1, 2);
	assert_int_equal(np_topo_cpu_node(&t, 7), 3);
}

static void sparse_ids(void **state)
{
	(void)state;
	const int *dist;
	load_ok(FIXTURE("sparse.xml"));
	assert_int_equal(t.nnodes, 3);
	assert_int_equal(t.node[0].os_id, 0);
	assert_int_equal(t.node[1].os_id, 2);
	assert_int_equal(t.node[2].os_id, 5);
	for (int i = 0; i < t.nnodes; i++)
		assert_int_equal(np_topo_node_index(&t, t.node[i].os_id), i);
	assert_int_equal(np_topo_node_index(&t, 1), -1);
	assert_int_equal(np_topo_node_index(&t, 3), -1);
	assert_int_equal(np_topo_node_index(&t, 64), -1);
	assert_int_equal(t.node[idx(2)].mem_bytes, 512ULL << 20);
	assert_int_equal(t.total_mem, 2560ULL << 20);
	assert_int_equal(t.node[idx(0)].distance[idx(5)], 30);
	DIST(10, 20, 20);
	FALLBACK(2, 2, 0, 5);
	DIST(10, 20, 30);
	FALLBACK(0, 0, 2, 5);
	FALLBACK(5, 5, 2, 0);
	assert_int_equal(np_topo_cpu_node(&t, 4), idx(5));
	assert_int_equal(np_topo_cpu_node(&t, 3), idx(2));
}

static void single_node(void **state)
{
	(void)state;
	load_ok(FIXTURE("single.xml"));
	assert_int_equal(t.nnodes, 1);
	assert_int_equal(t.ncpus, 8);
	assert_int_equal(t.node[0].ncpus, 8);
	assert_int_equal(t.node[0].mem_bytes, 4ULL << 30);
	assert_int_equal(t.node[0].nfallback, 1);
	for (int c = 0; c < 20; c++)
		assert_int_equal(np_topo_cpu_node(&t, c), 0);
}

static void synthetic_without_distances(void **state)
{
	(void)state;
	const int *dist;
	load_ok("synthetic:pack:2 [numa(memory=1073741824)] core:2 pu:2");
	assert_int_equal(t.source, NP_TOPO_SYNTHETIC);
	assert_int_equal(t.nnodes, 2);
	assert_int_equal(t.ncpus, 8);
	assert_int_equal(t.node[1].ncpus, 4);
	/* No distance matrix: 10 local, 20 remote. */
	DIST(10, 20);
	FALLBACK(0, 0, 1);
	FALLBACK(1, 1, 0);
}

static void allow_restricts_memory_nodes(void **state)
{
	(void)state;
	const int *dist;
	uint8_t nodes[8] = {1, 0, 1, 1, 1, 1, 1, 1}; /* OS node 1 disallowed */
	struct np_topo_allow allow = {.nodes = nodes, .nnodes = 8};
	assert_int_equal(load(FIXTURE("r7425.xml"), &allow), 0);
	assert_string_equal(err, "");
	assert_null(np_topo_check(&t));
	assert_int_equal(t.nmem_nodes, 1);
	assert_true(t.node[1].has_memory);
	assert_false(t.node[1].mem_allowed);
	DIST(32);
	for (int n = 0; n < 4; n++)
		FALLBACK(n, 5);
	DIST(16);
	FALLBACK(4, 5);
	FALLBACK(7, 5);

	/* Node ids past the allow array are not allowed either. */
	uint8_t first_two[2] = {1, 1};
	allow.nodes = first_two;
	allow.nnodes = 2;
	assert_int_equal(load(FIXTURE("sparse.xml"), &allow), 0);
	assert_null(np_topo_check(&t));
	assert_int_equal(t.nmem_nodes, 1);
	DIST(10);
	FALLBACK(0, 0);
	DIST(20);
	FALLBACK(2, 0);
}

static void allow_restricts_cpus(void **state)
{
	(void)state;
	uint8_t cpus[8] = {1, 1, 0, 0, 1, 1, 1, 1}; /* node 1's CPUs out */
	struct np_topo_allow allow = {.cpus = cpus, .ncpus = 8};
	assert_int_equal(load(FIXTURE("2990wx.xml"), &allow), 0);
	assert_string_equal(err, "");
	assert_null(np_topo_check(&t));
	assert_int_equal(t.nallowed_cpus, 6);
	assert_int_equal(t.cpu[2].allowed, 0);
	assert_int_equal(t.cpu[4].allowed, 1);
	assert_false(t.node[1].cpus_allowed);
	assert_true(t.node[0].cpus_allowed);
	/* CPU restriction does not change memory or the CPU -> node map. */
	assert_int_equal(t.nmem_nodes, 2);
	assert_int_equal(np_topo_cpu_node(&t, 2), 1);
	assert_int_equal(t.node[1].ncpus, 2);
}

/* A bad input: one node, -1, and exactly one warning that names the cause. */
static void expect_fallback_load(const char *spec, const struct np_topo_allow *allow, const char *cause)
{
	assert_int_equal(load(spec, allow), -1);
	assert_int_equal(occurrences(err, "numapage: warning: "), 1);
	assert_int_equal(occurrences(err, "\n"), 1);
	if (!strstr(err, cause))
		fail_msg("warning '%s' does not name '%s'", err, cause);
	assert_null(np_topo_check(&t));
	assert_int_equal(t.source, NP_TOPO_FALLBACK);
	assert_false(t.is_system);
	assert_int_equal(t.nnodes, 1);
	assert_int_equal(t.nmem_nodes, 1);
	assert_true(t.ncpus >= 1);
	assert_int_equal(t.node[0].ncpus, t.ncpus);
	assert_int_equal(t.nallowed_cpus, t.ncpus);
	assert_true(t.total_mem > 0);
	assert_int_equal(np_topo_cpu_node(&t, 12345), 0);
}

static void bad_inputs_fall_back(void **state)
{
	(void)state;
	expect_fallback_load(FIXTURE("no-such-file.xml"), NULL, "No such file");
	expect_fallback_load(FIXTURE("broken.xml"), NULL, "cannot parse hwloc XML");

	char path[] = "/tmp/np_topo_garbageXXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	static const char junk[] = "\x7f" "ELF\x02\x01 not xml at all <<<>>> \xff\xfe";
	assert_int_equal(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
	close(fd);
	expect_fallback_load(path, NULL, "cannot parse hwloc XML");
	unlink(path);

	expect_fallback_load("synthetic:frobnicate:3 pu:2", NULL, "bad hwloc synthetic");
	expect_fallback_load("synthetic:", NULL, "bad hwloc synthetic");
	expect_fallback_load("synthetic:pack:65 [numa(memory=1048576)] pu:1", NULL,
			     "65 NUMA nodes");
	expect_fallback_load("synthetic:numa:2(memory=1048576) pu:2(indexes=0,1,2,4096)", NULL,
			     "CPU id 4096");
	/* Sizes no machine has: they wrapped the total (two nodes of 2^63 - 1 bytes) and would
	 * overflow sums and percentages of a node's size. */
	expect_fallback_load("synthetic:numa:2(memory=9223372036854775807) pu:2", NULL,
			     "more than 64 PiB");

	uint8_t none[8] = {0};
	struct np_topo_allow allow = {.nodes = none, .nnodes = 8};
	expect_fallback_load(FIXTURE("r7425.xml"), &allow, "no allowed NUMA node has memory");
}

/* No child process to be had (a used-up RLIMIT_NPROC, a sandbox): what the user names is not
 * loaded in this process, where a crash or a runaway in hwloc would be the program's. This
 * machine's own discovery never needed a child and still loads. */
static void named_input_without_child_is_refused(void **state)
{
	(void)state;
	np_fake_os_fail_isolate(-EAGAIN);
	expect_fallback_load(FIXTURE("2node.xml"), NULL, "no child process to contain hwloc");
	expect_fallback_load("synthetic:numa:2 pu:2", NULL, "no child process to contain hwloc");
	assert_int_equal(load(NULL, NULL), 0);
	assert_string_equal(err, "");
	assert_true(t.is_system);
	np_fake_os_fail_isolate(0);
	load_ok(FIXTURE("2node.xml"));
	assert_int_equal(t.nnodes, 2);
}

/*
 * A machine with one node (/sys/devices/system/node lists node0 alone) is not
 * discovered with hwloc at all: there is nothing to discover, and hwloc's discovery was most of
 * a small program's start-up time and a third of a megabyte of its resident memory. The table
 * must be the one hwloc gives on such a machine: the same node, memory, distances and CPUs (the
 * allowed ones are the start-up affinity, where hwloc reads the cpuset: a `taskset` narrows
 * ours only; a container's cpuset is its affinity too). On
 * a machine of several nodes the comparison with hwloc's table is skipped (the fake then says
 * something libnuma would not).
 */
static void one_node_machine_needs_no_hwloc(void **state)
{
	(void)state;
	static struct np_topo h;
	int rc;
	np_log_verbose = 1;
	np_fake_os_set_node_max(-1); /* the node directory unreadable: hwloc decides */
	assert_int_equal(load(NULL, NULL), 0);
	assert_null(strstr(err, "hwloc not run"));
	np_topo_copy(&h, &t);

	/* The fake's affinity, as a real one: the machine's CPU ids (up to 64). */
	int all[64], nall = (int)NP_MIN(sysconf(_SC_NPROCESSORS_CONF), 64L);
	for (int c = 0; c < nall; c++)
		all[c] = c;
	assert_int_equal(np_os_set_affinity(all, nall), 0);
	np_fake_os_set_node_max(0);
	assert_int_equal(load(NULL, NULL), 0);
	assert_int_equal(occurrences(err, "hwloc not run"), 1);
	assert_null(strstr(err, "warning"));
	assert_null(np_topo_check(&t));
	assert_true(t.is_system);
	assert_int_equal(t.source, NP_TOPO_SYSTEM);
	assert_string_equal(t.desc, "this machine");
	assert_int_equal(t.nnodes, 1);
	assert_int_equal(t.nmem_nodes, 1);
	assert_int_equal(t.node[0].os_id, 0);
	assert_true(t.node[0].has_memory && t.node[0].mem_allowed && t.node[0].has_cpus && t.node[0].cpus_allowed);
	assert_int_equal(t.node[0].distance[0], NP_DISTANCE_LOCAL);
	assert_int_equal(t.ncpus, (int)sysconf(_SC_NPROCESSORS_CONF));
	assert_int_equal(t.nallowed_cpus, nall);
	assert_true(t.node[0].mem_bytes > 0);
	assert_int_equal(t.total_mem, t.node[0].mem_bytes);
	if (h.nnodes == 1) {
		assert_int_equal(t.node[0].mem_bytes, h.node[0].mem_bytes);
		assert_int_equal(t.node[0].os_id, h.node[0].os_id);
		for (int k = 0; k < h.node[0].ncpus; k++)
			assert_int_equal(np_topo_cpu_node(&t, np_topo_node_cpu(&h, 0, k)), 0);
		assert_true(t.ncpus >= h.ncpus);
	}

	/* The CPUs the process may use: its affinity, as for hwloc its cpuset. */
	int cpu0 = 0;
	assert_int_equal(np_os_set_affinity(&cpu0, 1), 0);
	assert_int_equal(load(NULL, NULL), 0);
	assert_int_equal(t.nallowed_cpus, 1);
	assert_int_equal(t.cpu[0].allowed, 1);
	assert_true(t.node[0].cpus_allowed);
	assert_null(np_topo_check(&t));
	/* CPU ids need not be dense: an allowed id past the configured count is a CPU too. */
	int sparse[2] = {0, t.ncpus + 4};
	assert_int_equal(np_os_set_affinity(sparse, 2), 0);
	assert_int_equal(load(NULL, NULL), 0);
	assert_int_equal(t.nallowed_cpus, 2);
	assert_int_equal(t.ncpus, sparse[1] + 1);
	assert_int_equal(t.cpu[sparse[1]].allowed, 1);
	assert_int_equal(np_topo_cpu_node(&t, sparse[1]), 0);
	assert_null(np_topo_check(&t));
	assert_int_equal(np_os_set_affinity(NULL, -1), 0);

	/* Any hwloc variable the user set steers hwloc, so hwloc runs: HWLOC_ALLOW=all, say. */
	assert_int_equal(setenv("HWLOC_ALLOW", "all", 1), 0);
	rc = load(NULL, NULL);
	unsetenv("HWLOC_ALLOW");
	assert_int_equal(rc, 0);
	assert_null(strstr(err, "hwloc not run"));

	/* A restriction that leaves no memory is the fallback with its one warning, as from hwloc. */
	uint8_t none[1] = {0};
	struct np_topo_allow allow = {.nodes = none, .nnodes = 1};
	assert_int_equal(load(NULL, &allow), -1);
	assert_int_equal(occurrences(err, "no allowed NUMA node has memory"), 1);
	assert_int_equal(t.source, NP_TOPO_FALLBACK);

	/* What the user names, and hwloc's own variables, still go to hwloc. */
	load_ok(FIXTURE("2node.xml"));
	assert_int_equal(t.nnodes, 2);
	assert_int_equal(setenv("HWLOC_XMLFILE", FIXTURE("r7425.xml"), 1), 0);
	rc = load(NULL, NULL);
	unsetenv("HWLOC_XMLFILE");
	assert_int_equal(rc, 0);
	assert_int_equal(t.nnodes, 8);
	assert_false(t.is_system);

	/* Several nodes: hwloc. */
	np_fake_os_set_node_max(1);
	assert_int_equal(load(NULL, NULL), 0);
	assert_null(strstr(err, "hwloc not run"));
	np_fake_os_set_node_max(-1);
	np_log_verbose = 0;
}

/* libhwloc is loaded only when a table needs it; where it cannot be (not installed, another
 * ABI), every input that needs it is the one-node fallback with one warning naming the cause,
 * and a machine of one node, which does not need it, loads as ever. */
static void hwloc_missing_falls_back(void **state)
{
	(void)state;
	np_fake_os_fail_library(true);
	expect_fallback_load(FIXTURE("2node.xml"), NULL, "cannot load hwloc (" NP_HWLOC_SONAME ": cannot open");
	expect_fallback_load("synthetic:numa:2 pu:2", NULL, "cannot load hwloc");
	expect_fallback_load(NULL, NULL, "cannot load hwloc");
	np_fake_os_set_node_max(0);
	assert_int_equal(load(NULL, NULL), 0);
	assert_string_equal(err, "");
	assert_true(t.is_system);
	np_fake_os_set_node_max(-1);
	np_fake_os_fail_library(false);
	/* A libhwloc of another major API version is named as such. */
	np_fake_os_library_api_version(0x30000);
	expect_fallback_load(FIXTURE("2node.xml"), NULL, NP_HWLOC_SONAME " has API version 0x30000, built for 0x");
	np_fake_os_library_api_version(0);
	load_ok(FIXTURE("2node.xml"));
	assert_int_equal(t.nnodes, 2);
}

static void this_machine(void **state)
{
	(void)state;
	assert_int_equal(load(NULL, NULL), 0);
	assert_string_equal(err, "");
	assert_null(np_topo_check(&t));
	assert_true(t.is_system);
	assert_int_equal(t.source, NP_TOPO_SYSTEM);
	assert_string_equal(t.desc, "this machine");
	assert_true(t.nnodes >= 1);
	assert_true(t.nmem_nodes >= 1);
	assert_true(t.nallowed_cpus >= 1);
	assert_int_equal(sysconf(_SC_NPROCESSORS_CONF) >= t.nallowed_cpus, 1);
	/* On the real machine an unknown CPU is not wrapped but goes to a node with CPUs. */
	int i = np_topo_cpu_node(&t, t.ncpus);
	assert_true(i >= 0 && i < t.nnodes);
	assert_int_equal(load("", NULL), 0);
	assert_true(t.is_system);
}

/*
 * The real machine's discovery path (the Linux backend with caches filtered out) on a recorded
 * /sys and /proc tree of 3 nodes: node 0 with CPUs 0-1 and memory, node 1 with CPUs 2-3 and no
 * memory, node 2 with memory and no CPUs, nodes 0 and 1 under one L3 each of one package. hwloc
 * follows HWLOC_FSROOT even when asked for this machine; the table must then say it is not.
 */
static void linux_backend_on_recorded_sysfs(void **state)
{
	(void)state;
	const int *dist;
	assert_int_equal(setenv("HWLOC_FSROOT", FIXTURE("linux-3node"), 1), 0);
	int rc = load(NULL, NULL);
	unsetenv("HWLOC_FSROOT");
	assert_int_equal(rc, 0);
	assert_string_equal(err, "");
	assert_null(np_topo_check(&t));
	assert_false(t.is_system);
	assert_string_equal(t.desc, "HWLOC_FSROOT=" FIXTURE("linux-3node"));
	assert_int_equal(t.nnodes, 3);
	assert_int_equal(t.ncpus, 4);
	assert_int_equal(count_memoryless(), 1);
	assert_int_equal(count_cpuless(), 1);
	assert_false(t.node[1].has_memory);
	assert_false(t.node[2].has_cpus);
	/* Each node keeps its own CPUs although the caches that carried its locality are gone. */
	assert_int_equal(t.node[0].ncpus, 2);
	assert_int_equal(t.node[1].ncpus, 2);
	assert_int_equal(np_topo_cpu_node(&t, 1), 0);
	assert_int_equal(np_topo_cpu_node(&t, 2), 1);
	assert_int_equal(t.node[2].mem_bytes, 512ULL << 20);
	assert_int_equal(t.node[0].distance[1], 21);
	DIST(21, 30);
	FALLBACK(1, 0, 2);
	DIST(10, 30);
	FALLBACK(2, 2, 0);
}

static void hwloc_environment_is_not_this_machine(void **state)
{
	(void)state;
	assert_int_equal(setenv("HWLOC_XMLFILE", FIXTURE("r7425.xml"), 1), 0);
	int rc = load(NULL, NULL);
	assert_int_equal(rc, 0);
	assert_null(np_topo_check(&t));
	assert_int_equal(t.source, NP_TOPO_XML);
	assert_false(t.is_system);
	assert_string_equal(t.desc, "HWLOC_XMLFILE=" FIXTURE("r7425.xml"));
	assert_int_equal(t.nnodes, 8);
	/* Our own specs win over hwloc's variables. */
	assert_int_equal(load(FIXTURE("cxl.xml"), NULL), 0);
	assert_int_equal(t.nnodes, 3);
	/* The user may assert that the file describes this machine. */
	assert_int_equal(setenv("HWLOC_THISSYSTEM", "1", 1), 0);
	rc = load(NULL, NULL);
	unsetenv("HWLOC_THISSYSTEM");
	unsetenv("HWLOC_XMLFILE");
	assert_int_equal(rc, 0);
	assert_true(t.is_system);
	assert_int_equal(t.nnodes, 8);
}

/* True when [a, a + len) overlaps the page at byte offset pg of table m. */
static bool overlaps(const struct np_topo *m, size_t pg, const void *a, size_t len)
{
	size_t off = (size_t)((const char *)a - (const char *)m);
	return len && off < pg + 4096 && pg < off + len;
}

/* A page of m that the table's counts say holds nothing in use. */
static bool page_unused(const struct np_topo *m, size_t pg)
{
	size_t nc = (size_t)m->ncpus, nn = (size_t)m->nnodes;
	return !overlaps(m, pg, m, offsetof(struct np_topo, node)) &&
	       !overlaps(m, pg, m->node, nn * sizeof m->node[0]) &&
	       !overlaps(m, pg, m->cpu, nc * sizeof m->cpu[0]);
}

/* Loading a small machine into a fresh (zero) table touches only the pages its CPUs and nodes
 * use, neither writing nor reading the others (a read allocates a page too where a kernel has
 * no shared zero page): mincore(2) says which pages are resident (in builds below debug level
 * 2, whose loads do not check the whole table). Loading a larger machine and
 * then the small one again into the same table gives exactly a fresh load of the small one. */
static void a_load_touches_only_the_pages_it_uses(void **state)
{
	(void)state;
	size_t len = (sizeof(struct np_topo) + 4095) & ~(size_t)4095;
	struct np_topo *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	madvise(m, len, MADV_NOHUGEPAGE); /* 4 KiB pages, whatever the machine's THP setting */
	const char *specs[] = {FIXTURE("2node.xml"), "synthetic:pack:2 numa:2 core:2 pu:1", NULL};
	for (size_t k = 0; k < NP_ARRAY_SIZE(specs); k++) {
		if (k)
			assert_int_equal(madvise(m, len, MADV_DONTNEED), 0); /* fresh again: zero, not resident */
		assert_int_equal(np_topo_load(m, specs[k], NULL), 0);
		unsigned char vec[16];
		assert_true(len / 4096 <= sizeof vec);
		assert_int_equal(mincore(m, len, vec), 0);
		int unused = 0, resident = 0;
		for (size_t pg = 0; pg < len; pg += 4096) {
			resident += vec[pg / 4096] & 1;
			if (!page_unused(m, pg))
				continue;
			unused++;
			/* From debug level 2 the load runs np_topo_check, which reads every entry. */
			if (np_config_debug < 2 && (vec[pg / 4096] & 1))
				fail_msg("%s: page %zu of the table is resident, but holds nothing in use "
					 "(%d CPUs, %d nodes)", specs[k] ? specs[k] : "this machine", pg / 4096,
					 m->ncpus, m->nnodes);
		}
		/* A small machine's table lies in two pages: each is a page fault at every process
		 * start (about 11 us on the project's host; docs/perf-issue15.md, section 46). */
		if (m->ncpus <= 64 && m->nnodes <= 4) {
			assert_true(unused >= 7);
			if (np_config_debug < 2 && resident > 2)
				fail_msg("%s: %d pages of the table are resident (%d CPUs, %d nodes), not 2",
					 specs[k], resident, m->ncpus, m->nnodes);
		}
		assert_null(np_topo_check(m)); /* after mincore: it reads every entry */
	}

	/* Reloads: a larger table, then the small one again, equals a fresh load of the small one. */
	static struct np_topo fresh;
	assert_int_equal(np_topo_load(&fresh, FIXTURE("2node.xml"), NULL), 0);
	assert_int_equal(np_topo_load(m, FIXTURE("2990wx.xml"), NULL), 0);
	assert_int_equal(np_topo_load(m, FIXTURE("2node.xml"), NULL), 0);
	assert_null(np_topo_check(m));
	assert_memory_equal(m, &fresh, sizeof fresh);
	/* And a failed load (the one-node fallback) after a larger one. */
	assert_int_equal(np_topo_load(m, FIXTURE("2990wx.xml"), NULL), 0);
	np_topo_fallback(m, 2, 1 << 30, "test");
	np_topo_fallback(&fresh, 2, 1 << 30, "test");
	assert_null(np_topo_check(m));
	assert_memory_equal(m, &fresh, sizeof fresh);
	munmap(m, len);
}

static void fallback_table_is_sound(void **state)
{
	(void)state;
	np_topo_fallback(&t, 6, 1ULL << 30, "test");
	assert_null(np_topo_check(&t));
	assert_int_equal(t.ncpus, 6);
	assert_string_equal(t.desc, "fallback: test");
	np_topo_fallback(&t, NP_MAX_CPUS + 10, 0, NULL);
	assert_null(np_topo_check(&t));
	assert_int_equal(t.ncpus, NP_MAX_CPUS);
}

/* np_topo_check is the invariants' documentation: it must notice each kind of damage. */
static void check_catches_damage(void **state)
{
	(void)state;
	static struct np_topo good;
	assert_int_equal(load(FIXTURE("r7425.xml"), NULL), 0);
	good = t;

	struct np_topo_node *n0 = &t.node[0];
	uint8_t tmp = n0->fallback[0];
	n0->fallback[0] = n0->fallback[1];
	n0->fallback[1] = tmp;
	assert_non_null(np_topo_check(&t)); /* unsorted */

	t = good;
	t.node[4].nfallback = 1;
	assert_non_null(np_topo_check(&t)); /* incomplete */

	t = good;
	t.cpu[3].node = 2;
	assert_non_null(np_topo_check(&t)); /* cpu[].node vs lists */

	t = good;
	t.node[2].distance[2] = 40;
	assert_non_null(np_topo_check(&t)); /* diagonal not minimal */

	t = good;
	t.node[0].mem_allowed = true;
	assert_non_null(np_topo_check(&t)); /* memoryless node allowed */

	t = good;
	t.node[5].fallback_dist[1] = 31;
	assert_non_null(np_topo_check(&t));

	t = good;
	t.nallowed_cpus++;
	assert_non_null(np_topo_check(&t));

	/* A node over 64 PiB, even with the total kept consistent (a child's table). */
	t = good;
	int m = idx(1);
	t.total_mem += NP_TOPO_NODE_MEM_MAX + 1 - t.node[m].mem_bytes;
	t.node[m].mem_bytes = NP_TOPO_NODE_MEM_MAX + 1;
	assert_string_equal(np_topo_check(&t), "a node larger than 64 PiB");

	t = good;
	int a = t.node[2].os_id;
	t.node[2].os_id = t.node[3].os_id;
	t.node[3].os_id = a;
	assert_non_null(np_topo_check(&t)); /* OS ids out of order */

	/* Equidistant fallbacks must stay in OS id order. */
	assert_int_equal(load(FIXTURE("2990wx.xml"), NULL), 0);
	t.node[1].fallback[0] = (uint8_t)idx(2);
	t.node[1].fallback[1] = (uint8_t)idx(0);
	assert_non_null(np_topo_check(&t));
}

static void print_shows_the_table(void **state)
{
	(void)state;
	char *buf = NULL;
	size_t len = 0;
	assert_int_equal(load(FIXTURE("r7425.xml"), NULL), 0);
	FILE *f = open_memstream(&buf, &len);
	np_topo_print(&t, f, false);
	fclose(f);
	assert_non_null(strstr(buf, "nodes: 8, 6 memoryless, 0 CPU-less"));
	assert_non_null(strstr(buf, "node 0 -> 1 (16), 5 (32)\n"));
	assert_non_null(strstr(buf, "node 4 -> 5 (16), 1 (32)\n"));
	assert_non_null(strstr(buf, "node 3: memory 0 B, cpus 3 [memoryless]\n"));
	free(buf);

	assert_int_equal(load(FIXTURE("sparse.xml"), NULL), 0);
	f = open_memstream(&buf, &len);
	np_topo_print(&t, f, true);
	fclose(f);
	assert_non_null(strstr(buf, "\"nnodes\": 3,"));
	assert_non_null(strstr(buf, "\"os_id\": 5, \"index\": 2,"));
	assert_non_null(strstr(buf, "\"fallback\": [2, 0, 5]"));
	assert_int_equal(occurrences(buf, "{"), occurrences(buf, "}"));
	assert_int_equal(occurrences(buf, "["), occurrences(buf, "]"));
	free(buf);
}

/* A description too long for the table's desc is cut where a character ends, and says it
 * was cut ("..."): a path of two-byte characters cut at 255 bytes left half a character, which
 * made `numapage topology --json` invalid UTF-8, and nothing said the path was not whole. */
static void long_desc_is_cut_between_characters(void **state)
{
	(void)state;
	static struct np_topo desc_table;
	struct np_topo *tt = &desc_table;
	char what[600] = "/tmp/";
	for (int k = 0; k < 200; k++)
		strcat(what, "\xc3\xa9"); /* U+00E9 */
	np_topo_set_desc(tt, "", what);
	size_t n = strlen(tt->desc);
	assert_true(n >= sizeof tt->desc - 4 && n < sizeof tt->desc);
	assert_string_equal(tt->desc + n - 3, "...");
	assert_int_equal((n - 3 - 5) % 2, 0); /* whole characters before the dots */
	assert_int_equal(memcmp(tt->desc, what, n - 3), 0);
	np_topo_set_desc(tt, "fallback: ", "short");
	assert_string_equal(tt->desc, "fallback: short");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(r7425),
		cmocka_unit_test(amd_2990wx),
		cmocka_unit_test(cxl),
		cmocka_unit_test(two_and_four_nodes),
		cmocka_unit_test(sparse_ids),
		cmocka_unit_test(single_node),
		cmocka_unit_test(synthetic_without_distances),
		cmocka_unit_test(allow_restricts_memory_nodes),
		cmocka_unit_test(allow_restricts_cpus),
		cmocka_unit_test(bad_inputs_fall_back),
		cmocka_unit_test(named_input_without_child_is_refused),
		cmocka_unit_test(this_machine),
		cmocka_unit_test(one_node_machine_needs_no_hwloc),
		cmocka_unit_test(hwloc_missing_falls_back),
		cmocka_unit_test(linux_backend_on_recorded_sysfs),
		cmocka_unit_test(hwloc_environment_is_not_this_machine),
		cmocka_unit_test(a_load_touches_only_the_pages_it_uses),
		cmocka_unit_test(fallback_table_is_sound),
		cmocka_unit_test(check_catches_damage),
		cmocka_unit_test(print_shows_the_table),
		cmocka_unit_test(long_desc_is_cut_between_characters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
