/*
 * trace.h - the core shared by the tracing interposers (sync.c, heap.c, iotrace.c): settings,
 * the per-thread state and event stream, the reentrancy guard, stacks, and the records.
 *
 * Settings come from coll_proc.set (settings.def: sync, heap, io; read by trace_settings during
 * initialization): sync is off, a threshold in ns (0: every call) or calibrated (6 times the
 * mean uncontended pthread_mutex_lock, measured at start).
 * Tracing starts with trace_start (the end of the image's initialization, so nothing the
 * collector does while starting is traced) and stops with trace_stop (the end of the image).
 *
 * Every traced thread writes its records into a stream of its own (not its clock stream, so a
 * profiling signal never finds a traced call's writer busy), set up lazily on its first record.
 * When the thread's TLS destructor has run (trace_thread_exit), later records of the thread (a
 * free in a destructor that runs after ours) go to one process-wide stream under a spinlock.
 *
 * Nothing the collector does is traced: an interposer passes straight through when its caller is
 * libtally-collector.so itself, when the thread is inside the collector (trace_thr.guard > 0:
 * libunwind, the loader, libc working for us, the writing of a record), when it is already inside
 * a traced call of the same kind (trace_thr.busy), and before trace_start. A call of another kind
 * inside a traced call is the program's too and is traced (fopen's buffer under -H on -i on).
 * Records are written only inside the duration window and while collection is not paused.
 *
 * Stacks: the entry of the interposer (libtally-collector.so's function of the traced name, so
 * that the leaf is named as the program called it, whatever alias the library's symbol table
 * prefers) as the leaf, then the caller's return addresses from fastunwind. Not for signal handlers (fastunwind may call the
 * loader); a traced call made inside a signal handler of the program is recorded like any other,
 * with the stack cut at the signal frame. Depends on collector.h, fastunwind.h, evwriter.
 */
#ifndef TALLY_COLLECTOR_TRACE_H
#define TALLY_COLLECTOR_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "collector.h"
#include "fastunwind.h"
#include "signals.h"
#include "heapmap.h"

typedef struct trace_cfg {
    int heap, io, sync;        /* what is traced */
    int heap_map;              /* no heap tracing, but the allocation map (heapmap.h) */
    uint64_t sync_threshold;   /* ns: waits at least this long are recorded (0: every call) */
    int sync_calibrated;       /* the threshold comes from the calibration */
    uint64_t sync_calibration; /* ns: the mean uncontended pthread_mutex_lock measured at start */
} trace_cfg_t;

extern trace_cfg_t trace_cfg COLL_HIDDEN;

/* What is being traced right now (0 before trace_start and after trace_stop). Read on every call.
 * trace_heap_on is TRACE_HEAP_MAP when the heap interposers feed the allocation map (heapmap.h)
 * instead of heap tracing: trace_alloc and trace_free then write the blocks the map keeps, as
 * MAP_ALLOC and MAP_FREE records, and nothing else. */
enum { TRACE_HEAP_MAP = 2 };
extern int trace_heap_on COLL_HIDDEN, trace_sync_on COLL_HIDDEN, trace_io_on COLL_HIDDEN;

enum { TT_NEW = 0, TT_READY = 1, TT_ENDED = 2 };

struct trace_memo;

typedef struct trace_thr {
    int guard;         /* > 0: inside the collector (or writing a record): every call passes */
    unsigned busy;     /* TRACE_K_* bits: inside a traced call of that kind, which passes */
    int state;         /* TT_* */
    uint64_t stack_hi; /* see fastunwind.h */
    uint64_t *pcs;     /* max_depth + 1 frames */
    struct trace_memo *memo; /* the last walks from a few call sites, with their stack ids */
    size_t map_len;    /* bytes mapped for pcs and memo */
    fu_splice_t splice;   /* inside the collector's dlopen: where the program's frames resume */
    uint64_t tsc_base, ns_base; /* the thread's anchor of the clock (trace_now) */
    exp_stream_t stream;
} trace_thr_t;

