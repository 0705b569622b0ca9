/*
 * alloc.h — the malloc and free fast paths, inline so that both the numa_page_* entry points
 * (alloc.c, posix.c) and the libc names (override.c) get them without a call, and what the
 * files of the malloc family share.
 *
 * Call tree:
 *   malloc(n) -> np_malloc_fast: class, pop np_tls.cur[c]->free, its link checked
 *              [hit: 37 instructions with gcc 12 -O2, no branch at a list's end; the byte
 *              counts are the slab's `used` and one add to its `requested` (np_ring_count);
 *              a decrement of its `beat` makes a slab miss due (NP_SLAB_BEAT)]
 *     miss  -> np_malloc_slow (alloc.c): thread init, the slab ring (ring.c: the current
 *              slab's remote frees, other slabs, orphans, a new slab from the page cache),
 *              large blocks (large.c)
 *   free(p) -> np_free_fast: granule byte, slab header of p's 128 KiB step, owner == me,
 *              slot and double-free checks, push on free (the next malloc of the class
 *              takes it), used-- [50 instructions]
 *     another thread's slab (or refused) -> np_free_slab_slow (free.c): double-free hints,
 *              byte count, one CAS push [~80 instructions]; claims and checks out of line
 *     else  -> np_free_slow (free.c): a block past the first step of a larger slab by its
 *              step's slot (np_slab_lead), as above; else the pointer decoded once (ptr.c):
 *              page runs, chunks, start-up memory, errors
 * Neither fast path takes a lock, makes a system call or uses an atomic read-modify-write.
 */
#ifndef NP_ALLOC_H
#define NP_ALLOC_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "malloc/cache.h"
#include "malloc/sizeclass.h"
#include "malloc/slab.h"
#include "malloc/thread.h"
#include "pool/chunk.h"

struct np_ptr;

NP_NOINLINE void *np_malloc_slow(size_t size);
/* A block of small class c for a request of size bytes after the fast path found none: a moved
 * thread re-homed, then its ring (np_ring_alloc); counted in the slab that served it. NULL when
 * no memory is left (errno untouched). */
void *np_malloc_class_slow(struct np_thread *th, unsigned c, size_t size);
/* The fast path found the link of s->free's head bad: the list ends before the head
 * (np_slab_bad_link), which is not handed out; allocate again. */
NP_NOINLINE NP_COLD void *np_malloc_bad_link(struct np_slab *s, size_t size);
NP_NOINLINE void np_free_slow(void *p);
/* A block of slab s freed by a thread that does not own it, or one the fast path did not
 * take (one that looks free, or is no block start). i: a's index in s
 * as np_slab_index computes it (the caller has it; it may be past the end). */
NP_NOINLINE void np_free_slab_slow(struct np_slab *s, uintptr_t a, uint64_t i);
NP_NOINLINE void np_ring_emptied(struct np_slab *s);
/* Frees p, already decoded (realloc has done it). */
void np_free_decoded(const struct np_ptr *d, void *p);

/* The owner's free of block a (index i) of s, its checks done: at the head of free, where the
 * next malloc of the class takes it; counted by `used` (np_ring_count), and a slab it empties
 * goes to np_ring_emptied. */
NP_INLINE void np_slab_free_own(struct np_slab *s, uintptr_t a, uint64_t i)
{
	np_slab_push_free(s, a, i);
	if (NP_UNLIKELY(--s->used == 0))
		np_ring_emptied(s);
}

/* The owner's free of block a (index i) of s, its checks done: a block above 2 KiB onto the
 * thread's cache (cache.h), any other onto the slab's list, junk-filled first in a debug
 * build so that a use after free shows. The fast path's, and the rare path's for the blocks
 * the fast path refused. */
NP_INLINE void np_free_by_owner(struct np_slab *s, uintptr_t a, uint64_t i)
{
	if (NP_UNLIKELY(s->cls >= NP_CACHE_FIRST)) {
		np_cache_put(s, a, i);
		return;
	}
	if (np_config_debug >= 1)
		memset((void *)(a + sizeof(uintptr_t)), 0xdf, s->block - sizeof(uintptr_t));
	np_slab_free_own(s, a, i);
}

/* errno = ENOMEM, and NULL. */
NP_INLINE void *np_enomem(void)
{
	errno = ENOMEM;
	return NULL;
}

/* The calling thread's state; the process's first allocation initialises the allocator here.
 * NULL while it initialises (the caller serves from the bootstrap allocator), after the
 * thread's exit hook ran (np_tls.exited: likewise), or when no memory is left. */
struct np_thread *np_thread_or_init(void);
/* The calling thread's state for pages it asks for by the page API's rules (page_api.c, and
 * realloc of page-API memory). After its exit hook ran (a thread-specific destructor asking
 * for pages: they must be placed, which the start-up allocator does not do) a state is made
 * for the call alone: *leave, and the caller lets it go (np_ring_leave) once done, since no
 * destructor round may be left to do it. */
NP_INLINE struct np_thread *np_thread_for_pages(bool *leave)
{
	*leave = np_tls.exited && !np_tls.self;
	return *leave ? np_thread_get() : np_thread_or_init();
}
/* The same for an allocation of size bytes at align: NULL after serving it from the bootstrap
 * allocator into *boot (the allocator is starting, or the thread's exit hook ran and the
 * bootstrap's classes hold the block; *boot NULL and errno ENOMEM when even that failed), or
 * when no state can be made (*boot NULL, ENOMEM). *leave: the state is for this allocation
 * alone (a larger block after the exit hook): the caller lets it go (np_ring_leave). */
