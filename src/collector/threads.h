/*
 * threads.h - the profiled threads: their lifecycle (start, stop, exit, the end of the image, a
 * fork child), their per-thread context for the sampling sources, and the registry through which
 * other threads see them.
 *
 * A thread is started once (the main thread at initialization, a new thread in the interposed
 * pthread_create's trampoline, the forking thread in a fork child): `thread` is logged, an
 * alternate signal stack is set up when the program has none, its stack bounds are noted (the
 * handler's stack-room check), and, when a source samples, it gets its unwinding buffers (mmap'd
 * now: the handler allocates nothing), its events stream, a registry slot, one priming unwind in a
 * real delivery of the profiling signal (signals.h), and then each active source's thread_start
 * (source.h). It stops (AS-safe: also on fatal signals and at exec, through coll_finalize) with
 * each source's thread_stop and `thread-end`. Threads still running at the end of the image get
 * their `thread-end` from the registry (CPU time from their CPU clocks, user/system from /proc).
 *
 * Registry: a fixed array of slots claimed with CAS by tid. A slot holds what other threads need
 * about a thread: its CPU clock, the CPU time up to which its samples account and their number
 * (written by its sampling source), and the stack of its last sample (a seqlock), which the
 * sampler thread attributes thread states to (sampler.c).
 *
 * Per-thread context lives in initial-exec TLS (coll_thr); sources keep their own per-thread state
 * in their own TLS.
 *
 * Depends on: collector.h, signals.h, source.h, unwind.h, evwriter.
 */
#ifndef TALLY_COLLECTOR_THREADS_H
#define TALLY_COLLECTOR_THREADS_H

#include <stdint.h>
#include <time.h>

#include "collector.h"
#include "fastunwind.h"

/* Frames of a thread's last sample kept for the sampler thread (deeper stacks are cut). */
#define THREADS_LAST_MAX 128
/* Runtime states whose time a thread's slot keeps apart (threads_rstate_times): the values
 * EXP_RSTATE_NONE up to THREADS_RSTATES - 2, and all higher ones together in the last. */
#define THREADS_RSTATES 8

enum { TH_NONE = 0, TH_ON = 1, TH_ENDED = 2 };

/* Registry entry of a profiled thread. */
typedef struct coll_slot {
    int tid; /* 0: free; claimed with CAS */
    clockid_t cpuclock;
    uint64_t samples;  /* samples written for the thread (its sampling source) */
    uint64_t last_cpu; /* thread CPU time its samples account for so far (its sampling source) */
    uint32_t rstate;   /* the thread's runtime state (threads_set_rstate), for the sampler */
    /* the time the thread spent in each runtime state (threads_rstate_times): per state up to
     * its latest change, and when that was (coll_now) (seqlock: odd = writing) */
    uint32_t rs_seq;
    uint64_t rs_since;
    uint64_t rs_ns[THREADS_RSTATES];
    /* the stack of the thread's last sample, for the sampler thread (seqlock: odd = writing) */
    uint32_t seq, last_n, last_flags;
    uint64_t last_pcs[THREADS_LAST_MAX];
    /* while the thread is inside an interposer's call that may block: the interposer's caller
     * (threads_blocking_enter; blk_sp 0: none), for the sampler's remote unwind (seqlock) */
    uint32_t blk_seq;
    uint64_t blk_ip, blk_sp, blk_bp;
} coll_slot_t;

/* The calling thread as the sources see it. */
typedef struct coll_thread {
    int state; /* TH_*; TH_ON from before the sources start until the thread stops */
    pid_t tid;
    coll_slot_t *slot; /* NULL: none (no source samples, or the registry is full) */
    /* unwinding buffers (NULL: the thread does not sample) */
    void **scratch;
    uint64_t *pcs;
    size_t bufs_len;
    void *kit;      /* the thread's alternate stack, then its buffers (threads.c: a pool) */
    void *altstack; /* the kit's, when it is the thread's alternate stack */
    uintptr_t stack_lo, stack_hi; /* the thread's own stack, above its guard (0: unknown) */
    uint32_t cpu_num; /* CPU of the last sample (a CPU record is written when it changes) */
    uint32_t rstate;  /* runtime state (EXP_RSTATE_NONE, or 1 + a declared kind's id) */
    exp_stream_t stream; /* valid while scratch is set */
} coll_thread_t;

