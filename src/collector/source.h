/*
 * source.h - the interface of a sampling source, and what the collector does with its sources.
 *
 * A sampling source makes a thread interrupt itself (a perf event's overflow, a timer) with the
 * profiling signal (coll_proc.sig, owned by signals.c) and turns each interruption into records
 * of the thread's events stream. Clock profiling (clock.c) is the first; counter overflow
 * profiling (counters.c) the second (several perf events per thread through perfev.h, routed to
 * the thread the same way). A source is a table of hooks; the collector calls them in this order:
 *
 *   settings      normal, once per image: take the source's settings from p->set (settings.def)
 *                 into coll_proc. Called before the experiment is opened.
 *   proc_init     normal, once per image: probe, choose the mechanism, own the profiling signal
 *                 (signals_own_profiling). Returns 1 when the source will sample, 0 when it is
 *                 off, -1 on failure (it has warned). Only sources that returned 1 are active.
 *   in_use        normal: the values in use for the `settings` record: adjusts the table's
 *                 values (in_use) before they are written (may be NULL).
 *   log_settings  normal: the source's own keys of the `settings` record, after the table's
 *                 (may be NULL).
 *   log_decl      normal: the source's own log records after the `settings` record (metric
 *                 declarations), in every image and fork child (may be NULL).
 *   thread_start  normal, per thread, after the thread has its buffers, stream and slot and is
 *                 TH_ON: open and arm what samples the thread. Returns 0 or -errno.
 *   mine          AS-safe, in the profiling handler: 2 when the delivery is this thread's live
 *                 event of the source, 1 when it only looks like one (a stale one, or the
 *                 program's own use of the signal: the program's handler runs, but a default
 *                 action does not kill), 0 when it is not the source's.
 *   on_overflow   AS-safe, in the profiling handler, for a delivery mine() said 2 to: write the
 *                 sample(s) (source_stack gives the unwound stack), re-arm.
 *   thread_stop   AS-safe, per thread (its exit, the image's end, a fatal signal, an exec),
 *                 after the thread left TH_ON: disarm and close; account the thread's time
 *                 since its last sample (now: CLOCK_MONOTONIC, cpu: the thread's CPU time, the
 *                 figures its `thread-end` will say).
 *   fork_child    normal, in a fork child: forget the parent's per-thread state of the calling
 *                 thread (perf events of every thread are dropped by perfev_after_fork_child).
 *   handler_edge  AS-safe, in the profiling handler, just before (entering 1) and after
 *                 (entering 0) any source's on_overflow in this thread: what the source's events
 *                 record in between is the collector's, not the program's (may be NULL).
 * Exec needs no hook of its own: the image's end before an exec runs thread_stop for the calling
 * thread; the others vanish with the exec, and their events and timers with them (descriptors are
 * close-on-exec, timers are deleted by the kernel).
 *
 * Depends on: collector.h, threads.h.
 */
#ifndef TALLY_COLLECTOR_SOURCE_H
#define TALLY_COLLECTOR_SOURCE_H

#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

#include "collector.h"
#include "threads.h"

typedef struct coll_source_ops {
    const char *name;
    void (*settings)(coll_proc_t *p);
    int (*proc_init)(coll_proc_t *p);
    void (*in_use)(const coll_proc_t *p, exp_settings_t *in_use);
    void (*log_settings)(const coll_proc_t *p, exp_line_t *l);
    void (*log_decl)(const coll_proc_t *p);
    int (*thread_start)(coll_proc_t *p, coll_thread_t *t);
    int (*mine)(const coll_thread_t *t, const siginfo_t *si);
    void (*on_overflow)(coll_proc_t *p, coll_thread_t *t, const siginfo_t *si,
                        const ucontext_t *uc);
    void (*thread_stop)(coll_proc_t *p, coll_thread_t *t, uint64_t now, uint64_t cpu);
    void (*fork_child)(coll_proc_t *p);
    void (*handler_edge)(coll_thread_t *t, int entering);
} coll_source_ops_t;

/* ---- what the collector does with its sources (source.c) ------------------------------------ */

void sources_settings(coll_proc_t *p) COLL_HIDDEN;
/* proc_init of every source; returns the number of active ones. */
int sources_proc_init(coll_proc_t *p) COLL_HIDDEN;
/* Does any source sample (threads then get buffers, a stream and a slot)? */
int sources_active(void) COLL_HIDDEN;
void sources_settings_in_use(const coll_proc_t *p, exp_settings_t *in_use) COLL_HIDDEN;
void sources_log_settings(const coll_proc_t *p, exp_line_t *l) COLL_HIDDEN;
void sources_log_decl(const coll_proc_t *p) COLL_HIDDEN;
/* thread_start of every active source; 0 if at least one started (or none is active). */
int sources_thread_start(coll_proc_t *p, coll_thread_t *t) COLL_HIDDEN;
void sources_thread_stop(coll_proc_t *p, coll_thread_t *t, uint64_t now, uint64_t cpu) COLL_HIDDEN;
void sources_fork_child(coll_proc_t *p) COLL_HIDDEN;
/* In the profiling handler: hands the delivery to the source whose it is. 2: a source took it;
 * else the program's handler runs, and 1 says it looks like a source's stale delivery (not to be
 * turned into the default action when the program has no handler), 0 not. AS-safe. */
int sources_overflow(coll_proc_t *p, coll_thread_t *t, const siginfo_t *si, const ucontext_t *uc)
    COLL_HIDDEN;

/* ---- services for a source's on_overflow ----------------------------------------------------- */

/* The stack of the interrupted code into the thread's stream: unwinds (only the PC, flagged
 * EXP_STACK_NO_ROOM, when less than the unwinder's room is left on the stack the handler runs
 * on), counts failures and truncations, writes the STACK record if new (*id: its id), publishes
 * it for the sampler thread and writes a CPU record when the CPU changed. 0, or -1 when the
 * stream had no room (counted as dropped). AS-safe. */
int source_stack(coll_proc_t *p, coll_thread_t *t, const ucontext_t *uc, uint64_t now,
                 uint32_t *id) COLL_HIDDEN;

/* Is t within the duration window? */
static inline int source_in_window(const coll_proc_t *p, uint64_t t)
{
    return !p->has_window || (t >= p->win_lo && t <= p->win_hi);
}

static inline void source_count(uint64_t *v, uint64_t d)
{
    if (d)
        __atomic_fetch_add(v, d, __ATOMIC_RELAXED);
}

#endif
