/*
 * numapage.h — the public API of libnumapage, a NUMA-aware memory allocator.
 *
 * Three doors: LD_PRELOAD=libnumapage.so (replaces malloc for a whole program), linking with
 * -lnumapage (same), and the functions below for programs that want pages on a chosen node.
 *
 * Node ids are the operating system's NUMA node numbers (as in numactl and /sys), which may be
 * sparse (0, 2, 5). A "memoryless" node has CPUs but no memory: its threads are served from the
 * nearest node that has memory. Every function is thread-safe and may be called from any thread,
 * including threads the library has never seen; none is async-signal-safe (as malloc). The
 * library initialises itself when loaded: no call is needed first. Manual: numapage(3), and
 * numapage(7) for the NUMAPAGE_* options and the meaning of each statistic.
 *
 * Error convention: functions returning a pointer return NULL and set errno (ENOMEM when memory
 * is exhausted, EINVAL for an invalid argument); functions returning int return 0 (or a value
 * >= 0) on success and -1 with errno set on failure (exceptions: numa_page_posix_memalign and
 * numa_page_trim, below). Functions that can only fail that way return -1 with errno = EAGAIN
 * when called from within the library's own initialisation. Freeing a pointer this library did
 * not hand out, or freeing twice, is reported on stderr ("numapage: <call>: <reason> <ptr>")
 * and aborts, in every build.
 */
#ifndef NUMAPAGE_H
#define NUMAPAGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NUMA_PAGE_VERSION_MAJOR 0
#define NUMA_PAGE_VERSION_MINOR 1
#define NUMA_PAGE_VERSION_PATCH 0
/* The header's version as one number to compare against: 10000 * major + 100 * minor + patch.
 * numa_page_version() gives the version of the library actually loaded. */
#define NUMA_PAGE_VERSION \
	(NUMA_PAGE_VERSION_MAJOR * 10000 + NUMA_PAGE_VERSION_MINOR * 100 + NUMA_PAGE_VERSION_PATCH)

#if defined(__GNUC__)
#define NUMA_PAGE_API __attribute__((visibility("default")))
#else
#define NUMA_PAGE_API
#endif

/* The run-time version, "MAJOR.MINOR.PATCH": a static string, never freed. */
NUMA_PAGE_API const char *numa_page_version(void);

/* ---- Topology ------------------------------------------------------------------------------ */

/* Number of NUMA nodes in the topology the library uses (the real machine, or the rehearsal
 * topology named by NUMAPAGE_TOPOLOGY). A node id n exists when numa_page_stats_get(n, &s)
 * returns 0. */
NUMA_PAGE_API int numa_page_node_count(void);
/* Highest node id. */
NUMA_PAGE_API int numa_page_max_node(void);

/* ---- Pages ---------------------------------------------------------------------------------- */

/* Page-aligned memory of at least size bytes from the calling thread's home node (or, when that
 * node has no memory or is exhausted, from its nearest node with memory). Not zeroed.
 * size 0 returns a valid one-page allocation; sizes that overflow return NULL with ENOMEM. */
NUMA_PAGE_API void *numa_page_alloc(size_t size);
/* As numa_page_alloc, but on the given node. A memoryless node is served from its nearest memory
 * node (counted as a miss, never a failure while memory exists on an allowed node). A node id that
 * does not exist returns NULL with errno = EINVAL. */
NUMA_PAGE_API void *numa_page_alloc_onnode(size_t size, int node);
/* Pages spread round-robin over the allowed nodes with memory, for data every thread reads.
 * Each call maps a region of its own: for large, long-lived data. Freed with numa_page_free;
 * NULL with ENOMEM as numa_page_alloc. */
NUMA_PAGE_API void *numa_page_alloc_interleaved(size_t size);
/* Frees anything this library handed out: numa_page_alloc*, numa_page_malloc and friends, and,
 * when libnumapage replaces malloc, malloc and friends. NULL is a no-op. errno is preserved. */
