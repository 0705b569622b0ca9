/*
 * fork_publish.c — when a forked child makes its live-view file (/dev/shm/numapage.<uid>.<pid>,
 * which `numapage stat` reads). A child that allocates has one after its first slow paths; a
 * child that has not allocated yet has none, so that a fork and exec (a shell's every command)
 * makes no file that the new program must find, read and remove before making its own. Where a
 * report at exit is asked (NUMAPAGE_STATS, as `numapage run --stats` sets it), the child has its
 * file at once: the job's reaper counts a child that left with _exit from it. Exit status 0
 * when both hold, 77 when the parent itself has no file (no /dev/shm).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "numapage.h"

static void path_of(char *buf, size_t size, int pid)
{
	snprintf(buf, size, "/dev/shm/numapage.%u.%d", (unsigned)geteuid(), pid);
}

/* Forks a child that looks for its file before and after 200 large mallocs (each a slow path
 * of the allocator); returns its findings as bits (1 before, 2 after), or -1. */
static int child_files(void)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char path[96];
		path_of(path, sizeof path, getpid());
		int before = access(path, F_OK) == 0;
		for (int i = 0; i < 200; i++) {
			char *b = malloc(256 << 10);
			if (!b)
				_exit(100);
			memset(b, i, 4096);
			free(b);
		}
		int after = access(path, F_OK) == 0;
		_exit((before ? 1 : 0) | (after ? 2 : 0));
	}
	int status = 0;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	char path[96];
	path_of(path, sizeof path, pid);
	unlink(path); /* left behind by _exit */
	return WEXITSTATUS(status);
}

int main(void)
{
	char mine[96];
	path_of(mine, sizeof mine, getpid());
	void *warm = malloc(100); /* the allocator is started: its file made */
	free(warm);
	if (access(mine, F_OK) != 0) {
		printf("fork_publish: this process has no live file (%s): skipped\n", mine);
		return 77;
	}
	int lazy = child_files();
	if (numa_page_option_set("stats", "json:/dev/null") != 0) {
		perror("numa_page_option_set stats");
		return 1;
	}
	int eager = child_files();
	printf("fork_publish: without a report at exit, child file before/after allocating: %d/%d; with one: %d/%d\n",
	       lazy & 1, lazy >> 1 & 1, eager & 1, eager >> 1 & 1);
	if (lazy != 2) {
		fprintf(stderr, "fork_publish: a child with no report at exit must make its file once it allocates, "
				"not at the fork (got %d)\n", lazy);
		return 1;
	}
	if (eager != 3) {
		fprintf(stderr, "fork_publish: a child whose totals are collected at exit must have its file at the fork "
				"(got %d)\n", eager);
		return 1;
	}
	printf("ok\n");
	return 0;
}
