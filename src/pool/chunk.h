/*
 * chunk.h — memory as the kernel gives it to us: 16 MiB chunks, 16 MiB-aligned, each bound to
 * exactly one node when mapped and never moved. The chunk header holds the node and one page
 * descriptor per 4 KiB page, so any pointer finds its chunk, descriptor and node by address
 * arithmetic. Allocations too large for a chunk get a "huge" mapping of their own whose first
 * page is the same header (without descriptors).
 *
 * A global byte map (one byte per 16 MiB of address space, reserved lazily) says which
 * granules are ours: it is written under the chunk lock before a chunk's memory is handed out,
 * and read without a lock by free() (a pointer can only be freed after it was handed out, so
 * the write happened before). Invariants: see np_chunk_check().
 */
#ifndef NP_CHUNK_H
#define NP_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

#define NP_PAGE_SHIFT 12
#define NP_PAGE_SIZE ((size_t)1 << NP_PAGE_SHIFT)
/* 16 MiB: a pool's runs go up to a quarter of it (4 MiB, malloc/large.h), so that blocks of up
 * to that size pack into few chunks. In 4 MiB chunks, where such a block filled a chunk, the
 * free space split between chunks into pieces too short for the next block, and every block
 * size up to 4 MiB at random (large-blocks) touched 5 chunks' worth of pages for 2-3 chunks of
 * live blocks (docs/perf-issue15.md, section 11). */
#define NP_CHUNK_SHIFT 24
#define NP_CHUNK_SIZE ((size_t)1 << NP_CHUNK_SHIFT)
#define NP_CHUNK_PAGES (NP_CHUNK_SIZE / NP_PAGE_SIZE)
#define NP_CHUNK_MAGIC 0x4e554d41u /* "NUMA" */
/* One metadata slot per 128 KiB: a slab starts on that boundary and is at least that long
 * (malloc/sizeclass.h). With 64 KiB slabs a class of 512-1,024-byte blocks held 64-128 of them
 * per slab, and a thread whose frees land at random across its slabs took a slab miss every
 * 8-10 mallocs (larson, mstress: docs/perf-issue15.md, section 28). */
#define NP_META_SHIFT 17
/* A slot holds a slab header: three cache lines, the owner's, the read-mostly one every free
 * reads, and the remote list's (malloc/slab.h), rounded up to a power of two. */
#define NP_META_SIZE 256
/* Address bits the byte map covers (x86-64 user space with 4-level paging). */
#define NP_ADDR_BITS 47

enum np_page_state {
	NP_PAGE_HEADER = 0, /* part of the chunk header: never handed out */
	NP_PAGE_FREE,       /* first page of a free run in the node's pool */
	NP_PAGE_FREE_END,   /* last page of a free run of 2 or more pages */
	NP_PAGE_PCP,        /* first page of a run sitting in a thread's page cache */
	NP_PAGE_USED,       /* first page of a run handed out (page API or a large malloc) */
	NP_PAGE_SLAB,       /* first page of a run carved into small objects */
	NP_PAGE_TAIL,       /* any other page of a run that is not free */
};

/* In a handed-out run's head np_page.user: the program bound or moved pages of the run itself
 * (np_chunk_note_program_move); the run is bound back when it comes back (np_chunk_rebind_run). */
#define NP_PAGE_USER_MOVED 0x80

/* np_page.order of a run that is not one of the page cache's power-of-two sizes. */
#define NP_ORDER_NONE 0xff

/* One per 4 KiB page of a chunk; meaningful fields are those of a run's first page (and the
 * last page of free runs, for coalescing). 32 bytes: a chunk's 4096 descriptors fill 32 pages. */
struct np_page {
	struct np_page *next, *prev; /* list links: a pool bin or a thread's page cache */
	void *owner;                 /* slab header for every page of a slab run, else NULL */
	uint32_t npages;             /* run length (first page, and last page of a free run) */
	uint8_t state;               /* enum np_page_state */
	uint8_t order;               /* page-cache order of a run of 1 << order pages, or NP_ORDER_NONE */
	uint8_t clean;               /* free run known to read as zeros (fresh or purged) */
	uint8_t user;                /* handed out: free for the layer above (malloc marks its
					runs in bit 0), but for NP_PAGE_USER_MOVED, which it keeps;
					a free run's head in a pool: the decay period it was
					returned in (pool.h) */
};

