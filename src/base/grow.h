/*
 * grow.h - the one way an array grows: to twice its capacity (at least 8), with the size checked
 * for overflow.
 *
 *     if (GROW(rows, n, cap)) return TALLY_ENOMEM;
 *     rows[n++] = row;
 *
 * Header-only, depends on the C library. Not async-signal-safe (realloc). On failure the array
 * and its capacity are left as they were.
 */
#ifndef TALLY_BASE_GROW_H
#define TALLY_BASE_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "err.h"

/* Makes room for element n of *arr (capacity *cap, elements of elem bytes): 0 or TALLY_ENOMEM. */
static inline int base_grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? 2 * *cap : 8;
    if (ncap <= n)
        ncap = n + 1;
    if (ncap > SIZE_MAX / elem)
        return TALLY_ENOMEM;
    void *q = realloc(*arr, ncap * elem);
    if (!q)
        return TALLY_ENOMEM;
    *arr = q;
    *cap = ncap;
    return 0;
}

#define GROW(arr, n, cap) base_grow((void **)&(arr), &(cap), (n), sizeof *(arr))

#endif
