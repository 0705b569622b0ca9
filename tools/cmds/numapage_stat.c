/*
 * numapage stat [-c] [-z] [-r] [-w N] [-P] [--json] [-i SECONDS] [-n COUNT] PID|PATTERN...
 * Running processes' per-node counters, like `numastat -p`: maps each process's live-view
 * file /dev/shm/numapage.<uid>.<pid>.<ns> read-only (layout: struct np_vmstat_shm_header in
 * src/vmstat/vmstat.h) and prints their sum (and, with -P, each one) as one row per counter,
 * one column per node; names and kinds come from the file, so a tool of another version reads
 * them right. An operand of digits is a process id: a process that does not publish but has
 * descendants that do (a `numapage run` wrapper, a shell script) stands for them. Any other
 * operand is an extended regular expression matched against command lines, as numastat's:
 * every match that can be read is shown (one that exits meanwhile is no match; one that cannot
 * be read is reported and makes the exit status 1).
 * With -i, the first table shows the totals, and each later one, stamped with the time, the
 * changes of the interval. Before looking, it removes the caller's stale files without a word:
 * those of processes that are gone, or whose pid now belongs to a process that does not map
 * them (or, when its maps cannot be read, belongs to another user); never a zombie's, whose file
 * is its last report, for its parent, nor a gone process's whose keeper (numapage run --stats)
 * lives, which reads it when its job is over. A file published in another pid namespace (a container
 * sharing /dev/shm) is no process's here. Command names go to the terminal with their control
 * characters as '?' (any user names its own processes; root may read them all).
 * Anyone can create names in /dev/shm: only a regular file whose name is the library's exactly,
 * owned by the uid in its name, and that uid the process's effective uid (the one the library
 * names its file with), counts as a process's file, for every caller, root included. Files
 * are never mapped: each sample reads a private copy (see tools/lib/livefile.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../cmds.h"
#include "../lib/livefile.h"
#include "../lib/procs.h"
#include "../lib/tstats.h"
#include "json.h"
#include "os.h"
#include "vmstat/vmstat.h"

#define MAX_LIVE 1024
#define MAX_FILES 8192

void np_usage_stat(FILE *out)
{
	fputs("usage: numapage stat [-c] [-z] [-r] [-w COLUMNS] [-P] [--json] [-i SECONDS] [-n COUNT]\n"
	      "                     PID|PATTERN...\n"
	      "  per-node counters of running processes that use libnumapage, summed; a PATTERN\n"
	      "  (not all digits) selects every such process whose command line it matches\n"
	      "  -c, --compact      narrow columns, whole MiB\n"
	      "  -z, --hide-zero    leave out rows and node columns that are zero everywhere\n"
	      "  -r, --raw          pages and bytes as counted instead of MiB\n"
	      "  -w, --width N      fold the table at N columns (default: the terminal's)\n"
	      "  -P, --per-process  one table per process before the sum\n"
	      "      --json         one JSON object per sample (raw counts)\n"
	      "  -i, --interval S   sample every S seconds: totals first, then what changed\n"
	      "  -n, --count N      stop after N samples (default 1, or until the processes exit with -i)\n"
	      "  -h, --help         this text\n",
	      out);
}

static int usage_error(const char *fmt, const char *arg)
{
	return np_usage_error("stat", np_usage_stat, fmt, arg);
}

/* ---- The files in /dev/shm --------------------------------------------------------------- */

struct file {
	unsigned uid;
	int pid;
};
static struct file files[MAX_FILES];
static int nfiles;

/* What the scan makes of the file of pid at path (a regular file of uid's). */
enum verdict {
	LISTED,  /* a process's, maybe */
	STALE,   /* the caller's, and stale: of a process that is gone, or a complete header (magic
		  * set) of one that is alive but does not map the file (its pid was reused after the
		  * publisher died without cleaning up) */
	FOREIGN, /* published in another pid namespace sharing /dev/shm (a container's): its pid
		  * names another process here, or none, and nothing here says whether its
		  * publisher is gone */
	KEPT,    /* of a process that is gone, for its keeper to read (header.keeper lives:
		  * numapage run --stats, once its job is over): neither listed nor removed */
};

