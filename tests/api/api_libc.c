/*
 * api_libc.c — what only the libc names have (valloc, pvalloc, mallinfo2, malloc_info, malloc_stats,
 * malloc_trim's pad, glibc's __libc_malloc family) and proof that the C library's own allocations (strdup, asprintf, getline,
 * stdio buffers, qsort's buffer) come from libnumapage and can be freed with free. Built only
 * when libnumapage exports the libc names (not under a sanitizer).
 */
#include <errno.h>
#include <dirent.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "api/api_common.h"

#define PAGE ((size_t)sysconf(_SC_PAGESIZE))

static void valloc_is_page_aligned(void **state)
{
	(void)state;
	for (size_t n = 0; n <= ((size_t)1 << 20); n = n ? n * 3 + 1 : 1) {
		void *p = valloc(n);
		assert_non_null(p);
		assert_true(numa_page_node_of(p) >= 0);
		assert_int_equal((uintptr_t)p % PAGE, 0);
		assert_true(malloc_usable_size(p) >= n);
		np_t_fill(p, n, n);
		assert_int_equal(np_t_check(p, n, n), SIZE_MAX);
		free(p);
	}
	errno = 0;
	assert_null(valloc(np_t_opaque(SIZE_MAX - 100)));
	assert_int_equal(errno, ENOMEM);
}

/* pvalloc rounds the size up to whole pages (0 to one page). */
static void pvalloc_rounds_to_pages(void **state)
{
	(void)state;
	const size_t sizes[] = {0, 1, 4095, 4096, 4097, 50000, 1000000};
	for (size_t i = 0; i < NP_ARRAY_SIZE_(sizes); i++) {
		size_t want = sizes[i] ? (sizes[i] + PAGE - 1) / PAGE * PAGE : PAGE;
		void *p = pvalloc(sizes[i]);
		assert_non_null(p);
		assert_true(numa_page_node_of(p) >= 0);
		assert_int_equal((uintptr_t)p % PAGE, 0);
		assert_true(malloc_usable_size(p) >= want);
		np_t_fill(p, want, i);
		assert_int_equal(np_t_check(p, want, i), SIZE_MAX);
		free(p);
	}
	errno = 0;
	assert_null(pvalloc(np_t_opaque(SIZE_MAX - 10)));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(pvalloc(np_t_opaque(SIZE_MAX / 2)));
	assert_int_equal(errno, ENOMEM);
}

static int cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* Memory the C library allocates on the program's behalf is ours, and free takes it. */
static void libc_internal_allocations_are_ours(void **state)
{
	(void)state;
	char *s = strdup("a string the C library copies with malloc");
	assert_non_null(s);
	assert_true(numa_page_node_of(s) >= 0);
	free(s);

	char *a = NULL;
	assert_true(asprintf(&a, "%s-%d-%0200d", "asprintf", 42, 7) > 200);
	assert_true(numa_page_node_of(a) >= 0);
	free(a);

	char *buf = NULL;
	size_t cap = 0;
	FILE *f = fmemopen((void *)"line one\nline two is longer\n", 28, "r");
	assert_non_null(f);
	assert_true(getline(&buf, &cap, f) > 0);
	assert_true(numa_page_node_of(buf) >= 0);
	assert_true(getline(&buf, &cap, f) > 0);
	assert_string_equal(buf, "line two is longer\n");
	fclose(f);
	free(buf);

	char *ms = NULL;
	size_t mslen = 0;
	FILE *m = open_memstream(&ms, &mslen);
	assert_non_null(m);
	for (int i = 0; i < 10000; i++)
		fprintf(m, "%d,", i);
	fclose(m);
	assert_true(mslen > 40000);
	assert_true(numa_page_node_of(ms) >= 0);
	free(ms);

	/* qsort takes a temporary buffer from malloc for large arrays. */
	enum { N = 200000 };
	uint64_t *v = malloc(N * sizeof *v);
	assert_non_null(v);
	for (int i = 0; i < N; i++)
		v[i] = (uint64_t)(N - i) * 2654435761u % 1000003;
	qsort(v, N, sizeof *v, cmp);
	for (int i = 1; i < N; i++)
		assert_true(v[i - 1] <= v[i]);
	free(v);
}

