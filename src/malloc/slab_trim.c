/*
 * slab_trim.c — the free memory of a slab still in use, given back by trim and taken again by
 * the owner's refill (see slab.h: np_slab_purge_free, np_slab_refill).
 *
 * A one-step slab (classes up to 16 KiB) gives back every page that only free blocks cover.
 * Free blocks hold their list's link in their first bytes, so a page given back would read as
 * zeros and a link there would make it resident again: the blocks on such a page leave the
 * lists, and `hidden` keeps the page. When the owner runs out of blocks, refill takes a hidden
 * page back before it extends into never-used ones: its blocks are linked again, in address
 * order. A block that straddles two pages stays hidden while either is.
 *
 * A hidden page is written by nobody but a dangling pointer: the program writing a freed block,
 * or freeing one again (a free writes its link). So it reads as zeros until then, whether or not
 * it is resident (a read maps the zero page; mlock, a debugger or a core dump fill it; a page
 * written and swapped out is not resident): what it reads is what is checked. A block whose
 * first bytes lie on a hidden page reads as zeros there, so it does not look free; but while a
 * slab hides pages its fast_end is 0 (np_slab_set_hidden), so every free of its blocks, the
 * owner's too, takes the slow path, which finds a hidden block and reports the double free at
 * once (before, the free was taken, and the next malloc of the class handed the block out while
 * refill, finding the page all zeros again, handed it out a second time: a hostile test). A
 * write after free on a hidden page is found by whoever comes to the page next: refill does not
 * hand its blocks out again (one may be in use by then), and a slab whose count says it emptied
 * is not given back. A hidden block whose first bytes lie on a page that is not hidden has them
 * set to a link to the list's end, so that it looks free; anything else written there is found
 * as on a hidden page. Either way the slab is pinned (never given back) and the write reported
 * once.
 *
 * Not in chunks advised MADV_HUGEPAGE (NUMAPAGE_THP): khugepaged fills the pages given back
 * again when it collapses their range into a huge page, so giving them back buys little there;
 * those slabs give back what they did before pages were hidden (the inside of free blocks over
 * a page, and for those classes the never-used tail).
 *
 * Longer slabs (classes above 16 KiB) give back the whole pages inside each free block past its
 * link, as the blocks are larger than a page: they stay on the lists.
 */
#include "malloc/slab.h"

#include "os.h"
#include "vmstat/vmstat.h"

_Static_assert(NP_SLAB_ALIGN_PAGES <= 32, "hidden has a bit per page of a one-step slab");

/* The blocks of s that cover page p (first <= last), or false when none does. */
static bool blocks_of_page(const struct np_slab *s, unsigned p, uint32_t *first, uint32_t *last)
{
	uint64_t lo = ((uint64_t)p << NP_PAGE_SHIFT) / s->block;
	uint64_t hi = (((uint64_t)(p + 1) << NP_PAGE_SHIFT) - 1) / s->block;
	if (lo >= s->capacity)
		return false;
	*first = (uint32_t)lo;
	*last = (uint32_t)(hi < s->capacity ? hi : s->capacity - 1U);
	return true;
}

/* The address of page p of s's run. */
static uintptr_t page_at(const struct np_slab *s, unsigned p)
{
	return s->start + ((uintptr_t)p << NP_PAGE_SHIFT);
}

/* The page of s's run that holds block b's first bytes. */
static unsigned head_page(const struct np_slab *s, uintptr_t b)
{
	return (unsigned)((b - s->start) >> NP_PAGE_SHIFT);
}

NP_INLINE bool bit(const uint64_t *bits, uint64_t i)
{
	return (bits[i >> 6] >> (i & 63)) & 1;
}

uint32_t np_slab_mark_hidden(const struct np_slab *s, uint64_t *bits)
{
	uint32_t n = 0;
	for (uint32_t h = s->hidden; h; h &= h - 1) {
		uint32_t first, last;
		if (!blocks_of_page(s, (unsigned)__builtin_ctz(h), &first, &last))
			continue;
		for (uint32_t i = first; i <= last; i++)
			if (!bit(bits, i)) {
				bits[i >> 6] |= 1ULL << (i & 63);
				n++;
			}
	}
	return n;
}

/* Gives back the whole pages in [lo, hi): 0 when there are none or madvise refused. */
static size_t purge_inside(uintptr_t lo, uintptr_t hi)
{
	lo = (lo + NP_PAGE_SIZE - 1) & ~(uintptr_t)(NP_PAGE_SIZE - 1);
	hi &= ~(uintptr_t)(NP_PAGE_SIZE - 1);
	if (hi <= lo || np_os_purge((void *)lo, hi - lo) != 0)
		return 0;
	return (hi - lo) >> NP_PAGE_SHIFT;
}

/* Hidden block b's first bytes, where they lie on a page that stays resident: a link to the
 * list's end (b looks free: a second free of it is checked, and finds it hidden), no mark. */
