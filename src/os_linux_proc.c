/*
 * os_linux_proc.c — the Linux implementation of os.h, process level: shared-memory files, the
 * process's identity and privileges, randomness, isolation in a child process, writes, the
 * C library's CPU and memory counts, directory listing. Memory and NUMA are os_linux.c's.
 */
#include "os.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "os_errno.h"

FILE *np_os_create_report(const char *path, bool exclusive)
{
	/* Not blocking in the open: a FIFO at path with no reader held the exiting program for
	 * good (ENXIO now); once open, writes block as they should (/dev/stderr, a pipe). */
	int fd = np_nc_open(path, O_WRONLY | O_CREAT | (exclusive ? O_EXCL : O_TRUNC) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			    0666);
	if (fd < 0)
		return NULL;
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		np_nc_close(fd);
		errno = e;
	}
	return f;
}

/* The file's space, taken before anything is written through a mapping of it: a file only
 * truncated to its size has none, and the first write to a page that a full file system (a full
 * /dev/shm) cannot back raises SIGBUS. Zeros written where fallocate is not supported. */
static int reserve_space(int fd, size_t size)
{
	int rc;
	while ((rc = fallocate(fd, 0, 0, (off_t)size)) != 0 && errno == EINTR)
		; /* tmpfs gives up with EINTR when a signal is pending */
	if (rc == 0)
		return 0;
	/* No room is an answer; any other refusal (no support, a seccomp filter) gets zeros. */
	if (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)
		return -errno;
	static const char zeros[512];
	for (size_t off = 0; off < size;) {
		size_t n = size - off < sizeof zeros ? size - off : sizeof zeros;
		ssize_t w = pwrite(fd, zeros, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -ENOSPC;
		off += (size_t)w;
	}
	return 0;
}

int np_os_shm_create(const char *path, size_t size, void **out, uint64_t *ino)
{
	SAVE_ERRNO;
	/* A file grown past RLIMIT_FSIZE raises SIGXFSZ, which kills the process by default (`ulimit
	 * -f`, as sandboxes set it): no file then, before one is made. */
	struct rlimit lim;
	if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < size) {
		errno = saved_errno_;
		return -EFBIG;
	}
	int fd = np_nc_open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		RETURN_ERRNO(-1);
	/* The umask may have removed bits: the file is 0600 whatever it says (set only where it is
	 * not, a system call less at most starts). */
	void *p = MAP_FAILED;
	struct stat st;
	int rc = fstat(fd, &st) < 0 || ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0) ? -errno
												: reserve_space(fd, size);
	if (rc == 0) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			rc = -errno;
	}
	np_nc_close(fd);
	if (rc) {
		unlink(path);
		errno = saved_errno_;
		return rc;
	}
	*out = p;
	*ino = (uint64_t)st.st_ino;
	errno = saved_errno_;
	return 0;
}

bool np_os_on_signal_stack(void)
{
	SAVE_ERRNO;
	stack_t ss;
	bool on = sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
	errno = saved_errno_;
	return on;
}

int np_os_unlink(const char *path)
{
	SAVE_ERRNO;
	RETURN_ERRNO(unlink(path));
}

/* 0 when st is a regular file owned by uid and (ino not 0) the file of inode ino, else -EPERM:
 * the rule of every *_own call. */
static int own_status(const struct stat *st, unsigned uid, uint64_t ino)
{
	return S_ISREG(st->st_mode) && st->st_uid == (uid_t)uid && (!ino || (uint64_t)st->st_ino == ino) ? 0 : -EPERM;
}

/* own_status of path itself (a symbolic link is not followed), or -errno. */
static int own_file(const char *path, unsigned uid, uint64_t ino)
{
	SAVE_ERRNO;
	struct stat st;
	if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) != 0)
		RETURN_ERRNO(-1);
	errno = saved_errno_;
	return own_status(&st, uid, ino);
}

int np_os_unlink_own(const char *path, unsigned uid, uint64_t ino)
{
	int rc = own_file(path, uid, ino);
	return rc ? rc : np_os_unlink(path);
}

