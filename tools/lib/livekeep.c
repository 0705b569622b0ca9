/* livekeep.c — the live files of a job, held open from their creation: see livekeep.h. */
#include "livekeep.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <unistd.h>

#include "livefile.h"
#include "procs.h"
#include "tstats.h"
#include "vmstat/vmstat.h"

enum state { OPEN, TAKEN };

struct kept {
	int pid, fd;
	struct stat st;
	enum state state;
	bool unnamed; /* its name is gone, and no deletion event is to be matched to it (harvest) */
	bool foreign; /* its header names another keeper, or none: not ours to harvest */
	char comm[64]; /* its command when it was made (a process of the job, then alive) */
};

static struct {
	unsigned uid;
	uint64_t ns;
	const char *reports;
	int ino, stop[2];
	pthread_t thread;
	bool running;
	/* The table, which the watcher writes while the job runs and numapage run's zombie reads
	 * mark (np_livekeep_taken) meanwhile. */
	pthread_mutex_t lock;
	struct kept *k;
	size_t n, cap;
} w = {.ino = -1, .stop = {-1, -1}, .lock = PTHREAD_MUTEX_INITIALIZER};

/* The uid and pid of one of our live files named name, or false. */
static bool ours(const char *name, int *pid)
{
	unsigned uid;
	uint64_t ns;
	return np_vmstat_shm_parse_name(name, &uid, pid, &ns) && uid == w.uid && ns == w.ns;
}

/* Whether process pid descends from this one (numapage run, the job's subreaper: a daemon of
 * the job that left its parent is our child): 1, 0, or -1 when it cannot be told (gone). */
static int in_job(int pid)
{
	int me = (int)getpid();
	for (int depth = 0; depth < 4096 && pid > 1; depth++) {
		int parent = np_proc_ppid(pid);
		if (parent < 0)
			return -1;
		if (parent == me)
			return 1;
		pid = parent;
	}
	return 0;
}

static void created(const char *name)
{
	int pid;
	/* Only the job's: another program of the user's may end before its removal of the file
	 * is seen here, and its file would stay open until the job ends (a helper: 288
	 * descriptors after 3,000 programs beside a job). */
	int member;
	if (!ours(name, &pid) || (member = in_job(pid)) == 0)
		return;
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", NP_VMSTAT_SHM_DIR, name);
	struct stat st;
	int fd = np_livefile_open(path, w.uid, &st);
	if (fd < 0)
		return; /* gone already, or not a file of ours; or out of descriptors: not kept */
	char comm[64] = "";
	np_proc_comm(pid, comm, sizeof comm);
	if (member < 0) {
		/* Gone before we looked: kept only when it names us as its keeper or a parent of
		 * the job (a helper saw outside programs' children that ended so kept to the job's
		 * end). */
		struct np_vmstat_shm_header h;
		if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || h.magic != NP_VMSTAT_SHM_MAGIC ||
		    (h.keeper != (int)getpid() && (h.parent <= 0 || in_job(h.parent) != 1))) {
			close(fd);
			return;
		}
	}
	pthread_mutex_lock(&w.lock);
	if (w.n == w.cap) {
		size_t cap = w.cap ? 2 * w.cap : 64;
		struct kept *k = realloc(w.k, cap * sizeof *k);
		if (!k) {
			pthread_mutex_unlock(&w.lock);
			close(fd);
			return;
		}
		w.k = k;
		w.cap = cap;
	}
	w.k[w.n] = (struct kept){.pid = pid, .fd = fd, .st = st, .state = OPEN};
	memcpy(w.k[w.n].comm, comm, sizeof comm);
	w.n++;
	pthread_mutex_unlock(&w.lock);
}

/* Whether process pid, whose live file has inode ino, wrote its report into the job's report
 * directory: <pid>.json, or <pid>.json.1 and on where processes that had the pid before took
 * those (the library takes the first free name). A report that names another live file is
 * such a process's; one that does not say (a library before the field, or one being written
 * now) is taken as this one's. Until the field, any report at the pid was. */
