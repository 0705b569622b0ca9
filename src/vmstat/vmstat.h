/*
 * vmstat.h — per-node counters (layer 3). Owns the shared per-node totals, the per-node fold
 * thresholds and the registry of live threads' deltas. Each thread counts into its own
 * struct np_vmstat_diffs and adds a delta into the shared `_Atomic long` total only when it
 * passes the node's threshold (Linux's ZVC scheme, mm/vmstat.c).
 * Invariants: a registered thread's |d[node][item]| <= np_vmstat_thr[node][item] between adds;
 * total + sum of registered diffs (+ diffs of unregistered threads that never folded) = truth.
 * Lock: reg_lock (vmstat.c) guards the registry list. Lock order: it is an OUTER lock — never
 * take it while holding an allocator pool lock (register, unregister, snapshots and the fork
 * hooks all take it; np_vmstat_add never does).
 */
#ifndef NP_VMSTAT_H
#define NP_VMSTAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "internal.h"
#include "topology/topology.h"

/* The kinds of NUMA_PAGE_STAT_ITEMS: bit 0 gauge, bit 1 bytes, bit 2 a count of occurrences
 * (neither pages nor bytes: shown as a number, never converted to MiB). BYTE_* fold at
 * threshold * page size. The values are part of the live file's layout. */
enum np_vmstat_kind {
	NP_VMSTAT_KIND_EVENT = 0,
	NP_VMSTAT_KIND_GAUGE = 1,
	NP_VMSTAT_KIND_BYTE_EVENT = 2,
	NP_VMSTAT_KIND_BYTE_GAUGE = 3,
	NP_VMSTAT_KIND_COUNT_EVENT = 4,
	NP_VMSTAT_KIND_COUNT_GAUGE = 5,
};
#define NP_VMSTAT_KIND_IS_GAUGE(k) (((k) & 1) != 0)
#define NP_VMSTAT_KIND_IS_BYTES(k) (((k) & 2) != 0)
#define NP_VMSTAT_KIND_IS_COUNT(k) (((k) & 4) != 0)

/* Per-thread deltas; the allocator embeds one in each thread's state (memory zero-filled). */
struct np_vmstat_diffs {
	int32_t d[NP_MAX_NODES][NUMA_PAGE_STAT_NITEMS];
	struct np_vmstat_diffs *next, *prev; /* live-thread list, under the registry lock */
	bool registered;
};

/* One node's shared totals, on cache lines of their own (no false sharing between nodes). */
struct np_vmstat_totals {
	_Atomic long v[NUMA_PAGE_STAT_NITEMS];
} NP_ALIGNED(NP_CACHELINE);

/* Fold thresholds in force, by dense node and item (BYTE_* items already scaled by the page
 * size). Written by np_vmstat_init only; read on every np_vmstat_add. */
extern int32_t np_vmstat_thr[NP_MAX_NODES][NUMA_PAGE_STAT_NITEMS];

/* Once, after the topology is frozen: remembers the nodes' OS ids and computes the per-node
 * thresholds from np_opt.stat_threshold (-1 = log-scaled, see np_vmstat_threshold_for). May be
 * called again (tests, benchmarks): counts already made are kept. */
void np_vmstat_init(const struct np_topo *t);
/* A thread starts counting: its diffs become visible to exact snapshots. Takes reg_lock. */
void np_vmstat_register(struct np_vmstat_diffs *th);
/* Thread exit: folds every diff into the totals and unlinks it, atomically with respect to
 * snapshots (nothing lost, nothing counted twice). Takes reg_lock. */
void np_vmstat_unregister(struct np_vmstat_diffs *th);

/* Out of line: the rare halves of np_vmstat_add. */
NP_NOINLINE void np_vmstat_fold_slow(struct np_vmstat_diffs *th, int node, int item, long x);
NP_NOINLINE void np_vmstat_add_shared(int node, int item, long delta);

