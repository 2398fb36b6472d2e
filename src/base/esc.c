/*
 * esc.c - strings from an experiment made harmless as text and in JSON (see esc.h).
 */
#define _GNU_SOURCE
#include "esc.h"

#include <errno.h>
#include <stdio_ext.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- UTF-8 ---------------------------------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at s (1-4) with its code point in *cp, or 0 when the
 * byte at s does not start one (stray continuation, overlong, surrogate, > U+10FFFF, cut). */
static int u8_decode(const unsigned char *s, uint32_t *cp)
{
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int len;
    uint32_t v, min;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, v = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, v = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, v = c & 0x07, min = 0x10000;
    else
        return 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) /* also the NUL that ends the string */
            return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

/* Code points shown escaped though valid: C1 controls, and marks that are invisible yet change
 * how the text around them is ordered or broken into lines. */
static int cp_hidden(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
           (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* ---- text ----------------------------------------------------------------------------------- */

/* The escaped form of the sequence at s, in e (at most 7 bytes + NUL); returns how many bytes of
 * s it stands for. The escaped form is the bytes themselves when they are harmless. */
static int esc_one(const unsigned char *s, char e[8])
{
    uint32_t cp;
    int len = u8_decode(s, &cp);
    if (len == 0) {
        snprintf(e, 8, "\\x%02x", s[0]);
        return 1;
    }
    if (cp < 0x20 || cp == 0x7f) {
        if (cp == '\n')
            strcpy(e, "\\n");
        else if (cp == '\t')
            strcpy(e, "\\t");
        else if (cp == '\r')
            strcpy(e, "\\r");
        else
            snprintf(e, 8, "\\x%02x", cp);
    } else if (cp_hidden(cp)) {
        snprintf(e, 8, "\\u%04x", (unsigned)(cp & 0xffff)); /* all below U+10000 */
    } else {
        memcpy(e, s, (size_t)len);
        e[len] = 0;
    }
    return len;
}

/* The length of the run of plain printable ASCII at p: shown as it is, no decoding needed (most
 * text is only that; measured: escaping byte by byte made -callers-callees 20% slower). */
static size_t plain_run(const unsigned char *p)
{
    const unsigned char *q = p;
    while (*q >= 0x20 && *q < 0x7f)
        q++;
    return (size_t)(q - p);
}

size_t esc_text(char *dst, size_t n, const char *s)
{
    size_t len = 0;
    int full = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        char e[8];
        const char *piece = e;
        size_t el = plain_run(p);
        if (el) {
            piece = (const char *)p;
            p += el;
        } else {
            p += esc_one(p, e);
            el = strlen(e);
        }
        if (!full && len + el < n)
            memcpy(dst + len, piece, el);
        else if (!full && n) {
            dst[len] = 0;
            full = 1;
        }
        len += el;
    }
    if (!full && n)
        dst[len] = 0;
    return len;
}

void esc_fputs(const char *s, FILE *out)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        const unsigned char *run = p; /* plain ASCII goes out as it is, in one piece */
        p += plain_run(p);
        if (p > run)
            fwrite(run, 1, (size_t)(p - run), out);
        if (*p) {
            char e[8];
            p += esc_one(p, e);
            fputs(e, out);
        }
    }
}

/* ---- JSON ----------------------------------------------------------------------------------- */

void esc_json(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        uint32_t cp;
        int len = u8_decode(p, &cp);
        if (len == 0) { /* surrogateescape: the byte as a lone low surrogate */
            fprintf(out, "\\udc%02x", *p);
            p++;
            continue;
        }
        if (cp == '"' || cp == '\\')
            fprintf(out, "\\%c", (int)cp);
        else if (cp == '\n')
            fputs("\\n", out);
        else if (cp == '\t')
            fputs("\\t", out);
        else if (cp == '\r')
            fputs("\\r", out);
        else if (cp == '\b')
            fputs("\\b", out);
        else if (cp == '\f')
            fputs("\\f", out);
        else if (cp < 0x20 || cp == 0x7f || cp_hidden(cp))
            fprintf(out, "\\u%04x", cp);
        else
            fwrite(p, 1, (size_t)len, out);
        p += len;
    }
    fputc('"', out);
}

/* ---- printf --------------------------------------------------------------------------------- */

/* One conversion with up to two '*' arguments before its value. */
#define EMIT(val)                                                                                  \
    (nstar == 0   ? fprintf(out, spec, val)                                                       \
     : nstar == 1 ? fprintf(out, spec, star[0], val)                                              \
                  : fprintf(out, spec, star[0], star[1], val))

