/*
 * evil_plugin.c — a would-be hwloc plugin (built as hwloc_evil.so) for the setuid test: its
 * constructor runs the moment anything dlopen()s it and leaves a mark (the file named by
 * HWLOC_EVIL_MARK, holding the effective uid it ran as; an HWLOC_ name, because while hwloc
 * runs the library shows it only those). hwloc scans the directories of HWLOC_PLUGINS_PATH
 * for hwloc_*.so; in a setuid program no variable may make it do so.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void leave_mark(void)
{
	const char *mark = getenv("HWLOC_EVIL_MARK");
	if (!mark)
		return;
	int fd = open(mark, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		dprintf(fd, "euid=%d\n", (int)geteuid());
		close(fd);
	}
}
