/*
 * vm_conditions.c — placement under real operating conditions (issue 14), one check group per
 * behaviour, judged with move_pages(2) and /sys (vm_common.c), never with the library's table:
 *
 *   migrate     a thread moved from node A to node B gets B's memory: small blocks after at
 *               most one slab's worth (plus a page) per class of a thread that keeps freeing
 *               (so its current slab of A never runs out), 32 MiB / 1 MiB / 64 KiB blocks at
 *               once; the same for a forked child that moves (that one allocates its small
 *               blocks first, the thread its large ones first, so both orders are covered);
 *   policy      the task's memory policy (numactl --preferred, --preferred-many,
 *               --interleave=all, --membind) is followed, an explicit NUMAPAGE_BIND overrides
 *               it, NUMAPAGE_VERBOSE=1 and `numapage topology` name it;
 *   full        (a guest with a small node) a thread on the small node allocates past its free
 *               memory: numa_page_node_of agrees with move_pages on every page, the spill is
 *               counted (numa_miss / numa_foreign), and NUMAPAGE_BIND=strict is not OOM-killed;
 *               once it has freed everything and trimmed, its next 64 KiB and 4000-byte blocks
 *               are on its own node again (they came from the slabs made on the other node);
 *   memoryless  threads of memoryless nodes that share equidistant memory nodes get their pages
 *               from them in a balanced split (each within 1/k +- 10%), in 3 fresh processes;
 *   race        NUMAPAGE_PLACE=spread with threads started together: live threads per node
 *               within +-1, 20 rounds of 2n+1 and of 4n threads (n nodes with CPUs);
 *   counters    malloc_requested and malloc_in_use grow on the node that served the bytes (as
 *               move_pages finds them), never on a memoryless home node;
 *   hotplug     a CPU offline when the library starts, brought online and run on afterwards:
 *               its thread's home is that CPU's node and its memory is there;
 *   overcommit  under vm.overcommit_memory 2 (strict accounting, which ignores MAP_NORESERVE),
 *               a process with 3 MB of small and 100 KiB blocks is charged for the parts of its
 *               chunks in use (at most 8 MiB), not 16 MiB a chunk, and at most 12 MiB in all
 *               (the library's 8 MiB granule map is charged for the pages written), from
 *               /proc/self/smaps ("ac": VM_ACCOUNT).
 *
 * A group the topology cannot show prints "# skipped: ..." and nothing else. Options and the
 * task policy are read at start-up, so those groups run in children exec'd with their own
 * environment (or under numactl); the others run in threads pinned with pthread affinity. The
 * test's own bookkeeping lives in mmap'd scratch memory, outside the allocator it measures.
 * No check depends on timing: pinning, barriers and exit statuses only.
 *
 * Usage: vm_conditions [GROUP...] (default: every group); the child modes are internal.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "numapage.h"
#include "vm_common.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static char self_exe[PATH_MAX];
static int child_failed; /* a child printed its own "not ok" lines and exited 1 */
/* oom_score_adj of the next children (INT_MIN: inherited): a child that fills a node is made
 * the OOM killer's first choice, so that a kill lands on it and not on this process. */
static int child_oom_adj = INT_MIN;

static void set_oom_adj(int adj)
{
	char buf[16];
	int fd = open("/proc/self/oom_score_adj", O_WRONLY);
	if (fd >= 0) {
		int l = snprintf(buf, sizeof buf, "%d", adj);
		if (write(fd, buf, (size_t)l) != l)
			vm_note("oom_score_adj %d: %s", adj, strerror(errno));
		close(fd);
	}
}

/* ---- Scratch memory outside the allocator ----------------------------------------------- */

static void *scratch(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		vm_fail("mmap of %zu bytes of scratch memory: %s", bytes, strerror(errno));
		exit(1);
	}
	return p;
}

static void scratch_free(void *p, size_t bytes)
{
	munmap(p, bytes);
}

/* ---- Where addresses are ------------------------------------------------------------------ */

/* move_pages in query mode for the pages holding addrs[0..n): status[i]. 0 or -errno. */
static int where_list(void *const *addrs, long n, int *status)
{
	void *pages[VM_WHERE_MAX];
	for (long o = 0; o < n; o += VM_WHERE_MAX) {
		long k = n - o < VM_WHERE_MAX ? n - o : VM_WHERE_MAX;
		for (long i = 0; i < k; i++)
			pages[i] = (void *)((uintptr_t)addrs[o + i] & ~(uintptr_t)(vm_page - 1));
		if (move_pages(0, (unsigned long)k, pages, NULL, status + o, 0) != 0)
			return -errno;
	}
	return 0;
}

/* A list of addresses to judge: a block's first byte and every later page start in it. */
struct addrs {
	void **a;
	long n, cap;
	bool full;
};

static void addrs_init(struct addrs *s, long cap)
{
	s->a = scratch((size_t)cap * sizeof(void *));
	s->n = 0;
	s->cap = cap;
	s->full = false;
}

static void addrs_fini(struct addrs *s)
{
	scratch_free(s->a, (size_t)s->cap * sizeof(void *));
}

static void addrs_add(struct addrs *s, const void *p)
{
	if (s->n < s->cap)
		s->a[s->n++] = (void *)p;
	else
		s->full = true;
}

static void addrs_add_block(struct addrs *s, const void *p, size_t len)
{
	addrs_add(s, p);
	uintptr_t q = ((uintptr_t)p | (vm_page - 1)) + 1;
	for (; q < (uintptr_t)p + len; q += vm_page)
		addrs_add(s, (const void *)q);
}

/* What a list of addresses gives: distinct pages per node, and numa_page_node_of against
 * move_pages for every address. */
struct tally {
	long pages, absent;          /* distinct pages; of them not present (status < 0) */
	long on[VM_MAX_NODES];
	long checked, disagree;      /* addresses compared with numa_page_node_of */
	char first[200];             /* the first disagreement */
};

struct pagest {
	uintptr_t page;
	int st;
};

static int cmp_pagest(const void *a, const void *b)
{
	uintptr_t x = ((const struct pagest *)a)->page, y = ((const struct pagest *)b)->page;
	return x < y ? -1 : x > y;
}

static void tally(const struct addrs *s, struct tally *t)
{
	memset(t, 0, sizeof *t);
	if (s->full)
		vm_note("(an address list was full at %ld: the rest is not judged)", s->cap);
	if (!s->n)
		return;
	int *st = scratch((size_t)s->n * sizeof(int));
	int e = where_list(s->a, s->n, st);
	if (e) {
		t->pages = t->absent = s->n;
		snprintf(t->first, sizeof t->first, "move_pages: errno %d", -e);
		scratch_free(st, (size_t)s->n * sizeof(int));
		return;
	}
	struct pagest *ps = scratch((size_t)s->n * sizeof *ps);
	for (long i = 0; i < s->n; i++) {
		int claimed = numa_page_node_of(s->a[i]);
		t->checked++;
		if (st[i] >= 0 && claimed != st[i] && t->disagree++ == 0)
			snprintf(t->first, sizeof t->first, "%p: numa_page_node_of %d, move_pages %d",
				 s->a[i], claimed, st[i]);
		ps[i].page = (uintptr_t)s->a[i] & ~(uintptr_t)(vm_page - 1);
		ps[i].st = st[i];
	}
	qsort(ps, (size_t)s->n, sizeof *ps, cmp_pagest);
	for (long i = 0; i < s->n; i++) {
		if (i && ps[i].page == ps[i - 1].page)
			continue;
		t->pages++;
		if (ps[i].st < 0 || ps[i].st >= VM_MAX_NODES)
			t->absent++;
		else
			t->on[ps[i].st]++;
	}
	scratch_free(ps, (size_t)s->n * sizeof *ps);
	scratch_free(st, (size_t)s->n * sizeof(int));
}

static long present(const struct tally *t)
{
	return t->pages - t->absent;
}

static double share(const struct tally *t, int node)
{
	return present(t) > 0 ? (double)t->on[node] / (double)present(t) : 0;
}

/* "812 on 0, 3 on 2" */
static const char *per_node(const struct tally *t, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = 0;
	for (int n = 0; n < VM_MAX_NODES && o < len; n++)
		if (t->on[n])
			o += (size_t)snprintf(buf + o, len - o, "%s%ld on %d", o ? ", " : "", t->on[n],
					      n);
	if (t->absent && o < len)
		snprintf(buf + o, len - o, "%s%ld absent", o ? ", " : "", t->absent);
	return buf;
}

/* One result line for numa_page_node_of against move_pages. */
static void agree_line(const char *what, const struct tally *t)
{
	if (!t->disagree && t->checked)
		vm_ok("%s: numa_page_node_of agrees with move_pages on all %ld addresses", what,
		      t->checked);
	else
		vm_fail("%s: numa_page_node_of differs from move_pages on %ld of %ld addresses; "
			"first: %s", what, t->disagree, t->checked, t->first);
}

/* A block's pages (touched here) against node `want` (vm_node_ok) and numa_page_node_of.
 * One result line. */
static void block_line(const char *what, void *p, size_t len, int want)
{
	char buf[160], exp[64];
	struct addrs s;
	struct tally t;
	if (!p) {
		vm_fail("%s: malloc(%zu) returned NULL (errno %d)", what, len, errno);
		return;
	}
	vm_touch(p, len);
	addrs_init(&s, (long)(len / vm_page) + 2);
	addrs_add_block(&s, p, len);
	tally(&s, &t);
	addrs_fini(&s);
	long good = 0;
	for (int n = 0; n < VM_MAX_NODES; n++)
		good += vm_node_ok(want, n) ? t.on[n] : 0;
	if (good == t.pages && !t.disagree)
		vm_ok("%s: all %ld pages on node %s (%s), numa_page_node_of agrees", what, t.pages,
		      vm_expect_str(want, exp, sizeof exp), per_node(&t, buf, sizeof buf));
	else
		vm_fail("%s: %ld of %ld pages on node %s (%s)%s%s", what, good, t.pages,
			vm_expect_str(want, exp, sizeof exp), per_node(&t, buf, sizeof buf),
			t.disagree ? "; numa_page_node_of: " : "", t.disagree ? t.first : "");
}

/* ---- Statistics ----------------------------------------------------------------------------- */

struct snap {
	struct numa_page_node_stats s[VM_MAX_NODES];
};

static void snapshot(struct snap *s)
{
	memset(s, 0, sizeof *s);
	for (int n = 0; n <= vm_topo.max_node; n++)
		if (vm_topo.online[n])
			numa_page_stats_get(n, &s->s[n]);
}

#define DELTA(a, b, n, field) ((long long)((b)->s[n].field - (a)->s[n].field))

/* ---- /sys facts the checks need beyond vm_common ------------------------------------------ */

/* A field of /sys/devices/system/node/nodeN/meminfo in kB ("MemFree"), or -1. */
static long node_meminfo_kb(int node, const char *field)
{
	char path[96], line[256];
	snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", node);
	FILE *f = fopen(path, "r");
	long v = -1;
	size_t fl = strlen(field);
	while (f && fgets(line, sizeof line, f)) {
		char *p = strstr(line, field);
		if (p && p[fl] == ':') {
			v = strtol(p + fl + 1, NULL, 10);
			break;
		}
	}
	if (f)
		fclose(f);
	return v;
}

