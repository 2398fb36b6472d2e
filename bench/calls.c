/*
 * calls.c - a call-heavy program for bench/blocks.py: N calls of a small leaf function, timed by
 * the program itself (CLOCK_MONOTONIC around the loop, so the tools' start and end are not in
 * it). Built several ways: plain, -finstrument-functions (every function a block under tally),
 * -pg (gprof, uftrace), and with -DAPI (the leaf is a tally_start/tally_stop block).
 *
 *   calls loop N        N leaf calls; prints "ns_per_call X calls N"
 *   calls tsc N         N reads of the TSC; prints "ns_per_tsc X" (what a time stamp costs)
 *   calls monitor K D   D nested blocks (tally_start), then K monitor points; prints
 *                       "ns_per_monitor X depth D" (API builds only)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef API
#include "tally.h"
#endif

static double clk(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double now(void)
{
    return clk(CLOCK_MONOTONIC);
}

__attribute__((noinline)) unsigned leaf(unsigned x)
{
#ifdef API
    tally_start("leaf");
#endif
    unsigned r = (x * 2654435761u) >> 7;
    __asm__ volatile("" : "+r"(r));
#ifdef API
    tally_stop("leaf");
#endif
    return r;
}

#ifdef API
static const char *names[1024];

static void monitor(long k, int depth)
{
    for (int i = 0; i < depth; i++) {
        char *n = malloc(16);
        snprintf(n, 16, "level%d", i);
        names[i] = n;
        tally_start(n);
    }
    tally_monitor("warm");
    double t0 = now(), c0 = clk(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < k; i++)
        tally_monitor("m");
    double t1 = now(), c1 = clk(CLOCK_THREAD_CPUTIME_ID);
    for (int i = depth; i-- > 0;)
        tally_stop(names[i]);
    printf("ns_per_monitor %.1f cpu_ns_per_monitor %.1f depth %d\n", (t1 - t0) / (double)k,
           (c1 - c0) / (double)k, depth);
}
#endif

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "loop";
    if (!strcmp(mode, "loop")) {
        long n = argc > 2 ? atol(argv[2]) : 20000000;
        unsigned acc = 0;
        for (long i = 0; i < 1000; i++) /* warm up: first calls name the block */
            acc += leaf((unsigned)i);
        double t0 = now(), c0 = clk(CLOCK_THREAD_CPUTIME_ID);
        for (long i = 0; i < n; i++)
            acc += leaf((unsigned)i);
        double t1 = now(), c1 = clk(CLOCK_THREAD_CPUTIME_ID);
        printf("ns_per_call %.2f cpu_ns_per_call %.2f calls %ld acc %u\n", (t1 - t0) / (double)n,
               (c1 - c0) / (double)n, n, acc);
        return 0;
    }
    if (!strcmp(mode, "tsc")) {
        long n = argc > 2 ? atol(argv[2]) : 10000000;
        unsigned long long s = 0;
        double c0 = clk(CLOCK_THREAD_CPUTIME_ID);
        for (long i = 0; i < n; i++)
            s += __builtin_ia32_rdtsc();
        double c1 = clk(CLOCK_THREAD_CPUTIME_ID);
        printf("ns_per_tsc %.2f (%llu)\n", (c1 - c0) / (double)n, s & 1);
        return 0;
    }
#ifdef API
    if (!strcmp(mode, "monitor")) {
        monitor(argc > 2 ? atol(argv[2]) : 10000, argc > 3 ? atoi(argv[3]) : 100);
        return 0;
    }
#endif
    fprintf(stderr, "usage: calls loop N | monitor K DEPTH\n");
    return 2;
}
