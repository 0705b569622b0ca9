/*
 * address_space.c — a program linked with -lnumapage under a limited address space (RLIMIT_AS,
 * as `ulimit -v` sets; the program re-executes itself with the limit, so it holds from the
 * first allocation): memory it frees must be address space again, as under the C library.
 *   reuse:   200 MB of 1000-byte blocks, all freed: then a 150 MB block (the pools kept their
 *            empty 4 MiB chunks mapped, and it failed with ENOMEM); malloc_info's totals
 *            then show the pools' peak above what they map
 *   backoff: a 100 MB block held while small blocks fill the rest of the space up to ENOMEM;
 *            the 100 MB block freed: then 2000 small blocks (none came: the freed block stayed
 *            mapped in its node's cache, and the pool skipped its next 64 growths)
 *   clean:   a 180 MB block, barely written, freed: then 3 MiB blocks up to ENOMEM, as many as
 *            after malloc_trim (69 against 117: each was cut from the cached 180 MB chunk and
 *            held a 16 MiB granule of address space, and a failing mapping that unmapped the
 *            cached chunk, counting its resident pages (none), did not try again)
 *   trim:    1 MiB blocks up to ENOMEM, all freed, malloc_trim: then the program's own 8 MiB
 *            mmap (the pools kept their empty chunks mapped, and it failed: a hostile test)
 *   trim_late: the same with the limit set by the program after its first allocation (the
 *            library sizes its mappings by the limit at start, but trim gives back all the
 *            same)
 * Exit status 0 when every allocation that must succeed does; prints what it saw.
 */
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "numapage.h"

#define MB ((size_t)1 << 20)

#define FAIL(...)                                                                          \
	do {                                                                               \
		fprintf(stderr, "address_space: " __VA_ARGS__);                            \
		return 1;                                                                  \
	} while (0)

/* The totals of malloc_info's report: <system type="current"> and "max" after the heaps. */
static int system_sizes(size_t *current, size_t *max)
{
	FILE *f = tmpfile();
	if (!f || malloc_info(0, f) != 0)
		return -1;
	rewind(f);
	char line[256];
	bool in_heap = false;
	*current = *max = 0;
	while (fgets(line, sizeof line, f)) {
		if (!strncmp(line, "<heap ", 6))
			in_heap = true;
		else if (!strcmp(line, "</heap>\n"))
			in_heap = false;
		else if (!in_heap && sscanf(line, "<system type=\"current\" size=\"%zu\"/>", current) != 1)
			sscanf(line, "<system type=\"max\" size=\"%zu\"/>", max);
	}
	fclose(f);
	return 0;
}

static int reuse(void)
{
	enum { BLOCK = 1000 };
	size_t n = 200 * MB / BLOCK;
	void **v = malloc(n * sizeof *v);
	if (!v)
		FAIL("no room for the table\n");
	for (size_t i = 0; i < n; i++) {
		v[i] = malloc(BLOCK);
		if (!v[i])
			FAIL("small block %zu of %zu: ENOMEM before the limit\n", i, n);
		memset(v[i], 1, BLOCK);
	}
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	char *big = malloc(150 * MB);
	if (!big)
		FAIL("150 MB after freeing 200 MB of small blocks: %s\n", strerror(errno));
	memset(big, 2, 150 * MB);
	if (numa_page_node_of(big) < 0)
		FAIL("the block is not libnumapage's\n");
	free(big);
	/* The chunks given back for it leave the pools' peak in malloc_info's report. */
	size_t current, max;
	if (system_sizes(&current, &max) != 0)
		FAIL("malloc_info's report could not be read\n");
	if (max < 200 * MB || current >= max)
		FAIL("malloc_info: system current %zu, max %zu after 200 MB of small blocks went back\n",
		     current, max);
	printf("reuse: 200 MB of 1000-byte blocks freed, then a 150 MB block; pools now %zu MB, at "
	       "most %zu MB\n", current / MB, max / MB);
	return 0;
}

