/*
 * Unit tests of src/malloc/slab.c, the slab state machine, on the fake OS with np_slab_check run
 * after every step: a new slab hands out every block once (extending a page at a time), its
 * owner's frees come back at the head of free, other threads' frees through the lock-free remote
 * list (collect takes them in one exchange); OWNED -> FLOATING when the owner lets a full slab go
 * (refused while remote frees are pending), -> ORPHAN when the first remote free claims it, ->
 * OWNED again when a thread adopts it from its node's orphans; the orphan sweep releases the
 * slabs that remote frees emptied; a released slab's run goes back to the page cache. And the
 * link checks: a corrupted link (a write after free, local or remote) cuts the list there,
 * never handing out a block twice, the block whose link is bad, or an address outside the slab,
 * and the slab is never given back after that; double frees are found by the owner's walk, by
 * the racy walk of other threads and by the mark a remote free leaves; a block pushed twice
 * on the remote list (a double free those checks missed) is stopped by the push itself (at the
 * head), when the owner collects more frees than blocks in use, when the pops reach its second
 * copy, or when the slab would be given back; block indices
 * match division.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_os.h"
#include "malloc/sizeclass.h"
#include "malloc/slab.h"
#include "pcp/pcp.h"
#include "unit_child.h"
#include "unit_fixture.h"
#include "topology/topology.h"
#include "vmstat/vmstat.h"

/* Opaque owners: any non-NULL pointer that is not NP_NO_OWNER (slabs only compare them). */
#define OWNER ((struct np_thread *)(uintptr_t)0x1000)
#define OTHER ((struct np_thread *)(uintptr_t)0x2000)

static struct np_vmstat_diffs *st;
static struct np_pcp pcp;

static int setup(void **state)
{
	(void)state;
	np_test_start("2node", NULL);
	st = calloc(1, sizeof *st);
	np_vmstat_register(st);
	np_pcp_init(&pcp, 0, st, NULL);
	np_pcp_count_thread(&pcp);
	np_slab_init_secret();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	np_pcp_drain(&pcp);
	np_pcp_fini(&pcp);
	np_vmstat_unregister(st);
	free(st);
	np_test_unmap_pools();
	np_fake_os_reset();
	return 0;
}

static void check(const struct np_slab *s)
{
	const char *err = np_slab_check(s);
	if (err)
		fail_msg("slab %p: %s", (void *)s->start, err);
}

/* A block, as malloc's slow path takes one: refill when free is empty, and again
 * when the pop found the head's link bad (the list ends before it). */
static uintptr_t take_as(struct np_slab *s, bool checked)
{
	for (;;) {
		if (!s->free && !np_slab_refill(s))
			return 0;
		uintptr_t b = np_slab_pop(s);
		if (checked)
			check(s);
		if (b)
			return b;
	}
}

static uintptr_t take(struct np_slab *s)
{
	return take_as(s, true);
}

static void free_local(struct np_slab *s, uintptr_t b)
{
	np_slab_push_free(s, b, np_slab_index(s, b));
	s->used--;
	check(s);
}

/* Another thread's free of b, as free.c makes it once its checks passed. */
static void free_remote(struct np_slab *s, uintptr_t b)
{
	bool first;
	np_slab_push_remote(s, b, np_slab_index(s, b), &first);
}

static void every_block_once_then_back(void **state)
{
	(void)state;
	/* 16 B, 96 B, 1 KiB, 4 KiB, 16 KiB; 20 KiB, a slab of two steps */
	const unsigned classes[] = {0, 5, 19, 27, 39, 40};
	for (size_t k = 0; k < NP_ARRAY_SIZE(classes); k++) {
		struct np_slab *s = np_slab_create(&pcp, classes[k], OWNER);
		assert_non_null(s);
		check(s);
		assert_int_equal(s->block, np_class_size[classes[k]]);
		assert_int_equal(s->capacity, np_class_slab_bytes(classes[k]) / s->block);
		assert_int_equal(s->node, 0);
		uint8_t *seen = calloc(s->capacity, 1);
		for (uint32_t i = 0; i < s->capacity; i++) {
			uintptr_t b = take(s);
			assert_true(np_slab_is_block(s, b));
			uint64_t idx = np_slab_index(s, b);
			assert_false(seen[idx]);
			seen[idx] = 1;
			memset((void *)b, 0x5a, s->block); /* the program writes its block */
		}
		assert_int_equal(s->used, s->capacity);
		assert_int_equal(take(s), 0); /* full */
		for (uint32_t i = 0; i < s->capacity; i++)
			free_local(s, np_slab_block(s, i));
		assert_int_equal(s->used, 0);
		free(seen);
		struct np_page *run = s->run;
		np_slab_release(s, &pcp);
		/* Back to the page cache: one of its sizes, or a long run it keeps for the next. */
		assert_int_equal(np_page_state(run), NP_PAGE_PCP);
		assert_null(s->owner); /* the metadata slot no longer reads as a slab */
	}
}

/* A slab longer than a slot's 128 KiB names itself in the slots of its later steps (free finds
 * it there, np_free_slow), and nothing else does: not its own header, not a one-step slab, not the
 * chunk's first step (slot 0 holds the chunk's own fields), not a released slab. */
static void later_steps_name_their_slab(void **state)
{
	(void)state;
	/* 4 KiB, 16 KiB (128 KiB slabs, one step); 20 KiB (256 KiB, two), 64 KiB (512 KiB, four) */
	const unsigned classes[] = {27, 39, 40, 47};
	for (size_t k = 0; k < NP_ARRAY_SIZE(classes); k++) {
		struct np_slab *s = np_slab_create(&pcp, classes[k], OWNER);
		assert_non_null(s);
		check(s);
		size_t steps = np_class_slab_bytes(classes[k]) / NP_SLAB_ALIGN;
		assert_int_equal(steps, k < 2 ? 1 : k == 2 ? 2 : 4);
		assert_null(np_slab_lead(s->start));
		assert_null(np_slab_lead(s->start + NP_SLAB_ALIGN - 16));
		for (size_t j = 1; j < steps; j++) {
			assert_ptr_equal(np_slab_lead(s->start + j * NP_SLAB_ALIGN), s);
			assert_ptr_equal(np_slab_lead(s->start + j * NP_SLAB_ALIGN + 4096 + 16), s);
		}
		np_slab_release(s, &pcp);
		for (size_t j = 1; j < steps; j++)
			assert_null(np_slab_lead(s->start + j * NP_SLAB_ALIGN));
	}
	/* Slot 0's bytes where a lead would be are the chunk's (an interleaved chunk's node list):
	 * never read as one. */
	struct np_slab *s = np_slab_create(&pcp, 47, OWNER);
	struct np_slab *slot0 = np_slab_at_step((const void *)(s->start & ~(NP_CHUNK_SIZE - 1)));
	struct np_slab *saved = slot0->lead;
	slot0->lead = s;
	assert_null(np_slab_lead((s->start & ~(NP_CHUNK_SIZE - 1)) + 4096));
	slot0->lead = saved;
	np_slab_release(s, &pcp);
}

static void remote_frees_come_back_in_one_collect(void **state)
{
	(void)state;
	struct np_slab *s = np_slab_create(&pcp, 3, OWNER); /* 64 B */
	uintptr_t b[10];
	for (int i = 0; i < 10; i++)
		b[i] = take(s);
	bool first = false;
	for (int i = 0; i < 4; i++) {
		assert_false(np_slab_push_remote(s, b[i], np_slab_index(s, b[i]), &first)); /* OWNED: no claim */
		assert_int_equal(first, i == 0);
		check(s);
	}
	assert_int_equal(s->used, 10);
	assert_int_equal(np_slab_collect(s), 4);
	assert_int_equal(s->used, 6);
	check(s);
	assert_int_equal(np_slab_collect(s), 0);
	/* Taken whole, newest first, in front of what was free. */
	for (int i = 3; i >= 0; i--)
		assert_int_equal(take(s), b[i]);
	for (int i = 0; i < 10; i++)
		free_local(s, b[i]);
	assert_true(np_slab_confirm_empty(s)); /* its blocks counted: all back, once each */
	np_slab_release(s, &pcp);
}

