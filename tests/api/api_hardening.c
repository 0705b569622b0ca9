/*
 * api_hardening.c — a heap bug in the program never turns into a wild write by the allocator
 * (issue 13). Writes into freed blocks (the everyday use after free `n->next = NULL`, a
 * one-byte overflow into a freed neighbour, a forged link to an address of the attacker's
 * choosing) must be caught before malloc follows them: malloc goes on serving distinct,
 * sound blocks, never the forged address, and counts freelist_corrupt. And the double-free
 * checks of frees from other threads must never take a live block for a free one, even when
 * its first word points into its own slab (the links of a program's own list).
 * numa_page_* names: runs in the sanitizer builds too.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "api/api_common.h"

#define BLOCK 64
enum { LIVE = 16, AFTER = 3000 };

static uint64_t corrupt_count(void)
{
	return np_t_stats().freelist_corrupt;
}

/* True when p lies inside any of the n blocks in v (of BLOCK bytes), or repeats one. */
static bool overlaps(char *const *v, int n, const char *p)
{
	for (int i = 0; i < n; i++)
		if (p < v[i] + BLOCK && v[i] < p + BLOCK)
			return true;
	return false;
}

/* Frees blocks b[5] and b[6] of a run of live ones, lets corrupt() write into freed memory,
 * then allocates AFTER more blocks: each must be a block of its own, sound and writable, and
 * never `forbidden`. Returns how many corruptions the allocator counted meanwhile. */
static uint64_t survive(void (*corrupt)(char **b), const char *forbidden)
{
	static char *b[LIVE], *after[AFTER];
	for (int i = 0; i < LIVE; i++) {
		b[i] = numa_page_malloc(BLOCK);
		assert_non_null(b[i]);
		memset(b[i], 0x11, BLOCK);
	}
	uint64_t before = corrupt_count();
	numa_page_free(b[5]);
	numa_page_free(b[6]);
	corrupt(b);
	for (int i = 0; i < AFTER; i++) {
		char *p = numa_page_malloc(BLOCK);
		assert_non_null(p);
		assert_ptr_not_equal(p, forbidden);
		assert_true(numa_page_node_of(p) >= 0);
		/* Distinct from every block still live, b[5] and b[6] excepted (freed). */
		for (int k = 0; k < LIVE; k++)
			if (k != 5 && k != 6)
				assert_false(overlaps(&b[k], 1, p));
		assert_false(overlaps(after, i, p));
		memset(p, 0x22, BLOCK);
		after[i] = p;
	}
	uint64_t counted = corrupt_count() - before;
	for (int i = 0; i < AFTER; i++)
		numa_page_free(after[i]);
	for (int i = 0; i < LIVE; i++)
		if (i != 5 && i != 6)
			numa_page_free(b[i]);
	return counted;
}

static void zero_next(char **b)
{
	*(void **)np_t_launder(b[6]) = NULL; /* n->next = NULL after free(n) */
}

static void overflow_into_freed_neighbour(char **b)
{
	/* b[4] is live: its off-by-one lands on b[5]'s first byte when they are neighbours. */
	char *p = np_t_launder(b[4]);
	if (b[5] == b[4] + BLOCK)
		p[BLOCK] ^= 0x40;
	else
		*(char *)np_t_launder(b[5]) ^= 0x40;
}

static char target[BLOCK] __attribute__((aligned(BLOCK)));

static void forge_link(char **b)
{
	/* An attacker who can write a freed block writes the address he wants back. */
	*(void **)np_t_launder(b[6]) = target;
	*(void **)np_t_launder(b[5]) = target;
}

static void use_after_free_write_is_caught(void **state)
{
	(void)state;
	assert_true(survive(zero_next, NULL) >= 1);
}

static void overflow_into_free_block_is_caught(void **state)
{
	(void)state;
	assert_true(survive(overflow_into_freed_neighbour, NULL) >= 1);
}

