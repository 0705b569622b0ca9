/*
 * options.c — the option table (see options.h) and the public numa_page_option_get/set. Each
 * row names an option, its type, default, bounds, meaning and whether it may change while the
 * program runs; np_options_load() walks the environment once, NUMAPAGE_CONF first. Parsing
 * never allocates: string values are copied into static buffers (never left pointing into the
 * environment, which programs rewrite). State is written at start-up, single-threaded, and
 * afterwards only by numa_page_option_set, one atomic store per value.
 * Over 500 lines because every reader of the table (the environment, NUMAPAGE_CONF, the
 * unknown-name check, the verbose listing, get/set at run time) works on its private rows and
 * value sources; split, they would need those internals in a header of their own.
 */
#include "options.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"
#include "os.h"

struct np_options np_opt;

enum kind { K_BOOL, K_LONG, K_STR, K_ENUM };

struct row {
	const char *name;
	enum kind kind;
	size_t offset;
	long deflt, min, max;
	const char *const *names; /* K_ENUM: value names, index = value */
	const char *deflt_text, *doc;
	/* Safe to change while running: the option is read where it is used (a log call, a chunk
	 * being bound, a thread starting, the exit report), never cached into state built once. */
	bool runtime;
	/* K_STR: the forms a value may take (checked where it is set), and how to say them. */
	bool (*valid)(const char *value);
	const char *forms;
	/* K_LONG: a plain decimal number, no k/m/g (a pid). */
	bool plain;
};

int np_options_stats_kind(const char *value)
{
	if (!value || strcmp(value, "0") == 0)
		return NP_STATS_NONE;
	if (strcmp(value, "1") == 0)
		return NP_STATS_TABLE;
	if (strncmp(value, "json:", 5) == 0 && value[5])
		return NP_STATS_JSON;
	return -1;
}

static bool stats_valid(const char *value)
{
	return np_options_stats_kind(value) >= 0;
}

static const char *const bind_names[] = {"preferred", "strict", "none", NULL};
const char *const np_place_names[] = {"none", "spread", "fill", NULL};

#define OFF(f) offsetof(struct np_options, f)
static const struct row rows[] = {
	{"VERBOSE", K_BOOL, OFF(verbose), 0, 0, 1, NULL, "0",
	 "print every option and what the library decides", true},
	{"TOPOLOGY", K_STR, OFF(topology), 0, 0, 0, NULL, "(this machine)",
	 "rehearse another machine: an hwloc XML file, or synthetic:<hwloc synthetic string>", false},
	{"STATS", K_STR, OFF(stats), 0, 0, 0, NULL, "(off)",
	 "1: per-node table on stderr at exit; json:<path>: JSON written to path at exit", true, stats_valid,
	 "0, 1 or json:<path>"},
	{"STAT_THRESHOLD", K_LONG, OFF(stat_threshold), -1, -1, NP_STAT_THRESHOLD_MAX, NULL, "-1 (log-scaled)",
	 "fold per-thread statistics deltas past this size; 0 folds every event", false},
	{"PCP_HIGH", K_LONG, OFF(pcp_high), 0, 0, 1 << 20, NULL, "0 (6 x batch)",
	 "pages a thread caches before it drains a batch back to the pools", true},
	{"PCP_BATCH", K_LONG, OFF(pcp_batch), 0, 0, 1 << 16, NULL, "0 (64 pages)",
	 "pages moved between a thread cache and a node pool at once", true},
	{"PURGE_MB", K_LONG, OFF(purge_mb), 64, 0, 1L << 30, NULL, "64",
	 "free MiB a node pool keeps, on top of the most it had in use lately, before giving memory back to the OS", false},
	{"DECAY_MS", K_LONG, OFF(decay_ms), 10000, 0, 1L << 30, NULL, "10000",
	 "milliseconds freed memory stays resident for reuse before its pages go back: a freed large block, and pool pages free all that while (0: until a budget needs them)", true},
	{"BACKGROUND_THREAD", K_BOOL, OFF(background_thread), 0, 0, 1, NULL, "0",
	 "1: a thread of the library's gives freed memory back on time (DECAY_MS) while the program makes no allocator call", true},
	{"BIND", K_ENUM, OFF(bind), NP_BIND_PREFERRED, 0, 2, bind_names, "preferred",
	 "preferred (MPOL_PREFERRED), strict (MPOL_BIND, fall back on refusal) or none", true},
	{"PLACE", K_ENUM, OFF(place), NP_PLACE_NONE, 0, 2, np_place_names, "none",
	 "place new threads over nodes: none, spread or fill (for threads created from then on)", true},
	{"INTERLEAVE_ABOVE", K_LONG, OFF(interleave_above), 0, 0, (long)(~0UL >> 1), NULL, "0 (off)",
	 "interleave main-thread mallocs of at least this many bytes made before other threads exist", true},
	{"SHM", K_BOOL, OFF(shm), 1, 0, 1, NULL, "1",
	 "publish per-node totals for `numapage stat PID`", false},
	{"SHM_KEEPER", K_LONG, OFF(shm_keeper), 0, 0, INT_MAX, NULL, "0 (none)",
	 "set by `numapage run --stats` to its pid: while it lives, the live file of a process of its job that ends without its report stays for it to read", false,
	 NULL, NULL, true},
	{"THP", K_BOOL, OFF(thp), 0, 0, 1, NULL, "0",
	 "1: ask the kernel for transparent huge pages (MADV_HUGEPAGE) on the memory mapped from then on: faster where the TLB is the cost, more resident memory where 2 MiB ranges are touched in part", true},
};
#undef OFF
#define NROWS ((int)NP_ARRAY_SIZE(rows))

