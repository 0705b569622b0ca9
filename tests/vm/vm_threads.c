/*
 * vm_threads.c — thread placement (NUMAPAGE_PLACE=spread and fill) and interleaved memory
 * (numa_page_alloc_interleaved, NUMAPAGE_INTERLEAVE_ABOVE) on a multi-node guest kernel, judged
 * inside the threads with sched_getcpu, sched_getaffinity and move_pages; `vm_threads stream`
 * runs bench/stream under `numapage run --place none|spread` and checks where its threads ran,
 * never how fast. The options are read at start-up and the main thread is placed then, so each
 * check runs in a child process exec'd with its own environment. Threads are created one at a
 * time (each reports before the next starts), so the expected node of each is exact. Expected
 * nodes and CPUs always come from /sys (vm_common.c), never from the library's table.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "numapage.h"
#include "vm_common.h"

#define MAX_WORKERS 64
#define THREAD_BUF (256 * 1024) /* each thread's large malloc: a page run */
#define ILV_BYTES (8u << 20)    /* interleaved region: 2048 pages, one move_pages call */

/* ---- CPU sets of nodes ----------------------------------------------------------------- */

static void node_cpus(int node, cpu_set_t *set)
{
	CPU_ZERO(set);
	for (int c = 0; c < vm_topo.ncpus; c++)
		if (vm_topo.cpu_node[c] == node)
			CPU_SET(c, set);
}

static const char *set_str(const cpu_set_t *set, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = 0;
	for (int c = 0; c < CPU_SETSIZE && o < len; c++)
		if (CPU_ISSET(c, set))
			o += (size_t)snprintf(buf + o, len - o, "%s%d", o ? "," : "", c);
	return buf;
}

static bool node_has_cpus(int n)
{
	return n >= 0 && n <= vm_topo.max_node && vm_topo.online[n] && vm_topo.ncpus_of[n] > 0;
}

static int cpu_nodes(void)
{
	int k = 0;
	for (int n = 0; n <= vm_topo.max_node; n++)
		k += node_has_cpus(n);
	return k;
}

/* ---- Pages of one buffer --------------------------------------------------------------- */

struct pages {
	int n, bad, disagree, err;
	int on[VM_MAX_NODES];
	char first[160];
};

/* The first problem, for the message (vm_common.c). */
#define first_problem(r, ...) vm_first((r)->first, sizeof (r)->first, __VA_ARGS__)

/* Touches [p, p + len) and checks with move_pages that every page is on a node vm_node_ok
 * accepts for home, and that numa_page_node_of agrees. */
static void pages_check(struct pages *r, void *p, size_t len, int home)
{
	int st[VM_WHERE_MAX];
	if (!p) {
		r->err++;
		first_problem(r, "malloc returned NULL");
		return;
	}
	vm_touch(p, len);
	int n = vm_where(p, len, st, VM_WHERE_MAX);
	if (n < 0) {
		r->err++;
		first_problem(r, "move_pages: errno %d", -n);
		return;
	}
	uintptr_t first = (uintptr_t)p & ~(uintptr_t)(vm_page - 1);
	for (int i = 0; i < n; i++) {
		r->n++;
		if (st[i] < 0 || st[i] >= VM_MAX_NODES) {
			r->err++;
			first_problem(r, "page %d: move_pages status %d", i, st[i]);
			continue;
		}
		r->on[st[i]]++;
		if (!vm_node_ok(home, st[i])) {
			r->bad++;
			first_problem(r, "page %d on node %d, home node %d", i, st[i], home);
		}
		/* The first page may start before p (a slab object): ask about p itself there. */
		const void *q = i ? (const void *)(first + (uintptr_t)i * vm_page) : p;
		int claimed = numa_page_node_of(q);
		if (claimed != st[i]) {
			r->disagree++;
			first_problem(r, "page %d: numa_page_node_of %d, move_pages %d", i, claimed, st[i]);
		}
	}
}

static bool pages_clean(const struct pages *r)
{
	return r->n > 0 && !r->bad && !r->disagree && !r->err;
}

/* ---- Workers --------------------------------------------------------------------------- */

