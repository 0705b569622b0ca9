/*
 * alloc.c — malloc and calloc behind the inline fast path of alloc.h, under their numa_page_*
 * names, and numa_page_trim. The other members of the family are in posix.c (aligned, realloc,
 * usable size), frees in free.c, the page API in page_api.c.
 *
 * Call tree of a malloc that misses (sizes: up to NP_SMALL_MAX, 64 KiB, from slabs of the
 * thread's node; above, page runs and chunks of their own, large.c):
 *   np_malloc_slow -> np_thread_or_init (the process's first allocation initialises it)
 *     small: np_home_follow (a thread the scheduler moved is re-homed), then
 *            np_ring_alloc -> the ring's other slabs, orphans, np_slab_create -> np_pcp_get
 *     large: np_large_alloc -> np_pcp_get / np_pcp_get_run / a huge chunk (np_node_walk)
 */
#include "malloc/alloc.h"

#include <string.h>

#include "malloc/bootstrap.h"
#include "malloc/init.h"
#include "malloc/home.h"
#include "malloc/large.h"
#include "malloc/ptr.h"
#include "malloc/ring.h"
#include "os.h"
#include "pcp/pcp.h"
#include "pool/huge.h"
#include "pool/pool.h"
#include "vmstat/vmstat.h"
#include "topology/topology.h"

struct np_thread *np_thread_or_init(void)
{
	struct np_thread *th = np_tls.self;
	if (NP_LIKELY(th))
		return th;
	if (np_tls.exited || !np_init_for_malloc())
		return NULL;
	return np_thread_get();
}

struct np_thread *np_thread_or_boot(size_t size, size_t align, void **boot, bool *leave)
{
	*boot = NULL;
	*leave = false;
	struct np_thread *th = np_thread_or_init();
	/* Not ready when asked, but maybe ready now (another thread finished the start-up in
	 * between): then this thread's state; ENOMEM only when it cannot be made. Deciding on a
	 * second look at the state alone returned ENOMEM for a thread that raced the start-up. */
	if (NP_LIKELY(th))
		return th;
	if (np_is_ready()) { /* one look decides: a second could see another answer */
		/* A thread whose exit hook ran: a state made for it now might never be released
		 * (glibc runs at most PTHREAD_DESTRUCTOR_ITERATIONS rounds of destructors, and the
		 * last sets nothing up). Blocks the start-up allocator's classes hold come from it
		 * (tens of nanoseconds); a larger one gets a state for this call alone, which the
		 * caller lets go (its own mapping in the start-up allocator would make every later
		 * free there walk one more region). */
		if (np_tls.exited) {
			if (np_bootstrap_fits(size, align))
				goto boot;
			*leave = true;
		}
		if ((th = np_thread_get()) == NULL) {
			*leave = false;
			np_enomem();
		}
		return th;
	}
boot:
	if ((*boot = np_bootstrap_alloc(size, align)) == NULL)
		np_enomem();
	return NULL;
}

void *np_malloc_bad_link(struct np_slab *s, size_t size)
{
	np_slab_bad_link(s, s->free);
	return np_malloc_slow(size);
}

void *np_malloc_class_slow(struct np_thread *th, unsigned c, size_t size)
{
	np_home_follow(th); /* a slab miss: where a moved thread is noticed */
	void *p = np_ring_alloc(th, c);
	if (p) /* the slab that served p (np_ring_alloc made it current); used counted it */
		np_tls.cur[c]->requested += size;
	return p;
}

static void *malloc_for(struct np_thread *th, size_t size)
{
	void *p;
	if (size <= NP_SMALL_MAX) {
		p = np_malloc_class_slow(th, np_size_class(size), size);
	} else {
		size_t dirty;
		if (size > NP_MAX_REQUEST)
			return np_enomem();
		np_thread_fold_bytes(th);
		p = np_large_interleave_wanted(th, size) ? np_large_interleaved(th, size, 0) : NULL;
		if (!p)
			p = np_large_alloc(th, size, NP_PAGE_SIZE, -1, &dirty);
		if (p)
			np_large_count(th, p, size);
	}
	return p ? p : np_enomem();
}

