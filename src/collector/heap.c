/*
 * heap.c - heap tracing interposers; see heap.h. Built with frame pointers (FU_REGS).
 * Sections: real functions and the bootstrap arena, allocations before the start, the malloc
 * family, mappings.
 */
#define _GNU_SOURCE
#include "heap.h"
#include "realfn.h"
#include "tracefast.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RA() ((uint64_t)__builtin_return_address(0))

/* ---- real functions and the bootstrap arena ---------------------------------------------------- */

/* heap_real, heap_resolved, heap_early_open and heap_boot are read by the assembly of malloc and
 * free (below): hidden globals, not statics. */
struct heap_real {
    void *(*malloc)(size_t); /* offset 0 and 8: the assembly jumps through them */
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    void *(*memalign)(size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
};
struct heap_real heap_real COLL_HIDDEN;
#define real heap_real
_Static_assert(offsetof(struct heap_real, malloc) == 0 && offsetof(struct heap_real, free) == 8,
               "the assembly of malloc and free jumps through these");

int heap_resolved COLL_HIDDEN; /* atomic: 0 not yet, 1 looking up, 2 done */
#define resolved heap_resolved

#define BOOT_SIZE (256 * 1024)
_Alignas(64) char heap_boot[BOOT_SIZE] COLL_HIDDEN;
#define boot heap_boot

extern char heap_own_malloc[] COLL_HIDDEN; /* the exported malloc (its assembly is below) */
extern char heap_own_calloc[] COLL_HIDDEN, heap_own_realloc[] COLL_HIDDEN,
    heap_own_reallocarray[] COLL_HIDDEN, heap_own_memalign[] COLL_HIDDEN,
    heap_own_posix_memalign[] COLL_HIDDEN, heap_own_aligned_alloc[] COLL_HIDDEN,
    heap_own_valloc[] COLL_HIDDEN, heap_own_pvalloc[] COLL_HIDDEN;
static size_t boot_used; /* atomic */

static int is_boot(const void *p)
{
    return (const char *)p >= boot && (const char *)p < boot + BOOT_SIZE;
}

/* A block of the bootstrap arena: a 16-byte header holding its size, then the data. */
static void *boot_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    size_t need = n + 16 + align;
    size_t off = __atomic_fetch_add(&boot_used, (need + 15) & ~(size_t)15, __ATOMIC_RELAXED);
    if (off + need > BOOT_SIZE)
        return NULL;
    uintptr_t data = ((uintptr_t)(boot + off + 16) + align - 1) & ~(uintptr_t)(align - 1);
    memcpy((void *)(data - 16), &n, sizeof n);
    return (void *)data;
}

static size_t boot_size(const void *p)
{
    size_t n;
    memcpy(&n, (const char *)p - 16, sizeof n);
    return n;
}

/* Exclusive (realfn.h): while the lookup runs, its own allocations and any other thread's come
 * from the bootstrap arena. */
static const realfn_t real_fns[] = {
    REALFN(real.malloc, "malloc"),
    REALFN(real.free, "free"),
    REALFN(real.calloc, "calloc"),
    REALFN(real.realloc, "realloc"),
    REALFN(real.reallocarray, "reallocarray"),
    REALFN(real.memalign, "memalign"),
    REALFN(real.posix_memalign, "posix_memalign"),
    REALFN(real.aligned_alloc, "aligned_alloc"),
    REALFN(real.valloc, "valloc"),
    REALFN(real.pvalloc, "pvalloc"),
    REALFN(real.mmap, "mmap"),
    REALFN(real.munmap, "munmap"),
    REALFN(real.mremap, "mremap"),
};
static const realfn_table_t real_table = { real_fns, sizeof real_fns / sizeof *real_fns,
                                           &resolved, 1 };

/* 0 once the real functions are known, -1 while the lookup runs. */
static inline int resolve(void)
{
    return realfn_ready(&real_table);
}

/* ---- allocations before the start -------------------------------------------------------------- */

#define EARLY_MAX 4096
static struct early {
    const void *p;
    uint64_t size, ra;
    uint32_t call;
} early[EARLY_MAX];
static uint32_t nearly;   /* atomic: slots used */
int heap_early_open COLL_HIDDEN = 1; /* until the collector has started (or knows heap tracing
                                      * is off) */
#define early_open heap_early_open

