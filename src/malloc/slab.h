/*
 * slab.h — a page run carved into blocks of one size class, aligned to a 128 KiB step (one
 * metadata slot per step, pool/chunk.h: NP_META_SHIFT). The header lives in
 * the chunk's metadata slot of the run (never inside the run), so blocks are naturally aligned:
 * a block of a power-of-two class is aligned to its size, up to the slab size.
 *
 * Two free lists: `free`, which the owner allocates from and frees onto, last freed first (the
 * next malloc of the class hands out the block just freed, whose lines are still in this
 * CPU's cache, as tcmalloc's and glibc's caches do), and `thread_free` (other threads' frees,
 * a lock-free stack). thread_free is one word: the remote list as block indices (its length,
 * newest block and oldest block, kept by the pushers), so the owner takes it whole without
 * reading its blocks, and in its low bits the slab's ownership state:
 *   OWNED     owner is a live thread; it collects thread_free in its slow path
 *   FLOATING  the owner found it full and let go of it; it is in no list, and the first thread
 *             that frees into it claims it (takes it back if it is the one that let go of it,
 *             else hands it to its node's orphans)
 *   ORPHAN    ownerless, in (or on its way to) its node's orphan list for its class, where
 *             threads homed near that node adopt it
 * The header is three cache lines: what the owner's fast paths write on every call, what every
 * free reads (the owner, the key, the block geometry, the mark: written only when the slab is
 * made or changes hands), and thread_free with the fields of ownership changes. A remote free
 * reads the second line, which stays shared, and writes only the third; the owner's fast paths
 * never touch the third.
 * Links live in the freed blocks, so a program's write after free lands on one. They are
 * stored encoded with the slab's key and a process secret (np_slab_encode: xor, rotate, add,
 * as mimalloc's secure mode), so reading a freed block does not reveal how to forge a link,
 * and every link is checked to be a block of the same slab (np_slab_is_block) before it is
 * followed: a corrupted free list is cut there, reported once, and never followed.
 * A block another thread freed also carries the slab's mark in its second word until malloc
 * hands it out again, so a second free finds it even when the program wrote over the link.
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
#define NP_SLAB_ORPHAN 2u /* np_slab_push_remote's claim relies on these three values */
#define NP_SLAB_STATE_MASK 3u
/* thread_free above the state bits, 16 bits each (block indices and counts fit: capacity is a
 * uint16_t): the remote list's length, its head (the newest block, whose link leads on) and its
 * tail (the oldest, whose link is the end). Empty: all zero. */
#define NP_SLAB_RLEN_SHIFT 16
#define NP_SLAB_RHEAD_SHIFT 32
#define NP_SLAB_RTAIL_SHIFT 48
#define NP_SLAB_LIST_MASK (~(uintptr_t)NP_SLAB_STATE_MASK)
/* Added to `used` of a slab whose free list was found corrupt: it never reads 0 again, so the
 * slab is never given back under a block a dangling pointer may still write, nor under one its
 * count missed (np_slab_bad_link). Far above any capacity. */
#define NP_SLAB_PINNED (1u << 24)
/* The owner of a slab nobody owns: never equal to a thread, nor to NULL (no state yet). */
#define NP_NO_OWNER ((struct np_thread *)(uintptr_t)8)
/* A slab miss is due once the owner has taken this many blocks from a slab by the fast paths
 * since its counts were last taken (np_ring_count), or its capacity if that is fewer. The
 * owner's frees go back onto `free`, so a thread whose mallocs and frees balance may never
 * run out of blocks; but a slab miss is where a thread notices a move to another node's CPU,
 * takes in its current slab's remote frees and has its fast paths' counts taken (which other
 * threads' exact reads lack until then: at most a slab's blocks' worth, as when the list ran
 * out at least that often). `beat` counts down, and the malloc that takes it below 0 sends the
 * class's next malloc to the slow path: one decrement and a branch on the fast path. */
#define NP_SLAB_BEAT 1024