/* NUMAPAGE_* names that are not rows but are not typos either: the configuration string, and
 * the library `numapage run` preloads (read by the command, inherited by the job). */
static const char *const other_names[] = {"CONF", "LIB"};

static bool inited;
/* Where each value came from. numa_page_option_set writes it while other threads may read it
 * (a thread's first allocation asks whether BIND was given: node.c), so after start-up it is
 * written and read as a relaxed atomic (set_source, np_options_source). */
static unsigned char source[NROWS];

static void set_source(int i, enum np_option_source src)
{
	__atomic_store_n(&source[i], (unsigned char)src, __ATOMIC_RELAXED);
}

/* ---- Parsing ------------------------------------------------------------------------------ */

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* name[0..len) equals s, ignoring case. */
static bool same_name(const char *name, size_t len, const char *s)
{
	size_t i = 0;
	for (; i < len && s[i]; i++)
		if (lower(name[i]) != lower(s[i]))
			return false;
	return i == len && s[i] == '\0';
}

static int find_len(const char *name, size_t len)
{
	if (len > 9 && same_name(name, 9, "NUMAPAGE_")) {
		name += 9;
		len -= 9;
	}
	for (int i = 0; i < NROWS; i++)
		if (same_name(name, len, rows[i].name))
			return i;
	return -1;
}

int np_options_find(const char *name)
{
	return name ? find_len(name, strlen(name)) : -1;
}

