/*
 * os.h — the only door to the kernel. os_linux.c implements it for the library; tests link
 * tests/fake_os.c in its place (a link-time seam: no indirection on the real path).
 *
 * Contract for every function: sizes and addresses are multiples of the page size where they
 * describe memory ranges; nothing here calls malloc; errno is as it was on return; failures are
 * reported as return values (NULL, or a negative errno), never by printing.
 * Node arguments are OS node ids (as the kernel numbers them), not the topology's indices.
 */
#ifndef NP_OS_H
#define NP_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "internal.h"

/* The system page size (cached after the first call). */
size_t np_os_page_size(void);

/* Maps size bytes of zeroed, read-write, private anonymous memory aligned to align (a power of
 * two, at least the page size). NULL when the kernel refuses. Not counted against the kernel's
 * overcommit limit (MAP_NORESERVE): address space the pools carve up as they need it. */
void *np_os_map(size_t size, size_t align);
/* The same, counted against the overcommit limit as glibc's mappings are: for one block the
 * program may write whole (a huge chunk), so that a request the machine's memory and swap
 * could never back is refused here (NULL, then ENOMEM) under the kernel's default heuristic
 * (vm.overcommit_memory 0), not granted and paid for later by the OOM killer. */
void *np_os_map_accounted(size_t size, size_t align);
/* Reserves size bytes of address space aligned to align, inaccessible (PROT_NONE) and
 * charged to nothing, in every overcommit mode: under vm.overcommit_memory 2 the kernel
 * ignores MAP_NORESERVE and charges every writable private mapping whole, so a pool chunk
 * mapped read-write cost 16 MiB of the commit limit for the few pages in use. NULL when the
 * kernel refuses. np_os_commit makes parts of it usable. */
void *np_os_reserve(size_t size, size_t align);
/* Replaces [p, p + size), page-aligned memory of ours that nothing has written (a table in
 * BSS), by read-only zeros charged to nothing: np_os_commit makes parts of it writable. 0 or
 * -errno (nothing changed). */
int np_os_reserve_readonly_at(void *p, size_t size);
/* Makes [p, p + size), page-aligned inside a reservation, read-write (zeroed where never
 * written). Charged to the commit limit where the kernel charges (mode 2: -ENOMEM past it;
 * under modes 0 and 1 the reservation's MAP_NORESERVE keeps it uncharged, as np_os_map's).
 * 0 or -errno. */
int np_os_commit(void *p, size_t size);
/* Counts [p, p + size), a page-aligned part of a mapping from np_os_map that nothing has
 * written yet, against the overcommit limit as np_os_map_accounted would have (it is mapped
 * again in place, zeroed). 0, or -errno (-ENOMEM where the kernel refuses; the range is then
 * unmapped and must not be used). */
int np_os_account(void *p, size_t size);
/* Unmaps a range returned by np_os_map (or a page-aligned part of it). 0 or -errno. */
int np_os_unmap(void *p, size_t size);
/* Grows the mapping [old, old + old_size) to new_size bytes (mremap): in place when dst == old
 * (failing rather than moving), else moved to dst, a mapping of new_size bytes it replaces. The
 * pages, their contents and the range's memory policy go along; nothing is copied. 0 or
 * -errno (nothing changed). */
int np_os_remap(void *old, size_t old_size, size_t new_size, void *dst);

/* Node ids the memory-policy calls take: at least the kernel's MAX_NUMNODES
 * (CONFIG_NODES_SHIFT = 10 on x86-64 distribution kernels). */
#define NP_OS_NODE_IDS 1024

/* How memory is bound to its node (NUMAPAGE_BIND). */
enum np_bind_policy {
	NP_BIND_PREFERRED = 0, /* MPOL_PREFERRED: the node if it can, spill elsewhere under pressure */
	NP_BIND_STRICT = 1,    /* MPOL_BIND: the node or fail (and fall back in the allocator) */
	NP_BIND_NONE = 2,      /* no mbind at all: first touch decides */
};

