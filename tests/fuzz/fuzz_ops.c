/*
 * fuzz_ops.c — the checked wrappers of fuzz_ops.h. A NULL is only ever accepted with the errno
 * the contract names for those arguments (numapage.h: NULL + ENOMEM or EINVAL), and only where
 * the arguments make it possible; everything returned is checked for alignment, node and
 * usable size, and carries its pattern from then on.
 */
#include "fuzz_ops.h"

#include <errno.h>
#include <limits.h>

struct np_fz_topo np_fz_topo;
bool np_fz_trace;

#define ERRNO_MARK 0x4e50 /* an errno no call sets: shows whether a call touched errno */

bool np_fz_node_valid(int node)
{
	return node >= 0 && node < NP_FZ_MAX_NODES && np_fz_topo.valid[node];
}

bool np_fz_node_mem(int node)
{
	return np_fz_node_valid(node) && np_fz_topo.mem[node];
}

void np_fz_topo_load(void)
{
	struct np_fz_topo *t = &np_fz_topo;
	t->max_node = numa_page_max_node();
	NP_FZ_CHECK(t->max_node >= 0 && t->max_node < NP_FZ_MAX_NODES, "max_node %d", t->max_node);
	struct numa_page_node_stats s;
	for (int n = 0; n <= t->max_node; n++) {
		if (numa_page_stats_get(n, &s) != 0)
			continue;
		NP_FZ_CHECK(s.node == n, "stats_get(%d) filled node %d", n, s.node);
		t->valid[n] = true;
		t->id[t->nvalid++] = n;
		void *p = numa_page_alloc_onnode(4096, n);
		NP_FZ_CHECK(p != NULL, "alloc_onnode(4096, %d)", n);
		t->mem[n] = numa_page_node_of(p) == n;
		numa_page_free(p);
	}
	NP_FZ_CHECK(t->nvalid == numa_page_node_count(), "%d nodes answer stats_get, node_count says %d", t->nvalid,
		    numa_page_node_count());
	NP_FZ_CHECK(t->valid[t->max_node], "max_node %d does not exist", t->max_node);
}

/* Common checks of a block just returned: alignment, usable size, node; then the pattern. */
static void took(struct np_fz_block *b, void *p, size_t n, size_t align, int kind, int want_node, uint64_t seed)
{
	NP_FZ_CHECK(((uintptr_t)p & (align - 1)) == 0, "%p is not aligned to %zu", p, align);
	size_t u = numa_page_usable_size(p);
	NP_FZ_CHECK(u >= n, "usable_size(%p) = %zu < %zu requested", p, u, n);
	int node = numa_page_node_of(p);
	if (kind == NP_FZ_INTERLEAVED || want_node < 0)
		NP_FZ_CHECK(np_fz_node_mem(node), "node_of(%p) = %d: not a node with memory", p, node);
	else
		NP_FZ_CHECK(node == want_node, "node_of(%p) = %d, wanted node %d", p, node, want_node);
	*b = (struct np_fz_block){.p = p, .size = n, .usable = u, .seed = seed, .kind = kind, .node = node};
	np_fz_fill(p, 0, n, seed);
	NP_FZ_TRACE("  -> %p, %zu bytes (usable %zu) on node %d, seed %llu\n", p, n, u, node, (unsigned long long)seed);
}

/* The outcome the arguments allow: must succeed, may fail with ENOMEM, or must fail. */
enum expect { OK, MAYBE, FAIL_ENOMEM, FAIL_EINVAL };

static enum expect size_expect(size_t n)
{
	return n >= NP_FZ_IMPOSSIBLE ? FAIL_ENOMEM : OK;
}