static int parse_long(const char *s, long *out, bool suffix)
{
	/* Decimal with an optional k/m/g suffix (powers of 1024) where suffix allows it. strtol
	 * does not allocate. */
	char *end;
	int saved = errno;
	errno = 0;
	long v = strtol(s, &end, 10);
	bool range = errno != 0;
	errno = saved; /* a caller's errno survives a success */
	if (end == s || range)
		return -1;
	int shift = 0;
	switch (suffix ? *end : '\0') {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	while (*end == ' ' || (*end >= '\t' && *end <= '\r')) /* as strtol skips them in front */
		end++;
	if (*end != '\0')
		return -1;
	long unit = 1L << shift;
	if (v > LONG_MAX / unit || v < LONG_MIN / unit)
		return -1;
	*out = v * unit; /* not v << shift: a negative value's shift is undefined */
	return 0;
}

/* A parsed value, before it is stored. */
union value {
	long l;
	int i;
	const char *s;
};

static int parse(const struct row *r, const char *text, union value *v)
{
	long l;
	switch (r->kind) {
	case K_STR:
		v->s = text[0] ? text : NULL;
		return v->s && r->valid && !r->valid(v->s) ? -1 : 0;
	case K_ENUM:
		for (int i = 0; r->names[i]; i++)
			if (strcasecmp(r->names[i], text) == 0) { /* "Strict" too: names are case-blind as well */
				v->i = i;
				return 0;
			}
		return -1;
	case K_BOOL:
	case K_LONG:
		if (parse_long(text, &l, !r->plain) != 0 || l < r->min || l > r->max)
			return -1;
		if (r->kind == K_BOOL)
			v->i = (int)l;
		else
			v->l = l;
		return 0;
	}
	return -1;
}

/* Stores with one atomic store: hot paths on other threads read these fields plainly (a
 * whole aligned word, so they see the old or the new value). */
static void store(const struct row *r, const union value *v)
{
	char *field = (char *)&np_opt + r->offset;
	switch (r->kind) {
	case K_BOOL:
	case K_ENUM:
		__atomic_store_n((int *)field, v->i, __ATOMIC_RELEASE);
		break;
	case K_LONG:
		__atomic_store_n((long *)field, v->l, __ATOMIC_RELEASE);
		break;
	case K_STR:
		__atomic_store_n((const char **)field, v->s, __ATOMIC_RELEASE);
		break;
	}
	if (r->offset == offsetof(struct np_options, verbose)) /* log.c's copy (it sits below us) */
		__atomic_store_n(&np_log_verbose, v->i, __ATOMIC_RELAXED);
}

static void set_default(const struct row *r)
{
	union value v;
	if (r->kind == K_LONG)
		v.l = r->deflt;
	else if (r->kind == K_STR)
		v.s = NULL;
	else
		v.i = (int)r->deflt;
	store(r, &v);
}

/* What a row accepts, for warnings. */
static void accepted(const struct row *r, char *buf, size_t size)
{
	size_t n = 0;
	switch (r->kind) {
	case K_ENUM:
		for (int i = 0; r->names[i]; i++)
			n += np_format(buf + n, size - n, "%s%s", i ? (r->names[i + 1] ? ", " : " or ") : "",
				       r->names[i]);
		break;
	case K_BOOL:
		np_format(buf, size, "0 or 1");
		break;
	case K_LONG:
		np_format(buf, size, "a number from %ld to %ld%s", r->min, r->max, r->plain ? "" : " (k, m, g: x 1024^n)");
		break;
	case K_STR:
		np_format(buf, size, "%s", r->forms ? r->forms : "");
		break;
	}
}

/* String values read at start-up are copied here, one slot per string option: the
 * environment's own memory may be rewritten by the program (redis' setproctitle moves environ
 * and writes its title over the old strings), and the exit report reads NUMAPAGE_STATS long
 * after start-up. */
#define MAX_STR_ROWS 4
static char str_store[MAX_STR_ROWS][4096] NP_LARGE_BSS;

static char *str_slot(int i)
{
	int slot = 0;
	for (int k = 0; k < i; k++)
		slot += rows[k].kind == K_STR;
	return slot < MAX_STR_ROWS ? str_store[slot] : NULL;
}

/* The first n bytes of s (up to its NUL) as a message shows them: each control byte and DEL as
 * \xNN, so that a value from the environment is one line of stderr and sends the terminal no
 * escape; what does not fit in size - 1 bytes is cut, with "..." in its place (size >= 4). */
static const char *printable(const char *s, size_t n, char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (size_t k = 0; k < n && s[k]; k++) {
		unsigned char c = (unsigned char)s[k];
		bool escape = c < 0x20 || c == 0x7f;
		if (o + (escape ? 4 : 1) >= size) { /* no room for it and the NUL: the mark */
			o = NP_MIN(o, size - 4);
			memcpy(buf + o, "...", 4);
			return buf;
		}
		if (escape) {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		} else {
			buf[o++] = (char)c;
		}
	}
	buf[o] = '\0';
	return buf;
}

/* Parses and stores a value read at start-up; `from` names where it came from in the warning
 * ("NUMAPAGE_BIND=x" or "bind=x in NUMAPAGE_CONF"). A bad value keeps the one in force. */
static int apply(int i, const char *value, int src)
{
	const struct row *r = &rows[i];
	union value v;
	int parsed = parse(r, value, &v);
	if (parsed == 0 && r->kind == K_STR && v.s) {
		char *slot = str_slot(i);
		size_t len = strlen(v.s);
		if (!slot || len >= sizeof str_store[0]) {
			np_warn("NUMAPAGE_%s is longer than %zu bytes; ignored", r->name, sizeof str_store[0] - 1);
			return -1;
		}
		memcpy(slot, v.s, len + 1);
		v.s = slot;
	}
	if (parsed == 0) {
		store(r, &v);
		source[i] = (unsigned char)src;
		return 0;
	}
	char ok[160], now[128], nowp[128], shown[256];
	accepted(r, ok, sizeof ok);
	np_options_value(i, now, sizeof now);
	printable(now[0] ? now : r->deflt_text, SIZE_MAX, nowp, sizeof nowp);
	printable(value, SIZE_MAX, shown, sizeof shown);
	np_warn("NUMAPAGE_%s%s=%s is not valid (%s); keeping %s", src == NP_OPTION_CONF ? "CONF: " : "",
		r->name, shown, ok, nowp);
	return -1;
}

/* ---- Unknown names -------------------------------------------------------------------------- */

/* Edit distance of two short names, ignoring case, or 99 when either is too long to matter. */
static int distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b);
	if (la > 40 || lb > 40)
		return 99;
	int prev[41], cur[41];
	for (size_t j = 0; j <= lb; j++)
		prev[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int sub = prev[j - 1] + (lower(a[i - 1]) != lower(b[j - 1]));
			cur[j] = NP_MIN(sub, NP_MIN(prev[j], cur[j - 1]) + 1);
		}
		memcpy(prev, cur, sizeof(int) * (lb + 1));
	}
	return prev[lb];
}

