/*
 * replace_bench — mstress's loop cut down to one thread, for taking its time apart: a table of
 * 65,536 slots, and per step a new object put into a random slot and the old one taken out and
 * freed. Variants say where the time goes (docs/perf-issue15.md, section 12):
 *   --size A:B   object sizes, uniform in [A, B] (default 32:256, mstress's common sizes)
 *   --touch all  the program stamps the new object (bench.h: its first word and last byte) and
 *                writes its size and key in words 1 and 2, and checks the old one's stamp
 *                before freeing it, as mstress does (default);
 *   --touch none the program never touches an object (every free is of a block not in cache)
 *   --ops N      replacements (default 8,000,000)
 * After the loop it reads random slots' objects 20 M times (the cost of the live set's layout
 * alone) and counts the pages that hold live objects, their 32 KiB groups and their span. Run
 * under each allocator with LD_PRELOAD:
 *   LD_PRELOAD=build/src/libnumapage.so build/bench/replace_bench --size 64:64
 * Prints one line: loop seconds, read-pass seconds, live objects, pages, groups, span.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define SLOTS 65536

static int by_address(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return (x > y) - (x < y);
}

static void usage(void)
{
	fprintf(stderr, "usage: replace_bench [--size MIN:MAX] [--touch all|none] [--ops N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	size_t lo = 32, hi = 256;
	int touch = 1;
	unsigned long long ops = 8000000;
	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		const char *v = argv[++i];
		if (!strcmp(argv[i - 1], "--size")) {
			if (sscanf(v, "%zu:%zu", &lo, &hi) != 2 || lo < 3 * sizeof(uint64_t) || hi < lo)
				usage(); /* an object holds its stamp, size and key */
		} else if (!strcmp(argv[i - 1], "--touch")) {
			if (strcmp(v, "all") && strcmp(v, "none"))
				usage();
			touch = !strcmp(v, "all");
		} else if (!strcmp(argv[i - 1], "--ops")) {
			char *end;
			errno = 0;
			ops = strtoull(v, &end, 10);
			if (errno || *end || !ops)
				usage();
		} else {
			usage();
		}
	}
	uint64_t **slot = calloc(SLOTS, sizeof *slot);
	uintptr_t *page = malloc(SLOTS * sizeof *page);
	if (!slot || !page)
		bench_fail("replace: setup allocation failed");
	struct bench_rng rng = bench_rng_make(42, 0);
	double t0 = bench_now();
	for (unsigned long long i = 0; i < ops; i++) {
		uint64_t x = bench_rng_next(&rng);
		size_t size = bench_rng_range(&rng, lo, hi);
		uint64_t *o = bench_xmalloc_or_fail(size);
		if (touch) {
			o[1] = size;
			o[2] = i;
			bench_stamp(o, size, i);
		}
		size_t k = (size_t)(x >> 8) % SLOTS;
		uint64_t *old = slot[k];
		slot[k] = o;
		if (old && touch)
			bench_check_stamp(old, (size_t)old[1], old[2], "replace free");
		free(old);
	}
	double t1 = bench_now();
	/* The layout alone: random reads of the live objects' first words (under --touch none
	 * what malloc left there). */
	uint64_t sum = 0;
	struct bench_rng reads = bench_rng_make(42, 1);
	for (int r = 0; r < 20000000; r++) {
		uint64_t *o = slot[(bench_rng_next(&reads) >> 8) % SLOTS];
		if (o)
			sum += *(volatile uint64_t *)o;
	}
	double t2 = bench_now();
	/* Pages holding live objects, the 32 KiB groups of them (one line of page-table entries
	 * each: what a TLB miss reads) and the span from the lowest to the highest. */
	int n = 0, pages = 0, groups = 0;
	for (int k = 0; k < SLOTS; k++)
		if (slot[k])
			page[n++] = (uintptr_t)slot[k] >> 12;
	qsort(page, (size_t)n, sizeof *page, by_address);
	for (int i = 0; i < n; i++) {
		pages += !i || page[i] != page[i - 1];
		groups += !i || page[i] >> 3 != page[i - 1] >> 3;
	}
	double span = n ? (double)((page[n - 1] - page[0] + 1) << 12) / 1048576.0 : 0;
	printf("loop %.3f s  read-pass %.3f s  live %d  pages %d  groups %d  span %.1f MiB  (%llu)\n", t1 - t0,
	       t2 - t1, n, pages, groups, span, (unsigned long long)(sum & 1));
	for (int k = 0; k < SLOTS; k++)
		free(slot[k]);
	free(page);
	free(slot);
	return 0;
}
