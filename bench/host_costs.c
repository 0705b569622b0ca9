/*
 * host_costs — what this machine charges for the memory events the allocators trade against
 * each other, measured once per run of the suite (bench/run.py writes it into RESULTS.md's
 * header) so that the run's ratios can be read: on a virtual machine a page fault may cost ten
 * times what it does on bare metal, and 2 MiB pages may or may not shorten a load that misses
 * the TLB (docs/perf-issue15.md, section 26). run.py runs it with no allocator preloaded; the
 * memory it measures is mapped here (mmap). It prints one line of key=value pairs:
 *   fault_4k_us  the first write to a 4 KiB page of an anonymous mapping advised MADV_NOHUGEPAGE,
 *                per page
 *   fault_2m_us  the same per 4 KiB of a mapping advised MADV_HUGEPAGE (what NUMAPAGE_THP asks)
 *   huge_mib     of that mapping's MiB, those the kernel backed with huge pages (AnonHugePages
 *                of /proc/self/smaps_rollup; 0: the kernel's THP setting is "never", or no huge
 *                page was free; -1: unknown)
 *   chase_4k_ns  a load that depends on the previous one, each to a random page of 32 MiB: the
 *                TLB miss and the cache miss of a program walking memory it holds
 *   chase_2m_ns  the same in the huge-page mapping
 *   mib          the size of each mapping
 * Each figure is the median of three passes (first writes: over three fresh mappings).
 * Exit 0, or 1 with a message when a mapping fails.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench.h"

#define PAGE 4096ul
#define HUGE ((size_t)2 << 20)
#define CHASE_LOADS 2000000l
#define SIZE ((size_t)32 << 20) /* each mapping */

/* AnonHugePages of the whole process, in KiB; -1 when it cannot be read. */
static long anon_huge_kib(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	if (!f)
		return -1;
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* A 2 MiB-aligned anonymous mapping of size bytes, advised as asked; NULL on failure. */
static char *map_aligned(size_t size, int advice)
{
	char *raw = mmap(NULL, size + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	char *p = (char *)(((uintptr_t)raw + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
	if (p > raw) /* the slack of the alignment, so that munmap(p, size) leaves nothing */
		munmap(raw, (size_t)(p - raw));
	if (p + size < raw + size + HUGE)
		munmap(p + size, (size_t)(raw + size + HUGE - (p + size)));
	(void)madvise(p, size, advice); /* refused (no THP in this kernel): measured as it is */
	return p;
}

/* Seconds per 4 KiB page of the first write to each page of [p, p + size). */
static double first_writes(char *p, size_t size)
{
	double t0 = bench_now();
	for (size_t off = 0; off < size; off += PAGE)
		p[off] = 1;
	return (bench_now() - t0) / (double)(size / PAGE);
}

/* Seconds per load of a chain through one line of every page of [p, p + size), the pages in a
 * random order (a fixed seed) and the line within each page varied, so that neither the
 * prefetchers nor one cache set serve it. */
static double chase(char *p, size_t size)
{
	size_t n = size / PAGE;
	size_t *order = malloc(n * sizeof *order);
	if (!order)
		bench_fail("host_costs: no memory for the chain's order");
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	struct bench_rng rng = bench_rng_make(42, 0);
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = bench_rng_range(&rng, 0, i), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
#define AT(k) ((void **)(p + order[k] * PAGE + (order[k] % (PAGE / 64)) * 64))
	for (size_t i = 0; i < n; i++)
		*AT(i) = AT((i + 1) % n);
	void **q = AT(0);
#undef AT
	free(order);
	for (size_t i = 0; i < n; i++) /* one lap first: the chain's lines and entries warm */
		q = *q;
	double t0 = bench_now();
	for (long i = 0; i < CHASE_LOADS; i++)
		q = *q;
	double s = (bench_now() - t0) / (double)CHASE_LOADS;
	if (!q) /* keeps the chain live */
		bench_fail("host_costs: the chain broke");
	return s;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* One kind of mapping (advice): the median of ROUNDS first-write passes over fresh mappings,
 * and of ROUNDS chases over the last of them; *huge_mib: what the kernel backed with huge
 * pages in that last mapping (-1: unknown). False when a mapping failed. */
#define ROUNDS 3
static bool measure(int advice, double *fault, double *load, long *huge_mib)
{
	double f[ROUNDS], c[ROUNDS];
	char *p = NULL;
	long before = -1, after = -1;
	for (int r = 0; r < ROUNDS; r++) {
		if (p)
			munmap(p, SIZE);
		if (!(p = map_aligned(SIZE, advice)))
			return false;
		before = anon_huge_kib();
		f[r] = first_writes(p, SIZE);
		after = anon_huge_kib();
	}
	for (int r = 0; r < ROUNDS; r++)
		c[r] = chase(p, SIZE);
	munmap(p, SIZE);
	qsort(f, ROUNDS, sizeof f[0], by_value);
	qsort(c, ROUNDS, sizeof c[0], by_value);
	*fault = f[ROUNDS / 2];
	*load = c[ROUNDS / 2];
	*huge_mib = before >= 0 && after >= before ? (after - before) >> 10 : -1;
	return true;
}

int main(void)
{
	double f4k, f2m, c4k, c2m;
	long h4k, h2m;
	if (!measure(MADV_NOHUGEPAGE, &f4k, &c4k, &h4k) || !measure(MADV_HUGEPAGE, &f2m, &c2m, &h2m)) {
		fprintf(stderr, "host_costs: mmap of %zu MiB failed\n", SIZE >> 20);
		return 1;
	}
	printf("fault_4k_us=%.2f fault_2m_us=%.2f huge_mib=%ld chase_4k_ns=%.1f chase_2m_ns=%.1f mib=%zu\n",
	       f4k * 1e6, f2m * 1e6, h2m, c4k * 1e9, c2m * 1e9, SIZE >> 20);
	return 0;
}