/* NULL for a call that may not fail, or with the wrong errno. */
static void check_null(void *p, enum expect e, int err, const char *call, size_t a, size_t n)
{
	NP_FZ_TRACE("  %s(%zu, %zu) = %p, errno %d\n", call, a, n, p, p ? 0 : err);
	if (p)
		NP_FZ_CHECK(e != FAIL_ENOMEM && e != FAIL_EINVAL, "%s(%zu, %zu) = %p: should fail", call, a, n, p);
	else if (e == FAIL_EINVAL)
		NP_FZ_CHECK(err == EINVAL, "%s(%zu, %zu) = NULL, errno %d: want EINVAL", call, a, n, err);
	else
		NP_FZ_CHECK(e != OK && err == ENOMEM, "%s(%zu, %zu) = NULL, errno %d: expected %s", call, a, n, err,
			    e == OK ? "success" : "ENOMEM");
}

void np_fz_malloc(struct np_fz_block *b, size_t n, uint64_t seed)
{
	errno = ERRNO_MARK;
	void *p = numa_page_malloc(n);
	check_null(p, size_expect(n), errno, "malloc", 0, n);
	if (p)
		took(b, p, n, 16, NP_FZ_MALLOC, -1, seed);
}

void np_fz_calloc(struct np_fz_block *b, size_t nmemb, size_t size, uint64_t seed)
{
	size_t n;
	bool overflow = __builtin_mul_overflow(nmemb, size, &n);
	errno = ERRNO_MARK;
	void *p = numa_page_calloc(nmemb, size);
	check_null(p, overflow ? FAIL_ENOMEM : size_expect(n), errno, "calloc", nmemb, size);
	if (!p)
		return;
	size_t bad = np_fz_nonzero_offset(p, n);
	NP_FZ_CHECK(bad == SIZE_MAX, "calloc(%zu, %zu) = %p: byte %zu is not zero", nmemb, size, p, bad);
	took(b, p, n, 16, NP_FZ_MALLOC, -1, seed);
}

/* The power of two at or above a (0 above 2^63). */
static size_t pow2_up(size_t a)
{
	if (a <= 1)
		return 1;
	if (a > ((size_t)1 << 63))
		return 0;
	return (size_t)1 << (64 - __builtin_clzll(a - 1));
}

void np_fz_aligned(struct np_fz_block *b, enum np_fz_aligned_call call, size_t align, size_t n, uint64_t seed)
{
	bool pow2 = align && !(align & (align - 1));
	/* memalign rounds an alignment up to a power of two, as glibc does, and refuses one past
	 * the largest with EINVAL, as glibc does. */
	size_t eff = call == NP_FZ_MEMALIGN ? pow2_up(align) : align;
	enum expect e;
	if (call == NP_FZ_POSIX_MEMALIGN && (!pow2 || align < sizeof(void *)))
		e = FAIL_EINVAL;
	else if (call == NP_FZ_MEMALIGN && align > SIZE_MAX / 2 + 1)
		e = FAIL_EINVAL;
	else if (call == NP_FZ_ALIGNED_ALLOC && !pow2)
		e = FAIL_EINVAL;
	else if (eff == 0 || eff >= NP_FZ_IMPOSSIBLE || n >= NP_FZ_IMPOSSIBLE)
		e = FAIL_ENOMEM;
	else
		e = eff > NP_FZ_SURE || n > NP_FZ_SURE ? MAYBE : OK;
	void *p;
	int err;
	const char *name;
	if (call == NP_FZ_POSIX_MEMALIGN) {
		name = "posix_memalign";
		void *out = &p; /* must stay untouched on failure */
		errno = ERRNO_MARK;
		int rc = numa_page_posix_memalign(&out, align, n);
		NP_FZ_CHECK(errno == ERRNO_MARK, "posix_memalign(%zu, %zu) changed errno to %d", align, n, errno);
		NP_FZ_CHECK(rc == 0 || out == &p, "posix_memalign(%zu, %zu) = %d but wrote *out", align, n, rc);
		NP_FZ_CHECK(rc == 0 || rc == EINVAL || rc == ENOMEM, "posix_memalign(%zu, %zu) = %d", align, n, rc);
		NP_FZ_CHECK(rc != 0 || out != NULL, "posix_memalign(%zu, %zu) = 0 with NULL", align, n);
		p = rc == 0 ? out : NULL;
		err = rc;
	} else {
		name = call == NP_FZ_ALIGNED_ALLOC ? "aligned_alloc" : "memalign";
		errno = ERRNO_MARK;
		p = call == NP_FZ_ALIGNED_ALLOC ? numa_page_aligned_alloc(align, n) : numa_page_memalign(align, n);
		err = errno;
	}
	check_null(p, e, err, name, align, n);
	if (p)
		took(b, p, n, eff < 16 ? 16 : eff, NP_FZ_MALLOC, -1, seed);
}

