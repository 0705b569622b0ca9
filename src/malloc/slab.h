/*
 * slab.h — a 64 KiB-aligned page run carved into blocks of one size class. The header lives in
 * the chunk's metadata slot of the run (never inside the run), so blocks are naturally aligned:
 * a block of a power-of-two class is aligned to its size, up to the slab size.
 *
 * Three free lists, as in mimalloc: `free` (the owner allocates from it), `local_free` (the
 * owner's frees) and `thread_free` (other threads' frees, a lock-free stack). The low bits of
 * thread_free hold the slab's ownership state:
 *   OWNED     owner is a live thread; it collects thread_free in its slow path
 *   FLOATING  the owner found it full and let go of it; it is in no list, and the first thread
 *             that frees into it claims it (takes it back if it is the one that let go of it,
 *             else hands it to its node's orphans)
 *   ORPHAN    ownerless, in (or on its way to) its node's orphan list for its class, where
 *             threads homed near that node adopt it
 * Links live in the freed blocks, so a program's write after free lands on one. They are
 * stored encoded with the slab's key and a process secret (np_slab_encode: xor, rotate, add,
 * as mimalloc's secure mode), so reading a freed block does not reveal how to forge a link,
 * and every link is checked to be a block of the same slab (np_slab_is_block) before it is
 * followed: a corrupted free list is cut there, reported once, and never followed.
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
	uintptr_t free;              /* address of the first block to allocate (plain), or 0 */
	uintptr_t key;               /* links are stored as np_slab_encode(index) */
	struct np_thread *owner;     /* relaxed atomic: read by any thread in free() */
	uint32_t used;               /* blocks handed out and not yet back in free/local_free */
	uint32_t block;              /* block size */
	uintptr_t start;             /* address of block 0 (= the run's address) */
	uint64_t div_inv;            /* block test: inverse of the block's odd factor mod 2^64 */
	uint32_t end;                /* capacity: block indices are below it; as a link, the end */
	uint32_t local_free;         /* index of the owner's last free (plain), or `end` */
	uint8_t div_shift;           /* block = odd factor << div_shift */
	uint8_t cls;
	uint8_t node;                /* dense node of the memory */
	uint8_t pad_[5];
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
	s->div_shift = (uint8_t)__builtin_ctz(block);
	uint64_t q = block >> s->div_shift, x = q; /* x: q's inverse mod 2^64, by Newton (3 bits -> 96) */
	for (int i = 0; i < 5; i++)
		x *= 2 - q * x;
	s->div_inv = x;
	s->end = capacity;
}

/* The index of the block at address b when b is one: with block = q 2^k (q odd),
 * off = b - start is i block exactly when (off q^-1 mod 2^64) rotated right by k is i, and
 * for any other 64-bit off (an interior pointer, an address below the start or past the end)
 * the result is above 2^64 / block, so above capacity - 1 (Hacker's Delight, 10-17). One
 * multiply and a rotate; compare with end. */
NP_INLINE uint64_t np_slab_index(const struct np_slab *s, uintptr_t b)
{
	uint64_t x = (uint64_t)(b - s->start) * s->div_inv;
	return (x >> s->div_shift) | (x << ((64u - s->div_shift) & 63u));
}

/* True when b is the address of one of s's blocks. */
NP_INLINE bool np_slab_is_block(const struct np_slab *s, uintptr_t b)
{
	return np_slab_index(s, b) < s->end;
}

/* The address of block i (i < end). */
NP_INLINE uintptr_t np_slab_block(const struct np_slab *s, uint64_t i)
{
	return s->start + (uintptr_t)i * s->block;
}

/*
 * Free-list links live in the freed blocks, so they are where a program's bug writes. A link
 * is the index of the next block (`end`, the capacity, after the last), stored as
 * rotl(index ^ slab key, 29) + process secret. Reading a freed block shows only that word, not
 * how to forge one; and a decoded link is followed only when it is below end, which makes it a
 * block of the same slab, on a block boundary, by construction. A write after free (the
 * everyday `n->next = NULL`), a one-byte overflow from the neighbour, or a forged address
 * decodes to some 64-bit value that is almost never a valid index: it is caught before it is
 * followed (np_slab_bad_link). The list heads are the allocator's own: `free` an address (the
 * malloc fast path needs it), `local_free` an index (the free fast path has it).
 */
