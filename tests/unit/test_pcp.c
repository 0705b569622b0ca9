/*
 * Unit tests of src/pcp/: head/tail ordering (a local free is the next page handed out; a
 * remote free is not reused while local pages exist and leaves first on overflow), refill and
 * drain batch sizes under NUMAPAGE_PCP_BATCH/HIGH, the fallback order of every node of every
 * fixture (memoryless nodes served by their nearest memory node, counted as miss/foreign),
 * exhaustion falling through the order without the cache growing past high, a memoryless
 * node's batches shared in turn over its equidistant group (and a full member passed over),
 * the preferred and interleave task policies, explicit requests for the old home, a chunk the
 * kernel spilled and a node without room passed over, re-homing, the balance of memoryless
 * nodes' pages over their equidistant memory nodes (issue 14.4), and a randomized sequence
 * with np_pcp_check and np_pool_check after every step (fixed seed).
 * Each test loads a fixture into np_topo_table, fresh pools and a registered statistics block.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_os.h"
#include "options.h"
#include "os.h"
#include "pcp/pcp.h"
#include "unit_fixture.h"
#include "pool/chunk.h"
#include "pool/pool.h"
#include "topology/topology.h"
#include "vmstat/vmstat.h"

#define STAT(node, item) np_vmstat_snapshot(node, NUMA_PAGE_STAT_##item)

static struct np_vmstat_diffs *st;
static struct np_pcp pcp;

/* Loads a fixture as the library's table, fresh pools and statistics; option pairs name,
 * value (NULL-terminated) are applied first. The pcp is not initialised. */
static void start(const char *fixture, ...)
{
	va_list ap;
	va_start(ap, fixture);
	np_test_start_fixture(fixture, ap);
	va_end(ap);
	np_fake_os_set_cpu(0);
	st = calloc(1, sizeof *st);
	assert_non_null(st);
	np_vmstat_register(st);
}

static int teardown(void **state)
{
	(void)state;
	np_test_unmap_pools();
	if (st) {
		np_vmstat_unregister(st);
		free(st);
		st = NULL;
	}
	np_fake_os_reset();
	np_fake_os_set_cpu(0);
	return 0;
}

static void check(void)
{
	const char *err = np_pcp_check(&pcp);
	if (err)
		fail_msg("pcp: %s", err);
	for (int n = 0; n < np_topo_table.nnodes; n++)
		if (np_pools[n].exists && (err = np_pool_check(n)) != NULL)
			fail_msg("pool %d: %s", n, err);
}

static bool in_cache(const struct np_page *pg)
{
	for (int o = 0; o < NP_PCP_ORDERS; o++)
		for (const struct np_page *q = pcp.list[o].head; q; q = q->next)
			if (q == pg)
				return true;
	return false;
}

/* Position of pg in its list from the head, or -1. */
static int position(const struct np_page *pg)
{
	int i = 0;
	for (const struct np_page *q = pcp.list[pg->order].head; q; q = q->next, i++)
		if (q == pg)
			return i;
	return -1;
}

/* Pages of dense node `node` as if handed out (state USED, order 0), straight from its pool. */
static void take(int node, int n, struct np_page **out)
{
	assert_int_equal(np_pool_get_batch(node, 0, n, out, NULL, true), n);
}

static long pages_in_use_total(void)
{
	long sum = 0;
	for (int n = 0; n < np_topo_table.nnodes; n++)
		sum += STAT(n, pages_in_use);
	return sum;
}

/* ---- ordering ------------------------------------------------------------------------------ */

static void local_free_is_next_out(void **state)
{
	(void)state;
	start("2node", "PCP_BATCH", "8", NULL);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	struct np_page *a = np_pcp_get(&pcp, 0, -1);
	struct np_page *b = np_pcp_get(&pcp, 0, -1);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->state, NP_PAGE_USED);
	np_pcp_put(&pcp, a);
	check();
	assert_ptr_equal(pcp.list[0].head, a);
	assert_ptr_equal(np_pcp_get(&pcp, 0, -1), a);
	np_pcp_put(&pcp, b);
	np_pcp_put(&pcp, a);
	assert_ptr_equal(np_pcp_get(&pcp, 0, -1), a); /* last in, first out */
	assert_ptr_equal(np_pcp_get(&pcp, 0, -1), b);
	/* Higher orders too. */
	struct np_page *c = np_pcp_get(&pcp, 3, -1);
	assert_int_equal(c->npages, 8);
	np_pcp_put(&pcp, c);
	assert_ptr_equal(np_pcp_get(&pcp, 3, -1), c);
	np_pcp_put(&pcp, c);
	np_pcp_put(&pcp, a);
	np_pcp_put(&pcp, b);
	check();
	np_pcp_drain(&pcp);
	assert_int_equal(pcp.count, 0);
	check();
	assert_int_equal(np_pool_free_pages(0), np_pools[0].mapped_pages);
	np_pcp_fini(&pcp);
}

static void remote_free_goes_to_tail_and_waits(void **state)
{
	(void)state;
	start("2node", "PCP_BATCH", "8", NULL);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	struct np_page *r;
	take(1, 1, &r);
	np_pcp_put(&pcp, r);
	assert_int_equal(pcp.count, 1);
	assert_int_equal(STAT(1, remote_free), 1);
	check();
	/* Local pages are served (the remote one prompts a refill of local ones ahead of it),
	 * and the remote page stays at the tail throughout. */
	struct np_page *got[24];
	for (int i = 0; i < 24; i++) {
		got[i] = np_pcp_get(&pcp, 0, -1);
		assert_ptr_not_equal(got[i], r);
		assert_int_equal(np_page_node(got[i]), 0);
		assert_ptr_equal(pcp.list[0].tail, r);
		check();
	}
	/* A local free goes ahead of it. */
	np_pcp_put(&pcp, got[0]);
	assert_ptr_equal(pcp.list[0].head, got[0]);
	assert_ptr_equal(pcp.list[0].tail, r);
	assert_int_equal(STAT(0, remote_free), 0);
	for (int i = 1; i < 24; i++)
		np_pcp_put(&pcp, got[i]);
	check();
	np_pcp_drain(&pcp);
	check();
	assert_int_equal(np_pool_free_pages(1), np_pools[1].mapped_pages);
	np_pcp_fini(&pcp);
}

