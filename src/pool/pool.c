/*
 * pool.c — per-node page pools (see pool.h). Free runs are maximal: a run returned to the pool
 * merges with free neighbours at once, so the page before a free run's head and the page after
 * its end are never free. Each free run carries its length on its first and last descriptor
 * (states FREE and FREE_END) for that merge. System calls (mmap for growth, madvise for
 * purging) are made with the pool lock dropped.
 */
#include "pool/pool.h"

#include <errno.h>
#include <string.h>

#include "log.h"
#include "options.h"
#include "os.h"
#include "pool/huge.h"
#include "pool/pool_locked.h"

struct np_pool np_pools[NP_MAX_NODES] NP_LARGE_BSS;
/* Each shard's free-run lists (pool.h: struct np_pool_shard's bins), written only once the
 * shard holds a run: a mapping per node set up (node_bins), 129 KiB of address space. As BSS
 * for every node the library knows (64 of 64 shards) they were 8 MiB of every process's
 * address space, a limit under `ulimit -v` counts as much as memory. */
typedef struct np_page *np_shard_bins[NP_POOL_SHARDS][NP_POOL_BINS];
static np_shard_bins *node_bins[NP_MAX_NODES];

/* Node i's bins, mapped the first time it is set up; NULL when no address space is left. */
static np_shard_bins *bins_of_node(int i)
{
	size_t ps = np_os_page_size();
	if (!node_bins[i])
		node_bins[i] = np_os_map((sizeof(np_shard_bins) + ps - 1) & ~(ps - 1), ps);
	return node_bins[i];
}

/* The shard each CPU takes from: allowed CPUs in turn, so that a sparse cpuset ("0,2,4,6")
 * uses as many shards as it has CPUs. Written for the allowed CPUs only. */
static uint8_t cpu_shard[NP_MAX_CPUS] NP_LARGE_BSS;

size_t np_pool_purge_pages;

_Static_assert(NP_POOL_SHARDS <= 64, "lock.c has lock slots for 64 shards a node");

bool np_pool_lock(struct np_pool_shard *s, struct np_vmstat_diffs *st)
{
	if (np_trylock(s->lock))
		return false;
	np_vmstat_add(st, s->node, NUMA_PAGE_STAT_pool_contended, 1);
	np_lock(s->lock);
	return true;
}

/* Pages of shard p's chunks in use: mapped, not free, not out for a purge. Exact under the
 * lock; without it (relaxed loads) a hint that may be read mid-change. */
static size_t shard_used(const struct np_pool_shard *p)
{
	size_t mapped = __atomic_load_n(&p->mapped_pages, __ATOMIC_RELAXED);
	size_t out = __atomic_load_n(&p->free_pages, __ATOMIC_RELAXED) +
		     __atomic_load_n(&p->purging_pages, __ATOMIC_RELAXED);
	return mapped > out ? mapped - out : 0;
}

/* A count that has moved more than the pool's step from what was folded last. */
static bool drifted(const struct np_pool *pool, size_t now, size_t folded)
{
	return now > folded + pool->dirty_step || now + pool->dirty_step < folded;
}

/* A chunk more for pool: its mapped pages and, past it, their peak (a slow path, at most once a
 * chunk). */
