/*
 * Unit tests of src/node/: which node serves a request. First choices (memoryless nodes dealt
 * their equidistant group's members in turn), the CPUs each pool serves, batches shared in turn
 * over the group (a member without room passed over) on the 2990WX and R7425 fixtures, near
 * masks, the task policy (read only on this machine, mapped to the table's nodes, overridden by
 * NUMAPAGE_BIND) and its targets, room (a rehearsal's fixture size, the kernel's figure on this
 * machine, a spill), and np_node_walk: the picked pool first, then the fallback order, each
 * node once, full nodes last, stopping at the first that serves, and only the nodes asked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>

#include "fake_os.h"
#include "options.h"
#include "node/node.h"
#include "pool/pool.h"
#include "unit_fixture.h"
#include "topology/topology.h"

/* Fills pool `node` with `pages` free pages (maps what it needs). */
static void fill(int node, size_t pages)
{
	struct np_page *r = np_pool_get_run(node, pages, 1, NULL, true);
	assert_non_null(r);
	np_pool_put_run(r, NULL);
}

static void pick_on_2990wx(void **state)
{
	(void)state;
	np_test_start("2990wx", NULL);
	/* Memoryless 1 and 3 are dealt the two equidistant memory nodes in turn as first
	 * choices, and take their batches from the group in turn from there. */
	assert_int_equal(np_node_primary(0), 0);
	assert_int_equal(np_node_primary(1), 0);
	assert_int_equal(np_node_primary(2), 2);
	assert_int_equal(np_node_primary(3), 2);
	assert_int_equal(np_node_cpus_served(0), 4);
	assert_int_equal(np_node_cpus_served(2), 4);
	unsigned r1 = 0, r3 = 0;
	bool shared = true;
	const int want1[] = {0, 2, 0, 2}, want3[] = {2, 0, 2, 0};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(np_node_pick(1, &r1, 8, &shared), want1[i]);
		assert_int_equal(shared, want1[i] != 0);
		assert_int_equal(np_node_pick(3, &r3, 8, &shared), want3[i]);
		assert_int_equal(shared, want3[i] != 2);
	}
	/* Whatever the pools hold: free pages are no measure of a node that grows on demand. */
	fill(2, NP_CHUNK_DATA_PAGES);
	r1 = 0;
	assert_int_equal(np_node_pick(1, &r1, 8, &shared), 0);
	assert_int_equal(np_node_pick(1, &r1, 8, &shared), 2);
	/* Memory nodes never share: they are their own group. */
	unsigned r0 = 0;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(np_node_pick(0, &r0, 8, &shared), 0);
		assert_false(shared);
	}
	/* A member without room, whose pool cannot serve either, is passed over (rehearsal: the
	 * node holds its fixture size). */
	long full = (long)np_pools[0].limit_pages;
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_in_use, full);
	assert_false(np_node_has_room(0, 1));
	assert_false(np_node_can_serve(0, NP_CHUNK_DATA_PAGES + 1));
	for (int i = 0; i < 4; i++)
		assert_int_equal(np_node_pick(1, &r1, NP_CHUNK_DATA_PAGES + 1, &shared), 2);
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_in_use, -full);
	assert_true(np_node_has_room(0, NP_CHUNK_DATA_PAGES + 1));
}

static void pick_on_r7425(void **state)
{
	(void)state;
	np_test_start("r7425", NULL);
	/* Each memoryless node has one nearest memory node: no choice, no sharing. */
	const int want[8] = {1, 1, 1, 1, 5, 5, 5, 5};
	fill(5, NP_CHUNK_DATA_PAGES);
	for (int n = 0; n < 8; n++) {
		unsigned rotor = 0;
		bool shared = true;
		assert_int_equal(np_node_primary(n), want[n]);
		for (int i = 0; i < 3; i++) {
			assert_int_equal(np_node_pick(n, &rotor, 8, &shared), want[n]);
			assert_false(shared);
		}
	}
}

