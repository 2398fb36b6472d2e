/*
 * iotrace.c - I/O tracing interposers; see iotrace.h. Built with frame pointers (FU_REGS).
 * Sections: real functions, descriptors and their names, recording, system calls, stdio.
 */
#define _GNU_SOURCE
#include "iotrace.h"
#include "realfn.h"
#include "threads.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define RA() ((uint64_t)__builtin_return_address(0))

/* ---- real functions --------------------------------------------------------------------------- */

static struct {
    int done; /* realfn.h: 2 once looked up */
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*pread)(int, void *, size_t, off_t);
    ssize_t (*pwrite)(int, const void *, size_t, off_t);
    ssize_t (*readv)(int, const struct iovec *, int);
    ssize_t (*writev)(int, const struct iovec *, int);
    ssize_t (*preadv)(int, const struct iovec *, int, off_t);
    ssize_t (*pwritev)(int, const struct iovec *, int, off_t);
    int (*open)(const char *, int, ...);
    int (*openat)(int, const char *, int, ...);
    int (*creat)(const char *, mode_t);
    int (*close)(int);
    int (*fsync)(int);
    int (*fdatasync)(int);
    off_t (*lseek)(int, off_t, int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    FILE *(*fopen)(const char *, const char *);
    FILE *(*freopen)(const char *, const char *, FILE *);
    FILE *(*fdopen)(int, const char *);
    int (*fclose)(FILE *);
    size_t (*fread)(void *, size_t, size_t, FILE *);
    size_t (*fwrite)(const void *, size_t, size_t, FILE *);
    char *(*fgets)(char *, int, FILE *);
    int (*fputs)(const char *, FILE *);
    int (*puts)(const char *);
    ssize_t (*getdelim)(char **, size_t *, int, FILE *);
    int (*vfprintf)(FILE *, const char *, va_list);
    int (*vdprintf)(int, const char *, va_list);
    int (*fflush)(FILE *);
    int (*fseeko)(FILE *, off_t, int);
    void (*rewind)(FILE *);
    ssize_t (*read_chk)(int, void *, size_t, size_t);
    ssize_t (*pread_chk)(int, void *, size_t, off_t, size_t);
    size_t (*fread_chk)(void *, size_t, size_t, size_t, FILE *);
    char *(*fgets_chk)(char *, size_t, int, FILE *);
    int (*vfprintf_chk)(FILE *, int, const char *, va_list);
    int (*vdprintf_chk)(int, int, const char *, va_list);
    int (*open_2)(const char *, int);
    int (*openat_2)(int, const char *, int);
} real;

static const realfn_t real_fns[] = {
    REALFN(real.read, "read"),
    REALFN(real.write, "write"),
    REALFN(real.pread, "pread"),
    REALFN(real.pwrite, "pwrite"),
    REALFN(real.readv, "readv"),
    REALFN(real.writev, "writev"),
    REALFN(real.preadv, "preadv"),
    REALFN(real.pwritev, "pwritev"),
    REALFN(real.open, "open"),
    REALFN(real.openat, "openat"),
    REALFN(real.creat, "creat"),
    REALFN(real.close, "close"),
    REALFN(real.fsync, "fsync"),
    REALFN(real.fdatasync, "fdatasync"),
    REALFN(real.lseek, "lseek"),
    REALFN(real.dup2, "dup2"),
    REALFN(real.dup3, "dup3"),
    REALFN(real.fopen, "fopen"),
    REALFN(real.freopen, "freopen"),
    REALFN(real.fdopen, "fdopen"),
    REALFN(real.fclose, "fclose"),
    REALFN(real.fread, "fread"),
    REALFN(real.fwrite, "fwrite"),
    REALFN(real.fgets, "fgets"),
    REALFN(real.fputs, "fputs"),
    REALFN(real.puts, "puts"),
    REALFN(real.getdelim, "getdelim"),
    REALFN(real.vfprintf, "vfprintf"),
    REALFN(real.vdprintf, "vdprintf"),
    REALFN(real.fflush, "fflush"),
    REALFN(real.fseeko, "fseeko"),
    REALFN(real.rewind, "rewind"),
    REALFN(real.read_chk, "__read_chk"),
    REALFN(real.pread_chk, "__pread_chk"),
    REALFN(real.fread_chk, "__fread_chk"),
    REALFN(real.fgets_chk, "__fgets_chk"),
    REALFN(real.vfprintf_chk, "__vfprintf_chk"),
    REALFN(real.vdprintf_chk, "__vdprintf_chk"),
    REALFN(real.open_2, "__open_2"),
    REALFN(real.openat_2, "__openat_2"),
};
static const realfn_table_t real_table = { real_fns, sizeof real_fns / sizeof *real_fns,
                                           &real.done, 0 };

