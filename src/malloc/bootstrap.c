/*
 * bootstrap.c — the start-up allocator (see bootstrap.h). Since the allocator initialises on
 * the first malloc, only np_init's own recursion (hwloc's discovery: tens of KiB, all freed
 * before it returns) and other threads' requests during those milliseconds come here; a
 * synthetic topology of thousands of PUs can ask for megabytes, so nothing is capped.
 *
 * Layout: regions (the static arena, then 1 MiB mappings) are carved by a bump pointer into
 * blocks of 32 << k bytes (k < NCLASSES, header included); a mapped block is a region of its
 * own. Every region starts with a `struct region`, linked into one list that np_bootstrap_owns
 * walks under the lock (a mapped region leaves the list before it is unmapped).
 */
#include "malloc/bootstrap.h"

#include <stdint.h>

#include "lock.h"
#include "os.h"

#define ARENA_BYTES (256u << 10)
#define REGION_BYTES ((size_t)1 << 20)
#define HEADER 16
#define MIN_BLOCK 32
#define NCLASSES 12        /* 32 B .. 64 KiB */
#define MAPPED 0xffffu     /* hdr.cls of a block with a mapping of its own */
#define MAX_ALIGN ((size_t)1 << 30)
#define BOOT_MAGIC 0x544f4f42u /* "BOOT" */
#define PAGE 4096

struct region {
	uintptr_t start, end;
	struct region *next;
};

/* Right before every block. back: bytes from the block's raw start to the pointer handed out. */
struct hdr {
	uint32_t magic;
	uint16_t cls;
	uint16_t live; /* 1 while handed out: a second free is caught */
	uint32_t back;
	uint32_t pages; /* MAPPED: the mapping's length in pages */
};
_Static_assert(sizeof(struct hdr) == HEADER, "the header is 16 bytes");

static char arena[ARENA_BYTES] NP_ALIGNED(PAGE) NP_LARGE_BSS;
static struct region *regions;
static uintptr_t bump, limit;      /* the carving region's free part */
/* Raw block starts of freed blocks, linked through their last word (it never overlaps the
 * header, which keeps saying the block is not live). */
static void *free_list[NCLASSES];
static size_t used_bytes;
/* The lowest start and highest end of every region there ever was: np_bootstrap_state answers
 * for any address outside without the lock. Every free of a huge block smaller than its
 * granule asks (ptr.c), from any thread. Widened under the lock, never narrowed. */
uintptr_t np_bootstrap_span_lo = UINTPTR_MAX, np_bootstrap_span_hi;
/* The spin lock: on the lock page, which fork writes anyway (lock.h). */
#define spin (np_lock_page.bootstrap)

static void lock(void)
{
	np_lock_depth_add(1);
	while (__atomic_exchange_n(&spin, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&spin, __ATOMIC_RELAXED))
			__builtin_ia32_pause();
}

static void unlock(void)
{
	__atomic_store_n(&spin, 0, __ATOMIC_RELEASE);
	np_lock_depth_add(-1);
}

static uintptr_t align_up(uintptr_t x, size_t a)
{
	return (x + a - 1) & ~(uintptr_t)(a - 1);
}

static struct hdr *hdr_of(const void *p)
{
	return (struct hdr *)((uintptr_t)p - HEADER);
}

static void **link_of(uintptr_t raw, unsigned k)
{
	return (void **)(raw + ((size_t)MIN_BLOCK << k) - sizeof(void *));
}

static struct region *add_region_locked(uintptr_t start, size_t bytes)
{
	struct region *r = (struct region *)start;
	r->start = start;
	r->end = start + bytes;
	r->next = regions;
	if (start < __atomic_load_n(&np_bootstrap_span_lo, __ATOMIC_RELAXED))
		__atomic_store_n(&np_bootstrap_span_lo, start, __ATOMIC_RELAXED);
	if (start + bytes > __atomic_load_n(&np_bootstrap_span_hi, __ATOMIC_RELAXED))
		__atomic_store_n(&np_bootstrap_span_hi, start + bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&regions, r, __ATOMIC_RELEASE);
	return r;
}