struct worker {
	pthread_t t;
	int pin;      /* -1, or the only CPU it is created with (pthread_attr_setaffinity_np) */
	bool move;    /* after its report, move to a CPU of a node with other memory, and again */
	sem_t ready, go;
	/* what the thread saw right after its first allocation */
	int cpu, home;
	cpu_set_t aff;
	struct pages pg;
	/* after moving itself (move only) */
	int to_cpu, cpu2, home2;
	struct pages pg2;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char *small = malloc(200); /* the thread's first allocation: it is placed here */
	char *big = malloc(THREAD_BUF);
	w->cpu = sched_getcpu();
	w->home = numa_page_home_node();
	sched_getaffinity(0, sizeof w->aff, &w->aff);
	int node = w->cpu >= 0 ? vm_topo.cpu_node[w->cpu] : -1;
	pages_check(&w->pg, small, 200, node);
	pages_check(&w->pg, big, THREAD_BUF, node);
	if (w->move) {
		/* A CPU whose node gets memory from nodes this one never uses. */
		w->to_cpu = -1;
		for (int c = 0; c < vm_topo.ncpus && w->to_cpu < 0; c++) {
			int m = vm_topo.cpu_node[c];
			bool overlap = m < 0;
			for (int k = 0; m >= 0 && k <= vm_topo.max_node; k++)
				overlap |= vm_node_ok(node, k) && vm_node_ok(m, k);
			if (!overlap)
				w->to_cpu = c;
		}
		if (w->to_cpu >= 0 && vm_move_to_cpu(w->to_cpu) == 0) {
			char *after = malloc(THREAD_BUF);
			w->cpu2 = sched_getcpu();
			w->home2 = numa_page_home_node();
			pages_check(&w->pg2, after, THREAD_BUF, vm_topo.cpu_node[w->to_cpu]);
			free(after);
		} else {
			w->cpu2 = -1;
		}
	}
	sem_post(&w->ready);
	sem_wait(&w->go);
	free(big);
	free(small);
	return NULL;
}

static struct worker workers[MAX_WORKERS];

/* Starts worker i and waits for its report. */
static bool worker_start(int i, int pin, bool move)
{
	struct worker *w = &workers[i];
	memset(w, 0, sizeof *w);
	w->pin = pin;
	w->move = move;
	sem_init(&w->ready, 0, 0);
	sem_init(&w->go, 0, 0);
	pthread_attr_t a;
	pthread_attr_init(&a);
	if (pin >= 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(pin, &one);
		pthread_attr_setaffinity_np(&a, sizeof one, &one);
	}
	int e = pthread_create(&w->t, &a, worker_main, w);
	pthread_attr_destroy(&a);
	if (e) {
		vm_fail("pthread_create: %s", strerror(e));
		return false;
	}
	sem_wait(&w->ready);
	return true;
}

static void worker_stop(int i)
{
	sem_post(&workers[i].go);
	pthread_join(workers[i].t, NULL);
	sem_destroy(&workers[i].ready);
	sem_destroy(&workers[i].go);
}

static int worker_node(int i)
{
	int c = workers[i].cpu;
	return c >= 0 && c < VM_MAX_CPUS ? vm_topo.cpu_node[c] : -1;
}

/* The facts every placed thread must show: affinity = its node's CPUs, home node = that node,
 * memory local. False with the first that does not hold in why. */
static bool placed_facts(int i, char *why, size_t len)
{
	struct worker *w = &workers[i];
	int node = worker_node(i);
	cpu_set_t want;
	char a[128], b[128], exp[64];
	if (node < 0) {
		snprintf(why, len, "thread %d: sched_getcpu %d", i, w->cpu);
		return false;
	}
	node_cpus(node, &want);
	if (!CPU_EQUAL(&want, &w->aff)) {
		snprintf(why, len, "thread %d runs on cpu %d (node %d) with affinity %s, not node "
			 "%d's CPUs %s", i, w->cpu, node, set_str(&w->aff, a, sizeof a), node,
			 set_str(&want, b, sizeof b));
		return false;
	}
	if (w->home != node) {
		snprintf(why, len, "thread %d on node %d: numa_page_home_node %d", i, node, w->home);
		return false;
	}
	if (!pages_clean(&w->pg)) {
		snprintf(why, len, "thread %d on node %d: its malloc'ed pages (expected on %s): %s", i,
			 node, vm_expect_str(node, exp, sizeof exp), w->pg.first);
		return false;
	}
	return true;
}

/* ---- Counting threads per node --------------------------------------------------------- */

/* Live threads per node as the library should count them: the main thread on its home node
 * plus every live worker on the node of its CPU. */
static int count[VM_MAX_NODES];

