/*
 * trace.c - the tracing core: settings, per-thread streams, stacks and records; see trace.h.
 * Sections: state, the clock, settings, threads, records, lifecycle.
 */
#define _GNU_SOURCE
#include "trace.h"

#include "base/spinlock.h"
#include "tracefast.h"
#include "experiment/logrec.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- state ------------------------------------------------------------------------------------ */

trace_cfg_t trace_cfg;
int trace_heap_on, trace_sync_on, trace_io_on;
__thread trace_thr_t trace_thr __attribute__((tls_model("initial-exec")));
uint64_t trace_self_lo, trace_self_hi;

/* Counts for the `stats` record (atomic). */
enum { K_HEAP = 0, K_IO = 1, K_SYNC = 2, K_API = 3, K_BLOCK = 4 };
static struct {
    uint64_t dropped[5], unwind_failures, truncated, walks; /* dropped: by K_* */
} counts;

/* The stream of threads whose TLS destructor has run, shared under a spinlock. */
static struct {
    int lock;
    int ready;
    exp_stream_t stream;
    uint64_t pcs[1025];
} late;

/* ---- the clock -------------------------------------------------------------------------------- */

static int tsc_usable;          /* the kernel's clocksource is the TSC */
static uint64_t tsc0, ns0;      /* the anchor taken at the start */
uint64_t trace_tsc_rate;        /* atomic: ns per tick << 32; 0 while unknown (tracefast.h) */
uint64_t trace_tsc_limit;       /* ticks in about a millisecond */
#define tsc_rate trace_tsc_rate
#define tsc_limit trace_tsc_limit

static void clock_start(void)
{
    char b[32] = "";
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, b, sizeof b - 1);
        b[n > 0 ? n : 0] = 0;
        close(fd);
    }
    tsc_usable = !strcmp(b, "tsc\n");
    tsc0 = __builtin_ia32_rdtsc();
    ns0 = mono_ns();
    __atomic_store_n(&tsc_rate, 0, __ATOMIC_RELAXED);
}

/* Measures the rate over the time since the start (at least 2 ms of it). */
static void clock_rate(uint64_t c, uint64_t ns)
{
    if (!tsc_usable || c <= tsc0 || ns < ns0 + 2000000)
        return;
    uint64_t rate = (uint64_t)(((unsigned __int128)(ns - ns0) << 32) / (c - tsc0));
    if (!rate)
        return;
    tsc_limit = (uint64_t)(((unsigned __int128)1000000 << 32) / rate);
    __atomic_store_n(&tsc_rate, rate, __ATOMIC_RELAXED);
}

uint64_t trace_now(void)
{
    return trace_now_inline(&trace_thr);
}

/* The thread's anchor taken again (every millisecond), or the clock without the TSC. */
__attribute__((noinline)) uint64_t trace_now_anchor(trace_thr_t *t)
{
    uint64_t ns = mono_ns(), c = __builtin_ia32_rdtsc();
    t->tsc_base = c;
    t->ns_base = ns;
    clock_rate(c, ns);
    return ns;
}

/* ---- settings --------------------------------------------------------------------------------- */

void trace_settings(coll_proc_t *p)
{
    memset(&trace_cfg, 0, sizeof trace_cfg);
    trace_cfg.heap = p->set.heap;
    trace_cfg.io = p->set.io;
    trace_cfg.sync = p->set.sync.mode != EXP_SYNC_OFF;
    trace_cfg.sync_calibrated = p->set.sync.mode == EXP_SYNC_CALIBRATE;
    trace_cfg.sync_threshold = p->set.sync.ns;
    trace_cfg.heap_map = heapmap_settings(p);
    if (trace_cfg.sync_calibrated) { /* now, so that the settings record has the threshold */
        trace_cfg.sync_calibration = sync_calibrate();
        trace_cfg.sync_threshold = 6 * trace_cfg.sync_calibration;
    }
}

/* What the settings record adds to the table's `sync` (collector.c writes the table). */
void trace_log_settings(exp_line_t *l)
{
    if (trace_cfg.sync_calibrated) {
        exp_line_str(l, EXP_KEY_SYNC_CALIBRATED, "1");
        exp_line_u64(l, EXP_KEY_SYNC_CALIBRATION, trace_cfg.sync_calibration);
    }
}
/* ---- threads ---------------------------------------------------------------------------------- */