/* A raw block of class k, from its free list or carved; 0 when no region can be mapped. */
static uintptr_t class_block_locked(unsigned k)
{
	size_t bytes = (size_t)MIN_BLOCK << k;
	if (free_list[k]) {
		uintptr_t raw = (uintptr_t)free_list[k];
		free_list[k] = *link_of(raw, k);
		return raw;
	}
	if (!regions) {
		add_region_locked((uintptr_t)arena, ARENA_BYTES);
		bump = align_up((uintptr_t)arena + sizeof(struct region), MIN_BLOCK);
		limit = (uintptr_t)arena + ARENA_BYTES;
	}
	/* Blocks are aligned to their size (up to a page): aligned requests pick a class. */
	uintptr_t raw = align_up(bump, bytes < PAGE ? bytes : PAGE);
	if (raw + bytes > limit) {
		void *r = np_os_map(REGION_BYTES, PAGE);
		if (!r)
			return 0;
		add_region_locked((uintptr_t)r, REGION_BYTES);
		bump = align_up((uintptr_t)r + sizeof(struct region), MIN_BLOCK);
		limit = (uintptr_t)r + REGION_BYTES;
		raw = align_up(bump, bytes < PAGE ? bytes : PAGE);
	}
	bump = raw + bytes;
	return raw;
}

/* The block size a request needs (header and alignment included), and its class (NCLASSES
 * when it needs a mapping of its own). */
static unsigned class_of(size_t size, size_t align)
{
	size_t need = (align > HEADER ? align : HEADER) + (size > sizeof(void *) ? size : sizeof(void *));
	unsigned k = 0;
	while (k < NCLASSES && ((size_t)MIN_BLOCK << k) < need)
		k++;
	return align <= PAGE ? k : NCLASSES;
}

bool np_bootstrap_fits(size_t size, size_t align)
{
	return size <= ((size_t)MIN_BLOCK << (NCLASSES - 1)) && class_of(size, align < HEADER ? HEADER : align) < NCLASSES;
}

void np_bootstrap_atfork_prepare(void)
{
	lock();
}

void np_bootstrap_atfork_parent(void)
{
	unlock();
}

NP_FORK_CHILD void np_bootstrap_atfork_child(void)
{
	NP_RESET(&spin, 0);
}

void *np_bootstrap_alloc(size_t size, size_t align)
{
	if (align < HEADER)
		align = HEADER;
	if (size > ((size_t)1 << 40) || align > MAX_ALIGN)
		return NULL;
	/* A block's raw start is aligned to its size (up to a page), so the pointer lies exactly
	 * max(align, HEADER) past it; at least a word of data keeps the free-list link off the
	 * header. */
	size_t need = (align > HEADER ? align : HEADER) + (size > sizeof(void *) ? size : sizeof(void *));
	unsigned k = 0;
	while (k < NCLASSES && ((size_t)MIN_BLOCK << k) < need)
		k++;
	uintptr_t p;
	lock();
	if (k < NCLASSES && align <= PAGE) {
		uintptr_t raw = class_block_locked(k);
		if (!raw) {
			unlock();
			return NULL;
		}
		p = align_up(raw + HEADER, align);
		*hdr_of((void *)p) = (struct hdr){BOOT_MAGIC, (uint16_t)k, 1, (uint32_t)(p - raw), 0};
		used_bytes += (size_t)MIN_BLOCK << k;
	} else {
		unlock(); /* the mapping is made without the lock */
		size_t lead = align_up(sizeof(struct region) + HEADER, align);
		size_t bytes = align_up(lead + size, PAGE);
		uintptr_t raw = (uintptr_t)np_os_map(bytes, align > PAGE ? align : PAGE);
		if (!raw)
			return NULL;
		p = raw + lead;
		*hdr_of((void *)p) = (struct hdr){BOOT_MAGIC, MAPPED, 1, (uint32_t)lead, (uint32_t)(bytes / PAGE)};
		lock();
		add_region_locked(raw, bytes);
		used_bytes += bytes;
	}
	unlock();
	return (void *)p;
}

/* The region holding a, under the lock; *link: where the list points at it. */
static struct region *region_of_locked(uintptr_t a, struct region ***link)
{
	struct region **l = &regions;
	for (struct region *r = regions; r; l = &r->next, r = r->next)
		if (a >= r->start && a < r->end) {
			if (link)
				*link = l;
			return r;
		}
	return NULL;
}

