/*
 * Unit tests of the page API (numa_page_alloc, _onnode, _interleaved, numa_page_free,
 * numa_page_node_of, numa_page_set_home_node / home_node) through the whole allocator on the
 * fake OS. The library initialises once per process, so each fixture runs in a child process
 * of its own (NUMAPAGE_TOPOLOGY set there) with its own CMocka group: sizes and alignment, size
 * 0 and overflowing sizes, invalid nodes, every CPU's pages, memoryless nodes counted as
 * miss/foreign, memoryless nodes sharing their group evenly, statistics against what was allocated, huge and interleaved memory,
 * binds by OS id, purge and trim, 10,000 thread lifetimes returning everything, cross-thread
 * frees, and fork in a threaded program.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_os.h"
#include "numapage.h"
#include "malloc/large.h"
#include "malloc/ring.h"
#include "malloc/sizeclass.h"
#include "malloc/thread.h"
#include "options.h"
#include "os.h"
#include "pcp/pcp.h"
#include "pool/chunk.h"
#include "pool/pool.h"
#include "topology/topology.h"

/* Sanitizer runtimes keep their own allocator locks, which a thread may hold when another
 * forks: a child that starts a thread can hang in the sanitizer, not in libnumapage. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define KB ((size_t)1 << 10)
#define MB ((size_t)1 << 20)
#define PAGE ((size_t)4096)

static const struct np_topo *T = &np_topo_table;

/* ---- helpers ------------------------------------------------------------------------------- */

static int os_of(int dense)
{
	return T->node[dense].os_id;
}

static int dense_of(int os)
{
	int d = np_topo_node_index(T, os);
	assert_true(d >= 0);
	return d;
}

/* Pages accounted for a page-API request of size bytes (cache-sized requests are rounded up to
 * a power of two, the rest to whole pages). */
/* Pages a page-API allocation of size bytes takes: power-of-two runs up to 16 pages, exact
 * runs up to a chunk's data, then a chunk of its own of its mapping size (see
 * np_chunk_huge_size). */
static long pages_for(size_t size)
{
	size_t n = size ? (size + PAGE - 1) / PAGE : 1;
	if (n <= 16) {
		size_t p = 1;
		while (p < n)
			p <<= 1;
		return (long)p;
	}
	if (n > NP_LARGE_RUN_MAX)
		return (long)((np_chunk_huge_size(NP_CHUNK_HUGE_HEADER + size) - NP_CHUNK_HUGE_HEADER) / PAGE);
	return (long)n;
}

struct counters {
	long v[NP_MAX_NODES][NUMA_PAGE_STAT_NITEMS];
};

static void snap(struct counters *c)
{
	for (int d = 0; d < T->nnodes; d++) {
		struct numa_page_node_stats s;
		assert_int_equal(numa_page_stats_get(os_of(d), &s), 0);
		const uint64_t *f = &s.numa_hit;
		for (int i = 0; i < NUMA_PAGE_STAT_NITEMS; i++)
			c->v[d][i] = (long)f[i];
	}
}

#define DELTA(a, b, dense, item) ((b)->v[dense][NUMA_PAGE_STAT_##item] - (a)->v[dense][NUMA_PAGE_STAT_##item])

static long total_in_use(void)
{
	struct counters c;
	snap(&c);
	long sum = 0;
	for (int d = 0; d < T->nnodes; d++)
		sum += c.v[d][NUMA_PAGE_STAT_pages_in_use];
	return sum;
}

/* Pages of all pools not free (handed out, in thread caches, or thread structs). */
static long pool_used_pages(void)
{
	long used = 0;
	for (int d = 0; d < T->nnodes; d++)
		if (np_pools[d].exists)
			used += (long)np_pools[d].mapped_pages - (long)np_pool_free_pages(d);
	return used;
}

static void check_pools(void)
{
	for (int d = 0; d < T->nnodes; d++) {
		const char *err = np_pools[d].exists ? np_pool_check(d) : NULL;
		if (err)
			fail_msg("pool of node %d: %s", os_of(d), err);
	}
}

/* Whether dense node `served` is among the nearest memory nodes of dense node `home` (any of
 * the equidistant ones may serve a memoryless node: sharing in turn). */
static bool in_nearest_group(int home, int served)
{
	const struct np_topo_node *nd = &T->node[home];
	return T->node[home].distance[served] == nd->fallback_dist[0] && T->node[served].mem_allowed;
}

/* Runs fn(arg) on a new thread whose (fake) CPU is cpu from its first instruction on. */
struct on_cpu {
	int cpu;
	void (*fn)(void *);
	void *arg;
};

static void *on_cpu_main(void *p)
{
	struct on_cpu *oc = p;
	np_fake_os_set_cpu(oc->cpu);
	oc->fn(oc->arg);
	return NULL;
}

static void run_on_cpu(int cpu, void (*fn)(void *), void *arg)
{
	struct on_cpu oc = {cpu, fn, arg};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, on_cpu_main, &oc), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
}

struct probe {
	size_t size;
	int home;   /* OS id numa_page_home_node() said */
	int node;   /* OS id of the page */
};

static void probe_fn(void *arg)
{
	struct probe *pr = arg;
	pr->home = numa_page_home_node();
	void *p = numa_page_alloc(pr->size);
	if (!p) {
		pr->node = -2;
		return;
	}
	pr->node = numa_page_node_of(p);
	numa_page_free(p);
}

/* ---- tests common to every fixture --------------------------------------------------------- */

/* Every CPU's thread is homed on the CPU's node and served from its nearest memory. */
static void every_cpu_gets_nearest_memory(void **state)
{
	(void)state;
	for (int cpu = 0; cpu < T->ncpus; cpu++) {
		int d = T->cpu[cpu].node;
		if (d < 0)
			continue;
		struct probe pr = {.size = PAGE};
		run_on_cpu(cpu, probe_fn, &pr);
		assert_int_equal(pr.home, os_of(d));
		assert_true(pr.node >= 0);
		if (!in_nearest_group(d, dense_of(pr.node)))
			fail_msg("CPU %d (node %d) served by node %d", cpu, os_of(d), pr.node);
		if (T->node[d].mem_allowed)
			assert_int_equal(pr.node, os_of(d));
	}
	check_pools();
}

/* onnode on every node: memory nodes serve themselves (hit); memoryless ones are served by
 * their nearest memory node, counted as miss there and foreign on the node asked for. */
static void onnode_every_node(void **state)
{
	(void)state;
	int home = dense_of(numa_page_home_node());
	for (int d = 0; d < T->nnodes; d++) {
		const size_t sizes[] = {PAGE, 3 * PAGE, 100 * KB, 2 * MB};
		for (size_t i = 0; i < NP_ARRAY_SIZE(sizes); i++) {
			struct counters a, b;
			snap(&a);
			void *p = numa_page_alloc_onnode(sizes[i], os_of(d));
			assert_non_null(p);
			assert_int_equal((uintptr_t)p % PAGE, 0);
			snap(&b);
			int s = dense_of(numa_page_node_of(p));
			/* What it holds: a huge block may have got a larger cached chunk, all of it. */
			long n = (long)(numa_page_usable_size(p) / PAGE);
			assert_true(n >= pages_for(sizes[i]));
			if (T->node[d].mem_allowed) {
				assert_int_equal(s, d);
				assert_int_equal(DELTA(&a, &b, d, numa_hit), n);
			} else {
				assert_true(in_nearest_group(d, s));
				assert_int_equal(DELTA(&a, &b, s, numa_miss), n);
				assert_int_equal(DELTA(&a, &b, d, numa_foreign), n);
				assert_int_equal(DELTA(&a, &b, s, numa_hit), 0);
			}
			assert_int_equal(DELTA(&a, &b, s, pages_in_use), n);
			if (s == home)
				assert_int_equal(DELTA(&a, &b, s, local_node), n);
			else
				assert_int_equal(DELTA(&a, &b, s, other_node), n);
			memset(p, 0x11, sizes[i]);
			numa_page_free(p);
			struct counters c;
			snap(&c);
			assert_int_equal(DELTA(&a, &c, s, pages_in_use), 0);
		}
	}
	check_pools();
}

static void invalid_nodes_are_einval(void **state)
{
	(void)state;
	int bad[] = {-1, -2, INT_MIN, INT_MAX, NP_MAX_NODES, NP_MAX_NODES + 1, 1000};
	for (size_t i = 0; i < NP_ARRAY_SIZE(bad); i++) {
		errno = 0;
		assert_null(numa_page_alloc_onnode(PAGE, bad[i]));
		assert_int_equal(errno, EINVAL);
	}
	/* Ids between the real ones that are not nodes (sparse fixtures), and one past the last. */
	for (int os = 0; os <= os_of(T->nnodes - 1) + 1; os++) {
		if (np_topo_node_index(T, os) >= 0)
			continue;
		errno = 0;
		assert_null(numa_page_alloc_onnode(PAGE, os));
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_int_equal(numa_page_set_home_node(os), -1);
		assert_int_equal(errno, EINVAL);
	}
	errno = 0;
	assert_int_equal(numa_page_set_home_node(-2), -1);
	assert_int_equal(errno, EINVAL);
}

