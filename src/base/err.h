/*
 * err.h - error codes and messages shared by every part of tally.
 *
 * Library code (src/base, src/experiment, src/analyzer, ...) returns a negative TALLY_E* code and
 * fills a tally_err_t with a message that names the subject and, where it can, what to do. Only
 * src/cli prints and exits. One table (TALLY_ERRNO_MAP) generates both the enum and the names.
 *
 * Depends on nothing. Thread-safe (no shared state). Not for signal context (uses vsnprintf).
 */
#ifndef TALLY_BASE_ERR_H
#define TALLY_BASE_ERR_H

#include <stdarg.h>

#define TALLY_ERRNO_MAP(X)                                                \
    X(OK, "success")                                                      \
    X(IO, "input/output error")                                           \
    X(NOMEM, "out of memory")                                             \
    X(NOTEXP, "not an experiment")                                        \
    X(CORRUPT, "corrupt data")                                            \
    X(VERSION, "unsupported format version")                              \
    X(USAGE, "bad usage")                                                 \
    X(NOTFOUND, "not found")                                              \
    X(EXEC, "cannot run program")                                         \
    X(UNSUPPORTED, "not supported on this system")

enum {
#define X(name, msg) TALLY_E##name##_IDX,
    TALLY_ERRNO_MAP(X)
#undef X
};
enum {
#define X(name, msg) TALLY_E##name = -TALLY_E##name##_IDX,
    TALLY_ERRNO_MAP(X)
#undef X
};

typedef struct tally_err {
    int code;       /* 0 or a negative TALLY_E* code */
    char msg[1024]; /* human message, complete sentence without trailing newline */
} tally_err_t;

/* Sets err->code and formats err->msg; returns code, so `return tally_errf(e, ...)` works. */
int tally_errf(tally_err_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The short name of a code ("corrupt data"). */
const char *tally_strerror(int code);

#endif