static void remote_free_leaves_a_mark(void **state)
{
	(void)state;
	struct np_slab *s = np_slab_create(&pcp, 0, OWNER); /* 16 B: the mark is the last word */
	uintptr_t a = take(s), b = take(s);
	assert_false(np_slab_has_mark(s, a)); /* live, and never written */
	memset((void *)a, 0xff, 16);
	assert_false(np_slab_has_mark(s, a)); /* live, written */
	free_remote(s, a);
	assert_true(np_slab_has_mark(s, a));
	*(uintptr_t *)a = 0; /* a write after free over the link: the mark stays */
	assert_true(np_slab_has_mark(s, a));
	*(uintptr_t *)a = np_slab_encode(s, s->end);
	assert_int_equal(np_slab_collect(s), 1);
	assert_true(np_slab_has_mark(s, a)); /* collected, not handed out yet: still free */
	assert_int_equal(take(s), a);
	assert_false(np_slab_has_mark(s, a)); /* handed out again: malloc wiped it */
	free_local(s, b);
	assert_false(np_slab_has_mark(s, b)); /* the owner's frees leave none */
}

static void collect_checks_the_count(void **state)
{
	(void)state;
	struct np_slab *s = np_slab_create(&pcp, 3, OWNER);
	uintptr_t b[3] = {take(s), take(s), take(s)};
	for (int i = 0; i < 3; i++)
		free_remote(s, b[i]);
	assert_int_equal(np_slab_collect(s), 3);
	assert_int_equal(s->used, 0);
	check(s);
	assert_true(np_slab_confirm_empty(s));
}

/* ---- blocks pushed twice on the remote list: double frees the checks at the free missed ---- */

/* A new slab of 64-byte blocks with n of them in use, b[0..n-1]. */
static struct np_slab *dup_slab(uintptr_t *b, int n)
{
	struct np_slab *s = np_slab_create(&pcp, 3, OWNER);
	for (int i = 0; i < n; i++)
		b[i] = take(s);
	assert_int_equal(s->used, n);
	return s;
}

/* The program wrote the block's first 16 bytes between the two frees: mark and link gone. */
static void overwrite(uintptr_t b)
{
	memset((void *)b, 0x33, 16);
}

/* A block pushed again while it heads the list is stopped by the push itself. */
static void dup_at_the_head(void)
{
	uintptr_t b[2];
	struct np_slab *s = dup_slab(b, 2);
	free_remote(s, b[0]);
	free_remote(s, b[1]);
	overwrite(b[1]);
	free_remote(s, b[1]);
}

static void dup_first_of_list(void)
{
	uintptr_t b[4];
	struct np_slab *s = dup_slab(b, 4);
	free_remote(s, b[0]);
	free_remote(s, b[1]);
	overwrite(b[0]);
	free_remote(s, b[0]);
	/* 3 frees of 4 blocks in use: collect takes them without reading a block, and relinking
	 * the oldest, b[0], cuts b[1] off the list; used is 1 while b[2] and b[3] are live. The
	 * owner's free of b[2] makes it 0, and the count before the release finds the list short. */
	np_slab_collect(s);
	np_slab_push_free(s, b[2], np_slab_index(s, b[2]));
	if (--s->used == 0)
		np_slab_confirm_empty(s);
}

static void dup_more_than_used(void)
{
	uintptr_t b[2];
	struct np_slab *s = dup_slab(b, 2);
	free_remote(s, b[1]);
	free_remote(s, b[0]);
	overwrite(b[1]);
	free_remote(s, b[1]);
	np_slab_collect(s); /* 3 frees, 2 blocks in use */
}

static void dup_found_at_release(void)
{
	uintptr_t b[4];
	struct np_slab *s = dup_slab(b, 4);
	free_remote(s, b[0]);
	free_remote(s, b[1]);
	free_remote(s, b[2]);
	overwrite(b[1]);
	free_remote(s, b[1]);
	np_slab_collect(s); /* 4 frees of 4 blocks: used 0 while b[3] is live */
	if (s->used == 0)
		np_slab_confirm_empty(s); /* counts the blocks: b[1] twice */
}

static void remote_double_push_is_stopped(void **state)
{
	(void)state;
	assert_true(np_test_aborts_with(dup_at_the_head, "double free"));
	assert_true(np_test_aborts_with(dup_first_of_list, "double free"));
	assert_true(np_test_aborts_with(dup_more_than_used, "double free"));
	assert_true(np_test_aborts_with(dup_found_at_release, "double free"));
	/* Among other blocks in use: collect takes it; the second copy is reached by the pops,
	 * where the block is live (its link zeroed): it is not handed out again, the slab is
	 * never given back, and used stays an upper bound. */
	uintptr_t b[5];
	struct np_slab *s = dup_slab(b, 5);
	free_remote(s, b[0]);
	free_remote(s, b[1]);
	free_remote(s, b[2]);
	overwrite(b[1]);
	free_remote(s, b[1]);
	uint64_t before = np_vmstat_snapshot(0, NUMA_PAGE_STAT_freelist_corrupt);
	assert_int_equal(np_slab_collect(s), 4);
	assert_int_equal(take(s), b[1]);
	assert_int_equal(take(s), b[2]);
	uintptr_t next = take(s);
	assert_true(next != b[0] && next != b[1] && next != b[2] && np_slab_is_block(s, next));
	assert_int_equal(np_vmstat_snapshot(0, NUMA_PAGE_STAT_freelist_corrupt), before + 1);
	check(s);
	assert_true(s->used >= NP_SLAB_PINNED);
}

static void float_claim_orphan_adopt(void **state)
{
	(void)state;
	struct np_slab *s = np_slab_create(&pcp, 7, OWNER); /* 128 B */
	uintptr_t *b = calloc(s->capacity, sizeof *b);
	for (uint32_t i = 0; i < s->capacity; i++)
		b[i] = take(s);
	/* Remote frees pending: the owner may not let it go. */
	bool first;
	np_slab_push_remote(s, b[0], np_slab_index(s, b[0]), &first);
	assert_false(np_slab_float(s));
	assert_ptr_equal(s->owner, OWNER);
	np_slab_collect(s);
	b[0] = take(s);
	/* Full and quiet: it floats. */
	assert_true(np_slab_float(s));
	assert_ptr_equal(s->owner, NP_NO_OWNER);
	assert_ptr_equal(s->floater, OWNER);
	assert_int_equal(atomic_load(&s->thread_free) & NP_SLAB_STATE_MASK, NP_SLAB_FLOATING);
	/* The first remote free claims it; later ones do not. */
	assert_true(np_slab_push_remote(s, b[1], np_slab_index(s, b[1]), &first));
	assert_int_equal(atomic_load(&s->thread_free) & NP_SLAB_STATE_MASK, NP_SLAB_ORPHAN);
	assert_false(np_slab_push_remote(s, b[2], np_slab_index(s, b[2]), &first));
	/* The claimer hands it to the node's orphans; a thread of the node adopts it. */
	np_slab_orphan(s);
	assert_null(np_slab_adopt(0, 3, OTHER)); /* another class: nothing */
	struct np_slab *a = np_slab_adopt(0, 7, OTHER);
	assert_ptr_equal(a, s);
	assert_ptr_equal(s->owner, OTHER);
	assert_int_equal(atomic_load(&s->thread_free) & NP_SLAB_STATE_MASK, NP_SLAB_OWNED);
	assert_int_equal(np_slab_collect(s), 2); /* the two remote frees */
	check(s);
	free_local(s, b[0]);
	for (uint32_t i = 3; i < s->capacity; i++)
		free_local(s, b[i]);
	assert_int_equal(s->used, 0);
	free(b);
	np_slab_release(s, &pcp);
}

