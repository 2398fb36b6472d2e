/*
 * own_sigprof.c - a program that uses the signals a profiler might: its own ITIMER_PROF with a
 * SIGPROF handler (it counts its ticks), a handler for SIGRTMAX-4 (the collector's default
 * profiling signal) that it raises itself, a long stretch with every signal blocked, and errno
 * that must survive every signal. Usage: wl_own_sigprof [seconds] (default 1). Prints
 * "ticks=N unblocked_us=U rt=M errno=ok|BAD view=ok|BAD mask=ok|BAD": N SIGPROF ticks while the
 * process used U us of CPU with SIGPROF unblocked (its own measurement, CLOCK_PROCESS_CPUTIME_ID).
 * ITIMER_PROF is checked on the kernel's ticks, so N depends on how the scheduler meets the
 * program (more so under load); a test can only bound it by U: at most one tick per 1 ms interval
 * (plus the one left pending by the blocked stretch), and at least one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t ticks, rt_count;
static volatile double sink;

static void on_prof(int sig)
{
    (void)sig;
    ticks++;
    errno = EDOM; /* a careless handler: the interrupted code must still see its own errno */
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code == SI_TKILL || si->si_code == SI_USER || si->si_code == SI_QUEUE)
        rt_count++;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static int spin(double secs)
{
    int bad = 0;
    double t0 = cpu_seconds(), x = 0;
    while (cpu_seconds() - t0 < secs) {
        errno = ERANGE;
        for (int i = 0; i < 20000; i++)
            x += (double)(i & 7);
        if (errno != ERANGE)
            bad++;
    }
    sink += x;
    return bad;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct sigaction rt;
    memset(&rt, 0, sizeof rt);
    rt.sa_sigaction = on_rt;
    rt.sa_flags = SA_SIGINFO;
    sigaction(SIGRTMAX - 4, &rt, NULL);
    struct sigaction back;
    sigaction(SIGRTMAX - 4, NULL, &back);
    int view_ok = back.sa_sigaction == on_rt;

    struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
    double c0 = cpu_seconds();
    setitimer(ITIMER_PROF, &it, NULL);
    int bad = spin(secs / 2);
    double unblocked = cpu_seconds() - c0;
    for (int i = 0; i < 3; i++)
        raise(SIGRTMAX - 4);
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    bad += spin(secs / 2); /* no SIGPROF ticks are delivered here; they stay pending */
    sigprocmask(SIG_SETMASK, &old, NULL);
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_PROF, &off, NULL);
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    printf("ticks=%d unblocked_us=%.0f rt=%d errno=%s view=%s mask=%s\n", ticks, unblocked * 1e6,
           rt_count, bad ? "BAD" : "ok",
           view_ok ? "ok" : "BAD", sigismember(&now, SIGPROF) ? "BAD" : "ok");
    return 0;
}
