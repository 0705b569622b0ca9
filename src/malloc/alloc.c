/*
 * alloc.c — the public allocation API: the malloc family under numa_page_* names, the page API
 * (numa_page_alloc, _onnode, _interleaved, node_of, home node) and every slow path behind the
 * inline fast paths of alloc.h.
 *
 * Sizes: up to NP_SMALL_MAX (32 KiB) from slabs of the thread's node; above that, page runs:
 * up to 16 pages as power-of-two runs through the thread's page cache, up to a chunk's data
 * as exact runs from the node's pool, beyond that a huge chunk of its own.
 */
#include "malloc/alloc.h"

#include <errno.h>
#include <string.h>

#include "log.h"
#include "malloc/bootstrap.h"
#include "malloc/init.h"
#include "options.h"
#include "os.h"
#include "pcp/pcp.h"
#include "pool/pool.h"
#include "topology/topology.h"

#define MAX_REQUEST (((size_t)1 << 46))
#define SMALL_RUN_PAGES 16 /* runs up to this many pages go through the page cache */

/* ---- slabs -------------------------------------------------------------------------------- */

static uintptr_t pop(struct np_slab *s)
{
	return np_slab_pop(s);
}

/* Makes s the current slab of its class in th's ring (inserting it if it is not in it). */
static void make_current(struct np_thread *th, struct np_slab *s, bool insert)
{
	struct np_slab *cur = th->ring[s->cls];
	if (insert) {
		if (cur) {
			s->next = cur->next;
			s->prev = cur;
			cur->next->prev = s;
			cur->next = s;
		} else {
			s->next = s->prev = s;
		}
	}
	th->ring[s->cls] = s;
	np_tls.cur[s->cls] = s;
}

static void ring_unlink(struct np_thread *th, struct np_slab *s)
{
	unsigned c = s->cls;
	if (s->next == s) {
		th->ring[c] = NULL;
		np_tls.cur[c] = &np_slab_empty;
	} else {
		s->prev->next = s->next;
		s->next->prev = s->prev;
		if (th->ring[c] == s) {
			th->ring[c] = s->next;
			np_tls.cur[c] = s->next;
		}
	}
	s->next = s->prev = NULL;
}

static bool has_free(struct np_slab *s)
{
	if (!s->free) {
		np_slab_collect(s);
		if (!s->free && s->reserved)
			np_slab_extend(s);
	}
	return s->free != 0;
}

/* Slab slow paths between two sweeps of a thread's rings. A slow path comes every slab's
 * worth of allocations of a class, so a sweep costs little per allocation, and memory that
 * other threads' frees emptied goes back within a bounded delay (larson and mstress, whose
 * frees are mostly remote, kept their peak RSS without it). A sweep is skipped when no other
 * thread freed into our slabs since the last one (a local free that empties a slab releases
 * it at once): at 1 thread, larson's sweeps walked 2.7M slabs and released none. The fast
 * path's byte counters are folded into the statistics at the same pace. */
#define SWEEP_EVERY 64

/* Full slabs a thread keeps in its ring of a class rather than letting them float. Each slow
 * path collects them (a load each while nobody freed into them), and blocks other threads free
 * come back to the owner without the trip a floating slab makes: claimed by the first such free,
 * handed to the node's orphans under a mutex, adopted back under it. In xmalloc, where every free
 * is remote, that trip ping-ponged the orphan lock between producer and consumer: 4 kept took
 * xmalloc/2 from 0.21 s (min of 11; median 0.40) to 0.13 s (0.26). Beyond that, full slabs
 * float, so a thread with a large live set does not rescan it on every slow path. */
#define KEEP_FULL 4

