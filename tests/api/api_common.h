/*
 * api_common.h — helpers shared by the api and stress tiers (header only): content patterns
 * that tell blocks apart, sums of the public per-node statistics, resident memory, and a way to
 * hide constant sizes from the compiler (so huge-size calls are neither folded nor warned
 * about). Uses only the public API, so it works with and without the libc-name override.
 */
#ifndef NP_TEST_API_COMMON_H
#define NP_TEST_API_COMMON_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "numapage.h"

#define NP_ARRAY_SIZE_(a) (sizeof(a) / sizeof((a)[0]))

/* x, opaque to the optimiser. */
static inline size_t np_t_opaque(size_t x)
{
	__asm__ volatile("" : "+r"(x));
	return x;
}

/* p, opaque to the optimiser: a failed realloc's argument stays usable without a
 * -Wuse-after-free false alarm. */
static inline void *np_t_launder(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

/* Word w of the pattern of block `seed` (byte i is byte i % 8 of word i / 8, little-endian):
 * differs between neighbouring seeds and offsets. */
static inline uint64_t np_t_word(uint64_t seed, size_t w)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + (uint64_t)w * 0xbf58476d1ce4e5b9ULL;
	return x ^ (x >> 29);
}

static inline uint8_t np_t_byte(uint64_t seed, size_t i)
{
	return (uint8_t)(np_t_word(seed, i >> 3) >> ((i & 7) * 8));
}

/* Writes the pattern over [p, p + n); p may have any alignment. */
static inline void np_t_fill(void *p, size_t n, uint64_t seed)
{
	uint8_t *b = p;
	size_t w = 0;
	for (; (w + 1) * 8 <= n; w++) {
		uint64_t x = np_t_word(seed, w);
		memcpy(b + w * 8, &x, 8);
	}
	for (size_t i = w * 8; i < n; i++)
		b[i] = np_t_byte(seed, i);
}

/* Offset of the first byte that does not match the pattern, or SIZE_MAX when all do. */
static inline size_t np_t_check(const void *p, size_t n, uint64_t seed)
{
	const uint8_t *b = p;
	size_t w = 0;
	for (; (w + 1) * 8 <= n; w++) {
		uint64_t x;
		memcpy(&x, b + w * 8, 8);
		if (x != np_t_word(seed, w))
			break;
	}
	for (size_t i = w * 8; i < n; i++)
		if (b[i] != np_t_byte(seed, i))
			return i;
	return SIZE_MAX;
}

static inline bool np_t_all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* Exact statistics summed over every node (sparse node ids are skipped). */
static inline struct numa_page_node_stats np_t_stats(void)
{
	struct numa_page_node_stats sum, one;
	memset(&sum, 0, sizeof sum);
	sum.node = -1;
	int max = numa_page_max_node();
	for (int n = 0; n <= max; n++) {
		if (numa_page_stats_get(n, &one) != 0)
			continue;
#define NP_T_ADD_(name, kind, desc) sum.name += one.name;
		NUMA_PAGE_STAT_ITEMS(NP_T_ADD_)
#undef NP_T_ADD_
	}
	return sum;
}

/* Field k (0: size, 1: resident) of /proc/self/statm in bytes, or 0 when it cannot be read. */
static inline size_t np_t_statm(int k)
{
	/* Read with a system call: stdio would allocate. */
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	unsigned long f[2] = {0, 0};
	if (sscanf(buf, "%lu %lu", &f[0], &f[1]) != 2)
		return 0;
	return (size_t)f[k] * (size_t)sysconf(_SC_PAGESIZE);
}

/* Resident set size of this process in bytes. */
static inline size_t np_t_rss(void)
{
	return np_t_statm(1);
}

/* Address space this process has mapped, in bytes (VmSize). */
static inline size_t np_t_mapped(void)
{
	return np_t_statm(0);
}

#endif /* NP_TEST_API_COMMON_H */
