/*
 * place_threads.c — placement leaves alone the threads whose CPUs the program chose, and places
 * the others, for threads created through the shared library's pthread_create wrapper:
 *   - a thread that inherits a mask the program set on its creator (sched_setaffinity after
 *     start-up; narrower, or as wide on other CPUs) is left alone: its mask stays the creator's, its home follows its CPU (placing
 *     it widened the mask to a node's CPUs: a review);
 *   - a thread created while placement was off is not placed when the program turns it on
 *     before the thread's first allocation ("threads created from now on");
 *   - control: threads that inherit the start-up mask are spread (with several nodes);
 *   - the policy numa_page_thread_place sets is the option's value (numa_page_option_get said
 *     the old one), and numa_page_option_set changes it;
 *   - then, re-executed on its first CPU so that the allocator starts with a one-CPU mask:
 *     threads whose attributes pin them are never placed, also when a thread pinned to that CPU
 *     has the very mask it would have inherited (a rehearsal under `taskset -c 0` spread them:
 *     a review), while threads that inherit the one-CPU mask are spread.
 * Run with NUMAPAGE_TOPOLOGY=<a fixture with several nodes>, and without (this machine: the real
 * masks are then checked), also under `taskset -c 0`. The first check needs two CPUs (skipped
 * otherwise). Prints
 * "ok"/"not ok" lines; exit status 0 when all hold.
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numapage.h"

#define NTHREADS 4

static pthread_barrier_t created, allocated;
static int failed;

struct worker {
	bool wait_first; /* wait on `created` before the first allocation */
	int home;
	cpu_set_t mask;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	if (w->wait_first)
		pthread_barrier_wait(&created);
	free(malloc(64)); /* its state: placed or not, now */
	w->home = numa_page_home_node();
	sched_getaffinity(0, sizeof w->mask, &w->mask);
	pthread_barrier_wait(&allocated); /* alive until every sibling has its home */
	return NULL;
}

/* Starts n workers (pinned to cpu when cpu >= 0); when between is set, calls it after creating
 * them and before they allocate. All are joined before it returns. */
static void run(struct worker *w, int n, int cpu, bool wait_first, void (*between)(void))
{
	pthread_t t[NTHREADS];
	pthread_attr_t a;
	pthread_attr_init(&a);
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_attr_setaffinity_np(&a, sizeof set, &set);
	}
	pthread_barrier_init(&created, NULL, (unsigned)n + 1);
	pthread_barrier_init(&allocated, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++) {
		w[i].wait_first = wait_first;
		if (pthread_create(&t[i], cpu >= 0 ? &a : NULL, work, &w[i]) != 0) {
			printf("not ok - pthread_create\n");
			exit(1);
		}
	}
	if (between)
		between();
	if (wait_first)
		pthread_barrier_wait(&created);
	pthread_barrier_wait(&allocated);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&created);
	pthread_barrier_destroy(&allocated);
	pthread_attr_destroy(&a);
}

static void check(bool ok, const char *what, int i, int got, int want)
{
	printf("%s - %s (thread %d: %d, wanted %d)\n", ok ? "ok" : "not ok", what, i, got, want);
	failed += !ok;
}

static void spread_on(void)
{
	numa_page_thread_place(NUMA_PAGE_PLACE_SPREAD);
}

/* The number of distinct homes of w[0 .. n). */
static int distinct_homes(const struct worker *w, int n)
{
	unsigned long homes = 0;
	for (int i = 0; i < n; i++)
		homes |= 1ul << (w[i].home & 63);
	return __builtin_popcountl(homes);
}

/* The second phase, on one CPU (cpu): pinned threads stay on its node, inheriting ones spread. */
static void one_cpu(int cpu)
{
	struct worker w[NTHREADS];
	numa_page_thread_place(NUMA_PAGE_PLACE_NONE);
	run(w, 1, -1, false, NULL);
	int base = w[0].home; /* where an unplaced thread on this CPU lives */
	numa_page_thread_place(NUMA_PAGE_PLACE_SPREAD);
	if (numa_page_node_count() > 1) {
		run(w, NTHREADS, -1, false, NULL);
		int distinct = distinct_homes(w, NTHREADS);
		check(distinct >= 2, "one CPU: threads that inherit the start-up mask are spread", 0, distinct, 2);
	}
	run(w, 3, cpu, false, NULL);
	for (int i = 0; i < 3; i++)
		check(w[i].home == base, "one CPU: a thread pinned by its attributes is not placed", i, w[i].home, base);
}