/*
 * Hot path: counts delta on (dense node, item) for the calling thread. Cost: two loads, one
 * compare, one store. (unsigned)(x + t) > 2t is |x| > t in one branch. The relaxed atomic load
 * and store compile to plain moves; they only tell the compiler (and TSan) that an exact
 * snapshot may read this field from another thread. th == NULL (a thread without state) adds
 * straight into the shared atomic total. delta must lie within +-(LONG_MAX / 2).
 */
NP_INLINE void np_vmstat_add(struct np_vmstat_diffs *th, int node, int item, long delta)
{
	np_assert(node >= 0 && node < NP_MAX_NODES && item >= 0 && item < NUMA_PAGE_STAT_NITEMS);
	if (NP_UNLIKELY(th == NULL)) {
		np_vmstat_add_shared(node, item, delta);
		return;
	}
	int32_t *p = &th->d[node][item];
	long t = np_vmstat_thr[node][item];
	long x = (long)__atomic_load_n(p, __ATOMIC_RELAXED) + delta;
	if (NP_UNLIKELY((unsigned long)(x + t) > 2 * (unsigned long)t))
		np_vmstat_fold_slow(th, node, item, x);
	else
		__atomic_store_n(p, (int32_t)x, __ATOMIC_RELAXED);
}

/* Set by the layer above: folds what the calling thread counts outside its deltas (the
 * malloc fast path's byte counters) before an exact read, so a thread reading its own
 * statistics sees every byte it allocated. NULL: nothing to fold. */
extern void (*np_vmstat_read_hook)(void);
/* Set by the layer above: in a fork child, before the diffs below are handled, settles what
 * the threads counted outside their diffs (malloc's byte counters, their slabs'), reading them
 * only: the surviving thread's requests are dropped (those its slabs hold become a debt), the
 * bytes in use of the threads that did not come along go into the totals. Not
 * np_vmstat_read_hook: a signal handler's fork may have interrupted a change of the survivor's
 * slabs, and a full walk of them never ended. NULL: nothing to settle. */
extern void (*np_vmstat_fork_hook)(void);

/* Cheap: the shared total of a dense node; lags the truth by at most threshold x live threads.
 * Gauges are clamped at 0. */
long np_vmstat_read(int node, int item);
/* Exact: shared total plus every registered thread's diff (gauges clamped at 0). Takes
 * reg_lock; cost grows with the number of threads. */
long np_vmstat_snapshot(int node, int item);
/* Every item of a dense node in one lock hold; exact (true) or cheap (false). */
void np_vmstat_snapshot_node(int node, long out[NUMA_PAGE_STAT_NITEMS], bool exact);

/* The threshold formula (Linux calculate_normal_threshold), see vmstat.c for its table. */
int np_vmstat_threshold_for(int cpus, uint64_t node_mem_bytes);
/* The page threshold in force for a dense node (BYTE_* items fold at it x page size). */
int np_vmstat_threshold(int node);

/* Fork: prepare takes reg_lock (before any pool lock); parent releases it; the child
 * re-initialises it, stops counting into the parent's live-view file (it copies its totals),
 * leaves only survivor (may be NULL) registered, and starts counting as a process of its own:
 * its events restart at zero (those made before the fork are the parent's, so sums over a job
 * count each once), its gauges keep the levels of the memory it inherited. The caller then
 * runs np_vmstat_output_atfork_child. */
void np_vmstat_atfork_prepare(void);
void np_vmstat_atfork_parent(void);
void np_vmstat_atfork_child(struct np_vmstat_diffs *survivor);

/* After init, once the allocator can serve stdio: if NUMAPAGE_STATS is set, registers the exit
 * report (atexit); if np_opt.shm, creates the live-view file and moves the totals into it. */
void np_vmstat_start_output(void);
/* The atexit handler: table on stderr ("1") or JSON into <path> ("json:<path>"); removes the
 * live-view file. Each process reports for itself: the one that started output and every
 * child it forks (a child whose path has no %p writes <path>.<pid>). */
