/*
 * Unit tests of a thread's allocator lifecycle (src/malloc/thread.c, ring.c, init.c's exit
 * hook) on the fake OS, with np_ring_check (rings, slabs, page cache) after every step: a
 * thread's first allocation creates its state on its CPU's node and counts it there; its
 * allocations and frees keep the rings sound; at exit its empty slabs give their pages back,
 * those with live blocks become orphans of their node, its page cache drains, the threads
 * gauge comes back, and its struct is recycled for the next thread; a later thread of the node
 * adopts the orphans; blocks freed after their thread exited come home; at the end every page
 * is back in the pools.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fake_os.h"
#include "malloc/alloc.h"
#include "malloc/init.h"
#include "malloc/ring.h"
#include "malloc/thread.h"
#include "numapage.h"
#include "unit_fixture.h"

enum { KEPT = 40, CLASSES = 4 };
static const size_t sizes[CLASSES] = {24, 200, 3000, 20000};

static long stat(int node, int item)
{
	return np_vmstat_snapshot(node, item);
}

static void check_self(void)
{
	const char *err = np_ring_check(np_tls.self);
	if (err)
		fail_msg("thread state: %s", err);
}

struct life {
	int cpu;
	struct np_thread *self;
	void *kept[KEPT]; /* blocks that outlive the thread */
	void *first[CLASSES]; /* its first block of each class */
	int threads_during;
};

static void *live(void *arg)
{
	struct life *l = arg;
	np_fake_os_set_cpu(l->cpu);
	void *p[400];
	for (int i = 0; i < 400; i++) {
		p[i] = numa_page_malloc(sizes[i % CLASSES]);
		assert_non_null(p[i]);
		memset(p[i], i, sizes[i % CLASSES]);
		if (i < CLASSES)
			l->first[i] = p[i];
		if (i == 0) {
			l->self = np_tls.self;
			assert_non_null(l->self);
			assert_int_equal(l->self->pcp.home, np_topo_cpu_node(&np_topo_table, l->cpu));
		}
		check_self();
	}
	l->threads_during = (int)stat(l->self->pcp.home, NUMA_PAGE_STAT_threads);
	for (int i = 0; i < 400; i++) {
		if (i % 10 == 0 && i / 10 < KEPT)
			l->kept[i / 10] = p[i];
		else
			numa_page_free(p[i]);
		check_self();
	}
	return NULL;
}

static void run(struct life *l)
{
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, live, l), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
}

static int setup(void **state)
{
	(void)state;
	np_test_start_fixture_opts("2node", NULL);
	np_slab_init_secret();
	np_thread_init_key(np_thread_exit_hook);
	__atomic_store_n(&np_state, NP_STATE_READY, __ATOMIC_RELEASE);
	return 0;
}

static void lifecycle(void **state)
{
	(void)state;
	long threads0 = stat(1, NUMA_PAGE_STAT_threads), in_use0 = stat(1, NUMA_PAGE_STAT_pages_in_use);
	struct life a = {.cpu = 2}; /* node 1 */
	run(&a);
	assert_int_equal(a.threads_during, threads0 + 1);
	assert_int_equal(stat(1, NUMA_PAGE_STAT_threads), threads0); /* gone at exit */
	for (int i = 0; i < KEPT; i++)
		assert_int_equal(numa_page_node_of(a.kept[i]), 1);

	/* The next thread of the node gets the recycled struct, and adopts a's orphans: its
	 * blocks of those classes come from a's slabs first. */
	struct life b = {.cpu = 3};
	run(&b);
	assert_ptr_equal(b.self, a.self);
	/* a kept blocks of the 24 B and 3000 B classes (i % 10 == 0): those slabs were orphaned,
	 * and b's first blocks of those classes come from them. */
	for (int c = 0; c < CLASSES; c += 2) {
		bool adopted = false;
		for (int i = 0; i < KEPT; i++)
			adopted |= (((uintptr_t)b.first[c] ^ (uintptr_t)a.kept[i]) >> 16) == 0; /* one 64 KiB slab */
		assert_true(adopted);
	}

	/* Blocks freed after their threads exited (by this thread, which has no state on node 1):
	 * they go back to their slabs, and everything comes home. */
	for (int i = 0; i < KEPT; i++) {
		numa_page_free(a.kept[i]);
		numa_page_free(b.kept[i]);
	}
	np_slab_sweep_orphans();
	numa_page_trim();
	assert_int_equal(stat(1, NUMA_PAGE_STAT_threads), threads0);
	/* What is still in use on node 1: the recycled thread struct only. */
	long struct_pages = (long)((sizeof(struct np_thread) + NP_PAGE_SIZE - 1) >> NP_PAGE_SHIFT);
	assert_true(stat(1, NUMA_PAGE_STAT_pages_in_use) <= in_use0 + struct_pages);
	const char *err = np_pool_check(1);
	if (err)
		fail_msg("pool: %s", err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lifecycle),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
