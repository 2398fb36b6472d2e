/*
 * reuse_lib.c - a library built twice, as libwl_reuse_a.so (REUSE_WORK=reuse_a_work) and
 * libwl_reuse_b.so (reuse_b_work): the same code and size, other names and build-ids, so that
 * one loaded after the other is unloaded lands at the same addresses (tests/e2e/load_reuse.py).
 */
#include <time.h>

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Spins for `seconds` of this thread's CPU time; returns the CPU time it really took. */
double REUSE_WORK(double seconds)
{
    volatile double x = 1.0;
    double t0 = cpu_now(), t;
    do {
        for (int i = 0; i < 100000; i++)
            x = x * 1.0000001 + 1e-9;
        t = cpu_now();
    } while (t - t0 < seconds);
    return t - t0;
}
