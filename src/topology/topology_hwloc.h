/*
 * topology_hwloc.h — what the files of the topology module share; no other module includes it.
 * topology.c holds the table (the one-node fallback, lookups, fallback orders, the checker),
 * topology_hwloc.c one hwloc session (what hwloc may read, what we ask of it, and the
 * extraction into the table), topology_load.c np_topo_load (which inputs are acceptable, and
 * loading what the user names in a child process).
 */
#ifndef NP_TOPOLOGY_HWLOC_H
#define NP_TOPOLOGY_HWLOC_H

#include <stdbool.h>
#include <stddef.h>

#include "topology/topology.h"

#define NP_TOPO_SYNTHETIC_PREFIX "synthetic:"

/* One load, as the child process of an isolated load runs it (or this process when the load
 * is not steered by the user). Inputs, then what came out: *out filled when ok, else why. */
struct np_topo_job {
	const char *spec;
	enum np_topo_source src;
	const struct np_topo_allow *allow;
	bool secure;
	bool ok;
	char why[200];
	struct np_topo *out;
};

/* Loads libhwloc and resolves what this module calls (once enough; again is harmless: the
 * library stays loaded). false, with why filled, when it is missing or of another ABI. */
bool np_topo_hwloc_open(char *why, size_t why_size);
/* Runs one hwloc session for job (a struct np_topo_job): discovery or the named file or
 * string, extracted into job->out. Returns 0 (the outcome is in the job). */
int np_topo_hwloc_run(void *job);
/* True when the caller's environment has any HWLOC_* variable (one steers hwloc). */
bool np_topo_hwloc_steered(void);
/* True when the caller's environment sends hwloc elsewhere than this machine. */
bool np_topo_hwloc_redirects(void);

/* Fills every node's fallback order from the table's distances and allowed memory. */
void np_topo_build_fallback(struct np_topo *t);
/* Error text of an errno value without allocating (strerror may format into a buffer). */
const char *np_topo_errtext(int err);
/* t->desc = prefix + what. */
void np_topo_set_desc(struct np_topo *t, const char *prefix, const char *what);

#endif /* NP_TOPOLOGY_HWLOC_H */
