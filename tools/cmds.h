/* cmds.h (tools) — the subcommands of the numapage command, one file each. */
#ifndef NP_TOOL_H
#define NP_TOOL_H

/* Each returns the process exit status; argv[0] is the subcommand's name. */
int np_cmd_topology(int argc, char **argv);
int np_cmd_run(int argc, char **argv);
int np_cmd_stat(int argc, char **argv);
int np_cmd_options(int argc, char **argv);

#endif
