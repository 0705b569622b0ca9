/* tstats.h (tools) — per-node statistics of one process or the sum of several, as the command
 * handles them: values by OS node id (the union of every process's nodes, sorted) and by item
 * of this build's NUMA_PAGE_STAT_ITEMS (matched by name, so reports and live files of another
 * version add up right). Printing goes through np_vmstat_print_table_opts. */
#ifndef NP_TOOL_TSTATS_H
#define NP_TOOL_TSTATS_H

#include <stdbool.h>
#include <stdio.h>

#include "vmstat/vmstat.h"

struct np_tstats {
	int nnodes;
	int node[NP_MAX_NODES]; /* OS ids, ascending */
	long v[NP_MAX_NODES][NUMA_PAGE_STAT_NITEMS];
};

void np_tstats_clear(struct np_tstats *s);
/* The values of node os_id (added as a zero column when new), or NULL when s is full. */
long *np_tstats_node(struct np_tstats *s, int os_id);
/* Item index of a counter name (name[0..len)), or -1. */
int np_tstats_item(const char *name, size_t len);
/* dst += src, node by node. */
void np_tstats_add(struct np_tstats *dst, const struct np_tstats *src);
/* out = now - before (nodes of now). */
void np_tstats_delta(struct np_tstats *out, const struct np_tstats *now, const struct np_tstats *before);
/* The table; returns the rows printed (0: all hidden). */
int np_tstats_print(FILE *out, const struct np_tstats *s, const struct np_vmstat_table_opts *o);
/* The JSON member "nodes":[{"node":N,"<item>":V,...},...] (raw counts). */
void np_tstats_json_nodes(FILE *out, const struct np_tstats *s);

/* One process's exit report, as libnumapage writes it for NUMAPAGE_STATS=json:<path>:
 * {"pid":P,"parent":Q,"live":I,"command":"C","nodes":[{"node":N,"<item>":V,...},...]} (pid,
 * parent and command are absent from reports of older versions: then 0 and ""; live too: then
 * -1). 0, or -1 if malformed. */
struct np_treport {
	int pid, parent;
	/* The inode of the process's live file ("live"; 0: it published none; -1: the report
	 * does not say, from a library before the field) */
	long long live;
	char command[64];
	struct np_tstats stats;
};
int np_tstats_parse_report(const char *text, struct np_treport *r);
/* The "live" of a report's text (struct np_treport), without parsing the rest. */
long long np_tstats_report_live(const char *text);

/* Table options: MiB, columns folded to the width of the terminal on fd (or $COLUMNS). */
void np_tstats_opts_init(struct np_vmstat_table_opts *o, int fd);

#endif
