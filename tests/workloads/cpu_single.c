/*
 * cpu_single.c - one thread, a known hot function: hot_loop() gets ~90% of the CPU time, the rest
 * goes to cold_loop(); a few system calls add some system time. Usage: wl_cpu_single [seconds]
 * (default 1). Prints the thread's user and system CPU time (RUSAGE_THREAD, ns) on stderr so a
 * test can compare with what was recorded.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

__attribute__((noinline)) static double hot_loop(long n)
{
    double x = 0;
    for (long i = 0; i < n; i++)
        x += (double)(i % 7) * 0.5;
    return x;
}

__attribute__((noinline)) static double cold_loop(long n)
{
    double x = 0;
    for (long i = 0; i < n; i++)
        x += (double)(i % 3);
    return x;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    double t0 = cpu_seconds();
    while (cpu_seconds() - t0 < secs) {
        sink += hot_loop(900000);
        sink += cold_loop(100000);
        getppid(); /* a little system time */
    }
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    fprintf(stderr, "rusage_thread user_ns=%lld system_ns=%lld\n",
            (long long)ru.ru_utime.tv_sec * 1000000000LL + ru.ru_utime.tv_usec * 1000LL,
            (long long)ru.ru_stime.tv_sec * 1000000000LL + ru.ru_stime.tv_usec * 1000LL);
    printf("done %.0f\n", sink > 0 ? 1.0 : 0.0);
    return 0;
}
