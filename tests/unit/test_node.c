/*
 * Unit tests of src/node/: which node serves a request. First choices (memoryless nodes dealt
 * their equidistant group's members in turn), the CPUs each pool serves, stealing within the
 * group by free pages per CPU (DragonFly BSD's fix) on the 2990WX and R7425 fixtures, near
 * masks, and np_node_walk: the picked pool first, then the fallback order, each node once,
 * stopping at the first that serves, and only near nodes when asked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>

#include "fake_os.h"
#include "node/node.h"
#include "pool/pool.h"
#include "unit_fixture.h"
#include "topology/topology.h"

static void start(const char *fixture, ...)
{
	va_list ap;
	va_start(ap, fixture);
	np_test_start_fixture(fixture, ap);
	va_end(ap);
}

static int teardown(void **state)
{
	(void)state;
	np_test_unmap_pools();
	np_fake_os_reset();
	return 0;
}

/* Fills pool `node` with `pages` free pages (maps what it needs). */
static void fill(int node, size_t pages)
{
	struct np_page *r = np_pool_get_run(node, pages, 1, NULL);
	assert_non_null(r);
	np_pool_put_run(r, NULL);
}

static void pick_on_2990wx(void **state)
{
	(void)state;
	start("2990wx", NULL);
	/* Memoryless 1 and 3 are dealt the two equidistant memory nodes in turn. */
	assert_int_equal(np_node_primary(0), 0);
	assert_int_equal(np_node_primary(1), 0);
	assert_int_equal(np_node_primary(2), 2);
	assert_int_equal(np_node_primary(3), 2);
	assert_int_equal(np_node_cpus_served(0), 4);
	assert_int_equal(np_node_cpus_served(2), 4);
	unsigned rotor = 0;
	bool stolen = true;
	/* Both empty: nobody is above average, stay home. */
	assert_int_equal(np_node_pick(1, &rotor, &stolen), 0);
	assert_false(stolen);
	/* Pool 2 full, pool 0 empty: node 1 steals from 2; node 3 is at home in 2. */
	fill(2, NP_CHUNK_DATA_PAGES);
	assert_int_equal(np_node_pick(1, &rotor, &stolen), 2);
	assert_true(stolen);
	assert_int_equal(np_node_pick(3, &rotor, &stolen), 2);
	assert_false(stolen);
	/* Memory nodes never steal: they are their own group. */
	assert_int_equal(np_node_pick(0, &rotor, &stolen), 0);
	assert_false(stolen);
	/* Pool 0 at or above the average: node 1 stays home. */
	fill(0, NP_CHUNK_DATA_PAGES);
	assert_int_equal(np_node_pick(1, &rotor, &stolen), 0);
	assert_false(stolen);
	/* Pool 2 below average now: node 3 steals from 0. */
	struct np_page *r = np_pool_get_run(2, 900, 1, NULL);
	assert_int_equal(np_node_pick(3, &rotor, &stolen), 0);
	assert_true(stolen);
	np_pool_put_run(r, NULL);
}

static void pick_on_r7425(void **state)
{
	(void)state;
	start("r7425", NULL);
	/* Each memoryless node has one nearest memory node: no choice, no stealing. */
	const int want[8] = {1, 1, 1, 1, 5, 5, 5, 5};
	fill(5, NP_CHUNK_DATA_PAGES);
	for (int n = 0; n < 8; n++) {
		unsigned rotor = 0;
		bool stolen = true;
		assert_int_equal(np_node_primary(n), want[n]);
		assert_int_equal(np_node_pick(n, &rotor, &stolen), want[n]);
		assert_false(stolen);
	}
}


static void served_cpus_and_near_masks(void **state)
{
	(void)state;
	start("r7425", NULL);
	/* Every CPU is served by the pool nearest its node: 4 each. */
	assert_int_equal(np_node_cpus_served(1), 4);
	assert_int_equal(np_node_cpus_served(5), 4);
	assert_int_equal(np_node_cpus_served(0), 0);
	/* A memory node is near itself only; a memoryless one, its nearest memory node. */
	assert_int_equal(np_node_near(1), 1ULL << 1);
	assert_int_equal(np_node_near(0), 1ULL << 1);
	assert_int_equal(np_node_near(6), 1ULL << 5);
	start("2990wx", NULL);
	assert_int_equal(np_node_near(1), (1ULL << 0) | (1ULL << 2));
	assert_int_equal(np_node_near(2), 1ULL << 2);
}

/* A walk's tries in order; the try succeeds at node `accept` (-1: never). */
struct log {
	int tried[64];
	bool stolen[64];
	int n, accept;
};

static bool record(int node, bool stolen, void *arg)
{
	struct log *l = arg;
	l->stolen[l->n] = stolen;
	l->tried[l->n++] = node;
	return node == l->accept;
}

static void walk_orders_every_node_once(void **state)
{
	(void)state;
	start("4node", NULL);
	/* Node 2's fallback: itself, then 0, 1, 3 (equidistant, by id). */
	struct log l = {.accept = -1};
	assert_int_equal(np_node_walk(2, 0, NULL, record, &l), -1);
	int want[] = {2, 0, 1, 3};
	assert_int_equal(l.n, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(l.tried[i], want[i]);
	/* It stops at the first that serves. */
	l = (struct log){.accept = 1};
	assert_int_equal(np_node_walk(2, 0, NULL, record, &l), 1);
	assert_int_equal(l.n, 3);
	/* Near only: a memory node is near itself alone. */
	l = (struct log){.accept = -1};
	unsigned rotor = 0;
	assert_int_equal(np_node_walk(2, NP_WALK_PICK | NP_WALK_NEAR_ONLY, &rotor, record, &l), -1);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.tried[0], 2);
}

static void walk_tries_the_picked_pool_first(void **state)
{
	(void)state;
	start("2990wx", NULL);
	fill(2, NP_CHUNK_DATA_PAGES); /* pool 0 empty, pool 2 full: node 1 steals from 2 */
	struct log l = {.accept = -1};
	unsigned rotor = 0;
	assert_int_equal(np_node_walk(1, NP_WALK_PICK, &rotor, record, &l), -1);
	/* The picked pool first (stolen), then node 1's fallback without it: 0, then 2 no more. */
	assert_int_equal(l.n, 2);
	assert_int_equal(l.tried[0], 2);
	assert_true(l.stolen[0]);
	assert_int_equal(l.tried[1], 0);
	assert_false(l.stolen[1]);
	/* Without NP_WALK_PICK the fallback order alone: 0 then 2 (ties by id). */
	l = (struct log){.accept = -1};
	np_node_walk(1, 0, NULL, record, &l);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.tried[0], 0);
	assert_int_equal(l.tried[1], 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(pick_on_2990wx, teardown),
		cmocka_unit_test_teardown(pick_on_r7425, teardown),
		cmocka_unit_test_teardown(served_cpus_and_near_masks, teardown),
		cmocka_unit_test_teardown(walk_orders_every_node_once, teardown),
		cmocka_unit_test_teardown(walk_tries_the_picked_pool_first, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
