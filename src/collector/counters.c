/*
 * counters.c - counter overflow profiling, the second sampling source; see counters.h.
 *
 * Sections: the counters (decoding the setting); settings and probing; the log; per thread;
 * the hot path; the end.
 */
#define _GNU_SOURCE
#include "counters.h"

#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ctrmref.h"
#include "maps.h"
#include "mref.h"
#include "perfev.h"
#include "signals.h"
#include "experiment/logrec.h"

#define MAXC 16             /* counters of one run (the driver's HWC_MAX) */
#define RING_DATA_PAGES 2   /* power of two */
#define PERF_HEADROOM 16    /* as clock.c: overflows allowed before a handler ran */

/* One counter of the run: what the driver sent, what proc_init found, and its statistics
 * (atomics: every thread adds to them). */
typedef struct ctr {
    uint32_t type, bp_type;
    uint64_t config, config1, config2, bp_addr, bp_len, interval, hz;
    uint64_t prog_dev, prog_ino; /* a breakpoint on a symbol: the program file it is of */
    unsigned flags; /* EXP_CSET_* */
    char metric[64], name[128];
    int ok;           /* opened by the probe: collected */
    int excl_kernel;  /* the kernel refused kernel-mode counting */
    unsigned precise; /* the precise_ip its events have (the driver's, or lower where the kernel
                         refused it) */
    uint64_t samples, events, counted, enabled, running, throttled, lost, dropped;
    uint64_t own; /* the collector's: page faults of the kernel writing the handler's signal
                     frame, and events of the profiling handler's own work */
} ctr_t;

static ctr_t ctr[MAXC];
static int nctr, nok;
static size_t page_size = 4096;

/* The source's state of a thread: one event per counter. */
typedef struct ctr_thr {
    perfev_t ev[MAXC];
    /* the ring offsets [own_lo, own_hi) of the records written while a profiling handler of
     * the collector ran in this thread (counters_handler_edge) */
    uint64_t own_lo[MAXC], own_hi[MAXC];
} ctr_thr_t;

static __thread ctr_thr_t kt __attribute__((tls_model("initial-exec")));

/* Not-program-related counters: counted on every CPU by the root image, reported once at its
 * end under the artificial function below. */
#define MAXCPU 512
static perfev_t npr[MAXC][MAXCPU];
static int npr_cpus;

/* The artificial function whose address is the one frame of a not-program-related counter's
 * record: the analyzer names it from the collector's symbol table. */
__attribute__((noinline, used)) void collector_not_program_related(void)
{
    __asm__ volatile("");
}

/* ---- the counters ---------------------------------------------------------------------------- */

/* A decimal number up to ':' (or the end); advances *s past the ':'. 0, or -1. */
static int dec(const char **s, uint64_t *v)
{
    const char *p = *s;
    uint64_t x = 0;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (x > (UINT64_MAX - 9) / 10)
            return -1;
        x = x * 10 + (uint64_t)(*p - '0');
    }
    if (*p != ':')
        return -1;
    *s = p + 1;
    *v = x;
    return 0;
}

/* Copies up to stop (':' or ';' or the end) into out[cap]; advances *s past stop. */
static int field(const char **s, char stop, char *out, size_t cap)
{
    const char *p = *s;
    size_t n = 0;
    while (*p && *p != stop) {
        if (n + 1 >= cap)
            return -1;
        out[n++] = *p++;
    }
    out[n] = 0;
    if (*p == stop)
        p++;
    *s = p;
    return n ? 0 : -1;
}

static void say(char *why, size_t cap, const char *what)
{
    size_t n = strlen(what);
    if (n >= cap)
        n = cap - 1;
    memcpy(why, what, n);
    why[n] = 0;
}