/* libnuma (NP_NUMA_SONAME) is not linked: it is loaded (np_os_library_open) where memory has
 * somewhere else to go, and its constructor (which reads /proc/self/status twice, lists the
 * node directory and reads node0's meminfo through stdio) runs in no other process. Until it is,
 * the calls that go through it (np_os_bind, np_os_bind_interleave, np_os_nodes_of,
 * np_os_mempolicy, np_os_bound_node) answer -ENOSYS, as a kernel without NUMA calls would.
 * Loads it, or finds it loaded: true when its calls are there, else false with the reason in
 * why (may be NULL). The loader allocates through malloc: called at start-up (topology_load.c)
 * and from the wrappers of set_mempolicy, mbind and move_pages (through np_os_set_mempolicy,
 * np_os_program_mbind, np_os_program_move_pages), never from inside an allocation. */
bool np_os_numa_open(char *why, size_t why_size);
/* set_mempolicy(2) through libnuma, loaded for it if it was not (the system call itself when it
 * cannot be loaded): 0 or -errno. */
int np_os_set_mempolicy(int mode, const unsigned long *mask, unsigned long maxnode);
/* Binds a range to one node: strict (MPOL_BIND) or preferred (MPOL_PREFERRED), through libnuma's
 * mbind with MPOL_F_STATIC_NODES. policy is enum np_bind_policy; NP_BIND_NONE does nothing.
 * 0 or -errno (-EINVAL for a memoryless node, as the kernel answers). */
int np_os_bind(void *p, size_t size, int node, int policy);
/* The range's policy back to the default (MPOL_DEFAULT: the faulting thread's policy decides),
 * where the library binds nothing (NUMAPAGE_BIND=none) and the program bound it. 0 or -errno. */
int np_os_unbind(void *p, size_t size);
/* libnuma's mbind and move_pages as the program called them (the wrappers of
 * malloc/program_bind.c), through libnuma, loaded for it if it was not (the system calls
 * themselves when it cannot be loaded): what libnuma answers, errno set. */
long np_os_program_mbind(void *p, unsigned long len, int mode, const unsigned long *mask, unsigned long maxnode,
			 unsigned flags);
long np_os_program_move_pages(int pid, unsigned long count, void **pages, const int *nodes, int *status, int flags);
/* True when tid (a pid or thread id as move_pages takes it; 0: the caller) is a thread of this
 * process, whose pages a move of tid's moves. */
bool np_os_same_process(int tid);
/* Binds a range interleaved over nodes[0..n): MPOL_INTERLEAVE. 0 or -errno. */
int np_os_bind_interleave(void *p, size_t size, const int *nodes, int n);
/* Asks the kernel not to back a range with transparent huge pages (MADV_NOHUGEPAGE): an
 * interleaved range must be interleaved page by page. 0 or -errno. */
int np_os_nohuge(void *p, size_t size);
/* Asks the kernel to back a range with transparent huge pages (MADV_HUGEPAGE), before anything
 * touches it: a 2 MiB range with a 4 KiB page in it already faults 4 KiB pages. 0 or -errno. */
int np_os_hugepage(void *p, size_t size);
/* Gives a range's physical pages back to the kernel (MADV_DONTNEED: the range stays mapped and
 * reads back as zeros, on the node it is bound to). 0 or -errno. */
int np_os_purge(void *p, size_t size);
/* Which pages of [p, p + size) (page-aligned) are resident (mincore): bit 0 of vec[i] for page
 * i; vec holds size / page size bytes. 0 or -errno. */
int np_os_resident(const void *p, size_t size, unsigned char *vec);
/* Faults every page of a range in now (MADV_POPULATE_WRITE; before Linux 5.14, a write to
 * each page), so that the kernel places them now. 0 or -errno. */
