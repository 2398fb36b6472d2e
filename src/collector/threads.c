/*
 * threads.c - the profiled threads: lifecycle, per-thread context, registry; see threads.h.
 *
 * threads_stop, threads_end_others, threads_publish_stack, threads_last_stack,
 * threads_set_rstate, threads_rstate_of and threads_stack_room are async-signal-safe: system calls and the AS-safe evwriter/logfile
 * functions only.
 */
#define _GNU_SOURCE
#include "threads.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perfev.h"
#include "signals.h"
#include "source.h"
#include "trace.h"
#include "unwind.h"
#include "experiment/logrec.h"

#define NSLOTS 8192
#define ALTSTACK_SIZE (64 * 1024)

__thread coll_thread_t coll_thr __attribute__((tls_model("initial-exec")));
static coll_slot_t slots[NSLOTS];
/* Slots below this index were claimed at some time (atomic, only grows): the walks over the
 * registry stop there. The registry is 9 MB of zero pages until used; walking all of it at every
 * process's end read-faulted 2,200 pages (most of the page faults of a short run of /bin/true
 * under the collector, and a millisecond or two of its CPU). */
static int slots_used;

static int slots_end(void)
{
    return __atomic_load_n(&slots_used, __ATOMIC_ACQUIRE);
}

/* ---- small helpers --------------------------------------------------------------------------- */

