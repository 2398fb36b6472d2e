/*
 * json.h - the one JSON writer of tally: objects, arrays, strings (escaped by src/base/esc:
 * always valid JSON and UTF-8, invalid bytes as \uDCNN), numbers, to a sink (sink.h).
 *
 * Commas are the writer's: after a value, the next key or element gets one. Nesting depth is
 * unbounded (no stack: a call tree may be 100,000 levels deep). The caller states the structure
 * (a key before each member of an object); the writer does not check it.
 *
 * Numbers: json_num writes a double as an integer when it is one (below 1e15), otherwise with 9
 * significant digits, and null for NaN and infinities; json_u64/json_i64 write integers exactly.
 *
 * Depends on sink (and through it esc). Not thread-safe. Errors: those of the sink.
 */
#ifndef TALLY_BASE_JSON_H
#define TALLY_BASE_JSON_H

#include <stdint.h>

#include "sink.h"

typedef struct json {
    sink_t *out;
    int comma; /* 1: a value was just written at this level, the next one needs a comma */
} json_t;

void json_init(json_t *j, sink_t *out);
void json_obj_begin(json_t *j);
void json_obj_end(json_t *j);
void json_arr_begin(json_t *j);
void json_arr_end(json_t *j);
/* The key of the next member (escaped like any string). */
void json_key(json_t *j, const char *key);
/* A key made with printf (its %s arguments are not escaped here: the result is, as a string). */
void json_keyf(json_t *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void json_str(json_t *j, const char *s);
void json_strf(json_t *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void json_num(json_t *j, double v);
void json_u64(json_t *j, uint64_t v);
void json_i64(json_t *j, int64_t v);
void json_bool(json_t *j, int v);
void json_null(json_t *j);
/* Ends a document: a newline (one document per line); the next value starts a new one. */
void json_end_doc(json_t *j);

#endif
