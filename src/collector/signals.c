/*
 * signals.c - the signals the collector owns; see signals.h.
 *
 * Everything reachable from prof_handler() and fatal_handler() uses system calls and the
 * AS-safe functions of the collector only: no malloc, no locks, no stdio.
 */
#define _GNU_SOURCE
#include "signals.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "source.h"
#include "threads.h"
#include "unwind.h"

#define PRIME_MAGIC 0x7a11b1d5

/* > 0 while the thread runs the collector's own signal-sensitive code (the handler, a priming
 * unwind): libunwind then blocks signals around its locks and must get what it asks for. */
static __thread int in_core __attribute__((tls_model("initial-exec")));
__thread int signals_prog_blocked __attribute__((tls_model("initial-exec")));

/* The program's view of the signals the collector owns. */
static struct sigaction prog_act[_NSIG];
static volatile sig_atomic_t owned[_NSIG];

static const int fatal_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS };

int (*signals_real_sigmask)(int, const sigset_t *, sigset_t *);
int (*signals_real_sigaction)(int, const struct sigaction *, struct sigaction *);

/* ---- the program's disposition --------------------------------------------------------------- */

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
    signals_real_sigmask(SIG_BLOCK, &m, NULL); /* sigreturn restores the interrupted mask */
    int was = signals_prog_blocked;
    if (sigismember(&pa.sa_mask, coll_proc.sig) == 1 || sig == coll_proc.sig)
        signals_prog_blocked = 1; /* the program's view inside its handler */
    if (pa.sa_flags & SA_SIGINFO)
        pa.sa_sigaction(sig, si, uc);
    else
        pa.sa_handler(sig);
    signals_prog_blocked = was;
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
    signals_real_sigaction(sig, &dfl, NULL);
    int fault = si->si_code > 0 && si->si_code != SI_KERNEL &&
                (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL);
    if (!fault) /* delivered when the handler returns and the mask is restored */
        syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), sig);
    /* a fault re-executes the faulting instruction and dies with its own siginfo */
}

/* ---- the profiling signal -------------------------------------------------------------------- */

static void prof_handler(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    coll_thread_t *t = &coll_thr;
    in_core++;
    if (si->si_code == SI_QUEUE && si->si_value.sival_int == PRIME_MAGIC &&
        si->si_pid == getpid() && t->scratch) {
        /* signals_prime: the dynamic linker resolves what unwinding through a signal frame calls
         * now, on the thread's own stack, not later on a small one */
        uint32_t flags;
        unwind_stack(ucv, t->scratch, t->pcs, coll_proc.max_depth, &flags);
    } else {
        int r = sources_overflow(&coll_proc, t, si, ucv);
        /* not a live event of a source: the program's own use of the signal (its handler, or the
         * default action unless the delivery looks like a source's stale one) */
        if (r != 2 && !run_prog_handler(sig, si, ucv) && r == 0)
            die_by_default(sig, si);
    }
    in_core--;
    errno = saved;
}

int signals_own_profiling(coll_proc_t *p)
{
    if (p->sig <= 0 || p->sig >= _NSIG)
        return -1;
    if (owned[p->sig])
        return 0;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = prof_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (signals_real_sigaction(p->sig, NULL, &old) < 0 ||
        signals_real_sigaction(p->sig, &sa, NULL) < 0)
        return -1;
    prog_act[p->sig] = old;
    owned[p->sig] = 1;
    return 0;
}

void signals_prime(coll_proc_t *p)
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
    syscall(SYS_rt_tgsigqueueinfo, getpid(), coll_thr.tid, p->sig, &si);
}

/* ---- blocking, the program's view ------------------------------------------------------------ */

void signals_block(coll_proc_t *p, sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, p->sig);
    signals_real_sigmask(SIG_BLOCK, &s, old);
}

void signals_unblock(const sigset_t *old)
{
    signals_real_sigmask(SIG_SETMASK, old, NULL);
}

int signals_in_core(void)
{
    return in_core;
}

void signals_core_enter(void)
{
    in_core++;
}

void signals_core_leave(void)
{
    in_core--;
}

int signals_owned(int sig)
{
    return sig > 0 && sig < _NSIG && owned[sig];
}

void signals_prog_action(int sig, const struct sigaction *act, struct sigaction *old)
{
    struct sigaction prev = prog_act[sig];
    if (act)
        prog_act[sig] = *act;
    if (old)
        *old = prev;
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

void signals_install_fatal(coll_proc_t *p)
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
        if (signals_real_sigaction(sig, NULL, &old) < 0)
            continue;
        prog_act[sig] = old;
        if (signals_real_sigaction(sig, &sa, NULL) == 0)
            owned[sig] = 1;
    }
}
