/*
 * chunk.c — mapping, binding and registering chunks (see chunk.h). No lock: each chunk's
 * granule bytes are written by the one thread that mapped it, before any of its memory is
 * handed out; readers use relaxed loads (see np_chunk_lookup).
 */
#include "pool/chunk.h"

#include <errno.h>
#include <string.h>

#include "log.h"
#include "options.h"
#include "os.h"
#include "topology/topology.h"
#include "vmstat/vmstat.h"

uint8_t np_granule_map[(size_t)1 << (NP_ADDR_BITS - NP_CHUNK_SHIFT)] NP_LARGE_BSS NP_ALIGNED(NP_PAGE_SIZE);

/* The map is read-only until its pages are written (np_chunk_init_map): as BSS it was 8 MiB of
 * every process's charge under vm.overcommit_memory 2, which ignores that it is never
 * touched. One bit per page of the map (64 GiB of address space) that was made writable. */
#define MAP_PAGES (sizeof np_granule_map / NP_PAGE_SIZE)
static uint64_t map_rw[MAP_PAGES / 64];
static bool map_readonly;

void np_chunk_init_map(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	/* Nothing has been written to it yet: the pages are replaced by zeros. */
	map_readonly = np_os_reserve_readonly_at(np_granule_map, sizeof np_granule_map) == 0;
}

/* The map's bytes for [start, start + size) made writable before a chunk there is marked:
 * false when the kernel refuses (no commit left under mode 2), and the caller gives the
 * mapping up. */
static bool granules_writable(const void *start, size_t size)
{
	if (!map_readonly)
		return true;
	uintptr_t g0 = (uintptr_t)start >> NP_CHUNK_SHIFT, g1 = ((uintptr_t)start + size - 1) >> NP_CHUNK_SHIFT;
	for (uintptr_t pg = g0 / NP_PAGE_SIZE; pg <= g1 / NP_PAGE_SIZE && pg < MAP_PAGES; pg++) {
		uint64_t bit = (uint64_t)1 << (pg % 64);
		if (__atomic_load_n(&map_rw[pg / 64], __ATOMIC_ACQUIRE) & bit)
			continue;
		if (np_os_commit(&np_granule_map[pg * NP_PAGE_SIZE], NP_PAGE_SIZE) != 0)
			return false;
		__atomic_fetch_or(&map_rw[pg / 64], bit, __ATOMIC_RELEASE);
	}
	return true;
}

/* Marks [start, start + size) as one chunk's granules (first: NP_GRANULE_START, or the
 * np_chunk_huge_mark), or as none of ours (NP_GRANULE_NONE). A range marked as a chunk's is
 * granules_writable first. */
static void mark(const void *start, size_t size, uint8_t first)
{
	uintptr_t g = (uintptr_t)start >> NP_CHUNK_SHIFT;
	uintptr_t end = ((uintptr_t)start + size - 1) >> NP_CHUNK_SHIFT;
	__atomic_store_n(&np_granule_map[g], first, __ATOMIC_RELEASE);
	for (g++; g <= end; g++)
		__atomic_store_n(&np_granule_map[g], first ? NP_GRANULE_CONT : NP_GRANULE_NONE, __ATOMIC_RELEASE);
}

/* The binding chunks get: NUMAPAGE_BIND's, but strict where the process may take memory from
 * one node only (`numactl --membind`, a cpuset). A preferred bind, a VMA policy, overrides the
 * task's MPOL_BIND: on a node running low the kernel put a chunk's pages on a node the program
 * had excluded, the chunk was refused, and every malloc failed with ENOMEM (a hostile review in
 * the 2-node guest). Left unbound, a chunk went where the touching thread's own policy sent it
 * (one that set MPOL_DEFAULT since: its CPU's node; a review of that first fix). */
static int bind_policy(void)
{
	int policy = np_opt_load(bind);
	return policy == NP_BIND_PREFERRED && np_topo_table.nmem_nodes < 2 ? NP_BIND_STRICT : policy;
}

/* Binds [p, p+size) to dense node `node`. 0 when the memory may be used as that node's. */
static int bind_range(void *p, size_t size, int node)
{
	const struct np_topo *t = &np_topo_table;
	if (!t->is_system) {
		/* Rehearsal: the fixture's nodes are not this machine's; pages carry the logical
		 * node only. Counted, not failed. */
		np_vmstat_add(NULL, node, NUMA_PAGE_STAT_bind_skipped, 1);
		return 0;
	}
	if (t->nnodes < 2)
		return 0; /* one node: the pages have nowhere else to go (no libnuma loaded: os.h) */
	int rc = np_os_bind(p, size, t->node[node].os_id, bind_policy());
	if (rc == 0)
		return 0;
	np_vmstat_add(NULL, node, NUMA_PAGE_STAT_bind_fail, 1);
	/* A kernel without NUMA calls (or a sandbox that forbids them) cannot place memory at
	 * all: the memory is as good as any, keep it. Any other refusal (the node is not in the
	 * cpuset's mems, or has no memory) means the pages would land elsewhere while we tagged
	 * them with this node: give the chunk back and let the fallback order serve. */
	if (rc == -ENOSYS || rc == -EPERM)
		return 0;
	return rc;
}

