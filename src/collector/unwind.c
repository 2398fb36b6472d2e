/*
 * unwind.c - libunwind behind one hook; see unwind.h. AS-safe parts: unwind_stack.
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "unwind.h"

#include <libunwind.h>
#include <pthread.h>

#include "experiment/evformat.h"

static unwind_backtrace_fn backtrace_fn = unw_backtrace;

void unwind_init(void)
{
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

void unwind_set_backtrace(unwind_backtrace_fn fn)
{
    backtrace_fn = fn ? fn : unw_backtrace;
}

/* Whether a thread's first unwind may be left to its first sample's handler (unwind_prime): -1 not
 * known yet, 0 no, 1 yes. */
static int lazy_ok = -1;

/* glibc keeps the values of the first 32 thread-specific keys inside the thread's descriptor
 * (PTHREAD_KEY_2NDLEVEL_SIZE): pthread_setspecific of such a key never allocates. */
#define KEYS_IN_DESCRIPTOR 32

/* The key a first unwind creates, found by the lowest free key before and after it: -1 if no key
 * was created (libunwind's existed already, or another unwinder is hooked). */
static int first_unwind_key(void)
{
    pthread_key_t before, after;
    if (pthread_key_create(&before, NULL) != 0)
        return -1;
    pthread_key_delete(before);
    void *b[8];
    backtrace_fn(b, 8);
    if (pthread_key_create(&after, NULL) != 0)
        return -1;
    pthread_key_delete(after);
    /* the lowest free key was taken, by a key this thread has a value of: libunwind's trace
     * cache (another thread creating a key meanwhile has no value here) */
    if (after == before || pthread_getspecific(before) == NULL)
        return -1;
    return (int)before;
}

int unwind_prime_needed(void)
{
    return __atomic_load_n(&lazy_ok, __ATOMIC_ACQUIRE) != 1;
}

void unwind_prime(void)
{
    if (__atomic_load_n(&lazy_ok, __ATOMIC_ACQUIRE) < 0) {
        int key = first_unwind_key();
        __atomic_store_n(&lazy_ok, key >= 0 && key < KEYS_IN_DESCRIPTOR, __ATOMIC_RELEASE);
        return;
    }
    void *b[8];
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    backtrace_fn(b, 8);
    pthread_setcancelstate(cancel, NULL);
}

uint32_t unwind_stack(const ucontext_t *uc, void **scratch, uint64_t *out, uint32_t max,
                      uint32_t *flags)
{
    uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    int cap = (int)(max + UNWIND_SKIP_MAX);
    /* libunwind checks addresses with write, read and msync, cancellation points: a thread
     * with a pending cancellation, sampled where its own code has none (inside malloc), was
     * cancelled from this handler (glibc's pthread_setcancelstate is an atomic update of the
     * thread's own word: safe here) */
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    int n = backtrace_fn(scratch, cap);
    pthread_setcancelstate(cancel, NULL);
    int skip = -1;
    for (int i = 0; i < n && i < UNWIND_SKIP_MAX; i++)
        if ((uint64_t)scratch[i] == pc) {
            skip = i;
            break;
        }
    *flags = 0;
    if (skip < 0) {
        out[0] = pc;
        *flags = EXP_STACK_UNWIND_FAIL;
        return 1;
    }
    uint32_t k = (uint32_t)(n - skip);
    if (k > max || n == cap) {
        *flags |= EXP_STACK_TRUNCATED;
        if (k > max)
            k = max;
    }
    for (uint32_t i = 0; i < k; i++)
        out[i] = (uint64_t)scratch[skip + (int)i];
    return k;
}
