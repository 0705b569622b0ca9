/*
 * posix.c — the members of the malloc family that align or resize: aligned_alloc, memalign,
 * posix_memalign (with their numa_page_* names and np_alloc_aligned behind them), realloc and
 * reallocarray, malloc_usable_size. A pointer given to realloc or malloc_usable_size is
 * decoded once (ptr.h); one that is not a live block of ours aborts with a message.
 */
#include "malloc/alloc.h"

#include <errno.h>
#include <string.h>

#include "malloc/bootstrap.h"
#include "malloc/home.h"
#include "malloc/large.h"
#include "malloc/ptr.h"
#include "malloc/ready.h"
#include "malloc/ring.h"
#include "node/node.h"
#include "pool/huge.h"
#include "pcp/pcp.h"
#include "pool/pool.h"

/* The smallest class whose size is a multiple of alignment (a power of two) and holds size
 * bytes (both at most NP_SMALL_MAX): its blocks are aligned, since slabs start on a step's
 * boundary, 128 KiB. */
static unsigned aligned_class(size_t size, size_t alignment)
{
	unsigned c = np_size_class(size > alignment ? size : alignment);
	while (np_class_size[c] & (alignment - 1))
		c++;
	return c;
}

/* A block of class c for size bytes as malloc's fast path takes one: from the thread's cache of
 * the class (above 2 KiB), else from its current slab; NULL when neither has one. A cache whose
 * top is not sound is left to the class's next malloc to report (its slow path would not
 * align). */
static inline void *aligned_pop(unsigned c, size_t size)
{
	if (c >= NP_CACHE_FIRST) {
		uintptr_t b = np_tls.cache[c - NP_CACHE_FIRST];
		np_tls.cache_streak = 0;
		if (b && np_cache_sound(b))
			return np_cache_pop(c, b, size);
	}
	struct np_slab *s = np_tls.cur[c];
	uintptr_t b;
	if (!s->free || !(b = np_slab_pop(s)))
		return NULL;
	return np_malloc_counted(s, b, size); /* counted in s, which the beat may take off cur */
}

static void *aligned_for(struct np_thread *th, size_t alignment, size_t size)
{
	if (size > NP_MAX_REQUEST || alignment > NP_MAX_REQUEST)
		return np_enomem();
	np_thread_fold_bytes(th);
	if (size <= NP_SMALL_MAX && alignment <= NP_SMALL_MAX) {
		/* np_alloc_aligned tried the fast path's blocks */
		void *p = np_malloc_class_slow(th, aligned_class(size, alignment), size);
		return p ? p : np_enomem();
	}
	size_t dirty;
	void *p = np_large_alloc(th, size, alignment < NP_PAGE_SIZE ? NP_PAGE_SIZE : alignment, -1, &dirty);
	if (!p)
		return np_enomem();
	np_large_count(th, p, size);
	return p;
}

/* np_alloc_aligned when the fast path's blocks did not serve: the thread's state (made by the
 * process's first allocation), its ring, large runs. */
static NP_NOINLINE void *aligned_slow(size_t alignment, size_t size)
{
	void *boot;
	bool leave;
	struct np_thread *th = np_thread_or_boot(size, alignment, &boot, &leave);
	if (!th)
		return boot;
	void *p = aligned_for(th, alignment, size);
	if (leave)
		np_ring_leave(th);
	return p;
}

void *np_alloc_aligned(size_t alignment, size_t size)
{
	if (alignment <= 16)
		return np_malloc_fast(size);
	if (size <= NP_SMALL_MAX && alignment <= NP_SMALL_MAX) {
		void *p = aligned_pop(aligned_class(size, alignment), size);
		if (p)
			return p;
	}
	return aligned_slow(alignment, size);
}

void *numa_page_aligned_alloc(size_t alignment, size_t size)
{
	if (!np_is_power_of_two(alignment)) {
		errno = EINVAL;
		return NULL;
	}
	return np_alloc_aligned(alignment, size);
}

void *numa_page_memalign(size_t alignment, size_t size)
{
	/* glibc rounds a non-power-of-two alignment up to the next power of two, and refuses one
	 * past the largest (EINVAL). */
	if (alignment & (alignment - 1)) {
		if (alignment > SIZE_MAX / 2 + 1) {
			errno = EINVAL;
			return NULL;
		}
		if (alignment > NP_MAX_REQUEST)
			return np_enomem();
		alignment = (size_t)1 << (64 - __builtin_clzll(alignment));
	}
	return np_alloc_aligned(alignment, size);
}