/* Where the kernel put the pages of [start, start + size) bound to `node` just now: with
 * MPOL_PREFERRED it puts them elsewhere once the node is below its watermark. Strict binding
 * never does (it fails or reclaims instead) and no binding lets first touch decide: not asked.
 * Always the page just written at `touched`; when the node is nearly full (`low`), the whole
 * range is faulted in first and 64 pages spread over it are asked as well (when it is at most
 * NP_CHUNK_VERIFY_MAX: a larger one would fault in memory the program may never touch). True
 * when any of them is on another node. */
#define VERIFY_SAMPLES 64
#define NP_CHUNK_VERIFY_MAX ((size_t)64 << 20)

/* Whether spilled_elsewhere asks at all (several nodes of this machine, a preferred binding). */
static bool verifies(void)
{
	const struct np_topo *t = &np_topo_table;
	return t->is_system && t->nnodes >= 2 && bind_policy() == NP_BIND_PREFERRED;
}

/* Whether spilled_elsewhere faults a range of size bytes in and samples it: the pages must be
 * read-write first (np_chunk_map commits the whole chunk then, and only then). */
static bool verifies_all(size_t size, bool low)
{
	return low && size <= NP_CHUNK_VERIFY_MAX && verifies();
}

static bool spilled_elsewhere(void *touched, char *start, size_t size, int node, bool low)
{
	const struct np_topo *t = &np_topo_table;
	if (!verifies())
		return false;
	void *addr[VERIFY_SAMPLES + 1];
	int status[VERIFY_SAMPLES + 1], n = 0;
	addr[n++] = (void *)((uintptr_t)touched & ~(uintptr_t)(NP_PAGE_SIZE - 1));
	if (verifies_all(size, low) && np_os_populate(start, size) == 0) {
		size_t pages = size >> NP_PAGE_SHIFT, step = pages / VERIFY_SAMPLES ? pages / VERIFY_SAMPLES : 1;
		for (size_t k = 0; k < pages && n <= VERIFY_SAMPLES; k += step)
			addr[n++] = start + (k << NP_PAGE_SHIFT);
	}
	if (np_os_nodes_of(addr, n, status) < 0)
		return false;
	for (int i = 0; i < n; i++)
		if (status[i] >= 0 && status[i] != t->node[node].os_id)
			return true;
	return false;
}

static void name_range(void *p, size_t size, int node)
{
	char name[32];
	np_format(name, sizeof name, "numapage:node%d", np_topo_table.node[node].os_id);
	np_os_name(p, size, name);
}

/* NUMAPAGE_THP: 2 MiB pages for a new mapping, asked before its first write (a 2 MiB range
 * with a 4 KiB page in it keeps faulting 4 KiB pages). Measured on a 2-vCPU guest whose THP
 * setting is madvise: run time -25% and peak RSS +55% over bench/run.py's workloads
 * (docs/perf-issue15.md, section 8), hence off unless asked for. Off is advised too
 * (MADV_NOHUGEPAGE, before the first write as well), so that it means the same under a kernel
 * whose setting is `always` (Debian's): there the chunks got 2 MiB pages unasked, and
 * khugepaged collapsed the 2 MiB ranges around pages a purge had given back, resident again
 * (the VM tier's trim_purges_free_pages_inside_slabs found 681 and 972 such pages, two and
 * three ranges' worth, in runs where khugepaged's scan met the trim). */
/* True when the range was advised MADV_HUGEPAGE. */
static bool advise_page_size(void *p, size_t size)
{
	if (np_opt_load(thp)) {
		(void)np_os_hugepage(p, size);
		return true;
	}
	(void)np_os_nohuge(p, size);
	return false;
}

/* A chunk is reserved whole and made read-write as the pool hands its pages out: under
 * vm.overcommit_memory 2 (which PostgreSQL's documentation recommends) the kernel ignores
 * MAP_NORESERVE and charged every chunk's 16 MiB to the commit limit, for however few pages
 * were in use; now what is committed is the header and the 2 MiB steps the pool reached. */
bool np_chunk_commit_slow(struct np_chunk *c, size_t end)
{
	size_t to = NP_MIN((end + NP_CHUNK_COMMIT_PAGES - 1) / NP_CHUNK_COMMIT_PAGES * NP_CHUNK_COMMIT_PAGES,
			   (size_t)NP_CHUNK_PAGES);
	if (np_os_commit((char *)c + ((size_t)c->committed << NP_PAGE_SHIFT), (to - c->committed) << NP_PAGE_SHIFT) != 0)
		return false;
	__atomic_store_n(&c->committed, (uint32_t)to, __ATOMIC_RELAXED);
	return true;
}

