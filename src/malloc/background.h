/*
 * background.h — the opt-in background thread (NUMAPAGE_BACKGROUND_THREAD, as jemalloc's
 * background_thread). The decay gives freed memory back only when some thread of the program
 * makes an allocator call that looks at it: a process that goes idle after a burst (a
 * PostgreSQL backend after a sort: 180 MB held) keeps it all. With the option on, one thread
 * of the library's wakes a few times a second and makes the pools' and huge caches' decay look
 * (np_pool_decay), so that memory goes back on time whatever the program does. It cannot reach
 * what the program's threads hold themselves (their page caches and slabs).
 *
 * It starts at the first free of a page run or a huge block after the option is on (never at
 * start-up, never while the allocator holds a lock), with every signal blocked, and it never
 * allocates. It ends when the option is turned off. A fork's child has none until its own next
 * such free.
 */
#ifndef NP_BACKGROUND_H
#define NP_BACKGROUND_H

#include <stdbool.h>

#include "internal.h"
#include "options.h"

/* True on the calling thread while the library creates its own thread: thread_start.c's
 * pthread_create then neither places it nor gives it a state. */
extern __thread bool np_background_creating;

/* Starts the thread unless it runs (or could not be created). For a free's slow path, after
 * the block is back and no lock is held: creating a thread allocates (the C library's). */
void np_background_start(void);

/* A large free's check: one relaxed load while the option is off. */
NP_INLINE void np_background_check(void)
{
	if (NP_UNLIKELY(np_opt_load(background_thread)))
		np_background_start();
}

/* fork()'s child: the thread was not copied. */
void np_background_atfork_child(void);

#endif
