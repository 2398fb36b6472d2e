/*
 * interpose.c - the functions the collector exports in place of libc's; see interpose.h.
 *
 * Sections: real functions, threads, the loader (dlopen with the caller's identity), processes
 * (exit, exec, spawn, fork), signals.
 */
#define _GNU_SOURCE
#include "interpose.h"
#include "realfn.h"
#include "sampler.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "signals.h"
#include "threads.h"
#include "maps.h"
#include "trace.h"
#include "blocks.h"

size_t coll_preload_strip(const char *v, const char *self, char *out, size_t cap);
int coll_preload_has_self(const char *v, const char *self);
int coll_preload_has_base(const char *v, const char *base);

/* ---- real functions -------------------------------------------------------------------------- */

static struct {
    int done; /* realfn.h: 2 once looked up */
    int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    void *(*dlopen)(const char *, int);
    void *(*dlmopen)(Lmid_t, const char *, int);
    int (*dlclose)(void *);
    int (*execve)(const char *, char *const[], char *const[]);
    int (*execvpe)(const char *, char *const[], char *const[]);
    int (*fexecve)(int, char *const[], char *const[]);
    int (*posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                       const posix_spawnattr_t *, char *const[], char *const[]);
    int (*posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);
    void (*_exit)(int) __attribute__((noreturn));
    void (*_Exit)(int) __attribute__((noreturn));
    int (*sigaction)(int, const struct sigaction *, struct sigaction *);
    sighandler_t (*signal)(int, sighandler_t);
    sighandler_t (*sysv_signal)(int, sighandler_t);
    int (*sigprocmask)(int, const sigset_t *, sigset_t *);
    int (*unshare)(int);
    int (*setns)(int, int);
    int (*pthread_sigmask)(int, const sigset_t *, sigset_t *);
    int (*sigsuspend)(const sigset_t *);
    int (*pipe2)(int[2], int);
    int (*pipe)(int[2]);
} real;

static const realfn_t real_fns[] = {
    REALFN(real.pthread_create, "pthread_create"),
    REALFN(real.dlopen, "dlopen"),
    REALFN(real.dlmopen, "dlmopen"),
    REALFN(real.dlclose, "dlclose"),
    REALFN(real.execve, "execve"),
    REALFN(real.execvpe, "execvpe"),
    REALFN(real.fexecve, "fexecve"),
    REALFN(real.posix_spawn, "posix_spawn"),
    REALFN(real.posix_spawnp, "posix_spawnp"),
    REALFN(real._exit, "_exit"),
    REALFN(real._Exit, "_Exit"),
    REALFN(real.sigaction, "sigaction"),
    REALFN(real.signal, "signal"),
    REALFN(real.sysv_signal, "sysv_signal"),
    REALFN(real.sigprocmask, "sigprocmask"),
    REALFN(real.pthread_sigmask, "pthread_sigmask"),
    REALFN(real.sigsuspend, "sigsuspend"),
    REALFN(real.pipe2, "pipe2"),
    REALFN(real.pipe, "pipe"),
    REALFN(real.unshare, "unshare"),
    REALFN(real.setns, "setns"),
    /* the signal module's own copies (signals.h) */
    REALFN(signals_real_sigmask, "pthread_sigmask"),
    REALFN(signals_real_sigaction, "sigaction"),
};
static const realfn_table_t real_table = { real_fns, sizeof real_fns / sizeof *real_fns,
                                           &real.done, 0 };

void interpose_resolve(void)
{
    realfn_ready(&real_table);
}

/* Is the collector recording this process (and is the caller this process, not a vfork child)? */
static int active(void)
{
    interpose_resolve();
    return coll_proc.enabled && getpid() == coll_proc.pid;
}

/* ---- threads --------------------------------------------------------------------------------- */

static pthread_key_t thread_key;
static int thread_key_ok;

static void thread_key_dtor(void *v)
{
    (void)v;
    blocks_thread_exit();
    if (coll_proc.enabled)
        threads_exit(&coll_proc);
    trace_thread_exit();
}

static void on_exit_cb(int status, void *arg);

static void atfork_child(void)
{
    if (coll_proc.enabled)
        coll_after_fork_child();
}