void np_fz_realloc(struct np_fz_block *b, bool array, size_t nmemb, size_t size, uint64_t seed)
{
	size_t n = size;
	bool overflow = array && __builtin_mul_overflow(nmemb, size, &n);
	enum expect e = overflow ? FAIL_ENOMEM : size_expect(n);
	bool had = b->kind != NP_FZ_EMPTY;
	if (had)
		np_fz_verify(b, "before realloc");
	errno = ERRNO_MARK;
	void *q = array ? numa_page_reallocarray(b->p, nmemb, size) : numa_page_realloc(b->p, size);
	int err = errno;
	if (had && !overflow && n == 0) { /* realloc(p, 0) frees p */
		NP_FZ_CHECK(q == NULL, "realloc(%p, 0) = %p: should free and return NULL", b->p, q);
		*b = (struct np_fz_block){0};
		return;
	}
	check_null(q, e, err, array ? "reallocarray" : "realloc", nmemb, size);
	if (!q) {
		if (had)
			np_fz_verify(b, "after a failed realloc");
		return;
	}
	if (!had) {
		took(b, q, n, 16, NP_FZ_MALLOC, -1, seed);
		return;
	}
	size_t keep = b->size < n ? b->size : n;
	size_t bad = np_fz_block_bad(b, q, keep);
	NP_FZ_CHECK(bad == SIZE_MAX, "realloc(%p, %zu) = %p lost byte %zu of %zu", b->p, n, q, bad, keep);
	NP_FZ_CHECK(((uintptr_t)q & 15) == 0, "realloc(%p, %zu) = %p: not 16-aligned", b->p, n, q);
	int old_node = b->node;
	bool same = q == b->p;
	size_t u = numa_page_usable_size(q);
	NP_FZ_CHECK(u >= n, "usable_size(%p) = %zu < %zu after realloc", q, u, n);
	int node = numa_page_node_of(q);
	/* Memory never changes node: a block resized in place keeps its node. */
	NP_FZ_CHECK(same ? node == old_node : np_fz_node_mem(node), "realloc(%p, %zu) = %p on node %d (was %d)", b->p, n,
		    q, node, old_node);
	np_fz_block_fill(b, q, keep, n);
	NP_FZ_TRACE("  -> %p, %zu bytes (usable %zu) on node %d\n", q, n, u, node);
	b->p = q;
	b->size = n;
	b->usable = u;
	b->node = node;
}

void np_fz_pages(struct np_fz_block *b, size_t n, int node, int want_node, uint64_t seed)
{
	enum expect e = size_expect(n);
	void *p;
	errno = ERRNO_MARK;
	if (node == NP_FZ_HOME) {
		p = numa_page_alloc(n);
	} else {
		if (!np_fz_node_valid(node))
			e = FAIL_EINVAL; /* the node is checked first */
		p = numa_page_alloc_onnode(n, node);
		/* A node with memory serves itself; a memoryless one its nearest with memory. */
		want_node = np_fz_node_mem(node) ? node : -1;
	}
	check_null(p, e, errno, node == NP_FZ_HOME ? "alloc" : "alloc_onnode", (size_t)node, n);
	if (p)
		took(b, p, n, 4096, NP_FZ_PAGES, want_node, seed);
}