static void policy_targets(void **state)
{
	(void)state;
	np_test_start("4node", NULL);
	unsigned rotor = 0;
	struct np_topo_policy def = {.mode = NP_POLICY_DEFAULT};
	assert_int_equal(np_node_target(&def, 2, &rotor), 2);
	assert_int_equal(np_node_target(NULL, 3, &rotor), 3);
	struct np_topo_policy pref = {.mode = NP_POLICY_PREFERRED, .nodes = (1ULL << 1) | (1ULL << 3)};
	assert_int_equal(np_node_target(&pref, 3, &rotor), 3); /* itself: distance 10 */
	assert_int_equal(np_node_target(&pref, 0, &rotor), 1); /* equidistant: the lowest */
	assert_int_equal(np_node_target_near(&pref, 1), 1ULL << 1);
	struct np_topo_policy ilv = {.mode = NP_POLICY_INTERLEAVE, .nodes = (1ULL << 0) | (1ULL << 2) | (1ULL << 3)};
	int seen[4] = {0};
	for (int i = 0; i < 30; i++)
		seen[np_node_target(&ilv, 1, &rotor)]++;
	assert_int_equal(seen[0], 10);
	assert_int_equal(seen[1], 0);
	assert_int_equal(seen[2], 10);
	assert_int_equal(seen[3], 10);
	assert_int_equal(np_node_target_near(&ilv, 2), ilv.nodes);
	assert_true(np_node_interleaves(&ilv, 2));
	assert_false(np_node_interleaves(&ilv, 1));
	assert_false(np_node_interleaves(&pref, 1));
	/* A rehearsal's nodes are not the kernel's: its policy is never read. */
	int nodes[] = {1};
	np_fake_os_set_mempolicy(1 /* MPOL_PREFERRED */, nodes, 1);
	struct np_topo_policy got;
	np_node_policy(&got);
	assert_int_equal(got.mode, NP_POLICY_DEFAULT);
	/* On this machine it is, unless NUMAPAGE_BIND is given. */
	np_topo_table.is_system = true;
	np_node_policy(&got);
	assert_int_equal(got.mode, NP_POLICY_PREFERRED);
	assert_int_equal(got.nodes, 1ULL << 1);
	int many[] = {0, 2, 7}; /* 7: not a node of this table */
	np_fake_os_set_mempolicy(6 /* MPOL_WEIGHTED_INTERLEAVE */, many, 3);
	np_node_policy(&got);
	assert_int_equal(got.mode, NP_POLICY_INTERLEAVE);
	assert_int_equal(got.nodes, (1ULL << 0) | (1ULL << 2));
	char what[160];
	np_topo_policy_describe(&np_topo_table, &got, what, sizeof what);
	assert_string_equal(what, "interleave over nodes 0,2 (MPOL_WEIGHTED_INTERLEAVE)");
	np_fake_os_set_mempolicy(1, NULL, 0); /* MPOL_PREFERRED, no node: local allocation */
	np_node_policy(&got);
	assert_int_equal(got.mode, NP_POLICY_DEFAULT);
	/* MPOL_BIND over every allowed node: what the allowed nodes say already. */
	int all[] = {0, 1, 2, 3};
	np_fake_os_set_mempolicy(2 /* MPOL_BIND */, all, 4);
	np_node_policy(&got);
	assert_int_equal(got.mode, NP_POLICY_DEFAULT);
	np_topo_policy_describe(&np_topo_table, &got, what, sizeof what);
	assert_string_equal(what, "default (MPOL_BIND: memory only from its nodes)");
	/* Over fewer (a thread bound itself since start-up): its nodes first. */
	np_fake_os_set_mempolicy(2 /* MPOL_BIND */, nodes, 1);
	np_node_policy(&got);
	assert_int_equal(got.mode, NP_POLICY_PREFERRED);
	assert_int_equal(got.nodes, 1ULL << 1);
	np_topo_policy_describe(&np_topo_table, &got, what, sizeof what);
	assert_string_equal(what, "bound to node 1 (MPOL_BIND)");
	np_fake_os_set_mempolicy(3 /* MPOL_INTERLEAVE */, many, 2);
	assert_int_equal(np_options_set("bind", "strict"), 0);
	np_node_policy(&got);
	assert_int_equal(got.mode, NP_POLICY_DEFAULT);
	np_options_reset();
	np_node_policy(&got);
	assert_int_equal(got.mode, NP_POLICY_INTERLEAVE);
	np_topo_table.is_system = false;
}

