/*
 * json.h — the one JSON string writer the printers share (statistics and topology output,
 * which run at user request or at exit, so stdio is fine here).
 */
#ifndef NP_JSON_H
#define NP_JSON_H

#include <stdio.h>

/* Writes s as a JSON string literal: quotes, backslashes and control characters escaped, and
 * each byte that is not part of well-formed UTF-8 written as U+FFFD (JSON text is UTF-8). */
void np_json_string(FILE *out, const char *s);

#endif
