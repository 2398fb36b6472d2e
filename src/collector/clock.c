/*
 * clock.c - the collector's async-signal-safe core: per-thread clock profiling, the profiling and
 * fatal-signal handlers, the registry of profiled threads. See clock.h for the contract.
 *
 * Everything reachable from prof_handler() and fatal_handler() uses system calls and the
 * AS-safe evwriter/logfile functions only: no malloc, no locks, no stdio.
 *
 * Sections: state, small AS-safe helpers, sources (perf, timer), the profiling handler, thread
 * start/stop, other threads at the end, fork, signals owned for the program, fatal signals.
 */
#define _GNU_SOURCE
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "unwind.h"

/* ---- state ----------------------------------------------------------------------------------- */

#define TIMER_MAGIC 0x7a11c10c
#define RING_DATA_PAGES 2 /* power of two; 16-byte records, one per signal with REFRESH */
#define NSLOTS 8192
#define ALTSTACK_SIZE (64 * 1024)
#define PRIME_MAGIC 0x7a11b1d5
/* Bytes of stack the profiling handler may use below its own frame when it unwinds (libunwind's
 * cursor and context, the dynamic linker's first resolutions already done at the priming): the
 * deepest use measured here was 5.6 KiB below the handler's frame, at a first unwind that searches
 * the load objects (tests/e2e/faults.py, `faults altdepth`). With less room
 * than this left on the stack the handler is on, the sample keeps only the interrupted PC. */
#define UNWIND_ROOM (8 * 1024)

enum { TH_NONE = 0, TH_ON = 1, TH_ENDED = 2 };

/* Registry entry of a profiled thread: what the end of the image and a fork child need to know
 * about threads other than the calling one. */
typedef struct slot {
    int tid; /* 0: free; claimed with CAS */
    int perf_fd;
    void *ring;
    size_t ring_len;
    clockid_t cpuclock;
    uint64_t samples;
    uint64_t last_cpu;
    /* the stack of the thread's last sample, for the sampler thread (seqlock: odd = writing) */
    uint32_t seq, last_n, last_flags;
    uint64_t last_pcs[CLOCK_LAST_MAX];
} slot_t;

typedef struct thr {
    int state;
    pid_t tid;
    int perf_fd;
    struct perf_event_mmap_page *ring;
    size_t ring_len;
    int timer_id, has_timer;
    uint64_t last_cpu, last_ut, last_st;
    uint32_t last_stack, last_state; /* of the last sample, for the tail at the thread's end */
    int has_last;
    slot_t *slot;
    void **scratch;
    uint64_t *pcs;
    size_t bufs_len;
    void *altstack;
    uintptr_t stack_lo, stack_hi; /* the thread's own stack, above its guard (0: unknown) */
    uint32_t cpu_num; /* CPU of the last sample (a CPU record is written when it changes) */
    exp_stream_t stream;
} thr_t;

static __thread thr_t th __attribute__((tls_model("initial-exec")));
/* > 0 while the thread runs the collector's own signal-sensitive code (the handler, a priming
 * unwind): libunwind then blocks signals around its locks and must get what it asks for. */
static __thread int in_core __attribute__((tls_model("initial-exec")));
__thread int clock_prog_blocked __attribute__((tls_model("initial-exec")));
static slot_t slots[NSLOTS];
static size_t page_size = 4096;

/* The program's view of the signals the collector owns. */
static struct sigaction prog_act[_NSIG];
static volatile sig_atomic_t owned[_NSIG];

static const int fatal_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS };

int (*clock_real_sigmask)(int, const sigset_t *, sigset_t *);
int (*clock_real_sigaction)(int, const struct sigaction *, struct sigaction *);

