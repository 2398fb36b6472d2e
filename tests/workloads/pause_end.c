/*
 * pause_end.c - threads that end while the collection is paused (include/tally.h): each of
 * five threads in turn computes for 25 ms of its CPU time in before_pause(), the main thread
 * pauses the collection, the thread computes 1 ms more in while_paused() and ends; the main
 * thread resumes. Nothing a thread does while paused is recorded, its end included
 * (tests/e2e/pause_end.py). Prints on stdout, per thread, the CPU time it measured before its
 * pause:
 *     pause_end tid <tid> before_ns <n>
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tally.h"

#define FN __attribute__((noinline, noclone))

static pthread_barrier_t bar;
static volatile uint64_t sink;

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin_until(uint64_t end)
{
    while (cpu_ns() < end)
        for (int i = 0; i < 1000; i++)
            sink += (uint64_t)i;
}

FN static void before_pause(void) { spin_until(cpu_ns() + 25000000u); }
FN static void while_paused(void) { spin_until(cpu_ns() + 1000000u); }

static void *worker(void *arg)
{
    before_pause();
    printf("pause_end tid %ld before_ns %llu\n", (long)syscall(SYS_gettid),
           (unsigned long long)cpu_ns());
    fflush(stdout);
    pthread_barrier_wait(&bar); /* the main thread pauses */
    pthread_barrier_wait(&bar);
    while_paused();
    return arg;
}

int main(void)
{
    pthread_barrier_init(&bar, NULL, 2);
    for (int i = 0; i < 5; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL))
            return 1;
        pthread_barrier_wait(&bar);
        tally_pause();
        pthread_barrier_wait(&bar);
        pthread_join(t, NULL);
        tally_resume();
    }
    return 0;
}
