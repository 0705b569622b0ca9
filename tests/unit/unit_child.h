/*
 * unit_child.h — runs a piece of a unit test in a child process and tells how it ended, for
 * the checks that the library aborts (np_fatal) on misuse. Include after <cmocka.h>.
 */
#ifndef NP_UNIT_CHILD_H
#define NP_UNIT_CHILD_H

#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* True when fn() dies by SIGABRT in a child process having written `msg` to stderr (NULL:
 * whatever it wrote). What it wrote is shown when the message is not there. */
static inline bool np_test_aborts_with(void (*fn)(void), const char *msg)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		fn();
		_exit(0);
	}
	close(fds[1]);
	char buf[1024];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof buf - 1 && (r = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = 0;
	close(fds[0]);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	bool said = !msg || strstr(buf, msg);
	if (!said)
		print_message("child said: %s\n", buf);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && said;
}

#endif