struct np_chunk *np_chunk_map(int node, bool low, enum np_chunk_refusal *why)
{
	*why = NP_CHUNK_NO_SPACE;
	struct np_chunk *c = np_os_reserve(NP_CHUNK_SIZE, NP_CHUNK_SIZE);
	if (!c)
		return NULL;
	if (bind_range(c, NP_CHUNK_SIZE, node) < 0) {
		np_os_unmap(c, NP_CHUNK_SIZE);
		*why = NP_CHUNK_NOT_BOUND;
		return NULL;
	}
	bool thp = advise_page_size(c, NP_CHUNK_SIZE);
	/* The header, and where a low node's pages are verified, the data too (populated). */
	size_t data_bytes = NP_CHUNK_SIZE - NP_CHUNK_HEADER_PAGES * NP_PAGE_SIZE;
	bool verify = verifies_all(data_bytes, low);
	size_t commit = verify ? NP_CHUNK_SIZE : NP_CHUNK_HEADER_PAGES * NP_PAGE_SIZE;
	if (np_os_commit(c, commit) != 0) {
		np_os_unmap(c, NP_CHUNK_SIZE);
		return NULL;
	}
	c->committed = (uint32_t)(commit >> NP_PAGE_SHIFT);
	c->magic = NP_CHUNK_MAGIC; /* the first write: it faults the fields' page in */
	char *data = (char *)c + NP_CHUNK_HEADER_PAGES * NP_PAGE_SIZE;
	if (spilled_elsewhere(&c->magic, data, data_bytes, node, verify)) {
		np_os_unmap(c, NP_CHUNK_SIZE);
		*why = NP_CHUNK_SPILLED;
		return NULL;
	}
	if (!granules_writable(c, NP_CHUNK_SIZE)) {
		np_os_unmap(c, NP_CHUNK_SIZE);
		return NULL;
	}
	name_range(c, NP_CHUNK_SIZE, node);
	c->kind = NP_CHUNK_NORMAL;
	c->node = (uint16_t)node;
	c->thp = thp;
	c->size = NP_CHUNK_SIZE;
	c->data_offset = NP_CHUNK_HEADER_PAGES * NP_PAGE_SIZE;
	mark(c, NP_CHUNK_SIZE, NP_GRANULE_START);
	np_vmstat_add(NULL, node, NUMA_PAGE_STAT_chunks_mapped, 1);
	return c;
}

/* The readers inside np_chunk_guard_enter/leave (chunk.h), counted in one of two slots: a
 * reader counts in the slot of the epoch it entered in. An unmapper that finds readers moves the
 * epoch on and waits only for the slot of the epoch before, so readers that keep coming (a
 * thread calling numa_page_node_of in a loop) never keep it waiting: they count in the other
 * slot, and see the granules cleared. Unmappers that wait take turns (wait_lock). The calling
 * thread's depth and slot: a free in a signal handler that interrupted a reader does not wait
 * for its own thread's count (no call is async-signal-safe, numapage.h; this only spares the
 * simplest such program a hang). */
static unsigned guard_count[2];
static unsigned guard_epoch;
static int wait_lock;
static NP_TLS unsigned guard_depth;
static NP_TLS unsigned guard_slot;

void np_chunk_guard_enter(void)
{
	if (guard_depth) {
		guard_depth++;
		return;
	}
	for (;;) {
		unsigned slot = __atomic_load_n(&guard_epoch, __ATOMIC_RELAXED) & 1;
		__atomic_add_fetch(&guard_count[slot], 1, __ATOMIC_RELAXED);
		/* Against wait_for_readers' fences: either the unmapper sees this count, or this
		 * reader's reads of the map after it see the granules cleared. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		/* The epoch again: an unmapper that moved it on after the first read may not have
		 * seen this count, and the next one waits only for the other slot (a review: a
		 * reader preempted between the read and its count was counted where no unmapper
		 * looked, and read a header unmapped under it). Unchanged, any later flip's
		 * unmapper waits for this slot, and holds the others back meanwhile. */
		if ((__atomic_load_n(&guard_epoch, __ATOMIC_RELAXED) & 1) == slot) {
			guard_slot = slot;
			guard_depth = 1; /* after the count: a handler meanwhile counts for itself */
			return;
		}
		__atomic_sub_fetch(&guard_count[slot], 1, __ATOMIC_RELEASE);
	}
}

void np_chunk_guard_leave(void)
{
	unsigned slot = guard_slot; /* before the depth: a handler after it sets its own */
	if (guard_depth > 1) {
		guard_depth--;
		return;
	}
	guard_depth = 0;
	__atomic_sub_fetch(&guard_count[slot], 1, __ATOMIC_RELEASE);
}

NP_FORK_CHILD void np_chunk_guard_atfork_child(void)
{
	/* The forking thread was not inside (fork is not called from there), nor waiting; the
	 * other threads are gone. */
	NP_RESET(&guard_count[0], 0);
	NP_RESET(&guard_count[1], 0);
	NP_RESET(&wait_lock, 0);
}

/* After a range's granules were cleared and before it is unmapped or moved: the readers that
 * may have found a chunk header there through the map have left. Nearly always none is in:
 * a fence and two loads. */