static const char *counts_str(char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = 0;
	for (int n = 0; n <= vm_topo.max_node && o < len; n++)
		if (node_has_cpus(n))
			o += (size_t)snprintf(buf + o, len - o, "%s%d", o ? "," : "", count[n]);
	return buf;
}

static int min_count(void)
{
	int m = -1;
	for (int n = 0; n <= vm_topo.max_node; n++)
		if (node_has_cpus(n) && (m < 0 || count[n] < m))
			m = count[n];
	return m;
}

static int max_count(void)
{
	int m = 0;
	for (int n = 0; n <= vm_topo.max_node; n++)
		if (node_has_cpus(n) && count[n] > m)
			m = count[n];
	return m;
}

/* The library's `threads` gauge of every node against count[]. */
static void check_gauge(const char *what)
{
	char why[256] = "";
	size_t o = 0;
	for (int n = 0; n <= vm_topo.max_node; n++) {
		struct numa_page_node_stats s;
		if (!vm_topo.online[n] || numa_page_stats_get(n, &s) != 0)
			continue;
		if ((long long)s.threads != count[n] && o < sizeof why)
			o += (size_t)snprintf(why + o, sizeof why - o, " node %d: %llu, live %d;", n,
					      (unsigned long long)s.threads, count[n]);
	}
	if (o)
		vm_fail("%s: the threads gauge differs from the live threads:%s", what, why);
	else
		vm_ok("%s: the threads gauge of every node is its live threads", what);
}

/* The main thread: placed at start-up by the policy in force. Counts it; returns its node. */
static int main_thread_placed(const char *policy)
{
	cpu_set_t aff, want;
	char a[128], b[128];
	void *volatile p = malloc(1); /* start-up has allocated already; make sure */
	free(p);
	int home = numa_page_home_node();
	int cpu = sched_getcpu();
	sched_getaffinity(0, sizeof aff, &aff);
	memset(count, 0, sizeof count);
	if (home < 0 || home > vm_topo.max_node) {
		vm_fail("%s: main thread: numa_page_home_node %d", policy, home);
		return -1;
	}
	count[home]++;
	node_cpus(home, &want);
	if (CPU_EQUAL(&aff, &want) && vm_topo.cpu_node[cpu] == home)
		vm_ok("%s: the main thread was placed at start-up on node %d (cpu %d, affinity %s)",
		      policy, home, cpu, set_str(&aff, a, sizeof a));
	else
		vm_fail("%s: main thread: home node %d, cpu %d, affinity %s (expected node %d's CPUs "
			"%s)", policy, home, cpu, set_str(&aff, a, sizeof a), home,
			set_str(&want, b, sizeof b));
	return home;
}

/* ---- Rounds of threads started one at a time ------------------------------------------ */

/* The node the policy must choose now (-1: any node with the fewest live threads). spread:
 * always one of the least loaded. fill: the first node (by id) with fewer live threads than
 * CPUs; when every CPU is taken, the least loaded. */
static int expected_node(int policy)
{
	if (policy == NUMA_PAGE_PLACE_FILL)
		for (int n = 0; n <= vm_topo.max_node; n++)
			if (node_has_cpus(n) && count[n] < vm_topo.ncpus_of[n])
				return n;
	return -1;
}

/* Starts workers [from, to) one at a time and checks each: on the node the policy must choose
 * given the live threads when it started, with the placed facts. One result line for the
 * round (the first problem of each kind and how many threads had it), then the gauge. */
static void round_run(const char *what, int policy, int from, int to)
{
	char nodes[256], c[64], choice[300] = "", facts[300] = "";
	int bad_choice = 0, bad_facts = 0;
	size_t o = 0;
	nodes[0] = 0;
	for (int i = from; i < to; i++) {
		int want = expected_node(policy), least = min_count();
		counts_str(c, sizeof c);
		if (!worker_start(i, -1, false))
			return;
		int node = worker_node(i);
		char why[300];
		if (!placed_facts(i, why, sizeof why) && !bad_facts++)
			snprintf(facts, sizeof facts, "%s", why);
		if (node < 0)
			continue;
		if (want >= 0 ? node != want : count[node] != least) {
			if (!bad_choice++)
				snprintf(choice, sizeof choice, "thread %d went to node %d (%d live "
					 "threads there) where %s; live threads per node were %s", i,
					 node, count[node], want >= 0 ? "fill must take the first node "
					 "with a free CPU" : "spread must take a least loaded node", c);
		}
		count[node]++;
		o += (size_t)snprintf(nodes + o, sizeof nodes - o, "%s%d", i > from ? "," : "", node);
	}
	counts_str(c, sizeof c);
	if (bad_choice)
		vm_fail("%s: threads on nodes %s, per node (main included) %s: %d of %d on a wrong "
			"node; first: %s", what, nodes, c, bad_choice, to - from, choice);
	if (bad_facts)
		vm_fail("%s: %d of %d threads: %s", what, bad_facts, to - from, facts);
	if (policy == NUMA_PAGE_PLACE_SPREAD && max_count() - min_count() > 1)
		vm_fail("%s: live threads per node (main included) %s differ by more than 1", what, c);
	if (!bad_choice && !bad_facts && (policy != NUMA_PAGE_PLACE_SPREAD ||
					  max_count() - min_count() <= 1))
		vm_ok("%s: threads on nodes %s, live threads per node (main included) %s%s; each on "
		      "its node's CPUs, home node set, its malloc'ed pages local", what, nodes, c,
		      policy == NUMA_PAGE_PLACE_SPREAD ? ", balanced" : ", filled by node id");
	check_gauge(what);
}

