/*
 * sleepers.c - many threads that mostly sleep: each wakes every millisecond, works ~20 us, and
 * sleeps again, for the given seconds. The worst case for thread-state sampling (many threads,
 * blocked stacks changing all the time). Usage: bench_sleepers [seconds=3] [threads=64]
 * [nap_ms=1].
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double secs = 3;
static long nap_ns = 1000000;
static volatile double sink;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void work(void)
{
    double x = 0;
    for (int i = 0; i < 20000; i++)
        x += (double)(i & 7);
    sink += x;
}

static void *sleeper(void *arg)
{
    double end = now() + secs;
    struct timespec ms = { nap_ns / 1000000000L, nap_ns % 1000000000L };
    while (now() < end) {
        work();
        nanosleep(&ms, NULL);
    }
    return arg;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        secs = atof(argv[1]);
    int n = argc > 2 ? atoi(argv[2]) : 64;
    if (argc > 3)
        nap_ns = (long)(atof(argv[3]) * 1e6);
    if (n < 1 || n > 4096 || nap_ns < 1000 || nap_ns > 10000000000L)
        return 2;
    pthread_t *t = calloc((size_t)n, sizeof *t);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024); /* 1,000 threads fit in any memory limit */
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], &attr, sleeper, NULL))
            return 1;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    return 0;
}
