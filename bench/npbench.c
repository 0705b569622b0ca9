/*
 * npbench — the allocator workloads of the benchmark suite in one program.
 *   npbench WORKLOAD [--threads N] [--scale X] [--seed S] [--pin]
 *   npbench list | npbench which
 * Before any work it names the shared object that defines the malloc this process calls
 * (owner.h), so the runner can prove an LD_PRELOAD took effect. On success
 * it prints one line of key=value pairs: workload threads scale seed seconds ops checksum malloc.
 * "seconds" times the workload only (not start-up or the final report).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "owner.h"

static const struct {
	const char *name;
	bench_fn fn;
	const char *what;
} workloads[] = {
	{"larson", bench_larson, "server simulation: threads replace random objects, then pass them on (remote frees)"},
	{"xmalloc", bench_xmalloc, "producer/consumer pairs: every object freed by another thread"},
	{"cache-scratch", bench_cache_scratch, "passive false sharing: each thread first frees an object of the main thread"},
	{"cache-thrash", bench_cache_thrash, "active false sharing: threads write to their own small objects"},
	{"alloc-test", bench_alloc_test, "Pareto size mix (malloc/calloc) over a live working set"},
	{"mstress", bench_mstress, "threads die and are replaced while their objects live on in a shared table"},
	{"realloc-grow", bench_realloc_grow, "buffers grown by realloc to 512 KiB, contents checked"},
	{"large-blocks", bench_large_blocks, "64 KiB..4 MiB blocks, every page touched"},
	{"churn", bench_churn, "small-object malloc/free churn, per thread, no sharing"},
	{"large-calloc", bench_large_calloc, "5..25 MiB zeroed blocks (calloc, malloc+memset), 3 live per thread, every page used"},
	{"rptest", bench_rptest, "rpmalloc's rptest pattern: per-thread working sets of random sizes, batches freed by the next thread"},
	{"fork", bench_fork, "threads with live objects fork children that allocate a little and _exit, reaped one by one"},
	{"exec", bench_exec, "threads start short programs one after another (posix_spawn of this one, waited for)"},
};

#define NWORKLOADS (sizeof workloads / sizeof workloads[0])

static void usage(FILE *out)
{
	fprintf(out, "usage: npbench WORKLOAD [--threads N] [--scale X] [--seed S] [--pin]\n"
		     "       npbench list | which\n"
		     "  --pin  worker i runs on the (i mod n)-th of the n CPUs it may use\nworkloads:\n");
	for (size_t i = 0; i < NWORKLOADS; i++)
		fprintf(out, "  %-14s %s\n", workloads[i].name, workloads[i].what);
}

static long parse_long(const char *s, const char *what, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi) {
		fprintf(stderr, "npbench: bad %s '%s'\n", what, s);
		exit(64);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 64 : 0;
	}
	/* The exec workload's child: a small program's life, nothing printed. */
	if (!strcmp(argv[1], "exec-child"))
		return bench_exec_child();
	if (!strcmp(argv[1], "list")) {
		for (size_t i = 0; i < NWORKLOADS; i++)
			printf("%s\n", workloads[i].name);
		return 0;
	}
	if (!strcmp(argv[1], "which")) {
		/* A few calls, so a broken preloaded malloc shows here already. */
		void *p = malloc(100), *q = calloc(10, 100);
		p = realloc(p, 5000);
		if (!p || !q)
			bench_fail("which: allocation failed");
		free(p);
		free(q);
		printf("malloc=%s\n", npbench_malloc_owner());
		return 0;
	}
	bench_fn fn = NULL;
	const char *name = argv[1];
	for (size_t i = 0; i < NWORKLOADS; i++)
		if (!strcmp(name, workloads[i].name))
			fn = workloads[i].fn;
	if (!fn) {
		fprintf(stderr, "npbench: unknown workload '%s'\n", name);
		usage(stderr);
		return 64;
	}
	struct bench_args args = {.threads = 1, .scale = 1.0, .seed = 42};
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--pin")) {
			bench_pin = 1;
			continue;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "npbench: %s needs a value\n", argv[i]);
			return 64;
		}
		if (!strcmp(argv[i], "--threads")) {
			args.threads = (int)parse_long(argv[++i], "thread count", 1, 4096);
		} else if (!strcmp(argv[i], "--seed")) {
			args.seed = (uint64_t)parse_long(argv[++i], "seed", 0, (long)(~0ul >> 1));
		} else if (!strcmp(argv[i], "--scale")) {
			char *end;
			args.scale = strtod(argv[++i], &end);
			if (*end || !(args.scale > 0 && args.scale <= 1000)) {
				fprintf(stderr, "npbench: bad scale '%s'\n", argv[i]);
				return 64;
			}
		} else {
			fprintf(stderr, "npbench: unknown option '%s'\n", argv[i]);
			return 64;
		}
	}
	const char *owner = npbench_malloc_owner();
	struct bench_result res = {0, 0};
	double t0 = bench_now();
	int rc = fn(&args, &res);
	double t1 = bench_now();
	if (rc)
		bench_fail("%s: workload reported failure %d", name, rc);
	printf("workload=%s threads=%d scale=%g seed=%llu seconds=%.6f ops=%llu checksum=%016llx malloc=%s\n",
	       name, args.threads, args.scale, (unsigned long long)args.seed, t1 - t0,
	       (unsigned long long)res.ops, (unsigned long long)res.checksum, owner);
	return 0;
}