/* Interleaved memory: page i of the block is on the memory nodes in turn. */
static void interleaved_round_robin(void **state)
{
	(void)state;
	int mem[NP_MAX_NODES], nmem = 0;
	for (int d = 0; d < T->nnodes; d++)
		if (T->node[d].mem_allowed)
			mem[nmem++] = os_of(d);
	const size_t sizes[] = {0, PAGE, 5 * PAGE + 1, 64 * PAGE, 5 * MB};
	for (size_t i = 0; i < NP_ARRAY_SIZE(sizes); i++) {
		struct counters a, b;
		snap(&a);
		char *p = numa_page_alloc_interleaved(sizes[i]);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % PAGE, 0);
		snap(&b);
		size_t npages = sizes[i] ? (sizes[i] + PAGE - 1) / PAGE : 1;
		int first = -1;
		for (int k = 0; k < nmem; k++)
			if (mem[k] == numa_page_node_of(p))
				first = k;
		assert_true(first >= 0);
		for (size_t pg = 0; pg < npages; pg++) {
			assert_int_equal(numa_page_node_of(p + pg * PAGE), mem[(first + (int)pg) % nmem]);
			assert_int_equal(numa_page_node_of(p + pg * PAGE + PAGE - 1), mem[(first + (int)pg) % nmem]);
		}
		long hits = 0, in_use = 0;
		for (int d = 0; d < T->nnodes; d++) {
			hits += DELTA(&a, &b, d, interleave_hit);
			in_use += DELTA(&a, &b, d, pages_in_use);
		}
		assert_int_equal(hits, (long)npages);
		assert_int_equal(in_use, (long)npages);
		memset(p, 0x22, sizes[i]);
		numa_page_free(p);
		struct counters c;
		snap(&c);
		for (int d = 0; d < T->nnodes; d++)
			assert_int_equal(DELTA(&a, &c, d, pages_in_use), 0);
	}
	errno = 0;
	assert_null(numa_page_alloc_interleaved(SIZE_MAX));
	assert_int_equal(errno, ENOMEM);
}

/* A malloc block interleaved over the memory nodes (NUMAPAGE_INTERLEAVE_ABOVE in the main thread,
 * or a huge block under the task's interleave policy) counts its malloc_in_use bytes on the nodes
 * its pages are on, and its free takes them off those same nodes, not off the first node of the
 * interleave. */
static void interleaved_malloc_bytes_fn(void *arg)
{
	size_t size = arg ? *(const size_t *)arg : 8 * MB + 3 * PAGE;
	struct counters a, b, c;
	snap(&a);
	char *p = numa_page_malloc(size);
	assert_non_null(p);
	size_t usable = numa_page_usable_size(p);
	long want[NP_MAX_NODES] = {0};
	for (size_t off = 0; off < usable; off += PAGE)
		want[dense_of(numa_page_node_of(p + off))] += (long)PAGE;
	snap(&b);
	int spread = 0;
	for (int d = 0; d < T->nnodes; d++) {
		assert_int_equal(DELTA(&a, &b, d, malloc_in_use), want[d]);
		spread += want[d] > 0;
	}
	assert_true(spread >= 2); /* it was interleaved */
	numa_page_free(p);
	snap(&c);
	for (int d = 0; d < T->nnodes; d++)
		assert_int_equal(DELTA(&a, &c, d, malloc_in_use), 0);
}

static void interleave_above_malloc_bytes(void **state)
{
	(void)state;
	interleaved_malloc_bytes_fn(NULL); /* the main thread, before any other thread */
}

/* A rehearsed topology's threads read no task policy (its nodes are not the kernel's): this
 * thread is given the one it would have read under numactl --interleave=all. */
static void interleave_policy_malloc_bytes_fn(void *arg)
{
	numa_page_free(numa_page_malloc(1)); /* the thread's state */
	struct np_topo_policy *pol = &np_tls.self->pcp.policy;
	pol->mode = NP_POLICY_INTERLEAVE;
	for (int d = 0; d < T->nnodes; d++)
		if (T->node[d].mem_allowed)
			pol->nodes |= 1ULL << d;
	interleaved_malloc_bytes_fn(arg);
}

static void interleave_policy_malloc_bytes(void **state)
{
	(void)state;
	run_on_cpu(0, interleave_policy_malloc_bytes_fn, NULL);
}

/* Under an interleave policy a block over a third of the longest pool run is spread page by
 * page, though blocks up to that run are pool runs otherwise: a run lies on one node. */
static void interleave_policy_spreads_runs_over_a_third(void **state)
{
	(void)state;
	static size_t size = 2 * MB;
	assert_true(size / PAGE > NP_LARGE_RUN_MAX / 3 && size / PAGE <= NP_LARGE_RUN_MAX);
	run_on_cpu(0, interleave_policy_malloc_bytes_fn, &size);
}

/* ---- tests on 2node ------------------------------------------------------------------------- */

/* Every size: page-aligned, on the home node, writable, freed; usable size covers it. */
static void sizes_and_alignment(void **state)
{
	(void)state;
	const size_t sizes[] = {0, 1, 100, PAGE - 1, PAGE, PAGE + 1, 2 * PAGE, 3 * PAGE, 16 * KB,
				64 * KB - 1, 64 * KB, 64 * KB + 1, 200000, MB, NP_LARGE_RUN_MAX * PAGE,
				NP_LARGE_RUN_MAX * PAGE + 1, NP_POOL_MAX_RUN * PAGE, 4 * MB, 5 * MB + 7, 17 * MB};
	int home = numa_page_home_node();
	long base = total_in_use();
	void *held[NP_ARRAY_SIZE(sizes)];
	for (size_t i = 0; i < NP_ARRAY_SIZE(sizes); i++) {
		char *p = numa_page_alloc(sizes[i]);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % PAGE, 0);
		assert_int_equal(numa_page_node_of(p), home);
		size_t len = sizes[i] ? sizes[i] : 1;
		assert_int_equal(numa_page_node_of(p + len - 1), home);
		assert_true(numa_page_usable_size(p) >= len);
		memset(p, (int)i, len);
		held[i] = p;
	}
	/* All live at once: no two overlap. */
	for (size_t i = 0; i < NP_ARRAY_SIZE(sizes); i++) {
		const unsigned char *p = held[i];
		size_t len = sizes[i] ? sizes[i] : 1;
		assert_int_equal(p[0], (unsigned char)i);
		assert_int_equal(p[len - 1], (unsigned char)i);
	}
	check_pools();
	for (size_t i = 0; i < NP_ARRAY_SIZE(sizes); i++)
		numa_page_free(held[i]);
	assert_int_equal(total_in_use(), base);
	check_pools();
}

static void size_zero_is_one_page(void **state)
{
	(void)state;
	long base = total_in_use();
	void *p = numa_page_alloc(0), *q = numa_page_alloc(0);
	assert_non_null(p);
	assert_non_null(q);
	assert_ptr_not_equal(p, q);
	assert_int_equal(numa_page_usable_size(p), PAGE);
	assert_int_equal(total_in_use(), base + 2);
	void *r = numa_page_alloc_onnode(0, 1);
	assert_non_null(r);
	assert_int_equal(numa_page_node_of(r), 1);
	numa_page_free(p);
	numa_page_free(q);
	numa_page_free(r);
	assert_int_equal(total_in_use(), base);
}

static void overflowing_sizes_are_enomem(void **state)
{
	(void)state;
	const size_t bad[] = {SIZE_MAX, SIZE_MAX - PAGE + 2, SIZE_MAX / 2 + 1, (size_t)1 << 63,
			      ((size_t)1 << 47), ((size_t)1 << 46) + 1};
	for (size_t i = 0; i < NP_ARRAY_SIZE(bad); i++) {
		errno = 0;
		assert_null(numa_page_alloc(bad[i]));
		assert_int_equal(errno, ENOMEM);
		errno = 0;
		assert_null(numa_page_alloc_onnode(bad[i], 0));
		assert_int_equal(errno, ENOMEM);
	}
}

static void free_null_and_errno(void **state)
{
	(void)state;
	numa_page_free(NULL);
	void *p = numa_page_alloc(3 * PAGE);
	void *q = numa_page_alloc(100 * PAGE);
	void *h = numa_page_alloc(6 * MB);
	errno = 1234;
	numa_page_free(p);
	numa_page_free(q);
	numa_page_free(h);
	numa_page_free(NULL);
	assert_int_equal(errno, 1234);
}

