/*
 * page_bench — per-call cost of the page API: numa_page_alloc_onnode/numa_page_free against
 * libnuma's numa_alloc_onnode/numa_free and against plain mmap+mbind/munmap, 4 KiB..1 MiB, at
 * each thread count given, each thread on its own CPU's node. Two modes: "bare" (allocate and
 * free, as a pool would be measured) and "touch" (write one byte per page, check it, free; what
 * a program pays). Each round allocates 16 blocks and frees them, so no API can just hand the
 * same block back; one untimed round warms each measurement up. Prints one line per measurement:
 *   page api=A mode=M size=S threads=T iters=N ns=X cpu_ns=Y
 * (ns: wall time per alloc+free pair; cpu_ns: the thread's CPU time, which leaves out the time
 * it waited for a CPU on a busy machine but keeps spinning on a lock).
 * libnumapage's functions are looked up at run time (the process normally runs with
 * LD_PRELOAD=libnumapage.so; else NPBENCH_NUMAPAGE_LIB names it), so this program builds before
 * the page API exists and exits 77 ("skipped") when it does not.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "numapage.h"

#define PB_BATCH 16
/* The page API is 20-200x faster than the system calls: it runs this many times more rounds,
 * or its loops end in tens of microseconds and the threads of a multi-threaded measurement
 * barely overlap (the 2-thread numbers then swung between 1x and 10x the 1-thread ones). */
#define PB_NUMAPAGE_MORE 50
#define PB_SKIP 77

static __typeof__(numa_page_alloc_onnode) *np_alloc_onnode;
static __typeof__(numa_page_free) *np_free;
static __typeof__(numa_page_node_of) *np_node_of;

enum pb_api { PB_NUMAPAGE, PB_LIBNUMA, PB_MMAP, PB_NAPIS };
static const char *const pb_api_name[PB_NAPIS] = {"numapage", "libnuma", "mmap+mbind"};

struct pb_job {
	enum pb_api api;
	int touch;
	size_t size;
	long iters;
	pthread_barrier_t *start;
	double ns;
	double cpu_ns; /* the thread's own CPU time per pair: without the time it waited for a CPU */
};