/* CACHED: a freed huge chunk its node's cache keeps for the next huge request (pool/huge.h);
 * its memory belongs to nobody, so a free of it is a double free. */
enum np_chunk_kind { NP_CHUNK_NORMAL = 1, NP_CHUNK_HUGE = 2, NP_CHUNK_INTERLEAVE = 3, NP_CHUNK_CACHED = 4 };

/* A normal chunk starts with its metadata slots (32 KiB), then its page descriptors (128 KiB).
 * The chunk's own fields live in metadata slot 0, the slot of the chunk's first 128 KiB step,
 * which is header: no run starts there, and no slab starts in any step the header reaches
 * into (slabs start on a step), so the slots of those steps are never a slab's header. The
 * descriptors of header pages stay zero: state NP_PAGE_HEADER, owner NULL. A huge chunk has
 * the same metadata slots (all but slot 0 zero, so free() never reads its data as a slab
 * header), then its data at data_offset: no descriptors, so a huge block costs 32 KiB of
 * address space beyond its own (what `ulimit -v` counts), not the whole header's 160 KiB. */
struct np_chunk {
	union {
		struct {
			uint32_t magic;
			uint8_t kind;              /* enum np_chunk_kind */
			uint8_t nilv;              /* interleave: number of nodes in ilv[] */
			uint8_t user;              /* huge: free for the layer above */
			uint8_t shard;             /* normal: the pool shard that owns it (pool.h) */
			uint16_t node;             /* dense node index the memory is bound to */
			uint8_t thp;               /* normal: advised MADV_HUGEPAGE when mapped (NUMAPAGE_THP) */
			/* Huge: the program bound or moved pages of it itself
			 * (np_chunk_note_program_move): not kept for reuse. Set from any thread. */
			uint8_t program_moved;
			/* Normal: no page from this index on was handed out since the chunk was
			 * mapped or since a purge gave back the free run that reached it (0 for a
			 * fresh chunk), so those pages cost a fault when used. The pool takes long
			 * runs where they need the fewest such pages (pool.c, take_locked). */
			uint32_t touched;
			/* Normal: pages from the start that are read-write (np_chunk_commit); the rest of
			 * the chunk is reserved address space only. Rises under the owning shard's lock,
			 * never falls; read without it by a refused purge (relaxed atomics). */
			uint32_t committed;
			/* Always NULL: where a slab header in this slot would hold its owner, so that
			 * free(), which reads the metadata slot of any pointer's step as a slab
			 * header, never takes slot 0 for a slab of the calling thread (slab.h). */
			void *no_owner NP_ALIGNED(NP_CACHELINE);
			size_t size;               /* bytes mapped, header included */
			size_t data_offset;        /* huge: offset of the user's memory */
			struct np_chunk *next;     /* the owning shard's chunk list (normal), cache (cached) */
			uint8_t ilv[NP_MAX_NODES]; /* interleave: page a is on ilv[(a >> 12) % nilv] */
			/* Huge, and cached (pool/huge.c): bytes from the data's start that may not read
			 * as zeros (0: all clean), and when it was cached (np_os_clock_ns). */
			size_t dirty;
			uint64_t cached_at;
			/* Huge: the mapping it was cut from (np_chunk_split_huge). Pieces of one
			 * mapping that lie end to end are one range of the kernel's, which joins
			 * back and grows whole (mremap refuses a range over two mappings). */
			uint64_t mapping;
		};
		/* Room for the layer above (the malloc layer's slab headers): one slot per step
		 * of 1 << NP_META_SHIFT bytes, for runs that start on a step. Untouched slots cost
		 * no memory. */
		uint8_t meta[NP_CHUNK_SIZE >> NP_META_SHIFT][NP_META_SIZE];
	};
	struct np_page pages[NP_CHUNK_PAGES]; /* NORMAL only */
};

