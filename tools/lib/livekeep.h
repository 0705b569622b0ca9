/*
 * livekeep.h — the live files of a job, held open from their creation (numapage run --stats).
 *
 * A process of the job that ends without its report (_exit, a signal) and is reaped by its own
 * parent leaves only its live file in /dev/shm, which numapage run reads once the job is over.
 * The file names numapage run as its keeper (NUMAPAGE_SHM_KEEPER), and no sweep takes a file
 * whose keeper lives. This watcher is what is left for a file made without a keeper (a program
 * that cleared that variable but kept LD_PRELOAD), and it sees the command of each process of
 * the job while it runs, which the file does not hold; and it removes the names of the job's
 * files whose processes are gone while the job runs (every 250 ms), so that /dev/shm, which
 * every process start reads, does not fill up. A thread watches /dev/shm (inotify)
 * while the job runs and opens every new live file of a process of the job (one that descends
 * from numapage run, the job's subreaper); an open descriptor keeps the file's data after
 * anyone removes its name. A file is let go when its name goes while its process lives (it
 * removed its own file at exit, after its report) or its report is in the job's report
 * directory, so only the files of running processes and of those that ended without a report
 * and were swept stay open. A kept file is known to be the job's, so it is counted even when
 * its header cannot say whose it is (a program started by exec that a process of the job
 * reaped).
 */
#ifndef NP_TOOL_LIVEKEEP_H
#define NP_TOOL_LIVEKEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Watches /dev/shm for the files of uid in pid namespace ns (reports: the job's report
 * directory, <pid>.json): before the job is started, so that none of its files comes before
 * the watch. The events wait in the kernel until np_livekeep_start. False when it cannot (no
 * inotify): nothing is kept, and the job's leftovers are read by name alone, as before. */
bool np_livekeep_watch(unsigned uid, uint64_t ns, const char *reports);
/* Starts the thread that opens the files (after the job's fork: the descriptor limit it
 * raises is numapage run's own). False when it cannot: nothing is kept. */
bool np_livekeep_start(void);
/* Takes in what is queued and stops the watcher: call once the job is over. */
void np_livekeep_stop(void);
/* Once np_livekeep_stop has returned: from the i-th on, the first kept file whose process is
 * gone (or was when the harvest removed its name: its pid may be another's now) and that no
 * read took yet; *i is its index, and its pid, descriptor, status and the
 * process's command when the file was made ("" when it was gone by then) are valid until
 * np_livekeep_free. False when there is none from *i on. A file not taken is offered again. */
bool np_livekeep_get(size_t *i, int *pid, int *fd, struct stat *st, const char **comm);
/* Once np_livekeep_stop has returned: the command the watcher saw when the file open at st
 * (device and inode) was made, or NULL when it holds no such file (or saw none); valid until
 * np_livekeep_free. */
const char *np_livekeep_comm(const struct stat *st);
/* The file at index i was read: not offered again. */
void np_livekeep_take(size_t i);
/* The file open at st (device and inode) was read by name: it is not handed out again. */
void np_livekeep_taken(const struct stat *st);
/* Closes everything kept. */
void np_livekeep_free(void);

#endif
