/*
 * crash.c - does some work, then ends badly. Usage: wl_crash [mode] [seconds], mode:
 *   segv     (default) writes through a null pointer: dies of SIGSEGV
 *   abort    calls abort(): dies of SIGABRT
 *   handler  installs its own SIGSEGV handler that reports, restores the default and returns,
 *            so the faulting write runs again and the program dies of SIGSEGV
 *   recover  its own SIGSEGV handler siglongjmps back: the program survives and exits 3
 *   _exit    leaves through _exit(7), skipping exit handlers
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;
static int *volatile null_ptr; /* stays NULL */
static sigjmp_buf env;

__attribute__((noinline)) static void work(double secs)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    double t0 = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, t;
    do {
        for (int i = 0; i < 100000; i++)
            sink += (double)(i & 3);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    } while (t - t0 < secs);
}

static void on_segv_report(int sig)
{
    static const char m[] = "crash: own handler ran\n";
    if (write(2, m, sizeof m - 1) < 0) {
    }
    signal(sig, SIG_DFL);
}

static void on_segv_recover(int sig)
{
    (void)sig;
    siglongjmp(env, 1);
}

__attribute__((noinline)) static void fault(void)
{
    *null_ptr = 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "segv";
    work(argc > 2 ? atof(argv[2]) : 0.3);
    fflush(stdout);
    if (!strcmp(mode, "abort"))
        abort();
    if (!strcmp(mode, "_exit"))
        _exit(7);
    if (!strcmp(mode, "handler"))
        signal(SIGSEGV, on_segv_report);
    if (!strcmp(mode, "recover")) {
        signal(SIGSEGV, on_segv_recover);
        if (sigsetjmp(env, 1)) {
            printf("recovered\n");
            return 3;
        }
    }
    fault();
    return 0;
}
