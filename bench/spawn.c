/*
 * npbench_spawn — runs one measured process for bench/run.py and reports how it went:
 *   npbench_spawn RESULT_FILE TIMEOUT_SECONDS COMMAND [ARGS...]
 * writes "status=S maxrss_kb=K wall_s=W user_s=U sys_s=Y timed_out=0|1" to RESULT_FILE, where S
 * is the exit status or minus the signal that killed the command. The command gets
 * LD_PRELOAD=$NPBENCH_PRELOAD (or none), which this small program itself does not carry.
 * Why it exists: Linux keeps the peak RSS across exec, so a command forked straight from the
 * Python runner would inherit the runner's RSS as its ru_maxrss floor; from here the floor is
 * about 1 MB. SIGTERM/SIGINT are passed on; past the timeout the command is killed.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t timed_out;

static void on_signal(int sig)
{
	if (sig == SIGALRM) {
		timed_out = 1;
		sig = SIGKILL;
	}
	if (child_pid > 0)
		kill(child_pid, sig);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double tv(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: npbench_spawn RESULT_FILE TIMEOUT_SECONDS COMMAND [ARGS...]\n");
		return 64;
	}
	unsigned timeout = (unsigned)strtoul(argv[2], NULL, 10);
	const char *preload = getenv("NPBENCH_PRELOAD");
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	double t0 = now();
	pid_t pid = fork();
	if (pid < 0) {
		perror("npbench_spawn: fork");
		return 70;
	}
	if (pid == 0) {
		if (preload && *preload)
			setenv("LD_PRELOAD", preload, 1);
		else
			unsetenv("LD_PRELOAD");
		unsetenv("NPBENCH_PRELOAD");
		execvp(argv[3], argv + 3);
		fprintf(stderr, "npbench_spawn: cannot run %s: %s\n", argv[3], strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	if (timeout)
		alarm(timeout);
	int status;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("npbench_spawn: wait4");
			return 70;
		}
	}
	double wall = now() - t0;
	alarm(0);
	FILE *f = fopen(argv[1], "w");
	if (!f) {
		perror("npbench_spawn: result file");
		return 70;
	}
	int st = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
	fprintf(f, "status=%d maxrss_kb=%ld wall_s=%.6f user_s=%.6f sys_s=%.6f timed_out=%d\n", st,
		ru.ru_maxrss, wall, tv(ru.ru_utime), tv(ru.ru_stime), (int)timed_out);
	return fclose(f) ? 70 : 0;
}