static void tag_hidden(const struct np_slab *s, uintptr_t b)
{
	np_slab_set_link(s, b, s->end);
	((uintptr_t *)b)[1] = 0;
}

static bool tagged_hidden(const struct np_slab *s, uintptr_t b)
{
	return np_slab_link(s, b) == s->end && ((const uintptr_t *)b)[1] == 0;
}

/* Hidden page p of s is as trim left it: it reads as zeros. Whether it is resident says
 * nothing: a read maps the zero page, and mlock, a debugger's read or a core dump fill it; a
 * page written and then swapped out is not resident. Only a write changes what it reads, and
 * nothing writes there but a dangling pointer (a second free writes a link). */
static bool page_untouched(const struct np_slab *s, unsigned p)
{
	const uint64_t *w = (const uint64_t *)page_at(s, p);
	uint64_t any = 0;
	for (size_t k = 0; k < NP_PAGE_SIZE / sizeof *w; k++)
		any |= w[k];
	return any == 0;
}

/* page_untouched, read only where it is resident already (or mincore cannot say): reading a
 * page given back faults it in, and a slab whose pages are being looked at is about to be given
 * back whole. (A second free's link on a page since swapped out is not found here; refill,
 * which reads the page, finds it.) */
static bool page_untouched_resident(const struct np_slab *s, unsigned p)
{
	unsigned char v = 1;
	if (np_os_resident((const void *)page_at(s, p), NP_PAGE_SIZE, &v) == 0 &&
	    !(v & 1))
		return true;
	return page_untouched(s, p);
}

#define WRITTEN "the blocks there abandoned"

bool np_slab_hidden_intact(struct np_slab *s)
{
	for (uint32_t h = s->hidden; h; h &= h - 1) {
		unsigned p = (unsigned)__builtin_ctz(h);
		uint32_t first, last;
		if (!page_untouched_resident(s, p)) {
			np_slab_pin_corrupt(s, page_at(s, p), WRITTEN);
			return false;
		}
		/* The one block that may reach onto p from a page that is not hidden. */
		if (!blocks_of_page(s, p, &first, &last))
			continue;
		uintptr_t b = np_slab_block(s, first);
		unsigned hp = head_page(s, b);
		if (hp != p && !((s->hidden >> hp) & 1) && !tagged_hidden(s, b)) {
			np_slab_pin_corrupt(s, b, WRITTEN);
			return false;
		}
	}
	return true;
}

/* A one-step slab's pages that only free blocks cover, given back and hidden (see the top of
 * this file). The pages of never-used blocks are left to the caller. Returns the pages. */
static size_t hide_free_pages(struct np_slab *s)
{
	uint64_t bits[NP_SLAB_ALIGN / 16 / 64] = {0}; /* a bit per free block: capacity <= a step / 16 */
	np_assert(s->capacity <= sizeof bits * 8);
	uint32_t walked = 0;
	for (uintptr_t x = s->free; x; walked++) {
		uint64_t i = np_slab_index(s, x);
		uint64_t link = np_slab_link(s, x);
		/* A bad link, a block twice or on a hidden page (a double free): left as it is, for
		 * the pops to cut or the release to report. */
		if (walked >= s->capacity || link > s->end || bit(bits, i) || (np_slab_block_pages(s, i) & s->hidden))
			return 0;
		bits[i >> 6] |= 1ULL << (i & 63);
		x = link < s->end ? np_slab_block(s, link) : 0;
	}
	np_slab_mark_hidden(s, bits); /* free too */
	uint32_t handed = (uint32_t)(s->capacity - s->reserved); /* blocks below this one were handed out */
	uint32_t want = 0;
	for (unsigned p = 0; p < NP_SLAB_ALIGN_PAGES; p++) {
		uint32_t first, last;
		if ((s->hidden >> p) & 1 || !blocks_of_page(s, p, &first, &last) || last >= handed)
			continue;
		uint32_t i = first;
		while (i <= last && bit(bits, i))
			i++;
		if (i > last)
			want |= 1U << p;
	}
	/* Runs of pages in one madvise each. A refused run may have been given back in part (the
	 * kernel goes through it mapping by mapping, and stops at one it refuses, mlocked say):
	 * then each page of it again, and those refused stay as they are. */
	for (uint32_t w = want; w;) {
		unsigned a = (unsigned)__builtin_ctz(w), b = a;
		while (b + 1 < NP_SLAB_ALIGN_PAGES && ((w >> (b + 1)) & 1))
			b++;
		uint32_t run = (uint32_t)((2ULL << b) - (1ULL << a));
		if (np_os_purge((void *)page_at(s, a), (size_t)(b - a + 1) << NP_PAGE_SHIFT))
			for (unsigned p = a; p <= b; p++)
				if (np_os_purge((void *)page_at(s, p), NP_PAGE_SIZE))
					want &= ~(1U << p);
		w &= ~run;
	}
	if (!want)
		return 0;
	uint32_t was = s->hidden;
	np_slab_set_hidden(s, was | want);
	/* free again from the bits, in address order, without what is hidden now: the links on
	 * the pages given back read as zeros. */
	uint32_t head = s->end;
	for (uint32_t i = handed; i-- > 0;) {
		if (!bit(bits, i))
			continue;
		uintptr_t b = np_slab_block(s, i);
		uint32_t pages = np_slab_block_pages(s, i);
		if (pages & s->hidden) {
			if (!(pages & was) && !((s->hidden >> head_page(s, b)) & 1))
				tag_hidden(s, b); /* first bytes on a page that stays */
			continue;
		}
		np_slab_set_link(s, b, head);
		head = i;
	}
	s->free = head < s->end ? np_slab_block(s, head) : 0;
	s->free_i = (uint16_t)head;
	return (size_t)__builtin_popcount(want);
}

