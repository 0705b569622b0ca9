/* json.c — see json.h. */
#include "json.h"

#include <errno.h>
#include <stdbool.h>

/* The length of the well-formed UTF-8 sequence at s (1-4), or 0 when the bytes there are not
 * one: a lone continuation byte, a sequence cut short, an overlong form, a surrogate, or a
 * code point past U+10FFFF (the table of well-formed sequences of Unicode's chapter 3). */
static int utf8_length(const unsigned char *s)
{
	unsigned char c = s[0];
	int n;
	unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (int k = 2; k < n; k++)
		if (s[k] < 0x80 || s[k] > 0xbf)
			return 0;
	return n;
}

bool np_json_string(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	bool ok = fputc('"', out) != EOF;
	while (*s) {
		unsigned char c = *s;
		if (c == '"' || c == '\\') {
			ok &= fprintf(out, "\\%c", c) >= 0;
			s++;
		} else if (c < 0x20) {
			ok &= fprintf(out, "\\u%04x", c) >= 0;
			s++;
		} else if (c < 0x80) {
			ok &= fputc(c, out) != EOF;
			s++;
		} else {
			int n = utf8_length(s);
			if (n) {
				ok &= fwrite(s, 1, (size_t)n, out) == (size_t)n;
				s += n;
			} else {
				ok &= fputs("\\ufffd", out) != EOF; /* JSON text is UTF-8: the byte is replaced */
				s++;
			}
		}
	}
	return fputc('"', out) != EOF && ok;
}

int np_stdio_answer(FILE *out, bool ok, int saved_errno)
{
	if (fflush(out) == 0 && ok) {
		errno = saved_errno;
		return 0;
	}
	if (!errno)
		errno = EIO;
	return -1;
}

/* The value of the 4 hex digits at s, or -1. */
static long hex4(const char *s)
{
	long v = 0;
	for (int k = 0; k < 4; k++) {
		char c = s[k];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/* Code point cp as UTF-8 into b; returns the length. */
static int utf8_encode(unsigned long cp, char *b)
{
	if (cp < 0x80) {
		b[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12);
		b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	b[0] = (char)(0xf0 | cp >> 18);
	b[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	b[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	b[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* One escape after its backslash (s points at the letter): its character into b, its
 * length returned; *used: the source characters it took. */
static int unescape(const char *s, char *b, int *used)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	*used = 1;
	for (int k = 0; from[k]; k++)
		if (*s == from[k]) {
			b[0] = to[k];
			return 1;
		}
	long cp = *s == 'u' ? hex4(s + 1) : -1;
	if (cp < 0)
		return utf8_encode(0xfffd, b); /* not an escape JSON has */
	*used = 5;
	if (cp >= 0xd800 && cp <= 0xdbff && s[5] == '\\' && s[6] == 'u') {
		long lo = hex4(s + 7);
		if (lo >= 0xdc00 && lo <= 0xdfff) {
			*used = 11;
			return utf8_encode(0x10000 + ((unsigned long)(cp - 0xd800) << 10) + (unsigned long)(lo - 0xdc00), b);
		}
	}
	if (cp >= 0xd800 && cp <= 0xdfff)
		cp = 0xfffd; /* a lone surrogate is no character */
	return utf8_encode((unsigned long)cp, b);
}

size_t np_json_read_string(const char **pc, char *out, size_t size)
{
	const char *s = *pc;
	size_t n = 0;
	bool full = size == 0;
	while (*s && *s != '"') {
		char b[4];
		int len = 1, used = 1;
		if (*s == '\\' && s[1]) {
			len = unescape(s + 1, b, &used);
			used++;
		} else {
			/* A character written as it is: all its bytes, or one byte that is none. */
			int clen = (unsigned char)*s >= 0x80 ? utf8_length((const unsigned char *)s) : 1;
			len = used = clen ? clen : 1;
			for (int k = 0; k < len; k++)
				b[k] = s[k];
		}
		/* Whole characters only: one that does not fit ends the copy, not the scan. */
		if (!full && n + (size_t)len < size) {
			for (int k = 0; k < len; k++)
				out[n++] = b[k];
		} else {
			full = true;
		}
		s += used;
	}
	if (size)
		out[n] = '\0';
	*pc = *s == '"' ? s + 1 : s;
	return n;
}
