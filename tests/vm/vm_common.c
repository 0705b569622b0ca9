/*
 * vm_common.c — result lines, the kernel's topology from /sys, move_pages queries and pinned
 * threads for the vm tier's guest programs (see vm_common.h). Runs inside the QEMU guests; the
 * output goes to a slow serial port, so callers print one line per check, not per page.
 */
#include "vm_common.h"

#include <errno.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct vm_topo vm_topo;
size_t vm_page;
static atomic_int nfailed;

static void line(const char *prefix, const char *fmt, va_list ap)
{
	char buf[1024];
	vsnprintf(buf, sizeof buf, fmt, ap);
	/* One write per line: pinned threads may report concurrently. */
	flockfile(stdout);
	printf("%s%s\n", prefix, buf);
	fflush(stdout);
	funlockfile(stdout);
}

void vm_first(char *buf, size_t size, const char *fmt, ...)
{
	if (buf[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

void vm_ok(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	line("ok - ", fmt, ap);
	va_end(ap);
}

void vm_fail(const char *fmt, ...)
{
	va_list ap;
	atomic_fetch_add(&nfailed, 1);
	va_start(ap, fmt);
	line("not ok - ", fmt, ap);
	va_end(ap);
}

void vm_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	line("# ", fmt, ap);
	va_end(ap);
}

int vm_exit_status(void)
{
	return atomic_load(&nfailed) ? 1 : 0;
}

static void die(const char *what)
{
	printf("not ok - reading the kernel's topology: %s: %s\n", what, strerror(errno));
	exit(1);
}

static char *read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		die(path);
	size_t n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* Calls fn(id) for every id of a kernel list ("0-3,8"). */
static void each_in_list(const char *s, void (*fn)(int, void *), void *arg)
{
	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b = a;
		if (end == s)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long i = a; i <= b; i++)
			fn((int)i, arg);
		s = *end == ',' ? end + 1 : end;
	}
}

static void mark_online(int n, void *arg)
{
	(void)arg;
	if (n < VM_MAX_NODES) {
		vm_topo.online[n] = true;
		if (n > vm_topo.max_node)
			vm_topo.max_node = n;
	}
}

static void mark_cpu(int cpu, void *arg)
{
	int n = *(int *)arg;
	if (cpu >= VM_MAX_CPUS)
		return;
	vm_topo.cpu_node[cpu] = n;
	if (vm_topo.first_cpu[n] < 0)
		vm_topo.first_cpu[n] = cpu;
	vm_topo.ncpus_of[n]++;
	if (cpu + 1 > vm_topo.ncpus)
		vm_topo.ncpus = cpu + 1;
}

void vm_topo_load(void)
{
	char buf[4096], path[128];
	vm_page = (size_t)sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&vm_topo, 0, sizeof vm_topo);
	vm_topo.max_node = -1;
	for (int i = 0; i < VM_MAX_NODES; i++)
		vm_topo.first_cpu[i] = -1;
	for (int i = 0; i < VM_MAX_CPUS; i++)
		vm_topo.cpu_node[i] = -1;
	each_in_list(read_file("/sys/devices/system/node/online", buf, sizeof buf), mark_online,
		     NULL);
	for (int n = 0; n <= vm_topo.max_node; n++) {
		if (!vm_topo.online[n])
			continue;
		snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", n);
		each_in_list(read_file(path, buf, sizeof buf), mark_cpu, &n);
		snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", n);
		const char *m = strstr(read_file(path, buf, sizeof buf), "MemTotal:");
		vm_topo.has_mem[n] = m && strtol(m + 9, NULL, 10) > 0;
		snprintf(path, sizeof path, "/sys/devices/system/node/node%d/distance", n);
		char *s = read_file(path, buf, sizeof buf);
		for (int j = 0; j <= vm_topo.max_node; j++)
			vm_topo.dist[n][j] = (int)strtol(s, &s, 10);
	}
	if (vm_topo.max_node < 0 || vm_topo.ncpus == 0)
		die("no nodes or no CPUs");
}

