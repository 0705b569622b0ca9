/*
 * numapage run — runs a program with libnumapage preloaded and the given options set.
 *
 *   numapage run [--stats] [--per-process] [--json FILE|-] [-c] [-z] [-r] [-w COLUMNS]
 *                [--topology FILE|synthetic:STR] [--place POLICY] [--verbose] [--lib PATH]
 *                [--] COMMAND [ARGS...]
 *
 * Before anything runs, the library is loaded once in a throw-away child (dlopen), so a
 * library that cannot be loaded stops here with the loader's reason and status 125, instead
 * of ld.so's "object ... ignored" and a job that silently runs without it.
 * With --stats every process of the job (the command, what it executes, and every process
 * forked on the way, daemons included) writes its per-node statistics as JSON into a private
 * temporary directory when it exits. numapage run becomes the job's child subreaper
 * (PR_SET_CHILD_SUBREAPER), so a daemon that leaves its parent is still the job's, and it
 * waits until every process of the job has exited. A process it reaps that ended without its
 * report (_exit, a signal) is counted from the totals it left in its live-view file (/dev/shm),
 * less what its threads had not folded yet; so is one that another process of the job forked
 * (or started) and reaped, once the job is over: a thread holds the job's live files open
 * meanwhile (lib/livekeep.h), since another program's start sweeps the files of processes
 * that are gone. Then it prints the sums (and, with --per-process, each process) as a
 * numastat-like table on stderr, and JSON to FILE (- is standard output). The exit status is
 * the command's: 128 + N when signal N killed it, 127 when it does not exist, 126 when it
 * cannot be executed, 125 when libnumapage could not be loaded (nothing was run) or, with
 * --stats, no process of the job loaded it.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../cmds.h"
#include "../lib/livefile.h"
#include "../lib/livekeep.h"
#include "../lib/procs.h"
#include "../lib/tstats.h"
#include "json.h"
#include "numapage.h"
#include "os.h"
#include "vmstat/vmstat.h"

#define EXIT_NOT_LOADED 125
#define MAX_PROCS 4096

void np_usage_run(FILE *out)
{
	fputs("usage: numapage run [--stats] [--per-process] [--json FILE|-] [-c] [-z] [-r] [-w COLUMNS]\n"
	      "                    [--topology FILE|synthetic:STR] [--place none|spread|fill]\n"
	      "                    [--verbose] [--lib PATH] [--] COMMAND [ARGS...]\n"
	      "  -s, --stats        when the job is over, its per-node statistics on stderr (the\n"
	      "                     sums over every process; waits for daemons the job started)\n"
	      "  -P, --per-process  also one table per process\n"
	      "  -j, --json FILE    also the statistics as JSON into FILE (- for stdout); implies -s\n"
	      "  -c, --compact      narrow columns, whole MiB\n"
	      "  -z, --hide-zero    leave out rows and node columns that are zero everywhere\n"
	      "  -r, --raw          pages and bytes as counted instead of MiB\n"
	      "  -w, --width N      fold the table at N columns (default: the terminal's)\n"
	      "  -t, --topology     rehearse another machine (NUMAPAGE_TOPOLOGY)\n"
	      "  -p, --place        thread placement (NUMAPAGE_PLACE)\n"
	      "  -v, --verbose      the library says what it decides (NUMAPAGE_VERBOSE=1)\n"
	      "  -l, --lib PATH     the library to preload\n"
	      "  -h, --help         this text\n",
	      out);
}

static int usage_error(const char *fmt, const char *arg)
{
	return np_usage_error("run", np_usage_run, fmt, arg);
}

/* The library to preload: --lib, $NUMAPAGE_LIB, the build tree's when this tool runs from it,
 * else the installed one. */
static const char *find_lib(const char *given)
{
	static char path[PATH_MAX + 64];
	if (given)
		return given;
	const char *env = getenv("NUMAPAGE_LIB");
	if (env && *env)
		return env;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			/* build tree: <build>/tools/numapage -> <build>/src/libnumapage.so */
			snprintf(path, sizeof path, "%s/../src/libnumapage.so", exe);
			if (strcmp(exe, NP_BUILD_TOOLDIR) == 0 && access(path, R_OK) == 0)
				return path;
		}
	}
	snprintf(path, sizeof path, "%s/libnumapage.so.0", NP_LIBDIR);
	if (access(path, R_OK) == 0)
		return path;
	return "libnumapage.so.0"; /* let the dynamic loader search */
}

