/*
 * numa_on_demand.c — libnuma is loaded where memory has somewhere else to go, not in every
 * process. A program linked with -lnumapage (not with -lnuma) that allocates: on a machine
 * whose /sys/devices/system/node lists one node, libnuma is not mapped (its constructor read
 * /proc/self/status twice, listed the node directory and read node0's meminfo with stdio in
 * every process: about a third of the library's start-up time); on a machine of several nodes
 * it is, and the chunks were bound (bind_fail 0). set_mempolicy(2)'s wrapper, which the
 * program reaches through libnumapage alone, still works on either (libnuma loaded for it on
 * demand), and the policy it set is the kernel's (get_mempolicy through the loaded libnuma).
 * mbind's and move_pages' wrappers answer as the system calls do, bad arguments included.
 * With the argument "loaded", libnuma must be mapped whatever /sys says: the table is this
 * machine's read through hwloc's variables (HWLOC_SYNTHETIC with HWLOC_THISSYSTEM=1), whose
 * binds a review found all refused when libnuma was opened only where nothing redirected hwloc.
 * Exit status 0 when all of that holds.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <numaif.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "numapage.h"

#define FAIL(...)                                                                          \
	do {                                                                               \
		fprintf(stderr, "numa_on_demand: " __VA_ARGS__);                           \
		fputc('\n', stderr);                                                       \
		return 1;                                                                  \
	} while (0)

/* Nodes the kernel lists (the test may read /sys itself: it checks the library, which must
 * not). */
static int kernel_nodes(void)
{
	DIR *d = opendir("/sys/devices/system/node");
	if (!d)
		return 1; /* a kernel without NUMA: one node */
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		unsigned id;
		char rest;
		if (sscanf(e->d_name, "node%u%c", &id, &rest) == 1)
			n++;
	}
	closedir(d);
	return n ? n : 1;
}

static bool libnuma_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return false;
	char line[512];
	bool found = false;
	while (fgets(line, sizeof line, f))
		if (strstr(line, "/libnuma.so"))
			found = true;
	fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	bool want_loaded = argc > 1 && strcmp(argv[1], "loaded") == 0;
	enum { N = 1000 };
	static void *blocks[N];
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(100 + (size_t)i * 64);
		if (!blocks[i] || numa_page_node_of(blocks[i]) < 0)
			FAIL("block %d is not libnumapage's", i);
		memset(blocks[i], i, 100 + (size_t)i * 64);
	}
	char *big = malloc(40 << 20);
	if (!big)
		FAIL("no 40 MiB block");
	memset(big, 1, 40 << 20);
	int nodes = kernel_nodes();
	bool mapped = libnuma_mapped();
	long long bind_fail = 0;
	for (int n = 0; n <= numa_page_max_node(); n++) {
		struct numa_page_node_stats s;
		if (numa_page_stats_get(n, &s) == 0)
			bind_fail += (long long)s.bind_fail;
	}
	printf("numa_on_demand: %d node(s), libnuma %s, bind_fail %lld\n", nodes, mapped ? "mapped" : "not mapped",
	       bind_fail);
	if (want_loaded && !mapped)
		FAIL("a table of this machine read through hwloc, and libnuma was not loaded: nothing could bind memory");
	if (!want_loaded && nodes == 1 && mapped)
		FAIL("one node, and libnuma was loaded: its constructor ran for nothing");
	if (nodes > 1 && !mapped)
		FAIL("%d nodes, and libnuma was not loaded: nothing could bind memory", nodes);
	if (bind_fail)
		FAIL("%lld binds failed", bind_fail);
	/* The wrapper, reached without -lnuma: it must find the real call. */
	unsigned long mask = 1; /* node 0 */
	if (set_mempolicy(MPOL_PREFERRED, &mask, 2) != 0)
		FAIL("set_mempolicy(MPOL_PREFERRED, node 0) failed: %m");
	/* The kernel has it: asked through the libnuma the wrapper loaded (not linked here). */
	long (*get)(int *, unsigned long *, unsigned long, void *, unsigned long) =
		(long (*)(int *, unsigned long *, unsigned long, void *, unsigned long))dlsym(
			dlopen("libnuma.so.1", RTLD_NOW | RTLD_NOLOAD), "get_mempolicy");
	if (!get)
		FAIL("libnuma is not loaded after set_mempolicy");
	int mode = -1;
	unsigned long got = 0;
	if (get(&mode, &got, 64, NULL, 0) != 0 || mode != MPOL_PREFERRED || got != 1)
		FAIL("get_mempolicy says mode %d mask %#lx after MPOL_PREFERRED node 0", mode, got);
	if (set_mempolicy(MPOL_DEFAULT, NULL, 0) != 0)
		FAIL("set_mempolicy(MPOL_DEFAULT) failed: %m");
	/* mbind's and move_pages' wrappers answer as the system calls do, bad arguments included
	 * (a review: a move_pages with a NULL array of pages crashed in the wrapper, which read the
	 * array the kernel had refused). */
	char *page = aligned_alloc(4096, 4096);
	if (!page)
		FAIL("no page");
	memset(page, 1, 4096);
	int st[1] = {-1}, to[1] = {0};
	void *pages[1] = {page};
	struct {
		const char *what;
		long ours, kernel;
		int ours_errno, kernel_errno;
	} c[5];
	int k = 0;
#define BOTH(what_, call_, sys_)                                                                   	do {                                                                                       		c[k].what = what_;                                                                 		errno = 0;                                                                         		c[k].ours = call_;                                                                 		c[k].ours_errno = errno;                                                           		errno = 0;                                                                         		c[k].kernel = sys_;                                                                		c[k].kernel_errno = errno;                                                         		k++;                                                                               	} while (0)
	BOTH("move_pages, pages NULL", move_pages(0, 1, NULL, to, st, 0),
	     syscall(SYS_move_pages, 0, 1UL, NULL, to, st, 0));
	BOTH("move_pages, a query", move_pages(0, 1, pages, NULL, st, 0),
	     syscall(SYS_move_pages, 0, 1UL, pages, NULL, st, 0));
	BOTH("mbind, an unaligned start", mbind(page + 1, 4096, MPOL_PREFERRED, &mask, 2, 0),
	     syscall(SYS_mbind, page + 1, 4096UL, MPOL_PREFERRED, &mask, 2UL, 0U));
	BOTH("mbind, a page to node 0", mbind(page, 4096, MPOL_PREFERRED, &mask, 2, 0),
	     syscall(SYS_mbind, page, 4096UL, MPOL_PREFERRED, &mask, 2UL, 0U));
	BOTH("mbind, an absurd length with MPOL_MF_MOVE",
	     mbind(page, (unsigned long)-8192, MPOL_BIND, &mask, 2, MPOL_MF_MOVE),
	     syscall(SYS_mbind, page, (unsigned long)-8192, MPOL_BIND, &mask, 2UL, MPOL_MF_MOVE));
#undef BOTH
	for (int i = 0; i < k; i++)
		if (c[i].ours != c[i].kernel || (c[i].ours < 0 && c[i].ours_errno != c[i].kernel_errno))
			FAIL("%s: the wrapper answered %ld (errno %d), the system call %ld (errno %d)", c[i].what,
			     c[i].ours, c[i].ours_errno, c[i].kernel, c[i].kernel_errno);
	free(page);
	for (int i = 0; i < N; i++)
		free(blocks[i]);
	free(big);
	printf("ok\n");
	return 0;
}
