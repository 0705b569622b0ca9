/*
 * init.h — process start-up, fork and exit of the allocator. The first allocation of the process
 * runs np_init() (as mimalloc does), so that no malloc, however early (the constructors of the
 * program's own libraries run before ours), meets an allocator that is not ready; the library's
 * constructor and the first public call that needs it run it too when nothing allocated yet.
 * np_init: options, topology (hwloc), statistics, pools, the thread-exit key and the fork
 * handlers. While it runs, the mallocs of the initialising thread (hwloc's, the C library's)
 * and of any other thread come from the bootstrap allocator, so nothing recurses into an
 * allocator that is not ready, and no thread waits for another inside malloc.
 */
#ifndef NP_INIT_H
#define NP_INIT_H

#include <stdbool.h>

#include "internal.h"
#include "malloc/ready.h"

/* Initialises the allocator once; concurrent and re-entrant calls return at once. */
void np_init(void);
/* For malloc's slow path: initialises if nobody has. True when the allocator is ready; false
 * when the caller must use the bootstrap allocator (this thread is inside np_init, or another
 * thread is initialising: it is not waited for). */
bool np_init_for_malloc(void);
/* For public calls other than malloc: initialises if nobody has, waits for another thread's
 * initialisation to finish; false only when called from inside initialisation itself. */
bool np_ensure_ready(void);
/* The thread-exit destructor (a pthread key, given the thread's struct): the thread's slabs are
 * handed over (empty ones give their pages back, the others become orphans of their node),
 * then its page cache and statistics, and its struct is recycled (np_ring_leave). Allocations
 * the thread makes afterwards (other destructors) get no state again: no destructor round may
 * be left to release it (alloc.c, page_api.c). */
void np_thread_exit_hook(void *arg);

#endif
