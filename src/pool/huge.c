/*
 * huge.c — freed huge chunks kept for reuse, per node (see huge.h). The list is newest first;
 * purging and unmapping take the oldest. The system calls (madvise, mremap, munmap) are made
 * with the lock dropped, on chunks taken off the list meanwhile.
 */
#include "pool/huge.h"

#include <string.h>

#include "lock.h"
#include "options.h"
#include "os.h"

#define DECAY_PERIOD_NS 1000000000ull /* the peak halves at most once a second */
#define CLEAN_MAX 8                   /* clean chunks a node keeps mapped */
#define BATCH 16
#define SLACK_PURGED ((size_t)1 << 20) /* least of a cut block's slack given back (np_huge_get) */

struct cache {
	struct np_lock *lock;   /* rank NP_LOCK_RANK_HUGE, index node; on the lock page */
	bool exists;
	struct np_chunk *list;  /* CACHED chunks, newest first */
	size_t dirty_pages;     /* pages of cached chunks that may be resident */
	size_t clean_pages;     /* data pages of cached chunks given back (mapped, not resident) */
	unsigned nclean;        /* cached chunks that are wholly clean */
	long live_pages;        /* pages of huge blocks handed out (relaxed atomic) */
	size_t peak_pages;      /* the recent peak of live_pages */
	uint64_t decay_at;      /* np_os_clock_ns when the peak halves next */
	uint64_t look_at;       /* np_os_clock_ns of the pools' next decay look (np_huge_decay) */
	struct np_chunk *purging; /* chunks give_back is purging with the lock dropped (linked by
				   * next): a fork's child, without that thread, caches them again */
} NP_ALIGNED(NP_CACHELINE);

static struct cache caches[NP_MAX_NODES] NP_LARGE_BSS;
static int ncaches; /* caches[0 .. ncaches) were initialised; the rest are zero */

static size_t pages_of(const struct np_chunk *c)
{
	return np_chunk_data_bytes(c) >> NP_PAGE_SHIFT;
}

static size_t dirty_pages_of(const struct np_chunk *c)
{
	return (c->dirty + NP_PAGE_SIZE - 1) >> NP_PAGE_SHIFT;
}

static void init_lock(struct cache *h, int node)
{
	np_lock_setup(&h->lock, NP_LOCK_RANK_HUGE, node, true);
}

void np_huge_init(const struct np_topo *t)
{
	int n = NP_MIN(t->nnodes, NP_MAX_NODES);
	for (int i = 0; i < n; i++) {
		caches[i] = (struct cache){.exists = t->node[i].mem_allowed, .lock = caches[i].lock};
		init_lock(&caches[i], i);
	}
	/* Nodes the machine does not have: nothing asks for them (node ids come from the table),
	 * and the caches of nodes no init had are never touched (start-up RSS). */
	for (int i = n; i < ncaches; i++)
		caches[i] = (struct cache){.lock = caches[i].lock};
	ncaches = n;
}

void np_huge_count_live(int node, long pages)
{
	long now = __atomic_add_fetch(&caches[node].live_pages, pages, __ATOMIC_RELAXED);
	if (now > 0 && (size_t)now > __atomic_load_n(&caches[node].peak_pages, __ATOMIC_RELAXED))
		__atomic_store_n(&caches[node].peak_pages, (size_t)now, __ATOMIC_RELAXED);
}

/* What the resident part of the cache may reach: the recent peak of huge memory in use, at
 * least the pool's purge watermark. */
static size_t budget(const struct cache *h)
{
	size_t floor = (size_t)np_opt.purge_mb << (20 - NP_PAGE_SHIFT);
	size_t peak = __atomic_load_n(&h->peak_pages, __ATOMIC_RELAXED);
	return peak > floor ? peak : floor;
}

static void unlink_locked(struct cache *h, struct np_chunk **link)
{
	struct np_chunk *c = *link;
	__atomic_store_n(link, c->next, __ATOMIC_RELAXED); /* may be h->list: see link_locked */
	c->next = NULL;
	h->dirty_pages -= dirty_pages_of(c);
	h->clean_pages -= pages_of(c) - dirty_pages_of(c);
	h->nclean -= c->dirty == 0;
}

