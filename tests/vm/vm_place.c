/*
 * vm_place.c — where numa_page_alloc and numa_page_alloc_onnode really put pages, checked with
 * move_pages(2) on a multi-node guest kernel: from a thread pinned to each CPU, on each node,
 * after a thread migrates, after a cross-node producer/consumer run, and against the per-node
 * statistics. Linked with libnumapage; the expected node always comes from /sys (vm_common.c),
 * never from the library's own table. Memory that a memoryless node's threads get may be on
 * any of its nearest memory nodes (2990wx: nodes 1 and 3 are equidistant from 0 and 2).
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numapage.h"
#include "vm_common.h"

/* ---- Placement of a set of pages ------------------------------------------------------- */

struct tally {
	int pages;
	int misplaced;               /* not on a node vm_node_ok accepts */
	int absent;                  /* move_pages: not present after touching */
	int disagree;                /* numa_page_node_of differs from move_pages */
	int failed;                  /* allocation returned NULL or an unaligned pointer */
	int on[VM_MAX_NODES];
	char first[200];             /* the first problem, for the message */
};

/* The first problem, for the message (vm_common.c). */
#define note_first(r, ...) vm_first((r)->first, sizeof (r)->first, __VA_ARGS__)

/* Touches [p, p + len), asks the kernel where each page is, and compares with home's accepted
 * nodes and with numa_page_node_of. */
static void tally_pages(struct tally *t, void *p, size_t len, int home)
{
	static __thread int st[VM_WHERE_MAX];
	if (!p || (uintptr_t)p % vm_page) {
		t->failed++;
		if (p)
			note_first(t, "unaligned pointer %p", p);
		else
			note_first(t, "allocation returned NULL, errno %d", errno);
		return;
	}
	vm_touch(p, len);
	int n = vm_where(p, len, st, VM_WHERE_MAX);
	if (n < 0) {
		t->failed++;
		note_first(t, "move_pages failed: errno %d", -n);
		return;
	}
	for (int i = 0; i < n; i++) {
		char *page = (char *)p + (size_t)i * vm_page;
		t->pages++;
		if (st[i] < 0) {
			t->absent++;
			note_first(t, "page %d: move_pages status %d", i, st[i]);
			continue;
		}
		t->on[st[i]]++;
		if (!vm_node_ok(home, st[i])) {
			t->misplaced++;
			note_first(t, "page %d on node %d, home node %d", i, st[i], home);
		}
		int claimed = numa_page_node_of(page);
		if (claimed != st[i]) {
			t->disagree++;
			note_first(t, "page %d: numa_page_node_of says %d, move_pages %d", i, claimed,
				   st[i]);
		}
	}
}

static bool tally_clean(const struct tally *t)
{
	return t->pages > 0 && !t->misplaced && !t->absent && !t->disagree && !t->failed;
}

static const char *tally_nodes(const struct tally *t, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = 0;
	for (int n = 0; n < VM_MAX_NODES && o < len; n++)
		if (t->on[n])
			o += (size_t)snprintf(buf + o, len - o, "%s%d on node %d", o ? ", " : "",
					      t->on[n], n);
	return buf;
}

/* ---- numa_page_alloc from a thread pinned to each CPU ---------------------------------- */

static const size_t alloc_sizes[] = {4096, 1, 3 * 4096 + 5, 16 * 4096, 256 * 1024, 4096, 8192};
#define NSIZES (sizeof alloc_sizes / sizeof alloc_sizes[0])

struct cpu_job {
	int cpu, node;
	int ran_on, home;
	struct tally t;
};

static void *alloc_on_cpu(void *arg)
{
	struct cpu_job *j = arg;
	void *p[NSIZES];
	j->ran_on = sched_getcpu();
	j->home = numa_page_home_node();
	for (size_t i = 0; i < NSIZES; i++)
		p[i] = numa_page_alloc(alloc_sizes[i]);
	for (size_t i = 0; i < NSIZES; i++)
		tally_pages(&j->t, p[i], alloc_sizes[i], j->node);
	for (size_t i = 0; i < NSIZES; i++)
		numa_page_free(p[i]);
	return NULL;
}

