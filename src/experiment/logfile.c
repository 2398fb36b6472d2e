/* logfile.c - log line building and appending; see logfile.h. */
#define _GNU_SOURCE
#include "logfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char hexdigits[] = "0123456789ABCDEF";

void exp_line_begin(exp_line_t *l, char *buf, size_t cap, const char *kind)
{
    l->buf = buf;
    l->cap = cap;
    l->len = 0;
    l->cut = 0;
    size_t n = strlen(kind);
    if (n > cap - 32)
        n = cap - 32;
    memcpy(buf, kind, n);
    l->len = n;
}

static int needs_escape(unsigned char c)
{
    return c <= 0x20 || c == 0x7f || c == '%' || c == '=';
}

/* Appends " key=" and the escaped value, or nothing if it does not fit. */
static void put_field(exp_line_t *l, const char *key, const char *v, size_t vn, int escape)
{
    if (l->cut)
        return;
    size_t kn = strlen(key), need = 2 + kn + vn;
    for (size_t i = 0; escape && i < vn; i++)
        need += needs_escape((unsigned char)v[i]) ? 2 : 0;
    if (l->len + need + 16 > l->cap) { /* keep room for " truncated=1\n" */
        l->cut = 1;
        return;
    }
    char *p = l->buf + l->len;
    *p++ = ' ';
    memcpy(p, key, kn);
    p += kn;
    *p++ = '=';
    if (!escape) {
        memcpy(p, v, vn);
        l->len = (size_t)(p + vn - l->buf);
        return;
    }
    for (size_t i = 0; i < vn; i++) {
        unsigned char c = (unsigned char)v[i];
        if (escape && needs_escape(c)) {
            *p++ = '%';
            *p++ = hexdigits[c >> 4];
            *p++ = hexdigits[c & 15];
        } else {
            *p++ = (char)c;
        }
    }
    l->len = (size_t)(p - l->buf);
}

void exp_line_strn(exp_line_t *l, const char *key, const char *value, size_t n)
{
    put_field(l, key, value ? value : "", value ? n : 0, 1);
}

void exp_line_raw(exp_line_t *l, const char *key, const char *value, size_t n)
{
    put_field(l, key, value, n, 0);
}

void exp_line_str(exp_line_t *l, const char *key, const char *value)
{
    exp_line_strn(l, key, value, value ? strlen(value) : 0);
}

void exp_line_argv(exp_line_t *l, const char *key, char *const *argv, int argc)
{
    for (int i = 0; i < argc && !l->cut; i++) {
        if (i == 0) {
            exp_line_str(l, key, argv[0]);
            continue;
        }
        size_t before = l->len;
        put_field(l, "", argv[i], strlen(argv[i]), 1); /* " =value" */
        if (l->len > before) { /* drop the '=' put_field wrote after the empty key */
            memmove(l->buf + before + 1, l->buf + before + 2, l->len - before - 2);
            l->len--;
        }
    }
}

static size_t fmt_u64(char *out, uint64_t v, unsigned base)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = hexdigits[v % base];
        v /= base;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

size_t exp_fmt_u64(char *out, uint64_t v) { return fmt_u64(out, v, 10); }

int exp_decl_name_ok(const char *s)
{
    if (!s || !(*s >= 'a' && *s <= 'z'))
        return 0;
    size_t n = 0;
    for (; *s; s++, n++)
        if (n >= EXP_DECL_NAME_MAX ||
            !((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
            return 0;
    return 1;
}

int exp_decl_text_ok(const char *s, size_t max)
{
    if (!s)
        return 1; /* none: empty */
    size_t n = 0;
    for (; *s; s++, n++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f || n >= max)
            return 0;
    return 1;
}

void exp_line_u64(exp_line_t *l, const char *key, uint64_t value)
{
    char b[24];
    put_field(l, key, b, fmt_u64(b, value, 10), 0);
}

void exp_line_i64(exp_line_t *l, const char *key, int64_t value)
{
    char b[24];
    size_t n = 0;
    if (value < 0)
        b[n++] = '-';
    n += fmt_u64(b + n, value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value, 10);
    put_field(l, key, b, n, 0);
}

void exp_line_hex(exp_line_t *l, const char *key, uint64_t value)
{
    char b[24] = "0x";
    size_t n = 2 + fmt_u64(b + 2, value, 16);
    for (size_t i = 2; i < n; i++)
        if (b[i] >= 'A')
            b[i] = (char)(b[i] - 'A' + 'a');
    put_field(l, key, b, n, 0);
}

int exp_line_write(exp_line_t *l, int fd)
{
    if (l->cut) {
        memcpy(l->buf + l->len, " truncated=1", 12);
        l->len += 12;
    }
    l->buf[l->len++] = '\n';
    const char *p = l->buf;
    size_t left = l->len;
    while (left) {
        /* the system call itself, not libc's write: that is a cancellation point, and a
         * record written inside a program's call (the collector's) must not act on the
         * program's pending cancellation where its own code has none */
        ssize_t w = syscall(SYS_write, fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += w;
        left -= (size_t)w;
    }
    return 0;
}

int exp_log_create(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    static const char first[] = EXP_LOG_FIRST_LINE "\n";
    ssize_t w = write(fd, first, sizeof first - 1);
    if (w != (ssize_t)(sizeof first - 1)) {
        int e = w < 0 ? errno : ENOSPC; /* a short write: the disk is full */
        close(fd);
        unlink(path); /* no log at all rather than one that is not a log */
        return -e;
    }
    return fd;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

size_t exp_pct_decode(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        int hi, lo;
        if (*r == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0) {
            *w++ = (char)(hi * 16 + lo);
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = 0;
    return (size_t)(w - s);
}