#define NP_CHUNK_HEADER_PAGES (sizeof(struct np_chunk) / NP_PAGE_SIZE)
/* Where a huge chunk's data may start: behind the metadata slots (it has no descriptors). */
#define NP_CHUNK_HUGE_HEADER offsetof(struct np_chunk, pages)
#define NP_CHUNK_DATA_PAGES (NP_CHUNK_PAGES - NP_CHUNK_HEADER_PAGES)
/* A normal chunk is made read-write this many pages (2 MiB) at a time as the pool hands its
 * pages out (np_chunk_commit). */
#define NP_CHUNK_COMMIT_PAGES 512
_Static_assert(sizeof(struct np_page) == 32, "page descriptors are 32 bytes");
_Static_assert(sizeof(struct np_chunk) % NP_PAGE_SIZE == 0, "the chunk header is whole pages");
_Static_assert(offsetof(struct np_chunk, mapping) + sizeof(uint64_t) <= offsetof(struct np_chunk, meta) + NP_META_SIZE,
	       "the chunk's fields fit in metadata slot 0");

/* Granule map values. START: a chunk starts here and covers the whole granule (a normal
 * chunk, or a huge one of a granule or more): any address in it is the chunk's. PART: a huge
 * chunk smaller than a granule starts here; the kernel may map anything in the rest (a
 * library, a thread's stack, the start-up allocator's region), so only np_chunk_find, which
 * checks the chunk's size, says whose an address is. CONT: a huge chunk goes on through it
 * (its last one, too, may be partly someone else's). */
enum { NP_GRANULE_NONE = 0, NP_GRANULE_START = 1, NP_GRANULE_CONT = 2, NP_GRANULE_PART = 3 };
/* The mark of the first granule of a huge chunk of `size` bytes: START when it covers the
 * granule, else PART. A chunk's first granule is marked again whenever its size changes. */
NP_INLINE uint8_t np_chunk_huge_mark(size_t size)
{
	return size >= NP_CHUNK_SIZE ? NP_GRANULE_START : NP_GRANULE_PART;
}
/* One byte per granule of the user address space: 8 MiB of zero-filled BSS, of which only the
 * pages covering our chunks are ever written (the rest stays the shared zero page). Read-only
 * from np_chunk_init_map on, but for the pages written. */
extern uint8_t np_granule_map[(size_t)1 << (NP_ADDR_BITS - NP_CHUNK_SHIFT)];
/* Once, before the first chunk is mapped (np_pool_init): the map's pages become read-only
 * zeros (np_os_reserve_readonly_at), and each is made writable when a chunk it covers is
 * marked. Under vm.overcommit_memory 2 they are then charged for the pages written, not 8 MiB. */
void np_chunk_init_map(void);

NP_INLINE struct np_chunk *np_chunk_of(const void *p)
{
	return (struct np_chunk *)((uintptr_t)p & ~(uintptr_t)(NP_CHUNK_SIZE - 1));
}

NP_INLINE size_t np_chunk_page_index(const struct np_chunk *c, const void *p)
{
	return ((uintptr_t)p - (uintptr_t)c) >> NP_PAGE_SHIFT;
}

/* The touched mark of run [pg, pg + n)'s chunk (np_chunk.touched), under its pool shard's lock:
 * it rises to the run's end when the run is handed out or grown, and falls to the run's start
 * when the run, free and given back to the OS, reaches it. */
NP_INLINE void np_chunk_raise_touched(const struct np_page *pg, size_t n)
{
	struct np_chunk *c = np_chunk_of(pg);
	size_t end = (size_t)(pg - c->pages) + n;
	if (c->touched < end)
		c->touched = (uint32_t)end;
}
/* Makes the pages of chunk c below index `end` read-write (np_os_commit), in steps of
 * NP_CHUNK_COMMIT_PAGES; under the owning shard's lock. False when the kernel refuses (no
 * commit left under vm.overcommit_memory 2): nothing changed. */
