/*
 * options.c — the option table (see options.h). Each row names an environment variable, its
 * type, default, bounds and meaning; np_options_init() walks it once. Parsing never allocates.
 */
#include "options.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"

struct np_options np_opt;

enum kind { K_BOOL, K_LONG, K_STR, K_ENUM };

struct row {
	const char *name;
	enum kind kind;
	size_t offset;
	long deflt, min, max;
	const char *const *names; /* K_ENUM: value names, index = value */
	const char *deflt_text, *doc;
};

static const char *const bind_names[] = {"preferred", "strict", "none", NULL};
static const char *const place_names[] = {"none", "spread", "fill", NULL};

#define OFF(f) offsetof(struct np_options, f)
static const struct row rows[] = {
	{"VERBOSE", K_BOOL, OFF(verbose), 0, 0, 1, NULL, "0", "print what the library decides at start-up"},
	{"TOPOLOGY", K_STR, OFF(topology), 0, 0, 0, NULL, "(this machine)",
	 "rehearse another machine: an hwloc XML file, or synthetic:<hwloc synthetic string>"},
	{"STATS", K_STR, OFF(stats), 0, 0, 0, NULL, "(off)",
	 "1: per-node table on stderr at exit; json:<path>: JSON written to path at exit"},
	{"STAT_THRESHOLD", K_LONG, OFF(stat_threshold), -1, -1, 125, NULL, "-1 (log-scaled)",
	 "fold per-thread statistics deltas past this size; 0 folds every event"},
	{"PCP_HIGH", K_LONG, OFF(pcp_high), 0, 0, 1 << 20, NULL, "0 (6 x batch)",
	 "pages a thread caches before it drains a batch back to the pools"},
	{"PCP_BATCH", K_LONG, OFF(pcp_batch), 0, 0, 1 << 16, NULL, "0 (32 pages)",
	 "pages moved between a thread cache and a node pool at once"},
	{"PURGE_MB", K_LONG, OFF(purge_mb), 64, 0, 1L << 30, NULL, "64",
	 "free MiB a node pool keeps before giving memory back to the OS"},
	{"BIND", K_ENUM, OFF(bind), NP_BIND_PREFERRED, 0, 2, bind_names, "preferred",
	 "preferred (MPOL_PREFERRED), strict (MPOL_BIND, fall back on refusal) or none"},
	{"PLACE", K_ENUM, OFF(place), NP_PLACE_NONE, 0, 2, place_names, "none",
	 "place new threads over nodes: none, spread or fill"},
	{"INTERLEAVE_ABOVE", K_LONG, OFF(interleave_above), 0, 0, (long)(~0UL >> 1), NULL, "0 (off)",
	 "interleave main-thread mallocs of at least this many bytes made before other threads exist"},
	{"SHM", K_BOOL, OFF(shm), 1, 0, 1, NULL, "1",
	 "publish per-node totals for `numapage stat PID`"},
};
#undef OFF

static bool inited;

static const struct row *find(const char *name)
{
	for (size_t i = 0; i < NP_ARRAY_SIZE(rows); i++)
		if (strcmp(rows[i].name, name) == 0)
			return &rows[i];
	return NULL;
}

static void set_default(const struct row *r)
{
	char *field = (char *)&np_opt + r->offset;
	switch (r->kind) {
	case K_BOOL:
	case K_ENUM:
		*(int *)field = (int)r->deflt;
		break;
	case K_LONG:
		*(long *)field = r->deflt;
		break;
	case K_STR:
		*(const char **)field = NULL;
		break;
	}
}

static int parse_long(const char *s, long *out)
{
	/* Decimal with an optional k/m/g suffix (powers of 1024). strtol does not allocate. */
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s)
		return -1;
	int shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end != '\0')
		return -1;
	if (shift && (v > (long)(~0UL >> 1) >> shift || v < -((long)(~0UL >> 1) >> shift)))
		return -1;
	*out = v << shift;
	return 0;
}

static int apply(const struct row *r, const char *value)
{
	char *field = (char *)&np_opt + r->offset;
	long v;
	switch (r->kind) {
	case K_STR:
		*(const char **)field = value[0] ? value : NULL;
		return 0;
	case K_ENUM:
		for (int i = 0; r->names[i]; i++)
			if (strcmp(r->names[i], value) == 0) {
				*(int *)field = i;
				return 0;
			}
		break;
	case K_BOOL:
	case K_LONG:
		if (parse_long(value, &v) == 0 && v >= r->min && v <= r->max) {
			if (r->kind == K_BOOL)
				*(int *)field = (int)v;
			else
				*(long *)field = v;
			return 0;
		}
		break;
	}
	np_warn("NUMAPAGE_%s=%s is not valid; using the default %s", r->name, value, r->deflt_text);
	return -1;
}

void np_options_reset(void)
{
	for (size_t i = 0; i < NP_ARRAY_SIZE(rows); i++)
		set_default(&rows[i]);
	np_log_verbose = np_opt.verbose;
}

void np_options_init(void)
{
	if (inited)
		return;
	np_options_reset();
	char name[64];
	for (size_t i = 0; i < NP_ARRAY_SIZE(rows); i++) {
		np_format(name, sizeof name, "NUMAPAGE_%s", rows[i].name);
		const char *v = secure_getenv(name);
		if (v)
			apply(&rows[i], v);
	}
	np_log_verbose = np_opt.verbose;
	inited = true;
}

int np_options_set(const char *name, const char *value)
{
	const struct row *r = find(name);
	if (!r)
		return -1;
	int rc = apply(r, value);
	np_log_verbose = np_opt.verbose;
	return rc;
}

const struct np_option_doc *np_options_table(void)
{
	static struct np_option_doc docs[NP_ARRAY_SIZE(rows) + 1];
	for (size_t i = 0; i < NP_ARRAY_SIZE(rows); i++)
		docs[i] = (struct np_option_doc){rows[i].name, rows[i].deflt_text, rows[i].doc};
	return docs;
}