static inline void resolve(void)
{
    realfn_ready(&real_table);
}

/* ---- descriptors and their names -------------------------------------------------------------- */

#define FD_BITS (1u << 20)
static uint64_t named[FD_BITS / 64]; /* atomic bits: the descriptor's name was recorded */

static int fd_named(int fd)
{
    return fd < 0 || fd >= (int)FD_BITS ||
           ((__atomic_load_n(&named[fd >> 6], __ATOMIC_RELAXED) >> (fd & 63)) & 1);
}

static void fd_mark(int fd, int on)
{
    if (fd < 0 || fd >= (int)FD_BITS)
        return;
    uint64_t bit = 1ull << (fd & 63);
    if (on)
        __atomic_fetch_or(&named[fd >> 6], bit, __ATOMIC_RELAXED);
    else
        __atomic_fetch_and(&named[fd >> 6], ~bit, __ATOMIC_RELAXED);
}

void iotrace_after_fork_child(void)
{
    memset(named, 0, sizeof named);
}

/* The name of an open descriptor from /proc/self/fd, or NULL. */
static const char *fd_name(int fd, char *buf, size_t cap)
{
    char path[40] = "/proc/self/fd/";
    size_t n = strlen(path);
    n += exp_fmt_u64(path + n, (uint64_t)fd);
    path[n] = 0;
    ssize_t r = readlink(path, buf, cap - 1);
    if (r <= 0)
        return NULL;
    buf[r] = 0;
    return buf;
}

/* ---- recording -------------------------------------------------------------------------------- */

static inline trace_thr_t *io_enter(uint64_t ra, uint64_t *t0)
{
    resolve();
    trace_thr_t *t = trace_enter_core(TRACE_K_IO, trace_io_on, ra);
    if (t)
        *t0 = trace_now();
    return t;
}

/* Records a call that began at t0. failed: the call failed (errno says why). opened: the path
 * the call opened fd with (or failed to), else NULL; a descriptor not named yet is named from
 * /proc. */
static void io_done(trace_thr_t *t, fu_regs_t r, const void *fn, uint64_t t0, uint32_t call,
                    int fd, int failed, uint64_t bytes, const char *opened)
{
    int saved = errno;
    uint64_t now = trace_now();
    char buf[EXP_IO_NAME_MAX + 1];
    const char *name = opened;
    if (fd >= 0 && !failed) {
        if (!name && !fd_named(fd))
            name = fd_name(fd, buf, sizeof buf);
        if (name)
            fd_mark(fd, 1);
    }
    trace_io(t, r, fn, now, now - t0, call, bytes, fd, failed ? saved : 0, failed ? opened : name);
    errno = saved;
    trace_leave(t, TRACE_K_IO);
}

/* A call on fd that returns a byte count or -1. */
#define FD_BODY(fd, call_expr, fn, call_id)                                                        \
    uint64_t t0;                                                                                   \
    trace_thr_t *t = io_enter(RA(), &t0);                                                          \
    if (!t)                                                                                        \
        return COLL_BLOCKING(call_expr);                                                           \
    ssize_t rc = COLL_BLOCKING(call_expr);                                                         \
    io_done(t, FU_REGS(), (const void *)fn, t0, call_id, fd, rc < 0, rc > 0 ? (uint64_t)rc : 0,  \
            NULL);                                                                                 \
    return rc

/* ---- system calls ----------------------------------------------------------------------------- */

