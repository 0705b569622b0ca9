/*
 * slab.h — a 64 KiB-aligned page run carved into blocks of one size class. The header lives in
 * the chunk's metadata slot of the run (never inside the run), so blocks are naturally aligned:
 * a block of a power-of-two class is aligned to its size, up to the slab size.
 *
 * Three free lists, as in mimalloc: `free` (the owner allocates from it), `local_free` (the
 * owner's frees) and `thread_free` (other threads' frees, a lock-free stack). Next pointers are
 * stored XOR-ed with the slab's key, so a freed block is recognisable and a double free by the
 * owner is caught cheaply. The low bits of thread_free hold the slab's ownership state:
 *   OWNED     owner is a live thread; it collects thread_free in its slow path
 *   FLOATING  the owner found it full and let go of it; it is in no list, and the first thread
 *             that frees into it claims it (takes it back if it is the one that let go of it,
 *             else hands it to its node's orphans)
 *   ORPHAN    ownerless, in (or on its way to) its node's orphan list for its class, where
 *             threads homed near that node adopt it
 * Memory never changes node: a block always returns to its own slab.
 * Invariants: see np_slab_check().
 */
#ifndef NP_SLAB_H
#define NP_SLAB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "malloc/sizeclass.h"
#include "pcp/pcp.h"
#include "pool/chunk.h"

struct np_thread;

/* Slabs start on this boundary and are a multiple of it long (np_class_slab_bytes). */
#define NP_SLAB_ALIGN ((size_t)1 << NP_META_SHIFT)
#define NP_SLAB_ALIGN_PAGES (NP_SLAB_ALIGN >> NP_PAGE_SHIFT)

#define NP_SLAB_OWNED 0u
#define NP_SLAB_FLOATING 1u
#define NP_SLAB_ORPHAN 2u
#define NP_SLAB_STATE_MASK 3u
#define NP_SLAB_PTR_MASK (~(uintptr_t)15) /* thread_free: the list's head */
/* The owner of a slab nobody owns: never equal to a thread, nor to NULL (no state yet). */
#define NP_NO_OWNER ((struct np_thread *)(uintptr_t)8)

struct np_slab {
	/* Line 1, the owner's: everything both fast paths read. */
	uintptr_t free;              /* first block to allocate (plain), or 0 */
	uintptr_t key;               /* next pointers are stored as next ^ key */
	struct np_thread *owner;     /* relaxed atomic: read by any thread in free() */
	uint32_t used;               /* blocks handed out and not yet back in free/local_free */
	uint32_t block;              /* block size */
	uintptr_t start;             /* address of block 0 (= the run's address) */
	uintptr_t local_free;        /* owner's frees (plain head) */
	uint32_t span;               /* capacity * block: bytes of the blocks (no multiply in free) */
	uint32_t div_inv, div_lim;   /* offset test: inverse of the block's odd factor; capacity - 1 */
	uint8_t div_shift;           /* block = odd factor << div_shift */
	uint8_t cls;
	uint8_t node;                /* dense node of the memory */
	uint8_t pad_;
	/* Line 2: thread_free, written by other threads, and fields of the slow paths. */
	_Atomic uintptr_t thread_free NP_ALIGNED(NP_CACHELINE);
	uint16_t capacity;           /* blocks in the slab */
	uint16_t reserved;           /* blocks never handed out yet: the last `reserved` ones */
	struct np_page *run;         /* the page run */
	struct np_slab *next, *prev; /* owner's ring for the class, or the orphan list */
	struct np_thread *floater;   /* relaxed atomic: the owner that last let go of it */
};
_Static_assert(sizeof(struct np_slab) <= NP_META_SIZE, "a slab header fits its metadata slot");
_Static_assert(offsetof(struct np_chunk, no_owner) - offsetof(struct np_chunk, meta) == offsetof(struct np_slab, owner),
	       "slot 0's chunk fields read as a slab header with no owner");

/* The metadata slot of p's 64 KiB step read as a slab header. It is one exactly when its owner
 * is a thread: slabs start on 64 KiB (their header is their first step's slot) and a released
 * slab's owner is set to NULL, never-used slots are zero, slot 0 holds the chunk's fields (no
 * owner, see no_owner). Steps after the first of a slab larger than 64 KiB have no header of
 * their own: their slot reads as no owner's, and free() finds their slab the slow way. */
NP_INLINE struct np_slab *np_slab_at_step(const void *p)
{
	struct np_chunk *c = np_chunk_of(p);
	return (struct np_slab *)(void *)c->meta[((uintptr_t)p >> NP_META_SHIFT) & (NP_CHUNK_SIZE / NP_SLAB_ALIGN - 1)];
}

/* A slab with no free block: every thread's current slab of every class before its first
 * allocation, so the fast path needs no "initialised?" test. Never written. */
extern struct np_slab np_slab_empty;

