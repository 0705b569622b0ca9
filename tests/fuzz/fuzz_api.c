/*
 * fuzz_api.c — libFuzzer target over sequences of public API calls. An input is a program: each
 * instruction is an opcode byte (mod OP_SPACE) and its operands (fuzz_input.h), run over a table of
 * SLOTS live blocks and a bulk list for slab-sized churn. Every call is checked against its
 * contract (fuzz_ops.c); blocks carry a pattern that is verified before each free and realloc;
 * a persistent second thread frees blocks remotely (fuzz_worker.c). Misuse (double or invalid
 * frees) is never done: the library aborts on it by design (tests/misuse covers that).
 *
 * Inputs must not leak into each other, so that a saved crash reproduces alone: each ends
 * by freeing everything it holds, waiting for the worker, resetting both threads' home nodes
 * and trimming both; then the exact statistics must show every malloc byte back.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_input.h"
#include "fuzz_ops.h"
#include "fuzz_query.h"
#include "fuzz_worker.h"

/* Known library defects, each with its reproducer in crashes/ (see crashes/README.md), get a
 * FUZZ_AVOID_KNOWN_BUG_<name> define here (0 by default) that steps around them; meson.build
 * builds fuzz_api_ci with those still open, so the bounded CI run looks for new defects instead
 * of finding these again in its first second. None is open now: the last one, 0-byte aligned
 * allocations with an alignment above 1 MiB, was fixed by b26cffd and its input is
 * corpus/aligned_zero_memalign. */

enum op {
	OP_MALLOC, OP_CALLOC, OP_REALLOC, OP_REALLOCARRAY, OP_POSIX_MEMALIGN, OP_ALIGNED_ALLOC,
	OP_MEMALIGN, OP_USABLE, OP_FREE, OP_PAGES, OP_PAGES_ONNODE, OP_INTERLEAVED, OP_NODE_OF,
	OP_TRIM, OP_STATS, OP_HOME, OP_HANDOFF, OP_SYNC, OP_WORKER_MALLOC, OP_WORKER_REALLOC,
	OP_WORKER_HOME, OP_THREAD_EXIT, OP_BULK_ALLOC, OP_BULK_FREE, OP_EDGE, OP_PROBE, OP_ZERO_HEAD,
	NOPS,
	/* The opcode is the byte mod OP_SPACE, not mod NOPS: a new operation takes a reserved
	 * opcode (a no-op until then), so saved inputs keep their meaning. */
	OP_SPACE = 32
};
_Static_assert(NOPS <= OP_SPACE, "opcodes fit their space");

static const char *const op_names[NOPS] = {
	"malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign",
	"usable", "free", "pages", "pages_onnode", "interleaved", "node_of", "trim", "stats", "home",
	"handoff", "sync", "worker_malloc", "worker_realloc", "worker_home", "thread_exit",
	"bulk_alloc", "bulk_free", "edge", "probe", "zero_head",
};

#define SLOTS 64
#define BULK_MAX 32768
/* Live bytes (usable sizes) an input may hold at once: the huge sizes reach 68 MiB, and the
 * pools keep up to NUMAPAGE_PURGE_MB of freed memory on top. */
#define LIVE_CAP ((size_t)256 << 20)

static struct {
	struct np_fz_block slot[SLOTS];
	struct np_fz_block bulk[BULK_MAX];
	size_t nbulk;
	size_t live;
	uint64_t seed;
	int home, worker_home; /* -1: following the CPU */
} st;

static bool fits(size_t n)
{
	return n <= LIVE_CAP && st.live <= LIVE_CAP - n;
}

/* A new block overlaps no live block of the table, over its whole usable size (the pattern only
 * samples large blocks). Bulk blocks are small and fully patterned: checked against the table
 * only, not against each other. */
NP_FZ_NO_COVERAGE static void check_disjoint(const struct np_fz_block *b)
{
	uintptr_t lo = (uintptr_t)b->p, hi = lo + (b->usable ? b->usable : 1);
	for (int i = 0; i < SLOTS; i++) {
		const struct np_fz_block *o = &st.slot[i];
		uintptr_t olo = (uintptr_t)o->p, ohi = olo + (o->usable ? o->usable : 1);
		NP_FZ_CHECK(o == b || !o->kind || hi <= olo || ohi <= lo,
			    "new block %p (+%zu) overlaps live block %p (+%zu) of slot %d", b->p, b->usable, o->p,
			    o->usable, i);
	}
}

