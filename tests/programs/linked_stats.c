/*
 * linked_stats.c — a program linked with -lnumapage (shared, or the static library), never
 * preloaded: its plain malloc/free/strdup and the C library's internal allocations must go
 * through libnumapage, which the statistics (numa_page_stats_get) and numa_page_node_of show.
 * Exit status 0 when they do; prints the numbers it saw.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numapage.h"

static struct numa_page_node_stats total(void)
{
	struct numa_page_node_stats sum, one;
	memset(&sum, 0, sizeof sum);
	for (int n = 0; n <= numa_page_max_node(); n++) {
		if (numa_page_stats_get(n, &one) != 0)
			continue;
		sum.malloc_requested += one.malloc_requested;
		sum.malloc_in_use += one.malloc_in_use;
		sum.pages_in_use += one.pages_in_use;
		sum.threads += one.threads;
	}
	return sum;
}

#define FAIL(...)                                                                          \
	do {                                                                               \
		fprintf(stderr, "linked_stats: " __VA_ARGS__);                             \
		fputc('\n', stderr);                                                       \
		return 1;                                                                  \
	} while (0)

int main(void)
{
	enum { N = 20000, SIZE = 200, BIG = 4 << 20 };
	static void *blocks[N];
	struct numa_page_node_stats before = total();
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(SIZE);
		if (!blocks[i] || numa_page_node_of(blocks[i]) < 0)
			FAIL("malloc block %d (%p) is not libnumapage's", i, blocks[i]);
		memset(blocks[i], i, SIZE);
	}
	char *big = malloc(BIG);
	if (!big || numa_page_node_of(big) < 0)
		FAIL("large block is not libnumapage's");
	memset(big, 1, BIG);
	char *s = strdup("the C library's own malloc call");
	if (!s || numa_page_node_of(s) < 0)
		FAIL("strdup's block is not libnumapage's");
	struct numa_page_node_stats during = total();
	unsigned long long req = during.malloc_requested - before.malloc_requested;
	long long in_use = (long long)(during.malloc_in_use - before.malloc_in_use);
	printf("linked_stats: malloc_requested +%llu, malloc_in_use %+lld, pages_in_use %+lld, threads %llu\n", req,
	       in_use, (long long)(during.pages_in_use - before.pages_in_use), (unsigned long long)during.threads);
	/* The large block counts at once; small ones when the thread's counters are folded (on a
	 * slow path: N blocks of a class fill several slabs, so most of them are counted). */
	if (req < (unsigned long long)BIG + (unsigned long long)N * SIZE / 2)
		FAIL("the statistics missed the program's mallocs: +%llu bytes requested", req);
	if (in_use < (long long)N * SIZE / 2)
		FAIL("the statistics missed the program's small blocks: %+lld bytes in use", in_use);
	if (during.threads < 1)
		FAIL("no thread is counted");
	for (int i = 0; i < N; i++)
		free(blocks[i]);
	free(big);
	free(s);
	return 0;
}