static void check_alloc_every_cpu(void)
{
	char exp[64], got[256];
	for (int cpu = 0; cpu < vm_topo.ncpus; cpu++) {
		struct cpu_job j = {.cpu = cpu, .node = vm_topo.cpu_node[cpu]};
		if (j.node < 0)
			continue;
		vm_on_cpu(cpu, alloc_on_cpu, &j);
		vm_expect_str(j.node, exp, sizeof exp);
		tally_nodes(&j.t, got, sizeof got);
		if (j.ran_on != cpu)
			vm_fail("numa_page_alloc on cpu %d: the thread ran on cpu %d", cpu, j.ran_on);
		else if (tally_clean(&j.t))
			vm_ok("numa_page_alloc on cpu %d (node %d%s): %s (expected %s); "
			      "numa_page_node_of agrees", cpu, j.node,
			      vm_topo.has_mem[j.node] ? "" : ", memoryless", got, exp);
		else
			vm_fail("numa_page_alloc on cpu %d (node %d): %s (expected %s): %s", cpu,
				j.node, got, exp, j.t.first);
		if (j.home != j.node)
			vm_fail("numa_page_home_node on cpu %d: %d, the CPU's node is %d", cpu, j.home,
				j.node);
	}
}

/* ---- numa_page_alloc_onnode on every node ---------------------------------------------- */

static void check_onnode(void)
{
	char exp[64], got[256];
	for (int n = 0; n <= vm_topo.max_node; n++) {
		if (!vm_topo.online[n])
			continue;
		struct tally t = {0};
		void *p[3];
		size_t sz[3] = {4096, 32 * 4096, 5 * 4096 + 1};
		for (int i = 0; i < 3; i++)
			p[i] = numa_page_alloc_onnode(sz[i], n);
		for (int i = 0; i < 3; i++)
			tally_pages(&t, p[i], sz[i], n);
		for (int i = 0; i < 3; i++)
			numa_page_free(p[i]);
		vm_expect_str(n, exp, sizeof exp);
		tally_nodes(&t, got, sizeof got);
		if (tally_clean(&t))
			vm_ok("numa_page_alloc_onnode(%d)%s: %s; numa_page_node_of agrees", n,
			      vm_topo.has_mem[n] ? "" : " (memoryless)", got);
		else
			vm_fail("numa_page_alloc_onnode(%d): %s (expected %s): %s", n, got, exp,
				t.first);
	}
	/* A huge block grown by realloc is remapped (in place or moved with its pages): its pages
	 * must stay on the node, the old ones and the new ones alike. */
	for (int n = 0; n <= vm_topo.max_node; n++) {
		if (!vm_topo.online[n] || !vm_topo.has_mem[n])
			continue;
		struct tally t = {0};
		size_t small = 5u << 20, big = 14u << 20; /* 14 MiB: 3584 pages, one vm_where call */
		char *p = numa_page_alloc_onnode(small, n);
		if (p)
			memset(p, 0x3c, small);
		char *q = p ? numa_page_realloc(p, big) : NULL;
		bool kept = q && q[0] == 0x3c && q[small - 1] == 0x3c, moved = q != p;
		tally_pages(&t, q, big, n);
		numa_page_free(q);
		if (tally_clean(&t) && kept)
			vm_ok("numa_page_realloc of a %zu MiB block on node %d to %zu MiB (%s): every page "
			      "on node %d, contents kept", small >> 20, n, big >> 20, moved ? "moved" : "in place", n);
		else
			vm_fail("numa_page_realloc on node %d: %s%s", n, kept ? "" : "contents lost; ",
				t.first[0] ? t.first : "(pages)");
	}
	/* A freed huge block cut for two smaller ones (pool/huge.c): both come from its mapping,
	 * every page of them on its node, and freed they are one block again. */
	for (int n = 0; n <= vm_topo.max_node; n++) {
		if (!vm_topo.online[n] || !vm_topo.has_mem[n])
			continue;
		struct tally t = {0};
		size_t whole = 40u << 20, part = 12u << 20; /* 12 MiB: 3072 pages, one vm_where call */
		malloc_trim(0); /* no other cached chunk fits a part better */
		char *w = numa_page_alloc_onnode(whole, n);
		if (w)
			memset(w, 0x4b, whole);
		numa_page_free(w);
		char *a = numa_page_alloc_onnode(part, n), *b = numa_page_alloc_onnode(part, n);
		tally_pages(&t, a, part, n);
		tally_pages(&t, b, part, n);
		bool cut = w && a == w && b == w + (16u << 20);
		numa_page_free(a);
		numa_page_free(b);
		char *j = numa_page_alloc_onnode(whole, n);
		bool joined = j && j == w;
		tally_pages(&t, j + whole - part, part, n);
		numa_page_free(j);
		if (tally_clean(&t) && cut && joined)
			vm_ok("a freed %zu MiB block on node %d served two of %zu MiB from its mapping, then "
			      "the whole again: every page on node %d", whole >> 20, n, part >> 20, n);
		else
			vm_fail("a freed %zu MiB block on node %d cut for two of %zu MiB: %s%s%s", whole >> 20, n,
				part >> 20, cut ? "" : "not from its mapping; ", joined ? "" : "not joined again; ",
				t.first[0] ? t.first : "(pages)");
	}
	/* The pool grows into a freed huge block's cached chunk (pool.c's grow_locked): runs from
	 * it are on the node whose pages they reuse. */
	for (int n = 0; n <= vm_topo.max_node; n++) {
		if (!vm_topo.online[n] || !vm_topo.has_mem[n])
			continue;
		struct tally t = {0};
		size_t whole = 40u << 20, run = 1u << 20;
		malloc_trim(0);
		char *w = numa_page_alloc_onnode(whole, n);
		if (w)
			memset(w, 0x4c, whole);
		numa_page_free(w);
		enum { RUNS = 48 };
		char *r[RUNS];
		int inside = -1;
		for (int i = 0; i < RUNS; i++) {
			r[i] = numa_page_alloc_onnode(run, n);
			if (w && inside < 0 && r[i] >= w && r[i] < w + (16u << 20))
				inside = i;
		}
		if (inside >= 0)
			tally_pages(&t, r[inside], run, n);
		for (int i = 0; i < RUNS; i++)
			numa_page_free(r[i]);
		if (inside >= 0 && tally_clean(&t))
			vm_ok("node %d's pool grew into a freed %zu MiB block's pages: every page of a run "
			      "there on node %d", n, whole >> 20, n);
		else
			vm_fail("node %d's pool and a freed %zu MiB block: %s", n, whole >> 20,
				inside < 0 ? "no run of 48 in its first granule" : t.first);
	}
	int bad[] = {vm_topo.max_node + 1, 100000, -2};
	for (int i = 0; i < 3; i++) {
		errno = 0;
		void *p = numa_page_alloc_onnode(4096, bad[i]);
		if (p || errno != EINVAL)
			vm_fail("numa_page_alloc_onnode(%d), a node that does not exist: %p, errno %d "
				"(expected NULL, EINVAL)", bad[i], p, errno);
		else
			vm_ok("numa_page_alloc_onnode(%d), a node that does not exist: NULL, EINVAL",
			      bad[i]);
		if (p)
			numa_page_free(p);
	}
}

