/*
 * bench.c — the helpers bench.h declares, shared by the programs that run workloads (npbench,
 * replace_bench): the failure report, the stamp check, malloc-or-fail, the clock, thread
 * start-up and the work scale.
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

void bench_fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: CHECK FAILED: ", program_invocation_short_name); /* npbench, replace_bench */
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	_exit(2);
}

void bench_check_stamp(const void *p, size_t size, uint64_t key, const char *where)
{
	const unsigned char *b = p;
	if (*(const uint64_t *)p != bench_stamp_word(p, size, key))
		bench_fail("%s: object %p (%zu bytes) lost its head stamp", where, p, size);
	if (b[size - 1] != (unsigned char)(key ^ size))
		bench_fail("%s: object %p (%zu bytes) lost its tail stamp", where, p, size);
}

void *bench_xmalloc_or_fail(size_t size)
{
	void *p = malloc(size);
	if (!p)
		bench_fail("malloc(%zu) returned NULL (errno %d)", size, errno);
	return p;
}

double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int bench_pin;

/* The CPU of worker slot `slot`: the (slot mod n)-th of the n CPUs in the process's affinity. */
static int slot_cpu(int slot)
{
	static cpu_set_t allowed;
	static int count;
	if (!count) { /* the first call is the main thread's, before any worker runs */
		if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
			bench_fail("sched_getaffinity: %s", strerror(errno));
		count = CPU_COUNT(&allowed);
	}
	for (int cpu = 0, k = slot % count; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &allowed) && k-- == 0)
			return cpu;
	bench_fail("no CPU for worker slot %d", slot);
}

void bench_pin_self(int slot)
{
	if (!bench_pin)
		return;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(slot_cpu(slot), &one);
	if (sched_setaffinity(0, sizeof one, &one) != 0)
		bench_fail("sched_setaffinity: %s", strerror(errno));
}

void bench_start_thread(pthread_t *tid, int slot, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr, *ap = NULL;
	if (bench_pin) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(slot_cpu(slot), &one);
		pthread_attr_init(&attr);
		int rc = pthread_attr_setaffinity_np(&attr, sizeof one, &one);
		if (rc)
			bench_fail("pthread_attr_setaffinity_np: %s", strerror(rc));
		ap = &attr;
	}
	int rc = pthread_create(tid, ap, fn, arg);
	if (ap)
		pthread_attr_destroy(ap);
	if (rc)
		bench_fail("pthread_create: %s", strerror(rc));
}

void bench_run_threads(int n, void *(*fn)(void *), void *args, size_t arg_size)
{
	pthread_t *tids = bench_xmalloc_or_fail(sizeof *tids * (size_t)n);
	for (int i = 0; i < n; i++)
		bench_start_thread(&tids[i], i, fn, (char *)args + (size_t)i * arg_size);
	for (int i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	free(tids);
}

uint64_t bench_scaled(uint64_t base, double scale, uint64_t min)
{
	double v = (double)base * scale;
	return v < (double)min ? min : (uint64_t)v;
}
