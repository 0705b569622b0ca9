/* procs.h (tools) — what /proc says about other processes, for `numapage stat` and `numapage
 * run` (no library answers this): liveness, owner, command name and line, parents and
 * descendants, mappings. */
#ifndef NP_TOOL_PROCS_H
#define NP_TOOL_PROCS_H

#include <stdbool.h>
#include <stddef.h>

/* Whether process pid exists (also when it belongs to another user). */
bool np_proc_alive(int pid);
/* The effective uid of process pid (the uid libnumapage names its live file with), or
 * (unsigned)-1 when it cannot be told. */
unsigned np_proc_uid(int pid);
/* Whether process pid has ended: gone, or a zombie its parent has not reaped yet (whose live
 * file is its last word, for that parent: not a leftover). A process whose main thread ended
 * (pthread_exit) while others run on has not: its leader shows Z, its other threads do not. */
bool np_proc_ended(int pid);
/* The path of /proc/<pid>/<file> (maps, environ, auxv) as a live thread of pid sees it: the
 * leader's own once main has ended through pthread_exit is empty or unreadable, so then
 * /proc/<pid>/task/<tid>/<file> of a thread that runs on. */
void np_proc_path(int pid, const char *file, char *buf, size_t size);
/* /proc/<pid>/comm into buf ("" when unreadable). */
void np_proc_comm(int pid, char *buf, size_t size);
/* A command name or line for a terminal: control characters (any user names its own process),
 * C1 ones among them, and bytes of no UTF-8 character become '?', as ps shows them; the
 * characters of UTF-8 names stay when np_proc_utf8_terminal says the terminal's character set
 * is UTF-8 (numapage's main sets it from the locale), else every byte above 0x7f is '?'. JSON
 * output escapes them instead. */
extern bool np_proc_utf8_terminal;
void np_proc_printable(const char *in, char *out, size_t size);
/* The command line, arguments joined by spaces, into buf ("" when unreadable: a zombie, a
 * kernel thread, another user's process under hidepid). */
void np_proc_cmdline(int pid, char *buf, size_t size);
/* The parent's pid (field 4 of /proc/<pid>/stat), or -1. */
int np_proc_ppid(int pid);
/* Every process: pids[i] and its parent ppids[i], at most max; returns how many. */
int np_proc_list(int *pids, int *ppids, int max);
/* The descendants of pid (children, their children, ...), at most max, parents before their
 * children; returns how many. */
int np_proc_descendants(int pid, int *out, int max);
/* Whether process pid maps path: 1 yes, 0 no, -1 cannot tell (its maps are unreadable). */
int np_proc_maps_file(int pid, const char *path);
/* Calls fn(path, ctx) for each file process pid maps whose path starts with prefix (" (deleted)"
 * taken off), until fn returns true: 1 when one did, 0 when none, -1 when its maps cannot be
 * read. */
int np_proc_maps_each(int pid, const char *prefix, bool (*fn)(const char *path, void *ctx), void *ctx);

#endif