extern __thread trace_thr_t trace_thr __attribute__((tls_model("initial-exec"))) COLL_HIDDEN;

/* The collector's own code: calls from here are never traced. */
extern uint64_t trace_self_lo COLL_HIDDEN, trace_self_hi COLL_HIDDEN;

/* The kinds of traced calls. The reentrancy guard is per kind: a call of one kind made inside a
 * traced call of another (the buffer fopen allocates, under -H on -i on) is traced; one of the
 * same kind (the close inside fclose, the mmap inside malloc) is part of the outer call. */
enum { TRACE_K_HEAP = 1, TRACE_K_IO = 2, TRACE_K_SYNC = 4, TRACE_K_API = 8 /* api.c */ };

/* Should a call of kind k with return address ra be traced (on: the kind is being traced)? Then
 * the kind's guard is taken and the thread state returned; else NULL. Release with trace_leave. */
static inline trace_thr_t *trace_enter(unsigned k, int on, uint64_t ra)
{
    trace_thr_t *t = &trace_thr;
    if (__builtin_expect(!on || t->guard || (t->busy & k) ||
                             (ra >= trace_self_lo && ra < trace_self_hi), 0))
        return NULL;
    t->busy |= k;
    return t;
}

static inline void trace_leave(trace_thr_t *t, unsigned k) { t->busy &= ~k; }


/* trace_enter for the calls libunwind makes (mappings, locks, a pipe to probe memory): not
 * traced either while the collector's signal handler runs. */
static inline trace_thr_t *trace_enter_core(unsigned k, int on, uint64_t ra)
{
    if (!on || signals_in_core())
        return NULL;
    return trace_enter(k, on, ra);
}

/* CLOCK_MONOTONIC ns, the time of every record. Where the kernel's clock is the TSC, read from
 * the TSC (a third of the cost of clock_gettime): each thread anchors it to clock_gettime every
 * millisecond or 4096 reads, at a rate measured from the start, so it stays within a few tens of
 * ns of CLOCK_MONOTONIC (and never goes back within a thread's stream: the writer clamps). */
uint64_t trace_now(void) COLL_HIDDEN;

/* The records. fn: the interposer's entry (the stack's leaf); r: its caller (FU_REGS in the
 * interposer). t: the time of the event. Errno is preserved. */
void trace_alloc_write(trace_thr_t *th, fu_regs_t r, const void *fn, uint64_t t, const void *p,
                       uint64_t size, uint32_t call) COLL_HIDDEN;
void trace_free_write(trace_thr_t *th, uint64_t t, const void *p, uint64_t size,
                      uint32_t call) COLL_HIDDEN;
/* trace_alloc(th, r, fn, t, p, size, call) and trace_free(th, t, p, size, call): the records of
 * heap tracing, or of the allocation map (heapmap.h) for the blocks it keeps. Macros, so that a
 * call the map does not keep costs its choice alone: the time and the registers (t and r, often
 * trace_now() and FU_REGS()) are not taken then. p, size and call are evaluated twice. */
#define trace_alloc(th, r, fn, t, p, size, call)                                                 \
    do {                                                                                          \
        if (trace_heap_on != TRACE_HEAP_MAP || heapmap_keep_alloc((p), (size), (call)))           \
            trace_alloc_write((th), (r), (fn), (t), (p), (size), (call));                         \
    } while (0)
#define trace_free(th, t, p, size, call)                                                          \
    do {                                                                                          \
        if (trace_heap_on != TRACE_HEAP_MAP || heapmap_keep_free(&(th)->guard, (p), (call)))              \
            trace_free_write((th), (t), (p), (size), (call));                                     \
    } while (0)
void trace_sync(trace_thr_t *th, fu_regs_t r, const void *fn, uint64_t t, uint64_t wait,
                const void *object, uint32_t call) COLL_HIDDEN;
void trace_io(trace_thr_t *th, fu_regs_t r, const void *fn, uint64_t t, uint64_t ns,
              uint32_t call, uint64_t bytes, int fd, int err, const char *name) COLL_HIDDEN;
/* The malloc family's records, timed inside and written inline in the common case:
 * trace_heap_alloc and trace_heap_free in tracefast.h. */