COLL_EXPORT ssize_t read(int fd, void *b, size_t n)
{
    FD_BODY(fd, real.read(fd, b, n), read, EXP_IO_READ);
}

COLL_EXPORT ssize_t __read_chk(int fd, void *b, size_t n, size_t bl)
{
    FD_BODY(fd, real.read_chk(fd, b, n, bl), read, EXP_IO_READ);
}

COLL_EXPORT ssize_t write(int fd, const void *b, size_t n)
{
    FD_BODY(fd, real.write(fd, b, n), write, EXP_IO_WRITE);
}

COLL_EXPORT ssize_t pread(int fd, void *b, size_t n, off_t off)
{
    FD_BODY(fd, real.pread(fd, b, n, off), pread, EXP_IO_PREAD);
}

COLL_EXPORT ssize_t pread64(int fd, void *b, size_t n, off_t off) __attribute__((alias("pread")));

COLL_EXPORT ssize_t __pread_chk(int fd, void *b, size_t n, off_t off, size_t bl)
{
    FD_BODY(fd, real.pread_chk(fd, b, n, off, bl), pread, EXP_IO_PREAD);
}

COLL_EXPORT ssize_t __pread64_chk(int fd, void *b, size_t n, off_t off, size_t bl)
    __attribute__((alias("__pread_chk")));

COLL_EXPORT ssize_t pwrite(int fd, const void *b, size_t n, off_t off)
{
    FD_BODY(fd, real.pwrite(fd, b, n, off), pwrite, EXP_IO_PWRITE);
}

COLL_EXPORT ssize_t pwrite64(int fd, const void *b, size_t n, off_t off)
    __attribute__((alias("pwrite")));

COLL_EXPORT ssize_t readv(int fd, const struct iovec *v, int n)
{
    FD_BODY(fd, real.readv(fd, v, n), readv, EXP_IO_READV);
}

COLL_EXPORT ssize_t writev(int fd, const struct iovec *v, int n)
{
    FD_BODY(fd, real.writev(fd, v, n), writev, EXP_IO_WRITEV);
}

COLL_EXPORT ssize_t preadv(int fd, const struct iovec *v, int n, off_t off)
{
    FD_BODY(fd, real.preadv(fd, v, n, off), preadv, EXP_IO_PREADV);
}

COLL_EXPORT ssize_t preadv64(int fd, const struct iovec *v, int n, off_t off)
    __attribute__((alias("preadv")));

COLL_EXPORT ssize_t pwritev(int fd, const struct iovec *v, int n, off_t off)
{
    FD_BODY(fd, real.pwritev(fd, v, n, off), pwritev, EXP_IO_PWRITEV);
}

COLL_EXPORT ssize_t pwritev64(int fd, const struct iovec *v, int n, off_t off)
    __attribute__((alias("pwritev")));

COLL_EXPORT off_t lseek(int fd, off_t off, int whence)
{
    uint64_t t0;
    trace_thr_t *t = io_enter(RA(), &t0);
    if (!t)
        return real.lseek(fd, off, whence);
    off_t rc = real.lseek(fd, off, whence);
    io_done(t, FU_REGS(), (const void *)lseek, t0, EXP_IO_LSEEK, fd, rc < 0, 0, NULL);
    return rc;
}

COLL_EXPORT off_t lseek64(int fd, off_t off, int whence) __attribute__((alias("lseek")));

/* fsync, fdatasync, close: 0 or -1. close names the descriptor first (it is gone after). */
COLL_EXPORT int fsync(int fd)
{
    FD_BODY(fd, real.fsync(fd), fsync, EXP_IO_FSYNC);
}

COLL_EXPORT int fdatasync(int fd)
{
    FD_BODY(fd, real.fdatasync(fd), fdatasync, EXP_IO_FSYNC);
}

/* Records a call that ends a descriptor's use (close, fclose): named before, forgotten after. */
static void io_closed(trace_thr_t *t, fu_regs_t r, const void *fn, uint64_t t0, uint32_t call,
                      int fd, int failed, const char *name)
{
    io_done(t, r, fn, t0, call, fd, failed, 0, name);
    if (!failed)
        fd_mark(fd, 0);
}

