/*
 * log.c — non-allocating formatter and message output (see log.h). Nothing here calls stdio
 * or malloc, so it is safe inside the allocator, before initialisation and in a forked child.
 */
#include "log.h"

#include <stdint.h>
#include <stdlib.h>

#include "os.h"

int np_log_verbose;

struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_num(struct out *o, unsigned long long v, unsigned base, bool neg, int width, char pad,
		    bool left)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	int len = n + (neg ? 1 : 0);
	if (!left && pad == '0' && neg)
		put(o, '-');
	for (; !left && width > len; width--)
		put(o, pad);
	if (neg && !(pad == '0' && !left))
		put(o, '-');
	while (n)
		put(o, tmp[--n]);
	for (; left && width > len; width--)
		put(o, ' ');
}

size_t np_vformat(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = {buf, size, 0};
	for (const char *f = fmt; *f; f++) {
		if (*f != '%') {
			put(&o, *f);
			continue;
		}
		f++;
		bool left = false;
		char pad = ' ';
		if (*f == '-') {
			left = true;
			f++;
		}
		if (*f == '0') {
			pad = '0';
			f++;
		}
		int width = 0;
		while (*f >= '0' && *f <= '9')
			width = width * 10 + (*f++ - '0');
		int lng = 0;
		bool sz = false;
		while (*f == 'l') {
			lng++;
			f++;
		}
		if (*f == 'z') {
			sz = true;
			f++;
		}
		switch (*f) {
		case 'd':
		case 'i': {
			long long v = sz ? (long long)va_arg(ap, ssize_t)
				 : lng >= 2 ? va_arg(ap, long long)
				 : lng == 1 ? va_arg(ap, long)
					    : va_arg(ap, int);
			put_num(&o, v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v, 10, v < 0,
				width, pad, left);
			break;
		}
		case 'u':
		case 'x': {
			unsigned long long v = sz ? va_arg(ap, size_t)
					  : lng >= 2 ? va_arg(ap, unsigned long long)
					  : lng == 1 ? va_arg(ap, unsigned long)
						     : va_arg(ap, unsigned);
			put_num(&o, v, *f == 'x' ? 16 : 10, false, width, pad, left);
			break;
		}
		case 'p':
			put(&o, '0');
			put(&o, 'x');
			put_num(&o, (uintptr_t)va_arg(ap, void *), 16, false, 0, ' ', false);
			break;
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			int len = 0;
			while (s[len])
				len++;
			for (; !left && width > len; width--)
				put(&o, ' ');
			while (*s)
				put(&o, *s++);
			for (; left && width > len; width--)
				put(&o, ' ');
			break;
		}
		case 'c':
			put(&o, (char)va_arg(ap, int));
			break;
		case '%':
			put(&o, '%');
			break;
		case '\0':
			f--;
			break;
		default:
			put(&o, '%');
			put(&o, *f);
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return o.len < size ? o.len : (size ? size - 1 : 0);
}

size_t np_format(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t n = np_vformat(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

void np_write_all(int fd, const char *buf, size_t len)
{
	np_os_write(fd, buf, len);
}

void np_vmessage(const char *prefix, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n = np_format(buf, sizeof buf, "numapage: %s", prefix);
	n += np_vformat(buf + n, sizeof buf - n - 1, fmt, ap);
	buf[n++] = '\n';
	np_write_all(2, buf, n);
}

void np_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	np_vmessage("warning: ", fmt, ap);
	va_end(ap);
}

void np_verbose(const char *fmt, ...)
{
	if (!np_log_verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	np_vmessage("", fmt, ap);
	va_end(ap);
}

void np_fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	np_vmessage("", fmt, ap);
	va_end(ap);
	abort();
}