static void mallinfo2_reports_our_memory(void **state)
{
	(void)state;
	struct mallinfo2 before = mallinfo2();
	assert_true(before.arena > 0);
	enum { N = 20000 };
	void **p = malloc(N * sizeof *p);
	assert_non_null(p);
	for (int i = 0; i < N; i++) {
		p[i] = malloc(200);
		assert_non_null(p[i]);
	}
	void *big = malloc(1 << 20);
	assert_non_null(big);
	struct mallinfo2 during = mallinfo2();
	/* In-use bytes of small blocks are folded on a slow path: N blocks take many. */
	assert_true(during.uordblks >= before.uordblks + (size_t)N * 200 / 2);
	assert_true(during.arena >= before.arena);
	for (int i = 0; i < N; i++)
		free(p[i]);
	free(p);
	free(big);
}

/* mallinfo2's fields add up as glibc's do (arena = uordblks + fordblks), blocks too large for
 * a pool show in hblks and hblkhd, and live small blocks show in uordblks. A review found
 * uordblks 104 MB against an arena of 16.5 MB with ten 10 MB blocks live (their chunks were in
 * no field), uordblks 0 with 112,000 bytes of small blocks live (a lagging counter), and the
 * legacy mallinfo left to glibc (arena 0). */
static void mallinfo2_adds_up_and_counts_huge_blocks(void **state)
{
	(void)state;
	struct mallinfo2 before = mallinfo2();
	enum { SMALL = 1000, HUGE = 10 };
	void *small[SMALL], *huge[HUGE];
	for (int i = 0; i < SMALL; i++)
		assert_non_null(small[i] = malloc(100));
	for (int i = 0; i < HUGE; i++)
		assert_non_null(huge[i] = malloc(10000000));
	struct mallinfo2 m = mallinfo2();
	assert_int_equal(m.arena, m.uordblks + m.fordblks);
	assert_true(m.uordblks >= (size_t)SMALL * 100);
	assert_true(m.hblks >= before.hblks + HUGE);
	assert_true(m.hblkhd >= before.hblkhd + (size_t)HUGE * 10000000);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	struct mallinfo old = mallinfo();
#pragma GCC diagnostic pop
	assert_true(old.arena > 0);
	assert_true(old.hblks >= HUGE);
	assert_true((size_t)old.hblkhd >= (size_t)HUGE * 10000000);
	for (int i = 0; i < HUGE; i++)
		free(huge[i]);
	for (int i = 0; i < SMALL; i++)
		free(small[i]);
	m = mallinfo2();
	assert_int_equal(m.arena, m.uordblks + m.fordblks);
}

/* What fn(arg) writes on stderr, into text (size bytes, terminated). */
static void stderr_of(void (*fn)(void *), void *arg, char *text, size_t size)
{
	FILE *tmp = tmpfile();
	assert_non_null(tmp);
	fflush(stderr);
	int saved = dup(2);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), 2) == 2);
	fn(arg);
	fflush(stderr);
	assert_true(dup2(saved, 2) == 2);
	close(saved);
	rewind(tmp);
	size_t n = fread(text, 1, size - 1, tmp);
	text[n] = 0;
	fclose(tmp);
}

static void call_malloc_stats(void *arg)
{
	(void)arg;
	malloc_stats();
}

/* malloc_stats prints our per-node table on stderr. */
static void malloc_stats_prints_our_table(void **state)
{
	(void)state;
	char text[8192];
	stderr_of(call_malloc_stats, NULL, text, sizeof text);
	assert_non_null(strstr(text, "numa_hit"));
	assert_non_null(strstr(text, "malloc_requested"));
	assert_non_null(strstr(text, "node"));
}

/* A thread with a cancellation pending calls malloc_stats, then returns. */
static void *stats_then_exit(void *arg)
{
	(void)arg;
	pthread_cancel(pthread_self());
	malloc_stats();
	return (void *)1;
}