static bool has_report(int pid, ino_t ino)
{
	for (int k = 0; k <= NP_VMSTAT_REPORT_TAKEN_MAX; k++) {
		char report[PATH_MAX];
		int n = snprintf(report, sizeof report, "%s/%d.json", w.reports, pid);
		if (k && n > 0 && (size_t)n < sizeof report)
			snprintf(report + n, sizeof report - (size_t)n, ".%d", k);
		/* Not blocking on a FIFO planted there (the watcher holds its lock here): such a
		 * name was taken, and the report went under the next one. */
		struct stat st;
		int fd = np_open_regular(report, &st);
		if (fd == -1)
			return false;
		if (fd < 0)
			continue;
		char text[512]; /* "live" comes before the command */
		ssize_t got = read(fd, text, sizeof text - 1);
		close(fd);
		text[got > 0 ? got : 0] = '\0';
		long long live = np_tstats_report_live(text);
		if (live < 0 || (unsigned long long)live == (unsigned long long)ino)
			return true;
	}
	return false;
}

/* A name of a kept file went: its process removed it at its exit (alive still, its report
 * written first), numapage run did after reading its zombie's (alive: a zombie), the harvest
 * did (its process gone, no report: marked unnamed, and not matched here), or someone else
 * did with no report written (a library without the keeper, a newcomer at the pid). The
 * newest named kept file of that pid is let go, but for one without a report: that one is
 * the reason for keeping it. */
static void deleted(const char *name)
{
	int pid;
	if (!ours(name, &pid))
		return;
	bool alive = np_proc_alive(pid);
	pthread_mutex_lock(&w.lock);
	for (size_t i = w.n; i-- > 0;) {
		/* Not one whose name we removed: this name is a later process's with the same pid
		 * (a helper: a gone process's counts dropped when an outside program took its pid
		 * and ended normally). */
		if (w.k[i].pid != pid || w.k[i].state != OPEN || w.k[i].unnamed)
			continue;
		if (!alive && !has_report(pid, w.k[i].st.st_ino))
			break; /* swept: a process of the job that ended without a report */
		close(w.k[i].fd);
		memmove(&w.k[i], &w.k[i + 1], (w.n - i - 1) * sizeof w.k[0]);
		w.n--;
		break;
	}
	pthread_mutex_unlock(&w.lock);
}

/* Reads what the inotify descriptor holds now; false when it holds nothing (or failed). */
static bool take_events(void)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len = read(w.ino, buf, sizeof buf);
	if (len <= 0)
		return false;
	for (char *p = buf; p < buf + len;) {
		const struct inotify_event *e = (const struct inotify_event *)(void *)p;
		if (e->len && (e->mask & IN_CREATE))
			created(e->name);
		else if (e->len && (e->mask & IN_DELETE))
			deleted(e->name);
		p += sizeof *e + e->len;
	}
	return true;
}

/* The names of kept files whose processes are gone (reaped: no report, or the name would
 * be gone too) are removed; the open descriptor still holds the data, read when the job is
 * over. A file named for a gone process whose keeper lives stays in /dev/shm, and every
 * process of the user that starts reads the directory (its sweep): a job of 8,000 children
 * that ended with _exit made each start 49 ms slower until it ended (a helper). Only the name
 * of the file we hold is removed (its inode, under sticky /dev/shm). */
static void harvest(void)
{
	int me = (int)getpid();
	pthread_mutex_lock(&w.lock);
	for (size_t i = 0; i < w.n; i++) {
		struct kept *k = &w.k[i];
		if (k->state != OPEN || k->unnamed || k->foreign || np_proc_alive(k->pid))
			continue;
		/* Only a file whose keeper we are: another's (a numapage run inside our job) is its
		 * keeper's to read by name; a helper saw such an inner job lose up to 14 of 101. */
		struct np_vmstat_shm_header h;
		if (pread(k->fd, &h, sizeof h, 0) != (ssize_t)sizeof h || h.magic != NP_VMSTAT_SHM_MAGIC ||
		    h.keeper != me) {
			k->foreign = true; /* read once */
			continue;
		}
		char path[PATH_MAX];
		np_vmstat_shm_path(path, sizeof path, w.uid, k->pid, w.ns);
		struct stat now;
		if (lstat(path, &now) != 0) {
			/* Its process removed it at exit after its report, and the event is on its way
			 * (deleted() lets the file go); without a report, someone else took the name. A
			 * review saw reported files marked here and held to the job's end. */
			k->unnamed = !has_report(k->pid, k->st.st_ino);
		} else if (now.st_dev != k->st.st_dev || now.st_ino != k->st.st_ino) {
			k->unnamed = true; /* a later process's name now */
		} else if (unlink(path) == 0) {
			/* Between the look and the unlink a newcomer with this pid could have put its
			 * own file there (a window of two system calls, on a reused pid): not checked. */
			k->unnamed = true;
		}
	}
	pthread_mutex_unlock(&w.lock);
}