/* Sets the block size and capacity of s and the constants of np_slab_offset_ok. */
NP_INLINE void np_slab_set_block(struct np_slab *s, uint32_t block, uint32_t capacity)
{
	s->block = block;
	s->capacity = (uint16_t)capacity;
	s->span = capacity * block;
	s->div_shift = (uint8_t)__builtin_ctz(block);
	uint32_t q = block >> s->div_shift, x = q; /* x: q's inverse mod 2^32, by Newton (3 bits -> 48) */
	for (int i = 0; i < 4; i++)
		x *= 2 - q * x;
	s->div_inv = x;
	s->div_lim = capacity - 1;
}

/* True when offset off (from start) is the start of a block. With block = q 2^k (q odd) and
 * off < 2^32: off = i block exactly when (off q^-1 mod 2^32) rotated right by k is i; for any
 * other off it is above 2^32 / block (Hacker's Delight, 10-17). So one multiply, a rotate and
 * one compare with capacity - 1 test both the block boundary and the slab's end. */
NP_INLINE bool np_slab_offset_ok32(const struct np_slab *s, uint32_t off)
{
	uint32_t x = off * s->div_inv;
	x = (x >> s->div_shift) | (x << ((32u - s->div_shift) & 31u));
	return x <= s->div_lim;
}

NP_INLINE bool np_slab_offset_ok(const struct np_slab *s, uintptr_t off)
{
	return (off >> 32) == 0 && np_slab_offset_ok32(s, (uint32_t)off);
}

/* True when the first word of block b decodes to a pointer into this slab or to the end of a
 * list: b looks already free (confirm with np_slab_holds_free before reporting). malloc
 * zeroes the first word of every block it hands out (one store to a line it just read), so a
 * live block whose first word the program never wrote does not look free: otherwise its
 * free would walk the slab's free lists to confirm (a program writing only a block's first
 * byte ran 5x slower than under mimalloc). */
NP_INLINE bool np_slab_looks_free(const struct np_slab *s, uintptr_t b)
{
	uintptr_t next = *(const uintptr_t *)b ^ s->key;
	return next == 0 || next - s->start < s->span;
}

/* Creates a slab of class cls for thread-owner `owner` from the owner's page cache. */
struct np_slab *np_slab_create(struct np_pcp *pcp, unsigned cls, struct np_thread *owner);
/* Moves local_free and (atomically) thread_free into free. Returns blocks collected from
 * other threads. Aborts on a corrupt thread_free list (a double free by another thread). */
uint32_t np_slab_collect(struct np_slab *s);
/* Adds up to a page worth of never-used blocks to free. */
void np_slab_extend(struct np_slab *s);
/* Gives the slab's pages back (used must be 0). pcp: the releasing thread's cache or NULL. */
void np_slab_release(struct np_slab *s, struct np_pcp *pcp);
/* The owner gives up a full slab: OWNED -> FLOATING, only if no remote free is pending. */
bool np_slab_float(struct np_slab *s);
/* Pushes block b freed by a thread that does not own s. Returns true when the free claimed a
 * FLOATING slab, which the caller must then adopt or orphan. *first: the remote list was
 * empty before (the owner may have nothing to collect until told). Inline: it is most of a
 * remote free. */
NP_INLINE bool np_slab_push_remote(struct np_slab *s, uintptr_t b, bool *first)
{
	uintptr_t old = atomic_load_explicit(&s->thread_free, memory_order_relaxed), state;
	do {
		state = old & NP_SLAB_STATE_MASK;
		*(uintptr_t *)b = (old & NP_SLAB_PTR_MASK) ^ s->key;
	} while (!atomic_compare_exchange_weak_explicit(
		&s->thread_free, &old, b | (state == NP_SLAB_FLOATING ? NP_SLAB_ORPHAN : state),
		memory_order_release, memory_order_relaxed));
	*first = (old & NP_SLAB_PTR_MASK) == 0;
	return state == NP_SLAB_FLOATING;
}
/* Sets the ownership state bits, keeping the list. */
void np_slab_set_state(struct np_slab *s, uintptr_t state);

/* Orphan lists, one per node and class. */
void np_slab_orphan(struct np_slab *s);
struct np_slab *np_slab_adopt(int node, unsigned cls, struct np_thread *owner);
/* Collects every orphan of every class and releases the empty ones; returns pages released. */
size_t np_slab_sweep_orphans(void);
void np_slab_atfork_prepare(void);
void np_slab_atfork_parent(void);
void np_slab_atfork_child(void);

/* True when b is on one of s's free lists (owner only: walks free and local_free). */
bool np_slab_holds_free(const struct np_slab *s, uintptr_t b);
/* Walks the slab's lists; NULL when sound, else what is wrong (owner only). */
const char *np_slab_check(const struct np_slab *s);

#endif /* NP_SLAB_H */