static void wait_for_readers(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&guard_count[0], __ATOMIC_ACQUIRE) && !__atomic_load_n(&guard_count[1], __ATOMIC_ACQUIRE))
		return;
	while (__atomic_exchange_n(&wait_lock, 1, __ATOMIC_ACQUIRE))
		np_os_yield();
	unsigned old = __atomic_load_n(&guard_epoch, __ATOMIC_RELAXED) & 1;
	__atomic_store_n(&guard_epoch, old + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	unsigned self = guard_depth && guard_slot == old ? 1 : 0;
	for (unsigned n = 0; __atomic_load_n(&guard_count[old], __ATOMIC_ACQUIRE) > self; n++) {
		if (n < 64)
			__builtin_ia32_pause();
		else
			np_os_yield();
	}
	__atomic_store_n(&wait_lock, 0, __ATOMIC_RELEASE);
}

void np_chunk_unmap(struct np_chunk *c)
{
	size_t size = c->size;
	c->magic = 0;
	mark(c, size, NP_GRANULE_NONE);
	wait_for_readers();
	np_os_unmap(c, size);
}

bool np_chunk_tight;
size_t np_chunk_address_limit;

long np_chunk_merge_above = 8192;
static long huge_mapped; /* huge and interleaved chunks mapped now */
static size_t huge_bytes; /* their mappings' bytes */

void np_chunk_huge_totals(size_t *chunks, size_t *bytes)
{
	*chunks = (size_t)NP_MAX(__atomic_load_n(&huge_mapped, __ATOMIC_RELAXED), 0L);
	*bytes = __atomic_load_n(&huge_bytes, __ATOMIC_RELAXED);
}

/* Past np_chunk_merge_above chunks of their own: whole chunks, which merge (chunk.h). */
static bool merge_sizes(void)
{
	return !np_chunk_tight && __atomic_load_n(&huge_mapped, __ATOMIC_RELAXED) >= np_chunk_merge_above;
}

static uint64_t mappings; /* the last huge mapping's number (np_chunk.mapping) */

static uint64_t new_mapping(void)
{
	return __atomic_add_fetch(&mappings, 1, __ATOMIC_RELAXED);
}

struct np_chunk *np_chunk_split_huge(struct np_chunk *c, size_t at, bool written)
{
	np_assert(at % NP_CHUNK_SIZE == 0 && at < c->size && c->size - at >= NP_CHUNK_HUGE_HEADER + NP_PAGE_SIZE);
	struct np_chunk *t = (struct np_chunk *)((char *)c + at);
	if (written)
		memset(t, 0, NP_CHUNK_HUGE_HEADER);
	t->node = c->node;
	t->size = c->size - at;
	t->data_offset = NP_CHUNK_HUGE_HEADER;
	t->mapping = c->mapping;
	t->magic = NP_CHUNK_MAGIC;
	c->size = at;
	__atomic_store_n(&np_granule_map[(uintptr_t)t >> NP_CHUNK_SHIFT], np_chunk_huge_mark(t->size),
			 __ATOMIC_RELEASE);
	__atomic_add_fetch(&huge_mapped, 1, __ATOMIC_RELAXED);
	return t;
}

size_t np_chunk_adopt_huge(struct np_chunk *c, size_t dirty)
{
	int node = c->node;
	size_t end = c->data_offset + dirty; /* where what may not be zeros ends */
	__atomic_sub_fetch(&huge_bytes, c->size, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&huge_mapped, 1, __ATOMIC_RELAXED);
	/* Slots and descriptors zero, as a fresh chunk's: past `end` they read as zeros already. */
	memset(c, 0, NP_MIN(end, NP_CHUNK_HEADER_PAGES * NP_PAGE_SIZE));
	c->thp = advise_page_size(c, NP_CHUNK_SIZE);
	c->kind = NP_CHUNK_NORMAL;
	c->node = (uint16_t)node;
	c->size = NP_CHUNK_SIZE;
	c->committed = NP_CHUNK_PAGES; /* a huge block's mapping: read-write whole */
	c->data_offset = NP_CHUNK_HEADER_PAGES * NP_PAGE_SIZE;
	size_t touched = NP_MAX((end + NP_PAGE_SIZE - 1) >> NP_PAGE_SHIFT, (size_t)NP_CHUNK_HEADER_PAGES);
	c->touched = (uint32_t)NP_MIN(touched, (size_t)NP_CHUNK_PAGES);
	c->magic = NP_CHUNK_MAGIC;
	return c->touched;
}

bool np_chunk_huge_adjoins(const struct np_chunk *c, const struct np_chunk *n)
{
	return (const char *)c + c->size == (const char *)n && n->mapping == c->mapping &&
	       n->data_offset == NP_CHUNK_HUGE_HEADER;
}

void np_chunk_join_huge(struct np_chunk *c, struct np_chunk *n)
{
	size_t size = n->size;
	__atomic_store_n(&np_granule_map[(uintptr_t)n >> NP_CHUNK_SHIFT], NP_GRANULE_CONT, __ATOMIC_RELEASE);
	memset(n, 0, NP_META_SIZE); /* its fields: the rest of its header is zeros already */
	c->size += size; /* a granule or more before, as n starts one: c's mark stays START */
	__atomic_sub_fetch(&huge_mapped, 1, __ATOMIC_RELAXED);
}

