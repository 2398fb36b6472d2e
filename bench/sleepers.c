/*
 * sleepers.c - many threads that mostly sleep: each wakes every millisecond, works ~20 us, and
 * sleeps again, for the given seconds. The worst case for thread-state sampling (many threads,
 * blocked stacks changing all the time). Usage: bench_sleepers [seconds=3] [threads=64].
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double secs = 3;
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
    struct timespec ms = { 0, 1000000 };
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
    if (n < 1 || n > 4096)
        return 2;
    pthread_t *t = calloc((size_t)n, sizeof *t);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, sleeper, NULL))
            return 1;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    return 0;
}