/* Sets up the calling thread's stream; 0 when it can record. */
static int thread_ready(trace_thr_t *t)
{
    if (t->state == TT_READY)
        return 0;
    if (t->state == TT_ENDED || !coll_proc.ev_ok)
        return -1;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    t->stack_hi = fu_stack_hi(tid == getpid());
    size_t pcs_len = ((size_t)coll_proc.max_depth + 1) * sizeof *t->pcs;
    t->map_len = pcs_len + MEMO_N * sizeof *t->memo;
    void *m = mmap(NULL, t->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    t->pcs = m;
    t->memo = (struct trace_memo *)((char *)m + pcs_len);
    for (int i = 0; i < MEMO_N; i++) {
        t->memo[i].cells.max = MEMO_CELLS;
        t->memo[i].cells.addr = t->memo[i].addr;
        t->memo[i].cells.val = t->memo[i].val;
    }
    exp_stream_init(&t->stream, &coll_proc.evfile, (uint32_t)tid);
    t->stream.last_t = trace_now(); /* a chunk opened by a STACK record gets a real t0 */
    t->state = TT_READY;
    return 0;
}

void trace_thread_exit(void)
{
    trace_thr_t *t = &trace_thr;
    if (t->state != TT_READY)
        return;
    t->guard++;
    exp_stream_finish(&t->stream, trace_now());
    munmap(t->pcs, t->map_len);
    t->pcs = NULL;
    t->memo = NULL;
    t->state = TT_ENDED;
    t->guard--;
}

void trace_exclude_thread(void)
{
    trace_thr.guard++;
}

/* ---- records ---------------------------------------------------------------------------------- */

/* The stream to write to and the frames buffer: the thread's own, or the late stream (locked
 * until stream_done). Returns NULL when nothing can be written. */
static exp_stream_t *stream_get(trace_thr_t *th, uint64_t **pcs, uint32_t *max)
{
    if (thread_ready(th) == 0) {
        *pcs = th->pcs;
        *max = coll_proc.max_depth + 1;
        return &th->stream;
    }
    if (th->state != TT_ENDED || !coll_proc.ev_ok)
        return NULL;
    spin_lock(&late.lock);
    if (!late.ready) {
        exp_stream_init(&late.stream, &coll_proc.evfile, (uint32_t)getpid());
        late.stream.last_t = trace_now();
        late.ready = 1;
    }
    *pcs = late.pcs;
    *max = sizeof late.pcs / sizeof *late.pcs;
    return &late.stream;
}

static void stream_done(exp_stream_t *s)
{
    if (s == &late.stream)
        spin_unlock(&late.lock);
}

static void count(uint64_t *c) { __atomic_fetch_add(c, 1, __ATOMIC_RELAXED); }

/* The stack of a traced call: fn, then its caller's frames, as a stack id of stream s. A walk
 * from a call site seen before is memoized (th->memo, tracefast.h; only for the thread's own
 * stream). */
static int take_stack(trace_thr_t *th, exp_stream_t *s, uint64_t *pcs, uint32_t max,
                      fu_regs_t r, const void *fn, uint32_t *id)
{
    struct trace_memo *m = NULL;
    uint32_t gen = 0;
    if (s == &th->stream && th->memo) { /* the ways of the set of (ip, sp) */
        if (memo_hit(th, r, fn, id) == 0)
            return 0;
        struct trace_memo *w = memo_set(th, r);
        gen = fu_generation();
        m = &w[0]; /* an empty way, else the least recent */
        for (int k = 0; k < MEMO_WAYS; k++) {
            if (!w[k].valid) {
                m = &w[k];
                break;
            }
            if ((int32_t)(w[k].used - m->used) < 0)
                m = &w[k];
        }
        w[0].recent = (int)(m - w);
        m->used = ++w[0].tick;
        m->valid = 0;
    }
    uint32_t flags = 0;
    count(&counts.walks);
    pcs[0] = (uint64_t)(uintptr_t)fn;
    uint32_t n = 1 + fu_unwind(r, th->stack_hi, pcs + 1, max - 1, &flags, m ? &m->cells : NULL,
                               th->splice.ip ? &th->splice : NULL);
    if (flags & EXP_STACK_UNWIND_FAIL)
        count(&counts.unwind_failures);
    if (flags & EXP_STACK_TRUNCATED)
        count(&counts.truncated);
    int rc = exp_stream_stack(s, pcs, n, flags, id);
    if (m && rc == 0 && m->cells.ok) {
        m->valid = 1;
        m->gen = gen;
        m->fn = fn;
        m->r = r;
        m->id = *id;
    }
    return rc;
}

static void fast_written(int rc, int saved, int kind)
{
    if (rc)
        count(&counts.dropped[kind]);
    errno = saved;
}

/* What every record needs: a stream (the thread's own, or the late one, locked), its frames
 * buffer, and errno to give back. */
typedef struct rec {
    exp_stream_t *s;
    uint64_t *pcs;
    uint32_t max;
    int saved;
} rec_t;

static int rec_begin(trace_thr_t *th, uint64_t t, rec_t *r)
{
    if (!recording(t))
        return -1;
    r->saved = errno;
    r->s = stream_get(th, &r->pcs, &r->max);
    if (!r->s) {
        errno = r->saved;
        return -1;
    }
    return 0;
}

static void rec_end(rec_t *r, int rc, int kind)
{
    if (rc) /* the records written are counted by the reader: no shared counter on every call */
        count(&counts.dropped[kind]);
    stream_done(r->s);
    errno = r->saved;
}

static void trace_alloc_rec(trace_thr_t *th, fu_regs_t r, const void *fn, uint64_t t, const void *p,
                 uint64_t size, uint32_t call, int map)
{
    rec_t c;
    uint32_t id;
    int (*put)(exp_stream_t *, uint64_t, uint32_t, uint64_t, uint64_t, uint32_t) =
        map ? exp_stream_map_alloc : exp_stream_alloc;
    if (__builtin_expect(fast_stack(th, t, r, fn, &id), 1)) {
        int saved = errno;
        fast_written(put(&th->stream, t, id, (uint64_t)(uintptr_t)p, size, call), saved, K_HEAP);
        return;
    }
    if (rec_begin(th, t, &c) == 0)
        rec_end(&c, take_stack(th, c.s, c.pcs, c.max, r, fn, &id)
                        ?: put(c.s, t, id, (uint64_t)(uintptr_t)p, size, call), K_HEAP);
}

/* The record is the collector's work: nothing it calls is traced (the guard). Under the
 * allocation map (trace_alloc chose to keep the block) the record is a MAP_ALLOC. */
void trace_alloc_write(trace_thr_t *th, fu_regs_t r, const void *fn, uint64_t t, const void *p,
                       uint64_t size, uint32_t call)
{
    int map = trace_heap_on == TRACE_HEAP_MAP;
    th->guard++;
    trace_alloc_rec(th, r, fn, t, p, size, call, map);
    th->guard--;
}

static void trace_free_rec(trace_thr_t *th, uint64_t t, const void *p, uint64_t size, uint32_t call,
                           int map)
{
    rec_t c;
    int (*put)(exp_stream_t *, uint64_t, uint64_t, uint64_t, uint32_t) =
        map ? exp_stream_map_free : exp_stream_free;
    if (__builtin_expect(th->state == TT_READY && recording(t), 1)) {
        int saved = errno;
        fast_written(put(&th->stream, t, (uint64_t)(uintptr_t)p, size, call), saved, K_HEAP);
        return;
    }
    if (rec_begin(th, t, &c) == 0)
        rec_end(&c, put(c.s, t, (uint64_t)(uintptr_t)p, size, call), K_HEAP);
}

void trace_free_write(trace_thr_t *th, uint64_t t, const void *p, uint64_t size, uint32_t call)
{
    th->guard++;
    trace_free_rec(th, t, p, size, call, trace_heap_on == TRACE_HEAP_MAP);
    th->guard--;
}

static void trace_sync_rec(trace_thr_t *th, fu_regs_t r, const void *fn, uint64_t t, uint64_t wait,
                const void *object, uint32_t call)
{
    rec_t c;
    uint32_t id;
    if (__builtin_expect(fast_stack(th, t, r, fn, &id), 1)) {
        int saved = errno;
        fast_written(exp_stream_sync(&th->stream, t, id, wait, (uint64_t)(uintptr_t)object, call),
                     saved, K_SYNC);
        return;
    }
    if (rec_begin(th, t, &c) == 0)
        rec_end(&c, take_stack(th, c.s, c.pcs, c.max, r, fn, &id)
                        ?: exp_stream_sync(c.s, t, id, wait, (uint64_t)(uintptr_t)object, call),
                K_SYNC);
}

void trace_sync(trace_thr_t *th, fu_regs_t r, const void *fn, uint64_t t, uint64_t wait,
                const void *object, uint32_t call)
{
    th->guard++;
    trace_sync_rec(th, r, fn, t, wait, object, call);
    th->guard--;
}

static void trace_io_rec(trace_thr_t *th, fu_regs_t r, const void *fn, uint64_t t, uint64_t ns,
              uint32_t call, uint64_t bytes, int fd, int err, const char *name)
{
    rec_t c;
    uint32_t id;
    if (rec_begin(th, t, &c) == 0)
        rec_end(&c, take_stack(th, c.s, c.pcs, c.max, r, fn, &id)
                        ?: exp_stream_io(c.s, t, id, call, ns, bytes, fd, (uint32_t)err, name,
                                         name ? strlen(name) : 0),
                K_IO);
}

void trace_io(trace_thr_t *th, fu_regs_t r, const void *fn, uint64_t t, uint64_t ns,
              uint32_t call, uint64_t bytes, int fd, int err, const char *name)
{
    th->guard++;
    trace_io_rec(th, r, fn, t, ns, call, bytes, fd, err, name);
    th->guard--;
}

void trace_alloc_early(const void *fn, uint64_t ra, const void *p, uint64_t size, uint32_t call)
{
    rec_t c;
    uint32_t id;
    uint64_t t = trace_now();
    if (rec_begin(&trace_thr, t, &c))
        return;
    uint64_t frames[2] = { (uint64_t)(uintptr_t)fn, ra };
    rec_end(&c, exp_stream_stack(c.s, frames, ra ? 2 : 1, EXP_STACK_UNWIND_FAIL, &id)
                    ?: exp_stream_alloc(c.s, t, id, (uint64_t)(uintptr_t)p, size, call),
            K_HEAP);
}

/* ---- records of the collector API (api.c) ---------------------------------------------------- */

int trace_api_on;

static int self_cb(struct dl_phdr_info *info, size_t size, void *arg);

/* The TSC anchor and the collector's code range, once, by the first thread that records through
 * the API (trace_start does it when a kind of tracing is on). 1 when ready; 0 while another
 * thread is setting up. */
int trace_api_ready(void)
{
    static int state; /* 0 not set up, 1 being set up, 2 ready */
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (s == 2)
        return 1;
    if (s == 1 || !__atomic_compare_exchange_n(&state, &s, 1, 0, __ATOMIC_ACQ_REL,
                                                __ATOMIC_ACQUIRE))
        return 0;
    if (!(trace_cfg.heap || trace_cfg.heap_map || trace_cfg.io || trace_cfg.sync)) {
        /* else trace_start did it */
        clock_start();
        if (!trace_self_hi)
            dl_iterate_phdr(self_cb, (void *)(uintptr_t)trace_start);
    }
    __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
    return 1;
}

uint32_t trace_api_stack(trace_thr_t *th, fu_regs_t r, const void *fn, uint64_t *pcs,
                         uint32_t max)
{
    th->guard++; /* the collector's work: nothing it calls is traced */
    uint32_t flags = 0, n = 0;
    if (max && thread_ready(th) == 0) {
        if (fn)
            pcs[n++] = (uint64_t)(uintptr_t)fn;
        n += fu_unwind(r, th->stack_hi, pcs + n, max - n, &flags, NULL,
                       th->splice.ip ? &th->splice : NULL);
    }
    th->guard--;
    return n;
}

int trace_api_record(trace_thr_t *th, uint64_t t, uint32_t kind, const uint64_t *pcs, uint32_t n,
                     const uint64_t *values, uint32_t nvalues, int in_signal)
{
    rec_t c;
    uint32_t id;
    if (in_signal && th->state != TT_READY)
        return -EAGAIN;
    th->guard++;
    if (rec_begin(th, t, &c)) {
        th->guard--;
        return -EAGAIN;
    }
    int rc = exp_stream_stack(c.s, pcs, n, n >= coll_proc.max_depth ? EXP_STACK_TRUNCATED : 0,
                              &id)
                 ?: exp_stream_trace(c.s, t, kind, id, values, nvalues);
    rec_end(&c, rc, K_API);
    th->guard--;
    return rc ? -EIO : 0;
}

void trace_block_stream_ready(void)
{
    trace_thr_t *th = &trace_thr;
    th->guard++;
    if (__atomic_load_n(&trace_api_on, __ATOMIC_ACQUIRE))
        thread_ready(th);
    th->guard--;
}

int trace_block(uint64_t t, uint32_t block, int exit)
{
    trace_thr_t *th = &trace_thr;
    if (!__atomic_load_n(&trace_api_on, __ATOMIC_ACQUIRE))
        return -EAGAIN;
    rec_t c;
    th->guard++;
    if (rec_begin(th, t, &c)) {
        th->guard--;
        return -EAGAIN;
    }
    if (c.s != &th->stream) { /* the late stream is the process's, not this thread's */
        stream_done(c.s);
        errno = c.saved;
        th->guard--;
        return -EAGAIN;
    }
    int rc = exp_stream_block(c.s, t, block, exit);
    rec_end(&c, rc, K_BLOCK);
    th->guard--;
    return rc ? -EIO : 0;
}

/* ---- lifecycle -------------------------------------------------------------------------------- */

static int self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uint64_t me = (uint64_t)(uintptr_t)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo && me < hi) {
            trace_self_lo = lo;
            trace_self_hi = hi;
            return 1;
        }
    }
    return 0;
}