size_t np_chunk_huge_size(size_t bytes)
{
	/* Four sizes per doubling: the step is a quarter of the largest power of two <= bytes, at
	 * least a page and at most NP_CHUNK_HUGE_STEP (4 MiB), so the tail that is never touched
	 * is under a quarter of the request and under 4 MiB. */
	size_t step = bytes < 4 * NP_PAGE_SIZE || np_chunk_tight ? NP_PAGE_SIZE
								  : ((size_t)1 << (63 - __builtin_clzll(bytes))) / 4;
	step = merge_sizes() ? NP_CHUNK_SIZE : NP_MIN(step, NP_CHUNK_HUGE_STEP);
	return (bytes + step - 1) & ~(step - 1);
}

bool np_chunk_huge_possible(size_t bytes, size_t align)
{
	if (align > ((size_t)1 << 40))
		return false;
	size_t off = (NP_CHUNK_HUGE_HEADER + align - 1) & ~(align - 1);
	return bytes <= SIZE_MAX / 2 - off - NP_CHUNK_SIZE;
}

struct np_chunk *np_chunk_map_huge(int node, uint64_t nodes, size_t bytes, size_t align, bool low, bool *spilled)
{
	if (spilled)
		*spilled = false;
	const struct np_topo *t = &np_topo_table;
	if (!np_chunk_huge_possible(bytes, align))
		return NULL;
	/* The data starts behind the metadata slots (no descriptors: chunk.h), at the first
	 * multiple of align. */
	size_t off = (NP_CHUNK_HUGE_HEADER + align - 1) & ~(align - 1);
	/* Interleaved chunks are never kept for reuse: exact size (whole chunks past
	 * np_chunk_merge_above). */
	size_t exact = merge_sizes() ? NP_CHUNK_SIZE : NP_PAGE_SIZE;
	size_t size = node >= 0 ? np_chunk_huge_size(off + bytes) : (off + bytes + exact - 1) & ~(exact - 1);
	/* Counted against the overcommit limit (np_os_map_accounted), so that a block the machine
	 * could never back is refused. A block aligned beyond a chunk has the gap between the
	 * header and the aligned data in its mapping (2^40-byte alignment: a TiB of address space
	 * for a block of a page): the gap stays address space only, and the data from off on is
	 * counted by itself (before, none of it was: 1 GiB alignment granted a TiB, and its
	 * chunk, cached, then granted a plain request of that size). */
	size_t chunk_align = align > NP_CHUNK_SIZE ? align : NP_CHUNK_SIZE;
	struct np_chunk *c = off <= NP_CHUNK_SIZE ? np_os_map_accounted(size, chunk_align) : np_os_map(size, chunk_align);
	if (!c)
		return NULL;
	if ((off > NP_CHUNK_SIZE && np_os_account((char *)c + off, size - off) < 0) || !granules_writable(c, size)) {
		np_os_unmap(c, size);
		return NULL;
	}
	if (node >= 0) {
		if (bind_range(c, size, node) < 0) {
			np_os_unmap(c, size);
			return NULL;
		}
		(void)advise_page_size(c, size);
		c->kind = NP_CHUNK_HUGE; /* the first write: it faults the fields' page in */
		if (spilled_elsewhere(&c->kind, (char *)c, size, node, low)) {
			np_os_unmap(c, size);
			if (spilled)
				*spilled = true;
			return NULL;
		}
		c->node = (uint16_t)node;
		c->mapping = new_mapping();
		name_range(c, size, node);
	} else {
		uint8_t ilv[NP_MAX_NODES];
		int os_ids[NP_MAX_NODES], n = 0;
		for (int i = 0; i < t->nnodes; i++)
			if (t->node[i].mem_allowed && (!nodes || ((nodes >> i) & 1))) {
				ilv[n] = (uint8_t)i;
				os_ids[n++] = t->node[i].os_id;
			}
		if (t->is_system) {
			/* Before anything touches the mapping: no transparent huge pages (the
			 * kernel would interleave whole 2 MiB pages), and the interleave policy
			 * (a header written first would fault its page in on the local node). The
			 * kernel then places page a on the mask's ((u32)(a >> 12) % n)'th node, the
			 * rule np_chunk_node_at follows; the VM tests check it with move_pages. */
			np_os_nohuge(c, size);
			if (t->nnodes > 1 && np_os_bind_interleave(c, size, os_ids, n) < 0)
				np_vmstat_add(NULL, ilv[0], NUMA_PAGE_STAT_bind_fail, 1);
		} else {
			np_vmstat_add(NULL, ilv[0], NUMA_PAGE_STAT_bind_skipped, 1);
		}
		for (int i = 0; i < n; i++)
			c->ilv[i] = ilv[i];
		c->nilv = (uint8_t)n;
		c->kind = NP_CHUNK_INTERLEAVE;
		c->node = ilv[0];
		np_os_name(c, size, "numapage:interleave");
	}
	c->magic = NP_CHUNK_MAGIC;
	c->size = size;
	c->data_offset = off;
	mark(c, size, np_chunk_huge_mark(size));
	np_vmstat_add(NULL, c->node, NUMA_PAGE_STAT_chunks_mapped, 1);
	__atomic_add_fetch(&huge_mapped, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&huge_bytes, size, __ATOMIC_RELAXED);
	return c;
}