int interpose_init(coll_proc_t *p)
{
    (void)p;
    if (!thread_key_ok && pthread_key_create(&thread_key, thread_key_dtor) == 0)
        thread_key_ok = 1;
    pthread_atfork(NULL, NULL, atfork_child);
    on_exit(on_exit_cb, NULL);
    return 0;
}

void interpose_mark_thread(void)
{
    if (thread_key_ok)
        pthread_setspecific(thread_key, (void *)1);
}

struct start_arg {
    void *(*fn)(void *);
    void *arg;
    int prog_blocked; /* the creator's view of the profiling signal: a new thread inherits it */
    uint32_t rstate;  /* the creator's runtime state: a thread a runtime starts (an OpenMP
                         worker) is in it until the runtime says otherwise */
};

static void unblock_prof_signal(void)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, coll_proc.sig);
    real.pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}

static void *thread_trampoline(void *a)
{
    struct start_arg sa = *(struct start_arg *)a;
    free(a);
    if (coll_proc.enabled && getpid() == coll_proc.pid) {
        /* the thread's setup has cancellation points of its own (the log's write): a thread
         * cancelled at once must still run its start routine up to its own first one, as
         * without tally (it never ran: 300 of 300 cancelled threads, wl_thread_churn) */
        int cancel;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
        unblock_prof_signal(); /* the creator may have been inside dlopen */
        signals_prog_blocked = sa.prog_blocked;
        threads_set_rstate(sa.rstate); /* (before the thread's slot: it starts with it) */
        threads_start(&coll_proc, "pthread_create");
        interpose_mark_thread();
        pthread_setcancelstate(cancel, NULL);
    }
    return sa.fn(sa.arg);
}

COLL_EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                               void *arg)
{
    int saved = errno;
    if (!coll_ensure_init() || getpid() != coll_proc.pid)
        return errno = saved, real.pthread_create(t, attr, fn, arg);
    struct start_arg *sa = malloc(sizeof *sa);
    if (!sa)
        return errno = saved, real.pthread_create(t, attr, fn, arg);
    sa->fn = fn;
    sa->arg = arg;
    sa->prog_blocked = signals_prog_blocked;
    sa->rstate = coll_thr.rstate;
    errno = saved;
    int rc = real.pthread_create(t, attr, thread_trampoline, sa);
    if (rc)
        free(sa);
    return rc;
}

/* ---- pipes ----------------------------------------------------------------------------------- */

/* libunwind opens a pipe (to probe addresses) the first time it is used, by the collector while it
 * starts (or in the sampler thread, for the remote unwinder): such a pipe is the collector's and
 * goes to high numbers at once, so the program's first descriptor is 3 as without tally. */
static int own_pipe(int rc, int fds[2])
{
    if (rc == 0 && (signals_in_core() || trace_thr.guard > 0)) {
        fds[0] = coll_high_fd(fds[0]);
        fds[1] = coll_high_fd(fds[1]);
    }
    return rc;
}

COLL_EXPORT int pipe2(int fds[2], int flags)
{
    interpose_resolve();
    return own_pipe(real.pipe2(fds, flags), fds);
}

COLL_EXPORT int pipe(int fds[2])
{
    interpose_resolve();
    return own_pipe(real.pipe(fds), fds);
}

/* ---- the loader ------------------------------------------------------------------------------ */

/*
 * dlopen and dlmopen look at their return address to find the calling object (its RUNPATH,
 * $ORIGIN, namespace). A plain wrapper would make the collector the caller. tally_dlcall(gadget,
 * fn, a, b, c) calls fn(a, b, c) with `gadget` as its return address: a `ret` byte inside the
 * caller's object, which returns into tally_dlcall. When the caller is in no object (JIT code),
 * the gadget is on an anonymous page: the loader then assumes the main program, as it would.
 */