static void stats_in_cancelled_thread(void *arg)
{
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, stats_then_exit, NULL), 0);
	assert_int_equal(pthread_join(t, (void **)arg), 0);
}

/* malloc_stats is no cancellation point: its table comes out whole under a pending cancel, as
 * glibc's does (glibc bug 22830, tst-malloc-stats-cancellation; a helper found ours cut at
 * its first write). */
static void malloc_stats_is_not_cancelled(void **state)
{
	(void)state;
	char text[8192];
	void *ret = NULL;
	stderr_of(stats_in_cancelled_thread, &ret, text, sizeof text);
	assert_non_null(strstr(text, "numa_hit"));
	assert_non_null(strstr(text, "malloc_requested"));
	/* It still dies at its next cancellation point, or runs to its end: not at the table. */
	assert_true(ret == PTHREAD_CANCELED || ret == (void *)1);
}

/* ---- malloc_info: glibc's XML, one heap per node with memory ---- */

struct mi_figures {
	int heaps;                  /* <heap> elements */
	int heap_nr[64];            /* their nr attributes: OS node ids */
	size_t heap_current[64];    /* their <system type="current"> */
	size_t heap_max[64], heap_rest[64];
	size_t heaps_current, heaps_max, heaps_rest, heaps_aspace; /* sums over the heaps */
	size_t current, max, rest, aspace, mmap_count, mmap_size;  /* the totals after them */
	bool closed;                /* ends with </malloc> */
};

/* The number after ` attr="` in line (0 when missing, which the callers' checks then fail). */
static size_t mi_attr(const char *line, const char *attr)
{
	char key[32];
	snprintf(key, sizeof key, " %s=\"", attr);
	const char *at = strstr(line, key);
	return at ? strtoull(at + strlen(key), NULL, 10) : 0;
}

/* A figure's size attribute: inside heap h (>= 0) into per_heap[h] (when kept) and the heaps'
 * sum, after the heaps into the total. */
static void mi_take(const char *line, int h, size_t *per_heap, size_t *heaps_sum, size_t *total)
{
	size_t v = mi_attr(line, "size");
	if (h < 0) {
		*total = v;
		return;
	}
	if (per_heap)
		per_heap[h] = v;
	*heaps_sum += v;
}

/* malloc_info(0, ...)'s text, read back and taken apart line by line. */
static struct mi_figures mi_read(void)
{
	FILE *f = tmpfile();
	assert_non_null(f);
	assert_int_equal(malloc_info(0, f), 0);
	rewind(f);
	struct mi_figures m;
	memset(&m, 0, sizeof m);
	char line[512];
	assert_non_null(fgets(line, sizeof line, f));
	assert_string_equal(line, "<malloc version=\"1\">\n");
	int in_heap = -1;
	while (fgets(line, sizeof line, f)) {
		assert_false(m.closed); /* nothing after the end */
		if (!strncmp(line, "<heap nr=\"", 10)) {
			assert_int_equal(in_heap, -1);
			assert_true(m.heaps < 64);
			in_heap = m.heaps++;
			m.heap_nr[in_heap] = (int)mi_attr(line, "nr");
		} else if (!strcmp(line, "</heap>\n")) {
			assert_true(in_heap >= 0);
			in_heap = -1;
		} else if (!strcmp(line, "</malloc>\n")) {
			assert_int_equal(in_heap, -1);
			m.closed = true;
		} else if (strstr(line, "<system type=\"current\"")) {
			mi_take(line, in_heap, m.heap_current, &m.heaps_current, &m.current);
		} else if (strstr(line, "<system type=\"max\"")) {
			mi_take(line, in_heap, m.heap_max, &m.heaps_max, &m.max);
		} else if (strstr(line, "<total type=\"rest\"")) {
			mi_take(line, in_heap, m.heap_rest, &m.heaps_rest, &m.rest);
		} else if (strstr(line, "<aspace type=\"total\"")) {
			mi_take(line, in_heap, NULL, &m.heaps_aspace, &m.aspace);
		} else if (strstr(line, "<total type=\"mmap\"")) {
			assert_int_equal(in_heap, -1);
			m.mmap_count = mi_attr(line, "count");
			m.mmap_size = mi_attr(line, "size");
		}
	}
	fclose(f);
	assert_true(m.closed);
	return m;
}

