/*
 * sampler.c - the sampler thread (periodic sample packets, thread states), the -l/-y signals and
 * the collector API. See sampler.h.
 */
#define _GNU_SOURCE
#include "sampler.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "realfn.h"
#include "signals.h"
#include "source.h"
#include "threads.h"
#include "trace.h"
#include "unwind_remote.h"
#include "experiment/logrec.h"

/* ---- settings ------------------------------------------------------------------------------- */

void sampler_settings(coll_proc_t *p)
{
    p->sample_ns = p->set.sample_ns; /* ranges checked by the decoding (settings.def) */
    p->state_ns = p->set.states_ns;
    p->sample_sig = p->set.sample_signal;
    p->pause_sig = p->set.pause_signal;
}

/* ---- pause and resume ----------------------------------------------------------------------- */

static void log_pause(coll_proc_t *p, int paused, const char *why)
{
    char buf[128];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, paused ? EXP_LOG_PAUSE : EXP_LOG_RESUME);
    exp_line_u64(&l, EXP_KEY_T, coll_now());
    exp_line_str(&l, EXP_KEY_BY, why);
    coll_log_write(&l);
}

static void set_paused(coll_proc_t *p, int paused, const char *why)
{
    if (!p->enabled || getpid() != p->pid)
        return;
    if (__atomic_exchange_n(&p->paused, paused, __ATOMIC_ACQ_REL) != paused)
        log_pause(p, paused, why);
}

void sampler_initial_pause(coll_proc_t *p, const char *why)
{
    int want = strcmp(why, "fork") ? p->pause_sig && p->set.start_paused : p->paused;
    p->paused = 0;
    if (want)
        set_paused(p, 1, why);
}

COLL_EXPORT void tally_collector_sample(const char *label)
{
    coll_proc_t *p = &coll_proc;
    if (!p->enabled || getpid() != p->pid || __atomic_load_n(&p->final, __ATOMIC_ACQUIRE))
        return;
    int saved = errno;
    coll_log_sample(p, "api", label);
    errno = saved;
}

COLL_EXPORT void tally_collector_pause(void)
{
    int saved = errno;
    set_paused(&coll_proc, 1, "api");
    errno = saved;
}

COLL_EXPORT void tally_collector_resume(void)
{
    int saved = errno;
    set_paused(&coll_proc, 0, "api");
    errno = saved;
}

static void control_handler(int sig, siginfo_t *si, void *uc)
{
    (void)si;
    (void)uc;
    coll_proc_t *p = &coll_proc;
    int saved = errno;
    if (sig == p->pause_sig)
        set_paused(p, !__atomic_load_n(&p->paused, __ATOMIC_ACQUIRE), "signal");
    else if (sig == p->sample_sig && p->enabled && getpid() == p->pid &&
             !__atomic_load_n(&p->final, __ATOMIC_ACQUIRE))
        coll_log_sample(p, "signal", NULL);
    errno = saved;
}

/* ---- thread states -------------------------------------------------------------------------- */

#define NTRACK 4096 /* threads tracked at once (open addressing by tid) */

#define RS_NONE_FIRST UINT32_MAX /* put_state: no state to charge first */

typedef struct track {
    int tid; /* 0 free */
    int hint;
    uint64_t run_delay; /* schedstat: ns runnable but not running, so far */
    uint64_t run_time;  /* schedstat: ns on a CPU, so far */
    uint64_t slices;    /* schedstat: times it got a CPU, so far */
    uint64_t seen;      /* the tick it was last seen */
    uint64_t blocked_pc, blocked_sp; /* where it was blocked at the last tick ... */
    uint32_t blocked_stack;          /* ... and the stack id written for it */
    uint32_t blocked_kind;           /* ... and the kind of its sleep */
    uint32_t blocked_seq;            /* threads_stack_seq then: the thread's last sample */
    int fd[3];                       /* its /proc files, kept open (TF_*), -1 until opened */
    int ran;                         /* it got a CPU since the previous look */
    int rs_ok;                       /* rs_ns holds the times at the previous look */
    uint32_t rs_last;                /* the runtime state it was in at the previous look */
    uint64_t born;                   /* when it was first seen (0: not yet) */
    uint64_t looked;                 /* when a look last took its baselines (0: never) */
    uint64_t rs_ns[THREADS_RSTATES]; /* its time in each runtime state then (threads.h) */
    int walked;                      /* its blocked stack was unwound once */
    /* Time off a CPU found at the looks since the thread was last seen asleep, which saw it
     * running or runnable: a sleep that ended within a period, or what schedstat does not show
     * yet, a wait for a CPU still going on (the kernel adds it to the run delay when it ends) or
     * the run time since the last scheduler tick. The latter two come back in later periods'
     * run delay and run time, so the sum, taken at each look, is exact again when the thread
     * is next seen asleep: charged then (carry_charge), as sleep. */
    uint64_t carry;
    uint32_t carry_stack, carry_kind; /* where and how it slept: the blocked stack seen at the
                                         look before the carry began (carry_seen), if any */
    uint32_t carry_seq;               /* blocked_seq then */
    int carry_seen;
    int carry_rs_known;                  /* the runtime states' shares of the carry's period */
    uint32_t carry_rs_cur;
    uint64_t carry_rs_part[THREADS_RSTATES];
} track_t;

enum { TF_STAT, TF_SCHED, TF_SYSCALL };
static const char *const track_files[3] = { "stat", "schedstat", "syscall" };

