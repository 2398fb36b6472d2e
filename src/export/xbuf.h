/*
 * xbuf.h - the exports' output writer: bytes gathered in a large buffer and written to a FILE a
 * buffer at a time, numbers formatted by hand, and strings of the experiment escaped once and
 * kept (xb_names_t), so a format that writes millions of records calls no printf per record.
 *
 * Escaping is the sink's (base/sink.h, base/esc.h), byte for byte: xb_json writes what
 * sink_json_str writes, xb_text what sink_printf's %s writes; plain printable ASCII is copied as
 * it is, anything else goes through esc_json / esc_text. So an export written through xbuf is the
 * same file it was through the sink, and no string of an experiment reaches the output raw.
 *
 * Depends on base/esc and the C library. Not thread-safe (one writer per xbuf). The FILE is
 * borrowed (never closed); the buffer and the kept strings are the caller's to free
 * (xb_finish, xb_names_free). Errors: a failed write or an allocation that failed is remembered
 * (xb_error); writing goes on as a no-op.
 */
#ifndef TALLY_EXPORT_XBUF_H
#define TALLY_EXPORT_XBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct xbuf {
    FILE *f;
    char *b;
    size_t n, cap;
    int error;
} xbuf_t;


/* A writer to f (borrowed) with a buffer of its own; -1 when memory ran out (x->error set). */
int xb_init(xbuf_t *x, FILE *f);
/* Writes what the buffer holds to the FILE (and flushes the FILE). */
void xb_flush(xbuf_t *x);
/* Flushes, frees the buffer; returns 0, or -1 when any write failed. */
int xb_finish(xbuf_t *x);
static inline int xb_error(const xbuf_t *x) { return x->error; }

void xb_put_slow(xbuf_t *x, const void *d, size_t n);
static inline void xb_put(xbuf_t *x, const void *d, size_t n)
{
    if (x->n + n <= x->cap) {
        memcpy(x->b + x->n, d, n);
        x->n += n;
    } else {
        xb_put_slow(x, d, n);
    }
}
static inline void xb_str(xbuf_t *x, const char *s) { xb_put(x, s, strlen(s)); }
static inline void xb_char(xbuf_t *x, char ch)
{
    if (x->n < x->cap)
        x->b[x->n++] = ch;
    else
        xb_put_slow(x, &ch, 1);
}

/* The decimal digits of v into d (at least 20 bytes, not NUL-terminated); returns their count. */
static inline size_t xb_fmt_u64(char *d, uint64_t v)
{
    char t[20];
    size_t n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        d[i] = t[n - 1 - i];
    return n;
}
static inline void xb_u64(xbuf_t *x, uint64_t v)
{
    char d[20];
    xb_put(x, d, xb_fmt_u64(d, v));
}
/* ns as microseconds with three decimals ("%llu.%03llu" of ns / 1000, ns % 1000) into d (at
 * least 24 bytes); returns the length. */
static inline size_t xb_fmt_us3(char *d, uint64_t ns)
{
    size_t n = xb_fmt_u64(d, ns / 1000);
    unsigned r = (unsigned)(ns % 1000);
    d[n++] = '.';
    d[n++] = (char)('0' + r / 100);
    d[n++] = (char)('0' + r / 10 % 10);
    d[n++] = (char)('0' + r % 10);
    return n;
}

/* str as a JSON string literal, quotes included (sink_json_str's bytes). */
void xb_json(xbuf_t *x, const char *str);
/* str escaped for text (sink_printf's "%s"). */
void xb_text(xbuf_t *x, const char *str);

/* str escaped as a JSON literal (json != 0) or as text, in memory: allocated, *len its length;
 * NULL when memory ran out. */
char *xb_escape(const char *str, int json, size_t *len);

/* Strings kept by id (a function's name escaped once for a format): grows with the largest id. */
typedef struct xb_names {
    char **s;
    uint32_t *len;
    size_t n;
} xb_names_t;
/* The string kept for id, or NULL (then *len is not set). */
static inline const char *xb_names_get(const xb_names_t *nm, uint32_t id, size_t *len)
{
    if (id >= nm->n || !nm->s[id])
        return NULL;
    *len = nm->len[id];
    return nm->s[id];
}
/* Keeps s (allocated by the caller, owned here from now on) of length len for id; -1 when memory
 * ran out (s is freed). */
int xb_names_set(xb_names_t *nm, uint32_t id, char *s, size_t len);
void xb_names_free(xb_names_t *nm);

#endif
