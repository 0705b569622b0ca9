/*
 * override.c — the C library's allocation names, so that LD_PRELOAD=libnumapage.so or linking
 * with -lnumapage (shared or static) replaces malloc for the whole process. The only file that
 * defines libc names; left out of sanitizer builds, where the sanitizer owns malloc.
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "json.h"
#include "malloc/alloc.h"
#include "malloc/init.h"
#include "pool/pool.h"
#include "topology/topology.h"
#include "vmstat/vmstat.h"

#define NP_EXPORT __attribute__((visibility("default")))

/* Pulls the constructor (ctor.c) into static links that use only these names. */
extern const int np_ctor_anchor;
static const int *const override_anchor __attribute__((used)) = &np_ctor_anchor;

NP_EXPORT void *malloc(size_t size)
{
	return np_malloc_fast(size);
}

NP_EXPORT void free(void *p)
{
	np_free_fast(p);
}

NP_EXPORT void cfree(void *p)
{
	np_free_fast(p);
}

/* C23's sized frees. Recent glibc defines them beside its malloc (its internal header declares
 * __free_sized as it does __libc_free), so without these such a call would hand our block to
 * glibc's own free, which no preload replaces. Declared here for older headers (Debian 12's
 * glibc 2.36 has neither). */
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t alignment, size_t size);

NP_EXPORT void free_sized(void *p, size_t size)
{
	numa_page_free_sized(p, size);
}

NP_EXPORT void free_aligned_sized(void *p, size_t alignment, size_t size)
{
	numa_page_free_aligned_sized(p, alignment, size);
}

NP_EXPORT void *calloc(size_t nmemb, size_t size)
{
	return np_calloc(nmemb, size);
}

NP_EXPORT void *realloc(void *p, size_t size)
{
	return np_realloc(p, size);
}

NP_EXPORT void *reallocarray(void *p, size_t nmemb, size_t size)
{
	return numa_page_reallocarray(p, nmemb, size);
}

NP_EXPORT int posix_memalign(void **out, size_t alignment, size_t size)
{
	return numa_page_posix_memalign(out, alignment, size);
}

NP_EXPORT void *aligned_alloc(size_t alignment, size_t size)
{
	return numa_page_aligned_alloc(alignment, size);
}

NP_EXPORT void *memalign(size_t alignment, size_t size)
{
	return numa_page_memalign(alignment, size);
}

NP_EXPORT void *valloc(size_t size)
{
	return np_alloc_aligned(NP_PAGE_SIZE, size);
}

NP_EXPORT void *pvalloc(size_t size)
{
	size_t rounded = (size + NP_PAGE_SIZE - 1) & ~(NP_PAGE_SIZE - 1);
	if (rounded < size) {
		errno = ENOMEM;
		return NULL;
	}
	return np_alloc_aligned(NP_PAGE_SIZE, rounded ? rounded : NP_PAGE_SIZE);
}

/* glibc's own names for its allocator: a program or library that calls them directly and frees
 * with free (or the reverse) meets one allocator, as under tcmalloc and mimalloc, which define
 * them too (before, free(__libc_malloc(n)) aborted: "invalid pointer"). */
void *__libc_malloc(size_t size);
void __libc_free(void *p);
void *__libc_calloc(size_t nmemb, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t alignment, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);

NP_EXPORT void *__libc_malloc(size_t size)
{
	return np_malloc_fast(size);
}

NP_EXPORT void __libc_free(void *p)
{
	np_free_fast(p);
}

NP_EXPORT void *__libc_calloc(size_t nmemb, size_t size)
{
	return np_calloc(nmemb, size);
}

NP_EXPORT void *__libc_realloc(void *p, size_t size)
{
	return np_realloc(p, size);
}

NP_EXPORT void *__libc_memalign(size_t alignment, size_t size)
{
	return numa_page_memalign(alignment, size);
}

NP_EXPORT void *__libc_valloc(size_t size)
{
	return valloc(size);
}

NP_EXPORT void *__libc_pvalloc(size_t size)
{
	return pvalloc(size);
}

NP_EXPORT size_t malloc_usable_size(void *p)
{
	return np_usable_size(p);
}

NP_EXPORT int malloc_trim(size_t pad)
{
	(void)pad;
	return numa_page_trim();
}

/* No cancellation point, as glibc's is not (its bug 22830): a pending cancel would cut the
 * table at its first write. */
NP_EXPORT void malloc_stats(void)
{
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	numa_page_stats_print(stderr, NUMA_PAGE_STATS_TABLE);
	pthread_setcancelstate(old, NULL);
}

/* glibc's fields, in libnumapage's terms (the invariant arena = uordblks + fordblks holds, as
 * glibc's): arena, the data bytes of the pools' chunks; fordblks, their free pages; uordblks,
 * the rest (slabs, page runs and the threads' page caches: what holds blocks); hblks and
 * hblkhd, the chunks of their own of blocks too large for a pool (live, or kept for reuse) and
 * their bytes. Read without locks: a snapshot that other threads may be changing. */
