/*
 * os_errno.h — what the two files of the Linux OS layer share (os_linux.c, os_linux_proc.c);
 * nothing else includes it. Every os.h function keeps errno as it found it and reports a
 * failure as a negative errno.
 */
#ifndef NP_OS_ERRNO_H
#define NP_OS_ERRNO_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define SAVE_ERRNO int saved_errno_ = errno
/* Evaluates rc exactly once (it is the system call). */
#define RETURN_ERRNO(rc)                                      \
	do {                                                  \
		long rc_ = (long)(rc);                        \
		int r_ = rc_ < 0 ? -errno : (int)rc_;         \
		errno = saved_errno_;                         \
		return r_;                                    \
	} while (0)

/* text into why (cut to why_size, NUL-terminated): the reason a call of the layer failed, for
 * its caller's message. Nothing when why is NULL or why_size 0. */
static inline void np_os_say(char *why, size_t why_size, const char *text)
{
	if (!why || !why_size)
		return;
	size_t n = strlen(text);
	if (n >= why_size)
		n = why_size - 1;
	memcpy(why, text, n);
	why[n] = '\0';
}

/* The calls the layer makes that the C library makes cancellation points (open, read, write,
 * close, nanosleep, waitpid, getrandom), made through syscall(2), which is none: a thread with a pending
 * cancel request that allocates must come back, not be cancelled halfway with a lock or a
 * flag of ours held (glibc's malloc makes no cancellation point either). Same results and
 * errno as the libc calls. */
static inline int np_nc_open(const char *path, int flags, mode_t mode)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}
static inline ssize_t np_nc_read(int fd, void *buf, size_t n)
{
	return (ssize_t)syscall(SYS_read, fd, buf, n);
}
static inline ssize_t np_nc_write(int fd, const void *buf, size_t n)
{
	return (ssize_t)syscall(SYS_write, fd, buf, n);
}
static inline int np_nc_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}
static inline int np_nc_nanosleep(const struct timespec *ts, struct timespec *rem)
{
	return (int)syscall(SYS_nanosleep, ts, rem);
}
static inline ssize_t np_nc_getrandom(void *buf, size_t n, unsigned flags)
{
	return (ssize_t)syscall(SYS_getrandom, buf, n, flags);
}
static inline pid_t np_nc_waitpid(pid_t pid, int *status, int options)
{
	return (pid_t)syscall(SYS_wait4, pid, status, options, NULL);
}

/* Reads the file at path into buf (NUL-terminated): its first size - 1 bytes, with open and
 * read (no stdio, which allocates): /sys and /proc files. 0 or -errno. In os_linux_proc.c. */
int np_os_read_small_file(const char *path, char *buf, size_t size);

#endif /* NP_OS_ERRNO_H */