int main(int argc, char **argv)
{
	(void)argc;
	cpu_set_t start;
	if (sched_getaffinity(0, sizeof start, &start) != 0)
		return 1;
	int cpus[CPU_SETSIZE], ncpus = 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &start))
			cpus[ncpus++] = c;
	if (getenv("PLACE_THREADS_ONE_CPU")) {
		one_cpu(cpus[0]);
		return failed ? 1 : 0;
	}

	/* The policy in force is the option's value, whichever call set it. */
	char value[16];
	numa_page_thread_place(NUMA_PAGE_PLACE_FILL);
	numa_page_option_get("place", value, sizeof value);
	printf("%s - numa_page_thread_place(FILL): option place is %s\n", strcmp(value, "fill") ? "not ok" : "ok", value);
	failed += strcmp(value, "fill") != 0;
	if (numa_page_option_set("place", "none") != 0) {
		printf("not ok - numa_page_option_set(place, none)\n");
		failed++;
	}

	/* The home of a thread on each CPU: pinned by its attributes, it is never placed. */
	static int node_of[CPU_SETSIZE];
	unsigned long cpu_nodes = 0; /* the homes threads on our CPUs get unplaced */
	struct worker w[NTHREADS];
	for (int i = 0; i < ncpus && i < 64; i++) {
		run(w, 1, cpus[i], false, NULL);
		node_of[cpus[i]] = w[0].home;
		cpu_nodes |= 1ul << (w[0].home & 63);
	}

	/* Created while placement was off (turned off by the option above), first allocation after
	 * it was turned on: not placed. */
	run(w, NTHREADS, -1, true, spread_on);
	for (int i = 0; i < NTHREADS; i++)
		check((cpu_nodes >> (w[i].home & 63)) & 1, "created before placement was on: not placed", i, w[i].home,
		      node_of[cpus[0]]);

	/* Inheriting a mask the program set on its creator: left alone. */
	if (ncpus >= 2) {
		int c = cpus[ncpus - 1];
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		if (sched_setaffinity(0, sizeof one, &one) != 0)
			return 1;
		run(w, NTHREADS, -1, false, NULL);
		for (int i = 0; i < NTHREADS; i++) {
			check(w[i].home == node_of[c], "inherits its creator's chosen mask: home follows its CPU", i,
			      w[i].home, node_of[c]);
			check(CPU_COUNT(&w[i].mask) == 1 && CPU_ISSET(c, &w[i].mask),
			      "inherits its creator's chosen mask: mask kept", i, CPU_COUNT(&w[i].mask), 1);
		}
		if (sched_setaffinity(0, sizeof start, &start) != 0)
			return 1;
	} else {
		printf("ok - # SKIP one CPU: no mask narrower than the start-up one\n");
	}
	/* As many CPUs as the start-up mask, but others (under `taskset -c 0`, CPU 1): chosen too
	 * (a count alone took it for the start-up mask, and placement moved the threads back). */
	int other = -1;
	cpu_set_t one;
	for (int c = 0; c < CPU_SETSIZE && other < 0 && ncpus == 1; c++) {
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		if (!CPU_ISSET(c, &start) && sched_setaffinity(0, sizeof one, &one) == 0)
			other = c;
	}
	if (other >= 0) {
		run(w, NTHREADS, -1, false, NULL);
		for (int i = 0; i < NTHREADS; i++)
			check(CPU_COUNT(&w[i].mask) == 1 && CPU_ISSET(other, &w[i].mask),
			      "inherits a chosen mask of as many CPUs as the start-up one: mask kept", i,
			      CPU_ISSET(other, &w[i].mask), 1);
		if (sched_setaffinity(0, sizeof start, &start) != 0)
			return 1;
	}

	/* Control: inheriting the start-up mask, they are spread. */
	numa_page_thread_place(NUMA_PAGE_PLACE_SPREAD);
	if (numa_page_node_count() > 1) {
		run(w, NTHREADS, -1, false, NULL);
		int distinct = distinct_homes(w, NTHREADS);
		check(distinct >= 2, "control: threads with the start-up mask are spread over nodes", 0, distinct, 2);
	}
	if (failed)
		return 1;

	/* Again on the first CPU alone, so that the allocator starts with a one-CPU mask. */
	fflush(stdout);
	CPU_ZERO(&one);
	CPU_SET(cpus[0], &one);
	if (sched_setaffinity(0, sizeof one, &one) != 0 || setenv("PLACE_THREADS_ONE_CPU", "1", 1) != 0)
		return 1;
	execv("/proc/self/exe", argv);
	return 1;
}
