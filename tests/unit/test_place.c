/*
 * Unit tests of thread placement (src/malloc/place.c) on fixture topologies with the fake OS:
 * spread and fill counts per node, rebalancing after threads exit, threads the program pinned
 * are left alone (a mask placement gave another thread, inherited, is not the program's), and
 * threads placed at the same moment (behind a barrier, their first
 * allocation places them in this static link) still spread within one thread per node.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_os.h"
#include "malloc/init.h"
#include "os.h"
#include "pcp/pcp.h"
#include "topology/topology.h"

static pthread_barrier_t started, release;
static pthread_barrier_t *go; /* non-NULL: workers wait here together before allocating */
static int pin_cpu = -1; /* >= 0: workers pin themselves to this CPU before allocating */
static int pin_set[64], pin_set_n; /* > 0: workers set their mask to these CPUs before allocating */
static int last_home; /* the home node of the worker that allocated last */

static void *worker(void *arg)
{
	(void)arg;
	if (pin_cpu >= 0) {
		np_fake_os_set_cpu(pin_cpu);
		np_os_set_affinity(&pin_cpu, 1);
	}
	if (pin_set_n > 0) {
		np_fake_os_set_cpu(pin_set[0]);
		np_os_set_affinity(pin_set, pin_set_n);
	}
	if (go)
		pthread_barrier_wait(go);
	void *p = numa_page_malloc(64);
	assert_non_null(p);
	__atomic_store_n(&last_home, numa_page_home_node(), __ATOMIC_RELAXED);
	pthread_barrier_wait(&started);
	pthread_barrier_wait(&release);
	numa_page_free(p);
	return NULL;
}

/* Starts n workers, waits until all have allocated, copies the per-node thread counts (the
 * main thread included), then lets them exit and joins them. */
static void run_workers(int n, int counts[NP_MAX_NODES])
{
	pthread_t t[64];
	pthread_barrier_init(&started, NULL, (unsigned)n + 1);
	pthread_barrier_init(&release, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, NULL), 0);
	pthread_barrier_wait(&started);
	for (int i = 0; i < NP_MAX_NODES; i++)
		counts[i] = __atomic_load_n(&np_pcp_threads[i], __ATOMIC_RELAXED);
	pthread_barrier_wait(&release);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&started);
	pthread_barrier_destroy(&release);
}

static void spread_r7425_one_per_node(void **state)
{
	(void)state;
	int counts[NP_MAX_NODES];
	/* The main thread was placed at its first allocation; 7 more make 8 on 8 nodes. */
	run_workers(7, counts);
	for (int n = 0; n < 8; n++)
		assert_int_equal(counts[n], 1);
	/* They exited: the next creations find the nodes empty again and spread once more. */
	run_workers(7, counts);
	for (int n = 0; n < 8; n++)
		assert_int_equal(counts[n], 1);
}

static void spread_2990wx_two_per_node(void **state)
{
	(void)state;
	int counts[NP_MAX_NODES];
	run_workers(7, counts);
	for (int n = 0; n < 4; n++)
		assert_int_equal(counts[n], 2);
}

static void fill_2990wx_in_order(void **state)
{
	(void)state;
	int counts[NP_MAX_NODES];
	run_workers(4, counts); /* 5 threads, 2 CPUs per node: 2, 2, 1, 0 */
	assert_int_equal(counts[0], 2);
	assert_int_equal(counts[1], 2);
	assert_int_equal(counts[2], 1);
	assert_int_equal(counts[3], 0);
}

/* Rounds of n threads placed together: every round, the live threads per node (the main
 * thread included) within one of each other over the nnodes nodes. As on a real machine, a
 * placed thread's affinity is set (the fixture poses as this system, and the fake OS moves the
 * thread to its new CPUs, taking 200 us to do it, inside the placement): threads that start
 * together then meet inside the placement, as they do in the VM guests. */