void *tally_dlcall(void *gadget, void *fn, uintptr_t a, uintptr_t b, uintptr_t c);
__asm__(".text\n"
        ".globl tally_dlcall\n"
        ".hidden tally_dlcall\n"
        ".type tally_dlcall,@function\n"
        "tally_dlcall:\n"
        "  .cfi_startproc\n"
        "  pushq %rbp\n"
        "  .cfi_def_cfa_offset 16\n"
        "  .cfi_offset %rbp,-16\n"
        "  movq %rsp,%rbp\n"
        "  .cfi_def_cfa_register %rbp\n"
        "  subq $8,%rsp\n"          /* keeps fn's entry stack aligned as after a call */
        "  leaq 1f(%rip),%rax\n"
        "  pushq %rax\n"            /* where the gadget's ret goes */
        "  pushq %rdi\n"            /* fn's return address: the gadget */
        "  movq %rsi,%rax\n"
        "  movq %rdx,%rdi\n"
        "  movq %rcx,%rsi\n"
        "  movq %r8,%rdx\n"
        "  jmp *%rax\n"
        "1:\n"
        "  leave\n"
        "  .cfi_def_cfa %rsp,8\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size tally_dlcall,.-tally_dlcall\n");

#define NGADGETS 64
static struct gadget {
    uintptr_t lo, hi; /* executable segment that holds the caller */
    void *g;
} gadgets[NGADGETS];
static int ngadgets;
static pthread_mutex_t gadget_mu = PTHREAD_MUTEX_INITIALIZER;
static void *anon_gadget;

struct gfind {
    uintptr_t addr;
    struct gadget found;
};

static int gadget_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct gfind *gf = arg;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || !(ph->p_flags & PF_R) ||
            gf->addr < lo || gf->addr >= hi)
            continue;
        const unsigned char *q = memchr((const void *)lo, 0xc3, ph->p_filesz);
        if (q) {
            gf->found.lo = lo;
            gf->found.hi = hi;
            gf->found.g = (void *)q;
        }
        return 1;
    }
    return 0;
}

static void *gadget_for(void *caller)
{
    uintptr_t a = (uintptr_t)caller;
    pthread_mutex_lock(&gadget_mu);
    void *g = NULL;
    for (int i = 0; i < ngadgets && !g; i++)
        if (a >= gadgets[i].lo && a < gadgets[i].hi)
            g = gadgets[i].g;
    if (!g) {
        struct gfind gf = { a, { 0, 0, NULL } };
        dl_iterate_phdr(gadget_cb, &gf);
        if (gf.found.g) {
            g = gf.found.g;
            if (ngadgets < NGADGETS)
                gadgets[ngadgets++] = gf.found;
        }
    }
    if (!g) {
        if (!anon_gadget) {
            void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m != MAP_FAILED) {
                *(unsigned char *)m = 0xc3;
                if (mprotect(m, 4096, PROT_READ | PROT_EXEC) == 0)
                    anon_gadget = m;
                else
                    munmap(m, 4096);
            }
        }
        g = anon_gadget;
    }
    pthread_mutex_unlock(&gadget_mu);
    return g;
}

/* > 0 while this thread is inside dlopen/dlclose: the profiling signal must stay blocked. */
static __thread int in_dl __attribute__((tls_model("initial-exec")));

static void dl_enter(sigset_t *old)
{
    signals_block(&coll_proc, old);
    in_dl++;
}

static void dl_leave(const sigset_t *old, int rescan)
{
    in_dl--;
    if (rescan && active())
        maps_rescan(&coll_proc);
    signals_unblock(old);
}

/* After the loader's call: the profiling signal back as it was, the load objects rescanned when
 * the call changed them (changed: it succeeded). Keeps errno. */
static void dl_finish(int on, const sigset_t *old, int changed)
{
    int saved = errno;
    if (on)
        dl_leave(old, changed);
    else if (changed && active())
        maps_rescan(&coll_proc);
    errno = saved;
}

/* dlopen or dlmopen (m), called through a gadget in the caller's object (see above); regs: the
 * interposer's caller, where the traced calls' stacks go on from the gadget. */
typedef struct dl_open_call {
    int m;
    Lmid_t lmid;
    const char *file;
    int mode;
} dl_open_call_t;