int np_os_populate(void *p, size_t size);
/* Where the pages at addrs[0..n) are: status[i] is an OS node id, or a negative errno
 * (-ENOENT: not yet touched). move_pages(2) in query mode. 0 or -errno for the call. */
int np_os_nodes_of(void *const *addrs, int n, int *status);
/* Names a mapping "numapage:<name>" where the kernel supports it (PR_SET_VMA_ANON_NAME);
 * 0, or -errno (-EINVAL on kernels without it: harmless). */
int np_os_name(void *p, size_t size, const char *name);

/* The CPU the calling thread runs on, or -1: one load from the rseq area the C library
 * registers for each thread (glibc 2.35+: __rseq_offset), else getcpu. Cheap enough for every
 * slow path of malloc: a thread that the scheduler moved is noticed at its next one. */
int np_os_current_cpu(void);
/* The kernel's node of the CPU the calling thread runs on (getcpu), or -1. For CPUs the
 * topology's table lacks: one offline when it was read and brought online since. */
int np_os_current_os_node(void);
/* What OS node `node`'s meminfo says of the memory an allocation there can get, in bytes: free
 * (MemFree), inactive file pages (Inactive(file), the first the kernel's reclaim takes), and
 * the node's mapped and dirty file pages (Mapped, Dirty), from
 * /sys/devices/system/node/node<N>/meminfo, read with open/read into a buffer on the stack
 * (libnuma's numa_node_size64 reads the same file with stdio, which allocates: not inside
 * malloc). 0 or -errno. */
struct np_os_node_mem {
	uint64_t free, inactive_file, mapped, dirty;
};
int np_os_node_avail(int node, struct np_os_node_mem *m);
/* The machine's free memory in bytes (sysinfo's freeram: the kernel's free pages, over all its
 * nodes), 0 or -errno. On a machine of one memory node it is that node's MemFree, for one
 * system call where the node's meminfo took 14 us to read (the kernel formats thirty lines). */
int np_os_mem_free(uint64_t *bytes);
/* The kernel's zone_reclaim_mode (/proc/sys/vm/zone_reclaim_mode), read at each call: 0 (the
 * default, and when it cannot be read) when a page that prefers a node at its low watermark
 * goes to the next node with free memory, however many file pages the first holds; with any
 * of its bits 1 (reclaim), 2 (write dirty pages out) and 4 (unmap mapped pages) the kernel
 * reclaims the node's own page cache first (node_reclaim). */
int np_os_node_reclaim_mode(void);
/* The calling thread's OS thread id. */
int np_os_tid(void);

/* The calling thread's memory policy: *mode is MPOL_* (MPOL_DEFAULT when none), and the node
 * mask's bits [0, maxnode) are filled into mask (OS node ids). 0 or -errno. */
int np_os_mempolicy(int *mode, unsigned long *mask, unsigned long maxnode);

/* The policy of the range at p (get_mempolicy(2) with MPOL_F_ADDR): *node is the OS node id
 * when it binds to one node (MPOL_PREFERRED, MPOL_BIND, MPOL_PREFERRED_MANY of one node),
 * NP_OS_UNBOUND when it has none (MPOL_DEFAULT, MPOL_LOCAL), NP_OS_BOUND_MANY otherwise. 0 or
 * -errno. */
#define NP_OS_UNBOUND (-1)
#define NP_OS_BOUND_MANY (-2)
int np_os_bound_node(const void *p, int *node);

/* Sets the calling thread's CPU affinity to the given OS CPU ids. 0 or -errno. */
int np_os_set_affinity(const int *cpus, int n);
/* Number of CPUs in the calling thread's affinity mask, or -errno; mask (may be NULL) gets the
 * mask's CPU ids below NP_OS_CPU_IDS as bits (zeroed first). */
#define NP_OS_CPU_IDS 4096
int np_os_affinity(uint64_t mask[NP_OS_CPU_IDS / 64]);

