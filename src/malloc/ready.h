/*
 * ready.h — whether the allocator has initialised: the one fact of start-up that the lower
 * parts of the malloc layer need (init.c above them sets it, once).
 */
#ifndef NP_READY_H
#define NP_READY_H

#include <stdbool.h>

#include "internal.h"

enum { NP_STATE_UNINIT = 0, NP_STATE_INITING = 1, NP_STATE_READY = 2 };
/* Written by np_init only (init.c). */
extern int np_state;

NP_INLINE bool np_is_ready(void)
{
	return __atomic_load_n(&np_state, __ATOMIC_ACQUIRE) == NP_STATE_READY;
}

#endif /* NP_READY_H */