/* ---- Statistics against move_pages ----------------------------------------------------- */

struct snap {
	struct numa_page_node_stats s[VM_MAX_NODES];
};

static void snapshot(struct snap *s)
{
	for (int n = 0; n <= vm_topo.max_node; n++)
		if (vm_topo.online[n] && numa_page_stats_get(n, &s->s[n]) != 0)
			memset(&s->s[n], 0, sizeof s->s[n]);
}

#define D(a, b, n, f) ((long long)((b)->s[n].f - (a)->s[n].f))

#define NSTAT_PAGES 48

struct stat_job {
	int node;
	struct snap before, after, freed;
	struct tally t;
	int served[VM_MAX_NODES]; /* pages move_pages saw on each node */
};

static void *stats_on_cpu(void *arg)
{
	struct stat_job *j = arg;
	void *p[NSTAT_PAGES];
	numa_page_free(numa_page_alloc(4096)); /* the thread's first call sets it up */
	snapshot(&j->before);
	for (int i = 0; i < NSTAT_PAGES; i++)
		p[i] = numa_page_alloc(4096);
	snapshot(&j->after);
	for (int i = 0; i < NSTAT_PAGES; i++)
		tally_pages(&j->t, p[i], 4096, j->node);
	for (int i = 0; i < NSTAT_PAGES; i++)
		numa_page_free(p[i]);
	snapshot(&j->freed);
	memcpy(j->served, j->t.on, sizeof j->served);
	return NULL;
}

/* The counters of one allocation burst against what move_pages saw. home: the node the
 * requests were for; home_thread: the node the allocating thread is homed on. */
