/* tstats.c (tools) — sums, deltas, printing and report parsing of per-node statistics (see
 * tstats.h). */
#include "tstats.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "json.h"

void np_tstats_clear(struct np_tstats *s)
{
	memset(s, 0, sizeof *s);
}

long *np_tstats_node(struct np_tstats *s, int os_id)
{
	for (int i = 0; i < s->nnodes; i++)
		if (s->node[i] == os_id)
			return s->v[i];
	if (s->nnodes == NP_MAX_NODES)
		return NULL;
	int i = s->nnodes++;
	for (; i > 0 && s->node[i - 1] > os_id; i--) {
		s->node[i] = s->node[i - 1];
		memcpy(s->v[i], s->v[i - 1], sizeof s->v[i]);
	}
	s->node[i] = os_id;
	memset(s->v[i], 0, sizeof s->v[i]);
	return s->v[i];
}

int np_tstats_item(const char *name, size_t len)
{
	for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++) {
		const char *n = numa_page_stat_name(k);
		if (strlen(n) == len && strncmp(n, name, len) == 0)
			return k;
	}
	return -1;
}

/* Sums saturate: values come from other processes' files and reports, which may hold
 * anything, and a wrapped sum (undefined behaviour besides) would print as a plausible number. */
static long sat_add(long a, long b)
{
	long r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? LONG_MAX : LONG_MIN;
	return r;
}

static long sat_sub(long a, long b)
{
	long r;
	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? LONG_MAX : LONG_MIN;
	return r;
}

void np_tstats_add(struct np_tstats *dst, const struct np_tstats *src)
{
	for (int i = 0; i < src->nnodes; i++) {
		long *d = np_tstats_node(dst, src->node[i]);
		if (d)
			for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
				d[k] = sat_add(d[k], src->v[i][k]);
	}
}

void np_tstats_delta(struct np_tstats *out, const struct np_tstats *now, const struct np_tstats *before)
{
	np_tstats_clear(out);
	for (int i = 0; i < now->nnodes; i++) {
		long *d = np_tstats_node(out, now->node[i]);
		memcpy(d, now->v[i], sizeof now->v[i]);
		for (int j = 0; j < before->nnodes; j++)
			if (before->node[j] == now->node[i])
				for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
					d[k] = sat_sub(d[k], before->v[j][k]);
	}
}

static void names_kinds(const char **names, uint8_t *kinds)
{
	for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++) {
		names[k] = numa_page_stat_name(k);
		kinds[k] = (uint8_t)np_vmstat_item_kind(k);
	}
}

int np_tstats_print(FILE *out, const struct np_tstats *s, const struct np_vmstat_table_opts *o)
{
	const char *names[NUMA_PAGE_STAT_NITEMS];
	uint8_t kinds[NUMA_PAGE_STAT_NITEMS];
	names_kinds(names, kinds);
	/* The printer adds a row's nodes up for the Total in a long: clamped so that sum cannot
	 * overflow (no real counter comes near LONG_MAX / 64). */
	static struct np_tstats c;
	long lim = s->nnodes > 0 ? LONG_MAX / s->nnodes : LONG_MAX;
	c = *s;
	for (int i = 0; i < c.nnodes; i++)
		for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
			c.v[i][k] = c.v[i][k] > lim ? lim : c.v[i][k] < -lim ? -lim : c.v[i][k];
	return np_vmstat_print_table_opts(out, o, c.nnodes, c.node, NUMA_PAGE_STAT_NITEMS, names, kinds,
					  &c.v[0][0]);
}

void np_tstats_json_nodes(FILE *out, const struct np_tstats *s)
{
	const char *names[NUMA_PAGE_STAT_NITEMS];
	uint8_t kinds[NUMA_PAGE_STAT_NITEMS];
	names_kinds(names, kinds);
	np_vmstat_print_json_nodes(out, s->nnodes, s->node, NUMA_PAGE_STAT_NITEMS, names, &s->v[0][0]);
}

/* ---- Reports ------------------------------------------------------------------------------ */

/* The integer member "key": of the top-level object (before "nodes"), or def. */
static long top_int(const char *text, const char *nodes, const char *key, long def)
{
	const char *p = strstr(text, key);
	if (!p || (nodes && p > nodes))
		return def;
	p = strchr(p + strlen(key), ':');
	return p ? strtol(p + 1, NULL, 10) : def;
}

/* The members of one flat node object {...}: "node" and the counters. */
static int parse_node(struct np_tstats *s, const char *p, const char *end)
{
	long vals[NUMA_PAGE_STAT_NITEMS];
	bool have[NUMA_PAGE_STAT_NITEMS] = {false};
	long node = -1;
	for (const char *k = p; k < end && (k = memchr(k, '"', (size_t)(end - k))) != NULL;) {
		const char *kend = memchr(k + 1, '"', (size_t)(end - k - 1));
		if (!kend)
			return -1;
		const char *colon = kend + 1;
		while (colon < end && *colon == ' ')
			colon++;
		if (colon >= end || *colon != ':')
			return -1;
		char *num_end;
		long v = strtol(colon + 1, &num_end, 10);
		if (num_end == colon + 1)
			return -1; /* the library writes only integers here */
		size_t len = (size_t)(kend - k - 1);
		if (len == 4 && strncmp(k + 1, "node", 4) == 0) {
			node = v;
		} else {
			int i = np_tstats_item(k + 1, len);
			if (i >= 0) {
				vals[i] = v;
				have[i] = true;
			}
		}
		k = num_end;
	}
	if (node < 0)
		return -1;
	long *d = np_tstats_node(s, (int)node);
	if (!d)
		return -1;
	for (int i = 0; i < NUMA_PAGE_STAT_NITEMS; i++)
		if (have[i])
			d[i] += vals[i];
	return 0;
}

long long np_tstats_report_live(const char *text)
{
	return top_int(text, strstr(text, "\"nodes\""), "\"live\"", -1);
}

int np_tstats_parse_report(const char *text, struct np_treport *r)
{
	memset(r, 0, sizeof *r);
	const char *nodes = strstr(text, "\"nodes\"");
	if (!nodes || !(nodes = strchr(nodes, '[')))
		return -1;
	r->pid = (int)top_int(text, nodes, "\"pid\"", 0);
	r->parent = (int)top_int(text, nodes, "\"parent\"", 0);
	r->live = np_tstats_report_live(text);
	const char *c = strstr(text, "\"command\"");
	if (c && c < nodes && (c = strchr(c + 9, '"'))) {
		c++;
		np_json_read_string(&c, r->command, sizeof r->command);
	}
	const char *p = nodes + 1;
	for (;;) {
		while (*p == ' ' || *p == ',' || *p == '\n')
			p++;
		if (*p == ']')
			return 0;
		if (*p != '{')
			return -1;
		const char *end = strchr(p, '}');
		if (!end || parse_node(&r->stats, p + 1, end) != 0)
			return -1;
		p = end + 1;
	}
}

void np_tstats_opts_init(struct np_vmstat_table_opts *o, int fd)
{
	memset(o, 0, sizeof *o);
	o->page_size = (size_t)sysconf(_SC_PAGESIZE);
	const char *cols = getenv("COLUMNS");
	struct winsize ws;
	if (cols && atoi(cols) > 0)
		o->width = atoi(cols);
	else if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		o->width = ws.ws_col;
}