/* A block of class c for thread th, after the fast path found the current slab empty. */
static void *slab_alloc(struct np_thread *th, unsigned c)
{
	if (np_config_debug >= 3) {
		const char *err = np_thread_check(th);
		if (err)
			np_fatal("malloc: thread state corrupt: %s", err);
	}
	if (NP_UNLIKELY(++th->slow_calls >= SWEEP_EVERY)) {
		th->slow_calls = 0;
		np_thread_fold_bytes(th);
		if (__atomic_load_n(&th->remote_pending, __ATOMIC_RELAXED)) {
			__atomic_store_n(&th->remote_pending, 0, __ATOMIC_RELAXED);
			np_thread_sweep(th);
		}
		np_slab_sweep_orphans();
	}
	struct np_slab *s = th->ring[c];
	if (s) {
		if (has_free(s))
			return (void *)pop(s);
		/* The others in the ring: each yields blocks or, full, is let go (FLOATING), but
		 * for the first KEEP_FULL full ones, current included. */
		unsigned kept = 0;
		for (struct np_slab *t = s->next; t != s;) {
			struct np_slab *next = t->next;
			if (has_free(t)) {
				make_current(th, t, false);
				return (void *)pop(t);
			}
			if (kept < KEEP_FULL) {
				kept++;
				t = next;
				continue;
			}
			/* Out of our ring before it floats: a claimer may link it into its own. */
			ring_unlink(th, t);
			if (!np_slab_float(t)) { /* remote frees raced in: use them */
				make_current(th, t, true);
				if (has_free(t))
					return (void *)pop(t);
			}
			t = next;
		}
		if (kept >= KEEP_FULL) {
			ring_unlink(th, s);
			if (!np_slab_float(s)) {
				make_current(th, s, true);
				if (has_free(s))
					return (void *)pop(s);
			}
		}
	}
	/* Orphans of the nodes near this thread (left by exited threads, or claimed by frees). */
	uint64_t near = th->pcp.near;
	for (int n = 0; near; n++, near >>= 1) {
		if (!(near & 1))
			continue;
		struct np_slab *o;
		while ((o = np_slab_adopt(n, c, th)) != NULL) {
			make_current(th, o, true);
			if (has_free(o))
				return (void *)pop(o);
			ring_unlink(th, o);
			if (!np_slab_float(o)) {
				make_current(th, o, true);
				if (has_free(o))
					return (void *)pop(o);
			}
		}
	}
	s = np_slab_create(&th->pcp, c, th);
	if (!s)
		return NULL;
	make_current(th, s, true);
	return (void *)pop(s);
}

void np_slab_emptied(struct np_slab *s)
{
	/* Keep the current slab (the next malloc wants it); give the others' pages back. */
	struct np_thread *th = np_tls.self;
	if (th->ring[s->cls] == s)
		return;
	ring_unlink(th, s);
	np_slab_release(s, &th->pcp);
}

/* ---- page runs ------------------------------------------------------------------------------ */

static unsigned order_of(size_t npages)
{
	return npages <= 1 ? 0 : 64u - (unsigned)__builtin_clzll(npages - 1);
}

/* Pages for size bytes aligned to align (a power of two >= the page size) intended for dense
 * node `node` (-1: the thread's home node). *clean: the memory reads as zeros. */
static void *page_alloc(struct np_thread *th, size_t size, size_t align, int node, bool *clean)
{
	size_t npages = size ? (size + NP_PAGE_SIZE - 1) >> NP_PAGE_SHIFT : 1;
	size_t align_pages = align >> NP_PAGE_SHIFT;
	struct np_page *run = NULL;
	if (npages <= SMALL_RUN_PAGES && align_pages <= SMALL_RUN_PAGES) {
		unsigned order = order_of(npages > align_pages ? npages : align_pages);
		run = np_pcp_get(&th->pcp, order, node);
	} else if (npages <= NP_POOL_MAX_RUN && align_pages <= NP_CHUNK_PAGES / 4) {
		run = np_pcp_get_run(&th->pcp, npages, align_pages, node);
	}
	if (run) {
		*clean = run->clean;
		return np_page_addr(run);
	}
	/* Huge, or no pool had a fitting run: a chunk of its own, along the fallback order; one
	 * the node's pool kept from an earlier free, else a fresh mapping. At least one byte: a
	 * chunk aligned to its own size or more has its data a whole alignment past its start,
	 * and with no data the block would lie past the mapping's end. */
	size = size ? size : 1;
	int intended = node >= 0 ? node : th->pcp.home;
	const struct np_topo_node *nd = &np_topo_table.node[intended];
	for (int k = 0; k < nd->nfallback; k++) {
		int n = nd->fallback[k];
		struct np_chunk *c = np_pool_get_huge(n, size, align, &th->st);
		*clean = c == NULL;
		if (!c)
			c = np_chunk_map_huge(n, size, align);
		if (c) {
			np_pcp_count_alloc(&th->pcp, intended, n, (long)(np_chunk_data_bytes(c) >> NP_PAGE_SHIFT));
			return (char *)c + c->data_offset;
		}
	}
	return NULL;
}