NP_NOINLINE bool np_chunk_commit_slow(struct np_chunk *c, size_t end);
NP_INLINE bool np_chunk_commit(struct np_chunk *c, size_t end)
{
	return end <= __atomic_load_n(&c->committed, __ATOMIC_RELAXED) || np_chunk_commit_slow(c, end);
}
NP_INLINE void np_chunk_lower_touched(const struct np_page *pg, size_t n)
{
	struct np_chunk *c = np_chunk_of(pg);
	size_t idx = (size_t)(pg - c->pages);
	if (idx < c->touched && idx + n >= c->touched)
		c->touched = (uint32_t)idx;
}

NP_INLINE struct np_page *np_chunk_page(struct np_chunk *c, const void *p)
{
	return &c->pages[np_chunk_page_index(c, p)];
}

NP_INLINE void *np_page_addr(const struct np_page *pg)
{
	struct np_chunk *c = np_chunk_of(pg);
	return (char *)c + ((size_t)(pg - c->pages) << NP_PAGE_SHIFT);
}

/* The metadata slot of the step-aligned run (NP_META_SHIFT) starting at page descriptor pg. */
NP_INLINE void *np_page_meta(struct np_page *pg)
{
	struct np_chunk *c = np_chunk_of(pg);
	return c->meta[(size_t)(pg - c->pages) >> (NP_META_SHIFT - NP_PAGE_SHIFT)];
}

NP_INLINE int np_page_node(const struct np_page *pg)
{
	return np_chunk_of(pg)->node;
}

/* A run's head state is read by a pool merging the run's free neighbour (under the pool lock)
 * while the run's owner may be changing it without that lock (USED <-> PCP, -> SLAB). Both
 * sides use these relaxed atomics: owners only move among states a merge never takes for free
 * (FREE and FREE_END are set under the pool lock only), so any value read is right, and the
 * race is defined behaviour (and quiet under TSan). Plain moves on x86-64. */
NP_INLINE uint8_t np_page_state(const struct np_page *pg)
{
	return __atomic_load_n(&pg->state, __ATOMIC_RELAXED);
}

NP_INLINE void np_page_set_state(struct np_page *pg, enum np_page_state state)
{
	__atomic_store_n(&pg->state, (uint8_t)state, __ATOMIC_RELAXED);
}

/* The index of the page that heads the run holding page index i of normal chunk c: i, or the
 * nearest page before it that is not a TAIL. A handed-out run's pages after its first are
 * TAIL (np_pool_mark_used); between a free run's two ends the pages keep whatever they held,
 * so from one of those this finds a page of that same free run, whose state may be stale but
 * is never a live run's. Read without locks: for reports and marks only. */
NP_INLINE size_t np_chunk_run_head(const struct np_chunk *c, size_t i)
{
	while (i > NP_CHUNK_HEADER_PAGES && np_page_state(&c->pages[i]) == NP_PAGE_TAIL)
		i--;
	return i;
}

/* A page's owner (the slab header of a slab run's every page, else NULL) is read by free's
 * pointer decoder on any pointer (ptr.c), from the first page of the pointer's 128 KiB step,
 * while that page may belong to another thread's run that is changing hands (pool, page
 * cache). Slabs cover whole steps, so such a page's owner is NULL before and after; relaxed
 * atomics on both sides make the race defined behaviour (and quiet under TSan). */
NP_INLINE void *np_page_owner(const struct np_page *pg)
{
	return __atomic_load_n(&pg->owner, __ATOMIC_RELAXED);
}

NP_INLINE void np_page_set_owner(struct np_page *pg, void *owner)
{
	__atomic_store_n(&pg->owner, owner, __ATOMIC_RELAXED);
}

/* True when address a lies in the start granule of one of our chunks that covers it whole
 * (NP_GRANULE_START): the address is in the chunk. One shift serves both the range test and
 * the index (no separate test of the high bits: free's fast path). */
NP_INLINE bool np_granule_is_start(uintptr_t a)
{
	uintptr_t g = a >> NP_CHUNK_SHIFT;
	return NP_LIKELY(g < sizeof np_granule_map) &&
	       __atomic_load_n(&np_granule_map[g], __ATOMIC_RELAXED) == NP_GRANULE_START;
}

