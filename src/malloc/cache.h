/*
 * cache.h — a thread's cache of the blocks it freed of its own slabs, for the classes above
 * 2 KiB (NP_CACHE_FIRST on): per class a stack in np_tls, last freed first, as tcmalloc's
 * thread cache. A free of such a block of the thread's first-choice node pushes it; malloc of
 * the class pops it, before its slab's list. Why only these classes: their slabs hold 8-25
 * blocks, so a thread's blocks of one class spread over several slabs and a free mostly lands
 * in one that is not the current one; malloc then walked the ring to reach them, and handed
 * out blocks freed long before, cold in the cache (rptest: one slab miss in three mallocs of
 * these classes, docs/perf-issue15.md section 19). The smaller classes keep their slabs'
 * lists (a free there mostly lands in the current slab, and the fast paths stay as they are).
 *
 * A cached block stays counted in its slab (`used`), so the slab is not given back under it,
 * and counts free in the statistics (np_tls.in_use less its bytes) until malloc hands it out.
 * Its two first words: a tag keyed by a process secret (np_cache_tag), so that a second free
 * finds it, and the link to the next one, encoded with another. The pop checks both the block
 * (ours: the granule map; its tag) before it reads the link: a write to a freed block is
 * reported and the class's stack dropped, never followed. Bounded: at most
 * NP_CACHE_CLASS_BYTES of blocks a class (1 to NP_CACHE_MAX_BLOCKS); a push beyond it sends
 * the older half home first. Emptied into the slabs at thread exit, by trim, when the thread
 * moves to another node, and for a class that no malloc took from between two periodic points
 * of the ring (cache.c). And a run of NP_CACHE_STREAK pushes without a malloc of these classes (the
 * thread frees what it made, maybe to go idle) sends every class home and stops caching until
 * the next such malloc: a cached block keeps its whole slab in use, so blocks cached from slabs the thread
 * emptied otherwise kept each of them (a review: 16 MiB held by an idle thread that had freed
 * 64 slabs' worth of twelve classes, against 1.1 MiB before the cache; nothing but that thread
 * could send them home).
 */
#ifndef NP_CACHE_H
#define NP_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "malloc/sizeclass.h"
#include "malloc/slab.h"
#include "malloc/thread.h"
#include "pool/chunk.h"

#define NP_CACHE_CLASSES (NP_NCLASSES - NP_CACHE_FIRST)
#define NP_CACHE_CLASS_BYTES (128 * 1024)
#define NP_CACHE_MAX_BLOCKS 64
#define NP_CACHE_STREAK 128

/* Blocks a class's stack may hold (np_cache_init). */
extern NP_HIDDEN uint8_t np_cache_cap[NP_CACHE_CLASSES];
extern NP_HIDDEN uintptr_t np_cache_tag_key, np_cache_link_key;

/* Draws the secrets and sets the caps; at start-up, before the first allocation. */
void np_cache_init(void);

/* The first word of cached block b. */
NP_INLINE uintptr_t np_cache_tag(uintptr_t b)
{
	uintptr_t x = b ^ np_cache_tag_key;
	return ((x << 23) | (x >> 41)) + np_slab_secret;
}

/* The second word of cached block b, whose successor on its stack is next (0: none); and,
 * being an xor, the successor of b whose second word is next. */
NP_INLINE uintptr_t np_cache_code(uintptr_t b, uintptr_t next)
{
	return next ^ ((b << 29) | (b >> 35)) ^ np_cache_link_key;
}

/* True when b is what a push left on a stack: a block of ours (the granule map) with its tag.
 * Checked before b's link is read. */
NP_INLINE bool np_cache_sound(uintptr_t b)
{
	return np_granule_is_start(b) && ((const uintptr_t *)b)[0] == np_cache_tag(b);
}

/* True when b's first word is a cached block's tag: b is on a thread's cache. Only a free writes
 * the tag (keyed by a secret and b's address) and malloc wipes it, so it needs no confirming
 * walk: a live block holds it only if the program wrote that very value. */
NP_INLINE bool np_cache_looks_cached(uintptr_t b)
{
	return __atomic_load_n((const uintptr_t *)b, __ATOMIC_RELAXED) == np_cache_tag(b);
}

/* The head of class k's stack is not what a push left there: not a block of ours, or one
 * without its tag (a write to a freed block changed it, or the link in the block above it).
 * Reported once, counted, the stack dropped (its blocks stay counted in their slabs: lost,
 * never handed out). Then malloc's slow path serves size. */
NP_NOINLINE NP_COLD void *np_cache_corrupt(unsigned k, size_t size);

/* malloc's pop of block b, the head of class c's stack, for a request of size bytes. */
NP_INLINE void *np_cache_pop(unsigned c, uintptr_t b, size_t size)
{
	unsigned k = c - NP_CACHE_FIRST;
	uintptr_t *w = (uintptr_t *)b;
	if (NP_UNLIKELY(!np_cache_sound(b)))
		return np_cache_corrupt(k, size);
	uintptr_t next = np_cache_code(b, w[1]);
	np_tls.cache[k] = next;
	/* As the slab pop: the next malloc of the class reads that block's first line. */
	__builtin_prefetch((const void *)next, 1);
	np_tls.cache_n[k]--;
	np_tls.cache_popped |= 1u << k;
	np_tls.in_use += np_class_size[c];
	np_tls.requested += size;
	np_slab_clear_block(b);
	if (np_config_debug >= 1) /* junk: reads of uninitialised memory show */
		__builtin_memset((void *)b, 0xa5, np_class_size[c]);
	return (void *)b;
}

/* A push the inline one does not make: the stack full (its older half goes home first), a
 * block of another node, the streak of pushes long (the cache home, the block to its slab),
 * or one that already carries a tag (a double free: aborts). */
NP_NOINLINE void np_cache_put_slow(struct np_slab *s, uintptr_t a, uint64_t i);

/* The owner's free of block a (index i) of s, a slab of a cached class, its checks done. */
NP_INLINE void np_cache_put(struct np_slab *s, uintptr_t a, uint64_t i)
{
	unsigned k = s->cls - NP_CACHE_FIRST;
	uintptr_t *w = (uintptr_t *)a;
	if (NP_UNLIKELY(np_tls.cache_n[k] >= np_cache_cap[k] || s->node != np_tls.count_node ||
			np_tls.cache_streak >= NP_CACHE_STREAK || w[0] == np_cache_tag(a))) {
		np_cache_put_slow(s, a, i);
		return;
	}
	if (np_config_debug >= 1) /* junk: use after free shows */
		__builtin_memset((void *)(a + 2 * sizeof(uintptr_t)), 0xdf, s->block - 2 * sizeof(uintptr_t));
	w[0] = np_cache_tag(a);
	w[1] = np_cache_code(a, np_tls.cache[k]);
	np_tls.cache[k] = a;
	np_tls.cache_n[k]++;
	np_tls.cache_streak++;
	np_tls.in_use -= s->block;
}

/* The calling thread's cached blocks go home to their slabs: every class's (np_cache_flush),
 * or those of the classes no malloc took from since the last np_cache_age (the ring's periodic
 * point). */
void np_cache_flush(void);
void np_cache_age(void);

#endif /* NP_CACHE_H */
