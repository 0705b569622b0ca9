/*
 * vmstat_shm.c — the live view: /dev/shm/numapage.<euid>.<pid>.<ns>, a small file (mode 0600, the
 * process's user) holding a header and the per-node totals themselves, so publishing costs
 * nothing: folds land in the mapping and `numapage stat PID` maps the file read-only.
 * Layout: struct np_vmstat_shm_header in vmstat.h. State here is written once at start-up (or
 * in a forked child, single-threaded) and read at exit; no lock.
 * The file is unlinked at exit; the mapping stays until the process ends, because other threads
 * may still be counting while atexit handlers run. A process killed before its exit handler,
 * or a forked child leaving with _exit, leaves its file behind: np_vmstat_shm_sweep removes
 * the caller's files of dead processes, quietly, when a process starts (exec, not fork); one
 * whose keeper (NUMAPAGE_SHM_KEEPER, numapage run --stats) lives stays for the keeper to read.
 */
#include "vmstat.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "log.h"
#include "options.h"
#include "os.h"

/* Every name must fit its slot in the file. */
struct name_fits_ {
#define FITS_(name, kind, desc) char name[sizeof(#name) <= NP_VMSTAT_SHM_NAME_LEN - 1 ? 1 : -1];
	NUMA_PAGE_STAT_ITEMS(FITS_)
#undef FITS_
};

static void *map;
static size_t map_size;
/* In a forked child that has not published: the parent's mapping, unmapped when the child
 * publishes (np_vmstat_shm_forget). */
static void *inherited;
static size_t inherited_size;
static char path[128];
static uint64_t path_ino; /* the inode of the file made: only it is removed at exit */
static int owner_pid;

size_t np_vmstat_shm_path(char *buf, size_t size, unsigned uid, int pid, uint64_t ns)
{
	return np_format(buf, size, "%s/%s%u.%d.%llu", NP_VMSTAT_SHM_DIR, NP_VMSTAT_SHM_PREFIX, uid, pid,
			 (unsigned long long)ns);
}

static size_t round_up(size_t x, size_t a)
{
	return (x + a - 1) / a * a;
}

bool np_vmstat_shm_other_ns(const struct np_vmstat_shm_header *h, uint64_t ns)
{
	return ns && h->magic == NP_VMSTAT_SHM_MAGIC && h->version == NP_VMSTAT_SHM_VERSION && h->pid_ns &&
	       h->pid_ns != ns;
}

/* np_vmstat_shm_other_ns of the file at file (a regular file of uid's; false when it is not
 * one, or is shorter than a header). */
static bool other_namespace(const char *file, unsigned uid, uint64_t ns)
{
	struct np_vmstat_shm_header h;
	return ns && np_os_read_own(file, uid, &h, sizeof h, NULL) == (long)sizeof h && np_vmstat_shm_other_ns(&h, ns);
}

/* The file at our name p (uid, namespace ns, our start time start) that a process with our
 * pid left, while a keeper that lives is to read it (numapage run --stats). Until stop 70 it
 * was removed, and the job lost that process without a word: a program that a process of the
 * job exec'd (`env`, `bash -c`, a driver, a shell's child) removed the file of its process
 * from before the exec, and a process that took a gone one's pid removed the gone one's. Now:
 * - our own file before an exec (its start time is ours, its keeper ours): its events, not its
 *   gauges, are added to ours (counts survive exec, as the kernel's own counters of a process
 *   do; the job counts the process once); its magic is zeroed, so that no reader that holds it
 *   open (numapage run's watcher) counts it again, and it is removed;
 * - another process's (a pid used again): renamed p.<inode> (another number if a planted file
 *   holds that name), where the keeper's end finds it (np_vmstat_shm_parse_aside) and a sweep
 *   judges it by its keeper alone.
 * 0: done, the name is free; 1: it could be neither, and it stays (we do not publish: its
 * keeper reads it); -1: not such a file (the caller removes it, as before). The start time
 * counts in clock ticks (10 ms): a process that took a gone one's pid within the tick the
 * gone one started in is taken for it (pids come back only after a wrap, or ns_last_pid). */