extern __thread coll_thread_t coll_thr __attribute__((tls_model("initial-exec"))) COLL_HIDDEN;

/* Starts the calling thread and logs `thread` (how: main, pthread_create, fork-child). Normal
 * context. Safe to call twice (the second call does nothing). */
void threads_start(coll_proc_t *p, const char *how) COLL_HIDDEN;

/* Changes whenever a thread starts or stops (the sampler reads the thread list again). AS-safe. */
uint64_t threads_generation(void) COLL_HIDDEN;

/* Stops the calling thread's sources and logs `thread-end`. AS-safe (used on fatal signals). */
void threads_stop(coll_proc_t *p) COLL_HIDDEN;
/* The thread is exiting (TLS destructor): threads_stop, then frees its alternate stack. */
void threads_exit(coll_proc_t *p) COLL_HIDDEN;

/* At the end of the image: logs `thread-end` for every other thread still registered. AS-safe. */
void threads_end_others(coll_proc_t *p) COLL_HIDDEN;

/* In a fork child: forgets every thread of the parent (slots, events, streams) without touching
 * the parent's, then each source's fork_child. Normal context (the child has one thread). */
void threads_after_fork_child(coll_proc_t *p) COLL_HIDDEN;

/* Records the stack of the thread's latest sample in its slot (for the sampler thread). AS-safe. */
void threads_publish_stack(coll_slot_t *sl, const uint64_t *pcs, uint32_t n, uint32_t flags)
    COLL_HIDDEN;

/* The stack (leaf first) of thread tid's last sample: copies up to max frames into pcs and
 * returns their number, 0 when the thread has none. *hint caches the registry slot (start with
 * -1; after a search in vain it holds a count-down so that the registry is not searched again on
 * every call). Any thread, any context; never blocks (a stack being written is retried, then
 * skipped). */
uint32_t threads_last_stack(pid_t tid, int *hint, uint64_t *pcs, uint32_t max, uint32_t *flags)
    COLL_HIDDEN;

/* A number that changes whenever thread tid publishes the stack of a new sample (0: no slot), so
 * that the sampler knows whether the thread was sampled since it saw it blocked. *hint as for
 * threads_last_stack. Any thread; never blocks. */
uint32_t threads_stack_seq(pid_t tid, int *hint) COLL_HIDDEN;

/* Whether thread tid has a registry slot yet (it started through the collector). *hint as for
 * threads_last_stack, except that a search in vain is not remembered. Any thread; never blocks. */
int threads_has_slot(pid_t tid, int *hint) COLL_HIDDEN;

/* Sets the calling thread's runtime state (evformat.h: EXP_RSTATE_NONE, or 1 + the id of a
 * declared kind), which its clock samples and thread states carry; returns the previous one. A
 * per-thread word: any runtime (OpenMP, MPI) sets it on entering and leaving its states. Any
 * thread, any time; AS-safe. */
uint32_t threads_set_rstate(uint32_t rstate) COLL_HIDDEN;
/* The runtime state of thread tid as the sampler sees it (EXP_RSTATE_NONE when it has no registry
 * slot). *hint as for threads_last_stack. Any thread; never blocks. */
uint32_t threads_rstate_of(pid_t tid, int *hint) COLL_HIDDEN;
/* The same with the time thread tid has spent in each runtime state until `now` (coll_now):
 * ns[THREADS_RSTATES] (index: the state's value, the last for all higher ones), and *since, when
 * it entered the state it is in (0: a change being written now, or not known; ns is then not
 * filled). Any thread; never blocks. */
uint32_t threads_rstate_times(pid_t tid, int *hint, uint64_t now, uint64_t *ns, uint64_t *since)
    COLL_HIDDEN;