static void *dl_open(void *caller, fu_regs_t regs, const dl_open_call_t *c)
{
    interpose_resolve();
    int on = coll_proc.enabled && coll_proc.source != COLL_SRC_NONE;
    void *g = gadget_for(caller);
    sigset_t old;
    if (on)
        dl_enter(&old);
    fu_splice_t outer = trace_thr.splice; /* the loader's allocations: stacks skip our frames */
    trace_thr.splice = (fu_splice_t){ (uint64_t)(uintptr_t)g, regs };
    void *r;
    if (c->m)
        r = g ? tally_dlcall(g, (void *)real.dlmopen, (uintptr_t)c->lmid, (uintptr_t)c->file,
                             (uintptr_t)c->mode)
              : real.dlmopen(c->lmid, c->file, c->mode);
    else
        r = g ? tally_dlcall(g, (void *)real.dlopen, (uintptr_t)c->file, (uintptr_t)c->mode, 0)
              : real.dlopen(c->file, c->mode);
    trace_thr.splice = outer;
    dl_finish(on, &old, r != NULL);
    return r;
}

COLL_EXPORT void *dlopen(const char *file, int mode)
{
    dl_open_call_t c = { 0, LM_ID_BASE, file, mode };
    return COLL_BLOCKING(dl_open(__builtin_return_address(0), FU_REGS(), &c));
}

COLL_EXPORT void *dlmopen(Lmid_t lmid, const char *file, int mode)
{
    dl_open_call_t c = { 1, lmid, file, mode };
    return COLL_BLOCKING(dl_open(__builtin_return_address(0), FU_REGS(), &c));
}

COLL_EXPORT int dlclose(void *h)
{
    interpose_resolve();
    int on = coll_proc.enabled && coll_proc.source != COLL_SRC_NONE;
    sigset_t old;
    if (on)
        dl_enter(&old);
    int r = COLL_BLOCKING(real.dlclose(h));
    if (r == 0)
        fu_forget(); /* the traced calls' unwinder: an address may now be another object's */
    dl_finish(on, &old, r == 0);
    return r;
}

/* ---- processes: exit ------------------------------------------------------------------------- */

/* exit() and a return from main reach the collector through on_exit (registered in the
 * constructor, before libc registers the loader's destructor pass, so it runs last). */
static void on_exit_cb(int status, void *arg)
{
    (void)arg;
    coll_exiting(status);
}

COLL_EXPORT void _exit(int status)
{
    interpose_resolve();
    coll_finalize("exit", status, 0); /* does nothing in a vfork child or when disabled */
    real._exit(status);
}

COLL_EXPORT void _Exit(int status)
{
    interpose_resolve();
    coll_finalize("exit", status, 0);
    real._Exit(status);
}

/* ---- processes: exec and spawn --------------------------------------------------------------- */

/* The environment for a new image, built for one exec or spawn call only (the program's environ
 * and its strings are never touched): a copy of the array envp where
 *   ENV_ADD    TALLY_SETTINGS describes this process as the new image's parent (its directory and
 *              pid, the root's pid and start, every setting: settings.def) and LD_PRELOAD holds
 *              the collector (first, unless it is there already);
 *   ENV_STRIP  both are gone (the collector taken out of LD_PRELOAD, which is dropped if nothing
 *              is left): the image runs as without tally (follow off, not profiled here, or the
 *              environment with tally's additions was too long, E2BIG).
 * The array and the new strings are on the caller's stack when they fit (a vfork child must not
 * allocate), else on anonymous mappings released by env_done. AS-safe. */
enum { ENV_KEEP, ENV_ADD, ENV_STRIP };

#define ENV_VEC_N 512
#define ENV_STR_N 8192

typedef struct envbuf {
    char *vec_st[ENV_VEC_N];
    char strs_st[ENV_STR_N];
    char **vec;
    char *strs;
    size_t vec_map, strs_map; /* mapped lengths, 0: on the stack */
    size_t used, cap;
} envbuf_t;

static int is_var(const char *e, const char *name, size_t n)
{
    return !strncmp(e, name, n) && e[n] == '=';
}

static char *eb_alloc(envbuf_t *eb, size_t n)
{
    if (eb->used + n > eb->cap)
        return NULL;
    char *s = eb->strs + eb->used;
    eb->used += n;
    return s;
}