/* One read of the header decides both; staleness is judged only for the caller's files (mine). */
static enum verdict judge(int pid, unsigned uid, const char *path, bool mine)
{
	struct stat st;
	int fd = np_livefile_open(path, uid, &st);
	if (fd < 0)
		return LISTED; /* gone meanwhile, or not ours to judge */
	struct np_vmstat_shm_header h;
	ssize_t n = pread(fd, &h, sizeof h, 0);
	close(fd);
	bool whole = n == (ssize_t)sizeof h && h.magic == NP_VMSTAT_SHM_MAGIC;
	if (whole && np_vmstat_shm_other_ns(&h, np_os_pid_ns()))
		return FOREIGN;
	if (!mine)
		return LISTED;
	/* Every stale verdict below gives way to a keeper that lives: a process that is exiting
	 * (its memory gone, not yet a zombie) maps nothing, and its file looked stale; with a
	 * `numapage stat` loop beside a job of 20 children ending with _exit, 1 to 4 were lost
	 * in 15 of 20 jobs (a helper). A file at a pid taken since is read by its keeper's job,
	 * or let go when the keeper ends. */
	bool kept = whole && h.keeper > 0 && h.keeper != getpid() && np_proc_alive(h.keeper);
	if (!np_proc_alive(pid))
		return kept ? KEPT : STALE;
	if (np_proc_ended(pid))
		return LISTED; /* a zombie: its file is its last word, for its parent (numapage run) */
	if (!whole)
		return LISTED; /* being created right now */
	int maps = np_proc_maps_file(pid, path);
	if (maps >= 0)
		return maps > 0 ? LISTED : kept ? KEPT : STALE;
	/* Its maps cannot be read (another user's process, or one that is not dumpable): a process
	 * whose effective uid is not the file's did not publish it. */
	return np_proc_uid(pid) == uid ? LISTED : kept ? KEPT : STALE;
}

/* Lists the files, removing the caller's stale ones quietly: a leftover is housekeeping, not
 * news (the library removes them too when a process starts). Only a regular file owned by the
 * uid in its name is listed: a link, a FIFO or a file someone else planted under that name is
 * no process's, and is left alone (the caller's name is not the caller's file). */
static void scan(void)
{
	unsigned me = geteuid();
	uint64_t my_ns = np_os_pid_ns();
	nfiles = 0;
	DIR *d = opendir(NP_VMSTAT_SHM_DIR);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d)) && nfiles < MAX_FILES;) {
		unsigned uid;
		int pid;
		uint64_t ns;
		struct stat st;
		/* Another pid namespace's file (a container's sharing /dev/shm): its pid is not the
		 * process of that number here, and only that namespace may judge it gone. */
		if (!np_vmstat_shm_parse_name(e->d_name, &uid, &pid, &ns) || ns != my_ns)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
		    st.st_uid != (uid_t)uid)
			continue;
		char p[512];
		snprintf(p, sizeof p, "%s/%s", NP_VMSTAT_SHM_DIR, e->d_name);
		/* /dev/shm is sticky: a file of ours under our name cannot be swapped for someone
		 * else's between the look and the unlink. */
		enum verdict v = judge(pid, uid, p, uid == me);
		if (v == STALE)
			unlink(p);
		if (v == LISTED)
			files[nfiles++] = (struct file){uid, pid};
	}
	closedir(d);
}

/* The owner of pid's file, or -1 when it publishes none: the one file named with the uid the
 * process runs as (several may carry its pid: leftovers of other users' dead processes, or
 * files planted to pass for its). */
static long file_of(int pid)
{
	unsigned uid = np_proc_uid(pid);
	for (int i = 0; i < nfiles; i++)
		if (files[i].pid == pid && files[i].uid == uid)
			return files[i].uid;
	return -1;
}