static void served_cpus_and_near_masks(void **state)
{
	(void)state;
	np_test_start("r7425", NULL);
	/* Every CPU is served by the pool nearest its node: 4 each. */
	assert_int_equal(np_node_cpus_served(1), 4);
	assert_int_equal(np_node_cpus_served(5), 4);
	assert_int_equal(np_node_cpus_served(0), 0);
	/* A memory node is near itself only; a memoryless one, its nearest memory node. */
	assert_int_equal(np_node_near(1), 1ULL << 1);
	assert_int_equal(np_node_near(0), 1ULL << 1);
	assert_int_equal(np_node_near(6), 1ULL << 5);
	np_test_start("2990wx", NULL);
	assert_int_equal(np_node_near(1), (1ULL << 0) | (1ULL << 2));
	assert_int_equal(np_node_near(2), 1ULL << 2);
}

/* A walk's tries in order; the try succeeds at node `accept` (-1: never), and only when it may
 * grow there when needs_grow is set (a request the pool's free pages cannot serve). */
struct log {
	int tried[64];
	bool stolen[64], grow[64];
	int n, accept;
	bool needs_grow;
};

static bool record(int node, bool stolen, bool grow, void *arg)
{
	struct log *l = arg;
	l->stolen[l->n] = stolen;
	l->grow[l->n] = grow;
	l->tried[l->n++] = node;
	return node == l->accept && (grow || !l->needs_grow);
}

static void walk_orders_every_node_once(void **state)
{
	(void)state;
	np_test_start("4node", NULL);
	/* Node 2's fallback: itself, then 0, 1, 3 (equidistant, by id). */
	struct log l = {.accept = -1};
	struct np_node_req r = {.intended = 2, .pages = 1};
	assert_int_equal(np_node_walk(&r, record, &l), -1);
	int want[] = {2, 0, 1, 3};
	assert_int_equal(l.n, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(l.tried[i], want[i]);
	/* It stops at the first that serves. */
	l = (struct log){.accept = 1};
	assert_int_equal(np_node_walk(&r, record, &l), 1);
	assert_int_equal(l.n, 3);
	/* Only the nodes asked for. */
	l = (struct log){.accept = -1};
	unsigned rotor = 0;
	r = (struct np_node_req){.intended = 2, .flags = NP_WALK_PICK, .only = 1ULL << 2, .pages = 1, .rotor = &rotor};
	assert_int_equal(np_node_walk(&r, record, &l), -1);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.tried[0], 2);
}

static void walk_tries_the_picked_pool_first(void **state)
{
	(void)state;
	np_test_start("2990wx", NULL);
	struct log l = {.accept = -1};
	unsigned rotor = 1; /* node 1's second pick: node 2, shared */
	struct np_node_req r = {.intended = 1, .flags = NP_WALK_PICK, .pages = 1, .rotor = &rotor};
	assert_int_equal(np_node_walk(&r, record, &l), -1);
	/* The picked pool first (shared), then node 1's fallback without it: 0, then 2 no more. */
	assert_int_equal(l.n, 2);
	assert_int_equal(l.tried[0], 2);
	assert_true(l.stolen[0]);
	assert_int_equal(l.tried[1], 0);
	assert_false(l.stolen[1]);
	/* Without NP_WALK_PICK the fallback order alone: 0 then 2 (ties by id). */
	l = (struct log){.accept = -1};
	r = (struct np_node_req){.intended = 1, .pages = 1};
	np_node_walk(&r, record, &l);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.tried[0], 0);
	assert_int_equal(l.tried[1], 2);
}