static char *eb_put5(envbuf_t *eb, const char *name, const char *v1, const char *v2,
                     const char *v3, const char *v4, const char *v5)
{
    const char *v[5] = { v1, v2, v3, v4, v5 };
    size_t n = strlen(name), l[5], total = n + 2;
    for (int i = 0; i < 5; i++)
        total += l[i] = v[i] ? strlen(v[i]) : 0;
    char *s = eb_alloc(eb, total), *q = s;
    if (!s)
        return NULL;
    memcpy(q, name, n);
    q += n;
    *q++ = '=';
    for (int i = 0; i < 5; i++) {
        memcpy(q, v[i], l[i]);
        q += l[i];
    }
    *q = 0;
    return s;
}

static char *eb_put3(envbuf_t *eb, const char *name, const char *v1, const char *v2,
                     const char *v3)
{
    return eb_put5(eb, name, v1, v2, v3, NULL, NULL);
}

static void *map_anon(size_t len)
{
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

static void env_done(envbuf_t *eb)
{
    if (eb->vec_map)
        munmap(eb->vec, eb->vec_map);
    if (eb->strs_map)
        munmap(eb->strs, eb->strs_map);
    eb->vec_map = eb->strs_map = 0;
}

/* TALLY_SETTINGS for a new image of this process: our settings, with this process as the parent. */
static char *eb_settings(envbuf_t *eb)
{
    static const char name[] = EXP_SETTINGS_ENV "=";
    const coll_proc_t *p = &coll_proc;
    size_t room = eb->cap - eb->used;
    char *s = eb_alloc(eb, 0);
    if (room < sizeof name + 1)
        return NULL;
    memcpy(s, name, sizeof name - 1);
    /* the directory, owner and root start differ from what this image was given: encode a copy
     * whose context fields are this process's (a vfork child's is its parent's: the new image is
     * the parent's spawn) */
    exp_settings_t copy, *c = &copy;
    *c = p->set;
    size_t dl = strnlen(p->dir, sizeof c->dir.s - 1);
    memcpy(c->dir.s, p->dir, dl);
    c->dir.s[dl] = 0;
    c->owner_pid = (uint64_t)p->pid;
    c->root_t0 = p->root_t0;
    c->parent_rank = p->mpi_rank1;
    long n = exp_settings_encode(c, s + sizeof name - 1, room - (sizeof name - 1));
    if (n < 0)
        return NULL;
    eb->used += sizeof name - 1 + (size_t)n + 1;
    return s;
}

static char *const *env_build(envbuf_t *eb, char *const envp[], int mode)
{
    const coll_proc_t *p = &coll_proc;
    static const char pre_name[] = "LD_PRELOAD", set_name[] = EXP_SETTINGS_ENV;
    size_t n = 0;
    const char *preload = NULL;
    for (char *const *e = envp; e && *e; e++) {
        n++;
        if (is_var(*e, pre_name, sizeof pre_name - 1))
            preload = *e + sizeof pre_name;
    }
    eb->used = eb->vec_map = eb->strs_map = 0;
    eb->vec = eb->vec_st;
    eb->strs = eb->strs_st;
    eb->cap = sizeof eb->strs_st;
    if (n + 4 > ENV_VEC_N) {
        eb->vec_map = (n + 4) * sizeof(char *);
        if (!(eb->vec = map_anon(eb->vec_map))) {
            eb->vec_map = 0;
            return envp;
        }
    }
    size_t need = EXP_SETTINGS_ENC_MAX + 64 + 2 * (strlen(p->self_path) + 16) +
                  strlen(p->mpi_path) + 2 +
                  (preload ? strlen(preload) : 0);
    if (need > eb->cap) {
        eb->strs_map = need;
        if (!(eb->strs = map_anon(need))) {
            eb->strs_map = 0;
            env_done(eb);
            return envp;
        }
        eb->cap = need;
    }
    size_t k = 0;
    for (char *const *e = envp; e && *e; e++)
        if (!is_var(*e, pre_name, sizeof pre_name - 1) && !is_var(*e, set_name, sizeof set_name - 1))
            eb->vec[k++] = *e;
    char *s = NULL;
    if (mode == ENV_ADD) {
        if ((s = eb_settings(eb)))
            eb->vec[k++] = s;
        const char *mpi = p->set.mpi && p->mpi_path[0] &&
                                  !coll_preload_has_base(preload, "libtally-mpi.so")
                              ? p->mpi_path
                              : NULL;
        if (preload && coll_preload_has_self(preload, p->self_path))
            s = mpi ? eb_put3(eb, pre_name, mpi, ":", preload)
                    : eb_put3(eb, pre_name, preload, NULL, NULL);
        else if (preload && *preload)
            s = eb_put5(eb, pre_name, p->self_path, mpi ? ":" : NULL, mpi, ":", preload);
        else
            s = eb_put5(eb, pre_name, p->self_path, mpi ? ":" : NULL, mpi, NULL, NULL);
    } else if (preload) {
        char *v = eb_alloc(eb, strlen(preload) + 1);
        s = v && coll_preload_strip(preload, p->self_path, v, strlen(preload) + 1)
                ? eb_put3(eb, pre_name, v, NULL, NULL)
                : NULL;
    }
    if (s)
        eb->vec[k++] = s;
    eb->vec[k] = NULL;
    return eb->vec;
}

/* How this process passes the environment on: with tally's additions (followed), without them,
 * or untouched (the collector is not running here and was not asked to step aside). */
static int env_mode(void)
{
    const coll_proc_t *p = &coll_proc;
    if (p->enabled)
        return p->follow ? ENV_ADD : ENV_STRIP;
    return p->strip_env ? ENV_STRIP : ENV_KEEP;
}

/* Before a new image replaces this one: log its end. After a failed exec: say so. */
static int exec_begin(void)
{
    if (!active())
        return 0;
    coll_finalize("exec", 0, 0);
    return 1;
}

/* warning what=<pre><what> <errno name> */
static void warn_call(const char *pre, const char *what, int err)
{
    char msg[600];
    size_t n = 0, pl = strlen(pre), wl = what ? strnlen(what, 400) : 0;
    memcpy(msg, pre, pl);
    n = pl;
    memcpy(msg + n, what, wl);
    n += wl;
    msg[n++] = ' ';
    const char *en = strerrorname_np(err);
    size_t el = en ? strlen(en) : 0;
    memcpy(msg + n, en ? en : "", el);
    n += el;
    msg[n] = 0;
    coll_warn(msg);
}

static void exec_failed(int was_active, const char *what)
{
    if (!was_active)
        return;
    int saved = errno;
    coll_unfinalize();
    warn_call("exec failed (the process goes on, the calling thread unprofiled): ", what, saved);
    errno = saved;
}

/* The new image cannot be followed: tally's additions made the environment too long. */
static void warn_e2big(const char *what)
{
    warn_call("not followed: with tally's additions to the environment (LD_PRELOAD, "
              EXP_SETTINGS_ENV ") the arguments and environment are too long, so it runs as "
              "without tally: ", what, E2BIG);
}

/* One call that starts a new image, of any kind: exec (the process becomes it) or spawn (a child
 * does). */
typedef struct launch {
    enum { L_EXECVE, L_EXECVPE, L_FEXECVE, L_SPAWN, L_SPAWNP } how;
    const char *file; /* path, file or a name for messages */
    int fd;
    char *const *argv;
    pid_t *pid; /* spawn */
    const posix_spawn_file_actions_t *fa;
    const posix_spawnattr_t *attr;
} launch_t;

/* The real call with env: 0 (a spawn started; an exec does not return) or an error number. */
static int launch_real(const launch_t *c, char *const *env)
{
    switch (c->how) {
    case L_EXECVE:
        return real.execve(c->file, c->argv, env) < 0 ? errno : 0;
    case L_EXECVPE:
        return real.execvpe(c->file, c->argv, env) < 0 ? errno : 0;
    case L_FEXECVE:
        return real.fexecve(c->fd, c->argv, env) < 0 ? errno : 0;
    case L_SPAWN:
        return real.posix_spawn(c->pid, c->file, c->fa, c->attr, c->argv, env);
    default:
        return real.posix_spawnp(c->pid, c->file, c->fa, c->attr, c->argv, env);
    }
}

/* The call with the environment this process passes on; when it is too long only because of what
 * tally adds (E2BIG), the warning goes to this process's log and the call is made again without
 * tally's additions, as the program would have made it. An exec logs the end of this image first
 * (and, failing, says so). Returns 0 or an error number. */
static int launch(const launch_t *c, char *const envp[])
{
    interpose_resolve();
    int is_exec = c->how == L_EXECVE || c->how == L_EXECVPE || c->how == L_FEXECVE;
    int mode = env_mode();
    if (mode == ENV_KEEP)
        return launch_real(c, envp);
    envbuf_t eb;
    char *const *env = env_build(&eb, envp, mode);
    int was = is_exec ? exec_begin() : 0;
    int err = launch_real(c, env);
    env_done(&eb);
    if (err == E2BIG && mode == ENV_ADD) {
        warn_e2big(c->file);
        env = env_build(&eb, envp, ENV_STRIP);
        err = launch_real(c, env);
        env_done(&eb);
    }
    if (is_exec) {
        errno = err;
        exec_failed(was, c->file);
    }
    return err;
}

/* An exec's return: -1 with errno. */
static int exec_launch(const launch_t *c, char *const envp[])
{
    int err = launch(c, envp);
    errno = err;
    return -1;
}

COLL_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    launch_t c = { L_EXECVE, path, -1, argv, NULL, NULL, NULL };
    return exec_launch(&c, envp);
}