int counters_decode(const char *v, char *why, size_t cap)
{
    nctr = 0;
    const char *s = v;
    while (*s) {
        if (nctr == MAXC) {
            say(why, cap, "counters: more than 16");
            return -1;
        }
        ctr_t *c = &ctr[nctr];
        memset(c, 0, sizeof *c);
        uint64_t x[12];
        for (int i = 0; i < 12; i++)
            if (dec(&s, &x[i])) {
                say(why, cap, "counters: a bad number");
                return -1;
            }
        c->type = (uint32_t)x[0];
        c->config = x[1];
        c->config1 = x[2];
        c->config2 = x[3];
        c->bp_type = (uint32_t)x[4];
        c->bp_addr = x[5];
        c->bp_len = x[6];
        c->interval = x[7];
        c->flags = (unsigned)x[8];
        c->hz = x[9];
        c->prog_dev = x[10];
        c->prog_ino = x[11];
        c->precise = (c->flags & EXP_CSET_PRECISE) >> EXP_CSET_PRECISE_SHIFT;
        if (!c->interval) {
            say(why, cap, "counters: an interval of 0");
            return -1;
        }
        if (field(&s, ':', c->metric, sizeof c->metric) || !exp_decl_name_ok(c->metric) ||
            field(&s, ';', c->name, sizeof c->name)) {
            say(why, cap, "counters: a bad name");
            return -1;
        }
        nctr++;
    }
    return nctr;
}

/* ---- settings and probing -------------------------------------------------------------------- */

/* A page-fault event: its samples say the address, by which the faults of the kernel's own
 * writing of a signal frame are told apart. */
static int is_fault(const ctr_t *c)
{
    return c->type == PERF_TYPE_SOFTWARE &&
           (c->config == PERF_COUNT_SW_PAGE_FAULTS || c->config == PERF_COUNT_SW_PAGE_FAULTS_MIN ||
            c->config == PERF_COUNT_SW_PAGE_FAULTS_MAJ);
}

/* Software events the handler itself can cause. */
static int self_caused(const ctr_t *c)
{
    return is_fault(c) || (c->type == PERF_TYPE_SOFTWARE &&
                           (c->config == PERF_COUNT_SW_CONTEXT_SWITCHES ||
                            c->config == PERF_COUNT_SW_CPU_MIGRATIONS));
}

/* Events whose sample IP is the instruction itself (a fault) or the one after it (a data
 * breakpoint), which the interrupted context then also shows: the signal comes at once. */
static int precise_ip(const ctr_t *c)
{
    return is_fault(c) || c->type == PERF_TYPE_BREAKPOINT;
}

/* What its samples say of their memory reference (ctrmref.h). */
static enum ctrm_kind mref_kind(const ctr_t *c)
{
    return ctrm_kind(c->type, c->config, (c->flags & EXP_CSET_IBS) != 0, c->precise);
}

static void make_attr(const ctr_t *c, int excl_kernel, struct perf_event_attr *a)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = c->type;
    a->config = c->config;
    a->config1 = c->config1;
    a->config2 = c->config2;
    a->bp_type = c->bp_type;
    if (c->type == PERF_TYPE_BREAKPOINT) {
        a->bp_addr = c->bp_addr;
        a->bp_len = c->bp_len;
    }
    a->sample_period = c->interval;
    a->sample_type = PERF_SAMPLE_IP | ((c->flags & EXP_CSET_DATA) || is_fault(c) ? PERF_SAMPLE_ADDR : 0);
    /* (the driver's precise_ip and IBS come with '+' only, and so with PERF_SAMPLE_ADDR) */
    a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    a->wakeup_events = 1;
    a->disabled = 1;
    a->exclude_hv = 1;
    a->exclude_kernel = excl_kernel ? 1 : 0;
    if (c->flags & EXP_CSET_IBS) {
        /* the IBS PMUs refuse every exclude_ flag (EINVAL: PERF_PMU_CAP_NO_EXCLUDE up to Linux
         * 6.13, and later without a software filter in config2): ops tagged in kernel mode are
         * sampled too, and charged as a kernel-mode sample of any counter is */
        a->exclude_hv = 0;
        a->exclude_kernel = 0;
    }
    a->precise_ip = c->precise & 3;
}

static void counters_settings(coll_proc_t *p)
{
    nctr = nok = 0;
    if (!p->set.counters.s[0])
        return;
    char why[128];
    if (counters_decode(p->set.counters.s, why, sizeof why) < 0) {
        nctr = 0;
        coll_warn(why);
    }
}

