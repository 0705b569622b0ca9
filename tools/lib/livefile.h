/* livefile.h (tools) — one process's live-view file, /dev/shm/numapage.<uid>.<pid>.<ns> (layout:
 * struct np_vmstat_shm_header in src/vmstat/vmstat.h), read by counter name into np_tstats:
 * `numapage stat` samples running processes through it, and `numapage run` reads what a process
 * of its job left there when it ended without its exit report (_exit, a signal).
 * The file belongs to another process, which may truncate, replace or scribble on it at any
 * time: it is never mapped (a mapping of a file that shrinks faults), but read with pread into
 * a private copy at each sample, and the header is checked again each time. */
#ifndef NP_TOOL_LIVEFILE_H
#define NP_TOOL_LIVEFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "tstats.h"

#define NP_LIVEFILE_MAX_ITEMS 256
/* The library's file is a few pages; anything far larger is not one. */
#define NP_LIVEFILE_MAX_SIZE (1u << 20)
/* Counters beyond this are no process's (2^62 pages, or bytes): a file that holds one is
 * refused, and np_tstats sums saturate, so no sum the tool or the printer makes overflows. */
#define NP_LIVEFILE_MAX_VALUE (1LL << 62)

struct np_livefile {
	char path[128];
	unsigned uid;
	int pid;
	int parent;            /* the process it was forked from (0: started by exec) */
	int keeper;            /* the process to read it once it is gone (numapage run); 0: none */
	dev_t dev;
	ino_t ino;
	size_t size;           /* the header's size: what each read takes */
	size_t fixed;          /* header and names: [0, fixed) may not change between reads */
	unsigned char *first;  /* the file as first read */
	unsigned char *buf;    /* the latest read */
	uint32_t totals_off, node_stride;
	int nnodes, nitems;
	int max_thr;                            /* the largest per-thread fold threshold */
	int item_of[NP_LIVEFILE_MAX_ITEMS];     /* the file's item -> this build's, or -1 */
	uint8_t kind[NP_LIVEFILE_MAX_ITEMS];
	int os_id[NP_MAX_NODES];
};

enum np_livefile_err {
	NP_LIVEFILE_OK = 0,
	NP_LIVEFILE_NOT_OURS,   /* too short, or its header was never completed */
	NP_LIVEFILE_LAYOUT,     /* a header this build cannot read (another version), or nonsense */
	NP_LIVEFILE_IO,         /* reading failed: errno says why */
	NP_LIVEFILE_GONE,       /* (np_livefile_read) removed: its process has exited */
	NP_LIVEFILE_CHANGED,    /* (np_livefile_read) truncated, replaced or rewritten since it was loaded */
	NP_LIVEFILE_OTHER_NS,   /* published in another pid namespace: its pid is not one here */
};

/* Opens path for reading, never following a link nor blocking (a FIFO planted under the
 * name), only when it is a regular file: the descriptor (its status in *st), -1 when open
 * failed (errno), or -2 when it is not a regular file (nothing stays open). Reports, too. */
int np_open_regular(const char *path, struct stat *st);
/* Opens path as a live file of user uid: np_open_regular, and only a regular file owned by uid
 * counts. Returns the descriptor (its
 * status in *st), -1 when open failed (errno), or -2 when it is not a regular file of uid's
 * (nothing stays open; *st says what it is). */
int np_livefile_open(const char *path, unsigned uid, struct stat *st);
/* Reads the file open at fd (status st, name path, np_livefile_open of uid) that process pid
 * published, and checks its layout and that pid is one of the caller's pid namespace. The publisher completes the header last: an incomplete
 * one is waited for up to `tries` times 10 ms (0: a dead publisher's file is read as it is).
 * On an error nothing stays allocated. fd stays open: the caller closes it. */
enum np_livefile_err np_livefile_load(struct np_livefile *f, int fd, const struct stat *st, const char *path,
				      unsigned uid, int pid, int tries);
/* The totals of the latest read (np_livefile_load's, or np_livefile_read's), by OS node id;
 * gauges below zero (deltas pending) read 0. */
void np_livefile_totals(const struct np_livefile *f, struct np_tstats *out);
/* Reads the file again (by its name, which must still be the same file of the same layout) and
 * gives its totals now. On an error, out is undefined. */
enum np_livefile_err np_livefile_read(struct np_livefile *f, struct np_tstats *out);
void np_livefile_free(struct np_livefile *f);

#endif
