/*
 * export_inl.h - the always-inlined helper of export_inl.c, in a file of its own: its lines are
 * in another file than the functions it is inlined into (callgrind's fi=/fe=).
 */
#ifndef EXPORT_INL_H
#define EXPORT_INL_H

double tick(double x); /* not inlined: a call made from the inlined lines */

static inline __attribute__((always_inline)) double churn(double x, long n)
{
    for (long i = 0; i < n; i++)
        x = x * 1.0000001 + (double)(i & 15); /* the hot line */
    return tick(x);
}

#endif
