/*
 * exec — a program that starts short-lived programs one after another, as a shell script, make
 * or a CI job does: each thread spawns a child (posix_spawn of this program, "npbench
 * exec-child") and waits for it, a fixed total of children split over the threads. The child
 * is a small tool's life: a few dozen allocations of 16 bytes to 8 KiB, a realloc, the frees,
 * and exit through the exit handlers. The child inherits the environment, so it runs under the
 * allocator the parent was given (LD_PRELOAD). What it measures is what the allocator adds to a
 * process's start and exit: its start-up (system calls, the pages it writes), the library's
 * load by the dynamic linker, and its exit handlers.
 */
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

extern char **environ;

#define EX_OBJECTS 40

int bench_exec_child(void)
{
	void *obj[EX_OBJECTS];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < EX_OBJECTS; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t n = 16 + (size_t)(x % (i % 8 == 7 ? 8192 : 256));
		obj[i] = malloc(n);
		if (!obj[i])
			return 3;
		memset(obj[i], i, n);
	}
	obj[0] = realloc(obj[0], 1000);
	if (!obj[0])
		return 3;
	for (int i = 0; i < EX_OBJECTS; i++)
		free(obj[i]);
	return 0;
}

struct ex_worker {
	int id;
	uint64_t children;
	uint64_t sum;
	char pad[64];
};

static char self_path[4096];

static void *ex_thread(void *arg)
{
	struct ex_worker *w = arg;
	char *argv[] = {self_path, "exec-child", NULL};
	for (uint64_t i = 0; i < w->children; i++) {
		pid_t pid;
		int rc = posix_spawn(&pid, self_path, NULL, NULL, argv, environ);
		if (rc != 0)
			bench_fail("exec: posix_spawn failed (%d)", rc);
		int status;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bench_fail("exec: a child failed (status %d)", status);
		w->sum += 1 + (uint64_t)WEXITSTATUS(status);
	}
	return NULL;
}

int bench_exec(const struct bench_args *a, struct bench_result *r)
{
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
	if (n <= 0)
		bench_fail("exec: cannot read /proc/self/exe");
	self_path[n] = '\0';
	uint64_t total = bench_scaled(1000, a->scale, 10);
	struct ex_worker *w = calloc((size_t)a->threads, sizeof *w);
	if (!w)
		bench_fail("exec: calloc failed");
	for (int t = 0; t < a->threads; t++) {
		w[t].id = t;
		w[t].children = bench_share(total, a->threads, t);
	}
	if (a->threads == 1) {
		bench_pin_self(0);
		ex_thread(w);
	} else {
		bench_run_threads(a->threads, ex_thread, w, sizeof *w);
	}
	for (int t = 0; t < a->threads; t++) {
		r->ops += w[t].children;
		r->checksum += w[t].sum;
	}
	free(w);
	return 0;
}
