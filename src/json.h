/*
 * json.h — the one JSON string writer the printers share (statistics and topology output,
 * which run at user request or at exit, so stdio is fine here), their answer for what they
 * wrote, and the string reader (the tools read the reports back).
 */
#ifndef NP_JSON_H
#define NP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Writes s as a JSON string literal: quotes, backslashes and control characters escaped, and
 * each byte that is not part of well-formed UTF-8 written as U+FFFD (JSON text is UTF-8).
 * False when stdio refused a write (what a buffer holds shows at the stream's flush). */
bool np_json_string(FILE *out, const char *s);
/* A printer's answer for its writes to out, the caller having saved errno and cleared it
 * before them: ok (every stdio call it made succeeded) and the flush of what out's buffer
 * holds. 0 with errno back to saved_errno, or -1 with errno as stdio set it (EIO where it set
 * none: a wide-oriented stream). Not the stream's error indicator, which the program's earlier
 * use of the stream may have left set. */
int np_stdio_answer(FILE *out, bool ok, int saved_errno);
/* Reads the JSON string literal whose first character is at *pc (just past its opening
 * quote) into out, NUL-terminated: escapes decoded, \uXXXX as UTF-8 (a surrogate pair as its
 * character, a lone surrogate or an unknown escape as U+FFFD). What does not fit in size - 1
 * bytes is left out, never part of a character. *pc ends past the closing quote (at the NUL
 * of an unterminated literal). Returns the bytes written. */
size_t np_json_read_string(const char **pc, char *out, size_t size);

#endif