static void forged_link_is_never_followed(void **state)
{
	(void)state;
	assert_true(survive(forge_link, target) >= 1);
}

/* ---- the thread cache of blocks above 2 KiB ------------------------------------------------ */

static char big_target[4096] __attribute__((aligned(64)));

/* Blocks of 3,000 bytes freed onto the thread's cache (src/malloc/cache.h), then written over
 * as an attacker would (both words: a forged link to big_target, a tag it cannot know, or
 * only the link word): the mallocs that follow never return big_target or a block still
 * live, and the corruption is counted. */
static uint64_t survive_cached(int how)
{
	enum { LIVE_BIG = 12, AFTER_BIG = 200 };
	static char *b[LIVE_BIG], *after[AFTER_BIG];
	for (int i = 0; i < LIVE_BIG; i++) {
		b[i] = numa_page_malloc(3000);
		assert_non_null(b[i]);
		memset(b[i], 0x11, 3000);
	}
	uint64_t before = corrupt_count();
	numa_page_free(b[5]);
	numa_page_free(b[6]);
	void **w = np_t_launder(b[6]);
	if (how == 0) {
		w[0] = big_target;
		w[1] = big_target;
	} else {
		w[1] = (void *)((uintptr_t)w[1] ^ ((uintptr_t)big_target ^ (uintptr_t)b[5]));
	}
	for (int i = 0; i < AFTER_BIG; i++) {
		char *p = numa_page_malloc(3000);
		assert_non_null(p);
		assert_ptr_not_equal(p, big_target);
		assert_true(numa_page_node_of(p) >= 0);
		for (int k = 0; k < LIVE_BIG; k++)
			if (k != 5 && k != 6)
				assert_false(p < b[k] + 3000 && b[k] < p + 3000);
		for (int k = 0; k < i; k++)
			assert_false(p < after[k] + 3000 && after[k] < p + 3000);
		memset(p, 0x22, 3000);
		after[i] = p;
	}
	uint64_t counted = corrupt_count() - before;
	for (int i = 0; i < AFTER_BIG; i++)
		numa_page_free(after[i]);
	for (int i = 0; i < LIVE_BIG; i++)
		if (i != 5 && i != 6)
			numa_page_free(b[i]);
	return counted;
}

static void cached_block_written_over_is_caught(void **state)
{
	(void)state;
	assert_true(survive_cached(0) >= 1);
}

/* Only the link word changed, by the xor that would turn it into big_target had it been stored
 * plain: the decoded link is no block of ours, or no tagged one. */
static void cached_link_forged_is_never_followed(void **state)
{
	(void)state;
	assert_true(survive_cached(1) >= 1);
}

/* ---- no false double free from another thread ------------------------------------------- */

enum { NODES = 20000 };

struct node {
	struct node *next; /* first word: a pointer into the same slab, as a program's list has */
	struct node *prev; /* second, where a remote free leaves its mark: the same */
	char pad[BLOCK - 2 * sizeof(struct node *)];
};

static void *free_list_of_nodes(void *arg)
{
	struct node *n = arg;
	while (n) {
		struct node *next = n->next;
		numa_page_free(n);
		n = next;
	}
	return NULL;
}

static void remote_free_of_linked_nodes(void **state)
{
	(void)state;
	for (int round = 0; round < 3; round++) {
		struct node *head = NULL;
		for (int i = 0; i < NODES; i++) {
			struct node *n = numa_page_malloc(sizeof *n);
			assert_non_null(n);
			n->next = head;
			n->prev = NULL;
			if (head)
				head->prev = n;
			head = n;
		}
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, free_list_of_nodes, head), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(use_after_free_write_is_caught),
		cmocka_unit_test(overflow_into_free_block_is_caught),
		cmocka_unit_test(forged_link_is_never_followed),
		cmocka_unit_test(cached_block_written_over_is_caught),
		cmocka_unit_test(cached_link_forged_is_never_followed),
		cmocka_unit_test(remote_free_of_linked_nodes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
