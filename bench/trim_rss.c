/*
 * trim_rss — what an allocator keeps resident after a burst is freed at random and the program
 * calls malloc_trim(0): N blocks of SIZE bytes are allocated and written, all but about one in
 * KEEP freed (a fixed xorshift sequence picks them), then malloc_trim. Prints the resident set
 * (/proc/self/statm) at start, at the peak, after the frees and after the trim. An analysis
 * tool, not part of run.py's suite: run it under each allocator,
 *   LD_PRELOAD=build/src/libnumapage.so build/bench/trim_rss 32768 1000 100
 * (under jemalloc, tcmalloc and mimalloc malloc_trim is glibc's, which has nothing of theirs to
 * trim: what they keep is what their own purging left).
 * With a fourth argument WORK_MS, the program first works that long on other sizes (a table
 * of 4,096 blocks of 16-256 bytes replaced at random) and prints what is resident then, before
 * the trim: what an allocator gives back by time alone (libnumapage: NUMAPAGE_DECAY_MS, e.g.
 *   NUMAPAGE_DECAY_MS=200 LD_PRELOAD=build/src/libnumapage.so build/bench/trim_rss 32768 1000 100 1000).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long rss_kib(void)
{
	long size = 0, resident = -1;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &size, &resident) != 2)
			resident = -1;
		fclose(f);
	}
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Other work for ms milliseconds: blocks of 16-256 bytes replaced at random in a table. */
#define WORK_SLOTS 4096
static int work(double ms)
{
	static void *slot[WORK_SLOTS];
	unsigned long long x = 0x9e3779b97f4a7c15ULL;
	double end = now_ms() + ms;
	while (now_ms() < end)
		for (int i = 0; i < 10000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			size_t k = (size_t)(x >> 20) % WORK_SLOTS, size = 16 + (size_t)(x >> 40) % 241;
			free(slot[k]);
			if (!(slot[k] = malloc(size)))
				return 1;
			memset(slot[k], 2, size < 64 ? size : 64);
		}
	for (int k = 0; k < WORK_SLOTS; k++)
		free(slot[k]);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: trim_rss N SIZE KEEP [WORK_MS] (keep about one block in KEEP)\n");
		return 2;
	}
	size_t n = strtoul(argv[1], NULL, 0), size = strtoul(argv[2], NULL, 0);
	unsigned long keep = strtoul(argv[3], NULL, 0);
	void **p = malloc(n * sizeof *p);
	if (!p || size == 0 || keep == 0)
		return 2;
	long start = rss_kib();
	for (size_t i = 0; i < n; i++) {
		p[i] = malloc(size);
		if (!p[i])
			return 1;
		memset(p[i], 1, size);
	}
	long peak = rss_kib();
	unsigned long long x = 88172645463325252ULL;
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (x % keep) {
			free(p[i]);
			p[i] = NULL;
		} else {
			kept++;
		}
	}
	long freed = rss_kib(), worked = -1;
	if (argc == 5) {
		if (work(strtod(argv[4], NULL)))
			return 1;
		worked = rss_kib();
	}
	malloc_trim(0);
	long trimmed = rss_kib();
	printf("%zu blocks of %zu bytes, %zu kept (%zu KiB): rss start %ld, peak %ld, freed %ld, ", n, size, kept,
	       kept * size / 1024, start, peak, freed);
	if (worked >= 0)
		printf("after %s ms of other work %ld, ", argv[4], worked);
	printf("trimmed %ld KiB\n", trimmed);
	for (size_t i = 0; i < n; i++)
		free(p[i]);
	free(p);
	return 0;
}