NUMA_PAGE_API void numa_page_free(void *p);
/* The node the memory at p (any address inside an allocation) is on: for a page already
 * touched, where the kernel put it (move_pages(2)), else the node it is bound to (for
 * interleaved memory: the node of p's page); -1 with errno = EINVAL when p is not memory this
 * library manages, and for the few blocks of its start-up allocator (small blocks served while
 * the library starts, and in a thread's destructors after its exit hook), which are on no node
 * of its own: they were first-touched wherever the thread ran, and the kernel need not tell
 * (move_pages(2) can be refused, the page untouched, p inside the block). With
 * NUMAPAGE_TOPOLOGY, the rehearsed node (nothing is really bound). */
NUMA_PAGE_API int numa_page_node_of(const void *p);

/* The calling thread's home node: where its allocations come from (under a preferred or
 * interleave memory policy, the policy's nodes instead; see numapage(7)). It starts as the node
 * of the CPU the thread runs on and follows the thread when the scheduler moves it (noticed at
 * its next slab miss or large allocation), until it is set explicitly.
 * numa_page_set_home_node(-1) returns to following the CPU. An unknown node is EINVAL. It affects
 * the calling thread's later allocations only, and does not change its CPU affinity.
 * numa_page_home_node returns the calling thread's home node id. */
NUMA_PAGE_API int numa_page_set_home_node(int node);
NUMA_PAGE_API int numa_page_home_node(void);

/* ---- The malloc family under its own names ------------------------------------------------ */
/* Same contracts as the C library's (numa_page_posix_memalign returns the error number and
 * leaves errno alone; numa_page_realloc(p, 0) frees p and returns NULL; numa_page_calloc's
 * block is zero up to its usable size, as glibc's); memory from these is
 * freed with numa_page_free (or free, when libnumapage replaces malloc). numa_page_realloc and
 * numa_page_usable_size abort on a pointer that is not this library's, as numa_page_free. */
NUMA_PAGE_API void *numa_page_malloc(size_t size);
NUMA_PAGE_API void *numa_page_calloc(size_t nmemb, size_t size);
NUMA_PAGE_API void *numa_page_realloc(void *p, size_t size);
NUMA_PAGE_API void *numa_page_reallocarray(void *p, size_t nmemb, size_t size);
NUMA_PAGE_API int numa_page_posix_memalign(void **out, size_t alignment, size_t size);
NUMA_PAGE_API void *numa_page_aligned_alloc(size_t alignment, size_t size);
NUMA_PAGE_API void *numa_page_memalign(size_t alignment, size_t size);
NUMA_PAGE_API size_t numa_page_usable_size(const void *p);
/* C23's sized frees (free_sized, free_aligned_sized): p freed as numa_page_free frees it.
 * NULL is nothing. Beyond numa_page_free's checks, they abort with a message when size is
 * larger than the block (a smaller one is accepted: realloc may have shrunk it in place), when
 * alignment is not a power of two, or when p is not aligned to it. */
NUMA_PAGE_API void numa_page_free_sized(void *p, size_t size);
NUMA_PAGE_API void numa_page_free_aligned_sized(void *p, size_t alignment, size_t size);
/* Gives free memory held by the library back to the operating system: free pages, and, in the
 * calling thread's slabs and in those exited threads left with live blocks, every page that
 * only free blocks cover (blocks up to 16 KiB) and the pages inside free blocks of more than
 * 16 KiB. Returns 1 if any memory was released, 0 otherwise (as malloc_trim). The same pages
 * of slabs that served no allocation through a whole NUMAPAGE_DECAY_MS go back without it. */
NUMA_PAGE_API int numa_page_trim(void);

/* ---- Statistics ----------------------------------------------------------------------------- */

/*
 * Every per-node counter, declared once. X(name, kind, description); kind is EVENT (pages,
 * a count that only grows), GAUGE (pages, a level that goes up and down), BYTE_EVENT /
 * BYTE_GAUGE for the same in bytes, and COUNT_EVENT / COUNT_GAUGE for occurrences that are
 * neither pages nor bytes (refills, binds, chunks, threads). The meanings of the numa_* and
 * *_node counters are those of Linux's numastat:
 *   numa_hit      served on the intended node
 *   numa_miss     served on this node although another node was intended
 *   numa_foreign  intended for this node but served elsewhere
 *   local_node    served on this node to a thread homed on this node
 *   other_node    served on this node to a thread homed on another node
 * All page counts are in pages of the system page size.
 */
