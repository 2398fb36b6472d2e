/*
 * sleep_spin.c - a thread that sleeps and runs in turns (sleep S ms, then spin on the CPU for R
 * ms), so the thread-state sampler's looks often find it running just after a sleep: the sleep
 * that ended within the look's period must still be charged (tests/e2e/states_carry.py).
 *
 * Usage: sleep_spin [steps [S_ms [R_ms]]] (default 200 steps, S = 4, R = 4). Prints on stdout the
 * thread's own measures of the loop: its wall time, its CPU time (CLOCK_THREAD_CPUTIME_ID) and the
 * wall time inside nanosleep:
 *     sleep_spin wall_ns <w> cpu_ns <c> sleep_ns <s>
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 200;
    uint64_t s_ns = (uint64_t)(argc > 2 ? atoi(argv[2]) : 4) * 1000000u;
    uint64_t r_ns = (uint64_t)(argc > 3 ? atoi(argv[3]) : 4) * 1000000u;
    uint64_t w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), slept = 0;
    volatile uint64_t sink = 0;
    for (int i = 0; i < steps; i++) {
        struct timespec ts = { 0, (long)s_ns };
        uint64_t t = clock_ns(CLOCK_MONOTONIC);
        nanosleep(&ts, NULL);
        slept += clock_ns(CLOCK_MONOTONIC) - t;
        uint64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + r_ns;
        while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
            sink += 1;
    }
    printf("sleep_spin wall_ns %llu cpu_ns %llu sleep_ns %llu\n",
           (unsigned long long)(clock_ns(CLOCK_MONOTONIC) - w0),
           (unsigned long long)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0),
           (unsigned long long)slept);
    return (int)(sink & 0);
}