/* ---- small AS-safe helpers ------------------------------------------------------------------- */

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t tv_ns(struct timeval tv)
{
    return (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_usec * 1000u;
}

static int in_window(const coll_proc_t *p, uint64_t t)
{
    return !p->has_window || (t >= p->win_lo && t <= p->win_hi);
}

static void atomic_add(uint64_t *v, uint64_t d)
{
    if (d)
        __atomic_fetch_add(v, d, __ATOMIC_RELAXED);
}

static void *map_anon(size_t len)
{
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

static slot_t *slot_claim(pid_t tid)
{
    for (int i = 0; i < NSLOTS; i++) {
        int zero = 0;
        if (slots[i].tid == 0 &&
            __atomic_compare_exchange_n(&slots[i].tid, &zero, (int)tid, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            slots[i].perf_fd = -1;
            slots[i].ring = NULL;
            slots[i].samples = 0;
            __atomic_add_fetch(&slots[i].seq, 1, __ATOMIC_ACQ_REL);
            slots[i].last_n = 0;
            __atomic_add_fetch(&slots[i].seq, 1, __ATOMIC_ACQ_REL);
            return &slots[i];
        }
    }
    return NULL;
}

static void slot_release(slot_t *s)
{
    if (!s)
        return;
    s->perf_fd = -1;
    s->ring = NULL;
    __atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
}

/* ---- sources: perf task-clock, CPU-time timer ------------------------------------------------ */

static int perf_open_event(const coll_proc_t *p, int exclude_kernel)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = p->interval_ns;
    a.sample_type = PERF_SAMPLE_IP;
    a.wakeup_events = 1;
    a.disabled = 1;
    a.exclude_hv = 1;
    a.exclude_kernel = exclude_kernel ? 1 : 0;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Opens, maps and arms the calling thread's event. Returns 0 or -errno. */
static int perf_start(coll_proc_t *p, thr_t *t)
{
    coll_fd_room_enter();
    int fd = coll_high_fd(perf_open_event(p, p->split_by_rusage));
    int e = errno;
    coll_fd_room_leave();
    if (fd < 0)
        return -e;
    size_t len = (1 + RING_DATA_PAGES) * page_size;
    void *ring = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    struct f_owner_ex owner = { F_OWNER_TID, t->tid };
    if (ring == MAP_FAILED || fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0 ||
        fcntl(fd, F_SETSIG, p->sig) < 0 || fcntl(fd, F_SETOWN_EX, &owner) < 0) {
        int e = errno;
        if (ring != MAP_FAILED)
            munmap(ring, len);
        close(fd);
        return -e;
    }
    t->perf_fd = fd;
    t->ring = ring;
    t->ring_len = len;
    if (t->slot) {
        t->slot->perf_fd = fd;
        t->slot->ring = ring;
        t->slot->ring_len = len;
    }
    return 0;
}

/* The event may overflow PERF_HEADROOM times without a handler having run before it disables
 * itself; every handler run gives one back. So a thread whose signal is blocked has at most that
 * many signals queued, and an unblocked thread never pays for disabling and re-enabling the
 * event's timer (which costs about 1% at 1 kHz on a VM). */
#define PERF_HEADROOM 16

static void perf_arm(thr_t *t, int n)
{
    ioctl(t->perf_fd, PERF_EVENT_IOC_REFRESH, n);
}

static void perf_stop(thr_t *t)
{
    if (t->perf_fd < 0)
        return;
    ioctl(t->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
    if (t->ring)
        munmap(t->ring, t->ring_len);
    if (coll_fd_owned(t->perf_fd)) /* (not if the program took the number over) */
        coll_close(t->perf_fd);
    t->perf_fd = -1;
    t->ring = NULL;
}

/* Consumes the ring: returns the samples found; *kernel: the last one hit kernel mode. */
static int ring_read(thr_t *t, int *kernel, uint64_t *lost)
{
    struct perf_event_mmap_page *mp = t->ring;
    uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = mp->data_tail;
    const uint8_t *data = (const uint8_t *)mp + page_size;
    uint64_t size = RING_DATA_PAGES * page_size;
    int n = 0;
    while (tail + sizeof(struct perf_event_header) <= head) {
        struct perf_event_header h;
        uint8_t rec[24];
        for (size_t i = 0; i < sizeof rec; i++)
            rec[i] = data[(tail + i) % size];
        memcpy(&h, rec, sizeof h);
        if (h.size < sizeof h)
            break;
        if (h.type == PERF_RECORD_SAMPLE) {
            n++;
            *kernel = (h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
        } else if (h.type == PERF_RECORD_LOST) {
            uint64_t cnt;
            memcpy(&cnt, rec + 16, 8);
            *lost += cnt;
        }
        tail += h.size;
    }
    __atomic_store_n(&mp->data_tail, head, __ATOMIC_RELEASE);
    return n;
}

static int timer_start(coll_proc_t *p, thr_t *t)
{
    struct sigevent se;
    memset(&se, 0, sizeof se);
    se.sigev_notify = SIGEV_THREAD_ID;
    se.sigev_signo = p->sig;
    se.sigev_value.sival_int = TIMER_MAGIC;
    se._sigev_un._tid = t->tid;
    int id;
    if (syscall(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, &se, &id) < 0)
        return -errno;
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(p->interval_ns / 1000000000u);
    its.it_interval.tv_nsec = (long)(p->interval_ns % 1000000000u);
    its.it_value = its.it_interval;
    t->timer_id = id;
    t->has_timer = 1;
    if (syscall(SYS_timer_settime, id, 0, &its, NULL) < 0) {
        int e = errno;
        syscall(SYS_timer_delete, id);
        t->has_timer = 0;
        return -e;
    }
    return 0;
}

static void timer_stop(thr_t *t)
{
    if (t->has_timer)
        syscall(SYS_timer_delete, t->timer_id);
    t->has_timer = 0;
}

/* ---- the profiling handler ------------------------------------------------------------------- */

static void write_clock(coll_proc_t *p, thr_t *t, uint64_t now, uint32_t id, uint32_t state,
                        uint64_t w)
{
    if (exp_stream_clock(&t->stream, now, id, state, w) == 0) {
        atomic_add(&p->st.samples, 1);
        if (t->slot)
            t->slot->samples++;
    } else if (t->stream.file->disk_full) {
        atomic_add(&p->st.dropped_disk, 1);
    } else {
        atomic_add(&p->st.dropped_busy, 1);
    }
}

/* Copies a thread's latest stack into its slot for the sampler thread. AS-safe. */
static void publish_stack(slot_t *sl, const uint64_t *pcs, uint32_t n, uint32_t flags)
{
    if (n > CLOCK_LAST_MAX) {
        n = CLOCK_LAST_MAX;
        flags |= EXP_STACK_TRUNCATED;
    }
    __atomic_add_fetch(&sl->seq, 1, __ATOMIC_ACQ_REL);
    for (uint32_t i = 0; i < n; i++)
        __atomic_store_n(&sl->last_pcs[i], pcs[i], __ATOMIC_RELAXED);
    __atomic_store_n(&sl->last_n, n, __ATOMIC_RELAXED);
    __atomic_store_n(&sl->last_flags, flags, __ATOMIC_RELAXED);
    __atomic_add_fetch(&sl->seq, 1, __ATOMIC_ACQ_REL);
}

uint32_t clock_last_stack(pid_t tid, int *hint, uint64_t *pcs, uint32_t max, uint32_t *flags)
{
    slot_t *sl = NULL;
    if (*hint >= 0 && *hint < NSLOTS && __atomic_load_n(&slots[*hint].tid, __ATOMIC_ACQUIRE) == tid)
        sl = &slots[*hint];
    if (!sl && *hint < -1) { /* recently searched in vain: count down before searching again */
        (*hint)++;
        return 0;
    }
    if (!sl)
        *hint = -64;
    for (int i = 0; !sl && i < NSLOTS; i++)
        if (__atomic_load_n(&slots[i].tid, __ATOMIC_ACQUIRE) == tid) {
            sl = &slots[i];
            *hint = i;
        }
    if (!sl)
        return 0;
    for (int attempt = 0; attempt < 4; attempt++) {
        uint32_t s0 = __atomic_load_n(&sl->seq, __ATOMIC_ACQUIRE);
        if (s0 & 1)
            continue;
        uint32_t n = __atomic_load_n(&sl->last_n, __ATOMIC_RELAXED);
        if (n > max)
            n = max;
        for (uint32_t i = 0; i < n; i++)
            pcs[i] = __atomic_load_n(&sl->last_pcs[i], __ATOMIC_RELAXED);
        *flags = __atomic_load_n(&sl->last_flags, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the copies before the second look at seq */
        if (__atomic_load_n(&sl->seq, __ATOMIC_ACQUIRE) == s0)
            return n;
    }
    return 0;
}

/* Bytes left below the handler's frame on the stack it runs on: the thread's own stack (bounds
 * known from its start), or an alternate signal stack (the program's small one, when the signal
 * lands while one of its handlers runs there). On a stack of neither kind (a coroutine's), the
 * room is unknown and assumed. */
static size_t stack_room(const thr_t *t)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    if (t->stack_lo && sp > t->stack_lo && sp <= t->stack_hi)
        return sp - t->stack_lo;
    stack_t cur;
    if (syscall(SYS_sigaltstack, NULL, &cur) == 0 && (cur.ss_flags & SS_ONSTACK)) {
        uintptr_t lo = (uintptr_t)cur.ss_sp;
        return sp > lo ? sp - lo : 0;
    }
    return SIZE_MAX;
}

static void take_sample(coll_proc_t *p, thr_t *t, const ucontext_t *uc)
{
    uint64_t now = coll_now();
    int kernel = 0;
    uint64_t lost = 0;
    if (t->ring)
        ring_read(t, &kernel, &lost);
    atomic_add(&p->st.ring_lost, lost);
    uint64_t cpu = thread_cpu_ns();
    uint64_t w = cpu > t->last_cpu ? cpu - t->last_cpu : 0;
    t->last_cpu = cpu;
    if (t->slot)
        t->slot->last_cpu = cpu;
    uint64_t w_sys = kernel ? w : 0;
    if (p->split_by_rusage) {
        struct rusage ru;
        getrusage(RUSAGE_THREAD, &ru);
        uint64_t ut = tv_ns(ru.ru_utime), st = tv_ns(ru.ru_stime);
        uint64_t du = ut > t->last_ut ? ut - t->last_ut : 0;
        uint64_t ds = st > t->last_st ? st - t->last_st : 0;
        t->last_ut = ut;
        t->last_st = st;
        w_sys = du + ds ? (uint64_t)((double)w * (double)ds / (double)(du + ds)) : 0;
    }
    if (__atomic_load_n(&p->final, __ATOMIC_RELAXED) || !in_window(p, now) || w == 0 ||
        __atomic_load_n(&p->paused, __ATOMIC_RELAXED))
        return;
    atomic_add(&p->st.profiled_ns, w);

    uint32_t flags = 0, id = 0, n;
    if (stack_room(t) < UNWIND_ROOM) {
        t->pcs[0] = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
        n = 1;
        flags = EXP_STACK_NO_ROOM;
        atomic_add(&p->st.unwind_no_room, 1);
    } else {
        n = unwind_stack(uc, t->scratch, t->pcs, p->max_depth, &flags);
    }
    if (flags & EXP_STACK_UNWIND_FAIL)
        atomic_add(&p->st.unwind_failures, 1);
    if (flags & EXP_STACK_TRUNCATED)
        atomic_add(&p->st.truncated_stacks, 1);
    uint32_t before = t->stream.nstacks;
    if (exp_stream_stack(&t->stream, t->pcs, n, flags, &id)) {
        atomic_add(t->stream.file->disk_full ? &p->st.dropped_disk : &p->st.dropped_busy, 1);
        return;
    }
    atomic_add(&p->st.stacks, t->stream.nstacks - before);
    if (t->slot)
        publish_stack(t->slot, t->pcs, n, flags);
    unsigned cpu_num;
    if (getcpu(&cpu_num, NULL) == 0 && cpu_num != t->cpu_num &&
        exp_stream_cpu(&t->stream, now, cpu_num) == 0)
        t->cpu_num = cpu_num;
    if (w - w_sys)
        write_clock(p, t, now, id, EXP_STATE_USER, w - w_sys);
    if (w_sys)
        write_clock(p, t, now, id, EXP_STATE_SYSTEM, w_sys);
    t->last_stack = id;
    t->last_state = w_sys * 2 > w ? EXP_STATE_SYSTEM : EXP_STATE_USER;
    t->has_last = 1;
}

static int is_ours(const thr_t *t, const siginfo_t *si)
{
    if (t->state != TH_ON)
        return 0;
    if (t->perf_fd >= 0 && (si->si_code == POLL_IN || si->si_code == POLL_HUP) &&
        si->si_fd == t->perf_fd)
        return 1;
    return t->has_timer && si->si_code == SI_TIMER && si->si_value.sival_int == TIMER_MAGIC;
}

static int looks_ours(const siginfo_t *si)
{
    return si->si_code == POLL_IN || si->si_code == POLL_HUP ||
           (si->si_code == SI_TIMER && si->si_value.sival_int == TIMER_MAGIC);
}

/* Runs the program's own disposition of sig (recorded by the sigaction interposer). Returns 1 if
 * a handler was called or the signal is ignored, 0 if the disposition is the default. */
static int run_prog_handler(int sig, siginfo_t *si, void *uc)
{
    struct sigaction pa = prog_act[sig];
    if (pa.sa_handler == SIG_IGN)
        return 1;
    if (pa.sa_handler == SIG_DFL)
        return 0;
    if (pa.sa_flags & SA_RESETHAND)
        prog_act[sig].sa_handler = SIG_DFL;
    sigset_t m = pa.sa_mask;
    if (sig != coll_proc.sig)
        sigdelset(&m, coll_proc.sig);
    if (!(pa.sa_flags & SA_NODEFER))
        sigaddset(&m, sig);
    clock_real_sigmask(SIG_BLOCK, &m, NULL); /* sigreturn restores the interrupted mask */
    int was = clock_prog_blocked;
    if (sigismember(&pa.sa_mask, coll_proc.sig) == 1 || sig == coll_proc.sig)
        clock_prog_blocked = 1; /* the program's view inside its handler */
    if (pa.sa_flags & SA_SIGINFO)
        pa.sa_sigaction(sig, si, uc);
    else
        pa.sa_handler(sig);
    clock_prog_blocked = was;
    return 1;
}

/* Ends the process the way the default action of sig would, after logging it. */
static void die_by_default(int sig, siginfo_t *si)
{
    if (getpid() == coll_proc.pid)
        coll_finalize("signal", 0, sig);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    clock_real_sigaction(sig, &dfl, NULL);
    int fault = si->si_code > 0 && si->si_code != SI_KERNEL &&
                (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL);
    if (!fault) /* delivered when the handler returns and the mask is restored */
        syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), sig);
    /* a fault re-executes the faulting instruction and dies with its own siginfo */
}

static void prof_handler(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    thr_t *t = &th;
    in_core++;
    if (si->si_code == SI_QUEUE && si->si_value.sival_int == PRIME_MAGIC &&
        si->si_pid == getpid() && t->scratch) {
        /* clock_thread_start's priming: the dynamic linker resolves what unwinding through a
         * signal frame calls now, on the thread's own stack, not later on a small one */
        uint32_t flags;
        unwind_stack(ucv, t->scratch, t->pcs, coll_proc.max_depth, &flags);
    } else if (is_ours(t, si)) {
        take_sample(&coll_proc, t, ucv);
        if (t->perf_fd >= 0)
            perf_arm(t, 1);
    } else if (!run_prog_handler(sig, si, ucv) && !looks_ours(si)) {
        die_by_default(sig, si); /* the program's own use of the signal, default action */
    }
    in_core--;
    errno = saved;
}

/* ---- thread start/stop ----------------------------------------------------------------------- */

static void log_thread(coll_proc_t *p, uint64_t now, const char *how)
{
    char buf[512], name[17] = { 0 };
    prctl(PR_GET_NAME, name, 0, 0, 0);
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, "thread");
    exp_line_u64(&l, "t", now);
    exp_line_u64(&l, "tid", (uint64_t)th.tid);
    exp_line_str(&l, "name", name);
    exp_line_str(&l, "how", how);
    coll_log_write(&l);
}

static void altstack_setup(void)
{
    stack_t cur;
    if (sigaltstack(NULL, &cur) < 0 || !(cur.ss_flags & SS_DISABLE))
        return; /* the program has its own */
    void *m = map_anon(ALTSTACK_SIZE);
    if (!m)
        return;
    stack_t ss = { .ss_sp = m, .ss_flags = 0, .ss_size = ALTSTACK_SIZE };
    if (sigaltstack(&ss, NULL) == 0)
        th.altstack = m;
    else
        munmap(m, ALTSTACK_SIZE);
}

/* The thread's own stack, for stack_room. Normal context. */
static void stack_bounds(void)
{
    pthread_attr_t a;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return;
    if (pthread_attr_getstack(&a, &addr, &size) == 0) {
        th.stack_lo = (uintptr_t)addr;
        th.stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&a);
}

/* Once per process: one unwind inside a real delivery of the profiling signal, so that every
 * function the handler reaches only through a signal frame is bound before it can be needed on a
 * small stack (lazy binding takes kilobytes: the dynamic linker saves the vector registers). */
static void prime_in_signal(coll_proc_t *p)
{
    static int primed;
    if (__atomic_exchange_n(&primed, 1, __ATOMIC_ACQ_REL))
        return;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = p->sig;
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_int = PRIME_MAGIC;
    syscall(SYS_rt_tgsigqueueinfo, getpid(), th.tid, p->sig, &si);
}

void clock_thread_start(coll_proc_t *p, const char *how)
{
    if (th.state != TH_NONE || !p->enabled)
        return;
    int saved = errno;
    memset(&th, 0, sizeof th);
    th.tid = (pid_t)syscall(SYS_gettid);
    th.perf_fd = -1;
    th.cpu_num = UINT32_MAX;
    uint64_t now = coll_now();
    log_thread(p, now, how);
    altstack_setup();
    stack_bounds();
    if (p->interval_ns && p->ev_ok && p->source != COLL_SRC_NONE) {
        size_t nframes = p->max_depth + UNWIND_SKIP_MAX;
        th.bufs_len = (nframes * 2 * 8 + page_size - 1) & ~(page_size - 1);
        void *b = map_anon(th.bufs_len);
        if (b) {
            th.scratch = b;
            th.pcs = (uint64_t *)((char *)b + nframes * 8);
            exp_stream_init(&th.stream, &p->evfile, (uint32_t)th.tid);
            th.stream.last_t = now; /* so that a chunk opened by a STACK record gets a real t0 */
            th.slot = slot_claim(th.tid);
            if (th.slot)
                pthread_getcpuclockid(pthread_self(), &th.slot->cpuclock);
            sigset_t old;
            in_core++;
            clock_block(p, &old);
            unwind_prime();
            clock_unblock(&old);
            in_core--;
            prime_in_signal(p);
            struct rusage ru;
            getrusage(RUSAGE_THREAD, &ru);
            th.last_ut = tv_ns(ru.ru_utime);
            th.last_st = tv_ns(ru.ru_stime);
            th.last_cpu = thread_cpu_ns();
            if (th.slot)
                th.slot->last_cpu = th.last_cpu;
            __atomic_store_n(&th.state, TH_ON, __ATOMIC_SEQ_CST);
            int rc = -1;
            if (p->source == COLL_SRC_PERF && (rc = perf_start(p, &th)) == 0)
                perf_arm(&th, PERF_HEADROOM);
            else if (timer_start(p, &th) < 0 && rc < 0)
                coll_warn("a thread could not start its profiling timer");
        }
    }
    if (th.state != TH_ON)
        __atomic_store_n(&th.state, TH_ON, __ATOMIC_SEQ_CST); /* logged; ends with thread-end */
    errno = saved;
}

void clock_thread_stop(coll_proc_t *p)
{
    if (th.state != TH_ON)
        return;
    int saved = errno;
    __atomic_store_n(&th.state, TH_ENDED, __ATOMIC_SEQ_CST);
    perf_stop(&th);
    timer_stop(&th);
    uint64_t now = coll_now();
    uint64_t cpu = thread_cpu_ns();
    uint64_t tail = cpu > th.last_cpu ? cpu - th.last_cpu : 0;
    if (th.scratch && in_window(p, now) && tail) {
        /* The CPU time since the last sample is charged to the last sampled stack, so that the
         * thread's recorded total is its CPU time, not up to one interval less. */
        atomic_add(&p->st.profiled_ns, tail);
        if (th.has_last)
            write_clock(p, &th, now, th.last_stack, th.last_state, tail);
    }
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    char buf[512];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, "thread-end");
    exp_line_u64(&l, "t", now);
    exp_line_u64(&l, "tid", (uint64_t)th.tid);
    exp_line_u64(&l, "cpu", cpu);
    exp_line_u64(&l, "user", tv_ns(ru.ru_utime));
    exp_line_u64(&l, "system", tv_ns(ru.ru_stime));
    exp_line_u64(&l, "samples", th.slot ? th.slot->samples : 0);
    coll_log_write(&l);
    if (th.scratch) {
        exp_stream_finish(&th.stream, now);
        munmap(th.scratch, th.bufs_len);
        th.scratch = NULL;
        th.pcs = NULL;
    }
    slot_release(th.slot);
    th.slot = NULL;
    errno = saved;
}

/* TLS destructor path (pthread key): the thread is going away; also frees its alternate stack. */
void clock_thread_exit(coll_proc_t *p)
{
    if (getpid() != p->pid)
        return;
    clock_thread_stop(p);
    if (th.altstack) {
        stack_t ss = { .ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0 };
        stack_t cur;
        if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == th.altstack && sigaltstack(&ss, NULL) == 0)
            munmap(th.altstack, ALTSTACK_SIZE);
        th.altstack = NULL;
    }
}

