/*
 * bootstrap.h — memory for the allocations made before the allocator is ready: the dynamic
 * loader, the C library and hwloc call malloc while libnumapage initialises. A bump allocator
 * over a static arena (then mapped regions), under a spin lock; each block carries its size in
 * a 16-byte header. Freeing bootstrap memory later is recognised and harmless (it is not
 * reused); realloc of it copies into normal memory.
 */
#ifndef NP_BOOTSTRAP_H
#define NP_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"

/* size bytes aligned to align (a power of two); NULL (errno untouched) when out of memory. */
void *np_bootstrap_alloc(size_t size, size_t align);
bool np_bootstrap_owns(const void *p);
/* Usable size of a bootstrap block. */
size_t np_bootstrap_size(const void *p);
/* Bytes handed out so far (for tests and verbose output). */
size_t np_bootstrap_used(void);

#endif