COLL_EXPORT int close(int fd)
{
    if (coll_fd_owned(fd))
        return 0; /* the collector's: a program closing what it did not open keeps running */
    uint64_t t0;
    trace_thr_t *t = io_enter(RA(), &t0);
    if (!t) {
        int rc = COLL_BLOCKING(real.close(fd));
        if (rc == 0)
            fd_mark(fd, 0);
        return rc;
    }
    char buf[EXP_IO_NAME_MAX + 1];
    const char *name = fd_named(fd) ? NULL : fd_name(fd, buf, sizeof buf);
    t0 = trace_now();
    int rc = COLL_BLOCKING(real.close(fd));
    io_closed(t, FU_REGS(), (const void *)close, t0, EXP_IO_CLOSE, fd, rc < 0, name);
    return rc;
}

COLL_EXPORT int dup2(int old, int fd)
{
    resolve();
    coll_fd_evacuate(fd); /* the collector's log or events moved out of the way first */
    int rc = COLL_BLOCKING(real.dup2(old, fd));
    if (rc >= 0 && rc != old)
        fd_mark(rc, 0);
    return rc;
}

COLL_EXPORT int dup3(int old, int fd, int flags)
{
    resolve();
    coll_fd_evacuate(fd);
    int rc = COLL_BLOCKING(real.dup3(old, fd, flags));
    if (rc >= 0)
        fd_mark(rc, 0);
    return rc;
}

/* open and friends: the mode argument exists when O_CREAT or O_TMPFILE is given. */
static mode_t open_mode(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

#define OPEN_BODY(path, call_expr, fn)                                                             \
    uint64_t t0;                                                                                   \
    trace_thr_t *t = io_enter(RA(), &t0);                                                          \
    if (!t)                                                                                        \
        return COLL_BLOCKING(call_expr);                                                           \
    int fd = COLL_BLOCKING(call_expr);                                                             \
    io_done(t, FU_REGS(), (const void *)fn, t0, EXP_IO_OPEN, fd, fd < 0, 0, path);                \
    return fd

COLL_EXPORT int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = open_mode(flags, ap);
    va_end(ap);
    OPEN_BODY(path, real.open(path, flags, mode), open);
}

COLL_EXPORT int open64(const char *path, int flags, ...) __attribute__((alias("open")));

COLL_EXPORT int openat(int dir, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = open_mode(flags, ap);
    va_end(ap);
    OPEN_BODY(path, real.openat(dir, path, flags, mode), openat);
}

COLL_EXPORT int openat64(int dir, const char *path, int flags, ...)
    __attribute__((alias("openat")));

COLL_EXPORT int __open_2(const char *path, int flags)
{
    OPEN_BODY(path, real.open_2(path, flags), open);
}

COLL_EXPORT int __open64_2(const char *path, int flags) __attribute__((alias("__open_2")));

COLL_EXPORT int __openat_2(int dir, const char *path, int flags)
{
    OPEN_BODY(path, real.openat_2(dir, path, flags), openat);
}

COLL_EXPORT int __openat64_2(int dir, const char *path, int flags)
    __attribute__((alias("__openat_2")));

COLL_EXPORT int creat(const char *path, mode_t mode)
{
    OPEN_BODY(path, real.creat(path, mode), creat);
}

COLL_EXPORT int creat64(const char *path, mode_t mode) __attribute__((alias("creat")));

/* ---- stdio ------------------------------------------------------------------------------------ */

static int fp_fd(FILE *fp) { return fp ? fileno(fp) : -1; }

/* A stdio call that returns NULL, EOF or a short count for both the end of the file and an
 * error: only the stream's error flag says it failed. */
static int fp_failed(FILE *fp) { return fp && ferror(fp); }

#define FOPEN_BODY(path, call_expr, fn)                                                            \
    uint64_t t0;                                                                                   \
    trace_thr_t *t = io_enter(RA(), &t0);                                                          \
    if (!t)                                                                                        \
        return COLL_BLOCKING(call_expr);                                                           \
    FILE *fp = COLL_BLOCKING(call_expr);                                                           \
    io_done(t, FU_REGS(), (const void *)fn, t0, EXP_IO_FOPEN, fp_fd(fp), !fp, 0, path);           \
    return fp

