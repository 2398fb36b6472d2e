/*
 * threads4.c - four worker threads created four different ways, each burning a known amount of
 * CPU in its own function: pthread_create (default version), pthread_create@GLIBC_2.2.5 (the
 * symbol version old binaries use), a detached thread, and a thread created from a constructor
 * (before main). Also a short thread that exits through pthread_exit. Usage: wl_threads4 [seconds
 * per worker] (default 0.5). Prints each worker's RUSAGE_THREAD CPU on stderr.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

/* The old symbol version, as in a binary linked against glibc < 2.34. */
int pthread_create_old(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
__asm__(".symver pthread_create_old, pthread_create@GLIBC_2.2.5");

static double secs = 0.5;
static volatile double sink;
static sem_t detached_done;

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void report(const char *who)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    fprintf(stderr, "%s cpu_ms=%.1f\n", who,
            (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3);
}

#define WORKER(name)                                                                               \
    __attribute__((noinline)) static void *name(void *arg)                                         \
    {                                                                                              \
        double t0 = thread_cpu(), x = 0;                                                           \
        while (thread_cpu() - t0 < secs)                                                           \
            for (int i = 0; i < 100000; i++)                                                       \
                x += (double)(i & 15);                                                             \
        sink += x;                                                                                 \
        report(#name);                                                                             \
        return arg;                                                                                \
    }

WORKER(work_new)
WORKER(work_old)
WORKER(work_ctor)

__attribute__((noinline)) static void *work_detached(void *arg)
{
    double t0 = thread_cpu(), x = 0;
    while (thread_cpu() - t0 < secs)
        for (int i = 0; i < 100000; i++)
            x += (double)(i & 15);
    sink += x;
    report("work_detached");
    sem_post(&detached_done);
    return arg;
}

__attribute__((noinline)) static void *work_exit(void *arg)
{
    double t0 = thread_cpu(), x = 0;
    while (thread_cpu() - t0 < secs / 5)
        x += 1;
    sink += x;
    report("work_exit");
    pthread_exit(arg);
}

static pthread_t ctor_thread;

__attribute__((constructor)) static void start_early(void)
{
    const char *s = getenv("WL_SECS");
    if (s)
        secs = atof(s);
    pthread_create(&ctor_thread, NULL, work_ctor, NULL);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        secs = atof(argv[1]);
    sem_init(&detached_done, 0, 0);
    pthread_t a, b, c, d;
    pthread_attr_t det;
    pthread_attr_init(&det);
    pthread_attr_setdetachstate(&det, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&a, NULL, work_new, NULL) || pthread_create_old(&b, NULL, work_old, NULL) ||
        pthread_create(&c, &det, work_detached, NULL) || pthread_create(&d, NULL, work_exit, NULL))
        return 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_join(d, NULL);
    pthread_join(ctor_thread, NULL);
    sem_wait(&detached_done);
    printf("threads done\n");
    return 0;
}
