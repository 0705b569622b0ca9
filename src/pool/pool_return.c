/*
 * pool_return.c — runs coming back to their pools' shards, and the pools' free memory going
 * back to the operating system (see pool.h): returned runs merge with their free neighbours
 * (np_pool_put_locked, pool.c); past the pool's watermark, dirty runs are purged (madvise), from
 * the shards that hold the most, largest first; at the end of a decay period, the dirty runs
 * that stayed free through all of it; malloc_trim gives back everything free. pool.c takes runs
 * out; this file puts them back and never calls the other way. The system calls are made with
 * the pool lock dropped, the runs taken out of the bins meanwhile, except in trim, which holds
 * the lock so that no allocation can take a run while its pages go.
 */
#include "pool/pool.h"

#include "options.h"
#include "os.h"
#include "pool/chunk.h"
#include "pool/huge.h"
#include "pool/pool_locked.h"

/* Gives back dirty free runs of shard p, largest first (the coldest, one madvise each), until
 * at most keep_pages dirty pages remain; old_only: only runs returned before the period before
 * the one under way began (a decay's), that period read under the lock at each batch, so that
 * a decay slower than a period never takes what came back in a newer one.
 * Each batch is taken out of the bins and listed in p->purging while the lock is dropped for
 * the madvise (a fork's child puts it back); other purges of the shard run beside it on other
 * runs. Returns the pages given back. */
static size_t purge_shard(struct np_pool_shard *p, size_t keep_pages, bool old_only, struct np_vmstat_diffs *st)
{
	size_t total = 0;
	for (;;) {
		struct np_pool_purge_batch batch = {.n = 0};
		np_pool_lock(p, st);
		uint8_t now = (uint8_t)__atomic_load_n(&np_pools[p->node].decay_period, __ATOMIC_RELAXED);
		for (int b = NP_POOL_BINS - 1; b >= 0 && batch.n < NP_POOL_PURGE_BATCH && p->dirty_pages > keep_pages;
		     b--) {
			struct np_page *pg = p->bins[b];
			while (pg && batch.n < NP_POOL_PURGE_BATCH && p->dirty_pages > keep_pages) {
				struct np_page *next = pg->next;
				if (np_pool_run_dirty(pg) && (!old_only || (uint8_t)(now - pg->user) >= 2)) {
					np_pool_remove_free_locked(p, pg);
					np_pool_mark_used(pg, pg->npages, NP_ORDER_NONE);
					batch.runs[batch.n++] = pg;
				}
				pg = next;
			}
		}
		size_t out = 0;
		for (unsigned i = 0; i < batch.n; i++)
			out += batch.runs[i]->npages;
		if (batch.n) {
			batch.next = p->purging;
			p->purging = &batch;
			np_pool_set_count(&p->purging_pages, p->purging_pages + out);
		}
		np_pool_unlock(p);
		if (batch.n == 0)
			break;
		size_t pages = 0;
		bool gone[NP_POOL_PURGE_BATCH];
		for (unsigned i = 0; i < batch.n; i++) {
			gone[i] = np_chunk_purge(np_page_addr(batch.runs[i]), (size_t)batch.runs[i]->npages << NP_PAGE_SHIFT,
						 true);
			if (gone[i])
				pages += batch.runs[i]->npages; /* else zeroed in place: clean, not given back */
		}
		np_pool_lock(p, st);
		for (struct np_pool_purge_batch **l = &p->purging; *l; l = &(*l)->next)
			if (*l == &batch) {
				*l = batch.next;
				break;
			}
		np_pool_set_count(&p->purging_pages, p->purging_pages - out);
		for (unsigned i = 0; i < batch.n; i++) {
			if (gone[i])
				np_chunk_lower_touched(batch.runs[i], batch.runs[i]->npages);
			np_pool_put_locked(p, batch.runs[i], true);
		}
		np_pool_unlock(p);
		np_vmstat_add(st, p->node, NUMA_PAGE_STAT_pages_purged, (long)pages);
		total += pages;
		if (batch.n < NP_POOL_PURGE_BATCH)
			break;
	}
	return total;
}

/* Gives back dirty free pages of a pool until at most keep_pages remain dirty over all its
 * shards: the shard with the most first, the largest runs first within it, one lock at a
 * time (a shard's count read without its lock is a hint). */
