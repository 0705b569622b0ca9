/*
 * ptr.c — the pointer decoder (see ptr.h). No lock: what it reads of a block handed out was
 * written before the block was (the granule map, the chunk header, the run's head descriptor,
 * the slab header), and a descriptor that another thread may be changing (a run's state) is
 * read with the relaxed atomics of chunk.h.
 */
#include "malloc/ptr.h"

#include "log.h"
#include "malloc/bootstrap.h"
#include "malloc/cache.h"
#include "malloc/thread.h"

static void bad(struct np_ptr *d, const char *why, bool freed)
{
	d->kind = NP_PTR_BAD;
	d->why = why;
	d->freed = freed;
}

/* p is in no granule a chunk covers whole: start-up memory, a block of a huge chunk smaller
 * than its granule (NP_GRANULE_PART: the kernel may have put anything, start-up memory
 * included, in the rest of that granule), the data of a huge chunk aligned to a chunk or more
 * (its data starts a granule or more past its header), or nothing of ours. The start-up
 * allocator is asked first: a chunk is read only where it holds p, so a free of start-up memory
 * never reads a chunk that another thread may be unmapping. */
static void decode_elsewhere(const void *p, bool interior, struct np_ptr *d)
{
	switch (np_bootstrap_state(p)) {
	case NP_BOOT_LIVE:
		d->kind = NP_PTR_BOOT;
		return;
	case NP_BOOT_FREED:
		bad(d, "invalid pointer (freed)", true);
		return;
	case NP_BOOT_INTERIOR:
		bad(d, "invalid pointer (not the start of a block)", false);
		return;
	case NP_BOOT_NONE:
		break;
	}
	struct np_chunk *c = np_chunk_find(p);
	if (c && c->magic == NP_CHUNK_MAGIC && c->kind != NP_CHUNK_NORMAL && c->kind != NP_CHUNK_CACHED &&
	    (const char *)p >= (const char *)c + c->data_offset && (interior || (const char *)p == (const char *)c + c->data_offset)) {
		d->kind = NP_PTR_CHUNK;
		d->chunk = c;
		return;
	}
	/* In a cached chunk, where its data began, or where a piece cut from it began before
	 * the two joined again (pool/huge.c): a block freed before. */
	uintptr_t a = (uintptr_t)p;
	bool block_start = c && (a == (uintptr_t)c + c->data_offset || (a & (NP_CHUNK_SIZE - 1)) == NP_CHUNK_HUGE_HEADER);
	if (c)
		bad(d, c->kind == NP_CHUNK_CACHED ? "invalid pointer (freed)" : "invalid pointer (inside a large block)",
		    c->kind == NP_CHUNK_CACHED && block_start);
	else if (np_chunk_was_unmapped(p))
		bad(d, "invalid pointer (freed)", true);
	else
		bad(d, "invalid pointer (not allocated by libnumapage)", false);
}

/* p, in page pg of normal chunk c and in no live slab, starts no block: freed when the run
 * holding pg is free (in a pool, or in a thread's page cache), as a block of a slab given back
 * since is (a second free of a 3,000-byte block was "not the start of a block": a hostile
 * test), else not the start of a block. */
static void not_a_start(const struct np_chunk *c, const struct np_page *pg, struct np_ptr *d)
{
	uint8_t st = np_page_state(&c->pages[np_chunk_run_head(c, (size_t)(pg - c->pages))]);
	if (st == NP_PAGE_FREE || st == NP_PAGE_FREE_END || st == NP_PAGE_PCP)
		bad(d, "invalid pointer (freed)", true);
	else
		bad(d, "invalid pointer (not the start of a block)", false);
}