struct np_slab {
	/* Line 1, the owner's: what its fast paths write on every call, and its slow paths' fields.
	 * Another thread reads it while the slab is owned only to confirm a double free
	 * (np_slab_holds_free_racy). */
	uintptr_t free;              /* address of the first block to allocate (plain), or 0 */
	/* Bytes the owner's mallocs asked of this slab since its statistics were last taken
	 * (np_ring_count): on the line malloc writes anyway, so the fast path's byte counting is
	 * one add, with no test of which node the slab is on. */
	uint64_t requested;
	struct np_slab *next, *prev; /* owner's ring for the class, or the orphan list */
	uint32_t used;               /* blocks handed out and not yet back in free */
	/* `used` as the statistics last counted it: the owner's mallocs and frees since then,
	 * (used - counted) blocks, are in no counter yet (np_ring_count). Blocks other threads
	 * freed are counted by them, so a collect takes them off both. */
	uint32_t counted;
	uint16_t reserved;           /* blocks never handed out yet: the last `reserved` ones */
	uint8_t unchecked;           /* remote lists taken in since free was last empty: see
					np_slab_confirm_empty */
	/* The decay's pass under way (mod 256) when the slab last became or stopped being its
	 * owner's current slab or joined its ring (the owner's passes, ring.c: np_ring_decay) or
	 * the orphans (theirs, np_slab_decay_orphans). On this line: a slab miss writes it anyway. */
	uint8_t decay_pass;
	uint8_t decay_seen;          /* the orphans' decay pass that last looked at it (slab.c) */
	/* free's head as a link: its index, or `end` when free is empty. Kept beside it by every
	 * writer of free, so that the owner's free links its block to the head without a
	 * multiply (the malloc fast path has the index at hand: it is the link it followed). */
	uint16_t free_i;
	int32_t beat;                /* fast-path mallocs left before a slab miss is due (NP_SLAB_BEAT) */
	/* used + 1 as np_slab_decay last left it; 0: never, or the slab served mallocs since (set
	 * where decay_pass is): a slab that neither served a malloc nor took a free since is not
	 * walked again. */
	uint32_t decay_used;
	/* Line 2, read by every free, by other threads too: written only when the slab is made
	 * or changes hands, so a remote free's reads leave it shared, not taken from the owner. */
	struct np_thread *owner NP_ALIGNED(NP_CACHELINE); /* relaxed atomic: read by any thread in free() */
	uintptr_t key;               /* links are stored as np_slab_encode(index) */
	uintptr_t start;             /* address of block 0 (= the run's address) */
	uint64_t div_inv;            /* block test: inverse of the block's odd factor mod 2^64 */
	uintptr_t mark;              /* second word of a block another thread freed (np_slab_has_mark) */
	uint32_t block;              /* block size */
	uint16_t end;                /* capacity: block indices are below it; as a link, the end */
	uint16_t capacity;           /* blocks in the slab */
	uint8_t div_shift;           /* block = odd factor << div_shift */
	uint8_t cls;
	uint8_t node;                /* dense node of the memory */
	/* The bound free's fast paths check a block index against: end, or 0 while the slab
	 * hides pages (`hidden`), so that every free of its blocks then takes the slow path,
	 * which finds a second free of a block on a hidden page (its first word reads as zeros
	 * there, not as a link). Relaxed atomic: written by whoever writes `hidden`, read by any
	 * thread's free (np_slab_fast_end). */
	uint16_t fast_end;
	/* Set only in the slot of a step after the first of a slab larger than a step (classes
	 * above 16 KiB): that slab, so that a free of a block there finds its header from the
	 * line it read the slot's owner on (np_slab_lead), without the page descriptors. NULL in
	 * every slab's own header and in the slots of steps no live slab continues into. */
	struct np_slab *lead;
	/* Line 3: thread_free, which other threads' frees write, and the fields of ownership
	 * changes. */
	_Atomic uintptr_t thread_free NP_ALIGNED(NP_CACHELINE);
	struct np_page *run;         /* the page run */
	struct np_thread *floater;   /* relaxed atomic: the owner that last let go of it, or
					an odd tag for an orphan its owner's exit or move left
					(np_slab_exit_tag) */
	/* np_slab_purge_free ran: a digest of the lists as it left them (a slab that does not
	 * hide pages), else 1; 0: never. */
	uint32_t purged;
	/* Pages of a one-step slab (bit k: the k-th page of the run) that trim gave back with the
	 * free blocks on them: a block any of whose bytes lie on one is on no list (its link would
	 * make the page resident again), and comes back when np_slab_refill revives the page.
	 * Written and read by the owner (or by trim's sweep, for an orphan it holds). */
	uint32_t hidden;
	/* On its node's orphan list (next and prev its links there) exactly when listed is set
	 * and list_gen is the list's generation, which a sweep that takes the list whole moves
	 * on: under that list's lock. 64 bits: a slab a sweep holds (for good, in a fork's child
	 * whose fork cut that sweep short) must never match the list again. */
	uint8_t listed;
	uint64_t list_gen;
};
_Static_assert(sizeof(struct np_slab) <= NP_META_SIZE, "a slab header fits its metadata slot");
_Static_assert(offsetof(struct np_slab, thread_free) == 2 * NP_CACHELINE, "three lines: owner-written, read-mostly, remote");
_Static_assert(offsetof(struct np_slab, owner) == NP_CACHELINE, "the owner's line holds the decay's pass");
_Static_assert(offsetof(struct np_chunk, no_owner) - offsetof(struct np_chunk, meta) == offsetof(struct np_slab, owner),
	       "slot 0's chunk fields read as a slab header with no owner");