COLL_EXPORT FILE *fopen(const char *path, const char *mode)
{
    FOPEN_BODY(path, real.fopen(path, mode), fopen);
}

COLL_EXPORT FILE *fopen64(const char *path, const char *mode) __attribute__((alias("fopen")));

COLL_EXPORT FILE *freopen(const char *path, const char *mode, FILE *old)
{
    FOPEN_BODY(path, real.freopen(path, mode, old), freopen);
}

COLL_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *old)
    __attribute__((alias("freopen")));

COLL_EXPORT FILE *fdopen(int fd, const char *mode)
{
    FOPEN_BODY(NULL, real.fdopen(fd, mode), fdopen);
}

COLL_EXPORT int fclose(FILE *fp)
{
    uint64_t t0;
    trace_thr_t *t = io_enter(RA(), &t0);
    if (!t) {
        int fd = fp_fd(fp);
        int rc = COLL_BLOCKING(real.fclose(fp));
        if (rc == 0)
            fd_mark(fd, 0);
        return rc;
    }
    int fd = fp_fd(fp);
    char buf[EXP_IO_NAME_MAX + 1];
    const char *name = fd_named(fd) ? NULL : fd_name(fd, buf, sizeof buf);
    t0 = trace_now();
    int rc = COLL_BLOCKING(real.fclose(fp));
    io_closed(t, FU_REGS(), (const void *)fclose, t0, EXP_IO_FCLOSE, fd, rc == EOF, name);
    return rc;
}

/* fread, fwrite and their kin: counts of items of size bytes. */
#define ITEMS_BODY(fp, size, n, call_expr, fn, call_id, write)                                    \
    uint64_t t0;                                                                                   \
    trace_thr_t *t = io_enter(RA(), &t0);                                                          \
    if (!t)                                                                                        \
        return COLL_BLOCKING(call_expr);                                                           \
    size_t rc = COLL_BLOCKING(call_expr);                                                          \
    io_done(t, FU_REGS(), (const void *)fn, t0, call_id, fp_fd(fp),                                \
            rc < (n) && ((write) || fp_failed(fp)), (uint64_t)rc * (size), NULL);                 \
    return rc

COLL_EXPORT size_t fread(void *b, size_t size, size_t n, FILE *fp)
{
    ITEMS_BODY(fp, size, n, real.fread(b, size, n, fp), fread, EXP_IO_FREAD, 0);
}

COLL_EXPORT size_t __fread_chk(void *b, size_t bl, size_t size, size_t n, FILE *fp)
{
    ITEMS_BODY(fp, size, n, real.fread_chk(b, bl, size, n, fp), fread, EXP_IO_FREAD, 0);
}

COLL_EXPORT size_t fwrite(const void *b, size_t size, size_t n, FILE *fp)
{
    ITEMS_BODY(fp, size, n, real.fwrite(b, size, n, fp), fwrite, EXP_IO_FWRITE, 1);
}

/* fgets: the line read, or NULL. */
#define FGETS_BODY(fp, call_expr, fn)                                                              \
    uint64_t t0;                                                                                   \
    trace_thr_t *t = io_enter(RA(), &t0);                                                          \
    if (!t)                                                                                        \
        return COLL_BLOCKING(call_expr);                                                           \
    char *rc = COLL_BLOCKING(call_expr);                                                           \
    io_done(t, FU_REGS(), (const void *)fn, t0, EXP_IO_FGETS, fp_fd(fp), !rc && fp_failed(fp),   \
            rc ? strlen(rc) : 0, NULL);                                                            \
    return rc

COLL_EXPORT char *fgets(char *s, int n, FILE *fp)
{
    FGETS_BODY(fp, real.fgets(s, n, fp), fgets);
}

COLL_EXPORT char *__fgets_chk(char *s, size_t size, int n, FILE *fp)
{
    FGETS_BODY(fp, real.fgets_chk(s, size, n, fp), fgets);
}