/* The chunk whose granule holds p, or NULL: the start granule of a normal chunk or of a huge
 * chunk of a granule or more (the common case: a pointer we handed out). NULL for the rest,
 * which np_chunk_find answers (a huge chunk smaller than its granule, or p not ours). */
NP_INLINE struct np_chunk *np_chunk_lookup(const void *p)
{
	if (NP_LIKELY(np_granule_is_start((uintptr_t)p)))
		return np_chunk_of(p);
	return NULL;
}

/* The chunk whose mapping holds p, or NULL: as np_chunk_lookup, and also a huge chunk whose
 * later granule holds p, or one smaller than the granule it starts (NP_GRANULE_PART) when p
 * lies within it. */
struct np_chunk *np_chunk_find(const void *p);

/* Maps a normal chunk for dense node `node`, binds it (unless the topology is a rehearsal),
 * initialises its header and marks it in the granule map. NULL on failure (counted). With the
 * default binding (MPOL_PREFERRED), where the header page landed is checked (move_pages): the
 * kernel puts pages elsewhere when the node is below its watermark, and a chunk whose pages
 * are not on its node is unmapped rather than counted as that node's (*spilled set: the node
 * is full). low: the node is nearly full (np_pool.low): every page is faulted in now and a
 * sample of them checked, so that the pages handed out later are where the chunk says.
 * *why: the reason for a NULL. */
enum np_chunk_refusal {
	NP_CHUNK_NO_SPACE = 1,   /* no mapping: the address space (or the kernel's memory) is short */
	NP_CHUNK_SPILLED = 2,    /* the pages landed on another node: the node is full */
	NP_CHUNK_NOT_BOUND = 3,  /* the kernel would not bind it to the node (cpuset, no memory) */
};
struct np_chunk *np_chunk_map(int node, bool low, enum np_chunk_refusal *why);
/* Unmaps a chunk whose memory nobody holds (a normal chunk whose pool has taken its free run
 * out, or a huge one through np_chunk_unmap_huge) and clears its granules; waits for the
 * readers inside np_chunk_guard_enter first. */
void np_chunk_unmap(struct np_chunk *c);
/* A reader of the granule map that may be given any address, the program's own memory
 * included (numa_page_node_of; the program's mbind and move_pages, np_chunk_note_program_move),
 * brackets its reads of the map and of the chunk headers the map leads it to with these:
 * meanwhile no chunk is unmapped or moved (np_chunk_unmap and a huge chunk's move wait), so a
 * header found through a mark stays readable when the address is another mapping's beside a
 * chunk smaller than its granule and another thread frees that chunk (numa_page_node_of on the
 * program's page crashed there: a hostile test). Not free's: a pointer it is given is a live
 * block, whose chunk nobody unmaps meanwhile. np_chunk_guard_atfork_child: in a fork's child. */
void np_chunk_guard_enter(void);
void np_chunk_guard_leave(void);
void np_chunk_guard_atfork_child(void);
/* The mapping size of a huge chunk of `bytes` (header included): rounded up to one of four
 * sizes per doubling (steps of at most NP_CHUNK_HUGE_STEP), so that requests of nearly the same size share
 * a size and a freed chunk kept by its pool fits the next one. The tail is address space the
 * program may use (malloc_usable_size says so) but is not made resident by us. */
#define NP_CHUNK_HUGE_STEP ((size_t)4 << 20)
size_t np_chunk_huge_size(size_t bytes);
/* Past this many huge and interleaved chunks mapped at once (8192; tests lower it), new ones
 * are whole chunks long: each is a kernel mapping of its own, and the kernel caps mappings per
 * process (vm.max_map_count, 65530 by default: malloc, fopen and pthread_create all failed at
 * 65,479 live 6 MiB blocks, where glibc went past 200,000). Chunks of whole chunk sizes that the
 * kernel places side by side, with the same binding and name, merge into one mapping. Below
 * it, the finer sizes keep the tail short (with transparent huge pages "always", the partial
 * last 2 MiB of a whole-chunk mapping may be backed by a huge page). */