COLL_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    launch_t c = { L_EXECVPE, file, -1, argv, NULL, NULL, NULL };
    return exec_launch(&c, envp);
}

COLL_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    launch_t c = { L_FEXECVE, "fexecve", fd, argv, NULL, NULL, NULL };
    return exec_launch(&c, envp);
}

COLL_EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

COLL_EXPORT int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

/* execl, execlp, execle: the variadic arguments (after arg, up to the NULL; then, with has_env,
 * the environment) gathered into an array on the stack, then execve or execvpe (path). */
static int exec_list(int path, const char *file, const char *arg, va_list ap, int has_env)
{
    va_list cnt;
    va_copy(cnt, ap);
    size_t n = 1;
    while (va_arg(cnt, char *))
        n++;
    va_end(cnt);
    char *argv[n + 1];
    argv[0] = (char *)arg;
    for (size_t i = 1; i <= n; i++)
        argv[i] = va_arg(ap, char *);
    char *const *envp = has_env ? va_arg(ap, char *const *) : environ;
    return path ? execvpe(file, argv, envp) : execve(file, argv, envp);
}

COLL_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    int rc = exec_list(0, path, arg, ap, 0);
    va_end(ap);
    return rc;
}

COLL_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    int rc = exec_list(1, file, arg, ap, 0);
    va_end(ap);
    return rc;
}

