/*
 * numapage topology [--json] [--topology FILE|synthetic:STR]
 * Prints the table libnumapage would build: nodes, memory, CPUs, distances, memoryless and
 * CPU-less nodes, every node's fallback order. The topology comes from --topology, else from
 * NUMAPAGE_TOPOLOGY, else this machine (with this process's cpuset and memory policy, so
 * `numactl --membind=1 numapage topology` shows what a program run that way would get).
 * Exit status: 0, 1 when loading failed and the one-node fallback is shown, 2 on usage errors,
 * 3 when the table breaks an invariant (a bug).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cmds.h"
#include "os.h"
#include "topology/topology.h"

void np_usage_topology(FILE *out)
{
	fputs("usage: numapage topology [--json] [--topology FILE|synthetic:STRING]\n"
	      "  --json       print JSON instead of text\n"
	      "  --topology   an hwloc XML file or synthetic:<hwloc synthetic string> to rehearse\n"
	      "               (default: $NUMAPAGE_TOPOLOGY, else this machine)\n"
	      "  -h, --help   this text\n",
	      out);
}

static int usage_error(const char *fmt, const char *arg)
{
	return np_usage_error("topology", np_usage_topology, fmt, arg);
}

int np_cmd_topology(int argc, char **argv)
{
	enum { OPT_JSON = 1000, OPT_TOPOLOGY };
	static const struct option opts[] = {
		{"json", no_argument, NULL, OPT_JSON},
		{"topology", required_argument, NULL, OPT_TOPOLOGY},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false;
	const char *spec = getenv("NUMAPAGE_TOPOLOGY");
	int c;
	optind = 0; /* 0: glibc starts a fresh scan (the dispatcher scanned with "+" before) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON: json = true; break;
		case OPT_TOPOLOGY: spec = optarg; break;
		case 'h': np_usage_topology(stdout); return 0;
		case ':': return usage_error("%s needs an argument", argv[optind - 1]);
		default: {
			char why[128];
			return usage_error("%s", np_bad_option(why, sizeof why, argv, opts));
		}
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);

	static struct np_topo t; /* ~40 KiB: not on the stack */
	/* The process's memory policy is read through libnuma, which the library loads only on a
	 * machine of several nodes (os.h): loaded here, so that the policy shows on one node too. */
	(void)np_os_numa_open(NULL, 0);
	int rc = np_topo_load(&t, spec, NULL);
	const char *bad = np_topo_check(&t);
	if (bad) {
		fprintf(stderr, "numapage topology: invariant broken: %s\n", bad);
		return 3;
	}
	np_topo_print(&t, stdout, json); /* a failed write: main's check of stdout */
	return rc < 0 ? 1 : 0;
}
