/*
 * ptr.h — the one validated decoder of a pointer handed to free, realloc, malloc_usable_size or
 * numa_page_node_of: is it ours, what is it, and where are its chunk, page descriptor and slab.
 * It reads only memory the library owns (the granule map first, so a pointer that is not ours
 * is never dereferenced) and decodes once; callers pass the result down. (The free fast path in
 * alloc.h is the same decoding, specialised inline for a block of the calling thread's slab.)
 */
#ifndef NP_PTR_H
#define NP_PTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "malloc/cache.h"
#include "malloc/slab.h"
#include "pool/chunk.h"

enum np_ptr_kind {
	NP_PTR_SMALL, /* block `index` of slab `slab` */
	NP_PTR_RUN,   /* a page run handed out; `page` is its head descriptor */
	NP_PTR_CHUNK, /* the data of huge or interleaved chunk `chunk` */
	NP_PTR_BOOT,  /* a block of the start-up allocator */
	NP_PTR_BAD,   /* not a live block's start: `why` (freed: it was one, and was freed) */
};

struct np_ptr {
	enum np_ptr_kind kind;
	struct np_chunk *chunk; /* SMALL, RUN, CHUNK */
	struct np_page *page;   /* SMALL (the slab's run head), RUN */
	struct np_slab *slab;   /* SMALL */
	uint64_t index;         /* SMALL */
	bool freed;             /* BAD: a second free or a use of freed memory */
	const char *why;        /* BAD: "invalid pointer (...)" */
};

/* Decodes p (any value, NULL included: BAD) as the start of a block we handed out. With
 * interior (numa_page_node_of), any address inside the data of a chunk of ours decodes, as
 * SMALL, RUN or CHUNK, and then only `chunk` is meaningful. */
void np_ptr_decode(const void *p, bool interior, struct np_ptr *out);
/* Usable bytes of the block at p, decoded as SMALL, RUN, CHUNK or BOOT. */
size_t np_ptr_usable(const struct np_ptr *d, const void *p);
/* The dense node of the memory at p, decoded as SMALL, RUN or CHUNK. */
int np_ptr_node(const struct np_ptr *d, const void *p);
/* Aborts with "numapage: <call>: invalid pointer (freed) <p>" (a call that uses the block:
 * realloc, malloc_usable_size) or "numapage: <call>: double free of <p>" (freeing: the sized
 * frees, which check it before the size) when p, decoded as SMALL, is on its slab's free lists
 * (confirmed as free() confirms a double free: exactly for the owner, by the careful racy walk
 * for any other thread). Other kinds are checked by the decoder itself. */
void np_ptr_check_live(const char *call, bool freeing, struct np_ptr *d, const void *p);
/* Block a of slab s is on none of the slab's lists by its looks: no link for its first word, no
 * remote free's mark in its second, not in the thread cache, not on a page trim gave back (such
 * a block is on no list and reads as zeros; only free blocks lie there: a hostile review saw
 * realloc hand one back as live). Only when it is not does a check of liveness look further. */
NP_INLINE bool np_ptr_looks_live(const struct np_slab *s, uintptr_t a)
{
	return !np_slab_looks_free(s, a) && !np_slab_has_mark(s, a) && !np_cache_looks_cached(a) &&
	       !np_slab_is_hidden(s, a);
}
/* Reports a BAD pointer given to `call` ("free", "realloc", ...) and aborts with
 * "numapage: <call>: <why> <p>", or "numapage: free: double free of <p>" when freeing memory
 * already freed. */
NP_NORETURN NP_COLD void np_ptr_invalid(const char *call, bool freeing, const struct np_ptr *d, const void *p);

#endif /* NP_PTR_H */
