/*
 * stats — read libnumapage's exact per-node counters from code and print them as JSON.
 *
 * libnumapage counts, for every NUMA node, what happened to its memory (numa_hit, numa_miss,
 * pages_in_use, malloc_in_use, ...; numapage(7) says what each one means). Each thread counts
 * privately and adds its counts to the shared totals now and then, which costs almost nothing.
 * So there are two ways to read:
 *   numa_page_stats_get(node, &s)        exact: the totals plus what live threads still hold
 *   numa_page_stats_get_cheap(node, &s)  the totals alone: a few loads, may lag a little
 *
 * The list of counters is one macro in numapage.h, NUMA_PAGE_STAT_ITEMS(X): it calls X(name,
 * kind, description) once per counter. The program uses it to turn the struct into an array,
 * so it prints every counter, including ones added after it was written, with its own name.
 *
 * It first keeps some memory busy (a worker thread allocates BUSY_BYTES and exits without
 * freeing it; main frees it at the end), so the numbers are not all zero, then prints
 *   {"version": ..., "busy_bytes": ..., "nodes": [{"node": 0, "numa_hit": ..., ...}, ...]}
 * on stdout, and the library's own JSON (numa_page_stats_print) on stderr for comparison.
 *
 * Build: cc stats.c $(pkg-config --cflags --libs numapage) -pthread -o stats
 */
#include <numapage.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUSY_BYTES (8u << 20)
#define OBJECT_SIZE 256

/* The counters of one node as an array, in the order of numa_page_stat_name(0, 1, ...). */
static void to_array(const struct numa_page_node_stats *s, uint64_t out[NUMA_PAGE_STAT_NITEMS])
{
#define COPY(name, kind, desc) out[NUMA_PAGE_STAT_##name] = s->name;
	NUMA_PAGE_STAT_ITEMS(COPY)
#undef COPY
}

static char *busy[BUSY_BYTES / OBJECT_SIZE]; /* freed by main at the end */

static void *keep_busy(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < BUSY_BYTES / OBJECT_SIZE; i++) {
		busy[i] = malloc(OBJECT_SIZE); /* stays "in use" until main frees it */
		if (!busy[i])
			return NULL;
		memset(busy[i], 0, OBJECT_SIZE);
	}
	return NULL;
}

int main(void)
{
	/* A thread's counts are all in the totals once it has exited. */
	pthread_t t;
	if (pthread_create(&t, NULL, keep_busy, NULL) != 0 || pthread_join(t, NULL) != 0) {
		fprintf(stderr, "stats: cannot run a thread\n");
		return 1;
	}

	printf("{\"version\": \"%s\", \"busy_bytes\": %u, \"nodes\": [", numa_page_version(),
	       BUSY_BYTES);
	const char *sep = "";
	for (int node = 0; node <= numa_page_max_node(); node++) {
		struct numa_page_node_stats s;
		if (numa_page_stats_get(node, &s) != 0)
			continue; /* node ids may have gaps: this one is not a node */
		uint64_t v[NUMA_PAGE_STAT_NITEMS];
		to_array(&s, v);
		printf("%s\n  {\"node\": %d", sep, s.node);
		for (int i = 0; i < NUMA_PAGE_STAT_NITEMS; i++)
			printf(", \"%s\": %llu", numa_page_stat_name(i), (unsigned long long)v[i]);
		printf("}");
		sep = ",";
	}
	printf("\n]}\n");
	fflush(stdout);

	/* The same numbers, formatted by the library (one JSON object). */
	if (numa_page_stats_print(stderr, NUMA_PAGE_STATS_JSON) != 0) {
		perror("numa_page_stats_print");
		return 1;
	}
	for (unsigned i = 0; i < BUSY_BYTES / OBJECT_SIZE; i++)
		free(busy[i]);
	return 0;
}