static void walk_passes_over_full_nodes_first(void **state)
{
	(void)state;
	np_test_start("4node", NULL);
	/* On this machine (a rehearsed full node serves nothing in the first round: the next
	 * test), the kernel says nodes 2 and 0 are full: every node is tried, 2 and 0 without
	 * growing; then 2 and 0 again, growing, only when nobody else served, in the same order. */
	np_topo_table.is_system = true;
	np_node_init(&np_topo_table);
	for (int n = 0; n < 4; n++)
		np_fake_os_set_node_avail(np_topo_table.node[n].os_id, n == 0 || n == 2 ? 0 : (int64_t)512 << 20);
	struct log l = {.accept = -1};
	struct np_node_req r = {.intended = 2, .pages = 16};
	assert_int_equal(np_node_walk(&r, record, &l), -1);
	const int want[] = {2, 0, 1, 3, 2, 0};
	const bool grow[] = {false, false, true, true, true, true};
	assert_int_equal(l.n, 6);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(l.tried[i], want[i]);
		assert_int_equal(l.grow[i], grow[i]);
	}
	l = (struct log){.accept = 1, .needs_grow = true};
	assert_int_equal(np_node_walk(&r, record, &l), 1);
	assert_int_equal(l.n, 3);
	l = (struct log){.accept = 2, .needs_grow = true};
	r.only = (1ULL << 2) | (1ULL << 0);
	assert_int_equal(np_node_walk(&r, record, &l), 2); /* no room anywhere allowed: home grows */
	assert_int_equal(l.n, 3);
	/* What the full node's pool already holds it serves, in the first round. */
	l = (struct log){.accept = 2};
	r = (struct np_node_req){.intended = 2, .pages = 16};
	assert_int_equal(np_node_walk(&r, record, &l), 2);
	assert_int_equal(l.n, 1);
	assert_false(l.grow[0]);
	np_topo_table.is_system = false;
}

/* A try that serves wherever it is asked, growing or not (a pool that holds free pages). */
static bool serve_any(int node, bool stolen, bool grow, void *arg)
{
	record(node, stolen, grow, arg);
	return true;
}

/* In a rehearsal the node's memory is its fixture size, and pages_in_use what it holds of it:
 * a node without room serves nothing while another allowed node has room, not even the free
 * pages its pool grew past the size (a whole chunk at a time: node 0 of 4node, 52767 pages,
 * served 56654 before a reviewer's program spilled to node 1). */
static void rehearsed_node_serves_no_more_than_its_memory(void **state)
{
	(void)state;
	np_test_start("4node", NULL);
	assert_false(np_topo_table.is_system);
	long size0 = (long)np_pools[0].limit_pages;
	fill(0, 100); /* node 0's pool holds a chunk's free pages */
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_in_use, size0 - 8);
	assert_true(np_pool_free_pages(0) >= 16);
	assert_false(np_node_can_serve(0, 16));
	assert_true(np_node_can_serve(0, 8)); /* what is left it serves, to the last page */
	unsigned rotor = 0;
	struct log l = {.accept = -1};
	struct np_node_req r = {.intended = 0, .flags = NP_WALK_PICK, .pages = 16, .rotor = &rotor};
	int from = np_node_walk(&r, serve_any, &l);
	assert_int_not_equal(from, 0);
	assert_int_equal(from, np_topo_table.node[0].fallback[1]);
	assert_int_equal(l.n, 1);
	assert_true(l.grow[0]);
	l = (struct log){.accept = -1};
	r.pages = 8;
	assert_int_equal(np_node_walk(&r, serve_any, &l), 0);
	/* Every node full: the intended one after all, growing. */
	long size[4];
	for (int n = 1; n < 4; n++) {
		size[n] = (long)np_pools[n].limit_pages;
		np_vmstat_add(NULL, n, NUMA_PAGE_STAT_pages_in_use, size[n]);
	}
	l = (struct log){.accept = -1};
	r.pages = 16;
	assert_int_equal(np_node_walk(&r, serve_any, &l), 0);
	assert_true(l.grow[l.n - 1]);
	for (int n = 1; n < 4; n++)
		np_vmstat_add(NULL, n, NUMA_PAGE_STAT_pages_in_use, -size[n]);
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_in_use, -(size0 - 8));
}