/* An allocation made before the collector started (heap.c keeps them): written at trace_start
 * with a two-frame stack (fn, the caller's return address). */
void trace_alloc_early(const void *fn, uint64_t ra, const void *p, uint64_t size,
                       uint32_t call) COLL_HIDDEN;

/* ---- the collector API (api.c, include/tally_collector_api.h) ------------------------------ */

/* Records through the API are allowed (between trace_start and trace_stop). */
extern int trace_api_on COLL_HIDDEN;
/* Sets up what records need once (the clock, the collector's code range); 0 while another
 * thread does it. */
int trace_api_ready(void) COLL_HIDDEN;
/* fn (if not NULL) then the frames from r into pcs[max]; 0 when the thread cannot record. */
uint32_t trace_api_stack(trace_thr_t *th, fu_regs_t r, const void *fn, uint64_t *pcs,
                         uint32_t max) COLL_HIDDEN;
/* Writes a TRACE record with stack pcs[n]; in_signal: the thread's stream must be set up
 * already. 0, -EAGAIN (not recording), -EIO (not written: counted as dropped). */
int trace_api_record(trace_thr_t *th, uint64_t t, uint32_t kind, const uint64_t *pcs, uint32_t n,
                     const uint64_t *values, uint32_t nvalues, int in_signal) COLL_HIDDEN;
/* Writes a BLOCK record (the timeline of profiled blocks, blocks.c) into the calling thread's
 * stream: block entered (exit 0) or exited (exit 1) at t. 0, -EAGAIN (not recording now: before
 * trace_start, after trace_stop, paused, outside the window, the thread's stream ended), -EIO
 * (not written: counted as dropped, `trace_dropped_blocks`). Normal context. */
int trace_block(uint64_t t, uint32_t block, int exit) COLL_HIDDEN;
/* Sets up the calling thread's stream now (records written later are not clamped to this). */
void trace_block_stream_ready(void) COLL_HIDDEN;
/* Writes the declarations made so far into this image's log (a fork child's new log). */
void api_log_declarations(void) COLL_HIDDEN;

/* ---- lifecycle (collector.c, interpose.c) ------------------------------------------------- */

/* Takes sync, heap and io from p->set and calibrates the sync threshold; initialization, before
 * the experiment is opened. */
void trace_settings(coll_proc_t *p) COLL_HIDDEN;
/* What tracing adds to the `settings` log record (the calibration). */
void trace_log_settings(exp_line_t *l) COLL_HIDDEN;
/* Finds the collector's own code and starts tracing (also in a fork child, which starts afresh
 * with the calling thread). */
void trace_start(coll_proc_t *p) COLL_HIDDEN;
/* Stops tracing (the end of the image); the counts for the `stats` record. AS-safe. */
void trace_stop(void) COLL_HIDDEN;
void trace_log_stats(exp_line_t *l) COLL_HIDDEN;
/* One `warning` per traced kind that lost records (disk_full: why). AS-safe. */
void trace_warn_dropped(int disk_full) COLL_HIDDEN;
/* The calling thread is exiting (its TLS destructor). */
void trace_thread_exit(void) COLL_HIDDEN;
/* The collector's own thread (the sampler): never traced. */
void trace_exclude_thread(void) COLL_HIDDEN;
/* A fork child, in the atfork handler before trace_start: the parent's streams are not ours. */
void trace_after_fork_child(void) COLL_HIDDEN;

/* sync.c: the calibration; heap.c: the allocations before the start; iotrace.c: descriptors. */
uint64_t sync_calibrate(void) COLL_HIDDEN;
void heap_flush_early(void) COLL_HIDDEN;
/* The collector's initialization is over: unless heap tracing is on, allocations are no longer
 * kept for the start, and the malloc family jumps straight to the real functions. */
void heap_init_done(void) COLL_HIDDEN;
void heap_check_binding(void) COLL_HIDDEN; /* warns when the program's malloc is not ours */
void iotrace_after_fork_child(void) COLL_HIDDEN;

#endif
