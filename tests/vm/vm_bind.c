/*
 * vm_bind.c — the library keeps working when the kernel refuses a bind. The process starts
 * with every node allowed, lets the library start up, then moves itself into a cgroup v2
 * cpuset whose memory is one node (B) only: from then on an mbind to any other node (A) is
 * EINVAL. Asking for A's memory (by id, and from a thread on A's CPUs) must still succeed:
 * once the library maps a new chunk for A and the bind is refused (counted in bind_fail), the
 * fallback order serves A's requests from B with numa_page_node_of agreeing with move_pages;
 * nothing may crash. Run last: it removes its cgroup only after moving back to the root.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "numapage.h"
#include "vm_common.h"

#define CG "/sys/fs/cgroup"
#define CG_DIR CG "/np_vm_bind"

static int put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	int e = n < 0 ? -errno : 0;
	close(fd);
	return e;
}

/* Moves this process into a cpuset with every CPU and node mem only. */
static int confine(int mem)
{
	char buf[64];
	int e;
	if (mount("none", CG, "cgroup2", 0, NULL) != 0 && errno != EBUSY)
		return -errno;
	if ((e = put(CG "/cgroup.subtree_control", "+cpuset")) != 0)
		return e;
	if (mkdir(CG_DIR, 0755) != 0 && errno != EEXIST)
		return -errno;
	snprintf(buf, sizeof buf, "0-%d", vm_topo.ncpus - 1);
	if ((e = put(CG_DIR "/cpuset.cpus", buf)) != 0)
		return e;
	snprintf(buf, sizeof buf, "%d", mem);
	if ((e = put(CG_DIR "/cpuset.mems", buf)) != 0)
		return e;
	snprintf(buf, sizeof buf, "%d", (int)getpid());
	return put(CG_DIR "/cgroup.procs", buf);
}

static void release(void)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%d", (int)getpid());
	put(CG "/cgroup.procs", buf);
	rmdir(CG_DIR);
}

static const char *mems_allowed(char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/status", "r");
	buf[0] = 0;
	while (f && fgets(buf, (int)len, f))
		if (strncmp(buf, "Mems_allowed_list:", 18) == 0) {
			buf[strcspn(buf, "\n")] = 0;
			memmove(buf, buf + 19, strlen(buf + 19) + 1);
			break;
		}
	if (f)
		fclose(f);
	return buf;
}

/* Where the pages of [p, p + len) are: *on_want when every page is on node want (the only one
 * allowed), *agree when numa_page_node_of says the same as move_pages for every page. */
static void judge(void *p, size_t len, int want, bool *on_want, bool *agree, char *why,
		  size_t whylen)
{
	static __thread int st[VM_WHERE_MAX];
	*on_want = *agree = false;
	if (!p) {
		snprintf(why, whylen, "allocation failed: errno %d", errno);
		return;
	}
	vm_touch(p, len);
	int n = vm_where(p, len, st, VM_WHERE_MAX);
	if (n < 0) {
		snprintf(why, whylen, "move_pages: errno %d", -n);
		return;
	}
	*on_want = *agree = true;
	for (int i = 0; i < n; i++) {
		int claimed = numa_page_node_of((char *)p + (size_t)i * vm_page);
		if (st[i] != want && *on_want) {
			*on_want = false;
			snprintf(why, whylen, "page %d on node %d", i, st[i]);
		}
		if (claimed != st[i] && *agree) {
			*agree = false;
			snprintf(why, whylen, "page %d: numa_page_node_of %d, move_pages %d", i,
				 claimed, st[i]);
		}
	}
}

struct job {
	int mem;
	bool on_want, agree, malloc_ok;
	char why[200];
};

static void *alloc_on_refused_node(void *arg)
{
	struct job *j = arg;
	void *p = numa_page_alloc(16 * vm_page);
	judge(p, 16 * vm_page, j->mem, &j->on_want, &j->agree, j->why, sizeof j->why);
	numa_page_free(p);
	void *m = malloc(3000); /* the malloc family goes on working too */
	j->malloc_ok = m != NULL;
	if (m)
		memset(m, 1, 3000);
	free(m);
	return NULL;
}

/* B: the last memory node with CPUs (else the last one); A: the first other memory node;
 * cpu_b: a CPU whose threads get B's memory and no other. false when there are not two memory nodes. */
static bool pick(int *a, int *b, int *cpu_b)
{
	int mems[VM_MAX_NODES], nm = vm_mem_nodes(mems);
	if (nm < 2)
		return false;
	*b = mems[nm - 1];
	*a = -1;
	*cpu_b = -1;
	for (int i = nm - 1; i >= 0; i--)
		if (vm_topo.first_cpu[mems[i]] >= 0) {
			*b = mems[i];
			break;
		}
	for (int i = 0; i < nm && *a < 0; i++)
		if (mems[i] != *b)
			*a = mems[i];
	/* A CPU whose threads may get memory from b only (2990wx: not the memoryless node 1's,
	 * which may be served from 0 as well). */
	for (int c = 0; c < vm_topo.ncpus && *cpu_b < 0; c++) {
		int n = vm_topo.cpu_node[c], ok = 0;
		for (int m = 0; n >= 0 && m <= vm_topo.max_node; m++)
			ok += vm_node_ok(n, m);
		if (n >= 0 && ok == 1 && vm_node_ok(n, *b))
			*cpu_b = c;
	}
	return *cpu_b >= 0;
}