static int take_over(const char *p, unsigned uid, uint64_t ns, uint64_t start, size_t size)
{
	union {
		struct np_vmstat_shm_header h;
		struct np_vmstat_totals t; /* its alignment: the totals are read in place */
		char bytes[4096];
	} old;
	uint64_t ino = 0;
	long got = np_os_read_own(p, uid, &old, NP_MIN(size, sizeof old), &ino);
	const struct np_vmstat_shm_header *h = &old.h;
	if (got < (long)sizeof *h || h->magic != NP_VMSTAT_SHM_MAGIC || h->version != NP_VMSTAT_SHM_VERSION ||
	    h->pid_ns != ns || h->keeper <= 0 || np_os_pid_alive(h->keeper) <= 0)
		return -1;
	/* Ours before the exec, in our job, laid out as ours: what the totals need is read (4 KiB
	 * hold them for up to 14 nodes; past that it is set aside, and the job counts the process
	 * as two rather than lose either part). */
	size_t need = (size_t)h->totals_off + (size_t)h->nnodes * h->node_stride;
	if (start && h->start == start && h->pid == np_os_pid() && h->keeper == np_opt.shm_keeper && h->size == size &&
	    h->nitems == NUMA_PAGE_STAT_NITEMS && h->nnodes > 0 && h->nnodes <= NP_MAX_NODES &&
	    h->node_stride == sizeof(struct np_vmstat_totals) && h->totals_off % NP_CACHELINE == 0 &&
	    need <= (size_t)got) {
		if (np_os_zero_own(p, uid, ino, sizeof h->magic) != 0)
			return 1;
		np_vmstat_add_events_before_exec((const struct np_vmstat_totals *)(old.bytes + h->totals_off), h->os_id,
						 h->nnodes);
		np_os_unlink_own(p, uid, ino);
		return 0;
	}
	for (int tries = 0; tries < 4; tries++) {
		uint64_t tag = ino;
		if (tries)
			np_os_random(&tag, sizeof tag);
		char aside[sizeof path];
		size_t n = np_format(aside, sizeof aside, "%s.%llu", p, (unsigned long long)tag);
		if (n + 1 >= sizeof aside)
			return 1;
		int rc = np_os_rename_own(p, aside, uid, ino);
		if (rc != -EEXIST)
			return rc == 0 ? 0 : 1;
	}
	return 1;
}

struct np_vmstat_totals *np_vmstat_shm_create(int parent)
{
	return np_vmstat_shm_create_in(parent, np_os_pid_ns());
}

struct np_vmstat_totals *np_vmstat_shm_create_in(int parent, uint64_t ns)
{
	int n = np_vmstat_nnodes();
	if (n <= 0 || map)
		return NULL;
	int pid = np_os_pid();
	unsigned uid = np_os_euid();
	size_t ps = np_os_page_size();
	size_t names_off = round_up(sizeof(struct np_vmstat_shm_header), 8);
	size_t totals_off = round_up(names_off + NUMA_PAGE_STAT_NITEMS * sizeof(struct np_vmstat_shm_name),
				     NP_CACHELINE);
	size_t size = round_up(totals_off + (size_t)n * sizeof(struct np_vmstat_totals), ps);

	if (inherited) { /* the parent's, in a forked child: not ours to keep */
		np_os_unmap(inherited, inherited_size);
		inherited = NULL;
	}
	/* Only where a keeper reads the files (three system calls more a start): the one case in
	 * which a file left at our pid is read rather than removed (take_over). */
	uint64_t start = np_opt.shm_keeper > 0 ? np_os_start_time() : 0;
	char p[sizeof path];
	np_vmstat_shm_path(p, sizeof p, uid, pid, ns);
	void *m = NULL;
	uint64_t ino = 0;
	int rc = np_os_shm_create(p, size, &m, &ino);
	if (rc == -EEXIST) {
		/* A file carrying our own pid was left by a dead process that had this pid (killed
		 * before its exit handler ran), or by this process before an exec. Remove it and
		 * try once more; a file someone else planted cannot be removed from the sticky
		 * /dev/shm, and then we do not publish; nor when its header says another pid
		 * namespace (planted, or a namespace whose inode number came back: its process may
		 * well be running). Where the namespace is unknown (no /proc) every such
		 * namespace's process of this pid has this name, and the file may be a live one's:
		 * taken all the same, since the file an exec left behind looks the same, and a
		 * program that execs is far more common (left alone, it was never removed and the
		 * exec'd program never published: a review); the other process then removes only
		 * its own file at exit (path_ino). */
		int taken = other_namespace(p, uid, ns) ? 1 : take_over(p, uid, ns, start, size);
		if (taken == 0 || (taken < 0 && np_os_unlink(p) == 0))
			rc = np_os_shm_create(p, size, &m, &ino);
	}
	if (rc) {
		np_verbose("live statistics not published: cannot create %s (errno %d)", p, -rc);
		return NULL;
	}

