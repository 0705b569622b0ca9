/*
 * fork_in_handler.c — a single-threaded program, linked with libnumapage, that forks from a
 * signal handler while its one thread allocates and frees (fork is async-signal-safe, POSIX).
 * A CPU-time timer interrupts the loop wherever it is, inside the allocator too, holding one
 * of its locks; the handler forks, the child leaves at once with _exit, the parent reaps it.
 * The library's fork handlers used to take every allocator lock, also the one the interrupted
 * thread held: the process hung in its first few hundred forks (glibc's tst-mallocfork2, run
 * by a helper). Passes when FORKS forks came back; a hang ends in SIGALRM.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "numapage.h"

enum { FORKS = 300, LIVE = 64 };

static volatile sig_atomic_t forks, bad_children;

static void on_timer(int sig)
{
	(void)sig;
	int saved = errno;
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	if (pid > 0) {
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad_children++;
		forks++;
	}
	errno = saved;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_timer;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) != 0)
		return 2;
	alarm(90); /* a hang: killed by SIGALRM */
	struct itimerval it = {.it_interval = {0, 500}, .it_value = {0, 500}};
	if (setitimer(ITIMER_PROF, &it, NULL) != 0)
		return 2;
	void *live[LIVE] = {0};
	unsigned x = 12345;
	unsigned long rounds = 0;
	while (forks < FORKS) {
		x = x * 1103515245u + 12345u;
		unsigned k = (x >> 8) % LIVE;
		/* Small blocks mostly, page runs and huge blocks now and then: every lock kind. */
		size_t size = (x >> 16) % 100 < 90 ? 16 + (x >> 20) % 4000 : ((size_t)1 << (12 + (x >> 20) % 11));
		free(live[k]);
		live[k] = malloc(size);
		if (!live[k]) {
			fprintf(stderr, "malloc(%zu) failed\n", size);
			return 1;
		}
		((char *)live[k])[0] = 1;
		rounds++;
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &off, NULL);
	for (int i = 0; i < LIVE; i++)
		free(live[i]);
	struct numa_page_node_stats s;
	if (numa_page_stats_get(0, &s) != 0) {
		fprintf(stderr, "numa_page_stats_get failed\n");
		return 1;
	}
	printf("%d forks from a signal handler during %lu malloc/free rounds, %d bad children\n", (int)forks,
	       rounds, (int)bad_children);
	return bad_children ? 1 : 0;
}