void np_vmstat_exit_report(void);
/* In a forked child, after np_vmstat_atfork_child (single-threaded, no allocation): forgets the
 * parent's live file; the child reports at its own exit and publishes its own live file
 * (np_opt.shm: also when its parent could not, /dev/shm full then) at its first malloc slow
 * path (NP_VMSTAT_DUE_PUBLISH): a child that execs or leaves before it makes none. */
void np_vmstat_output_atfork_child(void);
/* In the parent after a fork (any thread, no lock held, maybe a signal handler's): every
 * NP_VMSTAT_SHM_SWEEP_FORKS forks of a process whose children publish, np_vmstat_shm_sweep, so
 * that the files of children that left with _exit do not pile up while it goes on forking. On
 * an alternate signal stack the sweep is only made due (NP_VMSTAT_DUE_SWEEP). */
void np_vmstat_output_atfork_parent(void);
/* Work left for the next malloc slow path (bits of np_vmstat_output_due), which calls
 * np_vmstat_output_run_due when any is set (no lock held, no allocation; not on an alternate
 * signal stack: then it stays due). */
#define NP_VMSTAT_DUE_SWEEP 1   /* the forking parent's sweep */
#define NP_VMSTAT_DUE_PUBLISH 2 /* a forked child's live file */
extern NP_HIDDEN int np_vmstat_output_due;
void np_vmstat_output_run_due(void);
/* With NUMAPAGE_VERBOSE=1: one line per node of t (memory, CPUs, fallback order, fold
 * threshold). After np_vmstat_init. */
void np_vmstat_verbose_nodes(const struct np_topo *t);

/* numa_page_stats_reset: zeroes every event total and every registered thread's event diffs;
 * gauges are kept. Takes reg_lock. */
void np_vmstat_reset_events(void);

/* ---- Items, nodes ---------------------------------------------------------------------- */

/* enum np_vmstat_kind of an item. */
int np_vmstat_item_kind(int item);
/* Nodes known to vmstat (0 before np_vmstat_init) and their OS ids. */
int np_vmstat_nnodes(void);
int np_vmstat_os_id(int node);
/* Dense index of an OS node id, or -1. */
int np_vmstat_node_index(int os_id);

/* ---- Output (vmstat_print.c) ----------------------------------------------------------- */

/* Prints a numastat-like table of raw counts: one row per item, one column per node
 * ("node<os id>") and a Total column. values[n * nitems + i]. The format of
 * numa_page_stats_print and NUMAPAGE_STATS=1. These printers return false when stdio refused a
 * write (what the stream's buffer holds shows at its flush: np_stdio_answer). */
bool np_vmstat_print_table(FILE *out, int nnodes, const int *os_ids, int nitems,
			   const char *const *names, const long *values);
/* The JSON object {"nodes":[{"node":<os id>,"<item>":<value>,...},...]} followed by '\n'. */
bool np_vmstat_print_json(FILE *out, int nnodes, const int *os_ids, int nitems,
			  const char *const *names, const long *values);
/* Just the member "nodes":[...] of that object, for callers that add members of their own. */
bool np_vmstat_print_json_nodes(FILE *out, int nnodes, const int *os_ids, int nitems,
				const char *const *names, const long *values);

/* How the numapage command shows a table (numastat's options). */
struct np_vmstat_table_opts {
	bool raw;            /* pages and bytes as counted; else MiB (2 decimals) */
	bool compact;        /* numastat -c: columns as narrow as their cells, MiB rounded to whole */
	bool hide_zero_rows; /* numastat -z: rows that are zero everywhere are left out */
	bool hide_zero_cols; /* numastat -z: node columns that are zero everywhere are left out */
	int width;           /* fold into blocks of node columns no wider than this; 0: never */
	size_t page_size;    /* of the pages counted */
};
/* The table with a unit column ("MiB", "pages", "bytes", "count": count rows are never
 * converted) after the names; kinds[i] is item i's enum np_vmstat_kind. Returns the number of
 * rows printed (0: every row was zero and hidden; nothing is printed then). */
