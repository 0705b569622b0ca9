/*
 * numapage stat PID [-i SECONDS] [-n COUNT] — a running process's per-node counters, like
 * `numastat -p`: maps the process's live-view file /dev/shm/numapage.<uid>.<pid> read-only
 * (layout: struct np_vmstat_shm_header in src/vmstat/vmstat.h) and prints one row per counter,
 * one column per node, every SECONDS. Names and kinds come from the file, so a tool of another
 * version reads them right. Before looking, it removes the caller's stale files: those of
 * processes that are gone, or whose pid now belongs to a process that does not map them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../cmds.h"
#include "vmstat/vmstat.h"

#define MAX_ITEMS 256

static int usage(void)
{
	fprintf(stderr, "usage: numapage stat PID [-i SECONDS] [-n COUNT]\n"
			"  per-node counters of a running process that uses libnumapage;\n"
			"  -i refreshes every SECONDS (until the process exits, or COUNT times)\n");
	return 2;
}

static bool parse_int(const char *s, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end || errno)
		return false;
	*out = v;
	return true;
}

static bool process_alive(int pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

/* Whether process pid maps path: 1 yes, 0 no, -1 cannot tell (its maps are unreadable). */
static int maps_file(int pid, const char *path)
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

/* A complete header (magic set) of a process that is alive but does not map the file means its
 * pid was reused after the publisher died without cleaning up. */
static bool stale(int pid, const char *path)
{
	if (!process_alive(pid))
		return true;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct np_vmstat_shm_header h;
	ssize_t n = read(fd, &h, sizeof h);
	close(fd);
	if (n != (ssize_t)sizeof h || h.magic != NP_VMSTAT_SHM_MAGIC)
		return false; /* being created right now, or not ours to judge */
	return maps_file(pid, path) == 0;
}

static bool parse_name(const char *name, unsigned *uid, int *pid)
{
	size_t plen = strlen(NP_VMSTAT_SHM_PREFIX);
	if (strncmp(name, NP_VMSTAT_SHM_PREFIX, plen) != 0)
		return false;
	char tail;
	return sscanf(name + plen, "%u.%d%c", uid, pid, &tail) == 2 && *pid > 0;
}

/* Removes the caller's stale files; finds the file of target (any owner) into path. */
static bool scan(int target, char *path, size_t size, unsigned *owner)
{
	unsigned me = geteuid();
	bool found = false;
	DIR *d = opendir(NP_VMSTAT_SHM_DIR);
	if (!d)
		return false;
	for (struct dirent *e; (e = readdir(d));) {
		unsigned uid;
		int pid;
		if (!parse_name(e->d_name, &uid, &pid))
			continue;
		char p[512];
		snprintf(p, sizeof p, "%s/%s", NP_VMSTAT_SHM_DIR, e->d_name);
		if (uid == me && stale(pid, p)) {
			if (unlink(p) == 0)
				fprintf(stderr, "numapage stat: removed %s, left by process %d that is gone\n", p, pid);
			continue;
		}
		/* Our own file wins over a same-pid name of another uid. */
		if (pid == target && (!found || uid == me)) {
			snprintf(path, size, "%s", p);
			*owner = uid;
			found = true;
		}
	}
	closedir(d);
	return found;
}

static unsigned proc_uid(int pid)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof p, "/proc/%d", pid);
	return stat(p, &st) == 0 ? (unsigned)st.st_uid : (unsigned)-1;
}

static void proc_name(int pid, char *buf, size_t size)
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

static int other_user(int pid, unsigned uid)
{
	if (uid != (unsigned)-1)
		fprintf(stderr, "numapage stat: process %d belongs to another user (uid %u); "
				"only its user or root can read its statistics\n", pid, uid);
	else
		fprintf(stderr, "numapage stat: process %d belongs to another user; "
				"only its user or root can read its statistics\n", pid);
	return 1;
}

static int not_ours(int pid)
{
	fprintf(stderr, "numapage stat: process %d does not use libnumapage (no %s/%s%u.%d; "
			"or it runs with NUMAPAGE_SHM=0)\n",
		pid, NP_VMSTAT_SHM_DIR, NP_VMSTAT_SHM_PREFIX, (unsigned)geteuid(), pid);
	return 1;
}

static int no_process(int pid)
{
	fprintf(stderr, "numapage stat: no process %d\n", pid);
	return 1;
}

static bool header_sane(const struct np_vmstat_shm_header *h, size_t size, int pid)
{
	size_t names_end = (size_t)h->names_off + (size_t)h->nitems * sizeof(struct np_vmstat_shm_name);
	size_t totals_end = (size_t)h->totals_off + (size_t)h->nnodes * h->node_stride;
	return h->version == NP_VMSTAT_SHM_VERSION && h->size <= size && h->pid == pid &&
	       h->nnodes >= 1 && h->nnodes <= NP_MAX_NODES && h->nitems >= 1 && h->nitems <= MAX_ITEMS &&
	       h->names_off >= sizeof *h && names_end <= h->size && h->totals_off % 8 == 0 &&
	       h->node_stride % 8 == 0 && h->node_stride >= (uint32_t)h->nitems * 8 && totals_end <= h->size;
}

