/*
 * mref_cost.c - what dataspace data adds to a clock sample in the profiling handler: taking the
 * memory reference from a ucontext (collector/mref.h) and writing its MEMREF record into a
 * stream of a real events file (evwriter), exactly as clock.c does; against the CLOCK record the
 * sample writes anyway. Prints ns per sample of each, best of 5 rounds of 200000.
 * Usage: mref_cost DIR (a directory for the scratch events file).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "collector/mref.h"
#include "experiment/evwriter.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/events", argv[1]);
    exp_evfile_t f;
    if (exp_evfile_create(&f, path, (uint32_t)getpid(), 1, 65536))
        return 1;
    exp_stream_t s;
    exp_stream_init(&s, &f, 1);
    ucontext_t uc;
    getcontext(&uc);
    uint64_t pcs[8] = { 0x401000, 0x402000, 0x403000 };
    uint32_t id;
    if (exp_stream_stack(&s, pcs, 3, 0, &id))
        return 1;
    enum { N = 200000 };
    double best_clock = 1e18, best_mref = 1e18;
    uint64_t t = 1000;
    for (int round = 0; round < 5; round++) {
        double a = now();
        for (int i = 0; i < N; i++)
            exp_stream_clock(&s, t += 1000000, id, 0, 1000000);
        double b = now();
        for (int i = 0; i < N; i++) {
            exp_memref_t m;
            uc.uc_mcontext.gregs[REG_RIP] += 4; /* varying values, as real samples have */
            uc.uc_mcontext.gregs[REG_RAX] += 64;
            mref_from_ucontext(&uc, 0, &m);
            exp_stream_memref(&s, t, id, 1000000, &m);
        }
        double c = now();
        if ((b - a) / N < best_clock)
            best_clock = (b - a) / N;
        if ((c - b) / N < best_mref)
            best_mref = (c - b) / N;
    }
    exp_stream_finish(&s, t);
    exp_evfile_close(&f);
    printf("clock_record_ns %.1f\nmref_ns %.1f\n", best_clock, best_mref);
    return 0;
}
