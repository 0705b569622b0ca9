/*
 * options.h — every run-time option, in one table (options.c). At initialisation the options
 * are read from the environment: first the one configuration string NUMAPAGE_CONF
 * ("bind=strict,place=spread,stats=1", as jemalloc's MALLOC_CONF), then each NUMAPAGE_<NAME>
 * variable, which wins over the string. Both go through the same table and parser; nothing
 * allocates. Bad values warn once and keep what was in force; NUMAPAGE_* names that are not
 * options warn once (with the closest real name). A secure-execution process (AT_SECURE:
 * set-user-ID, capabilities) reads none of them. Hot paths read the fields of np_opt directly;
 * the few options marked `runtime` may be changed later with numa_page_option_set (one atomic
 * store each), every other one is fixed once the library has started.
 */
#ifndef NP_OPTIONS_H
#define NP_OPTIONS_H

#include <stddef.h>

#include "internal.h"
#include "os.h" /* enum np_bind_policy */

/* The largest statistics fold threshold (Linux's cap in calculate_normal_threshold): the
 * bound of NUMAPAGE_STAT_THRESHOLD and of the log-scaled formula (vmstat.c). */
#define NP_STAT_THRESHOLD_MAX 125

enum np_place_policy { NP_PLACE_NONE = 0, NP_PLACE_SPREAD = 1, NP_PLACE_FILL = 2 };
/* The option `place`'s values, by enum np_place_policy (NULL after the last). */
extern const char *const np_place_names[];

struct np_options {
	int verbose;                 /* NUMAPAGE_VERBOSE: 0/1 */
	const char *topology;        /* NUMAPAGE_TOPOLOGY: NULL = this machine */
	const char *stats;           /* NUMAPAGE_STATS: NULL, "1" (table at exit), "json:<path>" */
	long stat_threshold;         /* NUMAPAGE_STAT_THRESHOLD: -1 = log-scaled, 0 = fold always */
	long pcp_high;               /* NUMAPAGE_PCP_HIGH: pages a thread caches before draining */
	long pcp_batch;              /* NUMAPAGE_PCP_BATCH: pages moved per refill or drain */
	long purge_mb;               /* NUMAPAGE_PURGE_MB: free MiB a pool keeps before purging */
	long decay_ms;               /* NUMAPAGE_DECAY_MS: a cached huge chunk's pages stay this long,
					and pool pages free a whole period of it go back */
	int bind;                    /* NUMAPAGE_BIND: enum np_bind_policy */
	int place;                   /* NUMAPAGE_PLACE: enum np_place_policy */
	long interleave_above;       /* NUMAPAGE_INTERLEAVE_ABOVE: bytes, 0 = off */
	int shm;                     /* NUMAPAGE_SHM: publish live stats for `numapage stat` */
	long shm_keeper;             /* NUMAPAGE_SHM_KEEPER: the process that reads the live file
					once this one is gone (numapage run --stats); 0: none */
	int thp;                     /* NUMAPAGE_THP: 0/1, ask for 2 MiB pages on new chunks */
	int background_thread;       /* NUMAPAGE_BACKGROUND_THREAD: 0/1, a thread makes the decay's
					looks (malloc/background.h) */
};

extern struct np_options np_opt;

/* Reads an option that numa_page_option_set may change while other threads run (bind,
 * pcp_high, pcp_batch, interleave_above, verbose, stats): a relaxed atomic load, a plain move
 * on x86-64, so the race is defined and quiet under TSan. */
#define np_opt_load(field) __atomic_load_n(&np_opt.field, __ATOMIC_RELAXED)

/* A string option (np_opt.topology or np_opt.stats, passed as &np_opt.<field>) copied into
 * buf, always NUL-terminated when size > 0: the value in force at one instant, never part of
 * the one a concurrent numa_page_option_set is writing (a sequence count, the copy made again
 * when a set ran meanwhile). Returns the whole value's length ("" when unset). */
size_t np_opt_copy_string(const char *const *field, char *buf, size_t size);

/* Called (when set) after numa_page_option_set changed an option (name: the table's spelling),
 * from the caller's thread:
 * the malloc layer's, which starts the background thread when it was turned on (layers above
 * this one register it; NULL until the allocator is ready). */
extern void (*np_options_set_hook)(const char *name);

/* fork()'s child: a string option set by another thread at the fork is over (its sequence
 * count closed, another set allowed), so readers do not wait for a thread that is not there. */
void np_options_atfork_child(void);

/* Where an option's value in force came from. */
enum np_option_source {
	NP_OPTION_DEFAULT = 0,
	NP_OPTION_CONF = 1, /* the NUMAPAGE_CONF string */
	NP_OPTION_ENV = 2,  /* its own NUMAPAGE_<NAME> variable */
	NP_OPTION_SET = 3,  /* numa_page_option_set, while running */
};

/* One row of the option table, for documentation and `numapage options`. */
struct np_option_doc {
	const char *name;   /* without the NUMAPAGE_ prefix */
	const char *deflt;  /* default, as text */
	const char *doc;
	bool runtime;       /* numa_page_option_set may change it while the program runs */
};

/* Reads the process's environment into np_opt (np_options_load(environ, AT_SECURE)).
 * Idempotent; does not allocate. */
void np_options_init(void);
/* Restores every default, then reads env (a NULL-terminated "NAME=value" array, as environ):
 * NUMAPAGE_CONF, then the NUMAPAGE_<NAME> variables; warns about bad values and unknown
 * NUMAPAGE_* names; with NUMAPAGE_VERBOSE=1 lists every option, its value and its source.
 * secure: read nothing (defaults only, silently). Does not allocate. */
void np_options_load(char *const *env, bool secure);
/* Test hook: parses one option value as if read from its NUMAPAGE_<NAME> variable (returns 0,
 * or -1 when the value was rejected and the previous one kept). */
int np_options_set(const char *name, const char *value);
/* Restores every default. */
void np_options_reset(void);
/* What a NUMAPAGE_STATS value asks for: no report (NULL or "0"), the table on stderr ("1"),
 * JSON to a file ("json:<path>"); -1 for anything else, which setting the option refuses. */
enum { NP_STATS_NONE, NP_STATS_TABLE, NP_STATS_JSON };
int np_options_stats_kind(const char *value);
/* The table, for documentation: NULL-terminated, in the order of the index used below. */
const struct np_option_doc *np_options_table(void);
/* Index of an option: "bind", "BIND" and "NUMAPAGE_BIND" all name it. -1 if none does. */
int np_options_find(const char *name);
/* The value in force of option i as text (as it would be written in the environment: a
 * number, an enum name, a string, "" for an unset string) into buf, always NUL-terminated when
 * size > 0; returns the length of the whole value (as snprintf). */
size_t np_options_value(int i, char *buf, size_t size);
/* enum np_option_source of option i, and its name ("default", "NUMAPAGE_CONF", ...). */
int np_options_source(int i);
const char *np_options_source_name(int source);

#endif /* NP_OPTIONS_H */
