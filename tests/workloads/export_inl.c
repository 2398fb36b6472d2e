/*
 * export_inl.c - code inlined from a header (export_inl.h: churn, always inlined) into two
 * functions, and a call made from those inlined lines (tick). For tally export's callgrind test:
 * with -inlines off the functions' costs are in two files (fi=/fe=), with -inlines on churn is a
 * function of its own. Usage: wl_export_inl [seconds] (default 0.3).
 */
#include <stdlib.h>
#include <time.h>

#include "export_inl.h"

#define FN __attribute__((noinline, noclone))

static volatile double sink;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

FN double tick(double x)
{
    for (int i = 0; i < 20000; i++)
        x = x * 0.9999999 + 1.0;
    return x;
}

FN void left(double secs)
{
    double t0 = cpu_now(), x = 0;
    while (cpu_now() - t0 < secs)
        x = churn(x, 100000);
    sink += x;
}

FN void right(double secs)
{
    double t0 = cpu_now(), x = 1;
    while (cpu_now() - t0 < secs)
        x = churn(x, 100000);
    sink += x;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 0.3;
    left(secs / 2);
    right(secs / 2);
    return 0;
}
