/*
 * misuse_page_free.c — misuses of numa_page_free on memory of the page API (numa_page_alloc,
 * _onnode, _interleaved) that libnumapage must catch and abort on: pointers it did not hand
 * out, interior pointers (of a run, of a huge block, of interleaved memory, of a chunk's
 * header), and double frees of pages still cached, already drained to the pool, merged into
 * a free neighbour, of huge and interleaved blocks, and across threads. Each case (argv[1])
 * makes one mistake; returning 0 means it went unnoticed (the test fails), exit 3 means the
 * setup did not hold (the _message test then fails too: it needs death by SIGABRT).
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "numapage.h"

#define PAGE 4096u

/* p, opaque to the compiler: it must not see (or warn about) the mistake it cannot prove. */
static void *launder(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

static void setup_failed(const char *what)
{
	fprintf(stderr, "setup: %s\n", what);
	exit(3);
}

/* Live pages of the page API, written, so that the misuse happens among real neighbours. */
static char *pages(size_t size)
{
	char *p = numa_page_alloc(size);
	if (!p || ((uintptr_t)p & (PAGE - 1)) || numa_page_node_of(p) < 0)
		setup_failed("numa_page_alloc did not hand out page-aligned memory of ours");
	memset(p, 0x5a, size ? size : 1);
	return p;
}

static void *free_it(void *arg)
{
	numa_page_free(arg);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CASE\n", argv[0]);
		return 2;
	}
	const char *c = argv[1];
	/* On one CPU: the runs come from its shard of the node's pool, so that the cases that need
	 * neighbours get them however loaded the machine is (a move to another CPU between two
	 * allocations took the second from another shard's chunk). */
	cpu_set_t one;
	CPU_ZERO(&one);
	int cpu = sched_getcpu();
	CPU_SET(cpu >= 0 ? cpu : 0, &one);
	if (sched_setaffinity(0, sizeof one, &one) != 0)
		setup_failed("sched_setaffinity");
	char *keep[3] = {pages(PAGE), pages(3 * PAGE), pages(100 * PAGE)};
	fflush(stdout);

	if (!strcmp(c, "foreign_stack")) {
		char buf[2 * PAGE];
		memset(buf, 1, sizeof buf);
		numa_page_free(launder((void *)(((uintptr_t)buf + PAGE - 1) & ~(uintptr_t)(PAGE - 1))));
	} else if (!strcmp(c, "foreign_mmap")) {
		char *p = mmap(NULL, 1 << 22, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			setup_failed("mmap");
		p[0] = 1;
		numa_page_free(launder(p));
	} else if (!strcmp(c, "interior_run")) {
		char *p = pages(20 * PAGE);
		numa_page_free(launder(p + 4 * PAGE));
	} else if (!strcmp(c, "interior_cached")) {
		char *p = pages(8 * PAGE); /* a run of the thread's page cache */
		numa_page_free(launder(p + PAGE));
	} else if (!strcmp(c, "interior_unaligned")) {
		char *p = pages(PAGE);
		numa_page_free(launder(p + 100));
	} else if (!strcmp(c, "interior_huge")) {
		char *p = pages(40u << 20);
		numa_page_free(launder(p + (20u << 20))); /* a later 16 MiB granule of the block */
	} else if (!strcmp(c, "interior_huge_first")) {
		char *p = pages(9u << 20);
		numa_page_free(launder(p + PAGE)); /* the block's first granule */
	} else if (!strcmp(c, "interior_interleaved")) {
		char *p = numa_page_alloc_interleaved(16 * PAGE);
		if (!p)
			setup_failed("numa_page_alloc_interleaved");
		numa_page_free(launder(p + 2 * PAGE));
	} else if (!strcmp(c, "chunk_header")) {
		/* The start of the chunk (16 MiB, 16 MiB-aligned) holding a page: its header, never
		 * handed out. */
		char *p = pages(PAGE);
		numa_page_free(launder((void *)((uintptr_t)p & ~(uintptr_t)((1u << 24) - 1))));
	} else if (!strcmp(c, "double_free_page")) {
		char *p = pages(PAGE);
		numa_page_free(p);
		numa_page_free(launder(p)); /* still in this thread's page cache */
	} else if (!strcmp(c, "double_free_page_drained")) {
		/* The page goes back to its pool (and may merge) before the second free. */
		char *p = pages(PAGE);
		numa_page_free(p);
		numa_page_trim();
		numa_page_free(launder(p));
	} else if (!strcmp(c, "double_free_merged")) {
		/* a and b adjacent (runs above 16 pages start on a 16-page boundary: 32 pages
		 * each); b merges into a's free run: b's head is then an interior page of a free
		 * run, which must not pass for a live run. */
		char *a = pages(32 * PAGE), *b = pages(32 * PAGE);
		if (b != a + 32 * PAGE)
			setup_failed("two 32-page runs are not adjacent");
		numa_page_free(a);
		numa_page_free(b);
		numa_page_free(launder(b));
	} else if (!strcmp(c, "double_free_reused")) {
		/* Freed, then the pages handed out again as part of a longer run. */
		char *a = pages(32 * PAGE), *b = pages(32 * PAGE), *guard = pages(32 * PAGE);
		if (b != a + 32 * PAGE || guard != b + 32 * PAGE)
			setup_failed("three 32-page runs are not adjacent");
		numa_page_free(a);
		numa_page_free(b);
		numa_page_trim(); /* out of the thread's cache of long runs, merged in the pool */
		/* The pool may place a 64-page run elsewhere first: take them until one is there. */
		char *c2 = NULL;
		for (int i = 0; i < 256 && c2 != a; i++)
			c2 = pages(64 * PAGE);
		if (c2 != a)
			setup_failed("no 64-page run came where the two 32-page runs were");
		numa_page_free(launder(b));
	} else if (!strcmp(c, "double_free_huge")) {
		char *p = pages(9u << 20);
		numa_page_free(p);
		numa_page_free(launder(p));
	} else if (!strcmp(c, "double_free_interleaved")) {
		char *p = numa_page_alloc_interleaved(16 * PAGE);
		if (!p)
			setup_failed("numa_page_alloc_interleaved");
		numa_page_free(p);
		numa_page_free(launder(p));
	} else if (!strcmp(c, "double_free_cross_thread")) {
		/* Another thread (one the library never saw) frees it first. */
		char *p = pages(30 * PAGE);
		pthread_t t;
		if (pthread_create(&t, NULL, free_it, p) || pthread_join(t, NULL))
			setup_failed("pthread");
		numa_page_free(launder(p));
	} else {
		fprintf(stderr, "unknown case %s\n", c);
		return 2;
	}
	for (int i = 0; i < 3; i++)
		numa_page_free(keep[i]);
	fprintf(stderr, "%s: the misuse was not caught\n", c);
	return 0;
}