static void link_locked(struct cache *h, struct np_chunk *c)
{
	c->next = h->list;
	__atomic_store_n(&h->list, c, __ATOMIC_RELAXED); /* np_huge_get peeks without the lock */
	h->dirty_pages += dirty_pages_of(c);
	h->clean_pages += pages_of(c) - dirty_pages_of(c);
	h->nclean += c->dirty == 0;
}

/* Dirty bytes of c (its data's start on) once n, which lies behind it, is joined to it: n's
 * header reads as zeros after the join, so only n's own dirty bytes reach further. */
static size_t joined_dirty(const struct np_chunk *c, const struct np_chunk *n)
{
	if (!n->dirty)
		return c->dirty;
	return (size_t)((const char *)n + n->data_offset + n->dirty - ((const char *)c + c->data_offset));
}

/* The link to the cached piece of c's mapping that lies right behind c, or NULL. */
static struct np_chunk **piece_behind_locked(struct cache *h, const struct np_chunk *c)
{
	for (struct np_chunk **l = &h->list; *l; l = &(*l)->next)
		if (np_chunk_huge_adjoins(c, *l))
			return l;
	return NULL;
}

/* Chunk c (off the list, or live) joined with the cached piece of its mapping that lies behind
 * it, at link `behind` (piece_behind_locked): a piece is cut off a chunk that serves a smaller
 * request (cut_locked), and joins again when both are free, or when the block before it grows
 * (np_huge_grow). */
static void join_at_locked(struct cache *h, struct np_chunk *c, struct np_chunk **behind)
{
	struct np_chunk *n = *behind;
	unlink_locked(h, behind);
	c->dirty = joined_dirty(c, n);
	np_chunk_join_huge(c, n);
}

/* The same, when there is such a piece. */
static void join_behind_locked(struct cache *h, struct np_chunk *c)
{
	struct np_chunk **l = piece_behind_locked(h, c);
	if (l)
		join_at_locked(h, c, l);
}

/* Freed chunk c (off the list) joined to the cached piece of its mapping that lies before it,
 * if there is one: that piece, off the list, or else c. */
static struct np_chunk *join_before_locked(struct cache *h, struct np_chunk *c)
{
	for (struct np_chunk **l = &h->list; *l; l = &(*l)->next)
		if (np_chunk_huge_adjoins(*l, c)) {
			struct np_chunk *p = *l;
			unlink_locked(h, l);
			p->dirty = joined_dirty(p, c);
			np_chunk_join_huge(p, c);
			return p;
		}
	return c;
}

/* The cached chunk at link, off the list and a live huge chunk again. */
static struct np_chunk *take_locked(struct cache *h, struct np_chunk **link)
{
	struct np_chunk *c = *link;
	unlink_locked(h, link);
	c->kind = NP_CHUNK_HUGE;
	return c;
}

/* Chunk c (off the list) back on it, joined with the cached pieces of its mapping either side
 * of it: no two pieces that could be one stay apart (np_huge_check). Returns what was linked. */
static struct np_chunk *relink_locked(struct cache *h, struct np_chunk *c)
{
	join_behind_locked(h, c);
	c = join_before_locked(h, c);
	link_locked(h, c);
	return c;
}

/* Chunk c (off the list) cut at `at`, a granule boundary inside it: the rest, cached, keeps
 * its age and what of it may not read as zeros. */
static void cut_at_locked(struct cache *h, struct np_chunk *c, size_t at)
{
	size_t end = c->data_offset + c->dirty; /* where its bytes that may not be zeros end */
	struct np_chunk *t = np_chunk_split_huge(c, at, end > at);
	t->kind = NP_CHUNK_CACHED;
	t->dirty = end > at + t->data_offset ? end - at - t->data_offset : 0;
	t->cached_at = c->cached_at;
	c->dirty = NP_MIN(c->dirty, at - c->data_offset);
	link_locked(h, t);
}

/* Chunk c, taken for a request of `bytes`, cut at the first granule past what the request needs
 * when a granule or more lies behind it: that rest goes back to the cache as a chunk of its own,
 * resident as it was, for the next request (GNU sort -S frees a 50 MB buffer and asks for two of
 * 25 MB). A small block then holds neither a large one's pages nor its address space, nor counts
 * them in use. True when it was cut. */