#define NUMA_PAGE_STAT_ITEMS(X) \
	X(numa_hit, EVENT, "pages served on the intended node") \
	X(numa_miss, EVENT, "pages served on this node though another was intended") \
	X(numa_foreign, EVENT, "pages intended for this node but served elsewhere") \
	X(local_node, EVENT, "pages served on this node to a thread homed here") \
	X(other_node, EVENT, "pages served on this node to a thread homed elsewhere") \
	X(interleave_hit, EVENT, "interleaved pages placed on this node") \
	X(pages_alloc, EVENT, "pages handed out by this node's pool") \
	X(pages_free, EVENT, "pages returned to this node's pool") \
	X(pages_in_use, GAUGE, "pages of this node in use by the program") \
	X(pcp_refill, COUNT_EVENT, "per-thread cache refills from this node's pool") \
	X(pcp_drain, COUNT_EVENT, "per-thread cache drains into this node's pool") \
	X(pages_stolen, EVENT, "pages this node gave a memoryless node whose first choice is another") \
	X(remote_free, COUNT_EVENT, "objects or pages of this node freed by a thread homed away from it (a memoryless home's nearest nodes count as its own)") \
	X(pool_contended, COUNT_EVENT, "acquisitions of this node's pool lock that had to wait") \
	X(bind_fail, COUNT_EVENT, "binds of this node's memory that the kernel refused") \
	X(bind_skipped, COUNT_EVENT, "binds skipped because the topology is a rehearsal") \
	X(chunks_mapped, COUNT_EVENT, "chunks mapped from the OS for this node") \
	X(pages_purged, EVENT, "free pages of this node given back to the OS") \
	X(freelist_corrupt, COUNT_EVENT, "free lists of this node's slabs found overwritten after a free and cut") \
	X(malloc_requested, BYTE_EVENT, "bytes requested through malloc, served from this node's memory") \
	X(malloc_in_use, BYTE_GAUGE, "bytes of malloc objects of this node in use") \
	X(threads, COUNT_GAUGE, "threads homed on this node")

enum numa_page_stat_item {
#define NUMA_PAGE_STAT_ENUM_(name, kind, desc) NUMA_PAGE_STAT_##name,
	NUMA_PAGE_STAT_ITEMS(NUMA_PAGE_STAT_ENUM_)
#undef NUMA_PAGE_STAT_ENUM_
	NUMA_PAGE_STAT_NITEMS
};

struct numa_page_node_stats {
	int node; /* OS node id these counters belong to */
#define NUMA_PAGE_STAT_FIELD_(name, kind, desc) uint64_t name;
	NUMA_PAGE_STAT_ITEMS(NUMA_PAGE_STAT_FIELD_)
#undef NUMA_PAGE_STAT_FIELD_
};

/* Exact counters of one node (OS id): shared totals plus every live thread's unfolded deltas.
 * Takes a lock and walks the live threads, so cost grows with their number; use the cheap
 * variant for frequent polling. One exception: malloc_in_use and malloc_requested lack, for
 * each other live thread, what it did to its own slabs' blocks since it last counted each slab
 * (the fast paths count in the slab; a thread takes a slab's count as the slab's run on the
 * fast path ends, as it leaves the thread, at its periodic points and at its own exact reads,
 * so one that makes no slow path for a while, sleeping or only freeing its own blocks, stays
 * behind by at most its slabs' blocks), and up to 64 KiB of its frees of other threads'
 * blocks; the calling thread's own are exact. 0, or -1/EINVAL for an unknown node or a NULL
 * out. */
NUMA_PAGE_API int numa_page_stats_get(int node, struct numa_page_node_stats *out);
/* Shared totals only, lock-free: may differ from the exact value, in either direction, by at
 * most (fold threshold x live threads) per counter (a thread whose delta passes its threshold
 * folds half a threshold more, which it then counts down, as Linux's vmstat oversteps); gauges
 * are clamped at 0. Exact once all threads that counted have exited. Errors as above. */