/* The data addresses of the last NP_CHUNK_GONE huge and interleaved blocks unmapped, so that
 * freeing one again is reported as the double free it is, not as a pointer that was never
 * ours. A ring written with relaxed stores; read only on the way to an abort. */
#define NP_CHUNK_GONE 64
static uintptr_t gone[NP_CHUNK_GONE];
static unsigned gone_next;

static void remember_gone(uintptr_t data)
{
	unsigned slot = __atomic_fetch_add(&gone_next, 1, __ATOMIC_RELAXED) % NP_CHUNK_GONE;
	__atomic_store_n(&gone[slot], data, __ATOMIC_RELAXED);
}

void np_chunk_unmap_huge(struct np_chunk *c)
{
	remember_gone((uintptr_t)c + c->data_offset);
	__atomic_sub_fetch(&huge_bytes, c->size, __ATOMIC_RELAXED);
	np_chunk_unmap(c);
	__atomic_sub_fetch(&huge_mapped, 1, __ATOMIC_RELAXED);
}

bool np_chunk_was_unmapped(const void *p)
{
	for (unsigned i = 0; i < NP_CHUNK_GONE; i++)
		if (__atomic_load_n(&gone[i], __ATOMIC_RELAXED) == (uintptr_t)p)
			return true;
	return false;
}

struct np_chunk *np_chunk_grow_huge(struct np_chunk *c, size_t bytes)
{
	size_t old = c->size;
	if (c->kind != NP_CHUNK_HUGE || c->data_offset >= NP_CHUNK_SIZE || bytes > SIZE_MAX / 2 - NP_CHUNK_SIZE)
		return NULL;
	size_t size = np_chunk_huge_size(c->data_offset + bytes);
	if (size <= old)
		return c;
	if (!granules_writable(c, size))
		return NULL;
	int rc = np_os_remap(c, old, size, c);
	if (rc == -EFAULT) {
		/* The range is more than one mapping: the program advised part of it (NumPy's
		 * MADV_HUGEPAGE on its arrays), which mremap refuses. The library's own advice
		 * over all of it makes one mapping again (a helper's NumPy shape: 24 of 24 grows
		 * failed, each block mapped anew, peak RSS 1.58 times glibc's). */
		(void)advise_page_size(c, old);
		rc = np_os_remap(c, old, size, c);
	}
	if (rc == 0) { /* the address space behind it was free */
		__atomic_add_fetch(&huge_bytes, size - old, __ATOMIC_RELAXED);
		c->size = size;
		mark(c, size, np_chunk_huge_mark(size));
		return c;
	}
	struct np_chunk *d = np_os_map_accounted(size, NP_CHUNK_SIZE);
	if (!d)
		return NULL;
	if (!granules_writable(d, size)) {
		np_os_unmap(d, size);
		return NULL;
	}
	/* Off the granule map before the move: once the old range is gone, another thread may
	 * map a chunk there and mark it. */
	mark(c, old, NP_GRANULE_NONE);
	wait_for_readers();
	if (np_os_remap(c, old, size, d) != 0) {
		mark(c, old, np_chunk_huge_mark(old));
		np_os_unmap(d, size);
		return NULL;
	}
	d->size = size;
	d->mapping = new_mapping(); /* a range of its own now: no piece left behind joins it */
	__atomic_add_fetch(&huge_bytes, size - old, __ATOMIC_RELAXED);
	mark(d, size, np_chunk_huge_mark(size));
	/* The block's old address is a freed one now (a free of it is a double free). */
	remember_gone((uintptr_t)c + d->data_offset);
	return d;
}

void np_chunk_trim_huge(struct np_chunk *c, size_t size)
{
	size_t old = c->size;
	if (size >= old)
		return;
	uintptr_t last = ((uintptr_t)c + size - 1) >> NP_CHUNK_SHIFT;
	uintptr_t old_last = ((uintptr_t)c + old - 1) >> NP_CHUNK_SHIFT;
	c->size = size;
	__atomic_sub_fetch(&huge_bytes, old - size, __ATOMIC_RELAXED);
	__atomic_store_n(&np_granule_map[(uintptr_t)c >> NP_CHUNK_SHIFT], np_chunk_huge_mark(size),
			 __ATOMIC_RELEASE);
	for (uintptr_t g = last + 1; g <= old_last; g++)
		__atomic_store_n(&np_granule_map[g], NP_GRANULE_NONE, __ATOMIC_RELEASE);
	np_os_unmap((char *)c + size, old - size);
}

