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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "realfn.h"
#include "signals.h"
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

typedef struct track {
    int tid; /* 0 free */
    int hint;
    uint64_t run_delay; /* schedstat: ns runnable but not running, so far */
    uint64_t run_time;  /* schedstat: ns on a CPU, so far */
    uint64_t slices;    /* schedstat: times it got a CPU, so far */
    uint64_t seen;      /* the tick it was last seen */
    uint64_t blocked_pc, blocked_sp; /* where it was blocked at the last tick ... */
    uint32_t blocked_stack;          /* ... and the stack id written for it */
    int fd[3];                       /* its /proc files, kept open (TF_*), -1 until opened */
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
    pid_t self;
    track_t *tracks;
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
            return t;
        }
    }
    return NULL;
}

/* Reads file `which` of the thread's /proc directory into buf (NUL-terminated); returns its length
 * or -1. The file stays open (at a high descriptor, close-on-exec) for the next ticks: opening
 * /proc files costs more than reading them. */
#define MAX_KEPT_FDS 96

static sampler_t the_sampler;

static ssize_t read_task(track_t *t, int which, char *buf, size_t cap)
{
    int keep = t->fd[which] >= 0 || the_sampler.nfds < MAX_KEPT_FDS;
    if (t->fd[which] < 0) {
        char path[64] = "/proc/self/task/";
        size_t n = strlen(path);
        n += exp_fmt_u64(path + n, (uint64_t)t->tid);
        path[n++] = '/';
        size_t wl = strlen(track_files[which]);
        memcpy(path + n, track_files[which], wl + 1);
        coll_fd_room_enter();
        t->fd[which] = coll_high_fd(open(path, O_RDONLY | O_CLOEXEC));
        coll_fd_room_leave();
        if (t->fd[which] < 0)
            return -1;
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

static uint64_t parse_u64(const char **p)
{
    uint64_t v = 0;
    while (**p == ' ')
        (*p)++;
    while (**p >= '0' && **p <= '9')
        v = v * 10 + (uint64_t)(*(*p)++ - '0');
    return v;
}

/* A state event on the thread's stack at its last clock sample (it was running or runnable). */
static void write_state(sampler_t *s, uint64_t now, track_t *t, uint32_t state, uint64_t ns)
{
    if (s->quiet)
        return;
    uint32_t flags = 0;
    uint32_t n = threads_last_stack(t->tid, &t->hint, s->pcs, THREADS_LAST_MAX, &flags);
    uint32_t id;
    if (exp_stream_stack(&s->stream, s->pcs, n, n ? flags : EXP_STACK_UNWIND_FAIL, &id) == 0)
        exp_stream_state_rs(&s->stream, now, (uint32_t)t->tid, id, state, ns,
                            threads_rstate_of(t->tid, &t->hint));
}

/* A sleeping thread: the system call it is blocked in (from /proc: "nr args... sp pc") gives the
 * kind of sleep and where to unwind its stack from; unwound again only when it moved. */
static void write_sleep(sampler_t *s, uint64_t now, track_t *t, char st, uint64_t ns)
{
    char buf[256];
    long nr = -1;
    uint64_t sp = 0, pc = 0;
    if (read_task(t, TF_SYSCALL, buf, sizeof buf) > 0 && buf[0] >= '0' && buf[0] <= '9') {
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
    if (s->quiet)
        return;
    uint32_t kind = sleep_kind(nr, st);
    if (!pc || !sp) {
        write_state(s, now, t, kind, ns);
        return;
    }
    if (pc != t->blocked_pc || sp != t->blocked_sp) {
        /* blocked inside an interposer: the caller it published (threads.h), if the thread was
         * in the same call before and after the look at its stack */
        fu_regs_t caller, again;
        uint32_t seq, seq2;
        int in_call = threads_blocked_caller(t->tid, &t->hint, &caller, &seq);
        uint32_t flags;
        int spliced;
        uint32_t n = unwind_blocked(pc, sp, in_call ? &caller : NULL, s->pcs, THREADS_LAST_MAX,
                                    &flags, &spliced);
        if (spliced && (!threads_blocked_caller(t->tid, &t->hint, &again, &seq2) || seq2 != seq))
            n = unwind_blocked(pc, sp, NULL, s->pcs, THREADS_LAST_MAX, &flags, &spliced);
        if (exp_stream_stack(&s->stream, s->pcs, n, flags, &t->blocked_stack)) {
            t->blocked_pc = 0;
            return;
        }
        t->blocked_pc = pc;
        t->blocked_sp = sp;
    }
    exp_stream_state_rs(&s->stream, now, (uint32_t)t->tid, t->blocked_stack, kind, ns,
                        threads_rstate_of(t->tid, &t->hint));
}

/* Looks at every thread; returns 1 when some thread was off a CPU during the period. */
static int sample_states(sampler_t *s, uint64_t now, uint64_t dt)
{
    if (s->dirfd < 0) {
        coll_fd_room_enter();
        s->dirfd = coll_high_fd(open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        coll_fd_room_leave();
    }
    int dfd = s->dirfd;
    if (dfd < 0 || lseek(dfd, 0, SEEK_SET) < 0)
        return 1;
    int any_off = 0;
    s->tick++;
    char dbuf[4096];
    for (;;) {
        long n = syscall(SYS_getdents64, dfd, dbuf, sizeof dbuf);
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            struct dirent64 *de = (struct dirent64 *)(dbuf + off);
            off += de->d_reclen;
            if (de->d_name[0] < '0' || de->d_name[0] > '9')
                continue;
            int tid = atoi(de->d_name);
            if (tid == s->self)
                continue;
            track_t *t = track_get(s, tid);
            if (!t)
                continue;
            int fresh = t->run_delay == UINT64_MAX;
            t->seen = s->tick;
            char buf[128];
            uint64_t busy = 0; /* ns on a CPU or waiting for one during the period */
            if (read_task(t, TF_SCHED, buf, sizeof buf) > 0) {
                const char *q = buf;
                uint64_t run = parse_u64(&q);
                uint64_t delay = parse_u64(&q);
                uint64_t slices = parse_u64(&q);
                if (slices != t->slices) /* it ran since the last look: unwind it again */
                    t->blocked_pc = 0;
                t->slices = slices;
                if (!fresh && delay > t->run_delay)
                    write_state(s, now, t, EXP_STATE_WAIT, delay - t->run_delay);
                if (!fresh)
                    busy = (run > t->run_time ? run - t->run_time : 0) +
                           (delay > t->run_delay ? delay - t->run_delay : 0);
                t->run_delay = delay;
                t->run_time = run;
            }
            if (fresh) {
                any_off = 1;
                continue; /* the thread may have started at any time during the last period */
            }
            /* A thread that ran (or waited to) the whole period did not sleep: skip reading its
             * stat, which is the costly file (the kernel locks the running thread's mm and
             * signal state for it). The run time lags by up to a scheduler tick: 5 ms slack. */
            if (busy + 5000000 >= dt) {
                t->blocked_pc = 0;
                continue;
            }
            /* off a CPU for dt - busy exactly (schedstat); what kind of sleep, and where, is what
             * the thread shows now */
            any_off = 1;
            uint64_t off = dt - busy;
            char st = task_state(t);
            if (st == 'S' || st == 'D' || st == 't' || st == 'T') {
                write_sleep(s, now, t, st, off);
            } else {
                /* Running or runnable now: the deficit is a wait for a CPU still going on (the
                 * kernel adds it to the run delay only when the wait ends) or a sleep that ended
                 * within the period, whose kind is unknown. Neither is charged: the first shows
                 * up as Wait CPU at a later look. */
                t->blocked_pc = 0;
            }
        }
    }
    /* forget threads that are gone (their tids may come back for new threads); when any went,
     * re-insert the rest so that the probing chains stay valid */
    int removed = 0;
    for (size_t i = 0; i < NTRACK; i++)
        if (s->tracks[i].tid && s->tracks[i].seen != s->tick) {
            track_close(&s->tracks[i]);
            s->tracks[i].tid = 0;
            removed = 1;
        }
    if (removed) {
        any_off = 1;
        static track_t tmp[NTRACK];
        memcpy(tmp, s->tracks, sizeof tmp);
        memset(s->tracks, 0, sizeof tmp);
        for (size_t i = 0; i < NTRACK; i++)
            if (tmp[i].tid) {
                track_t *t = track_get(s, tmp[i].tid);
                if (t)
                    *t = tmp[i];
            }
    }
    return any_off;
}

/* ---- the thread ----------------------------------------------------------------------------- */

static void *sampler_main(void *arg)
{
    sampler_t *s = arg;
    coll_proc_t *p = s->p;
    trace_exclude_thread(); /* the collector's own thread */
    s->self = (pid_t)syscall(SYS_gettid);
    /* While every thread keeps running, states are looked at less and less often (up to 8
     * periods apart): the off-CPU time is exact whatever the period (schedstat), only its
     * classification is sampled, and a busy program should not pay for a sampler. */
    uint64_t base = p->state_ns ? p->state_ns : p->sample_ns, period = base;
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
            int any_off = sample_states(s, now, now - last);
            period = any_off ? base : (period * 2 > 8 * base ? 8 * base : period * 2);
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
    if (!s->tracks) {
        s->tracks = mmap(NULL, NTRACK * sizeof *s->tracks, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (s->tracks == MAP_FAILED) {
            s->tracks = NULL;
            p->state_ns = 0;
        }
    }
    sampler_forget(p);
    s->p = p;
    s->tick = 0;
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
            if (s->tracks[i].tid)
                track_close(&s->tracks[i]);
        memset(s->tracks, 0, NTRACK * sizeof *s->tracks);
    }
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
