/*
 * free.c — every free the fast path of alloc.h does not finish: a block of another thread's
 * slab (a lock-free push on its remote list, and the claim of a full slab its owner let go;
 * or, for a slab an exited thread left, its adoption by the freeing thread: ring.c),
 * a block of our own that the fast path refused (it looks free: a double free is confirmed
 * before it is reported), a block in a later step of a larger slab (found from that
 * step's slot), page runs, chunks of their own, start-up memory, and what is none of those
 * (reported, then abort); and C23's sized frees, which check the size and alignment they are
 * given. Pointers are decoded once (ptr.h) and the result passed down. No system call but in
 * the pools' purges (errno is kept).
 */
#include "malloc/alloc.h"

#include <errno.h>

#include "log.h"
#include "malloc/bootstrap.h"
#include "malloc/large.h"
#include "malloc/ptr.h"
#include "malloc/ring.h"
#include "pcp/pcp.h"

/* A thread that only frees (a consumer) never folds the fast path's byte counts in a malloc
 * slow path: it folds them every this many bytes. */
#define REMOTE_FOLD_BYTES (64 * 1024)

NP_COLD static void invalid(const char *what, uintptr_t a)
{
	np_fatal("free: %s %p", what, (void *)a);
}

/* The counter of th's bytes in use that a free of a block of node's memory counts in: the fast
 * path's, in np_tls, when node is th's first choice. */
NP_INLINE int64_t *in_use_counter(struct np_thread *th, unsigned node)
{
	return NP_LIKELY(node == np_tls.count_node) ? &np_tls.in_use : &th->in_use[node];
}

/* After th's free of a block of another thread's slab s (or nobody's), what is seldom due:
 * th's byte counts folded, the remote_free event when the memory is not near th, the owner
 * told that its next sweep has work (the remote list was empty: `first`; thread structs are
 * recycled, never unmapped, so a stale owner only costs that thread one sweep) or, for
 * nobody's slab, the next orphan sweep (np_slab_note_orphan_free), and a slab
 * the free claimed handed on. The thread that let go of a claimed slab takes it back (its own
 * free: its later frees of the slab's recent blocks are local); anyone else hands it to the
 * node's orphans, for the next thread near it that runs out of blocks of this class
 * (xmalloc's consumer only frees: adopting made every slab's pages travel from consumer to
 * producer through the pools). A claimer that allocated the class used to adopt it without
 * needing it: in larson/2 it then never ran out, never let a slab go, and its ring held
 * megabytes of free blocks per class while the other thread made hundreds of new slabs
 * (docs/design.md has the numbers). th is NULL for a thread without state: then its counts
 * went to the statistics directly.
 * node: s's, read before the push. Once the push is made, s's header is not read again unless
 * the free claimed it: the push may have left s empty, and whoever collects it then (its owner,
 * a sweep, the orphans' decay) may release it and make a new slab of its run, whose header a
 * read here would see half made (ThreadSanitizer found it; unit test
 * remote_free_reads_the_slab_before_its_push). A claimed slab stays until it is orphaned below. */
NP_NOINLINE NP_COLD static void after_remote_free(struct np_thread *th, struct np_slab *s, unsigned node,
						   struct np_thread *owner, bool first, bool claimed)
{
	if (th) {
		if (*in_use_counter(th, node) < -(int64_t)REMOTE_FOLD_BYTES)
			np_thread_fold_bytes(th);
		if (!np_pcp_near(&th->pcp, node))
			np_vmstat_add(&th->st, (int)node, NUMA_PAGE_STAT_remote_free, 1);
	}
	if (first && owner == NP_NO_OWNER)
		np_slab_note_orphan_free(); /* an orphan's (a floating slab claimed here is orphaned
					     * below, which notes it too) */
	else if (first && owner != NULL && owner != th && !__atomic_load_n(&owner->remote_pending, __ATOMIC_RELAXED))
		__atomic_store_n(&owner->remote_pending, 1, __ATOMIC_RELAXED);
	if (!claimed)
		return;
	/* The claiming CAS read the FLOATING that np_slab_float's release CAS wrote after setting
	 * floater: this fence makes that store visible here on every architecture (the CAS
	 * itself is release only). */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	struct np_thread *floater = __atomic_load_n(&s->floater, __ATOMIC_RELAXED);
	if (th && floater == th && np_pcp_near(&th->pcp, s->node) && th->ring[s->cls]) {
		np_ring_take_back(th, s);
		return;
	}
	/* A claimed slab was FLOATING, so floater is the thread that let it go (np_slab_float
	 * sets it before the state): told when another thread's free took it (np_ring_periodic). */
	if (floater != th)
		__atomic_fetch_add(&floater->claimed_away, 1, __ATOMIC_RELAXED);
	np_slab_orphan(s);
}

