/*
 * init.h — process start-up, fork and exit of the allocator. The library's constructor (and the
 * first public call that needs it) runs np_init(): options, topology (hwloc), statistics, pools,
 * the thread-exit key and the fork handlers. Until it has finished, malloc is served by the
 * bootstrap arena, so the allocations hwloc, libnuma and the C library make meanwhile can never
 * recurse into an allocator that is not ready, nor deadlock.
 */
#ifndef NP_INIT_H
#define NP_INIT_H

#include <stdbool.h>

#include "internal.h"

enum { NP_STATE_UNINIT = 0, NP_STATE_INITING = 1, NP_STATE_READY = 2 };
extern int np_state;

NP_INLINE bool np_is_ready(void)
{
	return __atomic_load_n(&np_state, __ATOMIC_ACQUIRE) == NP_STATE_READY;
}

/* Initialises the allocator once; concurrent and re-entrant calls return at once. */
void np_init(void);
/* For public calls other than malloc: initialises if nobody has, waits for another thread's
 * initialisation to finish; false only when called from inside initialisation itself. */
bool np_ensure_ready(void);

#endif