static void node_of_foreign_pointers(void **state)
{
	(void)state;
	int local;
	char *heap = malloc(100); /* the C library's: this unit test does not replace malloc */
	const void *bad[] = {NULL, &local, heap, (void *)1, (void *)((uintptr_t)1 << 50)};
	for (size_t i = 0; i < NP_ARRAY_SIZE(bad); i++) {
		errno = 0;
		assert_int_equal(numa_page_node_of(bad[i]), -1);
		assert_int_equal(errno, EINVAL);
	}
	free(heap);
	/* The header of a chunk is not memory we handed out; nor is a huge block's header. */
	char *p = numa_page_alloc(PAGE);
	errno = 0;
	assert_int_equal(numa_page_node_of(np_chunk_of(p)), -1);
	assert_int_equal(errno, EINVAL);
	char *h = numa_page_alloc(9 * MB);
	errno = 0;
	assert_int_equal(numa_page_node_of(np_chunk_of(h)), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(numa_page_node_of(h + 9 * MB - 1), numa_page_home_node());
	numa_page_free(p);
	numa_page_free(h);
}

/* A huge request larger than the machine's memory that the kernel refuses (its overcommit
 * heuristic would, whatever the process maps) leaves the thread's caches as they were: the
 * cached huge chunk serves the next block of its size, the current slab the next small one.
 * Giving everything back there made a program probing for its largest block fault its cached
 * memory in again at every refusal (a review). */
static void a_refused_impossible_request_keeps_the_caches(void **state)
{
	(void)state;
	numa_page_trim();
	char *p = numa_page_malloc(8 * MB);
	assert_non_null(p);
	memset(p, 1, 8 * MB);
	numa_page_free(p);
	char *s = numa_page_malloc(100);
	assert_non_null(s);
	numa_page_free(s);
	uint64_t mem = np_topo_table.total_mem;
	long maps = np_fake_os_maps(), unmaps = np_fake_os_unmaps();
	np_fake_os_fail_map_after(0);
	errno = 0;
	assert_null(numa_page_malloc((size_t)mem * 2));
	np_fake_os_fail_map_after(-1);
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(np_fake_os_unmaps(), unmaps);
	char *q = numa_page_malloc(8 * MB);
	assert_ptr_equal(q, p);
	assert_int_equal(np_fake_os_maps(), maps);
	char *t = numa_page_malloc(100);
	assert_ptr_equal(t, s);
	numa_page_free(t);
	numa_page_free(q);
	numa_page_trim();
}

static void huge_blocks(void **state)
{
	(void)state;
	numa_page_trim(); /* no cached chunks from earlier tests */
	long maps = np_fake_os_maps(), unmaps = np_fake_os_unmaps();
	long base = total_in_use();
	char *freed[2];
	for (int node = 0; node < 2; node++) {
		size_t size = 9 * MB + 5;
		char *p = numa_page_alloc_onnode(size, node);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % PAGE, 0);
		assert_int_equal(numa_page_usable_size(p), (size_t)pages_for(size) * PAGE);
		for (size_t off = 0; off < size; off += 64 * KB)
			assert_int_equal(numa_page_node_of(p + off), node);
		memset(p, 0x33, size);
		assert_int_equal(total_in_use(), base + pages_for(size));
		numa_page_free(p);
		assert_int_equal(total_in_use(), base);
		freed[node] = p;
	}
	/* Both are kept by their nodes' pools, not unmapped, and are no longer ours to use. */
	assert_int_equal(np_fake_os_maps(), maps + 2);
	assert_int_equal(np_fake_os_unmaps(), unmaps);
	assert_int_equal(numa_page_node_of(freed[0]), -1);
	assert_null(np_pool_check(0));
	/* A request of a nearby size on node 1 reuses node 1's chunk in place (same mapping size),
	 * bound where it was; node 0 keeps its own. */
	char *q = numa_page_alloc_onnode(9 * MB + 300 * KB, 1);
	assert_ptr_equal(q, freed[1]);
	assert_int_equal(numa_page_node_of(q + 9 * MB), 1);
	assert_int_equal(q[5 * MB], 0x33); /* not fresh: the pool does not claim it reads as zeros */
	assert_int_equal(np_fake_os_maps(), maps + 2);
	/* A smaller one takes the bigger cached chunk whole: its tail is within the request's own
	 * size (or 32 MiB), so it stays resident and mapped, and the block may use it all. */
	char *r = numa_page_alloc_onnode(5 * MB, 0);
	assert_ptr_equal(r, freed[0]);
	size_t r_usable = numa_page_usable_size(r);
	assert_true(r_usable >= (size_t)pages_for(9 * MB + 300 * KB) * PAGE);
	assert_int_equal(np_fake_os_unmaps(), unmaps);
	assert_int_equal(total_in_use(), base + (long)(numa_page_usable_size(q) / PAGE) + (long)(r_usable / PAGE));
	numa_page_free(q);
	numa_page_free(r);
	assert_int_equal(total_in_use(), base);
	/* Trimming gives every cached chunk back. */
	numa_page_trim();
	assert_int_equal(np_fake_os_unmaps(), unmaps + 2);
	assert_int_equal(np_fake_os_maps(), maps + 2);
	/* realloc grows a huge block by remapping it (in place, or moved with its pages): the
	 * contents stay, nothing is left behind, the statistics follow. */
	char *g = numa_page_malloc(5 * MB);
	assert_non_null(g);
	memset(g, 0x5a, 5 * MB);
	long before = np_fake_os_unmaps();
	base = total_in_use();
	char *h = numa_page_realloc(g, 12 * MB);
	assert_non_null(h);
	for (size_t off = 0; off < 5 * MB; off += PAGE)
		assert_int_equal(h[off], 0x5a);
	assert_int_equal(h[5 * MB - 1], 0x5a);
	memset(h, 0x6b, 12 * MB);
	assert_int_equal(numa_page_usable_size(h), (size_t)pages_for(12 * MB) * PAGE);
	assert_int_equal(numa_page_node_of(h + 11 * MB), numa_page_node_of(h));
	assert_int_equal(total_in_use(), base + pages_for(12 * MB) - pages_for(5 * MB));
	assert_int_equal(np_fake_os_unmaps(), before); /* moved or grown, never copied and unmapped */
	if (h != g)
		assert_int_equal(numa_page_node_of(g), -1); /* the old range is no longer ours */
	assert_null(np_pool_check(0));
	numa_page_free(h); /* kept by the pool */
	numa_page_trim();
	assert_int_equal(np_fake_os_unmaps(), before + 1);
}

static void home_node_set_and_follow(void **state)
{
	(void)state;
	assert_int_equal(numa_page_home_node(), 0); /* the main thread runs on (fake) CPU 0 */
	assert_int_equal(numa_page_set_home_node(1), 0);
	assert_int_equal(numa_page_home_node(), 1);
	void *p = numa_page_alloc(PAGE), *q = numa_page_alloc(40 * PAGE);
	assert_int_equal(numa_page_node_of(p), 1);
	assert_int_equal(numa_page_node_of(q), 1);
	/* -1: follow the CPU (0, on node 0) again. */
	assert_int_equal(numa_page_set_home_node(-1), 0);
	assert_int_equal(numa_page_home_node(), 0);
	void *r = numa_page_alloc(40 * PAGE);
	assert_int_equal(numa_page_node_of(r), 0);
	/* ... wherever it goes. */
	np_fake_os_set_cpu(2);
	assert_int_equal(numa_page_set_home_node(-1), 0);
	assert_int_equal(numa_page_home_node(), 1);
	np_fake_os_set_cpu(0);
	assert_int_equal(numa_page_set_home_node(-1), 0);
	assert_int_equal(numa_page_home_node(), 0);
	numa_page_free(p);
	numa_page_free(q);
	numa_page_free(r);
}

/* Allocations of `size` (freed at once, so the current slab never runs out of blocks)
 * until one comes from dense node `node`; how many it took, or -1 after `limit`. Once one does,
 * every later one must too. */
static int mallocs_until_node(size_t size, int node, int limit)
{
	int k = 0;
	for (; k < limit; k++) {
		void *b = numa_page_malloc(size);
		assert_non_null(b);
		int at = numa_page_node_of(b);
		numa_page_free(b);
		if (at == os_of(node))
			break;
	}
	if (k == limit)
		return -1;
	for (int i = 0; i < 200; i++) {
		void *b = numa_page_malloc(size);
		assert_int_equal(numa_page_node_of(b), os_of(node));
		numa_page_free(b);
	}
	return k;
}

/* Blocks in a slab of the class that serves malloc(size). */
static int slab_blocks_of(size_t size)
{
	unsigned c = np_size_class(size ? size : 1);
	return (int)(np_class_slab_bytes(c) / np_class_size[c]);
}

/* Mallocs of `size` after which a slab miss is due (NP_SLAB_BEAT) when each one's block is
 * freed before the next: the slab's list never runs out then. */
static int beat_mallocs(size_t size)
{
	int capacity = slab_blocks_of(size);
	return (capacity < NP_SLAB_BEAT ? capacity : NP_SLAB_BEAT) + 2;
}

/* A thread that moves to another node's CPU: large blocks from the new node at once, small
 * blocks of every class within one slab's worth or one beat (its slabs of the old node leave
 * its rings at the next slab miss: when the current slab runs out, or when NP_SLAB_BEAT makes
 * one due). */
static void migrate_fn(void *arg)
{
	(void)arg;
	assert_int_equal(numa_page_home_node(), 0);
	void *p = numa_page_alloc(PAGE);
	assert_int_equal(numa_page_node_of(p), 0);
	const size_t small[] = {24, 100, 4096, 20000};
	void *held[NP_ARRAY_SIZE(small)];
	for (size_t i = 0; i < NP_ARRAY_SIZE(small); i++) {
		held[i] = numa_page_malloc(small[i]); /* keeps each old slab in use: it cannot be released */
		assert_int_equal(numa_page_node_of(held[i]), 0);
	}
	np_fake_os_set_cpu(3); /* node 1 */
	/* Page runs, cached orders and huge blocks: the first one after the move. */
	void *q = numa_page_alloc(PAGE);
	assert_int_equal(numa_page_node_of(q), 1);
	assert_int_equal(numa_page_home_node(), 1);
	void *r = numa_page_alloc(100 * PAGE), *h = numa_page_malloc(32 * MB);
	assert_int_equal(numa_page_node_of(r), 1);
	assert_int_equal(numa_page_node_of(h), 1);
	/* Small classes: noticed at the first slab miss (here the large calls above already did). */
	for (size_t i = 0; i < NP_ARRAY_SIZE(small); i++) {
		int limit = slab_blocks_of(small[i]) + 1 + beat_mallocs(small[i]);
		int k = mallocs_until_node(small[i], 1, limit);
		if (k < 0)
			fail_msg("malloc(%zu) still on node 0 after %d allocations", small[i], limit);
	}
	/* The old node's blocks are still good, and free as remote frees. */
	for (size_t i = 0; i < NP_ARRAY_SIZE(small); i++)
		numa_page_free(held[i]);
	numa_page_free(h);
	numa_page_free(r);
	numa_page_free(q);
	numa_page_free(p);
}