typedef struct sampler {
    coll_proc_t *p;
    pthread_t thread;
    int running;       /* the thread exists (in this process) */
    int stop;          /* atomic: asks the thread to end (sampler_suspend) */
    int quiet;  /* this look only keeps the baselines (paused, or outside the -t window) */
    int dirfd;  /* /proc/self/task, kept open at a high descriptor */
    int nfds;   /* /proc files kept open for threads (bounded: the program's descriptors come first) */
    int max_fds; /* the bound (sampler_start: from the hard limit of descriptors) */
    pid_t self;
    track_t *tracks;
    unwind_memo_t *memos; /* what the walk of each track's blocked stack read (same index; apart,
                             so that the table of tracks stays small) */
    int ntracks;      /* tracks in use */
    int tids[NTRACK]; /* the threads found at the last read of the directory ... */
    int ntids;        /* ... and how many (-1: read it at the next look) */
    uint64_t gen, nlink, scanned; /* the thread set then: threads_generation, links, time */
    /* what the looks cost, for the period and the stats record */
    uint64_t looks, unwinds, reused, look_cpu_ns, stretched_looks, max_period, max_threads, max_cost;
    pid_t stats_pid;  /* the process the counters above are of */
    uint64_t once_ns; /* CPU time of this look paid once per thread: opening its files, the
                         first walk of its blocked stack */
    int known;        /* threads looked at before (not new) in this look */
    uint64_t prog_ns; /* CPU time of the program's threads during the period (their schedstat) */
    /* the runtime states of the thread being looked at (look_rstates): the one it is in, since
     * when, and its time in each during the period (rs_known: the times are known) */
    uint32_t rs_cur, rs_was; /* (rs_was: at the previous look, RS_NONE_FIRST if not known) */
    int rs_known;
    uint64_t rs_since, rs_part[THREADS_RSTATES];
    exp_stream_t stream;
    uint64_t pcs[THREADS_LAST_MAX];
    uint64_t tick;
    uint64_t spent_ns; /* atomic: CPU time of the sampler threads of spent_pid that ended */
    pid_t spent_pid;
} sampler_t;

static track_t *track_get(sampler_t *s, int tid)
{
    size_t h = ((unsigned)tid * 2654435761u) % NTRACK;
    for (size_t i = 0; i < NTRACK; i++) {
        track_t *t = &s->tracks[(h + i) % NTRACK];
        if (t->tid == tid)
            return t;
        if (t->tid == 0) {
            /* descriptors first: a fork child closes those of every track with a tid */
            t->fd[0] = t->fd[1] = t->fd[2] = -1;
            __atomic_signal_fence(__ATOMIC_SEQ_CST);
            t->tid = tid;
            t->hint = -1;
            t->run_delay = UINT64_MAX; /* first sight: no delta yet */
            t->blocked_pc = 0;
            t->carry = 0;
            t->rs_ok = 0;
            t->born = t->looked = 0;
            t->walked = 0;
            s->memos[t - s->tracks].n = 0;
            s->memos[t - s->tracks].pc = 0;
            s->ntracks++;
            return t;
        }
    }
    return NULL;
}

/* Reads file `which` of the thread's /proc directory into buf (NUL-terminated); returns its length
 * or -1. The file stays open (at a high descriptor, close-on-exec) for the next ticks: opening
 * /proc files costs more than reading them. */
#define MIN_KEPT_FDS 96
#define MAX_KEPT_FDS 8192

static sampler_t the_sampler;

static uint64_t own_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static ssize_t read_task(track_t *t, int which, char *buf, size_t cap)
{
    int keep = t->fd[which] >= 0 || the_sampler.nfds < the_sampler.max_fds;
    if (t->fd[which] < 0) {
        char path[64] = "/proc/self/task/";
        size_t n = strlen(path);
        n += exp_fmt_u64(path + n, (uint64_t)t->tid);
        path[n++] = '/';
        size_t wl = strlen(track_files[which]);
        memcpy(path + n, track_files[which], wl + 1);
        uint64_t c0 = own_cpu_ns();
        coll_fd_room_enter();
        t->fd[which] = coll_high_fd(open(path, O_RDONLY | O_CLOEXEC));
        int e = errno;
        coll_fd_room_leave();
        the_sampler.once_ns += own_cpu_ns() - c0;
        if (t->fd[which] < 0) {
            errno = e;
            return -1;
        }
        if (keep)
            the_sampler.nfds++;
    }
    ssize_t r = pread(t->fd[which], buf, cap - 1, 0);
    if (!keep) { /* beyond the budget: opened for this read only */
        coll_close(t->fd[which]);
        t->fd[which] = -1;
    }
    if (r < 0)
        return -1;
    __atomic_add_fetch(&coll_proc.own_rchar, (uint64_t)r, __ATOMIC_RELAXED);
    buf[r] = 0;
    return r;
}

static void track_close(track_t *t)
{
    for (int i = 0; i < 3; i++) {
        int fd = t->fd[i];
        t->fd[i] = -1; /* forgotten before closed: a fork child never closes a reused number */
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (fd >= 0) {
            if (coll_fd_owned(fd)) /* (not if the program took the number over) */
                coll_close(fd);
            the_sampler.nfds--;
        }
    }
}

/* The state letter of /proc/.../stat (after the ") " that ends the command name). */
static char task_state(track_t *t)
{
    char buf[512];
    if (read_task(t, TF_STAT, buf, sizeof buf) < 0)
        return 0;
    char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' ? rp[2] : 0;
}

