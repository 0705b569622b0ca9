/*
 * stress_common.h — what the stress programs share: a CHECK that reports and exits (the tests
 * run outside CMocka, in many threads), a monotonic clock for their summaries (never for
 * pass/fail), and xorshift64*, a fixed sequence per seed.
 */
#ifndef NP_STRESS_COMMON_H
#define NP_STRESS_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                      \
			fputc('\n', stderr);                                               \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

static inline double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

#endif
