/*
 * large.c — page runs and chunks of their own for malloc and the page API (see large.h). No
 * lock of its own: the page cache is the thread's, the pools lock themselves.
 */
#include "malloc/large.h"

#include "malloc/home.h"
#include "malloc/ring.h"
#include "node/node.h"
#include "options.h"
#include "os.h"
#include "pcp/pcp.h"
#include "pool/huge.h"
#include "pool/pool.h"
#include "topology/topology.h"

#define SMALL_RUN_PAGES NP_PCP_LONG_MIN /* runs up to this many pages go through the page cache's orders */
/* Longer runs start on a boundary of this many pages (64 KiB), as mimalloc's large blocks start
 * on a slice: a program that writes only the first pages of its blocks then keeps reusing a
 * few of them. Taken at any page, new blocks started on pages no block had started on, so
 * over time every page of the pool was faulted in and stayed: 200 blocks of 64 KiB-1 MiB
 * replaced at random, one byte written in each, made 19,500 faults per 100,000 replacements
 * and 80 MB resident; now 1,950 and 9.7 MB (mimalloc 3,083 and 14 MB). Blocks written
 * whole: 97.8 -> 102.6 MB (mimalloc 120.7, tcmalloc 122.2), time unchanged. Not under a
 * finite RLIMIT_AS (np_chunk_tight), where address space runs out first: there a run of 25
 * pages took 32 pages' worth: under `ulimit -v 300000` 2,016 blocks of 100,000 bytes fitted, now
 * 2,592 (glibc 3,023), and 70,000 bytes 2,016 -> 3,600 (glibc 4,317). */
#define RUN_GRID_PAGES SMALL_RUN_PAGES

/* Where a long run may start: on the grid, or at any page when address space is short. */
static size_t run_grid_pages(void)
{
	return np_chunk_tight ? 1 : RUN_GRID_PAGES;
}

static unsigned order_of(size_t npages)
{
	return npages <= 1 ? 0 : 64u - (unsigned)__builtin_clzll(npages - 1);
}

/* One pool's try of a huge chunk, for np_node_walk: one its pool kept from an earlier free,
 * else a fresh mapping bound to the node. */
struct huge_try {
	struct np_thread *th;
	size_t size, align;
	struct np_chunk *c;
	size_t dirty;
};

/* A huge mapping of size bytes at align was refused: whether what the thread holds, given
 * back, could make room for it. Not for a request no address space holds, nor, but under a
 * finite RLIMIT_AS (which counts what is mapped), for one larger than the machine's memory:
 * the kernel's overcommit heuristic refuses that whatever the process maps, and a program that
 * probes for the largest block it can get (malloc(2^44), then halves) had its cached huge
 * chunks unmapped and its caches emptied at every refusal (a review: 16,385 faults to use a
 * 64 MiB block again). */
static bool worth_giving_back(size_t size, size_t align)
{
	if (!np_chunk_huge_possible(size, align))
		return false;
	return np_chunk_tight || size <= np_topo_table.total_mem;
}

static bool try_huge(int node, bool shared, bool grow, void *arg)
{
	struct huge_try *h = arg;
	h->c = np_huge_get(node, h->size, h->align, &h->dirty, &h->th->st, grow);
	if (!h->c && grow) {
		bool spilled;
		h->c = np_chunk_map_huge(node, 0, h->size, h->align, np_pool_is_low(node), &spilled);
		/* No address space: what the thread holds goes back (np_ring_give_back), then once
		 * more. 5,000-byte blocks freed before 2 MiB ones under RLIMIT_AS kept two chunks
		 * mapped through their empty slabs and the runs in the page cache: 102 of 118
		 * blocks fitted again, with only the unused mappings given back. */
		if (!h->c && !spilled && worth_giving_back(h->size, h->align) && np_ring_give_back(h->th))
			h->c = np_chunk_map_huge(node, 0, h->size, h->align, np_pool_is_low(node), &spilled);
		if (spilled)
			np_pool_note_spill(node);
		h->dirty = 0;
		if (h->c)
			np_huge_count_live(node, (long)(np_chunk_data_bytes(h->c) >> NP_PAGE_SHIFT));
	}
	if (h->c && shared)
		np_vmstat_add(&h->th->st, node, NUMA_PAGE_STAT_pages_stolen,
			      (long)(np_chunk_data_bytes(h->c) >> NP_PAGE_SHIFT));
	return h->c != NULL;
}

