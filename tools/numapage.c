/*
 * numapage — the command-line companion of libnumapage.
 *   numapage topology [--json] [--topology FILE|synthetic:STR]
 *   numapage run [--stats] [--per-process] [--json FILE|-] ... [--] COMMAND [ARGS]
 *   numapage stat [-c] [-z] [-r] [-P] [--json] [-i SECONDS] [-n COUNT] PID|PATTERN...
 *   numapage options [--json] [PID]
 *   numapage help [COMMAND]
 *   numapage --version | --help
 */
#include "numapage.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "lib/procs.h"

struct cmd {
	const char *name;
	int (*fn)(int, char **);
	void (*usage)(FILE *);
	const char *what;
};

static const struct cmd cmds[] = {
	{"topology", np_cmd_topology, np_usage_topology, "the NUMA topology libnumapage uses"},
	{"run", np_cmd_run, np_usage_run, "run a program with libnumapage, and its statistics"},
	{"stat", np_cmd_stat, np_usage_stat, "per-node counters of running processes"},
	{"options", np_cmd_options, np_usage_options, "the NUMAPAGE_* options in force"},
	{"help", NULL, NULL, "this text, or a command's usage"},
};
#define NCMDS (sizeof cmds / sizeof cmds[0])

static void usage(FILE *out)
{
	fprintf(out, "usage: numapage COMMAND [ARGS]\n"
		     "       numapage help [COMMAND]\n"
		     "       numapage --version | --help\n"
		     "commands:\n");
	for (size_t i = 0; i < NCMDS; i++)
		fprintf(out, "  numapage %-9s %s\n", cmds[i].name, cmds[i].what);
	fprintf(out, "options:\n"
		     "  -h, --help     this text\n"
		     "  -V, --version  the version of numapage: that of the library it was built with\n"
		     "`numapage help COMMAND` or `numapage COMMAND --help` shows a command's options;\n"
		     "man numapage (1), man 7 numapage for the NUMAPAGE_* options.\n");
}

int np_usage_error(const char *cmd, void (*print_usage)(FILE *out), const char *fmt, const char *arg)
{
	fprintf(stderr, "numapage %s: ", cmd);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	print_usage(stderr);
	return 2;
}

const char *np_bad_option(char *buf, size_t size, char **argv, const struct option *opts)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";
	/* A long option is the argument just passed: unknown (optopt 0), or given a value it does
	 * not take (optopt: its value, often no character at all). In a cluster of short options
	 * argv[optind - 1] may be an earlier argument, so a short one is named by optopt. */
	if (strncmp(arg, "--", 2) == 0 && arg[2]) {
		size_t n = strcspn(arg + 2, "=");
		for (const struct option *o = opts; optopt && arg[2 + n] == '=' && o->name; o++)
			if (!o->flag && o->val == optopt && strncmp(o->name, arg + 2, n) == 0) {
				snprintf(buf, size, "option --%s takes no argument", o->name);
				return buf;
			}
		if (!optopt) {
			snprintf(buf, size, "unknown option %s", arg);
			return buf;
		}
	}
	if (optopt > 0 && optopt < 128 && isprint(optopt))
		snprintf(buf, size, "unknown option -%c", optopt);
	else
		snprintf(buf, size, "unknown option %s", arg);
	return buf;
}

static const struct cmd *find(const char *name)
{
	for (size_t i = 0; i < NCMDS; i++)
		if (strcmp(name, cmds[i].name) == 0)
			return &cmds[i];
	return NULL;
}

static int help(int argc, char **argv)
{
	if (argc > 2) {
		fprintf(stderr, "numapage help: one command at most, not '%s'\n", argv[2]);
		usage(stderr);
		return 2;
	}
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	const struct cmd *c = find(argv[1]);
	if (!c || !c->usage) {
		fprintf(stderr, "numapage help: unknown command '%s'\n", argv[1]);
		usage(stderr);
		return 2;
	}
	c->usage(stdout);
	return 0;
}

static int dispatch(int argc, char **argv)
{
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	/* '+': options stop at the command; everything after it is the command's. */
	while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		switch (c) {
		case 'h': usage(stdout); return 0;
		case 'V': printf("numapage %s\n", numa_page_version()); return 0;
		default:
			fprintf(stderr, "numapage: unknown option %s\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "numapage: no command given\n");
		usage(stderr);
		return 2;
	}
	const struct cmd *cmd = find(argv[optind]);
	if (!cmd) {
		fprintf(stderr, "numapage: unknown command '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	argc -= optind;
	argv += optind;
	return cmd->fn ? cmd->fn(argc, argv) : help(argc, argv);
}

int np_stdout_error;

int main(int argc, char **argv)
{
	/* The terminal's character set: names keep their UTF-8 characters only where it is UTF-8
	 * (elsewhere a byte of one, such as the 0x9b in U+00DB, may be a terminal control). */
	setlocale(LC_CTYPE, "");
	np_proc_utf8_terminal = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	int rc = dispatch(argc, argv);
	/* What was printed must have arrived: a full disk or a closed pipe is a failure, not a
	 * success that printed nothing. */
	int err = fflush(stdout) != 0 ? errno : np_stdout_error;
	if (err || ferror(stdout)) {
		fprintf(stderr, "numapage: cannot write to standard output%s%s\n", err ? ": " : "",
			err ? strerror(err) : "");
		return rc ? rc : 1;
	}
	return rc;
}
