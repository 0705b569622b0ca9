/*
 * option_api — numa_page_option_get/set and numa_page_stats_reset through the public API of
 * the real library (meson test 'option_api', suite api; run with NUMAPAGE_CONF="bind=strict,
 * pcp_batch=16" and NUMAPAGE_PCP_BATCH=8 in its environment).
 *   option_api          checks, and prints "ok" (exit 1 and the first failures otherwise)
 *   option_api show     prints bind, verbose and stats in force (the secure-execution test of
 *                       test_run_cmd.py runs a set-user-ID copy of the static build)
 *   option_api report PATH   sets stats=json:PATH at run time and exits: the report must appear
 *   option_api wait     prints "ready" and runs until its standard input ends (a process for
 *                       `numapage options PID` to look at)
 * Allocations go through numa_page_malloc, so the checks hold in sanitizer builds too, where
 * malloc is the sanitizer's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "numapage.h"

static int failures;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "option_api:%d: ", __LINE__);         \
			fprintf(stderr, __VA_ARGS__);                         \
			fputc('\n', stderr);                                  \
			failures++;                                           \
		}                                                             \
	} while (0)

static const char *get(const char *name)
{
	static char buf[4][256];
	static int k;
	char *b = buf[k++ & 3];
	if (numa_page_option_get(name, b, 256) < 0)
		snprintf(b, 256, "<errno %d>", errno);
	return b;
}

struct sums {
	unsigned long long requested, in_use, pages_in_use, threads, served;
};

static struct sums sums(void)
{
	struct sums s = {0};
	for (int n = 0; n <= numa_page_max_node(); n++) {
		struct numa_page_node_stats st;
		if (numa_page_stats_get(n, &st) != 0)
			continue;
		s.requested += st.malloc_requested;
		s.in_use += st.malloc_in_use;
		s.pages_in_use += st.pages_in_use;
		s.threads += st.threads;
		s.served += st.numa_hit + st.numa_miss; /* a memoryless home's pages are all misses */
	}
	return s;
}

static void *blocks[2000];

static void *alloc_some(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2000; i++)
		blocks[i] = numa_page_malloc(100 + (size_t)i);
	return NULL;
}

static void check_options(void)
{
	/* Where values come from: the string, and a variable of its own that wins over it. */
	CHECK(strcmp(get("bind"), "strict") == 0, "bind from NUMAPAGE_CONF: %s", get("bind"));
	CHECK(strcmp(get("PCP_BATCH"), "8") == 0, "NUMAPAGE_PCP_BATCH wins over the string: %s", get("PCP_BATCH"));
	CHECK(strcmp(get("NUMAPAGE_Bind"), "strict") == 0, "any case, with the prefix: %s", get("NUMAPAGE_Bind"));
	CHECK(strcmp(get("purge_mb"), "64") == 0, "default purge_mb: %s", get("purge_mb"));
	CHECK(strcmp(get("topology"), "") == 0, "unset string: '%s'", get("topology"));

	/* snprintf's contract. */
	char small[4];
	CHECK(numa_page_option_get("bind", small, sizeof small) == 6 && strcmp(small, "str") == 0,
	      "cut to the buffer: '%s'", small);
	CHECK(numa_page_option_get("bind", NULL, 0) == 6, "length only");
	errno = 0;
	CHECK(numa_page_option_get("no_such", small, sizeof small) == -1 && errno == ENOENT, "unknown: errno %d", errno);
	errno = 0;
	CHECK(numa_page_option_get(NULL, small, sizeof small) == -1 && errno == EINVAL, "NULL name: errno %d", errno);

	/* Run-time changes: in force at once; bad values refused and the old one kept. */
	CHECK(numa_page_option_set("bind", "none") == 0, "set bind: errno %d", errno);
	CHECK(strcmp(get("bind"), "none") == 0, "bind now: %s", get("bind"));
	errno = 0;
	CHECK(numa_page_option_set("bind", "sometimes") == -1 && errno == EINVAL, "bad bind: errno %d", errno);
	CHECK(strcmp(get("bind"), "none") == 0, "bind kept: %s", get("bind"));
	CHECK(numa_page_option_set("interleave_above", "4m") == 0 && strcmp(get("interleave_above"), "4194304") == 0,
	      "interleave_above: %s", get("interleave_above"));
	CHECK(numa_page_option_set("pcp_batch", "16") == 0 && strcmp(get("pcp_batch"), "16") == 0, "pcp_batch");
	CHECK(numa_page_option_set("verbose", "0") == 0, "verbose");
	errno = 0;
	CHECK(numa_page_option_set("verbose", "2") == -1 && errno == EINVAL, "verbose 2: errno %d", errno);
	/* A stats form that no report reads is refused now, not found out at exit. */
	char stats_before[256];
	snprintf(stats_before, sizeof stats_before, "%s", get("stats"));
	const char *bad_stats[] = {"garbage", "2", "json:"};
	for (size_t i = 0; i < sizeof bad_stats / sizeof bad_stats[0]; i++) {
		errno = 0;
		CHECK(numa_page_option_set("stats", bad_stats[i]) == -1 && errno == EINVAL, "stats %s: errno %d",
		      bad_stats[i], errno);
		CHECK(strcmp(get("stats"), stats_before) == 0, "stats changed by %s", bad_stats[i]);
	}
	/* Placement for threads created from now on: the option and numa_page_thread_place are one
	 * setting, whichever call made it. */
	CHECK(numa_page_option_set("place", "spread") == 0 && strcmp(get("place"), "spread") == 0, "place: %s",
	      get("place"));
	CHECK(numa_page_thread_place(NUMA_PAGE_PLACE_FILL) == 0 && strcmp(get("place"), "fill") == 0,
	      "thread_place: %s", get("place"));
	CHECK(numa_page_thread_place(NUMA_PAGE_PLACE_NONE) == 0 && strcmp(get("place"), "none") == 0,
	      "thread_place none: %s", get("place"));
	/* Fixed at start-up: a clear error, the value untouched. */
	const char *fixed[] = {"topology", "stat_threshold", "purge_mb", "shm"};
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
		char before[256];
		snprintf(before, sizeof before, "%s", get(fixed[i]));
		errno = 0;
		CHECK(numa_page_option_set(fixed[i], "1") == -1 && errno == EPERM, "%s: errno %d", fixed[i], errno);
		CHECK(strcmp(get(fixed[i]), before) == 0, "%s changed", fixed[i]);
	}
	errno = 0;
	CHECK(numa_page_option_set("nonsense", "1") == -1 && errno == ENOENT, "unknown set: errno %d", errno);
	errno = 0;
	CHECK(numa_page_option_set("bind", NULL) == -1 && errno == EINVAL, "NULL value: errno %d", errno);
}