#define NP_SLAB_LINK_ROT 29
extern NP_HIDDEN uintptr_t np_slab_secret;

NP_INLINE uintptr_t np_slab_encode(const struct np_slab *s, uint64_t index)
{
	uint64_t x = index ^ s->key;
	return (uintptr_t)((x << NP_SLAB_LINK_ROT) | (x >> (64 - NP_SLAB_LINK_ROT))) + np_slab_secret;
}

NP_INLINE uint64_t np_slab_decode(const struct np_slab *s, uintptr_t word)
{
	uint64_t x = word - np_slab_secret;
	return ((x >> NP_SLAB_LINK_ROT) | (x << (64 - NP_SLAB_LINK_ROT))) ^ s->key;
}

/* The link stored in free block b, decoded (an index, end, or garbage). */
NP_INLINE uint64_t np_slab_link(const struct np_slab *s, uintptr_t b)
{
	return np_slab_decode(s, __atomic_load_n((const uintptr_t *)b, __ATOMIC_RELAXED));
}

/* Block b's link becomes `index` (a block of s, or end). */
NP_INLINE void np_slab_set_link(const struct np_slab *s, uintptr_t b, uint64_t index)
{
	*(uintptr_t *)b = np_slab_encode(s, index);
}

/* The list head address as a link value: its index, or end for an empty list. */
NP_INLINE uint64_t np_slab_index_or_end(const struct np_slab *s, uintptr_t head)
{
	return head ? np_slab_index(s, head) : s->end;
}

/* The first word of block b is not the encoding of a block of s or of the end of a list:
 * the free list is corrupt from here. Cuts it at b (b's link becomes the end), counts
 * freelist_corrupt and reports once per process. The blocks behind the bad link are
 * abandoned: the slab keeps them counted as used, so it is never released under them. */
NP_NOINLINE NP_COLD void np_slab_bad_link(const struct np_slab *s, uintptr_t b);

/* The address a decoded link leads to: a block, or 0 at the end of the list; a link that is
 * neither is cut at b (whose link it is) and ends the list. */
NP_INLINE uintptr_t np_slab_follow(const struct np_slab *s, uintptr_t b, uint64_t link)
{
	if (NP_LIKELY(link < s->end))
		return np_slab_block(s, link);
	if (NP_UNLIKELY(link != s->end))
		np_slab_bad_link(s, b);
	return 0;
}

/* Takes the first block off s->free (which must not be empty) and returns it; its successor is
 * checked before it becomes the head. */
NP_INLINE uintptr_t np_slab_pop(struct np_slab *s)
{
	uintptr_t b = s->free;
	s->free = np_slab_follow(s, b, np_slab_link(s, b));
	*(uintptr_t *)b = 0; /* see np_slab_looks_free */
	s->used++;
	return b;
}

/* The owner frees block b, of index i: onto local_free. */
NP_INLINE void np_slab_push_local(struct np_slab *s, uintptr_t b, uint64_t i)
{
	np_slab_set_link(s, b, s->local_free);
	s->local_free = (uint32_t)i;
}

/* True when the first word of block b decodes to a block of this slab or to the end of a
 * list: b looks already free (confirm with np_slab_holds_free before reporting). malloc
 * zeroes the first word of every block it hands out (one store to a line it just read), so a
 * live block whose first word the program never wrote does not look free: otherwise its
 * free would walk the slab's free lists to confirm (a program writing only a block's first
 * byte ran several times slower than under mimalloc: docs/design.md). */
NP_INLINE bool np_slab_looks_free(const struct np_slab *s, uintptr_t b)
{
	uint64_t link = np_slab_link(s, b);
	return link <= s->end;
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
		np_slab_set_link(s, b, np_slab_index_or_end(s, old & NP_SLAB_PTR_MASK));
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
/* The same question asked by a thread that does not own s, while the owner may be changing its
 * lists: walks free, local_free and thread_free with relaxed reads, every link checked before
 * it is followed and each walk bounded by the capacity. True means b was free at some moment
 * during the walk, so a free of it now is a second free; false may miss one that races. */
bool np_slab_holds_free_racy(const struct np_slab *s, uintptr_t b);
/* Once at start-up, before the first slab: the process secret and the seed of slab keys. */
void np_slab_init_secret(void);
/* Walks the slab's lists; NULL when sound, else what is wrong (owner only). */
const char *np_slab_check(const struct np_slab *s);

#endif /* NP_SLAB_H */