/* Which sleep, from the system call the thread is blocked in (x86-64 numbers). */
static uint32_t sleep_kind(long nr, char state)
{
    if (state == 'D')
        return EXP_STATE_IO;
    switch (nr) {
    case 202: /* futex */
    case 449: /* futex_waitv */
        return EXP_STATE_LOCK;
    case 0: case 1: case 17: case 18: case 19: case 20: /* read write pread pwrite readv writev */
    case 7: case 23: case 232: case 270: case 271: case 281: case 441: /* poll select epoll.. */
    case 42: case 43: case 44: case 45: case 46: case 47: case 288: /* connect accept send recv */
    case 74: case 75: case 40: case 275: case 276: case 257: case 2: /* fsync sendfile splice open */
    case 206: case 208: case 426: case 295: case 296: case 299: case 307: /* aio uring p*v mmsg */
        return EXP_STATE_IO;
    default:
        return EXP_STATE_SLEEP;
    }
}

/* System calls whose wait is always interruptible ('S'): the state letter cannot make them I/O,
 * so their kind needs no read of `stat`. */
static int sleeps_interruptibly(long nr)
{
    switch (nr) {
    case 34:  /* pause */
    case 35:  /* nanosleep */
    case 61:  /* wait4 */
    case 128: /* rt_sigtimedwait */
    case 130: /* rt_sigsuspend */
    case 230: /* clock_nanosleep */
    case 247: /* waitid */
        return 1;
    default:
        return 0;
    }
}

static uint64_t parse_u64(const char **p)
{
    uint64_t v = 0;
    while (**p == ' ')
        (*p)++;
    while (**p >= '0' && **p <= '9')
        v = v * 10 + (uint64_t)(*(*p)++ - '0');
    return v;
}

/* The runtime states (OpenMP's, MPI's: threads.h) of thread t during the period that ends now:
 * the time it spent in each, from the times its slot keeps, into s->rs_*. */
static void look_rstates(sampler_t *s, uint64_t now, track_t *t)
{
    uint64_t ns[THREADS_RSTATES];
    s->rs_cur = threads_rstate_times(t->tid, &t->hint, now, ns, &s->rs_since);
    s->rs_known = 0;
    s->rs_was = t->rs_ok ? t->rs_last : RS_NONE_FIRST;
    t->rs_last = s->rs_cur;
    if (!s->rs_since) {
        t->rs_ok = 0;
        return;
    }
    if (t->rs_ok) {
        for (int i = 0; i < THREADS_RSTATES; i++)
            s->rs_part[i] = ns[i] > t->rs_ns[i] ? ns[i] - t->rs_ns[i] : 0;
        s->rs_known = 1;
    }
    memcpy(t->rs_ns, ns, sizeof ns);
    t->rs_ok = 1;
}

/* Writes ns of thread state `kind` on stack id, in the runtime states the thread was in during
 * the period, not only the one it is in at the look: a thread that entered or left MPI or an
 * OpenMP wait meanwhile has the time before the change in the state it left. A thread changes
 * its state only while it runs, so a thread asleep now has slept in its current state at most
 * since it entered it (asleep), and one that woke from a sleep waited for a CPU in the state it
 * slept in (first: that state, at most its time in it; RS_NONE_FIRST: none); the rest is shared
 * among the states in proportion to the thread's time in each. */
static void put_state(sampler_t *s, uint64_t now, track_t *t, uint32_t id, uint32_t kind,
                      uint64_t ns, int asleep, uint32_t first)
{
    uint32_t tid = (uint32_t)t->tid, cur = s->rs_cur;
    if (!s->rs_known) {
        exp_stream_state_rs(&s->stream, now, tid, id, kind, ns, cur);
        return;
    }
    enum { R = THREADS_RSTATES };
    uint32_t ci = cur < R ? cur : R - 1, fi = first < R ? first : R - 1;
    uint64_t part[R], given[R] = { 0 }, left = ns, total = 0;
    memcpy(part, s->rs_part, sizeof part);
    if (asleep && now > s->rs_since) {
        uint64_t episode = now - s->rs_since, g = left < episode ? left : episode;
        given[ci] += g;
        left -= g;
        part[ci] = part[ci] > episode ? part[ci] - episode : 0;
    }
    if (first != RS_NONE_FIRST) {
        uint64_t g = left < part[fi] ? left : part[fi];
        given[fi] += g;
        left -= g;
        part[fi] -= g;
    }
    for (int i = 0; i < R; i++)
        total += part[i];
    uint64_t rest = left;
    for (int i = 0; i < R && total && rest; i++) {
        uint64_t g = (uint64_t)((double)rest * (double)part[i] / (double)total);
        g = g < left ? g : left;
        given[i] += g;
        left -= g;
    }
    given[ci] += left; /* (rounding, or no time known in any state) */
    for (uint32_t i = 0; i < R; i++)
        if (given[i])
            exp_stream_state_rs(&s->stream, now, tid, id, kind, given[i],
                                i == ci ? cur : i == fi && first != RS_NONE_FIRST ? first : i);
}

/* A state event on the thread's stack at its last clock sample (it was running or runnable, or
 * asleep where the sampler could not unwind it). */
