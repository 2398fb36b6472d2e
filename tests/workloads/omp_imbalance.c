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
 * loop, barrier included (total), summed per OS thread (a runtime may number its threads
 * differently in the next region), and prints at the end, one line per thread (k: its number in
 * the first region, whose work it then did in every round of a runtime that keeps its numbers):
 *     thread <k> tid <tid> work_ns <w> loop_ns <l>
 * Serial work before and after the region (the main thread) is outside imbalanced_loop.
 * Before the loop, two contended phases, each in a parallel region of its own: critical_phase (every thread
 * enters one `critical` section and burns half a unit in it) and lock_phase (the same with
 * omp_set_lock): each thread measures how long it waited to get in, and how much of that it
 * spent waiting for a CPU (its schedstat run delay: time the thread could not tell apart, nor can
 * anyone, between the wait and the work after it got in, when the CPU came after the lock did),
 * printed on its line as
 *     ... crit_ns <c> lock_ns <k> delay_ns <d>
 */
#define _GNU_SOURCE
#include <fcntl.h>
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

/* The calling thread's run delay so far (ns runnable but not running: schedstat), 0 if unknown. */
static unsigned long long run_delay(void)
{
    char buf[128];
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    unsigned long long run, delay;
    if (n <= 0)
        return 0;
    buf[n] = 0;
    return sscanf(buf, "%llu %llu", &run, &delay) == 2 ? delay : 0;
}

/* Per OS thread (a runtime may give a thread another number in the next region): */
static struct {
    long tid;
    int num; /* its OpenMP thread number in the first region */
    unsigned long long work, loop, crit, lock, delay;
} th[MAXT];
static __thread int my_slot = -1;
static omp_lock_t lock;

/* The calling thread's entry, claimed at its first use. */
static int slot(void)
{
    if (my_slot < 0) {
        long tid = syscall(SYS_gettid);
        for (int i = 0; i < MAXT && my_slot < 0; i++) {
            long zero = 0;
            if (__atomic_compare_exchange_n(&th[i].tid, &zero, tid, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST)) {
                th[i].num = omp_get_thread_num();
                my_slot = i;
            }
        }
    }
    return my_slot;
}

static __attribute__((noinline)) void imbalanced_loop(int nthreads, unsigned long long unit)
{
    int me = slot();
    unsigned long long t0 = ns(CLOCK_MONOTONIC), w = 0;
#pragma omp for schedule(static)
    for (int i = 0; i < nthreads * CHUNK; i++) {
        unsigned long long a = ns(CLOCK_MONOTONIC);
        burn((unsigned long long)(i / CHUNK + 1) * unit / CHUNK);
        w += ns(CLOCK_MONOTONIC) - a;
    }
    /* (the loop's implicit barrier: the threads with less work wait here) */
    th[me].loop += ns(CLOCK_MONOTONIC) - t0;
    th[me].work += w;
}

static __attribute__((noinline)) void critical_phase(unsigned long long unit)
{
    int me = slot();
    unsigned long long d0 = run_delay(), t0 = ns(CLOCK_MONOTONIC);
#pragma omp critical
    {
        th[me].crit += ns(CLOCK_MONOTONIC) - t0;
        th[me].delay += run_delay() - d0;
        burn(unit / 2);
    }
}

static __attribute__((noinline)) void lock_phase(unsigned long long unit)
{
    int me = slot();
    unsigned long long d0 = run_delay(), t0 = ns(CLOCK_MONOTONIC);
    omp_set_lock(&lock);
    th[me].lock += ns(CLOCK_MONOTONIC) - t0;
    th[me].delay += run_delay() - d0;
    burn(unit / 2);
    omp_unset_lock(&lock);
}

int main(int argc, char **argv)
{
    int nthreads = argc > 1 ? atoi(argv[1]) : 3;
    unsigned long long unit = (argc > 2 ? strtoull(argv[2], NULL, 10) : 200) * 1000000ull;
    int reps = argc > 3 ? atoi(argv[3]) : 2;
    if (nthreads < 1 || nthreads > MAXT || reps < 1)
        return 2;
    burn(unit / 4); /* serial work */
#pragma omp parallel num_threads(nthreads)
    critical_phase(unit);
    omp_init_lock(&lock);
#pragma omp parallel num_threads(nthreads)
    lock_phase(unit);
    omp_destroy_lock(&lock);
    for (int r = 0; r < reps; r++) {
#pragma omp parallel num_threads(nthreads)
        imbalanced_loop(nthreads, unit);
    }
    burn(unit / 4);
    for (int k = 0; k < MAXT && th[k].tid; k++)
        printf("thread %d tid %ld work_ns %llu loop_ns %llu crit_ns %llu lock_ns %llu delay_ns %llu\n",
               th[k].num, th[k].tid, th[k].work, th[k].loop, th[k].crit, th[k].lock, th[k].delay);
    return 0;
}
