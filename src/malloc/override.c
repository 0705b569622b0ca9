/*
 * override.c — the C library's allocation names, so that LD_PRELOAD=libnumapage.so or linking
 * with -lnumapage (shared or static) replaces malloc for the whole process. The only file that
 * defines libc names; left out of sanitizer builds, where the sanitizer owns malloc.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

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

NP_EXPORT void malloc_stats(void)
{
	numa_page_stats_print(stderr, NUMA_PAGE_STATS_TABLE);
}

NP_EXPORT struct mallinfo2 mallinfo2(void)
{
	struct mallinfo2 mi = {0};
	if (!np_is_ready())
		return mi;
	size_t mapped, free_pages;
	np_pool_totals(&mapped, &free_pages);
	mi.arena = mapped << NP_PAGE_SHIFT;
	mi.fordblks = free_pages << NP_PAGE_SHIFT;
	for (int n = 0; n < np_topo_table.nnodes; n++)
		mi.uordblks += (size_t)np_vmstat_read(n, NUMA_PAGE_STAT_malloc_in_use);
	mi.keepcost = 0;
	return mi;
}
