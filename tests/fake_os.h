/*
 * fake_os.h — controls for tests/fake_os.c, the test double of src/os.h. The fake maps real
 * memory (tests touch it), records every bind instead of calling mbind, answers node queries from
 * those records, and lets a test choose the CPU each thread "runs on" and inject bind failures.
 */
#ifndef NP_FAKE_OS_H
#define NP_FAKE_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The CPU np_os_current_cpu() reports for the calling thread (default 0). */
void np_fake_os_set_cpu(int cpu);
/* The OS node np_os_current_os_node() reports for the calling thread (default -1: unknown). */
void np_fake_os_set_os_node(int node);
/* on: np_os_set_affinity also moves the calling thread's CPU to the first of the new ones and
 * then sleeps delay_us, as a real migration takes time (default off: affinity is only counted).
 * Set before the threads that use it start. */
void np_fake_os_affinity_moves(bool on, unsigned delay_us);
/* Binds to this OS node fail with the given negative errno (0 = succeed again). */
void np_fake_os_fail_bind(int node, int neg_errno);
/* Maps fail after this many more successful maps (-1 = never, the default). */
void np_fake_os_fail_map_after(long n);
/* The next np_os_map (one call) places its mapping at addr exactly (MAP_FIXED_NOREPLACE), and
 * fails where something is mapped there already: a test puts other memory in the unused part of
 * a chunk's granule, as the kernel does when address space runs short. */
void np_fake_os_map_next_at(void *addr);
/* Counters since the last reset. */
long np_fake_os_binds(void);      /* successful binds */
int np_fake_os_last_bind_policy(void); /* enum np_bind_policy of the last np_os_bind asked, or -1 */
long np_fake_os_maps(void);       /* successful maps */
/* np_os_commit fails with ENOMEM (as past vm.overcommit_memory 2's limit) after n more
 * successful calls (-1: never); and the bytes committed since the last reset. */
void np_fake_os_fail_commit_after(long n);
long np_fake_os_committed_bytes(void);
long np_fake_os_unmaps(void);
long np_fake_os_purged_bytes(void);
/* np_os_hugepage calls; *touched (if not NULL): how many found a page of the range (its first
 * 64 MiB) resident already (advice given too late for that page's 2 MiB range). */
long np_fake_os_hugepages(long *touched);
/* The same for np_os_nohuge (MADV_NOHUGEPAGE). */
long np_fake_os_nohuges(long *touched);
/* Node recorded for the page holding p by the last bind covering it, or -1. */
int np_fake_os_bound_node(const void *p);
/* The memory policy np_os_mempolicy reports for every thread: mode (MPOL_*) and OS nodes. */
void np_fake_os_set_mempolicy(int mode, const int *nodes, int n);
/* np_os_node_avail answers this for OS node `node` (-1: fails); until the first call every
 * node answers "plenty". Reads counted. */
void np_fake_os_set_node_avail(int node, int64_t bytes);
long np_fake_os_avail_reads(void);
/* The node's inactive file pages, mapped and dirty file pages np_os_node_avail reports (0
 * until set), and the zone_reclaim_mode np_os_node_reclaim_mode reports (0 until set). */
void np_fake_os_set_node_file(int node, int64_t inactive, int64_t mapped, int64_t dirty);
void np_fake_os_set_reclaim_mode(int mode);
/* How many times np_os_mem_free (the machine's free memory: the nodes set, together) and
 * np_os_node_reclaim_mode were called. */
long np_fake_os_free_reads(void);
/* np_os_mem_free fails with -EPERM (a seccomp filter) while set. */
void np_fake_os_fail_mem_free(bool fail);
long np_fake_os_mode_reads(void);
/* Bytes np_os_populate was asked to fault in (the fake faults nothing). */
long np_fake_os_populated(void);
/* Binds to OS node `node` land on node `to` (a full node whose pages the kernel put
 * elsewhere; -1: on the node again): np_os_nodes_of reports `to`. */
void np_fake_os_spill(int node, int to);
/* np_os_clock_ns runs this much ahead from now on (decays without waiting). */
void np_fake_os_advance_clock(uint64_t ns);
/* stop: np_os_clock_ns stands still from now on, but for np_fake_os_advance_clock (a test whose
 * outcome depends on how much time passes between its steps, on a loaded machine or under a
 * sanitizer that slows it); !stop: it runs again (with the offsets added). */
void np_fake_os_stop_clock(bool stop);
/* Forgets binds, counters, policy, spills and node memory (not the mappings). */
void np_fake_os_reset(void);
/* What np_os_pid_ns answers (default: the initial namespace's inode, 0xeffffffc). */
void np_fake_os_set_pid_ns(uint64_t ino);
/* When set, called at the start of every np_os_purge (what other threads, or a fork, do while
 * a purge has its runs out of the bins); the test clears it. */
extern void (*np_fake_os_purge_hook)(void);
/* np_os_purge fails with this negative errno and gives nothing back, as madvise does for locked
 * memory (mlock, mlockall: EINVAL); 0: purge again. */
void np_fake_os_fail_purge(int neg_errno);

/* np_os_shm_create fails with this negative errno (0 = create real files again). The shm
 * functions otherwise act for real (files in /dev/shm, real kill(pid, 0)). */
void np_fake_os_fail_shm(int neg_errno);

/* np_os_is_secure() answers on (a setuid process) until set off again. */
void np_fake_os_set_secure(bool on);
/* np_os_address_limit's answer (default 0: no RLIMIT_AS). */
void np_fake_os_set_address_limit(size_t bytes);
/* np_os_isolate fails with this negative errno, as when no child can be made (0: run the
 * function in the calling process, the default: the fake does not fork). */
void np_fake_os_fail_isolate(int neg_errno);
/* The highest node id np_os_node_max reports (default -1: the node directory unreadable, so this
 * machine is discovered with hwloc, as before the one-node shortcut). */
void np_fake_os_set_node_max(int node);
/* What np_os_lists_nodes answers (true until set: a NUMA kernel). */
void np_fake_os_set_lists_nodes(bool lists);
/* on: np_os_library_open fails as where a library is not installed. */
void np_fake_os_fail_library(bool fail);
/* Non-zero: the library's hwloc_get_api_version answers this (0: the real one). */
void np_fake_os_library_api_version(unsigned version);

#endif