static void orphan_sweep_releases_emptied_slabs(void **state)
{
	(void)state;
	struct np_slab *s = np_slab_create(&pcp, 10, OWNER); /* 224 B */
	uintptr_t b[3] = {take(s), take(s), take(s)};
	np_slab_orphan(s); /* as a thread's exit leaves a slab with live blocks */
	assert_int_equal(np_slab_sweep_orphans(NP_SWEEP_COLLECT, NULL), 0); /* still used: kept */
	bool first;
	for (int i = 0; i < 3; i++)
		np_slab_push_remote(s, b[i], np_slab_index(s, b[i]), &first);
	size_t pages = np_class_slab_bytes(10) >> NP_PAGE_SHIFT;
	assert_int_equal(np_slab_sweep_orphans(NP_SWEEP_COLLECT, NULL), pages); /* emptied by remote frees: released */
	assert_null(np_slab_adopt(0, 10, OTHER));
}

/* A slab given back (its blocks all free) leaves pages_in_use, but is no free of the program's:
 * remote_free counts the frees of its objects, one by one (free.c), and not the slab's pages
 * again when the thread that gives it back is on another node (a thread moved after its
 * mallocs counted 1000 remote frees, then 1081 more at its exit), nor when the orphan sweep
 * of a thread on another node does. */
static void released_slab_is_no_remote_free(void **state)
{
	(void)state;
	int cpu1 = -1;
	for (int c = 0; c < np_topo_table.ncpus && cpu1 < 0; c++)
		if (np_topo_table.cpu[c].node == 1)
			cpu1 = c;
	assert_true(cpu1 >= 0);
	size_t pages = np_class_slab_bytes(10) >> NP_PAGE_SHIFT; /* 224 B */
	struct np_slab *s = np_slab_create(&pcp, 10, OWNER), *o = np_slab_create(&pcp, 10, OWNER);
	assert_int_equal(s->node, 0);
	uintptr_t b = take(s), c = take(o);
	long in_use = np_vmstat_snapshot(0, NUMA_PAGE_STAT_pages_in_use);
	long remote = np_vmstat_snapshot(0, NUMA_PAGE_STAT_remote_free);
	np_pcp_set_home(&pcp, 1); /* the thread moved to node 1 */
	assert_true(np_pcp_is_remote(&pcp, 0));
	free_local(s, b);
	np_slab_release(s, &pcp);
	assert_int_equal(np_vmstat_snapshot(0, NUMA_PAGE_STAT_pages_in_use), in_use - (long)pages);
	assert_int_equal(np_vmstat_snapshot(0, NUMA_PAGE_STAT_remote_free), remote);
	/* An orphan emptied by a remote free, released by the sweep of a thread on node 1. */
	np_slab_orphan(o);
	bool first;
	np_slab_push_remote(o, c, np_slab_index(o, c), &first);
	np_fake_os_set_cpu(cpu1);
	assert_int_equal(np_slab_sweep_orphans(NP_SWEEP_COLLECT, NULL), pages);
	np_fake_os_set_cpu(0);
	assert_int_equal(np_vmstat_snapshot(0, NUMA_PAGE_STAT_pages_in_use), in_use - 2 * (long)pages);
	assert_int_equal(np_vmstat_snapshot(0, NUMA_PAGE_STAT_remote_free), remote);
	np_pcp_set_home(&pcp, 0);
}

/* s, an orphan of node 0 with one live block b (written 0x5a) after a purge of its free
 * pages: b keeps its data, s is still listed whole (adopted), and goes once b is freed. */
static void orphan_keeps_its_block_then_goes(struct np_slab *s, uintptr_t b)
{
	for (size_t k = 0; k < s->block; k++)
		assert_int_equal(((const unsigned char *)b)[k], 0x5a);
	struct np_slab *a = np_slab_adopt(0, s->cls, OTHER);
	assert_ptr_equal(a, s);
	check(s);
	np_slab_collect(s);
	free_local(s, b);
	assert_int_equal(s->used, 0);
	np_slab_release(s, &pcp);
}

/* The orphans' decay (np_slab_decay_orphans, once a NUMAPAGE_DECAY_MS period): an orphan's
 * free pages go back at the second pass after it was listed (so after a whole period at
 * least), not at the first, nor at a call before a period is over; and not again while no
 * block was freed into it since. The kept block keeps its data. */
static void orphan_decay_gives_back_after_a_whole_period(void **state)
{
	(void)state;
	const uint64_t period = 1000000, now = (uint64_t)1 << 40;
	unsigned cls = np_size_class(20000); /* 20 KiB blocks: four pages inside each */
	struct np_slab *s = np_slab_create(&pcp, cls, OWNER);
	uintptr_t b[3] = {take(s), take(s), take(s)};
	for (int i = 0; i < 3; i++)
		memset((void *)b[i], 0x5a, s->block);
	np_slab_decay_orphans(now, period, st); /* a pass begins before s is an orphan */
	np_slab_orphan(s);
	free_remote(s, b[1]);
	free_remote(s, b[2]);
	long purged = np_fake_os_purged_bytes();
	np_slab_decay_orphans(now + period / 2, period, st); /* no period over: no pass */
	np_slab_decay_orphans(now + period, period, st);     /* s listed in the pass before: kept */
	assert_int_equal(np_fake_os_purged_bytes(), purged);
	long before = np_vmstat_snapshot(0, NUMA_PAGE_STAT_pages_purged);
	np_slab_decay_orphans(now + 2 * period, period, st);
	long pages = np_vmstat_snapshot(0, NUMA_PAGE_STAT_pages_purged) - before;
	assert_true(pages >= 2 * 4); /* the two freed blocks' inner pages, and the untouched rest */
	assert_true(np_fake_os_purged_bytes() >= purged + (pages << NP_PAGE_SHIFT));
	purged = np_fake_os_purged_bytes();
	np_slab_decay_orphans(now + 3 * period, period, st); /* nothing freed since */
	assert_int_equal(np_fake_os_purged_bytes(), purged);
	orphan_keeps_its_block_then_goes(s, b[0]);
}

/* The orphans' decay gives back a bounded share of the orphans a step (at most NP_DECAY_SLABS,
 * and about NP_DECAY_PAGES pages; a review measured one malloc's slow path at 1.1 s when a
 * step swept 256 MiB that an exited thread left), each once a pass: the pass goes on with the
 * rest at the next steps, in the same period, and then on to the next list, although every
 * orphan it gave back is freed into again between the steps (a second review: the pass stayed
 * on a list whose orphans kept taking frees, and no later list was ever decayed). */
