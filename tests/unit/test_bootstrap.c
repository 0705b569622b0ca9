/*
 * Unit tests of src/malloc/bootstrap.c, the allocator that serves mallocs made while the
 * allocator initialises: blocks are usable, aligned and distinct; a freed block is reused
 * (300,000 malloc/free pairs used to exhaust the old arena, issue 13); large and very aligned
 * blocks get mappings of their own that go back when freed; nothing is capped; ownership is
 * exact (block starts only, never a freed block); a second free and an interior pointer abort.
 * Aborting cases run in child processes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "malloc/bootstrap.h"
#include "unit_child.h"

static void blocks_are_usable_aligned_and_distinct(void **state)
{
	(void)state;
	enum { N = 200 };
	static unsigned char *p[N];
	static size_t n[N];
	for (int i = 0; i < N; i++) {
		n[i] = (size_t)(i * 37) % 5000;
		size_t align = (size_t)16 << (i % 9); /* 16 .. 4096 */
		p[i] = np_bootstrap_alloc(n[i], align);
		assert_non_null(p[i]);
		assert_int_equal((uintptr_t)p[i] % align, 0);
		assert_true(np_bootstrap_owns(p[i]));
		assert_true(np_bootstrap_size(p[i]) >= n[i]);
		memset(p[i], i & 0xff, n[i]);
	}
	for (int i = 0; i < N; i++) {
		for (size_t k = 0; k < n[i]; k++)
			assert_int_equal(p[i][k], i & 0xff);
		assert_true(np_bootstrap_free(p[i]));
		assert_false(np_bootstrap_owns(p[i]));
	}
	assert_null(np_bootstrap_check());
}

static void freed_blocks_are_reused(void **state)
{
	(void)state;
	size_t before = np_bootstrap_used();
	void *first = np_bootstrap_alloc(256, 16);
	assert_true(np_bootstrap_free(first));
	for (int i = 0; i < 300000; i++) {
		void *q = np_bootstrap_alloc(256, 16);
		assert_ptr_equal(q, first); /* the class's free list hands the same block back */
		assert_true(np_bootstrap_free(q));
	}
	assert_int_equal(np_bootstrap_used(), before);
	assert_null(np_bootstrap_check());
}

static void large_blocks_are_mapped_and_returned(void **state)
{
	(void)state;
	size_t before = np_bootstrap_used();
	/* Far past the static arena: nothing is capped. */
	enum { N = 40 };
	void *big[N];
	for (int i = 0; i < N; i++) {
		big[i] = np_bootstrap_alloc((size_t)1 << 20, 16);
		assert_non_null(big[i]);
		memset(big[i], 0x5a, (size_t)1 << 20);
	}
	void *aligned = np_bootstrap_alloc(100, (size_t)1 << 20);
	assert_non_null(aligned);
	assert_int_equal((uintptr_t)aligned % ((size_t)1 << 20), 0);
	assert_true(np_bootstrap_used() >= before + N * ((size_t)1 << 20));
	for (int i = 0; i < N; i++) {
		assert_true(np_bootstrap_free(big[i]));
		assert_false(np_bootstrap_owns(big[i])); /* its region is gone */
	}
	assert_true(np_bootstrap_free(aligned));
	assert_int_equal(np_bootstrap_used(), before);
}

static void foreign_memory_is_not_claimed(void **state)
{
	(void)state;
	char stack[64] = {0};
	assert_false(np_bootstrap_owns(stack));
	assert_false(np_bootstrap_free(stack));
	void *p = np_bootstrap_alloc(64, 16);
	assert_false(np_bootstrap_owns((char *)p + 16)); /* interior */
	assert_true(np_bootstrap_free(p));
}

static void free_twice(void)
{
	void *p = np_bootstrap_alloc(64, 16);
	np_bootstrap_free(p);
	np_bootstrap_free(p);
}

static void free_interior(void)
{
	char *p = np_bootstrap_alloc(256, 16);
	np_bootstrap_free(p + 32);
}

static void misuse_aborts(void **state)
{
	(void)state;
	assert_true(np_test_aborts_with(free_twice, "free: double free of"));
	assert_true(np_test_aborts_with(free_interior, "free: invalid pointer (not the start of a block)"));
}

/* After start-up (np_init calls it), once every block is freed: the allocator starts afresh and
 * the arena's touched pages go back; while a block lives, nothing is done. */
static void release_gives_the_arena_back(void **state)
{
	(void)state;
	assert_int_equal(np_bootstrap_used(), 0);
	char *live = np_bootstrap_alloc(100, 16);
	assert_non_null(live);
	memset(live, 1, 100);
	assert_int_equal(np_bootstrap_release(), 0); /* a live block */
	assert_true(np_bootstrap_owns(live));
	assert_int_equal(live[99], 1);
	assert_true(np_bootstrap_free(live));
	size_t bytes = np_bootstrap_release();
	assert_true(bytes >= 4096 && bytes % 4096 == 0);
	assert_int_equal(np_bootstrap_state(live), NP_BOOT_NONE);
	assert_null(np_bootstrap_check());
	assert_int_equal(np_bootstrap_release(), 0); /* nothing left to give */
	char *again = np_bootstrap_alloc(100, 16);
	assert_non_null(again);
	memset(again, 2, 100);
	assert_true(np_bootstrap_owns(again));
	assert_true(np_bootstrap_free(again));
	assert_null(np_bootstrap_check());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(blocks_are_usable_aligned_and_distinct),
		cmocka_unit_test(freed_blocks_are_reused),
		cmocka_unit_test(large_blocks_are_mapped_and_returned),
		cmocka_unit_test(foreign_memory_is_not_claimed),
		cmocka_unit_test(misuse_aborts),
		cmocka_unit_test(release_gives_the_arena_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