static void hold(const struct np_fz_block *b)
{
	if (b->kind) {
		check_disjoint(b);
		st.live += b->usable;
	}
}

static void drop(struct np_fz_block *b)
{
	if (b->kind) {
		st.live -= b->usable;
		np_fz_free(b);
	}
}

static struct np_fz_block *slot(struct np_fz_in *in)
{
	return &st.slot[np_fz_u8(in) % SLOTS];
}

/* An empty slot for a new block of n bytes (its old block freed), or NULL when n does not fit
 * (an impossible size always "fits": it must fail). */
static struct np_fz_block *slot_for(struct np_fz_block *b, size_t n)
{
	drop(b);
	return n >= NP_FZ_IMPOSSIBLE || fits(n) ? b : NULL;
}

static void op_aligned(struct np_fz_in *in, enum np_fz_aligned_call call)
{
	struct np_fz_block *b = slot(in);
	size_t align = np_fz_align(in), n = np_fz_size(in);
	if ((b = slot_for(b, n)) != NULL) {
		np_fz_aligned(b, call, align, n, ++st.seed);
		hold(b);
	}
}

static void op_realloc(struct np_fz_in *in, bool array)
{
	struct np_fz_block *b = slot(in);
	size_t nmemb = array ? np_fz_count(in) : 1, size = np_fz_size(in), n;
	if (b->kind != NP_FZ_EMPTY && b->kind != NP_FZ_MALLOC)
		return; /* realloc is for the malloc family's blocks */
	if (__builtin_mul_overflow(nmemb, size, &n))
		n = SIZE_MAX;
	size_t old = b->kind ? b->usable : 0;
	if (n < NP_FZ_IMPOSSIBLE && !fits(n > old ? n - old : 0))
		return;
	st.live -= old;
	np_fz_realloc(b, array, nmemb, size, ++st.seed);
	hold(b);
}

static void op_pages(struct np_fz_in *in, enum op how)
{
	struct np_fz_block *b = slot(in);
	size_t n = np_fz_size(in);
	int node = how == OP_PAGES_ONNODE ? np_fz_node(in) : NP_FZ_HOME;
	if ((b = slot_for(b, n < 4096 ? 4096 : n)) == NULL)
		return;
	/* numa_page_alloc serves the thread's home node: where it was set to one with memory,
	 * the pages must come from it. */
	int want = st.home >= 0 && np_fz_node_mem(st.home) ? st.home : -1;
	if (how == OP_INTERLEAVED)
		np_fz_interleaved(b, n, ++st.seed);
	else
		np_fz_pages(b, n, node, want, ++st.seed);
	hold(b);
}

static void op_home(struct np_fz_in *in, bool worker)
{
	int node = np_fz_node(in);
	bool ok = node == -1 || np_fz_node_valid(node);
	if (worker) {
		np_fz_worker_home(node);
		st.worker_home = ok ? node : st.worker_home;
		return;
	}
	errno = 0;
	int rc = numa_page_set_home_node(node);
	NP_FZ_CHECK(ok ? rc == 0 : rc == -1 && errno == EINVAL, "set_home_node(%d) = %d, errno %d", node, rc, errno);
	st.home = ok ? node : st.home;
	int h = numa_page_home_node();
	NP_FZ_CHECK(st.home < 0 ? np_fz_node_valid(h) : h == st.home, "home_node() = %d, set to %d", h, st.home);
}

/* A thread that allocates a few blocks and exits: its slabs become orphans of their node,
 * adopted later by a thread that needs the class; the main thread frees the blocks. */
#define EXIT_MAX 8
struct exit_job {
	int node, count;
	size_t n[EXIT_MAX];
	uint64_t seed[EXIT_MAX];
	struct np_fz_block b[EXIT_MAX];
};

static void *exit_thread(void *arg)
{
	struct exit_job *j = arg;
	if (np_fz_node_valid(j->node))
		NP_FZ_CHECK(numa_page_set_home_node(j->node) == 0, "exiting thread: set_home_node(%d)", j->node);
	for (int i = 0; i < j->count; i++)
		np_fz_malloc(&j->b[i], j->n[i], j->seed[i]);
	return NULL;
}