static void orphan_decay_goes_by_steps(void **state)
{
	(void)state;
	enum { K = NP_DECAY_SLABS + 8 };
	const uint64_t period = 1000000, now = ((uint64_t)1 << 40) + 100 * period;
	unsigned cls = np_size_class(20000), later = np_size_class(40000);
	struct np_slab *s[K + 1];
	uintptr_t b[K + 1][3];
	for (int k = 0; k <= K; k++) {
		s[k] = np_slab_create(&pcp, k < K ? cls : later, OWNER);
		for (int i = 0; i < 3; i++)
			b[k][i] = take(s[k]);
		memset((void *)b[k][0], 0x5a, s[k]->block);
	}
	np_slab_decay_orphans(now, period, st); /* a pass begins before they are orphans */
	for (int k = 0; k <= K; k++) {
		np_slab_orphan(s[k]);
		free_remote(s[k], b[k][1]);
	}
	np_slab_decay_orphans(now + period, period, st); /* listed in the pass before: kept */
	int decayed = 0;
	for (int k = 0; k <= K; k++)
		decayed += np_slab_decayed(s[k]);
	assert_int_equal(decayed, 0);
	bool seen[K] = {0};
	int decayed_all = 0, steps = 0;
	while (decayed_all < K && steps < K) {
		np_slab_decay_orphans(now + 2 * period, period, st); /* a step; no new period */
		steps++;
		int now_decayed = 0;
		for (int k = 0; k < K; k++) {
			if (seen[k]) { /* due again, but looked at in this pass: its free stays uncollected */
				assert_true(atomic_load(&s[k]->thread_free) & NP_SLAB_LIST_MASK);
				continue;
			}
			if (np_slab_decayed(s[k])) {
				seen[k] = true;
				now_decayed++;
				free_remote(s[k], b[k][2]);
			}
		}
		assert_true(now_decayed >= 1);
		assert_true(now_decayed <= NP_DECAY_SLABS);
		decayed_all += now_decayed;
		if (decayed_all < K)
			assert_false(np_slab_decayed(s[K])); /* the next list waits for this one */
	}
	assert_int_equal(decayed_all, K);
	assert_true(steps >= 2); /* by steps */
	if (!np_slab_decayed(s[K]))
		np_slab_decay_orphans(now + 2 * period, period, st); /* on to the next list */
	assert_true(np_slab_decayed(s[K]));
	for (int k = 0; k <= K; k++) {
		struct np_slab *a = np_slab_adopt(0, k < K ? cls : later, OTHER);
		int j = 0;
		while (j <= K && s[j] != a)
			j++;
		assert_true(j <= K);
		for (size_t i = 0; i < a->block; i++)
			assert_int_equal(((const unsigned char *)b[j][0])[i], 0x5a);
		check(a);
		np_slab_collect(a);
		free_local(a, b[j][0]);
		if (a->used) /* the third block, where it was not freed */
			free_local(a, b[j][2]);
		np_slab_release(a, &pcp);
	}
}

/* The n orphans s[] of class cls on node 0, each holding its one live block b[], adopted, their
 * block freed and released: the orphan list of the class is empty again. */
static void adopt_and_release_all(unsigned cls, struct np_slab *const *s, const uintptr_t *b, int n)
{
	for (int k = 0; k < n; k++) {
		struct np_slab *a = np_slab_adopt(0, cls, OTHER);
		assert_non_null(a);
		int j = 0;
		while (j < n && s[j] != a)
			j++;
		assert_true(j < n);
		check(a);
		np_slab_collect(a);
		free_local(a, b[j]);
		np_slab_release(a, &pcp);
	}
	assert_null(np_slab_adopt(0, cls, OTHER));
}

/* A pass of the orphans' decay reads each orphan's header about once, and a step reads at most
 * NP_DECAY_LOOKS of them under the node's lock. A step walked its list from the head, past the
 * orphans not due and those it had given back and listed again, so a pass over L orphans read
 * about L * L / 64 headers (a review: the lock held 0.55 ms with 16,384 orphans on one list). */
static void orphan_decay_reads_each_orphan_once_a_pass(void **state)
{
	(void)state;
	enum { DUE = 16 * NP_DECAY_SLABS, LATER = 2 * NP_DECAY_LOOKS, N = DUE + LATER };
	const uint64_t period = 1000000, now = (uint64_t)1 << 41;
	unsigned cls = np_size_class(64);
	struct np_slab **s = calloc(N, sizeof *s);
	uintptr_t *b = calloc(N, sizeof *b);
	assert_non_null(s);
	assert_non_null(b);
	for (int k = 0; k < N; k++) {
		s[k] = np_slab_create(&pcp, cls, OWNER);
		assert_non_null(s[k]);
		b[k] = take(s[k]); /* live: no collect releases it */
	}
	np_slab_decay_orphans(now, period, st); /* the lists are empty: a pass under way ends */
	for (int k = 0; k < DUE; k++)
		np_slab_orphan(s[k]);
	while (np_slab_decay_orphans(now + period, period, st)) /* a pass: none due yet */
		;
	for (int k = DUE; k < N; k++)
		np_slab_orphan(s[k]); /* listed in that pass: not due in the next, and ahead on the list */
	unsigned reads = 0, steps = 0, decayed = 0;
	while (decayed < DUE && steps < 4 * N) {
		unsigned r = np_slab_decay_orphans(now + 2 * period, period, st);
		assert_true(r <= NP_DECAY_LOOKS);
		reads += r;
		steps++;
		decayed = 0;
		for (int k = 0; k < DUE; k++)
			decayed += np_slab_decayed(s[k]);
	}
	assert_int_equal(decayed, DUE);
	assert_true(reads <= N + steps); /* a step may read again the orphan the last one stopped at */
	for (int k = DUE; k < N; k++)
		assert_false(np_slab_decayed(s[k]));
	adopt_and_release_all(cls, s, b, N);
	free(s);
	free(b);
}

/* The orphan where a step of the orphans' decay stopped leaves its list before the next step:
 * adopted (a free's adoption takes it off its list), or emptied by another thread's free and
 * released by a sweep, which takes the list whole and lists the rest again. The next step goes
 * on from the orphan after it (or from the head), and the rest of the list is decayed and stays
 * listed. A cursor left on the adopted orphan walked from it out of the list (a review found no
 * test of it). */
static void orphan_decay_goes_on_past_an_orphan_gone(bool swept)
{
	enum { N = 40 };
	const uint64_t period = 1000000, now = ((uint64_t)1 << 42) + (swept ? 2000 : 1000) * period;
	unsigned cls = np_size_class(64);
	struct np_slab *s[N], *rest[N];
	uintptr_t b[N], rest_b[N];
	for (int k = 0; k < N; k++) {
		s[k] = np_slab_create(&pcp, cls, OWNER);
		assert_non_null(s[k]);
		b[k] = take(s[k]); /* the rest of the slab free: ~31 pages back each, 9 a step */
	}
	np_slab_decay_orphans(now, period, st); /* the lists are empty: a pass under way ends */
	for (int k = 0; k < N; k++)
		np_slab_orphan(s[k]); /* listed last first: s[N - 1] heads the list */
	while (np_slab_decay_orphans(now + period, period, st)) /* a pass: none due yet */
		;
	np_slab_decay_orphans(now + 2 * period, period, st); /* a step: it stops inside the list */
	int x = N - 1;
	while (x >= 0 && np_slab_decayed(s[x]))
		x--;
	assert_true(x > 0 && x < N - 1);
	if (swept) {
		free_remote(s[x], b[x]);
		assert_true(np_slab_sweep_orphans(NP_SWEEP_COLLECT, NULL) > 0); /* x released */
	} else {
		assert_true(np_slab_adopt_listed(s[x], OTHER));
	}
	for (int steps = 0, decayed = 0; decayed < N - 1 && steps < N; steps++) {
		np_slab_decay_orphans(now + 2 * period, period, st);
		decayed = 0;
		for (int k = 0; k < N; k++)
			decayed += k != x && np_slab_decayed(s[k]);
	}
	int n = 0;
	for (int k = 0; k < N; k++) {
		if (k == x)
			continue;
		assert_true(np_slab_decayed(s[k]));
		rest[n] = s[k];
		rest_b[n++] = b[k];
	}
	adopt_and_release_all(cls, rest, rest_b, n); /* all still listed */
	if (!swept) {
		assert_false(np_slab_decayed(s[x]));
		np_slab_collect(s[x]);
		free_local(s[x], b[x]);
		np_slab_release(s[x], &pcp);
	}
}

static void orphan_decay_goes_on_past_an_adopted_orphan(void **state)
{
	(void)state;
	orphan_decay_goes_on_past_an_orphan_gone(false);
}

static void orphan_decay_goes_on_past_a_swept_orphan(void **state)
{
	(void)state;
	orphan_decay_goes_on_past_an_orphan_gone(true);
}

/* A step of the orphans' decay gives back about NP_DECAY_PAGES pages at most, one orphan past
 * it: a step took 32 orphans whatever they held, and 32 of 30 free pages each took a malloc
 * 12 ms on the paravirtualized test host. The pass goes on at the next steps. */
