/*
 * recursion.c - the recursion cases of the metric specification, as a real program:
 *   direct(n)   calls itself n times and does all its work in the final call;
 *   ping/pong   call each other, the work in the final pong;
 *   start()     the initiating function of direct, with no work of its own.
 * Usage: wl_recursion [seconds per case] (default 0.5). Each case burns that much CPU time.
 */
#define _GNU_SOURCE
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

FN static void burn(double secs)
{
    double t0 = cpu_now(), x = 0;
    while (cpu_now() - t0 < secs)
        for (int i = 0; i < 200000; i++)
            x += (double)(i & 7);
    sink += x;
}

FN int direct(int n, double secs)
{
    if (n == 0) {
        double t0 = cpu_now(), x = 0;
        while (cpu_now() - t0 < secs) /* the work itself, inline: direct's exclusive time */
            for (int i = 0; i < 200000; i++)
                x += (double)(i & 7);
        sink += x;
        return 0;
    }
    return direct(n - 1, secs) + 1; /* not a tail call: every level stays on the stack */
}

FN int pong(int n, double secs);
FN int ping(int n, double secs) { return pong(n - 1, secs) + 1; }
FN int pong(int n, double secs)
{
    if (n <= 0) {
        burn(secs);
        return 0;
    }
    return ping(n - 1, secs) + 1;
}

FN int start(double secs) { return direct(20, secs) + 1; }

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 0.5;
    int r = start(secs);
    r += ping(21, secs);
    return r > 0 ? 0 : 1;
}