/* ---- NUMAPAGE_PLACE=spread ------------------------------------------------------------- */

static void check_spread(void)
{
	char what[128];
	int ncn = cpu_nodes();
	if (main_thread_placed("spread") < 0)
		return;

	/* One thread per node with CPUs. */
	snprintf(what, sizeof what, "spread, %d threads", ncn);
	round_run(what, NUMA_PAGE_PLACE_SPREAD, 0, ncn);

	/* The threads of the lower half of the nodes exit: as many new ones must go there. */
	int half = -1, seen = 0, gone = 0;
	for (int n = 0; n <= vm_topo.max_node; n++)
		if (node_has_cpus(n) && ++seen == (ncn + 1) / 2)
			half = n;
	int live[MAX_WORKERS], nlive = 0;
	for (int i = 0; i < ncn; i++) {
		int node = worker_node(i);
		if (node >= 0 && node <= half) {
			worker_stop(i);
			count[node]--;
			gone++;
		} else {
			live[nlive++] = i;
		}
	}
	/* The survivors keep their slots; the new threads take the slots after round 1's. */
	snprintf(what, sizeof what, "spread, %d new after the %d threads on nodes 0-%d exited",
		 gone, gone, half);
	if (gone)
		round_run(what, NUMA_PAGE_PLACE_SPREAD, ncn, ncn + gone);
	else
		vm_note("spread: no thread of the first round ran on nodes 0-%d: exits not checked",
			half);
	for (int k = 0; k < nlive; k++)
		worker_stop(live[k]);
	for (int i = ncn; i < ncn + gone; i++)
		worker_stop(i);
	memset(count, 0, sizeof count);
	count[numa_page_home_node()] = 1;

	/* Everything exited: 2N new threads spread again. */
	snprintf(what, sizeof what, "spread, %d threads after all exited", 2 * ncn);
	round_run(what, NUMA_PAGE_PLACE_SPREAD, 0, 2 * ncn);
	for (int i = 0; i < 2 * ncn; i++)
		worker_stop(i);
}

/* ---- NUMAPAGE_PLACE=fill --------------------------------------------------------------- */

static void check_fill(void)
{
	char what[64];
	int main_node = main_thread_placed("fill");
	if (main_node < 0)
		return;
	int first = -1;
	for (int n = 0; n <= vm_topo.max_node && first < 0; n++)
		if (node_has_cpus(n))
			first = n;
	if (main_node != first)
		vm_fail("fill: the main thread went to node %d, the first node with CPUs is %d",
			main_node, first);
	/* As many threads as CPUs: every CPU taken (main included), then one more. */
	int nw = vm_topo.ncpus < MAX_WORKERS ? vm_topo.ncpus : MAX_WORKERS;
	snprintf(what, sizeof what, "fill, %d threads", nw);
	round_run(what, NUMA_PAGE_PLACE_FILL, 0, nw);
	for (int i = 0; i < nw; i++)
		worker_stop(i);
}

/* ---- Respected affinity ---------------------------------------------------------------- */

/* A thread created while placement was off, inheriting the main thread's placed mask: a thread
 * it creates once placement is on again is placed (the mask is placement's, not the program's;
 * taken for the program's, every later thread stayed on the main thread's node: a review). */
static sem_t middle_go;

static void *middle_main(void *arg)
{
	(void)arg;
	sem_wait(&middle_go);
	free(malloc(100));
	if (worker_start(1, -1, false))
		worker_stop(1);
	return NULL;
}

