/*
 * pool_locked.h — what the pool's own files share (pool.c, pool_return.c); no
 * other module includes it. Functions named *_locked expect the caller to hold the pool's lock
 * (np_pool_lock) of the shard they are given; they check it at debug_level >= 2.
 */
#ifndef NP_POOL_LOCKED_H
#define NP_POOL_LOCKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool/pool.h"

/* Dirty pages a pool (all its shards) keeps before purging (NUMAPAGE_PURGE_MB), set by
 * np_pool_init. */
extern size_t np_pool_purge_pages;

/* *count, a shard's page count (free_pages, dirty_pages, mapped_pages, purging_pages), becomes
 * v: its lock's holder changes it, and other threads read it without the lock as a hint
 * (relaxed loads: shard_used, np_pool_free_pages, ...), so the store is a relaxed atomic too
 * and the race defined behaviour (quiet under TSan). A plain move on x86-64. */
NP_INLINE void np_pool_set_count(size_t *count, size_t v)
{
	__atomic_store_n(count, v, __ATOMIC_RELAXED);
}

/* d of shard s's free pages that may have been resident are not any more (their run left the
 * bins, or was given back): its dirty estimate comes down by d, to 0 at the least (the
 * estimate is an upper bound). */
NP_INLINE void np_pool_less_dirty(struct np_pool_shard *s, size_t d)
{
	np_pool_set_count(&s->dirty_pages, s->dirty_pages > d ? s->dirty_pages - d : 0);
}

/* Takes the shard's lock, counting pool_contended when it has to wait; true when it waited. */
bool np_pool_lock(struct np_pool_shard *s, struct np_vmstat_diffs *st);
void np_pool_unlock(struct np_pool_shard *s);
/* The shard that owns the chunk of page pg. */
NP_INLINE struct np_pool_shard *np_pool_shard_of(const struct np_page *pg)
{
	const struct np_chunk *c = np_chunk_of(pg);
	return &np_pools[c->node].shard[c->shard];
}

/* How many pages of the free run at pg may be resident (an estimate; see pool.c). */
size_t np_pool_run_dirty(const struct np_page *pg);
/* Takes the free run at pg out of its bin. */
void np_pool_remove_free_locked(struct np_pool_shard *s, struct np_page *pg);
/* Returns the run at pg (state USED, npages set) to the pool, merged with free neighbours;
 * clean: it reads as zeros (purged). */
void np_pool_put_locked(struct np_pool_shard *s, struct np_page *pg, bool clean);
/* Marks [pg, pg + n) as one run handed out: head USED (order: its page-cache order, or
 * NP_ORDER_NONE), every other page TAIL. No lock needed: the run is nobody else's. */
void np_pool_mark_used(struct np_page *pg, size_t n, uint8_t order);
/* A decay period of pool has begun: what the pool has in use (the shards' own counts, not
 * the folded total) is the first peak of it (pool.h: peak). */
void np_pool_note_period(struct np_pool *pool);
/* debug_level 3: the whole shard after every change made under its lock. */
void np_pool_debug_check_locked(struct np_pool_shard *s, const char *where);

#endif /* NP_POOL_LOCKED_H */