/* Keeps an allocation made before the start, unless the collector itself made it. */
static void early_add(const void *p, uint64_t size, uint64_t ra, uint32_t call)
{
    if (!p || trace_thr.guard || coll_proc.init_state == 2)
        return;
    uint32_t i = __atomic_fetch_add(&nearly, 1, __ATOMIC_RELAXED);
    if (i < EARLY_MAX)
        early[i] = (struct early){ p, size, ra, call };
}

static void early_forget(const void *p)
{
    uint32_t n = __atomic_load_n(&nearly, __ATOMIC_RELAXED);
    for (uint32_t i = n < EARLY_MAX ? n : EARLY_MAX; i-- > 0;)
        if (early[i].p == p) {
            early[i].p = NULL;
            return;
        }
}

void heap_flush_early(void)
{
    uint32_t n = __atomic_load_n(&nearly, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < n && i < EARLY_MAX; i++)
        if (early[i].p)
            trace_alloc_early(early[i].call == EXP_HEAP_CALLOC ? (void *)heap_own_calloc
                              : early[i].call == EXP_HEAP_REALLOC ? (void *)heap_own_realloc
                                                                  : (void *)heap_own_malloc,
                              early[i].ra, early[i].p, early[i].size, early[i].call);
    __atomic_store_n(&nearly, 0, __ATOMIC_RELAXED); /* written once (trace_start runs again after
                                                    * a failed exec) */
    __atomic_store_n(&early_open, 0, __ATOMIC_RELEASE);
}

void heap_init_done(void)
{
    if (!__atomic_load_n(&trace_heap_on, __ATOMIC_ACQUIRE))
        __atomic_store_n(&early_open, 0, __ATOMIC_RELEASE);
}

/* The collector is up (or never will trace the heap): no more early bookkeeping. */
static inline int early_on(void)
{
    if (__builtin_expect(!early_open, 1))
        return 0;
    if (coll_proc.init_state == 2 && !trace_heap_on)
        early_open = 0;
    return early_open;
}

/* ---- the untraced path in a few instructions --------------------------------------------------- */

/*
 * Every function of the malloc family is called often enough that its untraced path (heap tracing
 * off, the collector started) must cost next to nothing: a few compares and a jump (a tail call)
 * to the real function, with no frame of the collector's in between. Otherwise the stub jumps
 * (not calls) to its C body, heap_<name>_slow, which therefore sees the program's caller as its
 * own (FU_REGS, RA). heap_own_<name> is a hidden name of the exported stub: the leaf recorded for
 * a traced call. realloc's stub also sends a block of the bootstrap arena to its body; free's
 * returns at once for a NULL pointer or such a block (never given back).
 */
void *heap_malloc_slow(size_t n) COLL_HIDDEN;
void heap_free_slow(void *p) COLL_HIDDEN;
void *heap_calloc_slow(size_t n, size_t size) COLL_HIDDEN;
void *heap_realloc_slow(void *p, size_t n) COLL_HIDDEN;
void *heap_reallocarray_slow(void *p, size_t n, size_t size) COLL_HIDDEN;
void *heap_memalign_slow(size_t align, size_t n) COLL_HIDDEN;
int heap_posix_memalign_slow(void **out, size_t align, size_t n) COLL_HIDDEN;
void *heap_aligned_alloc_slow(size_t align, size_t n) COLL_HIDDEN;
void *heap_valloc_slow(size_t n) COLL_HIDDEN;
void *heap_pvalloc_slow(size_t n) COLL_HIDDEN;

#define STR_(x) #x
#define STR(x) STR_(x)

/* The head of a stub: to label 1 (the C body) unless tracing is off, the early bookkeeping done and
 * the real functions known. */
#define STUB_HEAD(name)                                                                            \
    ".globl " #name "\n"                                                                           \
    ".type " #name ",@function\n"                                                                  \
    ".globl heap_own_" #name "\n"                                                                  \
    ".hidden heap_own_" #name "\n"                                                                 \
    #name ":\n"                                                                                    \
    "heap_own_" #name ":\n"                                                                        \
    "  .cfi_startproc\n"                                                                           \
    "  cmpl $0, trace_heap_on(%rip)\n"                                                             \
    "  jne 1f\n"                                                                                   \
    "  cmpl $0, heap_early_open(%rip)\n"                                                           \
    "  jne 1f\n"                                                                                   \
    "  cmpl $2, heap_resolved(%rip)\n"                                                             \
    "  jne 1f\n"
