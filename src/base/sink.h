/*
 * sink.h - where a report is written: a FILE (the terminal, a file, a socket) or a growing
 * buffer in memory (for a front end that sends or compares what it formats).
 *
 * The sink owns escaping: sink_printf is printf whose every %s argument and %c character is
 * escaped for text by src/base/esc (so strings of an experiment never reach a terminal raw, and
 * the format string states the only control bytes written); JSON goes through src/base/json,
 * which writes its strings with esc_json. There is no way to write an unescaped string.
 *
 * Depends on src/base/esc and the C library. Not thread-safe (one writer per sink).
 * Ownership: a FILE sink borrows its FILE; a memory sink owns its buffer until sink_take.
 * Errors: output errors are remembered (sink_error); out of memory in a memory sink is one.
 */
#ifndef TALLY_BASE_SINK_H
#define TALLY_BASE_SINK_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

typedef struct sink {
    FILE *f;      /* where bytes go (for memory: an open_memstream) */
    char *mem;    /* memory sink: the buffer open_memstream maintains */
    size_t len;   /* memory sink: its length after the last flush */
    int is_mem;
    int error;    /* set at the first failed write */
} sink_t;

/* A sink writing to f (borrowed: never closed here). */
void sink_file(sink_t *s, FILE *f);
/* A sink writing to memory; returns 0, or -1 when memory ran out. */
int sink_mem(sink_t *s);
/* The bytes written so far to a memory sink (NUL-terminated; valid until the next write);
 * *len gets their count. NULL for a file sink. */
const char *sink_data(sink_t *s, size_t *len);
/* Releases a memory sink (a file sink: flushes it). */
void sink_close(sink_t *s);
/* Escaped printf (see above); returns the bytes written or -1. */
int sink_vprintf(sink_t *s, const char *fmt, va_list ap);
int sink_printf(sink_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as a JSON string literal (quotes included, escaped by esc_json). */
void sink_json_str(sink_t *s, const char *str);
/* 1 once a write has failed. */
int sink_error(sink_t *s);

#endif
