/*
 * probe_topology.c — prints what libnumapage made of its surroundings: "euid=U nodes=N" (the
 * effective user and the node count of the topology in use) after a malloc and free that must be served by it. Linked with the library (shared
 * for topology_inputs.py, static for the setuid test, where the loader would not find a
 * shared one through the build tree's runpath). Exit status 0 when malloc worked and its
 * block is libnumapage's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "numapage.h"

int main(void)
{
	char *p = malloc(100);
	if (!p)
		return 1;
	p[0] = 1;
	if (numa_page_node_of(p) < 0) {
		fprintf(stderr, "probe_topology: malloc is not libnumapage's\n");
		return 1;
	}
	free(p);
	printf("euid=%d nodes=%d\n", (int)geteuid(), numa_page_node_count());
	return 0;
}