/* Warns once about a name that is no option: NUMAPAGE_STAS=1 is otherwise silently ignored.
 * where: NULL for a variable, "NUMAPAGE_CONF" for a key of the string. */
static void unknown(const char *name, size_t len, const char *where)
{
	const char *best = NULL;
	int best_d = 3; /* suggest only names within two edits */
	/* A key of NUMAPAGE_CONF may carry the prefix (find_len drops it too): measured with it,
	 * NUMAPAGE_STAS is nine edits from STATS and gets no suggestion. The rows have no prefix. */
	bool prefixed = where && len > 9 && same_name(name, 9, "NUMAPAGE_");
	const char *bare = prefixed ? name + 9 : name;
	size_t blen = prefixed ? len - 9 : len;
	for (int i = 0; i < NROWS; i++) {
		int d = distance(bare, blen, rows[i].name);
		if (d < best_d) {
			best_d = d;
			best = rows[i].name;
		}
	}
	char shown[64];
	printable(name, len, shown, sizeof shown);
	if (where)
		np_warn("%s: '%s' is not a libnumapage option%s%s%s; ignored (numapage options lists them)",
			where, shown, !best ? "" : prefixed ? " (did you mean NUMAPAGE_" : " (did you mean ",
			best ? best : "", best ? "?)" : "");
	else
		np_warn("NUMAPAGE_%s is not a libnumapage option%s%s%s; ignored (numapage options lists them)",
			shown, best ? " (did you mean NUMAPAGE_" : "", best ? best : "", best ? "?)" : "");
}

/* ---- NUMAPAGE_CONF -------------------------------------------------------------------------- */

/* s without its leading spaces and tabs, its trailing ones cut off in place. */
static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

/* A private copy of the string, cut into NUL-terminated values in place, so string options can
 * point into it and nothing is allocated. */
static char conf_buf[4096] NP_LARGE_BSS;

static void load_conf(const char *conf)
{
	size_t len = strlen(conf);
	if (len >= sizeof conf_buf) {
		np_warn("NUMAPAGE_CONF is longer than %zu bytes; ignored", sizeof conf_buf - 1);
		return;
	}
	memcpy(conf_buf, conf, len + 1);
	for (char *item = conf_buf; item && *item;) {
		char *comma = strchr(item, ',');
		if (comma)
			*comma = '\0';
		item = trim(item); /* "bind=strict, stats=1": spaces around items, names, values */
		char *eq = strchr(item, '=');
		if (!*item) {
			/* an empty item (",,", a leading or trailing comma): nothing to say */
		} else if (!eq || eq == item) {
			char shown[256];
			np_warn("NUMAPAGE_CONF: '%s' is not name=value; ignored",
				printable(item, SIZE_MAX, shown, sizeof shown));
		} else {
			*eq = '\0';
			size_t klen = strlen(trim(item)); /* item starts with no space: only its end is cut */
			int i = find_len(item, klen);
			if (i < 0)
				unknown(item, klen, "NUMAPAGE_CONF");
			else
				apply(i, trim(eq + 1), NP_OPTION_CONF);
		}
		item = comma ? comma + 1 : NULL;
	}
}

/* ---- Loading -------------------------------------------------------------------------------- */

void np_options_reset(void)
{
	for (int i = 0; i < NROWS; i++) {
		set_default(&rows[i]);
		source[i] = NP_OPTION_DEFAULT;
	}
}