/* The metadata slot of p's step read as a slab header. It is one exactly when its owner
 * is a thread: slabs start on a step (their header is their first step's slot) and a released
 * slab's owner is set to NULL, never-used slots are zero, slot 0 holds the chunk's fields (no
 * owner, see no_owner). Steps after the first of a slab larger than a step have no header of
 * their own: their slot reads as no owner's, and free() finds their slab by the slot's lead
 * (np_slab_lead), out of line. */
NP_INLINE struct np_slab *np_slab_at_step(const void *p)
{
	/* &np_chunk_of(p)->meta[(p >> NP_META_SHIFT) % slots], with the slot's byte offset taken
	 * by one shift and one mask: the free fast path's address arithmetic. */
	_Static_assert((NP_META_SIZE & (NP_META_SIZE - 1)) == 0, "a metadata slot is a power of two");
	uintptr_t a = (uintptr_t)p;
	uintptr_t slot = (a >> (NP_META_SHIFT - __builtin_ctz(NP_META_SIZE))) &
			 ((NP_CHUNK_SIZE / NP_SLAB_ALIGN - 1) * NP_META_SIZE);
	return (struct np_slab *)(void *)((uint8_t *)(void *)np_chunk_of(p)->meta + slot);
}

/* The slab whose later step holds block address a (a in a chunk of ours), or NULL:
 * a is in a slab's first step, in no slab, or in the chunk's first step (slot 0, the chunk's
 * own fields, is never read as a slot here). */
NP_INLINE struct np_slab *np_slab_lead(uintptr_t a)
{
	if ((a & (NP_CHUNK_SIZE - 1)) < NP_SLAB_ALIGN)
		return NULL;
	return __atomic_load_n(&np_slab_at_step((const void *)a)->lead, __ATOMIC_RELAXED);
}

/* A slab with no free block: every thread's current slab of every class before its first
 * allocation, and of a class whose slab miss is due (NP_SLAB_BEAT), so the fast path needs no
 * "initialised?" test. Never written. */
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
	s->end = (uint16_t)capacity;
	s->fast_end = s->hidden ? 0 : (uint16_t)capacity;
}

/* fast_end as free's fast paths read it (see the field). */
NP_INLINE uint64_t np_slab_fast_end(const struct np_slab *s)
{
	return __atomic_load_n(&s->fast_end, __ATOMIC_RELAXED);
}

