/* json.c — see json.h. */
#include "json.h"

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

void np_json_string(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	fputc('"', out);
	while (*s) {
		unsigned char c = *s;
		if (c == '"' || c == '\\') {
			fprintf(out, "\\%c", c);
			s++;
		} else if (c < 0x20) {
			fprintf(out, "\\u%04x", c);
			s++;
		} else if (c < 0x80) {
			fputc(c, out);
			s++;
		} else {
			int n = utf8_length(s);
			if (n) {
				fwrite(s, 1, (size_t)n, out);
				s += n;
			} else {
				fputs("\\ufffd", out); /* JSON text is UTF-8: the byte is replaced */
				s++;
			}
		}
	}
	fputc('"', out);
}
