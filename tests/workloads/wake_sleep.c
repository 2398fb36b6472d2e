/*
 * wake_sleep.c - a thread that wakes often: n times (default 100) it sleeps 35 ms in nanosleep
 * and burns 3 ms of CPU, all inside the function sleeper; it prints the wall time of the whole
 * loop by its own clock: "loop_ns <ns>". For the sampler's accounting of sleeps that end
 * between two of its looks (tests/e2e/states_wake.py).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned long long ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static volatile unsigned long sink;

static __attribute__((noinline)) void sleeper(int n)
{
    for (int i = 0; i < n; i++) {
        struct timespec d = { 0, 35000000 };
        nanosleep(&d, NULL);
        unsigned long long end = ns(CLOCK_THREAD_CPUTIME_ID) + 3000000;
        while (ns(CLOCK_THREAD_CPUTIME_ID) < end)
            sink++;
    }
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;
    unsigned long long t0 = ns(CLOCK_MONOTONIC);
    sleeper(n);
    printf("loop_ns %llu\n", ns(CLOCK_MONOTONIC) - t0);
    return 0;
}