static void check_reset(void)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, alloc_some, NULL) == 0 && pthread_join(t, NULL) == 0, "thread");
	struct sums before = sums();
	CHECK(before.requested >= 2000 * 100, "malloc_requested %llu before the reset", before.requested);
	CHECK(before.served > 0, "numa_hit + numa_miss before the reset");
	CHECK(numa_page_stats_reset() == 0, "reset");
	struct sums after = sums();
	/* Events are gone; levels describe memory still held and stay. Nothing ran meanwhile: the
	 * thread that counted has exited, and this one made no allocation between the reads. */
	CHECK(after.requested == 0, "malloc_requested %llu after the reset", after.requested);
	CHECK(after.served == 0, "numa_hit + numa_miss %llu after the reset", after.served);
	CHECK(after.in_use == before.in_use, "malloc_in_use %llu -> %llu", before.in_use, after.in_use);
	CHECK(after.pages_in_use == before.pages_in_use, "pages_in_use %llu -> %llu", before.pages_in_use,
	      after.pages_in_use);
	CHECK(after.threads == before.threads, "threads %llu -> %llu", before.threads, after.threads);
	for (int i = 0; i < 2000; i++)
		numa_page_free(blocks[i]);
	struct sums freed = sums();
	CHECK(freed.in_use < before.in_use, "frees after the reset still count: %llu -> %llu", before.in_use,
	      freed.in_use);
}

/* The library makes no cancellation point of its own: a thread with a pending cancel request
 * that calls into it (here numa_page_option_set, which logs the change when verbose is on: a
 * write to stderr) comes back, and is cancelled at its own next cancellation point. Cancelled
 * inside, it left whatever the library held behind (a review found a sweep's flag stuck for
 * good that way). */
static int cancel_returned;
static void *set_with_cancel_pending(void *arg)
{
	(void)arg;
	pthread_cancel(pthread_self()); /* deferred: pending until a cancellation point */
	numa_page_option_set("decay_ms", "10000");
	cancel_returned = 1;
	pthread_testcancel();
	return NULL;
}

static void check_no_cancellation_point(void)
{
	char was[64];
	snprintf(was, sizeof was, "%s", get("verbose"));
	CHECK(numa_page_option_set("verbose", "1") == 0, "verbose on");
	pthread_t t;
	void *res = NULL;
	CHECK(pthread_create(&t, NULL, set_with_cancel_pending, NULL) == 0, "pthread_create");
	CHECK(pthread_join(t, &res) == 0, "pthread_join");
	CHECK(res == PTHREAD_CANCELED, "the thread was not cancelled at all");
	CHECK(cancel_returned == 1, "cancelled inside numa_page_option_set (a cancellation point in the library)");
	CHECK(numa_page_option_set("verbose", was) == 0, "verbose back to %s", was);
}