#define STUB_TAIL(name, slot)                                                                      \
    "  jmp *heap_real+" slot "(%rip)\n"                                                            \
    "1:\n"                                                                                         \
    "  jmp heap_" #name "_slow\n"                                                                  \
    "  .cfi_endproc\n"                                                                             \
    ".size " #name ",.-" #name "\n"
#define STUB(name, slot) STUB_HEAD(name) STUB_TAIL(name, slot)

_Static_assert(offsetof(struct heap_real, calloc) == 16 &&
               offsetof(struct heap_real, realloc) == 24 &&
               offsetof(struct heap_real, reallocarray) == 32 &&
               offsetof(struct heap_real, memalign) == 40 &&
               offsetof(struct heap_real, posix_memalign) == 48 &&
               offsetof(struct heap_real, aligned_alloc) == 56 &&
               offsetof(struct heap_real, valloc) == 64 &&
               offsetof(struct heap_real, pvalloc) == 72,
               "the stubs jump through these");

__asm__(".text\n"
        STUB(malloc, "0")
        STUB(calloc, "16")
        STUB(memalign, "40")
        STUB(posix_memalign, "48")
        STUB(aligned_alloc, "56")
        STUB(valloc, "64")
        STUB(pvalloc, "72")
        /* realloc and reallocarray: a block of the bootstrap arena goes to the body */
        STUB_HEAD(realloc)
        "  lea heap_boot(%rip), %rax\n"
        "  cmp %rax, %rdi\n"
        "  jb 2f\n"
        "  add $" STR(BOOT_SIZE) ", %rax\n"
        "  cmp %rax, %rdi\n"
        "  jb 1f\n"
        "2:\n"
        STUB_TAIL(realloc, "24")
        STUB_HEAD(reallocarray)
        "  lea heap_boot(%rip), %rax\n"
        "  cmp %rax, %rdi\n"
        "  jb 2f\n"
        "  add $" STR(BOOT_SIZE) ", %rax\n"
        "  cmp %rax, %rdi\n"
        "  jb 1f\n"
        "2:\n"
        STUB_TAIL(reallocarray, "32")
        ".globl free\n"
        ".type free,@function\n"
        "free:\n"
        "  .cfi_startproc\n"
        "  test %rdi, %rdi\n"
        "  je 3f\n"
        "  cmpl $0, trace_heap_on(%rip)\n"
        "  jne 1f\n"
        "  cmpl $0, heap_early_open(%rip)\n"
        "  jne 1f\n"
        "  cmpl $2, heap_resolved(%rip)\n"
        "  jne 1f\n"
        "  lea heap_boot(%rip), %rax\n"
        "  cmp %rax, %rdi\n"
        "  jb 2f\n"
        "  add $" STR(BOOT_SIZE) ", %rax\n"
        "  cmp %rax, %rdi\n"
        "  jb 3f\n" /* a block of the bootstrap arena: never given back */
        "2:\n"
        "  jmp *heap_real+8(%rip)\n"
        "1:\n"
        "  jmp heap_free_slow\n"
        "3:\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size free,.-free\n");

/* ---- which malloc the program calls ----------------------------------------------------------- */

void heap_check_binding(void)
{
    void *m = dlsym(RTLD_DEFAULT, "malloc");
    Dl_info di;
    if (!m || m == (void *)heap_own_malloc)
        return;
    char msg[PATH_MAX + 200];
    snprintf(msg, sizeof msg, "malloc is defined by %s, which comes before the collector (an "
             "allocator linked into the executable): allocations are not traced; link the "
             "allocator as a shared library instead",
             dladdr(m, &di) && di.dli_fname ? di.dli_fname : "?");
    coll_warn(msg);
}

/* ---- the malloc family ------------------------------------------------------------------------ */

void *heap_malloc_slow(size_t n)
{
    if (__builtin_expect(resolve(), 0))
        return boot_alloc(n, 16);
    trace_thr_t *t = trace_enter(TRACE_K_HEAP, trace_heap_on, RA());
    if (!t) {
        void *p = real.malloc(n);
        if (early_on())
            early_add(p, n, RA(), EXP_HEAP_MALLOC);
        return p;
    }
    void *p = real.malloc(n);
    if (p)
        trace_heap_alloc(t, FU_REGS(), heap_own_malloc, p, n, EXP_HEAP_MALLOC);
    trace_leave(t, TRACE_K_HEAP);
    return p;
}