/* The lists' state as np_slab_purge_free compares it for longer slabs (never 0: a slab never
 * purged). */
static uint32_t lists_digest(const struct np_slab *s)
{
	uint64_t x = (uint64_t)s->free ^ ((uint64_t)s->used << 16) ^ s->reserved ^ ((uint64_t)s->hidden << 40);
	return (uint32_t)((x * 0x9e3779b97f4a7c15ULL) >> 32) | 1;
}

size_t np_slab_purge_free(struct np_slab *s, struct np_vmstat_diffs *st)
{
	/* One-step slabs hide pages (but in chunks advised MADV_HUGEPAGE: see the top); longer
	 * ones, and one-step ones there, give back the pages inside blocks past the link. */
	bool hide = np_class_slab_bytes(s->cls) == NP_SLAB_ALIGN && !np_chunk_of((const void *)s->start)->thp;
	if (s->used >= NP_SLAB_PINNED || (!hide && s->block <= NP_PAGE_SIZE + NP_SLAB_LINK_BYTES))
		return 0;
	np_slab_collect(s);
	/* The digest lets a longer slab's purge, which gives the same pages back again, skip lists
	 * that look unchanged (lists of one digest may still differ); a one-step slab's walk gives
	 * back only pages not hidden yet. */
	if (!hide && lists_digest(s) == s->purged)
		return 0;
	size_t pages = 0;
	if (hide) {
		pages += hide_free_pages(s);
	} else {
		uint32_t walked = 0;
		for (uintptr_t x = s->free; x && walked < s->capacity; walked++) {
			uint64_t link = np_slab_link(s, x);
			if (link > s->end)
				break; /* corrupt: left for the malloc that reaches it to report */
			pages += purge_inside(x + NP_SLAB_LINK_BYTES, x + s->block);
			x = link < s->end ? np_slab_block(s, link) : 0;
		}
	}
	/* Blocks never handed out hold no link, nor does the run's tail past the last block. What
	 * a one-step slab has never handed out is written by nothing later: given back once. */
	if (s->reserved && (!hide || !s->purged))
		pages += purge_inside(np_slab_block(s, (uint64_t)(s->capacity - s->reserved)),
				      s->start + np_class_slab_bytes(s->cls));
	s->purged = hide ? 1 : lists_digest(s);
	if (pages)
		np_vmstat_add(st, s->node, NUMA_PAGE_STAT_pages_purged, (long)pages);
	return pages;
}

size_t np_slab_decay(struct np_slab *s, struct np_vmstat_diffs *st)
{
	size_t pages = np_slab_purge_free(s, st);
	s->decay_used = s->used + 1; /* after its collect */
	return pages;
}

/* The lowest hidden page of s back: its blocks that no other hidden page holds are linked in
 * front of free, unless a dangling pointer used them since (see the top of this file). */
static void revive_page(struct np_slab *s)
{
	unsigned p = (unsigned)__builtin_ctz(s->hidden);
	np_slab_set_hidden(s, s->hidden & (s->hidden - 1));
	uint32_t first, last;
	if (!blocks_of_page(s, p, &first, &last))
		return;
	if (!page_untouched(s, p)) {
		np_slab_pin_corrupt(s, page_at(s, p), WRITTEN);
		return;
	}
	uint32_t head = s->free_i;
	for (uint32_t i = last + 1; i-- > first;) {
		uintptr_t b = np_slab_block(s, i);
		unsigned hp = head_page(s, b);
		if (np_slab_block_pages(s, i) & s->hidden) {
			/* Still on another hidden page: tagged, if its first bytes are on this one. */
			if (hp == p)
				tag_hidden(s, b);
			continue;
		}
		/* First bytes on a page that stayed, or that came back before: the tag, else a
		 * dangling pointer wrote them. */
		if (hp != p && !tagged_hidden(s, b)) {
			np_slab_pin_corrupt(s, b, "that block abandoned");
			continue;
		}
		np_slab_set_link(s, b, head);
		head = i;
	}
	s->free = head < s->end ? np_slab_block(s, head) : 0;
	s->free_i = (uint16_t)head;
}

void np_slab_revive(struct np_slab *s)
{
	while (!s->free && s->hidden)
		revive_page(s);
}
