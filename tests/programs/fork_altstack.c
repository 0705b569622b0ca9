/*
 * fork_altstack.c — a program, linked with libnumapage, that forks from a signal handler
 * running on a small alternate stack (sigaltstack, 6 KiB, a guard page below it), as programs
 * that handle SIGSEGV do. The library's fork handlers run on that stack. The parent's sweep of
 * its children's live files, every 64 forks, once ran there and needed 5 KiB more of it (a
 * directory buffer, a file's header, paths): the 64th fork crashed (a hostile review). Passes
 * when 200 forks from the handler came back with their children reaped; a crash fails it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "numapage.h"

enum { FORKS = 200, STACK = 6 * 1024 };

static volatile sig_atomic_t done, bad_children;

static void on_usr1(int sig)
{
	(void)sig;
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		bad_children++;
	done++;
}

int main(void)
{
	long page = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (size_t)page + STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m, (size_t)page, PROT_NONE) != 0) {
		perror("fork_altstack: the alternate stack");
		return 1;
	}
	stack_t ss = {.ss_sp = m + page, .ss_size = STACK};
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK;
	if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0) {
		perror("fork_altstack: sigaltstack or sigaction");
		return 1;
	}
	void *keep = malloc(100); /* the library is running, and publishes */
	for (int i = 0; i < FORKS; i++) {
		raise(SIGUSR1);
		free(malloc(100 + (size_t)i)); /* the allocator between forks */
	}
	free(keep);
	printf("fork_altstack: %d forks from a handler on a %d-byte alternate stack, %d bad children\n",
	       (int)done, STACK, (int)bad_children);
	return done == FORKS && !bad_children ? 0 : 1;
}