/* ---- other threads at the end of the image --------------------------------------------------- */

/* utime and stime (clock ticks) of a thread from /proc/self/task/<tid>/stat; 0 on failure. */
static int task_ticks(pid_t tid, uint64_t *ut, uint64_t *st)
{
    char path[64] = "/proc/self/task/";
    size_t n = strlen(path);
    n += coll_fmt_u64(path + n, (uint64_t)tid);
    memcpy(path + n, "/stat", 6);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char b[1024];
    ssize_t r = read(fd, b, sizeof b - 1);
    close(fd);
    if (r <= 0)
        return -1;
    b[r] = 0;
    char *q = strrchr(b, ')'); /* the name may contain spaces */
    if (!q)
        return -1;
    /* after ") " come fields 3.. ; utime is field 14, stime 15 */
    int field = 2;
    uint64_t v[2] = { 0, 0 };
    for (q++; *q; q++) {
        if (*q == ' ') {
            field++;
            continue;
        }
        if (field == 14 || field == 15)
            v[field - 14] = v[field - 14] * 10 + (uint64_t)(*q - '0');
    }
    *ut = v[0];
    *st = v[1];
    return 0;
}

void clock_end_other_threads(coll_proc_t *p)
{
    pid_t self = (pid_t)syscall(SYS_gettid);
    uint64_t now = coll_now();
    for (int i = 0; i < NSLOTS; i++) {
        slot_t *s = &slots[i];
        pid_t tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
        if (!tid || tid == self)
            continue;
        struct timespec ts;
        if (clock_gettime(s->cpuclock, &ts) < 0)
            continue; /* it ended meanwhile */
        uint64_t cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        if (in_window(p, now) && cpu > s->last_cpu)
            atomic_add(&p->st.profiled_ns, cpu - s->last_cpu);
        uint64_t ut = 0, st = 0;
        task_ticks(tid, &ut, &st);
        char buf[512];
        exp_line_t l;
        exp_line_begin(&l, buf, sizeof buf, "thread-end");
        exp_line_u64(&l, "t", now);
        exp_line_u64(&l, "tid", (uint64_t)tid);
        exp_line_u64(&l, "cpu", cpu);
        if (ut + st) { /* tick counts, scaled to the precise CPU time */
            uint64_t user = (uint64_t)((double)cpu * (double)ut / (double)(ut + st));
            exp_line_u64(&l, "user", user);
            exp_line_u64(&l, "system", cpu - user);
        } else {
            exp_line_u64(&l, "user", cpu);
            exp_line_u64(&l, "system", 0);
        }
        exp_line_u64(&l, "samples", s->samples);
        exp_line_str(&l, "alive", "1");
        coll_log_write(&l);
    }
}