int counters_dataspace(void)
{
    for (int i = 0; i < nctr; i++)
        if (ctr[i].flags & EXP_CSET_DATA)
            return 1;
    return 0;
}

static int first_bias(struct dl_phdr_info *i, size_t sz, void *out)
{
    (void)sz;
    *(uint64_t *)out = i->dlpi_addr;
    return 1;
}

/* The collector's own code (its executable segment): a page fault or breakpoint whose
 * instruction is there is the collector's work in the program's thread (the allocation map, a
 * record's stack table, the unwinder's cache, the blocks' tables at the end), not the program's. */
static uint64_t self_lo, self_hi;

static int self_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uint64_t me = (uint64_t)(uintptr_t)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo && me < hi) {
            self_lo = lo;
            self_hi = hi;
            return 1;
        }
    }
    return 0;
}

static void append(char *buf, size_t cap, size_t *n, const char *s)
{
    size_t k = strlen(s);
    if (*n + k >= cap)
        k = cap - 1 - *n;
    memcpy(buf + *n, s, k);
    *n += k;
    buf[*n] = 0;
}

static void append_u64(char *buf, size_t cap, size_t *n, uint64_t v)
{
    char d[24];
    d[exp_fmt_u64(d, v)] = 0;
    append(buf, cap, n, d);
}

/* A not-program-related counter: counting on every CPU, in the root image only (every process
 * of the run would count the same machine). */
static void npr_open(const coll_proc_t *p, ctr_t *c, int i)
{
    c->ok = 0;
    for (int k = 0; k < MAXCPU; k++)
        npr[i][k] = (perfev_t)PERFEV_NONE;
    if (p->is_descendant)
        return;
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = c->type;
    a.config = c->config;
    a.config1 = c->config1;
    a.config2 = c->config2;
    a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    int opened = 0, rc = 0;
    for (int k = 0; k < npr_cpus; k++) {
        int r = perfev_open_cpu(&npr[i][k], &a, k);
        if (r == 0)
            opened++;
        else if (r != -ENODEV && r != -EINVAL)
            rc = r; /* (a CPU that is offline, or that this PMU does not cover) */
        else if (!rc)
            rc = r;
    }
    if (opened) {
        c->ok = 1;
        nok++;
        return;
    }
    char msg[512];
    size_t n = 0;
    append(msg, sizeof msg, &n, "not-program-related counter ");
    append(msg, sizeof msg, &n, c->name);
    append(msg, sizeof msg, &n, " cannot count on any CPU (perf_event_open: ");
    append(msg, sizeof msg, &n, strerror(-rc));
    append(msg, sizeof msg, &n, "; system-wide counting needs CAP_PERFMON or "
                                "perf_event_paranoid <= 0); it is not collected");
    coll_warn(msg);
}

/* Is this image's program the file whose symbol the breakpoint c is on? */
static int same_program(const ctr_t *c)
{
    struct stat st;
    return c->prog_ino && stat("/proc/self/exe", &st) == 0 &&
           (uint64_t)st.st_dev == c->prog_dev && (uint64_t)st.st_ino == c->prog_ino;
}

/* perfev_probe, which a test run makes refuse precise sampling (TALLY_TEST_REFUSE_PRECISE=1, as
 * a kernel without PEBS answers) to exercise the fallback below. */
static int probe(const struct perf_event_attr *a)
{
    static int refuse = -1;
    if (refuse < 0) {
        const char *e = getenv("TALLY_TEST_REFUSE_PRECISE");
        refuse = e && e[0] == '1';
    }
    if (refuse && a->precise_ip)
        return -EOPNOTSUPP;
    return perfev_probe(a);
}

/* Probes c, and where the kernel refuses its precise sampling (EOPNOTSUPP: above the PMU's; EINVAL:
 * not for this event) lower levels down to none, saying so. 0 or -errno. */
