/*
 * place_pinned.c — threads whose attributes pin them are never placed (shared library: the
 * pthread_create wrapper), also when the process runs on one CPU and a thread pinned to it
 * has the very mask it would have inherited (a rehearsal under `taskset -c 0` spread them:
 * found by a review). Run with NUMAPAGE_TOPOLOGY=<a fixture with several nodes>; it re-executes
 * itself on the first CPU it may use, so that the allocator starts with a one-CPU mask. Prints
 * "ok"/"not ok" lines; exit status 0 when all hold.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "numapage.h"

static pthread_barrier_t all_started;

static void *report(void *arg)
{
	free(malloc(64)); /* its state, placed or not */
	*(int *)arg = numa_page_home_node();
	pthread_barrier_wait(&all_started); /* alive until every sibling has its home */
	return NULL;
}

/* Starts n threads (pinned to cpu when cpu >= 0), all alive together; their homes into home[]. */
static void run(int n, int cpu, int *home)
{
	pthread_t t[8];
	pthread_attr_t a;
	pthread_attr_init(&a);
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_attr_setaffinity_np(&a, sizeof set, &set);
	}
	pthread_barrier_init(&all_started, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], &a, report, &home[i]) != 0) {
			printf("not ok - pthread_create\n");
			exit(1);
		}
	pthread_barrier_wait(&all_started);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&all_started);
	pthread_attr_destroy(&a);
}

int main(int argc, char **argv)
{
	(void)argc;
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return 1;
	int cpu = 0;
	while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set))
		cpu++;
	if (!getenv("PLACE_PINNED_CHILD")) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof set, &set) != 0 || setenv("PLACE_PINNED_CHILD", "1", 1) != 0)
			return 1;
		execv("/proc/self/exe", argv);
		return 1;
	}
	int failed = 0, base[1], spread[4], pinned[3];
	/* Where an unplaced thread on this CPU lives: the rehearsed node of the CPU. */
	numa_page_thread_place(NUMA_PAGE_PLACE_NONE);
	run(1, -1, base);
	numa_page_thread_place(NUMA_PAGE_PLACE_SPREAD);
	/* Control: threads that inherit the one-CPU mask are spread over the rehearsed nodes. */
	run(4, -1, spread);
	int distinct = 0;
	for (int i = 0; i < 4; i++) {
		int seen = 0;
		for (int j = 0; j < i; j++)
			seen |= spread[j] == spread[i];
		distinct += !seen;
	}
	printf("%s - 4 threads spread over %d nodes\n", distinct >= 2 ? "ok" : "not ok", distinct);
	failed += distinct < 2;
	run(3, cpu, pinned);
	for (int i = 0; i < 3; i++) {
		printf("%s - pinned thread %d: home %d, the CPU's node %d\n", pinned[i] == base[0] ? "ok" : "not ok", i,
		       pinned[i], base[0]);
		failed += pinned[i] != base[0];
	}
	return failed ? 1 : 0;
}