	struct np_vmstat_shm_header *h = m;
	h->version = NP_VMSTAT_SHM_VERSION;
	h->size = (uint32_t)size;
	h->pid = pid;
	h->uid = uid;
	h->nnodes = n;
	h->nitems = NUMA_PAGE_STAT_NITEMS;
	h->page_size = (uint32_t)ps;
	h->names_off = (uint32_t)names_off;
	h->totals_off = (uint32_t)totals_off;
	h->node_stride = (uint32_t)sizeof(struct np_vmstat_totals);
	h->pid_ns = ns;
	h->parent = parent;
	h->keeper = (int32_t)np_opt.shm_keeper;
	h->start = start;
	for (int i = 0; i < n; i++) {
		h->os_id[i] = np_vmstat_os_id(i);
		h->threshold[i] = np_vmstat_threshold(i);
	}
	struct np_vmstat_shm_name *names = (struct np_vmstat_shm_name *)((char *)m + names_off);
	for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++) {
		const char *s = numa_page_stat_name(k);
		memcpy(names[k].name, s, strlen(s) + 1);
		names[k].kind = (uint8_t)np_vmstat_item_kind(k);
	}
	/* Last: a reader that sees the magic sees everything above. */
	__atomic_store_n(&h->magic, NP_VMSTAT_SHM_MAGIC, __ATOMIC_RELEASE);

	map = m;
	map_size = size;
	memcpy(path, p, sizeof path);
	path_ino = ino;
	owner_pid = pid;
	np_verbose("live statistics published in %s", path);
	return (struct np_vmstat_totals *)((char *)m + totals_off);
}

void np_vmstat_shm_remove(void)
{
	if (!map || !path[0] || owner_pid != np_os_pid())
		return;
	/* Only the file made: where the pid namespace is unknown another process may have
	 * taken the name since (a stale-looking file of its own pid), and its file is not ours
	 * to remove. */
	np_os_unlink_own(path, np_os_euid(), path_ino);
	path[0] = '\0';
}

NP_FORK_CHILD void np_vmstat_shm_forget(void)
{
	/* Not unmapped here: most children exec or leave without publishing, and a system
	 * call in every child cost them more than 4 KiB of address space (nothing writes
	 * there: np_vmstat_atfork_child stopped the mirror). */
	if (map) { /* none is inherited still: np_vmstat_shm_create dropped it */
		inherited = map;
		inherited_size = map_size;
	}
	map = NULL;
	map_size = 0;
	path[0] = '\0';
	owner_pid = 0;
}

const char *np_vmstat_shm_published(void)
{
	return map && path[0] ? path : NULL;
}

uint64_t np_vmstat_shm_inode(void)
{
	return np_vmstat_shm_published() ? path_ino : 0;
}

/* ---- Leftovers ------------------------------------------------------------------------------ */

/* The decimal number at s up to end (or NUL), as np_format writes it (digits, no sign, no
 * leading zero), at most max, into *v; false when there is none. */
static bool number(const char *s, char end, unsigned long long max, unsigned long long *v, const char **after)
{
	unsigned long long n = 0;
	const char *p = s;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (n > (max - d) / 10)
			return false;
		n = n * 10 + d;
	}
	if (p == s || *p != end || (*s == '0' && p - s > 1))
		return false;
	*v = n;
	*after = p;
	return true;
}

/* The prefix, the uid and the pid of a live file's name, the pid ended by `end`; *after: the
 * end. False when the name does not start so. */
static bool uid_and_pid(const char *name, char end, unsigned *uid, int *pid, const char **after)
{
	size_t plen = sizeof NP_VMSTAT_SHM_PREFIX - 1;
	unsigned long long u, n;
	if (strncmp(name, NP_VMSTAT_SHM_PREFIX, plen) != 0 || !number(name + plen, '.', UINT_MAX, &u, after) ||
	    !number(*after + 1, end, INT_MAX, &n, after) || n == 0)
		return false;
	*uid = (unsigned)u;
	*pid = (int)n;
	return true;
}

bool np_vmstat_shm_parse_name(const char *name, unsigned *uid, int *pid, uint64_t *ns)
{
	const char *p;
	unsigned long long i;
	if (!uid_and_pid(name, '.', uid, pid, &p) || !number(p + 1, '\0', UINT64_MAX, &i, &p))
		return false;
	*ns = i;
	return true;
}

bool np_vmstat_shm_parse_aside(const char *name, unsigned *uid, int *pid, uint64_t *ns)
{
	const char *p;
	unsigned long long i, ino;
	if (!uid_and_pid(name, '.', uid, pid, &p) || !number(p + 1, '.', UINT64_MAX, &i, &p) ||
	    !number(p + 1, '\0', UINT64_MAX, &ino, &p))
		return false;
	*ns = i;
	return true;
}