extern NP_HIDDEN long np_chunk_merge_above;
/* The process's address space is limited (RLIMIT_AS at start-up, np_os_address_limit: its
 * bytes in np_chunk_address_limit, else 0): a huge chunk is then sized to the page
 * (np_chunk_huge_size), runs longer than an eighth of a chunk get a chunk of their own
 * (malloc/large.h), and the huge cache holds little address space (pool/huge.c), so that a block
 * takes little more address space than it holds and a freed one leaves room for the program's
 * own mappings. Set by np_pool_init. */
extern NP_HIDDEN bool np_chunk_tight;
extern NP_HIDDEN size_t np_chunk_address_limit;
/* False for a request np_chunk_map_huge refuses whatever the address space holds: alignment
 * above 2^40, or bytes whose mapping size would wrap. */
bool np_chunk_huge_possible(size_t bytes, size_t align);
/* Maps a huge chunk of at least `bytes` user bytes aligned to `align` (a power of two <= the
 * chunk size), bound to `node` (its placement checked as np_chunk_map does, up to 64 MiB when
 * low; *spilled may be NULL), or interleaved page by page when node < 0: over the dense nodes
 * of mask `nodes` that have allowed memory, or over every allowed memory node when it is 0. */
struct np_chunk *np_chunk_map_huge(int node, uint64_t nodes, size_t bytes, size_t align, bool low, bool *spilled);
/* Unmaps a huge chunk and clears its granules. */
void np_chunk_unmap_huge(struct np_chunk *c);
/* True when p is where the data of one of the last 64 huge or interleaved chunks unmapped
 * began (and no chunk is there now): a free of it is a double free. */
bool np_chunk_was_unmapped(const void *p);
/* Grows huge chunk c to hold `bytes` user bytes without copying: extends the mapping in place,
 * or moves it (pages, binding and header together) to a fresh chunk-aligned range. Returns the
 * chunk (moved or not), or NULL when neither worked (c is unchanged; the caller copies). Only
 * for chunks whose data starts within their first granule. */
struct np_chunk *np_chunk_grow_huge(struct np_chunk *c, size_t bytes);
/* Cuts huge chunk c at `at` (a multiple of NP_CHUNK_SIZE past its data's start, a header and a
 * page short of its end at least): c keeps [c, c + at), and the rest becomes a huge chunk of its own (returned) of the same
 * node and mapping, its data behind its header; its kind is the caller's to set. written: the
 * bytes at `at` may hold data, cleared so that none reads as a slab header (chunk.h). Counted
 * among the chunks mapped: a piece is one until it joins again. */
struct np_chunk *np_chunk_split_huge(struct np_chunk *c, size_t at, bool written);
/* Huge chunk c, exactly NP_CHUNK_SIZE, of nobody (a cached one's first granule: huge.h's
 * np_huge_take_granule), made a normal chunk of its node in place: its header cleared, its
 * mapping and pages kept. dirty: bytes from its old data's start that may not read as zeros.
 * Returns the page index from which its pages are untouched (np_chunk.touched, set). */
size_t np_chunk_adopt_huge(struct np_chunk *c, size_t dirty);
/* True when huge chunk n lies right behind c and both were cut from one mapping. */
bool np_chunk_huge_adjoins(const struct np_chunk *c, const struct np_chunk *n);
/* Joins n (np_chunk_huge_adjoins) to c: its header reads as zeros again, and its range is
 * c's. Nobody may hold a block in n. */
void np_chunk_join_huge(struct np_chunk *c, struct np_chunk *n);
/* Chunks of their own (huge and interleaved blocks, live or kept for reuse) mapped now, and
 * their mappings' bytes (racy reads: mallinfo2's hblks and hblkhd). */
void np_chunk_huge_totals(size_t *chunks, size_t *bytes);
/* Unmaps the tail of a huge chunk past its first `size` bytes (a multiple of the page size
 * that still covers the header) and clears the granules no longer covered. */
