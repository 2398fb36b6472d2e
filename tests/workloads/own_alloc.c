/*
 * own_alloc.c - a program's own allocator in a shared library (as jemalloc or tcmalloc would be):
 * a bump allocator over one mapping that never reuses memory, defining the whole malloc family.
 * own_alloc_calls() says how many allocations it served, so a test can tell it was used;
 * own_alloc_caller() the return address of the last call of the family (where it returns to: the
 * program, when a preloaded wrapper made a tail call, or the wrapper).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARENA (256u << 20)
static char *arena;
static size_t used;  /* atomic */
static long calls;   /* atomic */

static void *bump(size_t n, size_t align)
{
    if (!__atomic_load_n(&arena, __ATOMIC_ACQUIRE)) {
        /* the raw system call: the program's mmap (maybe a tracer's) is not for the allocator */
        void *m = (void *)syscall(SYS_mmap, NULL, ARENA, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        char *expected = NULL;
        if (!__atomic_compare_exchange_n(&arena, &expected, (char *)m, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            syscall(SYS_munmap, m, ARENA);
    }
    if (align < 16)
        align = 16;
    size_t need = n + align + 16;
    size_t off = __atomic_fetch_add(&used, (need + 15) & ~(size_t)15, __ATOMIC_RELAXED);
    if (off + need > ARENA) {
        errno = ENOMEM;
        return NULL;
    }
    uintptr_t p = ((uintptr_t)(arena + off + 16) + align - 1) & ~(uintptr_t)(align - 1);
    memcpy((void *)(p - 16), &n, sizeof n);
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    return (void *)p;
}

static const void *caller; /* atomic */
#define CALLER() __atomic_store_n(&caller, __builtin_return_address(0), __ATOMIC_RELAXED)

static size_t size_of(void *p) { size_t n; memcpy(&n, (char *)p - 16, sizeof n); return n; }

long own_alloc_calls(void) { return __atomic_load_n(&calls, __ATOMIC_RELAXED); }
const void *own_alloc_caller(void) { return __atomic_load_n(&caller, __ATOMIC_RELAXED); }
void *malloc(size_t n) { CALLER(); return bump(n, 16); }
void free(void *p) { CALLER(); (void)p; }
void *calloc(size_t n, size_t s) { CALLER(); return s && n > SIZE_MAX / s ? NULL : bump(n * s, 16); }
void *memalign(size_t a, size_t n) { CALLER(); return bump(n, a); }
void *aligned_alloc(size_t a, size_t n) { CALLER(); return bump(n, a); }
void *valloc(size_t n) { CALLER(); return bump(n, 4096); }
void *pvalloc(size_t n) { CALLER(); return bump((n + 4095) & ~(size_t)4095, 4096); }
size_t malloc_usable_size(void *p) { return p ? size_of(p) : 0; }

int posix_memalign(void **out, size_t a, size_t n)
{
    CALLER();
    void *p = bump(n, a);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

static void *resize(void *p, size_t n)
{
    void *q = bump(n, 16);
    if (q && p) {
        size_t old = size_of(p);
        memcpy(q, p, old < n ? old : n);
    }
    return q;
}

void *realloc(void *p, size_t n)
{
    CALLER();
    return resize(p, n);
}

void *reallocarray(void *p, size_t n, size_t s)
{
    CALLER();
    if (s && n > SIZE_MAX / s) {
        errno = ENOMEM;
        return NULL;
    }
    return resize(p, n * s);
}
