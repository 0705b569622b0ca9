/*
 * stress_pages.c — the page API under threads on the real OS, one scenario per run (argv[1]):
 *   handoff    6 threads allocate pages of mixed sizes (1 page .. huge, on the home node, on
 *              named nodes, interleaved), stamp every page, and hand most blocks to another
 *              thread (waiting while its mailbox is full: the number handed over is fixed by
 *              the seeds, not by scheduling), which checks every stamp and the block's node
 *              before freeing it
 *   lifetimes  2,000 short-lived threads, 4 at a time: each allocates, swaps blocks with the
 *              threads before it through shared slots (so blocks outlive their threads and
 *              are freed by threads that never allocated them), checks and frees
 * Both end with every page back: the exact pages_in_use and threads statistics of every node
 * equal their values before the workers started (the main thread allocates nothing between
 * the two readings). Fixed seeds.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "numapage.h"
#include "stress_common.h"

#define PAGE ((size_t)4096)
#define MiB ((size_t)1 << 20)
#define MAGIC 0x70616765626c6b31ULL /* "pageblk1" */

static double t_start;

/* Each case takes 1-3 s on 2 idle cores (about 1.5 s of CPU; ASan about twice that). Nothing
 * here measures time: meson's timeout (and the vm tier's) catches a hang. */

/* ---- blocks ------------------------------------------------------------------------------- */

/* The first bytes of every block; each later page starts with stamp + page index, and the
 * block's last word is ~stamp. */
struct head {
	uint64_t magic;
	uint64_t size;
	uint64_t stamp;
	int node; /* numa_page_node_of at allocation: memory never changes node */
	int kind;
};

enum kind { K_HOME, K_ONNODE, K_INTERLEAVED, K_KINDS };

static int nodes[64], nnodes; /* OS ids numa_page_alloc_onnode accepts */

static size_t pick_size(uint64_t *s)
{
	uint64_t r = rnd(s) % 1000;
	if (r < 450)
		return PAGE - rnd(s) % 64;                     /* one page */
	if (r < 900)
		return (2 + rnd(s) % 15) * PAGE - rnd(s) % 100; /* the page cache's runs */
	if (r < 980)
		return (17 + rnd(s) % 240) * PAGE;              /* pool runs */
	if (r < 997)
		return (257 + rnd(s) % 757) * PAGE;             /* up to a chunk's worth */
	return 4 * MiB + rnd(s) % (5 * MiB);                 /* huge */
}

static void *make_block(uint64_t *s, uint64_t stamp)
{
	size_t size = pick_size(s);
	uint64_t r = rnd(s) % 100;
	int kind = r < 80 ? K_HOME : r < 97 ? K_ONNODE : K_INTERLEAVED;
	int want = nodes[rnd(s) % (uint64_t)nnodes];
	char *p = kind == K_HOME ? numa_page_alloc(size)
		  : kind == K_ONNODE ? numa_page_alloc_onnode(size, want)
				     : numa_page_alloc_interleaved(size);
	CHECK(p != NULL, "alloc of %zu bytes (kind %d): %s", size, kind, strerror(errno));
	CHECK(((uintptr_t)p & (PAGE - 1)) == 0, "%p not page-aligned", (void *)p);
	int node = numa_page_node_of(p);
	CHECK(node >= 0, "node_of(%p) = %d", (void *)p, node);
	struct head *h = (struct head *)p;
	*h = (struct head){MAGIC, size, stamp, node, kind};
	for (size_t off = PAGE; off < size; off += PAGE)
		*(uint64_t *)(p + off) = stamp + off / PAGE;
	memcpy(p + size - 8, &(uint64_t){~stamp}, 8);
	return p;
}

static void check_and_free(void *blk)
{
	char *p = blk;
	struct head *h = blk;
	CHECK(h->magic == MAGIC, "block %p: magic %#llx", blk, (unsigned long long)h->magic);
	size_t size = h->size;
	uint64_t stamp = h->stamp;
	for (size_t off = PAGE; off < size; off += PAGE)
		CHECK(*(uint64_t *)(p + off) == stamp + off / PAGE, "block %p page %zu overwritten", blk, off / PAGE);
	uint64_t last;
	memcpy(&last, p + size - 8, 8);
	CHECK(last == ~stamp, "block %p: end overwritten", blk);
	if (h->kind != K_INTERLEAVED)
		CHECK(numa_page_node_of(p + size - 1) == h->node, "block %p changed node", blk);
	CHECK(numa_page_node_of(p) == h->node, "block %p changed node", blk);
	h->magic = 0;
	numa_page_free(p);
}

