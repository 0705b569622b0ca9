/*
 * huge.h — freed huge chunks (allocations too large for a pool's chunk) kept for reuse, one
 * cache per node. A program that frees and allocates big buffers in a loop then reuses the
 * mapping, its binding and its resident pages instead of paying mmap, mbind, munmap and a
 * fault per page each time.
 *
 * What is kept follows the program: the resident (dirty) part of the cache may reach the recent
 * peak of the node's huge blocks in use (at least NUMAPAGE_PURGE_MB), a peak that halves every
 * second it is not reached again. Beyond it, and for chunks left unused longer than
 * NUMAPAGE_DECAY_MS, the pages go back to the kernel (MADV_DONTNEED) but the mapping stays
 * cached, clean: its next user needs no mmap, no bind and no zeroing, only the faults. Only
 * clean chunks past a few per node (or past four budgets of address space) are unmapped.
 * A request takes the smallest cached chunk that fits; when none does, the largest grows in
 * place (mremap). A chunk that reaches a granule (16 MiB) or more past the granule where the
 * request ends is cut there: the rest stays cached as a chunk of its own, resident as it was,
 * for the next request, the resident pages the request holds past its size go back, and
 * pieces of one mapping join again when both are free, or when the block before a cached piece
 * grows (realloc). A small block then holds neither a large one's
 * pages nor its address space. Decays happen when the cache is used and at the pools' decay
 * looks, which the malloc slow paths make now and then (np_pool_decay, and the opt-in
 * background thread's), so a program that goes on with smaller blocks gets its freed huge
 * blocks' pages back too; without that thread, a program that stops calling the allocator
 * keeps what is cached until malloc_trim.
 *
 * Lock: one per node, rank NP_LOCK_RANK_HUGE; never held with a pool lock; system calls are
 * made with it dropped. Invariants: np_huge_check().
 */
#ifndef NP_HUGE_H
#define NP_HUGE_H

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"
#include "pool/chunk.h"
#include "topology/topology.h"
#include "vmstat/vmstat.h"

/* Sets up one cache per node with allowed memory. */
void np_huge_init(const struct np_topo *t);
/* Pages of huge blocks of dense node `node` handed out (+) or given back (-): the peak the
 * budget follows. */
void np_huge_count_live(int node, long pages);
/* Live huge chunk c grown to at least `bytes` data bytes (realloc's growth), the pages it
 * gained counted live: into the cached piece of its mapping behind it when that holds the
 * growth (in place); else, for a growth by a quarter or more, copied into a cached chunk of its
 * node whose resident part holds `bytes` (c unmapped: its data bytes are copied, so the block
 * must start at c's data); else by mremap, in place or moved with its pages
 * (np_chunk_grow_huge), a piece behind joined first. NULL when none worked (c unchanged, the
 * piece cached again). */
struct np_chunk *np_huge_grow(struct np_chunk *c, size_t bytes);
/* Keeps freed huge chunk c of its node (kind CACHED from then on; its data counted dirty);
 * false when it may not be kept (interleaved, larger than the budget allows): the caller
 * unmaps it. A huge chunk's pages leave the live count either way. */
bool np_huge_put(struct np_chunk *c, struct np_vmstat_diffs *st);
/* A cached chunk of node with at least `bytes` data bytes starting at a multiple of align,
 * kind HUGE again (the smallest that fits, or the largest grown to fit), or NULL. *dirty:
 * bytes from its data's start that may not read as zeros (calloc clears only those). Without
 * fresh (the node has no room) only a chunk whose dirty bytes cover the request, not grown:
 * fresh pages of a full node fault in elsewhere (pool.c's get_runs). */
struct np_chunk *np_huge_get(int node, size_t bytes, size_t align, size_t *dirty, struct np_vmstat_diffs *st,
			     bool fresh);
/* The first granule of a cached chunk of node with resident pages, off the cache (the rest of
 * the chunk stays cached as a piece of its own), for the node's pool to make a chunk of
 * (np_chunk_adopt_huge) instead of mapping one: a program that frees a large buffer and goes
 * on with smaller blocks reuses its pages (GNU sort -S 20M). NULL when there is none.
 * *dirty: bytes from its data's start that may not read as zeros. */
struct np_chunk *np_huge_take_granule(int node, size_t *dirty);
/* The decay of node's cache as its use makes it (NUMAPAGE_DECAY_MS, the peak's halving), when a
 * look is due: np_pool_decay calls it for every node. now: np_os_clock_ns. */
void np_huge_decay(int node, uint64_t now, struct np_vmstat_diffs *st);
/* malloc_trim: every cached chunk of the node unmapped. Returns the pages that were resident;
 * *unmapped (may be NULL): the chunks unmapped, clean ones too (their address space). */
size_t np_huge_trim(int node, struct np_vmstat_diffs *st, size_t *unmapped);
/* Pages cached for node: resident and clean (for tests and statistics). */
void np_huge_cached(int node, size_t *dirty_pages, size_t *clean_pages);

/* fork(): hold every cache lock across the fork, release (parent) or re-create (child). */
void np_huge_atfork_prepare(void);
void np_huge_atfork_parent(void);
void np_huge_atfork_child(void);

/* Walks one node's cache (kinds, nodes, counts); NULL when sound, else what is wrong. */
const char *np_huge_check(int node);

#endif /* NP_HUGE_H */