static void remote_leaves_first_on_overflow(void **state)
{
	(void)state;
	start("2node", "PCP_BATCH", "4", "PCP_HIGH", "8", NULL);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	assert_int_equal(pcp.batch, 4);
	assert_int_equal(pcp.high, 8);
	struct np_page *r, *loc[7];
	take(1, 1, &r);
	take(0, 7, loc);
	np_pcp_put(&pcp, r);
	for (int i = 0; i < 6; i++)
		np_pcp_put(&pcp, loc[i]);
	assert_int_equal(pcp.count, 7);
	assert_int_equal(position(r), 6); /* behind every local page */
	check();
	size_t free1 = np_pool_free_pages(1);
	np_pcp_put(&pcp, loc[6]); /* count reaches high: a batch of 4 leaves from the tail */
	check();
	assert_int_equal(pcp.count, 4);
	assert_false(in_cache(r));
	assert_int_equal(np_pool_free_pages(1), free1 + 1); /* went home */
	/* Then the oldest local pages (the tail end): loc[0..2]; the newest stay. */
	for (int i = 0; i < 3; i++)
		assert_false(in_cache(loc[i]));
	for (int i = 3; i < 7; i++)
		assert_true(in_cache(loc[i]));
	assert_int_equal(STAT(1, pcp_drain), 1);
	assert_int_equal(STAT(0, pcp_drain), 1);
	assert_int_equal(STAT(1, pages_free), 1);
	assert_int_equal(STAT(0, pages_free), 3);
	np_pcp_drain(&pcp);
	np_pcp_fini(&pcp);
}

/* ---- batch sizes ------------------------------------------------------------------------------ */

static void refill_and_drain_batch_sizes(void **state)
{
	(void)state;
	start("2node", "PCP_BATCH", "8", "PCP_HIGH", "24", NULL);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	assert_int_equal(pcp.batch, 8);
	assert_int_equal(pcp.high, 24);
	struct np_page *got[32];
	got[0] = np_pcp_get(&pcp, 0, -1);
	assert_int_equal(STAT(0, pcp_refill), 1);
	assert_int_equal(STAT(0, pages_alloc), 8);
	assert_int_equal(pcp.count, 7);
	for (int i = 1; i < 8; i++)
		got[i] = np_pcp_get(&pcp, 0, -1);
	assert_int_equal(STAT(0, pcp_refill), 1); /* the batch lasted 8 pages */
	assert_int_equal(pcp.count, 0);
	got[8] = np_pcp_get(&pcp, 0, -1);
	assert_int_equal(STAT(0, pcp_refill), 2);
	assert_int_equal(STAT(0, pages_alloc), 16);
	for (int i = 9; i < 24; i++)
		got[i] = np_pcp_get(&pcp, 0, -1);
	assert_int_equal(STAT(0, pcp_refill), 3);
	assert_int_equal(STAT(0, pages_alloc), 24);
	assert_int_equal(pcp.count, 0);
	/* Orders: a batch is `batch` pages, at least one run. */
	struct np_page *o2 = np_pcp_get(&pcp, 2, -1);
	assert_int_equal(STAT(0, pages_alloc), 32);
	assert_int_equal(pcp.count, 4);
	struct np_page *o4 = np_pcp_get(&pcp, 4, -1);
	assert_int_equal(STAT(0, pages_alloc), 48);
	assert_int_equal(pcp.count, 4);
	assert_int_equal(STAT(0, pcp_refill), 5);
	assert_int_equal(STAT(0, pages_in_use), 24 + 4 + 16);
	check();
	/* Drain: the put that reaches high (24) sends a batch (8 pages) back, tail first. */
	for (int i = 0; i < 19; i++)
		np_pcp_put(&pcp, got[i]);
	assert_int_equal(pcp.count, 23);
	assert_int_equal(STAT(0, pcp_drain), 0);
	np_pcp_put(&pcp, got[19]);
	assert_int_equal(STAT(0, pcp_drain), 1);
	assert_int_equal(STAT(0, pages_free), 8);
	assert_int_equal(pcp.count, 16);
	check();
	for (int i = 20; i < 24; i++)
		np_pcp_put(&pcp, got[i]);
	np_pcp_put(&pcp, o2);
	np_pcp_put(&pcp, o4);
	check();
	assert_true(pcp.count < pcp.high);
	assert_int_equal(STAT(0, pages_in_use), 0);
	np_pcp_drain(&pcp);
	np_pcp_fini(&pcp);
}

static void batch_defaults_and_bounds(void **state)
{
	(void)state;
	start("2node", NULL);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	assert_int_equal(pcp.batch, NP_PCP_BATCH_DEFAULT);
	assert_int_equal(pcp.high, NP_PCP_HIGH_FACTOR * NP_PCP_BATCH_DEFAULT);
	np_pcp_fini(&pcp);
	teardown(NULL);
	start("2node", "PCP_BATCH", "16", "PCP_HIGH", "4", NULL);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	assert_int_equal(pcp.batch, 16);
	assert_int_equal(pcp.high, 16); /* never below a batch */
	np_pcp_fini(&pcp);
	teardown(NULL);
	/* batch 1 moves single pages; a huge batch is capped per refill, not an overflow. */
	start("2node", "PCP_BATCH", "1", NULL);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	struct np_page *a = np_pcp_get(&pcp, 0, -1);
	assert_int_equal(STAT(0, pages_alloc), 1);
	assert_int_equal(pcp.count, 0);
	np_pcp_put(&pcp, a);
	np_pcp_fini(&pcp);
	teardown(NULL);
	start("2node", "PCP_BATCH", "65536", NULL);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	a = np_pcp_get(&pcp, 0, -1);
	assert_non_null(a);
	assert_true(STAT(0, pages_alloc) <= 64);
	check();
	np_pcp_put(&pcp, a);
	np_pcp_drain(&pcp);
	np_pcp_fini(&pcp);
}

/* ---- fallback and accounting -------------------------------------------------------------- */

/* The memory node a thread homed on `node` is served from first. */
static int expected_first(int node)
{
	const struct np_topo_node *nd = &np_topo_table.node[node];
	if (nd->mem_allowed)
		return node;
	return np_node_primary(node);
}

