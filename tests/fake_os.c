/*
 * fake_os.c — the test double of src/os.h (see fake_os.h). Linked into unit tests instead of
 * src/os_linux.c. Real mmap/munmap keep memory usable; binds are only recorded.
 */
#include "fake_os.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "os.h"

#define MAX_BINDS 65536

struct bind_rec {
	uintptr_t start, end;
	int node; /* -2: interleave */
	int nnodes;
	int nodes[8];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct bind_rec binds[MAX_BINDS];
static int nbinds;
static int fail_node = -1, fail_errno;
static long maps_left = -1;
static long commits_left = -1, n_committed; /* np_os_commit: calls allowed (-1: any), bytes */
static long n_binds, n_maps, n_unmaps, n_purged;
static long n_hugepage, n_hugepage_touched; /* np_os_hugepage calls, and those too late */
static long n_nohuge, n_nohuge_touched;     /* np_os_nohuge calls, and those too late */
static int purge_error; /* np_fake_os_fail_purge */
static __thread int fake_cpu;
static __thread int fake_os_node = -1;
/* Memory of each OS node as np_os_node_avail reports it (-1: the file does not exist), where
 * binds to a node land (spill_to: the node the kernel "put" them on instead), and the memory
 * policy every thread reports. */
static int64_t node_avail[1024];
static int64_t node_file[1024][3]; /* Inactive(file), Mapped, Dirty bytes */
static int reclaim_mode;          /* zone_reclaim_mode */
static bool avail_set;
static int spill_to[1024]; /* the node + 1; 0: none */
static int policy_mode;
static unsigned long policy_mask[16];
static long n_avail_reads;
static long n_free_reads, n_mode_reads;
static bool mem_free_fails;
static bool lists_nodes = true; /* np_os_lists_nodes */

void np_fake_os_set_cpu(int cpu) { fake_cpu = cpu; }
void np_fake_os_set_os_node(int node) { fake_os_node = node; }

void np_fake_os_fail_bind(int node, int neg_errno)
{
	pthread_mutex_lock(&lock);
	fail_node = neg_errno ? node : -1;
	fail_errno = neg_errno;
	pthread_mutex_unlock(&lock);
}

void np_fake_os_fail_map_after(long n)
{
	__atomic_store_n(&maps_left, n, __ATOMIC_SEQ_CST);
}

void np_fake_os_fail_commit_after(long n)
{
	__atomic_store_n(&commits_left, n, __ATOMIC_SEQ_CST);
}

long np_fake_os_committed_bytes(void) { return __atomic_load_n(&n_committed, __ATOMIC_SEQ_CST); }

long np_fake_os_binds(void) { return __atomic_load_n(&n_binds, __ATOMIC_SEQ_CST); }
static int last_bind_policy = -1;
int np_fake_os_last_bind_policy(void) { return __atomic_load_n(&last_bind_policy, __ATOMIC_SEQ_CST); }
long np_fake_os_maps(void) { return __atomic_load_n(&n_maps, __ATOMIC_SEQ_CST); }
long np_fake_os_unmaps(void) { return __atomic_load_n(&n_unmaps, __ATOMIC_SEQ_CST); }
long np_fake_os_purged_bytes(void) { return __atomic_load_n(&n_purged, __ATOMIC_SEQ_CST); }

static uint64_t fake_pid_ns = 4026531836u; /* the initial namespace's */

void np_fake_os_reset(void)
{
	__atomic_store_n(&fake_pid_ns, 4026531836u, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&lock);
	nbinds = 0;
	fail_node = -1;
	fail_errno = 0;
	n_binds = n_maps = n_unmaps = n_purged = 0;
	n_hugepage = n_hugepage_touched = 0;
	n_nohuge = n_nohuge_touched = 0;
	purge_error = 0;
	maps_left = -1;
	commits_left = -1;
	n_committed = 0;
	for (int i = 0; i < 1024; i++) {
		node_avail[i] = -1;
		memset(node_file[i], 0, sizeof node_file[i]);
		spill_to[i] = 0;
	}
	avail_set = false;
	reclaim_mode = 0;
	n_avail_reads = 0;
	n_free_reads = 0;
	mem_free_fails = false;
	lists_nodes = true;
	n_mode_reads = 0;
	policy_mode = 0;
	memset(policy_mask, 0, sizeof policy_mask);
	pthread_mutex_unlock(&lock);
	np_fake_os_set_address_limit(0);
}

static int lookup_locked(uintptr_t a)
{
	for (int i = nbinds - 1; i >= 0; i--)
		if (a >= binds[i].start && a < binds[i].end) {
			if (binds[i].node != -2)
				return binds[i].node;
			/* As the kernel: the n'th node of the mask for the absolute page number. */
			uint32_t page = (uint32_t)(a / np_os_page_size());
			return binds[i].nodes[page % (uint32_t)binds[i].nnodes];
		}
	return -1;
}

int np_fake_os_bound_node(const void *p)
{
	pthread_mutex_lock(&lock);
	int n = lookup_locked((uintptr_t)p);
	pthread_mutex_unlock(&lock);
	return n;
}

size_t np_os_page_size(void)
{
	static size_t ps;
	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

static void *next_at;

void np_fake_os_map_next_at(void *addr)
{
	__atomic_store_n(&next_at, addr, __ATOMIC_SEQ_CST);
}

void *np_os_map(size_t size, size_t align)
{
	int saved = errno;
	long left = __atomic_load_n(&maps_left, __ATOMIC_SEQ_CST);
	if (left == 0)
		return NULL;
	if (left > 0)
		__atomic_fetch_sub(&maps_left, 1, __ATOMIC_SEQ_CST);
	void *at = __atomic_exchange_n(&next_at, NULL, __ATOMIC_SEQ_CST);
	if (at) {
		void *q = mmap(at, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
			       -1, 0);
		errno = saved;
		if (q == MAP_FAILED || q != at) {
			if (q != MAP_FAILED)
				munmap(q, size);
			return NULL;
		}
		__atomic_fetch_add(&n_maps, 1, __ATOMIC_SEQ_CST);
		return q;
	}
	size_t ps = np_os_page_size();
	if (align < ps)
		align = ps;
	size_t span = size + align - ps;
	char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		errno = saved;
		return NULL;
	}
	uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	if (start > (uintptr_t)p)
		munmap(p, start - (uintptr_t)p);
	size_t tail = span - (start - (uintptr_t)p) - size;
	if (tail)
		munmap((char *)start + size, tail);
	__atomic_fetch_add(&n_maps, 1, __ATOMIC_SEQ_CST);
	errno = saved;
	return (void *)start;
}

void *np_os_map_accounted(size_t size, size_t align)
{
	return np_os_map(size, align);
}

/* A reservation: a real one (PROT_NONE), so that a use of a part never committed faults. */
void *np_os_reserve(size_t size, size_t align)
{
	char *p = np_os_map(size, align);
	if (p && mprotect(p, size, PROT_NONE) != 0) {
		np_os_unmap(p, size);
		return NULL;
	}
	return p;
}

/* As the real one: the table's pages replaced by read-only zeros. */
int np_os_reserve_readonly_at(void *p, size_t size)
{
	int saved = errno;
	void *q = mmap(p, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	int rc = q == MAP_FAILED ? -errno : 0;
	errno = saved;
	return rc;
}

int np_os_commit(void *p, size_t size)
{
	long left = __atomic_load_n(&commits_left, __ATOMIC_SEQ_CST);
	if (left == 0)
		return -ENOMEM;
	if (left > 0)
		__atomic_fetch_sub(&commits_left, 1, __ATOMIC_SEQ_CST);
	int saved = errno;
	int rc = mprotect(p, size, PROT_READ | PROT_WRITE) ? -errno : 0;
	errno = saved;
	if (rc == 0)
		__atomic_fetch_add(&n_committed, (long)size, __ATOMIC_SEQ_CST);
	return rc;
}

int np_os_account(void *p, size_t size)
{
	(void)p;
	(void)size;
	return 0;
}

int np_os_unmap(void *p, size_t size)
{
	int saved = errno;
	int rc = munmap(p, size) ? -errno : 0;
	__atomic_fetch_add(&n_unmaps, 1, __ATOMIC_SEQ_CST);
	errno = saved;
	return rc;
}

int np_os_remap(void *old, size_t old_size, size_t new_size, void *dst)
{
	int saved = errno;
	void *r = dst == old ? mremap(old, old_size, new_size, 0)
			     : mremap(old, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	int rc = r == MAP_FAILED ? -errno : 0;
	errno = saved;
	return rc;
}

static int record(void *p, size_t size, int node, const int *nodes, int n)
{
	pthread_mutex_lock(&lock);
	if (node >= 0 && node == fail_node) {
		int e = fail_errno;
		pthread_mutex_unlock(&lock);
		return e;
	}
	if (nbinds == MAX_BINDS) { /* compact: keep the newest half */
		memmove(binds, binds + MAX_BINDS / 2, sizeof(binds[0]) * (MAX_BINDS / 2));
		nbinds = MAX_BINDS / 2;
	}
	struct bind_rec *b = &binds[nbinds++];
	b->start = (uintptr_t)p;
	b->end = (uintptr_t)p + size;
	b->node = node >= 0 && node < 1024 && spill_to[node] ? spill_to[node] - 1 : node;
	b->nnodes = n < 8 ? n : 8;
	for (int i = 0; i < b->nnodes; i++)
		b->nodes[i] = nodes[i];
	n_binds++;
	pthread_mutex_unlock(&lock);
	return 0;
}

int np_os_bind(void *p, size_t size, int node, int policy)
{
	if (policy == NP_BIND_NONE)
		return 0;
	__atomic_store_n(&last_bind_policy, policy, __ATOMIC_SEQ_CST);
	return record(p, size, node, NULL, 0);
}

int np_os_unbind(void *p, size_t size)
{
	return record(p, size, -1, NULL, 0);
}

int np_os_bind_interleave(void *p, size_t size, const int *nodes, int n)
{
	if (n <= 0)
		return -EINVAL;
	return record(p, size, -2, nodes, n);
}

/* Counts an advice on [p, p + size): in *calls, and in *late when any page of the range (its
 * first 64 MiB) is resident already. */
static void count_advice(void *p, size_t size, long *calls, long *late)
{
	unsigned char vec[16384];
	size_t pages = size / 4096 < sizeof vec ? size / 4096 : sizeof vec;
	__atomic_fetch_add(calls, 1, __ATOMIC_SEQ_CST);
	if (pages && mincore(p, pages * 4096, vec) == 0)
		for (size_t i = 0; i < pages; i++)
			if (vec[i] & 1) {
				__atomic_fetch_add(late, 1, __ATOMIC_SEQ_CST);
				break;
			}
}

int np_os_nohuge(void *p, size_t size)
{
	count_advice(p, size, &n_nohuge, &n_nohuge_touched);
	return 0;
}

int np_os_hugepage(void *p, size_t size)
{
	count_advice(p, size, &n_hugepage, &n_hugepage_touched);
	return 0;
}

long np_fake_os_nohuges(long *touched)
{
	if (touched)
		*touched = __atomic_load_n(&n_nohuge_touched, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&n_nohuge, __ATOMIC_SEQ_CST);
}

long np_fake_os_hugepages(long *touched)
{
	if (touched)
		*touched = __atomic_load_n(&n_hugepage_touched, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&n_hugepage, __ATOMIC_SEQ_CST);
}

void (*np_fake_os_purge_hook)(void);
void np_fake_os_fail_purge(int neg_errno) { purge_error = neg_errno; }

int np_os_purge(void *p, size_t size)
{
	if (np_fake_os_purge_hook)
		np_fake_os_purge_hook();
	if (purge_error) /* as madvise(MADV_DONTNEED) of locked pages: nothing given back */
		return purge_error;
	int saved = errno;
	int rc = madvise(p, size, MADV_DONTNEED) ? -errno : 0;
	__atomic_fetch_add(&n_purged, (long)size, __ATOMIC_SEQ_CST);
	errno = saved;
	return rc;
}

int np_os_resident(const void *p, size_t size, unsigned char *vec)
{
	int saved = errno;
	int rc = mincore((void *)p, size, vec) ? -errno : 0;
	errno = saved;
	return rc;
}

static long n_populated;
long np_fake_os_populated(void) { return __atomic_load_n(&n_populated, __ATOMIC_SEQ_CST); }

int np_os_populate(void *p, size_t size)
{
	(void)p;
	__atomic_fetch_add(&n_populated, (long)size, __ATOMIC_SEQ_CST);
	return 0;
}

int np_os_nodes_of(void *const *addrs, int n, int *status)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < n; i++) {
		int node = lookup_locked((uintptr_t)addrs[i]);
		status[i] = node >= 0 ? node : -ENOENT;
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

int np_os_name(void *p, size_t size, const char *name)
{
	(void)p, (void)size, (void)name;
	return 0;
}

int np_os_bound_node(const void *p, int *node)
{
	pthread_mutex_lock(&lock);
	int n = NP_OS_UNBOUND;
	for (int i = nbinds - 1; i >= 0; i--)
		if ((uintptr_t)p >= binds[i].start && (uintptr_t)p < binds[i].end) {
			n = binds[i].node != -2 ? binds[i].node : NP_OS_BOUND_MANY;
			break;
		}
	pthread_mutex_unlock(&lock);
	*node = n;
	return 0;
}

int np_os_mempolicy(int *mode, unsigned long *mask, unsigned long maxnode)
{
	pthread_mutex_lock(&lock);
	*mode = policy_mode;
	if (mask) {
		size_t words = (maxnode + 63) / 64;
		memset(mask, 0, words * sizeof *mask);
		for (size_t w = 0; w < words && w < 16; w++)
			mask[w] = policy_mask[w];
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

/* The fake's NUMA calls are always there. */
bool np_os_numa_open(char *why, size_t why_size)
{
	(void)why, (void)why_size;
	return true;
}

int np_os_set_mempolicy(int mode, const unsigned long *mask, unsigned long maxnode)
{
	pthread_mutex_lock(&lock);
	policy_mode = mode;
	memset(policy_mask, 0, sizeof policy_mask);
	for (size_t w = 0; mask && w < (maxnode + 63) / 64 && w < 16; w++)
		policy_mask[w] = mask[w];
	pthread_mutex_unlock(&lock);
	return 0;
}

void np_fake_os_set_mempolicy(int mode, const int *nodes, int n)
{
	unsigned long mask[16] = {0};
	for (int i = 0; i < n; i++)
		mask[nodes[i] / 64] |= 1UL << (nodes[i] % 64);
	np_os_set_mempolicy(mode, mask, 16 * 64);
}

void np_fake_os_set_node_avail(int node, int64_t bytes)
{
	pthread_mutex_lock(&lock);
	node_avail[node] = bytes;
	avail_set = true;
	pthread_mutex_unlock(&lock);
}

long np_fake_os_avail_reads(void) { return __atomic_load_n(&n_avail_reads, __ATOMIC_SEQ_CST); }

void np_fake_os_spill(int node, int to)
{
	pthread_mutex_lock(&lock);
	spill_to[node] = to + 1;
	pthread_mutex_unlock(&lock);
}

int np_os_node_avail(int node, struct np_os_node_mem *m)
{
	pthread_mutex_lock(&lock);
	n_avail_reads++;
	/* Nothing set: every node has plenty (as a test machine with room would say). */
	int64_t v = !avail_set ? INT64_MAX / 2 : node >= 0 && node < 1024 ? node_avail[node] : -1;
	bool known = avail_set && node >= 0 && node < 1024;
	*m = (struct np_os_node_mem){0};
	if (known) {
		m->inactive_file = (uint64_t)node_file[node][0];
		m->mapped = (uint64_t)node_file[node][1];
		m->dirty = (uint64_t)node_file[node][2];
	}
	pthread_mutex_unlock(&lock);
	if (v < 0)
		return -ENOENT;
	m->free = (uint64_t)v;
	return 0;
}

/* The machine's free memory: what the nodes set say, together (a test of one memory node
 * sets that one); plenty when none is set. */
void np_fake_os_fail_mem_free(bool fail) { __atomic_store_n(&mem_free_fails, fail, __ATOMIC_SEQ_CST); }

int np_os_mem_free(uint64_t *bytes)
{
	if (__atomic_load_n(&mem_free_fails, __ATOMIC_SEQ_CST))
		return -EPERM;
	pthread_mutex_lock(&lock);
	n_free_reads++;
	int64_t sum = 0;
	for (int i = 0; avail_set && i < 1024; i++)
		sum += node_avail[i] > 0 ? node_avail[i] : 0;
	pthread_mutex_unlock(&lock);
	*bytes = avail_set ? (uint64_t)sum : (uint64_t)(INT64_MAX / 2);
	return 0;
}

void np_fake_os_set_node_file(int node, int64_t inactive, int64_t mapped, int64_t dirty)
{
	pthread_mutex_lock(&lock);
	if (node >= 0 && node < 1024) {
		node_file[node][0] = inactive;
		node_file[node][1] = mapped;
		node_file[node][2] = dirty;
	}
	pthread_mutex_unlock(&lock);
}

void np_fake_os_set_reclaim_mode(int mode) { __atomic_store_n(&reclaim_mode, mode, __ATOMIC_SEQ_CST); }
int np_os_node_reclaim_mode(void)
{
	__atomic_add_fetch(&n_mode_reads, 1, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&reclaim_mode, __ATOMIC_SEQ_CST);
}
long np_fake_os_free_reads(void) { return __atomic_load_n(&n_free_reads, __ATOMIC_SEQ_CST); }
long np_fake_os_mode_reads(void) { return __atomic_load_n(&n_mode_reads, __ATOMIC_SEQ_CST); }

int np_os_current_cpu(void) { return fake_cpu; }
int np_os_current_os_node(void) { return fake_os_node; }

int np_os_tid(void) { return (int)gettid(); }

static __thread int affinity_n = -1;   /* -1: every CPU id below 1024 */
static __thread int affinity_cpus[64]; /* the ids, when affinity_n >= 0 */
static bool affinity_moves;
static unsigned affinity_delay_us;

void np_fake_os_affinity_moves(bool on, unsigned delay_us)
{
	affinity_moves = on;
	affinity_delay_us = delay_us;
}

int np_os_set_affinity(const int *cpus, int n)
{
	affinity_n = n;
	for (int i = 0; i < n && i < 64; i++)
		affinity_cpus[i] = cpus[i];
	if (affinity_moves && n > 0) {
		/* As the kernel does: the thread runs on one of its new CPUs when the call returns,
		 * and moving it there takes a while. */
		fake_cpu = cpus[0];
		if (affinity_delay_us)
			usleep(affinity_delay_us);
	}
	return 0;
}

int np_os_affinity(uint64_t mask[NP_OS_CPU_IDS / 64])
{
	if (mask) {
		memset(mask, 0, NP_OS_CPU_IDS / 8);
		int n = affinity_n < 0 ? 1024 : affinity_n < 64 ? affinity_n : 64;
		for (int i = 0; i < n; i++) {
			int c = affinity_n < 0 ? i : affinity_cpus[i];
			if (c >= 0 && c < NP_OS_CPU_IDS)
				mask[c / 64] |= 1ULL << (c % 64);
		}
	}
	return affinity_n < 0 ? 1024 : affinity_n;
}

static int shm_fail;

void np_fake_os_fail_shm(int neg_errno)
{
	__atomic_store_n(&shm_fail, neg_errno, __ATOMIC_SEQ_CST);
}

FILE *np_os_create_report(const char *path, bool exclusive)
{
	int fd = open(path, O_WRONLY | O_CREAT | (exclusive ? O_EXCL : O_TRUNC) | O_NOFOLLOW | O_CLOEXEC, 0666);
	return fd < 0 ? NULL : fdopen(fd, "w");
}

int np_os_shm_create(const char *path, size_t size, void **out, uint64_t *ino)
{
	int e = __atomic_load_n(&shm_fail, __ATOMIC_SEQ_CST);
	if (e)
		return e;
	int saved = errno;
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		int rc = -errno;
		errno = saved;
		return rc;
	}
	struct stat st;
	int rc = fchmod(fd, 0600) < 0 || fstat(fd, &st) < 0 || ftruncate(fd, (off_t)size) < 0 ? -errno : 0;
	void *p = rc ? MAP_FAILED : mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!rc && p == MAP_FAILED)
		rc = -errno;
	close(fd);
	if (rc) {
		unlink(path);
	} else {
		*out = p;
		*ino = (uint64_t)st.st_ino;
	}
	errno = saved;
	return rc;
}

int np_os_unlink(const char *path)
{
	int saved = errno;
	int rc = unlink(path) ? -errno : 0;
	errno = saved;
	return rc;
}

int np_os_rename_own(const char *path, const char *to, unsigned uid, uint64_t ino)
{
	struct stat st;
	int saved = errno;
	int rc = fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
	if (!rc && (!S_ISREG(st.st_mode) || st.st_uid != (uid_t)uid || (ino && (uint64_t)st.st_ino != ino)))
		rc = -EPERM;
	if (!rc && renameat2(AT_FDCWD, path, AT_FDCWD, to, RENAME_NOREPLACE) != 0)
		rc = -errno;
	errno = saved;
	return rc;
}

int np_os_zero_own(const char *path, unsigned uid, uint64_t ino, size_t n)
{
	int saved = errno, rc = 0;
	int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0)
		rc = -errno;
	else if (!S_ISREG(st.st_mode) || st.st_uid != (uid_t)uid || (ino && (uint64_t)st.st_ino != ino))
		rc = -EPERM;
	else
		for (size_t i = 0; i < n && rc == 0; i++)
			if (pwrite(fd, "", 1, (off_t)i) != 1)
				rc = -EIO;
	if (fd >= 0)
		close(fd);
	errno = saved;
	return rc;
}

int np_os_unlink_own(const char *path, unsigned uid, uint64_t ino)
{
	struct stat st;
	int saved = errno;
	int rc = fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
	errno = saved;
	if (rc)
		return rc;
	if (!S_ISREG(st.st_mode) || st.st_uid != (uid_t)uid || (ino && (uint64_t)st.st_ino != ino))
		return -EPERM;
	return np_os_unlink(path);
}

int np_os_pid(void) { return (int)getpid(); }
/* Another for every process, the same for one process (as the kernel's start time). */
uint64_t np_os_start_time(void) { return 1000 + (uint64_t)getpid(); }

bool np_os_on_signal_stack(void)
{
	stack_t ss;
	return sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
}

void np_fake_os_set_pid_ns(uint64_t ino) { __atomic_store_n(&fake_pid_ns, ino, __ATOMIC_SEQ_CST); }
uint64_t np_os_pid_ns(void) { return __atomic_load_n(&fake_pid_ns, __ATOMIC_SEQ_CST); }

long np_os_read_own(const char *path, unsigned uid, void *buf, size_t size, uint64_t *ino)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	long rc = fstat(fd, &st) != 0 ? -errno : !S_ISREG(st.st_mode) || st.st_uid != (uid_t)uid ? -EPERM : 0;
	if (rc == 0) {
		ssize_t n = read(fd, buf, size);
		rc = n < 0 ? -errno : (long)n;
		if (ino)
			*ino = (uint64_t)st.st_ino;
	}
	close(fd);
	return rc;
}

unsigned np_os_euid(void) { return (unsigned)geteuid(); }

int np_os_pid_alive(int pid)
{
	if (pid <= 0)
		return -EINVAL;
	int saved = errno;
	int rc = kill((pid_t)pid, 0) == 0 || errno == EPERM ? 1 : errno == ESRCH ? 0 : -errno;
	errno = saved;
	return rc;
}

static bool secure;

void np_fake_os_set_secure(bool on) { __atomic_store_n(&secure, on, __ATOMIC_SEQ_CST); }

bool np_os_is_secure(void) { return __atomic_load_n(&secure, __ATOMIC_SEQ_CST); }

static size_t address_limit;

void np_fake_os_set_address_limit(size_t bytes) { __atomic_store_n(&address_limit, bytes, __ATOMIC_SEQ_CST); }

size_t np_os_address_limit(void) { return __atomic_load_n(&address_limit, __ATOMIC_SEQ_CST); }

void np_os_random(void *buf, size_t n)
{
	/* Deterministic: tests replay the same keys. */
	static uint64_t x = 0x243f6a8885a308d3ULL;
	unsigned char *out = buf;
	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		out[i] = (unsigned char)(x >> 56);
	}
}