static bool is_other_name(const char *name, size_t len)
{
	for (size_t k = 0; k < NP_ARRAY_SIZE(other_names); k++)
		if (strlen(other_names[k]) == len && strncmp(name, other_names[k], len) == 0)
			return true;
	return false;
}

void np_options_load(char *const *env, bool secure)
{
	np_options_reset();
	/* Secure execution: an unprivileged user must not steer a privileged program (the
	 * topology file it reads, where it writes a report, how it binds): read nothing, say
	 * nothing. */
	if (secure || !env)
		return;
	static const char prefix[] = "NUMAPAGE_";
	const size_t plen = sizeof prefix - 1;
	/* The string first, wherever it sits in the environment: a variable of its own wins. */
	for (char *const *e = env; *e; e++)
		if (strncmp(*e, "NUMAPAGE_CONF=", plen + 5) == 0)
			load_conf(*e + plen + 5);
	for (char *const *e = env; *e; e++) {
		if (strncmp(*e, prefix, plen) != 0)
			continue;
		const char *name = *e + plen, *eq = strchr(name, '=');
		if (!eq)
			continue;
		size_t len = (size_t)(eq - name);
		int i = -1;
		for (int k = 0; k < NROWS && i < 0; k++)
			if (strlen(rows[k].name) == len && strncmp(rows[k].name, name, len) == 0)
				i = k;
		if (i >= 0) {
			if (source[i] == NP_OPTION_CONF)
				np_verbose("NUMAPAGE_%s overrides %s in NUMAPAGE_CONF", rows[i].name, rows[i].name);
			apply(i, eq + 1, NP_OPTION_ENV);
		} else if (!is_other_name(name, len)) {
			unknown(name, len, NULL);
		}
	}
	/* mimalloc's verbose mode: every option, what is in force and where it came from. */
	char raw[256], v[256];
	for (int i = 0; i < NROWS; i++) {
		np_options_value(i, raw, sizeof raw);
		printable(raw, SIZE_MAX, v, sizeof v);
		if (source[i] == NP_OPTION_ENV)
			np_verbose("option %s = %s (NUMAPAGE_%s)", rows[i].name, v[0] ? v : "(unset)", rows[i].name);
		else
			np_verbose("option %s = %s (%s)", rows[i].name, v[0] ? v : "(unset)",
				   np_options_source_name(source[i]));
	}
}

void np_options_init(void)
{
	if (inited)
		return;
	np_options_load(environ, np_os_is_secure());
	inited = true;
}

int np_options_set(const char *name, const char *value)
{
	int i = np_options_find(name);
	if (i < 0 || !value)
		return -1;
	return apply(i, value, NP_OPTION_ENV);
}

/* ---- Reading ---------------------------------------------------------------------------------- */

const struct np_option_doc *np_options_table(void)
{
	static struct np_option_doc docs[NROWS + 1];
	for (int i = 0; i < NROWS; i++)
		docs[i] = (struct np_option_doc){rows[i].name, rows[i].deflt_text, rows[i].doc, rows[i].runtime};
	return docs;
}

size_t np_options_value(int i, char *buf, size_t size)
{
	if (i < 0 || i >= NROWS) {
		if (size)
			buf[0] = '\0';
		return 0;
	}
	const struct row *r = &rows[i];
	const char *field = (const char *)&np_opt + r->offset;
	char tmp[32] = "";
	const char *s = tmp;
	switch (r->kind) {
	case K_BOOL:
		np_format(tmp, sizeof tmp, "%d", __atomic_load_n((const int *)field, __ATOMIC_ACQUIRE));
		break;
	case K_LONG:
		np_format(tmp, sizeof tmp, "%ld", __atomic_load_n((const long *)field, __ATOMIC_ACQUIRE));
		break;
	case K_ENUM: {
		int v = __atomic_load_n((const int *)field, __ATOMIC_ACQUIRE);
		s = v >= 0 && v <= r->max ? r->names[v] : "?";
		break;
	}
	case K_STR:
		return np_opt_copy_string((const char *const *)field, buf, size);
	}
	size_t len = strlen(s);
	if (size) {
		size_t n = NP_MIN(len, size - 1);
		memcpy(buf, s, n);
		buf[n] = '\0';
	}
	return len;
}

int np_options_source(int i)
{
	return i >= 0 && i < NROWS ? __atomic_load_n(&source[i], __ATOMIC_RELAXED) : -1;
}

