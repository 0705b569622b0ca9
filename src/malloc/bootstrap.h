/*
 * bootstrap.h — memory for the allocations made while the allocator initialises: the first
 * malloc of the process runs np_init, and what hwloc and the C library allocate inside it (and
 * what other threads ask for meanwhile) cannot come from pools that do not exist yet. Small
 * blocks come from size classes carved out of a static arena, then from mapped regions, and go
 * back on their class's free list when freed; large or very aligned blocks get a mapping of
 * their own, unmapped when freed. Unlimited (regions are mapped as needed) and reusable; one
 * spin lock. Each block carries a 16-byte header just before it. Invariants: see
 * np_bootstrap_check().
 */
#ifndef NP_BOOTSTRAP_H
#define NP_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"

/* size bytes aligned to align (a power of two); NULL (errno untouched) when out of memory. */
void *np_bootstrap_alloc(size_t size, size_t align);
/* What p is to the bootstrap allocator. It is never dereferenced unless it lies in one of
 * its regions. */
enum np_boot_state {
	NP_BOOT_NONE,     /* not in any bootstrap region */
	NP_BOOT_LIVE,     /* the start of a block handed out and not freed */
	NP_BOOT_FREED,    /* the start of a block already freed */
	NP_BOOT_INTERIOR, /* inside a region, but no block start */
};
enum np_boot_state np_bootstrap_state(const void *p);
/* The lowest start and the highest end of every region there ever was (none: UINTPTR_MAX, 0). */
extern uintptr_t np_bootstrap_span_lo, np_bootstrap_span_hi;
/* p may be the bootstrap's (np_bootstrap_state tells): inline, for calloc's every block. */
NP_INLINE bool np_bootstrap_may_own(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	return a >= __atomic_load_n(&np_bootstrap_span_lo, __ATOMIC_RELAXED) &&
	       a < __atomic_load_n(&np_bootstrap_span_hi, __ATOMIC_RELAXED);
}
/* Frees p when it lies in a bootstrap region: back on its class's list, or unmapped; true.
 * False (nothing done) for memory that is not the bootstrap's. A second free, or a pointer
 * into a bootstrap region that is no block start, is reported and aborts. */
bool np_bootstrap_free(void *p);
/* np_bootstrap_state(p) == NP_BOOT_LIVE. */
bool np_bootstrap_owns(const void *p);
/* Usable size of a bootstrap block. */
size_t np_bootstrap_size(const void *p);
/* After start-up: when every block was freed (the usual case: hwloc's discovery frees all it
 * took), the allocator starts afresh: regions mapped past the static arena are unmapped and
 * the arena's touched pages go back to the kernel (about 56 KiB resident in every process).
 * Returns the bytes given back. A later bootstrap allocation (another thread's, during this very
 * moment) finds a fresh arena. */
size_t np_bootstrap_release(void);
/* True when a request of size bytes at align comes from the allocator's size classes (no
 * mapping of its own): what a thread whose exit hook ran is served from here (alloc.c). */
bool np_bootstrap_fits(size_t size, size_t align);
/* Fork: the lock is held across fork (a thread past its exit hook may be inside it at any
 * time), released in the parent, made anew in the child. */
void np_bootstrap_atfork_prepare(void);
void np_bootstrap_atfork_parent(void);
void np_bootstrap_atfork_child(void);
/* Bytes handed out and not yet freed (for tests and verbose output). */
size_t np_bootstrap_used(void);
/* Walks the free lists and regions; NULL when sound, else what is wrong. */
const char *np_bootstrap_check(void);

#endif
