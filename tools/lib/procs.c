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

/* A thread of process pid that has not ended (its tid), or -1. */
static int live_task(int pid)
{
	char d[64];
	snprintf(d, sizeof d, "/proc/%d/task", pid);
	DIR *dir = opendir(d);
	if (!dir)
		return -1;
	int live = -1;
	for (struct dirent *e; live < 0 && (e = readdir(dir));) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		char t[300], state = 0;
		snprintf(t, sizeof t, "%d/task/%s", pid, e->d_name);
		if (stat_fields(t, &state) >= 0 && state != 'Z' && state != 'X')
			live = atoi(e->d_name);
	}
	closedir(dir);
	return live;
}

/* Whether the leader thread of pid has ended (state Z or X): -1 when pid cannot be read. It
 * is a zombie once main returns through pthread_exit, while the other threads run on. */
static int leader_ended(int pid)
{
	char d[24], state = 0;
	snprintf(d, sizeof d, "%d", pid);
	if (stat_fields(d, &state) < 0)
		return -1;
	return state == 'Z' || state == 'X';
}

bool np_proc_ended(int pid)
{
	int leader = leader_ended(pid);
	return leader < 0 ? !np_proc_alive(pid) : leader && live_task(pid) < 0;
}

void np_proc_path(int pid, const char *file, char *buf, size_t size)
{
	int tid = leader_ended(pid) > 0 ? live_task(pid) : -1;
	if (tid > 0 && tid != pid)
		snprintf(buf, size, "/proc/%d/task/%d/%s", pid, tid, file);
	else
		snprintf(buf, size, "/proc/%d/%s", pid, file);
}

/* The length of the UTF-8 sequence of a character at s (2 to 4), or 0 when none starts there;
 * *control: it is a C1 control (U+0080-U+009F: U+009B is the 8-bit CSI). */
static int utf8_char(const unsigned char *s, bool *control)
{
	int len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : 0;
	unsigned cp = len == 2 ? s[0] & 0x1fu : len == 3 ? s[0] & 0x0fu : s[0] & 0x07u;
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0; /* the NUL that ends the string stops here too */
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	bool shortest = len == 2 || (len == 3 && cp >= 0x800) || (len == 4 && cp >= 0x10000 && cp <= 0x10ffff);
	*control = cp >= 0x80 && cp <= 0x9f;
	return len && shortest && !(cp >= 0xd800 && cp <= 0xdfff) ? len : 0;
}

bool np_proc_utf8_terminal;

void np_proc_printable(const char *in, char *out, size_t size)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t n = 0;
	while (*s && n + 1 < size) {
		bool control = *s < 0x20 || *s == 0x7f;
		int len = *s < 0x80 ? 1 : np_proc_utf8_terminal ? utf8_char(s, &control) : 0;
		if (len == 0 || control) {
			out[n++] = '?'; /* a control character, or a byte of no character */
			s += len ? len : 1;
			continue;
		}
		if (n + (size_t)len >= size)
			break; /* a character is copied whole or not at all */
		memcpy(out + n, s, (size_t)len);
		n += (size_t)len;
		s += len;
	}
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

int np_proc_maps_each(int pid, const char *prefix, bool (*fn)(const char *path, void *ctx), void *ctx)
{
	char maps[96], line[4096];
	/* A live thread's view: the leader's is empty once main has ended through pthread_exit
	 * (the process's own file then looked stale, and was removed). */
	np_proc_path(pid, "maps", maps, sizeof maps);
	FILE *f = fopen(maps, "r");
	if (!f)
		return -1;
	bool done = false;
	size_t plen = strlen(prefix);
	while (!done && fgets(line, sizeof line, f)) {
		char *p = strchr(line, '/');
		if (!p || strncmp(p, prefix, plen) != 0)
			continue;
		p[strcspn(p, "\n")] = '\0';
		size_t n = strlen(p);
		static const char deleted[] = " (deleted)";
		if (n > sizeof deleted - 1 && strcmp(p + n - (sizeof deleted - 1), deleted) == 0)
			p[n - (sizeof deleted - 1)] = '\0';
		done = fn(p, ctx);
	}
	fclose(f);
	return done;
}

static bool same_path(const char *path, void *want)
{
	return strcmp(path, want) == 0;
}

int np_proc_maps_file(int pid, const char *path)
{
	return np_proc_maps_each(pid, path, same_path, (void *)path);
}
