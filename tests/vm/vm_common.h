/*
 * vm_common.h — what the vm tier's guest programs share: result lines ("ok - ", "not ok - ",
 * "# ", counted by tests/vm/vmrun.py on the host), the kernel's own view of the NUMA topology
 * read from /sys (the oracle every placement check compares against: the library's table is
 * never used to judge the library), move_pages(2) queries, and threads pinned to one CPU.
 * Single-threaded setup; the counters are atomic so pinned threads may report too.
 */
#ifndef NP_VM_COMMON_H
#define NP_VM_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#define VM_MAX_NODES 64
#define VM_MAX_CPUS 256
#define VM_WHERE_MAX 4096 /* pages per vm_where call */

/* The topology as the kernel reports it in /sys/devices/system/node. */
struct vm_topo {
	int max_node;                          /* highest online node id */
	int ncpus;                             /* CPU ids 0 .. ncpus-1 are online */
	bool online[VM_MAX_NODES];
	bool has_mem[VM_MAX_NODES];            /* MemTotal > 0 */
	int ncpus_of[VM_MAX_NODES];
	int first_cpu[VM_MAX_NODES];           /* -1 for a CPU-less node */
	int cpu_node[VM_MAX_CPUS];
	int dist[VM_MAX_NODES][VM_MAX_NODES];  /* SLIT */
};

extern struct vm_topo vm_topo;
extern size_t vm_page;

/* Reads /sys; exits with a "not ok" line when it cannot. */
void vm_topo_load(void);
/* True when memory for a thread (or request) homed on node home may be on node got: home itself
 * when it has memory, else any of its nearest nodes with memory (equidistant ones all count). */
bool vm_node_ok(int home, int got);
/* "1" or "0,2": the nodes vm_node_ok accepts for home, for messages. */
const char *vm_expect_str(int home, char *buf, size_t len);
/* Two CPUs whose threads must get memory from different nodes (first such pair); false when
 * the machine has none. */
bool vm_pick_pair(int *a, int *b);
/* Memory nodes, ascending: fills out[], returns how many. */
int vm_mem_nodes(int *out);

/* Formats into buf only while buf is still empty: keeps the first problem a check met. */
void vm_first(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void vm_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vm_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "# ..." comment line. */
void vm_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Exit status for main: 1 when a check failed, else 0. */
int vm_exit_status(void);

/* Writes one byte in every page of [p, p + len) so that each page is really allocated. */
void vm_touch(void *p, size_t len);
/* move_pages in query mode for every page of [p, p + len): status[i] is the node of page i or
 * a negative errno. Returns the number of pages, or -errno of the call. */
int vm_where(const void *p, size_t len, int *status, int max);
/* The node of the page holding p (after touching it), or a negative errno. */
int vm_where1(const void *p);

/* Runs fn(arg) in a new thread bound to cpu alone (bound before it starts) and waits for it. */
void *vm_on_cpu(int cpu, void *(*fn)(void *), void *arg);
/* Moves the calling thread to cpu alone; 0 or -errno. Returns once it runs there. */
int vm_move_to_cpu(int cpu);

#endif /* NP_VM_COMMON_H */