static void orphan_decay_step_gives_back_a_bounded_number_of_pages(void **state)
{
	(void)state;
	enum { N = 24 };
	const uint64_t period = 1000000, now = (uint64_t)1 << 42;
	unsigned cls = np_size_class(1024);
	long slab_pages = (long)(np_class_slab_bytes(cls) >> NP_PAGE_SHIFT);
	struct np_slab *s[N];
	uintptr_t b[N];
	for (int k = 0; k < N; k++) {
		s[k] = np_slab_create(&pcp, cls, OWNER);
		assert_non_null(s[k]);
		b[k] = take(s[k]); /* the rest of the slab free: most of its pages go back */
	}
	np_slab_decay_orphans(now, period, st); /* the lists are empty: a pass under way ends */
	for (int k = 0; k < N; k++)
		np_slab_orphan(s[k]);
	while (np_slab_decay_orphans(now + period, period, st)) /* a pass: none due yet */
		;
	long total = 0, most = 0;
	int steps = 0, decayed = 0;
	while (decayed < N && steps < N) {
		long before = np_fake_os_purged_bytes();
		np_slab_decay_orphans(now + 2 * period, period, st);
		long pages = (np_fake_os_purged_bytes() - before) >> NP_PAGE_SHIFT;
		total += pages;
		most = pages > most ? pages : most;
		steps++;
		decayed = 0;
		for (int k = 0; k < N; k++)
			decayed += np_slab_decayed(s[k]);
	}
	assert_int_equal(decayed, N);
	assert_true(total > 2 * NP_DECAY_PAGES); /* enough for the bound to matter */
	assert_true(most <= NP_DECAY_PAGES + slab_pages);
	adopt_and_release_all(cls, s, b, N);
}

/* Trim's sweep (purge) also gives back the pages inside the free blocks of the orphans it
 * keeps, counted as purged; the slow paths' sweeps (no purge) make no system call for them.
 * The kept block keeps its data, the freed ones read as zeros past their link. */
static void orphan_sweep_purges_free_blocks_for_trim_only(void **state)
{
	(void)state;
	unsigned cls = np_size_class(20000); /* 20 KiB blocks: four pages inside each */
	struct np_slab *s = np_slab_create(&pcp, cls, OWNER);
	uintptr_t b[3] = {take(s), take(s), take(s)};
	for (int i = 0; i < 3; i++)
		memset((void *)b[i], 0x5a, s->block);
	np_slab_orphan(s); /* as a thread's exit leaves a slab with a live block */
	free_remote(s, b[1]);
	free_remote(s, b[2]);
	long purged = np_fake_os_purged_bytes();
	assert_int_equal(np_slab_sweep_orphans(NP_SWEEP_COLLECT, NULL), 0); /* still used: kept, not purged */
	assert_int_equal(np_fake_os_purged_bytes(), purged);
	long before = np_vmstat_snapshot(0, NUMA_PAGE_STAT_pages_purged);
	size_t pages = np_slab_sweep_orphans(NP_SWEEP_TRIM, st);
	assert_true(pages >= 2 * 4); /* the two freed blocks' inner pages, and the untouched rest */
	assert_true(np_fake_os_purged_bytes() >= purged + (long)(pages << NP_PAGE_SHIFT));
	assert_int_equal(np_vmstat_snapshot(0, NUMA_PAGE_STAT_pages_purged), before + (long)pages);
	for (int i = 1; i < 3; i++) {
		const unsigned char *inner = (const unsigned char *)((b[i] + 16 + NP_PAGE_SIZE - 1) & ~(NP_PAGE_SIZE - 1));
		for (size_t k = 0; k < 4 * NP_PAGE_SIZE; k++)
			assert_int_equal(inner[k], 0);
	}
	orphan_keeps_its_block_then_goes(s, b[0]);
}

/* A slab a sweep holds off its list (here while trim's purge of it runs: the hook) is not
 * adopted by a free however many sweeps take the list meanwhile: the list's generation never
 * comes back to the one the held slab carries. A fork's child keeps the slabs of a sweep the
 * fork cut short held for good, and its own sweeps go on; 65,535 more takes brought a 16-bit
 * generation back, and the free's adoption then unlinked the slab through stale links. */
static struct np_slab *held, *relisted;
static bool adopted_while_held;
static void sweeps_while_held(void)
{
	np_fake_os_purge_hook = NULL;
	np_slab_orphan(relisted); /* on the list, which each sweep below takes and gives back */
	for (int i = 0; i < 65535; i++)
		np_slab_sweep_orphans(NP_SWEEP_COLLECT, NULL);
	adopted_while_held = np_slab_adopt_listed(held, OTHER);
}

static void held_orphan_is_not_adopted_after_many_sweeps(void **state)
{
	(void)state;
	unsigned cls = np_size_class(20000); /* its free blocks hold whole pages: trim purges them */
	struct np_slab *s[3];
	uintptr_t live[3];
	for (int k = 0; k < 3; k++) {
		s[k] = np_slab_create(&pcp, cls, OWNER);
		live[k] = take(s[k]);
	}
	uintptr_t freed = take(s[0]);
	np_slab_orphan(s[1]);
	np_slab_orphan(s[0]);
	free_remote(s[0], freed);
	held = s[0];
	relisted = s[2];
	adopted_while_held = false;
	np_fake_os_purge_hook = sweeps_while_held;
	np_slab_sweep_orphans(NP_SWEEP_TRIM, st); /* takes s[0] and s[1] whole; the purge runs the hook */
	assert_null(np_fake_os_purge_hook);
	assert_false(adopted_while_held);
	for (int k = 0; k < 3; k++) { /* all three back on the list, each once */
		struct np_slab *a = np_slab_adopt(0, cls, OTHER);
		assert_non_null(a);
		check(a);
		np_slab_collect(a);
		for (int j = 0; j < 3; j++)
			if (a == s[j])
				free_local(a, live[j]);
		assert_int_equal(a->used, 0);
		np_slab_release(a, &pcp);
	}
	assert_null(np_slab_adopt(0, cls, OTHER));
}

static void orphan_sweeps_are_due_only_after_a_change(void **state)
{
	(void)state;
	np_slab_sweep_orphans(NP_SWEEP_COLLECT, NULL);
	assert_false(np_slab_orphans_changed); /* nothing can have emptied since */
	struct np_slab *s = np_slab_create(&pcp, 10, OWNER);
	uintptr_t b = take(s);
	np_slab_orphan(s);
	assert_true(np_slab_orphans_changed); /* a new orphan */
	np_slab_sweep_orphans(NP_SWEEP_COLLECT, NULL);
	assert_false(np_slab_orphans_changed);
	free_remote(s, b);
	np_slab_note_orphan_free(); /* as free.c does when its push started an orphan's list */
	assert_true(np_slab_orphans_changed);
	assert_int_equal(np_slab_sweep_orphans(NP_SWEEP_COLLECT, NULL), np_class_slab_bytes(10) >> NP_PAGE_SHIFT);
}

static void corrupt_local_link_is_cut(void **state)
{
	(void)state;
	struct np_slab *s = np_slab_create(&pcp, 3, OWNER);
	uintptr_t b[6];
	for (int i = 0; i < 6; i++)
		b[i] = take(s);
	/* Whatever is still in free (the rest of the extended page) goes first. */
	while (s->free)
		take(s);
	free_local(s, b[1]);
	free_local(s, b[2]);
	free_local(s, b[3]); /* free: 3 -> 2 -> 1 */
	uint64_t before = np_vmstat_snapshot(0, NUMA_PAGE_STAT_freelist_corrupt);
	*(uintptr_t *)b[2] = 0; /* n->next = NULL after free */
	check(s);              /* heads sound: not an invariant of ours that broke */
	assert_int_equal(take(s), b[3]);
	/* b[2]'s link is bad: the list ends before it; b[2] (which a dangling pointer may still
	 * write) and b[1] behind it are abandoned, never handed out again. */
	uintptr_t next = take(s);
	assert_int_equal(np_vmstat_snapshot(0, NUMA_PAGE_STAT_freelist_corrupt), before + 1);
	assert_true(next != b[2] && next != b[1] && np_slab_is_block(s, next));
	check(s);
	assert_true(s->used >= NP_SLAB_PINNED); /* never given back: see np_slab_bad_link */
}