/* Pages of an interleaved chunk's data on each of its nodes (dense index), by address: which
 * nodes get the extra pages depends on where the data starts. */
static void interleave_shares(const struct np_chunk *c, long share[NP_MAX_NODES])
{
	for (int i = 0; i < NP_MAX_NODES; i++)
		share[i] = 0;
	const char *data = (const char *)c + c->data_offset;
	size_t pages = np_chunk_data_bytes(c) >> NP_PAGE_SHIFT;
	for (size_t k = 0; k < pages && k < c->nilv; k++) {
		/* Page k, k + nilv, k + 2 nilv ... share a node: count them at once. */
		long n = (long)((pages - k + c->nilv - 1) / c->nilv);
		share[np_chunk_node_at(c, data + (k << NP_PAGE_SHIFT))] += n;
	}
}

static void uncount_large(struct np_thread *th, int node, size_t usable);

/* Releases a huge or interleaved block: its pages and, for malloc's, its bytes leave the
 * statistics. keep: the chunk may stay with its node's pool for reuse (else it is unmapped). */
static void huge_free(struct np_chunk *c, struct np_thread *th, bool keep)
{
	if (c->user)
		uncount_large(th, c->node, np_chunk_data_bytes(c));
	long pages = (long)(np_chunk_data_bytes(c) >> NP_PAGE_SHIFT);
	struct np_pcp *pcp = th ? &th->pcp : NULL;
	if (c->kind == NP_CHUNK_INTERLEAVE) {
		long share[NP_MAX_NODES];
		interleave_shares(c, share);
		for (int i = 0; i < c->nilv; i++)
			np_pcp_count_free(pcp, c->ilv[i], share[c->ilv[i]]);
	} else {
		np_pcp_count_free(pcp, c->node, pages);
	}
	if (!keep || !np_pool_put_huge(c, pcp ? &th->st : NULL))
		np_chunk_unmap_huge(c);
}

/* NUMAPAGE_INTERLEAVE_ABOVE: big arrays the main thread allocates before any other thread has
 * used the allocator are the shared data of HPC codes: spread them over the memory nodes. */
static bool interleave_wanted(const struct np_thread *th, size_t size)
{
	return np_opt.interleave_above > 0 && size >= (size_t)np_opt.interleave_above &&
	       __atomic_load_n(&np_threads_seen, __ATOMIC_RELAXED) == 1 && th->tid == np_os_pid() &&
	       np_topo_table.nmem_nodes > 1;
}

static void *interleaved(struct np_thread *th, size_t size)
{
	struct np_chunk *c = np_chunk_map_huge(-1, size ? size : 1, NP_PAGE_SIZE);
	if (!c)
		return NULL;
	long share[NP_MAX_NODES];
	interleave_shares(c, share);
	for (int i = 0; i < c->nilv; i++) {
		np_vmstat_add(&th->st, c->ilv[i], NUMA_PAGE_STAT_interleave_hit, share[c->ilv[i]]);
		np_vmstat_add(&th->st, c->ilv[i], NUMA_PAGE_STAT_pages_in_use, share[c->ilv[i]]);
	}
	return (char *)c + c->data_offset;
}

/* Large malloc blocks (page runs and huge chunks) are marked, so that their free takes their
 * bytes off malloc_in_use (page-API memory is not malloc's). */
static struct np_chunk *block_chunk(const void *p);

static void count_large(struct np_thread *th, void *p, size_t requested)
{
	struct np_chunk *c = block_chunk(p);
	size_t usable;
	if (c->kind == NP_CHUNK_NORMAL) {
		struct np_page *pg = np_chunk_page(c, p);
		pg->user = 1;
		usable = (size_t)pg->npages << NP_PAGE_SHIFT;
	} else {
		c->user = 1;
		usable = np_chunk_data_bytes(c);
	}
	int node = np_chunk_node_at(c, p);
	np_vmstat_add(&th->st, node, NUMA_PAGE_STAT_malloc_requested, (long)requested);
	np_vmstat_add(&th->st, node, NUMA_PAGE_STAT_malloc_in_use, (long)usable);
}

