/*
 * satadd.h - saturating 64-bit sums: a metric that would wrap around stays at UINT64_MAX, and the
 * caller learns it happened (to say so) instead of showing a small number.
 *
 * Header-only, depends on nothing, async-signal-safe (pure).
 */
#ifndef TALLY_BASE_SATADD_H
#define TALLY_BASE_SATADD_H

#include <stdint.h>

/* *acc += v, saturating; returns 1 when it saturated, else 0. */
static inline int sat_add_to(uint64_t *acc, uint64_t v)
{
    if (__builtin_add_overflow(*acc, v, acc)) {
        *acc = UINT64_MAX;
        return 1;
    }
    return 0;
}

#endif
