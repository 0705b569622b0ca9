/*
 * os_linux.c — the Linux implementation of os.h, memory and NUMA: mapping, binding, purging,
 * where pages are, the memory policy, a node's free memory, the CPU a thread runs on and its
 * affinity. mbind, move_pages, get_mempolicy and set_mempolicy are libnuma's (numaif.h),
 * called through the library loaded on demand (np_os_numa_open). The process-level half (files,
 * isolation, randomness, identity) is os_linux_proc.c. errno is saved and restored around each
 * call, and every failure comes back as a negative errno (os_errno.h).
 */
#include "os.h"

#include "os_errno.h"

#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif
#ifndef MPOL_F_STATIC_NODES
#define MPOL_F_STATIC_NODES (1 << 15)
#endif


static size_t page_size;

size_t np_os_page_size(void)
{
	if (NP_UNLIKELY(!page_size)) {
		long ps = sysconf(_SC_PAGESIZE);
		page_size = ps > 0 ? (size_t)ps : 4096;
	}
	return page_size;
}

static void *map_at(void *hint, size_t size, int prot, int flags)
{
	void *p = mmap(hint, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static bool aligned(const void *p, size_t align)
{
	return ((uintptr_t)p & (align - 1)) == 0;
}

/* The lowest aligned mapping map_aligned made (alignments of a page or more): below it the
 * address space is usually free, as mappings grow down. */
static uintptr_t lowest_aligned = UINTPTR_MAX;

static void note_aligned(const void *p, size_t align)
{
	if (align > np_os_page_size() && (uintptr_t)p < __atomic_load_n(&lowest_aligned, __ATOMIC_RELAXED))
		__atomic_store_n(&lowest_aligned, (uintptr_t)p, __ATOMIC_RELAXED);
}

/* The over-map was refused (a limit on the address space, nearly reached), though the address
 * space may have room: exactly size bytes at each aligned address below the lowest aligned
 * mapping (or below `below`, if lower), up to MAP_LOWER_TRIES of them. Huge chunks smaller
 * than their 16 MiB granule leave its rest free, which no aligned mapping can use, and the
 * over-map of size + align no longer fits the limit: 3 MiB blocks under `ulimit -v 262144`
 * fitted 69 where glibc fits 84. A try the kernel places elsewhere is given back; one it
 * refuses ends the search (no room for size bytes anywhere). */
#define MAP_LOWER_TRIES 16
static void *map_lower(void *below, size_t size, size_t align, int prot, int flags)
{
	uintptr_t b = (uintptr_t)below, ps = np_os_page_size();
	uintptr_t low = __atomic_load_n(&lowest_aligned, __ATOMIC_RELAXED) & ~(uintptr_t)(align - 1);
	if (low < b)
		b = low;
	for (unsigned k = 1; k <= MAP_LOWER_TRIES && b >= k * align + ps; k++) {
		void *hint = (void *)(b - k * align);
		void *q = map_at(hint, size, prot, flags);
		if (q == hint)
			return q;
		if (!q)
			return NULL;
		munmap(q, size);
	}
	return NULL;
}

/*
 * An aligned mapping without reserving twice its size: exactly size bytes first, which the
 * kernel places right below the last mapping, so a run of chunk-sized maps comes out aligned
 * once one is; else exactly size bytes at the aligned address just below where the kernel put
 * it (usually free: mappings grow down); only then the classic over-map of size + align,
 * trimmed at both ends. Under RLIMIT_AS the over-map alone needed twice a chunk of address
 * space per chunk (1 MiB blocks: 161 fit in 256 MiB where glibc fits 252).
 */
static void *map_aligned(size_t size, size_t align, int prot, int flags)
{
	SAVE_ERRNO;
	size_t ps = np_os_page_size();
	if (align < ps)
		align = ps;
	if (size + align < size) {
		errno = saved_errno_;
		return NULL;
	}
	char *p = map_at(NULL, size, prot, flags);
	if (p && !aligned(p, align)) {
		void *below = (void *)((uintptr_t)p & ~(uintptr_t)(align - 1));
		munmap(p, size);
		p = (uintptr_t)below >= ps ? map_at(below, size, prot, flags) : NULL;
		if (p && p != below) {
			munmap(p, size);
			p = NULL;
		}
		if (!p) {
			size_t span = size + align - ps;
			/* The over-map is address space only; what stays is mapped again over it
			 * with the caller's accounting: an accounted over-map of a large alignment
			 * would be refused for the alignment's sake (the test guests refused the
			 * alignments above their memory for blocks of a page). */
			p = map_at(NULL, span, prot, MAP_NORESERVE);
			uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
			if (p && !(flags & MAP_NORESERVE) &&
			    mmap((void *)start, size, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | flags, -1, 0) == MAP_FAILED) {
				munmap(p, span);
				p = NULL;
			}
			if (p) {
				size_t head = start - (uintptr_t)p, tail = span - head - size;
				if (head)
					munmap(p, head);
				if (tail)
					munmap((char *)start + size, tail);
				p = (char *)start;
			}
		}
		if (!p)
			p = map_lower(below, size, align, prot, flags);
	}
	if (p)
		note_aligned(p, align);
	errno = saved_errno_;
	return p;
}

void *np_os_map(size_t size, size_t align)
{
	return map_aligned(size, align, PROT_READ | PROT_WRITE, MAP_NORESERVE);
}

void *np_os_map_accounted(size_t size, size_t align)
{
	return map_aligned(size, align, PROT_READ | PROT_WRITE, 0);
}

void *np_os_reserve(size_t size, size_t align)
{
	return map_aligned(size, align, PROT_NONE, MAP_NORESERVE);
}

int np_os_reserve_readonly_at(void *p, size_t size)
{
	SAVE_ERRNO;
	void *q = mmap(p, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	RETURN_ERRNO(q == MAP_FAILED ? -1 : 0);
}

int np_os_commit(void *p, size_t size)
{
	SAVE_ERRNO;
	RETURN_ERRNO(mprotect(p, size, PROT_READ | PROT_WRITE));
}

int np_os_account(void *p, size_t size)
{
	SAVE_ERRNO;
	void *q = mmap(p, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	RETURN_ERRNO(q == MAP_FAILED ? -1 : 0);
}

int np_os_unmap(void *p, size_t size)
{
	SAVE_ERRNO;
	RETURN_ERRNO(munmap(p, size));
}

int np_os_remap(void *old, size_t old_size, size_t new_size, void *dst)
{
	SAVE_ERRNO;
	void *r = dst == old ? mremap(old, old_size, new_size, 0)
			     : mremap(old, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	int rc = r == MAP_FAILED ? -errno : 0;
	errno = saved_errno_;
	return rc;
}

/* libnuma's calls, once np_os_numa_open found them: each pointer stored (relaxed) before the
 * flag (release), read after it (acquire). Two threads that open at once store the same. */
static struct {
	__typeof__(mbind) *mbind;
	__typeof__(move_pages) *move_pages;
	__typeof__(get_mempolicy) *get_mempolicy;
	__typeof__(set_mempolicy) *set_mempolicy;
} numa;
static bool numa_ready;

#define NUMA_CALL(name) __atomic_load_n(&numa.name, __ATOMIC_RELAXED)

static bool numa_loaded(void)
{
	return __atomic_load_n(&numa_ready, __ATOMIC_ACQUIRE);
}

bool np_os_numa_open(char *why, size_t why_size)
{
	if (numa_loaded())
		return true;
	void *lib = np_os_library_open(NP_NUMA_SONAME, why, why_size);
	if (!lib)
		return false;
	void *m = np_os_library_symbol(lib, "mbind"), *mp = np_os_library_symbol(lib, "move_pages"),
	     *g = np_os_library_symbol(lib, "get_mempolicy"), *sp = np_os_library_symbol(lib, "set_mempolicy");
	if (!m || !mp || !g || !sp) {
		np_os_say(why, why_size, NP_NUMA_SONAME " lacks mbind, move_pages, get_mempolicy or set_mempolicy");
		return false;
	}
	__atomic_store_n(&numa.mbind, (__typeof__(mbind) *)m, __ATOMIC_RELAXED);
	__atomic_store_n(&numa.move_pages, (__typeof__(move_pages) *)mp, __ATOMIC_RELAXED);
	__atomic_store_n(&numa.get_mempolicy, (__typeof__(get_mempolicy) *)g, __ATOMIC_RELAXED);
	__atomic_store_n(&numa.set_mempolicy, (__typeof__(set_mempolicy) *)sp, __ATOMIC_RELAXED);
	__atomic_store_n(&numa_ready, true, __ATOMIC_RELEASE);
	return true;
}

int np_os_set_mempolicy(int mode, const unsigned long *mask, unsigned long maxnode)
{
	SAVE_ERRNO;
	if (!np_os_numa_open(NULL, 0)) /* libnuma's definition is this system call */
		RETURN_ERRNO(syscall(SYS_set_mempolicy, mode, mask, maxnode));
	RETURN_ERRNO(NUMA_CALL(set_mempolicy)(mode, mask, maxnode));
}

int np_os_bind(void *p, size_t size, int node, int policy)
{
	if (policy == NP_BIND_NONE)
		return 0;
	if (!numa_loaded())
		return -ENOSYS;
	SAVE_ERRNO;
	if (node < 0 || node >= NP_OS_NODE_IDS) {
		errno = saved_errno_;
		return -EINVAL;
	}
	unsigned long mask[NP_OS_NODE_IDS / (8 * sizeof(unsigned long))] = {0};
	mask[node / (8 * sizeof(unsigned long))] = 1UL << (node % (8 * sizeof(unsigned long)));
	int mode = (policy == NP_BIND_STRICT ? MPOL_BIND : MPOL_PREFERRED) | MPOL_F_STATIC_NODES;
	RETURN_ERRNO(NUMA_CALL(mbind)(p, size, mode, mask, NP_OS_NODE_IDS + 1, 0));
}

int np_os_unbind(void *p, size_t size)
{
	SAVE_ERRNO;
	if (!numa_loaded()) /* the program bound it by the system call: so is it unbound */
		RETURN_ERRNO(syscall(SYS_mbind, p, size, MPOL_DEFAULT, NULL, 0UL, 0U));
	RETURN_ERRNO(NUMA_CALL(mbind)(p, size, MPOL_DEFAULT, NULL, 0, 0));
}

/* libnuma's definitions are these system calls: the kernel's answer where libnuma cannot be
 * loaded (a program linked -lnumapage -lnuma, whose link dropped libnuma as not needed, on a
 * machine without it) rather than ENOSYS. */
long np_os_program_mbind(void *p, unsigned long len, int mode, const unsigned long *mask, unsigned long maxnode,
			 unsigned flags)
{
	if (!np_os_numa_open(NULL, 0))
		return syscall(SYS_mbind, p, len, mode, mask, maxnode, flags);
	return NUMA_CALL(mbind)(p, len, mode, mask, maxnode, flags);
}

long np_os_program_move_pages(int pid, unsigned long count, void **pages, const int *nodes, int *status, int flags)
{
	if (!np_os_numa_open(NULL, 0))
		return syscall(SYS_move_pages, pid, count, pages, nodes, status, flags);
	return NUMA_CALL(move_pages)(pid, count, pages, nodes, status, flags);
}

bool np_os_same_process(int tid)
{
	int self = (int)getpid();
	if (tid == 0 || tid == self)
		return true;
	SAVE_ERRNO;
	bool same = syscall(SYS_tgkill, self, tid, 0) == 0; /* signal 0: asks, sends nothing */
	errno = saved_errno_;
	return same;
}

int np_os_bind_interleave(void *p, size_t size, const int *nodes, int n)
{
	if (!numa_loaded())
		return -ENOSYS;
	SAVE_ERRNO;
	unsigned long mask[NP_OS_NODE_IDS / (8 * sizeof(unsigned long))] = {0};
	for (int i = 0; i < n; i++) {
		if (nodes[i] < 0 || nodes[i] >= NP_OS_NODE_IDS) {
			errno = saved_errno_;
			return -EINVAL;
		}
		mask[nodes[i] / (8 * sizeof(unsigned long))] |= 1UL << (nodes[i] % (8 * sizeof(unsigned long)));
	}
	RETURN_ERRNO(NUMA_CALL(mbind)(p, size, MPOL_INTERLEAVE | MPOL_F_STATIC_NODES, mask, NP_OS_NODE_IDS + 1, 0));
}

int np_os_nohuge(void *p, size_t size)
{
	SAVE_ERRNO;
	RETURN_ERRNO(madvise(p, size, MADV_NOHUGEPAGE));
}

int np_os_hugepage(void *p, size_t size)
{
	SAVE_ERRNO;
	RETURN_ERRNO(madvise(p, size, MADV_HUGEPAGE));
}

int np_os_purge(void *p, size_t size)
{
	SAVE_ERRNO;
	RETURN_ERRNO(madvise(p, size, MADV_DONTNEED));
}

int np_os_resident(const void *p, size_t size, unsigned char *vec)
{
	SAVE_ERRNO;
	RETURN_ERRNO(mincore((void *)p, size, vec));
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int np_os_populate(void *p, size_t size)
{
	SAVE_ERRNO;
	if (madvise(p, size, MADV_POPULATE_WRITE) == 0) {
		errno = saved_errno_;
		return 0;
	}
	if (errno != EINVAL) { /* EINVAL: a kernel before 5.14; anything else is the answer */
		int rc = -errno;
		errno = saved_errno_;
		return rc;
	}
	errno = saved_errno_;
	/* Touch each page: a write of the zero it already reads as faults it in. */
	size_t ps = np_os_page_size();
	for (size_t off = 0; off < size; off += ps)
		__atomic_store_n((volatile char *)p + off, 0, __ATOMIC_RELAXED);
	return 0;
}

int np_os_nodes_of(void *const *addrs, int n, int *status)
{
	if (!numa_loaded())
		return -ENOSYS;
	SAVE_ERRNO;
	long rc = NUMA_CALL(move_pages)(0, (unsigned long)n, (void **)addrs, NULL, status, 0);
	RETURN_ERRNO(rc);
}

/* Set once the kernel said EINVAL (no CONFIG_ANON_VMA_NAME): every later call would too, one
 * system call per mapping for nothing (625 of them in a large-block workload). */
static int name_unsupported;

int np_os_name(void *p, size_t size, const char *name)
{
	if (__atomic_load_n(&name_unsupported, __ATOMIC_RELAXED))
		return -EINVAL;
	SAVE_ERRNO;
	int rc = prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)p, size, (unsigned long)name) < 0 ? -errno : 0;
	errno = saved_errno_;
	if (rc == -EINVAL)
		__atomic_store_n(&name_unsupported, 1, __ATOMIC_RELAXED);
	return rc;
}

uint64_t np_os_clock_ns(void)
{
	struct timespec ts;
	SAVE_ERRNO;
	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	errno = saved_errno_;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int np_os_mempolicy(int *mode, unsigned long *mask, unsigned long maxnode)
{
	if (!numa_loaded())
		return -ENOSYS;
	SAVE_ERRNO;
	RETURN_ERRNO(NUMA_CALL(get_mempolicy)(mode, mask, maxnode, NULL, 0));
}

int np_os_bound_node(const void *p, int *node)
{
	if (!numa_loaded())
		return -ENOSYS;
	SAVE_ERRNO;
	unsigned long mask[NP_OS_NODE_IDS / (8 * sizeof(unsigned long))] = {0};
	int mode = 0;
	if (NUMA_CALL(get_mempolicy)(&mode, mask, NP_OS_NODE_IDS + 1, (void *)p, MPOL_F_ADDR) != 0) {
		int rc = -errno;
		errno = saved_errno_;
		return rc;
	}
	mode &= 0xff; /* the MPOL_F_* flags ORed in */
	int first = -1, count = 0;
	for (size_t w = 0; w < NP_ARRAY_SIZE(mask); w++)
		if (mask[w]) {
			count += __builtin_popcountl(mask[w]);
			if (first < 0)
				first = (int)(w * 8 * sizeof(unsigned long)) + __builtin_ctzl(mask[w]);
		}
	if (mode == MPOL_DEFAULT || mode == MPOL_LOCAL || (mode == MPOL_PREFERRED && count == 0))
		*node = NP_OS_UNBOUND;
	else if (count == 1 && (mode == MPOL_PREFERRED || mode == MPOL_BIND || mode == MPOL_PREFERRED_MANY))
		*node = first;
	else
		*node = NP_OS_BOUND_MANY;
	return 0;
}

/* glibc 2.35+ registers an rseq area for every thread and says where it is (relative to the
 * thread pointer) and how large (0: not registered, e.g. glibc.pthread.rseq=0). Weak: a C
 * library without them leaves both addresses NULL, and the C library's getcpu answers. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));
#define RSEQ_CPU_ID_OFFSET 4 /* struct rseq: u32 cpu_id_start, then u32 cpu_id */

static inline const char *thread_pointer(void)
{
#if defined(__x86_64__)
	const char *tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp)); /* the TCB's pointer to itself */
	return tp;
#elif defined(__aarch64__)
	return (const char *)__builtin_thread_pointer();
#else
	return NULL;
#endif
}

int np_os_current_cpu(void)
{
	/* The kernel writes cpu_id on every return to user space after a migration: one load,
	 * no system call, cheap enough for every slow path. Negative until registered (or when
	 * registration failed). */
	if (&__rseq_size != NULL && &__rseq_offset != NULL && __rseq_size >= RSEQ_CPU_ID_OFFSET + 4) {
		const char *tp = thread_pointer();
		if (tp) {
			int32_t cpu = __atomic_load_n((const int32_t *)(tp + __rseq_offset + RSEQ_CPU_ID_OFFSET),
						      __ATOMIC_RELAXED);
			if (cpu >= 0)
				return cpu;
		}
	}
	SAVE_ERRNO;
	int cpu = sched_getcpu();
	errno = saved_errno_;
	return cpu;
}

int np_os_current_os_node(void)
{
	SAVE_ERRNO;
	unsigned cpu, node;
	int rc = getcpu(&cpu, &node);
	errno = saved_errno_;
	return rc == 0 ? (int)node : -1;
}

/* The value in kB of the line "Node <n> <key>: <value> kB" of a node's meminfo, or -1. */
static int64_t meminfo_field(const char *buf, const char *key)
{
	size_t klen = strlen(key);
	for (const char *line = buf; *line;) {
		const char *colon = line, *end = line;
		while (*end && *end != '\n')
			end++;
		/* "Node 0 MemFree:   123 kB": the key is the word before the colon. */
		while (colon < end && *colon != ':')
			colon++;
		if (colon < end && (size_t)(colon - line) >= klen && memcmp(colon - klen, key, klen) == 0 &&
		    (colon - line == (ptrdiff_t)klen || colon[-(ptrdiff_t)klen - 1] == ' ')) {
			int64_t v = 0;
			const char *d = colon + 1;
			while (d < end && *d == ' ')
				d++;
			if (d == end || *d < '0' || *d > '9')
				return -1;
			while (d < end && *d >= '0' && *d <= '9' && v < (INT64_MAX - 9) / 10)
				v = v * 10 + (*d++ - '0');
			return v;
		}
		line = *end ? end + 1 : end;
	}
	return -1;
}

/* A directory entry of /sys/devices/system/node: "node<N>" raises *ctx to N (capped). */
static void node_entry(const char *name, void *ctx)
{
	int *max = ctx, id = 0;
	const char *d = name + 4;
	if (strncmp(name, "node", 4) != 0 || *d < '0' || *d > '9')
		return;
	while (*d >= '0' && *d <= '9' && id <= NP_OS_NODE_IDS)
		id = id * 10 + (*d++ - '0');
	if (*d >= '0' && *d <= '9')
		id = NP_OS_NODE_IDS;
	if (!*d || id >= NP_OS_NODE_IDS)
		*max = NP_MAX(*max, NP_MIN(id, NP_OS_NODE_IDS));
}

/* What the last np_os_node_max found: 1 the kernel lists its nodes, 0 not, -1 not looked. */
static int lists_nodes = -1;

bool np_os_lists_nodes(void)
{
	if (__atomic_load_n(&lists_nodes, __ATOMIC_RELAXED) < 0)
		np_os_node_max();
	return __atomic_load_n(&lists_nodes, __ATOMIC_RELAXED) == 1;
}

int np_os_node_max(void)
{
	int max = -1;
	int rc = np_os_list_dir("/sys/devices/system/node", node_entry, &max);
	__atomic_store_n(&lists_nodes, rc >= 0 && max >= 0, __ATOMIC_RELAXED);
	if (rc == -ENOENT)
		return 0; /* a kernel without NUMA */
	if (rc < 0)
		return rc;
	return max < 0 ? -ENOENT : max;
}

/* Reads OS node `node`'s meminfo into buf (NUL-terminated): the first size - 1 bytes, which hold
 * MemTotal (line 1), MemFree (2), Inactive(file) (9), Dirty (13) and Mapped (16). 0 or -errno.
 * No stdio. */
static int read_node_meminfo(int node, char *buf, size_t size)
{
	if (node < 0 || node >= NP_OS_NODE_IDS)
		return -EINVAL;
	char path[64] = "/sys/devices/system/node/node";
	size_t len = strlen(path);
	char digits[8];
	int nd = 0;
	do
		digits[nd++] = (char)('0' + node % 10);
	while ((node /= 10) > 0);
	while (nd > 0)
		path[len++] = digits[--nd];
	memcpy(path + len, "/meminfo", sizeof "/meminfo");
	return np_os_read_small_file(path, buf, size);
}

/* A meminfo field in bytes, 0 when absent. */
static uint64_t meminfo_bytes(const char *buf, const char *key)
{
	int64_t kb = meminfo_field(buf, key);
	return (uint64_t)(kb > 0 ? kb : 0) << 10;
}

int np_os_node_avail(int node, struct np_os_node_mem *m)
{
	char buf[2048];
	int rc = read_node_meminfo(node, buf, sizeof buf);
	if (rc < 0)
		return rc;
	int64_t free_kb = meminfo_field(buf, "MemFree");
	if (free_kb < 0)
		return -EIO;
	*m = (struct np_os_node_mem){.free = (uint64_t)free_kb << 10,
				     .inactive_file = meminfo_bytes(buf, "Inactive(file)"),
				     .mapped = meminfo_bytes(buf, "Mapped"),
				     .dirty = meminfo_bytes(buf, "Dirty")};
	return 0;
}

int np_os_node_reclaim_mode(void)
{
	char buf[16];
	if (np_os_read_small_file("/proc/sys/vm/zone_reclaim_mode", buf, sizeof buf) != 0)
		return 0;
	int mode = 0;
	for (const char *d = buf; *d >= '0' && *d <= '9' && mode < 1000; d++)
		mode = mode * 10 + (*d - '0');
	return mode;
}

int np_os_tid(void)
{
	return (int)syscall(SYS_gettid);
}

int np_os_set_affinity(const int *cpus, int n)
{
	SAVE_ERRNO;
	cpu_set_t set;
	CPU_ZERO(&set);
	for (int i = 0; i < n; i++)
		if (cpus[i] >= 0 && cpus[i] < CPU_SETSIZE)
			CPU_SET(cpus[i], &set);
	RETURN_ERRNO(sched_setaffinity(0, sizeof set, &set));
}

int np_os_affinity(uint64_t mask[NP_OS_CPU_IDS / 64])
{
	SAVE_ERRNO;
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) < 0)
		RETURN_ERRNO(-1);
	errno = saved_errno_;
	if (mask) {
		memset(mask, 0, NP_OS_CPU_IDS / 8);
		for (int c = 0; c < CPU_SETSIZE && c < NP_OS_CPU_IDS; c++)
			if (CPU_ISSET(c, &set))
				mask[c / 64] |= 1ULL << (c % 64);
	}
	return CPU_COUNT(&set);
}