static void spread_together(int n, int nnodes, int rounds)
{
	pthread_barrier_t together;
	int counts[NP_MAX_NODES], bad = 0;
	char first[128] = "";
	np_topo_table.is_system = true;
	np_fake_os_affinity_moves(true, 200);
	go = &together;
	for (int r = 0; r < rounds; r++) {
		pthread_barrier_init(&together, NULL, (unsigned)n);
		run_workers(n, counts);
		pthread_barrier_destroy(&together);
		int lo = counts[0], hi = counts[0], sum = 0;
		for (int k = 0; k < nnodes; k++) {
			lo = counts[k] < lo ? counts[k] : lo;
			hi = counts[k] > hi ? counts[k] : hi;
			sum += counts[k];
		}
		assert_int_equal(sum, n + 1);
		if (hi - lo > 1 && !bad++) {
			size_t o = (size_t)snprintf(first, sizeof first, "round %d:", r + 1);
			for (int k = 0; k < nnodes && o < sizeof first; k++)
				o += (size_t)snprintf(first + o, sizeof first - o, " %d", counts[k]);
		}
	}
	go = NULL;
	np_fake_os_affinity_moves(false, 0);
	np_topo_table.is_system = false;
	if (bad)
		fail_msg("%d threads placed together: %d of %d rounds off by more than one thread "
			 "per node; first %s", n, bad, rounds, first);
}

static void spread_4node_together(void **state)
{
	(void)state;
	spread_together(9, 4, 100);  /* 2n + 1 */
	spread_together(16, 4, 100); /* 4n */
}

static void spread_r7425_together(void **state)
{
	(void)state;
	spread_together(17, 8, 50);
	spread_together(32, 8, 50);
}

static void pinned_threads_left_alone(void **state)
{
	(void)state;
	int counts[NP_MAX_NODES];
	/* Pretend the fixture is this machine so affinity is real, and pin every worker to CPU 6
	 * (node 3): spread must not move them. */
	np_topo_table.is_system = true;
	pin_cpu = 6;
	run_workers(4, counts);
	pin_cpu = -1;
	np_topo_table.is_system = false;
	assert_int_equal(counts[3], 4);
}

/* A static link has no pthread_create wrapper: a thread that finds on itself the mask placement
 * gave another thread (inherited from its creator: the main thread, say) is placed again. Taken
 * for the program's choice, every thread of a placed main thread stayed on its node (a review).
 * The fake OS's masks are per thread, so the workers set the inherited mask themselves. */
static void inherited_placement_mask_placed_again(void **state)
{
	(void)state;
	int counts[NP_MAX_NODES];
	const struct np_topo *t = &np_topo_table;
	np_topo_table.is_system = true;
	np_fake_os_affinity_moves(true, 0); /* a placed thread runs on its node's CPUs, as it would */
	run_workers(1, counts); /* placed, its mask set to its node's CPUs */
	int k = np_topo_node_index(t, last_home);
	assert_true(k >= 0 && k < t->nnodes);
	for (int i = 0; i < t->node[k].ncpus && pin_set_n < 64; i++)
		if (t->cpu[np_topo_node_cpu(t, k, i)].allowed)
			pin_set[pin_set_n++] = np_topo_node_cpu(t, k, i);
	run_workers(3, counts); /* main and three more on four nodes: one each */
	pin_set_n = 0;
	np_fake_os_affinity_moves(false, 0);
	np_topo_table.is_system = false;
	for (int n = 0; n < t->nnodes; n++)
		assert_int_equal(counts[n], 1);
}

/* The same in a rehearsal: the workers' real masks (one CPU) are narrower than the one the
 * process started with, so they are pinned, though the rehearsed machine's CPU count says
 * nothing about the real mask (spread once placed them over every rehearsed node: a hostile
 * review). Left alone, their home is the rehearsed node of the CPU they run on. */
