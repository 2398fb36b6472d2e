/*
 * blocks_finstr.c - built with -finstrument-functions: every function is a profiled block under
 * tally collect (named from the symbol table). With the selective file of tests/e2e/blocks.py
 * (exclude helper and skip_#) those are absent and their time is their caller's exclusive.
 *
 *   main -> work -> helper -> leaf(1)      10 ms asleep in leaf under helper
 *               -> skip_a -> leaf(1)       10 ms
 *               -> skip_b                  5 ms of CPU (spin)
 *               -> leaf(2)                 20 ms
 *        -> spin(5)                        50 ms of CPU
 *
 * Prints `span NAME SECONDS` for work and spin (CLOCK_MONOTONIC) and `cpu spin SECONDS`.
 */
#include <stdio.h>
#include <time.h>

static double clk(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void leaf(int units)
{
    struct timespec ts = { 0, units * 10 * 1000000L };
    while (nanosleep(&ts, &ts))
        ;
}

__attribute__((noinline)) void spin(int units)
{
    double end = clk(CLOCK_THREAD_CPUTIME_ID) + units * 0.010;
    volatile unsigned x = 0;
    while (clk(CLOCK_THREAD_CPUTIME_ID) < end)
        for (int i = 0; i < 1000; i++)
            x += (unsigned)i;
}

__attribute__((noinline)) void helper(void) { leaf(1); }
__attribute__((noinline)) void skip_a(int u) { leaf(u); }
__attribute__((noinline)) void skip_b(int u) { spin(u); }

__attribute__((noinline)) void work(void)
{
    helper();
    skip_a(1);
    skip_b(0);
    leaf(2);
}

int main(void)
{
    double t0 = clk(CLOCK_MONOTONIC);
    work();
    double t1 = clk(CLOCK_MONOTONIC), c1 = clk(CLOCK_THREAD_CPUTIME_ID);
    spin(5);
    double t2 = clk(CLOCK_MONOTONIC), c2 = clk(CLOCK_THREAD_CPUTIME_ID);
    printf("span work %.6f\nspan spin %.6f\ncpu spin %.6f\n", t1 - t0, t2 - t1, c2 - c1);
    return 0;
}