/* On this machine: the kernel's figure for the node, less a reserve, less what the library took
 * since it read it; read again after an eighth of it went, or every 64 questions when full. */
static void room_from_the_kernel(void **state)
{
	(void)state;
	np_test_start("2node", NULL);
	np_topo_table.is_system = true;
	np_node_init(&np_topo_table);
	int os0 = np_topo_table.node[0].os_id;
	np_fake_os_set_node_avail(os0, (int64_t)512 << 20); /* 512 MiB free on a node of the fixture's size */
	long reads = np_fake_os_avail_reads();
	assert_true(np_node_has_room(0, 256));
	assert_int_equal(np_fake_os_avail_reads() - reads, 1);
	assert_true(np_node_has_room(0, 256));
	assert_int_equal(np_fake_os_avail_reads() - reads, 1); /* not read again */
	/* What we take counts against it at once; past an eighth of what was there, the node is
	 * asked again, and the kernel now says 12 MiB: below the reserve. */
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_in_use, 500 << (20 - 12));
	np_fake_os_set_node_avail(os0, (int64_t)12 << 20);
	assert_false(np_node_has_room(0, 8 << (20 - 12)));
	assert_int_equal(np_fake_os_avail_reads() - reads, 2);
	for (int i = 0; i < 10; i++)
		assert_false(np_node_has_room(0, 8 << (20 - 12)));
	assert_int_equal(np_fake_os_avail_reads() - reads, 2);
	/* A spill says full at once, whatever was read. */
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_in_use, -(500 << (20 - 12)));
	np_fake_os_set_node_avail(os0, (int64_t)512 << 20);
	np_node_init(&np_topo_table);
	assert_true(np_node_has_room(0, 16));
	np_pool_note_spill(0);
	assert_false(np_node_has_room(0, 16));
	/* No figure at all (no /sys): the kernel decides, as before. */
	np_fake_os_set_node_avail(os0, -1);
	np_node_init(&np_topo_table);
	assert_true(np_node_has_room(0, (size_t)1 << 40));
	np_topo_table.is_system = false;
}

/* A node found full is asked again as soon as the library has given back what it held there
 * (a free, then malloc_trim or a purge): the last read is stale then, as after taking an eighth
 * of it. Only the skip count or the read's age let it be asked again, so the program's next
 * blocks after a trim went to another node for up to 64 questions or 100 ms: in the 2-node
 * guest, 128 blocks of 64 KiB after the frees and malloc_trim had 128-2,048 of their 2,048
 * pages on the other node, more often on a loaded host (vm_conditions, "full node"). The clock
 * stands still: no read may come of the read's age. */
