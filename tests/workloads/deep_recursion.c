/*
 * deep_recursion.c - recursion 10,000 frames deep (default) with the CPU time spent at the
 * bottom, so nearly every sample sees a stack deeper than the collector's maximum depth.
 * Usage: wl_deep_recursion [depth] [seconds]. Prints "depth=N ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;
static double secs = 0.5;

__attribute__((noinline)) static void bottom(void)
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

__attribute__((noinline)) static int recurse(int n)
{
    volatile char pad[64]; /* a real frame, not a loop in disguise */
    pad[0] = (char)n;
    if (n == 0)
        bottom();
    else
        recurse(n - 1);
    return pad[0];
}

int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 10000;
    if (argc > 2)
        secs = atof(argv[2]);
    recurse(depth);
    printf("depth=%d ok\n", depth);
    return 0;
}