COLL_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    int rc = exec_list(0, path, arg, ap, 1);
    va_end(ap);
    return rc;
}

COLL_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                            const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    launch_t c = { L_SPAWN, path, -1, argv, pid, fa, attr };
    return COLL_BLOCKING(launch(&c, envp)); /* the parent waits for the child's exec */
}

COLL_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                             const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    launch_t c = { L_SPAWNP, file, -1, argv, pid, fa, attr };
    return COLL_BLOCKING(launch(&c, envp));
}

/* ---- signals --------------------------------------------------------------------------------- */

COLL_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    interpose_resolve();
    if (!signals_owned(sig))
        return real.sigaction(sig, act, old);
    signals_prog_action(sig, act, old); /* the kernel keeps the collector's handler */
    return 0;
}

static sighandler_t signal_common(int sig, sighandler_t h, int flags)
{
    struct sigaction act, old;
    memset(&act, 0, sizeof act);
    act.sa_handler = h;
    act.sa_flags = flags;
    sigemptyset(&act.sa_mask);
    if (!(flags & SA_NODEFER))
        sigaddset(&act.sa_mask, sig);
    signals_prog_action(sig, &act, &old);
    return old.sa_handler;
}

COLL_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
    interpose_resolve();
    if (!signals_owned(sig))
        return real.signal(sig, h);
    return signal_common(sig, h, SA_RESTART);
}

COLL_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
    return signal(sig, h);
}

COLL_EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
    interpose_resolve();
    if (!signals_owned(sig))
        return real.sysv_signal(sig, h);
    return signal_common(sig, h, SA_RESETHAND | SA_NODEFER);
}

