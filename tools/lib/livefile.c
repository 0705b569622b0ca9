/* livefile.c (tools) — a process's live-view file read by counter name (see livefile.h). */
#include "livefile.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static bool header_sane(const struct np_vmstat_shm_header *h, size_t size, int pid)
{
	size_t names_end = (size_t)h->names_off + (size_t)h->nitems * sizeof(struct np_vmstat_shm_name);
	size_t totals_end = (size_t)h->totals_off + (size_t)h->nnodes * h->node_stride;
	return h->version == NP_VMSTAT_SHM_VERSION && h->size <= size && h->pid == pid && h->nnodes >= 1 &&
	       h->nnodes <= NP_MAX_NODES && h->nitems >= 1 && h->nitems <= NP_LIVEFILE_MAX_ITEMS &&
	       h->names_off >= sizeof *h && names_end <= h->size && h->totals_off % 8 == 0 &&
	       h->node_stride % 8 == 0 && h->node_stride >= (uint32_t)h->nitems * 8 && totals_end <= h->size;
}

enum np_livefile_err np_livefile_map(struct np_livefile *f, int fd, size_t size, int pid, int tries)
{
	memset(f, 0, sizeof *f);
	if (size < sizeof(struct np_vmstat_shm_header))
		return NP_LIVEFILE_NOT_OURS;
	const void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return NP_LIVEFILE_MAP;
	f->map = m;
	f->size = size;
	const struct np_vmstat_shm_header *h = m;
	for (int t = 0; __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != NP_VMSTAT_SHM_MAGIC; t++) {
		if (t >= tries) {
			np_livefile_unmap(f);
			return NP_LIVEFILE_NOT_OURS;
		}
		struct timespec ts = {0, 10 * 1000 * 1000};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	if (!header_sane(h, size, pid)) {
		np_livefile_unmap(f);
		return NP_LIVEFILE_LAYOUT;
	}
	f->nnodes = h->nnodes;
	f->nitems = h->nitems;
	const struct np_vmstat_shm_name *names = (const void *)((const char *)m + h->names_off);
	for (int k = 0; k < f->nitems; k++) {
		char name[NP_VMSTAT_SHM_NAME_LEN];
		memcpy(name, names[k].name, sizeof names[k].name);
		name[sizeof names[k].name] = '\0';
		f->item_of[k] = np_tstats_item(name, strlen(name));
		f->kind[k] = names[k].kind;
	}
	for (int i = 0; i < f->nnodes; i++) {
		f->os_id[i] = h->os_id[i];
		f->max_thr = h->threshold[i] > f->max_thr ? h->threshold[i] : f->max_thr;
	}
	return NP_LIVEFILE_OK;
}

void np_livefile_read(const struct np_livefile *f, struct np_tstats *out)
{
	const struct np_vmstat_shm_header *h = f->map;
	np_tstats_clear(out);
	for (int i = 0; i < f->nnodes; i++) {
		long *d = np_tstats_node(out, f->os_id[i]);
		const int64_t *t = (const void *)((const char *)f->map + h->totals_off + (size_t)i * h->node_stride);
		for (int k = 0; k < f->nitems; k++) {
			if (f->item_of[k] < 0 || !d)
				continue;
			long v = (long)__atomic_load_n(&t[k], __ATOMIC_RELAXED);
			/* Gauges read below zero while deltas are pending: clamp, as the library. */
			d[f->item_of[k]] = NP_VMSTAT_KIND_IS_GAUGE(f->kind[k]) && v < 0 ? 0 : v;
		}
	}
}

void np_livefile_unmap(struct np_livefile *f)
{
	if (f->map)
		munmap((void *)f->map, f->size);
	f->map = NULL;
}