/* ---- a thread blocked inside an interposer ----------------------------------------------------
 *
 * The sampler thread unwinds a blocked thread from the stack pointer and program counter the
 * kernel shows (unwind_remote.h), which cannot go through a frame whose unwinding needs the frame
 * pointer register: the interposers are built with frame pointers, and without the frame pointer
 * the caller's frames were lost. So an interposer publishes its caller's registers (FU_REGS) in
 * the thread's slot around the real call that may block (COLL_BLOCKING), and the sampler splices
 * the unwind there (threads_blocked_caller). Nested calls (a program callback run inside the real
 * call) save and restore the outer one. A thread that never leaves (pthread_exit or cancellation
 * inside the call) leaves a stale entry that slot_claim clears; one that leaves by longjmp leaves
 * one that the sampler refuses (the return address at sp - 8 is no longer the published ip). */

typedef struct coll_blocking {
    coll_slot_t *slot; /* NULL: the thread has no slot */
    uint64_t ip, sp, bp; /* what was published before (an outer call's caller) */
} coll_blocking_t;

static inline void threads_blk_write(coll_slot_t *sl, uint64_t ip, uint64_t sp, uint64_t bp)
{
    /* one writer (the thread itself): plain stores in order, made visible by the odd/even seq */
    uint32_t q = __atomic_load_n(&sl->blk_seq, __ATOMIC_RELAXED);
    __atomic_store_n(&sl->blk_seq, q + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&sl->blk_ip, ip, __ATOMIC_RELAXED);
    __atomic_store_n(&sl->blk_bp, bp, __ATOMIC_RELAXED);
    __atomic_store_n(&sl->blk_sp, sp, __ATOMIC_RELAXED);
    __atomic_store_n(&sl->blk_seq, q + 2, __ATOMIC_RELEASE);
}

/* Publishes r (the interposer's caller) before a call that may block. AS-safe. */
static inline void threads_blocking_enter(coll_blocking_t *b, fu_regs_t r)
{
    coll_slot_t *sl = coll_thr.slot;
    b->slot = sl;
    if (!sl)
        return;
    b->ip = sl->blk_ip;
    b->sp = sl->blk_sp;
    b->bp = sl->blk_bp;
    threads_blk_write(sl, r.ip, r.sp, r.bp);
}

/* After the call: what was published before is published again. AS-safe. */
static inline void threads_blocking_leave(const coll_blocking_t *b)
{
    if (b->slot && b->slot == coll_thr.slot)
        threads_blk_write(b->slot, b->ip, b->sp, b->bp);
}

/* The value of expr, evaluated with the interposer's caller published (the interposer must keep
 * a frame pointer: FU_REGS). */
#define COLL_BLOCKING(expr)                                                                        \
    __extension__({                                                                                \
        coll_blocking_t blk_;                                                                      \
        threads_blocking_enter(&blk_, FU_REGS());                                                  \
        __typeof__(expr) blk_rc_ = (expr);                                                         \
        threads_blocking_leave(&blk_);                                                             \
        blk_rc_;                                                                                   \
    })

/* The caller's registers thread tid published (COLL_BLOCKING) into *r, and the publication's
 * sequence number into *seq (equal in two calls: nothing changed between them). Returns 1 when
 * the thread is inside such a call, 0 when not (or no slot, or being written). *hint as for
 * threads_last_stack. Any thread; never blocks. */
int threads_blocked_caller(pid_t tid, int *hint, fu_regs_t *r, uint32_t *seq) COLL_HIDDEN;

/* Bytes left below the caller's frame on the stack it runs on: the thread's own stack, or an
 * alternate signal stack; SIZE_MAX when unknown (a coroutine's stack). AS-safe. */
size_t threads_stack_room(const coll_thread_t *t) COLL_HIDDEN;

/* CLOCK_THREAD_CPUTIME_ID of the calling thread, in ns. AS-safe. */
uint64_t threads_cpu_ns(void) COLL_HIDDEN;

#endif