void np_chunk_trim_huge(struct np_chunk *c, size_t size);
/* Gives the pages of [p, p + size) (page-aligned, free memory of a chunk) back to the OS, so
 * that they read as zeros. True when they went back; false when the kernel refused (madvise
 * fails on locked memory: mlock, mlockall), and then, when holds_data, they are zeroed in place
 * (resident, as the lock asks): either way the range reads as zeros afterwards, which is what
 * a purged run or chunk promises calloc. */
bool np_chunk_purge(void *p, size_t size, bool holds_data);
/* True when the program bound memory of [p, p + size) (page-aligned, in chunk c) to another
 * node itself (mbind, libnuma's numa_tonode_memory on a malloc block): the kernel keeps the
 * range's policy, and its pages stay or come back where the program put them, for whoever
 * gets the memory next. Its first page and the page at three quarters are asked (two
 * get_mempolicy(2)): a bind of the whole block, of a part from its start, or of a part to its
 * end from before three quarters of it is seen; one of a part between is not. False without
 * asking where the library binds nothing (one memory node, a rehearsal, NUMAPAGE_BIND=none). */
bool np_chunk_bound_elsewhere(const struct np_chunk *c, const void *p, size_t size);
/* The program bound or moved pages of [p, p + len) itself, the call done (mbind, move_pages:
 * malloc/program_bind.c wraps libnuma's): each handed-out run of our normal chunks the range
 * reaches is marked (NP_PAGE_USER_MOVED in its head), each huge chunk noted, so that the memory
 * is bound and placed as the library's again when it comes back (np_chunk_rebind_run,
 * np_chunk_program_moved). Before, the kernel kept the program's policy and pages for whoever
 * got the memory next. Free runs the range reaches (the program's error) are not marked.
 * Nothing where there is nowhere else to place memory (a rehearsal, one memory node). */
void np_chunk_note_program_move(const void *p, size_t len);
/* True when the program bound or moved pages of huge chunk c itself: not kept for reuse. */
NP_INLINE bool np_chunk_program_moved(const struct np_chunk *c)
{
	return __atomic_load_n(&c->program_moved, __ATOMIC_RELAXED) != 0;
}
void np_chunk_rebind_run_slow(struct np_page *run);
/* Run `run` of a normal chunk comes back from the layer above (a free, an emptied slab): when
 * it is marked (NP_PAGE_USER_MOVED), it is bound to the chunk's node again (the default policy
 * under NUMAPAGE_BIND=none), its pages are given back, so that the next user's pages fault in
 * where the chunk is for, and the mark goes. A run not marked pays the test of its head. */
NP_INLINE void np_chunk_rebind_run(struct np_page *run)
{
	if (NP_UNLIKELY(__atomic_load_n(&run->user, __ATOMIC_RELAXED) & NP_PAGE_USER_MOVED))
		np_chunk_rebind_run_slow(run);
}
/* Makes [p, p + size) of a block just handed out read as zeros (calloc), at the cost of what
 * was written there: from NP_CHUNK_ZERO_PROBE bytes on, page-aligned ranges are asked which
 * pages are resident (mincore); those that hold data are cleared (not those that read as zeros
 * already: the zero page a read mapped), the others given back (a page never written costs
 * nothing, one swapped out must not come back), so that a large block written only in part
 * does not become resident whole. Smaller ranges are cleared. */
#define NP_CHUNK_ZERO_PROBE ((size_t)1 << 20)
void np_chunk_zero(void *p, size_t size);
/* The user's bytes of a huge or interleaved chunk (its mapping past the header). */
NP_INLINE size_t np_chunk_data_bytes(const struct np_chunk *c)
{
	return c->size - c->data_offset;
}
/* Node of the page holding p inside chunk c (differs per page only for interleaved chunks). */
int np_chunk_node_at(const struct np_chunk *c, const void *p);
/* Checks the descriptors of a normal chunk; NULL when sound, else what is wrong. */
const char *np_chunk_check(struct np_chunk *c);

#endif /* NP_CHUNK_H */
