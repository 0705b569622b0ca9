/*
 * large.h — malloc's and the page API's memory above the slab classes: page runs (powers of two
 * up to 16 pages through the thread's page cache, exact runs from a node's pool up to a quarter
 * of a chunk) and chunks of their own (huge: bound to one node, kept by its pool for reuse when freed;
 * interleaved: page by page over the allowed memory nodes). Counts pages in the numa_* and
 * pages_in_use statistics and, for malloc's blocks (marked `user`), bytes in malloc_*.
 */
#ifndef NP_LARGE_H
#define NP_LARGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "malloc/thread.h"
#include "pool/chunk.h"

/* The longest page run taken from a pool; longer blocks get a chunk of their own: a quarter
 * of a chunk (4 MiB). Blocks up to it pack into chunks with little left over, and as runs their
 * pages go back to the pool when they are freed, for blocks of any size. As chunks of their own
 * (rounded to a quarter of their power of two, kept for huge requests only, grown by mremap)
 * blocks of 1.4-4 MiB made large-blocks/1 1.7x slower (docs/perf-issue15.md, section 9). Runs
 * up to a whole chunk's data did worse than chunks of their own for blocks of 5-16 MiB: calloc
 * of 5-25 MiB blocks (large-calloc) faulted 2.4 times the pages (section 11). Where address
 * space is what runs out, the rule below. */
#define NP_LARGE_RUN_MAX (NP_CHUNK_PAGES / 4)
_Static_assert(NP_LARGE_RUN_MAX <= NP_CHUNK_DATA_PAGES, "a run fits behind a chunk's header");
/* The same when the address space is limited (np_chunk_tight): an eighth of a chunk's data, so
 * that runs of one length fill at least 8/9 of a chunk; longer ones get a chunk of their own
 * sized to the page (its 32 KiB of metadata slots are under 2% of them). In 4 MiB chunks, 1 MiB
 * blocks under `ulimit -v 262144` fitted 163 with thirds (three to a chunk), where glibc fits
 * 252; a quarter left 683 KiB blocks at 85% of the space (five to a chunk). With 16 MiB chunks
 * and eighths: 254 of 1 MiB, 118 of 2 MiB (stress_malloc address_limit). */
#define NP_LARGE_RUN_MAX_TIGHT (NP_CHUNK_DATA_PAGES / 8)

/* The longest page run taken from a pool now. */
NP_INLINE size_t np_large_run_max(void)
{
	return np_chunk_tight ? NP_LARGE_RUN_MAX_TIGHT : NP_LARGE_RUN_MAX;
}
/* Under an interleave policy, blocks longer than this are spread page by page over the
 * policy's nodes, as the kernel spreads them (shorter ones: whole runs, node after node). */
NP_INLINE size_t np_large_spread_min(void)
{
	return np_chunk_tight ? NP_LARGE_RUN_MAX_TIGHT : NP_LARGE_RUN_MAX / 3;
}
/* The largest request served; above it, ENOMEM (the address space could not hold it). */
#define NP_MAX_REQUEST ((size_t)1 << 46)

/* Pages for size bytes aligned to align (a power of two >= the page size) intended for dense
 * node `node` (-1: the thread's target node, np_pcp.target), or NULL. *dirty: bytes from the
 * start that may not read as zeros (0: all clean; SIZE_MAX: any). Follows a moved thread to
 * its new node first (np_home_follow). */
void *np_large_alloc(struct np_thread *th, size_t size, size_t align, int node, size_t *dirty);
/* A chunk of at least size bytes interleaved page by page over the dense nodes of mask `nodes`
 * (0: every allowed memory node), or NULL. Counted as interleave_hit per node; with a mask (the
 * task's interleave policy) as numa_hit and local/other_node too, as its batches are. */
void *np_large_interleaved(struct np_thread *th, size_t size, uint64_t nodes);
/* NUMAPAGE_INTERLEAVE_ABOVE: whether a malloc of size bytes by th is to be interleaved. */
bool np_large_interleave_wanted(const struct np_thread *th, size_t size);
/* Marks the large block at p (a run or a chunk, just allocated) as malloc's and counts its
 * bytes (requested: what the program asked for). */
void np_large_count(struct np_thread *th, void *p, size_t requested);
/* A large block of malloc's grew in place on dense node `node` from old to new usable bytes
 * (page multiples): count the pages, and the bytes when it is malloc's (user). */
void np_large_count_growth(struct np_thread *th, int node, size_t old, size_t new, bool user);
/* Frees page run `run` (its head descriptor, state USED) of the calling thread (th may be
 * NULL: a thread without state, or after its exit handler ran). */
void np_large_free_run(struct np_page *run, struct np_thread *th);
/* Shrinks huge chunk c (kind NP_CHUNK_HUGE, in use) in place to what a block of size bytes
 * needs (np_chunk_huge_size): the tail past it is unmapped, and its pages, and for malloc's its
 * bytes, leave the statistics. Nothing happens when that would not make it smaller. */
void np_large_shrink_huge(struct np_chunk *c, struct np_thread *th, size_t size);
/* Frees huge or interleaved chunk c: its pages and, for malloc's, its bytes leave the
 * statistics. keep: it may stay with its node's pool for reuse (else it is unmapped). */
void np_large_free_chunk(struct np_chunk *c, struct np_thread *th, bool keep);

#endif /* NP_LARGE_H */
