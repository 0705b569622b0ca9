/*
 * vmstat_print.c — statistics output: the numastat-like table and JSON, numa_page_stats_print,
 * and the start/exit hooks (NUMAPAGE_STATS report at exit, the live-view file). The only part
 * of vmstat that uses stdio: it runs at the user's request or at exit, when the allocator can
 * serve stdio's buffers, and never while an allocator lock is held (it takes reg_lock itself,
 * to snapshot, and releases it before printing).
 */
#include "json.h"
#include "vmstat.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "options.h"
#include "os.h"

#define VALUE_WIDTH 14

/* Column i's heading: a node's, or Total for i == nnodes. */
static void column_heading(char *buf, size_t size, int i, int nnodes, const int *os_ids)
{
	if (i == nnodes)
		snprintf(buf, size, "Total");
	else
		snprintf(buf, size, "node%d", os_ids[i]);
}

/* Item k's value in column i: a node's, or (i == nnodes) the sum over the nodes. */
static long column_value(const long *values, int nitems, int nnodes, int i, int k)
{
	if (i < nnodes)
		return values[(size_t)i * (size_t)nitems + (size_t)k];
	long v = 0;
	for (int j = 0; j < nnodes; j++)
		v += values[(size_t)j * (size_t)nitems + (size_t)k];
	return v;
}

/* numastat's table: a column a node, then Total. */
bool np_vmstat_print_table(FILE *out, int nnodes, const int *os_ids, int nitems,
			   const char *const *names, const long *values)
{
	int w = 16;
	for (int k = 0; k < nitems; k++)
		w = NP_MAX(w, (int)strlen(names[k]) + 1);
	bool ok = fprintf(out, "%-*s", w, "") >= 0;
	for (int i = 0; i <= nnodes; i++) {
		char col[24];
		column_heading(col, sizeof col, i, nnodes, os_ids);
		ok &= fprintf(out, " %*s", VALUE_WIDTH, col) >= 0;
	}
	ok &= fputc('\n', out) != EOF;
	for (int k = 0; k < nitems; k++) {
		ok &= fprintf(out, "%-*s", w, names[k]) >= 0;
		for (int i = 0; i <= nnodes; i++)
			ok &= fprintf(out, " %*ld", VALUE_WIDTH, column_value(values, nitems, nnodes, i, k)) >= 0;
		ok &= fputc('\n', out) != EOF;
	}
	return ok;
}

bool np_vmstat_print_json_nodes(FILE *out, int nnodes, const int *os_ids, int nitems,
				const char *const *names, const long *values)
{
	bool ok = fputs("\"nodes\":[", out) != EOF;
	for (int i = 0; i < nnodes; i++) {
		ok &= fprintf(out, "%s{\"node\":%d", i ? "," : "", os_ids[i]) >= 0;
		for (int k = 0; k < nitems; k++) {
			ok &= fputc(',', out) != EOF;
			ok &= np_json_string(out, names[k]);
			ok &= fprintf(out, ":%ld", values[(size_t)i * (size_t)nitems + (size_t)k]) >= 0;
		}
		ok &= fputc('}', out) != EOF;
	}
	return fputc(']', out) != EOF && ok;
}

bool np_vmstat_print_json(FILE *out, int nnodes, const int *os_ids, int nitems,
			  const char *const *names, const long *values)
{
	bool ok = fputc('{', out) != EOF;
	ok &= np_vmstat_print_json_nodes(out, nnodes, os_ids, nitems, names, values);
	return fputs("}\n", out) != EOF && ok;
}

/* ---- The numapage command's table (numastat's -c, -z, MiB, folding) ------------------------- */

#define MiB (1024.0 * 1024.0)

static const char *unit_of(const struct np_vmstat_table_opts *o, int kind)
{
	if (NP_VMSTAT_KIND_IS_COUNT(kind))
		return "count";
	if (!o->raw)
		return "MiB";
	return NP_VMSTAT_KIND_IS_BYTES(kind) ? "bytes" : "pages";
}

static void cell(char *buf, size_t size, const struct np_vmstat_table_opts *o, int kind, long v)
{
	if (o->raw || NP_VMSTAT_KIND_IS_COUNT(kind)) {
		snprintf(buf, size, "%ld", v);
		return;
	}
	double mib = NP_VMSTAT_KIND_IS_BYTES(kind) ? (double)v / MiB : (double)v * (double)o->page_size / MiB;
	snprintf(buf, size, o->compact ? "%.0f" : "%.2f", mib);
}