static enum np_boot_state state_locked(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	struct region *r = region_of_locked(a, NULL);
	if (!r)
		return NP_BOOT_NONE;
	if (a < r->start + sizeof(struct region) + HEADER || (a & (HEADER - 1)))
		return NP_BOOT_INTERIOR;
	const struct hdr *h = hdr_of(p);
	if (h->magic != BOOT_MAGIC || !(h->cls < NCLASSES || h->cls == MAPPED) || h->back < HEADER ||
	    a - h->back < r->start)
		return NP_BOOT_INTERIOR;
	return h->live == 1 ? NP_BOOT_LIVE : NP_BOOT_FREED;
}

enum np_boot_state np_bootstrap_state(const void *p)
{
	if (!__atomic_load_n(&regions, __ATOMIC_ACQUIRE) || !np_bootstrap_may_own(p))
		return NP_BOOT_NONE;
	lock();
	enum np_boot_state st = state_locked(p);
	unlock();
	return st;
}

bool np_bootstrap_owns(const void *p)
{
	return np_bootstrap_state(p) == NP_BOOT_LIVE;
}

size_t np_bootstrap_size(const void *p)
{
	const struct hdr *h = hdr_of(p);
	size_t bytes = h->cls == MAPPED ? (size_t)h->pages * PAGE : (size_t)MIN_BLOCK << h->cls;
	return bytes - h->back;
}

bool np_bootstrap_free(void *p)
{
	if (!__atomic_load_n(&regions, __ATOMIC_ACQUIRE))
		return false;
	lock();
	enum np_boot_state st = state_locked(p);
	if (st != NP_BOOT_LIVE) {
		unlock();
		if (st == NP_BOOT_NONE)
			return false;
		if (st == NP_BOOT_FREED)
			np_fatal("free: double free of %p", p);
		np_fatal("free: invalid pointer (not the start of a block) %p", p);
	}
	struct hdr *h = hdr_of(p);
	uintptr_t raw = (uintptr_t)p - h->back;
	h->live = 0;
	if (h->cls != MAPPED) {
		unsigned k = h->cls;
		used_bytes -= (size_t)MIN_BLOCK << k;
		*link_of(raw, k) = free_list[k];
		free_list[k] = (void *)raw;
		unlock();
		return true;
	}
	size_t bytes = (size_t)h->pages * PAGE;
	struct region **link;
	struct region *r = region_of_locked(raw, &link);
	*link = r->next;
	used_bytes -= bytes;
	unlock();
	np_os_unmap((void *)raw, bytes);
	return true;
}

size_t np_bootstrap_release(void)
{
	size_t bytes = 0;
	lock();
	if (used_bytes == 0 && regions) {
		/* Every block is free: the regions mapped past the arena go, and the arena's touched
		 * part (all of it once carving moved on) goes back. */
		bool in_arena = bump >= (uintptr_t)arena && bump <= (uintptr_t)arena + ARENA_BYTES;
		size_t touched = in_arena ? align_up(bump - (uintptr_t)arena, PAGE) : ARENA_BYTES;
		for (struct region *r = regions, *next; r; r = next) {
			next = r->next;
			if (r->start != (uintptr_t)arena) {
				bytes += r->end - r->start;
				np_os_unmap((void *)r->start, r->end - r->start);
			}
		}
		__atomic_store_n(&regions, NULL, __ATOMIC_RELEASE);
		/* No block is live: the span starts afresh (else the regions unmapped here would
		 * keep a free of anything mapped there later on the lock's path). */
		__atomic_store_n(&np_bootstrap_span_lo, UINTPTR_MAX, __ATOMIC_RELAXED);
		__atomic_store_n(&np_bootstrap_span_hi, 0, __ATOMIC_RELAXED);
		bump = limit = 0;
		for (unsigned k = 0; k < NCLASSES; k++)
			free_list[k] = NULL;
		/* Under the lock: nobody carves a page while it goes back. */
		if (np_os_purge(arena, touched) == 0)
			bytes += touched;
	}
	unlock();
	return bytes;
}

size_t np_bootstrap_used(void)
{
	return __atomic_load_n(&used_bytes, __ATOMIC_RELAXED);
}

const char *np_bootstrap_check(void)
{
	const char *err = NULL;
	lock();
	for (unsigned k = 0; k < NCLASSES && !err; k++)
		for (void *b = free_list[k]; b && !err; b = *link_of((uintptr_t)b, k)) {
			struct region *r = region_of_locked((uintptr_t)b, NULL);
			if (!r)
				err = "a free block lies in no region";
			else if ((uintptr_t)b + ((size_t)MIN_BLOCK << k) > r->end)
				err = "a free block runs past its region";
		}
	unlock();
	return err;
}