static int probe_counter(ctr_t *c, int excl_kernel)
{
    struct perf_event_attr a;
    unsigned want = c->precise;
    make_attr(c, excl_kernel, &a);
    int rc = probe(&a);
    while (c->precise && (rc == -EOPNOTSUPP || rc == -EINVAL)) {
        c->precise--;
        make_attr(c, excl_kernel, &a);
        rc = probe(&a);
    }
    if (rc == 0 && c->precise < want) {
        char msg[512];
        size_t n = 0;
        append(msg, sizeof msg, &n, "counter ");
        append(msg, sizeof msg, &n, c->name);
        append(msg, sizeof msg, &n, c->precise ? ": the kernel refuses precise sampling at the "
                                                 "level asked; a lower one is used"
                                               : ": the kernel refuses precise sampling; it is "
                                                 "sampled without it");
        if (mref_kind(c) == CTRM_BACKTRACK)
            append(msg, sizeof msg, &n, " and its data addresses are backtracked from the "
                                        "interrupted instruction");
        coll_warn(msg);
    } else if (rc) {
        c->precise = want;
    }
    return rc;
}

static int counters_proc_init(coll_proc_t *p)
{
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    nok = 0;
    if (!nctr || !p->ev_ok)
        return 0;
    uint64_t bias = 0;
    dl_iterate_phdr(first_bias, &bias);
    if (!self_hi)
        dl_iterate_phdr(self_text, (void *)(uintptr_t)&self_text);
    npr_cpus = (int)sysconf(_SC_NPROCESSORS_CONF);
    if (npr_cpus > MAXCPU)
        npr_cpus = MAXCPU;
    for (int i = 0; i < nctr; i++) {
        ctr_t *c = &ctr[i];
        if (c->flags & EXP_CSET_NPR) {
            npr_open(p, c, i);
            continue;
        }
        if ((c->flags & EXP_CSET_BP_EXE) && p->is_descendant && !same_program(c)) {
            /* a symbol of the profiled program: another program's addresses mean something
             * else (fork children keep it: they are this image) */
            char msg[256];
            size_t n = 0;
            append(msg, sizeof msg, &n, "breakpoint ");
            append(msg, sizeof msg, &n, c->name);
            append(msg, sizeof msg, &n, " is on a symbol of the profiled program; "
                                        "not set in this program, which it started");
            coll_warn(msg);
            continue;
        }
        if (c->flags & EXP_CSET_BP_EXE) {
            c->bp_addr += bias;
            c->flags &= ~(unsigned)EXP_CSET_BP_EXE; /* a fork child inherits the address */
        }
        int rc = probe_counter(c, 0);
        if (rc == -EACCES || rc == -EPERM) {
            rc = probe_counter(c, 1);
            c->excl_kernel = rc == 0;
        }
        c->ok = rc == 0;
        if (c->ok) {
            nok++;
            continue;
        }
        char msg[512];
        size_t n = 0;
        append(msg, sizeof msg, &n, "counter ");
        append(msg, sizeof msg, &n, c->name);
        append(msg, sizeof msg, &n, " cannot be opened in this process (perf_event_open: ");
        append(msg, sizeof msg, &n, strerror(-rc));
        append(msg, sizeof msg, &n, "); it is not collected");
        coll_warn(msg);
    }
    if (!nok)
        return 0;
    /* (also for not-program-related counters alone: a started thread is primed with the
     * signal) */
    if (signals_own_profiling(p) < 0) {
        coll_warn("cannot install the profiling signal handler; no counter profile");
        nok = 0;
        return -1;
    }
    return 1;
}

/* ---- the log --------------------------------------------------------------------------------- */