static void uncount_large(struct np_thread *th, int node, size_t usable)
{
	np_vmstat_add(th ? &th->st : NULL, node, NUMA_PAGE_STAT_malloc_in_use, -(long)usable);
}

/* ---- the slow paths -------------------------------------------------------------------------- */

static void *enomem(void)
{
	errno = ENOMEM;
	return NULL;
}

/* The calling thread's state, or NULL before the allocator is ready. */
static struct np_thread *self_or_init(void)
{
	struct np_thread *th = np_tls.self;
	return th ? th : np_thread_get();
}

/* The fast path found a corrupt link behind s->free: the list is cut there. The head block is
 * sound (it was checked when it became the head) and is now the last: allocate again. */
void *np_malloc_bad_link(struct np_slab *s, size_t size)
{
	np_slab_bad_link(s, s->free);
	return np_malloc_fast(size);
}

void *np_malloc_slow(size_t size)
{
	struct np_thread *th = self_or_init();
	if (NP_UNLIKELY(!th)) {
		if (np_is_ready())
			return enomem();
		void *p = np_bootstrap_alloc(size, 16);
		return p ? p : enomem();
	}
	void *p;
	if (size <= NP_SMALL_MAX) {
		unsigned c = np_size_class(size);
		p = slab_alloc(th, c);
		if (p) {
			int node = np_tls.cur[c]->node; /* the slab that served p */
			np_tls.self->in_use[node] += np_class_size[c];
			np_tls.self->requested[node] += size;
		}
	} else {
		bool clean;
		if (size > MAX_REQUEST)
			return enomem();
		np_thread_fold_bytes(th);
		p = interleave_wanted(th, size) ? interleaved(th, size) : NULL;
		if (!p)
			p = page_alloc(th, size, NP_PAGE_SIZE, -1, &clean);
		if (p)
			count_large(th, p, size);
	}
	return p ? p : enomem();
}

NP_COLD static void invalid(const char *what, const void *p)
{
	np_fatal("free: %s %p", what, p);
}

/* The freeing thread's state, created for a thread that only frees (a consumer): its counts
 * then go to its own deltas, not to a shared atomic per free. Not once its exit handler ran. */
static struct np_thread *freeing_thread(void)
{
	struct np_thread *th = np_tls.self;
	return th || np_tls.exited ? th : np_thread_get();
}

#define REMOTE_FOLD_BYTES (64 * 1024)

/* A block of slab s freed by a thread that does not own it, or one the fast path did not
 * take (a block past a large slab's first 64 KiB, or one that looks free). No system call
 * here: errno is left alone. */