int np_os_rename_own(const char *path, const char *to, unsigned uid, uint64_t ino)
{
	int rc = own_file(path, uid, ino);
	if (rc)
		return rc;
	SAVE_ERRNO;
	if (renameat2(AT_FDCWD, path, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		RETURN_ERRNO(-1);
	/* A file system without RENAME_NOREPLACE: a second name, which link refuses to replace,
	 * then the first one gone. */
	errno = saved_errno_;
	if (link(path, to) != 0)
		RETURN_ERRNO(-1);
	return np_os_unlink(path);
}

int np_os_zero_own(const char *path, unsigned uid, uint64_t ino, size_t n)
{
	SAVE_ERRNO;
	int fd = np_nc_open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd < 0)
		RETURN_ERRNO(-1);
	struct stat st;
	int rc = fstat(fd, &st) != 0 ? -errno : own_status(&st, uid, ino);
	static const char zeros[64];
	for (size_t off = 0; rc == 0 && off < n;) {
		ssize_t w = pwrite(fd, zeros, NP_MIN(n - off, sizeof zeros), (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			rc = w < 0 ? -errno : -EIO;
		else
			off += (size_t)w;
	}
	np_nc_close(fd);
	errno = saved_errno_;
	return rc;
}

long np_os_read_own(const char *path, unsigned uid, void *buf, size_t size, uint64_t *ino)
{
	SAVE_ERRNO;
	int fd = np_nc_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd < 0)
		RETURN_ERRNO(-1);
	struct stat st;
	long rc;
	if (fstat(fd, &st) != 0)
		rc = -errno;
	else if ((rc = own_status(&st, uid, 0)) == 0) {
		ssize_t n = np_nc_read(fd, buf, size); /* a regular file: all of it that is there */
		rc = n < 0 ? -errno : (long)n;
		if (ino)
			*ino = (uint64_t)st.st_ino;
	}
	np_nc_close(fd);
	errno = saved_errno_;
	return rc;
}

uint64_t np_os_pid_ns(void)
{
	SAVE_ERRNO;
	struct stat st;
	uint64_t ino = stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
	errno = saved_errno_;
	return ino;
}

int np_os_read_small_file(const char *path, char *buf, size_t size)
{
	SAVE_ERRNO;
	int fd = np_nc_open(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		RETURN_ERRNO(-1);
	size_t have = 0;
	long n;
	while (have < size - 1 && (n = np_nc_read(fd, buf + have, size - 1 - have)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		have += (size_t)n;
	}
	np_nc_close(fd);
	errno = saved_errno_;
	buf[have] = 0;
	return 0;
}

uint64_t np_os_start_time(void)
{
	char buf[1024];
	if (np_os_read_small_file("/proc/self/stat", buf, sizeof buf) != 0)
		return 0;
	/* After the command in parentheses (which may hold both and spaces): the state is field
	 * 3, the start time field 22. */
	char *p = strrchr(buf, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return 0;
	uint64_t t = 0;
	for (p++; *p >= '0' && *p <= '9'; p++)
		t = t * 10 + (uint64_t)(*p - '0');
	return t;
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

bool np_os_is_secure(void)
{
	return getauxval(AT_SECURE) != 0;
}

size_t np_os_address_limit(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
		return 0;
	return r.rlim_cur ? (size_t)r.rlim_cur : 1;
}

void np_os_random(void *buf, size_t n)
{
	SAVE_ERRNO;
	char *out = buf;
	size_t got = 0;
	while (got < n) {
		ssize_t r = np_nc_getrandom(out + got, n - got, GRND_NONBLOCK);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got < n) {
		/* No getrandom (old kernel, seccomp) or no entropy yet: the 16 bytes the kernel put
		 * on our stack at exec, stretched with the clock and where things were mapped. */
		const uint64_t *at = (const uint64_t *)getauxval(AT_RANDOM);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t seed = (at ? at[0] ^ np_mix64(at[1]) : 0) ^
				np_mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32)) ^
				np_mix64((uint64_t)(uintptr_t)buf ^ (uint64_t)(uintptr_t)&seed);
		for (; got < n; got++) {
			seed = np_mix64(seed + 0x9e3779b97f4a7c15ULL);
			out[got] ^= (char)seed;
		}
	}
	errno = saved_errno_;
}

int np_os_file_info(const char *path, uint64_t *size)
{
	SAVE_ERRNO;
	struct stat st;
	if (stat(path, &st) < 0)
		RETURN_ERRNO(-1);
	errno = saved_errno_;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	*size = (uint64_t)st.st_size;
	return 0;
}

void *np_os_map_shared(size_t size)
{
	SAVE_ERRNO;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	errno = saved_errno_;
	return p == MAP_FAILED ? NULL : p;
}

void np_os_sleep_ns(long ns)
{
	SAVE_ERRNO;
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
	while (np_nc_nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	errno = saved_errno_;
}

/* The data field of /proc/self/statm (pages), or 0 when it cannot be read. No stdio. */
static uint64_t data_pages(void)
{
	char buf[256];
	int fd = np_nc_open("/proc/self/statm", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	ssize_t n = np_nc_read(fd, buf, sizeof buf - 1);
	np_nc_close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	uint64_t field[7] = {0};
	int k = 0;
	for (const char *c = buf; *c && k < 7; c++) {
		if (*c >= '0' && *c <= '9')
			field[k] = field[k] * 10 + (uint64_t)(*c - '0');
		else if (*c == ' ')
			k++;
	}
	return k >= 5 ? field[5] : 0;
}

int np_os_isolate(int (*fn)(void *), void *arg, size_t mem_limit, int timeout_ms, int *sig)
{
	SAVE_ERRNO;
	/* clone with no flags and exit signal 0: a fork that runs no pthread_atfork handler
	 * (the program's would run inside our malloc) and whose end raises no SIGCHLD (a
	 * handler of the program's could reap it); only waitpid with __WALL sees it. */
	long pid = syscall(SYS_clone, 0UL, NULL, NULL, NULL, NULL);
	if (pid < 0)
		RETURN_ERRNO(-1);
	if (pid == 0) {
		/* mem_limit more than the data the child already has (a sanitizer runtime maps
		 * terabytes of shadow up front): /proc/self/statm's sixth field, in pages. */
		uint64_t data = data_pages();
		struct rlimit lim;
		if (data && getrlimit(RLIMIT_DATA, &lim) == 0) {
			uint64_t want = data * np_os_page_size() + mem_limit;
			if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur > want) {
				lim.rlim_cur = want;
				setrlimit(RLIMIT_DATA, &lim);
			}
		}
		_exit(fn(arg) & 0xff);
	}
	/* Poll: the child usually ends within milliseconds; sleeps grow to 10 ms. */
	long waited = 0, step = 100000, limit = (long)timeout_ms * 1000000L;
	int status = 0, rc;
	for (;;) {
		long r = np_nc_waitpid((pid_t)pid, &status, __WALL | WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			rc = -errno; /* reaped behind our back: the result is unknown */
			kill((pid_t)pid, SIGKILL);
			errno = saved_errno_;
			return rc == -ECHILD ? -ESRCH : rc;
		}
		if (waited >= limit) {
			kill((pid_t)pid, SIGKILL);
			while (np_nc_waitpid((pid_t)pid, &status, __WALL) < 0 && errno == EINTR)
				;
			errno = saved_errno_;
			return -ETIMEDOUT;
		}
		np_os_sleep_ns(step);
		waited += step;
		step = NP_MIN(step * 2, 10000000L);
	}
	if (WIFSIGNALED(status)) {
		*sig = WTERMSIG(status);
		rc = -ECHILD;
	} else {
		rc = WEXITSTATUS(status);
	}
	errno = saved_errno_;
	return rc;
}

void np_os_write(int fd, const char *buf, size_t len)
{
	SAVE_ERRNO;
	while (len) {
		ssize_t n = np_nc_write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		buf += n;
		len -= (size_t)n;
	}
	errno = saved_errno_;
}

void np_os_yield(void)
{
	SAVE_ERRNO;
	sched_yield();
	errno = saved_errno_;
}

int np_os_cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	return n > 0 && n < (1L << 30) ? (int)n : 0;
}

uint64_t np_os_memory_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	return pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
}

int np_os_mem_free(uint64_t *bytes)
{
	SAVE_ERRNO;
	struct sysinfo si;
	int rc = sysinfo(&si) == 0 ? 0 : -errno;
	errno = saved_errno_;
	if (rc == 0)
		*bytes = (uint64_t)si.freeram * (si.mem_unit ? si.mem_unit : 1);
	return rc;
}

struct np_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

void *np_os_library_open(const char *soname, char *why, size_t why_size)
{
	SAVE_ERRNO;
	void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!lib) {
		const char *e = dlerror();
		np_os_say(why, why_size, e ? e : "");
	}
	errno = saved_errno_;
	return lib;
}

void *np_os_library_symbol(void *lib, const char *name)
{
	SAVE_ERRNO;
	void *p = dlsym(lib, name);
	errno = saved_errno_;
	return p;
}

int np_os_list_dir(const char *path, void (*fn)(const char *name, void *ctx), void *ctx)
{
	SAVE_ERRNO;
	int fd = np_nc_open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
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
	np_nc_close(fd);
	errno = saved_errno_;
	return rc;
}