void trace_start(coll_proc_t *p)
{
    if (!p->enabled || !p->ev_ok)
        return;
    __atomic_store_n(&trace_api_on, 1, __ATOMIC_RELEASE);
    if (!(trace_cfg.heap || trace_cfg.heap_map || trace_cfg.io || trace_cfg.sync))
        return;
    trace_thr.guard++;
    clock_start();
    if (!trace_self_hi)
        dl_iterate_phdr(self_cb, (void *)(uintptr_t)trace_start);
    trace_thr.guard--;
    __atomic_store_n(&trace_sync_on, trace_cfg.sync, __ATOMIC_RELEASE);
    __atomic_store_n(&trace_io_on, trace_cfg.io, __ATOMIC_RELEASE);
    __atomic_store_n(&trace_heap_on,
                     trace_cfg.heap ? 1 : trace_cfg.heap_map ? TRACE_HEAP_MAP : 0,
                     __ATOMIC_RELEASE);
    if (trace_cfg.heap) {
        heap_flush_early();
        trace_thr.guard++;
        heap_check_binding();
        trace_thr.guard--;
    }
}

void trace_stop(void)
{
    __atomic_store_n(&trace_api_on, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&trace_heap_on, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&trace_sync_on, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&trace_io_on, 0, __ATOMIC_RELEASE);
}