#define STEP (16 * 4096)
#define LIMIT (96 << 20)

static void check_refused_bind(int a, int b)
{
	static void *held[LIMIT / STEP];
	int nheld = 0;
	char buf[64], why[200];
	bool on_b, agree;
	struct numa_page_node_stats s0, s1;
	numa_page_free(numa_page_alloc_onnode(4096, b));
	numa_page_stats_get(a, &s0);
	/* The library's own count, as a precondition only: memory mapped for a before the change
	 * would be moved to b by the kernel without any refusal (and stay a's by the contract). */
	bool before = s0.chunks_mapped > 0;

	int e = confine(b);
	if (e) {
		vm_fail("refused bind: could not confine the process to node %d's memory with a "
			"cgroup v2 cpuset: %s", b, strerror(-e));
		return;
	}
	vm_note("refused bind: process confined to node %d's memory (Mems_allowed_list %s); "
		"chunks mapped for node %d before: %llu", b, mems_allowed(buf, sizeof buf), a,
		(unsigned long long)s0.chunks_mapped);

	/* Ask node a for memory (untouched) until the library maps a new chunk for it and the
	 * kernel refuses the bind. Pages of a chunk bound before the change are not judged: the
	 * kernel moved their policy to b, and they were bound to a as numa_page_node_of says. */
	numa_page_stats_get(a, &s0);
	s1 = s0;
	while (s1.bind_fail == s0.bind_fail && nheld < LIMIT / STEP) {
		held[nheld] = numa_page_alloc_onnode(STEP, a);
		if (!held[nheld])
			break;
		nheld++;
		numa_page_stats_get(a, &s1);
	}
	if (s1.bind_fail == s0.bind_fail) {
		vm_fail("refused bind: %d KiB asked of node %d with only node %d allowed, and no "
			"refused bind was counted (bind_fail of node %d +0%s)", nheld * STEP / 1024,
			a, b, a, nheld < LIMIT / STEP ? "; an allocation failed" : "");
	} else {
		vm_ok("refused bind: counted (bind_fail of node %d +%llu after %d KiB)", a,
		      (unsigned long long)(s1.bind_fail - s0.bind_fail), nheld * STEP / 1024);
		/* From now on requests for a meet the refusal: the fallback order must serve them,
		 * and the library must know where their pages are. */
		void *p = numa_page_alloc_onnode(32 * vm_page, a);
		judge(p, 32 * vm_page, b, &on_b, &agree, why, sizeof why);
		if (on_b && agree)
			vm_ok("refused bind: numa_page_alloc_onnode(%d) is then served from node %d; "
			      "numa_page_node_of agrees", a, b);
		else
			vm_fail("refused bind: numa_page_alloc_onnode(%d) after the refusal: %s", a,
				why);
		numa_page_free(p);
	}
	for (int i = 0; i < nheld; i++)
		numa_page_free(held[i]);

	if (vm_topo.first_cpu[a] >= 0) {
		struct job j = {.mem = b};
		vm_on_cpu(vm_topo.first_cpu[a], alloc_on_refused_node, &j);
		if (j.on_want && j.malloc_ok)
			vm_ok("refused bind: a thread on node %d's cpu %d gets node %d's pages and "
			      "malloc works", a, vm_topo.first_cpu[a], b);
		else
			vm_fail("refused bind: a thread on node %d's cpu %d: %s", a,
				vm_topo.first_cpu[a], j.malloc_ok ? j.why : "malloc failed");
		if (j.on_want && !j.agree && before)
			vm_note("refused bind: a thread on node %d: %s (memory bound before the "
				"change counts as bound to %d)", a, j.why, a);
		else if (j.on_want && !j.agree)
			vm_fail("refused bind: a thread on node %d gets node %d's pages, but %s", a, b,
				j.why);
	}
	release();
}

int main(int argc, char **argv)
{
	int a, b, cpu_b;
	vm_topo_load();
	if (!pick(&a, &b, &cpu_b)) {
		vm_note("refused bind: needs two nodes with memory and CPUs near one of them");
		return 0;
	}
	/* Nothing may be mapped for node A before the change, or the kernel would quietly move
	 * its policy to B (a different case): start again pinned to B's CPU, so that even the
	 * library's and libc's start-up run there. */
	if (argc < 2 || strcmp(argv[1], "--on-b") != 0) {
		if (vm_move_to_cpu(cpu_b) != 0) {
			vm_fail("refused bind: cannot run on cpu %d", cpu_b);
			return 1;
		}
		fflush(stdout);
		execl("/proc/self/exe", argv[0], "--on-b", (char *)NULL);
		vm_fail("refused bind: exec /proc/self/exe: %s", strerror(errno));
		return 1;
	}
	vm_note("libnumapage %s: node %d's memory will be refused, node %d's allowed",
		numa_page_version(), a, b);
	check_refused_bind(a, b);
	return vm_exit_status();
}
