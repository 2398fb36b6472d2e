/*
 * counters.c - a workload with known counts of software events, for counter overflow profiling
 * (tests/e2e/counters.py).
 *
 *   wl_counters faults G1 G2 H S [C]
 *                                  touches G1 fresh pages of one global array (touch_global1),
 *                                  G2 of another (touch_global2), one member of each of H heap
 *                                  structures a page apart (touch_heap), S pages of a stack
 *                                  array (touch_stack) and C pages of a stack array of
 *                                  touch_caller_stack through the function it calls
 *                                  (touch_through): one page fault each. The code pages of
 *                                  those functions are read first, so their first execution
 *                                  does not fault.
 *   wl_counters switches N         two threads pass a token through two pipes N times
 *                                  (pingpong); prints the voluntary and involuntary context
 *                                  switches of the calling thread during the loop (its own
 *                                  truth, from getrusage(RUSAGE_THREAD)).
 *   wl_counters members N          writes member b then member a of the global structure
 *                                  bp_pair N times (write_member): a data breakpoint on b
 *                                  stops on the store to a, one instruction after its trigger
 *   wl_counters writes N [M|true]  writes the global bp_target N times (write_loop): a data
 *                                  breakpoint on it fires N times; with M, then executes itself
 *                                  to write it M times in a new image; with true, executes
 *                                  /bin/true.
 *
 * Built with -fno-stack-clash-protection: the stack array's pages are touched only by the loop,
 * not by the prologue's probes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define PAGE 4096
#define MAXG 4096

/* Page 0 of each array is never touched: the first page of .bss can be the data segment's last
 * file page, whose first write faults twice (read-only file page, then copy on write). */
static char g1[(MAXG + 1) * PAGE] __attribute__((aligned(PAGE)));
static char g2[(MAXG + 1) * PAGE] __attribute__((aligned(PAGE)));

struct rec {
    char pad[PAGE - sizeof(long)];
    long member;
};

volatile long bp_target;

/* a structure whose second member a data breakpoint watches, written beside its first */
struct pair {
    long a;
    long b;
};
volatile struct pair bp_pair;

__attribute__((noinline)) void touch_global1(long n)
{
    for (long i = 0; i < n; i++)
        ((volatile char *)g1)[(i + 1) * PAGE] = 1;
}

__attribute__((noinline)) void touch_global2(long n)
{
    for (long i = 0; i < n; i++)
        ((volatile char *)g2)[(i + 1) * PAGE] = 2;
}

__attribute__((noinline)) void touch_heap(struct rec *r, long n)
{
    for (long i = 0; i < n; i++)
        ((volatile struct rec *)r)[i].member = i;
}

__attribute__((noinline)) void touch_through(volatile char *p, long n)
{
    for (long i = 0; i < n; i++)
        p[i * PAGE] = 4;
}

/* its array's pages are touched by the function it calls; 512 pages longer than touch_stack's,
 * so that its first 512 pages lie below everything touch_stack touched: fresh */
__attribute__((noinline)) void touch_caller_stack(long n)
{
    char b[1536 * PAGE];
    touch_through(b, n);
    __asm__ volatile("" : : "r"(b) : "memory");
}

__attribute__((noinline)) void touch_stack(long n)
{
    char a[1024 * PAGE] __attribute__((aligned(PAGE)));
    for (long i = 0; i < n; i++)
        ((volatile char *)a)[i * PAGE] = 3;
    __asm__ volatile("" : : "r"(a) : "memory");
}

static void warm(const void *fn)
{
    /* the function's code page (and the next, for a function across the boundary) */
    volatile const char *c = fn;
    for (int i = 0; i < 256; i += 64)
        (void)c[i];
}

static int p1[2], p2[2];
static long rounds;

static void *partner(void *arg)
{
    (void)arg;
    char b;
    for (long i = 0; i < rounds; i++) {
        if (read(p1[0], &b, 1) != 1 || write(p2[1], &b, 1) != 1)
            break;
    }
    return NULL;
}

__attribute__((noinline)) void pingpong(long n)
{
    char b = 'x';
    for (long i = 0; i < n; i++) {
        if (write(p1[1], &b, 1) != 1 || read(p2[0], &b, 1) != 1)
            break;
    }
}

__attribute__((noinline)) void write_loop(long n)
{
    for (long i = 0; i < n; i++)
        bp_target = i;
}

__attribute__((noinline)) void write_member(long n)
{
    for (long i = 0; i < n; i++) {
        bp_pair.b = i;
        bp_pair.a = i; /* the instruction a breakpoint on b stops after */
    }
}

int main(int argc, char **argv)
{
    if (argc >= 6 && !strcmp(argv[1], "faults")) {
        long n1 = atol(argv[2]), n2 = atol(argv[3]), nh = atol(argv[4]), ns = atol(argv[5]);
        long nc = argc >= 7 ? atol(argv[6]) : 0;
        if (n1 > MAXG || n2 > MAXG || ns > 1000 || nc > 500) {
            fprintf(stderr, "too many pages\n");
            return 2;
        }
        struct rec *r = mmap(NULL, (size_t)(nh + 1) * sizeof *r, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (r == MAP_FAILED)
            return 2;
        madvise(r, (size_t)(nh + 1) * sizeof *r, MADV_NOHUGEPAGE);
        madvise(g1, sizeof g1, MADV_NOHUGEPAGE);
        madvise(g2, sizeof g2, MADV_NOHUGEPAGE);
        warm((const void *)touch_global1);
        warm((const void *)touch_global2);
        warm((const void *)touch_heap);
        warm((const void *)touch_stack);
        warm((const void *)touch_through);
        warm((const void *)touch_caller_stack);
        touch_global1(n1);
        touch_global2(n2);
        touch_heap(r, nh);
        touch_stack(ns);
        if (nc)
            touch_caller_stack(nc);
        printf("faults %ld %ld %ld %ld\n", n1, n2, nh, ns);
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "switches")) {
        rounds = atol(argv[2]);
        if (pipe(p1) || pipe(p2))
            return 2;
        pthread_t t;
        pthread_create(&t, NULL, partner, NULL);
        struct rusage a, b;
        getrusage(RUSAGE_THREAD, &a);
        pingpong(rounds);
        getrusage(RUSAGE_THREAD, &b);
        pthread_join(t, NULL);
        printf("switches %ld %ld\n", b.ru_nvcsw - a.ru_nvcsw, b.ru_nivcsw - a.ru_nivcsw);
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "writes")) {
        long n = atol(argv[2]);
        write_loop(n);
        printf("writes %ld %ld\n", n, (long)bp_target);
        if (argc >= 4) { /* then the same program again, as a new image: writes M */
            fflush(stdout);
            if (!strcmp(argv[3], "true"))
                execl("/bin/true", "true", (char *)NULL);
            else
                execl("/proc/self/exe", argv[0], "writes", argv[3], (char *)NULL);
            return 3;
        }
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "members")) {
        long n = atol(argv[2]);
        write_member(n);
        printf("members %ld %ld\n", n, (long)bp_pair.b);
        return 0;
    }
    fprintf(stderr, "usage: wl_counters faults G1 G2 H S | switches N | writes N | members N\n");
    return 2;
}