static void pause_for(double seconds)
{
	struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int np_cmd_stat(int argc, char **argv)
{
	long pid = 0, count = 0;
	double interval = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage();
			return 0;
		} else if (strcmp(argv[i], "-i") == 0 && i + 1 < argc) {
			char *end;
			interval = strtod(argv[++i], &end);
			if (end == argv[i] || *end || !(interval > 0) || interval > 86400)
				return usage();
		} else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
			if (!parse_int(argv[++i], &count) || count < 1)
				return usage();
		} else if (!pid && parse_int(argv[i], &pid) && pid > 0 && pid <= 0x7fffffff) {
			continue;
		} else {
			return usage();
		}
	}
	if (!pid)
		return usage();
	if (!count)
		count = interval > 0 ? 0 : 1; /* 0: until the process exits */

	unsigned me = geteuid(), owner = 0;
	char path[512];
	if (!scan((int)pid, path, sizeof path, &owner)) {
		if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
			return no_process((int)pid);
		unsigned uid = proc_uid((int)pid);
		if (me != 0 && uid != me)
			return other_user((int)pid, uid);
		return not_ours((int)pid);
	}
	if (me != 0 && owner != me)
		return other_user((int)pid, owner);

	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == EACCES || errno == EPERM)
			return other_user((int)pid, owner);
		if (errno == ENOENT)
			return process_alive((int)pid) ? not_ours((int)pid) : no_process((int)pid);
		fprintf(stderr, "numapage stat: cannot open %s: %s\n", path, strerror(errno));
		return 1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || (me != 0 && st.st_uid != me)) {
		close(fd);
		return other_user((int)pid, (unsigned)st.st_uid);
	}
	size_t size = (size_t)st.st_size;
	if (size < sizeof(struct np_vmstat_shm_header)) {
		close(fd);
		fprintf(stderr, "numapage stat: %s is not a libnumapage statistics file\n", path);
		return 1;
	}
	const void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		fprintf(stderr, "numapage stat: cannot map %s: %s\n", path, strerror(errno));
		return 1;
	}
	const struct np_vmstat_shm_header *h = map;
	/* The publisher stores magic last; a process starting right now may not have yet. */
	for (int tries = 0; __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != NP_VMSTAT_SHM_MAGIC; tries++) {
		if (tries == 100) {
			fprintf(stderr, "numapage stat: %s is not a libnumapage statistics file\n", path);
			return 1;
		}
		pause_for(0.01);
	}
	if (!header_sane(h, size, (int)pid)) {
		fprintf(stderr, "numapage stat: %s has an unknown layout (version %u)\n", path, h->version);
		return 1;
	}
	if (maps_file((int)pid, path) == 0) {
		unlink(path);
		fprintf(stderr, "numapage stat: removed %s, left by an earlier process %ld\n", path, pid);
		return not_ours((int)pid);
	}

	int nnodes = h->nnodes, nitems = h->nitems, max_thr = 0;
	int os_ids[NP_MAX_NODES];
	static char name_buf[MAX_ITEMS][NP_VMSTAT_SHM_NAME_LEN];
	const char *names[MAX_ITEMS];
	uint8_t kinds[MAX_ITEMS];
	const struct np_vmstat_shm_name *fnames = (const void *)((const char *)map + h->names_off);
	for (int k = 0; k < nitems; k++) {
		memcpy(name_buf[k], fnames[k].name, sizeof fnames[k].name);
		name_buf[k][sizeof fnames[k].name] = '\0';
		names[k] = name_buf[k];
		kinds[k] = fnames[k].kind;
	}
	for (int i = 0; i < nnodes; i++) {
		os_ids[i] = h->os_id[i];
		max_thr = h->threshold[i] > max_thr ? h->threshold[i] : max_thr;
	}
	char comm[64];
	proc_name((int)pid, comm, sizeof comm);
	static long values[NP_MAX_NODES * MAX_ITEMS];

	for (long done = 0;;) {
		for (int i = 0; i < nnodes; i++) {
			const int64_t *t = (const void *)((const char *)map + h->totals_off + (size_t)i * h->node_stride);
			for (int k = 0; k < nitems; k++) {
				long v = (long)__atomic_load_n(&t[k], __ATOMIC_RELAXED);
				/* Gauges read below zero while deltas are pending: clamp, as the library. */
				values[i * nitems + k] = NP_VMSTAT_KIND_IS_GAUGE(kinds[k]) && v < 0 ? 0 : v;
			}
		}
		printf("Per-node statistics of process %ld (%s) [pages; malloc_* in bytes; shared totals: "
		       "each may lag by %d per live thread, x page size for bytes]\n",
		       pid, comm[0] ? comm : "?", max_thr);
		np_vmstat_print_table(stdout, nnodes, os_ids, nitems, names, values);
		fflush(stdout);
		if (count && ++done >= count)
			break;
		pause_for(interval);
		if (!process_alive((int)pid) || access(path, F_OK) != 0) {
			fprintf(stderr, "numapage stat: process %ld has exited\n", pid);
			break;
		}
		printf("\n");
	}
	return 0;
}
