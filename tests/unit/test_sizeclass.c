/*
 * Unit tests of src/malloc/sizeclass.{h,c}: every small size gets the smallest class that holds
 * it, through the table (up to 2 KiB) and the formula (above), and the class sizes keep the
 * promised steps and waste. And the block-offset test of slab.h, which free() relies on to
 * refuse pointers that are not the start of a block, against plain division for every class.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>

#include "malloc/sizeclass.h"
#include "malloc/slab.h"

static void every_size_gets_the_smallest_class_that_fits(void **state)
{
	(void)state;
	unsigned prev = 0;
	for (size_t size = 0; size <= NP_SMALL_MAX; size++) {
		unsigned c = np_size_class(size);
		assert_true(c < NP_NCLASSES);
		assert_true(np_class_size[c] >= (size ? size : 1));
		if (c > 0)
			assert_true(np_class_size[c - 1] < size);
		assert_true(c >= prev); /* monotonic, also across the table's end */
		prev = c;
	}
	assert_int_equal(np_size_class(0), 0);
	assert_int_equal(np_size_class(NP_TABLE_MAX), np_size_class(NP_TABLE_MAX - 1));
	assert_int_equal(np_size_class(NP_TABLE_MAX + 1), np_size_class(NP_TABLE_MAX) + 1);
	assert_int_equal(np_size_class(NP_SMALL_MAX), NP_NCLASSES - 1);
}

static void class_sizes_step_as_documented(void **state)
{
	(void)state;
	for (unsigned c = 0; c < NP_NCLASSES; c++) {
		uint32_t size = np_class_size[c];
		if (c < 8) {
			assert_int_equal(size, 16 * (c + 1));
			continue;
		}
		/* Four per doubling, eight from 4 KiB to 8 KiB: size - previous = a quarter (an
		 * eighth) of the power of two below. */
		uint32_t prev = np_class_size[c - 1];
		uint32_t pow = 1u << (31 - __builtin_clz(prev));
		uint32_t per = prev >= 4096 && size <= 8192 ? 8 : 4;
		assert_int_equal(size - prev, pow / per);
		assert_true((uint64_t)(size - (prev + 1)) * per <= (uint64_t)(prev + 1)); /* waste under 1/per */
		assert_int_equal(size % 16, 0); /* every block 16-aligned */
		assert_true(np_class_slab_bytes(c) >= 8u * size);
		assert_int_equal(np_class_slab_bytes(c) % (64u << 10), 0);
	}
	/* A page and a header (sqlite's page cache: 4,096 + 272 bytes) wastes at most 1/8. */
	assert_int_equal(np_class_size[np_size_class(4096 + 272)], 4608);
	assert_int_equal(np_class_size[np_size_class(4096 + 1)], 4608);
	assert_int_equal(np_class_size[np_size_class(2048 + 16)], 2560);
	assert_int_equal(np_class_size[np_size_class(8192 + 16)], 10240);
	assert_int_equal(np_class_size[NP_NCLASSES - 1], NP_SMALL_MAX);
}

static void block_indices_match_division(void **state)
{
	(void)state;
	for (unsigned c = 0; c < NP_NCLASSES; c++) {
		struct np_slab s = {0};
		uint32_t block = np_class_size[c];
		uint32_t cap = (uint32_t)(np_class_slab_bytes(c) / block);
		np_slab_set_block(&s, block, cap);
		s.start = (uintptr_t)1 << 40; /* where the slab would start */
		/* Every offset of the run and a run's worth past it: the block's index, or above
		 * the limit. */
		for (uint64_t off = 0; off < 2 * np_class_slab_bytes(c); off++) {
			bool want = off % block == 0 && off / block < cap;
			uint64_t i = np_slab_index(&s, s.start + off);
			if ((i < s.end) != want || (want && i != off / block))
				fail_msg("class %u (block %u): offset %llu gave index %llu", c, block,
					 (unsigned long long)off, (unsigned long long)i);
			if (want)
				assert_int_equal(np_slab_block(&s, i), s.start + off);
		}
		/* Addresses that alias a block in 32 bits, far before or after the slab. */
		assert_false(np_slab_is_block(&s, s.start + ((uint64_t)1 << 32) + block));
		assert_false(np_slab_is_block(&s, s.start - block));
		assert_false(np_slab_is_block(&s, s.start + (uint64_t)cap * block));
		assert_false(np_slab_is_block(&s, 0));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_size_gets_the_smallest_class_that_fits),
		cmocka_unit_test(class_sizes_step_as_documented),
		cmocka_unit_test(block_indices_match_division),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
