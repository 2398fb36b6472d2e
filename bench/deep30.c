/*
 * deep30.c - the clock-profiling benchmark workload: CPU-bound work at the bottom of 30-deep call
 * stacks, in T threads (argument 2, default 1), each doing a fixed amount of work (argument 1:
 * about that many seconds of CPU per thread on this machine, default 5). At exit it prints its own CPU time from getrusage to stderr as
 *   rusage user_ns=... system_ns=...
 * so recorded CPU time can be compared with what the kernel accounted.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static double seconds = 5;
static volatile double sink;
#define ROUNDS_PER_SECOND 3000.0 /* calibrated roughly: rounds of 200000 leaf iterations */

__attribute__((noinline)) static double leaf(int which, long n)
{
    double x = which;
    for (long i = 0; i < n; i++)
        x = x * 1.0000001 + (double)(i & 7);
    return x;
}

__attribute__((noinline)) static double level(int depth, int which, long n)
{
    if (depth == 0)
        return leaf(which, n);
    double r = level(depth - 1, which, n);
    __asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail call */
    return r + depth;
}

static void *worker(void *arg)
{
    long rounds = (long)(seconds * ROUNDS_PER_SECOND);
    for (long r = 0; r < rounds; r++)
        sink += level(29, (int)(r & 3), 200000);
    return arg;
}

int main(int argc, char **argv)
{
    int threads = 1;
    if (argc > 1)
        seconds = atof(argv[1]);
    if (argc > 2)
        threads = atoi(argv[2]);
    pthread_t t[64];
    for (int i = 1; i < threads && i < 64; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    worker(NULL);
    for (int i = 1; i < threads && i < 64; i++)
        pthread_join(t[i], NULL);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(stderr, "rusage user_ns=%lld system_ns=%lld\n",
            (long long)ru.ru_utime.tv_sec * 1000000000LL + ru.ru_utime.tv_usec * 1000LL,
            (long long)ru.ru_stime.tv_sec * 1000000000LL + ru.ru_stime.tv_usec * 1000LL);
    return 0;
}