static bool cut_locked(struct cache *h, struct np_chunk *c, size_t bytes)
{
	size_t at = (c->data_offset + bytes + NP_CHUNK_SIZE - 1) & ~(NP_CHUNK_SIZE - 1);
	if (at >= c->size || c->size - at < NP_CHUNK_SIZE)
		return false;
	cut_at_locked(h, c, at);
	return true;
}

/* Chunks to give back: the oldest dirty ones while the resident part is over the budget, or
 * older than the decay, into purge[]; the oldest clean ones past CLEAN_MAX (or past four
 * budgets of address space) into unmap[]; and under RLIMIT_AS the oldest of any kind while the
 * cache holds more than a 32nd of the limit, into unmap[], but never the newest (a block freed
 * and asked for again is reused: when it alone was past the 32nd, each cycle cost a mapping,
 * and near the limit a new one could fail where the freed one fitted; a review). The program's own mappings (mmap,
 * thread stacks, dlopen) cannot take back what the cache holds (a hostile test: under
 * `ulimit -v` 300 MiB, 33 freed blocks of 8.4 MB stayed cached and the program's mmap of 8 MiB
 * failed until every one was freed; glibc's succeeded after one). Called with the lock held. */
static void choose_locked(struct cache *h, uint64_t now, struct np_chunk **purge, int *np, struct np_chunk **unmap,
			  int *nu)
{
	uint64_t decay = (uint64_t)np_opt_load(decay_ms) * 1000000u;
	if (!h->decay_at)
		h->decay_at = now + DECAY_PERIOD_NS;
	else if (now >= h->decay_at) {
		/* Once a look, however long since the last: a program that pauses and comes back
		 * to the same blocks finds them (a review: halved once per second passed, 16 blocks
		 * of 16 MiB reused after 3 s of quiet faulted 49,156 pages against 28,672), as the
		 * pools' decay counts one period after a pause (pool_return.c). */
		size_t live = (size_t)NP_MAX(__atomic_load_n(&h->live_pages, __ATOMIC_RELAXED), 0L);
		size_t half = __atomic_load_n(&h->peak_pages, __ATOMIC_RELAXED) / 2;
		__atomic_store_n(&h->peak_pages, live > half ? live : half, __ATOMIC_RELAXED);
		h->decay_at = now + DECAY_PERIOD_NS;
	}
	size_t keep = budget(h);
	*np = *nu = 0;
	/* Oldest first: walk to the end, remembering the links. */
	struct np_chunk **links[256];
	int n = 0;
	for (struct np_chunk **l = &h->list; *l && n < (int)NP_ARRAY_SIZE(links); l = &(*l)->next)
		links[n++] = l;
	size_t dirty = h->dirty_pages, clean_pages = h->clean_pages;
	unsigned nclean = h->nclean;
	size_t room = np_chunk_tight ? (np_chunk_address_limit / 32) >> NP_PAGE_SHIFT : SIZE_MAX;
	for (int i = n - 1; i >= 0 && (*np < BATCH || *nu < BATCH); i--) {
		struct np_chunk *c = *links[i];
		if (dirty + clean_pages > room && i > 0 && *nu < BATCH) {
			dirty -= dirty_pages_of(c);
			clean_pages -= pages_of(c) - dirty_pages_of(c);
			nclean -= c->dirty == 0;
			unmap[(*nu)++] = c;
			continue;
		}
		/* Signed: a chunk cached after `now` was read (another thread, before this one got
		 * the lock) is younger than now, not 2^64 ns old. */
		bool old = decay && (int64_t)(now - c->cached_at) >= (int64_t)decay;
		if (c->dirty && (dirty > keep || old) && *np < BATCH) {
			/* Purged, its dirty pages become clean ones (a review: the clean ones
			 * were added again, and the cap on address space unmapped too much). */
			dirty -= dirty_pages_of(c);
			clean_pages += dirty_pages_of(c);
			purge[(*np)++] = c;
		} else if (!c->dirty && (nclean > CLEAN_MAX || clean_pages > 4 * keep) && *nu < BATCH) {
			nclean--;
			clean_pages -= pages_of(c);
			unmap[(*nu)++] = c;
		}
	}
	/* Off the list, last first so the links stay valid; the ones to purge onto `purging`. */
	for (int i = n - 1; i >= 0; i--) {
		struct np_chunk *c = *links[i];
		for (int k = 0; k < *np; k++)
			if (purge[k] == c) {
				unlink_locked(h, links[i]);
				c->next = h->purging;
				h->purging = c;
			}
		for (int k = 0; k < *nu; k++)
			if (unmap[k] == c)
				unlink_locked(h, links[i]);
	}
}

