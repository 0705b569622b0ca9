/*
 * background.h — the opt-in background thread (NUMAPAGE_BACKGROUND_THREAD, as jemalloc's
 * background_thread). The decay gives freed memory back only when some thread of the program
 * makes an allocator call that looks at it: a process that goes idle after a burst (a
 * PostgreSQL backend after a sort: 180 MB held) keeps it all. With the option on, one thread
 * of the library's wakes a few times a second and makes the pools' and huge caches' decay look
 * (np_pool_decay), so that memory goes back on time whatever the program does. It cannot reach
 * what the program's threads hold themselves (their page caches and slabs).
 *
 * It starts only where the program is outside the allocator and the C library holds none of
 * its own locks: when the library is loaded (its constructor) with the option in the
 * environment, in numa_page_option_set when it turns the option on, and in a fork's child
 * (its fork handler). Never from inside malloc or free: creating a thread takes the C
 * library's stack-cache and TLS locks, and the C library frees memory while it holds them
 * (a thread's dynamic TLS when its cached stack goes). It runs with every signal blocked and
 * never allocates; it ends at its next wake once the option is off.
 */
#ifndef NP_BACKGROUND_H
#define NP_BACKGROUND_H

#include <stdbool.h>

#include "internal.h"

/* True on the calling thread while the library creates its own thread: thread_start.c's
 * pthread_create then neither places it nor gives it a state. */
extern __thread bool np_background_creating;

/* Starts the thread if the option is on and none runs (or failed to start). Only from the
 * places above: the allocator ready, none of its locks held. */
void np_background_start(void);

/* numa_page_option_set's hook (np_options_set_hook): the option named `name` (the table's
 * spelling) was set; BACKGROUND_THREAD turned on starts the thread, and tries again after a
 * failed creation. */
void np_background_option_set(const char *name);

/* fork()'s child: the thread was not copied; a new one starts if the option is on (not after
 * a failed creation in the parent). */
void np_background_atfork_child(void);

#endif
