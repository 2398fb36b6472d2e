/*
 * trace_heap.c - known allocations, each kind in a function of its own (the e2e test checks the
 * exact counts and bytes of each, and where the leaks were allocated):
 *   freed_mallocs   100 x malloc(1000), all freed                     100 allocs, 100000 B
 *   leaky_mallocs    10 x malloc(123), never freed                    10 leaks, 1230 B
 *   callocs           5 x calloc(10, 20), 2 freed                     3 leaks, 600 B
 *   reallocs        malloc(100) -> realloc 200 -> realloc 300, freed; malloc(50) -> realloc 500,
 *                   leaked                                            5 allocs, 1150 B; 1 leak of
 *                                                                     500 B (the realloc's)
 *   array_allocs    reallocarray(NULL, 10, 8), freed                  1 alloc, 80 B
 *   aligned_allocs  posix_memalign 2 x 256, aligned_alloc 2 x 512, memalign 100, valloc 1000,
 *                   all freed but one aligned_alloc                  6 allocs, 2636 B; 1 leak 512 B
 *   mappings        mmap 8192 unmapped; mmap 16384 with 4096 unmapped 12288 B leaked (1 leak)
 *   thread_allocs   in a thread: 20 x malloc(64) freed by main after the join, 7 x malloc(77)
 *                   leaked                                            27 allocs; 7 leaks, 539 B
 * In the e2e test all of this runs under -H on; nothing else of the program allocates from these
 * functions. Built a second time with OWN_ALLOC, linked to its own allocator (own_alloc.c); that
 * build's `direct` mode calls every function of the malloc family once and names those whose
 * allocator did not return straight to the program (a wrapper's frame in between): with heap
 * tracing off, a preloaded collector must add none.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef OWN_ALLOC
#include <dlfcn.h>
long own_alloc_calls(void);
const void *own_alloc_caller(void);

static int not_direct;

/* The allocator's caller, after a call from here: this executable (not a wrapper's library). */
static void direct_check(const char *what)
{
    Dl_info mine, di;
    const void *ra = own_alloc_caller();
    if (!dladdr((void *)direct_check, &mine) || !dladdr(ra, &di) ||
        di.dli_fbase != mine.dli_fbase) {
        printf("not direct: %s (returns to %s)\n", what,
               dladdr(ra, &di) && di.dli_fname ? di.dli_fname : "?");
        not_direct++;
    }
}

static int direct_calls(void)
{
    void *p = malloc(10);
    direct_check("malloc");
    p = realloc(p, 20);
    direct_check("realloc");
    free(p);
    direct_check("free");
    p = calloc(2, 8);
    direct_check("calloc");
    p = reallocarray(p, 4, 8);
    direct_check("reallocarray");
    free(p);
    p = memalign(64, 10);
    direct_check("memalign");
    free(p);
    p = aligned_alloc(64, 64);
    direct_check("aligned_alloc");
    free(p);
    p = valloc(10);
    direct_check("valloc");
    free(p);
    p = pvalloc(10);
    direct_check("pvalloc");
    free(p);
    if (posix_memalign(&p, 64, 10) == 0) {
        direct_check("posix_memalign");
        free(p);
    }
    printf("direct calls: %s\n", not_direct ? "no" : "all");
    return not_direct != 0;
}
#endif

static void *keep[64];
static void *from_thread[20];
static volatile char sink;

static void touch(void *p, size_t n)
{
    memset(p, 1, n);
    sink += ((char *)p)[n - 1];
}

__attribute__((noinline)) static void freed_mallocs(void)
{
    void *p[100];
    for (int i = 0; i < 100; i++) {
        p[i] = malloc(1000);
        touch(p[i], 1000);
    }
    for (int i = 0; i < 100; i++)
        free(p[i]);
}

__attribute__((noinline)) static void leaky_mallocs(void)
{
    for (int i = 0; i < 10; i++) {
        keep[i] = malloc(123);
        touch(keep[i], 123);
    }
}

__attribute__((noinline)) static void callocs(void)
{
    for (int i = 0; i < 5; i++)
        keep[10 + i] = calloc(10, 20);
    free(keep[10]);
    free(keep[11]);
}

__attribute__((noinline)) static void reallocs(void)
{
    char *p = malloc(100);
    touch(p, 100);
    p = realloc(p, 200);
    p = realloc(p, 300);
    touch(p, 300);
    free(p);
    char *q = malloc(50);
    q = realloc(q, 500);
    touch(q, 500);
    keep[20] = q;
}

__attribute__((noinline)) static void array_allocs(void)
{
    long *a = reallocarray(NULL, 10, 8);
    touch(a, 80);
    free(a);
}

__attribute__((noinline)) static void aligned_allocs(void)
{
    void *p[6];
    posix_memalign(&p[0], 64, 256);
    posix_memalign(&p[1], 64, 256);
    p[2] = aligned_alloc(128, 512);
    keep[21] = aligned_alloc(128, 512);
    p[3] = memalign(4096, 100);
    p[4] = valloc(1000);
    for (int i = 0; i < 5; i++)
        free(p[i]);
}

__attribute__((noinline)) static void mappings(void)
{
    char *a = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    touch(a, 8192);
    munmap(a, 8192);
    char *b = mmap(NULL, 16384, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    touch(b, 16384);
    munmap(b, 4096); /* the first page only */
    keep[22] = b + 4096;
}

__attribute__((noinline)) static void *thread_allocs(void *arg)
{
    for (int i = 0; i < 20; i++)
        from_thread[i] = malloc(64);
    for (int i = 0; i < 7; i++)
        keep[30 + i] = malloc(77);
    return arg;
}

int main(int argc, char **argv)
{
#ifdef OWN_ALLOC
    if (argc > 1 && !strcmp(argv[1], "direct"))
        return direct_calls();
#endif
    (void)argc;
    (void)argv;
    freed_mallocs();
    leaky_mallocs();
    callocs();
    reallocs();
    array_allocs();
    aligned_allocs();
    mappings();
    pthread_t t;
    pthread_create(&t, NULL, thread_allocs, NULL);
    pthread_join(t, NULL);
    for (int i = 0; i < 20; i++)
        free(from_thread[i]); /* freed by another thread than the one that allocated */
    printf("heap done %d\n", sink);
#ifdef OWN_ALLOC
    printf("own allocator: %s\n", own_alloc_calls() >= 150 ? "used" : "not used");
#endif
    return 0;
}
