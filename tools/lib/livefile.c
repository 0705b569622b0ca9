/* livefile.c (tools) — a process's live-view file read by counter name (see livefile.h). */
#include "livefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "os.h"

int np_open_regular(const char *path, struct stat *st)
{
	/* O_NONBLOCK: opening a FIFO for reading would wait for a writer that never comes. */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return -2;
	}
	return fd;
}

int np_livefile_open(const char *path, unsigned uid, struct stat *st)
{
	int fd = np_open_regular(path, st);
	if (fd >= 0 && st->st_uid != (uid_t)uid) {
		close(fd);
		return -2;
	}
	return fd;
}

/* The whole of size bytes at offset 0, or false (short: the file shrank meanwhile). */
static bool read_all(int fd, void *buf, size_t size)
{
	size_t n = 0;
	while (n < size) {
		ssize_t r = pread(fd, (char *)buf + n, size - n, (off_t)n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		n += (size_t)r;
	}
	return true;
}

static bool header_sane(const struct np_vmstat_shm_header *h, size_t file_size, unsigned uid, int pid)
{
	size_t names_end = (size_t)h->names_off + (size_t)h->nitems * sizeof(struct np_vmstat_shm_name);
	size_t totals_end = (size_t)h->totals_off + (size_t)h->nnodes * h->node_stride;
	if (!(h->version == NP_VMSTAT_SHM_VERSION && h->size >= sizeof *h && h->size <= file_size &&
	      h->size <= NP_LIVEFILE_MAX_SIZE && h->pid == pid && h->uid == uid && h->nnodes >= 1 &&
	      h->nnodes <= NP_MAX_NODES && h->nitems >= 1 && h->nitems <= NP_LIVEFILE_MAX_ITEMS &&
	      h->names_off >= sizeof *h && names_end <= h->totals_off && h->totals_off % 8 == 0 &&
	      h->node_stride % 8 == 0 && h->node_stride >= (uint32_t)h->nitems * 8 && totals_end <= h->size))
		return false;
	/* Node ids name table columns and key sums: each one once, none negative. Thresholds are
	 * the lag bound shown: never negative. */
	for (int i = 0; i < h->nnodes; i++) {
		if (h->os_id[i] < 0 || h->threshold[i] < 0)
			return false;
		for (int j = 0; j < i; j++)
			if (h->os_id[j] == h->os_id[i])
				return false;
	}
	return true;
}

static const int64_t *totals_of(const struct np_livefile *f, int node)
{
	return (const void *)(f->buf + f->totals_off + (size_t)node * f->node_stride);
}

static bool values_sane(const struct np_livefile *f)
{
	for (int i = 0; i < f->nnodes; i++) {
		const int64_t *t = totals_of(f, i);
		for (int k = 0; k < f->nitems; k++)
			if (t[k] > NP_LIVEFILE_MAX_VALUE || t[k] < -NP_LIVEFILE_MAX_VALUE)
				return false;
	}
	return true;
}

void np_livefile_free(struct np_livefile *f)
{
	free(f->first);
	free(f->buf);
	f->first = f->buf = NULL;
}

enum np_livefile_err np_livefile_load(struct np_livefile *f, int fd, const struct stat *st, const char *path,
				      unsigned uid, int pid, int tries)
{
	memset(f, 0, sizeof *f);
	struct np_vmstat_shm_header h;
	for (int t = 0;; t++) {
		if ((size_t)st->st_size < sizeof h)
			return NP_LIVEFILE_NOT_OURS;
		if (!read_all(fd, &h, sizeof h))
			return NP_LIVEFILE_NOT_OURS; /* shrank meanwhile */
		if (h.magic == NP_VMSTAT_SHM_MAGIC)
			break;
		if (t >= tries)
			return NP_LIVEFILE_NOT_OURS;
		struct timespec ts = {0, 10 * 1000 * 1000};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	if (!header_sane(&h, (size_t)st->st_size, uid, pid))
		return NP_LIVEFILE_LAYOUT;
	if (np_vmstat_shm_other_ns(&h, np_os_pid_ns()))
		return NP_LIVEFILE_OTHER_NS;
	snprintf(f->path, sizeof f->path, "%s", path);
	f->uid = uid;
	f->pid = pid;
	f->parent = h.parent > 0 ? h.parent : 0;
	f->keeper = h.keeper > 0 ? h.keeper : 0;
	f->dev = st->st_dev;
	f->ino = st->st_ino;
	f->size = h.size;
	f->fixed = h.totals_off;
	f->totals_off = h.totals_off;
	f->node_stride = h.node_stride;
	f->nnodes = h.nnodes;
	f->nitems = h.nitems;
	f->first = malloc(f->size);
	f->buf = malloc(f->size);
	if (!f->first || !f->buf) {
		np_livefile_free(f);
		errno = ENOMEM;
		return NP_LIVEFILE_IO;
	}
	/* The header read above and the whole file read now must agree: it may be rewritten in
	 * between (the checks are made on the copy that is used). */
	if (!read_all(fd, f->buf, f->size) || memcmp(f->buf, &h, sizeof h) != 0 || !values_sane(f)) {
		np_livefile_free(f);
		return NP_LIVEFILE_LAYOUT;
	}
	memcpy(f->first, f->buf, f->size);
	const struct np_vmstat_shm_name *names = (const void *)(f->buf + h.names_off);
	for (int k = 0; k < f->nitems; k++) {
		char name[NP_VMSTAT_SHM_NAME_LEN];
		memcpy(name, names[k].name, sizeof names[k].name);
		name[sizeof names[k].name] = '\0';
		f->item_of[k] = np_tstats_item(name, strlen(name));
		f->kind[k] = names[k].kind;
	}
	for (int i = 0; i < f->nnodes; i++) {
		f->os_id[i] = h.os_id[i];
		f->max_thr = h.threshold[i] > f->max_thr ? h.threshold[i] : f->max_thr;
	}
	return NP_LIVEFILE_OK;
}

void np_livefile_totals(const struct np_livefile *f, struct np_tstats *out)
{
	np_tstats_clear(out);
	for (int i = 0; i < f->nnodes; i++) {
		long *d = np_tstats_node(out, f->os_id[i]);
		const int64_t *t = totals_of(f, i);
		for (int k = 0; k < f->nitems; k++) {
			if (f->item_of[k] < 0 || !d)
				continue;
			int64_t v;
			memcpy(&v, &t[k], sizeof v);
			/* Gauges read below zero while deltas are pending: clamp, as the library. */
			d[f->item_of[k]] = NP_VMSTAT_KIND_IS_GAUGE(f->kind[k]) && v < 0 ? 0 : (long)v;
		}
	}
}

enum np_livefile_err np_livefile_read(struct np_livefile *f, struct np_tstats *out)
{
	struct stat st;
	int fd = np_livefile_open(f->path, f->uid, &st);
	if (fd == -1 && errno == ENOENT)
		return NP_LIVEFILE_GONE; /* removed at exit */
	if (fd < 0)
		return NP_LIVEFILE_CHANGED;
	/* Another file under the name (a new process with the pid, or a planted one), or the same
	 * one cut short or rewritten: not the process that was being watched, or not readable. */
	bool same = st.st_dev == f->dev && st.st_ino == f->ino && (size_t)st.st_size >= f->size &&
		    read_all(fd, f->buf, f->size);
	close(fd);
	if (!same || memcmp(f->buf, f->first, f->fixed) != 0 || !values_sane(f))
		return NP_LIVEFILE_CHANGED;
	np_livefile_totals(f, out);
	return NP_LIVEFILE_OK;
}
