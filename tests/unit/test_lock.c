/*
 * Unit tests of src/lock.h, the ranked locks: in debug builds (debug_level >= 2) taking locks
 * in rank order, and per-node locks of one rank in node order, works; taking a lock of a lower
 * rank, or of the same rank at a lower or equal index, while holding one aborts with "lock
 * order broken"; a _locked function called without its lock aborts; re-creating a lock (fork
 * child) forgets it was held. In other builds the checks compile away: the test then checks
 * that the same misuse does not abort. Aborting cases run in child processes. The locks fork
 * takes share a page.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "lock.h"
#include "unit_child.h"

static struct np_lock place = NP_LOCK_INITIALIZER(NP_LOCK_RANK_PLACE, 0);
static struct np_lock threads = NP_LOCK_INITIALIZER(NP_LOCK_RANK_THREADS, 0);
static struct np_lock pool[3];

static int setup(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++)
		np_lock_init(&pool[i], NP_LOCK_RANK_POOL, i, true);
	return 0;
}

static void in_order_is_fine(void **state)
{
	(void)state;
	np_lock(&place);
	np_lock(&threads);
	for (int i = 0; i < 3; i++)
		np_lock(&pool[i]);
	np_assert_locked(&pool[1]);
	for (int i = 2; i >= 0; i--)
		np_unlock(&pool[i]);
	np_unlock(&threads);
	np_unlock(&place);
	/* Released in any order, taken again. */
	np_lock(&threads);
	np_lock(&pool[0]);
	np_unlock(&threads);
	np_unlock(&pool[0]);
	for (int r = 0; r < NP_LOCK_RANKS; r++)
		assert_int_equal(np_lock_held[r], 0);
}

static void lower_rank_inside(void)
{
	np_lock(&pool[0]);
	np_lock(&threads); /* a pool lock is innermost */
}

static void same_rank_backwards(void)
{
	np_lock(&pool[1]);
	np_lock(&pool[0]);
}

static void same_lock_twice(void)
{
	np_lock(&pool[2]);
	np_trylock(&pool[2]);
}

static void locked_without_lock(void)
{
	np_assert_locked(&pool[1]);
}

static void reinit_forgets(void)
{
	np_lock(&pool[2]);
	np_lock_init(&pool[2], NP_LOCK_RANK_POOL, 2, true); /* as a fork child does */
	np_lock(&pool[0]);                                  /* fine: nothing is held */
	np_unlock(&pool[0]);
	if (np_lock_held[NP_LOCK_RANK_POOL])
		abort();
}

static void order_is_enforced(void **state)
{
	(void)state;
	bool checked = np_config_debug >= 2;
	assert_int_equal(np_test_aborts_with(lower_rank_inside, "lock order broken"), checked);
	assert_int_equal(np_test_aborts_with(same_rank_backwards, "lock order broken"), checked);
	assert_int_equal(np_test_aborts_with(locked_without_lock, "called without its lock"), checked);
	if (checked)
		assert_true(np_test_aborts_with(same_lock_twice, "lock order broken"));
	assert_false(np_test_aborts_with(reinit_forgets, NULL));
}

/* The locks fork takes lie on one page (lock.h): the parent's unlocks after a fork and the
 * child's re-creations each copy every page they lie on. The fixed ones are that page's, with
 * their ranks, and np_lock_new hands out its slots first, a line each, set up as asked; past
 * them, locks of their own lines elsewhere. */
static void fork_locks_share_one_page(void **state)
{
	(void)state;
	uintptr_t page = (uintptr_t)&np_lock_page;
	assert_int_equal(page % 4096, 0);
	assert_int_equal(np_lock_rank(&np_lock_page.place), NP_LOCK_RANK_PLACE);
	assert_int_equal(np_lock_rank(&np_lock_page.vmstat), NP_LOCK_RANK_VMSTAT);
	assert_int_equal(np_lock_rank(&np_lock_page.threads), NP_LOCK_RANK_THREADS);
	assert_true((uintptr_t)&np_lock_page.bootstrap - page < 4096);
	uintptr_t last = 0;
	for (int k = 0; k < NP_LOCK_PAGE_SLOTS + 2; k++) {
		struct np_lock *l = np_lock_new(NP_LOCK_RANK_POOL, k % 64, true);
		uintptr_t a = (uintptr_t)l;
		assert_int_equal(a % NP_CACHELINE, 0);
		assert_true(a >= last + NP_CACHELINE || k == NP_LOCK_PAGE_SLOTS);
		assert_int_equal(a - page < 4096, k < NP_LOCK_PAGE_SLOTS);
		assert_int_equal(l->rank, NP_LOCK_RANK_POOL);
		assert_int_equal(l->index, k % 64);
		np_lock(l);
		np_unlock(l);
		last = a;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(in_order_is_fine),
		cmocka_unit_test(order_is_enforced),
		cmocka_unit_test(fork_locks_share_one_page),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