static void compare_stats(const char *what, const struct snap *b, const struct snap *a,
			  const int *served, int home, int home_thread, int npages)
{
	char why[300] = "";
	size_t o = 0;
	long long miss = 0, foreign = 0;
#define WHY(...)                                                                          \
	do {                                                                              \
		if (o < sizeof why - 1)                                                   \
			o += (size_t)snprintf(why + o, sizeof why - o, __VA_ARGS__);      \
	} while (0)
	for (int n = 0; n <= vm_topo.max_node; n++) {
		if (!vm_topo.online[n])
			continue;
		long long in_use = D(b, a, n, pages_in_use);
		long long served_here = D(b, a, n, numa_hit) + D(b, a, n, numa_miss);
		long long to_threads = D(b, a, n, local_node) + D(b, a, n, other_node);
		miss += D(b, a, n, numa_miss);
		foreign += D(b, a, n, numa_foreign);
		if (in_use != served[n])
			WHY(" node %d: pages_in_use +%lld, move_pages %d;", n, in_use, served[n]);
		if (served_here != served[n])
			WHY(" node %d: numa_hit+numa_miss +%lld, move_pages %d;", n, served_here,
			    served[n]);
		if (to_threads != served[n])
			WHY(" node %d: local_node+other_node +%lld, move_pages %d;", n, to_threads,
			    served[n]);
		long long local = D(b, a, n, local_node);
		if (local != (n == home_thread ? served[n] : 0))
			WHY(" node %d: local_node +%lld;", n, local);
	}
	if (miss != foreign)
		WHY(" numa_miss total %lld != numa_foreign total %lld;", miss, foreign);
	if (vm_topo.has_mem[home]) {
		/* Everything on the intended node: all hits, no miss anywhere. */
		if (D(b, a, home, numa_hit) != npages || miss)
			WHY(" node %d: numa_hit +%lld, misses %lld for %d pages asked of it;", home,
			    D(b, a, home, numa_hit), miss, npages);
	} else if (home != home_thread) {
		/* Asked of a memoryless node by id: a miss where served, foreign on the node. */
		if (D(b, a, home, numa_foreign) != npages || miss != npages)
			WHY(" memoryless node %d: numa_foreign +%lld, numa_miss total %lld, "
			    "expected %d;", home, D(b, a, home, numa_foreign), miss, npages);
	}
#undef WHY
	if (o)
		vm_fail("statistics of %s:%s", what, why);
	else
		vm_ok("statistics of %s match move_pages (numa_hit/miss/foreign, local/other_node, "
		      "pages_in_use)", what);
}

static void check_stats(void)
{
	char what[96];
	for (int n = 0; n <= vm_topo.max_node; n++) {
		if (!vm_topo.online[n] || vm_topo.first_cpu[n] < 0)
			continue;
		struct stat_job *j = calloc(1, sizeof *j);
		j->node = n;
		vm_on_cpu(vm_topo.first_cpu[n], stats_on_cpu, j);
		snprintf(what, sizeof what, "%d numa_page_alloc pages on cpu %d (node %d%s)",
			 NSTAT_PAGES, vm_topo.first_cpu[n], n,
			 vm_topo.has_mem[n] ? "" : ", memoryless");
		if (!tally_clean(&j->t))
			vm_fail("%s: placement: %s", what, j->t.first);
		else
			compare_stats(what, &j->before, &j->after, j->served, n, n, NSTAT_PAGES);
		bool back = true;
		for (int m = 0; m <= vm_topo.max_node; m++)
			if (vm_topo.online[m] &&
			    j->freed.s[m].pages_in_use != j->before.s[m].pages_in_use)
				back = false;
		if (back)
			vm_ok("statistics: pages_in_use back to its value after freeing them (node %d)",
			      n);
		else
			vm_fail("statistics: pages_in_use not back after freeing the pages of node %d",
				n);
		free(j);
	}
}

/* numa_page_alloc_onnode from the main thread, pinned to cpu 0, for every other node. */
static void check_stats_onnode(void)
{
	int me = vm_topo.cpu_node[0];
	char what[96];
	for (int n = 0; n <= vm_topo.max_node; n++) {
		if (!vm_topo.online[n] || n == me)
			continue;
		static struct snap before, after;
		struct tally t = {0};
		void *p[16];
		numa_page_free(numa_page_alloc_onnode(4096, n));
		snapshot(&before);
		for (int i = 0; i < 16; i++)
			p[i] = numa_page_alloc_onnode(4096, n);
		snapshot(&after);
		for (int i = 0; i < 16; i++)
			tally_pages(&t, p[i], 4096, n);
		for (int i = 0; i < 16; i++)
			numa_page_free(p[i]);
		snprintf(what, sizeof what, "16 pages of numa_page_alloc_onnode(%d) from node %d%s", n,
			 me, vm_topo.has_mem[n] ? "" : " (memoryless)");
		if (!tally_clean(&t))
			vm_fail("%s: placement: %s", what, t.first);
		else
			compare_stats(what, &before, &after, t.on, n, me, 16);
	}
}

