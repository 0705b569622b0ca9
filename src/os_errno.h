/*
 * os_errno.h — what the two files of the Linux OS layer share (os_linux.c, os_linux_proc.c);
 * nothing else includes it. Every os.h function keeps errno as it found it and reports a
 * failure as a negative errno.
 */
#ifndef NP_OS_ERRNO_H
#define NP_OS_ERRNO_H

#include <errno.h>

#define SAVE_ERRNO int saved_errno_ = errno
/* Evaluates rc exactly once (it is the system call). */
#define RETURN_ERRNO(rc)                                      \
	do {                                                  \
		long rc_ = (long)(rc);                        \
		int r_ = rc_ < 0 ? -errno : (int)rc_;         \
		errno = saved_errno_;                         \
		return r_;                                    \
	} while (0)

#endif /* NP_OS_ERRNO_H */
