/*
 * sink.c - report output to a FILE or to memory, always escaped. See sink.h.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "esc.h"
#include "sink.h"

void sink_file(sink_t *s, FILE *f) { *s = (sink_t){ .f = f }; }

int sink_mem(sink_t *s)
{
    *s = (sink_t){ .is_mem = 1 };
    s->f = open_memstream(&s->mem, &s->len);
    if (!s->f) {
        s->error = 1;
        return -1;
    }
    return 0;
}

const char *sink_data(sink_t *s, size_t *len)
{
    if (!s->is_mem || !s->f)
        return NULL;
    if (fflush(s->f))
        s->error = 1;
    if (len)
        *len = s->len;
    return s->mem ? s->mem : "";
}

void sink_close(sink_t *s)
{
    if (!s->f)
        return;
    if (s->is_mem) {
        fclose(s->f);
        free(s->mem);
        s->mem = NULL;
        s->f = NULL;
    } else if (fflush(s->f)) {
        s->error = 1;
    }
}

int sink_vprintf(sink_t *s, const char *fmt, va_list ap)
{
    if (!s->f)
        return -1;
    int n = esc_vfprintf(s->f, fmt, ap);
    if (n < 0)
        s->error = 1;
    return n;
}

int sink_printf(sink_t *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = sink_vprintf(s, fmt, ap);
    va_end(ap);
    return n;
}

void sink_json_str(sink_t *s, const char *str)
{
    if (!s->f)
        return;
    esc_json(s->f, str);
    if (ferror(s->f))
        s->error = 1;
}

int sink_error(sink_t *s) { return s->error || (s->f && ferror(s->f)); }
