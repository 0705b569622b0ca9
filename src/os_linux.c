/*
 * os_linux.c — the Linux implementation of os.h: every system call libnumapage makes.
 * mbind and move_pages come from libnuma's numaif.h. errno is saved and restored around each
 * call, and every failure comes back as a negative errno.
 */
#include "os.h"

#include "options.h"

#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif
#ifndef MPOL_F_STATIC_NODES
#define MPOL_F_STATIC_NODES (1 << 15)
#endif

#define SAVE_ERRNO int saved_errno_ = errno
/* Evaluates rc exactly once (it is the system call). */
#define RETURN_ERRNO(rc)                                      \
	do {                                                  \
		long rc_ = (long)(rc);                        \
		int r_ = rc_ < 0 ? -errno : (int)rc_;         \
		errno = saved_errno_;                         \
		return r_;                                    \
	} while (0)

static size_t page_size;

size_t np_os_page_size(void)
{
	if (NP_UNLIKELY(!page_size)) {
		long ps = sysconf(_SC_PAGESIZE);
		page_size = ps > 0 ? (size_t)ps : 4096;
	}
	return page_size;
}

void *np_os_map(size_t size, size_t align)
{
	SAVE_ERRNO;
	size_t ps = np_os_page_size();
	if (align < ps)
		align = ps;
	if (size + align < size) {
		errno = saved_errno_;
		return NULL;
	}
	/* Over-map by align - page, then trim both ends to the aligned range. */
	size_t span = size + (align > ps ? align - ps : 0);
	char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		errno = saved_errno_;
		return NULL;
	}
	uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	size_t head = start - (uintptr_t)p;
	size_t tail = span - head - size;
	if (head)
		munmap(p, head);
	if (tail)
		munmap((char *)start + size, tail);
	errno = saved_errno_;
	return (void *)start;
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

int np_os_bind(void *p, size_t size, int node, int policy)
{
	if (policy == NP_BIND_NONE)
		return 0;
	SAVE_ERRNO;
	if (node < 0 || node >= 1024) {
		errno = saved_errno_;
		return -EINVAL;
	}
	unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {0};
	mask[node / (8 * sizeof(unsigned long))] = 1UL << (node % (8 * sizeof(unsigned long)));
	int mode = (policy == 1 ? MPOL_BIND : MPOL_PREFERRED) | MPOL_F_STATIC_NODES;
	RETURN_ERRNO(mbind(p, size, mode, mask, 1024 + 1, 0));
}

int np_os_bind_interleave(void *p, size_t size, const int *nodes, int n)
{
	SAVE_ERRNO;
	unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {0};
	for (int i = 0; i < n; i++) {
		if (nodes[i] < 0 || nodes[i] >= 1024) {
			errno = saved_errno_;
			return -EINVAL;
		}
		mask[nodes[i] / (8 * sizeof(unsigned long))] |= 1UL << (nodes[i] % (8 * sizeof(unsigned long)));
	}
	RETURN_ERRNO(mbind(p, size, MPOL_INTERLEAVE | MPOL_F_STATIC_NODES, mask, 1024 + 1, 0));
}

int np_os_nohuge(void *p, size_t size)
{
	SAVE_ERRNO;
	RETURN_ERRNO(madvise(p, size, MADV_NOHUGEPAGE));
}

int np_os_purge(void *p, size_t size)
{
	SAVE_ERRNO;
	RETURN_ERRNO(madvise(p, size, MADV_DONTNEED));
}

int np_os_nodes_of(void *const *addrs, int n, int *status)
{
	SAVE_ERRNO;
	long rc = move_pages(0, (unsigned long)n, (void **)addrs, NULL, status, 0);
	RETURN_ERRNO(rc);
}

int np_os_name(void *p, size_t size, const char *name)
{
	SAVE_ERRNO;
	RETURN_ERRNO(prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)p, size, (unsigned long)name));
}

int np_os_mempolicy(int *mode, unsigned long *mask, unsigned long maxnode)
{
	SAVE_ERRNO;
	RETURN_ERRNO(get_mempolicy(mode, mask, maxnode, NULL, 0));
}

int np_os_current_cpu(void)
{
	SAVE_ERRNO;
	int cpu = sched_getcpu();
	errno = saved_errno_;
	return cpu;
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

int np_os_affinity_count(void)
{
	SAVE_ERRNO;
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) < 0)
		RETURN_ERRNO(-1);
	errno = saved_errno_;
	return CPU_COUNT(&set);
}

int np_os_shm_create(const char *path, size_t size, void **out)
{
	SAVE_ERRNO;
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		RETURN_ERRNO(-1);
	/* The umask may have removed bits: the file is 0600 whatever it says. */
	void *p = MAP_FAILED;
	int rc = fchmod(fd, 0600) < 0 || ftruncate(fd, (off_t)size) < 0 ? -errno : 0;
	if (rc == 0) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			rc = -errno;
	}
	close(fd);
	if (rc) {
		unlink(path);
		errno = saved_errno_;
		return rc;
	}
	*out = p;
	errno = saved_errno_;
	return 0;
}

int np_os_unlink(const char *path)
{
	SAVE_ERRNO;
	RETURN_ERRNO(unlink(path));
}

int np_os_pid(void)
{
	return (int)getpid();
}

unsigned np_os_euid(void)
{
	return (unsigned)geteuid();
}

int np_os_pid_alive(int pid)
{
	SAVE_ERRNO;
	if (pid <= 0) {
		errno = saved_errno_;
		return -EINVAL;
	}
	int rc = kill((pid_t)pid, 0) == 0 ? 1 : errno == EPERM ? 1 : errno == ESRCH ? 0 : -errno;
	errno = saved_errno_;
	return rc;
}

struct np_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

int np_os_list_dir(const char *path, void (*fn)(const char *name, void *ctx), void *ctx)
{
	SAVE_ERRNO;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		RETURN_ERRNO(-1);
	char buf[4096] __attribute__((aligned(8)));
	long n;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
		for (long off = 0; off < n;) {
			struct np_dirent64 *d = (struct np_dirent64 *)(buf + off);
			fn(d->d_name, ctx);
			off += d->d_reclen;
		}
	int rc = n < 0 ? -errno : 0;
	close(fd);
	errno = saved_errno_;
	return rc;
}
