/*
 * iotrace.h - I/O tracing: the interposers of the calls that move data to and from files,
 * sockets and pipes, or open, close, sync and position them.
 *
 * Exported: read, write, pread(64), pwrite(64), readv, writev, preadv(64), pwritev(64),
 * open(64), openat(64), creat(64), close, fsync, fdatasync, lseek(64); and in stdio: fopen(64),
 * freopen(64), fdopen, fclose, fread, fwrite, fgets, fputs, puts, getline, getdelim, printf,
 * fprintf, dprintf, vprintf, vfprintf, vdprintf, fflush, fseek, fseeko(64), rewind; the fortified
 * forms gcc emits with _FORTIFY_SOURCE (__read_chk, __pread(64)_chk, __fread_chk, __fgets_chk,
 * __printf_chk, __fprintf_chk, __dprintf_chk, __vprintf_chk, __vfprintf_chk, __vdprintf_chk,
 * __open_2, __open64_2, __openat_2, __openat64_2); dup2 and dup3 are followed to forget the
 * name a descriptor had. The one-character stdio calls (getc, putc, fgetc, fputc, putchar, ...)
 * are not traced: one record per character would cost more than the program's I/O.
 *
 * Each call is timed around the real one and recorded (IO, trace.h) with the bytes it moved
 * (the return value, for fread and fwrite items times size), its descriptor (fileno for a
 * FILE *) and its errno when it failed (-1, NULL, EOF with the stream's error set, or a short
 * fread/fwrite with the error set; end of file is not a failure). The file name goes with the
 * record of the call that opened the descriptor (the path as given) and, for a descriptor the
 * collector has not seen opened (inherited, a socket, a dup), with its first traced call (from
 * /proc/self/fd). A process-wide bitmap remembers which descriptors were named; close, fclose,
 * dup2 and dup3 forget them.
 *
 * Depends on trace.h. Normal context; errno and return values are the real call's.
 */
#ifndef TALLY_COLLECTOR_IOTRACE_H
#define TALLY_COLLECTOR_IOTRACE_H

#include "trace.h"

#endif