static void room_read_again_after_memory_went_back(void **state)
{
	(void)state;
	np_test_start("2node", NULL);
	np_topo_table.is_system = true;
	np_fake_os_stop_clock(true);
	np_node_init(&np_topo_table);
	int os0 = np_topo_table.node[0].os_id;
	const long held = 64 << (20 - 12); /* 64 MiB of pages */
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_in_use, held);
	np_fake_os_set_node_avail(os0, (int64_t)4 << 20);
	np_pool_note_spill(0); /* the kernel put a page elsewhere: full */
	assert_false(np_node_has_room(0, 16));
	assert_false(np_node_has_room(0, 16));
	/* The program frees its 64 MiB and trims: the kernel has them again. */
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_in_use, -held);
	np_fake_os_set_node_avail(os0, (int64_t)68 << 20);
	long reads = np_fake_os_avail_reads();
	assert_true(np_node_has_room(0, 16));
	assert_int_equal(np_fake_os_avail_reads() - reads, 1);
	/* Freed blocks that stay in the pools are asked about once, and found still taken. */
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_in_use, held);
	np_pool_note_spill(0);
	assert_false(np_node_has_room(0, 16));
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_in_use, -held);
	np_fake_os_set_node_avail(os0, (int64_t)4 << 20);
	reads = np_fake_os_avail_reads();
	for (int i = 0; i < 10; i++)
		assert_false(np_node_has_room(0, 16));
	assert_int_equal(np_fake_os_avail_reads() - reads, 1);
	np_fake_os_stop_clock(false);
	np_topo_table.is_system = false;
}

/* Inactive file pages are room only where the kernel reclaims a node's own memory before it
 * goes to another (zone_reclaim_mode: any of its bits 1, 2, 4, as node_reclaim_enabled reads
 * it), and then only those its node reclaim may take: not mapped ones without bit 4, not dirty
 * ones without bit 2, and not the 1% of the node it leaves (min_unmapped_ratio). By default a
 * page that prefers a node at its watermark faults in on the next node with free memory, so a
 * node of page cache has no room for us; nor under strict binding, whatever the setting. The
 * mode is read at every read of the node (a sysctl that tuned or numad may change). */
static void file_pages_are_room_only_where_the_kernel_reclaims_first(void **state)
{
	(void)state;
	np_test_start("2node", NULL);
	np_topo_table.is_system = true;
	int os0 = np_topo_table.node[0].os_id;
	const int64_t MiB_ = (int64_t)1 << 20;
	np_fake_os_set_node_avail(os0, 12 * MiB_); /* 12 MiB free: below the reserve */
	/* 4 GiB of inactive file pages, 2 GiB of the node's file pages mapped, 1 GiB dirty (the
	 * page counts below: MiB << 8). */
	np_fake_os_set_node_file(os0, 4096 * MiB_, 2048 * MiB_, 1024 * MiB_);
	const size_t some = 256;
	np_node_init(&np_topo_table);
	assert_false(np_node_has_room(0, some)); /* mode 0 */
	np_fake_os_set_reclaim_mode(1);          /* clean unmapped pages only: under 1 GiB */
	np_node_init(&np_topo_table);
	assert_true(np_node_has_room(0, some));
	assert_true(np_node_has_room(0, (size_t)900 << 8));
	assert_false(np_node_has_room(0, (size_t)1024 << 8));
	np_fake_os_set_reclaim_mode(2); /* dirty pages written out too: under 2 GiB */
	np_node_init(&np_topo_table);
	assert_true(np_node_has_room(0, (size_t)1900 << 8));
	assert_false(np_node_has_room(0, (size_t)2048 << 8));
	np_fake_os_set_reclaim_mode(4 | 2); /* mapped and dirty pages too: nearly 4 GiB */
	np_node_init(&np_topo_table);
	assert_true(np_node_has_room(0, (size_t)3500 << 8));
	np_opt.bind = NP_BIND_STRICT;
	np_node_init(&np_topo_table);
	assert_false(np_node_has_room(0, some));
	np_opt.bind = NP_BIND_PREFERRED;
	/* Set back to 0 while running: read again with the node. */
	np_fake_os_set_reclaim_mode(0);
	np_node_init(&np_topo_table);
	assert_false(np_node_has_room(0, some));
	np_topo_table.is_system = false;
}

/* On a machine of one memory node (memoryless CPU nodes beside it, or one node in all) that
 * node's free memory is the machine's: one sysinfo, where reading the node's meminfo took
 * 14 us at every process start (docs/perf-issue15.md, section 49). With two memory nodes each
 * is read on its own. */