static void counters_log_decl(const coll_proc_t *p)
{
    (void)p;
    for (int i = 0; i < nctr; i++) {
        const ctr_t *c = &ctr[i];
        if (!c->ok)
            continue;
        char buf[1024];
        exp_line_t l;
        exp_line_begin(&l, buf, sizeof buf, EXP_LOG_METRIC);
        exp_line_u64(&l, EXP_KEY_T, coll_now());
        exp_line_str(&l, EXP_KEY_NAME, c->metric);
        exp_line_str(&l, EXP_KEY_TITLE, c->name);
        exp_line_str(&l, EXP_KEY_UNIT, (c->flags & EXP_CSET_TIME)     ? "s"
                                 : (c->flags & EXP_CSET_CYCLES) ? "cycles"
                                                                : "events");
        exp_line_str(&l, EXP_KEY_AGGREGATE, "sum");
        exp_line_u64(&l, EXP_KEY_TIME, (c->flags & EXP_CSET_TIME) ? 1 : 0);
        if ((c->flags & EXP_CSET_CYCLES) && c->hz)
            exp_line_u64(&l, EXP_KEY_HZ, c->hz);
        coll_log_write(&l);
        exp_line_begin(&l, buf, sizeof buf, EXP_LOG_COUNTER);
        exp_line_u64(&l, EXP_KEY_T, coll_now());
        exp_line_u64(&l, EXP_KEY_ID, (uint64_t)i);
        exp_line_str(&l, EXP_KEY_NAME, c->name);
        exp_line_str(&l, EXP_KEY_METRIC, c->metric);
        exp_line_u64(&l, EXP_KEY_TYPE, c->type);
        exp_line_hex(&l, EXP_KEY_CONFIG, c->config);
        if (c->config1 && c->type != PERF_TYPE_BREAKPOINT) /* (bp_addr, bp_len share them) */
            exp_line_hex(&l, EXP_KEY_CONFIG1, c->config1);
        if (c->config2 && c->type != PERF_TYPE_BREAKPOINT)
            exp_line_hex(&l, EXP_KEY_CONFIG2, c->config2);
        if (c->type == PERF_TYPE_BREAKPOINT) {
            exp_line_hex(&l, EXP_KEY_BP_ADDR, c->bp_addr);
            exp_line_u64(&l, EXP_KEY_BP_LEN, c->bp_len);
            exp_line_u64(&l, EXP_KEY_BP_TYPE, c->bp_type);
        }
        exp_line_u64(&l, EXP_KEY_INTERVAL, c->interval);
        exp_line_u64(&l, EXP_KEY_DATA, (c->flags & EXP_CSET_DATA) ? 1 : 0);
        if (c->flags & EXP_CSET_DATA) {
            enum ctrm_kind k = mref_kind(c);
            exp_line_u64(&l, EXP_KEY_PRECISE, c->precise);
            exp_line_str(&l, EXP_KEY_SAMPLED, k == CTRM_EXACT   ? "exact"
                                              : k == CTRM_AFTER ? "after"
                                                                : "backtracked");
        }
        exp_line_u64(&l, EXP_KEY_KERNEL, c->excl_kernel ? 0 : 1);
        if (c->flags & EXP_CSET_NPR)
            exp_line_u64(&l, EXP_KEY_PROGRAM, 0);
        coll_log_write(&l);
    }
}

/* ---- per thread ------------------------------------------------------------------------------ */

static void forget_thread(void)
{
    for (int i = 0; i < MAXC; i++) {
        kt.ev[i] = (perfev_t)PERFEV_NONE;
        kt.own_lo[i] = kt.own_hi[i] = 0;
    }
}

static int counters_thread_start(coll_proc_t *p, coll_thread_t *t)
{
    forget_thread();
    int opened = 0, rc = -ENOENT;
    for (int i = 0; i < nctr; i++) {
        if (!ctr[i].ok || (ctr[i].flags & EXP_CSET_NPR))
            continue;
        struct perf_event_attr a;
        make_attr(&ctr[i], ctr[i].excl_kernel, &a);
        int r = perfev_open_thread(&kt.ev[i], &a, RING_DATA_PAGES, t->tid, p->sig);
        if (r == 0) {
            perfev_arm(&kt.ev[i], PERF_HEADROOM);
            opened++;
        } else {
            rc = r;
        }
    }
    return opened ? 0 : rc;
}

/* The events the thread's event counted, and its times enabled and running, into the counter's
 * statistics; then closes it. AS-safe. */