static bool node_has_cpus(int n)
{
	return n >= 0 && n <= vm_topo.max_node && vm_topo.online[n] && vm_topo.ncpus_of[n] > 0;
}

static int cpu_node_count(void)
{
	int k = 0;
	for (int n = 0; n <= vm_topo.max_node; n++)
		k += node_has_cpus(n);
	return k;
}

/* The memory nodes nearest to a memoryless node, as a bit mask (vm_node_ok). */
static uint64_t nearest_mask(int node)
{
	uint64_t m = 0;
	for (int k = 0; k <= vm_topo.max_node && k < 64; k++)
		if (vm_node_ok(node, k))
			m |= 1ULL << k;
	return m;
}

static void pin_self(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof set, &set);
}

/* ---- Children --------------------------------------------------------------------------- */

/* Runs argv (a path, or a name on PATH) with every NUMAPAGE_* variable removed and env[] (NULL
 * terminated, may be NULL) added, pinned to cpu when cpu >= 0. capture: 0 inherits stdout and
 * stderr, 1 reads the child's stdout into buf, 2 its stderr, 3 both. Returns the wait status,
 * or -1 when no child could be made. */
static int spawn(char *const argv[], const char *const env[], int cpu, int capture, char *buf,
		 size_t buflen)
{
	int fd[2] = {-1, -1};
	if (capture && pipe(fd) != 0)
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		extern char **environ;
		char *names[128];
		int k = 0;
		for (char **e = environ; *e && k < 128; e++)
			if (!strncmp(*e, "NUMAPAGE_", 9)) {
				size_t l = strcspn(*e, "=");
				names[k] = strndup(*e, l);
				if (names[k])
					k++;
			}
		for (int i = 0; i < k; i++)
			unsetenv(names[i]);
		for (int i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		if (cpu >= 0)
			pin_self(cpu);
		if (child_oom_adj != INT_MIN)
			set_oom_adj(child_oom_adj);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		if (capture) {
			if (capture & 1)
				dup2(fd[1], 1);
			if (capture & 2)
				dup2(fd[1], 2);
			close(fd[0]);
			close(fd[1]);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "vm_conditions: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	size_t len = 0;
	if (capture) {
		close(fd[1]);
		for (;;) {
			char tmp[4096];
			ssize_t r = read(fd[0], tmp, sizeof tmp);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			size_t take = (size_t)r < buflen - 1 - len ? (size_t)r : buflen - 1 - len;
			memcpy(buf + len, tmp, take);
			len += take;
		}
		close(fd[0]);
		buf[len] = 0;
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

/* True when a child exited 0. A child that exited 1 printed its own "not ok" lines; anything
 * else (a signal: the OOM killer sends SIGKILL) is reported here with why. */
static bool child_done(const char *what, int status, const char *why_killed)
{
	if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 1) {
		child_failed = 1;
		return false;
	}
	if (status < 0)
		vm_fail("%s: no child process: %s", what, strerror(errno));
	else if (WIFSIGNALED(status))
		vm_fail("%s: killed by signal %d%s", what, WTERMSIG(status),
			WTERMSIG(status) == SIGKILL && why_killed ? why_killed : "");
	else
		vm_fail("%s: exit status %d", what, WEXITSTATUS(status));
	return false;
}

/* Runs this program in a child mode with env[] and cpu. */
static bool run_self(const char *what, const char *const env[], int cpu, const char *why_killed,
		     ...)
{
	char *argv[12] = {self_exe};
	int k = 1;
	va_list ap;
	va_start(ap, why_killed);
	for (char *a; k < 11 && (a = va_arg(ap, char *)) != NULL;)
		argv[k++] = a;
	va_end(ap);
	argv[k] = NULL;
	return child_done(what, spawn(argv, env, cpu, 0, NULL, 0), why_killed);
}

/* A line of text holding both words (any case), copied into line; false when none. */
static bool find_line(const char *text, const char *w1, const char *w2, char *line, size_t len)
{
	const char *p = text;
	while (*p) {
		size_t l = strcspn(p, "\n");
		char tmp[512];
		snprintf(tmp, sizeof tmp, "%.*s", (int)(l < sizeof tmp - 1 ? l : sizeof tmp - 1), p);
		if (strcasestr(tmp, w1) && strcasestr(tmp, w2)) {
			snprintf(line, len, "%s", tmp);
			return true;
		}
		p += l + (p[l] == '\n');
	}
	return false;
}

/* ---- migrate ---------------------------------------------------------------------------- */

/* The sizes of the small classes the issue names. */
static const size_t mig_sizes[] = {24, 100, 4096};
#define MIG_NCLS (sizeof mig_sizes / sizeof mig_sizes[0])
#define MIG_WINDOW 8 /* blocks a churning thread holds at once */

/* Bytes of the slab of a class whose blocks are `bsize` (malloc_usable_size): at least 128 KiB
 * and 8 blocks, a power of two (src/malloc/sizeclass.h, np_class_slab_bytes). */
static size_t slab_bytes_of(size_t bsize)
{
	size_t b = 128 * KiB;
	while (b < bsize * 8)
		b <<= 1;
	return b;
}

struct mig {
	int cpu_a, cpu_b, node_a, node_b;
	size_t bsize[MIG_NCLS]; /* block size of each class */
	void **warm[MIG_NCLS];  /* the warm-up blocks still held */
	long nwarm[MIG_NCLS];
};

/* Small blocks of one class after the move, as a thread that keeps allocating and freeing
 * uses them. First the allowance, one slab's worth plus a page of blocks, allocated while
 * only the last MIG_WINDOW are held (so a current slab of the old node never runs out: the
 * issue's "never retired"); they may still come from the old node. Then one more slab's
 * worth (at least 16), all held: every one of them must be on B. */
static void mig_small(const struct mig *m, const char *who, size_t c)
{
	size_t size = mig_sizes[c], bsize = m->bsize[c];
	long slab = (long)(slab_bytes_of(bsize) / bsize);
	long allow = slab + (long)((vm_page + bsize - 1) / bsize);
	long judge = slab > 16 ? slab : 16;
	void *win[MIG_WINDOW] = {0};
	void **blk = scratch((size_t)judge * sizeof(void *));
	int *st = scratch((size_t)judge * sizeof(int));
	char exp[64];
	long nulls = 0, allow_b = 0, first_b = -1, disagree = 0;
	for (long i = 0; i < allow; i++) {
		free(win[i % MIG_WINDOW]);
		void *p = win[i % MIG_WINDOW] = malloc(size);
		if (!p) {
			nulls++;
			continue;
		}
		memset(p, 0x5a, size);
		int nd = vm_where1(p);
		if (vm_node_ok(m->node_b, nd)) {
			allow_b++;
			if (first_b < 0)
				first_b = i;
		}
		disagree += numa_page_node_of(p) != nd;
	}
	for (long i = 0; i < judge; i++)
		if ((blk[i] = malloc(size)))
			memset(blk[i], 0x5a, size);
		else
			nulls++;
	if (nulls) {
		vm_fail("migrate, %s: malloc(%zu) returned NULL %ld times", who, size, nulls);
		goto out;
	}
	int e = where_list(blk, judge, st);
	if (e) {
		vm_fail("migrate, %s: move_pages: errno %d", who, -e);
		goto out;
	}
	long on_b = 0, last_old = -1;
	for (long i = 0; i < judge; i++) {
		if (vm_node_ok(m->node_b, st[i]))
			on_b++;
		else
			last_old = i;
		disagree += numa_page_node_of(blk[i]) != st[i];
	}
	vm_expect_str(m->node_b, exp, sizeof exp);
	if (on_b == judge)
		vm_ok("migrate, %s: malloc(%zu) (%zu-byte blocks, %ld per slab): after %ld "
		      "allocations (%ld of them on node %s, the first at %ld) all %ld later blocks "
		      "are on node %s", who, size, bsize, slab, allow, allow_b, exp, first_b, judge,
		      exp);
	else
		vm_fail("migrate, %s: malloc(%zu) (%zu-byte blocks, %ld per slab): after %ld "
			"allocations (%ld of them on node %s) %ld of the next %ld blocks are still "
			"off node %s (the last of them on node %d)", who, size, bsize, slab, allow,
			allow_b, exp, judge - on_b, judge, exp, st[last_old]);
	if (disagree)
		vm_fail("migrate, %s: malloc(%zu): numa_page_node_of differs from move_pages on %ld "
			"of %ld blocks", who, size, disagree, allow + judge);
out:
	for (int i = 0; i < MIG_WINDOW; i++)
		free(win[i]);
	for (long i = 0; i < judge; i++)
		free(blk[i]);
	scratch_free(blk, (size_t)judge * sizeof(void *));
	scratch_free(st, (size_t)judge * sizeof(int));
}

static void mig_large(const struct mig *m, const char *who)
{
	static const size_t sizes[] = {32 * MiB, 1 * MiB, 64 * KiB};
	void *p[3];
	char what[128];
	/* All three first, then judged: "right after the move" means before anything else, and
	 * the huge block first of all (the case); the 64 KiB run comes from the page
	 * cache, the 1 MiB run from the node's pool. */
	for (int i = 0; i < 3; i++)
		p[i] = malloc(sizes[i]);
	for (int i = 0; i < 3; i++) {
		snprintf(what, sizeof what, "migrate, %s: malloc(%zu KiB)", who, sizes[i] / KiB);
		block_line(what, p[i], sizes[i], m->node_b);
		free(p[i]);
	}
}

/* After moving to cpu_b: the checks, in the given order. */
static void mig_after(const struct mig *m, const char *who, bool small_first)
{
	int e = vm_move_to_cpu(m->cpu_b);
	if (e) {
		vm_fail("migrate, %s: cannot move to cpu %d: %s", who, m->cpu_b, strerror(-e));
		return;
	}
	if (!small_first)
		mig_large(m, who);
	for (size_t c = 0; c < MIG_NCLS; c++)
		mig_small(m, who, c);
	if (small_first)
		mig_large(m, who);
	int home = numa_page_home_node();
	if (home == m->node_b)
		vm_ok("migrate, %s: numa_page_home_node is %d after the move", who, home);
	else
		vm_fail("migrate, %s: numa_page_home_node is %d after the move to node %d", who, home,
			m->node_b);
}

/* On cpu_a: per class three slabs' worth and a few blocks, every other one freed again, so the
 * thread's ring holds part-free slabs of A and a part-used current one when it moves; a 1 MiB
 * run and a 32 MiB block. Then a forked child moves, then the thread itself. */
static void *mig_thread(void *arg)
{
	struct mig *m = arg;
	char what[128], buf[128];
	struct addrs s;
	struct tally t;
	long total = 0;
	for (size_t c = 0; c < MIG_NCLS; c++) {
		void *p = malloc(mig_sizes[c]);
		m->bsize[c] = p ? malloc_usable_size(p) : mig_sizes[c];
		free(p);
		m->nwarm[c] = 3 * (long)(slab_bytes_of(m->bsize[c]) / m->bsize[c]) + 5;
		m->warm[c] = scratch((size_t)m->nwarm[c] * sizeof(void *));
		for (long i = 0; i < m->nwarm[c]; i++)
			if ((m->warm[c][i] = malloc(mig_sizes[c])))
				memset(m->warm[c][i], 1, mig_sizes[c]);
		total += m->nwarm[c];
	}
	addrs_init(&s, total);
	for (size_t c = 0; c < MIG_NCLS; c++)
		for (long i = 0; i < m->nwarm[c]; i++)
			if (m->warm[c][i])
				addrs_add(&s, m->warm[c][i]);
	for (size_t c = 0; c < MIG_NCLS; c++)
		for (long i = 1; i < m->nwarm[c]; i += 2) {
			free(m->warm[c][i]);
			m->warm[c][i] = NULL;
		}
	void *run = malloc(1 * MiB), *huge = malloc(32 * MiB);
	/* Blocks realloc grows after the move: a run and a huge block, written on A. */
	void *grow[2] = {malloc(512 * KiB), malloc(8 * MiB)};
	static const size_t grown[2] = {3 * MiB, 16 * MiB};
	vm_touch(grow[0], 512 * KiB);
	vm_touch(grow[1], 8 * MiB);
	/* Before the move, on A: a precondition (the library's ordinary behaviour). */
	tally(&s, &t);
	addrs_fini(&s);
	long good = 0;
	for (int n = 0; n < VM_MAX_NODES; n++)
		good += vm_node_ok(m->node_a, n) ? t.on[n] : 0;
	if (good == t.pages && t.pages)
		vm_ok("migrate: before the move, on cpu %d (node %d): the warm-up blocks of 24, 100 "
		      "and 4096 bytes are there (pages: %s)", m->cpu_a, m->node_a,
		      per_node(&t, buf, sizeof buf));
	else
		vm_fail("migrate: before the move, on cpu %d (node %d): warm-up blocks' pages %s",
			m->cpu_a, m->node_a, per_node(&t, buf, sizeof buf));
	snprintf(what, sizeof what, "migrate: before the move, malloc(1 MiB) on cpu %d", m->cpu_a);
	block_line(what, run, 1 * MiB, m->node_a);
	snprintf(what, sizeof what, "migrate: before the move, malloc(32 MiB) on cpu %d", m->cpu_a);
	block_line(what, huge, 32 * MiB, m->node_a);

	/* A forked child moves first: its allocator state is this thread's copy. */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		char who[64];
		snprintf(who, sizeof who, "forked child moved %d->%d, small first", m->node_a,
			 m->node_b);
		mig_after(m, who, true);
		fflush(stdout);
		_exit(vm_exit_status());
	}
	int status = -1;
	if (pid > 0)
		waitpid(pid, &status, 0);
	child_done("migrate: the forked child", pid > 0 ? status : -1, NULL);

	snprintf(what, sizeof what, "thread moved %d->%d, large first", m->node_a, m->node_b);
	mig_after(m, what, false);
	/* What realloc gives is memory of the caller's node, as malloc's is, the part it adds
	 * included: a block of A grown after the move is on B (a helper's test: grown in place
	 * or by remapping, 8 -> 16 MiB and 512 KiB -> 3 MiB kept every new page on A). */
	for (int i = 0; i < 2; i++) {
		char *q = realloc(grow[i], grown[i]);
		if (!q) {
			vm_fail("migrate, thread: realloc to %zu KiB failed", grown[i] / KiB);
			continue;
		}
		vm_touch(q, grown[i]);
		snprintf(what, sizeof what, "migrate, thread moved %d->%d: a block of node %d realloc'ed "
			 "to %zu KiB", m->node_a, m->node_b, m->node_a, grown[i] / KiB);
		block_line(what, q, grown[i], m->node_b);
		free(q);
	}
	for (size_t c = 0; c < MIG_NCLS; c++) {
		for (long i = 0; i < m->nwarm[c]; i++)
			free(m->warm[c][i]);
		scratch_free(m->warm[c], (size_t)m->nwarm[c] * sizeof(void *));
	}
	free(run);
	free(huge);
	return NULL;
}

static void group_migrate(void)
{
	struct mig m;
	if (!vm_pick_pair(&m.cpu_a, &m.cpu_b)) {
		vm_note("skipped: migrate needs two CPUs whose nodes get memory from different nodes");
		return;
	}
	m.node_a = vm_topo.cpu_node[m.cpu_a];
	m.node_b = vm_topo.cpu_node[m.cpu_b];
	/* Both nodes' memory (or their nearest) must have room past the library's reserve for the
	 * blocks (a 32 MiB one among them), or it rightly serves them elsewhere: the small
	 * guest's small node (about 33 MiB free, its reserve 34) has groups of its own. */
	for (int k = 0; k < 2; k++) {
		int n = k ? m.node_b : m.node_a, mem[VM_MAX_NODES], nm = vm_mem_nodes(mem);
		long most = 0;
		for (int i = 0; i < nm; i++)
			if (vm_node_ok(n, mem[i])) {
				long f = node_meminfo_kb(mem[i], "MemFree");
				most = f > most ? f : most;
			}
		if (most < 192 * 1024) {
			vm_note("skipped: migrate needs 192 MiB free for node %d (%ld MiB)", n, most / 1024);
			return;
		}
	}
	vm_note("migrate: cpu %d (node %d) -> cpu %d (node %d)", m.cpu_a, m.node_a, m.cpu_b,
		m.node_b);
	vm_on_cpu(m.cpu_a, mig_thread, &m);
}

/* ---- policy ----------------------------------------------------------------------------- */

/* A few tens of MiB of mixed mallocs, touched, added to s: small blocks and page runs of up
 * to 3 MiB, none bigger than a pool run (so memory interleaved run by run balances as well as
 * memory interleaved page by page). */
static size_t alloc_mix(struct addrs *s)
{
	static const size_t small[] = {24, 100, 512, 2000};
	static const struct {
		size_t size;
		int count;
	} big[] = {{128 * KiB, 48}, {1 * MiB, 16}, {3 * MiB, 4}};
	size_t total = 0;
	for (int i = 0; total < 12 * MiB; i++) {
		size_t sz = small[i % 4];
		void *p = malloc(sz);
		if (!p)
			return total;
		memset(p, 1, sz);
		addrs_add(s, p);
		total += sz;
	}
	for (size_t k = 0; k < sizeof big / sizeof big[0]; k++)
		for (int i = 0; i < big[k].count; i++) {
			void *p = malloc(big[k].size);
			if (!p)
				return total;
			vm_touch(p, big[k].size);
			addrs_add_block(s, p, big[k].size);
			total += big[k].size;
		}
	return total; /* never freed: the child exits */
}

/* policy-child LABEL on NODES | interleave | set NODE: the mix, where its pages are. NODES: "2"
 * or "2,3"; set: the child sets MPOL_PREFERRED on NODE itself first. */
static int policy_child(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	const char *label = argv[2], *kind = argv[3];
	const char *nodes = argc > 4 ? argv[4] : "-1";
	struct addrs s;
	struct tally t;
	char buf[256];
	if (!strcmp(kind, "set")) {
		/* The program sets the policy itself, once this thread has state (a helper's test:
		 * one set at the top of main() was never read). MPOL_PREFERRED on node NODES. */
		free(malloc(100));
		unsigned long mask[VM_MAX_NODES / 64 + 1] = {0};
		int n = atoi(nodes);
		mask[n / 64] |= 1UL << (n % 64);
		if (set_mempolicy(MPOL_PREFERRED, mask, VM_MAX_NODES + 1) != 0) {
			vm_fail("policy, %s: set_mempolicy: %s", label, strerror(errno));
			return vm_exit_status();
		}
		kind = "on";
	}
	addrs_init(&s, 1 << 16);
	size_t total = alloc_mix(&s);
	tally(&s, &t);
	addrs_fini(&s);
	per_node(&t, buf, sizeof buf);
	if (!strcmp(kind, "on")) {
		double sh = 0;
		for (const char *q = nodes; *q;) {
			char *end;
			long n = strtol(q, &end, 10);
			if (end == q)
				break;
			if (n >= 0 && n < VM_MAX_NODES)
				sh += share(&t, (int)n);
			q = *end == ',' ? end + 1 : end;
		}
		const char *nn = strchr(nodes, ',') ? "nodes" : "node";
		if (sh >= 0.90)
			vm_ok("policy, %s: %.0f%% of the %ld pages of %zu MiB of mixed mallocs on %s %s "
			      "(>= 90%%; %s)", label, 100 * sh, t.pages, total / MiB, nn, nodes, buf);
		else
			vm_fail("policy, %s: %.0f%% of the %ld pages of %zu MiB of mixed mallocs on %s "
				"%s, not >= 90%% (%s)", label, 100 * sh, t.pages, total / MiB, nn, nodes,
				buf);
	} else {
		int mem[VM_MAX_NODES], nm = vm_mem_nodes(mem);
		double want = 1.0 / nm, worst = 0;
		int worst_node = -1;
		for (int k = 0; k < nm; k++) {
			double d = share(&t, mem[k]) - want;
			d = d < 0 ? -d : d;
			if (d > worst) {
				worst = d;
				worst_node = mem[k];
			}
		}
		if (worst <= 0.10 && present(&t) == t.pages)
			vm_ok("policy, %s: the %ld pages of %zu MiB of mixed mallocs are spread over the "
			      "%d memory nodes, each within %.0f%% +- 10%% (%s)", label, t.pages,
			      total / MiB, nm, 100 * want, buf);
		else
			vm_fail("policy, %s: the %ld pages of %zu MiB of mixed mallocs: node %d holds "
				"%.0f%%, not %.0f%% +- 10%% (%s)", label, t.pages, total / MiB,
				worst_node, 100 * share(&t, worst_node), 100 * want, buf);
	}
	char what[128];
	snprintf(what, sizeof what, "policy, %s", label);
	agree_line(what, &t);
	return vm_exit_status();
}

enum program_move { BY_MBIND, BY_MOVE_PAGES, BY_TONODE, BY_MOVE_PAGES_FAILING };

/* The program moves pages [from, from + len) of its block to node n itself: by mbind (MPOL_BIND
 * with MPOL_MF_MOVE), by move_pages (which leaves the range's policy alone), or by libnuma's
 * numa_tonode_memory (its mbind, through libnuma's PLT; it moves nothing already there, so the
 * caller binds before the first touch). 0 or errno. */
static int program_moves(char *from, size_t len, int n, enum program_move how)
{
	if (how == BY_TONODE) {
		errno = 0;
		numa_tonode_memory(from, len, n);
		return errno; /* libnuma reports a failure by a warning and errno */
	}
	if (how == BY_MBIND) {
		unsigned long mask[VM_MAX_NODES / 64 + 1] = {0};
		mask[n / 64] |= 1UL << (n % 64);
		return mbind(from, len, MPOL_BIND, mask, VM_MAX_NODES + 1, MPOL_MF_MOVE) ? errno : 0;
	}
	unsigned long count = len / vm_page;
	void **pages = scratch(count * sizeof(void *));
	int *nodes = scratch(count * sizeof(int)), *status = scratch(count * sizeof(int));
	for (unsigned long i = 0; i < count; i++) {
		pages[i] = from + i * vm_page;
		nodes[i] = n;
	}
	/* A bad node for the last page: the kernel moves the batch before it, then fails (ENODEV;
	 * a review found such a move not noted). */
	if (how == BY_MOVE_PAGES_FAILING)
		nodes[count - 1] = 1 << 20;
	int e = move_pages(0, count, pages, nodes, status, MPOL_MF_MOVE) < 0 ? errno : 0;
	if (how == BY_MOVE_PAGES_FAILING)
		e = e == ENODEV ? 0 : e ? e : EINVAL; /* the failure is the case */
	scratch_free(pages, count * sizeof(void *));
	scratch_free(nodes, count * sizeof(int));
	scratch_free(status, count * sizeof(int));
	return e;
}

/* bound-child M N: on a CPU of node M (pinned by the parent), a block the program moves to node
 * N itself, whole or its second half, and frees: the next block of the size must come from M
 * again, its pages too. A 12 MiB block (a chunk of its own: a helper's test found all the next
 * block's pages on N, and counted on M), and blocks of 96 KiB, 1 and 1.5 MiB (runs of a pool chunk,
 * which the thread's page cache hands back at once: the same memory, asked for by address below,
 * kept the program's binding and pages). Moved by mbind, by move_pages, and bound by libnuma's
 * numa_tonode_memory before the first touch (a fresh run: a size not asked for before). */
static int bound_child(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	int m = atoi(argv[2]), n = atoi(argv[3]);
	static const struct {
		size_t size;
		bool half;
		enum program_move how;
	} cases[] = {{12 * MiB, false, BY_MBIND},      {12 * MiB, true, BY_MBIND},  {1 * MiB, false, BY_MBIND},
		     {1 * MiB, true, BY_MBIND},        {12 * MiB, false, BY_MOVE_PAGES}, {1 * MiB, false, BY_MOVE_PAGES},
		     {3 * MiB / 2, false, BY_TONODE}, {96 * 1024, false, BY_MBIND},
		     {1 * MiB, false, BY_MOVE_PAGES_FAILING}, {12 * MiB, false, BY_MOVE_PAGES_FAILING}};
	static const char *const how_name[] = {"mbind", "move_pages", "numa_tonode_memory before its first touch",
					       "a move_pages that fails at its last page (ENODEV)"};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		size_t size = cases[k].size;
		bool half = cases[k].half;
		enum program_move how = cases[k].how;
		char label[160];
		snprintf(label, sizeof label, "%zu KiB block, %s moved to node %d by %s", size >> 10,
			 half ? "its second half" : "whole", n, how_name[how]);
		char *p = malloc(size);
		if (!p) {
			vm_fail("bound back: malloc(%zu MiB) failed", size / MiB);
			continue;
		}
		if (how != BY_TONODE)
			vm_touch(p, size);
		/* Whole pages of the block: a program can bind no less. */
		char *first = (char *)(((uintptr_t)p + vm_page - 1) & ~(uintptr_t)(vm_page - 1));
		char *end = (char *)(((uintptr_t)p + size) & ~(uintptr_t)(vm_page - 1));
		char *from = half ? first + (size_t)(end - first) / 2 / vm_page * vm_page : first;
		int e = program_moves(from, (size_t)(end - from), n, how);
		if (e) {
			vm_fail("bound back, %s: the program's call failed: %s", label, strerror(e));
			free(p);
			continue;
		}
		if (how == BY_TONODE)
			vm_touch(p, size);
		struct addrs s;
		struct tally t;
		char buf[256];
		addrs_init(&s, (long)(size / vm_page) + 16);
		addrs_add_block(&s, from, (size_t)(end - from));
		tally(&s, &t);
		if (share(&t, n) < 0.90)
			vm_note("bound back, %s: the program's move left %.0f%% on node %d (%s)", label,
				100 * share(&t, n), n, per_node(&t, buf, sizeof buf));
		uintptr_t freed = (uintptr_t)p;
		free(p);
		char *q = malloc(size);
		if (!q) {
			vm_fail("bound back, %s: the second malloc failed", label);
			addrs_fini(&s);
			continue;
		}
		/* A run comes back from the thread's page cache: the case is about that memory. */
		if (size < 4 * MiB && (uintptr_t)q != freed)
			vm_fail("bound back, %s: the second block is at %p, not the freed %#lx: the case "
				"cannot judge the freed run", label, (void *)q, (unsigned long)freed);
		vm_touch(q, size);
		s.n = 0;
		addrs_add_block(&s, q, size);
		tally(&s, &t);
		if (share(&t, m) >= 0.90)
			vm_ok("bound back, %s, freed: %.0f%% of the next block's %ld pages on node %d "
			      "(>= 90%%; %s)", label, 100 * share(&t, m), t.pages, m,
			      per_node(&t, buf, sizeof buf));
		else
			vm_fail("bound back, %s, freed: %.0f%% of the next block's %ld pages on node %d, "
				"not >= 90%% (%s)", label, 100 * share(&t, m), t.pages, m,
				per_node(&t, buf, sizeof buf));
		char what[200];
		snprintf(what, sizeof what, "bound back, %s", label);
		agree_line(what, &t);
		addrs_fini(&s);
		free(q);
	}
	return vm_exit_status();
}

static char spawn_buf[256 * 1024];

/* The verbose output (stderr) of the last child: a line naming the policy and the word. */
static void policy_named(const char *what, const char *text, const char *word)
{
	char line[512];
	if (find_line(text, "policy", word, line, sizeof line))
		vm_ok("%s names the policy: \"%s\"", what, line);
	else
		vm_fail("%s: no line names the policy in force (a line with 'policy' and '%s'; "
			"%zu bytes of output)", what, word, strlen(text));
}

static void group_policy(void)
{
	int mem[VM_MAX_NODES], nm = vm_mem_nodes(mem);
	if (nm < 2) {
		vm_note("skipped: policy needs two memory nodes");
		return;
	}
	/* The node the policies name, N: the last memory node with room for the mix several times
	 * over (a small node would spill, which is the full-node group's business), and not the
	 * only memory node with CPUs; the CPU: the first of the first other memory node M. */
	int cpu = -1, m = -1, n = -1;
	for (int k = nm - 1; k >= 0 && n < 0; k--) {
		bool other_cpus = false;
		for (int j = 0; j < nm; j++)
			other_cpus |= mem[j] != mem[k] && vm_topo.first_cpu[mem[j]] >= 0;
		if (other_cpus && node_meminfo_kb(mem[k], "MemFree") >= 128 * 1024)
			n = mem[k];
	}
	/* M must hold the mix too (with NUMAPAGE_BIND the pages follow the CPU): a small node
	 * would pass it on to the next node before it is full, which is right, but not this
	 * group's question. */
	for (int k = 0; k < nm && cpu < 0 && n >= 0; k++)
		if (mem[k] != n && vm_topo.first_cpu[mem[k]] >= 0 && node_meminfo_kb(mem[k], "MemFree") >= 128 * 1024) {
			m = mem[k];
			cpu = vm_topo.first_cpu[m];
		}
	if (cpu < 0 || n < 0) {
		vm_note("skipped: policy needs a memory node with CPUs and another memory node");
		return;
	}
	char ns[16], ms[16], pref[32], memb[32], label[96];
	snprintf(ns, sizeof ns, "%d", n);
	snprintf(ms, sizeof ms, "%d", m);
	snprintf(pref, sizeof pref, "--preferred=%d", n);
	snprintf(memb, sizeof memb, "--membind=%d", n);
	vm_note("policy: children on cpu %d (node %d), the policies name node %d", cpu, m, n);
	static const char *const verbose[] = {"NUMAPAGE_VERBOSE=1", NULL};
	static const char *const explicit_bind[] = {"NUMAPAGE_VERBOSE=1", "NUMAPAGE_BIND=preferred",
						    NULL};
	int st;

	/* numactl --preferred=N: the preferred node first. */
	snprintf(label, sizeof label, "numactl %s on cpu %d", pref, cpu);
	char *a1[] = {"numactl", pref, "--", self_exe, "policy-child", label, "on", ns, NULL};
	st = spawn(a1, verbose, cpu, 2, spawn_buf, sizeof spawn_buf);
	child_done(label, st, NULL);
	policy_named("policy, NUMAPAGE_VERBOSE=1 under numactl --preferred", spawn_buf, "preferred");

	/* numactl --interleave=all: the library's memory spread over every memory node. */
	snprintf(label, sizeof label, "numactl --interleave=all on cpu %d", cpu);
	char *a2[] = {"numactl", "--interleave=all", "--", self_exe, "policy-child", label,
		      "interleave", NULL};
	st = spawn(a2, verbose, cpu, 2, spawn_buf, sizeof spawn_buf);
	child_done(label, st, NULL);
	policy_named("policy, NUMAPAGE_VERBOSE=1 under numactl --interleave=all", spawn_buf,
		     "interleave");

	/* An explicit NUMAPAGE_BIND overrides the task policy: pages follow the CPU again. */
	snprintf(label, sizeof label, "NUMAPAGE_BIND=preferred under numactl %s on cpu %d", pref,
		 cpu);
	char *a3[] = {"numactl", pref, "--", self_exe, "policy-child", label, "on", ms, NULL};
	st = spawn(a3, explicit_bind, cpu, 2, spawn_buf, sizeof spawn_buf);
	child_done(label, st, NULL);
	policy_named("policy, NUMAPAGE_VERBOSE=1 with an explicit NUMAPAGE_BIND under numactl "
		     "--preferred", spawn_buf, "bind");

	/* numactl --preferred-many: the preferred nodes first (N and, where there is one, a
	 * second memory node other than the CPU's). */
	int n2 = -1;
	for (int k = nm - 1; k >= 0 && n2 < 0; k--)
		if (mem[k] != n && mem[k] != m && node_meminfo_kb(mem[k], "MemFree") >= 128 * 1024)
			n2 = mem[k];
	char many[32], pm[64];
	if (n2 >= 0)
		snprintf(many, sizeof many, "%d,%d", n, n2);
	else
		snprintf(many, sizeof many, "%d", n);
	snprintf(pm, sizeof pm, "--preferred-many=%s", many);
	snprintf(label, sizeof label, "numactl %s on cpu %d", pm, cpu);
	/* numactl asks libnuma whether the kernel has MPOL_PREFERRED_MANY before it sets the
	 * policy, and in the r7425 guest the answer has been no ("preferred-many requested without
	 * kernel support", exit 1) although its kernel has it: then the case is skipped, not
	 * failed. stderr is captured to tell that apart from a child that failed. */
	char *a6[] = {"numactl", pm, "--", self_exe, "policy-child", label, "on", many, NULL};
	st = spawn(a6, NULL, cpu, 2, spawn_buf, sizeof spawn_buf);
	if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 1 && strstr(spawn_buf, "without kernel support")) {
		spawn_buf[strcspn(spawn_buf, "\n")] = 0;
		vm_note("skipped: numactl %s refuses here: %s", pm, spawn_buf);
	} else {
		fputs(spawn_buf, stderr);
		child_done(label, st, NULL);
	}

	/* The program's own set_mempolicy(MPOL_PREFERRED, N), after its state was made. */
	snprintf(label, sizeof label, "set_mempolicy(MPOL_PREFERRED, %d) by the program on cpu %d", n,
		 cpu);
	char *a7[] = {self_exe, "policy-child", label, "set", ns, NULL};
	st = spawn(a7, NULL, cpu, 0, NULL, 0);
	child_done(label, st, NULL);

	/* A block the program moved to N itself, freed: the next one on M again. */
	snprintf(label, sizeof label, "bound back on cpu %d", cpu);
	char *a8[] = {self_exe, "bound-child", ms, ns, NULL};
	st = spawn(a8, NULL, cpu, 0, NULL, 0);
	child_done(label, st, NULL);

	/* numactl --membind=N: inside N (the issue says this works already). */
	snprintf(label, sizeof label, "numactl %s on cpu %d", memb, cpu);
	char *a4[] = {"numactl", memb, "--", self_exe, "policy-child", label, "on", ns, NULL};
	st = spawn(a4, NULL, cpu, 0, NULL, 0);
	child_done(label, st, NULL);

	/* numapage topology says which policy is in force. */
	static const struct {
		const char *opt, *word;
	} topo[] = {{NULL, "preferred"}, {"--interleave=all", "interleave"}};
	for (int k = 0; k < 2; k++) {
		const char *opt = topo[k].opt ? topo[k].opt : pref;
		char *a5[] = {"numactl", (char *)opt, "--", "numapage", "topology", NULL};
		char what[96];
		snprintf(what, sizeof what, "policy: numapage topology under numactl %s", opt);
		st = spawn(a5, NULL, cpu, 3, spawn_buf, sizeof spawn_buf);
		if (child_done(what, st, NULL))
			policy_named(what, spawn_buf, topo[k].word);
	}
}

