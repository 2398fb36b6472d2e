/*
 * phases.c - a program whose phases differ, each marked with a sample point (include/tally.h):
 *   cpu    computes for S seconds in cpu_phase()
 *   sleep  sleeps S seconds in sleep_phase() (nanosleep)
 *   io     blocks S seconds in io_phase() reading a pipe that another thread writes after S s
 *   lock   blocks S seconds in lock_phase() on a mutex another thread holds for S s
 * Usage: wl_phases [S] [raise|pause] (default 0.4). With "raise", sends itself SIGUSR1 at the end
 * (run it with -l SIGUSR1: the collector takes the signal as a sample point). With "pause", the
 * cpu phase runs twice, the first time between tally_pause() and tally_resume().
 * Prints on stderr the wall time each waiting phase took, measured by the program itself
 * (CLOCK_MONOTONIC): "walls sleep_ns=N io_ns=N lock_ns=N"; under load each comes out longer
 * than S, and a tool can record no more wait than that.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tally.h"

#define FN __attribute__((noinline, noclone))

static double secs = 0.4;
static volatile double sink;
static int pipefd[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t held;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void nap(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0) {
    }
}

FN void cpu_phase(void)
{
    double t0 = cpu_now(), x = 0;
    while (cpu_now() - t0 < secs)
        for (int i = 0; i < 100000; i++)
            x += (double)(i & 7);
    sink += x;
}

FN void sleep_phase(void) { nap(secs); }

static void *late_writer(void *arg)
{
    nap(secs);
    char c = 'x';
    if (write(pipefd[1], &c, 1) != 1)
        abort();
    return arg;
}

FN void io_phase(void)
{
    pthread_t t;
    pthread_create(&t, NULL, late_writer, NULL);
    char c;
    if (read(pipefd[0], &c, 1) != 1)
        abort();
    pthread_join(t, NULL);
}

static void *holder(void *arg)
{
    pthread_mutex_lock(&mu);
    pthread_barrier_wait(&held);
    nap(secs);
    pthread_mutex_unlock(&mu);
    return arg;
}

FN void lock_phase(void)
{
    pthread_t t;
    pthread_create(&t, NULL, holder, NULL);
    pthread_barrier_wait(&held);
    pthread_mutex_lock(&mu);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        secs = atof(argv[1]);
    if (pipe(pipefd))
        return 1;
    pthread_barrier_init(&held, NULL, 2);
    if (argc > 2 && !strcmp(argv[2], "pause")) {
        tally_pause();
        cpu_phase();
        tally_resume();
    }
    tally_sample("cpu");
    cpu_phase();
    tally_sample("sleep");
    long t0 = mono_ns();
    sleep_phase();
    long t1 = mono_ns();
    tally_sample("io");
    long t2 = mono_ns();
    io_phase();
    long t3 = mono_ns();
    tally_sample("lock");
    long t4 = mono_ns();
    lock_phase();
    long t5 = mono_ns();
    tally_sample("done");
    fprintf(stderr, "walls sleep_ns=%ld io_ns=%ld lock_ns=%ld\n", t1 - t0, t3 - t2, t5 - t4);
    if (argc > 2 && !strcmp(argv[2], "raise"))
        raise(SIGUSR1);
    printf("phases done\n");
    return 0;
}