/* ---- statistics ---------------------------------------------------------------------------- */

struct totals {
	long in_use, threads, hit, miss;
};

static struct totals totals(void)
{
	struct totals t = {0};
	for (int i = 0; i < nnodes; i++) {
		struct numa_page_node_stats s;
		CHECK(numa_page_stats_get(nodes[i], &s) == 0, "stats of node %d", nodes[i]);
		t.in_use += (long)s.pages_in_use;
		t.threads += (long)s.threads;
		t.hit += (long)s.numa_hit;
		t.miss += (long)s.numa_miss;
	}
	return t;
}

static void find_nodes(void)
{
	int max = numa_page_max_node();
	CHECK(max >= 0, "numa_page_max_node: %d", max);
	for (int id = 0; id <= max && nnodes < 64; id++) {
		void *p = numa_page_alloc_onnode(PAGE, id);
		if (!p) {
			CHECK(errno == EINVAL, "onnode(%d): %s", id, strerror(errno));
			continue;
		}
		nodes[nnodes++] = id;
		numa_page_free(p);
	}
	CHECK(nnodes == numa_page_node_count(), "%d node ids usable, %d nodes", nnodes, numa_page_node_count());
}

/* ---- handoff --------------------------------------------------------------------------------- */

#define WORKERS 6
#define OPS 1500
#define BOX 128

struct mailbox {
	pthread_mutex_t lock;
	void *blk[BOX];
	int n;
};

static struct mailbox box[WORKERS];
static atomic_int done_workers;
static atomic_long handed, freed;

static int collect(int me);

/* Hands blk to worker `to`, waiting while its mailbox is full. Dropping the block when the box
 * was full made the number of handoffs depend on how the scheduler ran the receivers (a loaded
 * 2-core machine: "only 4454 blocks changed threads"). Waiting cannot deadlock: a waiting
 * sender keeps emptying its own box, so every box drains whether its owner runs or waits. */
static void post(int me, int to, void *blk)
{
	struct mailbox *m = &box[to];
	for (;;) {
		pthread_mutex_lock(&m->lock);
		bool ok = m->n < BOX;
		if (ok)
			m->blk[m->n++] = blk;
		pthread_mutex_unlock(&m->lock);
		if (ok)
			return;
		if (!collect(me))
			sched_yield();
	}
}

static int collect(int me)
{
	void *got[BOX];
	struct mailbox *m = &box[me];
	pthread_mutex_lock(&m->lock);
	int n = m->n;
	memcpy(got, m->blk, sizeof(void *) * (size_t)n);
	m->n = 0;
	pthread_mutex_unlock(&m->lock);
	for (int i = 0; i < n; i++)
		check_and_free(got[i]);
	atomic_fetch_add(&freed, n);
	return n;
}

static void *handoff_worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	uint64_t s = 0x9e3779b97f4a7c15ULL * (uint64_t)(me + 1);
	void *mine[8] = {0};
	for (int op = 0; op < OPS; op++) {
		void *blk = make_block(&s, ((uint64_t)me << 48) | (uint64_t)op << 16);
		uint64_t r = rnd(&s) % 10;
		if (r < 7) {
			int to = (int)(rnd(&s) % (WORKERS - 1));
			to += to >= me;
			post(me, to, blk);
			atomic_fetch_add(&handed, 1);
		} else {
			/* Keep a few of its own for a while (frees in another order than allocs). */
			int k = (int)(rnd(&s) % 8);
			if (mine[k])
				check_and_free(mine[k]);
			mine[k] = blk;
		}
		collect(me);
	}
	for (int k = 0; k < 8; k++)
		if (mine[k])
			check_and_free(mine[k]);
	atomic_fetch_add(&done_workers, 1);
	/* Others may still post: keep collecting until every worker has stopped posting. */
	while (atomic_load(&done_workers) < WORKERS)
		if (!collect(me))
			sched_yield();
	collect(me);
	return NULL;
}

