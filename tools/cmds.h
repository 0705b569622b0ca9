/* cmds.h (tools) — the subcommands of the numapage command, one file each (tools/cmds/), and
 * their usage texts, which `numapage help CMD`, `numapage CMD --help` and the usage errors
 * share. */
#ifndef NP_TOOL_H
#define NP_TOOL_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

/* Each returns the process exit status; argv[0] is the subcommand's name. Options are parsed
 * with getopt_long; every usage error names what was wrong, then shows the usage (status 2). */
int np_cmd_topology(int argc, char **argv);
int np_cmd_run(int argc, char **argv);
int np_cmd_stat(int argc, char **argv);
int np_cmd_options(int argc, char **argv);

void np_usage_topology(FILE *out);
void np_usage_run(FILE *out);
void np_usage_stat(FILE *out);
void np_usage_options(FILE *out);

/* errno of a write to standard output that a command saw fail first (it flushes as it goes):
 * main reports it, since its own flush then has nothing left to fail on. 0: none. */
extern int np_stdout_error;
/* A usage error of subcommand `cmd`: "numapage CMD: " and the message (fmt with one string
 * argument) on stderr, then the subcommand's usage there; returns 2, the exit status for it. */
int np_usage_error(const char *cmd, void (*print_usage)(FILE *out), const char *fmt, const char *arg);
/* What was wrong with the option getopt_long just refused ('?'), as "unknown option -q",
 * "unknown option --bogus" or "option --json takes no argument", into buf. */
const char *np_bad_option(char *buf, size_t size, char **argv, const struct option *opts);

#endif