/* ---- fork ------------------------------------------------------------------------------------ */

void clock_after_fork_child(coll_proc_t *p)
{
    /* Every inherited event descriptor belongs to a thread of the parent: close without
     * disabling (the parent keeps its events), unmap the shared rings. */
    for (int i = 0; i < NSLOTS; i++) {
        slot_t *s = &slots[i];
        if (!s->tid)
            continue;
        if (s->ring)
            munmap(s->ring, s->ring_len);
        if (s->perf_fd >= 0)
            if (coll_fd_owned(s->perf_fd))
                coll_close(s->perf_fd);
        memset(s, 0, sizeof *s);
    }
    if (th.state == TH_ON || th.state == TH_ENDED) {
        if (th.scratch) {
            exp_stream_forget(&th.stream);
            munmap(th.scratch, th.bufs_len);
        }
        /* timers are not inherited; the ring and descriptor were closed above */
        void *alt = th.altstack;
        memset(&th, 0, sizeof th);
        th.altstack = alt;
        th.perf_fd = -1;
    }
    (void)p;
}

/* ---- blocking -------------------------------------------------------------------------------- */

void clock_block(coll_proc_t *p, sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, p->sig);
    clock_real_sigmask(SIG_BLOCK, &s, old);
}

void clock_unblock(const sigset_t *old)
{
    clock_real_sigmask(SIG_SETMASK, old, NULL);
}