/* ---- Shared-memory files (the live statistics view, src/vmstat/vmstat_shm.c) ---- */
/* Creates path exclusively (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600, owned by the caller),
 * sizes it to size bytes (zero-filled, its space taken: a write to the mapping never faults for
 * want of space) and maps it shared read-write into *out, its inode number in *ino; the
 * descriptor is closed. 0 or -errno
 * (-EEXIST: the name is taken; -EFBIG: RLIMIT_FSIZE is below size, and nothing was made, since
 * growing the file would raise SIGXFSZ; -ENOSPC: the file system is full); on failure no file
 * is left behind. */
int np_os_shm_create(const char *path, size_t size, void **out, uint64_t *ino);
/* Opens path for writing a report (created, or emptied when it is a regular file), as
 * fopen(path, "w") does but without following a symbolic link at its end (O_NOFOLLOW): a link
 * planted in a shared directory cannot send the report over another file; and without waiting
 * for a FIFO's reader (ENXIO when it has none). exclusive: only a
 * name nothing holds is taken (O_EXCL; EEXIST when something does, a link included). NULL,
 * errno set (ELOOP: a link), on failure. */
FILE *np_os_create_report(const char *path, bool exclusive);
/* Reads up to size bytes from the start of path, when path is itself (a symlink is not
 * followed) a regular file owned by uid: the bytes read, -EPERM when it is not, or -errno.
 * *ino (may be NULL): the file's inode number, when it was read. */
long np_os_read_own(const char *path, unsigned uid, void *buf, size_t size, uint64_t *ino);
/* True when the calling thread runs on its alternate signal stack (sigaltstack: a signal
 * handler's, often a few KiB). */
bool np_os_on_signal_stack(void);
/* Removes a file name. 0 or -errno. */
int np_os_unlink(const char *path);
/* Unlinks path only when it is, itself (a symlink is not followed), a regular file owned by
 * uid, and (ino not 0) still the file of inode ino: 0, -EPERM when it is not, or -errno. */
int np_os_unlink_own(const char *path, unsigned uid, uint64_t ino);
/* Renames path to to on the same rules, and only where nothing holds to (no file is ever
 * replaced): 0, -EPERM when path is not that file, -EEXIST when to is taken, or -errno. */
int np_os_rename_own(const char *path, const char *to, unsigned uid, uint64_t ino);
/* Writes n zero bytes at the start of path, on the same rules (the file opened without
 * following a link, then checked): 0, -EPERM when it is not that file, or -errno. */
int np_os_zero_own(const char *path, unsigned uid, uint64_t ino, size_t n);
/* ---- Process-level facts and isolation ---- */
/* True when the process runs with elevated privileges it did not get from its caller
 * (setuid/setgid or file capabilities: getauxval(AT_SECURE)); then nothing in the
 * environment may steer the library or hwloc. */
bool np_os_is_secure(void);
/* The process's address space limit in bytes (RLIMIT_AS's soft limit, as `ulimit -v` sets), or
 * 0 when there is none: then mappings are sized to what they hold, not rounded for reuse. */
size_t np_os_address_limit(void);
/* Fills buf with n random bytes (getrandom; without it, the kernel's AT_RANDOM bytes mixed
 * with the clock and addresses). Never blocks, never fails. */
void np_os_random(void *buf, size_t n);
/* Whether path names a regular file (following links), and its size: 0 and *size, -EINVAL for
 * anything that is not a regular file (a device, a FIFO, a directory), or -errno. */
int np_os_file_info(const char *path, uint64_t *size);
/* Maps size bytes of zeroed anonymous memory shared with child processes (np_os_isolate), or
 * NULL. Unmapped with np_os_unmap. */