static void fallback_of_every_fixture_node(void **state)
{
	(void)state;
	static const char *const fixtures[] = {"2990wx", "r7425", "2node", "4node", "cxl", "sparse", "single"};
	for (size_t f = 0; f < NP_ARRAY_SIZE(fixtures); f++) {
		start(fixtures[f], NULL);
		const struct np_topo *t = &np_topo_table;
		int nnodes = t->nnodes;
		teardown(NULL);
		for (int n = 0; n < nnodes; n++) {
			/* Fresh pools for each node: free pages left by the previous one would make
			 * a memoryless node steal from them. */
			start(fixtures[f], "PCP_BATCH", "4", NULL);
			const struct np_topo_node *nd = &t->node[n];
			int want = expected_first(n);
			/* The primary is one of the nearest memory nodes. */
			assert_int_equal(t->node[n].distance[want], nd->fallback_dist[0]);
			if (nd->nfallback == 1 || nd->fallback_dist[1] != nd->fallback_dist[0])
				assert_int_equal(want, nd->fallback[0]);
			long hit = STAT(want, numa_hit), miss = STAT(want, numa_miss);
			long foreign = STAT(n, numa_foreign), local = STAT(want, local_node);
			long other = STAT(want, other_node);
			np_pcp_init(&pcp, n, st, NULL);
	np_pcp_count_thread(&pcp);
			pcp.home_fixed = true; /* not the fake CPU's node */
			struct np_page *pg = np_pcp_get(&pcp, 0, -1);
			assert_non_null(pg);
			if (np_page_node(pg) != want)
				fail_msg("%s: node %d served by %d, expected %d", fixtures[f], t->node[n].os_id,
					 t->node[np_page_node(pg)].os_id, t->node[want].os_id);
			if (want == n) {
				assert_int_equal(STAT(n, numa_hit), hit + 1);
				assert_int_equal(STAT(n, local_node), local + 1);
			} else {
				assert_int_equal(STAT(want, numa_miss), miss + 1);
				assert_int_equal(STAT(n, numa_foreign), foreign + 1);
				assert_int_equal(STAT(want, other_node), other + 1);
			}
			check();
			np_pcp_put(&pcp, pg);
			np_pcp_drain(&pcp);
			np_pcp_fini(&pcp);
			teardown(NULL);
		}
	}
}

static void named_fallbacks(void **state)
{
	(void)state;
	/* r7425: a thread on CPU 0 (memoryless node 0) gets node 1; CPU 4 gets node 5. */
	start("r7425", "PCP_BATCH", "4", NULL);
	const int r7425[8] = {1, 1, 1, 1, 5, 5, 5, 5};
	for (int cpu = 0; cpu < 8; cpu++) {
		np_fake_os_set_cpu(cpu);
		int home = np_topo_cpu_node(&np_topo_table, cpu);
		np_pcp_init(&pcp, home, st, NULL);
	np_pcp_count_thread(&pcp);
		struct np_page *pg = np_pcp_get(&pcp, 0, -1);
		assert_int_equal(np_topo_table.node[np_page_node(pg)].os_id, r7425[cpu]);
		np_pcp_put(&pcp, pg);
		np_pcp_drain(&pcp);
		np_pcp_fini(&pcp);
	}
	teardown(NULL);
	/* 2990wx: memoryless 1 and 3 get nodes 0 and 2. */
	start("2990wx", "PCP_BATCH", "4", NULL);
	const int wx[4] = {0, 0, 2, 2};
	for (int n = 0; n < 4; n++) {
		np_fake_os_set_cpu(2 * n);
		np_pcp_init(&pcp, n, st, NULL);
	np_pcp_count_thread(&pcp);
		struct np_page *pg = np_pcp_get(&pcp, 0, -1);
		assert_int_equal(np_page_node(pg), wx[n]);
		np_pcp_put(&pcp, pg);
		np_pcp_drain(&pcp);
		np_pcp_fini(&pcp);
	}
}

/* An exhausted home node falls through its order, counted; the remote pages it then gets
 * must not pile up: the cache stays within high however long the home stays exhausted. */
static void exhausted_home_falls_through_without_hoarding(void **state)
{
	(void)state;
	start("2node", "PCP_BATCH", "8", "PCP_HIGH", "48", NULL);
	np_topo_table.is_system = true; /* binds reach the fake, which can refuse them */
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	enum { N = NP_CHUNK_DATA_PAGES + 200 };
	static struct np_page *got[N];
	for (int i = 0; i < N; i++) {
		got[i] = np_pcp_get(&pcp, 0, -1);
		/* Node 0 gets one chunk, then the kernel refuses its memory (it is full). */
		if (i == 0)
			np_fake_os_fail_bind(0, -ENOMEM);
		assert_non_null(got[i]);
		assert_int_equal(np_page_node(got[i]), i < (int)NP_CHUNK_DATA_PAGES ? 0 : 1);
		assert_true(pcp.count <= pcp.high);
	}
	check();
	assert_int_equal(STAT(0, numa_hit), NP_CHUNK_DATA_PAGES);
	assert_int_equal(STAT(1, numa_miss), 200);
	assert_int_equal(STAT(0, numa_foreign), 200);
	assert_int_equal(STAT(1, other_node), 200);
	/* Node 1's pool handed out what was used and at most a batch more. */
	assert_true(STAT(1, pages_alloc) <= 200 + pcp.batch);
	for (int i = 0; i < N; i++)
		np_pcp_put(&pcp, got[i]);
	check();
	np_pcp_drain(&pcp);
	assert_int_equal(pages_in_use_total(), 0);
	np_pcp_fini(&pcp);
	np_fake_os_fail_bind(0, 0);
	np_topo_table.is_system = false;
}

static void explicit_node_bypasses_the_cache(void **state)
{
	(void)state;
	start("4node", "PCP_BATCH", "8", NULL);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	struct np_page *pg = np_pcp_get(&pcp, 0, 2);
	assert_int_equal(np_page_node(pg), 2);
	assert_int_equal(pcp.count, 0);
	assert_int_equal(STAT(2, pcp_refill), 0);
	assert_int_equal(STAT(2, numa_hit), 1);
	assert_int_equal(STAT(2, other_node), 1);
	assert_int_equal(STAT(2, pages_in_use), 1);
	/* Freed into this thread's cache, as a remote page (tail). */
	struct np_page *loc = np_pcp_get(&pcp, 0, -1);
	np_pcp_put(&pcp, loc);
	np_pcp_put(&pcp, pg);
	assert_ptr_equal(pcp.list[0].tail, pg);
	assert_int_equal(STAT(2, remote_free), 1);
	assert_int_equal(STAT(2, pages_in_use), 0);
	check();
	/* Runs of any length: explicit and home. */
	struct np_page *r = np_pcp_get_run(&pcp, 20, 1, 3);
	assert_int_equal(np_page_node(r), 3);
	assert_int_equal(STAT(3, numa_hit), 20);
	struct np_page *h = np_pcp_get_run(&pcp, 300, 4, -1);
	assert_int_equal(np_page_node(h), 0);
	assert_int_equal((size_t)(h - np_chunk_of(h)->pages) % 4, 0);
	assert_int_equal(STAT(0, local_node), 300 + 1);
	np_pcp_put_run(&pcp, r);
	np_pcp_put_run(&pcp, h);
	np_pcp_drain(&pcp);
	check();
	assert_int_equal(pages_in_use_total(), 0);
	np_pcp_fini(&pcp);
}

/* ---- sharing, policies, home ------------------------------------------------------------- */

/* Takes n pages of order 0 for the thread's own memory, counting them per node into per[]. */
static void take_own(int n, struct np_page **out, int per[NP_MAX_NODES])
{
	for (int i = 0; i < n; i++) {
		out[i] = np_pcp_get(&pcp, 0, -1);
		assert_non_null(out[i]);
		per[np_page_node(out[i])]++;
	}
}

