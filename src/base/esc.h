/*
 * esc.h - strings from an experiment made harmless where they are shown: on a terminal as text,
 * and in JSON.
 *
 * Every string an experiment holds (function names, demangled or not, labels, hosts, paths, file
 * names, warnings, source lines of files it names) is data written by the profiled program or by
 * whoever wrote the files: printed raw it could colour the terminal, retitle its window, move the
 * cursor, reverse the order of what follows (Unicode bidi overrides) or forge whole output lines
 * (an embedded newline). The front ends print them only through this module:
 *
 *  - Text: esc_printf/esc_fprintf are printf whose every %s argument (and %c) is escaped, so that
 *    a format string states the only line breaks and control bytes that reach the terminal. In
 *    an escaped string, C0 control bytes and DEL are shown as \n, \t, \r or \xNN; the C1 controls
 *    (U+0080-U+009F) and the invisible direction and line marks (U+061C, U+200E, U+200F,
 *    U+2028-U+202E, U+2066-U+2069) as \uNNNN; every byte that is not part of valid UTF-8
 *    (stray continuation bytes, overlong forms, surrogates, beyond U+10FFFF, cut sequences) as
 *    \xNN. Backslashes are not doubled: escaping is idempotent (an escaped string is escaped
 *    again into itself), so text built from escaped parts stays readable; text is for people and
 *    is ambiguous where a name really holds "\x1b". JSON is exact.
 *  - JSON: esc_json writes a JSON string literal that is always valid JSON and valid UTF-8 (ASCII
 *    escapes only for what is not printable): control characters, DEL, C1 controls and the
 *    marks above as \uNNNN (\n, \t, \r, \b, \f short), and each byte that is not part of valid
 *    UTF-8 as the lone surrogate \uDCNN (NN the byte: Python's "surrogateescape", PEP 383), so
 *    that the original bytes come back with s.encode("utf-8", "surrogateescape").
 *
 * Depends on the C library only. Thread-safe (no state); not async-signal-safe (stdio).
 * Errors: output errors are those of the FILE (ferror); the counts returned are like printf's.
 */
#ifndef TALLY_BASE_ESC_H
#define TALLY_BASE_ESC_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* s escaped for text into dst (NUL-terminated, truncated to n - 1 bytes, never in the middle of
 * an escape); returns the length the whole escaped string has, like snprintf. */
size_t esc_text(char *dst, size_t n, const char *s);
/* s escaped for text, to out. */
void esc_fputs(const char *s, FILE *out);
/* s as a JSON string literal (with its quotes), to out. */
void esc_json(FILE *out, const char *s);
/* printf to out in which every %s argument and %c character is escaped for text (width and
 * precision count bytes: precision those of the argument, width those shown). Returns the number
 * of bytes written, or -1 on an output error. %n, %ls and %lc are not supported (abort). On an
 * unbuffered stream (stderr) the whole message is one write, so that processes sharing the
 * stream (an MPI job's ranks) do not cut into each other's messages. */
int esc_vfprintf(FILE *out, const char *fmt, va_list ap);
int esc_fprintf(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int esc_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