void heap_free_slow(void *p)
{
    if (!p || is_boot(p))
        return;
    if (__builtin_expect(resolve(), 0))
        return; /* cannot happen: nothing but the arena was allocated before */
    trace_thr_t *t = trace_enter(TRACE_K_HEAP, trace_heap_on, RA());
    if (!t) {
        if (early_on())
            early_forget(p);
        real.free(p);
        return;
    }
    trace_heap_free(t, p, 0, EXP_HEAP_MALLOC);
    real.free(p);
    trace_leave(t, TRACE_K_HEAP);
}

void *heap_calloc_slow(size_t n, size_t size)
{
    if (__builtin_expect(resolve(), 0)) {
        if (size && n > SIZE_MAX / size)
            return NULL;
        return boot_alloc(n * size, 16); /* static memory: already zero */
    }
    trace_thr_t *t = trace_enter(TRACE_K_HEAP, trace_heap_on, RA());
    if (!t) {
        void *p = real.calloc(n, size);
        if (early_on())
            early_add(p, (uint64_t)n * size, RA(), EXP_HEAP_CALLOC);
        return p;
    }
    void *p = real.calloc(n, size);
    if (p)
        trace_heap_alloc(t, FU_REGS(), (void *)heap_own_calloc, p, (uint64_t)n * size,
                         EXP_HEAP_CALLOC);
    trace_leave(t, TRACE_K_HEAP);
    return p;
}

/* realloc of a bootstrap block: a new block from the real allocator, the contents copied. */
static void *boot_realloc(void *p, size_t n)
{
    void *q = malloc(n);
    if (q) {
        size_t old = boot_size(p);
        memcpy(q, p, old < n ? old : n);
    }
    return q;
}

/* realloc and reallocarray: the old block freed (time before the call), the new one allocated. */
static void *realloc_traced(trace_thr_t *t, fu_regs_t r, void *p, size_t n, void *q,
                            uint64_t t0, uint32_t call, const void *fn)
{
    if (q) {
        if (p)
            trace_free(t, t0, p, 0, call);
        trace_heap_alloc(t, r, fn, q, n, call);
    } else if (p && n == 0) { /* glibc frees the block and returns NULL */
        trace_free(t, t0, p, 0, call);
    }
    return q;
}

void *heap_realloc_slow(void *p, size_t n)
{
    if (__builtin_expect(resolve(), 0)) {
        void *q = boot_alloc(n, 16);
        if (q && p)
            memcpy(q, p, boot_size(p) < n ? boot_size(p) : n);
        return q;
    }
    if (p && is_boot(p))
        return boot_realloc(p, n);
    trace_thr_t *t = trace_enter(TRACE_K_HEAP, trace_heap_on, RA());
    if (!t) {
        void *q = real.realloc(p, n);
        if (early_on()) {
            if (q || n == 0)
                early_forget(p);
            early_add(q, n, RA(), EXP_HEAP_REALLOC);
        }
        return q;
    }
    uint64_t t0 = trace_now();
    void *q = realloc_traced(t, FU_REGS(), p, n, real.realloc(p, n), t0, EXP_HEAP_REALLOC,
                             (void *)heap_own_realloc);
    trace_leave(t, TRACE_K_HEAP);
    return q;
}

void *heap_reallocarray_slow(void *p, size_t n, size_t size)
{
    if (resolve() || (p && is_boot(p))) {
        if (size && n > SIZE_MAX / size) {
            errno = ENOMEM;
            return NULL;
        }
        return realloc(p, n * size);
    }
    trace_thr_t *t = trace_enter(TRACE_K_HEAP, trace_heap_on, RA());
    if (!t)
        return real.reallocarray(p, n, size);
    uint64_t t0 = trace_now();
    void *q = real.reallocarray(p, n, size);
    q = realloc_traced(t, FU_REGS(), p, q ? n * size : 0, q, t0, EXP_HEAP_REALLOCARRAY,
                       (void *)heap_own_reallocarray);
    trace_leave(t, TRACE_K_HEAP);
    return q;
}