/* The same noticed by a slab miss alone: a thread that only makes small allocations. */
static void migrate_small_only_fn(void *arg)
{
	size_t size = *(const size_t *)arg;
	void *keep = numa_page_malloc(size);
	assert_int_equal(numa_page_node_of(keep), 0);
	np_fake_os_set_cpu(3);
	int k = mallocs_until_node(size, 1, slab_blocks_of(size) + 1 + beat_mallocs(size));
	assert_true(k >= 0);
	assert_int_equal(numa_page_home_node(), 1);
	numa_page_free(keep);
}

/* The owner's free of a block puts it at the head of its slab's list: the next malloc of the
 * class hands it out again (its lines are still in this CPU's cache), across slab misses too.
 * A slab miss comes every beat (NP_SLAB_BEAT) even though the list never runs out, where a move
 * is noticed (above) and the slab's remote frees are taken in: a block another thread freed
 * comes back within a beat. */
static void *free_it(void *p)
{
	numa_page_free(p);
	return NULL;
}

/* The allocations the LIFO test makes: malloc of a size, or aligned_alloc (its own path to the
 * current slab, posix.c). */
struct lifo_case {
	size_t size;
	size_t align; /* 0: malloc */
};

static void *lifo_alloc(const struct lifo_case *lc)
{
	return lc->align ? numa_page_aligned_alloc(lc->align, lc->size) : numa_page_malloc(lc->size);
}

static void lifo_fn(void *arg)
{
	const struct lifo_case *lc = arg;
	void *held = lifo_alloc(lc); /* the class's first allocation here: a slab miss */
	void *x = lifo_alloc(lc), *r = lifo_alloc(lc);
	int beat = beat_mallocs(lc->size);
	for (int i = 0; i < 3 * beat; i++) {
		numa_page_free(x);
		void *y = lifo_alloc(lc);
		if (y != x)
			fail_msg("free %d of the current slab's block %p: allocation gave %p", i, x, y);
	}
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, free_it, r), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	int k = 0;
	for (;; k++) {
		numa_page_free(x);
		void *y = lifo_alloc(lc);
		if (y == r)
			break;
		assert_ptr_equal(y, x);
		if (k > beat)
			fail_msg("size %zu align %zu: a remote free of the current slab not taken in after %d "
				 "allocations",
				 lc->size, lc->align, k);
	}
	numa_page_free(r); /* handed out again; x was freed in the last step */
	numa_page_free(held);
}

/* A slab's run comes from its own list of the page cache, refilled in batches, whatever long
 * runs the program asks for meanwhile. When 128 KiB slabs first came from the cache of long
 * runs, whose every miss gives all kept runs back, a round of 512 1,000-byte blocks allocated
 * and freed, then one 100,000-byte block, took every new slab from the pool alone (a review:
 * 15,005 pool lock holds in 3,000 rounds against 9, and 555 K pages through the pool against
 * 411; here 36,968 pages in 200 rounds without the order, 89 with it). */
static void slabs_batched_beside_long_runs(void **state)
{
	(void)state;
	enum { ROUNDS = 200, BLOCKS = 512 };
	static void *b[BLOCKS];
	numa_page_free(numa_page_malloc(1000)); /* this thread's state exists */
	struct counters a, c;
	snap(&a);
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < BLOCKS; i++)
			assert_non_null(b[i] = numa_page_malloc(1000));
		for (int i = 0; i < BLOCKS; i++)
			numa_page_free(b[i]); /* the slabs empty and go back to the page cache */
		void *big = numa_page_malloc(100000); /* a long run of 25 pages */
		assert_non_null(big);
		numa_page_free(big);
	}
	snap(&c);
	long pages = 0;
	for (int d = 0; d < T->nnodes; d++)
		pages += DELTA(&a, &c, d, pages_alloc);
	print_message("%d rounds: %ld pages from the pools\n", ROUNDS, pages);
	assert_true(pages < ROUNDS * 4); /* an eighth of a slab a round; alone: 185 pages */
}

static void owner_frees_come_back_first(void **state)
{
	(void)state;
	/* malloc(0) asks for no bytes and still counts in the beat (a hostile review: a beat in
	 * bytes never came); aligned_alloc takes blocks without the fast path. */
	const struct lifo_case cases[] = {{100, 0}, {0, 0}, {1, 0}, {64, 64}, {1000, 0}};
	for (size_t i = 0; i < NP_ARRAY_SIZE(cases); i++)
		run_on_cpu(0, lifo_fn, (void *)&cases[i]);
	check_pools();
}

static void thread_follows_migration(void **state)
{
	(void)state;
	run_on_cpu(0, migrate_fn, NULL);
	static const size_t sizes[] = {100, 0}; /* malloc(0): no bytes asked, a block all the same */
	for (size_t i = 0; i < NP_ARRAY_SIZE(sizes); i++)
		run_on_cpu(0, migrate_small_only_fn, (void *)&sizes[i]);
	check_pools();
}

/* realloc's memory: a malloc block grows in place only on the caller's node, else it moves
 * there (what realloc adds is new memory); page-API memory keeps its placement, grown or
 * moved (a helper's tests: blocks of node 0 grown after a move to node 1 kept every new page
 * on node 0; an interleaved block grown, or a block of node 1 shrunk, came back on the
 * caller's node). */
static void realloc_placement_fn(void *arg)
{
	(void)arg;
	int os0 = os_of(0), os1 = os_of(1);
	static const size_t from[] = {512 * KB, 8 * MB}, to[] = {3 * MB, 16 * MB};
	for (int i = 0; i < 2; i++) {
		assert_int_equal(numa_page_set_home_node(os0), 0);
		char *p = numa_page_malloc(from[i]);
		assert_non_null(p);
		assert_int_equal(numa_page_node_of(p), os0);
		p[0] = 5;
		assert_int_equal(numa_page_set_home_node(os1), 0);
		char *q = numa_page_realloc(p, to[i]);
		assert_non_null(q);
		assert_int_equal(q[0], 5);
		assert_int_equal(numa_page_node_of(q), os1);
		assert_int_equal(numa_page_node_of(q + to[i] - 1), os1);
		/* On its own node it grows where it is. */
		char *r = numa_page_realloc(q, to[i] + 2 * PAGE);
		assert_non_null(r);
		assert_int_equal(numa_page_node_of(r + to[i] + PAGE), os1);
		numa_page_free(r);
	}
	assert_int_equal(numa_page_set_home_node(os0), 0);
	static const size_t sizes[] = {6 * MB, 100, 2 * MB};
	char *p = numa_page_alloc_onnode(1 * MB, os1);
	assert_non_null(p);
	for (int i = 0; i < 3; i++) {
		p = numa_page_realloc(p, sizes[i]);
		assert_non_null(p);
		assert_int_equal(numa_page_node_of(p), os1);
		assert_int_equal(numa_page_node_of(p + sizes[i] - 1), os1);
	}
	/* A size no block can have is refused, the block kept (a review: SIZE_MAX came back as
	 * one page, and 2 MiB were copied into it). */
	memset(p, 0x61, 2 * MB);
	static const size_t huge[] = {SIZE_MAX, SIZE_MAX - 100, SIZE_MAX / 2 + 1};
	for (int i = 0; i < 3; i++) {
		errno = 0;
		assert_null(numa_page_realloc(p, huge[i]));
		assert_int_equal(errno, ENOMEM);
	}
	assert_int_equal(p[2 * MB - 1], 0x61);
	numa_page_free(p);
	char *v = numa_page_alloc_interleaved(1 * MB);
	assert_non_null(v);
	v = numa_page_realloc(v, 4 * MB);
	assert_non_null(v);
	assert_int_not_equal(numa_page_node_of(v), numa_page_node_of(v + PAGE));
	assert_int_not_equal(numa_page_node_of(v + 3 * MB), numa_page_node_of(v + 3 * MB + PAGE));
	numa_page_free(v);
	assert_int_equal(numa_page_set_home_node(-1), 0);
}

static void realloc_placement(void **state)
{
	(void)state;
	run_on_cpu(0, realloc_placement_fn, NULL);
	check_pools();
}

/* A memory policy the thread sets while it runs is followed (a helper's test from outside: a
 * program's own set_mempolicy or numa_set_preferred, after the C library's start-up had already
 * given its main thread state, was never read). The fake OS's policy stands for the kernel's;
 * a rehearsal's is not read, so the table says "this machine" meanwhile. */