static void corrupt_remote_link_is_cut(void **state)
{
	(void)state;
	struct np_slab *s = np_slab_create(&pcp, 3, OWNER);
	uintptr_t b[5];
	for (int i = 0; i < 5; i++)
		b[i] = take(s);
	bool first;
	for (int i = 0; i < 4; i++)
		np_slab_push_remote(s, b[i], np_slab_index(s, b[i]), &first); /* thread_free: 3 -> 2 -> 1 -> 0 */
	*(uintptr_t *)b[2] ^= 0x40; /* an overflow into the freed neighbour */
	uint64_t before = np_vmstat_snapshot(0, NUMA_PAGE_STAT_freelist_corrupt);
	assert_int_equal(np_slab_collect(s), 4); /* taken whole, not walked */
	check(s);
	assert_int_equal(take(s), b[3]);
	uintptr_t next = take(s); /* b[2]'s link is bad: b[2], b[1], b[0] are abandoned */
	assert_true(next != b[2] && next != b[1] && next != b[0] && np_slab_is_block(s, next));
	assert_int_equal(np_vmstat_snapshot(0, NUMA_PAGE_STAT_freelist_corrupt), before + 1);
	check(s);
	assert_true(s->used >= NP_SLAB_PINNED);
}

static void double_frees_are_found(void **state)
{
	(void)state;
	struct np_slab *s = np_slab_create(&pcp, 3, OWNER);
	uintptr_t a = take(s), b = take(s), c = take(s);
	memset((void *)c, 0, 64);
	assert_false(np_slab_looks_free(s, c)); /* a live block, never written: does not look free */
	free_local(s, a);
	assert_true(np_slab_looks_free(s, a));
	assert_true(np_slab_holds_free(s, a));
	assert_true(np_slab_holds_free_racy(s, a)); /* another thread's view of the same */
	assert_false(np_slab_holds_free(s, b));
	bool first;
	np_slab_push_remote(s, b, np_slab_index(s, b), &first);
	assert_true(np_slab_looks_free(s, b));
	assert_false(np_slab_holds_free(s, b));     /* the owner's lists do not hold it yet */
	assert_true(np_slab_holds_free_racy(s, b)); /* the remote list does */
	assert_false(np_slab_holds_free_racy(s, c));
	/* A live block whose first word points into its own slab (a program's list). */
	*(uintptr_t *)c = a;
	assert_false(np_slab_looks_free(s, c));
}

/* The pages of slab s that only blocks with kept[i] == 0 cover, worked out here by overlap;
 * with `freed`, only blocks with freed[i] set (the others were never handed out). */
static uint32_t pages_only_freed_cover(const struct np_slab *s, const uint8_t *kept, const uint8_t *freed)
{
	uint32_t pages = 0;
	for (unsigned p = 0; p < NP_SLAB_ALIGN_PAGES; p++) {
		uint64_t lo = (uint64_t)p * 4096, hi = lo + 4096;
		bool any = false, ok = true;
		for (uint32_t i = 0; i < s->capacity; i++) {
			uint64_t a = (uint64_t)i * s->block, b = a + s->block;
			if (a < hi && b > lo) {
				any = true;
				ok = ok && !kept[i] && (!freed || freed[i]);
			}
		}
		if (any && ok)
			pages |= 1U << p;
	}
	return pages;
}

static bool page_resident(uintptr_t a)
{
	unsigned char v;
	assert_int_equal(mincore((void *)(a & ~(uintptr_t)4095), 4096, &v), 0);
	return v & 1;
}

/* trim gives back the pages of a one-step slab that only free blocks cover (blocks of 1 KiB,
 * four to a page; 112 and 3,072 bytes, which straddle pages; 12 KiB, three pages a block), and
 * those blocks leave the lists (`hidden`); refill takes the pages back when the slab runs out:
 * every freed block is handed out again, once, and no kept one. */
static void trim_hides_pages_and_refill_takes_them_back(void **state)
{
	(void)state;
	const unsigned classes[] = {19, 6, 25, 37};
	for (size_t k = 0; k < NP_ARRAY_SIZE(classes); k++) {
		struct np_slab *s = np_slab_create(&pcp, classes[k], OWNER);
		assert_non_null(s);
		uint32_t cap = s->capacity;
		uint8_t *kept = calloc(cap + 1, 1), *seen = calloc(cap + 1, 1);
		uintptr_t *b = calloc(cap, sizeof *b);
		for (uint32_t i = 0; i < cap; i++) {
			b[i] = take(s);
			memset((void *)b[i], 0x5a, s->block);
		}
		/* Keep blocks 0, 1, a third of the way in and the last: the rest is freed. */
		uint32_t last = cap - 1;
		assert_true(last >= 8 && last < cap);
		kept[0] = kept[1] = kept[cap / 3] = kept[last % cap] = 1;
		for (uint32_t i = 0; i < cap; i++)
			if (!kept[np_slab_index(s, b[i])])
				free_local(s, b[i]);
		uint32_t want = pages_only_freed_cover(s, kept, NULL);
		assert_true(want != 0);
		size_t pages = np_slab_purge_free(s, st);
		check(s);
		assert_int_equal(s->hidden, want);
		assert_int_equal(pages, (size_t)__builtin_popcount(want));
		for (unsigned p = 0; p < NP_SLAB_ALIGN_PAGES; p++)
			if ((want >> p) & 1)
				assert_false(page_resident(s->start + (uintptr_t)p * 4096));
		assert_int_equal(np_slab_purge_free(s, st), 0); /* nothing freed since */
		/* Every block free and not hidden is on free; refill brings back the rest. */
		uint32_t taken = 0;
		for (uintptr_t x; (x = take(s)) != 0; taken++) {
			uint64_t i = np_slab_index(s, x);
			assert_false(kept[i]);
			assert_false(seen[i]);
			seen[i] = 1;
			memset((void *)x, 0x6b, s->block);
		}
		assert_int_equal(taken, cap - 4);
		assert_int_equal(s->hidden, 0);
		assert_int_equal(s->used, cap);
		assert_true(s->used < NP_SLAB_PINNED);
		/* All back: the slab empties, and every block is accounted for. */
		for (uint32_t i = 0; i < cap; i++)
			free_local(s, np_slab_block(s, i));
		s->unchecked = 1; /* count the lists */
		assert_true(np_slab_confirm_empty(s));
		np_slab_release(s, &pcp);
		free(kept);
		free(seen);
		free(b);
	}
}

/* Class cls's slab with every block taken, then all freed but those whose indices keep lists
 * (ending at UINT32_MAX), and trimmed. */
static struct np_slab *trimmed_slab(unsigned cls, const uint32_t *keep)
{
	struct np_slab *s = np_slab_create(&pcp, cls, OWNER);
	assert_non_null(s);
	for (uint32_t i = 0; i < s->capacity; i++)
		assert_true(take(s) != 0);
	for (uint32_t i = 0; i < s->capacity; i++) {
		bool kept = false;
		for (const uint32_t *k = keep; *k != UINT32_MAX; k++)
			kept = kept || *k == i;
		if (!kept)
			free_local(s, np_slab_block(s, i));
	}
	assert_true(np_slab_purge_free(s, st) > 0);
	check(s);
	return s;
}

/* Takes every block s has left (np_slab_check is not asked: a double free broke the counts),
 * failing on one handed out twice; seen[i] marks block i. */
static void take_all_once(struct np_slab *s, uint8_t *seen)
{
	for (uintptr_t x; (x = take_as(s, false)) != 0;) {
		uint64_t i = np_slab_index(s, x);
		assert_false(seen[i]);
		seen[i] = 1;
	}
}

static const uint32_t keep_first[] = {0, UINT32_MAX};