/* What np_free_slab_slow leaves out of its common case, out of line so that the common case
 * saves no register for it: a block of our own the fast path refused (it looks free: a double
 * free is confirmed before it is reported), a pointer that is not a block start, a block
 * that looks free or carries a remote free's mark (another thread's double free, confirmed by
 * the careful racy walk), a block of a slab that hides pages (np_slab_fast_end), and a thread
 * with no state yet or any more; and a block of a slab whose node is not the thread's first
 * choice (counted in the thread struct, not in np_tls). */
NP_NOINLINE NP_COLD static void free_slab_rare(struct np_slab *s, uintptr_t a)
{
	struct np_thread *th = np_thread_for_free();
	uint64_t i = np_slab_index(s, a);
	if (i >= s->end)
		invalid("invalid pointer (not the start of a block)", a);
	/* A free block on a page trim gave back (slab_trim.c): its first word reads as zeros
	 * there, so it does not look free, and taken, it was handed out twice (a hostile test).
	 * Every free of a slab that hides pages comes here (fast_end). */
	if (NP_UNLIKELY(np_slab_is_hidden(s, a)))
		invalid("double free of", a);
	struct np_thread *owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
	if (owner == th && th) {
		/* Looks free: confirm before reporting. */
		if (np_slab_looks_free(s, a) && np_slab_confirm_free(s, a, th))
			invalid("double free of", a);
		np_free_by_owner(s, a, i); /* it only looked free, or came decoded (realloc to 0) */
		return;
	}
	/* Another thread's slab (or nobody's): a block that looks free, or keeps the mark of a
	 * remote free, may be on its owner's lists already, freed by the owner or another thread.
	 * The owner may be changing them, so the walk is the careful racy one (no link followed
	 * unchecked); found means free. */
	if ((np_slab_looks_free(s, a) || np_slab_has_mark(s, a)) && np_slab_confirm_free(s, a, th))
		invalid("double free of", a);
	/* On its owner's cache (the tag is keyed by a secret and a's address: only a free
	 * writes it, and malloc wipes it). */
	if (np_cache_looks_cached(a))
		invalid("double free of", a);
	unsigned node = s->node;
	if (th) {
		*in_use_counter(th, node) -= s->block;
	} else {
		np_vmstat_add(NULL, (int)node, NUMA_PAGE_STAT_malloc_in_use, -(long)s->block);
		if (np_pcp_is_remote(NULL, (int)node))
			np_vmstat_add(NULL, (int)node, NUMA_PAGE_STAT_remote_free, 1);
	}
	bool first;
	bool claimed = np_slab_push_remote(s, a, i, &first);
	after_remote_free(th, s, node, owner, first, claimed);
}

/* The common remote free's count, CAS push and one test of everything seldom due. */
NP_INLINE void push_home(struct np_thread *th, struct np_slab *s, struct np_thread *owner, uintptr_t a, uint64_t i)
{
	/* Both tests, no branch between them (a branch put the second one out of line). */
	unsigned node = s->node; /* read before the push: see after_remote_free */
	bool seldom = ((np_tls.in_use -= s->block) < -(int64_t)REMOTE_FOLD_BYTES) | !((th->pcp.near >> node) & 1);
	bool first;
	bool claimed = np_slab_push_remote(s, a, i, &first);
	if (NP_UNLIKELY(seldom || claimed ||
			(first && !__atomic_load_n((uintptr_t)owner <= (uintptr_t)NP_NO_OWNER ? &np_slab_orphans_changed
											       : &owner->remote_pending,
						   __ATOMIC_RELAXED))))
		after_remote_free(th, s, node, owner, first, claimed);
}

/* th's free of block a (index i) of s, an orphan that its owner's exit or move left: th adopts
 * it when np_ring_adopt_on_free says so, and then the free is the owner's, as are its later
 * ones of s's blocks; else the common remote free. */
NP_NOINLINE static void free_into_exit_orphan(struct np_thread *th, struct np_slab *s, uintptr_t a, uint64_t i)
{
	if (np_ring_adopt_on_free(th, s))
		np_slab_free_own(s, a, i);
	else
		push_home(th, s, NP_NO_OWNER, a, i);
}

