/* procs.c (tools) — reading /proc (see procs.h). The command only: it runs on the C library's
 * malloc and stdio, outside any program it looks at. */
#include "procs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool np_proc_alive(int pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/* "Uid:\treal\teffective\tsaved\tfs" of /proc/<pid>/status: the owner of /proc/<pid> is not it
 * for a process that is not dumpable (root then). */
unsigned np_proc_uid(int pid)
{
	char p[64], line[256];
	snprintf(p, sizeof p, "/proc/%d/status", pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return (unsigned)-1;
	unsigned real, eff, uid = (unsigned)-1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Uid: %u %u", &real, &eff) == 2) {
			uid = eff;
			break;
		}
	fclose(f);
	return uid;
}

void np_proc_comm(int pid, char *buf, size_t size)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/comm", pid);
	FILE *f = fopen(p, "r");
	buf[0] = '\0';
	if (f) {
		if (fgets(buf, (int)size, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
}

void np_proc_cmdline(int pid, char *buf, size_t size)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/cmdline", pid);
	FILE *f = fopen(p, "r");
	size_t n = 0;
	if (f) {
		n = fread(buf, 1, size - 1, f);
		fclose(f);
	}
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
}

/* "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'.
 * The state into *state_out (when not NULL); returns the parent's pid, or -1. */
static int stat_fields(const char *dir, char *state_out)
{
	char p[300], line[1024];
	snprintf(p, sizeof p, "/proc/%s/stat", dir);
	FILE *f = fopen(p, "r");
	if (!f)
		return -1;
	size_t n = fread(line, 1, sizeof line - 1, f);
	fclose(f);
	line[n] = '\0';
	char *close = strrchr(line, ')');
	int ppid;
	char state;
	if (!close || sscanf(close + 1, " %c %d", &state, &ppid) != 2)
		return -1;
	if (state_out)
		*state_out = state;
	return ppid;
}

static int stat_ppid(const char *dir)
{
	return stat_fields(dir, NULL);
}

bool np_proc_ended(int pid)
{
	char d[24], state = 0;
	snprintf(d, sizeof d, "%d", pid);
	return stat_fields(d, &state) < 0 ? !np_proc_alive(pid) : state == 'Z' || state == 'X';
}

void np_proc_printable(const char *in, char *out, size_t size)
{
	size_t n = 0;
	for (; *in && n + 1 < size; in++)
		out[n++] = (unsigned char)*in < 0x20 || *in == 0x7f ? '?' : *in;
	if (size)
		out[n] = '\0';
}

int np_proc_ppid(int pid)
{
	char d[24];
	snprintf(d, sizeof d, "%d", pid);
	return stat_ppid(d);
}

int np_proc_list(int *pids, int *ppids, int max)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	int n = 0;
	for (struct dirent *e; n < max && (e = readdir(d));) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		int ppid = stat_ppid(e->d_name);
		if (ppid < 0)
			continue; /* gone meanwhile */
		pids[n] = atoi(e->d_name);
		ppids[n] = ppid;
		n++;
	}
	closedir(d);
	return n;
}

int np_proc_descendants(int pid, int *out, int max)
{
	enum { MAXP = 1 << 16 };
	static int pids[MAXP], ppids[MAXP];
	int n = np_proc_list(pids, ppids, MAXP), found = 0;
	/* Breadth first: each round adds the children of what was found in the one before. */
	int from = 0;
	for (int i = 0; i < n && found < max; i++)
		if (ppids[i] == pid)
			out[found++] = pids[i];
	while (from < found) {
		int to = found;
		for (int k = from; k < to; k++)
			for (int i = 0; i < n && found < max; i++)
				if (ppids[i] == out[k])
					out[found++] = pids[i];
		from = to;
	}
	return found;
}

int np_proc_maps_file(int pid, const char *path)
{
	char maps[64], line[4096];
	snprintf(maps, sizeof maps, "/proc/%d/maps", pid);
	FILE *f = fopen(maps, "r");
	if (!f)
		return -1;
	int found = 0;
	size_t len = strlen(path);
	while (!found && fgets(line, sizeof line, f)) {
		char *p = strstr(line, path);
		found = p && (p[len] == '\n' || p[len] == '\0' || p[len] == ' ');
	}
	fclose(f);
	return found;
}