/* A slab that empties with pages still hidden is counted whole and given back. */
static void slab_with_hidden_pages_empties(void **state)
{
	(void)state;
	struct np_slab *s = trimmed_slab(19, keep_first);
	assert_true(s->hidden != 0);
	free_local(s, np_slab_block(s, 0));
	s->unchecked = 1;
	assert_true(np_slab_confirm_empty(s));
	np_slab_release(s, &pcp);
}

/* A second free of a hidden block. Its first bytes on a hidden page (1 KiB blocks, block 8 on
 * page 2) read as zeros: it does not look free, the free is taken and the slab's count is a
 * block short. The link it wrote is on the page: the release that count asks for is refused,
 * and so is the page's return to the lists when the block was handed out again and written.
 * (Not found: a block handed out again whose program wrote only zeros there, as a calloc not
 * yet written: the page reads as trim left it.) A block whose first bytes lie on a page that
 * stays (3,072 bytes, block 1 from page 0) looks free, and free's check finds it hidden:
 * reported at once, by its owner and by any other thread. */
static void second_free_of_hidden_block_is_caught(void **state)
{
	(void)state;
	for (int handed_again = 0; handed_again < 2; handed_again++) {
		struct np_slab *s = trimmed_slab(19, keep_first);
		uintptr_t victim = np_slab_block(s, 8);
		assert_true(np_slab_is_hidden(s, victim));
		assert_false(np_slab_looks_free(s, victim));
		uint64_t before = np_vmstat_snapshot(0, NUMA_PAGE_STAT_freelist_corrupt);
		np_slab_push_free(s, victim, 8); /* the second free, as the owner's fast path takes it */
		s->used--;
		if (!handed_again) {
			assert_int_equal(s->used, 0); /* block 0 is in use: the count says none */
			assert_false(np_slab_confirm_empty(s));
		} else {
			uint8_t *seen = calloc(s->capacity, 1);
			assert_int_equal(take_as(s, false), victim);
			seen[8] = 1;
			memset((void *)victim, 0x5a, s->block);
			take_all_once(s, seen);
			free(seen);
		}
		assert_true(s->used >= NP_SLAB_PINNED);
		assert_int_equal(np_vmstat_snapshot(0, NUMA_PAGE_STAT_freelist_corrupt), before + 1);
		check(s);
	}
	struct np_slab *s = trimmed_slab(25, keep_first);
	uintptr_t victim = np_slab_block(s, 1);
	assert_true(np_slab_is_hidden(s, victim));
	assert_true(np_slab_looks_free(s, victim));
	assert_true(np_slab_confirm_free(s, victim, OWNER));
	assert_true(np_slab_confirm_free(s, victim, OTHER));
	assert_false(np_slab_confirm_free(s, np_slab_block(s, 0), OTHER)); /* the kept one */
}

/* A write after free to a hidden block: to the first bytes of a 3,072-byte block that lie on a
 * page that stays, and into a 1 KiB block on a hidden page. Refill does not hand those blocks
 * out again: the slab is pinned and the write counted as a corrupt list is. */
static void write_to_hidden_block_is_caught(void **state)
{
	(void)state;
	for (int on_hidden = 0; on_hidden < 2; on_hidden++) {
		struct np_slab *s = trimmed_slab(on_hidden ? 19 : 25, keep_first);
		uint32_t victim = on_hidden ? 8 : 1;
		uint64_t before = np_vmstat_snapshot(0, NUMA_PAGE_STAT_freelist_corrupt);
		memset((void *)(np_slab_block(s, victim) + (on_hidden ? 500 : 0)), 0x77, 16);
		uint8_t *seen = calloc(s->capacity, 1);
		take_all_once(s, seen);
		assert_false(seen[victim]);
		assert_int_equal(np_vmstat_snapshot(0, NUMA_PAGE_STAT_freelist_corrupt), before + 1);
		assert_true(s->used >= NP_SLAB_PINNED);
		check(s);
		free(seen);
	}
}

/* What makes a hidden page resident without writing it is no use of it: a read (the zero page),
 * mlock (it fills the pages), a debugger's or a core dump's read. Nothing is reported, every
 * block is handed out once, and a slab that empties is given back. */
static void hidden_page_made_resident_is_no_use(void **state)
{
	(void)state;
	struct np_slab *s = trimmed_slab(19, keep_first);
	uint32_t hidden = s->hidden;
	assert_int_equal(*(volatile uint8_t *)np_slab_block(s, 8), 0); /* page 2 */
	uintptr_t page3 = s->start + 3 * 4096;
	bool locked = mlock((void *)page3, 4096) == 0; /* as mlockall would (may be refused) */
	uint64_t before = np_vmstat_snapshot(0, NUMA_PAGE_STAT_freelist_corrupt);
	check(s);
	assert_int_equal(s->hidden, hidden);
	uint8_t *seen = calloc(s->capacity, 1);
	seen[0] = 1;
	take_all_once(s, seen);
	for (uint32_t i = 0; i < s->capacity; i++)
		assert_true(seen[i]);
	assert_int_equal(np_vmstat_snapshot(0, NUMA_PAGE_STAT_freelist_corrupt), before);
	for (uint32_t i = 0; i < s->capacity; i++)
		free_local(s, np_slab_block(s, i));
	assert_true(np_slab_confirm_empty(s));
	if (locked)
		munlock((void *)page3, 4096);
	np_slab_release(s, &pcp);
	free(seen);
}

/* A refused madvise may have given back part of its range (the kernel stops at the first
 * mapping it refuses, an mlocked page here, after the pages before it): trim hides exactly the
 * pages given back, and every free block is handed out again, once. */
static void purge_refused_in_part_hides_what_went(void **state)
{
	(void)state;
	struct np_slab *s = np_slab_create(&pcp, 19, OWNER);
	uint32_t cap = s->capacity;
	for (uint32_t i = 0; i < cap; i++)
		assert_true(take(s) != 0);
	uintptr_t page10 = s->start + 10 * 4096;
	/* Locked, as madvise tells (AddressSanitizer makes mlock a no-op that says yes). */
	if (mlock((void *)page10, 4096) != 0 || madvise((void *)page10, 4096, MADV_DONTNEED) == 0) {
		print_message("mlock refused or without effect: nothing to test\n");
		return;
	}
	for (uint32_t i = 1; i < cap; i++)
		free_local(s, np_slab_block(s, i));
	uint64_t before = np_vmstat_snapshot(0, NUMA_PAGE_STAT_freelist_corrupt);
	assert_int_equal(np_slab_purge_free(s, st), NP_SLAB_ALIGN_PAGES - 2); /* all but pages 0 and 10 */
	assert_int_equal(s->hidden, ~(uint32_t)0 & ~1U & ~(1U << 10));
	check(s);
	uint8_t *seen = calloc(cap, 1);
	seen[0] = 1;
	take_all_once(s, seen);
	for (uint32_t i = 0; i < cap; i++)
		assert_true(seen[i]);
	assert_int_equal(np_vmstat_snapshot(0, NUMA_PAGE_STAT_freelist_corrupt), before);
	munlock((void *)page10, 4096);
	free(seen);
}

/* A second trim gives back a page freed since the first, though the lists' head, the count in
 * use and the hidden pages are as the first left them (2 KiB blocks, two to a page: 10 and 14
 * kept, then 11 and 15 taken again, 10 and 11 freed). */
static void second_trim_finds_pages_freed_since(void **state)
{
	(void)state;
	static const uint32_t keep[] = {10, 14, UINT32_MAX};
	struct np_slab *s = trimmed_slab(23, keep);
	uintptr_t head = s->free;
	uint32_t used = s->used, hidden = s->hidden;
	assert_int_equal(take(s), np_slab_block(s, 11));
	assert_int_equal(take(s), np_slab_block(s, 15));
	free_local(s, np_slab_block(s, 10));
	free_local(s, np_slab_block(s, 11));
	assert_int_equal(s->free, head);
	assert_int_equal(s->used, used);
	assert_int_equal(np_slab_purge_free(s, st), 1);
	assert_int_equal(s->hidden, hidden | 1U << 5);
	check(s);
}