static void close_event(int i)
{
    perfev_t *ev = &kt.ev[i];
    if (ev->fd < 0)
        return;
    uint64_t v[3];
    if (syscall(SYS_read, ev->fd, v, sizeof v) == (ssize_t)sizeof v) { /* (no cancellation) */
        source_count(&ctr[i].counted, v[0]);
        source_count(&ctr[i].enabled, v[1]);
        source_count(&ctr[i].running, v[2]);
    }
    perfev_close(ev);
}

static void counters_thread_stop(coll_proc_t *p, coll_thread_t *t, uint64_t now, uint64_t cpu)
{
    (void)p, (void)t, (void)now, (void)cpu;
    for (int i = 0; i < nctr; i++)
        close_event(i);
}

static void counters_fork_child(coll_proc_t *p)
{
    (void)p;
    forget_thread(); /* perfev_after_fork_child dropped the parent's events */
    for (int i = 0; i < nctr; i++) {
        ctr_t *c = &ctr[i];
        if ((c->flags & EXP_CSET_NPR) && c->ok) { /* the parent counts the machine */
            for (int k = 0; k < MAXCPU; k++)
                npr[i][k] = (perfev_t)PERFEV_NONE;
            c->ok = 0;
            nok--;
        }
        c->samples = c->events = c->counted = c->enabled = c->running = 0;
        c->throttled = c->lost = c->dropped = c->own = 0;
    }
}

/* ---- the hot path ---------------------------------------------------------------------------- */

static int which(const siginfo_t *si)
{
    for (int i = 0; i < nctr; i++)
        if (perfev_is_signal_of(&kt.ev[i], si))
            return i;
    return -1;
}

static int counters_mine(const coll_thread_t *t, const siginfo_t *si)
{
    if (t->state == TH_ON && which(si) >= 0)
        return 2;
    return perfev_looks_like_signal(si);
}

/* Was this page fault the kernel's, writing a signal frame for the collector's handler below
 * the interrupted stack pointer (the frame and its extended state take a few KiB)? */
