/*
 * fuzz_worker.h — the fuzz target's second thread: one persistent thread, so that its slabs and
 * page cache live across calls as a real program's threads do. The main thread hands it blocks
 * to free (remote frees into the main thread's slabs and pages) and asks it to allocate and
 * reallocate (blocks the main thread later frees remotely). Commands run in the order given,
 * so an input decides exactly which blocks each thread frees; only the interleaving of the
 * worker's frees with the main thread's own calls is left to timing.
 */
#ifndef NP_FUZZ_WORKER_H
#define NP_FUZZ_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "fuzz_block.h"

void np_fz_worker_start(void);
/* Hands b to the worker, which verifies and frees it; returns at once. b becomes empty. */
void np_fz_worker_free(struct np_fz_block *b);
/* The worker allocates (malloc) or reallocates b, checked as the main thread would; waits. */
void np_fz_worker_malloc(struct np_fz_block *b, size_t n, uint64_t seed);
void np_fz_worker_realloc(struct np_fz_block *b, size_t n, uint64_t seed);
/* The worker's home node (numa_page_set_home_node; -1: follow its CPU again); waits. */
void np_fz_worker_home(int node);
/* Waits until every command so far has run. */
void np_fz_worker_sync(void);
/* As np_fz_worker_sync, and the worker trims (its empty slabs and page cache go back: only
 * their owner sweeps them) and folds its private counters into the statistics, so an exact
 * read on the main thread then sees every byte and page it allocated and freed. */
void np_fz_worker_drain(void);

#endif /* NP_FUZZ_WORKER_H */