/* ---- One process's live file ------------------------------------------------------------------ */

struct live {
	int pid;
	char comm[64];
	char path[128];
	struct np_livefile file;
	struct np_tstats now, before;
	bool gone;
};

/* A file that changed under the reader (cut short, replaced, rewritten), or a process a
 * pattern matched whose file could not be read: the end status is 1. */
static bool changed, unreadable;

/* MAX_LIVE entries, allocated when stat runs: 25 MB in the program's image kept every command
 * from starting under a small address-space limit (ulimit -v 65536: a segfault at exec). */
static struct live *live;
static int nlive;

static void pause_for(double seconds)
{
	struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
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

/* pid's command name for a message or a title ("?" when unreadable). */
static const char *printable_comm(int pid, char *buf, size_t size)
{
	char comm[64];
	np_proc_comm(pid, comm, sizeof comm);
	np_proc_printable(comm[0] ? comm : "?", buf, size);
	return buf;
}

/* np_proc_maps_each's test: a live file of another process (of this namespace), whose pid goes
 * into *ctx (an int: the process asked about in, the publisher out). */
static bool other_live_file(const char *path, void *ctx)
{
	int *pid = ctx;
	const char *base = strrchr(path, '/') + 1;
	unsigned uid;
	int owner;
	uint64_t ns;
	if (!np_vmstat_shm_parse_name(base, &uid, &owner, &ns) || ns != np_os_pid_ns() || owner == *pid)
		return false;
	*pid = owner;
	return true;
}

/* np_proc_maps_each's test: the shared library itself. */
static bool is_the_library(const char *path, void *ctx)
{
	(void)ctx;
	return strncmp(strrchr(path, '/') + 1, "libnumapage", 11) == 0;
}

/* Whether process a is an ancestor of process pid. */
static bool ancestor(int a, int pid)
{
	for (int i = 0; i < 64 && pid > 1; i++)
		if ((pid = np_proc_ppid(pid)) == a)
			return true;
	return false;
}

static int not_ours(int pid)
{
	char comm[64];
	/* A forked child publishes at its first allocation that the caches it inherited cannot
	 * serve (src/vmstat/vmstat_print.c); until then it still maps the file of the process it
	 * was forked from (or of an ancestor of that one). Any process may map such a file (a
	 * monitor's): it must also be that one's descendant, or have the library loaded (a
	 * daemon's parent has gone). */
	int publisher = pid;
	if (np_proc_maps_each(pid, NP_VMSTAT_SHM_DIR "/" NP_VMSTAT_SHM_PREFIX, other_live_file, &publisher) == 1 &&
	    (ancestor(publisher, pid) || np_proc_maps_each(pid, "/", is_the_library, NULL) == 1)) {
		fprintf(stderr, "numapage stat: process %d (%s) uses libnumapage but has published no statistics yet: "
				"forked from process %d, it publishes them at its first allocation that the caches "
				"it inherited cannot serve\n",
			pid, printable_comm(pid, comm, sizeof comm), publisher);
		return 1;
	}
	unsigned uid = np_proc_uid(pid); /* the file it would have is named with its uid */
	char path[128];
	np_vmstat_shm_path(path, sizeof path, uid != (unsigned)-1 ? uid : (unsigned)geteuid(), pid, np_os_pid_ns());
	fprintf(stderr, "numapage stat: process %d (%s) does not use libnumapage (no %s; or it runs with "
			"NUMAPAGE_SHM=0)\n",
		pid, printable_comm(pid, comm, sizeof comm), path);
	return 1;
}

/* open_live's results. */
enum { OPEN_OK = 0, OPEN_FAILED = 1 /* reported */, OPEN_ENDED = 3 /* exited (reported unless quiet) */ };

/* The end of a process that was about to be read: it exited (or is a zombie) meanwhile. */
static int ended(int pid, bool quiet)
{
	if (!quiet) {
		if (np_proc_alive(pid))
			fprintf(stderr, "numapage stat: process %d has exited\n", pid);
		else
			fprintf(stderr, "numapage stat: no process %d\n", pid);
	}
	return OPEN_ENDED;
}

/* Reads pid's file into a new entry of live[]: OPEN_OK, OPEN_FAILED after saying why, or
 * OPEN_ENDED when the process has exited (or is a zombie) or exits meanwhile, said unless quiet
 * (a pattern's match that ends between the scan and the read is no longer a match). */
static int open_live(int pid, unsigned owner, bool quiet)
{
	unsigned me = geteuid();
	for (int i = 0; i < nlive; i++)
		if (live[i].pid == pid)
			return OPEN_OK; /* named twice */
	if (nlive == MAX_LIVE) {
		fprintf(stderr, "numapage stat: more than %d processes\n", MAX_LIVE);
		return OPEN_FAILED;
	}
	if (me != 0 && owner != me)
		return other_user(pid, owner);
	if (np_proc_ended(pid))
		return ended(pid, quiet);
	/* The process must run as the uid its file is named with (pid reuse, a planted file). */
	if (np_proc_uid(pid) != owner)
		return np_proc_ended(pid) ? ended(pid, quiet) : not_ours(pid);
	struct live *l = &live[nlive];
	memset(l, 0, sizeof *l);
	l->pid = pid;
	np_vmstat_shm_path(l->path, sizeof l->path, owner, pid, np_os_pid_ns());
	struct stat st;
	int fd = np_livefile_open(l->path, owner, &st);
	if (fd == -2) {
		fprintf(stderr, "numapage stat: %s is not a libnumapage statistics file\n", l->path);
		return OPEN_FAILED;
	}
	if (fd < 0) {
		if (errno == EACCES || errno == EPERM)
			return other_user(pid, owner);
		if (errno == ENOENT) /* removed at its exit, or never made */
			return np_proc_ended(pid) ? ended(pid, quiet) : not_ours(pid);
		fprintf(stderr, "numapage stat: cannot open %s: %s\n", l->path, strerror(errno));
		return OPEN_FAILED;
	}
	/* The publisher completes the header last: one starting right now may not have yet. */
	enum np_livefile_err e = np_livefile_load(&l->file, fd, &st, l->path, owner, pid, 100);
	int saved = errno;
	close(fd);
	if (e == NP_LIVEFILE_OTHER_NS) /* replaced since the scan by a container's */
		return not_ours(pid);
	if (e == NP_LIVEFILE_NOT_OURS) {
		if (np_proc_ended(pid))
			return ended(pid, quiet);
		fprintf(stderr, "numapage stat: %s is not a libnumapage statistics file\n", l->path);
		return OPEN_FAILED;
	}
	if (e == NP_LIVEFILE_IO) {
		fprintf(stderr, "numapage stat: cannot read %s: %s\n", l->path, strerror(saved));
		return OPEN_FAILED;
	}
	if (e != NP_LIVEFILE_OK) {
		fprintf(stderr, "numapage stat: %s has an unknown layout\n", l->path);
		return OPEN_FAILED;
	}
	np_livefile_totals(&l->file, &l->now);
	np_proc_comm(pid, l->comm, sizeof l->comm);
	nlive++;
	return OPEN_OK;
}

/* Reads l's file again; a file that is gone or changed drops l, after saying so. */
static void sample(struct live *l, bool first)
{
	l->before = l->now;
	if (first)
		return; /* open_live read it just now */
	enum np_livefile_err e = np_livefile_read(&l->file, &l->now);
	if (e == NP_LIVEFILE_OK)
		return;
	l->gone = true;
	if (e == NP_LIVEFILE_GONE) {
		fprintf(stderr, "numapage stat: process %d has exited\n", l->pid);
		return;
	}
	fprintf(stderr, "numapage stat: %s changed while it was watched (cut short, replaced or rewritten); "
			"process %d is no longer shown\n", l->file.path, l->pid);
	changed = true;
}

/* ---- Choosing the processes ------------------------------------------------------------------- */

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static int select_pid(const char *arg)
{
	long pid = strtol(arg, NULL, 10);
	if (pid <= 0 || pid > 0x7fffffff || strlen(arg) > 10) {
		fprintf(stderr, "numapage stat: '%s' is not a process id\n", arg);
		return 2;
	}
	long owner = file_of((int)pid);
	if (owner >= 0)
		return open_live((int)pid, (unsigned)owner, false) == OPEN_OK ? 0 : 1;
	if (np_proc_ended((int)pid)) {
		ended((int)pid, false);
		return 1;
	}
	unsigned uid = np_proc_uid((int)pid), me = geteuid();
	if (me != 0 && uid != me)
		return other_user((int)pid, uid);
	/* A wrapper (numapage run, a shell script): the processes it started that publish. */
	static int kids[MAX_LIVE];
	int n = np_proc_descendants((int)pid, kids, MAX_LIVE), found = 0;
	for (int i = 0; i < n; i++) {
		long o = file_of(kids[i]);
		if (o >= 0 && (me == 0 || (unsigned)o == me)) {
			int rc = open_live(kids[i], (unsigned)o, true);
			if (rc == OPEN_FAILED)
				return 1;
			found += rc == OPEN_OK;
		}
	}
	if (!found)
		return not_ours((int)pid);
	char comm[64];
	fprintf(stderr, "numapage stat: process %ld (%s) does not use libnumapage; showing the %d process%s "
			"it started that do\n", pid, printable_comm((int)pid, comm, sizeof comm), found,
		found == 1 ? "" : "es");
	return 0;
}

static int select_pattern(const char *arg)
{
	regex_t re;
	int e = regcomp(&re, arg, REG_EXTENDED | REG_NOSUB);
	if (e) {
		char msg[128];
		regerror(e, &re, msg, sizeof msg);
		fprintf(stderr, "numapage stat: '%s' is neither a process id nor a valid pattern: %s\n", arg, msg);
		return 2;
	}
	unsigned me = geteuid();
	int found = 0, failed = 0;
	for (int i = 0; i < nfiles; i++) {
		if (files[i].pid == getpid() || (me != 0 && files[i].uid != me))
			continue;
		if (np_proc_uid(files[i].pid) != files[i].uid)
			continue; /* not the file of the process that has its pid now (see file_of) */
		char cmd[4096];
		np_proc_cmdline(files[i].pid, cmd, sizeof cmd);
		if (!cmd[0])
			np_proc_comm(files[i].pid, cmd, sizeof cmd);
		if (cmd[0] && regexec(&re, cmd, 0, NULL, 0) == 0) {
			/* Every match that can be read is shown: one that ended meanwhile is none, one
			 * that cannot be read is reported and makes the exit status 1. */
			int rc = open_live(files[i].pid, files[i].uid, true);
			found += rc == OPEN_OK;
			failed += rc == OPEN_FAILED;
		}
	}
	regfree(&re);
	if (!found && !failed) {
		fprintf(stderr, "numapage stat: no process using libnumapage has a command line matching '%s'\n", arg);
		return 1;
	}
	if (failed)
		unreadable = true;
	return found ? 0 : 1;
}

/* ---- Output ----------------------------------------------------------------------------------- */

static void heading(FILE *out, const char *what, const struct np_vmstat_table_opts *o)
{
	int thr = 0;
	for (int i = 0; i < nlive; i++)
		thr = live[i].gone ? thr : NP_MAX(thr, live[i].file.max_thr);
	fprintf(out, "%s\n(%s; shared totals: each may lag by %d pages per live thread)\n", what,
		o->raw ? "pages and bytes as counted" : "MiB", thr);
}

static void who(char *buf, size_t size)
{
	int alive = 0;
	for (int i = 0; i < nlive; i++)
		alive += !live[i].gone;
	size_t n = (size_t)snprintf(buf, size, "Per-node statistics of %s", alive == 1 ? "process" : "");
	if (alive != 1)
		n += (size_t)snprintf(buf + n, size - n, "%d processes:", alive);
	for (int i = 0, k = 0; i < nlive && n < size; i++) {
		if (live[i].gone)
			continue;
		if (k++ == 8) {
			n += (size_t)snprintf(buf + n, size - n, ", ...");
			break;
		}
		char comm[sizeof live[i].comm];
		np_proc_printable(live[i].comm[0] ? live[i].comm : "?", comm, sizeof comm);
		n += (size_t)snprintf(buf + n, size - n, "%s %d (%s)", k > 1 ? "," : "", live[i].pid, comm);
	}
}

static void print_json(double t)
{
	struct np_tstats sum;
	np_tstats_clear(&sum);
	printf("{\"time\":%.3f,\"processes\":[", t);
	for (int i = 0, k = 0; i < nlive; i++) {
		if (live[i].gone)
			continue;
		np_tstats_add(&sum, &live[i].now);
		printf("%s{\"pid\":%d,\"command\":", k++ ? "," : "", live[i].pid);
		np_json_string(stdout, live[i].comm);
		printf(",\"lag_per_thread\":%d,", live[i].file.max_thr);
		np_tstats_json_nodes(stdout, &live[i].now);
		putchar('}');
	}
	fputs("],", stdout);
	np_tstats_json_nodes(stdout, &sum);
	puts("}");
}

static void print_tables(const struct np_vmstat_table_opts *o, bool per_process, bool delta, double t, double dt)
{
	struct np_tstats sum, d;
	np_tstats_clear(&sum);
	char title[1024];
	struct np_vmstat_table_opts od = *o;
	if (delta) {
		/* Each interval shows what changed: rows that did not are left out. */
		od.hide_zero_rows = true;
		char stamp[32];
		time_t secs = (time_t)t;
		strftime(stamp, sizeof stamp, "%H:%M:%S", localtime(&secs));
		printf("%s  +%.1f s: changes since the previous sample\n", stamp, dt);
	}
	int live_n = 0;
	for (int i = 0; i < nlive; i++) {
		if (live[i].gone)
			continue;
		live_n++;
		const struct np_tstats *v = &live[i].now;
		if (delta) {
			np_tstats_delta(&d, &live[i].now, &live[i].before);
			v = &d;
		}
		np_tstats_add(&sum, v);
		if (per_process) {
			char comm[sizeof live[i].comm];
			np_proc_printable(live[i].comm[0] ? live[i].comm : "?", comm, sizeof comm);
			snprintf(title, sizeof title, "Process %d (%s)", live[i].pid, comm);
			if (delta)
				puts(title);
			else
				heading(stdout, title, o);
			if (np_tstats_print(stdout, v, &od) == 0)
				puts(delta ? "no change" : "(every counter is zero)");
			putchar('\n');
		}
	}
	if (per_process && live_n <= 1)
		return; /* the one process's table was the sum */
	if (per_process) {
		snprintf(title, sizeof title, "%s of the %d processes", delta ? "Changes" : "Sum", live_n);
		if (delta)
			puts(title);
		else
			heading(stdout, title, o);
	} else if (!delta) {
		who(title, sizeof title);
		heading(stdout, title, o);
	}
	if (np_tstats_print(stdout, &sum, &od) == 0)
		puts(delta ? "no change" : "(every counter is zero)");
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int np_cmd_stat(int argc, char **argv)
{
	enum { OPT_JSON = 1000 };
	static const struct option opts[] = {
		{"compact", no_argument, NULL, 'c'},     {"hide-zero", no_argument, NULL, 'z'},
		{"raw", no_argument, NULL, 'r'},         {"width", required_argument, NULL, 'w'},
		{"per-process", no_argument, NULL, 'P'}, {"json", no_argument, NULL, OPT_JSON},
		{"interval", required_argument, NULL, 'i'}, {"count", required_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
	};
	struct np_vmstat_table_opts topts;
	np_tstats_opts_init(&topts, 1);
	bool per_process = false, json = false;
	long count = 0;
	double interval = 0;
	int c;
	optind = 0; /* 0: glibc starts a fresh scan (the dispatcher scanned with "+" before) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":czrw:Pi:n:h", opts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'c': topts.compact = true; break;
		case 'z': topts.hide_zero_rows = topts.hide_zero_cols = true; break;
		case 'r': topts.raw = true; break;
		case 'w': {
			long w = strtol(optarg, &end, 10);
			if (end == optarg || *end || w < 20 || w > 100000)
				return usage_error("-w takes a number of columns (20 or more), not '%s'", optarg);
			topts.width = (int)w;
			break;
		}
		case 'P': per_process = true; break;
		case OPT_JSON: json = true; break;
		case 'i':
			interval = strtod(optarg, &end);
			if (end == optarg || *end || !(interval > 0) || interval > 86400)
				return usage_error("-i takes a number of seconds above 0 and at most 86400, not '%s'", optarg);
			break;
		case 'n':
			errno = 0;
			count = strtol(optarg, &end, 10);
			if (end == optarg || *end || errno || count < 1)
				return usage_error("-n takes a count of at least 1, not '%s'", optarg);
			break;
		case 'h': np_usage_stat(stdout); return 0;
		case ':': {
			/* A long option by its name; a short one by its letter (argv holds a cluster
			 * such as -Pn). */
			const char *arg = argv[optind - 1];
			char letter[3] = {'-', (char)optopt, '\0'};
			return usage_error("%s needs an argument", strncmp(arg, "--", 2) == 0 ? arg : letter);
		}
		default: {
			char why[128];
			return usage_error("%s", np_bad_option(why, sizeof why, argv, opts));
		}
		}
	}
	if (optind >= argc)
		return usage_error("no process given (a process id or a pattern)%s", "");
	if (!count)
		count = interval > 0 ? 0 : 1; /* 0: until the processes exit */
	live = calloc(MAX_LIVE, sizeof *live);
	if (!live) {
		fprintf(stderr, "numapage stat: out of memory\n");
		return 1;
	}

	scan();
	for (int i = optind; i < argc; i++) {
		int rc = all_digits(argv[i]) ? select_pid(argv[i]) : select_pattern(argv[i]);
		if (rc == 2) { /* what was wrong is said already */
			np_usage_stat(stderr);
			return 2;
		}
		if (rc)
			return rc;
	}

	double last = now_s();
	for (long done = 0;;) {
		int alive = 0;
		for (int i = 0; i < nlive; i++)
			if (!live[i].gone) {
				sample(&live[i], done == 0);
				alive += !live[i].gone;
			}
		if (!alive)
			break;
		double t = now_s();
		if (json)
			print_json(t);
		else
			print_tables(&topts, per_process, done > 0, t, t - last);
		last = t;
		int werr = fflush(stdout) != 0 ? errno : 0;
		if (werr || ferror(stdout)) {
			np_stdout_error = werr;
			return 1; /* main says so */
		}
		if (count && ++done >= count)
			break;
		if (!count)
			done++;
		pause_for(interval);
		alive = 0;
		for (int i = 0; i < nlive; i++) {
			if (live[i].gone)
				continue;
			if (!np_proc_alive(live[i].pid) || access(live[i].path, F_OK) != 0) {
				fprintf(stderr, "numapage stat: process %d has exited\n", live[i].pid);
				live[i].gone = true;
			} else {
				alive++;
			}
		}
		if (!alive)
			break;
		if (!json)
			putchar('\n');
	}
	return changed || unreadable ? 1 : 0;
}