static void put_all(int n, struct np_page **pg)
{
	for (int i = 0; i < n; i++)
		np_pcp_put(&pcp, pg[i]);
}

static void memoryless_home_shares_its_group_in_turn(void **state)
{
	(void)state;
	start("2990wx", "PCP_BATCH", "8", "PCP_HIGH", "512", NULL);
	struct np_page *r = np_pool_get_run(0, NP_CHUNK_DATA_PAGES, 1, NULL, true);
	np_pool_put_run(r, NULL);
	np_pcp_init(&pcp, 1, st, NULL);
	np_pcp_count_thread(&pcp);
	static struct np_page *pg[64];
	/* A member without room is passed over: node 2 holds its whole size (a rehearsal's room
	 * is the fixture's size against pages_in_use) and has no free pages to give. */
	long full = (long)np_pools[2].limit_pages;
	np_vmstat_add(NULL, 2, NUMA_PAGE_STAT_pages_in_use, full);
	int per0[NP_MAX_NODES] = {0};
	take_own(32, pg, per0);
	assert_int_equal(per0[0], 32);
	assert_int_equal(np_pools[2].mapped_pages, 0);
	put_all(32, pg);
	np_pcp_drain(&pcp);
	np_vmstat_add(NULL, 2, NUMA_PAGE_STAT_pages_in_use, -full);
	/* Node 1 (memoryless, first choice 0) takes its batches from 0 and 2 in turn, though pool
	 * 0 holds free pages and pool 2 none (the free-pages heuristic stole only from a pool that
	 * had some: 97/3 in the guest). */
	pcp.rotor = 0;
	int per[NP_MAX_NODES] = {0};
	take_own(8, pg, per);
	assert_int_equal(per[0], 8);
	assert_int_equal(STAT(2, pages_stolen), 0);
	take_own(8, pg + 8, per);
	assert_int_equal(per[2], 8);
	assert_int_equal(STAT(2, pages_stolen), 8); /* taken from the member that is not first */
	take_own(48, pg + 16, per);
	assert_int_equal(per[0], 32);
	assert_int_equal(per[2], 32);
	/* Equidistant: both near, at the head when freed. */
	put_all(64, pg);
	assert_int_equal(STAT(0, remote_free) + STAT(2, remote_free), 0);
	check();
	/* Long runs in turn too; pages_stolen counts every run taken from the member that is not
	 * first, the ones a batch keeps in the cache included (they are this node's now), once. */
	long stolen0 = STAT(2, pages_stolen), from2 = 0;
	struct np_page *lr[8];
	for (int i = 0; i < 8; i++) {
		lr[i] = np_pcp_get_run(&pcp, 40, 1, -1);
		from2 += np_page_node(lr[i]) == 2 ? 40 : 0;
	}
	for (int i = 0; i < pcp.nruns; i++)
		from2 += np_page_node(pcp.runs[i]) == 2 ? 40 : 0;
	assert_true(from2 > 0);
	assert_int_equal(STAT(2, pages_stolen) - stolen0, from2);
	for (int i = 0; i < 8; i++)
		np_pcp_put_run(&pcp, lr[i]);
	check();
	np_pcp_drain(&pcp);
	check();
	np_pcp_fini(&pcp);
}

/* Threads of memoryless nodes 1 and 3 (2990wx: both 16 from memory nodes 0 and 2), two caches
 * per node, taking and freeing single pages and 128 KiB runs in turn (fixed seeds, one
 * simulated run per seed, fresh pools each time): the pages they hold at the end must split
 * between nodes 0 and 2 within 40/60 in every run, as sharing in turn makes them.
 * The VM guests showed 97/3, 21/79 and 88/12 (issue 14), and 100/0 since. */
static void memoryless_pages_balance(void **state)
{
	(void)state;
	enum { NCACHE = 4, MAX_HELD = 600, STEPS = 12000, RUNS = 3 };
	static const int home[NCACHE] = {1, 1, 3, 3}, cpu[NCACHE] = {2, 3, 6, 7};
	static struct np_page *held[NCACHE][MAX_HELD];
	char why[256] = "";
	size_t o = 0;
	for (int run = 0; run < RUNS; run++) {
		start("2990wx", NULL);
		struct np_pcp c[NCACHE];
		int nheld[NCACHE] = {0};
		for (int k = 0; k < NCACHE; k++) {
			np_fake_os_set_cpu(cpu[k]);
			np_pcp_init(&c[k], home[k], st, NULL);
			np_pcp_count_thread(&c[k]);
		}
		srand48(100 + run);
		for (int step = 0; step < STEPS; step++) {
			int k = step % NCACHE;
			np_fake_os_set_cpu(cpu[k]);
			bool take = nheld[k] < MAX_HELD && (nheld[k] < MAX_HELD / 2 || lrand48() % 2);
			if (take) {
				unsigned order = lrand48() % 8 ? 0 : NP_PCP_ORDERS - 1;
				struct np_page *pg = np_pcp_get(&c[k], order, -1);
				assert_non_null(pg);
				held[k][nheld[k]++] = pg;
			} else if (nheld[k]) {
				int i = (int)(lrand48() % nheld[k]);
				struct np_page *pg = held[k][i];
				held[k][i] = held[k][--nheld[k]];
				np_pcp_put(&c[k], pg);
			}
		}
		long on[4] = {0};
		for (int k = 0; k < NCACHE; k++)
			for (int i = 0; i < nheld[k]; i++)
				on[np_page_node(held[k][i])] += held[k][i]->npages;
		assert_int_equal(on[1] + on[3], 0);
		double share0 = (double)on[0] / (double)(on[0] + on[2]);
		if ((share0 < 0.40 || share0 > 0.60) && o < sizeof why)
			o += (size_t)snprintf(why + o, sizeof why - o, " run %d: %ld pages on 0, %ld on 2;",
					      run + 1, on[0], on[2]);
		for (int k = 0; k < NCACHE; k++) {
			np_fake_os_set_cpu(cpu[k]);
			while (nheld[k])
				np_pcp_put(&c[k], held[k][--nheld[k]]);
			np_pcp_drain(&c[k]);
			np_pcp_fini(&c[k]);
		}
		teardown(NULL);
	}
	if (o)
		fail_msg("memoryless nodes' pages not within 40/60 over nodes 0 and 2:%s", why);
}

