/*
 * where — the program of the Meson subproject example: it allocates with malloc and with
 * numa_page_alloc, then says which node each came from. Built by this directory's meson.build
 * against libnumapage found by dependency('numapage') (installed, or the subproject).
 * Exit status 1 if libnumapage does not know the memory it handed out.
 */
#include <numapage.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	char *small = malloc(100);               /* malloc is libnumapage's in a linked program */
	char *pages = numa_page_alloc(1 << 20);  /* 1 MiB of pages on this thread's home node */
	if (!small || !pages) {
		perror("where");
		return 1;
	}
	small[0] = pages[0] = 1;
	int a = numa_page_node_of(small), b = numa_page_node_of(pages);
	printf("libnumapage %s (built against %d.%d.%d): %d node(s), home node %d\n",
	       numa_page_version(), NUMA_PAGE_VERSION_MAJOR, NUMA_PAGE_VERSION_MINOR,
	       NUMA_PAGE_VERSION_PATCH, numa_page_node_count(), numa_page_home_node());
	printf("malloc(100) is on node %d, numa_page_alloc(1 MiB) on node %d\n", a, b);
	free(small);
	numa_page_free(pages);
	return a < 0 || b < 0;
}
