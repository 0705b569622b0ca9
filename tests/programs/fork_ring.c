/*
 * fork_ring — a fork that interrupted a change of the forking thread's ring returns. A
 * signal handler's fork may interrupt malloc anywhere, also amid a slab's unlinking from its
 * thread's ring; the child's fork handler walks the rings to take their byte counts, and a
 * full walk (until it comes back to the current slab) never ended on such a ring: the child
 * spun for good, and the parent waiting for it with it (a hostile test, SIGALRM forks in a
 * program filling and emptying slabs: 4 hangs in 20 runs). The walk is now bounded.
 *
 * Deterministic stand-in: the thread's ring of a class it does not use is made a ring caught
 * mid-change (current -> b -> c -> b: the current slab is never reached again), the process
 * forks, the child leaves at once, the parent reaps it; an alarm ends a hang, and a CPU limit
 * the child's. Linked with
 * the static library, for the thread's state (np_tls).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "malloc/slab.h"
#include "malloc/thread.h"

int main(void)
{
	void *p = malloc(40); /* the thread's state */
	struct np_thread *th = np_tls.self;
	if (!p || !th) {
		printf("no thread state after a malloc\n");
		return 1;
	}
	int c = NP_NCLASSES - 1;
	while (c > 0 && th->ring[c])
		c--;
	if (th->ring[c]) {
		printf("every class has a ring\n");
		return 1;
	}
	static struct np_slab s[3]; /* nothing to count: no block used, none requested */
	s[0].next = &s[1];
	s[1].next = &s[2];
	s[2].next = &s[1];
	th->ring[c] = &s[0];
	alarm(30); /* a hang ends here, with SIGALRM: a failure */
	struct rlimit cpu = {40, 40}; /* and the child's spin (alarms are not inherited) */
	setrlimit(RLIMIT_CPU, &cpu);
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	th->ring[c] = NULL;
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("the fork or its child failed\n");
		return 1;
	}
	alarm(0);
	free(p);
	printf("a fork amid a ring change returned\n");
	return 0;
}
