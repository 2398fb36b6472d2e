/*
 * omp_imbalance.c - an OpenMP parallel loop with a deliberately imbalanced static schedule, for
 * OpenMP Work and Wait (tests/e2e/omp.py). Built with gcc -fopenmp (libgomp), with clang
 * -fopenmp (libomp), and gcc-compiled but linked with libomp.
 *
 * Usage: omp_imbalance [threads [unit_ms [reps]]]. In each of reps rounds, imbalanced_loop runs
 * a `for schedule(static)` of threads * CHUNK iterations: thread k gets iterations
 * [k*CHUNK, (k+1)*CHUNK), each burning (k+1) * unit_ms / CHUNK ms of its own CPU time, so thread k
 * works (k+1) units and the others wait at the loop's implicit barrier for the slowest. Each
 * thread measures, on its own clocks, the wall time of its iterations (work) and of the whole
 * loop, barrier included (total), and prints at the end, one line per thread:
 *     thread <k> tid <tid> work_ns <w> loop_ns <l>
 * Serial work before and after the region (the main thread) is outside imbalanced_loop.
 */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 8
#define MAXT 64

static unsigned long long ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static volatile unsigned long sink;

/* Burns cpu_ns of the calling thread's CPU time. */
static __attribute__((noinline)) void burn(unsigned long long cpu_ns)
{
    unsigned long long end = ns(CLOCK_THREAD_CPUTIME_ID) + cpu_ns;
    while (ns(CLOCK_THREAD_CPUTIME_ID) < end)
        for (int i = 0; i < 20000; i++)
            sink += (unsigned long)i * 7u;
}

static unsigned long long work_ns[MAXT], loop_ns[MAXT];
static long tids[MAXT];

static __attribute__((noinline)) void imbalanced_loop(int nthreads, unsigned long long unit)
{
    int me = omp_get_thread_num();
    unsigned long long t0 = ns(CLOCK_MONOTONIC), w = 0;
#pragma omp for schedule(static)
    for (int i = 0; i < nthreads * CHUNK; i++) {
        unsigned long long a = ns(CLOCK_MONOTONIC);
        burn((unsigned long long)(i / CHUNK + 1) * unit / CHUNK);
        w += ns(CLOCK_MONOTONIC) - a;
    }
    /* (the loop's implicit barrier: the threads with less work wait here) */
    loop_ns[me] += ns(CLOCK_MONOTONIC) - t0;
    work_ns[me] += w;
}

int main(int argc, char **argv)
{
    int nthreads = argc > 1 ? atoi(argv[1]) : 3;
    unsigned long long unit = (argc > 2 ? strtoull(argv[2], NULL, 10) : 200) * 1000000ull;
    int reps = argc > 3 ? atoi(argv[3]) : 2;
    if (nthreads < 1 || nthreads > MAXT || reps < 1)
        return 2;
    burn(unit / 4); /* serial work */
    for (int r = 0; r < reps; r++) {
#pragma omp parallel num_threads(nthreads)
        {
            tids[omp_get_thread_num()] = syscall(SYS_gettid);
            imbalanced_loop(nthreads, unit);
        }
    }
    burn(unit / 4);
    for (int k = 0; k < nthreads; k++)
        printf("thread %d tid %ld work_ns %llu loop_ns %llu\n", k, tids[k], work_ns[k],
               loop_ns[k]);
    return 0;
}
