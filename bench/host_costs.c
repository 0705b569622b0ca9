/*
 * host_costs — what this machine charges for the memory events the allocators trade against
 * each other, measured once per run of the suite (bench/run.py writes it into RESULTS.md's
 * header) so that the run's ratios can be read: on a virtual machine a page fault may cost tens
 * of times what it does on bare metal, and 2 MiB pages may or may not shorten a load that misses
 * the TLB (docs/perf-issue15.md, section 26). run.py runs it with no allocator preloaded; the
 * memory it measures is mapped here (mmap). It prints one line of key=value pairs:
 *   fault_4k_us  the first write to a 4 KiB page of an anonymous mapping advised MADV_NOHUGEPAGE,
 *                per page
 *   fault_2m_us  the same per 4 KiB of a mapping advised MADV_HUGEPAGE (what NUMAPAGE_THP asks)
 *   huge_4k_mib  of the first mapping's MiB, those the kernel backed with huge pages anyway (0
 *                unless the advice was refused; -1: unknown, from AnonHugePages of
 *                /proc/self/smaps_rollup)
 *   huge_mib     the same for the second mapping (0: the kernel's THP setting is "never", or
 *                no huge page was free, and fault_2m_us is a 4 KiB page's price too)
 *   chase_4k_ns  a load that depends on the previous one, each to one line of a random page of
 *                32 MiB: 8,192 lines, which stay in the caches, so the figure is mostly the TLB
 *                miss and its page walk
 *   chase_2m_ns  the same in the huge-page mapping
 *   mib          the size of each mapping
 * Each figure is the median of three passes, the two kinds of mapping taking turns (a change of
 * the machine's speed meets both). Exits 0, or non-zero with a message on stderr.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
	/* The slack on either side of [p, p + size), so that munmap(p, size) leaves nothing: p is
	 * below raw + HUGE, so the tail is never empty. */
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	munmap(p + size, (size_t)(raw + HUGE - p));
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

/* Links a chain through one line of every page of [p, p + size) and returns its start: the
 * pages in a random order and the line within each page drawn at random too (a fixed seed), so
 * that neither the prefetchers nor a pattern of cache sets serve it: a line chosen by the
 * page's own number (page % 64) measured 20% slower with 4 KiB pages, its frames' sets
 * aliasing. */
static void **chain(char *p, size_t size)
{
	size_t n = size / PAGE;
	size_t *order = malloc(n * sizeof *order), *line = malloc(n * sizeof *line);
	if (!order || !line)
		bench_fail("host_costs: no memory for the chain's order");
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	struct bench_rng rng = bench_rng_make(42, 0);
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = bench_rng_range(&rng, 0, i), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		line[i] = bench_rng_range(&rng, 0, PAGE / 64 - 1);
#define AT(k) ((void **)(p + order[k] * PAGE + line[order[k]] * 64))
	for (size_t i = 0; i < n; i++)
		*AT(i) = AT((i + 1) % n);
	void **q = AT(0);
#undef AT
	free(line);
	free(order);
	return q;
}

/* Seconds per load of the chain from q, after one lap of size / PAGE loads that warms its lines
 * and TLB entries. */
static double chase(void **q, size_t size)
{
	for (size_t i = 0; i < size / PAGE; i++)
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

/* One kind of mapping: its advice, the first-write time of each pass and the huge-page count
 * of the last, its last mapping (kept for the chases) and the chases' times. */
#define ROUNDS 3
struct kind {
	int advice;
	double fault[ROUNDS], load[ROUNDS];
	long huge_mib;
	char *p;
};

/* Pass r of first writes over a fresh mapping of kind k (the pass before's is unmapped). False
 * when the mapping failed. */
static bool fault_pass(struct kind *k, int r)
{
	if (k->p)
		munmap(k->p, SIZE);
	if (!(k->p = map_aligned(SIZE, k->advice)))
		return false;
	long before = anon_huge_kib();
	k->fault[r] = first_writes(k->p, SIZE);
	long after = anon_huge_kib();
	k->huge_mib = before >= 0 && after >= before ? (after - before) >> 10 : -1;
	return true;
}

static double median(double *x)
{
	qsort(x, ROUNDS, sizeof x[0], by_value);
	return x[ROUNDS / 2];
}

int main(void)
{
	struct kind small = {.advice = MADV_NOHUGEPAGE}, huge = {.advice = MADV_HUGEPAGE};
	for (int r = 0; r < ROUNDS; r++) {
		if (!fault_pass(&small, r) || !fault_pass(&huge, r)) {
			fprintf(stderr, "host_costs: mmap of %zu MiB failed\n", SIZE >> 20);
			return 1;
		}
	}
	void **small_chain = chain(small.p, SIZE), **huge_chain = chain(huge.p, SIZE);
	for (int r = 0; r < ROUNDS; r++) {
		small.load[r] = chase(small_chain, SIZE);
		huge.load[r] = chase(huge_chain, SIZE);
	}
	printf("fault_4k_us=%.2f fault_2m_us=%.2f huge_4k_mib=%ld huge_mib=%ld chase_4k_ns=%.1f "
	       "chase_2m_ns=%.1f mib=%zu\n",
	       median(small.fault) * 1e6, median(huge.fault) * 1e6, small.huge_mib, huge.huge_mib,
	       median(small.load) * 1e9, median(huge.load) * 1e9, SIZE >> 20);
	return 0;
}
