/*
 * thread_cost.c - what starting and ending threads costs a program, as the program itself sees
 * it. Usage: wl_thread_cost THREADS SPIN_MS (WL_THREAD_COST_KEYS=K in the environment: K keys).
 *
 * Creates THREADS threads (small stacks), all alive at once: each spins SPIN_MS milliseconds of
 * its own CPU time in spin() (0: none), then waits at a barrier for the others, and ends. K
 * thread-specific keys are created first and kept, by the constructor of a library the program
 * is linked with (thread_cost_keys.c), which runs before a preloaded collector starts. After
 * joining every thread the program prints on stdout
 *   "minflt=F maps=M threads=N"
 * F: the minor page faults of the whole process so far (getrusage), which a collector that sets
 * threads up eagerly raises by the pages it touches per thread; M: the memory mappings of the
 * process (lines of /proc/self/maps) while every thread was alive, which a collector that maps
 * memory for each thread raises by as many.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static long spin_ns;
static pthread_barrier_t all_there;
static volatile double sink;
int thread_cost_keys_linked(void);

static long cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

__attribute__((noinline)) static void spin(void)
{
    long end = cpu_ns() + spin_ns;
    double x = 0;
    while (cpu_ns() < end)
        for (int i = 0; i < 1000; i++)
            x += (double)(i & 7);
    sink += x;
}

static int maps; /* memory mappings while every thread was there */

static int count_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    int n = 0, c;
    while ((c = getc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static void *worker(void *arg)
{
    if (spin_ns)
        spin();
    if (pthread_barrier_wait(&all_there) == PTHREAD_BARRIER_SERIAL_THREAD)
        maps = count_maps(); /* the others wait at the next barrier meanwhile */
    pthread_barrier_wait(&all_there);
    return arg;
}

int main(int argc, char **argv)
{
    if (argc < 3 || !thread_cost_keys_linked())
        return 2;
    int n = atoi(argv[1]);
    spin_ns = atol(argv[2]) * 1000000L;
    if (n < 1 || n > 4000 || spin_ns < 0)
        return 2;
    pthread_t *t = calloc((size_t)n, sizeof *t);
    pthread_barrier_init(&all_there, NULL, (unsigned)n);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], &attr, worker, NULL))
            return 1;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("minflt=%ld maps=%d threads=%d\n", ru.ru_minflt, maps, n);
    return 0;
}