/* Gives back what choose_locked picked: the lock is not held. Purged chunks come back clean. */
static void give_back(struct cache *h, int node, struct np_chunk **purge, int np, struct np_chunk **unmap, int nu,
		      struct np_vmstat_diffs *st)
{
	long pages = 0;
	for (int i = 0; i < np; i++) {
		struct np_chunk *c = purge[i];
		size_t first = (c->data_offset + NP_PAGE_SIZE - 1) & ~(NP_PAGE_SIZE - 1);
		size_t end = (c->data_offset + c->dirty + NP_PAGE_SIZE - 1) & ~(NP_PAGE_SIZE - 1);
		if (end <= first || np_chunk_purge((char *)c + first, end - first, true))
			pages += (long)dirty_pages_of(c);
		c->dirty = 0; /* given back, or zeroed in place (refused: locked memory) */
	}
	for (int i = 0; i < nu; i++) {
		pages += (long)dirty_pages_of(unmap[i]); /* dirty only under RLIMIT_AS (choose_locked) */
		np_chunk_unmap_huge(unmap[i]);
	}
	if (np) {
		np_lock(h->lock);
		for (int i = 0; i < np; i++) {
			for (struct np_chunk **l = &h->purging; *l; l = &(*l)->next)
				if (*l == purge[i]) {
					*l = purge[i]->next;
					break;
				}
			purge[i]->next = NULL;
			relink_locked(h, purge[i]);
		}
		np_unlock(h->lock);
	}
	if (pages)
		np_vmstat_add(st, node, NUMA_PAGE_STAT_pages_purged, pages);
}

/* The cache's decay at `now`, with its lock held: what choose_locked picks is given back
 * after the lock is dropped. Every user of the cache ends its lock hold here. */
static void decay_and_unlock(struct cache *h, int node, uint64_t now, struct np_vmstat_diffs *st)
{
	struct np_chunk *purge[BATCH], *unmap[BATCH];
	int np, nu;
	choose_locked(h, now, purge, &np, unmap, &nu);
	np_unlock(h->lock);
	if (np || nu)
		give_back(h, node, purge, np, unmap, nu, st);
}

/* The smallest cached chunk whose resident part holds `bytes`, taken off the list and cut to
 * them, or NULL. Lock held. */
static struct np_chunk *take_resident_locked(struct cache *h, size_t bytes)
{
	struct np_chunk **best = NULL;
	for (struct np_chunk **l = &h->list; *l; l = &(*l)->next)
		if ((*l)->dirty >= bytes && (*l)->data_offset < NP_CHUNK_SIZE &&
		    (!best || np_chunk_data_bytes(*l) < np_chunk_data_bytes(*best)))
			best = l;
	if (!best)
		return NULL;
	struct np_chunk *d = take_locked(h, best);
	cut_locked(h, d, bytes);
	return d;
}

struct np_chunk *np_huge_grow(struct np_chunk *c, size_t bytes)
{
	long had = (long)pages_of(c);
	size_t old = np_chunk_data_bytes(c), old_size = c->size;
	struct cache *h = &caches[c->node];
	struct np_chunk *g = NULL;
	bool joined = false;
	if (c->kind == NP_CHUNK_HUGE && h->exists && old < bytes && __atomic_load_n(&h->list, __ATOMIC_RELAXED)) {
		np_lock(h->lock);
		c->dirty = old; /* live: its user may have written all of it */
		c->cached_at = np_os_clock_ns(); /* what is cut off again is as young as that */
		struct np_chunk **behind = piece_behind_locked(h, c);
		if (behind && old + (*behind)->size >= bytes) {
			/* The piece cut off behind it, still cached, holds the growth: joined, no
			 * mremap, and what the block does not need of it cut off again. */
			join_at_locked(h, c, behind);
			cut_locked(h, c, bytes);
			g = c;
		} else if (bytes - old >= old / 4 && (g = take_resident_locked(h, bytes)) != NULL) {
			/* A growth by a quarter or more, and a cached chunk whose pages are resident
			 * holds it: copied there rather than remapped, whose new pages would each cost
			 * a fault while those sat unused (a growing buffer beside blocks cut from a
			 * freed larger one: peak RSS 666 MB against 486 before the cut, glibc 360). */
			g->user = c->user;
		} else if (behind) {
			join_at_locked(h, c, behind); /* then mremap grows the rest, in place if it can */
			joined = true;
		}
		np_unlock(h->lock);
	}
	if (g && g != c) {
		memcpy((char *)g + g->data_offset, (char *)c + c->data_offset, old);
		np_chunk_unmap_huge(c);
	} else if (!g) {
		g = np_chunk_grow_huge(c, bytes);
		if (!g && joined) {
			/* Unchanged, as the caller takes it: the piece goes back to the cache. */
			np_lock(h->lock);
			cut_at_locked(h, c, old_size);
			np_unlock(h->lock);
		}
	}
	if (g)
		np_huge_count_live(g->node, (long)pages_of(g) - had);
	return g;
}

