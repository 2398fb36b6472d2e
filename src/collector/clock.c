/*
 * clock.c - clock profiling, the first sampling source; see clock.h.
 *
 * on_overflow and thread_stop run in signal context: system calls and the AS-safe evwriter
 * functions only.
 */
#define _GNU_SOURCE
#include "clock.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "maps.h"
#include "mref.h"
#include "perfev.h"
#include "signals.h"
#include "experiment/logrec.h"

#define TIMER_MAGIC 0x7a11c10c
#define RING_DATA_PAGES 2 /* power of two; 16-byte records, one per signal with REFRESH */

/* The event may overflow PERF_HEADROOM times without a handler having run before it disables
 * itself; handlers give back what they consumed (the records found in the ring, and those it
 * lost), half the headroom at a time. So a thread whose signal is blocked has at most that many
 * signals queued, an unblocked thread never pays for disabling and re-enabling the event's timer
 * (which costs about 1% at 1 kHz on a VM), and only one sample in eight pays the ioctl. */
#define PERF_HEADROOM 16

/* From this interval up, CPU-time timers sample at the asked rate: they are checked on scheduler
 * ticks, every 10 ms at the longest (HZ 100), and keep their phase (an expiry late by part of a
 * tick does not move the next one). A per-thread perf event costs every context switch of its
 * thread (measured here: about 1.9 us a switch on this VM, +10% of the CPU of 64 threads waking
 * every millisecond), a timer costs nothing until it fires; the perf event is needed only for
 * intervals shorter than a tick (-p hi). */
#define TIMER_MIN_NS 10000000u

/* The source's state of a thread. */
typedef struct clock_thr {
    perfev_t ev;
    int timer_id, has_timer;
    uint64_t last_cpu, last_ut, last_st;
    uint32_t last_stack, last_state, last_rstate; /* of the last sample, for the tail at the
                                                     thread's end */
    int has_last;
    int credit; /* overflows the event may still make before it disables itself */
} clock_thr_t;

static __thread clock_thr_t ct __attribute__((tls_model("initial-exec")));
static size_t page_size = 4096;

static uint64_t tv_ns(struct timeval tv)
{
    return (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_usec * 1000u;
}

/* ---- settings, the mechanism ----------------------------------------------------------------- */

static void clock_settings(coll_proc_t *p)
{
    p->interval_ns = p->set.clock_ns;
    p->sig = p->set.clock_signal;
    p->force_timer = p->set.clock_timer;
}

static void task_clock_attr(const coll_proc_t *p, int exclude_kernel, struct perf_event_attr *a)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_TASK_CLOCK;
    a->sample_period = p->interval_ns;
    a->sample_type = PERF_SAMPLE_IP;
    a->wakeup_events = 1;
    a->disabled = 1;
    a->exclude_hv = 1;
    a->exclude_kernel = exclude_kernel ? 1 : 0;
}

static int clock_proc_init(coll_proc_t *p)
{
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    p->source = COLL_SRC_NONE;
    if (!p->interval_ns || !p->ev_ok)
        return 0;
    int perf_refused = 0;
    if (!p->force_timer && p->interval_ns < TIMER_MIN_NS) {
        struct perf_event_attr a;
        task_clock_attr(p, 0, &a);
        int rc = perfev_probe(&a);
        if (rc == -EACCES || rc == -EPERM) {
            task_clock_attr(p, 1, &a);
            rc = perfev_probe(&a);
            if (rc == 0)
                p->split_by_rusage = 1;
        }
        if (rc == 0)
            p->source = COLL_SRC_PERF;
        else
            perf_refused = 1;
    }
    if (p->source == COLL_SRC_NONE) {
        p->source = COLL_SRC_TIMER;
        p->split_by_rusage = 1;
    }
    if (signals_own_profiling(p) < 0) {
        p->source = COLL_SRC_NONE;
        coll_warn("cannot install the profiling signal handler; no clock profile");
        return -1;
    }
    if (perf_refused)
        coll_warn("perf_event_open is not available: clock profiling uses CPU-time timers, which "
                  "fire on scheduler ticks (fewer samples, weights stay exact)");
    return 1;
}

static void clock_in_use(const coll_proc_t *p, exp_settings_t *in_use)
{
    in_use->clock_ns = p->source != COLL_SRC_NONE ? p->interval_ns : 0;
}

