/*
 * numapage — the command-line companion of libnumapage.
 *   numapage topology [--json] [--topology FILE|synthetic:STR]
 *   numapage run [--stats] [--topology FILE] [--place POLICY] -- COMMAND [ARGS]
 *   numapage stat PID [-i SECONDS]
 *   numapage options
 */
#include "numapage.h"

#include <stdio.h>
#include <string.h>

#include "cmds.h"

struct cmd {
	const char *name;
	int (*fn)(int, char **);
	const char *usage;
};

static const struct cmd cmds[] = {
	{"options", np_cmd_options, "options"},
	{"run", np_cmd_run, "run [--stats] [--json FILE] [--topology FILE] [--place POLICY] -- COMMAND [ARGS]"},
	{"stat", np_cmd_stat, "stat PID [-i SECONDS] [-n COUNT]"},
	{"topology", np_cmd_topology, "topology [--json] [--topology FILE|synthetic:STR]"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: numapage COMMAND [ARGS]\ncommands:\n");
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		fprintf(out, "  numapage %s\n", cmds[i].usage);
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("numapage %s\n", numa_page_version());
		return 0;
	}
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "numapage: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
