/*
 * blocks.c - profiled blocks (include/tally.h, spec 004) with known answers.
 *
 *   blocks seed       the seed's example, each microsecond 10 ms of real time: main { 0,
 *                     foo { 5 } 10, bar { 15, foo { 20, monitor 25 }}}; then foo and bar end
 *                     at 30, main at 35 (the time of each span as measured here, on stdout)
 *   blocks switch     run-time disable and enable: block "io" and group "g" (block "g1")
 *   blocks threads    two threads, each with its own nesting and monitor points
 *   blocks tau        the seed's example written with TAU's macros (include/tau/TAU.h)
 *   blocks fork       main { 10 ms, fork: the child enters child, 20 ms, monitor, ends; the
 *                     parent waits, monitor }
 *   blocks faults N   main { touch { writes a byte to each of N fresh pages } } (page faults
 *                     as a block quantity: touch takes at least N)
 *   blocks timeline   for the timeline of blocks (collect --block-trace=on): main { rec 3 deep
 *                     (recursion), outer { inner, left by a longjmp: the stop of outer ends
 *                     both }, 200 short calls of tiny, a thread whose block stays open when it
 *                     returns, a fork whose child ends with main and child open }, main left
 *                     open at exit
 *
 * Prints `span NAME SECONDS` for every span whose length a test checks (CLOCK_MONOTONIC).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tau/TAU.h"
#include "tally.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_units(int units) /* 1 unit: 10 ms */
{
    struct timespec ts = { 0, units * 10 * 1000000L };
    while (nanosleep(&ts, &ts))
        ;
}

static double t0;
static void mark(const char *what)
{
    printf("at %s %.6f\n", what, now_s() - t0);
}

static void seed(void)
{
    t0 = now_s();
    tally_start("main");
    mark("main{");
    sleep_units(5);
    tally_start("foo");
    mark("foo{");
    sleep_units(5);
    tally_stop("foo");
    mark("}foo");
    sleep_units(5);
    tally_start("bar");
    mark("bar{");
    sleep_units(5);
    tally_start("foo");
    mark("foo{");
    sleep_units(5);
    mark("monitor");
    tally_monitor("seed");
    sleep_units(5);
    tally_stop("foo");
    mark("}foo");
    tally_stop("bar");
    mark("}bar");
    sleep_units(5);
    tally_stop("main");
    mark("}main");
}

static void switching(void)
{
    t0 = now_s();
    tally_start("main");
    mark("main{");
    tally_block_disable("io");
    tally_block_disable("g");
    tally_start("io"); /* not profiled: its 3 units are main's */
    tally_start_group("g1", "g");
    sleep_units(3);
    tally_stop("g1");
    tally_stop("io");
    mark("off-done");
    tally_block_enable("io");
    tally_start("io");
    mark("io{");
    sleep_units(2);
    tally_stop("io");
    mark("}io");
    tally_block_enable("g");
    tally_start_group("g1", "g");
    mark("g1{");
    sleep_units(1);
    tally_monitor("on again");
    tally_stop("g1");
    mark("}g1");
    tally_stop("main");
    mark("}main");
}

static void *worker(void *arg)
{
    int k = (int)(long)arg;
    char name[32];
    snprintf(name, sizeof name, "worker%d", k);
    tally_start(name);
    for (int i = 0; i < k + 1; i++) {
        tally_start("step");
        sleep_units(1);
        tally_monitor(name);
        tally_stop("step");
    }
    tally_stop(name);
    return NULL;
}

static void threads(void)
{
    pthread_t th[2];
    tally_start("main");
    for (long i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    tally_monitor("joined");
    tally_stop("main");
}

static void tau(void)
{
    TAU_PROFILE_TIMER(tmain, "main", "int (int, char **)", TAU_DEFAULT);
    TAU_PROFILE_TIMER(tbar, "bar", "void (void)", TAU_USER);
    t0 = now_s();
    TAU_PROFILE_START(tmain);
    sleep_units(1);
    TAU_START("foo");
    sleep_units(1);
    TAU_STOP("foo");
    TAU_PROFILE_START(tbar);
    TAU_START("foo");
    sleep_units(1);
    TAU_MONITOR();
    TAU_STOP("foo");
    TAU_PROFILE_STOP(tbar);
    TAU_DISABLE_GROUP(TAU_USER);
    TAU_START("hidden");
    TAU_STOP("hidden");
    TAU_PROFILE_STOP(tmain);
}

static void forking(void)
{
    tally_start("main");
    sleep_units(1);
    pid_t pid = fork();
    if (pid == 0) {
        tally_start("child");
        sleep_units(2);
        tally_monitor("child");
        tally_stop("child");
        tally_stop("main");
        exit(0);
    }
    waitpid(pid, NULL, 0);
    tally_monitor("parent");
    tally_stop("main");
}

static void faults(long n)
{
    long page = sysconf(_SC_PAGESIZE);
    tally_start("main");
    tally_start("touch");
    char *m = mmap(NULL, (size_t)(n * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    for (long i = 0; i < n; i++)
        ((volatile char *)m)[i * page] = 1;
    tally_stop("touch");
    munmap(m, (size_t)(n * page));
    tally_stop("main");
}

static jmp_buf jump;

static void rec(int n)
{
    tally_start("rec");
    sleep_units(1);
    if (n > 0)
        rec(n - 1);
    tally_stop("rec");
}

static void deep(void)
{
    tally_start("inner");
    sleep_units(1);
    longjmp(jump, 1); /* inner and outer are left open: no stop */
}

static void *open_worker(void *arg)
{
    (void)arg;
    tally_start("tworker");
    sleep_units(1);
    tally_start("left_open"); /* ended by the thread's end */
    sleep_units(1);
    return NULL;
}

static void timeline(void)
{
    tally_start("main");
    rec(3);
    if (!setjmp(jump)) {
        tally_start("outer");
        deep();
    }
    tally_stop("outer"); /* ends inner too */
    for (int i = 0; i < 200; i++) {
        tally_start("tiny");
        tally_stop("tiny");
    }
    pthread_t th;
    pthread_create(&th, NULL, open_worker, NULL);
    pthread_join(th, NULL);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        tally_start("child");
        sleep_units(1);
        exit(0); /* child and main open: the end of the image ends them */
    }
    waitpid(pid, NULL, 0);
    sleep_units(1);
    exit(0); /* main open */
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "seed";
    if (!strcmp(mode, "seed"))
        seed();
    else if (!strcmp(mode, "switch"))
        switching();
    else if (!strcmp(mode, "threads"))
        threads();
    else if (!strcmp(mode, "tau"))
        tau();
    else if (!strcmp(mode, "fork"))
        forking();
    else if (!strcmp(mode, "faults") && argc > 2)
        faults(atol(argv[2]));
    else if (!strcmp(mode, "timeline"))
        timeline();
    else {
        fprintf(stderr, "usage: blocks seed|switch|threads|tau|fork|faults N|timeline\n");
        return 2;
    }
    return 0;
}