static void check_grandchild(int main_node)
{
	if (cpu_nodes() < 2) {
		vm_note("spread: one node with CPUs, no grandchild to place elsewhere");
		return;
	}
	pthread_t middle;
	sem_init(&middle_go, 0, 0);
	numa_page_thread_place(NUMA_PAGE_PLACE_NONE);
	if (pthread_create(&middle, NULL, middle_main, NULL) != 0) {
		vm_fail("pthread_create: %s", strerror(errno));
		return;
	}
	numa_page_thread_place(NUMA_PAGE_PLACE_SPREAD);
	sem_post(&middle_go);
	pthread_join(middle, NULL);
	sem_destroy(&middle_go);
	char why[300] = "";
	int node = worker_node(1);
	if (placed_facts(1, why, sizeof why) && node != main_node)
		vm_ok("spread places the thread created by an unplaced thread with the main thread's "
		      "placed mask: node %d (the main thread's: %d)", node, main_node);
	else
		vm_fail("spread, a thread created by an unplaced thread that inherited the main thread's "
			"mask (node %d): on node %d; %s", main_node, node, why[0] ? why : "left on that node");
}

static void check_respect(void)
{
	char a[128], exp[64];
	int main_node = main_thread_placed("spread");
	if (main_node < 0)
		return;
	/* Pinned by the program to the last CPU of the main thread's node: spread would put a
	 * new thread anywhere else (that node already has the main thread). */
	int pin = -1;
	for (int c = 0; c < vm_topo.ncpus; c++)
		if (vm_topo.cpu_node[c] == main_node)
			pin = c;
	if (!worker_start(0, pin, false))
		return;
	struct worker *w = &workers[0];
	int node = vm_topo.cpu_node[pin];
	if (w->cpu == pin && CPU_COUNT(&w->aff) == 1 && CPU_ISSET(pin, &w->aff) && w->home == node &&
	    pages_clean(&w->pg))
		vm_ok("spread respects a thread created bound to cpu %d: it stays there (node %d), "
		      "home node %d, its pages local", pin, node, w->home);
	else
		vm_fail("spread and a thread created bound to cpu %d (node %d): ran on cpu %d with "
			"affinity %s, home node %d, pages (expected on %s): %s", pin, node, w->cpu,
			set_str(&w->aff, a, sizeof a), w->home, vm_expect_str(node, exp, sizeof exp),
			w->pg.first[0] ? w->pg.first : "fine");
	worker_stop(0);

	/* A placed thread that moves itself afterwards: the home node follows its new CPU. */
	if (!worker_start(0, -1, true))
		return;
	char why[300];
	if (!placed_facts(0, why, sizeof why))
		vm_fail("spread, a thread that then moves itself: %s", why);
	if (w->to_cpu < 0) {
		vm_note("spread: no node with other memory to move a thread to (one memory node)");
	} else {
		int to = vm_topo.cpu_node[w->to_cpu];
		if (w->cpu2 == w->to_cpu && w->home2 == to && pages_clean(&w->pg2))
			vm_ok("spread: a placed thread (node %d) that sets its affinity to cpu %d is "
			      "respected: it runs there, home node %d, new pages on %s", worker_node(0),
			      w->to_cpu, w->home2, vm_expect_str(to, exp, sizeof exp));
		else
			vm_fail("spread: a placed thread (node %d) moved itself to cpu %d (node %d): "
				"runs on cpu %d, home node %d, new pages: %s", worker_node(0),
				w->to_cpu, to, w->cpu2, w->home2,
				w->pg2.first[0] ? w->pg2.first : "fine");
	}
	worker_stop(0);
	check_grandchild(main_node);
}

/* ---- Interleave ------------------------------------------------------------------------ */

struct snap {
	uint64_t ilv[VM_MAX_NODES];
	uint64_t in_use[VM_MAX_NODES]; /* pages_in_use */
};

static void snapshot(struct snap *s)
{
	memset(s, 0, sizeof *s);
	for (int n = 0; n <= vm_topo.max_node; n++) {
		struct numa_page_node_stats st;
		if (vm_topo.online[n] && numa_page_stats_get(n, &st) == 0) {
			s->ilv[n] = st.interleave_hit;
			s->in_use[n] = st.pages_in_use;
		}
	}
}

