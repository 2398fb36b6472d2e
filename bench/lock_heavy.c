/*
 * lock_heavy.c - a lock-heavy program for bench/trace.py: N iterations of about a microsecond of
 * work followed by an uncontended pthread_mutex_lock/unlock pair, so about a million pairs per
 * second. Prints its own time and rate on stderr:
 *   lock_heavy pairs=N seconds=S pairs_per_second=R
 * Usage: bench_lock_heavy [pairs=2000000] [work=850].
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long shared;

__attribute__((noinline)) static unsigned long work(long w, unsigned long x)
{
    for (long k = 0; k < w; k++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    return x;
}

__attribute__((noinline)) static void update(unsigned long v)
{
    pthread_mutex_lock(&m);
    shared += v;
    pthread_mutex_unlock(&m);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000, w = argc > 2 ? atol(argv[2]) : 850;
    struct timespec a, b;
    unsigned long x = 1;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        x = work(w, x);
        update(x & 0xff);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    fprintf(stderr, "lock_heavy pairs=%ld seconds=%.6f pairs_per_second=%.0f\n", n, s, (double)n / s);
    return 0;
}