static int vput(FILE *out, const char *fmt, va_list ap, int saved_errno)
{
    long total = 0;
    const char *p = fmt;
    while (*p) {
        const char *pct = strchr(p, '%');
        size_t lit = pct ? (size_t)(pct - p) : strlen(p);
        if (lit) {
            if (fwrite(p, 1, lit, out) != lit)
                return -1;
            total += (long)lit;
            p += lit;
        }
        if (!pct)
            break;
        /* %[flags][width][.precision][length]conversion */
        const char *q = pct + 1;
        if (*q == '%') {
            if (fputc('%', out) == EOF)
                return -1;
            total++;
            p = q + 1;
            continue;
        }
        int star[2], nstar = 0, prec = -1;
        while (*q && strchr("-+ #0'I", *q))
            q++;
        if (*q == '*') {
            star[nstar++] = va_arg(ap, int);
            q++;
        } else {
            while (*q >= '0' && *q <= '9')
                q++;
        }
        const char *dot = NULL;
        if (*q == '.') {
            dot = q++;
            if (*q == '*') {
                prec = star[nstar++] = va_arg(ap, int);
                q++;
            } else {
                prec = 0;
                while (*q >= '0' && *q <= '9')
                    prec = prec * 10 + (*q++ - '0');
            }
        }
        int longs = 0;
        char lenmod = 0;
        while (*q && strchr("hlqLjzZt", *q)) {
            lenmod = *q;
            longs += *q == 'l' || *q == 'q';
            q++;
        }
        char conv = *q;
        if (!conv)
            break; /* a lone '%' at the end: printf's behaviour is undefined; print nothing */
        char spec[64];
        size_t sl = (size_t)(q + 1 - pct);
        if (sl >= sizeof spec)
            abort();
        memcpy(spec, pct, sl);
        spec[sl] = 0;
        int r;
        switch (conv) {
        case 'd': case 'i': case 'o': case 'u': case 'x': case 'X':
            if (longs >= 2 || lenmod == 'L')
                r = EMIT(va_arg(ap, long long));
            else if (longs == 1)
                r = EMIT(va_arg(ap, long));
            else if (lenmod == 'j')
                r = EMIT(va_arg(ap, intmax_t));
            else if (lenmod == 'z' || lenmod == 'Z')
                r = EMIT(va_arg(ap, size_t));
            else if (lenmod == 't')
                r = EMIT(va_arg(ap, ptrdiff_t));
            else
                r = EMIT(va_arg(ap, int));
            break;
        case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case 'a': case 'A':
            if (lenmod == 'L')
                r = EMIT(va_arg(ap, long double));
            else
                r = EMIT(va_arg(ap, double));
            break;
        case 'p':
            r = EMIT(va_arg(ap, void *));
            break;
        case 's': case 'c': case 'm': {
            if (longs) /* %ls, %lc: wide characters are not printed here */
                abort();
            char one[2] = { 0, 0 };
            const char *s;
            if (conv == 'c') {
                one[0] = (char)va_arg(ap, int);
                s = one;
            } else if (conv == 'm') {
                s = strerror(saved_errno);
            } else {
                s = va_arg(ap, const char *);
                if (!s)
                    s = "(null)";
            }
            size_t raw = prec >= 0 && conv == 's' ? strnlen(s, (size_t)prec) : strlen(s);
            char small[256], *tmp = small, *cut = NULL;
            if (raw < strlen(s)) { /* the precision applies to the argument */
                cut = strndup(s, raw);
                if (!cut)
                    return -1;
                s = cut;
            }
            size_t plain = plain_run((const unsigned char *)s);
            if (!s[plain]) { /* nothing to escape: the text itself */
                tmp = (char *)s;
            } else {
                size_t need = esc_text(NULL, 0, s) + 1;
                if (need > sizeof small && !(tmp = malloc(need))) {
                    free(cut);
                    return -1;
                }
                esc_text(tmp, need, s);
            }
            /* the same flags and width, as %s of the escaped text, without the precision */
            size_t keep = dot ? (size_t)(dot - pct) : sl - 1;
            spec[keep] = 's';
            spec[keep + 1] = 0;
            int wstar = nstar - (dot && dot[1] == '*');
            r = wstar ? fprintf(out, spec, star[0], tmp) : fprintf(out, spec, tmp);
            if (tmp != small && tmp != s)
                free(tmp);
            free(cut);
            break;
        }
        default: /* %n, and what printf does not know */
            abort();
        }
        if (r < 0)
            return -1;
        total += r;
        p = q + 1;
    }
    return total > INT32_MAX ? INT32_MAX : (int)total;
}

int esc_vfprintf(FILE *out, const char *fmt, va_list ap)
{
    int saved_errno = errno; /* for %m */
    /* An unbuffered stream (stderr) would get each piece of the message as a write of its own,
     * and the messages of processes sharing it (the ranks of `mpirun tally collect`) would cut
     * into each other: the message is made whole first, then written at once. */
    if (__fbufsize(out) > 1)
        return vput(out, fmt, ap, saved_errno);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) {
        errno = saved_errno;
        return vput(out, fmt, ap, saved_errno);
    }
    int r = vput(m, fmt, ap, saved_errno);
    if (fclose(m))
        r = -1;
    if (r >= 0 && len && fwrite(buf, 1, len, out) != len)
        r = -1;
    free(buf);
    return r;
}

int esc_fprintf(FILE *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = esc_vfprintf(out, fmt, ap);
    va_end(ap);
    return r;
}

int esc_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = esc_vfprintf(stdout, fmt, ap);
    va_end(ap);
    return r;
}
