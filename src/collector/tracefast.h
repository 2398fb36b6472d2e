/*
 * tracefast.h - the tracing core's hot path, inline in the interposers that use it (heap.c, and
 * trace.c itself): the clock (trace_now_inline), the recording window, the per-thread memo of
 * call-site walks (memo_hit) and the heap records (trace_heap_alloc, trace_heap_free). A traced
 * malloc/free pair then makes no call besides the real functions: the record is encoded straight
 * into the thread's chunk (experiment/evfast.h).
 *
 * Private to src/collector's tracing (trace.h is the interface); every function here is for the
 * calling thread's own trace_thr_t. Nothing here calls anything that could be traced or set
 * errno (no guard, no errno to save); whatever is not the common case goes to trace.c's paths
 * (trace_alloc, trace_free), which are.
 */
#ifndef TALLY_COLLECTOR_TRACEFAST_H
#define TALLY_COLLECTOR_TRACEFAST_H

#include "experiment/evfast.h"
#include "trace.h"

/* ---- the clock (trace.c sets the rate: clock_start, clock_rate) ------------------------------ */

extern uint64_t trace_tsc_rate COLL_HIDDEN;  /* atomic: ns per tick << 32; 0 while unknown */
extern uint64_t trace_tsc_limit COLL_HIDDEN; /* ticks in about a millisecond */
/* The thread's anchor taken again, or the clock without the TSC: what trace_now_inline does when
 * the anchor is old. */
uint64_t trace_now_anchor(trace_thr_t *t) COLL_HIDDEN;

/* trace_now of the calling thread t: one TSC read and a multiply (the anchor taken again after
 * about a millisecond, which also refines the rate). */
static inline uint64_t trace_now_inline(trace_thr_t *t)
{
    uint64_t rate = __atomic_load_n(&trace_tsc_rate, __ATOMIC_RELAXED);
    if (__builtin_expect(rate != 0, 1)) {
        uint64_t d = __builtin_ia32_rdtsc() - t->tsc_base;
        if (__builtin_expect(d < trace_tsc_limit, 1))
            return t->ns_base + ((d * rate) >> 32);
    }
    return trace_now_anchor(t);
}

/* Are records of time t written (not paused, not finished, inside the duration window)? */
static inline __attribute__((always_inline)) int recording(uint64_t t)
{
    const coll_proc_t *p = &coll_proc;
    if (__atomic_load_n(&p->final, __ATOMIC_RELAXED) ||
        __atomic_load_n(&p->paused, __ATOMIC_RELAXED))
        return 0;
    return !p->has_window || (t >= p->win_lo && t <= p->win_hi);
}

/* ---- the memo of walks ---------------------------------------------------------------------- */

/* A memoized walk: when a call comes from the same site with the same stack (fu_same), its stack
 * is the one written before, and neither a walk nor the stack table is needed. MEMO_N ways in
 * sets of MEMO_WAYS, per thread (trace.c maps them with the thread's frames buffer). A set is
 * chosen by the call site (ip, sp), which callers of one allocating function at the same depth
 * share (their walks differ in the stack cells above): four ways keep up to four such stacks,
 * where two ways re-walked each call of three alternating ones (strdup's two callers in one
 * function and another site in the same set: a third of the calls, 40% more time). */
#define MEMO_N 32
#define MEMO_WAYS 4
#define MEMO_CELLS 64
struct trace_memo {
    int valid;
    int recent;    /* in a set's first way: the way that hit last, tried first */
    uint32_t tick; /* in a set's first way: counts the set's hits and walks */
    uint32_t used; /* the set's tick when this way last hit or was filled (the least recent is
                    * replaced) */
    uint32_t gen, id;
    const void *fn;
    fu_regs_t r;
    fu_cells_t cells;
    uint64_t addr[MEMO_CELLS], val[MEMO_CELLS];
};

/* The MEMO_WAYS ways of the memo set of a call from r. */
static inline struct trace_memo *memo_set(trace_thr_t *th, fu_regs_t r)
{
    _Static_assert(MEMO_N == 32 && MEMO_WAYS == 4, "the index below: 5 bits, sets of 4");
    return &th->memo[(((r.ip ^ r.sp) * 0x9e3779b97f4a7c15ull) >> 59) & ~(uint64_t)(MEMO_WAYS - 1)];
}