/* A string option read while other threads set it is the old value or the new one, never a
 * mix: two setters alternate two long values while this thread reads (a review saw 5 torn
 * reads in 1.8 million with two setters: the two buffers the values live in alternate, and a
 * reader still copying the value before last met the next set's bytes). */
#define LONG_VALUE 3000
static char value_a[LONG_VALUE], value_b[LONG_VALUE];
static int setters_stop;
static void *set_alternately(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; !__atomic_load_n(&setters_stop, __ATOMIC_RELAXED); i++)
		numa_page_option_set("stats", i & 1 ? value_a : value_b); /* EBUSY when the other one is setting */
	return NULL;
}

static void check_string_reads_whole(void)
{
	char was[4096];
	numa_page_option_get("stats", was, sizeof was);
	memset(value_a, 'a', sizeof value_a - 1);
	memset(value_b, 'b', sizeof value_b - 1);
	memcpy(value_a, "json:/", 6);
	memcpy(value_b, "json:/", 6);
	pthread_t t[2];
	for (int k = 0; k < 2; k++)
		CHECK(pthread_create(&t[k], NULL, set_alternately, NULL) == 0, "pthread_create");
	static char buf[LONG_VALUE + 16];
	long torn = 0, reads = 0;
	/* Up to 2 million reads, or 3 seconds: a read retries while a set writes, and on a busy
	 * machine the setters may hold it back (only the count of reads is bounded by time). */
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (; reads < 2000000; reads++) {
		if ((reads & 1023) == 0 && (clock_gettime(CLOCK_MONOTONIC, &now), now.tv_sec - t0.tv_sec >= 3))
			break;
		numa_page_option_get("stats", buf, sizeof buf);
		if (strcmp(buf, value_a) != 0 && strcmp(buf, value_b) != 0 && strcmp(buf, was) != 0)
			torn++;
	}
	__atomic_store_n(&setters_stop, 1, __ATOMIC_RELAXED);
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	CHECK(torn == 0, "%ld of %ld reads of stats were neither value set (a mix of both)", torn, reads);
	CHECK(numa_page_option_set("stats", was) == 0, "stats back to %s", was);
}

/* A fork while another thread is inside numa_page_option_set: the child reads string options
 * (and writes its exit report, which reads stats) as always. A review's child hung for good on
 * the 1st-5th fork: the set's sequence count stayed odd in it, with no thread left to end the
 * set. Each child has 10 s (alarm) to read stats and leave; the first that does not ends it. */
static void check_fork_during_set(void)
{
	char was[4096];
	numa_page_option_get("stats", was, sizeof was);
	__atomic_store_n(&setters_stop, 0, __ATOMIC_RELAXED);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, set_alternately, NULL) == 0, "pthread_create");
	int hung = 0, forks = 0;
	for (; forks < 200; forks++) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(10);
			static char buf[LONG_VALUE + 16];
			numa_page_option_get("stats", buf, sizeof buf);
			numa_page_option_set("stats", "0"); /* no report from the child */
			_exit(0);
		}
		int status = 0;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			hung++;
			break; /* one is enough to say so */
		}
	}
	__atomic_store_n(&setters_stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	CHECK(hung == 0, "child %d of those forked during a set did not read stats and leave", forks + 1);
	CHECK(numa_page_option_set("stats", was) == 0, "stats back to %s", was);
}

int main(int argc, char **argv)
{
	/* A plain malloc links the library's malloc, and with it its constructor, into the static
	 * build (a static program that calls only numa_page_* functions never starts the
	 * allocator: its constructor is reached through the libc names). */
	void *volatile first = malloc(16); /* volatile: the compiler may not drop the pair */
	free(first);
	if (argc > 1 && strcmp(argv[1], "show") == 0) {
		printf("bind=%s verbose=%s stats=%s\n", get("bind"), get("verbose"), get("stats"));
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "wait") == 0) { /* for `numapage options PID`: runs until stdin ends */
		puts("ready");
		fflush(stdout);
		while (getchar() != EOF)
			;
		return 0;
	}
	if (argc > 2 && strcmp(argv[1], "report") == 0) {
		char spec[4096];
		snprintf(spec, sizeof spec, "json:%s", argv[2]);
		if (numa_page_option_set("stats", spec) != 0) {
			perror("option_api: numa_page_option_set(stats)");
			return 1;
		}
		numa_page_free(numa_page_malloc(1000));
		char now[4096];
		numa_page_option_get("stats", now, sizeof now);
		return strcmp(now, spec) == 0 ? 0 : 1;
	}
	check_options();
	check_reset();
	check_no_cancellation_point();
	check_string_reads_whole();
	check_fork_during_set();
	if (failures)
		return 1;
	puts("ok");
	return 0;
}