static int mi_heap_of(const struct mi_figures *m, int node)
{
	for (int i = 0; i < m->heaps; i++)
		if (m->heap_nr[i] == node)
			return i;
	return -1;
}

/* malloc_info printed glibc's own heap, which under libnumapage holds nothing: a program that
 * watched its memory with it saw 0 bytes (system current 0 with 20 MB live). Now glibc's
 * schema with our figures: a heap per node whose pages were mapped (nr = its node id), the
 * totals after them adding up to theirs and to mallinfo2's, blocks too large for a pool as
 * glibc's mmap total. */
static void malloc_info_reports_our_nodes(void **state)
{
	(void)state;
	errno = 0;
	assert_int_equal(malloc_info(1, stdout), -1); /* glibc: options must be 0 */
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(malloc_info(0, NULL), -1);
	assert_int_equal(errno, EINVAL);

	enum { SMALL = 20000, HUGE = 3, HUGE_SIZE = 10000000, ON_NODE = 1 << 20 };
	static void *small[SMALL];
	void *huge[HUGE], *on_node[64] = {0};
	for (int i = 0; i < SMALL; i++)
		assert_non_null(small[i] = malloc(200));
	for (int i = 0; i < HUGE; i++)
		assert_non_null(huge[i] = malloc(HUGE_SIZE));
	/* A page run asked of every node (on a rehearsed topology too): it lives on the node, or
	 * for a memoryless one on its nearest node with memory. */
	int max_node = numa_page_max_node();
	assert_true(max_node < 64);
	for (int n = 0; n <= max_node; n++) {
		on_node[n] = numa_page_alloc_onnode(ON_NODE, n);
		if (on_node[n])
			memset(on_node[n], 1, ON_NODE);
	}

	struct mallinfo2 before = mallinfo2();
	struct mi_figures m = mi_read();
	struct mallinfo2 after = mallinfo2();

	assert_true(m.heaps >= 1);
	for (int n = 0; n <= max_node; n++) {
		if (!on_node[n])
			continue;
		int where = numa_page_node_of(on_node[n]);
		int h = mi_heap_of(&m, where);
		if (h < 0)
			fail_msg("no heap for node %d, where a page run asked of node %d is live", where, n);
		assert_true(m.heap_current[h] >= ON_NODE);
		assert_true(m.heap_max[h] >= m.heap_current[h]);
		assert_true(m.heap_rest[h] <= m.heap_current[h]);
	}
	for (int i = 0; i < m.heaps; i++)
		for (int j = 0; j < i; j++)
			assert_int_not_equal(m.heap_nr[i], m.heap_nr[j]);
	/* The totals are the heaps' sums. */
	assert_int_equal(m.current, m.heaps_current);
	assert_int_equal(m.max, m.heaps_max);
	assert_int_equal(m.rest, m.heaps_rest);
	assert_int_equal(m.aspace, m.heaps_aspace);
	assert_true(m.current >= (size_t)SMALL * 200);
	assert_true(m.mmap_count >= HUGE);
	assert_true(m.mmap_size >= (size_t)HUGE * HUGE_SIZE);
	/* mallinfo2's figures, when nothing changed around the report (a single thread). */
	if (before.arena == after.arena && before.fordblks == after.fordblks && before.hblks == after.hblks) {
		assert_int_equal(m.current, after.arena);
		assert_int_equal(m.rest, after.fordblks);
		assert_int_equal(m.mmap_count, after.hblks);
		assert_int_equal(m.mmap_size, after.hblkhd);
	}

	/* Freed and trimmed: the pools keep their chunks mapped (the trim gives their pages back),
	 * so what they map stays and what is free grows; the huge blocks' chunks leave the mmap
	 * total as the node's cache gives them back. The peak's fall below it: address_space. */
	size_t freed = 0;
	for (int i = 0; i < HUGE; i++)
		free(huge[i]);
	for (int i = 0; i < SMALL; i++)
		free(small[i]);
	freed += (size_t)SMALL * 200;
	for (int n = 0; n <= max_node; n++)
		if (on_node[n]) {
			numa_page_free(on_node[n]);
			freed += ON_NODE;
		}
	malloc_trim(0);
	struct mi_figures later = mi_read();
	assert_true(later.max >= m.max);
	assert_true(later.current >= m.current);
	if (later.rest < m.rest + freed / 2)
		fail_msg("free bytes %zu -> %zu after %zu bytes were freed", m.rest, later.rest, freed);
	assert_true(later.mmap_size <= m.mmap_size);
}

