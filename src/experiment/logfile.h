/*
 * logfile.h - builds and appends the lines of an experiment's text "log" (docs/FORMAT.md).
 *
 * A line is built in a caller-provided buffer (kind, then key=value fields with percent-encoded
 * values) and appended with a single write(2) to a descriptor opened with O_APPEND, so lines never
 * interleave. Everything here is async-signal-safe: no malloc, no stdio, no locks. A line that
 * does not fit its buffer is cut at a field boundary and ends with "truncated=1".
 *
 * Depends on nothing but libc system calls.
 */
#ifndef TALLY_EXPERIMENT_LOGFILE_H
#define TALLY_EXPERIMENT_LOGFILE_H

#include <stddef.h>
#include <stdint.h>

#include "logrec.h" /* EXP_LOG_FIRST_LINE, the record kinds and keys */

typedef struct exp_line {
    char *buf;
    size_t cap, len;
    int cut; /* a field did not fit */
} exp_line_t;

/* Starts a line of the given kind in buf[cap] (cap >= 64). */
void exp_line_begin(exp_line_t *l, char *buf, size_t cap, const char *kind);
void exp_line_str(exp_line_t *l, const char *key, const char *value);   /* percent-encoded */
void exp_line_strn(exp_line_t *l, const char *key, const char *value, size_t n);
/* A value the caller built of bytes that need no encoding (digits, ',', ';', letters), as is. */
void exp_line_raw(exp_line_t *l, const char *key, const char *value, size_t n);
/* key=arg0 arg1 ...: each argument percent-encoded, joined by literal spaces (the cmdline record). */
void exp_line_argv(exp_line_t *l, const char *key, char *const *argv, int argc);
void exp_line_u64(exp_line_t *l, const char *key, uint64_t value);     /* decimal */
void exp_line_i64(exp_line_t *l, const char *key, int64_t value);      /* decimal, signed */
void exp_line_hex(exp_line_t *l, const char *key, uint64_t value);     /* 0x... */
/* Appends the newline and writes the line with one write(2). Returns 0 or -errno. */
int exp_line_write(exp_line_t *l, int fd);

/* Creates (O_EXCL) a log at path with its first line; returns the O_APPEND descriptor or -errno. */
int exp_log_create(const char *path);

/* Percent-decodes s in place (the inverse of the encoding above); returns the new length. */
size_t exp_pct_decode(char *s);

/* v in decimal into out (at least 20 bytes, not NUL-terminated); returns the length. AS-safe. */
size_t exp_fmt_u64(char *out, uint64_t v);

/* Declarations of metrics and record kinds (`metric` and `kind` records), checked the same way by
 * the collector that writes them and the reader: a name is 1 to 63 characters of [a-z0-9_-]
 * starting with a letter; a title (at most EXP_DECL_TITLE_MAX bytes) or unit (at most
 * EXP_DECL_UNIT_MAX) is text without control characters (they would reach terminals); NULL is
 * empty text. AS-safe. */
#define EXP_DECL_NAME_MAX 63
#define EXP_DECL_TITLE_MAX 127
#define EXP_DECL_UNIT_MAX 31
int exp_decl_name_ok(const char *s);
int exp_decl_text_ok(const char *s, size_t max);

#endif