/* The uid and pid of a name of the library before the pid namespace joined it (before
 * 2026-12-07): numapage.<uid>.<pid>. */
static bool legacy_name(const char *name, unsigned *uid, int *pid)
{
	const char *p;
	return uid_and_pid(name, '\0', uid, pid, &p);
}

struct sweep {
	unsigned uid;
	int self, removed;
	uint64_t ns;
};

static void sweep_one(const char *name, void *ctx)
{
	struct sweep *sw = ctx;
	unsigned uid;
	int pid;
	uint64_t ns;
	/* A file of the library before the namespace was in the name, left by a process killed
	 * before its exit handler: judged as ours when its header says this namespace (the
	 * sweep after an upgrade left them for good: a hostile test). */
	bool legacy = false, aside = false;
	if (!np_vmstat_shm_parse_name(name, &uid, &pid, &ns)) {
		aside = np_vmstat_shm_parse_aside(name, &uid, &pid, &ns);
		if (!aside && !legacy_name(name, &uid, &pid))
			return;
		legacy = !aside;
		if (legacy)
			ns = sw->ns;
	}
	if (uid != sw->uid)
		return; /* another user's: theirs to clean (root's sweep does not judge them) */
	if (ns != sw->ns)
		return; /* another pid namespace's: its pids are not ours to judge */
	if (pid == sw->self && !aside)
		return;
	/* Only a pid that no process has is judged: a live one may be a process that has not
	 * mapped its file yet. (`numapage stat` also catches a pid taken by a newcomer.) A file
	 * set aside is a gone process's whoever has its pid now: judged by its keeper alone. */
	if (!aside && np_os_pid_alive(pid) != 0)
		return;
	/* Only a regular file of this user's: root's sweep once removed another user's file
	 * named with uid 0, and symlinks (found by a hostile review). And only one published in
	 * this pid namespace: where /dev/shm is shared with another (a container's, `unshare -p`),
	 * its processes' pids are not ours, and a live one looks gone from here (a review saw a
	 * process in a new namespace remove the host's live files). */
	char path_buf[128];
	if (legacy || aside)
		np_format(path_buf, sizeof path_buf, "%s/%s", NP_VMSTAT_SHM_DIR, name);
	else
		np_vmstat_shm_path(path_buf, sizeof path_buf, sw->uid, pid, ns);
	struct np_vmstat_shm_header h;
	uint64_t ino = 0;
	long n = np_os_read_own(path_buf, sw->uid, &h, sizeof h, &ino);
	if (n < 0 || (n == (long)sizeof h && np_vmstat_shm_other_ns(&h, sw->ns)))
		return;
	if (legacy && (n != (long)sizeof h || h.magic != NP_VMSTAT_SHM_MAGIC || h.pid_ns != sw->ns))
		return; /* not one the library wrote in this namespace */
	/* A file its keeper is to read, while the keeper lives: `numapage run --stats` reads the
	 * files of the processes of its job that ended without their report (_exit, a signal)
	 * once the job is over, and another process's start took them first (counts missing
	 * from the job: a child reaped by its own parent, a grandchild whose parent had ended).
	 * Gone with the keeper, at the next sweep. Until this field, such a file stayed only
	 * while the process it was forked from lived, and a watcher in numapage run had to open
	 * the others before any sweep: under load it did not always. */
	if (n == (long)sizeof h && h.magic == NP_VMSTAT_SHM_MAGIC && h.keeper > 0 && h.keeper != sw->self &&
	    np_os_pid_alive(h.keeper) != 0)
		return;
	/* A process may have taken the pid since the liveness check, and replaced the file with
	 * its own (a review, with the sweep of a forking parent): asked again after the read,
	 * and only the file read is removed. */
	if (!aside && np_os_pid_alive(pid) != 0)
		return;
	if (np_os_unlink_own(path_buf, sw->uid, ino) == 0) {
		sw->removed++;
		np_verbose("removed %s, left by process %d that is gone", path_buf, pid);
	}
}

int np_vmstat_shm_sweep(void)
{
	return np_vmstat_shm_sweep_in(np_os_pid_ns());
}

int np_vmstat_shm_sweep_in(uint64_t ns)
{
	struct sweep sw = {np_os_euid(), np_os_pid(), 0, ns};
	/* Where the namespace is unknown (no /proc), a pid no process here has may be a live
	 * process of another such namespace: nothing is judged (a review saw one container's
	 * start remove another's live file). */
	if (!sw.ns)
		return 0;
	np_os_list_dir(NP_VMSTAT_SHM_DIR, sweep_one, &sw);
	return sw.removed;
}
