/*
 * vm_malloc.c — the malloc family, served by libnumapage, puts memory where the calling
 * thread's node wants it. Built twice: vm_malloc links libnumapage (the -lnumapage door) and
 * vm_malloc_preload does not, and runs under LD_PRELOAD (the preload door; it finds
 * numa_page_node_of with dlsym). Both check that malloc really is libnumapage's; move_pages(2)
 * is the judge and /sys the oracle (vm_common.c). Objects freed by a thread of another node must
 * go back to their own node: afterwards each node's threads get only their own node's memory.
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numapage.h"
#include "vm_common.h"

static __typeof__(numa_page_node_of) *node_of;
static const char *door;

static const size_t sizes[] = {16, 48, 100, 256, 1000, 2048, 4000, 9000, 70000, 600000};
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define MAXOBJ 256

struct result {
	int objects, pages;
	int misplaced, absent, disagree, failed, notzero;
	int on[VM_MAX_NODES];
	char first[200];
};

/* The first problem, for the message (vm_common.c). */
#define first(r, ...) vm_first((r)->first, sizeof (r)->first, __VA_ARGS__)

/* Where the pages of one object are, against home's accepted nodes and numa_page_node_of. */
static void judge(struct result *r, void *p, size_t len, int home)
{
	static __thread int st[VM_WHERE_MAX];
	if (!p) {
		r->failed++;
		first(r, "allocation of %zu bytes returned NULL (errno %d)", len, errno);
		return;
	}
	r->objects++;
	int n = vm_where(p, len, st, VM_WHERE_MAX);
	if (n < 0) {
		r->failed++;
		first(r, "move_pages: errno %d", -n);
		return;
	}
	for (int i = 0; i < n; i++) {
		r->pages++;
		if (st[i] < 0) {
			r->absent++;
			first(r, "object %p page %d: move_pages status %d", p, i, st[i]);
			continue;
		}
		r->on[st[i]]++;
		if (!vm_node_ok(home, st[i])) {
			r->misplaced++;
			first(r, "%zu-byte object %p: page %d on node %d, home node %d", len, p, i,
			      st[i], home);
		}
	}
	int claimed = node_of(p);
	if (st[0] >= 0 && claimed != st[0]) {
		r->disagree++;
		first(r, "%zu-byte object %p: numa_page_node_of %d, move_pages %d", len, p, claimed,
		      st[0]);
	}
}

static bool clean(const struct result *r)
{
	return r->objects && !r->misplaced && !r->absent && !r->disagree && !r->failed &&
	       !r->notzero;
}

static const char *nodes_str(const struct result *r, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = 0;
	for (int n = 0; n < VM_MAX_NODES && o < len; n++)
		if (r->on[n])
			o += (size_t)snprintf(buf + o, len - o, "%s%d on %d", o ? ", " : "", r->on[n],
					      n);
	return buf;
}

/* ---- malloc, calloc, posix_memalign from a thread pinned to each CPU -------------------- */

struct job {
	int node;
	struct result r;
};

static void *alloc_here(void *arg)
{
	struct job *j = arg;
	static __thread void *obj[NSIZES][MAXOBJ];
	int count[NSIZES];
	for (size_t s = 0; s < NSIZES; s++) {
		count[s] = (int)(32768 / sizes[s]);
		count[s] = count[s] < 2 ? 2 : count[s] > MAXOBJ ? MAXOBJ : count[s];
		for (int k = 0; k < count[s]; k++) {
			switch (k % 3) {
			case 0:
				obj[s][k] = malloc(sizes[s]);
				break;
			case 1:
				obj[s][k] = calloc(1, sizes[s]);
				if (obj[s][k])
					for (size_t b = 0; b < sizes[s]; b += 97)
						if (((char *)obj[s][k])[b])
							j->r.notzero++;
				break;
			default:
				if (posix_memalign(&obj[s][k], 64, sizes[s]) != 0)
					obj[s][k] = NULL;
			}
			if (obj[s][k])
				memset(obj[s][k], 0x5a, sizes[s]);
		}
	}
	for (size_t s = 0; s < NSIZES; s++)
		for (int k = 0; k < count[s]; k++)
			judge(&j->r, obj[s][k], sizes[s], j->node);
	for (size_t s = 0; s < NSIZES; s++)
		for (int k = 0; k < count[s]; k++)
			free(obj[s][k]);
	if (j->r.notzero)
		first(&j->r, "calloc returned memory that was not zeroed (%d bytes)", j->r.notzero);
	return NULL;
}

