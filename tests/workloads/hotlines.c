/*
 * hotlines.c - known hot lines and instructions: a loop nest in nest() where one line (a division,
 * marked "the hot line") does most of the work, and lib_work() in a shared library (hotlib.c)
 * with a hot line of its own. nest() runs for 3/5 of the time, lib_work() for 2/5, both measured
 * in CPU time. Built with DWARF 5 (gcc's default) and, as wl_hotlines_dw4, with DWARF 4.
 * Usage: wl_hotlines [seconds] (default 0.6).
 */
#include <stdlib.h>
#include <time.h>

#define FN __attribute__((noinline, noclone))

double lib_work(long n);
static volatile double sink;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

FN double nest(long n)
{
    double s = 0;
    for (long i = 0; i < n; i++) {
        double t = (double)i * 0.5;
        for (long j = 1; j < 16; j++)
            s = s * 0.999 + t / (s + (double)j) + 1.0 / (s + 2.0); /* the hot line */
    }
    return s;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 0.6, t0 = cpu_now();
    while (cpu_now() - t0 < secs * 3 / 5)
        sink += nest(500);
    t0 = cpu_now();
    while (cpu_now() - t0 < secs * 2 / 5)
        sink += lib_work(100000);
    return 0;
}