static void policy_follow_fn(void *arg)
{
	(void)arg;
	numa_page_free(numa_page_malloc(3000)); /* its state, on node 0 under the default */
	np_topo_table.is_system = true;
	int os1 = os_of(1), both[] = {os_of(0), os_of(1)};
	char what[160];

	/* Set through set_mempolicy(2)'s wrapper, which marks it (thread_start.c): the next
	 * large block and the next slab come from the preferred node. */
	np_fake_os_set_mempolicy(1 /* MPOL_PREFERRED */, &os1, 1);
	np_tls.policy_set = true;
	void *big = numa_page_malloc(2 * MB);
	assert_int_equal(numa_page_node_of(big), os1);
	numa_page_free(big);
	assert_int_equal(mallocs_until_node(3000, 1, 1), 0);

	/* Set by a raw system call, which nothing marks: a block of 1 MiB or more looks once
	 * 10 ms have passed since the last read (a review: the first version looked only at a
	 * periodic point, 64 slow paths apart, and a thread with fewer never did). */
	np_fake_os_set_mempolicy(0 /* MPOL_DEFAULT */, NULL, 0);
	for (int i = 0; i < 3; i++)
		numa_page_free(numa_page_malloc(200 * KB));
	np_fake_os_advance_clock(20 * 1000 * 1000);
	big = numa_page_malloc(2 * MB);
	assert_int_equal(numa_page_node_of(big), os_of(0));
	numa_page_free(big);
	assert_int_equal(mallocs_until_node(3000, 0, 1), 0);

	/* The same look reached by slab misses alone (every NP_POLICY_LOOK_EVERY'th reads the
	 * clock): the blocks held meanwhile stay sound, and every block after the change stays
	 * on the new node. */
	np_fake_os_set_mempolicy(1 /* MPOL_PREFERRED */, &os1, 1);
	np_fake_os_advance_clock(20 * 1000 * 1000);
	enum { HELD = 8000 };
	static void *held[HELD];
	int moved_at = -1;
	for (int i = 0; i < HELD; i++) {
		held[i] = numa_page_malloc(3000);
		assert_non_null(held[i]);
		memset(held[i], i & 0xff, 3000);
		if (moved_at < 0 && numa_page_node_of(held[i]) == os1)
			moved_at = i;
	}
	assert_true(moved_at > 0); /* by a periodic point, not at once */
	for (int i = moved_at; i < HELD; i++)
		assert_int_equal(numa_page_node_of(held[i]), os1);
	for (int i = 0; i < HELD; i++) {
		assert_int_equal(((unsigned char *)held[i])[2999], i & 0xff);
		numa_page_free(held[i]);
	}
	np_fake_os_set_mempolicy(0 /* MPOL_DEFAULT */, NULL, 0);
	np_tls.policy_set = true;

	/* MPOL_BIND to fewer nodes than the process may use: its nodes first. Over all of
	 * them: the default (the process's allowed nodes already say so). */
	np_fake_os_set_mempolicy(2 /* MPOL_BIND */, &os1, 1);
	np_tls.policy_set = true;
	big = numa_page_malloc(2 * MB);
	assert_int_equal(numa_page_node_of(big), os1);
	numa_page_free(big);
	np_topo_policy_describe(T, &np_tls.self->pcp.policy, what, sizeof what);
	assert_string_equal(what, "bound to node 1 (MPOL_BIND)");
	np_fake_os_set_mempolicy(2 /* MPOL_BIND */, both, 2);
	np_tls.policy_set = true;
	big = numa_page_malloc(2 * MB);
	assert_int_equal(numa_page_node_of(big), os_of(0));
	numa_page_free(big);
	assert_int_equal(np_tls.self->pcp.policy.mode, NP_POLICY_DEFAULT);

	np_fake_os_set_mempolicy(0, NULL, 0);
	np_topo_table.is_system = false;
}

static void policy_set_while_running_is_followed(void **state)
{
	(void)state;
	run_on_cpu(0, policy_follow_fn, NULL);
	check_pools();
}

/* A block with a chunk of its own that the program bound to another node itself
 * (numa_tonode_memory's mbind on a malloc block), whole or its second half, is unmapped when
 * freed rather than kept: the next block there comes from the node its chunk is for, not from
 * the one the program chose for the last (a helper's test in a 2-node guest: a node-0
 * thread's next block all on node 1, and counted on node 0). Page runs are not asked (their
 * binding stays: numapage(7)). */
static void bound_elsewhere_fn(void *arg)
{
	(void)arg;
	numa_page_free(numa_page_malloc(1));
	np_topo_table.is_system = true;
	const size_t size = 8 * MB;
	for (int half = 0; half < 2; half++) {
		char *p = numa_page_malloc(size);
		assert_non_null(p);
		memset(p, 1, size);
		assert_int_equal(numa_page_node_of(p), os_of(0));
		char *from = half ? p + size / 2 : p; /* the program's own bind */
		assert_int_equal(np_os_bind(from, (size_t)(p + size - from), os_of(1), NP_BIND_PREFERRED), 0);
		assert_int_equal(numa_page_node_of(p + size - 1), os_of(1));
		numa_page_free(p);
		char *q = numa_page_malloc(size);
		assert_non_null(q);
		for (size_t off = 0; off < size; off += size / 8)
			assert_int_equal(numa_page_node_of(q + off), os_of(0));
		assert_int_equal(numa_page_node_of(q + size - 1), os_of(0));
		numa_page_free(q);
	}
	np_topo_table.is_system = false;
}

static void blocks_bound_elsewhere_are_bound_back(void **state)
{
	(void)state;
	run_on_cpu(0, bound_elsewhere_fn, NULL);
	check_pools();
}

/* A page run the program bound or moved itself (the wrappers of malloc/program_bind.c note it:
 * np_chunk_note_program_move), whole or its second half, is bound to its chunk's node again and
 * its pages given back when freed: the thread's page cache hands the same run back at once,
 * and its pages must fault in on the chunk's node (a 2-node guest: all 256 pages of the next
 * 1 MiB block on the program's node). The mark goes with that return: the run's next frees,
 * and a neighbour's, purge nothing (a helper's review of a first version, which noted 128 KiB
 * steps and forgot one only when a run covering it whole came back: a 96 KiB block freed
 * 1,000 times after one bind was bound back and purged 1,000 times). */
static void run_moved_fn(void *arg)
{
	(void)arg;
	numa_page_free(numa_page_malloc(1));
	np_topo_table.is_system = true;
	const size_t size = 1 * MB;
	char *other = numa_page_malloc(size); /* a neighbour the program leaves alone */
	assert_non_null(other);
	memset(other, 1, size);
	for (int half = 0; half < 2; half++) {
		char *p = numa_page_malloc(size);
		assert_non_null(p);
		assert_ptr_equal(np_chunk_of(p), np_chunk_of(other));
		memset(p, 1, size);
		assert_int_equal(numa_page_node_of(p), os_of(0));
		char *from = half ? p + size / 2 : p; /* the program's own bind, noted by the wrapper */
		assert_int_equal(np_os_bind(from, (size_t)(p + size - from), os_of(1), NP_BIND_STRICT), 0);
		np_chunk_note_program_move(from, (size_t)(p + size - from));
		assert_int_equal(numa_page_node_of(p + size - 1), os_of(1));
		long purged = np_fake_os_purged_bytes();
		numa_page_free(p);
		assert_true(np_fake_os_purged_bytes() - purged >= (long)size);
		char *q = numa_page_malloc(size);
		assert_ptr_equal(q, p); /* the same run, from the thread's cache */
		for (size_t off = 0; off < size; off += NP_PAGE_SIZE)
			assert_int_equal(numa_page_node_of(q + off), os_of(0));
		/* Read as zeros: given back. */
		assert_int_equal(q[0], 0);
		assert_int_equal(q[size - 1], 0);
		numa_page_free(q);
	}
	/* A block of 96 KiB (a run shorter than a 128 KiB step) bound once: its first free binds
	 * it back, and no later one does. */
	char *b = numa_page_malloc(96 * 1024);
	assert_non_null(b);
	memset(b, 1, 96 * 1024);
	np_chunk_note_program_move(b, 96 * 1024);
	long binds = np_fake_os_binds(), purged = np_fake_os_purged_bytes();
	numa_page_free(b);
	assert_int_equal(np_fake_os_binds() - binds, 1);
	for (int i = 0; i < 100; i++) {
		b = numa_page_malloc(96 * 1024);
		memset(b, 1, 96 * 1024);
		numa_page_free(b);
	}
	assert_int_equal(np_fake_os_binds() - binds, 1);
	assert_int_equal(np_fake_os_purged_bytes() - purged, 96 * 1024);
	/* Under NUMAPAGE_BIND=none the library binds nothing: the run gets the default policy
	 * back, not a bind to its node. */
	np_opt.bind = NP_BIND_NONE;
	b = numa_page_malloc(96 * 1024);
	memset(b, 1, 96 * 1024);
	assert_int_equal(np_os_bind(b, 96 * 1024, os_of(1), NP_BIND_STRICT), 0);
	np_chunk_note_program_move(b, 96 * 1024);
	numa_page_free(b);
	assert_int_equal(np_fake_os_bound_node(b), -1);
	assert_int_equal(np_fake_os_bound_node(b + 96 * 1024 - 1), -1);
	np_opt.bind = NP_BIND_PREFERRED;
	/* The neighbour the program never touched: its free purges nothing. */
	purged = np_fake_os_purged_bytes();
	numa_page_free(other);
	assert_int_equal(np_fake_os_purged_bytes() - purged, 0);
	/* A range that reaches past the address space, or wraps, marks what is ours in it and
	 * returns. */
	char *w = numa_page_malloc(size);
	memset(w, 1, size);
	np_chunk_note_program_move(w, SIZE_MAX);
	purged = np_fake_os_purged_bytes();
	numa_page_free(w);
	assert_true(np_fake_os_purged_bytes() - purged >= (long)size);
	/* A range that starts on the last page of a free run (the program's own mistake) and
	 * reaches a live run behind it: that page holds the free run's length too, and a step by
	 * it passed over the live run (a review). Runs of 4 MiB: too long for the page cache, so a
	 * freed one is a free run of the pool at once. */
	char *r1 = numa_page_malloc(4 * MB), *r2 = numa_page_malloc(4 * MB);
	assert_non_null(r1);
	assert_non_null(r2);
	char *lo = r1 < r2 ? r1 : r2, *hi = r1 < r2 ? r2 : r1;
	assert_ptr_equal(hi, lo + 4 * MB); /* side by side in a fresh chunk */
	memset(hi, 1, 4 * MB);
	numa_page_free(lo);
	np_chunk_note_program_move(hi - NP_PAGE_SIZE, 2 * NP_PAGE_SIZE);
	purged = np_fake_os_purged_bytes();
	numa_page_free(hi);
	assert_true(np_fake_os_purged_bytes() - purged >= (long)(4 * MB));
	/* A huge block whose pages the program moved without a bind (move_pages: the range's
	 * policy still reads as the chunk's) is unmapped, not cached: its pages are elsewhere. */
	char *h = numa_page_malloc(8 * MB);
	assert_non_null(h);
	memset(h, 1, 8 * MB);
	np_chunk_note_program_move(h + 3 * MB, 1);
	long unmaps = np_fake_os_unmaps();
	numa_page_free(h);
	assert_int_equal(np_fake_os_unmaps() - unmaps, 1);
	np_topo_table.is_system = false;
}