const char *np_options_source_name(int src)
{
	switch (src) {
	case NP_OPTION_DEFAULT: return "default";
	case NP_OPTION_CONF: return "NUMAPAGE_CONF";
	case NP_OPTION_ENV: return "environment";
	case NP_OPTION_SET: return "numa_page_option_set";
	}
	return "?";
}

/* ---- Public: numa_page_option_get / numa_page_option_set --------------------------------------- */

NUMA_PAGE_API int numa_page_option_get(const char *name, char *buf, size_t size)
{
	int i = np_options_find(name);
	if (!name || (!buf && size)) {
		errno = EINVAL;
		return -1;
	}
	if (i < 0) {
		errno = ENOENT;
		return -1;
	}
	np_options_init(); /* a call before the library has started still sees the environment */
	size_t len = np_options_value(i, buf, size);
	return (int)NP_MIN(len, (size_t)0x7fffffff);
}

/* Strings set at run time live here: two, alternating, so the value in force is never the one
 * the next call writes; `setting` keeps two calls from writing at once. A reader may still be
 * copying the value before last when a set overwrites it, so every set is bracketed by
 * set_seq (odd while it writes), and a copy that saw set_seq move is made again. */
static char set_buf[2][4096] NP_LARGE_BSS;
static int set_turn, setting;
static unsigned set_seq;

NP_FORK_CHILD void np_options_atfork_child(void)
{
	/* A set another thread was making at the fork ends here: the value in force is whole
	 * either way (the pointer moves only once its buffer is written), and the thread that
	 * would have closed the count does not exist in the child. */
	if (set_seq & 1)
		set_seq++;
	NP_RESET(&setting, 0);
}

size_t np_opt_copy_string(const char *const *field, char *buf, size_t size)
{
	for (;;) {
		unsigned seq = __atomic_load_n(&set_seq, __ATOMIC_ACQUIRE);
		if (seq & 1) {
			np_os_yield(); /* a set is writing: a few microseconds */
			continue;
		}
		const char *s = __atomic_load_n(field, __ATOMIC_ACQUIRE);
		if (!s)
			s = "";
		/* A set_buf always ends in a NUL (values are shorter than it), so strlen ends even
		 * over bytes a set is writing; such a copy is thrown away below. */
		size_t len = strlen(s);
		if (size) {
			size_t n = NP_MIN(len, size - 1);
			memcpy(buf, s, n);
			buf[n] = '\0';
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&set_seq, __ATOMIC_RELAXED) == seq)
			return len;
	}
}

void (*np_options_set_hook)(const char *name);

NUMA_PAGE_API int numa_page_option_set(const char *name, const char *value)
{
	if (!name || !value) {
		errno = EINVAL;
		return -1;
	}
	int i = np_options_find(name);
	if (i < 0) {
		errno = ENOENT;
		return -1;
	}
	np_options_init();
	const struct row *r = &rows[i];
	if (!r->runtime) {
		errno = EPERM; /* fixed at start-up: see numapage(3) for which options are */
		return -1;
	}
	union value v;
	if (parse(r, value, &v) != 0) {
		errno = EINVAL;
		return -1;
	}
	if (r->kind == K_STR && v.s) {
		size_t len = strlen(v.s);
		if (len >= sizeof set_buf[0]) {
			errno = EINVAL;
			return -1;
		}
		int expect = 0;
		if (!__atomic_compare_exchange_n(&setting, &expect, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			errno = EBUSY; /* another thread is setting a string option right now */
			return -1;
		}
		char *dst = set_buf[set_turn];
		set_turn ^= 1;
		__atomic_store_n(&set_seq, set_seq + 1, __ATOMIC_RELAXED); /* odd: readers wait */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		memcpy(dst, v.s, len + 1);
		v.s = dst;
		store(r, &v);
		__atomic_store_n(&set_seq, set_seq + 1, __ATOMIC_RELEASE);
		set_source(i, NP_OPTION_SET);
		__atomic_store_n(&setting, 0, __ATOMIC_RELEASE);
	} else {
		store(r, &v);
		set_source(i, NP_OPTION_SET);
	}
	char shown[256];
	np_verbose("option %s = %s (numa_page_option_set)", r->name,
		   value[0] ? printable(value, SIZE_MAX, shown, sizeof shown) : "(unset)");
	void (*hook)(const char *) = __atomic_load_n(&np_options_set_hook, __ATOMIC_ACQUIRE);
	if (hook)
		hook(r->name);
	return 0;
}