int np_os_file_info(const char *path, uint64_t *size)
{
	int saved = errno;
	struct stat st;
	int rc = stat(path, &st) < 0 ? -errno : !S_ISREG(st.st_mode) ? -EINVAL : 0;
	if (rc == 0)
		*size = (uint64_t)st.st_size;
	errno = saved;
	return rc;
}

void *np_os_map_shared(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static int isolate_errno;

void np_fake_os_fail_isolate(int neg_errno) { __atomic_store_n(&isolate_errno, neg_errno, __ATOMIC_SEQ_CST); }

int np_os_isolate(int (*fn)(void *), void *arg, size_t mem_limit, int timeout_ms, int *sig)
{
	/* In the calling process: unit tests exercise the topology logic, not the isolation (the
	 * real library's tests feed hostile inputs through os_linux.c). */
	(void)mem_limit, (void)timeout_ms, (void)sig;
	int e = __atomic_load_n(&isolate_errno, __ATOMIC_SEQ_CST);
	return e ? e : fn(arg) & 0xff;
}

void np_os_write(int fd, const char *buf, size_t len)
{
	int saved = errno;
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		buf += n;
		len -= (size_t)n;
	}
	errno = saved;
}

void np_os_yield(void) { sched_yield(); }

static bool library_fails;

void np_fake_os_fail_library(bool fail) { library_fails = fail; }