static void op_thread_exit(struct np_fz_in *in)
{
	struct exit_job j = {.count = 1 + np_fz_u8(in) % EXIT_MAX, .node = np_fz_node(in)};
	unsigned first = np_fz_u8(in) % SLOTS;
	size_t total = 0;
	for (int i = 0; i < j.count; i++) {
		j.n[i] = np_fz_size(in);
		j.seed[i] = ++st.seed;
		drop(&st.slot[(first + i) % SLOTS]);
		total += j.n[i] < NP_FZ_IMPOSSIBLE ? j.n[i] : 0;
	}
	if (!fits(total))
		return;
	pthread_t t;
	NP_FZ_CHECK(pthread_create(&t, NULL, exit_thread, &j) == 0, "pthread_create");
	NP_FZ_CHECK(pthread_join(t, NULL) == 0, "pthread_join");
	for (int i = 0; i < j.count; i++) {
		st.slot[(first + i) % SLOTS] = j.b[i];
		hold(&st.slot[(first + i) % SLOTS]);
	}
}

/* Bulk blocks are small and many: enough to fill slabs of one class (4096 16-byte blocks to a
 * slab), let full ones float and have other threads' frees claim them. */
#define BULK_BYTES ((size_t)8 << 20)

static void op_bulk_alloc(struct np_fz_in *in)
{
	size_t count = 64 * (1 + (size_t)np_fz_u8(in)), n = np_fz_size(in);
	bool zeroed = np_fz_u8(in) & 1;
	if (n >= NP_FZ_IMPOSSIBLE || n > 32 * NP_FZ_KiB)
		n %= 32 * NP_FZ_KiB + 1;
	size_t each = n < 16 ? 16 : n;
	if (count > BULK_BYTES / each)
		count = BULK_BYTES / each;
	if (count > BULK_MAX - st.nbulk)
		count = BULK_MAX - st.nbulk;
	if (!fits(count * each))
		return;
	for (size_t i = 0; i < count; i++) {
		struct np_fz_block *b = &st.bulk[st.nbulk++];
		if (zeroed)
			np_fz_calloc(b, n, 1, ++st.seed);
		else
			np_fz_malloc(b, n, ++st.seed);
		hold(b);
	}
}

static void remote(struct np_fz_block *b)
{
	if (b->kind) {
		st.live -= b->usable;
		np_fz_worker_free(b);
	}
}

/* mode % 6: all local (LIFO, FIFO), all remote, alternating, or half (local, remote). */
static void op_bulk_free(struct np_fz_in *in)
{
	unsigned mode = np_fz_u8(in) % 6;
	size_t kept = 0;
	for (size_t k = 0; k < st.nbulk; k++) {
		size_t i = mode == 0 ? st.nbulk - 1 - k : k;
		struct np_fz_block *b = &st.bulk[i];
		if (mode >= 4 && (i & 1)) {
			st.bulk[kept++] = *b;
			continue;
		}
		if (mode == 2 || (mode == 3 && (i & 1)) || mode == 5)
			remote(b);
		else
			drop(b);
	}
	st.nbulk = kept;
}

static void op_stats(struct np_fz_in *in)
{
	int node = np_fz_node(in);
	np_fz_stats(node, np_fz_u8(in) % 3);
}

/* node_of at addresses in, at and around a block: chunk starts, just past the end, far away.
 * The answer is -1 with EINVAL or a node with memory, never a crash. The worker is idle first:
 * an address in memory another thread is unmapping would be our race, not the library's. */
static void op_probe(struct np_fz_in *in)
{
	struct np_fz_block *b = slot(in);
	unsigned how = np_fz_u8(in) % 4;
	uint32_t r = np_fz_u32(in);
	unsigned shift = np_fz_u8(in) % 13;
	if (!b->kind)
		return;
	np_fz_worker_sync();
	uintptr_t a = (uintptr_t)b->p;
	if (how == 0)
		a += b->usable;
	else if (how == 1)
		a &= ~(uintptr_t)(4 * NP_FZ_MiB - 1);
	else if (how == 2)
		a -= 1 + (r & 0xffff);
	else
		a += (uintptr_t)((int64_t)(int32_t)r * ((int64_t)1 << shift));
	np_fz_node_probe((const void *)a);
}