#define GETDELIM_BODY(call_expr, fn)                                                               \
    uint64_t t0;                                                                                   \
    trace_thr_t *t = io_enter(RA(), &t0);                                                          \
    if (!t)                                                                                        \
        return COLL_BLOCKING(call_expr);                                                           \
    ssize_t rc = COLL_BLOCKING(call_expr);                                                         \
    io_done(t, FU_REGS(), fn, t0, EXP_IO_GETLINE, fp_fd(fp), rc < 0 && fp_failed(fp),             \
            rc > 0 ? (uint64_t)rc : 0, NULL);                                                      \
    return rc

COLL_EXPORT ssize_t getdelim(char **line, size_t *cap, int delim, FILE *fp)
{
    GETDELIM_BODY(real.getdelim(line, cap, delim, fp), (const void *)getdelim);
}

COLL_EXPORT ssize_t getline(char **line, size_t *cap, FILE *fp)
{
    GETDELIM_BODY(real.getdelim(line, cap, '\n', fp), (const void *)getline);
}

/* fputs and puts: a non-negative number, or EOF. */
COLL_EXPORT int fputs(const char *s, FILE *fp)
{
    uint64_t t0;
    trace_thr_t *t = io_enter(RA(), &t0);
    if (!t)
        return COLL_BLOCKING(real.fputs(s, fp));
    int rc = COLL_BLOCKING(real.fputs(s, fp));
    io_done(t, FU_REGS(), (const void *)fputs, t0, EXP_IO_FPUTS, fp_fd(fp), rc == EOF,
            rc == EOF ? 0 : strlen(s), NULL);
    return rc;
}

COLL_EXPORT int puts(const char *s)
{
    uint64_t t0;
    trace_thr_t *t = io_enter(RA(), &t0);
    if (!t)
        return COLL_BLOCKING(real.puts(s));
    int rc = COLL_BLOCKING(real.puts(s));
    io_done(t, FU_REGS(), (const void *)puts, t0, EXP_IO_FPUTS, fp_fd(stdout), rc == EOF,
            rc == EOF ? 0 : strlen(s) + 1, NULL);
    return rc;
}

/* The printf family: the characters written, or a negative number. fn names the function the
 * program called. */
#define PRINTF_BODY(fn, fd_expr, call_expr)                                                        \
    uint64_t t0;                                                                                   \
    trace_thr_t *t = io_enter(RA(), &t0);                                                          \
    int rc = COLL_BLOCKING(call_expr);                                                             \
    if (t)                                                                                         \
        io_done(t, FU_REGS(), fn, t0, EXP_IO_FPRINTF, fd_expr, rc < 0, rc > 0 ? (uint64_t)rc : 0, \
                NULL);                                                                             \
    return rc

COLL_EXPORT int vfprintf(FILE *fp, const char *fmt, va_list ap)
{
    PRINTF_BODY((const void *)vfprintf, fp_fd(fp), real.vfprintf(fp, fmt, ap));
}

COLL_EXPORT int __vfprintf_chk(FILE *fp, int flag, const char *fmt, va_list ap)
{
    PRINTF_BODY((const void *)vfprintf, fp_fd(fp), real.vfprintf_chk(fp, flag, fmt, ap));
}

COLL_EXPORT int vprintf(const char *fmt, va_list ap)
{
    PRINTF_BODY((const void *)vprintf, fp_fd(stdout), real.vfprintf(stdout, fmt, ap));
}

COLL_EXPORT int __vprintf_chk(int flag, const char *fmt, va_list ap)
{
    PRINTF_BODY((const void *)vprintf, fp_fd(stdout), real.vfprintf_chk(stdout, flag, fmt, ap));
}

COLL_EXPORT int vdprintf(int fd, const char *fmt, va_list ap)
{
    PRINTF_BODY((const void *)vdprintf, fd, real.vdprintf(fd, fmt, ap));
}

COLL_EXPORT int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap)
{
    PRINTF_BODY((const void *)vdprintf, fd, real.vdprintf_chk(fd, flag, fmt, ap));
}