/* The real loader: the topology tests run hwloc. */
void *np_os_library_open(const char *soname, char *why, size_t why_size)
{
	if (library_fails) {
		snprintf(why, why_size, "%s: cannot open shared object file (fake)", soname);
		return NULL;
	}
	void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!lib)
		snprintf(why, why_size, "%s", dlerror());
	return lib;
}

static unsigned fake_api_version;

void np_fake_os_library_api_version(unsigned version) { fake_api_version = version; }

static unsigned fake_get_api_version(void) { return fake_api_version; }

void *np_os_library_symbol(void *lib, const char *name)
{
	if (fake_api_version && strcmp(name, "hwloc_get_api_version") == 0)
		return (void *)(uintptr_t)fake_get_api_version;
	return dlsym(lib, name);
}

static int node_max = -1;

void np_fake_os_set_node_max(int node) { node_max = node; }

int np_os_node_max(void) { return node_max; }

void np_fake_os_set_lists_nodes(bool lists) { lists_nodes = lists; }
bool np_os_lists_nodes(void) { return lists_nodes; }

int np_os_cpu_count(void) { return (int)sysconf(_SC_NPROCESSORS_CONF); }

uint64_t np_os_memory_bytes(void) { return (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE); }

/* The real directory: the live-view sweep is tested against real files in /dev/shm. */
int np_os_list_dir(const char *path, void (*fn)(const char *name, void *ctx), void *ctx)
{
	int saved = errno;
	DIR *d = opendir(path);
	if (!d) {
		int rc = -errno;
		errno = saved;
		return rc;
	}
	for (struct dirent *e; (e = readdir(d));)
		fn(e->d_name, ctx);
	closedir(d);
	errno = saved;
	return 0;
}

static uint64_t clock_offset, clock_stopped_at;

void np_fake_os_advance_clock(uint64_t ns) { __atomic_fetch_add(&clock_offset, ns, __ATOMIC_SEQ_CST); }

static uint64_t real_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void np_fake_os_stop_clock(bool stop)
{
	__atomic_store_n(&clock_stopped_at, stop ? real_clock_ns() : 0, __ATOMIC_SEQ_CST);
}

void np_os_sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

uint64_t np_os_clock_ns(void)
{
	uint64_t stopped = __atomic_load_n(&clock_stopped_at, __ATOMIC_SEQ_CST);
	return (stopped ? stopped : real_clock_ns()) + __atomic_load_n(&clock_offset, __ATOMIC_SEQ_CST);
}
