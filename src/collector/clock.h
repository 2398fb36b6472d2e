/*
 * clock.h - clock profiling, the first sampling source (source.h): the thread's CPU time, sampled.
 *
 * Mechanism, chosen once per image (clock_source.proc_init, probing perf on the calling thread):
 *  - perf, for intervals under 10 ms (shorter than a scheduler tick may be):
 *    PERF_COUNT_SW_TASK_CLOCK per thread (perfev.h) with sample_period = the interval, a
 *    two-page ring that records PERF_SAMPLE_IP (its misc field says user or kernel mode), the
 *    overflow signal routed to the thread. The event is armed with PERF_EVENT_IOC_REFRESH 16 and
 *    handlers give back the overflows they consumed (records in the ring and lost ones), 8 at a
 *    time, so a thread that cannot take the signal has at most 16 queued (they never pile up
 *    in the real-time queue) and 7 samples in 8 make no ioctl. Where the kernel refuses kernel-mode
 *    samples, user mode only, with user/system split from RUSAGE_THREAD deltas.
 *  - timer, for intervals of 10 ms and more, and when perf is unavailable:
 *    timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID); user/system split from RUSAGE_THREAD
 *    deltas. The kernel checks it on scheduler ticks, so below a tick it fires at the tick rate,
 *    and at or above one at the asked rate (an expiry keeps its phase). Unlike a perf event, it
 *    costs nothing when its thread is switched in or out: what a thread that wakes often pays.
 * Each sample is weighted by the thread CPU time (CLOCK_THREAD_CPUTIME_ID) that passed since the
 * thread's previous sample, never by the nominal interval; the time since the last sample is
 * charged to the last sampled stack when the thread stops, so a thread's total is its CPU time.
 *
 * Settings (settings.def): clock_ns (coll_proc.interval_ns, 0: off), clock_signal
 * (coll_proc.sig), clock_timer (coll_proc.force_timer). The `settings` record says clock_ns in
 * use (0 when off), clock_source (task-clock, cputime-timer, none) and state_split=rusage.
 *
 * Per-thread state lives in the source's own initial-exec TLS; the hot path (on_overflow) reads
 * the ring, the thread's CPU clock and getcpu, unwinds and writes CLOCK records: no allocation,
 * no lock, no stdio.
 *
 * Depends on: source.h, threads.h, perfev.h, signals.h, evwriter.
 */
#ifndef TALLY_COLLECTOR_CLOCK_H
#define TALLY_COLLECTOR_CLOCK_H

#include "source.h"

extern const coll_source_ops_t clock_source COLL_HIDDEN;

#endif