static void runs_moved_by_the_program_are_bound_back(void **state)
{
	(void)state;
	run_on_cpu(0, run_moved_fn, NULL);
	check_pools();
}

/* The marks under threads (for the sanitizer tiers, which run this suite; the wrappers that
 * mark live only in the shared library): one thread marks and frees its own runs, page-cache
 * sized and longer, while two others take and give back runs of the same node's pools. */
enum { MOVED_ROUNDS = 300 };
static void moved_marker_fn(void *arg)
{
	(void)arg;
	for (int i = 0; i < MOVED_ROUNDS; i++) {
		size_t size = (size_t)(16 + (i % 7) * 112) << 10; /* 16 KiB .. 688 KiB */
		char *p = numa_page_malloc(size);
		assert_non_null(p);
		p[0] = p[size - 1] = 1;
		np_chunk_note_program_move(p + (i % 3) * NP_PAGE_SIZE, size / 2);
		numa_page_free(p);
	}
}

static void moved_churn_fn(void *arg)
{
	(void)arg;
	void *keep[8] = {0};
	for (int i = 0; i < MOVED_ROUNDS * 4; i++) {
		int k = i % 8;
		numa_page_free(keep[k]);
		keep[k] = numa_page_malloc((size_t)(8 + (i % 11) * 40) << 10);
		assert_non_null(keep[k]);
		((char *)keep[k])[0] = 1;
	}
	for (int k = 0; k < 8; k++)
		numa_page_free(keep[k]);
}

static void *moved_thread(void *arg)
{
	np_fake_os_set_cpu(0);
	((void (*)(void *))arg)(NULL);
	return NULL;
}

static void runs_moved_while_others_churn(void **state)
{
	(void)state;
	np_topo_table.is_system = true;
	pthread_t t[3];
	void (*fn[3])(void *) = {moved_marker_fn, moved_churn_fn, moved_churn_fn};
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, moved_thread, (void *)fn[i]), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	np_topo_table.is_system = false;
	check_pools();
}

/* malloc_requested and malloc_in_use are counted on the node whose memory served the bytes:
 * for a thread of a memoryless node, its nearest memory nodes, never the home itself. */
static void malloc_bytes_count_where_served(void *arg)
{
	(void)arg;
	struct counters a, b;
	snap(&a);
	int home = np_topo_cpu_node(T, 2);
	assert_false(T->node[home].has_memory);
	enum { N = 300 };
	void *p[N];
	long per_req[NP_MAX_NODES] = {0}, per_use[NP_MAX_NODES] = {0};
	for (int i = 0; i < N; i++) {
		size_t n = 100 + (size_t)i * 37;
		p[i] = numa_page_malloc(n);
		int d = np_topo_node_index(T, numa_page_node_of(p[i]));
		per_req[d] += (long)n;
		per_use[d] += (long)numa_page_usable_size(p[i]);
	}
	snap(&b);
	for (int d = 0; d < T->nnodes; d++) {
		assert_int_equal(DELTA(&a, &b, d, malloc_requested), per_req[d]);
		assert_int_equal(DELTA(&a, &b, d, malloc_in_use), per_use[d]);
	}
	assert_int_equal(DELTA(&a, &b, home, malloc_requested), 0);
	for (int i = 0; i < N; i++)
		numa_page_free(p[i]);
}

static void wx_malloc_bytes_on_serving_node(void **state)
{
	(void)state;
	run_on_cpu(2, malloc_bytes_count_where_served, NULL); /* CPU 2: memoryless node 1 */
}

/* Statistics against what was allocated: numa_hit, local/other, pages_in_use, per node. */
static void statistics_match_allocations(void **state)
{
	(void)state;
	struct counters a, b;
	snap(&a);
	const size_t sizes[] = {PAGE, 2 * PAGE + 1, 64 * KB, 65 * KB, 300 * KB, 6 * MB};
	void *held[2][NP_ARRAY_SIZE(sizes)];
	long want[2] = {0, 0};
	for (int node = 0; node < 2; node++)
		for (size_t i = 0; i < NP_ARRAY_SIZE(sizes); i++) {
			held[node][i] = node ? numa_page_alloc_onnode(sizes[i], 1) : numa_page_alloc(sizes[i]);
			assert_non_null(held[node][i]);
			/* A huge block may get a larger cached chunk: it holds all of it. */
			size_t usable = numa_page_usable_size(held[node][i]);
			assert_true(usable >= (size_t)pages_for(sizes[i]) * PAGE);
			want[node] += (long)(usable / PAGE);
		}
	snap(&b);
	for (int d = 0; d < 2; d++) {
		assert_int_equal(DELTA(&a, &b, d, numa_hit), want[d]);
		assert_int_equal(DELTA(&a, &b, d, numa_miss), 0);
		assert_int_equal(DELTA(&a, &b, d, numa_foreign), 0);
		assert_int_equal(DELTA(&a, &b, d, pages_in_use), want[d]);
	}
	assert_int_equal(DELTA(&a, &b, 0, local_node), want[0]); /* home 0 */
	assert_int_equal(DELTA(&a, &b, 1, other_node), want[1]);
	assert_int_equal(DELTA(&a, &b, 0, other_node), 0);
	assert_int_equal(DELTA(&a, &b, 1, local_node), 0);
	for (int node = 0; node < 2; node++)
		for (size_t i = 0; i < NP_ARRAY_SIZE(sizes); i++)
			numa_page_free(held[node][i]);
	snap(&b);
	for (int d = 0; d < 2; d++)
		assert_int_equal(DELTA(&a, &b, d, pages_in_use), 0);
	/* Node 1's pages were freed by this node-0 thread: remote frees, every one. */
	assert_int_equal(DELTA(&a, &b, 1, remote_free), want[1]);
	assert_int_equal(DELTA(&a, &b, 0, remote_free), 0);
}

/* ---- threads ----------------------------------------------------------------------------- */

#define LIVES 10000
#define AT_ONCE 4

static void *volatile handoff[AT_ONCE]; /* a page each thread leaves for the next one */
static pthread_barrier_t all_alive;

struct life {
	int slot;
	unsigned seed;
	bool together; /* wait until AT_ONCE threads are alive (all hold their state) */
};

static void *life_main(void *arg)
{
	struct life *l = arg;
	unsigned s = l->seed;
	np_fake_os_set_cpu((int)(s % 4));
	void *p[6];
	const size_t sizes[] = {PAGE, 3 * PAGE, 16 * PAGE, 20 * PAGE, 64 * KB, 5 * PAGE};
	for (int i = 0; i < 6; i++) {
		p[i] = s % 7 == 0 ? numa_page_alloc_onnode(sizes[i], (int)(s % 2)) : numa_page_alloc(sizes[i]);
		if (!p[i])
			abort();
		*(unsigned *)p[i] = s;
		s = s * 1103515245u + 12345u;
	}
	if (l->together)
		pthread_barrier_wait(&all_alive);
	/* Free the page the previous thread of this slot left (allocated elsewhere). */
	void *prev = __atomic_exchange_n(&handoff[l->slot], p[5], __ATOMIC_ACQ_REL);
	numa_page_free(prev);
	for (int i = 4; i >= 0; i -= 2)
		numa_page_free(p[i]);
	for (int i = 1; i < 5; i += 2)
		numa_page_free(p[i]);
	return NULL;
}

static void run_lives(int rounds, unsigned seed, bool together)
{
	for (int r = 0; r < rounds; r++) {
		pthread_t t[AT_ONCE];
		struct life l[AT_ONCE];
		for (int i = 0; i < AT_ONCE; i++) {
			l[i] = (struct life){i, seed + (unsigned)(r * AT_ONCE + i) * 2654435761u, together};
			assert_int_equal(pthread_create(&t[i], NULL, life_main, &l[i]), 0);
		}
		for (int i = 0; i < AT_ONCE; i++)
			assert_int_equal(pthread_join(t[i], NULL), 0);
	}
}

/* 10,000 thread lifetimes: each thread's cache goes back at exit; nothing accumulates. */
static void thread_exit_returns_everything(void **state)
{
	(void)state;
	/* Warm up with AT_ONCE threads alive at once: that many thread structs exist from now on
	 * and are recycled (a struct is never unmapped), so they are part of the baseline. */
	pthread_barrier_init(&all_alive, NULL, AT_ONCE);
	run_lives(1, 1, true);
	pthread_barrier_destroy(&all_alive);
	long used0 = pool_used_pages(), in_use0 = total_in_use();
	int threads0[NP_MAX_NODES];
	for (int d = 0; d < T->nnodes; d++)
		threads0[d] = np_pcp_threads[d];
	run_lives(LIVES / AT_ONCE - 1, 99, false);
	assert_int_equal(total_in_use(), in_use0);
	assert_int_equal(pool_used_pages(), used0);
	for (int d = 0; d < T->nnodes; d++)
		assert_int_equal(np_pcp_threads[d], threads0[d]);
	struct numa_page_node_stats s;
	assert_int_equal(numa_page_stats_get(0, &s), 0);
	assert_true(s.threads >= 1); /* this thread */
	check_pools();
	for (int i = 0; i < AT_ONCE; i++) {
		numa_page_free(handoff[i]);
		handoff[i] = NULL;
	}
}