bool np_chunk_purge(void *p, size_t size, bool holds_data)
{
	int rc = np_os_purge(p, size);
	if (rc == 0)
		return true;
	static bool said;
	if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		np_verbose("madvise refused to give free pages back (%d; locked memory?): they are zeroed and kept",
			   rc);
	if (holds_data) {
		/* Of a normal chunk, only what was ever read-write: the rest reads as zeros when
		 * committed, and cannot be written before. */
		const struct np_chunk *c = np_chunk_lookup(p);
		if (c && c->kind == NP_CHUNK_NORMAL) {
			size_t off = (size_t)((char *)p - (char *)c);
			size_t rw = (size_t)__atomic_load_n(&c->committed, __ATOMIC_RELAXED) << NP_PAGE_SHIFT;
			size = off >= rw ? 0 : NP_MIN(size, rw - off);
		}
		memset(p, 0, size);
	}
	return false;
}

/* True when the page at p is bound to a node other than c's. */
static bool page_bound_elsewhere(const struct np_chunk *c, const void *p)
{
	int node;
	if (np_os_bound_node(p, &node) < 0)
		return false;
	/* Unbound: a bind the kernel refused when the chunk was mapped (bind_range keeps it). */
	return node != NP_OS_UNBOUND && node != np_topo_table.node[c->node].os_id;
}

bool np_chunk_bound_elsewhere(const struct np_chunk *c, const void *p, size_t size)
{
	const struct np_topo *t = &np_topo_table;
	if (!t->is_system || t->nmem_nodes < 2 || np_opt_load(bind) == NP_BIND_NONE || c->kind == NP_CHUNK_INTERLEAVE ||
	    !size)
		return false;
	/* The page at three quarters: inside the program's block, whose end lies in the last
	 * fifth of a huge chunk's data (np_chunk_huge_size's tail is under a quarter of it; not
	 * past np_chunk_merge_above chunks, whose sizes are whole chunks). */
	size_t late = (size / 4 * 3) & ~(size_t)(NP_PAGE_SIZE - 1);
	return page_bound_elsewhere(c, p) || (late && page_bound_elsewhere(c, (const char *)p + late));
}

/* Marks the handed-out runs of normal chunk c that pages [first, end) reach. The range's
 * first page may lie inside a run: its head is the page before it that is not a TAIL. Only
 * the heads of live runs are marked (USED, SLAB); descriptors of other runs are read without
 * their owners' locks, so a run changing hands at the time is stepped over by whatever length
 * it reads (at least a page), and a mark it may get costs one bind and purge at its return. */
static void mark_runs(struct np_chunk *c, size_t first, size_t end)
{
	size_t i = np_chunk_run_head(c, first);
	while (i < end) {
		struct np_page *pg = &c->pages[i];
		uint8_t st = np_page_state(pg);
		if (st == NP_PAGE_USED || st == NP_PAGE_SLAB)
			__atomic_fetch_or(&pg->user, NP_PAGE_USER_MOVED, __ATOMIC_RELAXED);
		/* A free run's last page holds the run's length too: a step from it would pass
		 * over what follows (a review). Heads only, then. */
		uint32_t n = st == NP_PAGE_HEADER || st == NP_PAGE_TAIL || st == NP_PAGE_FREE_END
				     ? 1
				     : __atomic_load_n(&pg->npages, __ATOMIC_RELAXED);
		i += n ? n : 1;
	}
}

void np_chunk_note_program_move(const void *p, size_t len)
{
	const struct np_topo *t = &np_topo_table;
	if (!t->is_system || t->nmem_nodes < 2 || !len)
		return;
	/* Only the address space the granule map covers can be ours (a length the kernel refuses
	 * may reach past it, or wrap). */
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(NP_PAGE_SIZE - 1), end = (uintptr_t)p + len;
	const uintptr_t limit = (uintptr_t)1 << NP_ADDR_BITS;
	if (end < a || end > limit)
		end = limit;
	while (a < end) {
		uintptr_t granule_end = (a | (NP_CHUNK_SIZE - 1)) + 1;
		/* The program's range: anything beside our chunks. A granule at a time, so that
		 * a long range keeps no unmap waiting. */
		np_chunk_guard_enter();
		struct np_chunk *c = np_chunk_find((const void *)a);
		if (c && c->kind == NP_CHUNK_NORMAL) {
			uintptr_t stop = end < granule_end ? end : granule_end;
			mark_runs(c, np_chunk_page_index(c, (const void *)a),
				  ((stop - (uintptr_t)c) + NP_PAGE_SIZE - 1) >> NP_PAGE_SHIFT);
		} else if (c && c->kind == NP_CHUNK_HUGE) {
			__atomic_store_n(&c->program_moved, 1, __ATOMIC_RELAXED);
			uintptr_t past = (uintptr_t)c + c->size; /* the rest of it noted too */
			if (past > granule_end)
				granule_end = past;
		}
		np_chunk_guard_leave();
		a = granule_end;
	}
}

void np_chunk_rebind_run_slow(struct np_page *run)
{
	struct np_chunk *c = np_chunk_of(run);
	__atomic_fetch_and(&run->user, (uint8_t)~NP_PAGE_USER_MOVED, __ATOMIC_RELAXED);
	void *p = np_page_addr(run);
	size_t size = (size_t)run->npages << NP_PAGE_SHIFT;
	/* The policy first, so that nothing faults in under the program's between the two. A
	 * refusal leaves the pages given back all the same: they fault in by the policy the range
	 * has, as before. */
	if (np_opt_load(bind) == NP_BIND_NONE)
		(void)np_os_unbind(p, size);
	else
		(void)bind_range(p, size, c->node);
	np_chunk_purge(p, size, true);
}

