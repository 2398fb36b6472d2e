/*
 * xbuf.c - the exports' buffered output writer and their escaped-once strings (xbuf.h).
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "base/esc.h"
#include "export/xbuf.h"

#define XB_CAP (1u << 18)

int xb_init(xbuf_t *x, FILE *f)
{
    x->f = f;
    x->n = 0;
    x->error = 0;
    x->cap = XB_CAP;
    x->b = malloc(x->cap);
    if (!x->b) {
        x->cap = 0;
        x->error = 1;
        return -1;
    }
    return 0;
}

static void drain(xbuf_t *x)
{
    if (x->n && !x->error && fwrite(x->b, 1, x->n, x->f) != x->n)
        x->error = 1;
    x->n = 0;
}

void xb_flush(xbuf_t *x)
{
    drain(x);
    if (!x->error && fflush(x->f))
        x->error = 1;
}

int xb_finish(xbuf_t *x)
{
    if (x->b)
        xb_flush(x);
    free(x->b);
    x->b = NULL;
    x->cap = 0;
    return x->error ? -1 : 0;
}

void xb_put_slow(xbuf_t *x, const void *d, size_t n)
{
    if (x->error || !x->b) {
        x->error = 1;
        return;
    }
    drain(x);
    if (n > x->cap) { /* larger than the buffer: straight through */
        if (!x->error && fwrite(d, 1, n, x->f) != n)
            x->error = 1;
        return;
    }
    memcpy(x->b, d, n);
    x->n = n;
}

/* Whether str is plain printable ASCII with nothing to escape as JSON (no '"', no '\\'), and its
 * length. */
static int plain(const char *str, int json, size_t *len)
{
    const unsigned char *p = (const unsigned char *)str;
    for (; *p; p++)
        if (*p < 0x20 || *p >= 0x7f || (json && (*p == '"' || *p == '\\')))
            return 0;
    *len = (size_t)(p - (const unsigned char *)str);
    return 1;
}

char *xb_escape(const char *str, int json, size_t *len)
{
    size_t n;
    char *out;
    if (plain(str, json, &n)) {
        out = malloc(n + 3);
        if (!out)
            return NULL;
        if (json) {
            out[0] = '"';
            memcpy(out + 1, str, n);
            out[n + 1] = '"';
            out[n + 2] = 0;
            n += 2;
        } else {
            memcpy(out, str, n + 1);
        }
        *len = n;
        return out;
    }
    if (!json) {
        n = esc_text(NULL, 0, str);
        out = malloc(n + 1);
        if (!out)
            return NULL;
        esc_text(out, n + 1, str);
        *len = n;
        return out;
    }
    size_t sz = 0;
    FILE *m = open_memstream(&out, &sz);
    if (!m)
        return NULL;
    esc_json(m, str);
    if (fclose(m)) {
        free(out);
        return NULL;
    }
    *len = sz;
    return out;
}

static void put_escaped(xbuf_t *x, const char *str, int json)
{
    size_t n;
    if (plain(str, json, &n)) {
        if (json)
            xb_char(x, '"');
        xb_put(x, str, n);
        if (json)
            xb_char(x, '"');
        return;
    }
    char *e = xb_escape(str, json, &n);
    if (!e) {
        x->error = 1;
        return;
    }
    xb_put(x, e, n);
    free(e);
}

void xb_json(xbuf_t *x, const char *str) { put_escaped(x, str, 1); }
void xb_text(xbuf_t *x, const char *str) { put_escaped(x, str, 0); }

int xb_names_set(xb_names_t *nm, uint32_t id, char *s, size_t len)
{
    if (id >= nm->n) {
        size_t nn = nm->n ? nm->n * 2 : 1024;
        while (nn <= id)
            nn *= 2;
        char **ns = realloc(nm->s, nn * sizeof *ns);
        if (!ns) {
            free(s);
            return -1;
        }
        nm->s = ns;
        uint32_t *nl = realloc(nm->len, nn * sizeof *nl);
        if (!nl) {
            free(s);
            return -1;
        }
        nm->len = nl;
        memset(nm->s + nm->n, 0, (nn - nm->n) * sizeof *nm->s);
        nm->n = nn;
    }
    free(nm->s[id]);
    nm->s[id] = s;
    nm->len[id] = (uint32_t)len;
    return 0;
}

void xb_names_free(xb_names_t *nm)
{
    for (size_t i = 0; i < nm->n; i++)
        free(nm->s[i]);
    free(nm->s);
    free(nm->len);
    memset(nm, 0, sizeof *nm);
}