static void preferred_policy_targets_the_nearest_of_its_nodes(void **state)
{
	(void)state;
	start("4node", "PCP_BATCH", "4", NULL);
	/* numactl --preferred=2 on a thread of node 0: node 2's memory, counted as a hit there and
	 * as other_node (the thread is on node 0). */
	struct np_topo_policy pol = {.mode = NP_POLICY_PREFERRED, .nodes = 1ULL << 2};
	np_pcp_init(&pcp, 0, st, &pol);
	np_pcp_count_thread(&pcp);
	assert_int_equal(pcp.home, 0);
	assert_int_equal(pcp.target, 2);
	struct np_page *a = np_pcp_get(&pcp, 0, -1);
	assert_int_equal(np_page_node(a), 2);
	assert_int_equal(STAT(2, numa_hit), 1);
	assert_int_equal(STAT(2, other_node), 1);
	assert_int_equal(STAT(0, threads), 1);
	struct np_page *r = np_pcp_get_run(&pcp, 20, 1, -1);
	assert_int_equal(np_page_node(r), 2);
	/* A request naming a node is for that node. */
	struct np_page *b = np_pcp_get(&pcp, 0, 0);
	assert_int_equal(np_page_node(b), 0);
	assert_int_equal(STAT(0, numa_hit), 1);
	assert_int_equal(STAT(0, local_node), 1);
	/* Pages of node 2 are the near ones: freed to the head. */
	np_pcp_put(&pcp, a);
	assert_ptr_equal(pcp.list[0].head, a);
	np_pcp_put(&pcp, b);
	assert_ptr_equal(pcp.list[0].tail, b);
	np_pcp_put_run(&pcp, r);
	check();
	np_pcp_drain(&pcp);
	np_pcp_fini(&pcp);
	/* --preferred-many=1,3: the nearest of them to the home (equidistant: the lowest id),
	 * and the home itself once it is one of them. */
	pol.nodes = (1ULL << 1) | (1ULL << 3);
	np_pcp_init(&pcp, 0, st, &pol);
	np_pcp_count_thread(&pcp);
	assert_int_equal(pcp.target, 1);
	np_pcp_set_home(&pcp, 3);
	assert_int_equal(pcp.target, 3);
	struct np_page *c = np_pcp_get(&pcp, 0, -1);
	assert_int_equal(np_page_node(c), 3);
	np_pcp_put(&pcp, c);
	np_pcp_drain(&pcp);
	np_pcp_fini(&pcp);
	assert_int_equal(pages_in_use_total(), 0);
}

static void interleave_policy_spreads_batches_and_runs(void **state)
{
	(void)state;
	start("4node", "PCP_BATCH", "8", "PCP_HIGH", "512", NULL);
	/* numactl --interleave=all: each batch from the next node, runs too; every page counts
	 * as a hit and an interleave hit where it lands. */
	struct np_topo_policy pol = {.mode = NP_POLICY_INTERLEAVE, .nodes = 0xf};
	np_pcp_init(&pcp, 1, st, &pol);
	np_pcp_count_thread(&pcp);
	assert_int_equal(pcp.near, 0xf);
	static struct np_page *pg[64];
	int per[NP_MAX_NODES] = {0};
	take_own(64, pg, per);
	for (int n = 0; n < 4; n++) {
		assert_int_equal(per[n], 16);
		assert_int_equal(STAT(n, numa_hit), 16);
		assert_int_equal(STAT(n, interleave_hit), 16);
		assert_int_equal(STAT(n, numa_miss), 0);
	}
	assert_int_equal(STAT(1, local_node), 16);
	struct np_page *runs[8];
	int rper[NP_MAX_NODES] = {0};
	for (int i = 0; i < 8; i++) {
		runs[i] = np_pcp_get_run(&pcp, 20, 1, -1);
		rper[np_page_node(runs[i])]++;
	}
	for (int n = 0; n < 4; n++)
		assert_int_equal(rper[n], 2);
	/* A node the program names (numa_page_alloc_onnode) is not the interleave's placement: a
	 * hit there, no interleave hit (a review found them counted as interleave hits). */
	long ih2 = STAT(2, interleave_hit), hit2 = STAT(2, numa_hit);
	struct np_page *named = np_pcp_get(&pcp, 0, 2), *named_run = np_pcp_get_run(&pcp, 20, 1, 2);
	assert_int_equal(np_page_node(named), 2);
	assert_int_equal(np_page_node(named_run), 2);
	assert_int_equal(STAT(2, interleave_hit), ih2);
	assert_int_equal(STAT(2, numa_hit), hit2 + 21);
	np_pcp_put(&pcp, named);
	np_pcp_put_run(&pcp, named_run);
	/* Every node of the interleave is near: all freed to the head. */
	put_all(64, pg);
	for (int n = 0; n < 4; n++)
		assert_int_equal(STAT(n, remote_free), 0);
	for (int i = 0; i < 8; i++)
		np_pcp_put_run(&pcp, runs[i]);
	check();
	np_pcp_drain(&pcp);
	np_pcp_fini(&pcp);
	assert_int_equal(pages_in_use_total(), 0);
}

/* An interleave over {0, 2} with node 0 full: its share comes from node 2, the next node of
 * the set, not from node 1, nearer to 0 but outside the set (it took half the runs and a
 * whole batch: found by a hostile review). Outside the set only when the whole set is full. */
static void interleave_passes_a_full_node_to_the_set(void **state)
{
	(void)state;
	start("4node", "PCP_BATCH", "8", "PCP_HIGH", "512", NULL);
	struct np_topo_policy pol = {.mode = NP_POLICY_INTERLEAVE, .nodes = 0x5};
	np_pcp_init(&pcp, 0, st, &pol);
	np_pcp_count_thread(&pcp);
	long full0 = (long)np_pools[0].limit_pages;
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_in_use, full0);
	static struct np_page *pg[64];
	int per[NP_MAX_NODES] = {0};
	take_own(32, pg, per);
	assert_int_equal(per[2], 32);
	struct np_page *runs[8];
	int rper[NP_MAX_NODES] = {0};
	for (int i = 0; i < 8; i++) {
		runs[i] = np_pcp_get_run(&pcp, 20, 1, -1);
		rper[np_page_node(runs[i])]++;
	}
	assert_int_equal(rper[2], 8);
	for (int n = 0; n < 4; n++)
		if (n != 2)
			assert_int_equal(STAT(n, pages_in_use) - (n == 0 ? full0 : 0), 0);
	assert_int_equal(STAT(2, interleave_hit), 32 + 8 * 20);
	/* The full node named: served by another, which is a miss there and foreign on node 0,
	 * even when the one that served is a node of the interleave. */
	long full1 = (long)np_pools[1].limit_pages, full3 = (long)np_pools[3].limit_pages;
	np_vmstat_add(NULL, 1, NUMA_PAGE_STAT_pages_in_use, full1); /* only node 2 has room */
	np_vmstat_add(NULL, 3, NUMA_PAGE_STAT_pages_in_use, full3);
	long foreign0 = STAT(0, numa_foreign), ih_before = STAT(2, interleave_hit);
	struct np_page *nf = np_pcp_get(&pcp, 0, 0);
	assert_non_null(nf);
	assert_int_equal(np_page_node(nf), 2);
	assert_int_equal(STAT(0, numa_foreign), foreign0 + 1);
	assert_int_equal(STAT(2, numa_miss), 1);
	assert_int_equal(STAT(2, interleave_hit), ih_before);
	np_pcp_put(&pcp, nf);
	np_vmstat_add(NULL, 1, NUMA_PAGE_STAT_pages_in_use, -full1);
	np_vmstat_add(NULL, 3, NUMA_PAGE_STAT_pages_in_use, -full3);
	/* The whole set full: no node of it grows (what their pools hold still serves), the
	 * others may. */
	long full2 = (long)np_pools[2].limit_pages;
	np_vmstat_add(NULL, 2, NUMA_PAGE_STAT_pages_in_use, full2);
	size_t mapped0 = np_pools[0].mapped_pages, mapped2 = np_pools[2].mapped_pages;
	static struct np_page *out[64];
	for (int i = 0; i < 64; i++) {
		out[i] = np_pcp_get_run(&pcp, 200, 1, -1);
		assert_non_null(out[i]);
	}
	assert_int_equal(np_pools[0].mapped_pages, mapped0);
	assert_int_equal(np_pools[2].mapped_pages, mapped2);
	assert_true(STAT(1, pages_in_use) + STAT(3, pages_in_use) > 0);
	for (int i = 0; i < 64; i++)
		np_pcp_put_run(&pcp, out[i]);
	for (int i = 0; i < 8; i++)
		np_pcp_put_run(&pcp, runs[i]);
	put_all(32, pg);
	check();
	np_pcp_drain(&pcp);
	np_pcp_fini(&pcp);
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_in_use, -full0);
	np_vmstat_add(NULL, 2, NUMA_PAGE_STAT_pages_in_use, -full2);
	assert_int_equal(pages_in_use_total(), 0);
}