void np_free_slab_slow(struct np_slab *s, uintptr_t a)
{
	struct np_thread *th = freeing_thread();
	uint64_t i = np_slab_index(s, a);
	if (i >= s->end)
		invalid("invalid pointer (not the start of a block)", (void *)a);
	if (__atomic_load_n(&s->owner, __ATOMIC_RELAXED) == th && th) {
		/* Looks free: confirm before reporting. */
		if (np_slab_looks_free(s, a)) {
			np_slab_collect(s);
			if (np_slab_holds_free(s, a))
				invalid("double free of", (void *)a);
		}
		np_slab_push_local(s, a, i);
		np_tls.self->in_use[s->node] -= s->block;
		if (--s->used == 0)
			np_slab_emptied(s);
		return;
	}
	/* Another thread's slab (or nobody's): a block that looks free may be on its owner's
	 * lists already, freed by the owner or another thread. The owner may be changing them,
	 * so the walk is the careful racy one (no link followed unchecked); found means free. */
	if (np_slab_looks_free(s, a) && np_slab_holds_free_racy(s, a))
		invalid("double free of", (void *)a);
	if (NP_LIKELY(th != NULL)) {
		/* Counted with the fast path's bytes, which a thread that only frees (a consumer)
		 * never folds in a malloc slow path: fold them every 64 KiB. */
		th->in_use[s->node] -= s->block;
		if (NP_UNLIKELY(th->in_use[s->node] < -(int64_t)REMOTE_FOLD_BYTES))
			np_thread_fold_bytes(th);
		if (!((th->pcp.near >> s->node) & 1))
			np_vmstat_add(&th->st, s->node, NUMA_PAGE_STAT_remote_free, 1);
	} else {
		np_vmstat_add(NULL, s->node, NUMA_PAGE_STAT_malloc_in_use, -(long)s->block);
		if (np_pcp_is_remote(NULL, s->node))
			np_vmstat_add(NULL, s->node, NUMA_PAGE_STAT_remote_free, 1);
	}
	struct np_thread *owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
	bool first;
	bool claimed = np_slab_push_remote(s, a, &first);
	/* The owner's next sweep has work now (thread structs are recycled, never unmapped: a
	 * stale owner only costs that thread one sweep). */
	if (first && owner != NULL && owner != NP_NO_OWNER && owner != th &&
	    !__atomic_load_n(&owner->remote_pending, __ATOMIC_RELAXED))
		__atomic_store_n(&owner->remote_pending, 1, __ATOMIC_RELAXED);
	if (!claimed)
		return;
	/* This free claimed a full slab its owner had let go. The thread that let go of it takes
	 * it back (its own free: its later frees of the slab's recent blocks are local). Anyone
	 * else hands it to the node's orphans, for the next thread near it that runs out of blocks
	 * of this class (xmalloc's consumer only frees: adopting made every slab's pages travel
	 * from consumer to producer through the pools, 3x slower). A claimer that allocated the
	 * class used to adopt it without needing it: in larson/2 it then never ran out, never let
	 * a slab go, and its ring held 3-6 MB of free blocks per class while the other thread made
	 * 300-500 new slabs (peak RSS 48-52 MB; 29-32 MB with orphans). */
	struct np_thread *floater = __atomic_load_n(&s->floater, __ATOMIC_RELAXED);
	if (th && floater == th && ((th->pcp.near >> s->node) & 1) && th->ring[s->cls]) {
		__atomic_store_n(&s->owner, th, __ATOMIC_RELAXED);
		np_slab_set_state(s, NP_SLAB_OWNED);
		struct np_slab *cur = th->ring[s->cls];
		if (cur) { /* behind the current slab: the current one keeps serving */
			s->next = cur->next;
			s->prev = cur;
			cur->next->prev = s;
			cur->next = s;
		} else {
			make_current(th, s, true);
		}
		/* Take in the block just pushed at once: with used exact, the frees still to come
		 * (now local) can empty it and give its pages back. Left in thread_free, it kept
		 * used at 1 for good where nobody else frees (the sweep runs only after other
		 * threads' frees): python held 285 empty slabs, 19 MB, at exit. */
		np_slab_collect(s);
		if (s->used == 0)
			np_slab_emptied(s);
	} else {
		np_slab_orphan(s);
	}
}

static void free_other(void *p);

/* The chunk of a block we handed out: the chunk of p's granule or, for a huge block aligned to
 * a chunk or more (its data starts a granule or more past its header), the huge chunk whose
 * data starts exactly at p. NULL otherwise. */
static struct np_chunk *block_chunk(const void *p)
{
	struct np_chunk *c = np_chunk_lookup(p);
	if (NP_LIKELY(c != NULL))
		return c;
	c = np_chunk_find(p);
	if (c && c->magic == NP_CHUNK_MAGIC && c->kind != NP_CHUNK_NORMAL &&
	    (const char *)p == (const char *)c + c->data_offset)
		return c;
	return NULL;
}

void np_free_slow(void *p)
{
	/* A small block: its slab from the descriptor of its 64 KiB step's first page (every page
	 * of a slab names it), without the checks below that only other memory needs. */
	struct np_chunk *c = np_chunk_lookup(p);
	if (NP_LIKELY(c != NULL)) {
		struct np_page *step = &c->pages[((uintptr_t)p >> NP_PAGE_SHIFT) & (NP_CHUNK_PAGES - NP_SLAB_ALIGN_PAGES)];
		if (step->owner) {
			np_free_slab_slow((struct np_slab *)step->owner, (uintptr_t)p);
			return;
		}
	}
	if (!p)
		return;
	free_other(p);
}

