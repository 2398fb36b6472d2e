/*
 * inlined.c - a hot helper that the compiler inlines into its two callers: mix() does the work
 * (always inlined) for outer_a() (2/3 of the time) and outer_b() (1/3). With inlined functions
 * shown as frames, mix is hot by name and its callers are outer_a and outer_b; folded, the time is
 * the callers' own. Usage: wl_inlined [seconds] (default 0.6).
 */
#include <stdlib.h>
#include <time.h>

#define FN __attribute__((noinline, noclone))

static volatile double sink;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline __attribute__((always_inline)) double mix(double x, long n)
{
    for (long i = 0; i < n; i++)
        x = x * 1.0000001 + (double)(i & 15); /* the hot line */
    return x;
}

FN void outer_a(double secs)
{
    double t0 = cpu_now(), x = 0;
    while (cpu_now() - t0 < secs)
        x = mix(x, 200000);
    sink += x;
}

FN void outer_b(double secs)
{
    double t0 = cpu_now(), x = 1;
    while (cpu_now() - t0 < secs)
        x = mix(x, 200000);
    sink += x;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 0.6;
    outer_a(secs * 2 / 3);
    outer_b(secs / 3);
    return 0;
}