/* ---- full node ------------------------------------------------------------------------- */

/* The small node: the memory node with CPUs and the least memory, when it has at most a third
 * of the largest's; *other: the nearest other memory node. -1 when there is none. */
static int small_node(int *other)
{
	int mem[VM_MAX_NODES], nm = vm_mem_nodes(mem), s = -1;
	long big = 0, least = 0;
	for (int k = 0; k < nm; k++) {
		long kb = node_meminfo_kb(mem[k], "MemTotal");
		big = kb > big ? kb : big;
		if (vm_topo.first_cpu[mem[k]] >= 0 && (s < 0 || kb < least)) {
			s = mem[k];
			least = kb;
		}
	}
	if (s < 0 || least * 3 > big)
		return -1;
	*other = -1;
	for (int k = 0; k < nm; k++)
		if (mem[k] != s && (*other < 0 || vm_topo.dist[s][mem[k]] < vm_topo.dist[s][*other]))
			*other = mem[k];
	return *other >= 0 ? s : -1;
}

#define FULL_PAST (64 * MiB) /* allocated past the small node's free memory at the start */

/* full-child MODE S O: fills S from one of its CPUs (pinned by the parent) and past it. */
static int full_child(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	const char *mode = argv[2];
	int s = atoi(argv[3]), o = atoi(argv[4]);
	long free_s = node_meminfo_kb(s, "MemFree"), free_o = node_meminfo_kb(o, "MemFree");
	size_t target = (size_t)free_s * KiB + FULL_PAST;
	if ((size_t)free_o * KiB < FULL_PAST + 128 * MiB) {
		vm_note("skipped: full node (%s): node %d has only %ld MiB free", mode, o,
			free_o / 1024);
		return 0;
	}
	vm_note("full node (%s): on cpu %d (node %d), node %d has %ld MiB free, node %d %ld MiB; "
		"allocating %zu MiB", mode, sched_getcpu(), s, s, free_s / 1024, o, free_o / 1024,
		target / MiB);
	struct snap before, after;
	snapshot(&before);
	struct addrs a;
	addrs_init(&a, (long)(target / vm_page) + (1 << 16));
	/* The blocks themselves, freed at the end (scratch: outside the allocator). */
	long nblocks = 0, max_blocks = (long)(target / 200) + 1024;
	void **blocks = scratch((size_t)max_blocks * sizeof *blocks);
	size_t total = 0, low_at = 0;
	long min_free = free_s;
	bool failed = false;
	for (int unit = 0; total < target && !failed; unit++) {
		/* A unit of about 1.4 MiB: a page run, two smaller runs, small blocks; every 16th
		 * unit also a huge block of its own chunk. */
		static const struct {
			size_t size;
			int count;
		} mix[] = {{1 * MiB, 1}, {128 * KiB, 2}, {4000, 16}, {200, 64}, {8 * MiB, 1}};
		for (size_t k = 0; k < sizeof mix / sizeof mix[0] && !failed; k++) {
			if (mix[k].size == 8 * MiB && unit % 16 != 15)
				continue;
			for (int i = 0; i < mix[k].count; i++) {
				void *p = malloc(mix[k].size);
				if (!p) {
					failed = true;
					break;
				}
				vm_touch(p, mix[k].size);
				if (nblocks < max_blocks)
					blocks[nblocks++] = p;
				if (mix[k].size > vm_page)
					addrs_add_block(&a, p, mix[k].size);
				else
					addrs_add(&a, p);
				total += mix[k].size;
			}
		}
		long f = node_meminfo_kb(s, "MemFree");
		if (f < min_free)
			min_free = f;
		if (!low_at && f < 16 * 1024)
			low_at = total;
	}
	snapshot(&after);
	struct tally t;
	tally(&a, &t);
	addrs_fini(&a);
	char buf[160], what[96];
	snprintf(what, sizeof what, "full node (%s)", mode);
	char low[64] = " (never below 16 MiB)";
	if (low_at)
		snprintf(low, sizeof low, " (below 16 MiB after %zu MiB)", low_at / MiB);
	vm_note("%s: %zu MiB allocated; node %d's MemFree went down to %ld MiB%s; pages: %s", what,
		total / MiB, s, min_free / 1024, low, per_node(&t, buf, sizeof buf));
	if (failed)
		vm_fail("%s: malloc returned NULL after %zu of %zu MiB (errno %d) while node %d had "
			"%ld MiB free", what, total / MiB, target / MiB, errno, o,
			node_meminfo_kb(o, "MemFree") / 1024);
	else
		vm_ok("%s: all %zu MiB allocated and touched, %zu MiB past node %d's free memory",
		      what, total / MiB, FULL_PAST / MiB, s);
	/* Never report a node the pages are not on. */
	agree_line(what, &t);
	/* Pages past S's capacity are on O, none anywhere else. */
	long cap = free_s * (long)KiB / (long)vm_page, elsewhere = present(&t) - t.on[s] - t.on[o];
	long past = present(&t) - cap;
	if (!elsewhere && t.on[o] >= past && !t.absent)
		vm_ok("%s: %ld pages on node %d (its free memory was %ld pages), %ld on node %d", what,
		      t.on[s], s, cap, t.on[o], o);
	else
		vm_fail("%s: %ld pages on node %d (free at the start: %ld), %ld on node %d (at least "
			"%ld expected), %ld elsewhere, %ld absent", what, t.on[s], s, cap, t.on[o], o,
			past, elsewhere, t.absent);
	/* What the kernel (or the library) put elsewhere is counted as a miss and a foreign. */
	long long miss = DELTA(&before, &after, o, numa_miss);
	long long foreign = DELTA(&before, &after, s, numa_foreign);
	long long hit_s = DELTA(&before, &after, s, numa_hit);
	if (t.on[o] > 0 && miss > 0 && foreign > 0)
		vm_ok("%s: the spill is counted: numa_miss +%lld on node %d, numa_foreign +%lld on "
		      "node %d (move_pages: %ld pages on %d; numa_hit +%lld on %d)", what, miss, o,
		      foreign, s, t.on[o], o, hit_s, s);
	else
		vm_fail("%s: %ld pages ended on node %d, but numa_miss +%lld on node %d, numa_foreign "
			"+%lld on node %d (numa_hit +%lld on %d)", what, t.on[o], o, miss, o, foreign,
			s, hit_s, s);
	/* Everything freed and trimmed: node s has room again, and the thread's next blocks are
	 * there. They came from the slabs made on node o during the spill (a hostile review: 128
	 * blocks of 64 KiB, 128 pages on the other node), one slab per size at least. */
	for (long i = 0; i < nblocks; i++)
		free(blocks[i]);
	scratch_free(blocks, (size_t)max_blocks * sizeof *blocks);
	malloc_trim(0);
	if (!strcmp(mode, "default")) {
		static const size_t again[] = {64 * KiB, 4000};
		for (size_t k = 0; k < 2; k++) {
			long on_s = 0, off = 0;
			for (int i = 0; i < 128; i++) {
				char *p = malloc(again[k]);
				if (!p) {
					off++;
					continue;
				}
				vm_touch(p, again[k]);
				for (size_t x = 0; x < again[k]; x += vm_page) {
					int nd = vm_where1(p + x);
					on_s += nd == s;
					off += nd >= 0 && nd != s;
				}
			}
			if (!off)
				vm_ok("%s: after the frees and malloc_trim, 128 blocks of %zu bytes: all %ld "
				      "pages on node %d", what, again[k], on_s, s);
			else
				vm_fail("%s: after the frees and malloc_trim, 128 blocks of %zu bytes: %ld "
					"pages on node %d, %ld elsewhere (node %d has %ld MiB free)", what,
					again[k], on_s, s, off, s, node_meminfo_kb(s, "MemFree") / 1024);
		}
	}
	return vm_exit_status();
}