/* Page runs, huge chunks, start-up memory and what is none of them. */
static void free_other(void *p)
{
	int saved = errno;
	struct np_chunk *c = block_chunk(p);
	if (!c) {
		if (np_bootstrap_free(p)) {
			errno = saved;
			return;
		}
		if (np_chunk_find(p))
			invalid("invalid pointer (inside a large block)", p);
		if (np_chunk_was_unmapped(p))
			invalid("double free of", p);
		invalid("invalid pointer (not allocated by libnumapage)", p);
	}
	if (c->magic != NP_CHUNK_MAGIC)
		invalid("invalid pointer (corrupt chunk header)", p);
	struct np_thread *th = freeing_thread();
	if (c->kind != NP_CHUNK_NORMAL) {
		if (c->kind == NP_CHUNK_CACHED && (char *)p == (char *)c + c->data_offset)
			invalid("double free of", p);
		if ((char *)p != (char *)c + c->data_offset || c->kind == NP_CHUNK_CACHED)
			invalid("invalid pointer (inside a large block)", p);
		huge_free(c, th, true);
		errno = saved;
		return;
	}
	struct np_page *pg = np_chunk_page(c, p); /* no slab's: np_free_slow took those */
	if (((uintptr_t)p & (NP_PAGE_SIZE - 1)) != 0)
		invalid("invalid pointer (not the start of a block)", p);
	switch (pg->state) {
	case NP_PAGE_USED:
		break;
	case NP_PAGE_FREE:
	case NP_PAGE_FREE_END:
	case NP_PAGE_PCP:
		invalid("double free of", p);
		break;
	default:
		invalid("invalid pointer (not the start of a block)", p);
	}
	if (pg->user) {
		pg->user = 0;
		uncount_large(th, c->node, (size_t)pg->npages << NP_PAGE_SHIFT);
	}
	if (th && pg->order < NP_PCP_ORDERS) {
		pg->clean = 0;
		np_pcp_put(&th->pcp, pg);
	} else {
		np_pcp_put_run(th ? &th->pcp : NULL, pg);
	}
	errno = saved;
}

size_t np_usable_size(const void *p)
{
	if (!p)
		return 0;
	struct np_chunk *c = block_chunk(p);
	if (!c) {
		if (np_bootstrap_owns(p))
			return np_bootstrap_size(p);
		np_fatal("malloc_usable_size: invalid pointer %p", p);
	}
	if (c->kind == NP_CHUNK_CACHED)
		np_fatal("malloc_usable_size: invalid pointer %p (freed)", p);
	if (c->kind != NP_CHUNK_NORMAL)
		return np_chunk_data_bytes(c);
	struct np_page *pg = np_chunk_page(c, p);
	if (pg->owner)
		return ((struct np_slab *)pg->owner)->block;
	if (pg->state != NP_PAGE_USED)
		np_fatal("malloc_usable_size: invalid pointer %p", p);
	return (size_t)pg->npages << NP_PAGE_SHIFT;
}

/* ---- the malloc family ------------------------------------------------------------------------ */

void *numa_page_malloc(size_t size)
{
	return np_malloc_fast(size);
}

void numa_page_free(void *p)
{
	np_free_fast(p);
}

void *np_calloc(size_t nmemb, size_t size)
{
	size_t n;
	if (__builtin_mul_overflow(nmemb, size, &n))
		return enomem();
	if (n > NP_SMALL_MAX) {
		struct np_thread *th = self_or_init();
		if (th) {
			if (n > MAX_REQUEST)
				return enomem();
			bool clean = true;
			np_thread_fold_bytes(th);
			void *p = interleave_wanted(th, n) ? interleaved(th, n) : NULL;
			if (!p)
				p = page_alloc(th, n, NP_PAGE_SIZE, -1, &clean);
			if (!p)
				return enomem();
			count_large(th, p, n);
			if (!clean) /* fresh or purged pages already read as zeros */
				memset(p, 0, n);
			return p;
		}
	}
	void *p = np_malloc_fast(n);
	if (p)
		memset(p, 0, n);
	return p;
}

void *numa_page_calloc(size_t nmemb, size_t size)
{
	return np_calloc(nmemb, size);
}