NUMA_PAGE_API int numa_page_stats_get_cheap(int node, struct numa_page_node_stats *out);
/* The name and description of counter i: static strings, never freed (NULL outside
 * 0 .. NUMA_PAGE_STAT_NITEMS - 1). */
NUMA_PAGE_API const char *numa_page_stat_name(int item);
NUMA_PAGE_API const char *numa_page_stat_desc(int item);

#define NUMA_PAGE_STATS_TABLE 0 /* numastat-like table, one column per node */
#define NUMA_PAGE_STATS_JSON 1  /* one JSON object */
/* Prints exact statistics of every node to out and flushes it. Uses stdio and takes the
 * statistics lock: not from a signal handler. 0; -1/EINVAL for an unknown format or a NULL out;
 * -1 when writing fails. */
NUMA_PAGE_API int numa_page_stats_print(FILE *out, int format);


/* Zeroes every event counter of every node (numa_hit, pcp_refill, malloc_requested, ...: the
 * counts that only grow), for a program that measures one phase of its run. Levels (gauges:
 * pages_in_use, malloc_in_use, threads) are kept: they describe memory still held. Counts that
 * other threads make while the reset runs, or had not yet folded into the shared totals (at
 * most the fold threshold per thread and counter), may survive it. Takes the statistics lock;
 * the live view of `numapage stat` is reset too. Returns 0. */
NUMA_PAGE_API int numa_page_stats_reset(void);

/* ---- Options -------------------------------------------------------------------------------- */

/*
 * The NUMAPAGE_* options (numapage(7)), read and changed while the program runs. name is the
 * option's name with or without its prefix, in any case ("bind", "BIND", "NUMAPAGE_BIND").
 * Values are text, as in the environment: a number (with k, m or g), an enum name, a string.
 *
 * numa_page_option_get writes the value in force into buf (NUL-terminated, cut to size - 1
 * characters; buf may be NULL when size is 0) and returns the length of the whole value, as
 * snprintf does: a result >= size means it was cut. -1 with errno = ENOENT for an unknown name,
 * EINVAL for a NULL name (or a NULL buf with size > 0).
 *
 * numa_page_option_set parses value with the same rules as the environment and puts it in
 * force at once, for every thread: 0, or -1 with errno = ENOENT (unknown name), EINVAL (value
 * not valid for the option, or NULL; the value in force is kept), EPERM (the option is fixed
 * once the library has started: topology, stat_threshold, purge_mb and shm), EBUSY (another
 * thread is setting a string option at the same moment). What changes at run time: verbose;
 * stats (the report written at exit); bind (for memory mapped from the system afterwards);
 * pcp_high and pcp_batch (for threads that start afterwards); interleave_above (for later
 * mallocs of the main thread, while it is still the only thread that has allocated); decay_ms
 * (from the decay period under way on); place (for threads created afterwards, as
 * numa_page_thread_place sets it); thp (for chunks mapped afterwards).
 */
NUMA_PAGE_API int numa_page_option_get(const char *name, char *buf, size_t size);
NUMA_PAGE_API int numa_page_option_set(const char *name, const char *value);

/* ---- Thread placement ----------------------------------------------------------------------- */

#define NUMA_PAGE_PLACE_NONE 0   /* leave threads where the scheduler puts them (default) */
#define NUMA_PAGE_PLACE_SPREAD 1 /* each new thread on the allowed node with fewest threads */
#define NUMA_PAGE_PLACE_FILL 2   /* fill one node's CPUs before the next */
/* Sets the placement policy (as NUMAPAGE_PLACE does) for threads created from now on: each is
 * placed as it starts (with the static library: at its first allocation), its affinity set to
 * its node's CPUs, unless the program gave it an affinity. 0, or -1 with errno = EINVAL for an
 * unknown policy. */
NUMA_PAGE_API int numa_page_thread_place(int policy);

#ifdef __cplusplus
}
#endif
#endif /* NUMAPAGE_H */
