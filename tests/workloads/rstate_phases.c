/*
 * rstate_phases.c - a thread that changes its runtime state (the collector API's set_state) in
 * step with the thread-state sampler: on an absolute 10 ms grid it sleeps in state phase_a (metric
 * phasea) for the first A ms of each step and in state phase_b (phaseb) for the rest, so a look
 * made at the same point of every step always finds it in the same state. Each look's period
 * holds time in both states, which the sampler must share by the thread's time in each
 * (tests/e2e/rstate_split.py).
 *
 * Usage: rstate_phases [steps [A_ms]] (default 150 steps, A = 7 ms). Prints on stdout the wall time
 * it measured in each state:
 *     phases a_ns <a> b_ns <b>
 * Without tally (no collector API) it runs the same and prints the same line.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tally_collector_api.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
    struct timespec ts = { (time_t)(t / 1000000000u), (long)(t % 1000000000u) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 150;
    uint64_t a_ms = argc > 2 ? strtoull(argv[2], NULL, 10) : 7;
    if (steps < 1 || a_ms < 1 || a_ms > 9)
        return 2;
    typedef const tally_collector_api_v1_t *(*get_fn)(void);
    get_fn get = (get_fn)dlsym(RTLD_DEFAULT, TALLY_COLLECTOR_API_V1_SYMBOL);
    const tally_collector_api_v1_t *api = get ? get() : NULL;
    int ka = -1, kb = -1;
    if (api && api->version == 1 && api->size >= sizeof *api) {
        static const char *const ma[] = { "phasea" }, *const mb[] = { "phaseb" };
        api->declare_metric("phasea", "Phase A Time", NULL, 1);
        api->declare_metric("phaseb", "Phase B Time", NULL, 1);
        ka = api->declare_kind("phase_a", ma, 1);
        kb = api->declare_kind("phase_b", mb, 1);
    } else {
        api = NULL;
    }
    uint64_t a = 0, b = 0, grid = (now_ns() / 10000000u + 1) * 10000000u;
    sleep_until(grid);
    for (int i = 0; i < steps; i++, grid += 10000000u) {
        uint64_t t0 = now_ns();
        if (api)
            api->set_state(ka);
        sleep_until(grid + a_ms * 1000000u);
        uint64_t t1 = now_ns();
        if (api)
            api->set_state(kb);
        sleep_until(grid + 10000000u);
        uint64_t t2 = now_ns();
        a += t1 - t0;
        b += t2 - t1;
    }
    if (api)
        api->set_state(-1);
    printf("phases a_ns %llu b_ns %llu\n", (unsigned long long)a, (unsigned long long)b);
    return 0;
}