/* A thread the library never saw frees pages another thread allocated. */
static void *free_them(void *arg)
{
	void **p = arg;
	for (int i = 0; p[i]; i++)
		numa_page_free(p[i]);
	return NULL;
}

static void free_from_unknown_thread(void **state)
{
	(void)state;
	long base = total_in_use();
	void *p[5] = {numa_page_alloc(PAGE), numa_page_alloc(8 * PAGE), numa_page_alloc(50 * PAGE),
		      numa_page_alloc(5 * MB), NULL};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, free_them, p), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(total_in_use(), base);
	check_pools();
}

static volatile int stop_workers;

static void *churn(void *arg)
{
	unsigned s = (unsigned)(uintptr_t)arg;
	np_fake_os_set_cpu((int)(s % 4));
	void *held[16] = {0};
	while (!__atomic_load_n(&stop_workers, __ATOMIC_ACQUIRE)) {
		int i = (int)(s % 16);
		numa_page_free(held[i]);
		size_t size = (size_t)(1 + s % 40) * PAGE;
		held[i] = s % 5 ? numa_page_alloc(size) : numa_page_alloc_onnode(size, (int)(s % 2));
		if (!held[i])
			abort();
		*(char *)held[i] = 1;
		s = s * 1103515245u + 12345u;
	}
	for (int i = 0; i < 16; i++)
		numa_page_free(held[i]);
	return NULL;
}

/* The child of a fork: allocate and free on every node and check the pools, within 10 s. */
static int child_work(void)
{
	alarm(10);
	for (int d = 0; d < T->nnodes; d++) {
		if (np_pools[d].exists && np_pool_check(d))
			return 1;
		void *p = numa_page_alloc_onnode(3 * PAGE, os_of(d));
		void *q = numa_page_alloc_onnode(200 * PAGE, os_of(d));
		void *h = numa_page_alloc_onnode(5 * MB, os_of(d));
		if (!p || !q || !h)
			return 2;
		memset(q, 1, 200 * PAGE);
		numa_page_free(p);
		numa_page_free(q);
		numa_page_free(h);
	}
	void *many[300];
	for (int i = 0; i < 300; i++)
		if (!(many[i] = numa_page_alloc(PAGE)))
			return 3;
	for (int i = 0; i < 300; i++)
		numa_page_free(many[i]);
	/* A new thread in the child works too. */
	pthread_t t;
	void *p[3] = {numa_page_alloc(PAGE), numa_page_alloc(20 * PAGE), NULL};
	if (SANITIZED)
		free_them(p);
	else if (pthread_create(&t, NULL, free_them, p) || pthread_join(t, NULL))
		return 4;
	for (int d = 0; d < T->nnodes; d++)
		if (np_pools[d].exists && np_pool_check(d))
			return 5;
	return 0;
}