void *np_os_map_shared(size_t size);
/* Runs fn(arg) in a child process, a copy of this one made with a raw clone: no atfork handler
 * runs in either process and no SIGCHLD is sent, so the program cannot notice. The child gets
 * at most mem_limit more bytes of data (RLIMIT_DATA) and timeout_ms of time, and leaves with
 * _exit(fn's return value): it reports through memory from np_os_map_shared. Returns that
 * value (0..255); -ETIMEDOUT when it ran out of time (it is killed); -ECHILD when it died of a
 * signal (*sig: which); another -errno when no child could be made (the caller decides
 * whether to run fn itself). */
int np_os_isolate(int (*fn)(void *), void *arg, size_t mem_limit, int timeout_ms, int *sig);

/* Writes all of buf to fd, retrying on EINTR and short writes; errno is kept. */
void np_os_write(int fd, const char *buf, size_t len);
/* A monotonic clock in nanoseconds, coarse (a few milliseconds; no system call through the
 * vDSO): for decays, never for measurements. */
uint64_t np_os_clock_ns(void);
/* Lets another thread run (sched_yield). */
void np_os_yield(void);
/* Sleeps ns nanoseconds (nanosleep, again for what is left after a signal); errno is kept. */
void np_os_sleep_ns(long ns);
/* CPUs configured, and bytes of physical memory, as the C library reports them (sysconf): the
 * one-node fallback topology's size. 0 when unknown. */
int np_os_cpu_count(void);
/* The highest node id the machine has: the largest N of /sys/devices/system/node/node<N>
 * (listed with np_os_list_dir), 0 when that directory does not exist (a kernel without NUMA),
 * -errno when it cannot be read or names no node. libnuma's numa_max_node() answers the same,
 * but only once its constructor has run, and that constructor's opendir() is often a process's
 * first malloc: the one that starts this library. */
int np_os_node_max(void);
/* Whether the kernel lists its nodes (/sys/devices/system/node exists and was read: their
 * meminfo files are there), as the last np_os_node_max found, which every start calls; listed
 * now if none did. False on a kernel without NUMA. */
bool np_os_lists_nodes(void);
uint64_t np_os_memory_bytes(void);

/* The calling process's id and effective user id. */
int np_os_pid(void);
/* The identity of the process's pid namespace (the inode of /proc/self/ns/pid): pids mean
 * something only among processes that share it. 0 when it cannot be read (no /proc). Read at
 * each call (a stat, 4-12 us): not kept, since a child that no fork handler reached (a raw
 * clone, glibc's _Fork) into a namespace of its own can have its parent's pid (pid 1 of each),
 * and the parent's namespace, kept by pid, made its sweep remove live files of the parent's
 * namespace (a review). A caller that needs it twice at once reads it once. */
uint64_t np_os_pid_ns(void);
unsigned np_os_euid(void);
/* When the calling process started, in clock ticks after boot (/proc/self/stat's starttime):
 * the same before and after an exec, another for another process that has the pid later. 0
 * when it cannot be read. */
uint64_t np_os_start_time(void);
/* Loads the shared library soname (dlopen: resolved now, its symbols local to it, never
 * unloaded), or finds it loaded. NULL when it cannot be, with the loader's reason in why (cut
 * to why_size). The loader allocates, through malloc. */
void *np_os_library_open(const char *soname, char *why, size_t why_size);
/* The address of a library's symbol (dlsym), NULL when it has none. */
void *np_os_library_symbol(void *lib, const char *name);
/* Calls fn(name, ctx) for every entry of the directory path ("." and ".." included), read
 * with getdents64 into a buffer on the stack: no allocation (opendir would call malloc).
 * 0 or -errno (for opening or reading the directory). */
int np_os_list_dir(const char *path, void (*fn)(const char *name, void *ctx), void *ctx);
/* Whether process pid exists: 1 (also when it belongs to another user: kill(pid, 0) says
 * EPERM), 0 when kill(pid, 0) says ESRCH, or -errno. */
int np_os_pid_alive(int pid);

#endif /* NP_OS_H */
