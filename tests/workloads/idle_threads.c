/*
 * idle_threads.c - many threads that mostly sleep, each alternating between two functions that
 * sleep at the same depth (so a thread is blocked at the same pc and sp in both, and only the
 * return addresses above tell them apart). Usage: wl_idle_threads THREADS SECONDS NAP_MS.
 * Prints, on stderr, each thread's wall time in its loop by the program's own clock:
 * "thread tid=T wall_ns=W a_ns=A b_ns=B" (A, B: wall time spent in each function).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double secs;
static long nap_ns;
static volatile int sink;

typedef struct {
    pid_t tid;
    uint64_t wall, a, b;
} result_t;

static uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* noipa: neither merged with the other (identical code folding) nor inlined */
__attribute__((noipa)) static void nap_a(void)
{
    struct timespec ts = { 0, nap_ns };
    sink = 1;
    nanosleep(&ts, NULL);
}

__attribute__((noipa)) static void nap_b(void)
{
    struct timespec ts = { 0, nap_ns };
    sink = 2;
    nanosleep(&ts, NULL);
}

static void *idler(void *arg)
{
    result_t *r = arg;
    r->tid = (pid_t)syscall(SYS_gettid);
    uint64_t t0 = now(), end = t0 + (uint64_t)(secs * 1e9);
    for (unsigned i = 0;; i++) {
        uint64_t t = now();
        if (t >= end)
            break;
        if (i & 1) {
            nap_a();
            r->a += now() - t;
        } else {
            nap_b();
            r->b += now() - t;
        }
    }
    r->wall = now() - t0;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    int n = atoi(argv[1]);
    secs = atof(argv[2]);
    nap_ns = atol(argv[3]) * 1000000L;
    if (n < 1 || n > 4000 || nap_ns <= 0 || nap_ns >= 1000000000L)
        return 2;
    pthread_t *t = calloc((size_t)n, sizeof *t);
    result_t *r = calloc((size_t)n, sizeof *r);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], &attr, idler, &r[i]))
            return 1;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "thread tid=%d wall_ns=%llu a_ns=%llu b_ns=%llu\n", (int)r[i].tid,
                (unsigned long long)r[i].wall, (unsigned long long)r[i].a,
                (unsigned long long)r[i].b);
    return 0;
}
