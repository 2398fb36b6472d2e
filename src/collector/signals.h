/*
 * signals.h - the signals the collector owns: the profiling signal (its handler hands each
 * delivery to the sampling source whose it is, or to the program) and the fatal signals (their
 * handler ends the experiment, then does what the program's disposition says).
 *
 * For each owned signal the kernel keeps the collector's handler; the program's own disposition
 * is kept here (the sigaction/signal interposers of interpose.c read and write it) and honoured:
 * a delivery that is not the collector's runs the program's handler with its sa_mask and flags,
 * is ignored, or kills the process the default way (after the experiment is finalized). The
 * program's wish to block the profiling signal is kept per thread (signals_prog_blocked) and
 * reported back by the mask interposers; the kernel never blocks it for the program.
 *
 * The profiling handler saves and restores errno, allocates nothing, takes no lock and calls no
 * stdio; it counts as the collector's own code (signals_in_core) while it runs, as does a priming
 * unwind. A thread primes once per process (signals_prime): one unwind inside a real delivery,
 * so that the dynamic linker's first resolutions happen on a large stack.
 *
 * Depends on: collector.h, threads.h, source.h, unwind.h.
 */
#ifndef TALLY_COLLECTOR_SIGNALS_H
#define TALLY_COLLECTOR_SIGNALS_H

#include <signal.h>

#include "collector.h"

/* Installs the profiling handler on p->sig (once; later calls return 0). Normal context.
 * 0 or -1. */
int signals_own_profiling(coll_proc_t *p) COLL_HIDDEN;

/* Installs the fatal-signal handlers (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS):
 * they finalize the experiment, then behave as the program's own disposition would. */
void signals_install_fatal(coll_proc_t *p) COLL_HIDDEN;

/* One unwind of the calling thread inside a delivery of the profiling signal, once per process
 * (see above). Normal context, with the thread's unwinding buffers set. */
void signals_prime(coll_proc_t *p) COLL_HIDDEN;

/* Blocks / restores the profiling signal in the calling thread (around dlopen and the collector's
 * own dl_iterate_phdr, and around the unwinder's priming). */
void signals_block(coll_proc_t *p, sigset_t *old) COLL_HIDDEN;
void signals_unblock(const sigset_t *old) COLL_HIDDEN;

/* The program's own wish for the profiling signal in the calling thread (1: it blocked it), which
 * the interposed sigprocmask/pthread_sigmask keep and report back. A handler of the program run by
 * the collector sees its sa_mask's wish. */
extern __thread int signals_prog_blocked __attribute__((tls_model("initial-exec"))) COLL_HIDDEN;

/* Is the calling thread inside the collector's handler or a priming unwind? (Then libunwind's
 * own sigprocmask calls must not be filtered by the interposer.) signals_core_enter/leave mark
 * such code outside the handler. */
int signals_in_core(void) COLL_HIDDEN;
void signals_core_enter(void) COLL_HIDDEN;
void signals_core_leave(void) COLL_HIDDEN;

/* The program's view of signal sig (kept by the sigaction interposer for the signals the
 * collector owns: the profiling signal and the fatal ones). */
int signals_owned(int sig) COLL_HIDDEN;
void signals_prog_action(int sig, const struct sigaction *act, struct sigaction *old) COLL_HIDDEN;

/* The real pthread_sigmask, sigaction (set by interpose.c before anything else). */
extern int (*signals_real_sigmask)(int, const sigset_t *, sigset_t *) COLL_HIDDEN;
extern int (*signals_real_sigaction)(int, const struct sigaction *, struct sigaction *) COLL_HIDDEN;

#endif