/*
 * Loads so in a throw-away child, as the loader would preload it: the same search path and the
 * library's constructor run, so a missing file, a wrong architecture or a missing dependency
 * shows up with dlerror's words. The child says nothing (stderr closed), publishes nothing
 * and leaves with _exit. Returns 0, or -1 with the reason in why.
 */
static int probe(const char *so, char *why, size_t size)
{
	int fds[2];
	if (pipe(fds) != 0) {
		snprintf(why, size, "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(why, size, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		close(fds[0]);
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 2);
		setenv("NUMAPAGE_SHM", "0", 1);
		setenv("NUMAPAGE_VERBOSE", "0", 1);
		unsetenv("NUMAPAGE_STATS");
		void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
		const char *msg = !h ? dlerror() : !dlsym(h, "numa_page_version") ? "it is not libnumapage" : "";
		if (msg && *msg && write(fds[1], msg, strlen(msg)) < 0)
			_exit(2);
		_exit(h && !*msg ? 0 : 1);
	}
	close(fds[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < size && ((r = read(fds[0], why + n, size - 1 - n)) > 0 || (r < 0 && errno == EINTR)))
		if (r > 0)
			n += (size_t)r;
	why[n] = '\0';
	close(fds[0]);
	int status;
	pid_t got;
	while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (got != pid) {
		snprintf(why, size, "waitpid: %s", strerror(errno));
		return -1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (!why[0])
		snprintf(why, size, "the loading process %s %d", WIFSIGNALED(status) ? "was killed by signal" : "exited",
			 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	return -1;
}

/* ---- The job's reports ----------------------------------------------------------------------- */

struct job {
	struct np_tstats total;
	struct np_treport *procs; /* cap of them: the first cap reports are kept one by one */
	int nprocs, bad, cap;
};

/* The reports kept one by one (the sums count them all). */
static int kept(const struct job *j)
{
	return j->nprocs < j->cap ? j->nprocs : j->cap;
}

static int by_pid(const void *a, const void *b)
{
	const struct np_treport *x = a, *y = b;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

static void collect(struct job *j, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	static char buf[1 << 20];
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.')
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		/* Only regular files: a FIFO a process of the job made here held the run for good
		 * (a review). */
		struct stat st;
		int fd = np_open_regular(path, &st);
		FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
		if (fd >= 0 && !f)
			close(fd);
		if (f) {
			size_t n = fread(buf, 1, sizeof buf - 1, f);
			buf[n] = '\0';
			fclose(f);
			struct np_treport r;
			if (np_tstats_parse_report(buf, &r) != 0) {
				j->bad++;
			} else {
				if (!r.pid)
					r.pid = atoi(e->d_name); /* older reports: the file is <pid>.json */
				np_tstats_add(&j->total, &r.stats);
				if (j->nprocs < j->cap)
					j->procs[j->nprocs] = r;
				j->nprocs++;
			}
		}
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
	qsort(j->procs, (size_t)kept(j), sizeof *j->procs, by_pid);
}

static void describe(const struct np_treport *r, char *buf, size_t size)
{
	char command[sizeof r->command];
	np_proc_printable(r->command[0] ? r->command : "?", command, sizeof command);
	int n = snprintf(buf, size, "process %d (%s)", r->pid, command);
	if (r->parent && n > 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, ", forked from %d", r->parent);
}

static void print_tables(const struct job *j, const struct np_vmstat_table_opts *o, bool per_process)
{
	const char *unit = o->raw ? "pages and bytes as counted" : "MiB";
	if (per_process)
		for (int i = 0; i < kept(j); i++) {
			char who[160];
			describe(&j->procs[i], who, sizeof who);
			fprintf(stderr, "numapage: per-node statistics of %s (%s)\n", who, unit);
			if (np_tstats_print(stderr, &j->procs[i].stats, o) == 0)
				fputs("(every counter is zero)\n", stderr);
			fputc('\n', stderr);
		}
	fprintf(stderr, "numapage: per-node statistics of the job, %d process%s (%s)\n", j->nprocs,
		j->nprocs == 1 ? "" : "es", unit);
	if (np_tstats_print(stderr, &j->total, o) == 0)
		fputs("(every counter is zero)\n", stderr);
}

static int write_json(const struct job *j, const char *path)
{
	FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "{\"processes\":%d,", j->nprocs);
	np_tstats_json_nodes(f, &j->total);
	fputs(",\"per_process\":[", f);
	for (int i = 0; i < kept(j); i++) {
		const struct np_treport *r = &j->procs[i];
		fprintf(f, "%s{\"pid\":%d,\"parent\":%d,\"command\":", i ? "," : "", r->pid, r->parent);
		np_json_string(f, r->command);
		fputc(',', f);
		np_tstats_json_nodes(f, &r->stats);
		fputc('}', f);
	}
	fputs("]}\n", f);
	if (f == stdout)
		return fflush(f) == 0 && !ferror(f) ? 0 : -1;
	return fclose(f);
}

/* ---- What a process left without its report ---------------------------------------------------- */

/*
 * A process that ends without its exit handlers (_exit, a signal) writes no report, but its
 * live-view file (/dev/shm, NUMAPAGE_SHM) stays behind with the totals it had folded: what its
 * threads had not folded yet (at most the threshold per thread and counter) is missing. Read
 * while the process is a zombie, so that its pid cannot have been taken by another process,
 * then removed: the process is gone and the file would only wait for a sweep.
 */
struct leftover {
	struct np_treport r;
	struct leftover *next;
};

static struct leftover *leftovers;

/* The command of process pid when it is one of job's (reported or left over), else NULL. */
static const char *job_command(const struct job *j, int pid)
{
	for (int i = 0; i < kept(j); i++)
		if (j->procs[i].pid == pid)
			return j->procs[i].command;
	for (struct leftover *l = leftovers; l; l = l->next)
		if (l->r.pid == pid)
			return l->r.command;
	return NULL;
}

/* Whether report r is of the process whose live file had inode ino: it names that file, or
 * does not say (a library before the field). One that names another file, or none (it did not
 * publish), is of another process that had the same pid: pids wrap, and in a long job the
 * report of one and the file of a later one that ended with _exit are two processes. */
static bool same_process(const struct np_treport *r, unsigned long long ino)
{
	return r->live < 0 || (unsigned long long)r->live == ino;
}

/* Whether the counts of process pid, whose live file has inode ino, are in the job already: its
 * report, or that file read. */
static bool counted(const struct job *j, int pid, unsigned long long ino)
{
	for (int i = 0; i < kept(j); i++)
		if (j->procs[i].pid == pid && same_process(&j->procs[i], ino))
			return true;
	for (struct leftover *l = leftovers; l; l = l->next)
		if (l->r.pid == pid && (unsigned long long)l->r.live == ino)
			return true;
	return false;
}

/* Reads the live file of process pid open at fd (status st, name path) into the leftovers;
 * true when it was read. job NULL: pid is our zombie, its command its own. Else pid is gone,
 * and its file is taken only when it names us as its keeper (NUMAPAGE_SHM_KEEPER: a process
 * of the job), a parent in the job, or member is the command the watcher saw when the file
 * was made by a process of the job (livekeep.h; "" or NULL: none); and only one of our pid
 * namespace. Its command: its parent's where that is in the job (a forked child runs its
 * parent's program), else the watcher's, else unknown ("?"). */
static bool read_leftover_at(pid_t pid, int fd, const struct stat *st, const char *path, const struct job *job,
			     const char *member)
{
	/* The load refuses another pid namespace's file (a container's sharing /dev/shm): its
	 * pids are not ours, so neither its gone-ness nor its parent means anything here. */
	static struct np_livefile f;
	struct leftover *l = calloc(1, sizeof *l);
	bool read = l && np_livefile_load(&f, fd, st, path, (unsigned)geteuid(), pid, 0) == NP_LIVEFILE_OK;
	/* Another keeper's (a numapage run inside the job, which counts its own job): not ours,
	 * or this job would count a part of that one, as much as our watcher happened to hold. */
	if (read && job && f.keeper > 0 && f.keeper != (int)getpid()) {
		np_livefile_free(&f);
		read = false;
	}
	const char *parent_command = read && job ? job_command(job, f.parent) : NULL;
	if (read && job && !parent_command && member && member[0])
		parent_command = member; /* its own command, seen while it ran */
	if (read && job && !parent_command && f.keeper == (int)getpid())
		parent_command = "?"; /* ours, but nobody saw what it ran */
	if (read && job && !parent_command) {
		np_livefile_free(&f);
		read = false;
	}
	if (read) {
		l->r.pid = pid;
		l->r.live = (long long)st->st_ino;
		l->r.parent = f.parent; /* a forked child that ended with _exit, or killed */
		if (parent_command)
			snprintf(l->r.command, sizeof l->r.command, "%s", parent_command);
		else
			np_proc_comm(pid, l->r.command, sizeof l->r.command);
		np_livefile_totals(&f, &l->r.stats);
		np_livefile_free(&f);
		l->next = leftovers;
		leftovers = l;
		l = NULL;
	}
	free(l);
	return read;
}

/* The same for the file named for pid (name NULL), or for the file name in /dev/shm set aside
 * at pid (np_vmstat_shm_parse_aside), which is then removed (when read, or for our zombie);
 * other files are left alone. */
static bool read_leftover_file(pid_t pid, const struct job *job, const char *name)
{
	char path[PATH_MAX];
	unsigned me = (unsigned)geteuid();
	if (name)
		snprintf(path, sizeof path, "%s/%s", NP_VMSTAT_SHM_DIR, name);
	else
		np_vmstat_shm_path(path, sizeof path, me, pid, np_os_pid_ns());
	struct stat st;
	int fd = np_livefile_open(path, me, &st);
	if (fd < 0)
		return false; /* it reported (the file goes at exit), it did not publish, or the name
			       * holds something that is not our file (planted: not ours to read or remove) */
	if (job && counted(job, pid, (unsigned long long)st.st_ino)) {
		close(fd); /* its report is in (it was killed after writing it), or it was read */
		return false;
	}
	bool read = read_leftover_at(pid, fd, &st, path, job, job ? np_livekeep_comm(&st) : NULL);
	if (read)
		np_livekeep_taken(&st); /* the watcher's copy of it is not read again */
	close(fd);
	/* Our regular file under our name: sticky /dev/shm lets nobody swap it meanwhile. */
	if (read || !job)
		unlink(path);
	return read;
}

static void read_leftover(pid_t pid)
{
	read_leftover_file(pid, NULL, NULL);
}

/*
 * A child that a process of the job forked and that ended with _exit or a signal, reaped by
 * its own parent, never became our zombie: its live file stayed in /dev/shm, and its counts
 * were missing from the job. The file names us as its keeper, and the process it was forked
 * from, so once the job is over, the files of our uid whose process is gone and that name us
 * or a parent in the job (or such a child: the scan repeats while it finds some) are read as
 * leftovers and removed. A dead process's pid cannot name a live one's file: only gone pids
 * are taken.
 */
static void adopt_forked_leftovers(const struct job *j)
{
	unsigned me = (unsigned)geteuid();
	uint64_t my_ns = np_os_pid_ns();
	for (bool more = true; more;) {
		more = false;
		DIR *d = opendir(NP_VMSTAT_SHM_DIR);
		if (!d)
			return;
		for (struct dirent *e; (e = readdir(d));) {
			unsigned uid;
			int pid;
			uint64_t ns;
			/* And the files set aside at a pid that a later process of the job took (a pid
			 * used again): their process is gone whatever the pid's is. */
			bool aside = np_vmstat_shm_parse_aside(e->d_name, &uid, &pid, &ns);
			if ((aside || np_vmstat_shm_parse_name(e->d_name, &uid, &pid, &ns)) && uid == me && ns == my_ns &&
			    (aside || (kill(pid, 0) != 0 && errno == ESRCH)))
				more |= read_leftover_file(pid, j, aside ? e->d_name : NULL);
		}
		closedir(d);
		/* The files whose names went before the job ended (another process's sweep): the
		 * watcher kept them open (livekeep.h). */
		int pid, fd;
		struct stat st;
		const char *comm;
		for (size_t i = 0; np_livekeep_get(&i, &pid, &fd, &st, &comm); i++)
			if (!counted(j, pid, (unsigned long long)st.st_ino) &&
			    read_leftover_at(pid, fd, &st, "(kept)", j, comm)) {
				np_livekeep_take(i);
				more = true;
				/* Its name, where no sweep took it yet (and it is still this file). */
				char path[128];
				struct stat now;
				np_vmstat_shm_path(path, sizeof path, me, pid, my_ns);
				if (lstat(path, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino)
					unlink(path);
			}
	}
}

/* Adds the leftovers of processes that wrote no report to the job; returns how many. */
static int add_leftovers(struct job *j)
{
	int added = 0;
	for (struct leftover *l = leftovers, *next; l; l = next) {
		next = l->next;
		bool reported = false;
		for (int i = 0; i < kept(j); i++)
			reported |= j->procs[i].pid == l->r.pid && same_process(&j->procs[i], (unsigned long long)l->r.live);
		if (!reported) {
			np_tstats_add(&j->total, &l->r.stats);
			if (j->nprocs < j->cap)
				j->procs[j->nprocs] = l->r;
			j->nprocs++;
			added++;
		}
		free(l);
	}
	leftovers = NULL;
	qsort(j->procs, (size_t)kept(j), sizeof *j->procs, by_pid);
	return added;
}

/* ---- Running ---------------------------------------------------------------------------------- */

/* Waits for the command, then (as the job's subreaper) for every other process of the job,
 * reading what each one that ends without its report left (all: --stats). Returns the
 * command's wait status, or -1 when it could not be had (errno says why). */
static int wait_job(pid_t cmd, bool all)
{
	int status = 0, s;
	bool cmd_done = false, said = false;
	for (;;) {
		pid_t want = cmd;
		if (all) {
			/* Look at the zombie before it is reaped (WNOWAIT). */
			siginfo_t si = {0};
			if (waitid(cmd_done ? P_ALL : P_PID, cmd_done ? 0 : (id_t)cmd, &si, WEXITED | WNOWAIT) < 0) {
				if (errno == EINTR)
					continue;
				break; /* ECHILD: the whole job is over */
			}
			read_leftover(si.si_pid);
			/* Reap exactly the zombie whose file was just read: another one may have
			 * appeared meanwhile, and reaping it would free its pid unread. */
			want = si.si_pid;
		}
		pid_t p = waitpid(want, &s, 0);
		if (p < 0) {
			if (errno == EINTR)
				continue;
			if (!cmd_done)
				return -1; /* the command was never reaped: its status is unknown */
			break; /* ECHILD: the whole job is over */
		}
		if (p == cmd) {
			status = s;
			cmd_done = true;
			if (!all)
				break;
		}
		if (cmd_done && all && !said) {
			/* Say once why we have not returned yet: the command left processes behind
			 * (a daemon, a background job). */
			int kids[64];
			int n = np_proc_descendants(getpid(), kids, 64);
			if (n > 0) {
				char raw[64], comm[64];
				np_proc_comm(kids[0], raw, sizeof raw);
				np_proc_printable(raw, comm, sizeof comm);
				fprintf(stderr, "numapage run: the command has exited; waiting for the %d process%s it "
						"left running (%d %s%s) to end the job\n",
					n, n == 1 ? "" : "es", kids[0], comm, n > 1 ? ", ..." : "");
				said = true;
			}
		}
	}
	if (!cmd_done) {
		errno = ECHILD;
		return -1;
	}
	return status;
}

int np_cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{"stats", no_argument, NULL, 's'},       {"per-process", no_argument, NULL, 'P'},
		{"json", required_argument, NULL, 'j'},  {"compact", no_argument, NULL, 'c'},
		{"hide-zero", no_argument, NULL, 'z'},   {"raw", no_argument, NULL, 'r'},
		{"width", required_argument, NULL, 'w'}, {"topology", required_argument, NULL, 't'},
		{"place", required_argument, NULL, 'p'}, {"verbose", no_argument, NULL, 'v'},
		{"lib", required_argument, NULL, 'l'},   {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool stats = false, per_process = false;
	const char *json = NULL, *lib = NULL;
	struct np_vmstat_table_opts topts;
	np_tstats_opts_init(&topts, 2);
	int c;
	optind = 0; /* 0: glibc starts a fresh scan (the dispatcher scanned with "+" before) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:sPj:czrw:t:p:vl:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': stats = true; break;
		case 'P': per_process = stats = true; break;
		case 'j':
			/* "--json --" or "--json --stats" would otherwise create a file of that name. */
			if (optarg[0] == '-' && optarg[1])
				return usage_error("--json needs a file name (or - for standard output), not '%s'",
						   optarg);
			json = optarg;
			stats = true;
			break;
		case 'c': topts.compact = true; break;
		case 'z': topts.hide_zero_rows = topts.hide_zero_cols = true; break;
		case 'r': topts.raw = true; break;
		case 'w': {
			char *end;
			long w = strtol(optarg, &end, 10);
			if (end == optarg || *end || w < 20 || w > 100000)
				return usage_error("--width takes a number of columns (20 or more), not '%s'", optarg);
			topts.width = (int)w;
			break;
		}
		case 't': setenv("NUMAPAGE_TOPOLOGY", optarg, 1); break;
		case 'p':
			if (strcmp(optarg, "none") && strcmp(optarg, "spread") && strcmp(optarg, "fill"))
				return usage_error("--place takes none, spread or fill, not '%s'", optarg);
			setenv("NUMAPAGE_PLACE", optarg, 1);
			break;
		case 'v': setenv("NUMAPAGE_VERBOSE", "1", 1); break;
		case 'l': lib = optarg; break;
		case 'h': np_usage_run(stdout); return 0;
		case ':': return usage_error("%s needs an argument", argv[optind - 1]);
		default: {
			char why[128];
			return usage_error("%s", np_bad_option(why, sizeof why, argv, opts));
		}
		}
	}
	if (optind >= argc)
		return usage_error("no command given%s", "");
	/* Inherited "ignored" (a daemon's habit, `trap '' CHLD`) makes the kernel reap our children
	 * itself: waitpid would fail and the command's status would be lost. */
	signal(SIGCHLD, SIG_DFL);

	const char *so = find_lib(lib);
	/* A relative path would be looked up again from each process's working directory: one
	 * that changes directory before exec would run without the library. */
	static char abs_so[PATH_MAX];
	if (strchr(so, '/') && so[0] != '/' && realpath(so, abs_so))
		so = abs_so;
	/* ld.so splits LD_PRELOAD at spaces and colons: such a path would be preloaded as pieces,
	 * that is not at all, and the job would run without a word. */
	if (strpbrk(so, " :")) {
		fprintf(stderr, "numapage run: cannot preload '%s': LD_PRELOAD cannot hold a path with a space or "
				"a colon; install or link the library elsewhere\n"
				"numapage run: %s was not run; see --lib and NUMAPAGE_LIB\n",
			so, argv[optind]);
		return EXIT_NOT_LOADED;
	}
	char why[1024];
	if (probe(so, why, sizeof why) != 0) {
		fprintf(stderr, "numapage run: cannot load libnumapage (%s): %s\n"
				"numapage run: %s was not run; see --lib, NUMAPAGE_LIB and LD_LIBRARY_PATH\n",
			so, why, argv[optind]);
		return EXIT_NOT_LOADED;
	}
	const char *old = getenv("LD_PRELOAD");
	char *preload = malloc(strlen(so) + (old ? strlen(old) : 0) + 2);
	if (!preload)
		return 1;
	sprintf(preload, "%s%s%s", so, old && *old ? ":" : "", old ? old : "");
	setenv("LD_PRELOAD", preload, 1);
	free(preload);

	char dir[] = "/tmp/numapage-run.XXXXXX";
	if (stats) {
		if (!mkdtemp(dir)) {
			perror("numapage run: mkdtemp");
			return 1;
		}
		char spec[sizeof dir + 16];
		snprintf(spec, sizeof spec, "json:%s/%%p.json", dir);
		setenv("NUMAPAGE_STATS", spec, 1);
		/* The job's live files name us: no sweep removes one while we live (a process that
		 * takes a gone one's pid still replaces its file), and those of processes that end
		 * without their report are ours to read (below). */
		char keeper[16];
		snprintf(keeper, sizeof keeper, "%d", (int)getpid());
		setenv("NUMAPAGE_SHM_KEEPER", keeper, 1);
		/* Orphans of the job (a daemon whose parent exited) become our children, so the
		 * job ends when its last process does. */
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
		/* Before the job starts: none of its live files comes before the watch. */
		np_livekeep_watch((unsigned)geteuid(), np_os_pid_ns(), dir);
	}
	/* The child tells us through this pipe (closed on a successful exec) why exec failed. */
	int ep[2];
	if (pipe2(ep, O_CLOEXEC) != 0) {
		perror("numapage run: pipe");
		return 1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		perror("numapage run: fork");
		return 1;
	}
	if (pid == 0) {
		close(ep[0]);
		execvp(argv[optind], argv + optind);
		int e = errno;
		if (write(ep[1], &e, sizeof e) < 0)
			_exit(127);
		_exit(e == ENOENT ? 127 : 126);
	}
	close(ep[1]);
	if (stats)
		np_livekeep_start();
	int exec_errno = 0;
	ssize_t got;
	while ((got = read(ep[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR)
		;
	close(ep[0]);
	/* The job gets the terminal's signals; we only wait for it. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	int status = wait_job(pid, stats);
	/* Before the reports are read and removed: the watcher looks for them. */
	np_livekeep_stop();
	if (got == (ssize_t)sizeof exec_errno) {
		fprintf(stderr, "numapage run: cannot run %s: %s\n", argv[optind], strerror(exec_errno));
		if (stats)
			rmdir(dir);
		return exec_errno == ENOENT ? 127 : 126;
	}
	if (status < 0) {
		fprintf(stderr, "numapage run: cannot tell how %s ended: waitpid: %s\n", argv[optind], strerror(errno));
		if (stats)
			rmdir(dir);
		return 1;
	}
	int rc = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		fprintf(stderr, "numapage run: %s was killed by signal %d (%s)\n", argv[optind], WTERMSIG(status),
			strsignal(WTERMSIG(status)));
	if (!stats)
		return rc;

	/* MAX_PROCS reports, allocated here: 47 MB in the program's image kept every command from
	 * starting under a small address-space limit (ulimit -v 65536: a segfault at exec). Where
	 * even the allocation fails, a few are kept one by one, and all are summed. */
	static struct job j;
	static struct np_treport few[16];
	j.procs = calloc(MAX_PROCS, sizeof *j.procs);
	j.cap = j.procs ? MAX_PROCS : (int)(sizeof few / sizeof few[0]);
	if (!j.procs)
		j.procs = few;
	collect(&j, dir);
	if (j.bad)
		fprintf(stderr, "numapage run: %d report%s of the job could not be read\n", j.bad, j.bad == 1 ? "" : "s");
	adopt_forked_leftovers(&j);
	np_livekeep_free();
	int left = add_leftovers(&j);
	if (left)
		fprintf(stderr, "numapage run: %d process%s of the job ended without an exit report (_exit or a "
				"signal): counted from the totals published in /dev/shm, less what threads had not folded yet\n",
			left, left == 1 ? "" : "es");
	if (j.nprocs == 0 && !WIFSIGNALED(status)) {
		fprintf(stderr, "numapage run: no process of the job ran with libnumapage (%s): a static or "
				"set-user-ID program, or one that clears LD_PRELOAD?\n", so);
		return EXIT_NOT_LOADED;
	}
	if (j.nprocs > 0)
		print_tables(&j, &topts, per_process);
	if (json && write_json(&j, json) != 0) {
		fprintf(stderr, "numapage run: cannot write %s: %s\n", json, strerror(errno));
		if (rc == 0)
			rc = 1;
	}
	return rc;
}