int np_vmstat_print_table_opts(FILE *out, const struct np_vmstat_table_opts *o, int nnodes,
			       const int *os_ids, int nitems, const char *const *names,
			       const uint8_t *kinds, const long *values);

/* ---- Live view: the shared-memory file (vmstat_shm.c) ------------------------------------ */

/*
 * /dev/shm/numapage.<euid>.<pid>.<ns> (ns: the pid namespace), mode 0600: a header, then the
 * per-item names and kinds, then nnodes blocks of node_stride bytes each holding nitems int64 totals (the process's live
 * struct np_vmstat_totals array: the library counts straight into it). The writer fills the
 * header and stores magic last (release), so a reader that sees magic sees the whole header.
 */
#define NP_VMSTAT_SHM_DIR "/dev/shm"
#define NP_VMSTAT_SHM_PREFIX "numapage."
/* Names an exit report named for its pid takes after its own, taken one: <name>.1 to
 * <name>.99 (vmstat_print.c; numapage run's watcher reads them in that order). */
#define NP_VMSTAT_REPORT_TAKEN_MAX 99

/* Forks between two sweeps of a forking parent (np_vmstat_output_atfork_parent). */
#define NP_VMSTAT_SHM_SWEEP_FORKS 64
#define NP_VMSTAT_SHM_MAGIC 0x31544154534e504eULL /* "NPNSTAT1" little-endian */
#define NP_VMSTAT_SHM_VERSION 4
#define NP_VMSTAT_SHM_NAME_LEN 32

struct np_vmstat_shm_header {
	uint64_t magic;        /* NP_VMSTAT_SHM_MAGIC once complete */
	uint32_t version;      /* NP_VMSTAT_SHM_VERSION */
	uint32_t size;         /* bytes of the whole file */
	int32_t pid;           /* the publishing process */
	uint32_t uid;          /* its effective uid */
	int32_t nnodes;
	int32_t nitems;
	uint32_t page_size;
	uint32_t names_off;    /* nitems x struct np_vmstat_shm_name */
	uint32_t totals_off;   /* multiple of NP_CACHELINE */
	uint32_t node_stride;  /* bytes between two nodes' totals */
	int32_t threshold[NP_MAX_NODES]; /* page thresholds in force: the lag bound per thread */
	int32_t os_id[NP_MAX_NODES];
	uint64_t pid_ns;       /* the publisher's pid namespace (np_os_pid_ns; 0: unknown): pid is its
				  pid there, and only a process of that namespace may judge it gone */
	int32_t parent;        /* the process it was forked from (0: started by exec); version 3 */
	int32_t keeper;        /* the process that reads this file once its publisher is gone
				  (NUMAPAGE_SHM_KEEPER: numapage run --stats); 0: none. Was 0 in
				  every file of version 3 before it */
	uint64_t start;        /* when a keeper is named: the publisher's start time (np_os_start_time),
				  which tells its own file before an exec from a gone process's at
				  its pid; 0 otherwise. Version 4 (stop 70): the header grew by it,
				  so readers of version 3 refuse these files, and these readers
				  version 3's */
};

struct np_vmstat_shm_name {
	char name[NP_VMSTAT_SHM_NAME_LEN - 1]; /* NUL-terminated */
	uint8_t kind;                          /* enum np_vmstat_kind */
};

/* Whether header h (of a live-view file) says its publisher was in another pid namespace than
 * ns: its pid is not one the caller can judge. False when either namespace is unknown or the
 * header is not whole or not of this version. */