NP_EXPORT struct mallinfo2 mallinfo2(void)
{
	struct mallinfo2 mi = {0};
	if (!np_is_ready())
		return mi;
	size_t mapped, free_pages, chunks, bytes;
	np_pool_totals(&mapped, &free_pages);
	np_chunk_huge_totals(&chunks, &bytes);
	mi.arena = mapped << NP_PAGE_SHIFT;
	mi.fordblks = NP_MIN(free_pages, mapped) << NP_PAGE_SHIFT;
	mi.uordblks = mi.arena - mi.fordblks;
	mi.hblks = chunks;
	mi.hblkhd = bytes;
	return mi;
}

/* The figures malloc_info writes for a heap and again for the totals, in pages (mmap: the
 * totals' line for huge blocks, left out of a heap when NULL). */
static bool info_figures(FILE *fp, size_t free_pages, const char *mmap, size_t mapped, size_t peak)
{
	return fprintf(fp,
		       "<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
		       "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n"
		       "%s"
		       "<system type=\"current\" size=\"%zu\"/>\n"
		       "<system type=\"max\" size=\"%zu\"/>\n"
		       "<aspace type=\"total\" size=\"%zu\"/>\n"
		       "<aspace type=\"mprotect\" size=\"%zu\"/>\n",
		       free_pages, free_pages << NP_PAGE_SHIFT, mmap ? mmap : "", mapped << NP_PAGE_SHIFT,
		       peak << NP_PAGE_SHIFT, mapped << NP_PAGE_SHIFT, mapped << NP_PAGE_SHIFT) >= 0;
}

/* glibc's XML, in libnumapage's terms: a <heap> per node with memory (nr, the node's id), whose
 * "rest" is its pool's free pages (count: pages) and whose "system" and "aspace" are the pages
 * its chunks map now and at most since start-up; <sizes> stays empty (free memory is pages of
 * the pool, not chunks in size bins), the fast bins 0. The totals after the heaps add theirs,
 * with "mmap" for the chunks of blocks too large for a pool (mallinfo2's hblks and hblkhd).
 * Racy reads, as mallinfo2's. fp is flushed. -1 with errno = EINVAL for options other than 0
 * (the manual's answer; glibc itself returns EINVAL) or a NULL fp, and -1 when one of these
 * writes fails (np_stdio_answer). */
NP_EXPORT int malloc_info(int options, FILE *fp)
{
	if (options != 0 || !fp) {
		errno = EINVAL;
		return -1;
	}
	int saved = errno;
	errno = 0;
	size_t all_mapped = 0, all_peak = 0, all_free = 0;
	bool ok = fputs("<malloc version=\"1\">\n", fp) != EOF;
	for (int i = 0; np_is_ready() && i < np_topo_table.nnodes; i++) {
		size_t mapped, peak, free_pages;
		if (!np_pool_node_totals(i, &mapped, &peak, &free_pages))
			continue;
		free_pages = NP_MIN(free_pages, mapped);
		ok &= fprintf(fp, "<heap nr=\"%d\">\n<sizes>\n</sizes>\n", np_topo_table.node[i].os_id) >= 0;
		ok &= info_figures(fp, free_pages, NULL, mapped, peak);
		ok &= fputs("</heap>\n", fp) != EOF;
		all_mapped += mapped;
		all_peak += peak;
		all_free += free_pages;
	}
	size_t chunks = 0, chunk_bytes = 0;
	if (np_is_ready())
		np_chunk_huge_totals(&chunks, &chunk_bytes);
	char mmap[96];
	snprintf(mmap, sizeof mmap, "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n", chunks, chunk_bytes);
	ok &= info_figures(fp, all_free, mmap, all_mapped, all_peak);
	ok &= fputs("</malloc>\n", fp) != EOF;
	return np_stdio_answer(fp, ok, saved);
}

/* The older interface (ints): mallinfo2's figures, each capped at INT_MAX. */
NP_EXPORT struct mallinfo mallinfo(void)
{
	struct mallinfo2 m = mallinfo2();
#define NP_MI_INT_(v) ((v) > INT_MAX ? INT_MAX : (int)(v))
	struct mallinfo mi = {
		.arena = NP_MI_INT_(m.arena),
		.ordblks = NP_MI_INT_(m.ordblks),
		.hblks = NP_MI_INT_(m.hblks),
		.hblkhd = NP_MI_INT_(m.hblkhd),
		.uordblks = NP_MI_INT_(m.uordblks),
		.fordblks = NP_MI_INT_(m.fordblks),
	};
#undef NP_MI_INT_
	return mi;
}