/* s's hidden pages become h (slab_trim.c), and fast_end follows. */
NP_INLINE void np_slab_set_hidden(struct np_slab *s, uint32_t h)
{
	__atomic_store_n(&s->hidden, h, __ATOMIC_RELAXED); /* other threads' double-free checks read it */
	__atomic_store_n(&s->fast_end, h ? 0 : s->end, __ATOMIC_RELAXED);
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
 * followed (np_slab_bad_link). The list head, `free`, is the allocator's own: an address (the
 * malloc fast path needs it).
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

/* Fast-path mallocs of s between two slab misses (NP_SLAB_BEAT). */
NP_INLINE int32_t np_slab_beat(const struct np_slab *s)
{
	return s->capacity < NP_SLAB_BEAT ? s->capacity : NP_SLAB_BEAT;
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

/* The first word of block b, the head of s->free, is not the encoding of a block of s or of
 * the end of a list: the program wrote into the block after freeing it, or the block is in use
 * (a double free put it on the lists twice, and malloc handed out the first copy, zeroing its
 * link). The list ends before b: b, which may be in use or still written through a dangling
 * pointer, and the blocks behind it are abandoned, never handed out again. The slab is pinned
 * (NP_SLAB_PINNED): its count may be short by the blocks of such double frees, so it is never
 * given back. Counts freelist_corrupt and reports once per process. */
NP_NOINLINE NP_COLD void np_slab_bad_link(struct np_slab *s, uintptr_t b);

/* Block b leaves the free lists to be handed out: its first word becomes 0 (see
 * np_slab_looks_free), its second too (a mark left there by another thread's free must not
 * outlive the free: see np_slab_has_mark). */
NP_INLINE void np_slab_clear_block(uintptr_t b)
{
	((uintptr_t *)b)[0] = 0;
	((uintptr_t *)b)[1] = 0;
}

/* Takes the first block off s->free (which must not be empty) and returns it, or 0 when its
 * link is bad (np_slab_bad_link: the list ends before it; ask again). A block is handed out
 * only while its first word is a link, and handing it out zeroes that word: a block on the
 * lists twice is never handed out twice. */
NP_INLINE uintptr_t np_slab_pop(struct np_slab *s)
{
	uintptr_t b = s->free;
	uint64_t link = np_slab_link(s, b);
	if (NP_UNLIKELY(link > s->end)) {
		np_slab_bad_link(s, b);
		return 0;
	}
	s->free = link < s->end ? np_slab_block(s, link) : 0;
	s->free_i = (uint16_t)link;
	__builtin_prefetch((const void *)s->free, 1); /* the next pop's line (np_malloc_fast) */
	np_slab_clear_block(b);
	s->used++;
	return b;
}

/* The owner frees block b, of index i: at the head of free, where the next malloc takes it. */
NP_INLINE void np_slab_push_free(struct np_slab *s, uintptr_t b, uint64_t i)
{
	np_slab_set_link(s, b, s->free_i);
	s->free = b;
	s->free_i = (uint16_t)i;
}

/* np_slab_looks_free against `end`: s->end, or the fast paths' fast_end (np_slab_fast_end),
 * which is s->end but while s hides pages, when every block looks free by it. */
NP_INLINE bool np_slab_looks_free_below(const struct np_slab *s, uintptr_t b, uint64_t end)
{
	return np_slab_link(s, b) <= end;
}

/* True when the first word of block b decodes to a block of this slab or to the end of a
 * list: b looks already free (confirm with np_slab_holds_free before reporting). malloc
 * zeroes the first word of every block it hands out (one store to a line it just read), so a
 * live block whose first word the program never wrote does not look free: otherwise its
 * free would walk the slab's free lists to confirm (a program writing only a block's first
 * byte ran several times slower than under mimalloc: docs/design.md). */
NP_INLINE bool np_slab_looks_free(const struct np_slab *s, uintptr_t b)
{
	return np_slab_looks_free_below(s, b, s->end);
}

/* True when b's second word holds s's mark: another thread freed b, and malloc has not handed
 * it out since (it would have wiped the mark). The mark is a keyed 64-bit value, so a live
 * block holds it only if the program copied it out of a freed block: confirm with
 * np_slab_holds_free_racy before reporting. */
NP_INLINE bool np_slab_has_mark(const struct np_slab *s, uintptr_t b)
{
	return __atomic_load_n((const uintptr_t *)b + 1, __ATOMIC_RELAXED) == s->mark;
}

/* Creates a slab of class cls for thread-owner `owner` from the owner's page cache. */
struct np_slab *np_slab_create(struct np_pcp *pcp, unsigned cls, struct np_thread *owner);
/* Moves thread_free, atomically, into free: the remote list is taken whole, in front, from the
 * length and tail the pushers kept, without walking it. Returns blocks collected from other
 * threads. Aborts when the list cannot be the one its pushes built (a block pushed twice: a
 * double free by other threads) or is longer than the blocks in use. */
uint32_t np_slab_collect(struct np_slab *s);
/* s->used is 0: true when its pages may be given back. A slab that took in remote lists since
 * its lists were last empty may hold a block twice (a double free no check at the free
 * caught), which made used count a block in use too few: then its lists are counted first,
 * each block once (aborts on one found twice, or on fewer blocks than it handed out). False
 * for a pinned slab and when the count finds a corrupt link (the slab is pinned then). */
bool np_slab_confirm_empty(struct np_slab *s);
/* s is pinned (NP_SLAB_PINNED: never given back, its counts no longer trusted),
 * freelist_corrupt counted, and the first time in the process reported: free blocks that trim
 * had given back were used at b, and `what` says what became of them (NULL: a list is corrupt
 * at b, cut before it). */
NP_COLD void np_slab_pin_corrupt(struct np_slab *s, uintptr_t b, const char *what);
/* The pages of s's run that block i covers, as `hidden` bits (one-step slabs only). */
NP_INLINE uint32_t np_slab_block_pages(const struct np_slab *s, uint64_t i)
{
	uint64_t lo = i * s->block, hi = lo + s->block - 1;
	return (uint32_t)((2ULL << (hi >> NP_PAGE_SHIFT)) - (1ULL << (lo >> NP_PAGE_SHIFT)));
}
/* Sets the bit of every block of s that `hidden` keeps off the lists in bits (a bit per
 * block, by index); returns how many there are. */
uint32_t np_slab_mark_hidden(const struct np_slab *s, uint64_t *bits);
/* Block b of s is free on a page trim gave back. Any thread may ask (a relaxed read: the owner
 * changes `hidden`). */
NP_INLINE bool np_slab_is_hidden(const struct np_slab *s, uintptr_t b)
{
	uint32_t h = __atomic_load_n(&s->hidden, __ATOMIC_RELAXED);
	return h && (np_slab_block_pages(s, np_slab_index(s, b)) & h);
}
/* s's hidden pages read as trim left them (zeros), and so do the first bytes of its hidden
 * blocks that lie on other pages (slab_trim.c). Else a dangling pointer wrote them (a second
 * free, or a write after free): s is pinned, that is reported (np_slab_pin_corrupt), and
 * false. */
bool np_slab_hidden_intact(struct np_slab *s);
/* Adds up to a page worth of never-used blocks to free. */
void np_slab_extend(struct np_slab *s);
/* free is empty: the lowest pages trim gave back (`hidden`) are taken back until one has
 * blocks to link into free. Blocks a dangling pointer used since (np_slab_hidden_intact) are
 * not handed out again, and the slab is pinned and the use reported as a corrupt list is
 * (np_slab_bad_link). */
NP_NOINLINE void np_slab_revive(struct np_slab *s);
/* free is empty: the remote frees collected, else the blocks of a page trim gave back, else a
 * page of never-used blocks. True when free has a block then. Inline: the slab miss's ring
 * walk asks it of every slab it passes (a call more cost larson/1 1% of its instructions). */
NP_INLINE bool np_slab_refill(struct np_slab *s)
{
	np_slab_collect(s);
	if (NP_UNLIKELY(!s->free && s->hidden))
		np_slab_revive(s);
	if (!s->free && s->reserved)
		np_slab_extend(s);
	return s->free != 0;
}
/* Bytes at a free block's start that its lists use: the link, and a remote free's mark. */
#define NP_SLAB_LINK_BYTES 16
/* The owner (or trim's sweep, for an orphan it holds off the lists) gives back (madvise) the
 * free memory of s that stays resident while s is in use (malloc_trim), counted in st's
 * pages_purged: in a one-step slab (classes up to 16 KiB), every page that only free blocks
 * cover, whose blocks leave the lists (`hidden`); in a longer one, the whole pages inside its
 * free blocks past their first NP_SLAB_LINK_BYTES; in both, those of its never-used blocks.
 * Remote frees are collected first. Not in chunks advised MADV_HUGEPAGE (slab_trim.c says
 * why). Returns the pages given back; 0 for a pinned slab, for lists that a walk finds odd (a
 * bad link, a block twice: left for the pops to report), and when nothing was freed since the
 * last call (a second trim has nothing to give back). */
size_t np_slab_purge_free(struct np_slab *s, struct np_vmstat_diffs *st);
/* np_slab_purge_free by the decay, for a slab that served no malloc for a whole
 * NUMAPAGE_DECAY_MS and was freed into since its last decay (its owner's ring or the orphans'
 * decay decides, by np_slab_decayed: a slab no free reached since has nothing new to give back,
 * and its free list is not walked again); records the count it leaves. Returns the pages given
 * back. */
size_t np_slab_decay(struct np_slab *s, struct np_vmstat_diffs *st);
/* s is as np_slab_decay last left it: it served no malloc and took no free since. */
NP_INLINE bool np_slab_decayed(const struct np_slab *s)
{
	return s->decay_used == s->used + 1;
}
/* Gives the slab's pages back (used must be 0). pcp: the releasing thread's cache or NULL. */
void np_slab_release(struct np_slab *s, struct np_pcp *pcp);
/* The owner gives up a full slab: OWNED -> FLOATING, only if no remote free is pending. */
bool np_slab_float(struct np_slab *s);
/* A block pushed while it heads the remote list, or a list longer than the slab: a double
 * free by other threads. Reports b and aborts. */
NP_NOINLINE NP_COLD NP_NORETURN void np_slab_double_push(const struct np_slab *s, uintptr_t b);

/* The remote list's fields of a thread_free word (NP_SLAB_RLEN_SHIFT). */
NP_INLINE uint32_t np_slab_rlen(uintptr_t w)
{
	return (uint32_t)(w >> NP_SLAB_RLEN_SHIFT) & 0xffff;
}
NP_INLINE uint32_t np_slab_rhead(uintptr_t w)
{
	return (uint32_t)(w >> NP_SLAB_RHEAD_SHIFT) & 0xffff;
}
NP_INLINE uint32_t np_slab_rtail(uintptr_t w)
{
	return (uint32_t)(w >> NP_SLAB_RTAIL_SHIFT) & 0xffff;
}

/* Pushes block b (index i) freed by a thread that does not own s: b's link is the old head,
 * b's second word the slab's mark, and one CAS makes b the head, counts it and keeps the tail.
 * Nothing but b and the header is read or written. Returns true when the free claimed a
 * FLOATING slab, which the caller must then adopt or orphan. *first: the remote list was
 * empty before (the owner may have nothing to collect until told). Inline: it is most of a
 * remote free. */
NP_INLINE bool np_slab_push_remote(struct np_slab *s, uintptr_t b, uint64_t i, bool *first)
{
	uintptr_t old = atomic_load_explicit(&s->thread_free, memory_order_relaxed), nw;
	((uintptr_t *)b)[1] = s->mark;
	do {
		uint32_t len = np_slab_rlen(old);
		/* b already at either end of the list: a second free the checks before missed.
		 * Pushed again at the head it would make the list a cycle (which the pops reach);
		 * at the tail, the collect's relink would break that cycle and cut the second copy
		 * off unseen, with used then one too low. */
		if (NP_UNLIKELY(len >= s->capacity || (len && (np_slab_rhead(old) == i || np_slab_rtail(old) == i))))
			np_slab_double_push(s, b);
		np_slab_set_link(s, b, len ? np_slab_rhead(old) : s->end);
		/* One more, b the head; b the tail too when the list was empty (its tail field is 0
		 * then); the state (state + 1) & 2: OWNED and ORPHAN stay, FLOATING becomes ORPHAN
		 * (the claim). */
		nw = ((old & ~((uintptr_t)0xffff << NP_SLAB_RHEAD_SHIFT | NP_SLAB_STATE_MASK)) +
		      ((uintptr_t)1 << NP_SLAB_RLEN_SHIFT)) |
		     ((uintptr_t)i << NP_SLAB_RHEAD_SHIFT) | (len ? 0 : (uintptr_t)i << NP_SLAB_RTAIL_SHIFT) |
		     ((old + 1) & NP_SLAB_ORPHAN);
	} while (!atomic_compare_exchange_weak_explicit(&s->thread_free, &old, nw,
							 /* a claim orders by a fence after it (free.c) */
							 NP_TSAN ? memory_order_acq_rel : memory_order_release,
							 memory_order_relaxed));
	*first = np_slab_rlen(old) == 0;
	return (old & NP_SLAB_STATE_MASK) == NP_SLAB_FLOATING;
}
/* Sets the ownership state bits, keeping the list. */
void np_slab_set_state(struct np_slab *s, uintptr_t state);

/* The floater of an orphan that its owner's exit (number seq, np_thread_exits; 0 for a move
 * to another node) left: odd, so never a thread (ring.c's np_ring_adopt_on_free). */
NP_INLINE struct np_thread *np_slab_exit_tag(uint64_t seq)
{
	return (struct np_thread *)(uintptr_t)(seq << 1 | 1);
}
NP_INLINE bool np_slab_left_by_exit(const struct np_slab *s)
{
	return (uintptr_t)__atomic_load_n(&s->floater, __ATOMIC_RELAXED) & 1;
}
/* The number of the exit that left s (np_slab_left_by_exit), 0 for a move. */
NP_INLINE uint64_t np_slab_exit_of(const struct np_slab *s)
{
	return (uintptr_t)__atomic_load_n(&s->floater, __ATOMIC_RELAXED) >> 1;
}

/* Orphan lists, one per node and class. */
void np_slab_orphan(struct np_slab *s);
struct np_slab *np_slab_adopt(int node, unsigned cls, struct np_thread *owner);
/* Takes s off its node's orphan list for owner, when it is on it (not held by a sweep, nor
 * adopted already); true when owner now owns it (OWNED, in no list yet). */
bool np_slab_adopt_listed(struct np_slab *s, struct np_thread *owner);
/* What a sweep of the orphans does besides releasing the empty ones. */
enum np_sweep {
	NP_SWEEP_COLLECT, /* nothing more */
	NP_SWEEP_TRIM,    /* np_slab_purge_free of every orphan (trim) */
};
/* Collects every orphan of every class and releases the empty ones, then gives back the free
 * pages inside the others as `how` says, counted in st's pages_purged. Returns the pages
 * released and given back. */
size_t np_slab_sweep_orphans(enum np_sweep how, struct np_vmstat_diffs *st);
/* The orphans' decay, a step of it at every thread's periodic point (now, period_ns:
 * np_os_clock_ns and the option): once a NUMAPAGE_DECAY_MS period a pass begins, which goes
 * over the orphan lists (node by node, class by class; no step while another sweep is under
 * way) and gives back (np_slab_decay) the free pages of the orphans listed two or more passes
 * before, each once a pass: a step reads up to NP_DECAY_LOOKS orphans, takes up to
 * NP_DECAY_SLABS of them off one list, one by one, and lists them again; the next step goes on
 * from the orphan where it stopped. Returns the orphans the step read. */
unsigned np_slab_decay_orphans(uint64_t now, uint64_t period_ns, struct np_vmstat_diffs *st);
/* Slabs a step of a decay pass gives back at most (the owner's, ring.c, and the orphans'):
 * a pass over thousands of slabs is spread over calls (trim took 210-270 ms over 256 MiB of
 * 1 KiB blocks with every other page live; the orphans' decay in one call took a malloc 1.1 s
 * over 256 MiB that an exited thread left, a review measured). */
#define NP_DECAY_SLABS 32
/* Slab headers a step reads at most (a pass over hundreds of slabs with nothing due takes a
 * few steps, each holding the orphans' lock, where it holds it, for that many). */
#define NP_DECAY_LOOKS (8 * NP_DECAY_SLABS)
/* Pages a step gives back, about: it decays no more slabs once this many went back, so one
 * slab past it at most (up to 128 pages). A page given back costs a system call's share and
 * the page's unmapping: 32 orphans of 30 free pages each took a step 12 ms on the
 * paravirtualized test host, where a page costs as much to unmap as to fault in. */
#define NP_DECAY_PAGES 256
/* What a step of a decay pass (the owner's, ring.c, or the orphans', slab.c) has done: slab
 * headers read, slabs decayed (the orphans' step counts those its collect emptied, released
 * whole, too) and pages given back. */
struct np_decay_budget {
	unsigned reads, decays;
	size_t pages;
};
/* The step may decay no more slabs: it read NP_DECAY_LOOKS headers, decayed NP_DECAY_SLABS
 * slabs, or gave back NP_DECAY_PAGES pages. */
NP_INLINE bool np_decay_spent(const struct np_decay_budget *b)
{
	return b->reads >= NP_DECAY_LOOKS || b->decays >= NP_DECAY_SLABS || b->pages >= NP_DECAY_PAGES;
}
/* Orphans the last sweep left on the lists, and slab slow paths (any thread's, counted by
 * ring.c while np_slab_orphans_changed is set) since it: relaxed hints for when the next sweep
 * is worth its walk. */
extern NP_HIDDEN size_t np_slab_orphans_kept;
extern NP_HIDDEN size_t np_slab_orphan_calls;
/* Set while a periodic sweep runs (ring.c takes it with an exchange); a fork's child clears it. */
extern NP_HIDDEN int np_slab_sweeping;
/* Set when a sweep of the orphans may find one to release: a slab became an orphan, or a
 * remote free made an orphan's remote list non-empty (np_slab_note_orphan_free); cleared by
 * the sweep. A hint: relaxed, and a sweep it lets through finds nothing at worst. */
extern NP_HIDDEN int np_slab_orphans_changed;
NP_INLINE void np_slab_note_orphan_free(void)
{
	if (!__atomic_load_n(&np_slab_orphans_changed, __ATOMIC_RELAXED))
		__atomic_store_n(&np_slab_orphans_changed, 1, __ATOMIC_RELAXED);
}
void np_slab_atfork_prepare(void);
void np_slab_atfork_parent(void);
void np_slab_atfork_child(void);

/* True when b is on s's free list (owner only). */
bool np_slab_holds_free(const struct np_slab *s, uintptr_t b);
/* The same question asked by a thread that does not own s, while the owner may be changing its
 * lists: walks free and thread_free with relaxed reads, every link checked before
 * it is followed and each walk bounded by the capacity. True means b was free at some moment
 * during the walk, so a free of it now is a second free; false may miss one that races. */
bool np_slab_holds_free_racy(const struct np_slab *s, uintptr_t b);
/* Whether block b of s, which looks free or carries a remote free's mark, is on s's free lists
 * or on a page trim gave back (np_slab_is_hidden), asked by thread self (NULL: no state):
 * exactly when self owns s (its remote list collected first, into the lists the walk reads),
 * else by the careful racy walk. What free() and the
 * calls that use a block without freeing it (realloc, malloc_usable_size) confirm before
 * reporting a freed block. */
bool np_slab_confirm_free(struct np_slab *s, uintptr_t b, const struct np_thread *self);
/* Once at start-up, before the first slab: the process secret and the seed of slab keys. */
void np_slab_init_secret(void);
/* Walks the slab's lists; NULL when sound, else what is wrong (owner only). */
const char *np_slab_check(const struct np_slab *s);

#endif /* NP_SLAB_H */