static void check_every_cpu(void)
{
	char exp[64], got[256];
	for (int cpu = 0; cpu < vm_topo.ncpus; cpu++) {
		struct job j = {.node = vm_topo.cpu_node[cpu]};
		if (j.node < 0)
			continue;
		vm_on_cpu(cpu, alloc_here, &j);
		vm_expect_str(j.node, exp, sizeof exp);
		if (clean(&j.r))
			vm_ok("%s: malloc/calloc/posix_memalign on cpu %d (node %d%s): %d objects, "
			      "pages %s (expected %s)", door, cpu, j.node,
			      vm_topo.has_mem[j.node] ? "" : ", memoryless", j.r.objects,
			      nodes_str(&j.r, got, sizeof got), exp);
		else
			vm_fail("%s: malloc on cpu %d (node %d): pages %s (expected %s): %s", door, cpu,
				j.node, nodes_str(&j.r, got, sizeof got), exp, j.r.first);
	}
}

/* ---- Objects freed on another node go home ------------------------------------------------ */

#define NCROSS 3000
static void *cross[NCROSS];

static size_t cross_size(int i)
{
	return sizes[i % 8]; /* small and medium objects: they share slabs */
}

static void *make(void *arg)
{
	(void)arg;
	for (int i = 0; i < NCROSS; i++) {
		cross[i] = malloc(cross_size(i));
		if (cross[i])
			memset(cross[i], 1, cross_size(i));
	}
	return NULL;
}

static void *drop(void *arg)
{
	(void)arg;
	for (int i = 0; i < NCROSS; i++)
		free(cross[i]);
	return NULL;
}

/* After the run: as many objects again, from a thread of the node itself. */
static void *again(void *arg)
{
	struct job *j = arg;
	for (int i = 0; i < NCROSS; i++) {
		cross[i] = malloc(cross_size(i));
		if (cross[i])
			memset(cross[i], 2, cross_size(i));
	}
	for (int i = 0; i < NCROSS; i++)
		judge(&j->r, cross[i], cross_size(i), j->node);
	for (int i = 0; i < NCROSS; i++)
		free(cross[i]);
	return NULL;
}

static void check_cross_free(void)
{
	int a, b;
	char got[128], got2[128];
	if (!vm_pick_pair(&a, &b)) {
		vm_note("%s: no two CPUs get memory from different nodes here", door);
		return;
	}
	struct job ja = {.node = vm_topo.cpu_node[a]}, jb = {.node = vm_topo.cpu_node[b]};
	vm_on_cpu(a, make, NULL);
	vm_on_cpu(b, drop, NULL);
	vm_on_cpu(b, again, &jb);
	vm_on_cpu(a, again, &ja);
	if (clean(&jb.r) && clean(&ja.r))
		vm_ok("%s: %d objects malloc'ed on cpu %d and freed on cpu %d went home: cpu %d then "
		      "gets %s, cpu %d gets %s", door, NCROSS, a, b, b,
		      nodes_str(&jb.r, got, sizeof got), a,
		      nodes_str(&ja.r, got2, sizeof got2));
	else
		vm_fail("%s: after objects of cpu %d were freed on cpu %d: %s", door, a, b,
			clean(&jb.r) ? ja.r.first : jb.r.first);
}

int main(int argc, char **argv)
{
	(void)argc;
	door = strstr(argv[0], "preload") ? "LD_PRELOAD" : "linked";
	vm_topo_load();
	void *lib = dlopen("libnumapage.so.0", RTLD_NOLOAD | RTLD_LAZY);
	if (!lib) {
		vm_fail("%s: libnumapage.so.0 is not loaded in this process", door);
		return 1;
	}
#ifdef VM_LINKED
	node_of = numa_page_node_of;
#else
	/* Not linked with libnumapage: its functions are found in the preloaded library. */
	node_of = (__typeof__(node_of))dlsym(RTLD_DEFAULT, "numa_page_node_of");
#endif
	void *lib_malloc = dlsym(lib, "malloc"), *used_malloc = dlsym(RTLD_DEFAULT, "malloc");
	Dl_info own, used;
	bool lib_defines = dladdr(lib_malloc, &own) && strstr(own.dli_fname, "libnumapage");
	bool lib_serves = dladdr(used_malloc, &used) && strstr(used.dli_fname, "libnumapage");
	if (!lib_defines) {
		vm_fail("%s: libnumapage does not define malloc (built with -Doverride=false?)", door);
		return 1;
	}
	if (!lib_serves) {
		vm_fail("%s: malloc resolves to %s, not libnumapage", door, used.dli_fname);
		return 1;
	}
	vm_ok("%s: malloc is libnumapage's", door);
	if (!node_of) {
		vm_fail("%s: numa_page_node_of not found", door);
		return 1;
	}
	void *probe = malloc(100);
	if (node_of(probe) < 0)
		vm_fail("%s: numa_page_node_of(malloc(100)) = -1: not the library's memory", door);
	free(probe);
	check_every_cpu();
	check_cross_free();
	return vm_exit_status();
}
