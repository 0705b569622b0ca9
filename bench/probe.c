/*
 * npbench_probe — preloaded after the allocator under test into the real programs of the suite
 * (python3, gcc and its cc1/as/ld, sqlite3, redis-server). At start-up each process appends one
 * line "pid=P exe=PATH malloc=FILE" to the file named by NPBENCH_PROBE_OUT, where FILE is the
 * shared object that defines the malloc the process binds to. The runner checks that every line
 * names the allocator under test, which proves the preload took effect in every process.
 * It defines no allocation function and allocates nothing itself.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "owner.h"

__attribute__((constructor)) static void npbench_probe(void)
{
	const char *out = getenv("NPBENCH_PROBE_OUT");
	if (!out || !*out)
		return;
	const char *owner = npbench_malloc_owner();
	char exe[512];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = '\0';
	char line[1200];
	int len = snprintf(line, sizeof line, "pid=%d exe=%s malloc=%s\n", (int)getpid(), exe, owner);
	if (len <= 0 || (size_t)len >= sizeof line)
		return;
	int fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	/* One write per line: O_APPEND keeps concurrent processes' lines whole. */
	if (write(fd, line, (size_t)len) != len)
		(void)0;
	close(fd);
}