bool np_vmstat_shm_other_ns(const struct np_vmstat_shm_header *h, uint64_t ns);
/* "/dev/shm/numapage.<uid>.<pid>.<ns>" into buf (ns: the pid namespace pid is in, as
 * np_os_pid_ns names it); returns the length. The namespace is in the name because processes
 * of two namespaces sharing /dev/shm (the containers of a pod, CI jobs on one machine) have the
 * same small pids: with the name uid.pid, the second's file was taken by the first's, which it
 * may not remove (the other may be running), and the second did not publish. */
size_t np_vmstat_shm_path(char *buf, size_t size, unsigned uid, int pid, uint64_t ns);
/* The uid, pid and namespace of a live file's name (no directory), only when it is a name
 * np_vmstat_shm_path writes: the prefix, then decimal numbers with no sign and no leading
 * zero, a uid of at most UINT_MAX, a pid of 1 to INT_MAX and a namespace of at most
 * UINT64_MAX. Anything else is no process's. */
bool np_vmstat_shm_parse_name(const char *name, unsigned *uid, int *pid, uint64_t *ns);
/* The same for a file set aside, <name>.<inode>: the file a gone process left at the pid of a
 * process that published after it (a pid used again), while a keeper that lives was to read
 * it; that keeper reads it too, and a sweep judges it by its pid and keeper. Not a live view:
 * `numapage stat` shows no such file. */
bool np_vmstat_shm_parse_aside(const char *name, unsigned *uid, int *pid, uint64_t *ns);
/* Creates and fills the file (parent: the process this one was forked from, 0 when none);
 * returns the totals array inside the mapping, or NULL (nothing published, a verbose message
 * says why). */
struct np_vmstat_totals *np_vmstat_shm_create(int parent);
/* The same in pid namespace ns (np_os_pid_ns, read by the caller: a start reads it once for
 * its sweep and its file). */
struct np_vmstat_totals *np_vmstat_shm_create_in(int parent, uint64_t ns);
/* Adds the events (not the gauges) of node_totals, the totals of nodes os_id[0..n) that this
 * process counted before an exec, published in its file then, to its totals now: counts survive
 * exec, as the kernel's own per-process counters do (np_vmstat_shm_create, with a keeper). */
void np_vmstat_add_events_before_exec(const struct np_vmstat_totals *node_totals, const int32_t *os_id, int n);
/* Unmaps and unlinks the file if this process created it. */
void np_vmstat_shm_remove(void);
/* In a forked child: forgets the parent's file (not unlinked; unmapped when the child
 * publishes its own). */
void np_vmstat_shm_forget(void);
/* Removes, without a word (NUMAPAGE_VERBOSE=1 names them), the files of this user's processes
 * that are gone: a process killed before its exit handler ran, or a forked child that left
 * with _exit. At start-up (not in forked children: see np_vmstat_output_atfork_child), and in
 * a parent every NP_VMSTAT_SHM_SWEEP_FORKS forks. A file whose keeper (header.keeper) lives
 * stays, unless the caller is that keeper.
 * Returns how many were removed. Does not allocate. */
int np_vmstat_shm_sweep(void);
/* The same, ns being np_os_pid_ns() read by the caller just before. */
int np_vmstat_shm_sweep_in(uint64_t ns);
/* Whether this process publishes, and the path (NULL when not). */
const char *np_vmstat_shm_published(void);
/* The inode number of the file this process publishes in (0 when none): with the pid, it tells
 * this process's file from that of another process that had the pid before or after it (the
 * exit report names it: `numapage run` counts a file left at a pid that reported only when the
 * report is another file's). */
uint64_t np_vmstat_shm_inode(void);

/* Makes every fold add to dst (the shm totals) as well from now on, and copies the totals into
 * it. Readers in the process read the totals, never dst: a forked child keeps them as they
 * were at the fork while the parent goes on adding to dst. */
void np_vmstat_use_totals(struct np_vmstat_totals *dst);

/* Tests and benchmarks only: zeroes every total and every registered thread's diffs. */
void np_vmstat_reset(void);

#endif /* NP_VMSTAT_H */
