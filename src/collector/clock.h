/*
 * clock.h - clock profiling: per-thread profiling timers, the signal handlers, the thread registry.
 * This is the collector's ASYNC-SIGNAL-SAFE CORE: everything that runs in signal context is here.
 *
 * Source of samples, per thread:
 *  - perf_event_open PERF_COUNT_SW_TASK_CLOCK with sample_period = interval, a two-page ring that
 *    records PERF_SAMPLE_IP (its misc field says user or kernel mode), the overflow signal routed
 *    to the thread (O_ASYNC, F_SETSIG = coll_proc.sig, F_SETOWN_EX F_OWNER_TID). The event is
 *    armed with PERF_EVENT_IOC_REFRESH 16 and each handler run gives one back, so a thread that
 *    cannot take the signal has at most 16 queued (they never pile up in the real-time queue).
 *  - fallback when perf is unavailable: timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID);
 *    user/system split from RUSAGE_THREAD deltas.
 * Each sample is weighted by the thread CPU time (CLOCK_THREAD_CPUTIME_ID) that passed since the
 * thread's previous sample, never by the nominal interval.
 *
 * Per-thread state lives in initial-exec TLS; stack buffers are mmap'd when the thread starts, so
 * the handler allocates nothing, takes no lock and calls no stdio. Descriptors are moved to high
 * numbers. The signal handler saves and restores errno, recognizes its own signals (si_fd of the
 * thread's perf event, or a timer with our magic value) and hands any other delivery of the same
 * signal to the program's handler (see interpose.c, which keeps the program's view of it).
 *
 * Depends on: collector.h (process context, log), unwind.h, evwriter.
 */
#ifndef TALLY_COLLECTOR_CLOCK_H
#define TALLY_COLLECTOR_CLOCK_H

#include <signal.h>
#include <stdint.h>

#include "collector.h"

/* Frames of a thread's last sample kept for the sampler thread (deeper stacks are cut). */
#define CLOCK_LAST_MAX 128

/* The stack (leaf first) of thread tid's last clock sample: copies up to max frames into pcs and
 * returns their number, 0 when the thread has none. *hint caches the registry slot (start with
 * -1; after a search in vain it holds a count-down so that the registry is not searched again on
 * every call). Any thread, any context; never blocks (a stack being written is retried, then
 * skipped). */
uint32_t clock_last_stack(pid_t tid, int *hint, uint64_t *pcs, uint32_t max, uint32_t *flags);

/* Chooses the source (probing perf on the calling thread), installs the profiling handler.
 * Normal context, once per image. Returns 0 or -1 (clock profiling then stays off). */
int clock_proc_init(coll_proc_t *p);

/* Starts profiling the calling thread and logs `thread` (how: main, pthread_create, fork-child).
 * Normal context. Safe to call twice (the second call does nothing). */
void clock_thread_start(coll_proc_t *p, const char *how);

/* Stops profiling the calling thread and logs `thread-end`. AS-safe (used on fatal signals). */
void clock_thread_stop(coll_proc_t *p);
/* The thread is exiting (TLS destructor): clock_thread_stop, then frees its alternate stack. */
void clock_thread_exit(coll_proc_t *p);

/* At the end of the image: logs `thread-end` for every other thread still registered (CPU time
 * from its CPU clock, user/system from /proc). AS-safe. */
void clock_end_other_threads(coll_proc_t *p);

/* In a fork child: forgets every thread's event, ring and stream without touching the parent's
 * (the child has only the calling thread). Normal context. */
void clock_after_fork_child(coll_proc_t *p);

/* Blocks / restores the profiling signal in the calling thread (around dlopen and our own
 * dl_iterate_phdr). */
void clock_block(coll_proc_t *p, sigset_t *old);
void clock_unblock(const sigset_t *old);

/* The program's own wish for the profiling signal in the calling thread (1: it blocked it), which
 * the interposed sigprocmask/pthread_sigmask keep and report back; the kernel never blocks it
 * for the program. A handler of the program run by the collector sees its sa_mask's wish. */
extern __thread int clock_prog_blocked __attribute__((tls_model("initial-exec")));

/* Is the calling thread inside the collector's handler or a priming unwind? (Then libunwind's
 * own sigprocmask calls must not be filtered by the interposer.) */
int clock_in_core(void);

/* The program's view of signal sig (kept by the sigaction interposer for the signals the
 * collector owns: the profiling signal and the fatal ones). */
int clock_owns_signal(const coll_proc_t *p, int sig);
void clock_prog_action(int sig, const struct sigaction *act, struct sigaction *old);

/* Installs the fatal-signal handlers (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS):
 * they finalize the experiment, then behave as the program's own disposition would. */
void clock_install_fatal(coll_proc_t *p);

/* The real pthread_sigmask, sigaction (set by interpose.c before anything else). */
extern int (*clock_real_sigmask)(int, const sigset_t *, sigset_t *) COLL_HIDDEN;
extern int (*clock_real_sigaction)(int, const struct sigaction *, struct sigaction *) COLL_HIDDEN;

#endif