/* The stack id of a memoized walk from r, if there is one: 0, else -1. The way used last is
 * tried first (a hit there changes nothing); a way matches on the call site, its leaf and the caches' generation, and then
 * when the stack cells its walk read still hold what they held (fu_same, inline). */
static inline __attribute__((always_inline)) int memo_hit(trace_thr_t *th, fu_regs_t r, const void *fn, uint32_t *id)
{
    struct trace_memo *w = memo_set(th, r);
    uint32_t gen = fu_generation();
    int first = w[0].recent;
#pragma GCC unroll 4
    for (int k = 0; k < MEMO_WAYS; k++) {
        struct trace_memo *m = &w[first ^ k];
        if (!m->valid || m->r.ip != r.ip || m->r.sp != r.sp || m->fn != fn || m->gen != gen ||
            (m->cells.uses_bp && m->r.bp != r.bp))
            continue;
        const uint64_t *a = m->addr, *v = m->val;
        size_t n = m->cells.n, i = 0;
        while (i < n && *(const volatile uint64_t *)(uintptr_t)a[i] == v[i])
            i++;
        if (i < n)
            continue;
        *id = m->id;
        if (k) { /* (the way used last is already the most recent: no stores) */
            w[0].recent = first ^ k;
            m->used = ++w[0].tick;
        }
        return 0;
    }
    return -1;
}

/* The common case of a record with a stack: the thread's stream is ready and the call site's
 * walk is memoized (then *id is its stack). */
static inline __attribute__((always_inline)) int fast_stack(trace_thr_t *th, uint64_t t, fu_regs_t r, const void *fn,
                             uint32_t *id)
{
    return th->state == TT_READY && recording(t) && memo_hit(th, r, fn, id) == 0;
}

/* ---- the heap records ------------------------------------------------------------------------ */

/* An allocation of size bytes at p by call (EXP_HEAP_*), timed now (after the real call
 * returned): fn is the interposer's entry, r its caller (FU_REGS). Under the allocation map
 * (heapmap.h) only the blocks it keeps are written, as its records, by trace.c. */
static inline __attribute__((always_inline)) void
trace_heap_alloc(trace_thr_t *th, fu_regs_t r, const void *fn, const void *p, uint64_t size,
                 uint32_t call)
{
    if (__builtin_expect(trace_heap_on == TRACE_HEAP_MAP, 0)) { /* the map's choice, its record */
        trace_alloc(th, r, fn, trace_now_inline(th), p, size, call);
        return;
    }
    uint64_t t = trace_now_inline(th);
    uint32_t id;
    if (__builtin_expect(fast_stack(th, t, r, fn, &id) &&
                             exp_stream_alloc_fast(&th->stream, t, id, (uint64_t)(uintptr_t)p,
                                                   size, call) == 0,
                         1))
        return;
    trace_alloc(th, r, fn, t, p, size, call);
}

/* A free of the block at p by call (size: the length unmapped, else 0), timed now (before the
 * block is given back). */
static inline __attribute__((always_inline)) void
trace_heap_free(trace_thr_t *th, const void *p, uint64_t size, uint32_t call)
{
    if (__builtin_expect(trace_heap_on == TRACE_HEAP_MAP, 0)) {
        trace_free(th, trace_now_inline(th), p, size, call);
        return;
    }
    uint64_t t = trace_now_inline(th);
    if (__builtin_expect(th->state == TT_READY && recording(t) &&
                             exp_stream_free_fast(&th->stream, t, (uint64_t)(uintptr_t)p, size,
                                                  call) == 0,
                         1))
        return;
    trace_free(th, t, p, size, call);
}

/* ---- the timeline of profiled blocks -------------------------------------------------------- */

/* trace_block (trace.h) of the calling thread, encoded inline into its chunk in the common case
 * (its stream ready, recording, room in the chunk, time not going back). */
static inline __attribute__((always_inline)) void trace_block_inline(uint64_t t, uint32_t block,
                                                                     int exit)
{
    trace_thr_t *th = &trace_thr;
    if (__builtin_expect(th->state == TT_READY &&
                             __atomic_load_n(&trace_api_on, __ATOMIC_RELAXED) && recording(t) &&
                             exp_fast_block(&th->stream, t, block, exit) == 0, 1))
        return;
    trace_block(t, block, exit);
}

#endif