/* ---- A thread that migrates ------------------------------------------------------------ */

#define NMIG 32
#define NMIG_AFTER 256

struct mig_job {
	int a, b;
	int home_after;
	struct tally before, after, reuse;
	long long in_use_drop;  /* pages_in_use of the old node's memory after freeing */
	int old_node;
};

static void *migrate(void *arg)
{
	struct mig_job *j = arg;
	static void *x[NMIG], *y[NMIG], *z[NMIG_AFTER];
	static struct snap s0, s1;
	int na = vm_topo.cpu_node[j->a], nb = vm_topo.cpu_node[j->b];
	for (int i = 0; i < NMIG; i++)
		x[i] = numa_page_alloc(4096);
	for (int i = 0; i < NMIG; i++)
		tally_pages(&j->before, x[i], 4096, na);
	if (vm_move_to_cpu(j->b) != 0) {
		vm_fail("migration: could not move the thread to cpu %d", j->b);
		return NULL;
	}
	for (int i = 0; i < NMIG; i++)
		y[i] = numa_page_alloc(4096);
	/* The home may follow lazily (on the next refill), but not later than the first
	 * allocations made on the new node. */
	j->home_after = numa_page_home_node();
	for (int i = 0; i < NMIG; i++)
		tally_pages(&j->after, y[i], 4096, nb);
	/* Free the old node's pages here: they must go back to their own node, never serve this
	 * node's requests. */
	j->old_node = vm_where1(x[0]);
	snapshot(&s0);
	for (int i = 0; i < NMIG; i++)
		numa_page_free(x[i]);
	if (j->old_node >= 0) {
		snapshot(&s1);
		j->in_use_drop = D(&s0, &s1, j->old_node, pages_in_use);
	}
	for (int i = 0; i < NMIG_AFTER; i++)
		z[i] = numa_page_alloc(4096);
	for (int i = 0; i < NMIG_AFTER; i++)
		tally_pages(&j->reuse, z[i], 4096, nb);
	for (int i = 0; i < NMIG; i++)
		numa_page_free(y[i]);
	for (int i = 0; i < NMIG_AFTER; i++)
		numa_page_free(z[i]);
	return NULL;
}

static void *alloc_back_home(void *arg)
{
	struct tally *t = arg;
	static void *p[NMIG_AFTER];
	int node = vm_topo.cpu_node[sched_getcpu()];
	for (int i = 0; i < NMIG_AFTER; i++)
		p[i] = numa_page_alloc(4096);
	for (int i = 0; i < NMIG_AFTER; i++)
		tally_pages(t, p[i], 4096, node);
	for (int i = 0; i < NMIG_AFTER; i++)
		numa_page_free(p[i]);
	return NULL;
}

static void check_migration(void)
{
	struct mig_job j = {0};
	char got[256];
	if (!vm_pick_pair(&j.a, &j.b)) {
		vm_note("migration: no two CPUs get memory from different nodes here");
		return;
	}
	int na = vm_topo.cpu_node[j.a], nb = vm_topo.cpu_node[j.b];
	vm_on_cpu(j.a, migrate, &j);
	if (!tally_clean(&j.before))
		vm_fail("migration: before moving, cpu %d: %s", j.a, j.before.first);
	if (tally_clean(&j.after))
		vm_ok("migration: a thread moved from cpu %d (node %d) to cpu %d (node %d) gets its "
		      "new pages from the new node (%s)", j.a, na, j.b, nb,
		      tally_nodes(&j.after, got, sizeof got));
	else
		vm_fail("migration cpu %d -> %d: new pages %s: %s", j.a, j.b,
			tally_nodes(&j.after, got, sizeof got), j.after.first);
	if (j.home_after != nb)
		vm_fail("migration: numa_page_home_node is %d after moving to node %d and allocating "
			"there", j.home_after, nb);
	if (tally_clean(&j.reuse))
		vm_ok("migration: after freeing %d pages of the old node on the new one, %d new "
		      "pages are all from the new node (%s)", NMIG, NMIG_AFTER,
		      tally_nodes(&j.reuse, got, sizeof got));
	else
		vm_fail("migration: pages freed after moving were reused on the new node: %s (%s)",
			tally_nodes(&j.reuse, got, sizeof got), j.reuse.first);
	if (j.in_use_drop == -NMIG)
		vm_ok("migration: pages_in_use of node %d dropped by the %d pages freed away from it",
		      j.old_node, NMIG);
	else
		vm_fail("migration: pages_in_use of node %d changed by %lld when %d of its pages were "
			"freed", j.old_node, j.in_use_drop, NMIG);
	struct tally home = {0};
	vm_on_cpu(j.a, alloc_back_home, &home);
	if (tally_clean(&home))
		vm_ok("migration: the old node's threads still get their own node's pages (%s)",
		      tally_nodes(&home, got, sizeof got));
	else
		vm_fail("migration: back on cpu %d: %s", j.a, home.first);
}