int numa_page_posix_memalign(void **out, size_t alignment, size_t size)
{
	if (alignment < sizeof(void *) || !np_is_power_of_two(alignment))
		return EINVAL;
	int saved = errno;
	void *p = np_alloc_aligned(alignment, size);
	errno = saved;
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

/* A live small block of ours that holds size bytes without wasting half of them: the same
 * checks as free's fast path (a slab's header, a block start), and np_ptr_check_live's quick
 * one (np_ptr_looks_live), else the decoded path judges it. Growing one byte at a time, a decode on every call took
 * 44% of the time (a helper's measurement: 1.87 times mimalloc's). */
static inline bool stays_in_place(const void *p, size_t size)
{
	uintptr_t a = (uintptr_t)p;
	if (!np_granule_is_start(a))
		return false;
	const struct np_slab *s = np_slab_at_step(p);
	return __atomic_load_n(&s->owner, __ATOMIC_RELAXED) != NULL && np_slab_index(s, a) < s->end &&
	       size <= s->block && size >= s->block / 2 && np_ptr_looks_live(s, a);
}

/* Whether a block of dense node `node` may grow in place for the calling thread: what realloc
 * adds is new memory, which comes from the caller's home node as malloc's does (a move since
 * its last slow path counts, home.h), so only a block on that node (or one near it, for a
 * memoryless home) grows there; another moves, copied. A helper's guest: a thread moved from
 * node 0 to node 1 grew blocks of node 0 in place and by remapping, 512 KiB -> 3 MiB and
 * 8 -> 16 MiB, and every new page stayed on node 0. */
static bool grows_here(int node, size_t pages)
{
	struct np_thread *th = np_tls.self;
	if (th)
		np_home_follow(th);
	if (!np_pcp_is_remote(th ? &th->pcp : NULL, node))
		return true;
	/* Unless no node near the home has room for it either: the block's node is then where a
	 * new one would go too, and copying it there at every growth made growing by 4 KiB steps
	 * quadratic (a review: 984 copies in 984 reallocs with the home node full). The near
	 * nodes, not the target: a memoryless home has no room of its own. */
	if (!th)
		return false;
	for (uint64_t m = th->pcp.near; m; m &= m - 1)
		if (np_node_has_room(__builtin_ctzll(m), pages))
			return false;
	return true;
}

/* Page-API memory (numa_page_alloc*: its run or chunk is not marked as malloc's, large.c's
 * np_large_count) keeps its placement through realloc, as libnuma's numa_realloc keeps a
 * block's policy: it grows in place wherever it is, and when it must move, its new pages are
 * on its node again, or interleaved again (a helper's test: an interleaved 1 MiB block grown
 * to 4 MiB came back with every page on the caller's node). */
static bool placed_by_page_api(const struct np_ptr *d)
{
	return (d->kind == NP_PTR_RUN && !(d->page->user & 1)) || (d->kind == NP_PTR_CHUNK && !d->chunk->user);
}

static void *placed_like(const struct np_ptr *d, size_t size)
{
	bool leave;
	struct np_thread *th = np_thread_for_pages(&leave);
	if (!th)
		return np_enomem();
	void *q;
	if (d->chunk->kind == NP_CHUNK_INTERLEAVE) {
		/* Over the same nodes: all of them is the page API's own interleave (0). */
		uint64_t nodes = 0, all = 0;
		for (int i = 0; i < d->chunk->nilv; i++)
			nodes |= 1ULL << d->chunk->ilv[i];
		for (int i = 0; i < np_topo_table.nnodes; i++)
			all |= (uint64_t)np_topo_table.node[i].mem_allowed << i;
		q = np_large_interleaved(th, size, nodes == all ? 0 : nodes);
	} else {
		size_t dirty;
		q = np_large_alloc(th, size, NP_PAGE_SIZE, d->chunk->node, &dirty);
	}
	if (leave)
		np_ring_leave(th);
	return q ? q : np_enomem();
}

void *np_realloc(void *p, size_t size)
{
	if (!p)
		return np_malloc_fast(size);
	if (size && stays_in_place(p, size))
		return p;
	struct np_ptr d;
	np_ptr_decode(p, false, &d);
	if (d.kind == NP_PTR_BAD)
		np_ptr_invalid("realloc", false, &d, p);
	np_ptr_check_live("realloc", false, &d, p);
	if (size == 0) {
		np_free_decoded(&d, p);
		return NULL;
	}
	if (size > NP_MAX_REQUEST) /* every path below rounds it (a review: to one page) */
		return np_enomem();
	size_t old = np_ptr_usable(&d, p);
	/* Start-up memory always moves into the allocator proper. */
	if (size <= old && size >= old / 2 && d.kind != NP_PTR_BOOT)
		return p;
	/* A huge block that holds the new size and still needs a chunk of its own stays: grown
	 * within a larger cached chunk that served it (sqlite's doubling buffers moved out of a
	 * reused 10 MiB chunk at 4 MiB into a new mapping), or shrunk, its tail unmapped as glibc
	 * shrinks its mmapped blocks. */
	if (size <= old && d.kind == NP_PTR_CHUNK && d.chunk->kind == NP_CHUNK_HUGE &&
	    (size + NP_PAGE_SIZE - 1) >> NP_PAGE_SHIFT > np_large_run_max()) {
		size_t lead = (size_t)((char *)p - ((char *)d.chunk + d.chunk->data_offset));
		np_large_shrink_huge(d.chunk, np_thread_for_free(), lead + size);
		return p;
	}
	bool placed = placed_by_page_api(&d);
	if (size > old && (d.kind == NP_PTR_RUN || d.kind == NP_PTR_CHUNK) &&
	    (placed || grows_here(d.chunk->node, (size - old + NP_PAGE_SIZE - 1) >> NP_PAGE_SHIFT))) {
		/* A page run may grow in place into the free run behind it, up to the longest run
		 * malloc takes from a pool (malloc/large.h: a quarter chunk); past it, a huge block. */
		struct np_thread *th = np_tls.self;
		if (d.kind == NP_PTR_RUN && size <= np_large_run_max() << NP_PAGE_SHIFT && th) {
			size_t want = (size + NP_PAGE_SIZE - 1) >> NP_PAGE_SHIFT;
			if (np_pool_grow_run(d.page, want, &th->st)) {
				np_large_count_growth(th, d.chunk->node, old, want << NP_PAGE_SHIFT, d.page->user & 1);
				return p;
			}
		}
		/* A huge block grows by remapping: no copy, and its pages stay resident and bound. */
		if (d.kind == NP_PTR_CHUNK && d.chunk->kind == NP_CHUNK_HUGE) {
			struct np_chunk *nc = np_huge_grow(d.chunk, size);
			if (nc) {
				np_large_count_growth(np_thread_for_free(), nc->node, old, np_chunk_data_bytes(nc), nc->user);
				return (char *)nc + nc->data_offset;
			}
		}
	}
	void *q = placed ? placed_like(&d, size) : np_malloc_fast(size);
	if (!q)
		return NULL;
	memcpy(q, p, old < size ? old : size);
	if (size > old && d.kind == NP_PTR_CHUNK && d.chunk->kind == NP_CHUNK_HUGE) {
		/* It could not be remapped. A buffer that outgrew its huge chunk rarely comes back
		 * to that size: unmap the chunk rather than keep it for reuse (sqlite's growing
		 * buffer, kept, added to its peak RSS: docs/design.md). */
		np_large_free_chunk(d.chunk, np_thread_for_free(), false);
		return q;
	}
	if (d.kind == NP_PTR_SMALL)
		np_free_fast(p); /* most often a block of our own: the fast path takes it */
	else
		np_free_decoded(&d, p);
	return q;
}

void *numa_page_realloc(void *p, size_t size)
{
	return np_realloc(p, size);
}

void *numa_page_reallocarray(void *p, size_t nmemb, size_t size)
{
	size_t n;
	if (__builtin_mul_overflow(nmemb, size, &n))
		return np_enomem();
	return np_realloc(p, n);
}

size_t np_usable_size(const void *p)
{
	if (!p)
		return 0;
	struct np_ptr d;
	np_ptr_decode(p, false, &d);
	if (d.kind == NP_PTR_BAD)
		np_ptr_invalid("malloc_usable_size", false, &d, p);
	np_ptr_check_live("malloc_usable_size", false, &d, p);
	return np_ptr_usable(&d, p);
}

size_t numa_page_usable_size(const void *p)
{
	return np_usable_size(p);
}
