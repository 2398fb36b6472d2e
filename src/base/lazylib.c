/*
 * lazylib.c - a shared library loaded at its first use; see lazylib.h.
 */
#define _GNU_SOURCE
#include "lazylib.h"

#include <dlfcn.h>
#include <stdio.h>

int lazylib_get(lazylib_t *l)
{
    int st = __atomic_load_n(&l->state, __ATOMIC_ACQUIRE);
    if (st)
        return st > 0 ? 0 : -1;
    pthread_mutex_lock(&l->lock);
    if (!l->state) {
        void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
        const char *e = h ? NULL : dlerror();
        for (size_t i = 0; h && i < l->n; i++)
            if (!(l->fns[i] = dlsym(h, l->names[i]))) {
                snprintf(l->why, sizeof l->why, "%s has no %s", l->soname, l->names[i]);
                h = NULL; /* (kept open: harmless, and another table may use it) */
            }
        if (e)
            snprintf(l->why, sizeof l->why, "%s", e);
        __atomic_store_n(&l->state, h ? 1 : -1, __ATOMIC_RELEASE);
    }
    st = l->state;
    pthread_mutex_unlock(&l->lock);
    return st > 0 ? 0 : -1;
}