/* ---- Producer/consumer across nodes ---------------------------------------------------- */

#define PC_ITEMS 300
#define PC_RING 64

struct ring {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void *item[PC_RING];
	size_t len[PC_RING];
	unsigned head, tail; /* head - tail items queued */
	bool done;
};

struct pc {
	int cpu_prod, cpu_cons;
	struct ring r;
	struct tally made;
	int items_on[VM_MAX_NODES]; /* items whose first page is on each node */
	int remote_frees;
};

static void *producer(void *arg)
{
	struct pc *pc = arg;
	int node = vm_topo.cpu_node[pc->cpu_prod];
	for (int i = 0; i < PC_ITEMS; i++) {
		size_t len = (size_t)(1 + i % 3) * vm_page;
		void *p = numa_page_alloc(len);
		tally_pages(&pc->made, p, len, node);
		int where = p ? vm_where1(p) : -1;
		if (where >= 0)
			pc->items_on[where]++;
		pthread_mutex_lock(&pc->r.lock);
		while (pc->r.head - pc->r.tail == PC_RING)
			pthread_cond_wait(&pc->r.cond, &pc->r.lock);
		pc->r.item[pc->r.head % PC_RING] = p;
		pc->r.len[pc->r.head % PC_RING] = len;
		pc->r.head++;
		pthread_cond_broadcast(&pc->r.cond);
		pthread_mutex_unlock(&pc->r.lock);
	}
	pthread_mutex_lock(&pc->r.lock);
	pc->r.done = true;
	pthread_cond_broadcast(&pc->r.cond);
	pthread_mutex_unlock(&pc->r.lock);
	return NULL;
}

static void *consumer(void *arg)
{
	struct pc *pc = arg;
	for (;;) {
		pthread_mutex_lock(&pc->r.lock);
		while (pc->r.head == pc->r.tail && !pc->r.done)
			pthread_cond_wait(&pc->r.cond, &pc->r.lock);
		if (pc->r.head == pc->r.tail) {
			pthread_mutex_unlock(&pc->r.lock);
			return NULL;
		}
		void *p = pc->r.item[pc->r.tail % PC_RING];
		pc->r.tail++;
		pthread_cond_broadcast(&pc->r.cond);
		pthread_mutex_unlock(&pc->r.lock);
		numa_page_free(p);
		pc->remote_frees++;
	}
}

static pthread_t start_on(int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	pthread_t t;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_init(&a);
	pthread_attr_setaffinity_np(&a, sizeof set, &set);
	if (pthread_create(&t, &a, fn, arg) != 0) {
		printf("not ok - pthread_create failed\n");
		exit(1);
	}
	pthread_attr_destroy(&a);
	return t;
}

struct fill_job {
	int node; /* node the pages are asked of (onnode), or -1: the thread's own */
	struct tally t;
};

#define NFILL 1200

/* Takes more pages than the producer/consumer run moved between nodes: if freed foreign pages
 * had landed in this node's pool, some would come back here. */
static void *fill(void *arg)
{
	struct fill_job *f = arg;
	void **p = malloc(NFILL * sizeof *p);
	int home = f->node >= 0 ? f->node : vm_topo.cpu_node[sched_getcpu()];
	for (int i = 0; i < NFILL; i++)
		p[i] = f->node >= 0 ? numa_page_alloc_onnode(4096, f->node) : numa_page_alloc(4096);
	for (int i = 0; i < NFILL; i++)
		tally_pages(&f->t, p[i], 4096, home);
	for (int i = 0; i < NFILL; i++)
		numa_page_free(p[i]);
	free(p);
	return NULL;
}

