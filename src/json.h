/*
 * json.h — the one JSON string writer the printers share (statistics and topology output,
 * which run at user request or at exit, so stdio is fine here), and its reader (the tools read
 * the reports back).
 */
#ifndef NP_JSON_H
#define NP_JSON_H

#include <stddef.h>
#include <stdio.h>

/* Writes s as a JSON string literal: quotes, backslashes and control characters escaped, and
 * each byte that is not part of well-formed UTF-8 written as U+FFFD (JSON text is UTF-8). */
void np_json_string(FILE *out, const char *s);
/* Reads the JSON string literal whose first character is at *pc (just past its opening
 * quote) into out, NUL-terminated: escapes decoded, \uXXXX as UTF-8 (a surrogate pair as its
 * character, a lone surrogate or an unknown escape as U+FFFD). What does not fit in size - 1
 * bytes is left out, never part of a character. *pc ends past the closing quote (at the NUL
 * of an unterminated literal). Returns the bytes written. */
size_t np_json_read_string(const char **pc, char *out, size_t size);

#endif