void *np_alloc_aligned(size_t alignment, size_t size)
{
	if (alignment <= 16)
		return np_malloc_fast(size);
	struct np_thread *th = self_or_init();
	if (!th) {
		if (np_is_ready())
			return enomem();
		void *p = np_bootstrap_alloc(size, alignment);
		return p ? p : enomem();
	}
	if (size > MAX_REQUEST || alignment > MAX_REQUEST)
		return enomem();
	np_thread_fold_bytes(th);
	if (size <= NP_SMALL_MAX && alignment <= NP_SMALL_MAX) {
		/* Blocks of a class whose size is a multiple of the alignment are aligned, since
		 * slabs start on a boundary of at least 64 KiB. */
		unsigned c = np_size_class(size > alignment ? size : alignment);
		while (np_class_size[c] % alignment)
			c++;
		struct np_slab *s = np_tls.cur[c];
		void *p = s->free ? (void *)pop(s) : slab_alloc(th, c);
		if (!p)
			return enomem();
		int node = np_tls.cur[c]->node;
		np_tls.self->in_use[node] += np_class_size[c];
		np_tls.self->requested[node] += size;
		return p;
	}
	bool clean;
	void *p = page_alloc(th, size, alignment < NP_PAGE_SIZE ? NP_PAGE_SIZE : alignment, -1, &clean);
	if (!p)
		return enomem();
	count_large(th, p, size);
	return p;
}

void *numa_page_aligned_alloc(size_t alignment, size_t size)
{
	if (alignment == 0 || (alignment & (alignment - 1))) {
		errno = EINVAL;
		return NULL;
	}
	return np_alloc_aligned(alignment, size);
}

void *numa_page_memalign(size_t alignment, size_t size)
{
	/* glibc rounds a non-power-of-two alignment up to the next power of two. */
	if (alignment & (alignment - 1)) {
		if (alignment > MAX_REQUEST)
			return enomem();
		alignment = (size_t)1 << (64 - __builtin_clzll(alignment));
	}
	return np_alloc_aligned(alignment, size);
}

