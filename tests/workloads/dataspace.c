/*
 * dataspace.c - memory references with known data objects, for dataspace profiling
 * (tests/e2e/dataspace.py, bench/dataspace).
 *
 *   dataspace list SECONDS   walks a linked list of 64-byte nodes (struct node) in a random order
 *                            for SECONDS of CPU time: nearly every cycle waits for node->next
 *   dataspace mixed SECONDS  loops over a global array (garr), a global structure (gstat) and a
 *                            thread-local (tls_count), a heap array of structures (struct cell,
 *                            member weight) and a stack array, for SECONDS of CPU time
 * Built -O2 -g: what the analyzer must read is optimized code.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct node {
    char name[40];
    long count;
    struct node *next;
    long spare;
};

struct cell {
    int id;
    double weight;
    char tag[4];
};

struct stats {
    long hits;
    long misses;
};

#define GN 4096
long garr[GN];
struct stats gstat;
__thread long tls_count;

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static long walk(struct node *head, long rounds)
{
    long n = 0;
    for (long r = 0; r < rounds; r++)
        for (struct node *p = head; p; p = p->next)
            n++;
    return n;
}

static int list_mode(double seconds)
{
    enum { N = 1 << 18 }; /* 16 MiB of nodes: beyond the caches */
    struct node *nodes = malloc(N * sizeof *nodes);
    uint32_t *order = malloc(N * sizeof *order);
    if (!nodes || !order)
        return 1;
    for (uint32_t i = 0; i < N; i++)
        order[i] = i;
    uint64_t x = 88172645463325252ull;
    for (uint32_t i = N - 1; i > 0; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t j = (uint32_t)(x % (i + 1));
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (uint32_t i = 0; i < N; i++) {
        struct node *p = &nodes[order[i]];
        memset(p->name, 'a', sizeof p->name);
        p->count = i;
        p->next = i + 1 < N ? &nodes[order[i + 1]] : NULL;
    }
    long total = 0;
    double t0 = cpu_seconds();
    while (cpu_seconds() - t0 < seconds)
        total += walk(&nodes[order[0]], 4);
    printf("walked %ld nodes\n", total);
    free(order);
    free(nodes);
    return 0;
}

__attribute__((noinline)) static long sum_globals(long rounds)
{
    long s = 0;
    for (long r = 0; r < rounds; r++)
        for (int i = 0; i < GN; i++)
            s += garr[i] ^ r;
    return s;
}

__attribute__((noinline)) static void count_stats(long rounds, const long *v)
{
    for (long r = 0; r < rounds; r++) {
        if (v[r & 7] > 3)
            gstat.hits++;
        else
            gstat.misses++;
        __asm__ volatile("" ::: "memory");
    }
}

__attribute__((noinline)) static void count_tls(long rounds)
{
    for (long r = 0; r < rounds; r++) {
        tls_count += r;
        __asm__ volatile("" ::: "memory");
    }
}

__attribute__((noinline)) static double sum_cells(const struct cell *cells, int n, long rounds)
{
    double s = 0;
    for (long r = 0; r < rounds; r++)
        for (int i = 0; i < n; i++)
            s += cells[i].weight;
    return s;
}

__attribute__((noinline)) static long stack_array(long rounds)
{
    volatile int local[1024];
    for (int i = 0; i < 1024; i++)
        local[i] = i;
    long s = 0;
    for (long r = 0; r < rounds; r++)
        for (int i = 0; i < 1024; i++)
            s += local[i];
    return s;
}

static int mixed_mode(double seconds)
{
    enum { NC = 1 << 14 };
    struct cell *cells = calloc(NC, sizeof *cells);
    if (!cells)
        return 1;
    for (int i = 0; i < NC; i++)
        cells[i].weight = i * 0.5;
    for (int i = 0; i < GN; i++)
        garr[i] = i;
    long v[8] = { 1, 5, 2, 7, 4, 0, 9, 3 };
    double s = 0;
    double t0 = cpu_seconds();
    while (cpu_seconds() - t0 < seconds) {
        s += (double)sum_globals(20);
        count_stats(100000, v);
        count_tls(50000);
        s += sum_cells(cells, NC, 5);
        s += (double)stack_array(80);
    }
    printf("%g %ld %ld %ld\n", s, gstat.hits, gstat.misses, tls_count);
    free(cells);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: dataspace list|mixed SECONDS\n");
        return 2;
    }
    double seconds = atof(argv[2]);
    if (!strcmp(argv[1], "list"))
        return list_mode(seconds);
    if (!strcmp(argv[1], "mixed"))
        return mixed_mode(seconds);
    fprintf(stderr, "dataspace: unknown mode '%s'\n", argv[1]);
    return 2;
}