/* A node nearly full (less than four reserves of room): its new chunks are faulted in and
 * checked page by page when mapped; a node with room is not touched ahead of the program. */
static void nearly_full_node_verifies_new_chunks(void **state)
{
	(void)state;
	start("2node", "PCP_BATCH", "4", NULL);
	np_topo_table.is_system = true;
	np_node_init(&np_topo_table);
	np_fake_os_set_node_avail(np_topo_table.node[0].os_id, (int64_t)1 << 34);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	long pop = np_fake_os_populated();
	struct np_page *a = np_pcp_get(&pcp, 0, -1); /* held: the next long run needs a new chunk */
	assert_int_equal(np_page_node(a), 0);
	assert_int_equal(np_fake_os_populated(), pop); /* plenty of room: nothing faulted in */
	/* Two reserves left (two chunks and 1/64 of the node each): room, but below four. */
	int64_t reserve = (int64_t)(2 * NP_CHUNK_SIZE + np_topo_table.node[0].mem_bytes / 64);
	np_fake_os_set_node_avail(np_topo_table.node[0].os_id, 2 * reserve);
	np_node_init(&np_topo_table);
	struct np_page *big = np_pcp_get_run(&pcp, NP_POOL_MAX_RUN, 1, -1); /* needs a new chunk */
	assert_int_equal(np_page_node(big), 0);
	assert_true(np_pool_is_low(0));
	assert_int_equal(np_fake_os_populated() - pop, (long)(NP_CHUNK_DATA_PAGES * NP_PAGE_SIZE));
	np_pcp_put_run(&pcp, big);
	np_pcp_put(&pcp, a);
	np_topo_table.is_system = false;
	np_pcp_drain(&pcp);
	check();
	np_pcp_fini(&pcp);
}

/* Long runs (over the orders) a thread frees are kept for its next request of the same length,
 * without the pool: up to NP_PCP_RUNS of them, oldest out first; a drain and a re-home give
 * them back. */
static void long_runs_are_kept_for_the_next(void **state)
{
	(void)state;
	start("2node", NULL);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	struct np_page *r = np_pcp_get_run(&pcp, 64, 1, -1);
	size_t free0 = np_pool_free_pages(0);
	np_pcp_put_run(&pcp, r);
	assert_int_equal(np_page_state(r), NP_PAGE_PCP);
	assert_int_equal(np_pool_free_pages(0), free0); /* not back in the pool */
	assert_int_equal(STAT(0, pages_in_use), 0);
	check();
	struct np_page *again = np_pcp_get_run(&pcp, 64, 1, -1);
	assert_ptr_equal(again, r);
	assert_int_equal(np_page_state(again), NP_PAGE_USED);
	assert_int_equal(STAT(0, pages_in_use), 64);
	assert_int_equal(STAT(0, numa_hit), 64 + 64);
	/* One more than it keeps: the older half goes back to the pool (in one lock hold). */
	struct np_page *k[NP_PCP_RUNS + 1];
	for (int i = 0; i <= NP_PCP_RUNS; i++)
		k[i] = np_pcp_get_run(&pcp, 20 + (size_t)i, 1, -1);
	assert_int_equal(pcp.nruns, 0); /* lengths that change: one run per request */
	for (int i = 0; i <= NP_PCP_RUNS; i++)
		np_pcp_put_run(&pcp, k[i]);
	assert_int_equal(pcp.nruns, NP_PCP_RUNS / 2 + 1);
	for (int i = 0; i <= NP_PCP_RUNS; i++)
		assert_int_equal(np_page_state(k[i]), i < NP_PCP_RUNS / 2 ? NP_PAGE_FREE : NP_PAGE_PCP);
	check();
	/* A request of a length none has gives them all back (random lengths: keeping them would
	 * only stop the pool merging them), and comes from the pool. */
	struct np_page *other = np_pcp_get_run(&pcp, 50, 1, -1);
	assert_int_equal(pcp.nruns, 0);
	np_pcp_put_run(&pcp, other);
	for (int i = 1; i <= NP_PCP_RUNS; i++)
		k[i] = np_pcp_get_run(&pcp, 20 + (size_t)i, 1, -1);
	for (int i = 1; i <= NP_PCP_RUNS; i++)
		np_pcp_put_run(&pcp, k[i]);
	assert_int_equal(pcp.nruns, NP_PCP_RUNS);
	check();
	/* Runs longer than half the limit are never kept. */
	struct np_page *big = np_pcp_get_run(&pcp, NP_PCP_RUN_PAGES / 2 + 1, 1, -1);
	np_pcp_put_run(&pcp, big);
	assert_int_equal(pcp.nruns, 0);
	for (int i = 1; i < 3; i++) {
		k[i] = np_pcp_get_run(&pcp, 20 + (size_t)i, 1, -1);
		np_pcp_put_run(&pcp, k[i]);
	}
	assert_true(pcp.nruns >= 1);
	/* A re-home gives them back; so does a drain. */
	np_pcp_set_home(&pcp, 1);
	assert_int_equal(pcp.nruns, 0);
	check();
	np_pcp_set_home(&pcp, 0);
	np_pcp_put_run(&pcp, again);
	assert_int_equal(pcp.nruns, 1);
	np_pcp_drain(&pcp);
	assert_int_equal(pcp.nruns, 0);
	assert_int_equal(pcp.run_pages, 0);
	check();
	assert_int_equal(pages_in_use_total(), 0);
	np_pcp_fini(&pcp);
}

