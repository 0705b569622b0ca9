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
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "options.h"
#include "os.h"

#define VALUE_WIDTH 14

void np_vmstat_print_table(FILE *out, int nnodes, const int *os_ids, int nitems,
			   const char *const *names, const long *values)
{
	int w = 16;
	for (int k = 0; k < nitems; k++)
		w = NP_MAX(w, (int)strlen(names[k]) + 1);
	fprintf(out, "%-*s", w, "");
	for (int i = 0; i < nnodes; i++) {
		char col[24];
		snprintf(col, sizeof col, "node%d", os_ids[i]);
		fprintf(out, " %*s", VALUE_WIDTH, col);
	}
	fprintf(out, " %*s\n", VALUE_WIDTH, "Total");
	for (int k = 0; k < nitems; k++) {
		long sum = 0;
		fprintf(out, "%-*s", w, names[k]);
		for (int i = 0; i < nnodes; i++) {
			long v = values[(size_t)i * (size_t)nitems + (size_t)k];
			sum += v;
			fprintf(out, " %*ld", VALUE_WIDTH, v);
		}
		fprintf(out, " %*ld\n", VALUE_WIDTH, sum);
	}
}

void np_vmstat_print_json(FILE *out, int nnodes, const int *os_ids, int nitems,
			  const char *const *names, const long *values)
{
	fputs("{\"nodes\":[", out);
	for (int i = 0; i < nnodes; i++) {
		fprintf(out, "%s{\"node\":%d", i ? "," : "", os_ids[i]);
		for (int k = 0; k < nitems; k++) {
			fputc(',', out);
			np_json_string(out, names[k]);
			fprintf(out, ":%ld", values[(size_t)i * (size_t)nitems + (size_t)k]);
		}
		fputc('}', out);
	}
	fputs("]}\n", out);
}

NUMA_PAGE_API int numa_page_stats_print(FILE *out, int format)
{
	if (!out || (format != NUMA_PAGE_STATS_TABLE && format != NUMA_PAGE_STATS_JSON)) {
		errno = EINVAL;
		return -1;
	}
	if (np_vmstat_read_hook)
		np_vmstat_read_hook();
	/* Snapshot first (reg_lock held per node), print after: no lock is held during stdio. */
	const char *names[NUMA_PAGE_STAT_NITEMS];
	long values[NP_MAX_NODES * NUMA_PAGE_STAT_NITEMS];
	int os_ids[NP_MAX_NODES];
	int n = np_vmstat_nnodes();
	for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
		names[k] = numa_page_stat_name(k);
	for (int i = 0; i < n; i++) {
		os_ids[i] = np_vmstat_os_id(i);
		np_vmstat_snapshot_node(i, &values[i * NUMA_PAGE_STAT_NITEMS], true);
	}
	if (format == NUMA_PAGE_STATS_TABLE)
		np_vmstat_print_table(out, n, os_ids, NUMA_PAGE_STAT_NITEMS, names, values);
	else
		np_vmstat_print_json(out, n, os_ids, NUMA_PAGE_STAT_NITEMS, names, values);
	if (fflush(out) == EOF || ferror(out))
		return -1;
	return 0;
}

/* ---- At start and at exit ---------------------------------------------------------------- */

enum report { REPORT_NONE, REPORT_TABLE, REPORT_JSON };

static bool started;
static int report_pid;

static enum report report_kind(const char *s, bool warn)
{
	if (!s || strcmp(s, "0") == 0)
		return REPORT_NONE;
	if (strcmp(s, "1") == 0)
		return REPORT_TABLE;
	if (strncmp(s, "json:", 5) == 0 && s[5])
		return REPORT_JSON;
	if (warn)
		np_warn("NUMAPAGE_STATS=%s is not valid (1, or json:<path>); no report at exit", s);
	return REPORT_NONE;
}

static void at_exit(void)
{
	np_vmstat_exit_report();
}

void np_vmstat_start_output(void)
{
	if (started)
		return;
	started = true;
	report_pid = np_os_pid();
	if (np_opt.shm) {
		struct np_vmstat_totals *t = np_vmstat_shm_create();
		if (t)
			np_vmstat_use_totals(t);
	}
	if (report_kind(np_opt.stats, true) != REPORT_NONE || np_vmstat_shm_published()) {
		if (atexit(at_exit) != 0) {
			/* Without the handler the file would outlive us: do not publish. */
			np_warn("cannot register the statistics exit handler; no report at exit");
			np_vmstat_shm_remove();
		}
	}
}

void np_vmstat_exit_report(void)
{
	/* A forked child inherits the handler; the report belongs to the process that started
	 * output (a child can call numa_page_stats_print itself). */
	if (report_pid && report_pid != np_os_pid())
		return;
	const char *s = np_opt.stats;
	switch (report_kind(s, false)) {
	case REPORT_TABLE:
		fprintf(stderr, "numapage: per-node statistics of process %d (pages; malloc_* in bytes)\n",
			np_os_pid());
		numa_page_stats_print(stderr, NUMA_PAGE_STATS_TABLE);
		break;
	case REPORT_JSON: {
		/* "%p" in the path becomes the process id, so every process of a job started
		 * with one setting (numapage run --stats) writes its own file. */
		char path[4096];
		size_t n = 0;
		for (const char *c = s + 5; *c && n + 24 < sizeof path; c++) {
			if (c[0] == '%' && c[1] == 'p') {
				n += np_format(path + n, sizeof path - n, "%d", np_os_pid());
				c++;
			} else {
				path[n++] = *c;
			}
		}
		path[n] = '\0';
		FILE *f = fopen(path, "w");
		if (!f) {
			np_warn("NUMAPAGE_STATS: cannot write %s (errno %d)", path, errno);
			break;
		}
		int rc = numa_page_stats_print(f, NUMA_PAGE_STATS_JSON);
		if (fclose(f) != 0 || rc != 0)
			np_warn("NUMAPAGE_STATS: writing %s failed", path);
		break;
	}
	case REPORT_NONE:
		break;
	}
	np_vmstat_shm_remove();
}
