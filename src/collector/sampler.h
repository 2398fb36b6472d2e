/*
 * sampler.h - the collector's sampler thread and the sample/pause controls.
 *
 * The sampler thread (one per profiled process, created with the real pthread_create, all
 * signals blocked, never profiled) wakes every state period and
 *  - writes a periodic `sample` packet when one is due (the `sample` setting);
 *  - samples the state of every other thread of the process from /proc/self/task/<tid>/{stat,
 *    schedstat,syscall}: the time a thread was runnable but waiting for a CPU (the kernel's
 *    run delay, exact), and, for a thread that is asleep, which sleep it is (a futex: lock; I/O
 *    calls or uninterruptible sleep: I/O; anything else: sleep), charged with the wall time since
 *    the previous wake-up. It never sends a signal, so no system call of the program is ever
 *    interrupted. A look costs what it reads: `schedstat` of every thread (its exact run time, run
 *    delay and time slices), then, for a thread that was off a CPU, `syscall` (running now, or
 *    the system call, sp and pc it is blocked at) and `stat` only when its state letter can
 *    change the kind; its blocked stack is unwound again only when it may have changed (moved,
 *    or ran and the words its last walk read changed, unwind_remote.h); the directory of
 *    threads is read again only when the thread set may have changed. Looks cost at most 1% of
 *    the program's CPU time (at least 1% of a CPU): with many threads they are made less
 *    often, said in the stats record and a warning. The call stack of a state event is the thread's stack at its last clock sample
 *    (threads_last_stack): the code that ran just before the thread blocked or was preempted.
 * It only makes system calls and writes through the async-signal-safe writer: no malloc, no locks
 * the program could hold.
 *
 * -l <signal>: a `sample` packet when the process receives the signal. -y <signal>: pauses and
 * resumes collection. The API (exported): tally_collector_sample(label), tally_collector_pause(),
 * tally_collector_resume(), reached from programs through include/tally.h.
 *
 * Depends on: collector.h, threads.h, signals.h, evwriter, logfile.
 */
#ifndef TALLY_COLLECTOR_SAMPLER_H
#define TALLY_COLLECTOR_SAMPLER_H

#include "collector.h"

/* Takes the sample period, state period and -l/-y signals from p->set (settings.def). */
void sampler_settings(coll_proc_t *p);
/* Installs the -l/-y handlers and starts the sampler thread (normal context; also in a fork
 * child, where the parent's sampler thread does not exist). */
void sampler_start(coll_proc_t *p);
/* The pause state a process starts in, logged as a `pause` record when paused: a new image
 * (why "start") starts paused under -y SIG without ',r' (gprofng's meaning); a fork child
 * (why "fork") stays as its parent was. Call once its log is open, before sampler_start. */
void sampler_initial_pause(coll_proc_t *p, const char *why);
/* In a fork child: closes the descriptors inherited from the parent's sampler (its thread is not
 * in the child). */
void sampler_forget(coll_proc_t *p);
/* Ends the sampler thread (waiting up to one period) so that the process is single-threaded
 * again, for unshare/setns; returns 1 if there was one to end (restart it with sampler_start). */
int sampler_suspend(coll_proc_t *p);
/* The CPU time the sampler threads of this process used so far, in ns (the running one's CPU
 * clock and those of the ones ended for unshare/setns): the collector's own share of the
 * process's getrusage, which the profile leaves out. Async-signal-safe. */
uint64_t sampler_cpu_ns(coll_proc_t *p);
/* The state sampler's keys of the `stats` record (looks, blocked stacks unwound, looks made later
 * than the state period because of their cost, the longest period then), when states are on. */
void sampler_log_stats(coll_proc_t *p, exp_line_t *l);
/* A warning when looks were made later than the state period because of their cost. */
void sampler_warn_stretched(coll_proc_t *p);

#endif