static int own_fault(const perfev_rec_t *r, const ucontext_t *uc)
{
    if ((r->h.misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_KERNEL)
        return 0;
    uint64_t addr = perfev_rec_u64(r, sizeof(struct perf_event_header) + 8);
    uint64_t sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
    return addr < sp && sp - addr <= 64 * 1024;
}

/* Around every profiling handler of the collector in this thread (source.h, handler_edge): the
 * page faults the program cannot have caused meanwhile (a fresh page of the events chunk, of the
 * stack table, of the unwinder's cache) are the records the kernel writes into their rings
 * between the two edges. (Not switches or migrations: a time slice that ends while a handler
 * runs would have ended in the program, and getrusage counts it.) The program does not run between two
 * handlers delivered back to back, so a window whose records are still unread is extended when
 * nothing was written after it; else a new one begins (an older unread one is then left to be
 * charged as before: never a record of the program taken for the collector's). */
static void counters_handler_edge(coll_thread_t *t, int entering)
{
    (void)t;
    for (int i = 0; i < nctr; i++) {
        const perfev_t *ev = &kt.ev[i];
        if (!ctr[i].ok || !is_fault(&ctr[i]) || ev->fd < 0 || !ev->ring)
            continue;
        uint64_t head = __atomic_load_n(&ev->ring->data_head, __ATOMIC_ACQUIRE);
        if (!entering)
            kt.own_hi[i] = head;
        else if (!(kt.own_hi[i] > ev->ring->data_tail && head == kt.own_hi[i]))
            kt.own_lo[i] = kt.own_hi[i] = head;
    }
}

static void counters_on_overflow(coll_proc_t *p, coll_thread_t *t, const siginfo_t *si,
                                 const ucontext_t *uc)
{
    int i = which(si);
    if (i < 0)
        return;
    ctr_t *c = &ctr[i];
    perfev_t *ev = &kt.ev[i];
    /* the handler itself may cause a page fault (a fresh page of its events chunk) or a switch:
     * not the program's, so those events do not count while it runs. (Not task-clock: its
     * timer would be stopped and started again each sample, 17 us on this VM.) */
    if (self_caused(c))
        ioctl(ev->fd, PERF_EVENT_IOC_DISABLE, 0);
    uint64_t now = coll_now();
    int record = !__atomic_load_n(&p->final, __ATOMIC_RELAXED) && source_in_window(p, now) &&
                 !__atomic_load_n(&p->paused, __ATOMIC_RELAXED);
    uint32_t id = 0;
    int have_stack = 0;
    perfev_cursor_t cur;
    perfev_rec_t r;
    uint64_t lost = 0, throttled = 0;
    perfev_ring_begin(ev, page_size, &cur);
    for (uint64_t pos = cur.tail; perfev_ring_next(&cur, &r); pos = cur.tail) {
        if (r.h.type == PERF_RECORD_LOST) {
            lost += perfev_rec_lost(&r);
            continue;
        }
        if (r.h.type == PERF_RECORD_THROTTLE) {
            throttled++;
            continue;
        }
        if (r.h.type != PERF_RECORD_SAMPLE || !record)
            continue;
        if ((is_fault(c) && own_fault(&r, uc)) ||
            (is_fault(c) && pos >= kt.own_lo[i] && pos < kt.own_hi[i])) {
            source_count(&c->own, 1);
            continue;
        }
        uint32_t sid;
        uint64_t ip = perfev_rec_u64(&r, sizeof(struct perf_event_header));
        int user = (r.h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER;
        if (precise_ip(c) && user && ip >= self_lo && ip < self_hi) {
            source_count(&c->own, 1);
            continue;
        }
        if (precise_ip(c) && user && ip != (uint64_t)uc->uc_mcontext.gregs[REG_RIP]) {
            /* a fault or breakpoint hit elsewhere than where the thread is now: inside another
             * handler of the collector (its signal waited for the handler's end), or before
             * an earlier one of this ring. Charged to where it happened, the PC alone. */
            if (exp_stream_stack(&t->stream, &ip, 1, 0, &sid)) {
                source_count(&c->dropped, 1);
                continue;
            }
        } else {
            if (!have_stack) {
                if (source_stack(p, t, uc, now, &id)) {
                    source_count(&c->dropped, 1);
                    continue;
                }
                have_stack = 1;
            }
            sid = id;
        }
        if (exp_stream_counter(&t->stream, now, sid, (uint32_t)i, c->interval, NULL) == 0) {
            source_count(&c->samples, 1);
            source_count(&c->events, c->interval);
        } else {
            source_count(&c->dropped, 1);
            continue;
        }
        if (c->flags & EXP_CSET_DATA) {
            /* the memory reference (docs/FORMAT.md MEMREF, source: the counter's id + 1): the
             * kernel's sampled data address when it gave one (a page fault's faulting
             * instruction and address; a breakpoint's address, its PC the instruction after the
             * access), else the interrupted context for backtracking */
            uint64_t addr = perfev_rec_u64(&r, sizeof(struct perf_event_header) + 8);
            exp_memref_t m;
            int mf = ctrm_flags(mref_kind(c), user, addr);
            if (mf >= 0) {
                /* the registers too when they are the sampled PC's (the thread is still there):
                 * the frame's CFA, and so its stack variables, and the thread pointer */
                if (ip == (uint64_t)uc->uc_mcontext.gregs[REG_RIP])
                    mref_from_ucontext(uc, (uint32_t)i + 1, &m);
                else
                    memset(&m, 0, sizeof m), m.source = (uint32_t)i + 1;
                m.flags |= (uint32_t)mf;
                m.pc = ip;
                m.ea = (mf & EXP_MREF_EA) ? addr : 0;
            } else {
                mref_from_ucontext(uc, (uint32_t)i + 1, &m);
            }
            maps_tls_note(&t->stream, now); /* the thread's dynamic TLS blocks (maps.h) */
            exp_stream_memref(&t->stream, now, sid, c->interval, &m);
        }
    }
    perfev_ring_end(ev, &cur);
    source_count(&c->lost, lost);
    source_count(&c->throttled, throttled);
    perfev_arm(ev, 1); /* gives one back (and enables a software event again) */
}

/* ---- the end --------------------------------------------------------------------------------- */

void counters_final(coll_proc_t *p)
{
    coll_thread_t *t = &coll_thr;
    for (int i = 0; i < nctr; i++) {
        ctr_t *c = &ctr[i];
        if (!c->ok || !(c->flags & EXP_CSET_NPR))
            continue;
        uint64_t total = 0;
        for (int k = 0; k < npr_cpus; k++) {
            perfev_t *ev = &npr[i][k];
            if (ev->fd < 0)
                continue;
            uint64_t v[3];
            if (syscall(SYS_read, ev->fd, v, sizeof v) == (ssize_t)sizeof v) { /* (no cancellation) */
                total += v[0];
                source_count(&c->counted, v[0]);
                source_count(&c->enabled, v[1]);
                source_count(&c->running, v[2]);
            }
            perfev_close(ev);
        }
        if (!total)
            continue;
        uint64_t pc = (uint64_t)(uintptr_t)collector_not_program_related;
        uint32_t id;
        if (t->scratch && exp_stream_stack(&t->stream, &pc, 1, 0, &id) == 0 &&
            exp_stream_counter(&t->stream, coll_now(), id, (uint32_t)i, total, NULL) == 0) {
            source_count(&c->samples, 1);
            source_count(&c->events, total);
        } else {
            source_count(&c->dropped, 1);
        }
    }
    (void)p;
}

static void warn_counter(const ctr_t *c, uint64_t n, const char *what)
{
    char msg[512];
    size_t k = 0;
    append(msg, sizeof msg, &k, "counter ");
    append(msg, sizeof msg, &k, c->name);
    append(msg, sizeof msg, &k, ": ");
    append_u64(msg, sizeof msg, &k, n);
    append(msg, sizeof msg, &k, what);
    coll_warn(msg);
}

void counters_log_stats(coll_proc_t *p)
{
    (void)p;
    if (!nok)
        return;
    for (int i = 0; i < nctr; i++) {
        const ctr_t *c = &ctr[i];
        if (!c->ok)
            continue;
        char buf[512];
        exp_line_t l;
        exp_line_begin(&l, buf, sizeof buf, EXP_LOG_COUNTER_STATS);
        exp_line_u64(&l, EXP_KEY_ID, (uint64_t)i);
        exp_line_u64(&l, EXP_KEY_SAMPLES, c->samples);
        exp_line_u64(&l, EXP_KEY_EVENTS, c->events);
        exp_line_u64(&l, EXP_KEY_COUNTED, c->counted);
        exp_line_u64(&l, EXP_KEY_ENABLED, c->enabled);
        exp_line_u64(&l, EXP_KEY_RUNNING, c->running);
        exp_line_u64(&l, EXP_KEY_THROTTLED, c->throttled);
        exp_line_u64(&l, EXP_KEY_LOST, c->lost);
        exp_line_u64(&l, EXP_KEY_DROPPED, c->dropped);
        exp_line_u64(&l, EXP_KEY_COLLECTOR, c->own);
        coll_log_write(&l);
        if (c->running < c->enabled) {
            uint64_t pct = c->enabled ? c->running * 100 / c->enabled : 0;
            warn_counter(c, pct, "% of its enabled time counting (the PMU was shared by more "
                                 "counters than it has: multiplexed); its samples cover that part "
                                 "of the run only");
        }
        if (c->throttled)
            warn_counter(c, c->throttled, " times throttled by the kernel (too many samples a "
                                          "second, kernel.perf_event_max_sample_rate): overflows "
                                          "were missed; use a larger interval");
        if (c->lost)
            warn_counter(c, c->lost, " samples lost by the kernel (ring full)");
        if (c->dropped)
            warn_counter(c, c->dropped, " samples not written (writer busy or no disk space)");
    }
}

const coll_source_ops_t counters_source = {
    .name = "counters",
    .settings = counters_settings,
    .proc_init = counters_proc_init,
    .log_decl = counters_log_decl,
    .thread_start = counters_thread_start,
    .mine = counters_mine,
    .on_overflow = counters_on_overflow,
    .thread_stop = counters_thread_stop,
    .fork_child = counters_fork_child,
    .handler_edge = counters_handler_edge,
};