struct np_thread *np_thread_or_boot(size_t size, size_t align, void **boot, bool *leave);

/* A fast-path malloc from s, the calling thread's current slab of its class: once the slab's
 * beat is over (NP_SLAB_BEAT), the class's next malloc is a slab miss (its current slab is the
 * empty one until np_ring_alloc puts it back). */
NP_INLINE void np_slab_beat_down(struct np_slab *s)
{
	if (NP_UNLIKELY(--s->beat < 0))
		np_tls.cur[s->cls] = &np_slab_empty;
}

/* Block b of slab s, just taken (used counted it) for a request of size bytes: the bytes asked
 * for counted in the slab (np_ring_count takes both into the statistics), the beat counted
 * down, and b handed out. */
NP_INLINE void *np_malloc_counted(struct np_slab *s, uintptr_t b, size_t size)
{
	s->requested += size;
	np_slab_beat_down(s);
	if (np_config_debug >= 1) /* junk: reads of uninitialised memory show */
		memset((void *)b, 0xa5, s->block);
	return (void *)b;
}

NP_INLINE void *np_malloc_fast(size_t size)
{
	/* The table's range first: one compare for nearly every request. */
	unsigned c;
	if (NP_LIKELY(size <= NP_TABLE_MAX))
		c = np_size_class(size); /* the table: the compiler knows the range */
	else if (size <= NP_SMALL_MAX) {
		/* Above 2 KiB: the thread's cache first, the block it freed last (cache.h); the
		 * run of frees without such a malloc ends. */
		c = np_size_class(size);
		np_tls.cache_streak = 0;
		uintptr_t b = np_tls.cache[c - NP_CACHE_FIRST];
		if (b)
			return np_cache_pop(c, b, size);
	} else {
		return np_malloc_slow(size);
	}
	{
		struct np_slab *s = np_tls.cur[c];
		uintptr_t b = s->free;
		if (NP_LIKELY(b != 0)) {
			/* The successor is checked before it becomes the head; a bad link goes out of
			 * line (a tail call: the fast path saves no register for it). The end of the
			 * list is no branch (free becomes 0 by a conditional move): a branch taken at
			 * every list's end would mispredict there, besides the miss that follows. */
			uint64_t link = np_slab_link(s, b);
			if (NP_UNLIKELY(link > s->end))
				return np_malloc_bad_link(s, size);
			/* link <= end here: link - end is negative exactly while blocks follow, so its
			 * sign is the mask that makes free 0 at the end, without a branch. */
			uint64_t more = (uint64_t)((int64_t)(link - s->end) >> 63);
			uintptr_t next = np_slab_block(s, link) & more;
			s->free = next;
			s->free_i = (uint16_t)link;
			/* The next malloc of the class reads that block's link and hands it out:
			 * its line is fetched now, while the program works (a prefetch of 0 at the
			 * list's end is harmless). Most of malloc's samples in rptest/2 were the
			 * wait for the head's line; with this, 2-12% less time on the small-object
			 * workloads (docs/perf-issue15.md, section 9). */
			__builtin_prefetch((const void *)next, 1);
			np_slab_clear_block(b);
			s->used++;
			return np_malloc_counted(s, b, size);
		}
	}
	return np_malloc_slow(size);
}

/* Block a, index i, of s, whose owner is read as `owner`, is a live block of the calling thread
 * (self): free's fast path frees it. Against fast_end, which is end but while s hides pages
 * (then 0, and nothing passes): a link above it is a link above end, so the block does not look
 * free (np_slab_looks_free), and one load serves both tests. A plain read: only once owner is
 * self, and the owner is the only writer of its slab's fast_end. */
NP_INLINE bool np_free_is_own(const struct np_slab *s, uintptr_t a, uint64_t i, const struct np_thread *self,
			      const struct np_thread *owner)
{
	return NP_LIKELY(owner == self) && NP_LIKELY(self != NULL) && NP_LIKELY(i < s->fast_end) &&
	       NP_LIKELY(!np_slab_looks_free_below(s, a, s->fast_end));
}

/* The free of a, read against s as a slab header: done, or false when s has no owner (not a
 * live slab's header). */
NP_INLINE bool np_free_in_slab(struct np_slab *s, uintptr_t a)
{
	struct np_thread *self = np_tls.self, *owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
	uint64_t i = np_slab_index(s, a);
	if (np_free_is_own(s, a, i, self, owner)) {
		np_free_by_owner(s, a, i);
		return true;
	}
	/* Any owner (a thread, or none for an orphan) makes the slot a live slab's header:
	 * another thread's block, or one the checks above refused. */
	if (owner != NULL) {
		np_free_slab_slow(s, a, i);
		return true;
	}
	return false;
}

NP_INLINE void np_free_fast(void *p)
{
	uintptr_t a = (uintptr_t)p;
	/* The slab header by address alone (no page descriptor on the way): it is ours exactly
	 * when its owner is this thread (np_slab_at_step). */
	if (NP_LIKELY(np_granule_is_start(a)) && NP_LIKELY(np_free_in_slab(np_slab_at_step(p), a)))
		return;
	np_free_slow(p);
}

/* Slow-path pieces shared by alloc.c and override.c. */
void *np_alloc_aligned(size_t alignment, size_t size); /* alignment: a power of two */
void *np_realloc(void *p, size_t size);
void *np_calloc(size_t nmemb, size_t size);
size_t np_usable_size(const void *p);

#endif /* NP_ALLOC_H */
