/*
 * log.h — output that never allocates. A tiny printf subset (%s %c %d %i %u %x %p %zu %zd %ld %lu
 * %lld %llu %lx %llx %%, with an optional width and '-' / '0' flags) formatted into a caller's
 * buffer and written with write(2), so messages can be printed from inside malloc, during
 * start-up, and after fork. errno is preserved.
 */
#ifndef NP_LOG_H
#define NP_LOG_H

#include <stdarg.h>
#include <stddef.h>

#include "internal.h"

/* Formats into buf (always NUL-terminated when size > 0); returns the length written. */
size_t np_vformat(char *buf, size_t size, const char *fmt, va_list ap);
size_t np_format(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Writes all of buf to fd, retrying on EINTR and short writes. */
void np_write_all(int fd, const char *buf, size_t len);
/* "numapage: warning: ..." on stderr. Warnings are printed; they are rare by construction. */
void np_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether np_verbose prints: NUMAPAGE_VERBOSE, set by the options (which sit above this file). */
extern int np_log_verbose;
/* Printed only when np_log_verbose (NUMAPAGE_VERBOSE=1). */
void np_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "numapage: " + message on stderr with no prefix word. */
void np_vmessage(const char *prefix, const char *fmt, va_list ap);

#endif /* NP_LOG_H */