int np_vmstat_print_table_opts(FILE *out, const struct np_vmstat_table_opts *o, int nnodes,
			       const int *os_ids, int nitems, const char *const *names,
			       const uint8_t *kinds, const long *values)
{
	/* Columns: the nodes that are shown, then Total (index nnodes). */
	int cols[NP_MAX_NODES + 1], ncols = 0;
	for (int i = 0; i < nnodes; i++) {
		bool zero = true;
		for (int k = 0; k < nitems && zero; k++)
			zero = values[(size_t)i * (size_t)nitems + (size_t)k] == 0;
		if (!(zero && o->hide_zero_cols))
			cols[ncols++] = i;
	}
	cols[ncols++] = nnodes;
	int rows[256], nrows = 0;
	for (int k = 0; k < nitems && nrows < 256; k++) {
		bool zero = true;
		for (int i = 0; i < nnodes && zero; i++)
			zero = values[(size_t)i * (size_t)nitems + (size_t)k] == 0;
		if (!(zero && o->hide_zero_rows))
			rows[nrows++] = k;
	}
	if (nrows == 0)
		return 0;
	/* Widths: numastat's fixed columns, or (compact) each as wide as its widest cell. */
	int label_w = 0, unit_w = 5, w[NP_MAX_NODES + 1];
	char buf[64];
	for (int r = 0; r < nrows; r++)
		label_w = NP_MAX(label_w, (int)strlen(names[rows[r]]));
	for (int c = 0; c < ncols; c++) {
		int i = cols[c];
		column_heading(buf, sizeof buf, i, nnodes, os_ids);
		w[c] = o->compact ? (int)strlen(buf) : NP_MAX((int)strlen(buf), VALUE_WIDTH);
		for (int r = 0; r < nrows; r++) {
			int k = rows[r];
			cell(buf, sizeof buf, o, kinds[k], column_value(values, nitems, nnodes, i, k));
			w[c] = NP_MAX(w[c], (int)strlen(buf));
		}
	}
	/* Folding: as many columns per block as fit the width (at least one). */
	for (int first = 0; first < ncols;) {
		int last = first, used = label_w + 1 + unit_w + 1 + w[first];
		while (last + 1 < ncols && (o->width <= 0 || used + 1 + w[last + 1] <= o->width))
			used += 1 + w[++last];
		if (first > 0)
			fputc('\n', out);
		fprintf(out, "%-*s %-*s", label_w, "", unit_w, "");
		for (int c = first; c <= last; c++) {
			column_heading(buf, sizeof buf, cols[c], nnodes, os_ids);
			fprintf(out, " %*s", w[c], buf);
		}
		fputc('\n', out);
		for (int r = 0; r < nrows; r++) {
			int k = rows[r];
			fprintf(out, "%-*s %-*s", label_w, names[k], unit_w, unit_of(o, kinds[k]));
			for (int c = first; c <= last; c++) {
				cell(buf, sizeof buf, o, kinds[k], column_value(values, nitems, nnodes, cols[c], k));
				fprintf(out, " %*s", w[c], buf);
			}
			fputc('\n', out);
		}
		first = last + 1;
	}
	return nrows;
}

/* Every node's exact counters, what the printers take: snapshot first (reg_lock held per
 * node), print after, so that no lock is held during stdio. */
struct snapshot {
	int n;
	int os_ids[NP_MAX_NODES];
	const char *names[NUMA_PAGE_STAT_NITEMS];
	long values[NP_MAX_NODES * NUMA_PAGE_STAT_NITEMS];
};

static void take_snapshot(struct snapshot *v)
{
	if (np_vmstat_read_hook)
		np_vmstat_read_hook();
	v->n = np_vmstat_nnodes();
	for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
		v->names[k] = numa_page_stat_name(k);
	for (int i = 0; i < v->n; i++) {
		v->os_ids[i] = np_vmstat_os_id(i);
		np_vmstat_snapshot_node(i, &v->values[i * NUMA_PAGE_STAT_NITEMS], true);
	}
}

NUMA_PAGE_API int numa_page_stats_print(FILE *out, int format)
{
	if (!out || (format != NUMA_PAGE_STATS_TABLE && format != NUMA_PAGE_STATS_JSON)) {
		errno = EINVAL;
		return -1;
	}
	struct snapshot v;
	take_snapshot(&v);
	/* The answer is whether these writes went out, each call's result and the flush's: not the
	 * stream's error indicator, which the program's earlier use of it may have left set. */
	int saved = errno;
	errno = 0;
	bool ok = format == NUMA_PAGE_STATS_TABLE
			  ? np_vmstat_print_table(out, v.n, v.os_ids, NUMA_PAGE_STAT_NITEMS, v.names, v.values)
			  : np_vmstat_print_json(out, v.n, v.os_ids, NUMA_PAGE_STAT_NITEMS, v.names, v.values);
	return np_stdio_answer(out, ok, saved);
}