static void write_state(sampler_t *s, uint64_t now, track_t *t, uint32_t state, uint64_t ns,
                        int asleep)
{
    if (s->quiet)
        return;
    uint32_t flags = 0;
    uint32_t n = threads_last_stack(t->tid, &t->hint, s->pcs, THREADS_LAST_MAX, &flags);
    uint32_t id;
    if (exp_stream_stack(&s->stream, s->pcs, n, n ? flags : EXP_STACK_UNWIND_FAIL, &id) == 0)
        put_state(s, now, t, id, state, ns, asleep, RS_NONE_FIRST);
}

/* A sleeping thread, blocked in system call nr at (sp, pc) (0: not known): charged ns of sleep of
 * that kind on its blocked stack, unwound again only when it may have changed: when it moved, or
 * when it ran since and the words its last walk read are not all the same (unwind_memo_same). */
static void write_sleep(sampler_t *s, uint64_t now, track_t *t, uint32_t kind, uint64_t sp,
                        uint64_t pc, uint64_t ns)
{
    if (s->quiet)
        return;
    if (!pc || !sp) {
        write_state(s, now, t, kind, ns, 1);
        return;
    }
    /* blocked inside an interposer: the caller it published (threads.h), if the thread was in the
     * same call before and after the look at its stack */
    unwind_memo_t *memo = &s->memos[t - s->tracks];
    fu_regs_t caller, again;
    uint32_t seq, seq2;
    int in_call = threads_blocked_caller(t->tid, &t->hint, &caller, &seq);
    /* the same stack: it did not run since it was unwound there, or the walk would read what it
     * read then (it may have run in between, or been seen running) */
    int same = t->blocked_pc && pc == t->blocked_pc && sp == t->blocked_sp && !t->ran;
    if (!same && unwind_memo_same(memo, pc, sp, in_call ? &caller : NULL)) {
        same = 1;
        s->reused++;
    }
    if (!same) {
        uint32_t flags;
        int spliced;
        uint64_t c0 = t->walked ? 0 : own_cpu_ns(); /* a first walk reads what later ones reuse */
        uint32_t n = unwind_blocked(pc, sp, in_call ? &caller : NULL, s->pcs, THREADS_LAST_MAX,
                                    &flags, &spliced, memo);
        if (spliced && (!threads_blocked_caller(t->tid, &t->hint, &again, &seq2) || seq2 != seq))
            n = unwind_blocked(pc, sp, NULL, s->pcs, THREADS_LAST_MAX, &flags, &spliced, memo);
        s->unwinds++;
        if (!t->walked) {
            s->once_ns += own_cpu_ns() - c0;
            t->walked = 1;
        }
        if (exp_stream_stack(&s->stream, s->pcs, n, flags, &t->blocked_stack)) {
            t->blocked_pc = 0;
            memo->n = 0;
            return;
        }
    }
    t->blocked_pc = pc;
    t->blocked_sp = sp;
    t->blocked_kind = kind;
    t->blocked_seq = threads_stack_seq(t->tid, &t->hint);
    put_state(s, now, t, t->blocked_stack, kind, ns, 1, RS_NONE_FIRST);
}

/* The deficit d (the period less the run time and run delay schedstat shows; negative when
 * they hold time of earlier periods) of a thread not seen asleep, added to its carry
 * (track_t.carry). The carry's sleep was the one seen at the look before it began, if any: a
 * thread does not move while it sleeps. */
static void carry_add(sampler_t *s, track_t *t, int64_t d)
{
    if (s->quiet) {
        t->carry = 0; /* (paused: the baselines move on, nothing is charged) */
        return;
    }
    if (!t->carry && d > 0) {
        t->carry_seen = t->blocked_pc != 0;
        t->carry_stack = t->blocked_stack;
        t->carry_seq = t->blocked_seq;
        t->carry_kind = t->blocked_kind;
        t->carry_rs_known = s->rs_known;
        t->carry_rs_cur = s->rs_cur;
        memcpy(t->carry_rs_part, s->rs_part, sizeof t->carry_rs_part);
    }
    if (d >= 0)
        t->carry += (uint64_t)d;
    else
        t->carry = t->carry > (uint64_t)-d ? t->carry - (uint64_t)-d : 0;
}

/* At a look that found the thread asleep for `off` of its period (what schedstat shows, less
 * what it holds of earlier periods): the carry and off together are the time off a CPU since the
 * thread was last seen asleep. A carry that began after the thread was seen asleep is the end of
 * that sleep: charged there, in the runtime states of the period it began in. Otherwise where it
 * slept is not known (a sleep that began and ended between two looks, or only what schedstat
 * had not shown yet): it goes with the sleep going on now. Returns what the sleep going on now
 * is charged. */
static uint64_t carry_charge(sampler_t *s, uint64_t now, track_t *t, uint64_t off)
{
    uint64_t slept = t->carry_seen ? t->carry : 0, cur = t->carry_seen ? off : off + t->carry;
    t->carry = 0;
    if (!slept || s->quiet)
        return cur;
    int known = s->rs_known;
    uint32_t rcur = s->rs_cur;
    uint64_t part[THREADS_RSTATES];
    memcpy(part, s->rs_part, sizeof part);
    s->rs_known = t->carry_rs_known;
    s->rs_cur = t->carry_rs_cur;
    memcpy(s->rs_part, t->carry_rs_part, sizeof part);
    put_state(s, now, t, t->carry_stack, t->carry_kind, slept, 0, RS_NONE_FIRST);
    s->rs_known = known;
    s->rs_cur = rcur;
    memcpy(s->rs_part, part, sizeof part);
    return cur;
}

