/*
 * consumer.c — a program built by tests/install/check_install.py against an installed
 * libnumapage only (pkg-config, the staged prefix; never the source tree). It is compiled as C
 * and as C++ (so the header's extern "C" guards are exercised), linked shared and static.
 *
 * It checks, exiting non-zero on the first failure: the header's version macros agree with
 * numa_page_version(); its plain mallocs are served by libnumapage (numa_page_node_of knows
 * them, and the statistics count their bytes); and it prints the file numa_page_version was
 * loaded from, so the test can tell the staged library from any other. The mallocs run in a
 * thread that has exited before the counters are read: a thread's counts are folded into the
 * totals by then, so the comparison is exact (numapage(3)).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <numapage.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NALLOC 1000
#define SIZE 1000

/* Sum of one counter over every node (node ids may be sparse: unknown ids answer EINVAL). */
static unsigned long long total(size_t offset)
{
	unsigned long long sum = 0;
	for (int n = 0; n <= numa_page_max_node(); n++) {
		struct numa_page_node_stats s;
		if (numa_page_stats_get(n, &s) == 0)
			sum += *(const uint64_t *)((const char *)&s + offset);
	}
	return sum;
}

#define TOTAL(field) total(offsetof(struct numa_page_node_stats, field))

static void *p[NALLOC];

/* Plain malloc, as any program: the symbol is libnumapage's once it is linked in. */
static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < NALLOC; i++) {
		p[i] = malloc(SIZE);
		if (!p[i])
			return (void *)"malloc failed";
		memset(p[i], i & 0xff, SIZE);
		if (numa_page_node_of(p[i]) < 0)
			return (void *)"malloc gave memory that libnumapage does not know";
	}
	return NULL;
}

int main(void)
{
	char want[32];
	snprintf(want, sizeof want, "%d.%d.%d", NUMA_PAGE_VERSION_MAJOR, NUMA_PAGE_VERSION_MINOR,
		 NUMA_PAGE_VERSION_PATCH);
	if (strcmp(want, numa_page_version()) != 0) {
		fprintf(stderr, "consumer: header says %s, library says %s\n", want, numa_page_version());
		return 1;
	}
	Dl_info info;
	if (!dladdr((void *)numa_page_version, &info) || !info.dli_fname) {
		fprintf(stderr, "consumer: dladdr failed\n");
		return 1;
	}

	unsigned long long before = TOTAL(malloc_requested);
	pthread_t t;
	void *err;
	if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, &err) != 0) {
		fprintf(stderr, "consumer: cannot run a thread\n");
		return 1;
	}
	if (err) {
		fprintf(stderr, "consumer: %s\n", (const char *)err);
		return 1;
	}
	unsigned long long after = TOTAL(malloc_requested);
	for (int i = 0; i < NALLOC; i++)
		free(p[i]);
	if (after - before < (unsigned long long)NALLOC * SIZE) {
		fprintf(stderr, "consumer: malloc_requested grew by %llu, wanted at least %d\n",
			after - before, NALLOC * SIZE);
		return 1;
	}
	printf("version %s\nlibrary %s\nnodes %d\nmalloc_requested +%llu\nok\n", numa_page_version(),
	       info.dli_fname, numa_page_node_count(), after - before);
	return 0;
}