/* ---- At start and at exit ---------------------------------------------------------------- */


static bool started;
static int report_pid;  /* the process that reports: this one, also after fork */
static int parent_pid;  /* in a forked child: the process it was forked from; else 0 */
/* The program's short name as it was at start-up: the report at exit would read it from the
 * command line's memory, which programs that set their title rewrite (PostgreSQL's backends
 * reported "al] idle"; a helper's test). Forked children keep the copy. */
static char command[64];

/* The report NUMAPAGE_STATS asks for (options.c refuses any other form where it is set). */
static int report_kind(const char *s)
{
	int kind = np_options_stats_kind(s);
	return kind < 0 ? NP_STATS_NONE : kind;
}
static void at_exit(void)
{
	np_vmstat_exit_report();
}

static void publish(uint64_t ns)
{
	struct np_vmstat_totals *t = np_vmstat_shm_create_in(parent_pid, ns);
	if (t)
		np_vmstat_use_totals(t);
}

void np_vmstat_start_output(void)
{
	if (started)
		return;
	started = true;
	report_pid = np_os_pid();
	const char *name = program_invocation_short_name;
	size_t len = name ? strnlen(name, sizeof command - 1) : 0;
	memcpy(command, name ? name : "", len);
	command[len] = '\0';
	if (np_opt.shm) {
		/* Before adding our own: the files of our processes that died without cleaning up.
		 * The pid namespace read once for both (a stat). */
		uint64_t ns = np_os_pid_ns();
		np_vmstat_shm_sweep_in(ns);
		publish(ns);
	}
	int kind = report_kind(np_opt.stats);
	if (kind == NP_STATS_TABLE)
		np_verbose("statistics: a table on standard error at exit");
	else if (kind == NP_STATS_JSON)
		np_verbose("statistics: JSON written to %s at exit", np_opt.stats + 5);
	/* Always: the report can be asked for later (numa_page_option_set("stats", ...)), and the
	 * live file must go at exit. */
	if (atexit(at_exit) != 0) {
		/* Without the handler the file would outlive us: do not publish. */
		if (kind != NP_STATS_NONE || np_vmstat_shm_published())
			np_warn("cannot register the statistics exit handler; no report at exit");
		np_vmstat_shm_remove();
	}
}

/* Forks this process made since it last swept, and the work due at the next malloc slow path
 * (NP_VMSTAT_DUE_*: np_vmstat_output_atfork_parent and _child, np_vmstat_output_run_due). */
static unsigned forks_unswept;
NP_HIDDEN int np_vmstat_output_due;

void np_vmstat_output_atfork_parent(void)
{
	/* Each child publishes (np_opt.shm), and one that leaves with _exit (Python's
	 * multiprocessing, pre-forking servers) leaves its file: 2,000 children, 2,000 files, a
	 * full /dev/shm in the end (a hostile review). A sweep lists the directory: once every
	 * so many forks, not at each (a child's own sweep made a fork much dearer). It makes
	 * only system calls, so a signal handler's fork may run it; but not on a handler's
	 * alternate stack, often a few KiB, which its buffers overflowed (6 KiB: a review): then
	 * at the next allocation slow path. */
	if (!started || !np_opt.shm)
		return;
	if (__atomic_add_fetch(&forks_unswept, 1, __ATOMIC_RELAXED) % NP_VMSTAT_SHM_SWEEP_FORKS)
		return;
	if (np_os_on_signal_stack())
		__atomic_or_fetch(&np_vmstat_output_due, NP_VMSTAT_DUE_SWEEP, __ATOMIC_RELAXED);
	else
		np_vmstat_shm_sweep();
}

void np_vmstat_output_run_due(void)
{
	int due = __atomic_exchange_n(&np_vmstat_output_due, 0, __ATOMIC_RELAXED);
	if (!due)
		return;
	/* Not on a signal handler's alternate stack (a few KiB; the sweep's buffers overflowed
	 * 6 KiB): left due for a later slow path. */
	if (np_os_on_signal_stack()) {
		__atomic_or_fetch(&np_vmstat_output_due, due, __ATOMIC_RELAXED);
		return;
	}
	if ((due & NP_VMSTAT_DUE_PUBLISH) && np_opt.shm && !np_vmstat_shm_published())
		publish(np_os_pid_ns());
	if (due & NP_VMSTAT_DUE_SWEEP)
		np_vmstat_shm_sweep();
}