/* Every page of [p, p + len): consecutive pages on consecutive memory nodes (by id, cyclic: the
 * kernel's MPOL_INTERLEAVE for anonymous memory), on the node numa_page_node_of names; and
 * interleave_hit grew by the pages seen on each node. The absolute phase is not asserted: the
 * kernel takes the page number modulo the node count, and 6.1 truncates the page number to
 * 32 bits first (mm/mempolicy.c offset_il_node) while later kernels do not; with 3 memory nodes
 * the two differ. The note says which one this kernel used. */
static bool interleave_check(const char *what, void *p, size_t len, const struct snap *before)
{
	static int st[VM_WHERE_MAX];
	int mem[VM_MAX_NODES], idx[VM_MAX_NODES], on[VM_MAX_NODES] = {0};
	int nmem = vm_mem_nodes(mem);
	char got[256], why[512] = "";
	size_t o = 0;
	if (!p) {
		vm_fail("%s: NULL (errno %d)", what, errno);
		return false;
	}
	for (int n = 0; n < VM_MAX_NODES; n++)
		idx[n] = -1;
	for (int k = 0; k < nmem; k++)
		idx[mem[k]] = k;
	vm_touch(p, len);
	int n = vm_where(p, len, st, VM_WHERE_MAX);
	if (n < 0) {
		vm_fail("%s: move_pages: errno %d", what, -n);
		return false;
	}
	int wrong = 0, disagree = 0, rule64 = 0, rule32 = 0;
	uintptr_t first = (uintptr_t)p & ~(uintptr_t)(vm_page - 1);
	for (int i = 0; i < n; i++) {
		uintptr_t a = first + (uintptr_t)i * vm_page;
		int claimed = numa_page_node_of(i ? (const void *)a : p);
		int k = st[i] >= 0 && st[i] < VM_MAX_NODES ? idx[st[i]] : -1;
		if (k >= 0)
			on[st[i]]++;
		rule64 += k == (int)((a / vm_page) % (uintptr_t)nmem);
		rule32 += k == (int)((uint32_t)(a / vm_page) % (uint32_t)nmem);
		int prev = i ? (st[i - 1] >= 0 && st[i - 1] < VM_MAX_NODES ? idx[st[i - 1]] : -1) : -1;
		if ((k < 0 || (i && (prev < 0 || (prev + 1) % nmem != k))) && wrong++ == 0 &&
		    o < sizeof why)
			o += (size_t)snprintf(why + o, sizeof why - o,
					      " page %d (%#lx) on node %d after a page on node %d;", i,
					      (unsigned long)a, st[i], i ? st[i - 1] : -1);
		if (claimed != st[i] && disagree++ == 0 && o < sizeof why)
			o += (size_t)snprintf(why + o, sizeof why - o,
					      " page %d (%#lx): numa_page_node_of %d, move_pages %d;", i,
					      (unsigned long)a, claimed, st[i]);
	}
	struct snap after;
	snapshot(&after);
	size_t g = 0;
	got[0] = 0;
	bool stats_ok = true;
	for (int k = 0; k < nmem; k++) {
		long long d = (long long)(after.ilv[mem[k]] - before->ilv[mem[k]]);
		g += (size_t)snprintf(got + g, sizeof got - g, "%s%d on node %d", k ? ", " : "",
				      on[mem[k]], mem[k]);
		if (d != on[mem[k]]) {
			stats_ok = false;
			if (o < sizeof why)
				o += (size_t)snprintf(why + o, sizeof why - o,
						      " node %d: interleave_hit +%lld, move_pages %d;",
						      mem[k], d, on[mem[k]]);
		}
	}
	vm_note("%s: the kernel's phase: %s", what,
		rule64 == n && rule32 == n ? "page number mod nodes (both rules agree here)"
		: rule32 == n		   ? "32-bit page number mod nodes (not the 64-bit one)"
		: rule64 == n		   ? "64-bit page number mod nodes (not the 32-bit one)"
					   : "neither page-number rule");
	if (wrong || disagree || !stats_ok) {
		vm_fail("%s: %d pages (%s): %d break the round-robin, %d where numa_page_node_of "
			"disagrees:%s", what, n, got, wrong, disagree, why);
		return false;
	}
	vm_ok("%s: %d pages round-robin over the %d memory nodes (%s), page by page as "
	      "numa_page_node_of says; interleave_hit per node matches", what, n, nmem, got);
	return true;
}