bool np_huge_put(struct np_chunk *c, struct np_vmstat_diffs *st)
{
	if (c->kind != NP_CHUNK_HUGE)
		return false;
	int node = c->node;
	struct cache *h = &caches[node];
	size_t pages = pages_of(c);
	np_huge_count_live(node, -(long)pages);
	/* A block aligned beyond a chunk has the gap between its header and its data in its
	 * mapping: address space only, up to the alignment (a TiB at 2^40), which a cached chunk
	 * would hold until the decay (64 freed blocks of 100 bytes at 2^30 kept 67 GB; a hostile
	 * review). Kept while the gap is at most 64 times the data: reusing a large one saves
	 * its faults (20 rounds of posix_memalign(2^30, 600 MB), written and freed: 1.1 s cached,
	 * 10.9 s mapped anew each time; glibc 10.2). */
	bool gap = c->data_offset > NP_CHUNK_SIZE && c->data_offset / 64 > np_chunk_data_bytes(c);
	if (!h->exists || pages > budget(h) || gap)
		return false;
	uint64_t now = np_os_clock_ns();
	c->kind = NP_CHUNK_CACHED;
	c->user = 0;
	c->dirty = np_chunk_data_bytes(c); /* its user may have written all of it */
	np_lock(h->lock);
	relink_locked(h, c)->cached_at = now;
	decay_and_unlock(h, node, now, st);
	return true;
}

