/*
 * waitid_shim — preloaded into `numapage run --stats` by test_run_cmd.py to make a race of the
 * job's subreaper deterministic: two orphans of the job die one after the other, and the second
 * (NP_SHIM_VICTIM_FILE holds its pid; it was orphaned first, so it comes first in the child
 * list) dies between run's look at the first zombie (waitid P_ALL, WNOWAIT) and the reaping.
 * A reaping that takes any zombie (waitpid(-1)) then takes the victim, whose leftover file was
 * never read; one that reaps the zombie it looked at does not. Once only; any other waitid
 * (the job's own programs load this too) goes straight to the kernel.
 * With NP_SHIM_NO_INOTIFY set, inotify_init1 fails (ENOSYS): numapage run then has no watcher
 * (livekeep.h), as on a kernel without inotify or past the user's limit of instances.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char state_of(int pid)
{
	char p[64], line[512];
	snprintf(p, sizeof p, "/proc/%d/stat", pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return 0;
	size_t n = fread(line, 1, sizeof line - 1, f);
	fclose(f);
	line[n] = '\0';
	char *close = strrchr(line, ')');
	return close && close[1] == ' ' ? close[2] : 0;
}

int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options)
{
	static int done;
	int rc = (int)syscall(SYS_waitid, idtype, id, info, options, NULL);
	const char *vf = getenv("NP_SHIM_VICTIM_FILE");
	if (rc != 0 || done || !vf || idtype != P_ALL || !(options & WNOWAIT))
		return rc;
	FILE *f = fopen(vf, "r");
	int victim = 0;
	if (!f)
		return rc;
	if (fscanf(f, "%d", &victim) != 1 || victim <= 0 || victim == info->si_pid) {
		fclose(f);
		return rc;
	}
	fclose(f);
	done = 1;
	kill(victim, SIGKILL);
	/* Until it is a zombie (a state to reach, not a time to wait). */
	for (int i = 0; i < 200000 && state_of(victim) != 'Z'; i++) {
		struct timespec ts = {0, 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return rc;
}

int inotify_init1(int flags)
{
	if (getenv("NP_SHIM_NO_INOTIFY")) {
		errno = ENOSYS;
		return -1;
	}
	return (int)syscall(SYS_inotify_init1, flags);
}
