/*
 * unwind.c - libunwind behind one hook; see unwind.h. AS-safe parts: unwind_stack.
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "unwind.h"

#include <libunwind.h>

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

void unwind_prime(void)
{
    void *b[8];
    backtrace_fn(b, 8);
}

uint32_t unwind_stack(const ucontext_t *uc, void **scratch, uint64_t *out, uint32_t max,
                      uint32_t *flags)
{
    uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    int cap = (int)(max + UNWIND_SKIP_MAX);
    int n = backtrace_fn(scratch, cap);
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