static int backoff(void)
{
	enum { BLOCK = 1000, MAXN = 1 << 20 };
	char *big = malloc(100 * MB);
	void **v = malloc(MAXN * sizeof *v);
	if (!big || !v)
		FAIL("the 100 MB block or the table: %s\n", strerror(errno));
	memset(big, 1, 100 * MB);
	size_t n = 0;
	while (n < MAXN && (v[n] = malloc(BLOCK)) != NULL)
		memset(v[n++], 3, BLOCK);
	if (n == MAXN)
		FAIL("the limit was never reached\n");
	free(big);
	int failed = 0;
	for (int i = 0; i < 2000; i++) {
		void *p = malloc(BLOCK);
		if (!p)
			failed++;
		else
			memset(p, 4, BLOCK);
	}
	printf("backoff: %zu blocks up to ENOMEM; after freeing 100 MB, %d of 2000 mallocs failed\n", n, failed);
	if (failed)
		FAIL("%d of 2000 small mallocs failed after 100 MB was freed\n", failed);
	return 0;
}

/* 3 MiB blocks malloc'd up to ENOMEM (at most 1000), each written on a page, then freed. */
static size_t fill_3mib(void)
{
	static void *v[1000];
	size_t n = 0;
	while (n < 1000 && (v[n] = malloc(3 * MB)) != NULL)
		memset(v[n++], 5, 4096);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	return n;
}

static int clean(void)
{
	char *big = malloc(180 * MB);
	if (!big)
		FAIL("the 180 MB block: %s\n", strerror(errno));
	memset(big, 1, 100);
	free(big);
	size_t first = fill_3mib();
	malloc_trim(0);
	size_t again = fill_3mib();
	printf("clean: after a freed 180 MB block, %zu blocks of 3 MiB up to ENOMEM; after malloc_trim, %zu\n",
	       first, again);
	if (first + 2 < again)
		FAIL("%zu blocks of 3 MiB after a freed 180 MB block, %zu after malloc_trim\n", first, again);
	return 0;
}

static int trim(void)
{
	static void *v[1000];
	size_t n = 0;
	while (n < 1000 && (v[n] = malloc(MB)) != NULL)
		memset(v[n++], 5, 4096);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	malloc_trim(0);
	void *m = mmap(NULL, 8 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("trim: %zu blocks of 1 MiB freed, malloc_trim; the program's 8 MiB mmap: %s\n", n,
	       m == MAP_FAILED ? strerror(errno) : "ok");
	if (m == MAP_FAILED)
		FAIL("after %zu blocks of 1 MiB were freed and trimmed, an 8 MiB mmap failed\n", n);
	munmap(m, 8 * MB);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "trim_late") == 0) {
		free(malloc(100)); /* the library starts unlimited */
		struct rlimit r = {300 * MB, 300 * MB};
		if (setrlimit(RLIMIT_AS, &r) != 0)
			FAIL("setrlimit: %s\n", strerror(errno));
		return trim();
	}
	if (argc == 2) {
		/* Re-executed with the limit: from the first allocation on. */
		struct rlimit r = {(rlim_t)(strcmp(argv[1], "reuse") == 0 ? 300 : 400) * MB, 0};
		r.rlim_max = r.rlim_cur;
		if (setrlimit(RLIMIT_AS, &r) != 0)
			FAIL("setrlimit: %s\n", strerror(errno));
		execl("/proc/self/exe", argv[0], argv[1], "limited", (char *)NULL);
		FAIL("exec: %s\n", strerror(errno));
	}
	if (argc != 3)
		FAIL("usage: address_space reuse|backoff|clean|trim\n");
	if (strcmp(argv[1], "reuse") == 0)
		return reuse();
	if (strcmp(argv[1], "backoff") == 0)
		return backoff();
	if (strcmp(argv[1], "clean") == 0)
		return clean();
	if (strcmp(argv[1], "trim") == 0)
		return trim();
	FAIL("unknown scenario %s\n", argv[1]);
}
