/*
 * cache.c — what the thread cache of cache.h does out of line: its secrets and caps, a push
 * that finds the stack full, a block of another node or a second free, a corrupt stack, and
 * the blocks' way home to their slabs (flush and aging).
 */
#include "malloc/cache.h"

#include "log.h"
#include "malloc/alloc.h"
#include "malloc/ptr.h"
#include "os.h"

uint8_t np_cache_cap[NP_CACHE_CLASSES];
uintptr_t np_cache_tag_key, np_cache_link_key;

void np_cache_init(void)
{
	uint64_t r[2];
	np_os_random(r, sizeof r);
	np_cache_tag_key = (uintptr_t)r[0];
	np_cache_link_key = (uintptr_t)r[1];
	for (unsigned k = 0; k < NP_CACHE_CLASSES; k++) {
		uint32_t n = NP_CACHE_CLASS_BYTES / np_class_size[NP_CACHE_FIRST + k];
		np_cache_cap[k] = (uint8_t)(n < 1 ? 1 : n > NP_CACHE_MAX_BLOCKS ? NP_CACHE_MAX_BLOCKS : n);
	}
}

/* Cached block b of class c goes back to its slab: uncounted from the cache (its slab counts
 * its free from now on), its tag wiped, and freed as the owner's free when the thread still
 * owns the slab, else as any other thread's (the slab floated and was claimed meanwhile). */
static void go_home(unsigned c, uintptr_t b)
{
	np_tls.in_use += np_class_size[c];
	np_slab_clear_block(b);
	/* The slab by address, as free finds it: the slot of b's step, or the slab that
	 * step continues (np_slab_lead); else decoded. */
	struct np_slab *s = np_slab_at_step((const void *)b);
	struct np_thread *owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
	struct np_slab *lead = owner == NULL ? np_slab_lead(b) : NULL;
	if (lead) {
		s = lead;
		owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
	}
	uint64_t i = np_slab_index(s, b);
	if (owner == NULL || s->cls != c || i >= s->end) {
		struct np_ptr d;
		np_ptr_decode((const void *)b, false, &d);
		np_assert(d.kind == NP_PTR_SMALL && d.slab->cls == c);
		s = d.slab;
		i = d.index;
		owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
	}
	if (owner == np_tls.self)
		np_slab_free_own(s, b, i);
	else
		np_free_slab_slow(s, b, i);
}

/* The next block after b on a stack, b's tag checked first; 0 at the end, and 1 when b is
 * not what a push left (a write to freed memory). */
static uintptr_t next_of(uintptr_t b)
{
	return np_cache_sound(b) ? np_cache_code(b, ((const uintptr_t *)b)[1]) : 1;
}

/* b: the stack's entry that failed its check: an address in our memory without a tag (a freed
 * block written after its free, or a link written to point there), or a link out of our
 * memory (a write into the block above it, whose address the pop did not keep). */
static void report_corrupt(unsigned k, uintptr_t b)
{
	static int reported;
	np_vmstat_add(NULL, np_tls.count_node, NUMA_PAGE_STAT_freelist_corrupt, 1);
	if (__atomic_exchange_n(&reported, 1, __ATOMIC_RELAXED))
		return;
	if (np_granule_is_start(b))
		np_warn("malloc: the thread cache of %u-byte blocks is corrupt: %p has no tag (a freed "
			"block written after its free, or a link written to point there); its blocks from "
			"there on abandoned (reported once)",
			np_class_size[NP_CACHE_FIRST + k], (void *)b);
	else
		np_warn("malloc: the thread cache of %u-byte blocks is corrupt: a link to %p, not a "
			"block of ours (a write to a freed block?); its blocks from there on abandoned "
			"(reported once)", np_class_size[NP_CACHE_FIRST + k], (void *)b);
}

/* The blocks of stack k from b on go home (b included); a corrupt one ends the walk (it and
 * the blocks behind it stay counted in their slabs, never handed out again). */
static void send_home_from(unsigned k, uintptr_t b)
{
	while (b) {
		uintptr_t next = next_of(b);
		if (next == 1) {
			report_corrupt(k, b);
			return;
		}
		go_home(NP_CACHE_FIRST + k, b);
		b = next;
	}
}

void *np_cache_corrupt(unsigned k, size_t size)
{
	report_corrupt(k, np_tls.cache[k]);
	np_tls.cache[k] = 0;
	np_tls.cache_n[k] = 0;
	return np_malloc_slow(size);
}

static void flush_class(unsigned k)
{
	uintptr_t b = np_tls.cache[k];
	np_tls.cache[k] = 0;
	np_tls.cache_n[k] = 0;
	send_home_from(k, b);
}

void np_cache_put_slow(struct np_slab *s, uintptr_t a, uint64_t i)
{
	if (((uintptr_t *)a)[0] == np_cache_tag(a))
		/* Only a free writes the tag (it is keyed by a secret and a's address, and malloc
		 * wipes it): a is freed already, on a thread's stack. */
		np_fatal("free: double free of %p", (void *)a);
	unsigned k = s->cls - NP_CACHE_FIRST;
	if (np_tls.cache_streak >= NP_CACHE_STREAK) {
		/* Frees without a malloc of these classes: the cache goes home once (one past the
		 * limit marks it done), and frees go to the slabs until the next such malloc. */
		if (np_tls.cache_streak == NP_CACHE_STREAK) {
			np_cache_flush();
			np_tls.cache_streak = NP_CACHE_STREAK + 1;
		}
		np_slab_free_own(s, a, i);
		return;
	}
	/* Another node's block, or no cache yet (np_cache_init not run: a unit test's piecemeal
	 * start-up): the slab's list. */
	if (s->node != np_tls.count_node || !np_cache_cap[k]) {
		np_slab_free_own(s, a, i);
		return;
	}
	/* Full: the newer half stays (it is what the next mallocs want), the older goes home. The
	 * walk to the cut checks every block it passes (next_of of a bad entry, 1 or 0, is 1); a
	 * bad one sends the whole stack home, which reports it. */
	unsigned keep = np_tls.cache_n[k] / 2;
	uintptr_t last = np_tls.cache[k], older = 1;
	if (keep) {
		for (unsigned n = 1; n < keep; n++)
			last = next_of(last);
		older = next_of(last);
	}
	if (older == 1) {
		flush_class(k);
	} else {
		((uintptr_t *)last)[1] = np_cache_code(last, 0);
		np_tls.cache_n[k] = (uint8_t)keep;
		send_home_from(k, older);
	}
	np_cache_put(s, a, i);
}

void np_cache_flush(void)
{
	for (unsigned k = 0; k < NP_CACHE_CLASSES; k++)
		if (np_tls.cache[k])
			flush_class(k);
	np_tls.cache_popped = 0;
}

void np_cache_age(void)
{
	for (unsigned k = 0; k < NP_CACHE_CLASSES; k++)
		if (np_tls.cache[k] && !(np_tls.cache_popped & (1u << k)))
			flush_class(k);
	np_tls.cache_popped = 0;
}