static void step(struct np_fz_in *in)
{
	struct np_fz_block *b;
	size_t n;
	enum op op = np_fz_u8(in) % OP_SPACE;
	NP_FZ_TRACE("%s (input offset %td)\n", op < NOPS ? op_names[op] : "reserved", in->p - 1 - in->base);
	switch (op) {
	case OP_MALLOC:
		b = slot(in);
		n = np_fz_size(in);
		if ((b = slot_for(b, n)) != NULL) {
			np_fz_malloc(b, n, ++st.seed);
			hold(b);
		}
		break;
	case OP_CALLOC: {
		b = slot(in);
		size_t nmemb = np_fz_count(in), size = np_fz_size(in);
		if (__builtin_mul_overflow(nmemb, size, &n))
			n = SIZE_MAX;
		if ((b = slot_for(b, n)) != NULL) {
			np_fz_calloc(b, nmemb, size, ++st.seed);
			hold(b);
		}
		break;
	}
	case OP_REALLOC:
	case OP_REALLOCARRAY:
		op_realloc(in, op == OP_REALLOCARRAY);
		break;
	case OP_POSIX_MEMALIGN:
		op_aligned(in, NP_FZ_POSIX_MEMALIGN);
		break;
	case OP_ALIGNED_ALLOC:
		op_aligned(in, NP_FZ_ALIGNED_ALLOC);
		break;
	case OP_MEMALIGN:
		op_aligned(in, NP_FZ_MEMALIGN);
		break;
	case OP_USABLE:
		if ((b = slot(in))->kind)
			np_fz_usable(b);
		break;
	case OP_FREE:
		drop(slot(in));
		break;
	case OP_PAGES:
	case OP_PAGES_ONNODE:
	case OP_INTERLEAVED:
		op_pages(in, op);
		break;
	case OP_NODE_OF: {
		b = slot(in);
		uint32_t r = np_fz_u16(in);
		if (b->kind)
			np_fz_node_of(b, b->size ? (size_t)((uint64_t)r * b->size >> 16) : 0);
		break;
	}
	case OP_TRIM: {
		int r = numa_page_trim();
		NP_FZ_CHECK(r == 0 || r == 1, "trim() = %d", r);
		break;
	}
	case OP_STATS:
		op_stats(in);
		break;
	case OP_HOME:
	case OP_WORKER_HOME:
		op_home(in, op == OP_WORKER_HOME);
		break;
	case OP_HANDOFF:
		remote(slot(in));
		break;
	case OP_SYNC:
		np_fz_worker_sync();
		break;
	case OP_WORKER_MALLOC:
		b = slot(in);
		n = np_fz_size(in);
		if ((b = slot_for(b, n)) != NULL) {
			np_fz_worker_malloc(b, n, ++st.seed);
			hold(b);
		}
		break;
	case OP_WORKER_REALLOC:
		b = slot(in);
		n = np_fz_size(in);
		if ((b->kind == NP_FZ_EMPTY || b->kind == NP_FZ_MALLOC) &&
		    (n >= NP_FZ_IMPOSSIBLE || fits(n > b->usable ? n - b->usable : 0))) {
			st.live -= b->kind ? b->usable : 0;
			np_fz_worker_realloc(b, n, ++st.seed);
			hold(b);
		}
		break;
	case OP_THREAD_EXIT:
		op_thread_exit(in);
		break;
	case OP_BULK_ALLOC:
		op_bulk_alloc(in);
		break;
	case OP_BULK_FREE:
		op_bulk_free(in);
		break;
	case OP_EDGE:
		np_fz_edge(np_fz_u8(in) % 8);
		break;
	case OP_PROBE:
		op_probe(in);
		break;
	case OP_ZERO_HEAD:
		if ((b = slot(in))->kind)
			np_fz_zero_head(b);
		break;
	default: /* reserved */
		break;
	}
}

/* Pages a trimmed thread may keep in use with nothing allocated: the current slab of each
 * class (a slab is a power of two of at least 128 KiB and 8 blocks, sizeclass.h). */