/* ---- signals owned for the program ----------------------------------------------------------- */

int clock_in_core(void)
{
    return in_core;
}

int clock_owns_signal(const coll_proc_t *p, int sig)
{
    return sig > 0 && sig < _NSIG && owned[sig];
}

void clock_prog_action(int sig, const struct sigaction *act, struct sigaction *old)
{
    struct sigaction prev = prog_act[sig];
    if (act)
        prog_act[sig] = *act;
    if (old)
        *old = prev;
}

int clock_proc_init(coll_proc_t *p)
{
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    p->source = COLL_SRC_NONE;
    if (!p->interval_ns)
        return 0;
    if (!p->force_timer) {
        int fd = perf_open_event(p, 0);
        if (fd < 0 && (errno == EACCES || errno == EPERM)) {
            fd = perf_open_event(p, 1);
            if (fd >= 0)
                p->split_by_rusage = 1;
        }
        if (fd >= 0) {
            close(fd);
            p->source = COLL_SRC_PERF;
        }
    }
    if (p->source == COLL_SRC_NONE) {
        p->source = COLL_SRC_TIMER;
        p->split_by_rusage = 1;
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = prof_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (clock_real_sigaction(p->sig, NULL, &old) < 0 || clock_real_sigaction(p->sig, &sa, NULL) < 0) {
        p->source = COLL_SRC_NONE;
        return -1;
    }
    prog_act[p->sig] = old;
    owned[p->sig] = 1;
    return 0;
}

/* ---- fatal signals --------------------------------------------------------------------------- */

static void fatal_handler(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    if (!run_prog_handler(sig, si, uc))
        die_by_default(sig, si);
    else if (prog_act[sig].sa_handler == SIG_IGN && si->si_code > 0 && si->si_code != SI_KERNEL)
        die_by_default(sig, si); /* an ignored fault still kills */
    errno = saved;
}

void clock_install_fatal(coll_proc_t *p)
{
    for (size_t i = 0; i < sizeof fatal_sigs / sizeof *fatal_sigs; i++) {
        int sig = fatal_sigs[i];
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = fatal_handler;
        sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        if (p->sig > 0)
            sigaddset(&sa.sa_mask, p->sig);
        if (clock_real_sigaction(sig, NULL, &old) < 0)
            continue;
        prog_act[sig] = old;
        if (clock_real_sigaction(sig, &sa, NULL) == 0)
            owned[sig] = 1;
    }
}