static size_t purge_node(struct np_pool *pool, size_t keep_pages, struct np_vmstat_diffs *st)
{
	size_t total = 0;
	for (unsigned round = 0; round < pool->nshards; round++) {
		size_t sum = 0, most = 0;
		struct np_pool_shard *big = NULL;
		for (unsigned k = 0; k < pool->nshards; k++) {
			size_t d = __atomic_load_n(&pool->shard[k].dirty_pages, __ATOMIC_RELAXED);
			sum += d;
			if (d > most) {
				most = d;
				big = &pool->shard[k];
			}
		}
		if (sum <= keep_pages || !big)
			break;
		size_t excess = sum - keep_pages;
		total += purge_shard(big, most > excess ? most - excess : 0, false, st);
	}
	return total;
}

/* The option in nanoseconds; 0: no decay. */
static uint64_t decay_period_ns(void)
{
	return (uint64_t)np_opt_load(decay_ms) * 1000000u;
}

/* The dirty free pages a pool may keep: NUMAPAGE_PURGE_MB plus the most pages the pool had in
 * use in this decay period and the one before (0 stays 0: nothing is kept).
 * - In use: threads that hold runs also free and take runs again, and with many threads a
 *   fixed mark is below what they turn over. On 16 CPUs the page API's 1 MiB blocks, freed and
 *   taken again by 16 threads, were purged and faulted in again at every turn, 27 us a block
 *   against 8 us with no purge (page_bench), and large-blocks purged 180 MiB against the fixed 64.
 * - The recent peak: frees lower what is in use as they raise what is dirty, so a burst of
 *   them (a program between two phases, threads ending while others still run) crossed a mark
 *   that followed use, and the pages were faulted in again at the next turn: large-blocks/16
 *   purged 50 MiB as its first threads ended (docs/perf-issue15.md section 24). The peak is
 *   the node's (pool.h: peak). What it keeps, the decay gives back once it has stayed free a
 *   whole period; the decay runs only when the program calls the allocator, so a program that
 *   frees its peak and then sleeps keeps it until it calls again or trims, as the huge cache
 *   and jemalloc's decay do (a capped part was tried: at the option, large-blocks/16 purged
 *   19-20 K pages again).
 * - With the decay off nothing would give it back, so the mark follows use alone, as it does
 *   on a node the node layer finds nearly full (np_pool_set_low: others may need the pages).
 * So a pool's resident memory stays within twice its recent peak plus the option. Counts read
 * without the locks: a hint. */
size_t np_pool_purge_mark(int node)
{
	size_t floor = np_pool_purge_pages;
	if (!floor)
		return 0;
	size_t now, recent;
	np_pool_used_pages(node, &now, &recent);
	return floor + (decay_period_ns() == 0 || np_pool_is_low(node) ? now : recent);
}

size_t np_pool_purge(int node, size_t keep_pages, struct np_vmstat_diffs *st)
{
	struct np_pool *p = &np_pools[node];
	return p->exists ? purge_node(p, keep_pages, st) : 0;
}

/* The decay (pool.h): once a node's period of NUMAPAGE_DECAY_MS has ended, the first thread to
 * look (a compare-and-swap on decay_began elects it) begins the next period, numbered one
 * more, and gives back, in every shard, the dirty runs stamped two or more periods before the
 * one under way: returned before the period that ended began, and not taken since. The first
 * look only begins a period. now: read before the look, so it may be older than a period
 * another thread began meanwhile, which then is not due (signed difference).
 * period_ns: the option as it is now (a change applies to the period under way), not 0. */