static void fork_in_threaded_program(void **state)
{
	(void)state;
	stop_workers = 0;
	pthread_t w[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&w[i], NULL, churn, (void *)(uintptr_t)(i * 7919 + 1)), 0);
	/* Each fork costs the parent ~0.1-0.3 s here (the child's exit tears down every mapping
	 * while two threads churn on two cores): a few forks, taken at random points. */
	for (int k = 0; k < 8; k++) {
		fflush(NULL);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(child_work());
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("fork %d: child %s %d", k, WIFEXITED(status) ? "exited" : "killed by signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	}
	__atomic_store_n(&stop_workers, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(w[i], NULL), 0);
	check_pools();
}

/* ---- purge (2node, NUMAPAGE_PURGE_MB=1, NUMAPAGE_DECAY_MS=0) ---------------------------------- */

static void purge_and_trim(void **state)
{
	(void)state;
	struct counters a, b;
	snap(&a);
	long purged_bytes0 = np_fake_os_purged_bytes();
	void *p[16];
	for (int i = 0; i < 16; i++) {
		p[i] = numa_page_alloc(256 * KB);
		memset(p[i], 0x44, 256 * KB);
	}
	for (int i = 0; i < 16; i++)
		numa_page_free(p[i]);
	snap(&b);
	long purged = DELTA(&a, &b, 0, pages_purged);
	assert_true(purged > 0); /* 4 MiB freed against a 1 MiB watermark */
	assert_true(np_pool_dirty_pages(0) <= 256);
	assert_int_equal(np_fake_os_purged_bytes() - purged_bytes0, purged * (long)PAGE);
	/* Trim gives back the rest (the thread's cache included). */
	void *q = numa_page_alloc(8 * PAGE);
	memset(q, 1, 8 * PAGE);
	numa_page_free(q);
	numa_page_trim();
	assert_int_equal(np_pool_dirty_pages(0), 0);
	snap(&b);
	/* Trim madvises the clean runs too (transparent huge pages may back them) but counts only
	 * the dirty ones: the 256 left and the 8 of the cache at least; a trim with nothing dirty
	 * left counts nothing. */
	long trimmed = DELTA(&a, &b, 0, pages_purged);
	assert_true(trimmed >= purged + 8);
	assert_true(np_fake_os_purged_bytes() - purged_bytes0 >= trimmed * (long)PAGE);
	assert_int_equal(numa_page_trim(), 0);
	snap(&b);
	assert_int_equal(DELTA(&a, &b, 0, pages_purged), trimmed);
	char *r = numa_page_alloc(MB);
	memset(r, 2, MB);
	numa_page_free(r);
	check_pools();
}

/* Trim (default watermark: nothing is purged on the way): freed pages and the thread's cache
 * go back to the OS, and trim says so; a second trim finds nothing. */
static void trim_releases_free_pages(void **state)
{
	(void)state;
	long purged0 = np_fake_os_purged_bytes();
	void *p[8];
	for (int i = 0; i < 8; i++) {
		p[i] = numa_page_alloc(i % 2 ? 300 * KB : 4 * PAGE);
		memset(p[i], 0x55, i % 2 ? 300 * KB : 4 * PAGE);
	}
	for (int i = 0; i < 8; i++)
		numa_page_free(p[i]);
	assert_true(np_pool_dirty_pages(0) > 0);
	assert_int_equal(numa_page_trim(), 1);
	for (int d = 0; d < T->nnodes; d++)
		assert_int_equal(np_pool_dirty_pages(d), 0);
	assert_true(np_fake_os_purged_bytes() > purged0);
	assert_int_equal(numa_page_trim(), 0);
	check_pools();
}

/* NUMAPAGE_PCP_BATCH=8, NUMAPAGE_PCP_HIGH=16 from the environment: refills bring 8 pages in one
 * pool visit, and the free that brings the cache to 16 sends 8 back. */
static void pcp_batch_from_environment(void **state)
{
	(void)state;
	numa_page_free(numa_page_alloc(PAGE)); /* this thread's state exists; 8 pages cached */
	struct counters a, b;
	snap(&a);
	void *p[9];
	for (int i = 0; i < 8; i++)
		p[i] = numa_page_alloc(PAGE);
	snap(&b);
	assert_int_equal(DELTA(&a, &b, 0, pcp_refill), 0); /* served from the cache */
	assert_int_equal(DELTA(&a, &b, 0, pages_alloc), 0);
	p[8] = numa_page_alloc(PAGE);
	snap(&b);
	assert_int_equal(DELTA(&a, &b, 0, pcp_refill), 1);
	assert_int_equal(DELTA(&a, &b, 0, pages_alloc), 8);
	/* 7 cached + 9 freed: the 9th free reaches 16. */
	for (int i = 0; i < 8; i++)
		numa_page_free(p[i]);
	snap(&b);
	assert_int_equal(DELTA(&a, &b, 0, pcp_drain), 0);
	numa_page_free(p[8]);
	snap(&b);
	assert_int_equal(DELTA(&a, &b, 0, pcp_drain), 1);
	assert_int_equal(DELTA(&a, &b, 0, pages_free), 8);
	assert_int_equal(DELTA(&a, &b, 0, pages_in_use), 0);
}

/* ---- memoryless fixtures -------------------------------------------------------------------- */

/* r7425: a thread on CPU 0 gets pages of node 1, CPU 4 -> node 5 (the nearest memory). */
static void r7425_cpu_to_memory(void **state)
{
	(void)state;
	const int want[8] = {1, 1, 1, 1, 5, 5, 5, 5};
	for (int cpu = 0; cpu < 8; cpu++) {
		struct counters a, b;
		snap(&a);
		struct probe pr = {.size = PAGE};
		run_on_cpu(cpu, probe_fn, &pr);
		snap(&b);
		assert_int_equal(pr.home, cpu);
		assert_int_equal(pr.node, want[cpu]);
		if (cpu != 1 && cpu != 5) {
			assert_int_equal(DELTA(&a, &b, want[cpu], numa_miss), 1);
			assert_int_equal(DELTA(&a, &b, cpu, numa_foreign), 1);
			assert_int_equal(DELTA(&a, &b, want[cpu], other_node), 1);
		} else {
			assert_int_equal(DELTA(&a, &b, cpu, numa_hit), 1);
			assert_int_equal(DELTA(&a, &b, cpu, local_node), 1);
		}
	}
	/* A home set to a memoryless node is served the same way. */
	assert_int_equal(numa_page_set_home_node(6), 0);
	void *p = numa_page_alloc(30 * PAGE);
	assert_int_equal(numa_page_node_of(p), 5);
	numa_page_free(p);
	assert_int_equal(numa_page_set_home_node(-1), 0);
}

/* 128 pages one at a time on a thread of a memoryless node: how many came from each node, and
 * the pages_stolen each node counted meanwhile. */
struct split {
	int home;
	int per[8];
	long stolen[8];
};

static void split_probe(void *arg)
{
	struct split *sp = arg;
	enum { N = 128 };
	void *p[N];
	struct numa_page_node_stats a[8], b[8];
	for (int n = 0; n < T->nnodes; n++)
		numa_page_stats_get(T->node[n].os_id, &a[n]);
	sp->home = numa_page_home_node();
	for (int i = 0; i < N; i++) {
		p[i] = numa_page_alloc(PAGE);
		assert_non_null(p[i]);
		sp->per[np_topo_node_index(T, numa_page_node_of(p[i]))]++;
	}
	for (int n = 0; n < T->nnodes; n++) {
		numa_page_stats_get(T->node[n].os_id, &b[n]);
		sp->stolen[n] = (long)(b[n].pages_stolen - a[n].pages_stolen);
	}
	for (int i = 0; i < N; i++)
		numa_page_free(p[i]);
}

/* 2990wx: memoryless nodes 1 and 3 take their batches from nodes 0 and 2 in turn, from their
 * first choice on, whatever the pools hold: an even split, counted as stolen on the member
 * that is not the first choice. */
static void wx_memoryless_share_evenly(void **state)
{
	(void)state;
	/* Pool 0 has this thread's pages; pool 2 has never been used. */
	assert_int_equal(np_pools[2].mapped_pages, 0);
	struct split sp = {0};
	run_on_cpu(6, split_probe, &sp); /* node 3: first choice 2 */
	assert_int_equal(sp.home, 3);
	assert_int_equal(sp.per[0], 64);
	assert_int_equal(sp.per[2], 64);
	assert_int_equal(sp.stolen[0], 64);
	assert_int_equal(sp.stolen[2], 0);
	/* Pool 2 now fuller than 0, or not: node 1 (first choice 0) splits the same way. */
	sp = (struct split){0};
	run_on_cpu(2, split_probe, &sp);
	assert_int_equal(sp.home, 1);
	assert_int_equal(sp.per[0], 64);
	assert_int_equal(sp.per[2], 64);
	assert_int_equal(sp.stolen[2], 64);
	assert_int_equal(sp.stolen[0], 0);
	check_pools();
}

/* ---- sparse: binds by OS id ------------------------------------------------------------------ */

static void sparse_binds_by_os_id(void **state)
{
	(void)state;
	/* From now on chunks are bound as on a real machine; the fake records OS ids. */
	np_topo_table.is_system = true;
	long binds = np_fake_os_binds();
	void *p = numa_page_alloc_onnode(PAGE, 5);
	assert_int_equal(numa_page_node_of(p), 5);
	assert_int_equal(np_fake_os_bound_node(p), 5);
	void *h = numa_page_alloc_onnode(6 * MB, 2);
	assert_int_equal(numa_page_node_of(h), 2);
	assert_int_equal(np_fake_os_bound_node(h), 2);
	assert_int_equal(np_fake_os_bound_node((char *)h + 6 * MB - 1), 2);
	assert_true(np_fake_os_binds() >= binds + 2);
	numa_page_free(p);
	numa_page_free(h);
	np_topo_table.is_system = false;
}

/* ---- driver ---------------------------------------------------------------------------------- */

/* Runs a group in a child process whose library loads `fixture` (extra NAME=VALUE settings in
 * env, NULL-terminated); returns the number of failed tests (or 100 when the child died). */
static int run_child(const char *fixture, const char *const *env, const char *group,
		     const struct CMUnitTest *tests, size_t n)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return 100;
	if (pid == 0) {
		char path[512];
		snprintf(path, sizeof path, "%s/%s.xml", NP_TOPOLOGIES, fixture);
		setenv("NUMAPAGE_TOPOLOGY", path, 1);
		setenv("NUMAPAGE_SHM", "0", 1);
		for (; env && *env; env += 2)
			setenv(env[0], env[1], 1);
		np_fake_os_set_cpu(0);
		/* Initialise here, so every test sees the fixture (and the main thread on CPU 0). */
		if (numa_page_node_count() != np_topo_table.nnodes || np_topo_table.is_system)
			_exit(100);
		_exit(_cmocka_run_group_tests(group, tests, n, NULL, NULL));
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		return 100;
	if (!WIFEXITED(status)) {
		fprintf(stderr, "%s: killed by signal %d\n", group, WTERMSIG(status));
		return 100;
	}
	return WEXITSTATUS(status);
}

#define RUN(fixture, env, ...)                                                                   \
	do {                                                                                    \
		const struct CMUnitTest t_[] = {__VA_ARGS__};                                   \
		failed += run_child(fixture, env, "page_api/" fixture, t_, NP_ARRAY_SIZE(t_)); \
	} while (0)

int main(void)
{
	int failed = 0;
	/* No decay: the watermark is the option plus what is in use, no recent peak (pool.h). */
	static const char *const purge_env[] = {"NUMAPAGE_PURGE_MB", "1", "NUMAPAGE_DECAY_MS", "0", NULL};
	RUN("2node", NULL, cmocka_unit_test(sizes_and_alignment), cmocka_unit_test(size_zero_is_one_page),
	    cmocka_unit_test(overflowing_sizes_are_enomem), cmocka_unit_test(free_null_and_errno),
	    cmocka_unit_test(node_of_foreign_pointers), cmocka_unit_test(huge_blocks),
	    cmocka_unit_test(a_refused_impossible_request_keeps_the_caches),
	    cmocka_unit_test(home_node_set_and_follow), cmocka_unit_test(thread_follows_migration),
	    cmocka_unit_test(realloc_placement),
	    cmocka_unit_test(policy_set_while_running_is_followed), cmocka_unit_test(blocks_bound_elsewhere_are_bound_back),
	    cmocka_unit_test(runs_moved_by_the_program_are_bound_back),
	    cmocka_unit_test(runs_moved_while_others_churn),
	    cmocka_unit_test(owner_frees_come_back_first), cmocka_unit_test(slabs_batched_beside_long_runs),
	    cmocka_unit_test(statistics_match_allocations), cmocka_unit_test(every_cpu_gets_nearest_memory),
	    cmocka_unit_test(onnode_every_node), cmocka_unit_test(invalid_nodes_are_einval),
	    cmocka_unit_test(interleaved_round_robin), cmocka_unit_test(free_from_unknown_thread),
	    cmocka_unit_test(trim_releases_free_pages), cmocka_unit_test(thread_exit_returns_everything),
	    cmocka_unit_test(fork_in_threaded_program));
	RUN("2node", purge_env, cmocka_unit_test(purge_and_trim));
	static const char *const pcp_env[] = {"NUMAPAGE_PCP_BATCH", "8", "NUMAPAGE_PCP_HIGH", "16", NULL};
	RUN("2node", pcp_env, cmocka_unit_test(pcp_batch_from_environment));
	RUN("r7425", NULL, cmocka_unit_test(r7425_cpu_to_memory), cmocka_unit_test(every_cpu_gets_nearest_memory),
	    cmocka_unit_test(onnode_every_node), cmocka_unit_test(invalid_nodes_are_einval),
	    cmocka_unit_test(interleaved_round_robin));
	RUN("2990wx", NULL, cmocka_unit_test(wx_memoryless_share_evenly), cmocka_unit_test(wx_malloc_bytes_on_serving_node),
	    cmocka_unit_test(every_cpu_gets_nearest_memory), cmocka_unit_test(onnode_every_node),
	    cmocka_unit_test(interleaved_round_robin), cmocka_unit_test(fork_in_threaded_program));
	RUN("sparse", NULL, cmocka_unit_test(sparse_binds_by_os_id), cmocka_unit_test(every_cpu_gets_nearest_memory),
	    cmocka_unit_test(onnode_every_node), cmocka_unit_test(invalid_nodes_are_einval),
	    cmocka_unit_test(interleaved_round_robin));
	RUN("4node", NULL, cmocka_unit_test(every_cpu_gets_nearest_memory), cmocka_unit_test(onnode_every_node),
	    cmocka_unit_test(interleaved_round_robin), cmocka_unit_test(interleave_policy_spreads_runs_over_a_third));
	static const char *const ilv_env[] = {"NUMAPAGE_INTERLEAVE_ABOVE", "1048576", NULL};
	RUN("4node", ilv_env, cmocka_unit_test(interleave_above_malloc_bytes),
	    cmocka_unit_test(interleave_policy_malloc_bytes));
	RUN("cxl", NULL, cmocka_unit_test(every_cpu_gets_nearest_memory), cmocka_unit_test(onnode_every_node),
	    cmocka_unit_test(invalid_nodes_are_einval), cmocka_unit_test(interleaved_round_robin));
	RUN("single", NULL, cmocka_unit_test(every_cpu_gets_nearest_memory), cmocka_unit_test(onnode_every_node),
	    cmocka_unit_test(interleaved_round_robin));
	return failed ? 1 : 0;
}
