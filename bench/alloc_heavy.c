/*
 * alloc_heavy.c - an allocation-heavy program for bench/trace.py: N malloc/free pairs of varied
 * sizes (16 B to 2.3 KiB) from three call sites (one of them strdup, inside libc), 4096 blocks
 * kept live in a ring, a little work on each block. Prints its own time per pair on stderr:
 *   alloc_heavy pairs=N seconds=S ns_per_pair=X
 * (and the process's CPU time per pair, cpu_per_pair: all its threads, less disturbed than the
 * wall time by other work on a loaded machine).
 * Usage: bench_alloc_heavy [pairs=10000000] [realloc]: with `realloc`, each new block is also
 * grown once by realloc before it goes into the ring (the cost of the realloc wrapper).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 4096
static void *ring[RING];
static unsigned rnd = 12345;

static unsigned next_random(void)
{
    rnd = rnd * 1103515245u + 12345u;
    return rnd >> 8;
}

__attribute__((noinline)) static void *make_small(void)
{
    char *p = malloc(16 + next_random() % 112);
    p[0] = 1;
    return p;
}

__attribute__((noinline)) static void *make_big(void)
{
    char *p = malloc(256 + next_random() % 2048);
    p[0] = 2;
    return p;
}

__attribute__((noinline)) static void *make_string(void)
{
    char b[64];
    int n = 8 + (int)(next_random() % 40);
    memset(b, 'x', (size_t)n);
    b[n] = 0;
    return strdup(b);
}

static int with_realloc;

__attribute__((noinline)) static void step(long i)
{
    unsigned k = next_random() % 4;
    void *p = k == 0 ? make_big() : k == 1 ? make_string() : make_small();
    if (with_realloc) {
        char *q = realloc(p, 2400 + next_random() % 64);
        if (q)
            q[2399] = 3;
        p = q;
    }
    free(ring[i % RING]);
    ring[i % RING] = p;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10000000;
    with_realloc = argc > 2 && !strcmp(argv[2], "realloc");
    struct timespec a, b, ca, cb;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++)
        step(i);
    for (int i = 0; i < RING; i++)
        free(ring[i]);
    clock_gettime(CLOCK_MONOTONIC, &b);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    double c = (double)(cb.tv_sec - ca.tv_sec) + (double)(cb.tv_nsec - ca.tv_nsec) * 1e-9;
    fprintf(stderr, "alloc_heavy pairs=%ld seconds=%.6f ns_per_pair=%.2f cpu_per_pair=%.2f\n", n, s,
            s / (double)n * 1e9, c / (double)n * 1e9);
    return 0;
}