/* True when page p holds anything but zeros. The first line decides for nearly every page a
 * program wrote; a page that reads as zeros (the kernel's zero page mapped by a read, or
 * cleared before) is read whole, never written, which would make it resident. */
static bool page_written(const uint64_t *p)
{
	for (size_t i = 0; i < NP_PAGE_SIZE / 8; i += 8)
		if (p[i] | p[i + 1] | p[i + 2] | p[i + 3] | p[i + 4] | p[i + 5] | p[i + 6] | p[i + 7])
			return true;
	return false;
}

/* Clears the written pages of [q, q + n) (resident pages), consecutive ones with one memset (a
 * large memset streams past the cache). */
static void clear_written(char *q, size_t n)
{
	size_t from = 0, k = 0;
	for (; k < n; k += NP_PAGE_SIZE)
		if (!page_written((const uint64_t *)(void *)(q + k))) {
			if (k > from)
				memset(q + from, 0, k - from);
			from = k + NP_PAGE_SIZE;
		}
	if (k > from)
		memset(q + from, 0, k - from);
}

void np_chunk_zero(void *p, size_t size)
{
	char *a = p;
	if (size < NP_CHUNK_ZERO_PROBE || ((uintptr_t)a & (NP_PAGE_SIZE - 1))) {
		memset(a, 0, size);
		return;
	}
	unsigned char vec[1024]; /* 4 MiB of pages per question */
	size_t whole = size & ~(NP_PAGE_SIZE - 1);
	for (size_t off = 0; off < whole;) {
		size_t len = NP_MIN(whole - off, sizeof vec << NP_PAGE_SHIFT), pages = len >> NP_PAGE_SHIFT;
		if (np_os_resident(a + off, len, vec) < 0) {
			memset(a + off, 0, whole - off);
			break;
		}
		for (size_t i = 0; i < pages;) {
			size_t j = i;
			bool resident = vec[i] & 1;
			while (j < pages && (vec[j] & 1) == resident)
				j++;
			char *q = a + off + (i << NP_PAGE_SHIFT);
			size_t n = (j - i) << NP_PAGE_SHIFT;
			if (resident)
				clear_written(q, n);
			else
				np_chunk_purge(q, n, true); /* a refusal clears it */
			i = j;
		}
		off += len;
	}
	memset(a + whole, 0, size - whole);
}

struct np_chunk *np_chunk_find(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	if (a >> NP_ADDR_BITS)
		return NULL;
	uintptr_t g = a >> NP_CHUNK_SHIFT;
	for (;;) {
		uint8_t v = __atomic_load_n(&np_granule_map[g], __ATOMIC_ACQUIRE);
		if (v == NP_GRANULE_START || v == NP_GRANULE_PART)
			break;
		if (v != NP_GRANULE_CONT || g == 0)
			return NULL;
		g--;
	}
	struct np_chunk *c = (struct np_chunk *)(g << NP_CHUNK_SHIFT);
	if ((uintptr_t)p >= (uintptr_t)c + c->size)
		return NULL;
	return c;
}

int np_chunk_node_at(const struct np_chunk *c, const void *p)
{
	if (c->kind != NP_CHUNK_INTERLEAVE)
		return c->node;
	/* The page number truncated to 32 bits, as Linux's offset_il_node computes it (it
	 * matters when the node count is not a power of two). */
	return c->ilv[(uint32_t)((uintptr_t)p >> NP_PAGE_SHIFT) % c->nilv];
}

const char *np_chunk_check(struct np_chunk *c)
{
	if (c->magic != NP_CHUNK_MAGIC)
		return "bad chunk magic";
	if (c->kind != NP_CHUNK_NORMAL)
		return NULL;
	size_t i = NP_CHUNK_HEADER_PAGES;
	while (i < NP_CHUNK_PAGES) {
		struct np_page *pg = &c->pages[i];
		if (pg->state == NP_PAGE_TAIL || pg->state == NP_PAGE_FREE_END || pg->state == NP_PAGE_HEADER)
			return "a run starts with a tail page";
		uint32_t n = pg->npages;
		if (n == 0 || i + n > NP_CHUNK_PAGES)
			return "run length out of the chunk";
		if (pg->state == NP_PAGE_FREE) {
			if (n > 1 && (c->pages[i + n - 1].state != NP_PAGE_FREE_END || c->pages[i + n - 1].npages != n))
				return "free run without a matching end marker";
			if (i + n < NP_CHUNK_PAGES && c->pages[i + n].state == NP_PAGE_FREE)
				return "two adjacent free runs were not coalesced";
		} else {
			for (uint32_t k = 1; k < n; k++)
				if (c->pages[i + k].state != NP_PAGE_TAIL)
					return "a used run holds a non-tail page";
		}
		i += n;
	}
	return NULL;
}
