/*
 * clock_mech.c - what each clock-sampling mechanism costs a thread by itself, without tally:
 * the kernel's side (a perf event's context switches, a signal per sample) apart from what a
 * profiler does in its handler (here: one read of the thread's CPU clock, as tally's handler).
 *
 *   bench_clock_mech busy MODE ITERATIONS       one CPU-bound thread, 1 ms interval
 *   bench_clock_mech sleepers MODE SECONDS N    N threads waking every ms, 10 ms interval
 *
 * MODE: none; task-clock (perf event, real-time signal, PERF_EVENT_IOC_REFRESH 1 per sample);
 * task-clock-batched (the same, REFRESH 8 at a time); ring-only (the event writes its ring and
 * sends nothing, as perf record does); sigtrap (perf_event_attr.sigtrap: SIGTRAP sent on the
 * return to user mode, no IPI, no ioctl); cputime-timer (timer_create(CLOCK_THREAD_CPUTIME_ID)).
 * Prints the process's CPU time and the signals taken; compare modes run alike, interleaved,
 * taking the least CPU time of several runs (on a shared machine noise only adds).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { NONE, TASK_CLOCK, BATCHED, RING_ONLY, SIGTRAP_MODE, TIMER };
static const char *const names[] = { "none", "task-clock", "task-clock-batched", "ring-only",
                                     "sigtrap", "cputime-timer" };
static int mode;
static long period_ns;
static long nsig;
static __thread int ev_fd = -1, credit;
static double secs;
static volatile double sink;

static void handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si, (void)uc;
    __atomic_add_fetch(&nsig, 1, __ATOMIC_RELAXED);
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    if (mode == TASK_CLOCK)
        ioctl(ev_fd, PERF_EVENT_IOC_REFRESH, 1);
    if (mode == BATCHED && --credit <= 8) {
        ioctl(ev_fd, PERF_EVENT_IOC_REFRESH, 16 - credit);
        credit = 16;
    }
}

static void setup(void)
{
    pid_t tid = (pid_t)syscall(SYS_gettid);
    if (mode == TIMER) {
        struct sigevent se;
        memset(&se, 0, sizeof se);
        se.sigev_notify = SIGEV_THREAD_ID;
        se.sigev_signo = SIGRTMAX - 4;
        se._sigev_un._tid = tid;
        int id;
        struct itimerspec its = { { 0, period_ns }, { 0, period_ns } };
        if (syscall(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, &se, &id) < 0 ||
            syscall(SYS_timer_settime, id, 0, &its, NULL) < 0)
            exit(3);
        return;
    }
    if (mode == NONE)
        return;
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = (unsigned long long)period_ns;
    a.sample_type = PERF_SAMPLE_IP;
    a.disabled = 1;
    a.exclude_hv = 1;
    a.wakeup_events = mode == TASK_CLOCK || mode == BATCHED ? 1 : 1000000;
    if (mode == SIGTRAP_MODE) {
        a.sigtrap = 1;
        a.remove_on_exec = 1;
    }
    ev_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (ev_fd < 0 || mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ev_fd, 0) ==
                         MAP_FAILED)
        exit(3);
    if (mode == TASK_CLOCK || mode == BATCHED) {
        struct f_owner_ex o = { F_OWNER_TID, tid };
        fcntl(ev_fd, F_SETFL, O_ASYNC | O_NONBLOCK);
        fcntl(ev_fd, F_SETSIG, SIGRTMAX - 4);
        fcntl(ev_fd, F_SETOWN_EX, &o);
        ioctl(ev_fd, PERF_EVENT_IOC_REFRESH, 16);
        credit = 16;
    } else {
        ioctl(ev_fd, PERF_EVENT_IOC_ENABLE, 0);
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *sleeper(void *arg)
{
    setup();
    double end = now() + secs;
    struct timespec ms = { 0, 1000000 };
    while (now() < end) {
        double x = 0;
        for (int i = 0; i < 20000; i++)
            x += (double)(i & 7);
        sink += x;
        nanosleep(&ms, NULL);
    }
    return arg;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    mode = -1;
    for (int i = 0; i < 6; i++)
        if (!strcmp(argv[2], names[i]))
            mode = i;
    if (mode < 0)
        return 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGRTMAX - 4, &sa, NULL);
    sigaction(SIGTRAP, &sa, NULL);
    if (!strcmp(argv[1], "busy")) {
        period_ns = 1000000;
        long n = atol(argv[3]);
        setup();
        for (long i = 0; i < n; i++)
            sink += (double)i * 0.5;
    } else if (!strcmp(argv[1], "sleepers") && argc == 5) {
        period_ns = 10000000;
        secs = atof(argv[3]);
        int n = atoi(argv[4]);
        if (n < 1 || n > 4096)
            return 2;
        pthread_t *t = calloc((size_t)n, sizeof *t);
        for (int i = 0; i < n; i++)
            if (pthread_create(&t[i], NULL, sleeper, NULL))
                return 1;
        for (int i = 0; i < n; i++)
            pthread_join(t[i], NULL);
    } else {
        return 2;
    }
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    printf("%s %s cpu=%.4f signals=%ld\n", argv[1], names[mode],
           (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, nsig);
    return 0;
}