/* A length asked for twice in a row while none is kept comes in a batch of NP_PCP_RUNS / 2
 * runs, one lock hold: one for the request, the rest kept for the next ones. */
static void repeated_lengths_come_in_batches(void **state)
{
	(void)state;
	start("2node", NULL);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	struct np_page *r[NP_PCP_RUNS / 2 + 1];
	r[0] = np_pcp_get_run(&pcp, 64, 1, -1);
	assert_int_equal(pcp.nruns, 0); /* the first miss: one run */
	size_t free0 = np_pool_free_pages(0);
	r[1] = np_pcp_get_run(&pcp, 64, 1, -1);
	assert_int_equal(pcp.nruns, NP_PCP_RUNS / 2 - 1);
	assert_int_equal(np_pool_free_pages(0), free0 - 64 * (NP_PCP_RUNS / 2));
	assert_int_equal(STAT(0, pages_in_use), 2 * 64); /* the kept ones are not in use */
	check();
	for (int i = 2; i <= NP_PCP_RUNS / 2; i++) {
		r[i] = np_pcp_get_run(&pcp, 64, 1, -1);
		assert_int_equal(np_page_state(r[i]), NP_PAGE_USED);
		for (int j = 0; j < i; j++)
			assert_ptr_not_equal(r[i], r[j]);
	}
	assert_int_equal(pcp.nruns, 0);
	assert_int_equal(STAT(0, pages_in_use), 64 * (NP_PCP_RUNS / 2 + 1));
	assert_int_equal(STAT(0, numa_hit), 64 * (NP_PCP_RUNS / 2 + 1));
	check();
	/* A run longer than the cache keeps never comes in a batch. */
	struct np_page *big[2];
	for (int i = 0; i < 2; i++)
		big[i] = np_pcp_get_run(&pcp, NP_PCP_RUN_PAGES / 2 + 1, 1, -1);
	assert_int_equal(pcp.nruns, 0);
	for (int i = 0; i < 2; i++)
		np_pcp_put_run(&pcp, big[i]);
	for (int i = 0; i <= NP_PCP_RUNS / 2; i++)
		np_pcp_put_run(&pcp, r[i]);
	np_pcp_drain(&pcp);
	assert_int_equal(pcp.nruns, 0);
	assert_int_equal(pages_in_use_total(), 0);
	check();
	np_pcp_fini(&pcp);
}

/* A request that names the node the thread was homed on is for that node after a re-home. */
static void explicit_old_home_after_rehome(void **state)
{
	(void)state;
	start("2node", "PCP_BATCH", "4", NULL);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	np_pcp_set_home(&pcp, 1);
	struct np_page *r = np_pcp_get_run(&pcp, 20, 1, 0);
	assert_int_equal(np_page_node(r), 0);
	assert_int_equal(STAT(0, numa_hit), 20);
	assert_int_equal(STAT(0, other_node), 20);
	struct np_page *a = np_pcp_get(&pcp, 0, 0);
	assert_int_equal(np_page_node(a), 0);
	struct np_page *b = np_pcp_get(&pcp, 0, -1); /* unnamed: the new home */
	assert_int_equal(np_page_node(b), 1);
	assert_int_equal(STAT(1, local_node), 1);
	np_pcp_put_run(&pcp, r);
	np_pcp_put(&pcp, a);
	np_pcp_put(&pcp, b);
	check();
	np_pcp_drain(&pcp);
	assert_int_equal(pages_in_use_total(), 0);
	np_pcp_fini(&pcp);
}

/* A node the kernel filled: its new chunk's pages land elsewhere (MPOL_PREFERRED spills). The
 * chunk is given back, the node is passed over, and the pages come from the next node,
 * counted as a miss there and foreign on the full node. */
static void spilled_chunk_moves_the_request_on(void **state)
{
	(void)state;
	start("2node", "PCP_BATCH", "4", NULL);
	np_topo_table.is_system = true;
	np_fake_os_spill(np_topo_table.node[0].os_id, np_topo_table.node[1].os_id);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	long maps = np_fake_os_maps(), unmaps = np_fake_os_unmaps();
	struct np_page *a = np_pcp_get(&pcp, 0, -1);
	assert_int_equal(np_page_node(a), 1);
	assert_int_equal(np_pools[0].mapped_pages, 0);
	assert_int_equal(np_fake_os_maps() - maps, 2);     /* node 0's chunk, then node 1's */
	assert_int_equal(np_fake_os_unmaps() - unmaps, 1); /* node 0's, given back */
	assert_int_equal(STAT(1, numa_miss), 1);
	assert_int_equal(STAT(0, numa_foreign), 1);
	/* The node is passed over for a while without asking the kernel again. */
	np_pcp_put(&pcp, a);
	np_pcp_drain(&pcp);
	maps = np_fake_os_maps();
	struct np_page *b = np_pcp_get(&pcp, 0, -1);
	assert_int_equal(np_page_node(b), 1);
	assert_int_equal(np_fake_os_maps(), maps); /* node 1's chunk has room */
	np_pcp_put(&pcp, b);
	np_pcp_drain(&pcp);
	np_fake_os_spill(np_topo_table.node[0].os_id, -1);
	np_topo_table.is_system = false;
	check();
	np_pcp_fini(&pcp);
}

/* On this machine the room is what the kernel says the node has: a node with less than a
 * batch plus its reserve is passed over before anything is mapped there. */
static void node_without_room_is_passed_over(void **state)
{
	(void)state;
	start("2node", "PCP_BATCH", "4", NULL);
	np_topo_table.is_system = true;
	np_node_init(&np_topo_table); /* reserves are for this machine's nodes */
	np_fake_os_set_node_avail(np_topo_table.node[0].os_id, 1 << 20); /* 1 MiB: below the reserve */
	np_fake_os_set_node_avail(np_topo_table.node[1].os_id, (int64_t)1 << 34);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	struct np_page *a = np_pcp_get(&pcp, 0, -1);
	assert_int_equal(np_page_node(a), 1);
	assert_int_equal(np_pools[0].mapped_pages, 0);
	assert_int_equal(STAT(1, numa_miss), 1);
	/* Asked again only every so often while full. */
	long reads = np_fake_os_avail_reads();
	np_pcp_put(&pcp, a);
	np_pcp_drain(&pcp);
	for (int i = 0; i < 10; i++) {
		struct np_page *b = np_pcp_get(&pcp, 0, -1);
		np_pcp_put(&pcp, b);
		np_pcp_drain(&pcp);
	}
	assert_true(np_fake_os_avail_reads() - reads <= 2);
	/* Every node full: the home serves after all (the kernel decides), no failure. */
	np_fake_os_set_node_avail(np_topo_table.node[1].os_id, 1 << 20);
	np_node_init(&np_topo_table);
	struct np_page *big = np_pcp_get_run(&pcp, NP_POOL_MAX_RUN, 1, -1);
	assert_non_null(big);
	np_pcp_put_run(&pcp, big);
	np_topo_table.is_system = false;
	np_pcp_drain(&pcp);
	check();
	np_pcp_fini(&pcp);
}