void np_ptr_decode(const void *p, bool interior, struct np_ptr *d)
{
	*d = (struct np_ptr){.kind = NP_PTR_BAD};
	struct np_chunk *c = np_chunk_lookup(p);
	if (!c) {
		decode_elsewhere(p, interior, d);
		return;
	}
	d->chunk = c;
	if (c->magic != NP_CHUNK_MAGIC) {
		bad(d, "invalid pointer (corrupt chunk header)", false);
		return;
	}
	const char *data = (const char *)c + c->data_offset;
	if (c->kind != NP_CHUNK_NORMAL) {
		if (c->kind == NP_CHUNK_CACHED)
			bad(d, (const char *)p == data ? "invalid pointer (freed)" : "invalid pointer (inside a large block)",
			    (const char *)p == data);
		else if ((const char *)p == data || (interior && (const char *)p > data))
			d->kind = NP_PTR_CHUNK;
		else
			bad(d, "invalid pointer (inside a large block)", false);
		return;
	}
	/* A small block: its slab from the descriptor of its step's first page (every page
	 * of a slab names it). */
	struct np_page *step = &c->pages[((uintptr_t)p >> NP_PAGE_SHIFT) & (NP_CHUNK_PAGES - NP_SLAB_ALIGN_PAGES)];
	struct np_slab *s = np_page_owner(step);
	if (s && !interior) {
		d->slab = s;
		d->page = s->run;
		d->index = np_slab_index(s, (uintptr_t)p);
		if (d->index < s->end)
			d->kind = NP_PTR_SMALL;
		else
			bad(d, "invalid pointer (not the start of a block)", false);
		return;
	}
	struct np_page *pg = np_chunk_page(c, p);
	if (interior) {
		/* numa_page_node_of: any data page (its node is the chunk's). */
		if (np_page_state(pg) == NP_PAGE_HEADER)
			bad(d, "invalid pointer (a chunk header)", false);
		else
			d->kind = NP_PTR_RUN;
		return;
	}
	if (((uintptr_t)p & (NP_PAGE_SIZE - 1)) != 0) {
		not_a_start(c, pg, d);
		return;
	}
	switch (np_page_state(pg)) {
	case NP_PAGE_USED:
		d->kind = NP_PTR_RUN;
		d->page = pg;
		break;
	case NP_PAGE_FREE:
	case NP_PAGE_FREE_END:
	case NP_PAGE_PCP:
		bad(d, "invalid pointer (freed)", true);
		break;
	default:
		/* Where a huge block's data began, in a chunk a pool made of its cached mapping
		 * (pool/huge.h, np_huge_take_granule): that block was freed. */
		if ((uintptr_t)p - (uintptr_t)c == NP_CHUNK_HUGE_HEADER)
			bad(d, "invalid pointer (freed)", true);
		else
			not_a_start(c, pg, d);
	}
}

size_t np_ptr_usable(const struct np_ptr *d, const void *p)
{
	switch (d->kind) {
	case NP_PTR_SMALL:
		return d->slab->block;
	case NP_PTR_RUN:
		return (size_t)d->page->npages << NP_PAGE_SHIFT;
	case NP_PTR_CHUNK:
		return np_chunk_data_bytes(d->chunk);
	case NP_PTR_BOOT:
		return np_bootstrap_size(p);
	case NP_PTR_BAD:
		break;
	}
	return 0;
}

int np_ptr_node(const struct np_ptr *d, const void *p)
{
	return np_chunk_node_at(d->chunk, p);
}

void np_ptr_check_live(const char *call, bool freeing, struct np_ptr *d, const void *p)
{
	if (d->kind != NP_PTR_SMALL)
		return;
	struct np_slab *s = d->slab;
	uintptr_t a = (uintptr_t)p;
	/* A block on the lists has a link for its first word, or another thread's mark in its
	 * second: only then is the walk made. One on a page trim gave back is free without one. */
	if (NP_LIKELY(np_ptr_looks_live(s, a)))
		return;
	if (np_slab_is_hidden(s, a) || np_cache_looks_cached(a) || np_slab_confirm_free(s, a, np_tls.self)) {
		bad(d, "invalid pointer (freed)", true);
		np_ptr_invalid(call, freeing, d, p);
	}
}

void np_ptr_invalid(const char *call, bool freeing, const struct np_ptr *d, const void *p)
{
	if (freeing && d->freed)
		np_fatal("%s: double free of %p", call, p);
	np_fatal("%s: %s %p", call, d->why, p);
}