uint64_t threads_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t tv_ns(struct timeval tv)
{
    return (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_usec * 1000u;
}

static void *map_anon(size_t len)
{
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

/* ---- the registry ---------------------------------------------------------------------------- */

static coll_slot_t *slot_claim(pid_t tid)
{
    for (int i = 0; i < NSLOTS; i++) {
        int zero = 0;
        if (slots[i].tid == 0 &&
            __atomic_compare_exchange_n(&slots[i].tid, &zero, (int)tid, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            int used = slots_end();
            while (used < i + 1 && !__atomic_compare_exchange_n(&slots_used, &used, i + 1, 0,
                                                                __ATOMIC_ACQ_REL,
                                                                __ATOMIC_ACQUIRE)) {
            }
            slots[i].samples = 0;
            __atomic_add_fetch(&slots[i].seq, 1, __ATOMIC_ACQ_REL);
            slots[i].last_n = 0;
            __atomic_add_fetch(&slots[i].seq, 1, __ATOMIC_ACQ_REL);
            threads_blk_write(&slots[i], 0, 0, 0); /* a stale one of a thread that never left */
            __atomic_add_fetch(&slots[i].rs_seq, 1, __ATOMIC_ACQ_REL);
            slots[i].rs_since = coll_now(); /* in its creator's state since it started */
            memset(slots[i].rs_ns, 0, sizeof slots[i].rs_ns);
            __atomic_add_fetch(&slots[i].rs_seq, 1, __ATOMIC_ACQ_REL);
            return &slots[i];
        }
    }
    return NULL;
}

static void slot_release(coll_slot_t *s)
{
    if (s)
        __atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
}

void threads_publish_stack(coll_slot_t *sl, const uint64_t *pcs, uint32_t n, uint32_t flags)
{
    if (n > THREADS_LAST_MAX) {
        n = THREADS_LAST_MAX;
        flags |= EXP_STACK_TRUNCATED;
    }
    __atomic_add_fetch(&sl->seq, 1, __ATOMIC_ACQ_REL);
    for (uint32_t i = 0; i < n; i++)
        __atomic_store_n(&sl->last_pcs[i], pcs[i], __ATOMIC_RELAXED);
    __atomic_store_n(&sl->last_n, n, __ATOMIC_RELAXED);
    __atomic_store_n(&sl->last_flags, flags, __ATOMIC_RELAXED);
    __atomic_add_fetch(&sl->seq, 1, __ATOMIC_ACQ_REL);
}

/* The registry slot of tid through *hint (threads_last_stack), NULL if none: a search in vain
 * counts down before the next search. */
static coll_slot_t *slot_find(pid_t tid, int *hint)
{
    coll_slot_t *sl = NULL;
    if (*hint >= 0 && *hint < NSLOTS && __atomic_load_n(&slots[*hint].tid, __ATOMIC_ACQUIRE) == tid)
        sl = &slots[*hint];
    if (!sl && *hint < -1) { /* recently searched in vain: count down before searching again */
        (*hint)++;
        return NULL;
    }
    if (!sl)
        *hint = -64;
    for (int i = 0, end = slots_end(); !sl && i < end; i++)
        if (__atomic_load_n(&slots[i].tid, __ATOMIC_ACQUIRE) == tid) {
            sl = &slots[i];
            *hint = i;
        }
    return sl;
}

uint32_t threads_set_rstate(uint32_t rstate)
{
    coll_thread_t *t = &coll_thr;
    uint32_t old = t->rstate;
    __atomic_store_n(&t->rstate, rstate, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the slot may be taken by a signal handler */
    coll_slot_t *sl = t->slot;
    if (sl && rstate != old) {
        /* the time in the state it leaves (a handler that interrupts this and changes the state
         * again leaves the sequence odd until this one ends: the sampler skips the times then) */
        uint64_t now = coll_now();
        __atomic_add_fetch(&sl->rs_seq, 1, __ATOMIC_ACQ_REL);
        uint64_t since = __atomic_load_n(&sl->rs_since, __ATOMIC_RELAXED);
        uint32_t i = old < THREADS_RSTATES ? old : THREADS_RSTATES - 1;
        if (now > since)
            __atomic_store_n(&sl->rs_ns[i], sl->rs_ns[i] + (now - since), __ATOMIC_RELAXED);
        __atomic_store_n(&sl->rs_since, now, __ATOMIC_RELAXED);
        __atomic_store_n(&sl->rstate, rstate, __ATOMIC_RELAXED);
        __atomic_add_fetch(&sl->rs_seq, 1, __ATOMIC_ACQ_REL);
    } else if (sl) {
        __atomic_store_n(&sl->rstate, rstate, __ATOMIC_RELAXED);
    }
    return old;
}

uint32_t threads_rstate_of(pid_t tid, int *hint)
{
    coll_slot_t *sl = slot_find(tid, hint); /* (a thread seen only asleep calls no
                                                threads_last_stack: this counts down too) */
    return sl ? __atomic_load_n(&sl->rstate, __ATOMIC_RELAXED) : EXP_RSTATE_NONE;
}

uint32_t threads_rstate_times(pid_t tid, int *hint, uint64_t now, uint64_t *ns, uint64_t *since)
{
    coll_slot_t *sl = slot_find(tid, hint);
    *since = 0;
    if (!sl)
        return EXP_RSTATE_NONE;
    for (int attempt = 0; attempt < 4; attempt++) {
        uint32_t s0 = __atomic_load_n(&sl->rs_seq, __ATOMIC_ACQUIRE);
        if (s0 & 1)
            continue;
        uint32_t cur = __atomic_load_n(&sl->rstate, __ATOMIC_RELAXED);
        uint64_t t = __atomic_load_n(&sl->rs_since, __ATOMIC_RELAXED);
        for (int i = 0; i < THREADS_RSTATES; i++)
            ns[i] = __atomic_load_n(&sl->rs_ns[i], __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the copies before the second look at seq */
        if (__atomic_load_n(&sl->rs_seq, __ATOMIC_ACQUIRE) != s0)
            continue;
        if (now > t)
            ns[cur < THREADS_RSTATES ? cur : THREADS_RSTATES - 1] += now - t;
        *since = t;
        return cur;
    }
    return __atomic_load_n(&sl->rstate, __ATOMIC_RELAXED);
}

int threads_blocked_caller(pid_t tid, int *hint, fu_regs_t *r, uint32_t *seq)
{
    coll_slot_t *sl = slot_find(tid, hint);
    if (!sl)
        return 0;
    uint32_t s0 = __atomic_load_n(&sl->blk_seq, __ATOMIC_ACQUIRE);
    if (s0 & 1)
        return 0;
    r->ip = __atomic_load_n(&sl->blk_ip, __ATOMIC_RELAXED);
    r->bp = __atomic_load_n(&sl->blk_bp, __ATOMIC_RELAXED);
    r->sp = __atomic_load_n(&sl->blk_sp, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&sl->blk_seq, __ATOMIC_ACQUIRE) != s0)
        return 0;
    *seq = s0;
    return r->sp != 0;
}

uint32_t threads_last_stack(pid_t tid, int *hint, uint64_t *pcs, uint32_t max, uint32_t *flags)
{
    coll_slot_t *sl = slot_find(tid, hint);
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

int threads_has_slot(pid_t tid, int *hint)
{
    if (*hint < -1)
        *hint = -1; /* search now, whatever an earlier search said */
    if (slot_find(tid, hint))
        return 1;
    *hint = -1;
    return 0;
}

uint32_t threads_stack_seq(pid_t tid, int *hint)
{
    coll_slot_t *sl = slot_find(tid, hint);
    return sl ? __atomic_load_n(&sl->seq, __ATOMIC_ACQUIRE) | 1 : 0;
}

/* Bytes left below the handler's frame on the stack it runs on: the thread's own stack (bounds
 * known from its start), or an alternate signal stack (the program's small one, when the signal
 * lands while one of its handlers runs there). On a stack of neither kind (a coroutine's), the
 * room is unknown and assumed. */
size_t threads_stack_room(const coll_thread_t *t)
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

/* ---- start ----------------------------------------------------------------------------------- */

static void log_thread(uint64_t now, const char *how)
{
    char buf[512], name[17] = { 0 };
    prctl(PR_GET_NAME, name, 0, 0, 0);
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_THREAD);
    exp_line_u64(&l, EXP_KEY_T, now);
    exp_line_u64(&l, EXP_KEY_TID, (uint64_t)coll_thr.tid);
    exp_line_str(&l, EXP_KEY_NAME, name);
    exp_line_str(&l, EXP_KEY_HOW, how);
    if (coll_thr.stack_hi) { /* the data views place addresses in threads' stacks */
        exp_line_hex(&l, EXP_KEY_STACK_LO, coll_thr.stack_lo);
        exp_line_hex(&l, EXP_KEY_STACK_HI, coll_thr.stack_hi);
    }
    coll_log_write(&l);
}

/* ---- a thread's memory: kits from a pool ---------------------------------------------------- */

/* A thread's alternate signal stack and unwinding buffers are one "kit": ALTSTACK_SIZE bytes, then
 * the buffers. Kits are mapped KITS_PER_MAP at a time and go back to a pool when their thread
 * exits, so that starting and ending a thread maps and unmaps nothing: with 1,000 threads an mmap
 * and a munmap (a TLB shootdown on every CPU the process runs on) of each of the two was a
 * large part of what the collector cost a thread. Pages never touched cost nothing. The pool
 * is taken in normal context only (threads_start, threads_exit): never in a handler. */
#define KITS_PER_MAP 16
#define POOL_MAX NSLOTS

static void *pool[POOL_MAX];
static int pool_n, pool_lock;
static size_t pool_len; /* the size of a kit (settings: the same for the whole process) */

static void pool_enter(void)
{
    while (__atomic_exchange_n(&pool_lock, 1, __ATOMIC_ACQUIRE))
        sched_yield();
}

static void pool_leave(void)
{
    __atomic_store_n(&pool_lock, 0, __ATOMIC_RELEASE);
}

/* Kits whose thread replaced the collector's alternate stack with its own: the program may
 * still restore the collector's (from sigaltstack's old value) while the thread lives, so such a
 * kit goes back to the pool only once its thread has ended. Before, each was kept for ever: a
 * program that gives every thread its own alternate stack left one kit per thread it ever
 * started (84 KiB of address space each: 250 MB after 3,000 short threads). */
#define HELD_MAX 1024
static struct held {
    void *kit;
    pid_t tid;
} held[HELD_MAX];
static int held_n;

/* Moves the held kits whose thread has ended into the pool. Under pool_lock. */
static void held_reclaim(void)
{
    int saved = errno;
    pid_t pid = getpid();
    for (int i = 0; i < held_n;) {
        if (syscall(SYS_tgkill, pid, held[i].tid, 0) < 0 && errno == ESRCH && pool_n < POOL_MAX) {
            pool[pool_n++] = held[i].kit;
            held[i] = held[--held_n];
        } else {
            i++;
        }
    }
    errno = saved;
}

static void *kit_get(size_t len)
{
    void *k = NULL;
    pool_enter();
    if (pool_len != len) { /* (the first kit: the size cannot change after) */
        pool_len = len;
        pool_n = 0;
    }
    if (pool_n == 0 && held_n > 0)
        held_reclaim();
    if (pool_n > 0)
        k = pool[--pool_n];
    pool_leave();
    if (k)
        return k;
    char *m = map_anon(len * KITS_PER_MAP);
    if (!m)
        return map_anon(len);
    pool_enter();
    for (int i = KITS_PER_MAP - 1; i > 0; i--) {
        if (pool_n < POOL_MAX && pool_len == len)
            pool[pool_n++] = m + (size_t)i * len;
        else
            munmap(m + (size_t)i * len, len);
    }
    pool_leave();
    return m;
}

static void kit_put(void *k, size_t len)
{
    pool_enter();
    int kept = pool_n < POOL_MAX && pool_len == len;
    if (kept)
        pool[pool_n++] = k;
    pool_leave();
    if (!kept)
        munmap(k, len);
}

/* The kit's alternate stack becomes the thread's, unless the program has one of its own. */
static void altstack_setup(void *kit)
{
    stack_t cur;
    if (sigaltstack(NULL, &cur) < 0)
        return;
    if (!(cur.ss_flags & SS_DISABLE)) {
        if (cur.ss_sp == kit) /* a fork child's thread: its kit's, set before the fork */
            coll_thr.altstack = kit;
        return; /* else the program's own */
    }
    stack_t ss = { .ss_sp = kit, .ss_flags = 0, .ss_size = ALTSTACK_SIZE };
    if (sigaltstack(&ss, NULL) == 0)
        coll_thr.altstack = kit;
}

/* The thread's own stack, for threads_stack_room. Normal context. */
static void stack_bounds(void)
{
    pthread_attr_t a;
    void *addr;
    size_t size;
    trace_thr.guard++; /* pthread_getattr_np allocates: the collector's, not the program's */
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        if (pthread_attr_getstack(&a, &addr, &size) == 0) {
            coll_thr.stack_lo = (uintptr_t)addr;
            coll_thr.stack_hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&a);
    }
    trace_thr.guard--;
}

static uint64_t generation; /* atomic: threads started and stopped */

uint64_t threads_generation(void)
{
    return __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
}

void threads_start(coll_proc_t *p, const char *how)
{
    coll_thread_t *t = &coll_thr;
    if (t->state != TH_NONE || !p->enabled)
        return;
    int saved = errno;
    __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
    void *kit = t->kit; /* a fork child's thread keeps its kit */
    memset(t, 0, sizeof *t);
    t->tid = (pid_t)syscall(SYS_gettid);
    t->cpu_num = UINT32_MAX;
    uint64_t now = coll_now();
    stack_bounds();
    log_thread(now, how);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t nframes = p->max_depth + UNWIND_SKIP_MAX;
    size_t bufs_len = (nframes * 2 * 8 + page - 1) & ~(page - 1);
    t->kit = kit ? kit : kit_get(ALTSTACK_SIZE + bufs_len);
    if (t->kit)
        altstack_setup(t->kit);
    if (p->ev_ok && sources_active() && t->kit) {
        t->bufs_len = bufs_len;
        t->scratch = (void **)((char *)t->kit + ALTSTACK_SIZE);
        t->pcs = (uint64_t *)((char *)t->scratch + nframes * 8);
        exp_stream_init(&t->stream, &p->evfile, (uint32_t)t->tid);
        t->stream.last_t = now; /* so that a chunk opened by a STACK record gets a real t0 */
        t->slot = slot_claim(t->tid);
        if (t->slot) {
            pthread_getcpuclockid(pthread_self(), &t->slot->cpuclock);
            __atomic_store_n(&t->slot->rstate, t->rstate, __ATOMIC_RELAXED);
        }
        if (unwind_prime_needed()) { /* (unwind.h: most threads are not primed) */
            sigset_t old;
            signals_core_enter();
            signals_block(p, &old);
            unwind_prime();
            signals_unblock(&old);
            signals_core_leave();
        }
        signals_prime(p);
        __atomic_store_n(&t->state, TH_ON, __ATOMIC_SEQ_CST);
        if (sources_thread_start(p, t) < 0)
            coll_warn("a thread could not start its profiling timer");
    }
    if (t->state != TH_ON)
        __atomic_store_n(&t->state, TH_ON, __ATOMIC_SEQ_CST); /* logged; ends with thread-end */
    errno = saved;
}

/* ---- stop ------------------------------------------------------------------------------------ */

void threads_stop(coll_proc_t *p)
{
    coll_thread_t *t = &coll_thr;
    if (t->state != TH_ON)
        return;
    int saved = errno;
    __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&t->state, TH_ENDED, __ATOMIC_SEQ_CST);
    uint64_t now = coll_now();
    uint64_t cpu = threads_cpu_ns();
    if (t->scratch)
        sources_thread_stop(p, t, now, cpu);
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    char buf[512];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_THREAD_END);
    exp_line_u64(&l, EXP_KEY_T, now);
    exp_line_u64(&l, EXP_KEY_TID, (uint64_t)t->tid);
    exp_line_u64(&l, EXP_KEY_CPU, cpu);
    exp_line_u64(&l, EXP_KEY_USER, tv_ns(ru.ru_utime));
    exp_line_u64(&l, EXP_KEY_SYSTEM, tv_ns(ru.ru_stime));
    exp_line_u64(&l, EXP_KEY_SAMPLES, t->slot ? t->slot->samples : 0);
    coll_log_write(&l);
    if (t->scratch) {
        exp_stream_finish(&t->stream, now);
        t->scratch = NULL; /* (the buffers stay in the thread's kit until it exits) */
        t->pcs = NULL;
    }
    coll_slot_t *sl = t->slot;
    t->slot = NULL;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (sl)
        __atomic_store_n(&sl->rstate, EXP_RSTATE_NONE, __ATOMIC_RELAXED);
    slot_release(sl);
    errno = saved;
}

void threads_exit(coll_proc_t *p)
{
    coll_thread_t *t = &coll_thr;
    if (getpid() != p->pid)
        return;
    threads_stop(p);
    int free_kit = 1;
    if (t->altstack) {
        /* the kit goes back only once its alternate stack is no longer the thread's (one the
         * program replaced may be restored by the program: kept) */
        stack_t ss = { .ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0 };
        stack_t cur;
        free_kit = sigaltstack(NULL, &cur) == 0 && cur.ss_sp == t->altstack &&
                   sigaltstack(&ss, NULL) == 0;
        t->altstack = NULL;
    }
    void *kit = t->kit;
    t->kit = NULL;
    if (kit && free_kit) {
        kit_put(kit, pool_len);
    } else if (kit) { /* held until the thread has ended (held_reclaim) */
        pool_enter();
        if (held_n == HELD_MAX)
            held_reclaim();
        if (held_n < HELD_MAX)
            held[held_n++] = (struct held){ kit, t->tid };
        pool_leave(); /* (else kept for ever, as before) */
    }
}

/* ---- other threads at the end of the image --------------------------------------------------- */

/* utime and stime (clock ticks) of a thread from /proc/self/task/<tid>/stat; 0 on failure. */
static int task_ticks(pid_t tid, uint64_t *ut, uint64_t *st)
{
    char path[64] = "/proc/self/task/";
    size_t n = strlen(path);
    n += exp_fmt_u64(path + n, (uint64_t)tid);
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

void threads_end_others(coll_proc_t *p)
{
    pid_t self = (pid_t)syscall(SYS_gettid);
    uint64_t now = coll_now();
    for (int i = 0, end = slots_end(); i < end; i++) {
        coll_slot_t *s = &slots[i];
        pid_t tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
        if (!tid || tid == self)
            continue;
        struct timespec ts;
        if (clock_gettime(s->cpuclock, &ts) < 0)
            continue; /* it ended meanwhile */
        uint64_t cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        if (source_in_window(p, now) && cpu > s->last_cpu &&
            !__atomic_load_n(&p->paused, __ATOMIC_RELAXED))
            source_count(&p->st.profiled_ns, cpu - s->last_cpu);
        uint64_t ut = 0, st = 0;
        task_ticks(tid, &ut, &st);
        char buf[512];
        exp_line_t l;
        exp_line_begin(&l, buf, sizeof buf, EXP_LOG_THREAD_END);
        exp_line_u64(&l, EXP_KEY_T, now);
        exp_line_u64(&l, EXP_KEY_TID, (uint64_t)tid);
        exp_line_u64(&l, EXP_KEY_CPU, cpu);
        if (ut + st) { /* tick counts, scaled to the precise CPU time */
            uint64_t user = (uint64_t)((double)cpu * (double)ut / (double)(ut + st));
            exp_line_u64(&l, EXP_KEY_USER, user);
            exp_line_u64(&l, EXP_KEY_SYSTEM, cpu - user);
        } else {
            exp_line_u64(&l, EXP_KEY_USER, cpu);
            exp_line_u64(&l, EXP_KEY_SYSTEM, 0);
        }
        exp_line_u64(&l, EXP_KEY_SAMPLES, s->samples);
        exp_line_str(&l, EXP_KEY_ALIVE, "1");
        coll_log_write(&l);
    }
}

/* ---- fork ------------------------------------------------------------------------------------ */

void threads_after_fork_child(coll_proc_t *p)
{
    /* Every inherited event belongs to a thread of the parent: closed without disabling (the
     * parent keeps its events), the shared rings unmapped. */
    perfev_after_fork_child();
    for (int i = 0, end = slots_end(); i < end; i++)
        if (slots[i].tid)
            memset(&slots[i], 0, sizeof slots[i]);
    coll_thread_t *t = &coll_thr;
    if (pool_lock) { /* another thread held the pool at the fork: its kits are forgotten */
        pool_lock = 0;
        pool_n = 0;
        held_n = 0;
    } /* (else the held kits are the parent's threads', none of them this process's: the first
         held_reclaim takes them) */
    if (t->state == TH_ON || t->state == TH_ENDED) {
        if (t->scratch)
            exp_stream_forget(&t->stream);
        void *alt = t->altstack, *kit = t->kit;
        memset(t, 0, sizeof *t);
        t->altstack = alt;
        t->kit = kit; /* (its alternate stack is still the thread's) */
    }
    sources_fork_child(p);
}