/* The process that fills a node: forked before the program's first allocation, so that it
 * shares none of the program's pages (forked later, it made every page the program had freed
 * copy-on-write: the program's next write to each made a copy, which the kernel put on the
 * other node, the filled one having no room, while the library rightly counted it on the
 * first: 4,224 hits counted on node 1 with 0-190 pages there). */
struct hog {
	pid_t pid;
	int go, ready; /* pipes: a byte to start filling; a byte once the node is full */
};

/* Forks the hog: on a byte from hog_fill it fills node s (mmap, MPOL_BIND to s, touched) until
 * s has leave_kb free or less, says so, and waits to be killed. False if it did not start. */
static bool hog_fork(struct hog *h, int s, long leave_kb)
{
	int go[2], ready[2];
	if (pipe(go) != 0)
		return false;
	if (pipe(ready) != 0) {
		close(go[0]);
		close(go[1]);
		return false;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(go[1]);
		close(ready[0]);
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		unsigned long mask[VM_MAX_NODES / 64 + 1] = {0};
		mask[s / 64] |= 1UL << (s % 64);
		if (set_mempolicy(MPOL_BIND, mask, VM_MAX_NODES + 1) != 0)
			_exit(3);
		const size_t step = 2 * MiB;
		for (long f = node_meminfo_kb(s, "MemFree"); f > leave_kb; f = node_meminfo_kb(s, "MemFree")) {
			size_t len = (size_t)(f - leave_kb) * KiB;
			len = len > step ? step : (len + vm_page - 1) / vm_page * vm_page;
			char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				break;
			for (size_t i = 0; i < len; i += vm_page)
				p[i] = 1;
		}
		if (write(ready[1], &c, 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(go[0]);
	close(ready[1]);
	*h = (struct hog){.pid = pid, .go = go[1], .ready = ready[0]};
	if (pid < 0) {
		close(go[1]);
		close(ready[0]);
		return false;
	}
	return true;
}

/* Lets the hog fill its node and waits until it has. False (the hog killed) if it did not. */
static bool hog_fill(struct hog *h)
{
	char c = 1;
	bool ok = write(h->go, &c, 1) == 1 && read(h->ready, &c, 1) == 1;
	if (!ok)
		kill(h->pid, SIGKILL);
	return ok;
}

static void hog_stop(struct hog *h)
{
	kill(h->pid, SIGKILL);
	waitpid(h->pid, NULL, 0);
	close(h->go);
	close(h->ready);
}

#define HOG_WARM (24 * MiB)  /* allocated, touched and freed on the small node first */
#define HOG_LEAVE_KB (8 * 1024)
#define HOG_ALLOC (40 * MiB) /* then allocated while another process holds the node */

/* hog-child MODE S O: the memory a program took on S and gave back, then another process fills
 * S: what the program allocates next lands on S only as far as S's pages are its own, the
 * rest on O, and it is counted where it is (a helper's test: the pool's pages never touched
 * were handed out on the full node, so the kernel put 8,100 of 9,216 pages on O, all counted
 * on S as hits; under NUMAPAGE_BIND=strict the program was OOM-killed). */
/* Blocks of 1 MiB, 128 KiB, 4000 and 200 bytes in turn, each touched and added to s, until
 * `bytes` are taken (or malloc fails: *failed); with keep, each is stored there too, at most
 * cap of them (*kept). Returns the bytes taken. */
static size_t hog_mix(struct addrs *s, size_t bytes, void **keep, int cap, int *kept, bool *failed)
{
	static const size_t sizes[] = {1 * MiB, 128 * KiB, 4000, 200};
	size_t total = 0;
	*failed = false;
	for (int i = 0; total < bytes && (!keep || i < cap); i++) {
		size_t sz = sizes[i % 4];
		void *p = malloc(sz);
		if (!p) {
			*failed = true;
			break;
		}
		vm_touch(p, sz);
		if (sz > vm_page)
			addrs_add_block(s, p, sz);
		else
			addrs_add(s, p);
		if (keep)
			keep[(*kept)++] = p;
		total += sz;
	}
	return total;
}

static int hog_child(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	const char *mode = argv[2];
	int s = atoi(argv[3]), o = atoi(argv[4]);
	if (node_meminfo_kb(o, "MemFree") * (long)KiB < (long)(HOG_ALLOC + 128 * MiB)) {
		vm_note("skipped: full node, another process (%s): node %d has too little free", mode, o);
		return 0;
	}
	struct hog hog;
	if (!hog_fork(&hog, s, HOG_LEAVE_KB)) {
		vm_fail("full node, another process (%s): the process that fills node %d did not start",
			mode, s);
		return vm_exit_status();
	}
	enum { WARM_BLOCKS = 4096 };
	static void *warm[WARM_BLOCKS];
	int nw = 0;
	bool failed;
	struct addrs wa;
	struct tally wt;
	char wbuf[160];
	addrs_init(&wa, (long)(HOG_WARM / vm_page) + (1 << 14));
	size_t warmed = hog_mix(&wa, HOG_WARM, warm, WARM_BLOCKS, &nw, &failed);
	tally(&wa, &wt);
	addrs_fini(&wa);
	vm_note("full node, another process (%s): the %zu MiB taken first: %s", mode, warmed / MiB,
		per_node(&wt, wbuf, sizeof wbuf));
	for (int i = 0; i < nw; i++)
		free(warm[i]);
	if (!hog_fill(&hog)) {
		vm_fail("full node, another process (%s): the process that fills node %d failed",
			mode, s);
		hog_stop(&hog);
		return vm_exit_status();
	}
	/* The library reads a node's free memory again when its last read is 100 ms old
	 * (numapage(7)): past that, what the other process took is known. */
	usleep(300 * 1000);
	vm_note("full node, another process (%s): on cpu %d, %zu MiB freed on node %d, which another "
		"process then filled to %ld MiB free; allocating %zu MiB", mode, sched_getcpu(),
		warmed / MiB, s, node_meminfo_kb(s, "MemFree") / 1024, (size_t)HOG_ALLOC / MiB);
	struct snap before, after;
	snapshot(&before);
	struct addrs a;
	addrs_init(&a, (long)(HOG_ALLOC / vm_page) + (1 << 16));
	size_t total = hog_mix(&a, HOG_ALLOC, NULL, 0, NULL, &failed);
	snapshot(&after);
	hog_stop(&hog);
	struct tally t;
	char buf[160], what[96];
	tally(&a, &t);
	addrs_fini(&a);
	snprintf(what, sizeof what, "full node, another process (%s)", mode);
	if (failed)
		vm_fail("%s: malloc returned NULL after %zu MiB (errno %d)", what, total / MiB, errno);
	agree_line(what, &t);
	/* The hits counted on S are pages that are on S (page-granular blocks count whole pages;
	 * small blocks count their slabs' pages, so allow a slab's worth per class). */
	long long hit_s = DELTA(&before, &after, s, numa_hit);
	long long slack = 2 * 1024 * 1024 / (long long)vm_page;
	if (hit_s <= t.on[s] + slack)
		vm_ok("%s: numa_hit +%lld on node %d, which holds %ld of the pages (%s)", what, hit_s, s,
		      t.on[s], per_node(&t, buf, sizeof buf));
	else
		vm_fail("%s: numa_hit +%lld on node %d, but only %ld of the pages are there (%s): "
			"pages elsewhere counted on it", what, hit_s, s, t.on[s], per_node(&t, buf, sizeof buf));
	return vm_exit_status();
}

static void group_full(void)
{
	int o, s = small_node(&o);
	if (s < 0) {
		vm_note("skipped: full node needs a node with at most a third of another's memory "
			"(the small guest has one)");
		return;
	}
	char ss[16], os_[16], killed[160];
	snprintf(ss, sizeof ss, "%d", s);
	snprintf(os_, sizeof os_, "%d", o);
	snprintf(killed, sizeof killed, " (the OOM killer? node %d was full, node %d had memory)",
		 s, o);
	static const char *const strict[] = {"NUMAPAGE_BIND=strict", NULL};
	set_oom_adj(-1000);
	child_oom_adj = 1000;
	run_self("full node (default binding): the child", NULL, vm_topo.first_cpu[s], killed,
		 "full-child", "default", ss, os_, (char *)NULL);
	run_self("full node (NUMAPAGE_BIND=strict): the child", strict, vm_topo.first_cpu[s], killed,
		 "full-child", "strict", ss, os_, (char *)NULL);
	run_self("full node, another process (default binding): the child", NULL,
		 vm_topo.first_cpu[s], killed, "hog-child", "default", ss, os_, (char *)NULL);
	run_self("full node, another process (NUMAPAGE_BIND=strict): the child", strict,
		 vm_topo.first_cpu[s], killed, "hog-child", "strict", ss, os_, (char *)NULL);
	child_oom_adj = INT_MIN;
	set_oom_adj(0);
}

/* ---- memoryless balance ----------------------------------------------------------------- */

#define BAL_PER_CPU 2   /* threads per CPU of the memoryless nodes */
#define BAL_LIVE 1000   /* live blocks per thread */
#define BAL_OPS 20000   /* frees and mallocs per thread */
#define BAL_MAX 64

struct bal {
	int cpu, node;
	unsigned seed;
	pthread_barrier_t *start, *done;
	struct tally t;
};

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A realistic mix: mostly small, a tail of larger blocks and page runs. */
static size_t bal_size(uint64_t *x)
{
	unsigned r = (unsigned)(rnd(x) % 100);
	if (r < 60)
		return 16 + rnd(x) % 240;
	if (r < 85)
		return 256 + rnd(x) % 1792;
	if (r < 95)
		return 2048 + rnd(x) % (14 * 1024);
	if (r < 99)
		return 16 * KiB + rnd(x) % (48 * KiB);
	return 64 * KiB + rnd(x) % (448 * KiB);
}

static void *bal_thread(void *arg)
{
	struct bal *b = arg;
	uint64_t x = 0x9e3779b97f4a7c15ULL ^ b->seed;
	void **live = scratch(BAL_LIVE * sizeof(void *));
	size_t *len = scratch(BAL_LIVE * sizeof(size_t));
	pthread_barrier_wait(b->start);
	for (int i = 0; i < BAL_LIVE; i++) {
		len[i] = bal_size(&x);
		if ((live[i] = malloc(len[i])))
			vm_touch(live[i], len[i]);
	}
	for (int k = 0; k < BAL_OPS; k++) {
		int i = (int)(rnd(&x) % BAL_LIVE);
		free(live[i]);
		len[i] = bal_size(&x);
		if ((live[i] = malloc(len[i])))
			vm_touch(live[i], len[i]);
	}
	pthread_barrier_wait(b->done);
	struct addrs s;
	addrs_init(&s, 1 << 16);
	for (int i = 0; i < BAL_LIVE; i++)
		if (live[i])
			addrs_add_block(&s, live[i], len[i]);
	tally(&s, &b->t);
	addrs_fini(&s);
	for (int i = 0; i < BAL_LIVE; i++)
		free(live[i]);
	scratch_free(live, BAL_LIVE * sizeof(void *));
	scratch_free(len, BAL_LIVE * sizeof(size_t));
	return NULL;
}

/* The memoryless nodes with CPUs whose nearest memory is the first group of two or more
 * equidistant memory nodes: into nodes[], the group as a mask; 0 when there is none. */
static uint64_t bal_nodes(int *nodes, int *nn)
{
	uint64_t group = 0;
	*nn = 0;
	for (int n = 0; n <= vm_topo.max_node; n++) {
		if (!node_has_cpus(n) || vm_topo.has_mem[n])
			continue;
		uint64_t g = nearest_mask(n);
		if (__builtin_popcountll(g) < 2 || (group && g != group))
			continue;
		group = g;
		nodes[(*nn)++] = n;
	}
	return group;
}

/* balance-run K: one run, in a fresh process. */
static int balance_child(int argc, char **argv)
{
	int run = argc > 2 ? atoi(argv[2]) : 0;
	int nodes[VM_MAX_NODES], nn;
	uint64_t group = bal_nodes(nodes, &nn);
	static struct bal b[BAL_MAX];
	pthread_t t[BAL_MAX];
	pthread_barrier_t start, done;
	int nb = 0;
	for (int k = 0; k < nn; k++)
		for (int c = 0; c < vm_topo.ncpus; c++)
			for (int j = 0; vm_topo.cpu_node[c] == nodes[k] && j < BAL_PER_CPU && nb < BAL_MAX;
			     j++, nb++)
				b[nb] = (struct bal){.cpu = c, .node = nodes[k],
						     .seed = (unsigned)(run * 1000 + nb)};
	if (!nb) {
		vm_note("skipped: memoryless balance: no CPU on a memoryless node shares nearest nodes");
		return 0;
	}
	pthread_barrier_init(&start, NULL, (unsigned)nb);
	pthread_barrier_init(&done, NULL, (unsigned)nb);
	struct snap before, after;
	snapshot(&before);
	for (int i = 0; i < nb; i++) {
		pthread_attr_t a;
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(b[i].cpu, &one);
		pthread_attr_init(&a);
		pthread_attr_setaffinity_np(&a, sizeof one, &one);
		b[i].start = &start;
		b[i].done = &done;
		if (pthread_create(&t[i], &a, bal_thread, &b[i]) != 0) {
			vm_fail("memoryless balance: pthread_create failed");
			exit(1);
		}
		pthread_attr_destroy(&a);
	}
	for (int i = 0; i < nb; i++)
		pthread_join(t[i], NULL);
	snapshot(&after);
	/* The split over the group, in all and per memoryless node. */
	struct tally sum = {0}, per[VM_MAX_NODES];
	memset(per, 0, sizeof per);
	for (int i = 0; i < nb; i++)
		for (int n = 0; n < VM_MAX_NODES; n++) {
			sum.on[n] += b[i].t.on[n];
			per[b[i].node].on[n] += b[i].t.on[n];
			sum.pages += b[i].t.on[n];
			per[b[i].node].pages += b[i].t.on[n];
		}
	int k = __builtin_popcountll(group);
	long in_group = 0;
	for (int n = 0; n < VM_MAX_NODES && n < 64; n++)
		in_group += (group >> n & 1) ? sum.on[n] : 0;
	char split[160], why[160] = "";
	size_t o = 0;
	double want = 1.0 / k, worst = 0;
	for (int n = 0; n < 64 && o < sizeof split; n++)
		if (group >> n & 1) {
			double sh = in_group ? (double)sum.on[n] / (double)in_group : 0;
			double d = sh > want ? sh - want : want - sh;
			worst = d > worst ? d : worst;
			o += (size_t)snprintf(split + o, sizeof split - o, "%s%.0f%% on %d", o ? ", " : "",
					      100 * sh, n);
		}
	long long contended = 0, refills = 0, stolen = 0;
	for (int n = 0; n <= vm_topo.max_node; n++) {
		contended += DELTA(&before, &after, n, pool_contended);
		refills += DELTA(&before, &after, n, pcp_refill);
		stolen += DELTA(&before, &after, n, pages_stolen);
	}
	char pernode[256];
	o = 0;
	pernode[0] = 0;
	for (int i = 0; i < nn && o < sizeof pernode; i++) {
		char tmp[128];
		o += (size_t)snprintf(pernode + o, sizeof pernode - o, "%snode %d's threads: %s",
				      i ? "; " : "", nodes[i], per_node(&per[nodes[i]], tmp, sizeof tmp));
	}
	vm_note("memoryless balance, run %d: %s; pool_contended +%lld, pcp_refill +%lld, "
		"pages_stolen +%lld", run, pernode, contended, refills, stolen);
	if (in_group != sum.pages)
		snprintf(why, sizeof why, "; %ld of %ld pages outside the nearest nodes",
			 sum.pages - in_group, sum.pages);
	if (worst <= 0.10 && in_group == sum.pages && sum.pages)
		vm_ok("memoryless balance, run %d: %d threads on the memoryless nodes' CPUs hold %ld "
		      "pages: %s (each within %.0f%% +- 10%%); pool_contended +%lld", run, nb,
		      sum.pages, split, 100 * want, contended);
	else
		vm_fail("memoryless balance, run %d: %d threads on the memoryless nodes' CPUs hold "
			"%ld pages: %s, not each within %.0f%% +- 10%%%s; pool_contended +%lld", run,
			nb, sum.pages, split, 100 * want, why, contended);
	return vm_exit_status();
}

#define BAL_RUNS 3

static void group_memoryless(void)
{
	int nodes[VM_MAX_NODES], nn;
	if (!bal_nodes(nodes, &nn)) {
		vm_note("skipped: memoryless balance needs memoryless nodes with CPUs whose nearest "
			"memory is two or more equidistant nodes (the 2990wx guest)");
		return;
	}
	for (int r = 1; r <= BAL_RUNS; r++) {
		char rs[16], what[64];
		snprintf(rs, sizeof rs, "%d", r);
		snprintf(what, sizeof what, "memoryless balance, run %d", r);
		run_self(what, NULL, -1, NULL, "balance-run", rs, (char *)NULL);
	}
}

/* ---- placement race ---------------------------------------------------------------------- */

#define RACE_ROUNDS 20
#define RACE_MAX 64

struct racer {
	pthread_barrier_t *start, *report, *release;
	int cpu;
};

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	pthread_barrier_wait(r->start);
	void *volatile p = malloc(100); /* its first malloc (the wrapper placed it already) */
	r->cpu = sched_getcpu();
	pthread_barrier_wait(r->report);
	pthread_barrier_wait(r->release);
	free(p);
	return NULL;
}

/* race-child: NUMAPAGE_PLACE=spread is in the environment. */
static int race_child(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	void *volatile p = malloc(1); /* the main thread is placed at start-up */
	free(p);
	int ncn = cpu_node_count();
	int sizes[2] = {2 * ncn + 1, 4 * ncn};
	static struct racer r[RACE_MAX];
	pthread_t t[RACE_MAX];
	for (int s = 0; s < 2; s++) {
		int n = sizes[s] < RACE_MAX ? sizes[s] : RACE_MAX, bad = 0;
		char worst[128] = "", first_bad[160] = "";
		int worst_spread = -1;
		for (int round = 0; round < RACE_ROUNDS; round++) {
			pthread_barrier_t start, report, release;
			pthread_barrier_init(&start, NULL, (unsigned)n);
			pthread_barrier_init(&report, NULL, (unsigned)n + 1);
			pthread_barrier_init(&release, NULL, (unsigned)n + 1);
			int made = 0;
			for (int i = 0; i < n; i++) {
				r[i] = (struct racer){.start = &start, .report = &report,
						      .release = &release, .cpu = -1};
				if (pthread_create(&t[i], NULL, racer_main, &r[i]) != 0)
					break;
				made++;
			}
			if (made < n) {
				vm_fail("placement race: pthread_create failed after %d threads", made);
				exit(1);
			}
			pthread_barrier_wait(&report);
			int count[VM_MAX_NODES] = {0};
			int mc = sched_getcpu();
			if (mc >= 0 && vm_topo.cpu_node[mc] >= 0)
				count[vm_topo.cpu_node[mc]]++;
			for (int i = 0; i < n; i++)
				if (r[i].cpu >= 0 && vm_topo.cpu_node[r[i].cpu] >= 0)
					count[vm_topo.cpu_node[r[i].cpu]]++;
			pthread_barrier_wait(&release);
			for (int i = 0; i < n; i++)
				pthread_join(t[i], NULL);
			pthread_barrier_destroy(&start);
			pthread_barrier_destroy(&report);
			pthread_barrier_destroy(&release);
			int lo = -1, hi = 0;
			char c[128];
			size_t o = 0;
			for (int k = 0; k <= vm_topo.max_node && o < sizeof c; k++)
				if (node_has_cpus(k)) {
					lo = lo < 0 || count[k] < lo ? count[k] : lo;
					hi = count[k] > hi ? count[k] : hi;
					o += (size_t)snprintf(c + o, sizeof c - o, "%s%d", o ? "/" : "",
							      count[k]);
				}
			if (hi - lo > 1 && !bad++)
				snprintf(first_bad, sizeof first_bad, "round %d: %s", round + 1, c);
			if (hi - lo > worst_spread) {
				worst_spread = hi - lo;
				snprintf(worst, sizeof worst, "%s", c);
			}
		}
		if (!bad)
			vm_ok("placement race: NUMAPAGE_PLACE=spread, %d threads started together, %d "
			      "rounds: threads per node (main included) within +-1 in every round "
			      "(least even: %s)", n, RACE_ROUNDS, worst);
		else
			vm_fail("placement race: NUMAPAGE_PLACE=spread, %d threads started together: "
				"%d of %d rounds off by more than 1 thread per node; first %s", n, bad,
				RACE_ROUNDS, first_bad);
	}
	return vm_exit_status();
}

static void group_race(void)
{
	if (cpu_node_count() < 2) {
		vm_note("skipped: placement race needs two nodes with CPUs");
		return;
	}
	if (4 * cpu_node_count() > RACE_MAX) {
		vm_note("skipped: placement race: more than %d threads needed", RACE_MAX);
		return;
	}
	static const char *const spread[] = {"NUMAPAGE_PLACE=spread", NULL};
	run_self("placement race: the child", spread, -1, NULL, "race-child", (char *)NULL);
}

/* ---- counters ----------------------------------------------------------------------------- */

struct cnt {
	int node;
	bool ok;
};

static void *cnt_thread(void *arg)
{
	struct cnt *c = arg;
	static const struct {
		size_t size; /* class or page multiples: requested == usable */
		int count;
	} mix[] = {{112, 2000}, {4096, 100}, {256 * KiB, 8}, {8 * MiB, 1}};
	void *blk[2200];
	int nb = 0;
	void *volatile warm = malloc(64); /* the thread's state exists before the first reading */
	free(warm);
	struct snap before, after;
	snapshot(&before);
	size_t total = 0;
	for (size_t k = 0; k < sizeof mix / sizeof mix[0]; k++)
		for (int i = 0; i < mix[k].count; i++) {
			void *p = malloc(mix[k].size);
			if (!p) {
				vm_fail("counters: malloc(%zu) returned NULL", mix[k].size);
				continue;
			}
			vm_touch(p, mix[k].size);
			blk[nb++] = p;
			total += mix[k].size;
		}
	snapshot(&after); /* exact, this thread's fast-path counts folded in */
	/* The bytes on each node, as move_pages finds them: requested (malloc_requested) and
	 * usable (malloc_in_use counts blocks whole: a huge block's chunk is rounded up), a
	 * block's bytes shared out by where its pages are. */
	long long bytes[2][VM_MAX_NODES] = {{0}};
	int bi = 0;
	for (size_t k = 0; k < sizeof mix / sizeof mix[0]; k++)
		for (int i = 0; i < mix[k].count && bi < nb; i++, bi++) {
			size_t sz = mix[k].size;
			long long use = (long long)malloc_usable_size(blk[bi]);
			if (sz <= vm_page) {
				int n = vm_where1(blk[bi]);
				if (n >= 0 && n < VM_MAX_NODES) {
					bytes[0][n] += (long long)sz;
					bytes[1][n] += use;
				}
				continue;
			}
			struct addrs s;
			struct tally t;
			addrs_init(&s, (long)(sz / vm_page) + 2);
			addrs_add_block(&s, blk[bi], sz);
			tally(&s, &t);
			addrs_fini(&s);
			for (int n = 0; n < VM_MAX_NODES && t.pages; n++) {
				bytes[0][n] += (long long)sz * t.on[n] / t.pages;
				bytes[1][n] += use * t.on[n] / t.pages;
			}
		}
	static const struct {
		const char *name;
		size_t off;
	} items[] = {
		{"malloc_requested", offsetof(struct numa_page_node_stats, malloc_requested)},
		{"malloc_in_use", offsetof(struct numa_page_node_stats, malloc_in_use)},
	};
	for (int it = 0; it < 2; it++) {
		char got[256], why[256] = "";
		size_t o = 0, w = 0;
		bool ok = true;
		got[0] = 0;
		for (int n = 0; n <= vm_topo.max_node; n++) {
			if (!vm_topo.online[n])
				continue;
			long long d = (long long)(*(const uint64_t *)((const char *)&after.s[n] +
								      items[it].off) -
						  *(const uint64_t *)((const char *)&before.s[n] +
								      items[it].off));
			long long there = bytes[it][n];
			long long slack = 64 * 1024 + there / 50;
			long long diff = d - there;
			if (d || there)
				o += (size_t)snprintf(got + o, sizeof got - o, "%snode %d +%lld (move_pages "
						      "%lld)", o ? ", " : "", n, d, there);
			if ((n == c->node && d != 0) || diff > slack || diff < -slack) {
				ok = false;
				if (w < sizeof why)
					w += (size_t)snprintf(why + w, sizeof why - w, " node %d: +%lld, "
							      "%lld bytes there;", n, d, there);
			}
		}
		if (ok)
			vm_ok("counters: %s counts on the node that served, not the memoryless home "
			      "node %d (+0 there): %zu bytes malloc'ed; %s", items[it].name, c->node,
			      total, got);
		else
			vm_fail("counters: %s of a thread homed on memoryless node %d (%zu bytes "
				"malloc'ed) does not follow the served bytes:%s all: %s", items[it].name,
				c->node, total, why, got);
	}
	for (int i = 0; i < nb; i++)
		free(blk[i]);
	return NULL;
}

static void group_counters(void)
{
	struct cnt c = {.node = -1};
	for (int n = 0; n <= vm_topo.max_node && c.node < 0; n++)
		if (node_has_cpus(n) && !vm_topo.has_mem[n])
			c.node = n;
	if (c.node < 0) {
		vm_note("skipped: counters need a memoryless node with CPUs (2990wx, r7425)");
		return;
	}
	vm_note("counters: a thread on cpu %d (memoryless node %d)", vm_topo.first_cpu[c.node],
		c.node);
	vm_on_cpu(vm_topo.first_cpu[c.node], cnt_thread, &c);
}

/* ---- hotplug ------------------------------------------------------------------------------ */

static int cpu_online_set(int cpu, int on)
{
	char path[96];
	snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/online", cpu);
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	int rc = write(fd, on ? "1" : "0", 1) == 1 ? 0 : -errno;
	close(fd);
	return rc;
}

/* hotplug-child CPU NODE: started while CPU was offline (so the library's table never saw it),
 * brings it online and runs there: the home is NODE and the mix lands there (a helper's test:
 * the home was the first node with CPUs, all its pages were there, and counted as local). */
static int hotplug_child(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	int cpu = atoi(argv[2]), node = atoi(argv[3]);
	free(malloc(100)); /* the library is up, its table read without CPU */
	int rc = cpu_online_set(cpu, 1);
	if (rc < 0) {
		vm_fail("hotplug: bringing cpu %d online: %s", cpu, strerror(-rc));
		return vm_exit_status();
	}
	rc = vm_move_to_cpu(cpu);
	if (rc < 0) {
		vm_fail("hotplug: moving to cpu %d: %s", cpu, strerror(-rc));
		return vm_exit_status();
	}
	int home = numa_page_home_node();
	struct addrs s;
	struct tally t;
	char buf[256];
	addrs_init(&s, 1 << 16);
	size_t total = alloc_mix(&s);
	tally(&s, &t);
	addrs_fini(&s);
	per_node(&t, buf, sizeof buf);
	if (home == node && share(&t, node) >= 0.90)
		vm_ok("hotplug: on cpu %d, offline when the library started, home node %d and %.0f%% of "
		      "the %ld pages of %zu MiB of mixed mallocs on node %d (>= 90%%; %s)", cpu, home,
		      100 * share(&t, node), t.pages, total / MiB, node, buf);
	else
		vm_fail("hotplug: on cpu %d (node %d), offline when the library started: home node %d, "
			"%.0f%% of the %ld pages of %zu MiB of mixed mallocs on node %d, not >= 90%% (%s)",
			cpu, node, home, 100 * share(&t, node), t.pages, total / MiB, node, buf);
	agree_line("hotplug", &t);
	return vm_exit_status();
}

static void group_hotplug(void)
{
	/* The last CPU of a node with memory that is not CPU 0's (CPU 0 often cannot go offline,
	 * and an unknown CPU used to be given the first node with CPUs: CPU 0's), and with room
	 * for the mix past the library's reserve (not the small guest's small node). */
	int cpu = -1, node = -1;
	for (int c = vm_topo.ncpus - 1; c > 0 && cpu < 0; c--) {
		int n = vm_topo.cpu_node[c];
		if (n >= 0 && n != vm_topo.cpu_node[0] && vm_topo.has_mem[n] &&
		    node_meminfo_kb(n, "MemFree") >= 192 * 1024)
			cpu = c, node = n;
	}
	if (cpu < 0) {
		vm_note("skipped: hotplug needs a CPU of a second node with 192 MiB free");
		return;
	}
	int rc = cpu_online_set(cpu, 0);
	if (rc < 0) {
		vm_note("skipped: hotplug: cpu %d cannot go offline: %s", cpu, strerror(-rc));
		return;
	}
	char cs[16], ns[16];
	snprintf(cs, sizeof cs, "%d", cpu);
	snprintf(ns, sizeof ns, "%d", node);
	run_self("hotplug: the child", NULL, -1, NULL, "hotplug-child", cs, ns, NULL);
	cpu_online_set(cpu, 1);
}

/* ---- overcommit ------------------------------------------------------------------------- */

#define OC_PATH "/proc/sys/vm/overcommit_memory"
#define OC_CHUNK ((uintptr_t)16 << 20) /* NP_CHUNK_SIZE */
#define OC_MAX_CHUNKS 64

/* Bytes of [lo, hi) inside one of the chunks at base[0..n). */
static size_t oc_overlap(uintptr_t lo, uintptr_t hi, const uintptr_t *base, int n)
{
	size_t in = 0;
	for (int i = 0; i < n; i++) {
		uintptr_t a = lo > base[i] ? lo : base[i], b = hi < base[i] + OC_CHUNK ? hi : base[i] + OC_CHUNK;
		if (a < b)
			in += b - a;
	}
	return in;
}

/* The child, started under mode 2: small and 100 KiB blocks, then what its chunks are charged
 * (VMAs with "ac" in their VmFlags: the kernel's VM_ACCOUNT). */
static int overcommit_child(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	static void *blk[1220];
	uintptr_t base[OC_MAX_CHUNKS];
	int nb = 0;
	size_t bytes = 0;
	for (int i = 0; i < 1220; i++) {
		size_t sz = i < 1000 ? 100 : i < 1200 ? 3000 : 100 * 1024;
		blk[i] = malloc(sz);
		if (!blk[i]) {
			vm_fail("overcommit: malloc(%zu) failed under strict accounting: %s", sz, strerror(errno));
			return vm_exit_status();
		}
		memset(blk[i], 1, sz);
		bytes += sz;
		uintptr_t c = (uintptr_t)blk[i] & ~(OC_CHUNK - 1);
		int k = 0;
		while (k < nb && base[k] != c)
			k++;
		if (k == nb && nb < OC_MAX_CHUNKS)
			base[nb++] = c;
	}
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f) {
		vm_fail("overcommit: /proc/self/smaps: %s", strerror(errno));
		return vm_exit_status();
	}
	char line[512];
	uintptr_t lo = 0, hi = 0;
	size_t charged = 0, mapped = 0, total = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2) { /* a mapping's first line (fields: "Name:") */
			lo = a, hi = b;
			mapped += oc_overlap(lo, hi, base, nb);
		} else if (!strncmp(line, "VmFlags:", 8) && strstr(line, " ac")) {
			charged += oc_overlap(lo, hi, base, nb);
			total += hi - lo;
		}
	}
	fclose(f);
	for (int i = 0; i < 1220; i++)
		free(blk[i]);
	if (charged <= 8 * MiB && mapped >= (size_t)nb * OC_CHUNK && total <= 12 * MiB)
		vm_ok("overcommit: %zu KiB in 1,220 blocks under strict accounting; %d chunk(s), %zu MiB mapped, "
		      "%zu KiB of it charged (<= 8 MiB); the process is charged %zu KiB in all (<= 12 MiB)",
		      bytes >> 10, nb, mapped / MiB, charged >> 10, total >> 10);
	else
		vm_fail("overcommit: %zu KiB in 1,220 blocks under strict accounting; %d chunk(s), %zu MiB mapped, "
			"%zu KiB of it charged (want <= 8 MiB: a chunk charged whole?); the process is charged %zu KiB "
			"in all (want <= 12 MiB: the 8 MiB granule map charged whole?)", bytes >> 10, nb, mapped / MiB,
			charged >> 10, total >> 10);
	return vm_exit_status();
}