static void pinned_threads_left_alone_in_a_rehearsal(void **state)
{
	(void)state;
	int counts[NP_MAX_NODES];
	assert_false(np_topo_table.is_system);
	pin_cpu = 6;
	run_workers(4, counts);
	pin_cpu = -1;
	assert_int_equal(counts[3], 4);
}

/* The process started on one CPU (6) and its workers pin themselves to another one (7): as
 * many CPUs as the process had, but not its mask, so pinned (a count alone placed them). */
static void pinned_to_another_cpu_in_a_rehearsal(void **state)
{
	(void)state;
	int counts[NP_MAX_NODES];
	pin_cpu = 7;
	run_workers(4, counts);
	pin_cpu = -1;
	int n7 = np_topo_cpu_node(&np_topo_table, 7);
	assert_true(counts[n7] >= 4);
}

static int setup_env(const char *fixture, const char *place)
{
	static char path[512];
	snprintf(path, sizeof path, "%s/%s", NP_TOPOLOGIES, fixture);
	setenv("NUMAPAGE_TOPOLOGY", path, 1);
	setenv("NUMAPAGE_PLACE", place, 1);
	setenv("NUMAPAGE_SHM", "0", 1);
	return 0;
}

int main(int argc, char **argv)
{
	/* One process per scenario: the topology and policy are frozen at initialisation. */
	const char *which = argc > 1 ? argv[1] : "all";
	if (strcmp(which, "all") == 0) {
		const char *names[] = {"spread-r7425", "spread-2990wx", "fill-2990wx", "pinned",
				       "pinned-rehearsal", "pinned-other-cpu", "together-4node", "together-r7425",
				       "inherited-placed"};
		int rc = 0;
		for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
			char cmd[1024];
			snprintf(cmd, sizeof cmd, "'%s' %s", argv[0], names[i]);
			rc |= system(cmd) != 0;
		}
		return rc;
	}
	struct CMUnitTest test;
	if (strcmp(which, "spread-r7425") == 0) {
		setup_env("r7425.xml", "spread");
		test = (struct CMUnitTest)cmocka_unit_test(spread_r7425_one_per_node);
	} else if (strcmp(which, "spread-2990wx") == 0) {
		setup_env("2990wx.xml", "spread");
		test = (struct CMUnitTest)cmocka_unit_test(spread_2990wx_two_per_node);
	} else if (strcmp(which, "together-4node") == 0) {
		setup_env("4node.xml", "spread");
		test = (struct CMUnitTest)cmocka_unit_test(spread_4node_together);
	} else if (strcmp(which, "together-r7425") == 0) {
		setup_env("r7425.xml", "spread");
		test = (struct CMUnitTest)cmocka_unit_test(spread_r7425_together);
	} else if (strcmp(which, "fill-2990wx") == 0) {
		setup_env("2990wx.xml", "fill");
		test = (struct CMUnitTest)cmocka_unit_test(fill_2990wx_in_order);
	} else if (strcmp(which, "pinned-other-cpu") == 0) {
		setup_env("2990wx.xml", "spread");
		np_os_set_affinity((int[]){6}, 1); /* the process's mask at start-up */
		test = (struct CMUnitTest)cmocka_unit_test(pinned_to_another_cpu_in_a_rehearsal);
	} else if (strcmp(which, "inherited-placed") == 0) {
		setup_env("4node.xml", "spread");
		test = (struct CMUnitTest)cmocka_unit_test(inherited_placement_mask_placed_again);
	} else if (strcmp(which, "pinned-rehearsal") == 0) {
		setup_env("2990wx.xml", "spread");
		test = (struct CMUnitTest)cmocka_unit_test(pinned_threads_left_alone_in_a_rehearsal);
	} else {
		setup_env("2990wx.xml", "spread");
		test = (struct CMUnitTest)cmocka_unit_test(pinned_threads_left_alone);
	}
	np_init();
	void *p = numa_page_malloc(16); /* the main thread is placed here */
	numa_page_free(p);
	return _cmocka_run_group_tests(which, &test, 1, NULL, NULL);
}