static void one_memory_node_is_read_as_the_machines_free_memory(void **state)
{
	(void)state;
	np_test_start("2node", NULL);
	np_topo_table.is_system = true;
	np_topo_table.node[1].has_memory = false; /* node 1 as a memoryless node */
	int os0 = np_topo_table.node[0].os_id;
	np_fake_os_set_node_avail(os0, (int64_t)512 << 20);
	np_node_init(&np_topo_table);
	long nodes = np_fake_os_avail_reads(), machine = np_fake_os_free_reads();
	assert_true(np_node_has_room(0, 256));
	assert_int_equal(np_fake_os_free_reads() - machine, 1);
	assert_int_equal(np_fake_os_avail_reads() - nodes, 0);
	/* What it says is the node's room: 12 MiB is below the reserve. */
	np_fake_os_set_node_avail(os0, (int64_t)12 << 20);
	np_node_init(&np_topo_table);
	assert_false(np_node_has_room(0, 256));
	assert_int_equal(np_fake_os_avail_reads() - nodes, 0);
	/* sysinfo refused (a seccomp filter): the node's own file, as before. */
	np_fake_os_fail_mem_free(true);
	np_node_init(&np_topo_table);
	assert_false(np_node_has_room(0, 256));
	assert_true(np_fake_os_avail_reads() - nodes >= 1);
	np_fake_os_fail_mem_free(false);
	/* A kernel without NUMA (no /sys/devices/system/node, its one node made up): no node
	 * file to read, and the room is not judged at all, as before (the kernel decides); the
	 * machine's free memory is not read in its place (a review: it marked a machine of page
	 * cache low, which makes the purge follow the current use). */
	np_fake_os_set_lists_nodes(false);
	np_fake_os_set_node_avail(os0, -1);
	np_node_init(&np_topo_table);
	np_pool_set_low(0, false); /* as a process starts (the 12 MiB above marked it) */
	machine = np_fake_os_free_reads();
	assert_true(np_node_has_room(0, 256));
	assert_false(np_pool_is_low(0));
	assert_int_equal(np_fake_os_free_reads() - machine, 0);
	np_fake_os_set_lists_nodes(true);
	nodes = np_fake_os_avail_reads();
	/* Two nodes of memory: the node itself is read. */
	np_topo_table.node[1].has_memory = true;
	np_fake_os_set_node_avail(os0, (int64_t)512 << 20);
	np_node_init(&np_topo_table);
	machine = np_fake_os_free_reads();
	assert_true(np_node_has_room(0, 256));
	assert_int_equal(np_fake_os_avail_reads() - nodes, 1);
	assert_int_equal(np_fake_os_free_reads() - machine, 0);
	np_topo_table.is_system = false;
}

/* zone_reclaim_mode decides whether file pages count, which matters only where free memory
 * alone would answer "no room" or mark the node low: read then, not at every read of the node
 * (5 us at every process start). The answers are those of reading it each time
 * (file_pages_are_room_only_where_the_kernel_reclaims_first): a question larger than the free
 * memory reads it too. */
static void reclaim_mode_is_read_only_where_free_memory_is_short(void **state)
{
	(void)state;
	np_test_start("2node", NULL);
	np_topo_table.is_system = true;
	int os0 = np_topo_table.node[0].os_id;
	const int64_t MiB_ = (int64_t)1 << 20;
	np_fake_os_set_node_file(os0, 4096 * MiB_, 0, 0);
	np_fake_os_set_reclaim_mode(1);
	np_fake_os_set_node_avail(os0, 64 * 1024 * MiB_); /* plenty free */
	np_node_init(&np_topo_table);
	long modes = np_fake_os_mode_reads();
	assert_true(np_node_has_room(0, 256));
	assert_int_equal(np_fake_os_mode_reads() - modes, 0);
	/* 12 MiB free, 4 GiB of clean unmapped file pages the kernel reclaims first: room. */
	np_fake_os_set_node_avail(os0, 12 * MiB_);
	np_node_init(&np_topo_table);
	assert_true(np_node_has_room(0, 256));
	assert_int_equal(np_fake_os_mode_reads() - modes, 1);
	/* 3 GiB asked of 2 GiB free: the file pages make the room. */
	np_fake_os_set_node_avail(os0, 2048 * MiB_);
	np_node_init(&np_topo_table);
	assert_true(np_node_has_room(0, (size_t)3072 << 8));
	assert_int_equal(np_fake_os_mode_reads() - modes, 2);
	/* Mode 0: free memory only, whatever the file pages. */
	np_fake_os_set_reclaim_mode(0);
	np_node_init(&np_topo_table);
	assert_false(np_node_has_room(0, (size_t)3072 << 8));
	np_topo_table.is_system = false;
}

