/*
 * workers.c - the second program the README's tour profiles: threads that compute, contend for a
 * lock, allocate (and leak a little) and write and read a file, in three phases a second or so
 * apart, each marked with a sample packet. Every view of the tour has something to show on it.
 *
 *   main        starts NTHREADS workers, waits for them, prints a checksum
 *   worker      per phase: solve() (CPU), update_totals() (a mutex held while computing, so the
 *               others wait for it), remember() (heap: one block in eight is never freed),
 *               save_and_load() (a file in the temporary directory: written, read back, removed)
 *
 * `workers [SECONDS]` scales the run (default 3 seconds of CPU over all threads).
 */
#include "tally.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NTHREADS 3
#define PHASES 3

static double budget = 3.0; /* seconds of CPU time over all threads and phases */
static pthread_mutex_t totals_lock = PTHREAD_MUTEX_INITIALIZER;
static double totals;
static pthread_barrier_t phase_barrier;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Computes for secs of this thread's CPU time. */
static double burn(double secs)
{
    double x = 0, t0 = cpu_now();
    while (cpu_now() - t0 < secs)
        for (int i = 0; i < 20000; i++)
            x += (double)i * 0.5;
    return x;
}

__attribute__((noinline)) static double solve(double secs)
{
    return burn(secs);
}

__attribute__((noinline)) static void update_totals(double secs)
{
    pthread_mutex_lock(&totals_lock);
    totals += burn(secs);
    pthread_mutex_unlock(&totals_lock);
}

__attribute__((noinline)) static void *remember(int i)
{
    size_t n = 256 + (size_t)(i % 16) * 64;
    char *p = malloc(n);
    if (p != NULL)
        memset(p, i, n);
    return p;
}

__attribute__((noinline)) static long save_and_load(int id, int phase)
{
    const char *dir = getenv("TMPDIR");
    char path[4096], buf[8192];
    snprintf(path, sizeof path, "%s/workers.%d.%d.%d", dir != NULL ? dir : "/tmp", (int)getpid(),
             id, phase);
    FILE *f = fopen(path, "w+");
    if (f == NULL)
        return 0;
    memset(buf, 'a' + id, sizeof buf);
    for (int i = 0; i < 64; i++)
        fwrite(buf, 1, sizeof buf, f);
    fflush(f);
    rewind(f);
    long got = 0;
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        got += (long)k;
    fclose(f);
    unlink(path);
    return got;
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    double per_phase = budget / (NTHREADS * PHASES);
    long bytes = 0;
    void *kept[64];
    for (int phase = 0; phase < PHASES; phase++) {
        solve(per_phase * 0.6);
        update_totals(per_phase * 0.2);
        for (int i = 0; i < 64; i++)
            kept[i] = remember(i);
        for (int i = 0; i < 64; i++)
            if (i % 8 != 0)
                free(kept[i]); /* one block in eight is leaked */
        bytes += save_and_load(id, phase);
        solve(per_phase * 0.2);
        if (pthread_barrier_wait(&phase_barrier) == PTHREAD_BARRIER_SERIAL_THREAD) {
            char label[32];
            snprintf(label, sizeof label, "phase %d done", phase + 1);
            tally_sample(label);
        }
    }
    return (void *)bytes;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        budget = atof(argv[1]);
    if (!(budget > 0 && budget < 3600)) {
        fprintf(stderr, "usage: workers [SECONDS of CPU, default 3]\n");
        return 2;
    }
    pthread_t t[NTHREADS];
    pthread_barrier_init(&phase_barrier, NULL, NTHREADS);
    for (long i = 0; i < NTHREADS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) {
            perror("workers: pthread_create");
            return 1;
        }
    long bytes = 0;
    for (int i = 0; i < NTHREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        bytes += (long)r;
    }
    printf("workers: done (%ld bytes through files, checksum %d)\n", bytes, totals > 0);
    return 0;
}