static void clock_log_settings(const coll_proc_t *p, exp_line_t *l)
{
    exp_line_str(l, EXP_KEY_CLOCK_SOURCE, p->source == COLL_SRC_PERF    ? "task-clock"
                                    : p->source == COLL_SRC_TIMER ? "cputime-timer"
                                                                  : "none");
    if (p->split_by_rusage)
        exp_line_str(l, EXP_KEY_STATE_SPLIT, "rusage");
}

/* ---- per thread ------------------------------------------------------------------------------ */

static int timer_start(coll_proc_t *p, pid_t tid)
{
    struct sigevent se;
    memset(&se, 0, sizeof se);
    se.sigev_notify = SIGEV_THREAD_ID;
    se.sigev_signo = p->sig;
    se.sigev_value.sival_int = TIMER_MAGIC;
    se._sigev_un._tid = tid;
    int id;
    if (syscall(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, &se, &id) < 0)
        return -errno;
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(p->interval_ns / 1000000000u);
    its.it_interval.tv_nsec = (long)(p->interval_ns % 1000000000u);
    its.it_value = its.it_interval;
    ct.timer_id = id;
    ct.has_timer = 1;
    if (syscall(SYS_timer_settime, id, 0, &its, NULL) < 0) {
        int e = errno;
        syscall(SYS_timer_delete, id);
        ct.has_timer = 0;
        return -e;
    }
    return 0;
}

static int clock_thread_start(coll_proc_t *p, coll_thread_t *t)
{
    memset(&ct, 0, sizeof ct);
    ct.ev = (perfev_t)PERFEV_NONE;
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    ct.last_ut = tv_ns(ru.ru_utime);
    ct.last_st = tv_ns(ru.ru_stime);
    ct.last_cpu = threads_cpu_ns();
    if (t->slot)
        t->slot->last_cpu = ct.last_cpu;
    int rc = -1;
    if (p->source == COLL_SRC_PERF) {
        struct perf_event_attr a;
        task_clock_attr(p, p->split_by_rusage, &a);
        rc = perfev_open_thread(&ct.ev, &a, RING_DATA_PAGES, t->tid, p->sig);
        if (rc == 0) {
            perfev_arm(&ct.ev, PERF_HEADROOM);
            ct.credit = PERF_HEADROOM;
            return 0;
        }
    }
    int rt = timer_start(p, t->tid);
    return rt == 0 ? 0 : rc < 0 ? rc : rt;
}

static void write_clock(coll_proc_t *p, coll_thread_t *t, uint64_t now, uint32_t id,
                        uint32_t state, uint32_t rstate, uint64_t w)
{
    if (exp_stream_clock_rs(&t->stream, now, id, state, w, rstate) == 0) {
        source_count(&p->st.samples, 1);
        if (t->slot)
            t->slot->samples++;
    } else if (t->stream.file->disk_full) {
        source_count(&p->st.dropped_disk, 1);
    } else {
        source_count(&p->st.dropped_busy, 1);
    }
}

static void clock_thread_stop(coll_proc_t *p, coll_thread_t *t, uint64_t now, uint64_t cpu)
{
    perfev_close(&ct.ev);
    if (ct.has_timer)
        syscall(SYS_timer_delete, ct.timer_id);
    ct.has_timer = 0;
    uint64_t tail = cpu > ct.last_cpu ? cpu - ct.last_cpu : 0;
    if (source_in_window(p, now) && tail && !__atomic_load_n(&p->paused, __ATOMIC_RELAXED)) {
        /* The CPU time since the last sample is charged to the last sampled stack, so that the
         * thread's recorded total is its CPU time, not up to one interval less (not while
         * paused: nothing is, as a sample then). */
        source_count(&p->st.profiled_ns, tail);
        if (ct.has_last)
            write_clock(p, t, now, ct.last_stack, ct.last_state, ct.last_rstate, tail);
    }
}

static void clock_fork_child(coll_proc_t *p)
{
    (void)p;
    /* the event was dropped with every other (perfev_after_fork_child); timers are not inherited */
    memset(&ct, 0, sizeof ct);
    ct.ev = (perfev_t)PERFEV_NONE;
}

/* ---- the hot path ---------------------------------------------------------------------------- */

static int clock_mine(const coll_thread_t *t, const siginfo_t *si)
{
    if (t->state == TH_ON) {
        if (perfev_is_signal_of(&ct.ev, si))
            return 2;
        if (ct.has_timer && si->si_code == SI_TIMER && si->si_value.sival_int == TIMER_MAGIC)
            return 2;
    }
    return perfev_looks_like_signal(si) ||
           (si->si_code == SI_TIMER && si->si_value.sival_int == TIMER_MAGIC);
}