int numa_page_posix_memalign(void **out, size_t alignment, size_t size)
{
	if (alignment < sizeof(void *) || (alignment & (alignment - 1)))
		return EINVAL;
	int saved = errno;
	void *p = np_alloc_aligned(alignment, size);
	errno = saved;
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

/* realloc grew a large block in place from old to new usable bytes (page multiples): count
 * the pages, and the bytes when the block is malloc's. */
static void count_growth(struct np_thread *th, int node, size_t old, size_t new, bool user)
{
	if (th)
		np_pcp_count_alloc(&th->pcp, node, node, (long)((new - old) >> NP_PAGE_SHIFT));
	if (user)
		np_vmstat_add(th ? &th->st : NULL, node, NUMA_PAGE_STAT_malloc_in_use, (long)(new - old));
}

void *np_realloc(void *p, size_t size)
{
	if (!p)
		return np_malloc_fast(size);
	if (size == 0) {
		np_free_fast(p);
		return NULL;
	}
	size_t old = np_usable_size(p);
	/* Start-up memory moves into the allocator proper (np_usable_size vouched for p: a block
	 * in no chunk is the bootstrap's). */
	bool boot = block_chunk(p) == NULL;
	if (size <= old && size >= old / 2 && !boot)
		return p;
	/* A page run may grow in place into the free run behind it. */
	struct np_chunk *c = np_chunk_lookup(p);
	if (c && c->kind == NP_CHUNK_NORMAL && size > old && size <= (size_t)NP_POOL_MAX_RUN << NP_PAGE_SHIFT) {
		struct np_page *pg = np_chunk_page(c, p);
		struct np_thread *th = np_tls.self;
		size_t want = (size + NP_PAGE_SIZE - 1) >> NP_PAGE_SHIFT;
		if (!pg->owner && th && np_pool_grow_run(pg, want, &th->st)) {
			count_growth(th, c->node, old, want << NP_PAGE_SHIFT, pg->user);
			return p;
		}
	}
	/* A huge block grows by remapping: no copy, and its pages stay resident and bound. */
	struct np_chunk *oc = size > old ? block_chunk(p) : NULL;
	if (oc && oc->kind == NP_CHUNK_HUGE && size <= MAX_REQUEST) {
		struct np_chunk *nc = np_chunk_grow_huge(oc, size);
		if (nc) {
			count_growth(freeing_thread(), nc->node, old, np_chunk_data_bytes(nc), nc->user);
			return (char *)nc + nc->data_offset;
		}
	}
	void *q = np_malloc_fast(size);
	if (!q)
		return NULL;
	memcpy(q, p, old < size ? old : size);
	if (oc && oc->kind == NP_CHUNK_HUGE) {
		/* It could not be remapped. A buffer that outgrew its huge chunk rarely comes back
		 * to that size: unmap the chunk rather than keep it for reuse (sqlite's 5 MiB block,
		 * kept while it grew to 10 MiB, added 5 MB to its peak RSS). */
		huge_free(oc, freeing_thread(), false);
		return q;
	}
	np_free_fast(p);
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
		return enomem();
	return np_realloc(p, n);
}

size_t numa_page_usable_size(const void *p)
{
	return np_usable_size(p);
}

int numa_page_trim(void)
{
	if (!np_ensure_ready())
		return 0;
	struct np_thread *th = np_tls.self;
	size_t released = 0;
	if (th) {
		np_thread_fold_bytes(th);
		released += np_thread_sweep(th);
		released += (size_t)th->pcp.count; /* drained now (and purged if past the watermark) */
		np_pcp_drain(&th->pcp);
	}
	released += np_slab_sweep_orphans();
	for (int n = 0; n < np_topo_table.nnodes; n++)
		released += np_pool_trim(n, th ? &th->st : NULL);
	return released > 0;
}

/* ---- the page API -------------------------------------------------------------------------------- */

static void *pages_for(size_t size, int node)
{
	if (!np_ensure_ready())
		return enomem();
	struct np_thread *th = self_or_init();
	if (!th || size > MAX_REQUEST)
		return enomem();
	bool clean;
	void *p = page_alloc(th, size, NP_PAGE_SIZE, node, &clean);
	return p ? p : enomem();
}

void *numa_page_alloc(size_t size)
{
	return pages_for(size, -1);
}

void *numa_page_alloc_onnode(size_t size, int node)
{
	if (!np_ensure_ready())
		return enomem();
	int dense = np_topo_node_index(&np_topo_table, node);
	if (dense < 0) {
		errno = EINVAL;
		return NULL;
	}
	return pages_for(size, dense);
}

void *numa_page_alloc_interleaved(size_t size)
{
	if (!np_ensure_ready())
		return enomem();
	struct np_thread *th = self_or_init();
	if (!th || size > MAX_REQUEST)
		return enomem();
	void *p = interleaved(th, size);
	return p ? p : enomem();
}

int numa_page_node_of(const void *p)
{
	struct np_chunk *c = np_chunk_find(p);
	if (!c || c->magic != NP_CHUNK_MAGIC || c->kind == NP_CHUNK_CACHED ||
	    (c->kind == NP_CHUNK_NORMAL && np_chunk_page(c, p)->state == NP_PAGE_HEADER) ||
	    (c->kind != NP_CHUNK_NORMAL && (const char *)p < (const char *)c + c->data_offset)) {
		errno = EINVAL;
		return -1;
	}
	return np_topo_table.node[np_chunk_node_at(c, p)].os_id;
}

int numa_page_set_home_node(int node)
{
	if (!np_ensure_ready())
		return errno = EAGAIN, -1;
	struct np_thread *th = self_or_init();
	if (!th)
		return errno = ENOMEM, -1;
	if (node == -1) {
		th->pcp.home_fixed = false;
		np_pcp_follow_cpu(&th->pcp);
		return 0;
	}
	int dense = np_topo_node_index(&np_topo_table, node);
	if (dense < 0)
		return errno = EINVAL, -1;
	np_pcp_set_home(&th->pcp, dense);
	th->pcp.home_fixed = true;
	return 0;
}

int numa_page_home_node(void)
{
	if (!np_ensure_ready())
		return errno = EAGAIN, -1;
	struct np_thread *th = self_or_init();
	int dense = th ? th->pcp.home : np_topo_cpu_node(&np_topo_table, np_os_current_cpu());
	return np_topo_table.node[dense].os_id;
}

int numa_page_node_count(void)
{
	if (!np_ensure_ready())
		return errno = EAGAIN, -1;
	return np_topo_table.nnodes;
}

int numa_page_max_node(void)
{
	if (!np_ensure_ready())
		return errno = EAGAIN, -1;
	return np_topo_table.node[np_topo_table.nnodes - 1].os_id;
}