/* Looks at a thread that was off a CPU for `off` ns of the period (schedstat: exact): what kind
 * of sleep, and where, is what the thread shows now. Its `syscall` file says whether it is running
 * and, if not, the system call it is blocked in with its user sp and pc; `stat` (the costly file:
 * the kernel locks the thread's mm and signal state for it) is read only when the state letter
 * can change the kind: an uninterruptible sleep ('D') is I/O. */
static void look_off(sampler_t *s, uint64_t now, track_t *t, uint64_t off)
{
    char buf[256];
    long nr = -1;
    uint64_t sp = 0, pc = 0;
    ssize_t r = read_task(t, TF_SYSCALL, buf, sizeof buf);
    if (r > 0 && buf[0] == 'r') {
        /* Running or runnable now: the deficit is a sleep that ended within the period, a wait
         * for a CPU still going on (the kernel adds it to the run delay only when the wait ends)
         * or run time since the last tick: carried until the thread is seen asleep. */
        carry_add(s, t, (int64_t)off);
        t->blocked_pc = 0;
        return;
    }
    if (r > 0 && buf[0] >= '0' && buf[0] <= '9') {
        nr = strtol(buf, NULL, 10);
        char *last = strrchr(buf, ' '); /* pc */
        if (last) {
            pc = strtoull(last + 1, NULL, 16);
            *last = 0;
            char *prev = strrchr(buf, ' '); /* sp */
            if (prev)
                sp = strtoull(prev + 1, NULL, 16);
        }
    }
    uint32_t kind = sleep_kind(nr, 'S');
    if (kind == EXP_STATE_SLEEP && !(r > 0 && sleeps_interruptibly(nr))) {
        char st = task_state(t);
        if (st != 'S' && st != 'D' && st != 't' && st != 'T') {
            carry_add(s, t, (int64_t)off); /* woke up meanwhile (or gone): as above */
            t->blocked_pc = 0;
            return;
        }
        kind = sleep_kind(nr, st);
    }
    if (t->carry)
        off = carry_charge(s, now, t, off);
    write_sleep(s, now, t, kind, sp, pc, off);
}

/* A thread's own period: the time since the look that last took its baselines, which is longer
 * than the sampler's period dt when a look left it alone. */
static uint64_t own_period(const track_t *t, uint64_t now, uint64_t dt)
{
    return t->looked && t->looked < now ? now - t->looked : dt;
}

/* Looks at one thread; returns 1 when it was off a CPU during the period (or is new). */
static int look_thread(sampler_t *s, uint64_t now, uint64_t dt, track_t *t)
{
    int fresh = t->run_delay == UINT64_MAX;
    t->seen = s->tick;
    char buf[128];
    uint64_t busy = 0; /* ns on a CPU or waiting for one during the period */
    ssize_t r = read_task(t, TF_SCHED, buf, sizeof buf);
    if (r <= 0) {
        if (errno == ESRCH || errno == ENOENT) /* gone: forgotten below */
            t->seen = s->tick - 1;
        return 1;
    }
    if (!t->born)
        t->born = now;
    /* A thread that has not started through the collector yet (no registry slot) has not run
     * its first instructions: under load a new thread can wait long for a CPU. That time is
     * charged once it has its slot, in the runtime state it starts in (its creator's), not in
     * none; a thread that gets no slot (a raw clone) after a second. Without a sampling source
     * no thread has a slot: none is waited for. */
    if (!fresh && now - t->born < 1000000000u && sources_active() &&
        !threads_has_slot(t->tid, &t->hint))
        return 1;
    const char *q = buf;
    uint64_t run = parse_u64(&q);
    uint64_t delay = parse_u64(&q);
    uint64_t slices = parse_u64(&q);
    t->ran = slices != t->slices; /* it ran since the last look: its stack may have changed */
    t->slices = slices;
    look_rstates(s, now, t);
    if (!fresh && delay > t->run_delay) {
        /* A thread seen blocked at the previous look, and not sampled since, waited for a CPU
         * where it woke (a wake-up waits for a CPU before the thread runs anywhere else): its
         * blocked stack, not the stack of the sample it took before it slept. */
        if (t->blocked_pc && !s->quiet && threads_stack_seq(t->tid, &t->hint) == t->blocked_seq)
            put_state(s, now, t, t->blocked_stack, EXP_STATE_WAIT, delay - t->run_delay, 0,
                      s->rs_was);
        else if (t->carry && t->carry_seen && !s->quiet &&
                 threads_stack_seq(t->tid, &t->hint) == t->carry_seq)
            put_state(s, now, t, t->carry_stack, EXP_STATE_WAIT, delay - t->run_delay, 0,
                      s->rs_was); /* (woke from there, seen runnable at the look between) */
        else
            write_state(s, now, t, EXP_STATE_WAIT, delay - t->run_delay, 0);
    }
    if (!fresh) {
        busy = (run > t->run_time ? run - t->run_time : 0) +
               (delay > t->run_delay ? delay - t->run_delay : 0);
        s->prog_ns += run > t->run_time ? run - t->run_time : 0;
        s->known++;
    }
    t->run_delay = delay;
    t->run_time = run;
    uint64_t own = own_period(t, now, dt);
    t->looked = now;
    if (fresh)
        return 1; /* the thread may have started at any time during the last period */
    /* A thread that ran (or waited to) the whole period is not asked where it sleeps: the run
     * time lags by up to a scheduler tick (5 ms slack). What schedstat does not show of the
     * period goes to its carry, which the lag's catching up takes back from. */
    if (busy + 5000000 >= own) {
        if (t->carry || busy < own)
            carry_add(s, t, (int64_t)own - (int64_t)busy);
        t->blocked_pc = 0;
        return 0;
    }
    look_off(s, now, t, own - busy); /* off a CPU for own - busy exactly (schedstat) */
    return 1;
}