struct np_chunk *np_huge_get(int node, size_t bytes, size_t align, size_t *dirty, struct np_vmstat_diffs *st,
			     bool fresh)
{
	struct cache *h = &caches[node];
	if (!h->exists || !__atomic_load_n(&h->list, __ATOMIC_RELAXED))
		return NULL;
	size_t need = (bytes + NP_PAGE_SIZE - 1) >> NP_PAGE_SHIFT;
	uint64_t now = np_os_clock_ns();
	np_lock(h->lock);
	/* The smallest that fits (resident before clean on a tie); else the largest, to grow. */
	struct np_chunk **best = NULL, **largest = NULL;
	for (struct np_chunk **l = &h->list; *l; l = &(*l)->next) {
		struct np_chunk *c = *l;
		size_t have = pages_of(c);
		bool usable = ((uintptr_t)c + c->data_offset) % align == 0 &&
			       (fresh || c->dirty >= need << NP_PAGE_SHIFT);
		if (usable && have >= need &&
		    (!best || have < pages_of(*best) || (have == pages_of(*best) && c->dirty > (*best)->dirty)))
			best = l;
		if (usable && fresh && c->data_offset < NP_CHUNK_SIZE && (!largest || have > pages_of(*largest)))
			largest = l;
	}
	struct np_chunk **take = best ? best : largest;
	struct np_chunk *c = NULL;
	bool cut = false;
	if (take) {
		c = take_locked(h, take);
		cut = best && cut_locked(h, c, bytes);
	}
	decay_and_unlock(h, node, now, st); /* the rest, after the pick */
	if (!c)
		return NULL;
	if (!best) {
		/* Grow it in place or move it with its pages (mremap): no new mapping, no bind. */
		size_t had = np_chunk_data_bytes(c);
		struct np_chunk *g = np_chunk_grow_huge(c, bytes);
		if (!g) { /* no address space for it: back to the cache, and the caller maps */
			c->kind = NP_CHUNK_CACHED;
			np_lock(h->lock);
			relink_locked(h, c);
			np_unlock(h->lock);
			return NULL;
		}
		c = g;
		c->dirty = NP_MIN(c->dirty, had); /* what grew is fresh */
	}
	size_t used = need << NP_PAGE_SHIFT;
	if (np_chunk_tight) {
		/* Under a finite RLIMIT_AS a block holds only the address space it needs, as a fresh
		 * mapping sized to the page would (np_chunk_huge_size): what lies past that goes
		 * back whole, not only its pages. A freed 180 MB block cut for 3 MiB ones held a
		 * granule, 16 MiB, for each: 23 of them fitted under `ulimit -v 262144`, 69 after
		 * malloc_trim (a hostile review). */
		size_t want = np_chunk_huge_size(c->data_offset + bytes);
		if (want < c->size) {
			np_chunk_trim_huge(c, want);
			c->dirty = NP_MIN(c->dirty, want - c->data_offset);
		}
	}
	if (cut && c->dirty >= used + SLACK_PURGED) {
		/* The resident pages of the block's last granule past what it asked for go back:
		 * the cut left them to it, and it will not use them while it lives (sort -S's
		 * 17 MB blocks held 15 MiB each). Not without a cut: a chunk reused whole for a
		 * smaller block keeps its pages for the larger one that comes back for it
		 * (large-calloc's 5-25 MiB blocks faulted them in again). */
		size_t slack = (c->dirty - used + NP_PAGE_SIZE - 1) & ~(NP_PAGE_SIZE - 1);
		if (np_chunk_purge((char *)c + c->data_offset + used, slack, true))
			np_vmstat_add(st, node, NUMA_PAGE_STAT_pages_purged, (long)(slack >> NP_PAGE_SHIFT));
		c->dirty = used;
	}
	*dirty = c->dirty;
	np_huge_count_live(node, (long)pages_of(c));
	return c;
}

struct np_chunk *np_huge_take_granule(int node, size_t *dirty)
{
	struct cache *h = &caches[node];
	if (!h->exists || !__atomic_load_n(&h->list, __ATOMIC_RELAXED))
		return NULL;
	np_lock(h->lock);
	/* The one whose first granule has the most resident data: those pages are the point. */
	struct np_chunk **take = NULL;
	size_t most = 0;
	for (struct np_chunk **l = &h->list; *l; l = &(*l)->next) {
		struct np_chunk *c = *l;
		size_t resident = NP_MIN(c->dirty, NP_CHUNK_SIZE - c->data_offset);
		if (c->size >= NP_CHUNK_SIZE && c->data_offset == NP_CHUNK_HUGE_HEADER && resident > most) {
			take = l;
			most = resident;
		}
	}
	struct np_chunk *c = NULL;
	bool trim = false;
	if (take) {
		c = take_locked(h, take);
		/* What lies past the granule: a piece of its own, unless it would not hold a
		 * header and a page (a chunk sized to the page, under a limit on the address
		 * space: a review's 16 KiB rest got a 32 KiB header, cleared past the mapping). */
		if (c->size >= NP_CHUNK_SIZE + NP_CHUNK_HUGE_HEADER + NP_PAGE_SIZE)
			cut_at_locked(h, c, NP_CHUNK_SIZE);
		else
			trim = c->size > NP_CHUNK_SIZE;
		*dirty = NP_MIN(c->dirty, NP_CHUNK_SIZE - c->data_offset);
	}
	np_unlock(h->lock);
	if (trim)
		np_chunk_trim_huge(c, NP_CHUNK_SIZE); /* unmapped, with the lock dropped */
	return c;
}

