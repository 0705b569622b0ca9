/* livefile.h (tools) — one process's live-view file, /dev/shm/numapage.<uid>.<pid> (layout:
 * struct np_vmstat_shm_header in src/vmstat/vmstat.h), mapped read-only and read by counter
 * name into np_tstats: `numapage stat` samples running processes through it, and `numapage
 * run` reads what a process of its job left there when it ended without its exit report
 * (_exit, a signal). */
#ifndef NP_TOOL_LIVEFILE_H
#define NP_TOOL_LIVEFILE_H

#include <stddef.h>
#include <stdint.h>

#include "tstats.h"

#define NP_LIVEFILE_MAX_ITEMS 256

struct np_livefile {
	const void *map;
	size_t size;
	int nnodes, nitems;
	int max_thr;                            /* the largest per-thread fold threshold */
	int item_of[NP_LIVEFILE_MAX_ITEMS];     /* the file's item -> this build's, or -1 */
	uint8_t kind[NP_LIVEFILE_MAX_ITEMS];
	int os_id[NP_MAX_NODES];
};

enum np_livefile_err {
	NP_LIVEFILE_OK = 0,
	NP_LIVEFILE_NOT_OURS,   /* too short, or its header was never completed */
	NP_LIVEFILE_LAYOUT,     /* a header this build cannot read (another version) */
	NP_LIVEFILE_MAP,        /* mmap failed: errno says why */
};

/* Maps the file open at fd (size bytes), which process pid published, and reads its layout.
 * The publisher completes the header last: an incomplete one is waited for up to `tries`
 * times 10 ms (0: a dead publisher's file is read as it is). On an error nothing stays mapped. */
enum np_livefile_err np_livefile_map(struct np_livefile *f, int fd, size_t size, int pid, int tries);
/* The file's totals now, by OS node id; gauges below zero (deltas pending) read 0. */
void np_livefile_read(const struct np_livefile *f, struct np_tstats *out);
void np_livefile_unmap(struct np_livefile *f);

#endif