NP_FORK_CHILD void np_vmstat_output_atfork_child(void)
{
	np_vmstat_shm_forget(); /* the parent's file: its totals were copied by np_vmstat_atfork_child */
	if (!started)
		return;
	parent_pid = report_pid;
	report_pid = np_os_pid();
	/* The child publishes under its own pid (the parent's file was forgotten above), also when
	 * the parent could not, so `numapage stat` sees forked servers and daemons; but at its
	 * first malloc slow path, not here. Most children exec or _exit before allocating
	 * anything their inherited caches do not hold (a shell's, a spawner's, a multiprocessing
	 * pool's short tasks): a file made here cost them 10 system calls and a page, a sweep
	 * to remove it, and, after exec, an unlink by the new program that has the pid (section
	 * 44 of docs/perf-issue15.md). A child that works allocates, and is seen from then on.
	 * No sweep here: it made every fork much dearer (docs/design.md); the parent sweeps what
	 * children that left with _exit leave behind, every NP_VMSTAT_SHM_SWEEP_FORKS forks. */
	__atomic_store_n(&forks_unswept, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&np_vmstat_output_due, np_opt.shm ? NP_VMSTAT_DUE_PUBLISH : 0, __ATOMIC_RELAXED);
	np_verbose("forked from process %d: counting as process %d", parent_pid, report_pid);
}

/* len bytes of s at path + *n, NUL-terminated, when they fit in size with the NUL; false
 * (nothing written) when not. */
static bool append(char *path, size_t size, size_t *n, const char *s, size_t len)
{
	if (*n + len >= size)
		return false;
	memcpy(path + *n, s, len);
	*n += len;
	path[*n] = '\0';
	return true;
}

/* NUMAPAGE_STATS=json:<path>: "%p" becomes the pid, so every process of a job started with one
 * setting (numapage run --stats) writes its own file; a forked child of a path without "%p"
 * writes <path>.<pid> rather than over its parent's report. *for_pid: the name holds the pid
 * (either way). False when the whole path does not fit in size (nothing is written then: a cut
 * path would name some other file). */
static bool report_path(const char *spec, char *path, size_t size, bool *for_pid)
{
	size_t n = 0;
	bool had_pid = false;
	char piece[16];
	for (const char *c = spec; *c; c++) {
		size_t len = 1;
		piece[0] = *c;
		if (c[0] == '%' && c[1] == 'p') {
			len = np_format(piece, sizeof piece, "%d", np_os_pid());
			had_pid = true;
			c++;
		}
		if (!append(path, size, &n, piece, len))
			return false;
	}
	path[n] = '\0';
	*for_pid = had_pid || parent_pid;
	if (!had_pid && parent_pid)
		return append(path, size, &n, piece, np_format(piece, sizeof piece, ".%d", np_os_pid()));
	return true;
}

/* The report's file at path, as np_os_create_report makes it. Where the name holds the pid
 * and a keeper reads the job's reports (`numapage run --stats`: its own directory, all of whose
 * reports it counts), an existing file at the name is another process's report, one that had
 * this pid before (pids wrap in a long job): it is left as it is, and the report goes under
 * the first free name of <path>.1 to <path>.99 (NP_VMSTAT_REPORT_TAKEN_MAX; size: path's
 * buffer). Until this, the report emptied and replaced it, and the job lost that process
 * without a word. Elsewhere the name is emptied and written, as before: a service whose pid
 * comes back (a container's pid 1) keeps its latest report there. On failure *taken says
 * whether the first name was taken, and path is the name that failed, or the first one when
 * every name is taken (EEXIST) or the next one is too long (ENAMETOOLONG). */
static FILE *create_report(char *path, size_t size, bool for_pid, bool *taken)
{
	bool exclusive = for_pid && np_opt.shm_keeper > 0;
	FILE *f = np_os_create_report(path, exclusive);
	size_t n = strlen(path);
	*taken = !f && exclusive && errno == EEXIST;
	for (int k = 1; !f && *taken && errno == EEXIST && k <= NP_VMSTAT_REPORT_TAKEN_MAX; k++) {
		char piece[16];
		size_t m = n;
		path[n] = '\0';
		if (!append(path, size, &m, piece, np_format(piece, sizeof piece, ".%d", k))) {
			errno = ENAMETOOLONG;
			break;
		}
		f = np_os_create_report(path, true);
	}
	if (!f && *taken && (errno == EEXIST || errno == ENAMETOOLONG)) {
		int e = errno;
		path[n] = '\0';
		errno = e;
	}
	return f;
}

