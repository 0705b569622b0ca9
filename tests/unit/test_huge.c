/*
 * Unit tests of src/pool/huge.c: freed huge chunks kept per node. The smallest cached chunk
 * that fits is reused (the whole granules past what the request needs cut off and cached, and
 * joined again when both pieces are free); when
 * none fits the largest grows in place; the resident part follows the recent peak of huge
 * memory in use (at least NUMAPAGE_PURGE_MB), a peak that halves each second it is not
 * reached; chunks left longer than NUMAPAGE_DECAY_MS give their pages back but stay mapped
 * and clean; only clean chunks past a few are unmapped; trim unmaps everything. The counts
 * checked against the list (np_huge_check) after every step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "fake_os.h"
#include "numapage.h"
#include "malloc/alloc.h"
#include "malloc/bootstrap.h"
#include "malloc/ptr.h"
#include "pool/huge.h"
#include "pool/pool.h"
#include "vmstat/vmstat.h"
#include "unit_fixture.h"

#define MB ((size_t)1 << 20)
#define PAGES(bytes) ((bytes) >> NP_PAGE_SHIFT)

static void start(const char *fixture, ...)
{
	va_list ap;
	va_start(ap, fixture);
	np_test_start_fixture(fixture, ap);
	va_end(ap);
	/* The clock moves only when a test says: the cache's peak halves once a second of it,
	 * so a test slower than that between two steps (a loaded machine, ThreadSanitizer) found
	 * a 100 MiB chunk purged at its put (reuse_whole_and_grow). */
	np_fake_os_stop_clock(true);
	np_huge_init(&np_topo_table);
}

static int teardown(void **state)
{
	(void)state;
	np_huge_trim(0, NULL, NULL);
	np_huge_trim(1, NULL, NULL);
	np_test_unmap_pools();
	np_fake_os_reset();
	np_fake_os_stop_clock(false);
	return 0;
}

static void check(void)
{
	for (int n = 0; n < 2; n++) {
		const char *err = np_huge_check(n);
		if (err)
			fail_msg("huge cache of node %d: %s", n, err);
	}
}

/* A huge chunk of node 0 as large.c makes one: mapped, counted live, written. */
static struct np_chunk *make(size_t bytes)
{
	struct np_chunk *c = np_chunk_map_huge(0, 0, bytes, NP_PAGE_SIZE, false, NULL);
	assert_non_null(c);
	np_huge_count_live(0, (long)PAGES(np_chunk_data_bytes(c)));
	memset((char *)c + c->data_offset, 0x77, bytes);
	return c;
}

/* A live huge chunk of node 0 the test holds, off the live count and unmapped, as a free that
 * does not keep it. */
static void unmake(struct np_chunk *c)
{
	np_huge_count_live(0, -(long)PAGES(np_chunk_data_bytes(c)));
	np_chunk_unmap_huge(c);
}

static size_t cached_dirty(void)
{
	size_t d, cl;
	np_huge_cached(0, &d, &cl);
	return d;
}

static size_t cached_clean(void)
{
	size_t d, cl;
	np_huge_cached(0, &d, &cl);
	return cl;
}

/* n chunks of 6 MiB made (make) and cached, oldest first: the pages of one, all dirty in the
 * cache. */
static size_t cache_chunks(int n)
{
	struct np_chunk *c[16];
	assert_true(n <= 16);
	for (int i = 0; i < n; i++)
		c[i] = make(6 * MB);
	for (int i = 0; i < n; i++)
		assert_true(np_huge_put(c[i], NULL));
	size_t one = PAGES(np_chunk_data_bytes(c[0]));
	assert_int_equal(cached_dirty(), (size_t)n * one);
	return one;
}