/* The directory of threads is read again only when the thread set may have changed: a thread
 * started or ended through the collector (threads_generation), the directory's link count (one
 * per thread) changed, or a second passed (threads the collector does not see start, from raw
 * clone calls). Returns the number of tids in s->tids, or -1 when it cannot be read. */
static int scan_tids(sampler_t *s, uint64_t now)
{
    if (s->dirfd < 0) {
        coll_fd_room_enter();
        s->dirfd = coll_high_fd(open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        coll_fd_room_leave();
    }
    int dfd = s->dirfd;
    if (dfd < 0)
        return -1;
    struct stat sb;
    uint64_t gen = threads_generation();
    if (s->ntids >= 0 && fstat(dfd, &sb) == 0 && sb.st_nlink == s->nlink && gen == s->gen &&
        now < s->scanned + 1000000000u)
        return s->ntids;
    if (lseek(dfd, 0, SEEK_SET) < 0)
        return -1;
    s->gen = gen;
    s->nlink = fstat(dfd, &sb) == 0 ? sb.st_nlink : 0;
    s->scanned = now;
    int n = 0;
    char dbuf[4096];
    for (;;) {
        long got = syscall(SYS_getdents64, dfd, dbuf, sizeof dbuf);
        if (got <= 0)
            break;
        for (long off = 0; off < got;) {
            struct dirent64 *de = (struct dirent64 *)(dbuf + off);
            off += de->d_reclen;
            if (de->d_name[0] < '0' || de->d_name[0] > '9')
                continue;
            int tid = atoi(de->d_name);
            if (tid != s->self && n < NTRACK)
                s->tids[n++] = tid;
        }
    }
    s->ntids = n;
    return n;
}

/* Looks at every thread; returns 1 when some thread was off a CPU during the period. */
static int sample_states(sampler_t *s, uint64_t now, uint64_t dt)
{
    int ntids = scan_tids(s, now);
    if (ntids < 0)
        return 1;
    int any_off = 0;
    s->tick++;
    int looked = 0;
    for (int i = 0; i < ntids; i++) {
        track_t *t = track_get(s, s->tids[i]);
        if (t) {
            any_off |= look_thread(s, now, dt, t);
            looked += t->seen == s->tick;
        }
    }
    if (looked == s->ntracks)
        return any_off; /* every thread tracked is still there: nothing to forget */
    /* forget threads that are gone (their tids may come back for new threads), keeping the
     * probing chains valid: each entry after a freed slot in its chain moves back into it when
     * its home allows (deletion by backward shift) */
    for (size_t i = 0; i < NTRACK; i++) {
        if (!s->tracks[i].tid || s->tracks[i].seen == s->tick)
            continue;
        track_close(&s->tracks[i]);
        s->ntracks--;
        any_off = 1;
        s->ntids = -1; /* read the directory again at the next look */
        size_t hole = i;
        for (size_t j = (i + 1) % NTRACK; s->tracks[j].tid; j = (j + 1) % NTRACK) {
            size_t home = ((unsigned)s->tracks[j].tid * 2654435761u) % NTRACK;
            /* movable when home is not cyclically within (hole, j] */
            int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
            if (stays)
                continue;
            s->tracks[hole] = s->tracks[j];
            s->memos[hole] = s->memos[j];
            hole = j;
        }
        s->tracks[hole].tid = 0;
        if (hole != i)
            i--; /* the slot holds a moved entry now: look at it again (entries only move back
                    toward their home, so one that wrapped was seen this tick) */
    }
    return any_off;
}

/* ---- the thread ----------------------------------------------------------------------------- */

/* The sampler's budget: its looks may use 1% of the CPU time the program used meanwhile, and at
 * least 1% of one CPU (a program whose threads all sleep is still looked at; a few threads are
 * never looked at less often). */
#define BUDGET_PROGRAM 100 /* 1 / share of the program's CPU */
#define BUDGET_FLOOR 100   /* 1 / share of one CPU */
#define NRECENT 16
#define NRECENT_MIN 2
#define MAX_PERIOD 1000000000u


/* The shortest period at which looks that cost `cost` ns of CPU stay within the budget, given the
 * program's CPU time prog over the last dt ns. */
static uint64_t budget_period(uint64_t cost, uint64_t prog, uint64_t dt)
{
    if (!dt)
        return 0;
    /* period >= cost / max(prog / dt / BUDGET_PROGRAM, 1 / BUDGET_FLOOR) */
    double share = (double)prog / (double)dt / BUDGET_PROGRAM;
    if (share < 1.0 / BUDGET_FLOOR)
        share = 1.0 / BUDGET_FLOOR;
    double p = (double)cost / share;
    return p > MAX_PERIOD ? MAX_PERIOD : (uint64_t)p;
}

static void *sampler_main(void *arg)
{
    sampler_t *s = arg;
    coll_proc_t *p = s->p;
    trace_exclude_thread(); /* the collector's own thread */
    s->self = (pid_t)syscall(SYS_gettid);
    /* While every thread keeps running, states are looked at less and less often (up to 8
     * periods apart): the off-CPU time is exact whatever the period (schedstat), only its
     * classification is sampled, and a busy program should not pay for a sampler. For the same
     * reason a look may not cost more than its budget (budget_period): many threads are looked
     * at less often, and the stats record and a warning say so. */
    uint64_t base = p->state_ns ? p->state_ns : p->sample_ns, period = base, cost = 0;
    uint64_t recent[NRECENT]; /* CPU ns per thread of the last looks */
    int nrecent = 0;
    uint64_t now = coll_now(), last = now, wake = now;
    uint64_t next_sample = p->sample_ns ? now + p->sample_ns : UINT64_MAX;
    /* (a set `final` means the image is ending, or an exec is under way: if the exec fails the
     * process goes on, and so does the sampler) */
    while (getpid() == p->pid && !__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
        wake += period;
        if (next_sample < wake)
            wake = next_sample;
        struct timespec next = { (time_t)(wake / 1000000000u), (long)(wake % 1000000000u) };
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {
        }
        if (__atomic_load_n(&p->final, __ATOMIC_ACQUIRE) ||
            __atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
            continue;
        now = coll_now();
        int paused = __atomic_load_n(&p->paused, __ATOMIC_ACQUIRE);
        int outside = p->has_window && (now < p->win_lo || now > p->win_hi);
        if (p->state_ns) {
            s->quiet = paused || outside; /* the baselines move on, nothing is written */
            uint64_t c0 = own_cpu_ns();
            s->prog_ns = 0;
            s->known = 0;
            s->once_ns = 0;
            int any_off = sample_states(s, now, now - last);
            uint64_t c = own_cpu_ns() - c0;
            /* what is paid once per thread is not what the next looks cost */
            c = c > s->once_ns ? c - s->once_ns : 0;
            s->looks++;
            s->look_cpu_ns += c;
            period = any_off ? base : (period * 2 > 8 * base ? 8 * base : period * 2);
            /* what a look costs: its threads times the least cost per thread of the last 16
             * looks (one that writes into a new chunk of the events file or is slowed by other
             * work on the machine costs more once), applied from the second; a look at threads
             * all new has no program CPU time to compare with. Before, the budget waited for 16
             * looks, which with 1,000 threads at 10 ms apart was 0.16 s of the sampler's CPU
             * (most of the 6% of the program's that it used in a 3 s run) */
            if (s->known && s->ntids > 0) {
                recent[nrecent++ % NRECENT] = c / (uint64_t)s->ntids;
                uint64_t per = UINT64_MAX;
                for (int i = 0; i < NRECENT && i < nrecent; i++)
                    per = recent[i] < per ? recent[i] : per;
                cost = per * (uint64_t)s->ntids;
            }
            uint64_t floor = s->known && nrecent >= NRECENT_MIN
                                 ? budget_period(cost, s->prog_ns, now - last)
                                 : 0;
            if (floor > period) {
                period = floor;
                s->stretched_looks++;
                if (period > s->max_period) {
                    s->max_period = period;
                    s->max_threads = (uint64_t)s->ntids;
                    s->max_cost = cost;
                }
            }
        }
        last = now;
        if (now >= next_sample) {
            if (!paused)
                coll_log_sample(p, "periodic", NULL);
            while (next_sample <= now)
                next_sample += p->sample_ns;
        }
    }
    struct timespec ts; /* its CPU, for sampler_cpu_ns once it is gone (unshare, setns) */
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0 && getpid() == p->pid) {
        if (s->spent_pid != p->pid) {
            s->spent_ns = 0;
            s->spent_pid = p->pid;
        }
        __atomic_add_fetch(&s->spent_ns, (uint64_t)ts.tv_sec * 1000000000u +
                                             (uint64_t)ts.tv_nsec, __ATOMIC_RELAXED);
    }
    return NULL;
}

uint64_t sampler_cpu_ns(coll_proc_t *p)
{
    sampler_t *s = &the_sampler;
    uint64_t ns = s->spent_pid == p->pid ? __atomic_load_n(&s->spent_ns, __ATOMIC_RELAXED) : 0;
    clockid_t cid;
    struct timespec ts;
    if (s->running && getpid() == p->pid && pthread_getcpuclockid(s->thread, &cid) == 0 &&
        clock_gettime(cid, &ts) == 0)
        ns += (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return ns;
}

void sampler_start(coll_proc_t *p)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = control_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (p->sample_sig && signals_real_sigaction(p->sample_sig, &sa, NULL))
        coll_warn("cannot install the sample signal handler (-l)");
    if (p->pause_sig && signals_real_sigaction(p->pause_sig, &sa, NULL))
        coll_warn("cannot install the pause signal handler (-y)");
    if (!p->sample_ns && !p->state_ns)
        return;
    if (!p->ev_ok)
        p->state_ns = 0;
    sampler_t *s = &the_sampler;
    int fresh = !s->tracks; /* (fresh tables are zero: nothing to forget, no page to touch) */
    if (!s->tracks) {
        s->tracks = mmap(NULL, NTRACK * sizeof *s->tracks, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        s->memos = mmap(NULL, NTRACK * sizeof *s->memos, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (s->tracks == MAP_FAILED || s->memos == MAP_FAILED) {
            if (s->tracks != MAP_FAILED)
                munmap(s->tracks, NTRACK * sizeof *s->tracks);
            if (s->memos != MAP_FAILED)
                munmap(s->memos, NTRACK * sizeof *s->memos);
            s->tracks = NULL;
            s->memos = NULL;
            p->state_ns = 0;
        }
    }
    if (fresh) {
        s->ntracks = 0;
        s->dirfd = -1;
        s->nfds = 0;
    } else {
        sampler_forget(p);
    }
    s->p = p;
    s->tick = 0;
    s->ntids = -1;
    if (s->stats_pid != p->pid) { /* (not when it starts again after unshare/setns) */
        s->stats_pid = p->pid;
        s->looks = s->unwinds = s->reused = s->look_cpu_ns = s->stretched_looks = 0;
        s->max_period = s->max_threads = s->max_cost = 0;
    }
    /* the /proc files kept open: a quarter of what the hard limit leaves above the program's
     * usual numbers, within [96, 8192] (two a thread: schedstat and syscall) */
    struct rlimit rl;
    rlim_t room = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max > 1024 ? rl.rlim_max - 1024 : 0;
    room /= 4;
    s->max_fds = room < MIN_KEPT_FDS ? MIN_KEPT_FDS : room > MAX_KEPT_FDS ? MAX_KEPT_FDS : (int)room;
    if (p->state_ns) {
        exp_stream_forget(&s->stream); /* a fork child: the parent's stream is not ours */
        exp_stream_init(&s->stream, &p->evfile, 0);
        s->stream.last_t = coll_now();
    }
    /* the real pthread_create: the sampler thread is not the program's (not profiled) */
    static int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    static int create_state;
    static const realfn_t create_fn[] = { REALFN(create, "pthread_create") };
    static const realfn_table_t create_table = { create_fn, 1, &create_state, 0 };
    realfn_ready(&create_table);
    if (!create) {
        coll_warn("cannot start the sampler thread: no periodic samples or thread states");
        return;
    }
    sigset_t all, old;
    sigfillset(&all);
    signals_real_sigmask(SIG_SETMASK, &all, &old); /* the thread inherits: it takes no signal */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    s->stop = 0;
    s->running = 0;
    if (create(&s->thread, &attr, sampler_main, s)) {
        coll_warn("cannot start the sampler thread: no periodic samples or thread states");
    } else {
        s->running = 1;
        pthread_setname_np(s->thread, "tally-sampler");
    }
    pthread_attr_destroy(&attr);
    signals_real_sigmask(SIG_SETMASK, &old, NULL);
}

void sampler_forget(coll_proc_t *p)
{
    (void)p;
    sampler_t *s = &the_sampler;
    if (s->tracks) { /* in a fork child: the parent's descriptors were inherited */
        for (size_t i = 0; i < NTRACK; i++)
            if (s->tracks[i].tid) { /* (only these: a fork child copies no other page) */
                track_close(&s->tracks[i]);
                memset(&s->tracks[i], 0, sizeof s->tracks[i]);
            }
    }
    s->ntracks = 0;
    if (s->dirfd > 0 && coll_fd_owned(s->dirfd))
        coll_close(s->dirfd);
    s->dirfd = -1;
    s->nfds = 0;
}

int sampler_suspend(coll_proc_t *p)
{
    sampler_t *s = &the_sampler;
    if (!s->running || getpid() != p->pid)
        return 0;
    __atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
    pthread_join(s->thread, NULL); /* it looks at stop within one period (80 ms at most) */
    s->running = 0;
    return 1;
}

void sampler_log_stats(coll_proc_t *p, exp_line_t *l)
{
    sampler_t *s = &the_sampler;
    if (!p->state_ns || s->stats_pid != p->pid)
        return;
    exp_line_u64(l, EXP_KEY_STATES_LOOKS, s->looks);
    exp_line_u64(l, EXP_KEY_STATES_UNWINDS, s->unwinds);
    exp_line_u64(l, EXP_KEY_STATES_REUSED, s->reused);
    exp_line_u64(l, EXP_KEY_STATES_STRETCHED, s->stretched_looks);
    if (s->stretched_looks)
        exp_line_u64(l, EXP_KEY_STATES_PERIOD_MAX, s->max_period);
}

void sampler_warn_stretched(coll_proc_t *p)
{
    sampler_t *s = &the_sampler;
    if (!p->state_ns || s->stats_pid != p->pid || !s->stretched_looks)
        return;
    char msg[400];
    exp_line_t l;
    size_t n = 0;
    static const char a[] = "thread states were looked at less often than every ",
                      b[] = " ms (at longest every ", c[] = " ms, in ", d[] = " of ",
                      e[] = " looks): a look at ", f[] = " threads cost ",
                      g[] = " us of CPU, and the sampler keeps within 1% of the program's CPU "
                            "time; the time in each state is still exact, its kind and stack "
                            "are sampled less often";
#define PUT(str) (memcpy(msg + n, str, sizeof str - 1), n += sizeof str - 1)
#define NUM(v) (n += exp_fmt_u64(msg + n, (uint64_t)(v)))
    PUT(a);
    NUM(p->state_ns / 1000000);
    PUT(b);
    NUM(s->max_period / 1000000);
    PUT(c);
    NUM(s->stretched_looks);
    PUT(d);
    NUM(s->looks);
    PUT(e);
    NUM(s->max_threads);
    PUT(f);
    NUM(s->max_cost / 1000);
    PUT(g);
#undef PUT
#undef NUM
    msg[n] = 0;
    (void)l;
    coll_warn(msg);
}
