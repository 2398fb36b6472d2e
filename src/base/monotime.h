/*
 * monotime.h - CLOCK_MONOTONIC now, in nanoseconds: the one clock of every timestamp tally writes
 * (the driver's run times, the collector's records and log lines).
 *
 * Header-only, depends on libc only, async-signal-safe (clock_gettime is).
 */
#ifndef TALLY_BASE_MONOTIME_H
#define TALLY_BASE_MONOTIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