/* The program never blocks the profiling signal (a thread that did would never be sampled);
 * inside dlopen/dlclose the collector keeps it blocked whatever the program asks. What the program
 * asked is kept per thread (signals_prog_blocked) and is what it reads back: the old set it gets
 * shows the signal blocked when it blocked it (or when the kernel really has it blocked, as in a
 * handler whose sa_mask has it). */
static int mask_filtered(void)
{
    int sig = coll_proc.sig;
    return signals_owned(sig) && coll_proc.source != COLL_SRC_NONE &&
           !signals_in_core();
}

static const sigset_t *mask_filter(int how, const sigset_t *set, sigset_t *tmp)
{
    int sig = coll_proc.sig;
    if (!set || !mask_filtered())
        return set;
    if (how == SIG_SETMASK)
        signals_prog_blocked = sigismember(set, sig) == 1;
    else if (how == SIG_BLOCK && sigismember(set, sig) == 1)
        signals_prog_blocked = 1;
    else if (how == SIG_UNBLOCK && sigismember(set, sig) == 1)
        signals_prog_blocked = 0;
    if (in_dl) {
        if (how == SIG_SETMASK && !sigismember(set, sig)) {
            *tmp = *set;
            sigaddset(tmp, sig);
            return tmp;
        }
        if (how == SIG_UNBLOCK && sigismember(set, sig)) {
            *tmp = *set;
            sigdelset(tmp, sig);
            return tmp;
        }
        return set;
    }
    if ((how == SIG_BLOCK || how == SIG_SETMASK) && sigismember(set, sig)) {
        *tmp = *set;
        sigdelset(tmp, sig);
        return tmp;
    }
    return set;
}

/* The old set as the program sees it, given its view of the profiling signal before the call. */
static void mask_view(sigset_t *old, int was_blocked)
{
    if (!old)
        return;
    if (was_blocked)
        sigaddset(old, coll_proc.sig);
    else if (in_dl)
        sigdelset(old, coll_proc.sig); /* blocked by the collector, not by the program */
}

COLL_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    interpose_resolve();
    sigset_t tmp;
    int filtered = mask_filtered(), was = signals_prog_blocked;
    int rc = real.pthread_sigmask(how, mask_filter(how, set, &tmp), old);
    if (rc == 0 && filtered)
        mask_view(old, was);
    return rc;
}

COLL_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    interpose_resolve();
    sigset_t tmp;
    int filtered = mask_filtered(), was = signals_prog_blocked;
    int rc = real.sigprocmask(how, mask_filter(how, set, &tmp), old);
    if (rc == 0 && filtered)
        mask_view(old, was);
    return rc;
}

/* A thread waiting in sigsuspend runs no code: the profiling signal is kept out of the wait, where
 * its delivery would end the wait early (sigsuspend returns after any handler). glibc declares
 * the mask nonnull, so the compiler would drop a test of it for NULL (and the copy would fault):
 * the pointer is laundered first, and a NULL mask gets the kernel's EFAULT as without tally. */
COLL_EXPORT int sigsuspend(const sigset_t *mask)
{
    interpose_resolve();
    const sigset_t *given = mask;
    __asm__("" : "+r"(given)); /* the compiler knows nothing of it now */
    if (!given || !mask_filtered())
        return COLL_BLOCKING(real.sigsuspend(given));
    sigset_t m = *given;
    sigaddset(&m, coll_proc.sig);
    return COLL_BLOCKING(real.sigsuspend(&m));
}

/* ---- namespaces ------------------------------------------------------------------------------ */

/* Entering a user namespace (unshare, setns) needs a single-threaded process: the collector's
 * sampler thread is ended for the call and started again after it. */
COLL_EXPORT int unshare(int flags)
{
    int was = active() ? sampler_suspend(&coll_proc) : 0;
    int rc = real.unshare ? real.unshare(flags) : (errno = ENOSYS, -1);
    int saved = errno;
    if (was)
        sampler_start(&coll_proc);
    errno = saved;
    return rc;
}

COLL_EXPORT int setns(int fd, int nstype)
{
    int was = active() ? sampler_suspend(&coll_proc) : 0;
    int rc = real.setns ? real.setns(fd, nstype) : (errno = ENOSYS, -1);
    int saved = errno;
    if (was)
        sampler_start(&coll_proc);
    errno = saved;
    return rc;
}