static void group_overcommit(void)
{
	/* A CPU of the memory node with the most free memory, 16 MiB above what makes the library
	 * call a node nearly full (src/node/node.c: its free memory below 5 reserves of 32 MiB and
	 * a 64th of the node: LOW_RESERVES past the one it keeps), where every
	 * new chunk is populated and verified whole, and so committed whole (a CI run of the
	 * small guest: 16,384 KiB charged). */
	int cpu = -1, node = -1;
	long best = 0;
	for (int c = 0; c < vm_topo.ncpus; c++) {
		int n = vm_topo.cpu_node[c];
		long free_kb = n >= 0 && vm_topo.has_mem[n] ? node_meminfo_kb(n, "MemFree") : 0;
		if (free_kb > best)
			best = free_kb, cpu = c, node = n;
	}
	if (cpu < 0 || best * (long)KiB < (long)(176 * MiB) + node_meminfo_kb(node, "MemTotal") * (long)KiB * 5 / 64) {
		vm_note("skipped: overcommit needs a node with CPUs and 176 MiB and 5/64 of it free (%ld KiB at most)",
			best);
		return;
	}
	vm_note("overcommit: the child on cpu %d of node %d, %ld MiB free there", cpu, node, best >> 10);
	char was[8] = "";
	int fd = open(OC_PATH, O_RDWR);
	ssize_t k = fd >= 0 ? read(fd, was, sizeof was - 1) : -1;
	if (fd < 0 || k <= 0 || pwrite(fd, "2\n", 2, 0) != 2) {
		vm_note("skipped: overcommit: %s cannot be set (%s)", OC_PATH, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	run_self("overcommit: the child", NULL, cpu, NULL, "overcommit-child", NULL);
	if (pwrite(fd, was, (size_t)k, 0) != k)
		vm_fail("overcommit: %s not set back to %.*s", OC_PATH, (int)k, was);
	close(fd);
}

/* ---- The driver ---------------------------------------------------------------------------- */

static const struct {
	const char *name;
	void (*fn)(void);
} groups[] = {
	{"migrate", group_migrate},   {"counters", group_counters}, {"policy", group_policy},
	{"memoryless", group_memoryless}, {"race", group_race},   {"full", group_full},
	{"hotplug", group_hotplug}, {"overcommit", group_overcommit},
};
#define NGROUPS (sizeof groups / sizeof groups[0])

static const struct {
	const char *name;
	int (*fn)(int, char **);
} modes[] = {
	{"policy-child", policy_child},
	{"bound-child", bound_child},
	{"full-child", full_child},
	{"balance-run", balance_child},
	{"race-child", race_child},
	{"hotplug-child", hotplug_child},
	{"hog-child", hog_child},
	{"overcommit-child", overcommit_child},
};

int main(int argc, char **argv)
{
	vm_topo_load();
	ssize_t k = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
	self_exe[k > 0 ? k : 0] = 0;
	if (argc > 1)
		for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
			if (!strcmp(argv[1], modes[i].name))
				return modes[i].fn(argc, argv);
	vm_note("libnumapage %s", numa_page_version());
	for (size_t g = 0; g < NGROUPS; g++) {
		bool want = argc < 2;
		for (int i = 1; i < argc; i++)
			want |= !strcmp(argv[i], groups[g].name);
		if (want)
			groups[g].fn();
	}
	return vm_exit_status() | child_failed;
}