/* Distance from home to its nearest memory node (0 when home has memory). */
static int nearest_mem_dist(int home)
{
	if (vm_topo.has_mem[home])
		return 0;
	int best = -1;
	for (int n = 0; n <= vm_topo.max_node; n++)
		if (vm_topo.online[n] && vm_topo.has_mem[n] &&
		    (best < 0 || vm_topo.dist[home][n] < best))
			best = vm_topo.dist[home][n];
	return best;
}

bool vm_node_ok(int home, int got)
{
	if (home < 0 || home > vm_topo.max_node || got < 0 || got > vm_topo.max_node)
		return false;
	if (vm_topo.has_mem[home])
		return got == home;
	return vm_topo.has_mem[got] && vm_topo.dist[home][got] == nearest_mem_dist(home);
}

const char *vm_expect_str(int home, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = 0;
	for (int n = 0; n <= vm_topo.max_node && o < len; n++)
		if (vm_node_ok(home, n))
			o += (size_t)snprintf(buf + o, len - o, "%s%d", o ? "," : "", n);
	return buf;
}

int vm_mem_nodes(int *out)
{
	int k = 0;
	for (int n = 0; n <= vm_topo.max_node; n++)
		if (vm_topo.online[n] && vm_topo.has_mem[n])
			out[k++] = n;
	return k;
}

void vm_touch(void *p, size_t len)
{
	volatile char *c = p;
	for (size_t o = 0; o < len; o += vm_page)
		c[o] = (char)(o >> 12 | 1);
	if (len)
		c[len - 1] = 1;
}

int vm_where(const void *p, size_t len, int *status, int max)
{
	uintptr_t first = (uintptr_t)p & ~(uintptr_t)(vm_page - 1);
	uintptr_t last = ((uintptr_t)p + (len ? len - 1 : 0)) & ~(uintptr_t)(vm_page - 1);
	int n = (int)((last - first) / vm_page) + 1;
	void *pages[VM_WHERE_MAX];
	if (n > max || n > VM_WHERE_MAX)
		return -E2BIG;
	for (int i = 0; i < n; i++)
		pages[i] = (void *)(first + (uintptr_t)i * vm_page);
	if (move_pages(0, (unsigned long)n, pages, NULL, status, 0) != 0)
		return -errno;
	return n;
}

int vm_where1(const void *p)
{
	int st;
	int r = vm_where(p, 1, &st, 1);
	return r < 0 ? r : st;
}

void *vm_on_cpu(int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	pthread_t t;
	cpu_set_t set;
	void *ret = NULL;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_init(&a);
	pthread_attr_setaffinity_np(&a, sizeof set, &set);
	int e = pthread_create(&t, &a, fn, arg);
	pthread_attr_destroy(&a);
	if (e) {
		vm_fail("pthread_create on cpu %d: %s", cpu, strerror(e));
		return NULL;
	}
	pthread_join(t, &ret);
	return ret;
}

int vm_move_to_cpu(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0)
		return -errno;
	/* The kernel migrates a thread off a CPU it may no longer use before the call returns;
	 * yield a few times in case it has not run here yet. */
	for (int i = 0; i < 100 && sched_getcpu() != cpu; i++)
		sched_yield();
	return sched_getcpu() == cpu ? 0 : -EAGAIN;
}

bool vm_pick_pair(int *a, int *b)
{
	for (int x = 0; x < vm_topo.ncpus; x++)
		for (int y = 0; y < vm_topo.ncpus; y++) {
			int nx = vm_topo.cpu_node[x], ny = vm_topo.cpu_node[y];
			if (nx < 0 || ny < 0 || nx == ny)
				continue;
			bool overlap = false;
			for (int m = 0; m <= vm_topo.max_node; m++)
				overlap |= vm_node_ok(nx, m) && vm_node_ok(ny, m);
			if (!overlap) {
				*a = x;
				*b = y;
				return true;
			}
		}
	return false;
}