static void decay_node(struct np_pool *pool, uint64_t now, uint64_t period_ns, struct np_vmstat_diffs *st)
{
	uint64_t began = __atomic_load_n(&pool->decay_began, __ATOMIC_RELAXED);
	if ((began && (int64_t)(now - began) < (int64_t)period_ns) ||
	    !__atomic_compare_exchange_n(&pool->decay_began, &began, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	/* One period, however long since this one began: a look after two or more could be a
	 * program waking from a sleep, or one that computed that long on what it holds (no
	 * allocator call, so no look) and now frees it to take it again; beginning two periods, or
	 * forgetting the peak, there purged that working set at once (tried after a helper's
	 * review: docs/perf-issue15.md section 24). So what a program frees before a sleep goes
	 * one period after it wakes. */
	__atomic_add_fetch(&pool->decay_period, 1, __ATOMIC_RELAXED); /* the elected thread alone */
	np_pool_note_period(pool);
	if (!began)
		return;
	for (unsigned k = 0; k < pool->nshards; k++)
		purge_shard(&pool->shard[k], 0, true, st);
}

void np_pool_decay(struct np_vmstat_diffs *st)
{
	/* The huge caches look with NUMAPAGE_DECAY_MS=0 too: their peak still halves each second. */
	uint64_t period = decay_period_ns();
	uint64_t now = np_os_clock_ns();
	for (int i = 0; i < np_topo_table.nnodes && i < NP_MAX_NODES; i++) {
		if (period && np_pools[i].exists)
			decay_node(&np_pools[i], now, period, st);
		np_huge_decay(i, now, st);
	}
}

void np_pool_put_batch(struct np_page **runs, int n, struct np_vmstat_diffs *st)
{
	/* One lock hold per shard: take the first remaining run's shard, return every run of that
	 * shard (clearing its slot), repeat. Batches are small, so the quadratic scan is cheap. */
	for (int i = 0; i < n; i++) {
		if (!runs[i])
			continue;
		struct np_pool_shard *p = np_pool_shard_of(runs[i]);
		long pages = 0;
		np_pool_lock(p, st);
		for (int j = i; j < n; j++) {
			if (!runs[j] || np_pool_shard_of(runs[j]) != p)
				continue;
			pages += runs[j]->npages;
			np_pool_put_locked(p, runs[j], false);
			runs[j] = NULL;
		}
		np_pool_debug_check_locked(p, "put");
		np_pool_unlock(p);
		np_vmstat_add(st, p->node, NUMA_PAGE_STAT_pages_free, pages);
		/* The watermark is the node's, over its shards: past it, the node goes down to half
		 * of it, from the shards that hold the most (purging only the returning shard
		 * purged it whole at every return while another kept the rest).
		 * The shards' counts (a line of another CPU each) are summed only when the pool's
		 * folded total says the node may be past the option, and the option is checked
		 * before the mark, whose pages in use are another sum. */
		struct np_pool *pool = &np_pools[p->node];
		if (np_pool_dirty_may_pass(p->node)) {
			size_t dirty = np_pool_dirty_pages(p->node);
			if (dirty > np_pool_purge_pages) {
				size_t mark = np_pool_purge_mark(p->node);
				if (dirty > mark)
					purge_node(pool, mark / 2, st);
			}
		}
		uint64_t period = decay_period_ns(); /* the coarse clock: a few nanoseconds a return */
		if (period)
			decay_node(pool, np_os_clock_ns(), period, st);
	}
}

void np_pool_put_run(struct np_page *run, struct np_vmstat_diffs *st)
{
	np_pool_put_batch(&run, 1, st);
}

size_t np_pool_trim(int node, struct np_vmstat_diffs *st)
{
	struct np_pool *pool = &np_pools[node];
	if (!pool->exists)
		return 0;
	size_t total = 0, pages = 0;
	/* Every free run, under the lock, as glibc's malloc_trim: the runs stay in their bins, so
	 * no allocation may take one while its pages go. Runs the pool thinks clean are given back
	 * too: with transparent huge pages set to "always" the kernel backs a whole 2 MiB of a
	 * fresh chunk on its first touch, so never-used pages can be resident (the VM guests saw
	 * megabytes stay after trim: docs/design.md). madvise of pages that are not there costs
	 * nothing. One shard at a time. */
	for (unsigned k = 0; k < pool->nshards; k++) {
		struct np_pool_shard *p = &pool->shard[k];
		np_pool_lock(p, st);
		for (struct np_chunk *c = p->chunks; c; c = c->next) {
			size_t i = NP_CHUNK_HEADER_PAGES;
			while (i < NP_CHUNK_PAGES) {
				struct np_page *pg = &c->pages[i];
				size_t n = pg->npages ? pg->npages : 1;
				if (np_page_state(pg) == NP_PAGE_FREE) {
					/* A run the pool counts clean reads as zeros already: a refused
					 * purge leaves it as it is; a dirty one it zeroes. */
					bool gone = np_chunk_purge(np_page_addr(pg), n << NP_PAGE_SHIFT, !pg->clean);
					size_t d = np_pool_run_dirty(pg);
					if (d && gone)
						total += n; /* known to have been resident */
					np_pool_less_dirty(p, d);
					pg->clean = 1;
					if (n > 1)
						pg[n - 1].prev = NULL; /* dirty estimate 0 */
					if (gone) {
						/* pages_purged: the pages that may have held data
						 * (the dirty estimate, as in np_pool_unmap_free_chunks);
						 * counting every free page made each idle trim add the
						 * whole pool again. */
						pages += d;
						np_chunk_lower_touched(pg, n);
					}
				}
				i += n;
			}
		}
		np_pool_unlock(p);
	}
	np_vmstat_add(st, node, NUMA_PAGE_STAT_pages_purged, (long)pages);
	return total;
}
