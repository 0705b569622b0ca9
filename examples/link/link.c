/*
 * link — a program linked with -lnumapage that reports where its own mallocs went.
 *
 * Linking with libnumapage replaces malloc, calloc, realloc and free for the whole program, as
 * LD_PRELOAD does, with no change to the code that allocates. What linking adds is the API in
 * <numapage.h>: here, numa_page_node_of(p) (which node holds the memory at p) and the per-node
 * statistics, numa_page_stats_get(node, &stats).
 *
 * Two words from Linux's numastat that the statistics use, counted in pages per node:
 *   local_node  pages this node gave to a thread whose home node it is (the fast case)
 *   other_node  pages this node gave to a thread homed on another node (remote: slower to use)
 * A thread's "home node" is the node of the CPU it runs on, unless the program sets it.
 *
 * The program starts one thread per CPU it may use; each allocates a few thousand objects of
 * mixed sizes with plain malloc. The main thread then asks, for every object, which node it is
 * on, and compares with what the statistics counted. It exits with status 1 if an object is not
 * libnumapage's or if the statistics did not count every byte.
 *
 * Build: cc link.c $(pkg-config --cflags --libs numapage) -pthread -o link
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity and CPU_COUNT */
#endif
#include <numapage.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 64
#define OBJECTS 5000
#define MAX_NODE_ID 1024

struct worker {
	pthread_t thread;
	void *obj[OBJECTS];
	unsigned long bytes; /* bytes this thread asked malloc for */
};

static void *work(void *arg)
{
	struct worker *w = arg;
	for (int i = 0; i < OBJECTS; i++) {
		size_t size = 16 + (size_t)(i % 64) * 40; /* 16 .. 2536 bytes */
		w->obj[i] = malloc(size);
		if (!w->obj[i]) {
			perror("malloc");
			exit(1);
		}
		memset(w->obj[i], 0, size);
		w->bytes += size;
	}
	return NULL; /* the objects stay allocated: main looks at them, then frees them */
}

/* Sum over all nodes of one statistics field, read exactly (numa_page_stats_get). */
static unsigned long long sum_field(size_t offset)
{
	unsigned long long sum = 0;
	for (int n = 0; n <= numa_page_max_node(); n++) {
		struct numa_page_node_stats s;
		if (numa_page_stats_get(n, &s) == 0)
			sum += *(const uint64_t *)((const char *)&s + offset);
	}
	return sum;
}
#define SUM(field) sum_field(offsetof(struct numa_page_node_stats, field))

int main(void)
{
	cpu_set_t cpus;
	int nthreads = 2;
	if (sched_getaffinity(0, sizeof cpus, &cpus) == 0)
		nthreads = CPU_COUNT(&cpus) < MAX_THREADS ? CPU_COUNT(&cpus) : MAX_THREADS;
	if (nthreads < 2)
		nthreads = 2;

	static struct worker w[MAX_THREADS];
	unsigned long long requested_before = SUM(malloc_requested);
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&w[i].thread, NULL, work, &w[i]) != 0) {
			fprintf(stderr, "link: cannot create a thread\n");
			return 1;
		}
	unsigned long asked = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].thread, NULL);
		asked += w[i].bytes;
	}
	/* The workers have exited, so their counts are all in the totals: the read is exact. */
	unsigned long long counted = SUM(malloc_requested) - requested_before;

	/* Where is each object? */
	static unsigned long objects_on[MAX_NODE_ID + 1];
	int failed = 0;
	for (int i = 0; i < nthreads; i++)
		for (int k = 0; k < OBJECTS; k++) {
			int node = numa_page_node_of(w[i].obj[k]);
			if (node < 0 || node > MAX_NODE_ID) {
				fprintf(stderr, "link: %p is not libnumapage's memory\n", w[i].obj[k]);
				failed = 1;
				continue;
			}
			objects_on[node]++;
		}

	printf("%d threads asked malloc for %lu bytes; libnumapage counted %llu\n", nthreads, asked,
	       counted);
	if (counted < asked) {
		fprintf(stderr, "link: the statistics missed %llu bytes\n", asked - counted);
		failed = 1;
	}
	printf("%-6s %10s %12s %12s %16s\n", "node", "objects", "local_node", "other_node",
	       "malloc_in_use");
	for (int n = 0; n <= numa_page_max_node() && n <= MAX_NODE_ID; n++) {
		struct numa_page_node_stats s;
		if (numa_page_stats_get(n, &s) != 0)
			continue; /* not a node id */
		printf("node%-2d %10lu %12llu %12llu %16llu\n", n, objects_on[n],
		       (unsigned long long)s.local_node, (unsigned long long)s.other_node,
		       (unsigned long long)s.malloc_in_use);
	}

	for (int i = 0; i < nthreads; i++)
		for (int k = 0; k < OBJECTS; k++)
			free(w[i].obj[k]);
	return failed;
}