void np_huge_decay(int node, uint64_t now, struct np_vmstat_diffs *st)
{
	struct cache *h = &caches[node];
	if (!h->exists || !__atomic_load_n(&h->list, __ATOMIC_RELAXED))
		return;
	/* A look every period of the decay, at most once a second (the peak's pace): the thread
	 * whose compare-and-swap moves the time on makes it. Signed, as in choose_locked. */
	uint64_t decay = (uint64_t)np_opt_load(decay_ms) * 1000000u;
	uint64_t every = decay && decay < DECAY_PERIOD_NS ? decay : DECAY_PERIOD_NS;
	uint64_t at = __atomic_load_n(&h->look_at, __ATOMIC_RELAXED);
	if ((int64_t)(now - at) < 0 ||
	    !__atomic_compare_exchange_n(&h->look_at, &at, now + every, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	np_lock(h->lock);
	decay_and_unlock(h, node, now, st);
}

size_t np_huge_trim(int node, struct np_vmstat_diffs *st, size_t *unmapped)
{
	struct cache *h = &caches[node];
	if (unmapped)
		*unmapped = 0;
	if (!h->exists)
		return 0;
	size_t resident = 0;
	for (;;) {
		struct np_chunk *out[BATCH];
		int n = 0;
		np_lock(h->lock);
		while (h->list && n < BATCH) {
			out[n++] = h->list;
			unlink_locked(h, &h->list);
		}
		np_unlock(h->lock);
		if (!n)
			break;
		long pages = 0;
		for (int i = 0; i < n; i++) {
			pages += (long)dirty_pages_of(out[i]);
			np_chunk_unmap_huge(out[i]);
		}
		if (unmapped)
			*unmapped += (size_t)n;
		resident += (size_t)pages;
		np_vmstat_add(st, node, NUMA_PAGE_STAT_pages_purged, pages);
	}
	return resident;
}

void np_huge_cached(int node, size_t *dirty_pages, size_t *clean_pages)
{
	struct cache *h = &caches[node];
	np_lock(h->lock);
	*dirty_pages = h->dirty_pages;
	*clean_pages = h->clean_pages;
	np_unlock(h->lock);
}

void np_huge_atfork_prepare(void)
{
	for (int i = 0; i < ncaches; i++)
		if (caches[i].exists)
			np_lock(caches[i].lock);
}

void np_huge_atfork_parent(void)
{
	for (int i = ncaches - 1; i >= 0; i--)
		if (caches[i].exists)
			np_unlock(caches[i].lock);
}

/* Chunks a give_back was purging at the fork go back to the cache, counted dirty: the madvise
 * may not have run, and a calloc served by one clears only what it counts dirty. */
NP_FORK_CHILD void np_huge_atfork_child(void)
{
	for (int i = 0; i < ncaches; i++)
		if (caches[i].exists) {
			struct cache *h = &caches[i];
			np_lock_atfork_child(h->lock, NP_LOCK_RANK_HUGE, i, true);
			if (!h->purging)
				continue; /* no write: it would copy the page (np_lock_atfork_child) */
			np_lock(h->lock);
			while (h->purging) {
				struct np_chunk *c = h->purging;
				h->purging = c->next;
				c->dirty = np_chunk_data_bytes(c);
				c->next = NULL;
				relink_locked(h, c);
			}
			np_unlock(h->lock);
		}
}

const char *np_huge_check(int node)
{
	struct cache *h = &caches[node];
	const char *err = NULL;
	size_t dirty = 0, clean = 0;
	unsigned nclean = 0;
	np_lock(h->lock);
	for (struct np_chunk *c = h->list; c && !err; c = c->next) {
		if (c->magic != NP_CHUNK_MAGIC || c->kind != NP_CHUNK_CACHED)
			err = "a cached huge chunk is not marked cached";
		else if (c->node != node)
			err = "a node caches a huge chunk of another node";
		else if (c->dirty > np_chunk_data_bytes(c))
			err = "a cached chunk is dirtier than it is large";
		else if (np_chunk_find((char *)c + c->data_offset) != c)
			err = "a cached chunk does not start a granule of the map";
		else if (np_granule_map[(uintptr_t)c >> NP_CHUNK_SHIFT] != np_chunk_huge_mark(c->size))
			err = "a cached chunk's granule is marked as if it covered it whole, or not";
		for (struct np_chunk *d = h->list; d && !err; d = d->next)
			if (np_chunk_huge_adjoins(c, d))
				err = "two cached pieces of one mapping were not joined";
		dirty += dirty_pages_of(c);
		clean += pages_of(c) - dirty_pages_of(c);
		nclean += c->dirty == 0;
	}
	if (!err && (dirty != h->dirty_pages || clean != h->clean_pages || nclean != h->nclean))
		err = "the cache's counts disagree with its list";
	np_unlock(h->lock);
	return err;
}