static __attribute__((noreturn, format(printf, 1, 2))) void pb_fail(const char *fmt, ...)
{
	va_list ap;
	fputs("page_bench: CHECK FAILED: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static double pb_cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double pb_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *pb_alloc(enum pb_api api, size_t size, int node)
{
	void *p;
	switch (api) {
	case PB_NUMAPAGE: {
		/* numa_page_node_of asks the kernel (move_pages) where a touched page is: a system
		 * call, not part of the page API's cost. Checked on one call in 256. */
		static _Thread_local unsigned checks;
		p = np_alloc_onnode(size, node);
		if (p && (checks++ & 255) == 0 && np_node_of(p) != node)
			pb_fail("numa_page_node_of(%p) = %d, expected %d", p, np_node_of(p), node);
		return p;
	}
	case PB_LIBNUMA:
		return numa_alloc_onnode(size, node);
	case PB_MMAP: {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		unsigned long mask[16] = {0};
		mask[node / (8 * sizeof(long))] |= 1ul << (node % (8 * sizeof(long)));
		if (mbind(p, size, MPOL_BIND, mask, sizeof mask * 8, 0))
			pb_fail("mbind(node %d): %s", node, strerror(errno));
		return p;
	}
	default:
		return NULL;
	}
}

static void pb_free(enum pb_api api, void *p, size_t size)
{
	switch (api) {
	case PB_NUMAPAGE:
		np_free(p);
		break;
	case PB_LIBNUMA:
		numa_free(p, size);
		break;
	case PB_MMAP:
		munmap(p, size);
		break;
	default:
		break;
	}
}

static void *pb_thread(void *arg)
{
	struct pb_job *j = arg;
	int cpu = sched_getcpu();
	int node = cpu >= 0 ? numa_node_of_cpu(cpu) : 0;
	if (node < 0)
		node = 0;
	long page = sysconf(_SC_PAGESIZE);
	void *blk[PB_BATCH];
	pthread_barrier_wait(j->start);
	/* One untimed batch first, so a pool's first faults are not charged to short runs. */
	double t0 = 0, c0 = 0;
	for (long i = -PB_BATCH; i < j->iters; i += PB_BATCH) {
		if (i == 0) {
			t0 = pb_now();
			c0 = pb_cpu_now();
		}
		for (int b = 0; b < PB_BATCH; b++) {
			unsigned char *p = pb_alloc(j->api, j->size, node);
			if (!p)
				pb_fail("%s: allocation of %zu bytes on node %d failed: %s", pb_api_name[j->api],
					j->size, node, strerror(errno));
			if ((uintptr_t)p % (uintptr_t)page)
				pb_fail("%s: %p is not page-aligned", pb_api_name[j->api], (void *)p);
			if (j->touch)
				for (size_t off = 0; off < j->size; off += (size_t)page)
					p[off] = (unsigned char)(b + off / (size_t)page);
			blk[b] = p;
		}
		for (int b = 0; b < PB_BATCH; b++) {
			unsigned char *p = blk[b];
			if (j->touch)
				for (size_t off = 0; off < j->size; off += (size_t)page)
					if (p[off] != (unsigned char)(b + off / (size_t)page))
						pb_fail("%s: block %p lost its byte at %zu", pb_api_name[j->api],
							(void *)p, off);
			pb_free(j->api, p, j->size);
		}
	}
	j->ns = (pb_now() - t0) / (double)j->iters;
	j->cpu_ns = (pb_cpu_now() - c0) / (double)j->iters;
	return NULL;
}

/* Per pair (alloc + free) in ns, the mean over the threads; *cpu_ns: the same in thread CPU time. */
static double pb_measure(enum pb_api api, int touch, size_t size, long iters, int threads, double *cpu_ns)
{
	struct pb_job *jobs = calloc((size_t)threads, sizeof *jobs);
	pthread_t *tid = calloc((size_t)threads, sizeof *tid);
	pthread_barrier_t start;
	if (!jobs || !tid)
		pb_fail("calloc failed");
	pthread_barrier_init(&start, NULL, (unsigned)threads);
	for (int t = 0; t < threads; t++) {
		jobs[t] = (struct pb_job){api, touch, size, iters, &start, 0, 0};
		if (pthread_create(&tid[t], NULL, pb_thread, &jobs[t]))
			pb_fail("pthread_create failed");
	}
	double sum = 0, cpu = 0;
	for (int t = 0; t < threads; t++) {
		pthread_join(tid[t], NULL);
		sum += jobs[t].ns;
		cpu += jobs[t].cpu_ns;
	}
	*cpu_ns = cpu / threads;
	pthread_barrier_destroy(&start);
	free(jobs);
	free(tid);
	return sum / threads;
}

static int pb_resolve(void)
{
	np_alloc_onnode = (__typeof__(np_alloc_onnode))dlsym(RTLD_DEFAULT, "numa_page_alloc_onnode");
	if (!np_alloc_onnode) {
		const char *lib = getenv("NPBENCH_NUMAPAGE_LIB");
		if (!lib || !dlopen(lib, RTLD_NOW | RTLD_GLOBAL))
			return -1;
		np_alloc_onnode = (__typeof__(np_alloc_onnode))dlsym(RTLD_DEFAULT, "numa_page_alloc_onnode");
	}
	np_free = (__typeof__(np_free))dlsym(RTLD_DEFAULT, "numa_page_free");
	np_node_of = (__typeof__(np_node_of))dlsym(RTLD_DEFAULT, "numa_page_node_of");
	return np_alloc_onnode && np_free && np_node_of ? 0 : -1;
}

int main(int argc, char **argv)
{
	double scale = 1.0;
	char threads_arg[256] = "1";
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--scale"))
			scale = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--threads"))
			snprintf(threads_arg, sizeof threads_arg, "%s", argv[i + 1]);
		else {
			fprintf(stderr, "usage: page_bench [--scale X] [--threads 1,N]\n");
			return 64;
		}
	}
	if (!(scale > 0)) {
		fprintf(stderr, "page_bench: bad scale\n");
		return 64;
	}
	if (pb_resolve()) {
		printf("page_bench: skipped: numa_page_alloc_onnode/numa_page_free/numa_page_node_of not found "
		       "(preload libnumapage.so or set NPBENCH_NUMAPAGE_LIB)\n");
		return PB_SKIP;
	}
	if (numa_available() < 0) {
		printf("page_bench: skipped: libnuma reports NUMA unavailable\n");
		return PB_SKIP;
	}
	static const size_t sizes[] = {4096, 16384, 65536, 262144, 1048576};
	for (char *save = NULL, *tok = strtok_r(threads_arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int threads = atoi(tok);
		if (threads < 1)
			continue;
		for (int touch = 0; touch < 2; touch++) {
			for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
				/* Fewer rounds for bigger blocks, and ten times fewer when every page is
				 * touched (a fault on each page of mmap and libnuma); a multiple of the batch. */
				double base = touch ? 2000.0 : 20000.0;
				long iters = (long)(base * scale / (double)(1u << s)) / PB_BATCH * PB_BATCH;
				if (iters < PB_BATCH)
					iters = PB_BATCH;
				for (int api = 0; api < PB_NAPIS; api++) {
					long n = api == PB_NUMAPAGE ? iters * PB_NUMAPAGE_MORE : iters;
					double cpu_ns;
					double ns = pb_measure((enum pb_api)api, touch, sizes[s], n, threads, &cpu_ns);
					printf("page api=%s mode=%s size=%zu threads=%d iters=%ld ns=%.1f cpu_ns=%.1f\n",
					       pb_api_name[api], touch ? "touch" : "bare", sizes[s], threads, n, ns, cpu_ns);
					fflush(stdout);
				}
			}
		}
	}
	return 0;
}
