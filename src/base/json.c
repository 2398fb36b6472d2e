/*
 * json.c - the JSON writer. See json.h.
 */
#define _GNU_SOURCE
#include <math.h> /* isfinite: a macro, no libm */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "json.h"

void json_init(json_t *j, sink_t *out) { *j = (json_t){ .out = out }; }

/* Before a value or a key: the comma that separates it from the previous one. */
static void sep(json_t *j)
{
    if (j->comma)
        sink_printf(j->out, ",");
    j->comma = 0;
}

void json_obj_begin(json_t *j)
{
    sep(j);
    sink_printf(j->out, "{");
}

void json_obj_end(json_t *j)
{
    sink_printf(j->out, "}");
    j->comma = 1;
}

void json_arr_begin(json_t *j)
{
    sep(j);
    sink_printf(j->out, "[");
}

void json_arr_end(json_t *j)
{
    sink_printf(j->out, "]");
    j->comma = 1;
}

void json_key(json_t *j, const char *key)
{
    sep(j);
    sink_json_str(j->out, key);
    sink_printf(j->out, ":");
}

/* A string made with printf; NULL when memory ran out (then the sink is marked failed). */
static char *vformat(json_t *j, const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) {
        j->out->error = 1;
        return NULL;
    }
    return s;
}

void json_keyf(json_t *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *k = vformat(j, fmt, ap);
    va_end(ap);
    json_key(j, k ? k : "");
    free(k);
}

void json_str(json_t *j, const char *s)
{
    sep(j);
    sink_json_str(j->out, s ? s : "");
    j->comma = 1;
}

void json_strf(json_t *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vformat(j, fmt, ap);
    va_end(ap);
    json_str(j, s ? s : "");
    free(s);
}

void json_num(json_t *j, double v)
{
    sep(j);
    if (!isfinite(v))
        sink_printf(j->out, "null");
    else if (v > -1e15 && v < 1e15 && v == (double)(long long)v) /* integral (no libm) */
        sink_printf(j->out, "%.0f", v);
    else
        sink_printf(j->out, "%.9g", v);
    j->comma = 1;
}

void json_u64(json_t *j, uint64_t v)
{
    sep(j);
    sink_printf(j->out, "%llu", (unsigned long long)v);
    j->comma = 1;
}

void json_i64(json_t *j, int64_t v)
{
    sep(j);
    sink_printf(j->out, "%lld", (long long)v);
    j->comma = 1;
}

void json_bool(json_t *j, int v)
{
    sep(j);
    sink_printf(j->out, "%s", v ? "true" : "false");
    j->comma = 1;
}

void json_null(json_t *j)
{
    sep(j);
    sink_printf(j->out, "null");
    j->comma = 1;
}

void json_end_doc(json_t *j)
{
    sink_printf(j->out, "\n");
    j->comma = 0;
}