void np_free_slab_slow(struct np_slab *s, uintptr_t a, uint64_t i)
{
	/* The common case, another thread's block of this thread's first-choice node and nothing
	 * odd about it: the index, the owner, the two double-free hints, the byte count in np_tls,
	 * one CAS, and one test of everything seldom due (after_remote_free). The rest is out of
	 * line (tail calls), so this part saves (nearly) no register. */
	struct np_thread *th = np_tls.self;
	struct np_thread *owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
	/* The remote list's line is nearly always in the owner's cache (its collect took it)
	 * or another freer's: its fetch overlaps the checks before the CAS (issue 15: the CAS
	 * was 80% of this function's samples in larson/2). */
	NP_PREFETCH_WRITE(&s->thread_free);
	uint64_t end; /* fast_end, for both tests (np_free_is_own) */
	if (NP_UNLIKELY(!th || owner == th || i >= (end = np_slab_fast_end(s)) || s->node != np_tls.count_node ||
			np_slab_looks_free_below(s, a, end) || np_slab_has_mark(s, a) || np_cache_looks_cached(a))) {
		free_slab_rare(s, a);
		return;
	}
	if (NP_UNLIKELY(owner == NP_NO_OWNER) && np_slab_left_by_exit(s)) {
		free_into_exit_orphan(th, s, a, i);
		return;
	}
	push_home(th, s, owner, a, i);
}

void np_free_decoded(const struct np_ptr *d, void *p)
{
	int saved = errno;
	switch (d->kind) {
	case NP_PTR_SMALL:
		np_free_slab_slow(d->slab, (uintptr_t)p, d->index);
		break;
	case NP_PTR_RUN:
		np_large_free_run(d->page, np_thread_for_free());
		break;
	case NP_PTR_CHUNK:
		np_large_free_chunk(d->chunk, np_thread_for_free(), true);
		break;
	case NP_PTR_BOOT:
		np_bootstrap_free(p);
		break;
	case NP_PTR_BAD:
		np_ptr_invalid("free", true, d, p);
	}
	errno = saved;
}

void np_free_slow(void *p)
{
	if (!p)
		return;
	/* A block in a later step of a slab longer than a step (classes above 16 KiB): its slab
	 * from the step's slot, whose line the fast path just read, as the fast path would have
	 * done with the slab's own slot. Else the page descriptors (np_ptr_decode: 1.3% of
	 * rptest/1's instructions, 2% of its cache misses, docs/perf-issue15.md section 25). */
	uintptr_t a = (uintptr_t)p;
	if (np_granule_is_start(a)) {
		struct np_slab *s = np_slab_lead(a);
		if (s && np_free_in_slab(s, a))
			return;
	}
	struct np_ptr d;
	np_ptr_decode(p, false, &d);
	np_free_decoded(&d, p);
}

/* C23's free_sized and free_aligned_sized: p freed as free() frees it, once what the sizes
 * say is checked, every misuse reported under the call's name: p not a live block of ours (a
 * double free first, before any size), an alignment that is not a power of two or that p is
 * not on, a size larger than the block. A smaller size is no error: realloc may have shrunk
 * the block in place. The size buys no speed here: free finds a block by its address alone. */
static void free_sized_checked(const char *call, void *p, size_t alignment, size_t size)
{
	if (!p)
		return;
	struct np_ptr d;
	np_ptr_decode(p, false, &d);
	if (d.kind == NP_PTR_BAD)
		np_ptr_invalid(call, true, &d, p);
	np_ptr_check_live(call, true, &d, p);
	if (!np_is_power_of_two(alignment))
		np_fatal("%s: alignment %zu is not a power of two", call, alignment);
	if ((uintptr_t)p & (alignment - 1))
		np_fatal("%s: %p is not aligned to %zu", call, p, alignment);
	size_t usable = np_ptr_usable(&d, p);
	if (size > usable)
		np_fatal("%s: size %zu is larger than the block at %p (%zu usable bytes)", call, size, p, usable);
	np_free_decoded(&d, p);
}

/* The common case as free's fast path takes it: a live block of the calling thread's slab of
 * at least size bytes. False for anything else, which free_sized_checked decodes; a block on
 * the thread's cache (classes above 2 KiB) too, which free's path would report as a double
 * free under free's name. */
static inline bool free_sized_own(void *p, size_t size)
{
	uintptr_t a = (uintptr_t)p;
	if (!np_granule_is_start(a))
		return false;
	struct np_slab *s = np_slab_at_step(p);
	struct np_thread *self = np_tls.self, *owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
	uint64_t i = np_slab_index(s, a);
	if (size > s->block || !np_free_is_own(s, a, i, self, owner) ||
	    (s->cls >= NP_CACHE_FIRST && np_cache_looks_cached(a)))
		return false;
	np_free_by_owner(s, a, i);
	return true;
}

void numa_page_free_sized(void *p, size_t size)
{
	if (!free_sized_own(p, size))
		free_sized_checked("free_sized", p, 1, size);
}

void numa_page_free_aligned_sized(void *p, size_t alignment, size_t size)
{
	bool aligned = np_is_power_of_two(alignment) && !((uintptr_t)p & (alignment - 1));
	if (!aligned || !free_sized_own(p, size))
		free_sized_checked("free_aligned_sized", p, alignment, size);
}