static void check_producer_consumer(void)
{
	int a, b;
	char got[256];
	if (!vm_pick_pair(&a, &b)) {
		vm_note("producer/consumer: no two CPUs get memory from different nodes here");
		return;
	}
	static struct pc pc[2];
	static struct snap s0, s1;
	pc[0].cpu_prod = a, pc[0].cpu_cons = b;
	pc[1].cpu_prod = b, pc[1].cpu_cons = a;
	snapshot(&s0);
	pthread_t t[4];
	for (int i = 0; i < 2; i++) {
		pthread_mutex_init(&pc[i].r.lock, NULL);
		pthread_cond_init(&pc[i].r.cond, NULL);
		t[2 * i] = start_on(pc[i].cpu_prod, producer, &pc[i]);
		t[2 * i + 1] = start_on(pc[i].cpu_cons, consumer, &pc[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 2; i++) {
		if (tally_clean(&pc[i].made) && pc[i].remote_frees == PC_ITEMS)
			vm_ok("producer/consumer: cpu %d made %s, cpu %d freed all %d", pc[i].cpu_prod,
			      tally_nodes(&pc[i].made, got, sizeof got), pc[i].cpu_cons, PC_ITEMS);
		else
			vm_fail("producer/consumer cpu %d -> cpu %d: %s, %d freed", pc[i].cpu_prod,
				pc[i].cpu_cons, pc[i].made.first, pc[i].remote_frees);
	}
	snapshot(&s1);
	char why[256] = "";
	size_t o = 0;
	for (int n = 0; n <= vm_topo.max_node; n++) {
		int items = pc[0].items_on[n] + pc[1].items_on[n];
		long long rf = D(&s0, &s1, n, remote_free);
		if (items && rf < items && o < sizeof why)
			o += (size_t)snprintf(why + o, sizeof why - o, " node %d: remote_free +%lld after "
					      "%d of its allocations were freed on another node;", n,
					      rf, items);
	}
	if (o)
		vm_fail("producer/consumer statistics:%s", why);
	else
		vm_ok("producer/consumer statistics: the cross-node frees are counted in remote_free "
		      "of the pages' nodes");
	o = 0;
	for (int n = 0; n <= vm_topo.max_node; n++)
		if (vm_topo.online[n] && D(&s0, &s1, n, pages_in_use) != 0 && o < sizeof why)
			o += (size_t)snprintf(why + o, sizeof why - o, " node %d: %+lld;", n,
					      D(&s0, &s1, n, pages_in_use));
	if (o)
		vm_fail("producer/consumer statistics: pages_in_use not back after everything was "
			"freed:%s", why);
	else
		vm_ok("producer/consumer statistics: pages_in_use of every node back to where it was");
	/* No node's pool holds another node's pages: drain each node and look. */
	for (int n = 0; n <= vm_topo.max_node; n++) {
		if (!vm_topo.online[n] || !vm_topo.has_mem[n])
			continue;
		struct fill_job f = {.node = -1};
		if (vm_topo.first_cpu[n] >= 0)
			vm_on_cpu(vm_topo.first_cpu[n], fill, &f);
		struct fill_job g = {.node = n};
		vm_on_cpu(a, fill, &g);
		bool okf = vm_topo.first_cpu[n] < 0 || tally_clean(&f.t);
		if (okf && tally_clean(&g.t))
			vm_ok("after producer/consumer: %d pages asked of node %d%s are all on node %d",
			      NFILL, n, vm_topo.first_cpu[n] >= 0 ? " (by id and by its own threads)"
			      : " (by id)", n);
		else
			vm_fail("after producer/consumer, node %d's pool: %s", n,
				!okf ? f.t.first : g.t.first);
	}
}

int main(void)
{
	vm_topo_load();
	vm_note("libnumapage %s", numa_page_version());
	if (vm_move_to_cpu(0) != 0)
		vm_note("could not pin the main thread to cpu 0");
	check_alloc_every_cpu();
	check_onnode();
	check_stats();
	check_stats_onnode();
	check_migration();
	check_producer_consumer();
	return vm_exit_status();
}