/* The memory reference of the sample (-p +...): the interrupted PC and the registers (mref.h),
 * one record of about 100 bytes (bench/dataspace.py measures both). */
static void write_mref(coll_thread_t *t, const ucontext_t *uc, uint64_t now, uint32_t id,
                       uint64_t w)
{
    exp_memref_t m;
    mref_from_ucontext(uc, 0, &m);
    maps_tls_note(&t->stream, now); /* the thread's dynamic TLS blocks, first (maps.h) */
    exp_stream_memref(&t->stream, now, id, w, &m);
}

/* Consumes the ring: returns the samples found; *kernel: the last one hit kernel mode. */
static int ring_read(int *kernel, uint64_t *lost)
{
    perfev_cursor_t c;
    perfev_rec_t r;
    int n = 0;
    perfev_ring_begin(&ct.ev, page_size, &c);
    while (perfev_ring_next(&c, &r)) {
        if (r.h.type == PERF_RECORD_SAMPLE) {
            n++;
            *kernel = (r.h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
        } else if (r.h.type == PERF_RECORD_LOST) {
            *lost += perfev_rec_lost(&r);
        }
    }
    perfev_ring_end(&ct.ev, &c);
    return n;
}

static void clock_on_overflow(coll_proc_t *p, coll_thread_t *t, const siginfo_t *si,
                              const ucontext_t *uc)
{
    (void)si;
    uint64_t now = coll_now();
    int kernel = 0;
    uint64_t lost = 0;
    int records = ct.ev.ring ? ring_read(&kernel, &lost) : 1;
    source_count(&p->st.ring_lost, lost);
    uint64_t cpu = threads_cpu_ns();
    uint64_t w = cpu > ct.last_cpu ? cpu - ct.last_cpu : 0;
    ct.last_cpu = cpu;
    if (t->slot)
        t->slot->last_cpu = cpu;
    uint64_t w_sys = kernel ? w : 0;
    if (p->split_by_rusage) {
        struct rusage ru;
        getrusage(RUSAGE_THREAD, &ru);
        uint64_t ut = tv_ns(ru.ru_utime), st = tv_ns(ru.ru_stime);
        uint64_t du = ut > ct.last_ut ? ut - ct.last_ut : 0;
        uint64_t ds = st > ct.last_st ? st - ct.last_st : 0;
        ct.last_ut = ut;
        ct.last_st = st;
        w_sys = du + ds ? (uint64_t)((double)w * (double)ds / (double)(du + ds)) : 0;
    }
    if (!__atomic_load_n(&p->final, __ATOMIC_RELAXED) && source_in_window(p, now) && w != 0 &&
        !__atomic_load_n(&p->paused, __ATOMIC_RELAXED)) {
        source_count(&p->st.profiled_ns, w);
        uint32_t id;
        /* the runtime state the thread is in now (OpenMP, MPI: threads_set_rstate) */
        uint32_t rs = __atomic_load_n(&t->rstate, __ATOMIC_RELAXED);
        if (source_stack(p, t, uc, now, &id) == 0) {
            if (w - w_sys)
                write_clock(p, t, now, id, EXP_STATE_USER, rs, w - w_sys);
            if (w_sys)
                write_clock(p, t, now, id, EXP_STATE_SYSTEM, rs, w_sys);
            if (p->set.clock_mref && w - w_sys)
                write_mref(t, uc, now, id, w - w_sys);
            ct.last_stack = id;
            ct.last_rstate = rs;
            ct.last_state = w_sys * 2 > w ? EXP_STATE_SYSTEM : EXP_STATE_USER;
            ct.has_last = 1;
        }
    }
    if (ct.ev.fd >= 0) {
        /* every overflow wrote a record or counted a lost one: the kernel's limit went down by
         * as many (a signal may stand for two overflows, or for none left in the ring) */
        ct.credit -= records + (int)(lost > PERF_HEADROOM ? PERF_HEADROOM : lost);
        if (ct.credit <= PERF_HEADROOM / 2) {
            perfev_arm(&ct.ev, PERF_HEADROOM - (ct.credit > 0 ? ct.credit : 0));
            ct.credit = PERF_HEADROOM;
        }
    }
}

const coll_source_ops_t clock_source = {
    .name = "clock",
    .settings = clock_settings,
    .proc_init = clock_proc_init,
    .in_use = clock_in_use,
    .log_settings = clock_log_settings,
    .thread_start = clock_thread_start,
    .mine = clock_mine,
    .on_overflow = clock_on_overflow,
    .thread_stop = clock_thread_stop,
    .fork_child = clock_fork_child,
};