/* How often the watcher looks for gone processes' files between events (ms). */
#define HARVEST_MS 250

static void *watch(void *arg)
{
	(void)arg;
	struct pollfd fds[2] = {{.fd = w.ino, .events = POLLIN}, {.fd = w.stop[0], .events = POLLIN}};
	for (;;) {
		int n = poll(fds, 2, HARVEST_MS);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n > 0 && (fds[0].revents & POLLIN))
			take_events();
		if (n > 0 && fds[1].revents)
			break;
		harvest();
	}
	while (take_events()) /* what came before the stop (the descriptor is non-blocking) */
		;
	return NULL;
}

bool np_livekeep_watch(unsigned uid, uint64_t ns, const char *reports)
{
	w.uid = uid;
	w.ns = ns;
	w.reports = reports;
	w.ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w.ino < 0)
		return false;
	if (inotify_add_watch(w.ino, NP_VMSTAT_SHM_DIR, IN_CREATE | IN_DELETE | IN_ONLYDIR) < 0) {
		close(w.ino);
		w.ino = -1;
		return false;
	}
	return true;
}

static void unwatch(void)
{
	if (w.ino >= 0)
		close(w.ino);
	if (w.stop[0] >= 0)
		close(w.stop[0]);
	if (w.stop[1] >= 0)
		close(w.stop[1]);
	w.ino = w.stop[0] = w.stop[1] = -1;
}

bool np_livekeep_start(void)
{
	if (w.ino < 0)
		return false;
	if (pipe2(w.stop, O_CLOEXEC) != 0) {
		unwatch();
		return false;
	}
	/* Our own limit only (the job was started with its own): one descriptor for each process
	 * of the job that runs at once or ended without a report. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* The job's signals are not the watcher's: they go to the thread that waits. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	w.running = pthread_create(&w.thread, NULL, watch, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!w.running)
		unwatch();
	return w.running;
}

void np_livekeep_stop(void)
{
	if (!w.running)
		return;
	char c = 0;
	while (write(w.stop[1], &c, 1) < 0 && errno == EINTR)
		;
	pthread_join(w.thread, NULL);
	w.running = false;
	unwatch();
}

/* Called once the watcher has stopped: no lock. */
bool np_livekeep_get(size_t *i, int *pid, int *fd, struct stat *st, const char **comm)
{
	for (; *i < w.n; (*i)++) {
		struct kept *k = &w.k[*i];
		/* Gone; one whose name we removed was gone then, whoever has its pid now. */
		if (k->state != OPEN || (!k->unnamed && np_proc_alive(k->pid)))
			continue;
		/* Its status now: it was opened at its creation, before its size was set. */
		if (fstat(k->fd, st) != 0)
			continue;
		*pid = k->pid;
		*fd = k->fd;
		*comm = k->comm;
		return true;
	}
	return false;
}

void np_livekeep_take(size_t i)
{
	if (i < w.n)
		w.k[i].state = TAKEN;
}

const char *np_livekeep_comm(const struct stat *st)
{
	const char *comm = NULL;
	pthread_mutex_lock(&w.lock);
	for (size_t i = 0; i < w.n && !comm; i++)
		if (w.k[i].st.st_dev == st->st_dev && w.k[i].st.st_ino == st->st_ino && w.k[i].comm[0])
			comm = w.k[i].comm;
	pthread_mutex_unlock(&w.lock);
	return comm;
}

void np_livekeep_taken(const struct stat *st)
{
	pthread_mutex_lock(&w.lock);
	for (size_t i = 0; i < w.n; i++)
		if (w.k[i].st.st_dev == st->st_dev && w.k[i].st.st_ino == st->st_ino)
			w.k[i].state = TAKEN;
	pthread_mutex_unlock(&w.lock);
}

void np_livekeep_free(void)
{
	np_livekeep_stop();
	for (size_t i = 0; i < w.n; i++)
		close(w.k[i].fd);
	free(w.k);
	w.k = NULL;
	w.n = w.cap = 0;
}