static void note_mapped(struct np_pool *pool)
{
	size_t now = __atomic_add_fetch(&pool->mapped_pages, NP_CHUNK_DATA_PAGES, __ATOMIC_RELAXED);
	size_t peak = __atomic_load_n(&pool->mapped_peak, __ATOMIC_RELAXED);
	while (now > peak && !__atomic_compare_exchange_n(&pool->mapped_peak, &peak, now, true,
							   __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* Raises the slot of the period under way (pool.h: peak) to used pages of the pool; a slot a
 * newer period took (this thread read the period before it began) is left alone. */
static void note_peak(struct np_pool *pool, size_t used)
{
	uint32_t period = (uint32_t)__atomic_load_n(&pool->decay_period, __ATOMIC_RELAXED);
	uint64_t *slot = &pool->peak[period & 1];
	uint64_t want = (uint64_t)period << 32 | NP_MIN(used, (size_t)UINT32_MAX);
	uint64_t old = __atomic_load_n(slot, __ATOMIC_RELAXED);
	for (;;) {
		int32_t age = (int32_t)(period - (uint32_t)(old >> 32));
		if (age < 0 || (age == 0 && (uint32_t)old >= (uint32_t)want))
			return;
		if (__atomic_compare_exchange_n(slot, &old, want, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return;
	}
}

/* Pages of p's chunks in use over its shards, from the shards' own counts (racy reads). */
static size_t used_now(const struct np_pool *p)
{
	size_t n = 0;
	for (unsigned k = 0; k < p->nshards; k++)
		n += shard_used(&p->shard[k]);
	return n;
}

void np_pool_note_period(struct np_pool *pool)
{
	/* The shards' own counts (once a period), not the folded total: a shard holds up to a
	 * step it has not folded, half the option over all of them. */
	note_peak(pool, used_now(pool));
}

/* Folds shard s's dirty pages and pages in use into its pool's totals once they have drifted
 * (pool.h: dirty_approx, used_approx), a new total in use raising the period's peak. At the
 * unlock, not at each change: taking a run out of its bin and putting the rest back would
 * fold twice, both ways. */
static void fold_locked(struct np_pool_shard *s)
{
	struct np_pool *pool = &np_pools[s->node];
	if (drifted(pool, s->dirty_pages, s->dirty_folded)) {
		__atomic_add_fetch(&pool->dirty_approx, s->dirty_pages - s->dirty_folded, __ATOMIC_RELAXED); /* mod 2^64 */
		s->dirty_folded = s->dirty_pages;
	}
	size_t used = shard_used(s);
	if (drifted(pool, used, s->used_folded)) {
		bool grew = used > s->used_folded;
		size_t total = __atomic_add_fetch(&pool->used_approx, used - s->used_folded, __ATOMIC_RELAXED);
		s->used_folded = used;
		if (grew)
			note_peak(pool, total);
	}
}

void np_pool_unlock(struct np_pool_shard *s)
{
	fold_locked(s);
	np_unlock(s->lock);
}

/* Adaptive: a waiter spins a little before it sleeps. The lock is held for a few list
 * operations, so a waiter usually gets it without a futex sleep and a context switch
 * (measured: docs/design.md, "Measurements behind the code"). */
static void init_lock(struct np_pool_shard *s)
{
	np_lock_setup(&s->lock, NP_LOCK_RANK_POOL, s->node, true);
}

/* Pools some topology table has initialised (the tests load several): the ones past it were
 * never written, and loops over pools stop there. A read of BSS nobody wrote costs nothing on
 * most kernels (the shared zero page), but not on all: reading all 64 pools' headers made 64
 * pages (256 KiB) resident at start-up on a 6.18 guest that backs such reads with fresh pages,
 * a fifth of a small program's resident memory beyond glibc's. */
static int pool_nodes;

void np_pool_init(const struct np_topo *t)
{
	/* One shard per CPU the process may use, up to NP_POOL_SHARDS. */
	unsigned nshards = (unsigned)NP_MAX(1, NP_MIN(t->nallowed_cpus, NP_POOL_SHARDS));
	for (int c = 0, k = 0; c < t->ncpus && c < NP_MAX_CPUS; c++)
		if (t->cpu[c].allowed)
			cpu_shard[c] = (uint8_t)(k++ % (int)nshards);
	np_pool_purge_pages = (size_t)np_opt.purge_mb << (20 - NP_PAGE_SHIFT);
	np_chunk_address_limit = np_os_address_limit();
	np_chunk_tight = np_chunk_address_limit != 0;
	np_chunk_init_map();
	/* Only the pools of the table's nodes (and any a previous table used: tests load several)
	 * are written, and of each only the shards in use: the 64 pools of 64 shards are 776 KiB
	 * of BSS and their bins 8 MiB (written once a shard holds a run), and a page of BSS nobody
	 * writes costs no memory (a one-node process started with 124 KiB more resident when all
	 * 64 pools' headers were written). */
	int upto = NP_MAX(t->nnodes, pool_nodes);
	for (int i = 0; i < upto; i++) {
		struct np_pool *p = &np_pools[i];
		if (i >= t->nnodes && !p->exists && !p->mapped_pages)
			continue;
		unsigned shards_upto = NP_MAX(nshards, p->shards_used);
		np_shard_bins *bins = bins_of_node(i);
		if (!bins) {
			/* Nothing of it was set up before (its bins would be mapped): it stays empty. */
			np_warn("pool: no address space for the free lists of node %d; it serves no memory", i);
			p->exists = false;
			continue;
		}
		p->node = i;
		p->exists = false;
		p->nshards = nshards;
		p->shards_used = shards_upto;
		p->mapped_pages = p->mapped_peak = 0;
		p->limit_pages = 0;
		p->spilled = p->low = 0;
		p->decay_began = 0;
		p->decay_period = 0;
		p->dirty_step = np_pool_purge_pages / (2 * nshards);
		for (unsigned k = 0; k < shards_upto; k++) {
			struct np_pool_shard *sh = &p->shard[k];
			if (k >= nshards && !sh->chunks && !sh->free_pages) {
				sh->dirty_folded = sh->used_folded = 0; /* it holds nothing: the totals start at 0 */
				continue;
			}
			/* Bins a previous table set up (tests) are cleared: a run it handed out may
			 * have come back since beside free runs of the old lists, and left a link
			 * in them that no mask bit shows. Never-used bins stay unwritten. */
			if (sh->bins)
				memset((*bins)[k], 0, sizeof(*bins)[k]);
			*sh = (struct np_pool_shard){.node = i, .index = (uint8_t)k, .bins = (*bins)[k], .lock = sh->lock};
			init_lock(sh);
		}
		if (i < t->nnodes && t->node[i].mem_allowed) {
			p->exists = true;
			p->limit_pages = t->node[i].mem_bytes >> NP_PAGE_SHIFT;
		}
		/* Every shard set up again holds nothing; one skipped never held a run. */
		p->dirty_approx = 0;
		p->used_approx = 0;
		p->peak[0] = p->peak[1] = 0;
	}
	pool_nodes = upto;
}

/* ---- free runs -------------------------------------------------------------------------- */

static int bin_of(size_t n)
{
	return n <= NP_POOL_EXACT_BINS ? (int)n - 1 : NP_POOL_EXACT_BINS;
}

static void bin_push(struct np_pool_shard *p, struct np_page *pg)
{
	int b = bin_of(pg->npages);
	pg->prev = NULL;
	pg->next = p->bins[b];
	if (pg->next)
		pg->next->prev = pg;
	p->bins[b] = pg;
	p->bin_mask[b / 64] |= 1ULL << (b % 64);
}

static void bin_unlink(struct np_pool_shard *p, struct np_page *pg)
{
	int b = bin_of(pg->npages);
	if (pg->prev)
		pg->prev->next = pg->next;
	else
		p->bins[b] = pg->next;
	if (pg->next)
		pg->next->prev = pg->prev;
	if (!p->bins[b])
		p->bin_mask[b / 64] &= ~(1ULL << (b % 64));
}

/* Inserts the free run [pg, pg+n). clean: every page reads as zeros (fresh or purged; what
 * calloc may rely on). dirty: how many of its pages may be resident, which decides purging.
 * dirty is exact for runs returned whole and an estimate after splits (a taken part is
 * assumed to take the dirty pages with it): it only steers purging, never correctness. */
/* A free run's dirty estimate lives in its last page's `prev` link, which no list uses (the
 * head's links are the bin's, and `owner` must stay NULL: free() reads it on any pointer). A
 * one-page run is dirty exactly when it is not clean. */
size_t np_pool_run_dirty(const struct np_page *pg)
{
	return pg->npages == 1 ? !pg->clean : (size_t)(uintptr_t)pg[pg->npages - 1].prev;
}

/* period: the decay period the run was returned in (pool.h); a run cut from a free one keeps
 * its stamp, a returned one gets the period under way, a merged one its oldest dirty part's. */
static void insert_free_locked(struct np_pool_shard *p, struct np_page *pg, size_t n, bool clean, size_t dirty,
			       uint8_t period)
{
	pg->state = NP_PAGE_FREE;
	pg->user = period;
	pg->npages = (uint32_t)n;
	dirty = clean ? 0 : NP_MIN(dirty, n);
	if (n == 1)
		dirty = !clean; /* no room for an estimate: dirty exactly when not clean (a remainder
				 * estimated 0 may still hold data, and calloc trusts clean) */
	pg->clean = clean;
	np_page_set_owner(pg, NULL);
	pg->order = NP_ORDER_NONE;
	if (n > 1) {
		pg[n - 1].state = NP_PAGE_FREE_END;
		pg[n - 1].npages = (uint32_t)n;
		pg[n - 1].prev = (struct np_page *)(uintptr_t)dirty;
	}
	bin_push(p, pg);
	np_pool_set_count(&p->free_pages, p->free_pages + n);
	np_pool_set_count(&p->dirty_pages, p->dirty_pages + dirty);
}

void np_pool_remove_free_locked(struct np_pool_shard *p, struct np_page *pg)
{
	bin_unlink(p, pg);
	np_pool_set_count(&p->free_pages, p->free_pages - pg->npages);
	size_t d = np_pool_run_dirty(pg);
	np_pool_less_dirty(p, d);
}

/* Returns a run to the pool, merging it with free neighbours. clean: the run reads as zeros
 * (a purged run); otherwise all its pages count as dirty. */
/* The stamp of a run merged from parts: the oldest dirty part's (a clean part has nothing to
 * age), so that an idle dirty run beside one the program keeps freeing and taking again still
 * decays (a helper's review: restamped at every merge, it never did). */
NP_INLINE void merge_period(uint8_t now, const struct np_page *part, uint8_t *period)
{
	if (np_pool_run_dirty(part) && (uint8_t)(now - part->user) > (uint8_t)(now - *period))
		*period = part->user;
}

void np_pool_put_locked(struct np_pool_shard *p, struct np_page *pg, bool clean)
{
	struct np_chunk *c = np_chunk_of(pg);
	size_t idx = (size_t)(pg - c->pages);
	size_t n = pg->npages;
	size_t dirty = clean ? 0 : n;
	uint8_t now = (uint8_t)__atomic_load_n(&np_pools[p->node].decay_period, __ATOMIC_RELAXED), period = now;
	/* When the run merges into a free run on its left, its head becomes an interior page
	 * that nothing rewrites: it must not keep saying USED, or freeing the pointer again
	 * would pass free()'s state check and insert the run a second time. */
	pg->state = NP_PAGE_FREE;
	if (idx > NP_CHUNK_HEADER_PAGES) {
		struct np_page *left = &c->pages[idx - 1];
		uint8_t ls = np_page_state(left); /* may belong to a run another thread owns */
		if (ls == NP_PAGE_FREE || ls == NP_PAGE_FREE_END) {
			struct np_page *head = &c->pages[idx - left->npages];
			merge_period(now, head, &period);
			dirty += np_pool_run_dirty(head);
			np_pool_remove_free_locked(p, head);
			clean = clean && head->clean;
			n += head->npages;
			idx -= head->npages;
			pg = head;
		}
	}
	if (idx + n < NP_CHUNK_PAGES) {
		struct np_page *right = &c->pages[idx + n];
		if (np_page_state(right) == NP_PAGE_FREE) {
			merge_period(now, right, &period);
			dirty += np_pool_run_dirty(right);
			np_pool_remove_free_locked(p, right);
			clean = clean && right->clean;
			n += right->npages;
		}
	}
	insert_free_locked(p, pg, n, clean, dirty, period);
}

/* Marks [pg, pg+n) as one run handed out: head USED, every other page TAIL. */
void np_pool_mark_used(struct np_page *pg, size_t n, uint8_t order)
{
	pg->state = NP_PAGE_USED;
	pg->npages = (uint32_t)n;
	pg->order = order;
	np_page_set_owner(pg, NULL);
	pg->user = 0;
	pg->next = pg->prev = NULL;
	for (size_t k = 1; k < n; k++) {
		pg[k].state = NP_PAGE_TAIL;
		pg[k].npages = 0;
		np_page_set_owner(&pg[k], NULL);
	}
}

/* Of the n pages from index aidx of free run pg, those never touched: all of them when the
 * run is known clean (fresh or purged), else those at or past the chunk's touched mark. */
static size_t fresh_pages(const struct np_page *pg, size_t aidx, size_t n)
{
	if (pg->clean)
		return n;
	size_t touched = np_chunk_of(pg)->touched;
	return aidx + n > touched ? aidx + n - NP_MAX(touched, aidx) : 0;
}

/* Runs a take that may not have fresh pages passes over, at most, for holding some. */
#define RESIDENT_LOOKS 64

/* Takes a run of n pages aligned to align pages from bins [first, end), splitting what is left
 * over back into the pool, after passing over `looks` runs that do not fit at most. Without
 * fresh, only a run none of whose pages would be fresh (fresh_pages: a first touch; and
 * dirty wherever it is below the touched mark: none purged) fits, and at most RESIDENT_LOOKS others are
 * passed over. NULL when none of those it looked at fits. */
static struct np_page *take_bins(struct np_pool_shard *p, int first, int end, size_t n, size_t align, size_t looks,
				 bool fresh)
{
	size_t skips = fresh ? SIZE_MAX : RESIDENT_LOOKS;
	for (int b = first; b < end; b++) {
		uint64_t m = p->bin_mask[b / 64] >> (b % 64);
		if (!m) {
			b = (b / 64 + 1) * 64 - 1; /* skip the rest of this mask word */
			continue;
		}
		b += __builtin_ctzll(m);
		if (b >= end)
			break;
		/* Exact bins: the first run that fits its alignment. The last bin holds runs of any
		 * length above the exact bins: there, the run that needs the fewest pages never
		 * touched (each a fault, and resident from then on), then the best fit (the
		 * shortest, the most resident on a tie), or big blocks scatter over fresh pages
		 * and fault them in (docs/design.md, "Measurements behind the code"). */
		struct np_page *best = NULL;
		size_t best_len = 0, best_dirty = 0, best_fresh = 0;
		for (struct np_page *pg = p->bins[b]; pg && looks; pg = pg->next) {
			struct np_chunk *c = np_chunk_of(pg);
			size_t idx = (size_t)(pg - c->pages), len = pg->npages;
			size_t aidx = (idx + align - 1) & ~(align - 1);
			if (aidx + n > idx + len ||
			    (p->committed_only && aidx + n > __atomic_load_n(&c->committed, __ATOMIC_RELAXED))) {
				looks--;
				continue;
			}
			if (fresh && b < NP_POOL_EXACT_BINS) {
				best = pg;
				break;
			}
			/* Without fresh pages: none past the touched mark, and none purged. A dirty
			 * run merged with a purged one is neither clean nor past the mark, and its
			 * estimate does not say where its resident pages are: all of the run below
			 * the mark must count dirty (a review: the purged half of such a run was
			 * handed out). */
			size_t new_pages = fresh_pages(pg, aidx, n);
			if (!fresh && (new_pages || np_pool_run_dirty(pg) + fresh_pages(pg, idx, len) < len)) {
				if (--skips)
					continue;
				if (best) /* the resident run found before these */
					break;
				return NULL;
			}
			if (b < NP_POOL_EXACT_BINS) {
				best = pg;
				break;
			}
			size_t dirty = np_pool_run_dirty(pg);
			if (!best || new_pages < best_fresh ||
			    (new_pages == best_fresh && (len < best_len || (len == best_len && dirty > best_dirty)))) {
				best = pg;
				best_len = len;
				best_dirty = dirty;
				best_fresh = new_pages;
			}
		}
		if (best) {
			struct np_page *pg = best;
			struct np_chunk *c = np_chunk_of(pg);
			size_t idx = (size_t)(pg - c->pages), len = pg->npages;
			size_t aidx = (idx + align - 1) & ~(align - 1);
			/* Its pages read-write first (a chunk is reserved, then committed as the pool
			 * reaches into it); refused, the pool stays as it was. */
			if (!np_chunk_commit(c, aidx + n)) {
				p->no_commit = true;
				return NULL;
			}
			bool clean = pg->clean;
			size_t dirty = np_pool_run_dirty(pg);
			uint8_t period = pg->user;
			np_pool_remove_free_locked(p, pg);
			/* The taken part is assumed to hold the dirty pages (they are the ones
			 * freed last, merged in front of clean remainders): the leftovers keep the
			 * rest of the estimate. */
			dirty -= NP_MIN(dirty, n);
			if (aidx > idx) {
				insert_free_locked(p, pg, aidx - idx, clean, dirty, period);
				dirty -= NP_MIN(dirty, aidx - idx);
			}
			if (aidx + n < idx + len)
				insert_free_locked(p, &c->pages[aidx + n], idx + len - aidx - n, clean, dirty, period);
			struct np_page *run = &c->pages[aidx];
			run->clean = clean;
			np_chunk_raise_touched(run, n);
			return run;
		}
	}
	return NULL;
}

/* Runs an aligned take passes over, at most, that cannot hold its pages at an aligned start. */
#define ALIGNED_LOOKS 64

/* Takes a run of n pages aligned to align pages (a power of two) from the bins, splitting what
 * is left over back into the pool. NULL when no free run fits. An aligned take looks first
 * where every run fits: one of n + align - 1 pages holds an aligned start wherever it begins
 * (but in the last bin, which holds every longer run). Then below. Each of those looks passes
 * over ALIGNED_LOOKS runs that do not fit at most: the leftovers of aligned takes gather there,
 * mostly without an aligned start, and a walk of them all at every take made
 * posix_memalign(128 KiB) of small blocks 33 times jemalloc's time, growing with the live
 * blocks (a helper's measurement: take_runs 92.6% of it). */
static struct np_page *take_locked(struct np_pool_shard *p, size_t n, size_t align, bool fresh)
{
	if (align <= 1)
		return take_bins(p, bin_of(n), NP_POOL_BINS, n, 1, SIZE_MAX, fresh);
	int sure = bin_of(n + align - 1);
	struct np_page *run = take_bins(p, sure, NP_POOL_BINS, n, align, ALIGNED_LOOKS, fresh);
	if (!run && sure > bin_of(n))
		run = take_bins(p, bin_of(n), sure, n, align, ALIGNED_LOOKS, fresh);
	/* Not found so: every run, so that one that fits is found wherever it lies (a review: a
	 * fitting run behind 77 that did not in the last bin was missed, and a chunk mapped). Only
	 * before the pool grows or the take fails, so at most once a chunk when takes fill it. */
	if (!run)
		run = take_bins(p, bin_of(n), NP_POOL_BINS, n, align, SIZE_MAX, fresh);
	return run;
}

/* Maps a chunk for shard p with its lock dropped. Returns false when the node is full or the
 * kernel refused. Called and returns with the lock held. */
static bool grow_locked(struct np_pool_shard *p, struct np_vmstat_diffs *st)
{
	/* No cap on what is mapped: address space is not memory (chunks are mapped with
	 * MAP_NORESERVE and fill only as they are touched), and a program that maps more small
	 * blocks than the node holds must get them as it would from the C library. */
	/* After a refusal (a cpuset that no longer allows the node, no memory left) the fallback
	 * order serves; try the node again only every so often, not on every request. */
	if (p->grow_backoff) {
		p->grow_backoff--;
		return false;
	}
	np_pool_unlock(p);
	/* The first granule of a freed huge block the node's huge cache keeps resident, made a
	 * chunk in place: a program that frees a large buffer and goes on with smaller blocks
	 * reuses its pages rather than faulting in new ones beside them (GNU sort -S 20M: peak
	 * RSS 42.8 MB against glibc's 22.1). */
	enum np_chunk_refusal why = NP_CHUNK_NO_SPACE;
	size_t dirty = 0, touched = NP_CHUNK_HEADER_PAGES;
	struct np_chunk *c = np_huge_take_granule(p->node, &dirty);
	if (c)
		touched = np_chunk_adopt_huge(c, dirty);
	else
		c = np_chunk_map(p->node, np_pool_is_low(p->node), &why);
	if (!c && why == NP_CHUNK_NO_SPACE && np_pool_give_back_space(st))
		c = np_chunk_map(p->node, np_pool_is_low(p->node), &why); /* address space back: once more */
	np_pool_lock(p, st);
	if (!c) {
		/* A node that refused serves through the fallback order for a while; a lack of
		 * address space is no node's, and a later free may end it (skipping 64 growths
		 * then failed 64 mallocs after the space was back). */
		if (why != NP_CHUNK_NO_SPACE)
			p->grow_backoff = 64;
		if (why == NP_CHUNK_SPILLED)
			np_pool_note_spill(p->node);
		return false;
	}
	c->shard = p->index;
	c->next = p->chunks;
	p->chunks = c;
	np_pool_set_count(&p->mapped_pages, p->mapped_pages + NP_CHUNK_DATA_PAGES);
	note_mapped(&np_pools[p->node]);
	/* An adopted chunk's pages below its touched mark may hold data, and decay from now. */
	bool fresh = touched == NP_CHUNK_HEADER_PAGES;
	uint8_t now = (uint8_t)__atomic_load_n(&np_pools[p->node].decay_period, __ATOMIC_RELAXED);
	insert_free_locked(p, &c->pages[NP_CHUNK_HEADER_PAGES], NP_CHUNK_DATA_PAGES, fresh,
			   touched - NP_CHUNK_HEADER_PAGES, fresh ? 0 : now);
	return true;
}

/* Whether a run of n pages aligned to align pages fits behind the header of a fresh chunk.
 * When it does not, growing the pool can never satisfy it (the caller maps it on its own). */
static bool fits_in_chunk(size_t n, size_t align)
{
	size_t first = (NP_CHUNK_HEADER_PAGES + align - 1) & ~(align - 1);
	return first <= NP_CHUNK_PAGES && n <= NP_CHUNK_PAGES - first;
}

/* ---- the pool's interface ----------------------------------------------------------------- */

/* 1 + the shard the calling thread takes runs from, in every node's pool (0: none chosen yet). */
static NP_TLS uint8_t my_shard;

/* The shard of the CPU the calling thread runs on (rseq: one load). */
static unsigned cpu_shard_now(void)
{
	int cpu = np_os_current_cpu();
	return cpu >= 0 && cpu < NP_MAX_CPUS ? cpu_shard[cpu] : 0;
}

/* The calling thread's shard: its CPU's at its first take, and kept while the thread moves
 * between CPUs, so that what it frees and takes again stays in one shard; it changes to the
 * CPU's shard when the thread finds its shard's lock taken (take_runs), or moves to another
 * node (np_pool_rehome_thread). Chosen anew at each move, a thread the scheduler moved between
 * two CPUs took from both shards in turn, and the pages it freed in one stayed resident there
 * while the other mapped chunks: a producer handing messages to a consumer peaked at 530-650
 * MB against 371-379 MB on one shard (two busy loops beside it; a helper's soak test). */
static struct np_pool_shard *home_shard(struct np_pool *p)
{
	if (p->nshards == 1)
		return &p->shard[0];
	if (!my_shard || my_shard > p->nshards) /* none yet, or chosen in a table with more CPUs */
		my_shard = (uint8_t)(cpu_shard_now() + 1);
	unsigned k = my_shard - 1u;
	return &p->shard[k < p->nshards ? k : 0];
}

void np_pool_rehome_thread(void)
{
	my_shard = 0;
}

/* Up to n runs of npages at align_pages from shard p, in one lock hold, marked used with
 * `order`; grows the shard only when grow allows and it is empty-handed (partial batches are
 * fine); without fresh, only runs whose pages are all resident (take_bins). Returns how many
 * were stored in out[]. */
static int take_runs(struct np_pool_shard *p, size_t npages, size_t align_pages, uint8_t order, int n,
		     struct np_page **out, struct np_vmstat_diffs *st, bool grow, bool fresh, const char *where)
{
	int got = 0;
	/* Without fresh pages, a shard whose dirty pages (a hint) cannot hold one run is not
	 * locked and walked at all: on a node without room, every refill asks. */
	if (!fresh && __atomic_load_n(&p->dirty_pages, __ATOMIC_RELAXED) < npages)
		return 0;
	if (np_pool_lock(p, st) && my_shard == p->index + 1u) /* another thread shares it: */
		my_shard = (uint8_t)(cpu_shard_now() + 1);   /* the CPU's from now on */
	p->no_commit = false;
	while (got < n) {
		struct np_page *run = take_locked(p, npages, align_pages, fresh);
		if (!run && p->no_commit) {
			/* The commit limit: what fits in pages already committed, if anything. */
			p->committed_only = true;
			run = take_locked(p, npages, align_pages, fresh);
			p->committed_only = false;
		}
		if (!run) {
			if (got || !grow || p->no_commit || !grow_locked(p, st))
				break;
			continue;
		}
		np_pool_mark_used(run, npages, order);
		out[got++] = run;
	}
	np_pool_debug_check_locked(p, where);
	np_pool_unlock(p);
	return got;
}

/* Takes chunk c off shard p's list (its free run already out of the bins). */
static void unlink_chunk_locked(struct np_pool_shard *p, struct np_chunk *c)
{
	for (struct np_chunk **l = &p->chunks; *l; l = &(*l)->next)
		if (*l == c) {
			*l = c->next;
			return;
		}
}

/* A chunk of another shard with nothing in use (its data one free run) moves to shard `to`,
 * so memory a shard does not use serves the others before the pool maps more. Both locks are
 * held, the lower shard's first (fork takes them in that order too), so the chunk is always in
 * one shard. False when no shard has one. */
static bool move_free_chunk(struct np_pool *p, struct np_pool_shard *to, struct np_vmstat_diffs *st)
{
	for (unsigned k = 1; k < p->nshards; k++) {
		struct np_pool_shard *o = &p->shard[(to->index + k) % p->nshards];
		if (__atomic_load_n(&o->free_pages, __ATOMIC_RELAXED) < NP_CHUNK_DATA_PAGES)
			continue;
		struct np_pool_shard *first = o->index < to->index ? o : to, *second = first == o ? to : o;
		np_pool_lock(first, st);
		np_lock_nested(second->lock);
		bool moved = false;
		for (struct np_page *pg = o->bins[NP_POOL_BINS - 1]; pg; pg = pg->next) {
			if (pg->npages != NP_CHUNK_DATA_PAGES)
				continue;
			struct np_chunk *c = np_chunk_of(pg);
			bool clean = pg->clean;
			size_t dirty = np_pool_run_dirty(pg);
			uint8_t period = pg->user;
			np_pool_remove_free_locked(o, pg);
			unlink_chunk_locked(o, c);
			np_pool_set_count(&o->mapped_pages, o->mapped_pages - NP_CHUNK_DATA_PAGES);
			c->shard = to->index;
			c->next = to->chunks;
			to->chunks = c;
			np_pool_set_count(&to->mapped_pages, to->mapped_pages + NP_CHUNK_DATA_PAGES);
			insert_free_locked(to, &c->pages[NP_CHUNK_HEADER_PAGES], NP_CHUNK_DATA_PAGES, clean, dirty, period);
			moved = true;
			break;
		}
		np_pool_debug_check_locked(o, "move_free_chunk");
		np_pool_debug_check_locked(to, "move_free_chunk");
		fold_locked(second);
		np_unlock(second->lock);
		np_pool_unlock(first);
		if (moved)
			return true;
	}
	return false;
}

size_t np_pool_unmap_free_chunks(int node, struct np_vmstat_diffs *st)
{
	struct np_pool *pool = &np_pools[node];
	size_t unmapped = 0;
	for (unsigned k = 0; pool->exists && k < pool->nshards; k++) {
		struct np_pool_shard *p = &pool->shard[k];
		if (__atomic_load_n(&p->free_pages, __ATOMIC_RELAXED) < NP_CHUNK_DATA_PAGES)
			continue;
		struct np_chunk *out = NULL;
		size_t dirty = 0;
		np_pool_lock(p, st);
		for (struct np_page *pg = p->bins[NP_POOL_BINS - 1], *next; pg; pg = next) {
			next = pg->next;
			if (pg->npages != NP_CHUNK_DATA_PAGES)
				continue;
			struct np_chunk *c = np_chunk_of(pg);
			dirty += np_pool_run_dirty(pg);
			np_pool_remove_free_locked(p, pg);
			unlink_chunk_locked(p, c);
			np_pool_set_count(&p->mapped_pages, p->mapped_pages - NP_CHUNK_DATA_PAGES);
			c->next = out;
			out = c;
		}
		np_pool_debug_check_locked(p, "np_pool_unmap_free_chunks");
		np_pool_unlock(p);
		if (dirty)
			np_vmstat_add(st, node, NUMA_PAGE_STAT_pages_purged, (long)dirty);
		/* Out of every list: no other thread can reach them. */
		for (struct np_chunk *c = out, *next; c; c = next) {
			next = c->next;
			__atomic_sub_fetch(&pool->mapped_pages, NP_CHUNK_DATA_PAGES, __ATOMIC_RELAXED);
			np_chunk_unmap(c);
			unmapped++;
		}
	}
	return unmapped;
}

bool np_pool_give_back_space(struct np_vmstat_diffs *st)
{
	bool any = false;
	for (int n = 0; n < pool_nodes; n++) {
		if (!np_pools[n].exists)
			continue;
		/* Address space is what is wanted: a clean cached chunk, with no page resident,
		 * counts as much as a dirty one. */
		size_t chunks;
		np_huge_trim(n, st, &chunks);
		any |= chunks > 0;
		any |= np_pool_unmap_free_chunks(n, st) > 0;
	}
	return any;
}

/* Under a finite RLIMIT_AS (np_chunk_tight), address space is what runs out: a shard with a
 * chunk's worth free lends its runs before another maps a chunk. Otherwise it does not: a
 * borrower's runs come back to the lender, so a thread that borrowed once kept borrowing, on
 * the lender's lock (a helper's reproducer: 337,592 contended acquisitions against 3 when
 * the borrower's own shard grows). What that costs is address space, and memory where a
 * shard's free pages wait for a thread that no longer takes from it: they stay resident up to
 * the node's purge watermark, or the decay. So a thread keeps its shard while the scheduler
 * moves it (home_shard): when it took from its CPU's shard at every take, a producer moved
 * between two CPUs peaked at 530-650 MB against 371-379 MB with one shard. */
#define LEND_PAGES NP_CHUNK_DATA_PAGES

/* take_runs from the first shard after home that has at least `want` free pages (a hint read
 * without its lock), without growing it. */
static int borrow_runs(struct np_pool *p, struct np_pool_shard *home, size_t want, size_t npages, size_t align_pages,
		       uint8_t order, int n, struct np_page **out, struct np_vmstat_diffs *st, bool fresh,
		       const char *where)
{
	int got = 0;
	for (unsigned k = 1; !got && k < p->nshards; k++) {
		struct np_pool_shard *o = &p->shard[(home->index + k) % p->nshards];
		if (__atomic_load_n(&o->free_pages, __ATOMIC_RELAXED) >= want)
			got = take_runs(o, npages, align_pages, order, n, out, st, false, fresh, where);
	}
	return got;
}

/* Up to n runs of npages at align_pages (checked by the caller) from node's pool: from the
 * calling CPU's shard; else from a whole free chunk another shard hands over; else (under a
 * finite RLIMIT_AS only) from a shard with at least LEND_PAGES free; else from a chunk the
 * CPU's shard maps, when grow allows; else (the node may not grow, or the kernel refused)
 * from any shard that has them. Free page counts of other shards are hints read without
 * their locks; runs taken from another shard return to it. Returns how many were stored in
 * out[].
 *
 * Without grow (the node has no room: np_node_walk) only resident runs are taken: a page
 * never touched, or purged, faults in on whatever node the kernel then finds room on, as a
 * new chunk's would. Handed out from a full node, those pages went elsewhere and were counted
 * on the node as hits (a helper's guest, a node another process filled: 3,680 pages counted,
 * 176 there), or under NUMAPAGE_BIND=strict got the program OOM-killed. */
static int get_runs(int node, size_t npages, size_t align_pages, uint8_t order, int n, struct np_page **out,
		    struct np_vmstat_diffs *st, bool grow, const char *where)
{
	struct np_pool *p = &np_pools[node];
	struct np_pool_shard *home = home_shard(p);
	int got = take_runs(home, npages, align_pages, order, n, out, st, p->nshards == 1 && grow, grow, where);
	if (!got && p->nshards > 1) {
		if (move_free_chunk(p, home, st))
			got = take_runs(home, npages, align_pages, order, n, out, st, false, grow, where);
		if (!got && np_chunk_tight)
			got = borrow_runs(p, home, NP_MAX(npages, (size_t)LEND_PAGES), npages, align_pages, order, n, out,
					  st, grow, where);
		if (!got && grow) /* the CPU's own shard grows */
			got = take_runs(home, npages, align_pages, order, n, out, st, true, true, where);
		if (!got)
			got = borrow_runs(p, home, npages, npages, align_pages, order, n, out, st, grow, where);
	}
	if (got)
		np_vmstat_add(st, node, NUMA_PAGE_STAT_pages_alloc, (long)(npages * (size_t)got));
	return got;
}

int np_pool_get_batch(int node, unsigned order, int n, struct np_page **out, struct np_vmstat_diffs *st, bool grow)
{
	size_t len = (size_t)1 << order;
	if (!np_pools[node].exists || n <= 0 || !fits_in_chunk(len, len))
		return 0;
	return get_runs(node, len, len, (uint8_t)order, n, out, st, grow, "get_batch");
}

int np_pool_get_runs(int node, size_t npages, size_t align_pages, int n, struct np_page **out,
		     struct np_vmstat_diffs *st, bool grow)
{
	if (align_pages == 0)
		align_pages = 1;
	if (!np_pools[node].exists || npages == 0 || npages > NP_POOL_MAX_RUN || n <= 0 ||
	    !fits_in_chunk(npages, align_pages))
		return 0;
	return get_runs(node, npages, align_pages, NP_ORDER_NONE, n, out, st, grow, "get_runs");
}

struct np_page *np_pool_get_run(int node, size_t npages, size_t align_pages, struct np_vmstat_diffs *st, bool grow)
{
	struct np_page *run;
	return np_pool_get_runs(node, npages, align_pages, 1, &run, st, grow) ? run : NULL;
}

bool np_pool_grow_run(struct np_page *run, size_t new_npages, struct np_vmstat_diffs *st)
{
	struct np_chunk *c = np_chunk_of(run);
	size_t idx = (size_t)(run - c->pages), n = run->npages;
	if (new_npages <= n || idx + new_npages > NP_CHUNK_PAGES)
		return new_npages <= n;
	struct np_pool_shard *p = np_pool_shard_of(run);
	bool ok = false;
	np_pool_lock(p, st);
	struct np_page *right = &c->pages[idx + n];
	if (np_page_state(right) == NP_PAGE_FREE && n + right->npages >= new_npages &&
	    np_chunk_commit(c, idx + new_npages)) {
		size_t rn = right->npages;
		bool clean = right->clean;
		size_t dirty = np_pool_run_dirty(right);
		uint8_t period = right->user;
		np_pool_remove_free_locked(p, right);
		size_t extra = new_npages - n;
		if (rn > extra)
			insert_free_locked(p, &c->pages[idx + new_npages], rn - extra, clean,
					   dirty - NP_MIN(dirty, extra), period);
		for (size_t k = n; k < new_npages; k++) {
			run[k].state = NP_PAGE_TAIL;
			run[k].npages = 0;
			np_page_set_owner(&run[k], NULL);
		}
		run->npages = (uint32_t)new_npages;
		run->order = NP_ORDER_NONE;
		np_chunk_raise_touched(run, new_npages);
		ok = true;
	}
	np_pool_unlock(p);
	if (ok)
		np_vmstat_add(st, c->node, NUMA_PAGE_STAT_pages_alloc, (long)(new_npages - n));
	return ok;
}

size_t np_pool_free_pages(int node)
{
	const struct np_pool *p = &np_pools[node];
	size_t n = 0;
	for (unsigned k = 0; k < p->nshards; k++)
		n += __atomic_load_n(&p->shard[k].free_pages, __ATOMIC_RELAXED);
	return n;
}

void np_pool_used_pages(int node, size_t *now, size_t *recent)
{
	const struct np_pool *p = &np_pools[node];
	uint32_t period = (uint32_t)__atomic_load_n(&p->decay_period, __ATOMIC_RELAXED);
	*now = used_now(p);
	*recent = *now;
	for (int i = 0; i < 2; i++) {
		/* The period under way or the one before; a newer one than read above (a period
		 * began meanwhile) counts too. */
		uint64_t w = __atomic_load_n(&p->peak[i], __ATOMIC_RELAXED);
		if ((int32_t)(period - (uint32_t)(w >> 32)) <= 1)
			*recent = NP_MAX(*recent, (size_t)(uint32_t)w);
	}
}

bool np_pool_dirty_may_pass(int node)
{
	const struct np_pool *p = &np_pools[node];
	return __atomic_load_n(&p->dirty_approx, __ATOMIC_RELAXED) + p->nshards * p->dirty_step > np_pool_purge_pages;
}

size_t np_pool_dirty_pages(int node)
{
	const struct np_pool *p = &np_pools[node];
	size_t n = 0;
	for (unsigned k = 0; k < p->nshards; k++)
		n += __atomic_load_n(&p->shard[k].dirty_pages, __ATOMIC_RELAXED);
	return n;
}

bool np_pool_node_totals(int node, size_t *mapped_pages, size_t *mapped_peak, size_t *free_pages)
{
	*mapped_pages = *mapped_peak = *free_pages = 0;
	if (node < 0 || node >= pool_nodes || !np_pools[node].exists)
		return false;
	const struct np_pool *p = &np_pools[node];
	*mapped_pages = __atomic_load_n(&p->mapped_pages, __ATOMIC_RELAXED);
	*mapped_peak = NP_MAX(__atomic_load_n(&p->mapped_peak, __ATOMIC_RELAXED), *mapped_pages);
	*free_pages = np_pool_free_pages(node);
	return true;
}

void np_pool_totals(size_t *mapped_pages, size_t *free_pages)
{
	*mapped_pages = *free_pages = 0;
	for (int i = 0; i < pool_nodes; i++) {
		size_t mapped, peak, free;
		if (np_pool_node_totals(i, &mapped, &peak, &free)) {
			*mapped_pages += mapped;
			*free_pages += free;
		}
	}
}

/* The locks of p's first n shards, in shard order (the shards of a node share the lock
 * order's index: np_lock_nested), and back in reverse. */
static void lock_shards(struct np_pool *p, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		if (k == 0)
			np_lock(p->shard[k].lock);
		else
			np_lock_nested(p->shard[k].lock);
	}
}

static void unlock_shards(struct np_pool *p, unsigned n)
{
	for (unsigned k = n; k-- > 0;)
		np_unlock(p->shard[k].lock);
}

/* Every shard of every pool, in node and shard order. */
void np_pool_atfork_prepare(void)
{
	for (int i = 0; i < pool_nodes; i++)
		if (np_pools[i].exists)
			lock_shards(&np_pools[i], np_pools[i].nshards);
}

void np_pool_atfork_parent(void)
{
	for (int i = pool_nodes - 1; i >= 0; i--)
		if (np_pools[i].exists)
			unlock_shards(&np_pools[i], np_pools[i].nshards);
}

/* Runs a purge had out of the bins at the fork (its thread is not in the child) go back,
 * counted dirty: their madvise may not have run. */
NP_FORK_CHILD void np_pool_atfork_child(void)
{
	np_chunk_guard_atfork_child();
	for (int i = 0; i < pool_nodes; i++)
		if (np_pools[i].exists)
			for (unsigned k = 0; k < np_pools[i].nshards; k++) {
				struct np_pool_shard *p = &np_pools[i].shard[k];
				np_lock_atfork_child(p->lock, NP_LOCK_RANK_POOL, p->node, true);
				if (!p->purging)
					continue;
				np_pool_lock(p, NULL);
				for (struct np_pool_purge_batch *b = p->purging; b; b = b->next) /* a copy of
											    * their stacks */
					for (unsigned r = 0; r < b->n; r++)
						np_pool_put_locked(p, b->runs[r], false);
				p->purging = NULL;
				np_pool_set_count(&p->purging_pages, 0);
				np_pool_unlock(p);
			}
}

static const char *check_locked(struct np_pool_shard *p)
{
	const char *err = NULL;
	size_t free_pages = 0;
	for (int b = 0; b < NP_POOL_BINS && !err; b++) {
		bool bit = (p->bin_mask[b / 64] >> (b % 64)) & 1;
		if (bit != (p->bins[b] != NULL))
			err = "bin mask disagrees with the bins";
		for (struct np_page *pg = p->bins[b]; pg && !err; pg = pg->next) {
			if (pg->state != NP_PAGE_FREE)
				err = "a binned run is not free";
			else if (bin_of(pg->npages) != b)
				err = "a run sits in the wrong bin";
			else if (np_page_node(pg) != p->node)
				err = "a pool holds a page of another node";
			else if (np_pool_shard_of(pg) != p)
				err = "a shard holds a run of another shard's chunk";
			free_pages += pg->npages;
		}
	}
	size_t mapped = 0, purging = 0;
	for (struct np_chunk *c = p->chunks; c && !err; c = c->next) {
		err = c->shard != p->index ? "a shard lists another shard's chunk" : np_chunk_check(c);
		mapped += NP_CHUNK_DATA_PAGES;
	}
	for (const struct np_pool_purge_batch *b = p->purging; b; b = b->next)
		for (unsigned r = 0; r < b->n; r++)
			purging += b->runs[r]->npages;
	if (!err && free_pages != p->free_pages)
		err = "free page count disagrees with the bins";
	if (!err && mapped != p->mapped_pages)
		err = "mapped page count disagrees with the chunks";
	if (!err && purging != p->purging_pages)
		err = "purging page count disagrees with the purges under way";
	return err;
}

/* debug_level 3: the whole shard after every change made under its lock. */
void np_pool_debug_check_locked(struct np_pool_shard *p, const char *where)
{
	if (np_config_debug < 3)
		return;
	const char *err = check_locked(p);
	if (err)
		np_fatal("pool of node %d (shard %u) corrupt after %s: %s", p->node, p->index, where, err);
}

const char *np_pool_check(int node)
{
	struct np_pool *p = &np_pools[node];
	const char *err = NULL;
	size_t folded = 0, used_folded = 0;
	/* Every shard's lock at once, in order (as fork takes them): the folded totals are then the
	 * sums of what they folded. Every shard set up, those past nshards too: after a second
	 * table (tests), runs of a chunk such a shard kept come back to it and fold. */
	unsigned n = p->shards_used;
	lock_shards(p, n);
	for (unsigned k = 0; k < n && !err; k++) {
		struct np_pool_shard *sh = &p->shard[k];
		folded += sh->dirty_folded;
		used_folded += sh->used_folded;
		if (k >= p->nshards) /* a previous table's shard: its runs are the test's doing */
			continue;
		err = check_locked(sh);
		if (!err && drifted(p, sh->dirty_pages, sh->dirty_folded))
			err = "a shard's dirty pages drifted past a step from what it folded";
		if (!err && drifted(p, shard_used(sh), sh->used_folded))
			err = "a shard's pages in use drifted past a step from what it folded";
	}
	if (!err && folded != __atomic_load_n(&p->dirty_approx, __ATOMIC_RELAXED))
		err = "the pool's folded dirty total disagrees with its shards";
	if (!err && used_folded != __atomic_load_n(&p->used_approx, __ATOMIC_RELAXED))
		err = "the pool's folded total in use disagrees with its shards";
	unlock_shards(p, n);
	return err;
}