/* The aligned allocations: traced when they succeed. */
#define ALIGNED_BODY(call_expr, size_expr, fn, call_id)                                            \
    trace_thr_t *t = trace_enter(TRACE_K_HEAP, trace_heap_on, RA());                                            \
    void *p = call_expr;                                                                           \
    if (t) {                                                                                       \
        if (p)                                                                                     \
            trace_heap_alloc(t, FU_REGS(), (const void *)fn, p, size_expr, call_id);                 \
        trace_leave(t, TRACE_K_HEAP);                                                                            \
    }                                                                                              \
    return p

void *heap_memalign_slow(size_t align, size_t n)
{
    if (__builtin_expect(resolve(), 0))
        return boot_alloc(n, align);
    ALIGNED_BODY(real.memalign(align, n), n, heap_own_memalign, EXP_HEAP_MEMALIGN);
}

void *heap_aligned_alloc_slow(size_t align, size_t n)
{
    if (__builtin_expect(resolve(), 0))
        return boot_alloc(n, align);
    ALIGNED_BODY(real.aligned_alloc(align, n), n, heap_own_aligned_alloc, EXP_HEAP_ALIGNED_ALLOC);
}

void *heap_valloc_slow(size_t n)
{
    if (__builtin_expect(resolve(), 0))
        return boot_alloc(n, 4096);
    ALIGNED_BODY(real.valloc(n), n, heap_own_valloc, EXP_HEAP_VALLOC);
}

void *heap_pvalloc_slow(size_t n)
{
    if (__builtin_expect(resolve(), 0))
        return boot_alloc((n + 4095) & ~(size_t)4095, 4096);
    ALIGNED_BODY(real.pvalloc(n), n, heap_own_pvalloc, EXP_HEAP_PVALLOC);
}

int heap_posix_memalign_slow(void **out, size_t align, size_t n)
{
    if (__builtin_expect(resolve(), 0)) {
        *out = boot_alloc(n, align);
        return *out ? 0 : ENOMEM;
    }
    trace_thr_t *t = trace_enter(TRACE_K_HEAP, trace_heap_on, RA());
    int rc = real.posix_memalign(out, align, n);
    if (t) {
        if (rc == 0)
            trace_heap_alloc(t, FU_REGS(), (void *)heap_own_posix_memalign, *out, n,
                             EXP_HEAP_POSIX_MEMALIGN);
        trace_leave(t, TRACE_K_HEAP);
    }
    return rc;
}

/* ---- mappings --------------------------------------------------------------------------------- */

/* The collector's own mappings come from its code (or from libunwind inside its signal handler):
 * never traced. */
COLL_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (resolve() || !real.mmap) /* the system call itself while dlsym runs */
        return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    trace_thr_t *t = trace_enter_core(TRACE_K_HEAP, trace_heap_on, RA());
    void *p = real.mmap(addr, len, prot, flags, fd, off);
    if (t) {
        if (p != MAP_FAILED)
            trace_alloc(t, FU_REGS(), (void *)mmap, trace_now(), p, len, EXP_HEAP_MMAP);
        trace_leave(t, TRACE_K_HEAP);
    }
    return p;
}

COLL_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

COLL_EXPORT int munmap(void *addr, size_t len)
{
    if (resolve() || !real.munmap)
        return (int)syscall(SYS_munmap, addr, len);
    trace_thr_t *t = trace_enter_core(TRACE_K_HEAP, trace_heap_on, RA());
    uint64_t t0 = t ? trace_now() : 0;
    int rc = real.munmap(addr, len);
    if (t) {
        if (rc == 0)
            trace_free(t, t0, addr, len, EXP_HEAP_MMAP);
        trace_leave(t, TRACE_K_HEAP);
    }
    return rc;
}

COLL_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *new_addr = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        new_addr = va_arg(ap, void *);
        va_end(ap);
    }
    if (resolve() || !real.mremap)
        return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
    trace_thr_t *t = trace_enter_core(TRACE_K_HEAP, trace_heap_on, RA());
    uint64_t t0 = t ? trace_now() : 0;
    void *p = real.mremap(old, old_len, new_len, flags, new_addr);
    if (t) {
        if (p != MAP_FAILED) {
            trace_free(t, t0, old, old_len, EXP_HEAP_MREMAP);
            trace_alloc(t, FU_REGS(), (void *)mremap, trace_now(), p, new_len,
                        EXP_HEAP_MREMAP);
        }
        trace_leave(t, TRACE_K_HEAP);
    }
    return p;
}
