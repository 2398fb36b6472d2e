/*
 * interpose.h - the functions libtally-collector.so exports in place of libc's, and the few
 * internal entry points the rest of the collector uses.
 *
 * Exported (default visibility; unversioned definitions, so that every symbol version a program
 * was linked against binds to them, e.g. pthread_create@GLIBC_2.2.5 and @GLIBC_2.34):
 *   threads     pthread_create (the start routine is wrapped: profiling starts in the new thread,
 *               a TLS destructor ends it on return, pthread_exit or cancellation)
 *   processes   exec{l,lp,le,v,vp,vpe,ve}, fexecve, posix_spawn[p] (the new image gets a new
 *               environment array, for that call only, with TALLY_SETTINGS and the collector in
 *               LD_PRELOAD, or without both when not followed; when they make the call fail with
 *               E2BIG it is made again without them and the log says so),
 *               _exit, _Exit (the end record; exit and a return from main are seen through
 *               on_exit and the collector's destructor);
 *               fork is followed with pthread_atfork (covers fork, daemon, forkpty, ...)
 *   loader      dlopen, dlmopen, dlclose: the profiling signal is blocked around them, the map of
 *               load objects is rescanned after; the call is made so that the loader sees the
 *               program's caller (its RUNPATH, $ORIGIN and namespace), not the collector
 *   signals     sigaction, signal, sysv_signal, bsd_signal: the program's view of the signals
 *               the collector owns (the profiling signal, the fatal ones) is kept apart;
 *               sigprocmask, pthread_sigmask: the profiling signal is never blocked by the program
 * Every interposer preserves errno except where the real call sets it, and passes straight
 * through when the collector is disabled or the caller is a vfork-style child.
 *
 * Depends on: collector.h, threads.h, signals.h, maps.h. Normal context, except that _exit/exec paths are
 * AS-safe (they may run in a vfork child or a signal handler).
 */
#ifndef TALLY_COLLECTOR_INTERPOSE_H
#define TALLY_COLLECTOR_INTERPOSE_H

#include "collector.h"

/* Looks up the real functions (dlsym RTLD_NEXT). Idempotent; called before anything else. */
void interpose_resolve(void);
/* Creates the TLS key whose destructor ends a thread's profiling. */
int interpose_init(coll_proc_t *p);
/* Marks the calling thread so that its exit runs the TLS destructor. */
void interpose_mark_thread(void);

#endif
