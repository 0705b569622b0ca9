/*
 * numapage topology [--json] [--topology FILE|synthetic:STR]
 * Prints the table libnumapage would build: nodes, memory, CPUs, distances, memoryless and
 * CPU-less nodes, every node's fallback order. The topology comes from --topology, else from
 * NUMAPAGE_TOPOLOGY, else this machine (with this process's cpuset and memory policy, so
 * `numactl --membind=1 numapage topology` shows what a program run that way would get).
 * Exit status: 0, 1 when loading failed and the one-node fallback is shown, 2 on usage errors,
 * 3 when the table breaks an invariant (a bug).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cmds.h"
#include "topology/topology.h"

static void usage(FILE *out)
{
	fputs("usage: numapage topology [--json] [--topology FILE|synthetic:STRING]\n"
	      "  --json       print JSON instead of text\n"
	      "  --topology   an hwloc XML file or synthetic:<hwloc synthetic string> to rehearse\n"
	      "               (default: $NUMAPAGE_TOPOLOGY, else this machine)\n",
	      out);
}

int np_cmd_topology(int argc, char **argv)
{
	bool json = false;
	const char *spec = getenv("NUMAPAGE_TOPOLOGY");
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--topology") == 0 && i + 1 < argc) {
			spec = argv[++i];
		} else if (strncmp(argv[i], "--topology=", 11) == 0) {
			spec = argv[i] + 11;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "numapage topology: unexpected argument '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}

	static struct np_topo t; /* ~40 KiB: not on the stack */
	int rc = np_topo_load(&t, spec, NULL);
	const char *bad = np_topo_check(&t);
	if (bad) {
		fprintf(stderr, "numapage topology: invariant broken: %s\n", bad);
		return 3;
	}
	np_topo_print(&t, stdout, json);
	if (fflush(stdout) != 0)
		return 1;
	return rc < 0 ? 1 : 0;
}