/* After freeing an interleaved region: pages_in_use of every node back where it was. */
static void check_freed(const char *what, const struct snap *before)
{
	struct snap after;
	char why[256] = "";
	size_t o = 0;
	snapshot(&after);
	for (int n = 0; n <= vm_topo.max_node; n++)
		if (after.in_use[n] != before->in_use[n] && o < sizeof why)
			o += (size_t)snprintf(why + o, sizeof why - o, " node %d: %llu before, %llu "
					      "after;", n, (unsigned long long)before->in_use[n],
					      (unsigned long long)after.in_use[n]);
	if (o)
		vm_fail("%s freed: pages_in_use not back:%s", what, why);
	else
		vm_ok("%s freed: pages_in_use of every node back to its value", what);
}

static void check_interleave_api(void)
{
	static const size_t sizes[] = {ILV_BYTES, 3 * 4096 * 7 + 123};
	for (int i = 0; i < 2; i++) {
		/* The second: an odd number of pages, so the per-node shares differ by one. */
		struct snap before;
		char what[96];
		snprintf(what, sizeof what, "numa_page_alloc_interleaved(%zu)", sizes[i]);
		snapshot(&before);
		void *p = numa_page_alloc_interleaved(sizes[i]);
		interleave_check(what, p, sizes[i], &before);
		numa_page_free(p);
		check_freed(what, &before);
	}
}

static void *malloc_something(void *arg)
{
	(void)arg;
	void *volatile p = malloc(100); /* volatile: the compiler may drop a malloc-free pair */
	free(p);
	return NULL;
}

/* Not interleaved: every page on one node, numa_page_node_of agreeing, no interleave_hit. */
static void not_interleaved(const char *what, size_t len)
{
	struct snap before, after;
	struct pages r = {0};
	snapshot(&before);
	void *p = malloc(len);
	int home = numa_page_home_node();
	pages_check(&r, p, len, home);
	snapshot(&after);
	int nodes = 0;
	long long hits = 0;
	for (int n = 0; n <= vm_topo.max_node; n++) {
		nodes += r.on[n] > 0;
		hits += (long long)(after.ilv[n] - before.ilv[n]);
	}
	if (!r.err && !r.disagree && nodes == 1 && hits == 0)
		vm_ok("%s: malloc(%zu) not interleaved: %d pages on one node, no interleave_hit",
		      what, len, r.n);
	else
		vm_fail("%s: malloc(%zu): %d pages on %d nodes, interleave_hit +%lld: %s", what, len,
			r.n, nodes, hits, r.first);
	free(p);
}

static void check_interleave_above(void)
{
	struct snap before;
	/* The main thread, before any other thread: interleaved. */
	snapshot(&before);
	void *p = malloc(ILV_BYTES);
	interleave_check("NUMAPAGE_INTERLEAVE_ABOVE=1M, main thread's malloc(8 MiB) before any "
			 "thread", p, ILV_BYTES, &before);
	not_interleaved("NUMAPAGE_INTERLEAVE_ABOVE=1M, below the threshold", 512 * 1024);
	pthread_t t;
	pthread_create(&t, NULL, malloc_something, NULL);
	pthread_join(t, NULL);
	not_interleaved("NUMAPAGE_INTERLEAVE_ABOVE=1M, after a thread used the allocator",
			ILV_BYTES);
	free(p);
}

/* ---- bench/stream under numapage run --------------------------------------------------- */

/* Runs numapage run --place place -- stream ...; returns its output line ("" if none) and
 * fills per_node[] from threads_per_node=. */
static int run_stream(const char *place, int threads, char *line, size_t len, int *per_node)
{
	char exe[512], stream[600], nthreads[16];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[k > 0 ? k : 0] = 0;
	char *slash = strrchr(exe, '/');
	snprintf(stream, sizeof stream, "%.*s/stream", slash ? (int)(slash - exe) : 1,
		 slash ? exe : ".");
	snprintf(nthreads, sizeof nthreads, "%d", threads);
	int fd[2];
	if (pipe(fd) != 0)
		return -errno;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execlp("numapage", "numapage", "run", "--place", place, "--", stream, "--threads",
		       nthreads, "--mb", "4", "--iters", "4", (char *)NULL);
		fprintf(stderr, "vm_threads: cannot run numapage: %s\n", strerror(errno));
		_exit(127);
	}
	close(fd[1]);
	FILE *f = fdopen(fd[0], "r");
	line[0] = 0;
	char buf[512];
	while (f && fgets(buf, sizeof buf, f))
		if (!strncmp(buf, "stream ", 7)) {
			snprintf(line, len, "%s", buf);
			line[strcspn(line, "\n")] = 0;
		}
	if (f)
		fclose(f);
	int status;
	waitpid(pid, &status, 0);
	memset(per_node, 0, sizeof(int) * VM_MAX_NODES);
	const char *t = strstr(line, "threads_per_node=");
	for (int n = 0; t && n < VM_MAX_NODES; n++) {
		char *end;
		t += n ? 1 : strlen("threads_per_node=");
		per_node[n] = (int)strtol(t, &end, 10);
		t = *end == ',' ? end : NULL;
	}
	return status;
}

