/*
 * options.h — every run-time option, in one table (options.c), read once from NUMAPAGE_<NAME>
 * environment variables at initialisation with secure_getenv (which does not allocate). Bad
 * values warn once and keep the default. Nothing changes after initialisation: hot paths read
 * the cached fields of np_opt directly.
 */
#ifndef NP_OPTIONS_H
#define NP_OPTIONS_H

#include <stddef.h>

#include "internal.h"
#include "os.h" /* enum np_bind_policy */

enum np_place_policy { NP_PLACE_NONE = 0, NP_PLACE_SPREAD = 1, NP_PLACE_FILL = 2 };

struct np_options {
	int verbose;                 /* NUMAPAGE_VERBOSE: 0/1 */
	const char *topology;        /* NUMAPAGE_TOPOLOGY: NULL = this machine */
	const char *stats;           /* NUMAPAGE_STATS: NULL, "1" (table at exit), "json:<path>" */
	long stat_threshold;         /* NUMAPAGE_STAT_THRESHOLD: -1 = log-scaled, 0 = fold always */
	long pcp_high;               /* NUMAPAGE_PCP_HIGH: pages a thread caches before draining */
	long pcp_batch;              /* NUMAPAGE_PCP_BATCH: pages moved per refill or drain */
	long purge_mb;               /* NUMAPAGE_PURGE_MB: free MiB a pool keeps before purging */
	int bind;                    /* NUMAPAGE_BIND: enum np_bind_policy */
	int place;                   /* NUMAPAGE_PLACE: enum np_place_policy */
	long interleave_above;       /* NUMAPAGE_INTERLEAVE_ABOVE: bytes, 0 = off */
	int shm;                     /* NUMAPAGE_SHM: publish live stats for `numapage stat` */
};

extern struct np_options np_opt;

/* One row of the option table, for documentation and `numapage options`. */
struct np_option_doc {
	const char *name;   /* without the NUMAPAGE_ prefix */
	const char *deflt;  /* default, as text */
	const char *doc;
};

/* Reads the environment into np_opt. Idempotent; does not allocate. */
void np_options_init(void);
/* Test hook: parses one option value as if read from the environment (returns 0, or -1 when the
 * value was rejected and the default kept). */
int np_options_set(const char *name, const char *value);
/* Restores every default. */
void np_options_reset(void);
/* The table, for documentation: NULL-terminated. */
const struct np_option_doc *np_options_table(void);

#endif /* NP_OPTIONS_H */
