/*
 * pool_huge.c — freed huge chunks kept for reuse (see pool.h): each node's pool keeps the huge
 * chunks of its node on a list, newest first, counted against the purge watermark with its
 * dirty runs; the next huge request that fits takes the smallest that fits (its tail given back
 * when it is much larger), and purging unmaps the oldest first (pool_purge.c).
 */
#include "pool/pool.h"

#include "pool/pool_locked.h"

size_t np_pool_huge_pages(const struct np_chunk *c)
{
	return np_chunk_data_bytes(c) >> NP_PAGE_SHIFT;
}

bool np_pool_put_huge(struct np_chunk *c, struct np_vmstat_diffs *st)
{
	struct np_pool *p = &np_pools[c->node];
	size_t pages = np_pool_huge_pages(c);
	if (c->kind != NP_CHUNK_HUGE || !p->exists || pages > np_pool_purge_pages)
		return false;
	np_pool_lock(p, st);
	c->kind = NP_CHUNK_CACHED;
	c->user = 0;
	c->next = p->cache;
	p->cache = c;
	p->cached_pages += pages;
	bool purge = p->dirty_pages + p->cached_pages > np_pool_purge_pages;
	np_pool_unlock(p);
	if (purge)
		np_pool_purge(c->node, np_pool_purge_pages / 2, st);
	return true;
}

struct np_chunk *np_pool_get_huge(int node, size_t bytes, size_t align, struct np_vmstat_diffs *st)
{
	struct np_pool *p = &np_pools[node];
	if (!p->exists || !__atomic_load_n(&p->cache, __ATOMIC_RELAXED))
		return NULL;
	size_t need = (bytes + NP_PAGE_SIZE - 1) >> NP_PAGE_SHIFT;
	np_pool_lock(p, st);
	struct np_chunk **best = NULL;
	for (struct np_chunk **link = &p->cache; *link; link = &(*link)->next) {
		struct np_chunk *c = *link;
		size_t have = np_pool_huge_pages(c);
		if (have >= need && ((uintptr_t)c + c->data_offset) % align == 0 && (!best || have < np_pool_huge_pages(*best)))
			best = link;
	}
	struct np_chunk *c = NULL;
	if (best) {
		c = *best;
		*best = c->next;
		c->next = NULL;
		p->cached_pages -= np_pool_huge_pages(c);
		c->kind = NP_CHUNK_HUGE;
	}
	np_pool_unlock(p);
	/* A much larger chunk serves a smaller request: give its tail back rather than hold it
	 * (down to the request's own mapping size, so that it fits a request like it again). */
	if (c && np_pool_huge_pages(c) > need + need / 4) {
		size_t size = np_chunk_huge_size(c->data_offset + bytes);
		if (size < c->size)
			np_chunk_trim_huge(c, size);
	}
	return c;
}

/* Takes up to n of the oldest cached chunks off the pool while it holds more than keep_pages
 * dirty pages. Called with the lock held. */
int np_pool_evict_cached_locked(struct np_pool *p, size_t keep_pages, struct np_chunk **out, int n)
{
	int got = 0;
	while (got < n && p->cache && p->dirty_pages + p->cached_pages > keep_pages) {
		struct np_chunk **link = &p->cache;
		while ((*link)->next)
			link = &(*link)->next;
		struct np_chunk *c = *link;
		*link = NULL;
		p->cached_pages -= np_pool_huge_pages(c);
		out[got++] = c;
	}
	return got;
}