void *np_malloc_slow(size_t size)
{
	/* A forked child's live file, a forking parent's sweep of its children's (vmstat.h). */
	if (NP_UNLIKELY(__atomic_load_n(&np_vmstat_output_due, __ATOMIC_RELAXED)))
		np_vmstat_output_run_due();
	void *p;
	bool leave;
	struct np_thread *th = np_thread_or_boot(size, 16, &p, &leave);
	if (NP_UNLIKELY(!th))
		return p;
	p = malloc_for(th, size);
	if (NP_UNLIKELY(leave))
		np_ring_leave(th);
	return p;
}

void *numa_page_malloc(size_t size)
{
	return np_malloc_fast(size);
}

void numa_page_free(void *p)
{
	np_free_fast(p);
}

/* What calloc clears: every byte malloc_usable_size reports for the new block p, not only the
 * bytes asked for, as glibc, jemalloc, tcmalloc and mimalloc do (a program may use the whole
 * block; calloc's block was another's before, and its slack held that one's bytes). */
static size_t usable(const void *p)
{
	struct np_ptr d;
	np_ptr_decode(p, false, &d);
	return np_ptr_usable(&d, p);
}

void *np_calloc(size_t nmemb, size_t size)
{
	size_t n;
	if (__builtin_mul_overflow(nmemb, size, &n))
		return np_enomem();
	if (n > NP_SMALL_MAX) {
		struct np_thread *th = np_thread_or_init();
		if (th) {
			if (n > NP_MAX_REQUEST)
				return np_enomem();
			size_t dirty = 0;
			np_thread_fold_bytes(th);
			void *p = np_large_interleave_wanted(th, n) ? np_large_interleaved(th, n, 0) : NULL;
			if (!p)
				p = np_large_alloc(th, n, NP_PAGE_SIZE, -1, &dirty);
			if (!p)
				return np_enomem();
			np_large_count(th, p, n);
			/* Fresh or purged pages already read as zeros: only what a previous user may
			 * have written is cleared, and of that only what is resident; up to the usable
			 * size (below). */
			np_chunk_zero(p, NP_MIN(dirty, usable(p)));
			return p;
		}
	}
	void *p = np_malloc_fast(n);
	if (p) /* a block of n's class (a slab's, the thread cache's), or the start-up allocator's */
		memset(p, 0, !np_bootstrap_may_own(p) ? np_class_size[np_size_class(n)] : usable(p));
	return p;
}

void *numa_page_calloc(size_t nmemb, size_t size)
{
	return np_calloc(nmemb, size);
}

int numa_page_trim(void)
{
	if (!np_ensure_ready())
		return 0;
	struct np_thread *th = np_tls.self;
	size_t released = 0;
	if (th) {
		np_cache_flush(); /* the cached blocks home first: their slabs may empty */
		np_ring_count(th, true);
		np_thread_fold_bytes(th);
		th->spill_hold = 0; /* slabs of a node it fell back to go, if its own can serve (ring.c) */
		released += np_ring_sweep(th);
		released += np_ring_purge(th); /* free pages inside the slabs still in use */
		released += (size_t)th->pcp.count; /* drained now (and purged if past the watermark) */
		np_pcp_drain(&th->pcp);
	}
	released += np_slab_sweep_orphans(NP_SWEEP_TRIM, th ? &th->st : NULL); /* and the free pages inside them */
	bool limited = np_chunk_tight || np_os_address_limit() != 0;
	for (int n = 0; n < np_topo_table.nnodes; n++) {
		released += np_pool_trim(n, th ? &th->st : NULL) + np_huge_trim(n, th ? &th->st : NULL, NULL);
		/* Under RLIMIT_AS the address space too: chunks that hold nothing are unmapped, so
		 * that the program's own mappings find it (a hostile test: 228 blocks of 1 MiB
		 * freed and trimmed, and an 8 MiB mmap still failed). A limit the program set
		 * after start-up counts here too (the sizes keep to the one at start). */
		if (limited)
			released += np_pool_unmap_free_chunks(n, th ? &th->st : NULL);
	}
	return released > 0;
}