/* The setting is also read where free memory would fall short before the next read: what the
 * library takes until then (up to an eighth of the read) counts off the room, and with the file
 * pages left out the node was marked low (new chunks verified page by page) where, counting
 * them, it had gigabytes to spare (a review: free memory just over five reserves). */
static void reclaim_mode_is_read_where_taking_until_the_next_read_falls_short(void **state)
{
	(void)state;
	np_test_start("2node", NULL);
	np_topo_table.is_system = true;
	np_fake_os_stop_clock(true);
	int os0 = np_topo_table.node[0].os_id;
	const int64_t MiB_ = (int64_t)1 << 20;
	np_fake_os_set_node_file(os0, 4096 * MiB_, 0, 0);
	np_fake_os_set_reclaim_mode(1);
	size_t reserve = 2 * NP_CHUNK_PAGES + (size_t)(np_topo_table.node[0].mem_bytes >> NP_PAGE_SHIFT) / 64;
	size_t free_pages = 5 * reserve + 1;
	np_fake_os_set_node_avail(os0, (int64_t)free_pages << NP_PAGE_SHIFT);
	np_node_init(&np_topo_table);
	assert_true(np_node_has_room(0, 16));
	assert_false(np_pool_is_low(0));
	long take = (long)(free_pages / 8);
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_in_use, take);
	assert_true(np_node_has_room(0, 16));
	assert_false(np_pool_is_low(0)); /* 4 GiB of page cache the kernel reclaims first */
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_pages_in_use, -take);
	np_fake_os_stop_clock(false);
	np_topo_table.is_system = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(pick_on_2990wx, np_test_teardown_pools),
		cmocka_unit_test_teardown(room_read_again_after_memory_went_back, np_test_teardown_pools),
		cmocka_unit_test_teardown(pick_on_r7425, np_test_teardown_pools),
		cmocka_unit_test_teardown(served_cpus_and_near_masks, np_test_teardown_pools),
		cmocka_unit_test_teardown(walk_orders_every_node_once, np_test_teardown_pools),
		cmocka_unit_test_teardown(walk_tries_the_picked_pool_first, np_test_teardown_pools),
		cmocka_unit_test_teardown(walk_passes_over_full_nodes_first, np_test_teardown_pools),
		cmocka_unit_test_teardown(rehearsed_node_serves_no_more_than_its_memory, np_test_teardown_pools),
		cmocka_unit_test_teardown(policy_targets, np_test_teardown_pools),
		cmocka_unit_test_teardown(room_from_the_kernel, np_test_teardown_pools),
		cmocka_unit_test_teardown(file_pages_are_room_only_where_the_kernel_reclaims_first,
					  np_test_teardown_pools),
		cmocka_unit_test_teardown(one_memory_node_is_read_as_the_machines_free_memory,
					  np_test_teardown_pools),
		cmocka_unit_test_teardown(reclaim_mode_is_read_only_where_free_memory_is_short,
					  np_test_teardown_pools),
		cmocka_unit_test_teardown(reclaim_mode_is_read_where_taking_until_the_next_read_falls_short,
					  np_test_teardown_pools),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