/* malloc_info answers for its own writes (a hostile review): a stream's error indicator left
 * by the program's earlier use made a report written whole return -1, errno untouched; a
 * device that refuses every write returned 0 on a buffered stream. */
static void malloc_info_answers_for_its_own_writes(void **state)
{
	(void)state;
	FILE *f = tmpfile();
	assert_non_null(f);
	int fd = dup(fileno(f));
	assert_true(fd >= 0);
	FILE *w = fdopen(fd, "w");
	assert_non_null(w);
	(void)fgetc(w); /* a read of a write-only stream sets its error indicator */
	assert_true(ferror(w));
	assert_int_equal(malloc_info(0, w), 0);
	fclose(w);
	rewind(f);
	char text[8192];
	size_t n = fread(text, 1, sizeof text - 1, f);
	text[n] = 0;
	fclose(f);
	assert_non_null(strstr(text, "<malloc version=\"1\">\n"));
	assert_non_null(strstr(text, "</malloc>\n"));
	for (int buffered = 0; buffered <= 1; buffered++) {
		FILE *full = fopen("/dev/full", "w");
		assert_non_null(full);
		if (!buffered)
			assert_int_equal(setvbuf(full, NULL, _IONBF, 0), 0);
		errno = 0;
		assert_int_equal(malloc_info(0, full), -1);
		assert_int_equal(errno, ENOSPC);
		fclose(full);
	}
}

/* malloc_trim's pad is accepted (and ignored); freed memory goes back. */
static void malloc_trim_with_pad(void **state)
{
	(void)state;
	enum { N = 64 };
	void *p[N];
	for (int i = 0; i < N; i++) {
		p[i] = malloc(512 << 10);
		assert_non_null(p[i]);
		memset(p[i], 3, 512 << 10);
	}
	struct numa_page_node_stats used = np_t_stats();
	for (int i = 0; i < N; i++)
		free(p[i]);
	assert_int_equal(malloc_trim(1 << 20), 1);
	struct numa_page_node_stats after = np_t_stats();
	assert_true(after.pages_purged >= used.pages_purged + N * (512 << 10) / 4096);
}

/* glibc's own names for its allocator are ours too: blocks pass between them and free. */
extern void *__libc_malloc(size_t size);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t nmemb, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

static void libc_internal_names_are_ours(void **state)
{
	(void)state;
	const size_t sizes[] = {1, 100, 5000, 300000, 9 << 20};
	for (size_t i = 0; i < NP_ARRAY_SIZE_(sizes); i++) {
		size_t n = sizes[i];
		char *p = __libc_malloc(n);
		assert_non_null(p);
		assert_true(numa_page_node_of(p) >= 0);
		np_t_fill(p, n, i);
		p = __libc_realloc(p, 2 * n);
		assert_non_null(p);
		assert_true(numa_page_node_of(p) >= 0);
		assert_int_equal(np_t_check(p, n, i), SIZE_MAX);
		free(p);
		p = malloc(n);
		assert_true(numa_page_node_of(p) >= 0);
		__libc_free(p);
		p = __libc_calloc(n, 1);
		assert_true(numa_page_node_of(p) >= 0);
		for (size_t k = 0; k < n; k++)
			assert_int_equal(p[k], 0);
		__libc_free(p);
		p = __libc_memalign(4096, n);
		assert_true(numa_page_node_of(p) >= 0);
		assert_int_equal((uintptr_t)p % 4096, 0);
		free(p);
		p = __libc_valloc(n);
		assert_int_equal((uintptr_t)p % PAGE, 0);
		free(p);
		p = __libc_pvalloc(n);
		assert_int_equal((uintptr_t)p % PAGE, 0);
		assert_true(malloc_usable_size(p) >= (n + PAGE - 1) / PAGE * PAGE);
		__libc_free(p);
	}
}

