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

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* The system page size (cached after the first call). */
size_t np_os_page_size(void);

/* Maps size bytes of zeroed, read-write, private anonymous memory aligned to align (a power of
 * two, at least the page size). NULL when the kernel refuses. */
void *np_os_map(size_t size, size_t align);
/* Unmaps a range returned by np_os_map (or a page-aligned part of it). 0 or -errno. */
int np_os_unmap(void *p, size_t size);
/* Grows the mapping [old, old + old_size) to new_size bytes (mremap): in place when dst == old
 * (failing rather than moving), else moved to dst, a mapping of new_size bytes it replaces. The
 * pages, their contents and the range's memory policy go along; nothing is copied. 0 or
 * -errno (nothing changed). */
int np_os_remap(void *old, size_t old_size, size_t new_size, void *dst);

/* Binds a range to one node: strict (MPOL_BIND) or preferred (MPOL_PREFERRED), through libnuma's
 * mbind with MPOL_F_STATIC_NODES. policy is enum np_bind_policy; NP_BIND_NONE does nothing.
 * 0 or -errno (-EINVAL for a memoryless node, as the kernel answers). */
int np_os_bind(void *p, size_t size, int node, int policy);
/* Binds a range interleaved over nodes[0..n): MPOL_INTERLEAVE. 0 or -errno. */
int np_os_bind_interleave(void *p, size_t size, const int *nodes, int n);
/* Asks the kernel not to back a range with transparent huge pages (MADV_NOHUGEPAGE): an
 * interleaved range must be interleaved page by page. 0 or -errno. */
int np_os_nohuge(void *p, size_t size);
/* Gives a range's physical pages back to the kernel (MADV_DONTNEED: the range stays mapped and
 * reads back as zeros, on the node it is bound to). 0 or -errno. */
int np_os_purge(void *p, size_t size);
/* Where the pages at addrs[0..n) are: status[i] is an OS node id, or a negative errno
 * (-ENOENT: not yet touched). move_pages(2) in query mode. 0 or -errno for the call. */
int np_os_nodes_of(void *const *addrs, int n, int *status);
/* Names a mapping "numapage:<name>" where the kernel supports it (PR_SET_VMA_ANON_NAME);
 * 0, or -errno (-EINVAL on kernels without it: harmless). */
int np_os_name(void *p, size_t size, const char *name);

/* The CPU the calling thread runs on, or -1. */
int np_os_current_cpu(void);
/* The calling thread's OS thread id. */
int np_os_tid(void);

/* The calling thread's memory policy: *mode is MPOL_* (MPOL_DEFAULT when none), and the node
 * mask's bits [0, maxnode) are filled into mask (OS node ids). 0 or -errno. */
int np_os_mempolicy(int *mode, unsigned long *mask, unsigned long maxnode);

/* Sets the calling thread's CPU affinity to the given OS CPU ids. 0 or -errno. */
int np_os_set_affinity(const int *cpus, int n);
/* Number of CPUs in the calling thread's affinity mask, or -errno. */
int np_os_affinity_count(void);

/* ---- Shared-memory files (the live statistics view, src/vmstat/vmstat_shm.c) ---- */
/* Creates path exclusively (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600, owned by the caller),
 * sizes it to size bytes (zero-filled) and maps it shared read-write into *out; the descriptor
 * is closed. 0 or -errno (-EEXIST: the name is taken); on failure no file is left behind. */
int np_os_shm_create(const char *path, size_t size, void **out);
/* Removes a file name. 0 or -errno. */
int np_os_unlink(const char *path);
/* The calling process's id and effective user id. */
int np_os_pid(void);
unsigned np_os_euid(void);
/* Calls fn(name, ctx) for every entry of the directory path ("." and ".." included), read
 * with getdents64 into a buffer on the stack: no allocation (opendir would call malloc).
 * 0 or -errno (for opening or reading the directory). */
int np_os_list_dir(const char *path, void (*fn)(const char *name, void *ctx), void *ctx);
/* Whether process pid exists: 1 (also when it belongs to another user: kill(pid, 0) says
 * EPERM), 0 when kill(pid, 0) says ESRCH, or -errno. */
int np_os_pid_alive(int pid);

#endif /* NP_OS_H */