void np_fz_interleaved(struct np_fz_block *b, size_t n, uint64_t seed)
{
	errno = ERRNO_MARK;
	void *p = numa_page_alloc_interleaved(n);
	check_null(p, size_expect(n), errno, "alloc_interleaved", 0, n);
	if (p)
		took(b, p, n, 4096, NP_FZ_INTERLEAVED, -1, seed);
}

void np_fz_node_of(const struct np_fz_block *b, size_t off)
{
	const char *q = (const char *)b->p + off;
	errno = ERRNO_MARK;
	int node = numa_page_node_of(q);
	if (b->kind == NP_FZ_INTERLEAVED)
		NP_FZ_CHECK(np_fz_node_mem(node), "node_of(%p + %zu) = %d (errno %d) in an interleaved block", b->p, off,
			    node, errno);
	else
		NP_FZ_CHECK(node == b->node, "node_of(%p + %zu) = %d (errno %d), the block is on node %d", b->p, off,
			    node, errno, b->node);
	NP_FZ_CHECK(errno == ERRNO_MARK, "node_of(%p + %zu) = %d changed errno to %d", b->p, off, node, errno);
}

void np_fz_node_probe(const void *p)
{
	errno = ERRNO_MARK;
	int node = numa_page_node_of(p);
	if (node == -1)
		NP_FZ_CHECK(errno == EINVAL, "node_of(%p) = -1 with errno %d", p, errno);
	else
		NP_FZ_CHECK(np_fz_node_mem(node), "node_of(%p) = %d: not a node with memory", p, node);
}

void np_fz_free(struct np_fz_block *b)
{
	NP_FZ_TRACE("  free(%p), %zu bytes, kind %d\n", b->p, b->size, b->kind);
	np_fz_verify(b, "before free");
	if (b->size)
		np_fz_node_of(b, b->size - 1);
	errno = ERRNO_MARK;
	/* A third of the frees each way: free, C23's free_sized with the size asked for, and
	 * free_aligned_sized with the block's own alignment (its address's lowest bit, at most a
	 * page), which each of them accepts. */
	uintptr_t low = (uintptr_t)b->p & -(uintptr_t)b->p;
	switch (b->seed % 3) {
	case 0:
		numa_page_free(b->p);
		break;
	case 1:
		numa_page_free_sized(b->p, b->size);
		break;
	default:
		numa_page_free_aligned_sized(b->p, low < 4096 ? low : 4096, b->size);
	}
	NP_FZ_CHECK(errno == ERRNO_MARK, "free(%p) changed errno to %d", b->p, errno);
	*b = (struct np_fz_block){0};
}

void np_fz_zero_head(struct np_fz_block *b)
{
	if (b->size < NP_FZ_HEAD)
		return;
	b->zero_head = true;
	np_fz_block_fill(b, b->p, 0, NP_FZ_HEAD);
}

void np_fz_usable(struct np_fz_block *b)
{
	size_t u = numa_page_usable_size(b->p);
	NP_FZ_CHECK(u >= b->size, "usable_size(%p) = %zu < %zu", b->p, u, b->size);
	/* The usable size of a live block never shrinks without a realloc. */
	NP_FZ_CHECK(u == b->usable, "usable_size(%p) = %zu, was %zu", b->p, u, b->usable);
	np_fz_block_fill(b, b->p, b->size, u);
	b->size = u;
}

struct np_fz_totals np_fz_totals_get(void)
{
	struct np_fz_totals t = {0};
	struct numa_page_node_stats s;
	for (int i = 0; i < np_fz_topo.nvalid; i++) {
		int n = np_fz_topo.id[i];
		NP_FZ_CHECK(numa_page_stats_get(n, &s) == 0 && s.node == n, "stats_get(%d)", n);
		t.malloc_in_use += (int64_t)s.malloc_in_use;
		t.pages_in_use += (int64_t)s.pages_in_use;
		t.threads += (int64_t)s.threads;
	}
	return t;
}
