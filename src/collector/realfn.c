/*
 * realfn.c - looking up the real functions behind the interposers; see realfn.h.
 */
#define _GNU_SOURCE
#include "realfn.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

static void look_up(const realfn_table_t *t)
{
    for (size_t i = 0; i < t->n; i++) {
        void *f = dlsym(RTLD_NEXT, t->fns[i].name);
        __atomic_store_n((void **)t->fns[i].slot, f, __ATOMIC_RELAXED);
    }
}

int realfn_resolve(const realfn_table_t *t)
{
    int s = __atomic_load_n(t->state, __ATOMIC_ACQUIRE);
    if (s == 2)
        return 0;
    if (t->exclusive) {
        int zero = 0;
        if (s == 1 || !__atomic_compare_exchange_n(t->state, &zero, 1, 0, __ATOMIC_ACQ_REL,
                                                   __ATOMIC_ACQUIRE))
            return __atomic_load_n(t->state, __ATOMIC_ACQUIRE) == 2 ? 0 : -1;
    }
    int saved = errno;
    look_up(t);
    errno = saved;
    __atomic_store_n(t->state, 2, __ATOMIC_RELEASE);
    return 0;
}