static void check_stream(void)
{
	/* Main included, as many threads as CPUs: spread gives each node exactly its share. */
	int threads = vm_topo.ncpus - 1 > 0 ? vm_topo.ncpus - 1 : 1;
	const char *places[] = {"none", "spread"};
	for (int k = 0; k < 2; k++) {
		char line[512];
		int per[VM_MAX_NODES];
		int st = run_stream(places[k], threads, line, sizeof line, per);
		if (st != 0 || !line[0]) {
			vm_fail("stream --threads %d under numapage run --place %s: exit status %#x, "
				"output '%s'", threads, places[k], st, line);
			continue;
		}
		vm_note("place=%-6s %s", places[k], line);
		if (strcmp(places[k], "spread"))
			continue;
		int lo = -1, hi = 0, sum = 0;
		for (int n = 0; n <= vm_topo.max_node; n++) {
			if (!node_has_cpus(n))
				continue;
			lo = lo < 0 || per[n] < lo ? per[n] : lo;
			hi = per[n] > hi ? per[n] : hi;
			sum += per[n];
		}
		if (sum == threads && hi - lo <= 1)
			vm_ok("stream under numapage run --place spread: %d threads balanced over the "
			      "nodes with CPUs (%d to %d per node, the main thread takes one place)",
			      threads, lo, hi);
		else
			vm_fail("stream under numapage run --place spread: threads per node from %d "
				"to %d (%d of %d threads counted): not spread", lo, hi, sum, threads);
	}
}

/* ---- The driver ------------------------------------------------------------------------ */

struct mode {
	const char *name, *env;
	void (*fn)(void);
};

static const struct mode modes[] = {
	{"spread", "NUMAPAGE_PLACE=spread", check_spread},
	{"fill", "NUMAPAGE_PLACE=fill", check_fill},
	{"respect", "NUMAPAGE_PLACE=spread", check_respect},
	{"interleave", NULL, check_interleave_api},
	{"above", "NUMAPAGE_INTERLEAVE_ABOVE=1M", check_interleave_above},
	{"stream", NULL, check_stream}, /* not run by the driver: guest.sh asks for it */
};
#define NMODES (sizeof modes / sizeof modes[0])

/* Runs one mode in a child exec'd with its environment. False when it failed. */
static bool run_mode(const struct mode *m)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		unsetenv("NUMAPAGE_PLACE");
		unsetenv("NUMAPAGE_INTERLEAVE_ABOVE");
		if (m->env)
			putenv((char *)m->env);
		execl("/proc/self/exe", "vm_threads", m->name, (char *)NULL);
		printf("not ok - %s: cannot exec /proc/self/exe: %s\n", m->name, strerror(errno));
		_exit(2);
	}
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		vm_fail("%s: fork/wait: %s", m->name, strerror(errno));
		return false;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) <= 1)
		return WEXITSTATUS(status) == 0;
	vm_fail("%s (%s): %s %d", m->name, m->env ? m->env : "no environment",
		WIFSIGNALED(status) ? "killed by signal" : "exit status",
		WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	return false;
}

int main(int argc, char **argv)
{
	vm_topo_load();
	if (argc > 1) {
		for (size_t i = 0; i < NMODES; i++)
			if (!strcmp(argv[1], modes[i].name)) {
				modes[i].fn();
				return vm_exit_status();
			}
		fprintf(stderr, "usage: vm_threads [spread|fill|respect|interleave|above|stream]\n");
		return 2;
	}
	if (cpu_nodes() > MAX_WORKERS / 2) {
		vm_fail("%d nodes with CPUs: more than this program's %d threads", cpu_nodes(),
			MAX_WORKERS);
		return 1;
	}
	bool ok = true;
	for (size_t i = 0; i < NMODES; i++)
		if (strcmp(modes[i].name, "stream"))
			ok &= run_mode(&modes[i]);
	return ok ? vm_exit_status() : 1;
}