void trace_warn_dropped(int disk_full)
{
    static const char *const what[5] = { " heap", " I/O", " sync", " collector-API",
                                         " block-timeline" };
    for (int k = 0; k < 5; k++) {
        if (!counts.dropped[k])
            continue;
        char msg[160];
        size_t n = exp_fmt_u64(msg, counts.dropped[k]);
        const char *tail = disk_full ? " records were lost: no disk space for the events file"
                                     : " records were lost (no stack could be written)";
        size_t wl = strlen(what[k]), tl = strlen(tail);
        memcpy(msg + n, what[k], wl);
        memcpy(msg + n + wl, tail, tl + 1);
        coll_warn(msg);
    }
}

void trace_log_stats(exp_line_t *l)
{
    if (counts.dropped[K_API]) /* TRACE records of the collector API (api.c) */
        exp_line_u64(l, EXP_KEY_TRACE_DROPPED_API, counts.dropped[K_API]);
    if (counts.dropped[K_BLOCK]) /* BLOCK records of the timeline of blocks (blocks.c) */
        exp_line_u64(l, EXP_KEY_TRACE_DROPPED_BLOCKS, counts.dropped[K_BLOCK]);
    if (!(trace_cfg.heap || trace_cfg.heap_map || trace_cfg.io || trace_cfg.sync))
        return;
    exp_line_u64(l, EXP_KEY_TRACE_DROPPED, counts.dropped[K_HEAP] + counts.dropped[K_IO] +
                                         counts.dropped[K_SYNC]);
    exp_line_u64(l, EXP_KEY_TRACE_DROPPED_HEAP, counts.dropped[K_HEAP]);
    exp_line_u64(l, EXP_KEY_TRACE_DROPPED_IO, counts.dropped[K_IO]);
    exp_line_u64(l, EXP_KEY_TRACE_DROPPED_SYNC, counts.dropped[K_SYNC]);
    exp_line_u64(l, EXP_KEY_TRACE_UNWIND_FAILURES, counts.unwind_failures);
    exp_line_u64(l, EXP_KEY_TRACE_TRUNCATED_STACKS, counts.truncated);
    exp_line_u64(l, EXP_KEY_TRACE_WALKS, counts.walks);
}

void trace_after_fork_child(void)
{
    trace_stop();
    trace_thr_t *t = &trace_thr;
    if (t->state == TT_READY) {
        exp_stream_forget(&t->stream); /* the parent's mapping of the parent's file */
        munmap(t->pcs, t->map_len);
        t->pcs = NULL;
        t->memo = NULL;
    }
    t->state = TT_NEW;
    if (late.ready)
        exp_stream_forget(&late.stream);
    late.ready = 0;
    late.lock = 0;
    fu_after_fork(); /* a lock another thread of the parent held is free in the child */
    memset(&counts, 0, sizeof counts);
    iotrace_after_fork_child();
}