/* The threads of this process, from /proc/self/task. */
static int task_count(void)
{
	DIR *d = opendir("/proc/self/task");
	assert_non_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static pthread_barrier_t idle_barrier;

static void *idle_thread(void *arg)
{
	pthread_barrier_wait(&idle_barrier);
	return arg;
}

/* A detached thread frees its own TCB after its TSD destructors ran, and glibc then frees from
 * it the DTVs of the stacks it drops from its cache (blocks its creator allocated). A thread
 * that had never allocated made its allocator state there, for good: no destructor was left to
 * run, and each such exit kept a state (pages), the threads gauge and the freed block's bytes
 * (found by a hostile review: 3,000 exits, threads 1 -> 393, RSS +3 MB). Ten threads live at
 * once with 32 MiB stacks overflow glibc's 40 MiB stack cache when they exit: the exiting
 * threads free the surplus stacks' DTVs. */
static void detached_threads_that_never_allocate_leave_no_state(void **state)
{
	(void)state;
	pthread_attr_t attr;
	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED), 0);
	assert_int_equal(pthread_attr_setstacksize(&attr, (size_t)32 << 20), 0);
	int base = task_count();
	struct numa_page_node_stats before = np_t_stats();
	for (int round = 0; round < 20; round++) {
		assert_int_equal(pthread_barrier_init(&idle_barrier, NULL, 11), 0);
		for (int i = 0; i < 10; i++) {
			pthread_t t;
			assert_int_equal(pthread_create(&t, &attr, idle_thread, NULL), 0);
		}
		pthread_barrier_wait(&idle_barrier);
		/* All gone (the kernel drops a task after its last free). */
		while (task_count() > base)
			sched_yield();
		pthread_barrier_destroy(&idle_barrier);
	}
	pthread_attr_destroy(&attr);
	struct numa_page_node_stats after = np_t_stats();
	if (after.threads != before.threads)
		fail_msg("threads gauge %lld -> %lld after 20 x 10 detached threads",
			 (long long)before.threads, (long long)after.threads);
	/* The DTVs freed are the creator's blocks; cached stacks keep a few DTVs live. */
	if (after.malloc_in_use > before.malloc_in_use + 16 * 1024)
		fail_msg("malloc_in_use %lld -> %lld", (long long)before.malloc_in_use,
			 (long long)after.malloc_in_use);
}

int main(void)
{
	/* Linking libnumapage replaced malloc: the very first block is already ours. */
	void *first = malloc(8);
	if (numa_page_node_of(first) < 0) {
		fprintf(stderr, "malloc is not libnumapage's\n");
		return 1;
	}
	free(first);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(valloc_is_page_aligned),
		cmocka_unit_test(pvalloc_rounds_to_pages),
		cmocka_unit_test(libc_internal_allocations_are_ours),
		cmocka_unit_test(mallinfo2_reports_our_memory),
		cmocka_unit_test(mallinfo2_adds_up_and_counts_huge_blocks),
		cmocka_unit_test(malloc_stats_prints_our_table),
		cmocka_unit_test(malloc_stats_is_not_cancelled),
		cmocka_unit_test(malloc_info_reports_our_nodes),
		cmocka_unit_test(malloc_info_answers_for_its_own_writes),
		cmocka_unit_test(malloc_trim_with_pad),
		cmocka_unit_test(libc_internal_names_are_ours),
		cmocka_unit_test(detached_threads_that_never_allocate_leave_no_state),
	};
	return cmocka_run_group_tests_name("api: libc-only names", tests, NULL, NULL);
}