/* Random takes, local and remote frees and trims on a slab of every one-step class, with a
 * fixed seed: no block is handed out twice, a block in use keeps its bytes, and after each
 * trim exactly the pages that only free blocks cover (of those handed out at least once) are
 * hidden. */
static void random_trims_keep_every_block_once(void **state)
{
	(void)state;
	uint64_t r = 0x9e3779b97f4a7c15ULL;
	uint64_t hidden_seen = 0, revived = 0;
	for (unsigned c = 0; c < NP_NCLASSES; c++) {
		if (np_class_slab_bytes(c) != NP_SLAB_ALIGN)
			continue;
		for (int round = 0; round < 3; round++) {
			struct np_slab *s = np_slab_create(&pcp, c, OWNER);
			assert_non_null(s);
			uint32_t cap = s->capacity, nlive = 0;
			uint8_t *live = calloc(cap, 1);
			for (int step = 0; step < 2000; step++) {
				r ^= r << 13, r ^= r >> 7, r ^= r << 17;
				unsigned op = (unsigned)(r % 100);
				uint8_t fill;
				if (op < 45) {
					uint32_t h = s->hidden;
					uintptr_t x = take_as(s, false);
					revived += h != s->hidden;
					if (!x) {
						assert_int_equal(nlive, cap);
						continue;
					}
					uint64_t i = np_slab_index(s, x);
					if (live[i])
						fail_msg("class %u: block %llu handed out twice", c, (unsigned long long)i);
					live[i] = 1;
					nlive++;
					memset((void *)x, (uint8_t)(i | 1), s->block);
				} else if (op < 90 && nlive) {
					uint32_t i = (uint32_t)((r >> 20) % cap);
					while (!live[i])
						i = (i + 1) % cap;
					uintptr_t x = np_slab_block(s, i);
					fill = (uint8_t)(i | 1);
					for (uint32_t k = 0; k < s->block; k += 61)
						if (((const uint8_t *)x)[k] != fill)
							fail_msg("class %u: block %u in use changed at byte %u", c, i, k);
					live[i] = 0;
					nlive--;
					if ((r >> 40) % 4 == 0)
						free_remote(s, x);
					else
						free_local(s, x);
				} else {
					np_slab_purge_free(s, st);
					check(s);
					uint8_t *freed = calloc(cap + 1, 1);
					for (uint32_t i = 0; i < cap; i++)
						freed[i] = !live[i] && i < (uint32_t)(s->capacity - s->reserved);
					assert_int_equal(s->hidden, pages_only_freed_cover(s, live, freed));
					hidden_seen += (uint64_t)__builtin_popcount(s->hidden);
					free(freed);
				}
			}
			for (uint32_t i = 0; i < cap; i++)
				if (live[i])
					free_local(s, np_slab_block(s, i));
			np_slab_collect(s); /* the remote frees */
			assert_int_equal(s->used, 0);
			s->unchecked = 1;
			assert_true(np_slab_confirm_empty(s));
			np_slab_release(s, &pcp);
			free(live);
		}
	}
	/* The trims hid pages, and the takes brought them back. */
	print_message("hidden pages seen after trims: %llu; takes that revived: %llu\n",
		      (unsigned long long)hidden_seen, (unsigned long long)revived);
	assert_true(hidden_seen >= 1000 && revived >= 100);
}

/* madvise refused: nothing is hidden and the lists stay whole; the next trim gives the pages
 * back. */
static void refused_purge_hides_nothing(void **state)
{
	(void)state;
	struct np_slab *s = np_slab_create(&pcp, 19, OWNER);
	uint32_t cap = s->capacity;
	for (uint32_t i = 0; i < cap; i++)
		assert_true(take(s) != 0);
	for (uint32_t i = 1; i < cap; i++)
		free_local(s, np_slab_block(s, i));
	np_fake_os_fail_purge(-EINVAL);
	assert_int_equal(np_slab_purge_free(s, st), 0);
	assert_int_equal(s->hidden, 0);
	check(s);
	np_fake_os_fail_purge(0);
	assert_int_equal(np_slab_purge_free(s, st), NP_SLAB_ALIGN_PAGES - 1); /* all but block 0's */
	uint32_t n = 0;
	while (take(s))
		n++;
	assert_int_equal(n, cap - 1);
}

static void links_are_not_plain_addresses(void **state)
{
	(void)state;
	struct np_slab *s = np_slab_create(&pcp, 3, OWNER);
	for (uint64_t i = 0; i < 8; i++) {
		uintptr_t w = np_slab_encode(s, i);
		assert_int_equal(np_slab_decode(s, w), i);
		assert_true(w != i && w != np_slab_block(s, i)); /* one read shows neither */
	}
	assert_int_equal(np_slab_decode(s, np_slab_encode(s, s->end)), s->end);
	assert_true(np_slab_decode(s, 0) > s->end); /* a zeroed word is no link */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_block_once_then_back, setup, teardown),
		cmocka_unit_test_setup_teardown(later_steps_name_their_slab, setup, teardown),
		cmocka_unit_test_setup_teardown(remote_frees_come_back_in_one_collect, setup, teardown),
		cmocka_unit_test_setup_teardown(released_slab_is_no_remote_free, setup, teardown),
		cmocka_unit_test_setup_teardown(remote_free_leaves_a_mark, setup, teardown),
		cmocka_unit_test_setup_teardown(collect_checks_the_count, setup, teardown),
		cmocka_unit_test_setup_teardown(remote_double_push_is_stopped, setup, teardown),
		cmocka_unit_test_setup_teardown(float_claim_orphan_adopt, setup, teardown),
		cmocka_unit_test_setup_teardown(orphan_sweep_releases_emptied_slabs, setup, teardown),
		cmocka_unit_test_setup_teardown(orphan_sweep_purges_free_blocks_for_trim_only, setup, teardown),
		cmocka_unit_test_setup_teardown(orphan_decay_gives_back_after_a_whole_period, setup, teardown),
		cmocka_unit_test_setup_teardown(orphan_decay_goes_by_steps, setup, teardown),
		cmocka_unit_test_setup_teardown(orphan_decay_reads_each_orphan_once_a_pass, setup, teardown),
		cmocka_unit_test_setup_teardown(orphan_decay_step_gives_back_a_bounded_number_of_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(orphan_decay_goes_on_past_an_adopted_orphan, setup, teardown),
		cmocka_unit_test_setup_teardown(orphan_decay_goes_on_past_a_swept_orphan, setup, teardown),
		cmocka_unit_test_setup_teardown(orphan_sweeps_are_due_only_after_a_change, setup, teardown),
		cmocka_unit_test_setup_teardown(held_orphan_is_not_adopted_after_many_sweeps, setup, teardown),
		cmocka_unit_test_setup_teardown(corrupt_local_link_is_cut, setup, teardown),
		cmocka_unit_test_setup_teardown(corrupt_remote_link_is_cut, setup, teardown),
		cmocka_unit_test_setup_teardown(double_frees_are_found, setup, teardown),
		cmocka_unit_test_setup_teardown(links_are_not_plain_addresses, setup, teardown),
		cmocka_unit_test_setup_teardown(trim_hides_pages_and_refill_takes_them_back, setup, teardown),
		cmocka_unit_test_setup_teardown(slab_with_hidden_pages_empties, setup, teardown),
		cmocka_unit_test_setup_teardown(second_free_of_hidden_block_is_caught, setup, teardown),
		cmocka_unit_test_setup_teardown(write_to_hidden_block_is_caught, setup, teardown),
		cmocka_unit_test_setup_teardown(hidden_page_made_resident_is_no_use, setup, teardown),
		cmocka_unit_test_setup_teardown(purge_refused_in_part_hides_what_went, setup, teardown),
		cmocka_unit_test_setup_teardown(second_trim_finds_pages_freed_since, setup, teardown),
		cmocka_unit_test_setup_teardown(random_trims_keep_every_block_once, setup, teardown),
		cmocka_unit_test_setup_teardown(refused_purge_hides_nothing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