static void reuse_whole_and_grow(void **state)
{
	(void)state;
	start("2node", NULL);
	struct np_chunk *a = make(20 * MB);
	size_t a_pages = PAGES(np_chunk_data_bytes(a));
	assert_true(np_huge_put(a, NULL));
	assert_int_equal(cached_dirty(), a_pages);
	check();
	/* A smaller request takes it whole: its tail (15 MiB) is within 32 MiB, kept resident. */
	long unmaps = np_fake_os_unmaps(), purged = np_fake_os_purged_bytes();
	size_t dirty;
	struct np_chunk *b = np_huge_get(0, 5 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	assert_ptr_equal(b, a);
	assert_int_equal(b->kind, NP_CHUNK_HUGE);
	assert_int_equal(np_chunk_data_bytes(b), a_pages << NP_PAGE_SHIFT);
	assert_int_equal(dirty, np_chunk_data_bytes(b)); /* the last user may have written it all */
	assert_int_equal(np_fake_os_unmaps(), unmaps);
	assert_int_equal(np_fake_os_purged_bytes(), purged);
	assert_int_equal(cached_dirty(), 0);
	/* Without fresh pages (its node has no room): a chunk only when its resident part holds
	 * the request, and none grown. */
	assert_true(np_huge_put(b, NULL));
	assert_null(np_huge_get(0, 30 * MB, NP_PAGE_SIZE, &dirty, NULL, false));
	b = np_huge_get(0, 5 * MB, NP_PAGE_SIZE, &dirty, NULL, false);
	assert_ptr_equal(b, a);
	/* None fits a larger one: the largest grows (no new mapping), its new part clean. */
	assert_true(np_huge_put(b, NULL));
	long maps = np_fake_os_maps();
	struct np_chunk *g = np_huge_get(0, 30 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	assert_non_null(g);
	assert_true(np_chunk_data_bytes(g) >= 30 * MB);
	assert_int_equal(dirty, a_pages << NP_PAGE_SHIFT);
	assert_true(np_fake_os_maps() - maps <= 1); /* mremap in place, or one range to move into */
	assert_int_equal(((char *)g + g->data_offset)[MB], 0x77); /* the pages came along */
	check();
	assert_true(np_huge_put(g, NULL));
	check();
}

/* A chunk larger than a request by whole granules (16 MiB) past what the request needs is cut
 * there: the rest goes back to the cache as a chunk of its own, its pages resident, and serves
 * the next request; freed again, the pieces join into the chunk they were. GNU sort -S 50M
 * frees its 50 MB buffer and asks for two of 25 MB: the first took the whole resident chunk and
 * the second a new mapping, peak RSS 1.66 times glibc's. Before, the tail past twice the request
 * (or the request and 32 MiB) was unmapped, and the rest held by the small block. */
static void a_larger_chunk_is_cut_and_its_pieces_join_again(void **state)
{
	(void)state;
	start("2node", NULL);
	struct np_chunk *big = make(100 * MB);
	size_t whole = np_chunk_data_bytes(big);
	assert_true(np_huge_put(big, NULL));
	long maps = np_fake_os_maps(), unmaps = np_fake_os_unmaps(), purged = np_fake_os_purged_bytes();
	size_t dirty;
	/* 40 MiB and the header end in the third granule: the chunk is cut at 48 MiB. */
	struct np_chunk *a = np_huge_get(0, 40 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	assert_ptr_equal(a, big);
	assert_int_equal(a->size, 48 * MB);
	/* What the block holds past its request went back (resident, the block would not use it
	 * while it lives): calloc clears only the request. */
	assert_int_equal(dirty, 40 * MB);
	assert_int_equal(np_fake_os_purged_bytes() - purged, (long)(np_chunk_data_bytes(a) - 40 * MB));
	purged = np_fake_os_purged_bytes();
	size_t rest = whole - np_chunk_data_bytes(a) - NP_CHUNK_HUGE_HEADER;
	assert_int_equal(cached_dirty(), PAGES(rest)); /* resident, cached */
	assert_ptr_equal(np_chunk_find((char *)a + 47 * MB), a);
	check();
	/* The next request takes the piece: no mapping, its pages came along, and no cut (what
	 * lies past it is under a granule), so nothing goes back. */
	struct np_chunk *b = np_huge_get(0, 50 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	assert_ptr_equal(b, (char *)a + 48 * MB);
	assert_int_equal(b->kind, NP_CHUNK_HUGE);
	assert_int_equal(b->node, 0);
	assert_int_equal(np_chunk_data_bytes(b), rest);
	assert_int_equal(dirty, rest);
	assert_int_equal(((char *)b + b->data_offset)[MB], 0x77);
	assert_ptr_equal(np_chunk_find((char *)b + 49 * MB), b);
	assert_int_equal(np_fake_os_maps(), maps);
	assert_int_equal(np_fake_os_unmaps(), unmaps);
	assert_int_equal(np_fake_os_purged_bytes(), purged);
	size_t mapped_chunks, mapped_bytes;
	np_chunk_huge_totals(&mapped_chunks, &mapped_bytes);
	assert_int_equal(mapped_chunks, 2);
	/* Freed, in either order, the pieces are one chunk again: a request of the whole takes it. */
	assert_true(np_huge_put(b, NULL));
	check();
	assert_true(np_huge_put(a, NULL));
	check();
	np_chunk_huge_totals(&mapped_chunks, &mapped_bytes);
	assert_int_equal(mapped_chunks, 1);
	assert_int_equal(cached_dirty(), PAGES(whole));
	struct np_chunk *c = np_huge_get(0, 100 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	assert_ptr_equal(c, big);
	assert_int_equal(np_chunk_data_bytes(c), whole);
	assert_int_equal(dirty, whole);
	assert_int_equal(np_fake_os_maps(), maps);
	/* A piece whose pages the decay gave back stays clean when the pieces join: calloc
	 * clears only the rest, and the purge that follows gives back only the rest. */
	assert_true(np_huge_put(c, NULL));
	a = np_huge_get(0, 40 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	np_fake_os_advance_clock(60ull * 1000000000u);
	np_huge_decay(0, np_os_clock_ns(), NULL);
	assert_int_equal(cached_dirty(), 0);
	assert_int_equal(cached_clean(), PAGES(rest));
	size_t head = np_chunk_data_bytes(a);
	assert_true(np_huge_put(a, NULL));
	check();
	assert_int_equal(cached_dirty(), PAGES(head));
	assert_int_equal(cached_clean(), PAGES(whole - head));
	/* A piece unmapped (malloc_trim) leaves a hole: the other, freed, joins nothing. */
	a = np_huge_get(0, 40 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	assert_int_equal(a->size, 48 * MB);
	assert_int_equal(np_huge_trim(0, NULL, NULL), 0); /* the piece was clean */
	assert_true(np_huge_put(a, NULL));
	check();
	assert_int_equal(cached_dirty() + cached_clean(), PAGES(np_chunk_data_bytes(a)));
}

/* realloc's growth of a block cut from a larger chunk joins the cached piece behind it (no
 * mremap, no move, no fault) and leaves past what it needs cut off again. */
static void a_grown_piece_joins_the_cached_one_behind_it(void **state)
{
	(void)state;
	start("2node", NULL);
	struct np_chunk *big = make(100 * MB);
	size_t whole = np_chunk_data_bytes(big);
	assert_true(np_huge_put(big, NULL));
	size_t dirty;
	struct np_chunk *a = np_huge_get(0, 10 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	assert_ptr_equal(a, big);
	assert_int_equal(a->size, 16 * MB);
	long maps = np_fake_os_maps();
	struct np_chunk *g = np_huge_grow(a, 60 * MB);
	assert_ptr_equal(g, big); /* in place */
	assert_int_equal(g->size, 64 * MB);
	assert_int_equal(np_fake_os_maps(), maps);
	assert_int_equal(cached_dirty(), PAGES(whole - np_chunk_data_bytes(g) - NP_CHUNK_HUGE_HEADER));
	check();
	/* Grown past the mapping: the rest joins, then the mapping grows. */
	g = np_huge_grow(g, 120 * MB);
	assert_non_null(g);
	assert_true(np_chunk_data_bytes(g) >= 120 * MB);
	assert_int_equal(cached_dirty(), 0);
	assert_int_equal(((char *)g + g->data_offset)[90 * MB], 0x77); /* the pages came along */
	check();
	unmake(g);
}

/* Under a limit on the address space huge chunks are sized to the page: a granule taken for a
 * pool from a chunk just over one leaves a rest too short for a piece's header, which is
 * unmapped rather than made a piece (a review: a 16 KiB rest got a 32 KiB header, cleared 16 KiB
 * past the mapping, over whatever was mapped there). */
static void a_granule_taken_leaves_no_piece_shorter_than_a_header(void **state)
{
	(void)state;
	start("2node", NULL);
	np_chunk_tight = true;
	struct np_chunk *big = make(NP_CHUNK_SIZE - NP_CHUNK_HUGE_HEADER + 16 * 1024);
	assert_int_equal(big->size, NP_CHUNK_SIZE + 16 * 1024);
	char *end = (char *)big + big->size;
	assert_true(np_huge_put(big, NULL));
	/* A mapping of the test's own behind it, when that space is free (mmap places new
	 * mappings below old ones: another may be there already): none of its bytes change. */
	char *behind = mmap(end, MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	assert_true(behind == end || ((void *)behind == MAP_FAILED && errno == EEXIST));
	if (behind == end)
		memset(behind, 0x5a, MB);
	struct np_page *r = np_pool_get_run(0, 100, 1, NULL, true);
	assert_non_null(r);
	assert_ptr_equal(np_chunk_of(r), big);
	for (size_t k = 0; behind == end && k < MB; k++)
		if (behind[k] != 0x5a)
			fail_msg("byte %zu behind the chunk overwritten", k);
	/* The 16 KiB rest is unmapped, not a piece. */
	unsigned char v;
	errno = 0;
	assert_int_equal(mincore(end - NP_PAGE_SIZE, NP_PAGE_SIZE, &v), -1);
	assert_int_equal(errno, ENOMEM);
	size_t mapped_chunks, mapped_bytes;
	np_chunk_huge_totals(&mapped_chunks, &mapped_bytes);
	assert_int_equal(mapped_chunks, 0);
	assert_int_equal(mapped_bytes, 0);
	assert_int_equal(cached_dirty() + cached_clean(), 0);
	np_pool_put_run(r, NULL);
	assert_null(np_pool_check(0));
	check();
	if (behind == end)
		munmap(behind, MB);
	np_chunk_tight = false;
}

/* A growth the cached piece behind cannot hold alone joins it and remaps; when that fails (no
 * address space), the block is as it was and the piece cached again: the caller copies the
 * block and frees the chunk with the counts it had (a review: the piece stayed joined,
 * uncounted, and the free took 16 MiB more off pages_in_use than the block had put on). */
static void a_failed_growth_leaves_the_block_and_its_piece(void **state)
{
	(void)state;
	start("2node", NULL);
	struct np_chunk *big = make(100 * MB);
	char *end = (char *)big + big->size;
	assert_true(np_huge_put(big, NULL));
	size_t dirty;
	struct np_chunk *a = np_huge_get(0, 20 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	assert_int_equal(a->size, 32 * MB);
	size_t cached = cached_dirty();
	/* Nothing grows in place: a guard behind the mapping, unless another mapping is there
	 * already (mmap places new mappings below old ones), which does the same. */
	void *guard = mmap(end, NP_PAGE_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	assert_true(guard == end || (guard == MAP_FAILED && errno == EEXIST));
	np_fake_os_fail_map_after(0); /* nor moves */
	assert_null(np_huge_grow(a, 300 * MB));
	np_fake_os_fail_map_after(-1);
	assert_int_equal(a->size, 32 * MB);
	assert_int_equal(cached_dirty(), cached);
	check();
	if (guard == end)
		munmap(guard, NP_PAGE_SIZE);
	unmake(a);
}

/* A block that grows by a quarter or more, when no piece behind it holds the growth, moves into
 * a cached chunk whose pages are resident, copied: a remap's new pages would each cost a fault
 * while those sat unused (a growing buffer beside blocks cut from a freed larger one peaked at
 * 666 MB against 486 before cuts, glibc 360). A small growth remaps. */
static void a_growing_block_moves_into_resident_pages(void **state)
{
	(void)state;
	start("2node", NULL);
	struct np_chunk *big = make(64 * MB);
	assert_true(np_huge_put(big, NULL));
	struct np_chunk *c = make(8 * MB);
	memset((char *)c + c->data_offset, 0x55, np_chunk_data_bytes(c));
	size_t had = np_chunk_data_bytes(c);
	long maps = np_fake_os_maps(), unmaps = np_fake_os_unmaps();
	struct np_chunk *g = np_huge_grow(c, 16 * MB);
	assert_ptr_equal(g, big);
	assert_int_equal(g->kind, NP_CHUNK_HUGE);
	assert_true(np_chunk_data_bytes(g) >= 16 * MB && g->size == 32 * MB);
	const char *data = (const char *)g + g->data_offset;
	for (size_t k = 0; k < had; k += 4096)
		assert_int_equal(data[k], 0x55);
	assert_int_equal(np_fake_os_maps(), maps);
	assert_int_equal(np_fake_os_unmaps(), unmaps + 1); /* the old chunk */
	check();
	/* By less than a quarter: remapped, where it is or moved with its pages. */
	size_t now = np_chunk_data_bytes(g);
	struct np_chunk *h = np_huge_grow(g, now + 2 * MB);
	assert_non_null(h);
	assert_int_equal(((const char *)h + h->data_offset)[0], 0x55);
	assert_true(np_chunk_data_bytes(h) >= now + 2 * MB);
	check();
	unmake(h);
}

/* A pool that grows takes the first granule of a cached chunk with resident pages, made a
 * chunk in place (no mmap, no bind, no fault), and the rest stays cached: GNU sort -S 20M frees
 * its 20 MB buffer and goes on with blocks of 100 KiB to 1 MiB, whose new pages beside the
 * cached ones made its peak RSS 42.8 MB against glibc's 22.1. A cached chunk without resident
 * pages is not taken: a fresh chunk costs the same faults, and the cache keeps its mapping. */
static void a_growing_pool_takes_a_cached_granule(void **state)
{
	(void)state;
	start("2node", NULL);
	struct np_chunk *big = make(40 * MB);
	size_t whole = np_chunk_data_bytes(big);
	assert_true(np_huge_put(big, NULL));
	long maps = np_fake_os_maps(), binds = np_fake_os_binds();
	struct np_page *r = np_pool_get_run(0, 100, 1, NULL, true);
	assert_non_null(r);
	struct np_chunk *c = np_chunk_of(r);
	assert_ptr_equal(c, big);
	assert_int_equal(c->kind, NP_CHUNK_NORMAL);
	assert_int_equal(c->node, 0);
	assert_int_equal(c->size, NP_CHUNK_SIZE);
	assert_int_equal(c->touched, NP_CHUNK_PAGES); /* every page resident: none costs a fault */
	assert_false(r->clean);                       /* they hold the old block's bytes */
	assert_int_equal(np_fake_os_maps(), maps);
	assert_int_equal(np_fake_os_binds(), binds);
	assert_null(np_pool_check(0));
	/* The rest: a piece of its own, cached, resident. */
	size_t rest = whole - (NP_CHUNK_SIZE - NP_CHUNK_HUGE_HEADER) - NP_CHUNK_HUGE_HEADER;
	assert_int_equal(cached_dirty(), PAGES(rest));
	check();
	size_t mapped_chunks, mapped_bytes;
	np_chunk_huge_totals(&mapped_chunks, &mapped_bytes);
	assert_int_equal(mapped_chunks, 1);
	assert_int_equal(mapped_bytes, rest + NP_CHUNK_HUGE_HEADER);
	/* The whole chunk's data as runs: the pool gives all of it out, descriptors sound. */
	struct np_page *all = np_pool_get_run(0, NP_CHUNK_DATA_PAGES - 100, 1, NULL, true);
	assert_ptr_equal(np_chunk_of(all), c);
	assert_null(np_pool_check(0));
	/* Clean, the piece is left to the cache: the pool maps a chunk of its own. */
	np_fake_os_advance_clock(60ull * 1000000000u);
	np_huge_decay(0, np_os_clock_ns(), NULL);
	assert_int_equal(cached_dirty(), 0);
	struct np_page *other = np_pool_get_run(0, 100, 1, NULL, true);
	assert_non_null(other);
	assert_ptr_not_equal(np_chunk_of(other), c);
	assert_int_equal(np_fake_os_maps(), maps + 1);
	assert_true(other->clean);
	assert_int_equal(cached_clean(), PAGES(rest));
	np_pool_put_run(other, NULL);
	np_pool_put_run(all, NULL);
	np_pool_put_run(r, NULL);
	assert_null(np_pool_check(0));
	check();
}

static void budget_follows_the_peak(void **state)
{
	(void)state;
	start("2node", "PURGE_MB", "8", "DECAY_MS", "0", NULL);
	/* Four 20 MiB blocks live at once: the peak is 80 MiB, so all four are kept when freed,
	 * though the purge watermark is 8 MiB. */
	struct np_chunk *c[4];
	for (int i = 0; i < 4; i++)
		c[i] = make(20 * MB);
	for (int i = 0; i < 4; i++)
		assert_true(np_huge_put(c[i], NULL));
	size_t one = PAGES(np_chunk_data_bytes(c[0]));
	assert_int_equal(cached_dirty(), 4 * one);
	assert_int_equal(cached_clean(), 0);
	check();
	/* A second later the peak halves (nothing is live): the next use gives back the oldest
	 * pages over the budget; they stay mapped, clean. */
	np_fake_os_advance_clock(1100000000ull);
	long unmaps = np_fake_os_unmaps();
	size_t dirty;
	struct np_chunk *t = np_huge_get(0, 1 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	assert_non_null(t);
	assert_true(cached_dirty() <= 2 * one);
	assert_true(cached_clean() >= one);
	assert_int_equal(np_fake_os_unmaps(), unmaps);
	check();
	/* A chunk larger than what the budget allows is not kept: once the peak has decayed to
	 * the floor, a 200 MiB block that was live only briefly long ago is not cached. */
	unmake(t);
	for (int i = 0; i < 12; i++) { /* each second the peak halves, at the next use */
		np_fake_os_advance_clock(1100000000ull);
		struct np_chunk *k = make(1 * MB);
		assert_true(np_huge_put(k, NULL));
	}
	struct np_chunk *huge = np_chunk_map_huge(0, 0, 200 * MB, NP_PAGE_SIZE, false, NULL);
	assert_non_null(huge);
	assert_false(np_huge_put(huge, NULL)); /* never counted live: no peak to follow */
	np_chunk_unmap_huge(huge);
	check();
}

/* realloc grows a live huge block in place: the pages it gained are live too, so the budget
 * follows the grown size, and freeing it leaves the live count where it started. */
static void a_grown_block_counts_its_new_pages(void **state)
{
	(void)state;
	start("2node", "PURGE_MB", "8", "DECAY_MS", "0", NULL);
	struct np_chunk *c = make(4 * MB);
	struct np_chunk *g = np_huge_grow(c, 40 * MB);
	assert_non_null(g);
	assert_true(np_chunk_data_bytes(g) >= 40 * MB);
	assert_int_equal(((char *)g + g->data_offset)[MB], 0x77); /* the pages came along */
	/* 40 MiB was live: a 40 MiB chunk is within the budget, so it is kept. */
	assert_true(np_huge_put(g, NULL));
	check();
	/* Nothing is live now: taken again and grown again, it is still within the peak. */
	size_t dirty;
	struct np_chunk *t = np_huge_get(0, 40 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	assert_ptr_equal(t, g);
	assert_true(np_huge_put(t, NULL));
	/* Two such blocks live at once make an 80 MiB peak: both are kept when freed. */
	struct np_chunk *a = np_huge_get(0, 40 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	struct np_chunk *b = np_huge_grow(make(4 * MB), 40 * MB);
	assert_non_null(a);
	assert_non_null(b);
	assert_true(np_huge_put(a, NULL));
	assert_true(np_huge_put(b, NULL));
	assert_int_equal(cached_dirty(), PAGES(np_chunk_data_bytes(a)) + PAGES(np_chunk_data_bytes(b)));
	check();
}

static void decay_gives_pages_back_then_unmaps_the_clean(void **state)
{
	(void)state;
	start("2node", "DECAY_MS", "1000", NULL);
	size_t one = cache_chunks(12);
	/* After the decay every chunk's pages go back; past 8 clean ones, the oldest unmap. */
	np_fake_os_advance_clock(2000000000ull);
	long unmaps = np_fake_os_unmaps(), purged = np_fake_os_purged_bytes();
	size_t dirty;
	struct np_chunk *t = np_huge_get(0, 6 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	assert_non_null(t);
	assert_int_equal(dirty, np_chunk_data_bytes(t)); /* picked before the decay: reused resident */
	assert_true(np_fake_os_purged_bytes() - purged >= (long)(11 * one) << NP_PAGE_SHIFT);
	/* The others were purged: they read as zeros, and a request one serves clears nothing. */
	struct np_chunk *z = np_huge_get(0, 6 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	assert_non_null(z);
	assert_int_equal(dirty, 0);
	assert_true(np_huge_put(z, NULL));
	assert_true(np_huge_put(t, NULL));
	np_fake_os_advance_clock(2000000000ull);
	struct np_chunk *k = make(1 * MB); /* a put: the cache is used, and decays */
	assert_true(np_huge_put(k, NULL));
	np_fake_os_advance_clock(2000000000ull);
	struct np_chunk *k2 = make(1 * MB);
	assert_true(np_huge_put(k2, NULL));
	assert_true(cached_dirty() <= PAGES(np_chunk_data_bytes(k2)));
	assert_true(cached_clean() <= 8 * one + PAGES(np_chunk_data_bytes(k)));
	assert_true(np_fake_os_unmaps() - unmaps >= 4);
	check();
	/* Trim unmaps what is left. */
	np_huge_trim(0, NULL, NULL);
	assert_int_equal(cached_clean(), 0);
	check();
}

/* The pools' decay look, which the malloc slow path makes now and then (np_pool_decay), gives
 * back the pages of chunks cached longer than NUMAPAGE_DECAY_MS too: the cache decayed only
 * when it was used, so a program that freed 200 MiB of 10 MiB buffers and went on with smaller
 * blocks kept them resident for good (a helper's CPython run). */
static void cached_chunks_decay_at_the_pools_look(void **state)
{
	(void)state;
	start("2node", "DECAY_MS", "1000", NULL);
	size_t one = cache_chunks(3);
	long purged = np_fake_os_purged_bytes();
	np_pool_decay(NULL);
	assert_int_equal(cached_dirty(), 3 * one); /* not old yet */
	np_fake_os_advance_clock(2000000000ull);
	np_pool_decay(NULL);
	assert_int_equal(cached_dirty(), 0);
	assert_int_equal(cached_clean(), 3 * one); /* mapped, clean, for the next request */
	assert_true(np_fake_os_purged_bytes() - purged >= (long)(3 * one) << NP_PAGE_SHIFT);
	check();
	/* A chunk cached since is left until it is old in turn. */
	size_t dirty;
	struct np_chunk *t = np_huge_get(0, 6 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
	assert_non_null(t);
	memset((char *)t + t->data_offset, 0x55, 6 * MB);
	assert_true(np_huge_put(t, NULL));
	np_fake_os_advance_clock(500000000ull);
	np_pool_decay(NULL);
	assert_int_equal(cached_dirty(), one);
	np_fake_os_advance_clock(600000000ull);
	np_pool_decay(NULL);
	assert_int_equal(cached_dirty(), 0);
	check();
}

/* The looks are paced: one a decay period (here 1 s), whichever thread makes it. A chunk that
 * turns old between two looks waits for the next one: the slow paths of every thread call
 * np_pool_decay, and each of them must not take the cache's lock. */
static void the_pools_looks_are_paced(void **state)
{
	(void)state;
	start("2node", "DECAY_MS", "1000", NULL);
	size_t one = cache_chunks(1);
	np_fake_os_advance_clock(900000000ull);
	np_pool_decay(NULL); /* a look: not old yet (0.9 s); the next is due in 1 s */
	assert_int_equal(cached_dirty(), one);
	np_fake_os_advance_clock(200000000ull);
	np_pool_decay(NULL); /* old now (1.1 s), but no look is due */
	assert_int_equal(cached_dirty(), one);
	np_fake_os_advance_clock(900000000ull);
	np_pool_decay(NULL); /* 1.9 s after the first: due */
	assert_int_equal(cached_dirty(), 0);
	check();
}

/* With NUMAPAGE_DECAY_MS=0 (no decay by age: "only past the budgets") the pools' looks still
 * halve the cache's peak once a second, so its resident part comes down to NUMAPAGE_PURGE_MB:
 * np_pool_decay returned before its looks when the option was 0 (a review of the change). */
static void without_decay_the_looks_bring_the_cache_to_its_budget(void **state)
{
	(void)state;
	start("2node", "DECAY_MS", "0", "PURGE_MB", "1", NULL);
	size_t one = cache_chunks(3);
	for (int i = 0; i < 8; i++) {
		np_fake_os_advance_clock(1100000000ull);
		np_pool_decay(NULL);
	}
	assert_int_equal(cached_dirty(), 0); /* the peak halved to under one chunk */
	assert_true(cached_clean() <= 4 * PAGES(MB)); /* past four budgets, clean chunks unmap */
	assert_true(one > 4 * PAGES(MB));
	check();
}

/* A chunk cached after the clock reading a decay check works with (another thread took the
 * time, then the lock, while this one cached): it is not old. Its age was an unsigned
 * difference, which wrapped to a huge one and gave its pages back at once (a review). */
static void a_chunk_cached_after_the_clock_reading_is_not_old(void **state)
{
	(void)state;
	start("2node", "DECAY_MS", "1000", NULL);
	struct np_chunk *a = make(6 * MB), *b = make(6 * MB);
	assert_true(np_huge_put(a, NULL));
	assert_true(np_huge_put(b, NULL));
	b->cached_at += 500000000ull; /* cached half a second after the reading below */
	long purged = np_fake_os_purged_bytes();
	struct np_chunk *k = make(1 * MB);
	assert_true(np_huge_put(k, NULL)); /* a decay check at the clock's reading */
	assert_int_equal(np_fake_os_purged_bytes(), purged);
	check();
	np_huge_trim(0, NULL, NULL);
}

/* The kernel refuses to purge locked memory (mlock, mlockall): a chunk the decay could not
 * give back must still read as zeros when the cache says it is clean, since calloc then
 * clears nothing of it. */
static void refused_purges_leave_zeros(void **state)
{
	(void)state;
	start("2node", "DECAY_MS", "1000", NULL);
	np_fake_os_fail_purge(-EINVAL);
	cache_chunks(3);
	np_fake_os_advance_clock(2000000000ull);
	long purged = np_fake_os_purged_bytes();
	size_t dirty;
	struct np_chunk *t = np_huge_get(0, 6 * MB, NP_PAGE_SIZE, &dirty, NULL, true); /* the decay runs */
	assert_non_null(t);
	for (int i = 0; i < 2; i++) {
		struct np_chunk *z = np_huge_get(0, 6 * MB, NP_PAGE_SIZE, &dirty, NULL, true);
		assert_non_null(z);
		const uint64_t *w = (const uint64_t *)((char *)z + z->data_offset);
		for (size_t k = dirty / 8; k < 6 * MB / 8; k++)
			if (w[k])
				fail_msg("chunk %d: byte %zu holds data past the %zu the cache counts dirty", i, k * 8,
					 dirty);
		assert_true(np_huge_put(z, NULL));
	}
	assert_int_equal(np_fake_os_purged_bytes(), purged);
	assert_true(np_huge_put(t, NULL));
	check();
	np_fake_os_fail_purge(0);
}

/* fork() while a decay purges cached chunks with the lock dropped: the child, where the
 * purging thread does not exist, caches them again, counted dirty (a calloc served by one
 * clears what it counts dirty). */
static size_t fork_child_cached[2];
/* The child's cached dirty and clean pages of node 0, or 0 and 0 when its cache is not sound. */
static void child_cached(void *out)
{
	size_t got[2] = {0, 0};
	if (!np_huge_check(0))
		np_huge_cached(0, &got[0], &got[1]);
	memcpy(out, got, sizeof got);
}

static void fork_in_purge_hook(void)
{
	np_fake_os_purge_hook = NULL;
	np_test_fork(np_huge_atfork_prepare, np_huge_atfork_parent, np_huge_atfork_child, child_cached,
		     fork_child_cached, sizeof fork_child_cached);
}

static void fork_during_a_purge_keeps_the_chunks(void **state)
{
	(void)state;
	start("2node", "DECAY_MS", "1000", NULL);
	size_t one = cache_chunks(3);
	np_fake_os_advance_clock(2000000000ull);
	np_fake_os_purge_hook = fork_in_purge_hook;
	struct np_chunk *k = make(1 * MB); /* its put decays the three: purged, forking meanwhile */
	assert_true(np_huge_put(k, NULL));
	assert_null(np_fake_os_purge_hook);
	/* The child has all four, the ones caught in the purge counted dirty. */
	size_t all = 3 * one + PAGES(np_chunk_data_bytes(k));
	assert_int_equal(fork_child_cached[0] + fork_child_cached[1], all);
	assert_true(fork_child_cached[0] >= one);
	assert_int_equal(cached_dirty() + cached_clean(), all);
	check();
}

/* The start of n granules that nothing maps now (found by a reservation given back): a chunk
 * mapped there (np_fake_os_map_next_at) has the rest of its granule free, whatever the test
 * process mapped before. */
static void *free_granules(size_t n)
{
	size_t len = (n + 1) * NP_CHUNK_SIZE;
	char *r = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(r != MAP_FAILED);
	munmap(r, len);
	return (void *)(((uintptr_t)r + NP_CHUNK_SIZE - 1) & ~(uintptr_t)(NP_CHUNK_SIZE - 1));
}

/* make(bytes), its chunk mapped where the rest of its last granule is free. */
static struct np_chunk *make_alone(size_t bytes)
{
	void *at = free_granules(bytes / NP_CHUNK_SIZE + 2);
	np_fake_os_map_next_at(at);
	struct np_chunk *c = make(bytes);
	assert_ptr_equal(c, at);
	return c;
}

/* Other memory in the granule of huge chunk c, past its mapping: mapped at c + off, one page
 * (the kernel puts a library, a thread's stack or the start-up allocator's region there when
 * the chunk leaves the rest of its granule free). */
static void *other_memory_at(struct np_chunk *c, size_t off)
{
	assert_true(off >= c->size && off < NP_CHUNK_SIZE);
	void *want = (char *)c + off;
	void *q = mmap(want, NP_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0);
	assert_ptr_equal(q, want);
	return q;
}

/* Memory in the granule of huge chunk c that is not c's: not decoded as c's, as a block start
 * or (numa_page_node_of) inside one. */
static void assert_not_claimed(struct np_chunk *c, void *q)
{
	struct np_ptr d;
	assert_null(np_chunk_find(q));
	np_ptr_decode(q, false, &d);
	assert_int_equal(d.kind, NP_PTR_BAD);
	assert_string_equal(d.why, "invalid pointer (not allocated by libnumapage)");
	np_ptr_decode(q, true, &d);
	assert_int_equal(d.kind, NP_PTR_BAD);
	/* c's own block still decodes. */
	np_ptr_decode((char *)c + c->data_offset, false, &d);
	assert_int_equal(d.kind, c->kind == NP_CHUNK_CACHED ? NP_PTR_BAD : NP_PTR_CHUNK);
}

/* A huge chunk smaller than its granule owns its mapping, not the granule: the rest of the
 * granule may hold anything the kernel put there. The granule's mark made every address in it
 * decode as the chunk's, and a free of a start-up block there aborted ("invalid pointer
 * (inside a large block)"): libnuma's exit handler freeing its masks under `ulimit -v`, where
 * a 2 MiB block's chunk took the granule of libnumapage's own data (2 runs of 25 in the
 * 2990wx guest). Chunks made smaller (trimmed, or cut) leave such granules too. */
static void a_chunk_smaller_than_its_granule_claims_only_its_mapping(void **state)
{
	(void)state;
	start("2node", NULL);
	struct np_chunk *c = make_alone(2 * MB);
	assert_true(c->size < NP_CHUNK_SIZE);
	/* A start-up block of the allocator's own, mapped in c's granule: it decodes as one, and
	 * a free gives it back. */
	np_fake_os_map_next_at((char *)c + 8 * MB);
	void *b = np_bootstrap_alloc(128 << 10, 16);
	assert_non_null(b);
	assert_true((uintptr_t)b >> NP_CHUNK_SHIFT == (uintptr_t)c >> NP_CHUNK_SHIFT);
	struct np_ptr d;
	np_ptr_decode(b, false, &d);
	assert_int_equal(d.kind, NP_PTR_BOOT);
	assert_true(np_ptr_usable(&d, b) >= (128 << 10));
	np_free_decoded(&d, b);
	assert_false(np_bootstrap_owns(b));
	/* Anything else there is not ours, c live or cached. */
	void *q = other_memory_at(c, 12 * MB);
	assert_not_claimed(c, q);
	np_huge_count_live(0, -(long)PAGES(np_chunk_data_bytes(c)));
	assert_true(np_huge_put(c, NULL));
	assert_not_claimed(c, q);
	munmap(q, NP_PAGE_SIZE);
	np_huge_trim(0, NULL, NULL);
	check();

	/* A chunk of a granule and more, trimmed below one (np_huge_get under a limit on the
	 * address space), and the piece cut from the end of a larger one. */
	c = make_alone(20 * MB);
	np_chunk_trim_huge(c, 2 * MB);
	q = other_memory_at(c, 8 * MB);
	assert_not_claimed(c, q);
	munmap(q, NP_PAGE_SIZE);
	unmake(c);
	c = make_alone(40 * MB);
	struct np_chunk *t = np_chunk_split_huge(c, 2 * NP_CHUNK_SIZE, true);
	t->kind = NP_CHUNK_HUGE;
	assert_true(t->size < NP_CHUNK_SIZE);
	q = other_memory_at(t, NP_CHUNK_SIZE - NP_PAGE_SIZE);
	assert_not_claimed(t, q);
	np_ptr_decode((char *)c + c->data_offset, false, &d);
	assert_int_equal(d.kind, NP_PTR_CHUNK);
	munmap(q, NP_PAGE_SIZE);
	unmake(t);
	unmake(c);
}

/* A reader of the granule map that may be given any address (numa_page_node_of, the program's
 * mbind) holds np_chunk_guard_enter while it reads a chunk's header that the map led it to: an
 * unmap of that chunk meanwhile waits until it leaves, so the header stays readable. Without
 * the guard, numa_page_node_of on a page of the program's own beside a chunk smaller than its
 * granule read the header as another thread unmapped it: SIGSEGV within a second (a hostile
 * test). The reader here holds the guard for 100 ms around its reads; the unmap, started
 * meanwhile in another thread, must not be done before it leaves. */
static struct np_chunk *unmapping;
static int unmapped_done;

static void *unmap_it(void *arg)
{
	(void)arg;
	np_chunk_unmap_huge(unmapping);
	__atomic_store_n(&unmapped_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void an_unmap_waits_for_the_map_readers(void **state)
{
	(void)state;
	start("2node", NULL);
	struct np_chunk *c = make_alone(2 * MB);
	char *page = other_memory_at(c, 8 * MB);
	np_huge_count_live(0, -(long)PAGES(np_chunk_data_bytes(c)));
	np_chunk_guard_enter();
	/* What numa_page_node_of finds for the page beside it: not the chunk's, but found
	 * through its header. */
	assert_null(np_chunk_find(page));
	unmapping = c;
	__atomic_store_n(&unmapped_done, 0, __ATOMIC_RELAXED);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, unmap_it, NULL), 0);
	/* The unmap began once the granules are clear (it then waits for the guard). Waited for,
	 * not assumed after a nap: on a loaded machine the thread had not run within 100 ms, and
	 * the failure, with the guard held, hung the rest of the suite (unit/huge's timeout). */
	struct timespec nap = {0, 1000 * 1000};
	for (int ms = 0; np_chunk_find(c) && ms < 60 * 1000; ms++)
		nanosleep(&nap, NULL);
	bool began = np_chunk_find(c) == NULL;
	/* Time for an unmap that did not wait to be done. */
	nap.tv_nsec = 100 * 1000 * 1000;
	nanosleep(&nap, NULL);
	bool waited = !__atomic_load_n(&unmapped_done, __ATOMIC_ACQUIRE);
	bool readable = c->size >= 2 * MB; /* still mapped */
	np_chunk_guard_leave();
	assert_true(began);
	assert_true(waited);
	assert_true(readable);
	pthread_join(t, NULL);
	assert_true(__atomic_load_n(&unmapped_done, __ATOMIC_ACQUIRE));
	unsigned char vec;
	assert_int_equal(mincore(c, NP_PAGE_SIZE, &vec), -1); /* gone now */
	assert_int_equal(errno, ENOMEM);
	munmap(page, NP_PAGE_SIZE);
}

/* Under RLIMIT_AS the cache holds at most a 32nd of the limit (choose_locked): the oldest chunks
 * past it are unmapped, resident or not, so that the program's own mappings (mmap, thread
 * stacks, dlopen) find the room the freed blocks leave. A hostile test: under `ulimit -v` 300
 * MiB, 33 freed blocks of 8.4 MB stayed cached and the program's mmap of 8 MiB failed until every
 * one was freed (glibc: after one). Without a limit, the same three stay cached. */
static void under_an_address_limit_the_cache_holds_a_32nd_of_it(void **state)
{
	(void)state;
	start("2node", NULL);
	np_fake_os_set_address_limit((size_t)320 << 20); /* room: 10 MiB */
	np_pool_init(&np_topo_table);
	assert_true(np_chunk_tight);
	struct np_chunk *c[3];
	for (int i = 0; i < 3; i++)
		c[i] = make(4 * MB);
	size_t one = PAGES(np_chunk_data_bytes(c[0]));
	long unmaps = np_fake_os_unmaps();
	for (int i = 0; i < 3; i++) {
		np_huge_count_live(0, -(long)PAGES(np_chunk_data_bytes(c[i])));
		assert_true(np_huge_put(c[i], NULL));
		check();
	}
	/* Two of 4 MiB fit in 10 MiB, a third does not: the oldest went. */
	assert_int_equal(cached_dirty() + cached_clean(), 2 * one);
	assert_int_equal(np_fake_os_unmaps() - unmaps, 1);
	size_t dirty;
	struct np_chunk *g = np_huge_get(0, 4 * MB, NP_PAGE_SIZE, &dirty, NULL, false);
	assert_true(g == c[1] || g == c[2]);
	np_huge_count_live(0, -(long)PAGES(np_chunk_data_bytes(g)));
	assert_true(np_huge_put(g, NULL));
	np_huge_trim(0, NULL, NULL);
	/* The newest stays, though alone past the room: a block freed and asked for again is
	 * reused (when it went, each cycle of a 12 MiB block cost a mapping, and near the limit
	 * the new one could fail where the freed one fitted: a review). */
	struct np_chunk *big = make(12 * MB), *big2 = make(12 * MB);
	np_huge_count_live(0, -(long)PAGES(np_chunk_data_bytes(big)));
	assert_true(np_huge_put(big, NULL));
	assert_int_equal(cached_dirty() + cached_clean(), PAGES(np_chunk_data_bytes(big)));
	np_huge_count_live(0, -(long)PAGES(np_chunk_data_bytes(big2)));
	assert_true(np_huge_put(big2, NULL));
	assert_int_equal(cached_dirty() + cached_clean(), PAGES(np_chunk_data_bytes(big2)));
	assert_ptr_equal(np_huge_get(0, 12 * MB, NP_PAGE_SIZE, &dirty, NULL, false), big2);
	np_huge_count_live(0, -(long)PAGES(np_chunk_data_bytes(big2)));
	assert_true(np_huge_put(big2, NULL));
	check();
	np_huge_trim(0, NULL, NULL);
	np_fake_os_set_address_limit(0);
	np_pool_init(&np_topo_table);
	assert_false(np_chunk_tight);
	for (int i = 0; i < 3; i++)
		c[i] = make(4 * MB);
	for (int i = 0; i < 3; i++) {
		np_huge_count_live(0, -(long)PAGES(np_chunk_data_bytes(c[i])));
		assert_true(np_huge_put(c[i], NULL));
	}
	assert_int_equal(cached_dirty() + cached_clean(), 3 * PAGES(np_chunk_data_bytes(c[0])));
	check();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(reuse_whole_and_grow, teardown),
		cmocka_unit_test_teardown(a_chunk_smaller_than_its_granule_claims_only_its_mapping, teardown),
		cmocka_unit_test_teardown(an_unmap_waits_for_the_map_readers, teardown),
		cmocka_unit_test_teardown(under_an_address_limit_the_cache_holds_a_32nd_of_it, teardown),
		cmocka_unit_test_teardown(a_larger_chunk_is_cut_and_its_pieces_join_again, teardown),
		cmocka_unit_test_teardown(a_grown_piece_joins_the_cached_one_behind_it, teardown),
		cmocka_unit_test_teardown(a_growing_pool_takes_a_cached_granule, teardown),
		cmocka_unit_test_teardown(a_failed_growth_leaves_the_block_and_its_piece, teardown),
		cmocka_unit_test_teardown(a_granule_taken_leaves_no_piece_shorter_than_a_header, teardown),
		cmocka_unit_test_teardown(a_growing_block_moves_into_resident_pages, teardown),
		cmocka_unit_test_teardown(refused_purges_leave_zeros, teardown),
		cmocka_unit_test_teardown(fork_during_a_purge_keeps_the_chunks, teardown),
		cmocka_unit_test_teardown(budget_follows_the_peak, teardown),
		cmocka_unit_test_teardown(a_grown_block_counts_its_new_pages, teardown),
		cmocka_unit_test_teardown(decay_gives_pages_back_then_unmaps_the_clean, teardown),
		cmocka_unit_test_teardown(cached_chunks_decay_at_the_pools_look, teardown),
		cmocka_unit_test_teardown(the_pools_looks_are_paced, teardown),
		cmocka_unit_test_teardown(without_decay_the_looks_bring_the_cache_to_its_budget, teardown),
		cmocka_unit_test_teardown(a_chunk_cached_after_the_clock_reading_is_not_old, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
