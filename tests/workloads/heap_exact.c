/*
 * heap_exact.c - many allocations of known sizes through every allocation call, freed in a known
 * pattern, for tests/e2e/heap_exact.py (heap tracing's counts stay exact when records are written
 * by the fast path, across many chunks of the events file).
 *
 * Usage: wl_heap_exact N. Sizes: SZ(i) = 1 + (i * 37) % 1000. Each function below makes N
 * allocations (realloc_pairs and reallocarrays: 2N, the first block and the grown one) and frees
 * those whose index is not a multiple of its leak step; the test computes the same figures.
 * via_a and via_b call one allocating function, alloc_site, from the same stack depth with the
 * same frame size (the same stack pointer at the call): only the stack cells above it tell
 * their stacks apart. thread_allocs allocates in a second thread; main frees its blocks.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define SZ(i) (1 + ((size_t)(i) * 37) % 1000)

static long N;

__attribute__((noinline)) static void *alloc_site(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

/* Two callers, one body: the same frame, so alloc_site runs at the same stack pointer. */
#define VIA(name, step)                                                                            \
    __attribute__((noinline)) void name(void)                                                      \
    {                                                                                              \
        for (long i = 0; i < N; i++) {                                                             \
            void *p = alloc_site(SZ(i));                                                           \
            if (i % (step))                                                                        \
                free(p);                                                                           \
        }                                                                                          \
    }
VIA(via_a, 3)
VIA(via_b, 5)

__attribute__((noinline)) void callocs(void)
{
    for (long i = 0; i < N; i++) {
        char *p = calloc(SZ(i), 2);
        if (!p || p[SZ(i)] != 0)
            abort();
        if (i % 4)
            free(p);
    }
}

/* malloc(SZ(i)), then realloc to SZ(i) + 100: two allocations, the first ended by the realloc */
__attribute__((noinline)) void realloc_pairs(void)
{
    for (long i = 0; i < N; i++) {
        char *p = malloc(SZ(i));
        char *q = realloc(p, SZ(i) + 100);
        if (!q)
            abort();
        if (i % 2)
            free(q);
    }
}

__attribute__((noinline)) void reallocarrays(void)
{
    for (long i = 0; i < N; i++) {
        char *p = reallocarray(NULL, SZ(i), 1);
        char *q = reallocarray(p, SZ(i) + 10, 2);
        if (!q)
            abort();
        if (i % 6)
            free(q);
    }
}

__attribute__((noinline)) void aligned(void)
{
    for (long i = 0; i < N; i++) {
        void *p;
        switch (i % 4) {
        case 0: p = memalign(64, SZ(i)); break;
        case 1: if (posix_memalign(&p, 128, SZ(i))) p = NULL; break;
        case 2: p = aligned_alloc(256, SZ(i)); break;
        default: p = valloc(SZ(i)); break;
        }
        if (!p)
            abort();
        if (i % 7)
            free(p);
    }
}

static void **handed;

__attribute__((noinline)) static void *thread_allocs(void *arg)
{
    (void)arg;
    for (long i = 0; i < N; i++)
        handed[i] = malloc(SZ(i));
    return NULL;
}

int main(int argc, char **argv)
{
    N = argc > 1 ? atol(argv[1]) : 20000;
    if (N <= 0)
        return 2;
    via_a();
    via_b();
    callocs();
    realloc_pairs();
    reallocarrays();
    aligned();
    handed = calloc((size_t)N, sizeof *handed);
    pthread_t th;
    if (!handed || pthread_create(&th, NULL, thread_allocs, NULL) || pthread_join(th, NULL))
        return 1;
    for (long i = 0; i < N; i++)
        if (i % 9)
            free(handed[i]); /* frees of another thread's blocks */
    free(handed);
    printf("heap_exact %ld\n", N);
    return 0;
}