/* The variadic forms: their arguments as a va_list for the v-form. */
#define VA_PRINTF(fn, fd_expr, call_expr)                                                          \
    resolve();                                                                                     \
    va_list ap;                                                                                    \
    va_start(ap, fmt);                                                                             \
    uint64_t t0;                                                                                   \
    trace_thr_t *t = io_enter(RA(), &t0);                                                          \
    int rc = COLL_BLOCKING(call_expr);                                                             \
    va_end(ap);                                                                                    \
    if (t)                                                                                         \
        io_done(t, FU_REGS(), fn, t0, EXP_IO_FPRINTF, fd_expr, rc < 0, rc > 0 ? (uint64_t)rc : 0, \
                NULL);                                                                             \
    return rc

COLL_EXPORT int printf(const char *fmt, ...)
{
    VA_PRINTF((const void *)printf, fp_fd(stdout), real.vfprintf(stdout, fmt, ap));
}

COLL_EXPORT int __printf_chk(int flag, const char *fmt, ...)
{
    VA_PRINTF((const void *)printf, fp_fd(stdout), real.vfprintf_chk(stdout, flag, fmt, ap));
}

COLL_EXPORT int fprintf(FILE *fp, const char *fmt, ...)
{
    VA_PRINTF((const void *)fprintf, fp_fd(fp), real.vfprintf(fp, fmt, ap));
}

COLL_EXPORT int __fprintf_chk(FILE *fp, int flag, const char *fmt, ...)
{
    VA_PRINTF((const void *)fprintf, fp_fd(fp), real.vfprintf_chk(fp, flag, fmt, ap));
}

COLL_EXPORT int dprintf(int fd, const char *fmt, ...)
{
    VA_PRINTF((const void *)dprintf, fd, real.vdprintf(fd, fmt, ap));
}

COLL_EXPORT int __dprintf_chk(int fd, int flag, const char *fmt, ...)
{
    VA_PRINTF((const void *)dprintf, fd, real.vdprintf_chk(fd, flag, fmt, ap));
}

/* fflush, fseek, rewind: positioning and flushing. */
COLL_EXPORT int fflush(FILE *fp)
{
    uint64_t t0;
    trace_thr_t *t = io_enter(RA(), &t0);
    if (!t)
        return COLL_BLOCKING(real.fflush(fp));
    int rc = COLL_BLOCKING(real.fflush(fp));
    io_done(t, FU_REGS(), (const void *)fflush, t0, EXP_IO_FFLUSH, fp_fd(fp), rc == EOF, 0,
            NULL);
    return rc;
}

#define FSEEK_BODY(call_expr, fn)                                                                  \
    uint64_t t0;                                                                                   \
    trace_thr_t *t = io_enter(RA(), &t0);                                                          \
    if (!t)                                                                                        \
        return COLL_BLOCKING(call_expr);                                                           \
    int rc = COLL_BLOCKING(call_expr);                                                             \
    io_done(t, FU_REGS(), fn, t0, EXP_IO_FSEEK, fp_fd(fp), rc < 0, 0, NULL);                      \
    return rc

COLL_EXPORT int fseeko(FILE *fp, off_t off, int whence)
{
    FSEEK_BODY(real.fseeko(fp, off, whence), (const void *)fseeko);
}

COLL_EXPORT int fseeko64(FILE *fp, off_t off, int whence) __attribute__((alias("fseeko")));

COLL_EXPORT int fseek(FILE *fp, long off, int whence)
{
    FSEEK_BODY(real.fseeko(fp, (off_t)off, whence), (const void *)fseek);
}

COLL_EXPORT void rewind(FILE *fp)
{
    uint64_t t0;
    trace_thr_t *t = io_enter(RA(), &t0);
    coll_blocking_t blk;
    threads_blocking_enter(&blk, FU_REGS());
    real.rewind(fp);
    threads_blocking_leave(&blk);
    if (t)
        io_done(t, FU_REGS(), (const void *)rewind, t0, EXP_IO_FSEEK, fp_fd(fp), 0, 0, NULL);
}