void *np_large_alloc(struct np_thread *th, size_t size, size_t align, int node, size_t *dirty)
{
	if (size > NP_MAX_REQUEST) /* its page count would wrap */
		return NULL;
	size_t npages = size ? (size + NP_PAGE_SIZE - 1) >> NP_PAGE_SHIFT : 1;
	if (npages >= NP_POLICY_LOOK_PAGES)
		np_home_look_policy(th); /* a policy set since, for the pages of a long block */
	np_home_follow(th); /* a thread the scheduler moved gets its large blocks on its new node */
	np_ring_tick(th);
	size_t align_pages = align >> NP_PAGE_SHIFT;
	/* Under an interleave policy a long block is spread page by page over the policy's
	 * nodes, as the kernel would spread it. */
	bool spread = node < 0 && th->pcp.policy.mode == NP_POLICY_INTERLEAVE && align <= NP_PAGE_SIZE &&
		      npages > np_large_spread_min();
	struct np_page *run = NULL;
	if (npages <= SMALL_RUN_PAGES && align_pages <= SMALL_RUN_PAGES) {
		unsigned order = order_of(npages > align_pages ? npages : align_pages);
		run = np_pcp_get(&th->pcp, order, node);
	} else if (!spread && npages <= np_large_run_max() && align_pages <= NP_CHUNK_PAGES / 4) {
		run = np_pcp_get_run(&th->pcp, npages, NP_MAX(align_pages, run_grid_pages()), node);
	}
	if (run) {
		*dirty = run->clean ? 0 : SIZE_MAX;
		return np_page_addr(run);
	}
	/* Huge, spread, or no pool had a fitting run. */
	if (spread) {
		void *p = np_large_interleaved(th, size, th->pcp.policy.nodes);
		if (p) {
			*dirty = 0;
			return p;
		}
	}
	/* A chunk of its own, along the node walk. At least one byte: a chunk aligned to its own
	 * size or more has its data a whole alignment past its start, and with no data the block
	 * would lie past the mapping's end. */
	int intended = node >= 0 ? node : th->pcp.target;
	struct huge_try h = {.th = th, .size = size ? size : 1, .align = align};
	struct np_node_req r = {.intended = intended, .flags = intended == th->pcp.target ? NP_WALK_PICK : 0,
				.prefer = node < 0 ? np_node_interleave_set(&th->pcp.policy) : 0, .pages = npages,
				.rotor = &th->pcp.rotor};
	int from = np_node_walk(&r, try_huge, &h);
	if (from < 0)
		return NULL;
	*dirty = h.dirty;
	np_pcp_count_alloc(&th->pcp, intended, from, (long)(np_chunk_data_bytes(h.c) >> NP_PAGE_SHIFT), node >= 0);
	return (char *)h.c + h.c->data_offset;
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

static void uncount(struct np_thread *th, int node, size_t usable)
{
	np_vmstat_add(th ? &th->st : NULL, node, NUMA_PAGE_STAT_malloc_in_use, -(long)usable);
}

/* pages of a chunk on dense node `node` leave the counts, and for malloc's chunk (user) their
 * bytes leave malloc_in_use: a free, or a shrink's unmapped tail. */
static void uncount_pages(struct np_thread *th, int node, long pages, bool user)
{
	if (user)
		uncount(th, node, (size_t)pages << NP_PAGE_SHIFT);
	np_pcp_count_free(th ? &th->pcp : NULL, node, pages);
}

/* Adds the malloc_in_use bytes of malloc's chunk c: an interleaved one's on the node of each of
 * its pages, so that its free (np_large_free_chunk) takes off just what this put on. */
static void count_chunk_bytes(struct np_thread *th, const struct np_chunk *c)
{
	if (c->kind != NP_CHUNK_INTERLEAVE) {
		np_vmstat_add(&th->st, c->node, NUMA_PAGE_STAT_malloc_in_use, (long)np_chunk_data_bytes(c));
		return;
	}
	long share[NP_MAX_NODES];
	interleave_shares(c, share);
	for (int i = 0; i < c->nilv; i++)
		np_vmstat_add(&th->st, c->ilv[i], NUMA_PAGE_STAT_malloc_in_use, share[c->ilv[i]] << NP_PAGE_SHIFT);
}

void np_large_free_chunk(struct np_chunk *c, struct np_thread *th, bool keep)
{
	long pages = (long)(np_chunk_data_bytes(c) >> NP_PAGE_SHIFT);
	/* Its pages, and a malloc block's bytes, off the counts of the nodes they were counted on. */
	if (c->kind == NP_CHUNK_INTERLEAVE) {
		long share[NP_MAX_NODES];
		interleave_shares(c, share);
		for (int i = 0; i < c->nilv; i++)
			uncount_pages(th, c->ilv[i], share[c->ilv[i]], c->user);
	} else {
		uncount_pages(th, c->node, pages, c->user);
	}
	/* Kept, a chunk the program bound or moved elsewhere would bring its pages there for the
	 * next block: unmapped, the policy and pages go with it. The wrappers note what the
	 * program did through libnuma's calls (np_chunk_program_moved); a bind by a system call
	 * of its own is asked (np_chunk_bound_elsewhere; pages it moved so are not seen). */
	if (keep && c->kind == NP_CHUNK_HUGE &&
	    (np_chunk_program_moved(c) || np_chunk_bound_elsewhere(c, (char *)c + c->data_offset, np_chunk_data_bytes(c))))
		keep = false;
	if (c->kind == NP_CHUNK_HUGE && !keep)
		np_huge_count_live(c->node, -pages);
	if (!keep || !np_huge_put(c, th ? &th->st : NULL))
		np_chunk_unmap_huge(c);
}

void np_large_shrink_huge(struct np_chunk *c, struct np_thread *th, size_t size)
{
	size_t old = np_chunk_data_bytes(c);
	size_t want = np_chunk_huge_size(c->data_offset + size);
	if (want >= c->size)
		return;
	np_chunk_trim_huge(c, want);
	long pages = (long)((old - np_chunk_data_bytes(c)) >> NP_PAGE_SHIFT);
	uncount_pages(th, c->node, pages, c->user);
	np_huge_count_live(c->node, -pages);
}

void np_large_free_run(struct np_page *pg, struct np_thread *th)
{
	/* Bit 0: a malloc block's (np_large_count); NP_PAGE_USER_MOVED stays for the page
	 * cache's put (np_chunk_rebind_run). */
	if (pg->user & 1) {
		pg->user &= NP_PAGE_USER_MOVED;
		uncount(th, np_page_node(pg), (size_t)pg->npages << NP_PAGE_SHIFT);
	}
	if (th && pg->order < NP_PCP_ORDERS) {
		pg->clean = 0;
		np_pcp_put(&th->pcp, pg);
	} else {
		np_pcp_put_run(th ? &th->pcp : NULL, pg);
	}
}

/* NUMAPAGE_INTERLEAVE_ABOVE: big arrays the main thread allocates before any other thread has
 * used the allocator are the shared data of HPC codes: spread them over the memory nodes. */
bool np_large_interleave_wanted(const struct np_thread *th, size_t size)
{
	long above = np_opt_load(interleave_above);
	return above > 0 && size >= (size_t)above &&
	       __atomic_load_n(&np_threads_seen, __ATOMIC_RELAXED) == 1 && th->tid == np_os_pid() &&
	       np_topo_table.nmem_nodes > 1;
}

void *np_large_interleaved(struct np_thread *th, size_t size, uint64_t nodes)
{
	struct np_chunk *c = np_chunk_map_huge(-1, nodes, size ? size : 1, NP_PAGE_SIZE, false, NULL);
	if (!c)
		return NULL;
	long share[NP_MAX_NODES];
	interleave_shares(c, share);
	for (int i = 0; i < c->nilv; i++) {
		int n = c->ilv[i];
		if (nodes) /* the task's interleave: its pages are where they were meant to go */
			np_pcp_count_alloc(&th->pcp, n, n, share[n], false);
		else {
			np_vmstat_add(&th->st, n, NUMA_PAGE_STAT_interleave_hit, share[n]);
			np_vmstat_add(&th->st, n, NUMA_PAGE_STAT_pages_in_use, share[n]);
		}
	}
	return (char *)c + c->data_offset;
}

void np_large_count(struct np_thread *th, void *p, size_t requested)
{
	/* Large malloc blocks are marked, so that their free takes their bytes off malloc_in_use
	 * (page-API memory is not malloc's). p is a run's start or a chunk's data. */
	struct np_chunk *c = np_chunk_of(p);
	if (np_chunk_lookup(p) == c && c->kind == NP_CHUNK_NORMAL) {
		struct np_page *pg = np_chunk_page(c, p);
		pg->user = 1;
		np_vmstat_add(&th->st, c->node, NUMA_PAGE_STAT_malloc_in_use, (long)pg->npages << NP_PAGE_SHIFT);
	} else {
		c = np_chunk_find(p);
		c->user = 1;
		count_chunk_bytes(th, c);
	}
	/* An event: an interleaved block's request counts on the node of its first page. */
	np_vmstat_add(&th->st, np_chunk_node_at(c, p), NUMA_PAGE_STAT_malloc_requested, (long)requested);
}

void np_large_count_growth(struct np_thread *th, int node, size_t old, size_t new, bool user)
{
	np_pcp_count_alloc(th ? &th->pcp : NULL, node, node, (long)((new - old) >> NP_PAGE_SHIFT), false);
	if (user)
		np_vmstat_add(th ? &th->st : NULL, node, NUMA_PAGE_STAT_malloc_in_use, (long)(new - old));
}
