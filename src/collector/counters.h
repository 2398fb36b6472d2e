/*
 * counters.h - counter overflow profiling (collect -h), the second sampling source (source.h).
 *
 * The counters come from the `counters` setting (settings.def), as tally collect encoded them
 * (src/cli/hwc.c, hwc_encode): for each, the perf_event_attr fields that name the event, the
 * interval, flags (`+` data, a breakpoint address relative to the main program), the CPUs'
 * frequency for cycle counters, the metric's name and the name the user gave.
 *
 * Mechanism: per thread, one perf event per counter (perfev.h) with sample_period = the interval,
 * a two-page ring of PERF_SAMPLE_IP samples (and PERF_SAMPLE_ADDR for `+` counters), its overflow
 * signal (the profiling signal, shared with clock profiling) routed to the thread that caused
 * it, armed with the same headroom as clock profiling. The kernel is counted where it permits
 * (context switches and migrations happen in the kernel), else user mode only. Each overflow
 * becomes one COUNTER record per ring sample with the thread's unwound stack (the stack service
 * of clock profiling) and the interval as its value; a `+` counter's is followed by a MEMREF
 * record (source: the counter's id + 1) with the sampled PC and data address and, when the
 * kernel gave no address, the interrupted registers (mref.h), which the data views read.
 * A page-fault, context-switch or migration counter is disabled while its own handler runs, so
 * that the collector's own page faults and switches are not charged to the program.
 *
 * Not-program-related counters (events of an uncore PMU: they count the machine, not a thread)
 * are counted on every CPU (pid -1) by the root image only, from its start to its end, and
 * written once at its end, under the artificial function collector_not_program_related: no call
 * stack, as the seed has it. System-wide counting needs CAP_PERFMON or perf_event_paranoid <= 0;
 * without it the counter is not collected and a warning says why.
 *
 * Log: per counter a `metric` record (the metric's name; title: the name the user gave; unit;
 * `hz` for cycle counters, `time=1` for task-clock) and a `counter` record (id, what it is), when
 * the image starts; at its end a `counter-stats` record per counter: samples written, events
 * they stand for, events the kernel counted (read from every thread's event at its end), time
 * enabled and running (multiplexing: running < enabled means the PMU was shared and the samples
 * cover running/enabled of the run), throttled and lost overflows; a `warning` for each of those
 * problems.
 *
 * Contexts: settings, proc_init, thread_start, fork_child and the log hooks run in normal
 * context; mine, on_overflow and thread_stop in the profiling handler or at the thread's end
 * (system calls, plain memory and the AS-safe evwriter only).
 *
 * Depends on: source.h, threads.h, perfev.h, signals.h, evwriter.
 */
#ifndef TALLY_COLLECTOR_COUNTERS_H
#define TALLY_COLLECTOR_COUNTERS_H

#include "source.h"

extern const coll_source_ops_t counters_source COLL_HIDDEN;

/* Parses a `counters` setting value: the number of counters, or -1 with why (normal context, no
 * allocation). Exposed for tests. */
int counters_decode(const char *v, char *why, size_t cap) COLL_HIDDEN;

/* After the settings: does a counter of this run ask for dataspace data (`+`)? */
int counters_dataspace(void) COLL_HIDDEN;

/* At the image's end, before the calling thread stops (coll_finalize): the totals of the
 * not-program-related counters (counted on every CPU by the root image), one COUNTER record
 * each in the calling thread's stream, whose one frame is collector_not_program_related. AS-safe. */
void counters_final(coll_proc_t *p) COLL_HIDDEN;

/* At the image's end (coll_finalize, after every thread stopped): the `counter-stats` records and
 * warnings. */
void counters_log_stats(coll_proc_t *p) COLL_HIDDEN;

#endif