static void run_handoff(void)
{
	for (int i = 0; i < WORKERS; i++)
		pthread_mutex_init(&box[i].lock, NULL);
	pthread_t t[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		CHECK(pthread_create(&t[i], NULL, handoff_worker, (void *)(intptr_t)i) == 0, "pthread_create");
	for (int i = 0; i < WORKERS; i++)
		CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
	for (int i = 0; i < WORKERS; i++)
		CHECK(box[i].n == 0, "mailbox %d still holds %d blocks", i, box[i].n);
	CHECK(atomic_load(&freed) == atomic_load(&handed), "handed %ld, freed %ld", atomic_load(&handed),
	      atomic_load(&freed));
	/* The seeds alone fix how many blocks the workers hand over (about 70% of their
	 * allocations): post() waits for room instead of dropping a block, so scheduling cannot
	 * change the count, and every block handed over was freed by its receiver (above). */
	CHECK(atomic_load(&handed) > WORKERS * OPS / 2, "only %ld blocks changed threads", atomic_load(&handed));
}

static void *free_block(void *blk)
{
	check_and_free(blk);
	return NULL;
}

/* ---- lifetimes ------------------------------------------------------------------------------- */

#define LIVES 2000
#define AT_ONCE 4
#define SLOTS 16

static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static void *slots[SLOTS];

static void *life(void *arg)
{
	uint64_t s = (uint64_t)(intptr_t)arg * 0xd1b54a32d192ed03ULL + 1;
	void *mine[4];
	for (int i = 0; i < 4; i++)
		mine[i] = make_block(&s, s);
	/* Leave two blocks behind for later threads; take what earlier ones left. */
	for (int i = 0; i < 2; i++) {
		int k = (int)(rnd(&s) % SLOTS);
		pthread_mutex_lock(&slots_lock);
		void *old = slots[k];
		slots[k] = mine[i];
		pthread_mutex_unlock(&slots_lock);
		mine[i] = old;
	}
	for (int i = 3; i >= 0; i--)
		if (mine[i])
			check_and_free(mine[i]);
	return NULL;
}

static void run_lifetimes(void)
{
	for (int round = 0; round < LIVES / AT_ONCE; round++) {
		pthread_t t[AT_ONCE];
		for (int i = 0; i < AT_ONCE; i++)
			CHECK(pthread_create(&t[i], NULL, life, (void *)(intptr_t)(round * AT_ONCE + i + 1)) == 0,
			      "pthread_create");
		for (int i = 0; i < AT_ONCE; i++)
			CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
	}
	/* The last blocks left behind: freed by a thread that never allocated. */
	for (int k = 0; k < SLOTS; k++)
		if (slots[k]) {
			pthread_t t;
			CHECK(pthread_create(&t, NULL, free_block, slots[k]) == 0, "create");
			CHECK(pthread_join(t, NULL) == 0, "join");
			slots[k] = NULL;
		}
}

/* ---- driver ------------------------------------------------------------------------------------ */

static void *warm(void *arg)
{
	(void)arg;
	numa_page_free(numa_page_alloc(PAGE));
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "handoff") && strcmp(argv[1], "lifetimes"))) {
		fprintf(stderr, "usage: %s handoff|lifetimes\n", argv[0]);
		return 2;
	}
	t_start = now();
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("%s: start\n", argv[1]); /* stdout's buffer exists before the baseline */
	find_nodes();
	/* Threads were created and joined once (the C library's per-thread allocations made by
	 * this thread settle), then the baseline: from here on only workers allocate. */
	pthread_t t[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		CHECK(pthread_create(&t[i], NULL, warm, NULL) == 0, "pthread_create");
	for (int i = 0; i < WORKERS; i++)
		CHECK(pthread_join(t[i], NULL) == 0, "pthread_join");
	struct totals before = totals();
	if (!strcmp(argv[1], "handoff"))
		run_handoff();
	else
		run_lifetimes();
	struct totals after = totals();
	CHECK(after.in_use == before.in_use, "pages in use: %ld before, %ld after", before.in_use, after.in_use);
	CHECK(after.threads == before.threads, "threads: %ld before, %ld after", before.threads, after.threads);
	CHECK(after.hit + after.miss > before.hit + before.miss, "nothing was counted");
	printf("%s: %d node(s), %.2f s, %ld pages served, in use back to %ld\n", argv[1], nnodes,
	       now() - t_start, (after.hit + after.miss) - (before.hit + before.miss), after.in_use);
	return 0;
}
