/*
 * grow.h - the one way an array grows: to twice its capacity (at least 8), with the size checked
 * for overflow.
 *
 *     if (GROW(rows, n, cap)) return TALLY_ENOMEM;
 *     rows[n++] = row;
 *
 * Arrays that grow together (parallel arrays with one capacity) grow each from a copy of the
 * capacity, which is stored once every one has grown. Vectors of a run-time width grow by an
 * element of w values (GROW_W); GROW_ZERO and GROW_W_ZERO zero the elements they add.
 *
 * Header-only, depends on the C library. Not async-signal-safe (realloc). On failure the array
 * and its capacity are left as they were.
 */
#ifndef TALLY_BASE_GROW_H
#define TALLY_BASE_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

/* Makes room for element n of *arr (capacity *cap, elements of elem bytes): 0 or TALLY_ENOMEM. */
static inline int base_grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? 2 * *cap : 8;
    if (ncap <= n)
        ncap = n + 1;
    if (!elem || ncap > SIZE_MAX / elem)
        return TALLY_ENOMEM;
    void *q = realloc(*arr, ncap * elem);
    if (!q)
        return TALLY_ENOMEM;
    *arr = q;
    *cap = ncap;
    return 0;
}

/* base_grow, and the elements added (from the old capacity to the new) are zeroed. */
static inline int base_grow_zero(void **arr, size_t *cap, size_t n, size_t elem)
{
    size_t old = *cap;
    if (base_grow(arr, cap, n, elem))
        return TALLY_ENOMEM;
    if (*cap > old)
        memset((char *)*arr + old * elem, 0, (*cap - old) * elem);
    return 0;
}

/* The element size of arr times w, 0 (refused by base_grow) when that overflows. */
static inline size_t base_grow_width(size_t elem, size_t w)
{
    return w && elem > SIZE_MAX / w ? 0 : elem * (w ? w : 1);
}

#define GROW(arr, n, cap) base_grow((void **)&(arr), &(cap), (n), sizeof *(arr))
#define GROW_ZERO(arr, n, cap) base_grow_zero((void **)&(arr), &(cap), (n), sizeof *(arr))
/* elements of w values each: room for element n, i.e. values [n * w, (n + 1) * w) */
#define GROW_W(arr, n, cap, w)                                                                     \
    base_grow((void **)&(arr), &(cap), (n), base_grow_width(sizeof *(arr), (w)))
#define GROW_W_ZERO(arr, n, cap, w)                                                                \
    base_grow_zero((void **)&(arr), &(cap), (n), base_grow_width(sizeof *(arr), (w)))

#endif