static int64_t current_slab_pages(void)
{
	int64_t pages = 0;
	for (unsigned c = 0; c < NP_FZ_NCLASSES; c++) {
		size_t bytes = (size_t)128 << 10;
		while (bytes < 8 * np_fz_class_size(c))
			bytes <<= 1;
		pages += (int64_t)(bytes >> 12);
	}
	return pages;
}

static int64_t pages_at_start; /* pages in use after the warm-up, before the first input */

/* Frees what the input still holds, puts both threads back on their CPU's node, trims both;
 * then every malloc byte must be back in the exact statistics, no thread count left over, and
 * the pages in use no more than the two threads' current slabs (twice that, for slack): pages
 * that never come back pile up over the inputs until that trips. */
static void end_input(const struct np_fz_totals *base)
{
	for (int i = 0; i < SLOTS; i++)
		drop(&st.slot[i]);
	for (size_t i = 0; i < st.nbulk; i++)
		drop(&st.bulk[i]);
	st.nbulk = 0;
	if (st.worker_home != -1)
		np_fz_worker_home(-1);
	if (st.home != -1)
		NP_FZ_CHECK(numa_page_set_home_node(-1) == 0, "set_home_node(-1)");
	st.home = st.worker_home = -1;
	np_fz_worker_drain();
	int r = numa_page_trim();
	NP_FZ_CHECK(r == 0 || r == 1, "trim() = %d", r);
	NP_FZ_CHECK(st.live == 0, "%zu live bytes not accounted for", st.live);
	struct np_fz_totals t = np_fz_totals_get();
	NP_FZ_CHECK(t.malloc_in_use == base->malloc_in_use, "malloc_in_use %lld after every block was freed, %lld before",
		    (long long)t.malloc_in_use, (long long)base->malloc_in_use);
	NP_FZ_CHECK(t.threads == base->threads, "threads gauge %lld, %lld before", (long long)t.threads,
		    (long long)base->threads);
	int64_t bound = pages_at_start + 2 * 2 * current_slab_pages();
	NP_FZ_CHECK(t.pages_in_use <= bound, "%lld pages in use with nothing allocated, at most %lld expected",
		    (long long)t.pages_in_use, (long long)bound);
	if (getenv("NP_FUZZ_VERBOSE"))
		fprintf(stderr, "fuzz_api: end: pages_in_use %lld (start %lld), malloc_in_use %lld\n",
			(long long)t.pages_in_use, (long long)base->pages_in_use, (long long)t.malloc_in_use);
}

/* UBSan stops at the first report, so libFuzzer saves the input (its default is to go on). */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	/* The library reads NUMAPAGE_TOPOLOGY in its constructor, before this runs: to fuzz the
	 * multi-node paths on any machine, start again with a rehearsal topology unless the
	 * caller chose one ("NUMAPAGE_TOPOLOGY=" is this machine). */
	if (!getenv("NUMAPAGE_TOPOLOGY")) {
		setenv("NUMAPAGE_TOPOLOGY", NP_FZ_TOPOLOGY, 1);
		execv("/proc/self/exe", *argv);
		fprintf(stderr, "fuzz_api: cannot re-execute itself: %s\n", strerror(errno));
		exit(1);
	}
	np_fz_trace = getenv("NP_FUZZ_TRACE") != NULL;
	np_fz_topo_load();
	np_fz_worker_start();
	st.home = st.worker_home = -1;
	/* Both threads' allocator state exists before the first input's baseline. */
	struct np_fz_block b = {0};
	np_fz_malloc(&b, 1, 1);
	np_fz_free(&b);
	np_fz_worker_malloc(&b, 1, 2);
	np_fz_worker_free(&b);
	np_fz_worker_drain();
	pages_at_start = np_fz_totals_get().pages_in_use;
	int mem = 0;
	for (int i = 0; i < np_fz_topo.nvalid; i++)
		mem += np_fz_topo.mem[np_fz_topo.id[i]];
	fprintf(stderr, "fuzz_api: NUMAPAGE_TOPOLOGY=%s: %d nodes, %d with memory\n", getenv("NUMAPAGE_TOPOLOGY"),
		np_fz_topo.nvalid, mem);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct np_fz_in in = {data, data, size};
	struct np_fz_totals base = np_fz_totals_get();
	st.seed = 0;
	while (in.n)
		step(&in);
	end_input(&base);
	return 0;
}