static void rehoming_resorts_the_lists(void **state)
{
	(void)state;
	start("2node", "PCP_BATCH", "64", NULL);
	int t0 = np_pcp_threads[0], t1 = np_pcp_threads[1];
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	struct np_page *loc[6], *rem[6];
	take(0, 6, loc);
	take(1, 6, rem);
	for (int i = 0; i < 6; i++) {
		np_pcp_put(&pcp, loc[i]);
		np_pcp_put(&pcp, rem[i]);
	}
	check();
	for (int i = 0; i < 6; i++)
		assert_true(position(loc[i]) < 6 && position(rem[i]) >= 6);
	np_pcp_set_home(&pcp, 1);
	check();
	for (int i = 0; i < 6; i++)
		assert_true(position(rem[i]) < 6 && position(loc[i]) >= 6);
	assert_int_equal(pcp.count, 12);
	assert_int_equal(np_pcp_threads[1], t1 + 1);
	assert_int_equal(np_pcp_threads[0], t0);
	np_pcp_drain(&pcp);
	np_pcp_fini(&pcp);
	assert_int_equal(np_pcp_threads[1], t1);
}

/* ---- randomized ---------------------------------------------------------------------------- */

static void randomized_invariants(void **state)
{
	(void)state;
	start("2990wx", "PCP_BATCH", "8", "PCP_HIGH", "40", "PURGE_MB", "1", NULL);
	np_pcp_init(&pcp, 1, st, NULL);
	np_pcp_count_thread(&pcp);
	enum { MAX_HELD = 256, STEPS = 4000 };
	static struct np_page *held[MAX_HELD];
	int nheld = 0;
	srand48(7);
	for (int step = 0; step < STEPS; step++) {
		long op = lrand48() % 16;
		if (op < 7 && nheld < MAX_HELD) {
			unsigned order = (unsigned)(lrand48() % NP_PCP_ORDERS);
			int node = lrand48() % 4 ? -1 : (int)(lrand48() % 4);
			struct np_page *pg = np_pcp_get(&pcp, order, node);
			assert_non_null(pg);
			assert_int_equal(pg->state, NP_PAGE_USED);
			assert_int_equal(pg->npages, 1u << order);
			*(uint64_t *)np_page_addr(pg) = (uintptr_t)pg;
			held[nheld++] = pg;
		} else if (op < 8 && nheld < MAX_HELD) {
			size_t len = 1 + (size_t)(lrand48() % 40);
			struct np_page *pg = np_pcp_get_run(&pcp, len, 1, lrand48() % 2 ? -1 : (int)(lrand48() % 4));
			assert_non_null(pg);
			*(uint64_t *)np_page_addr(pg) = (uintptr_t)pg;
			held[nheld++] = pg;
		} else if (op < 14 && nheld > 0) {
			int i = (int)(lrand48() % nheld);
			struct np_page *pg = held[i];
			held[i] = held[--nheld];
			assert_int_equal(*(uint64_t *)np_page_addr(pg), (uintptr_t)pg);
			if (pg->order < NP_PCP_ORDERS)
				np_pcp_put(&pcp, pg);
			else
				np_pcp_put_run(&pcp, pg);
		} else if (lrand48() % 8 == 0) {
			np_pcp_drain(&pcp);
		} else {
			np_pcp_set_home(&pcp, (int)(lrand48() % 4));
		}
		check();
		/* Puts drain at high; refills may overshoot it by a batch per order, no more. */
		assert_true(pcp.count < pcp.high + NP_PCP_ORDERS * NP_MAX(pcp.batch, 16));
	}
	while (nheld > 0) {
		struct np_page *pg = held[--nheld];
		if (pg->order < NP_PCP_ORDERS)
			np_pcp_put(&pcp, pg);
		else
			np_pcp_put_run(&pcp, pg);
	}
	np_pcp_drain(&pcp);
	check();
	assert_int_equal(pages_in_use_total(), 0);
	for (int n = 0; n < 4; n++)
		if (np_pools[n].exists)
			assert_int_equal(np_pool_free_pages(n), np_pools[n].mapped_pages);
	np_pcp_fini(&pcp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(local_free_is_next_out, teardown),
		cmocka_unit_test_teardown(remote_free_goes_to_tail_and_waits, teardown),
		cmocka_unit_test_teardown(remote_leaves_first_on_overflow, teardown),
		cmocka_unit_test_teardown(refill_and_drain_batch_sizes, teardown),
		cmocka_unit_test_teardown(batch_defaults_and_bounds, teardown),
		cmocka_unit_test_teardown(fallback_of_every_fixture_node, teardown),
		cmocka_unit_test_teardown(named_fallbacks, teardown),
		cmocka_unit_test_teardown(exhausted_home_falls_through_without_hoarding, teardown),
		cmocka_unit_test_teardown(explicit_node_bypasses_the_cache, teardown),
		cmocka_unit_test_teardown(memoryless_home_shares_its_group_in_turn, teardown),
		cmocka_unit_test_teardown(memoryless_pages_balance, teardown),
		cmocka_unit_test_teardown(preferred_policy_targets_the_nearest_of_its_nodes, teardown),
		cmocka_unit_test_teardown(interleave_policy_spreads_batches_and_runs, teardown),
		cmocka_unit_test_teardown(interleave_passes_a_full_node_to_the_set, teardown),
		cmocka_unit_test_teardown(spilled_chunk_moves_the_request_on, teardown),
		cmocka_unit_test_teardown(node_without_room_is_passed_over, teardown),
		cmocka_unit_test_teardown(nearly_full_node_verifies_new_chunks, teardown),
		cmocka_unit_test_teardown(explicit_old_home_after_rehome, teardown),
		cmocka_unit_test_teardown(long_runs_are_kept_for_the_next, teardown),
		cmocka_unit_test_teardown(repeated_lengths_come_in_batches, teardown),
		cmocka_unit_test_teardown(rehoming_resorts_the_lists, teardown),
		cmocka_unit_test_teardown(randomized_invariants, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