static int write_json_report(FILE *f)
{
	struct snapshot v;
	take_snapshot(&v);
	/* Who wrote it, for `numapage run --per-process`: pid, the process it was forked from (0:
	 * it was started by exec), the inode of its live file (0: none; `numapage run` tells a file
	 * left at the same pid by another process from this one's), and its command. */
	fprintf(f, "{\"pid\":%d,\"parent\":%d,\"live\":%llu,\"command\":", np_os_pid(), parent_pid,
		(unsigned long long)np_vmstat_shm_inode());
	np_json_string(f, command);
	fputc(',', f);
	np_vmstat_print_json_nodes(f, v.n, v.os_ids, NUMA_PAGE_STAT_NITEMS, v.names, v.values);
	fputs("}\n", f);
	return ferror(f) ? -1 : 0;
}

/* The report NUMAPAGE_STATS asks for, written at exit. Out of line: its 8 KiB of buffers are
 * a stack page that a process asking for no report never touches (its exit handler made the
 * deepest call of many a small program, and that page a fault of its own). */
static NP_NOINLINE void exit_report_write(void)
{
	char s[4096]; /* the value in force, whole (np_opt_copy_string) */
	np_opt_copy_string(&np_opt.stats, s, sizeof s);
	switch (report_kind(s)) {
	case NP_STATS_TABLE:
		fprintf(stderr, "numapage: per-node statistics of process %d (pages; malloc_* in bytes)\n",
			np_os_pid());
		numa_page_stats_print(stderr, NUMA_PAGE_STATS_TABLE);
		break;
	case NP_STATS_JSON: {
		char path[4096];
		bool for_pid, taken;
		if (!report_path(s + 5, path, sizeof path, &for_pid)) {
			np_warn("NUMAPAGE_STATS: the report's path is longer than %zu bytes; no report written",
				sizeof path - 1);
			break;
		}
		FILE *f = create_report(path, sizeof path, for_pid, &taken);
		if (!f) {
			if (errno == ELOOP)
				np_warn("NUMAPAGE_STATS: %s is a symbolic link; not followed, no report written", path);
			else if (taken && errno == EEXIST)
				np_warn("NUMAPAGE_STATS: %s and the names after it up to .%d are taken; no report written",
					path, NP_VMSTAT_REPORT_TAKEN_MAX);
			else if (taken && errno == ENAMETOOLONG)
				np_warn("NUMAPAGE_STATS: %s is taken, and the names after it are too long; no report written",
					path);
			else
				np_warn("NUMAPAGE_STATS: cannot write %s (errno %d)", path, errno);
			break;
		}
		int rc = write_json_report(f);
		if (fclose(f) != 0 || rc != 0)
			np_warn("NUMAPAGE_STATS: writing %s failed", path);
		break;
	}
	case NP_STATS_NONE:
		break;
	}
}

void np_vmstat_exit_report(void)
{
	/* Only the process that started output, or a child it forked (whose fork hook made it
	 * the reporter); never a process that merely inherited the handler some other way. */
	if (report_pid && report_pid != np_os_pid())
		return;
	char probe[1];
	if (np_opt_copy_string(&np_opt.stats, probe, sizeof probe) != 0)
		exit_report_write();
	np_vmstat_shm_remove();
}

void np_vmstat_verbose_nodes(const struct np_topo *t)
{
	if (!np_opt_load(verbose))
		return;
	for (int i = 0; i < t->nnodes && i < NP_MAX_NODES; i++) {
		const struct np_topo_node *nd = &t->node[i];
		char line[400];
		size_t n = np_format(line, sizeof line, "node %d: %lu MiB, %d CPU(s), fallback", nd->os_id,
				     (unsigned long)(nd->mem_bytes >> 20), nd->ncpus);
		for (int k = 0; k < nd->nfallback && n + 24 < sizeof line; k++)
			n += np_format(line + n, sizeof line - n, " %d (%d)", t->node[nd->fallback[k]].os_id,
				       nd->fallback_dist[k]);
		if (nd->nfallback == 0)
			n += np_format(line + n, sizeof line - n, " none");
		np_verbose("%s; statistics fold at %d", line, np_vmstat_threshold(i));
	}
}
