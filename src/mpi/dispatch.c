/*
 * dispatch.c - libtally-mpi.so, preloaded by `tally collect -M on` after the collector: it
 * exports every traced MPI name (C MPI_X, gfortran's mpi_x_, mpi_f08's mpi_x_f08_ and MPICH's
 * mpi_x_f08ts_, src/mpi/functions.py) as an
 * entry that jumps through a slot (tramp.S, generated). The first call of any of them binds all
 * slots at once (tw_bind): it recognizes the MPI implementation the process has loaded (Open MPI
 * by ompi_mpi_comm_world, MPICH and its ABI by MPIR_Err_return_comm), dlopens the wrapper
 * library built for it beside this one (libtally-mpi-openmpi.so, libtally-mpi-mpich.so) and
 * points each slot at its wrapper. A slot without a wrapper (no implementation recognized, no
 * wrapper library, a Fortran name whose implementation has no Fortran library loaded) points
 * at the next definition of the name, the implementation's own: the program then runs as
 * without tally, unrecorded. The entries add no frame: a wrapper's caller is the program.
 * Nothing here prints, allocates after binding or changes errno.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"

extern void *tw_slots[TW_NSLOTS];
extern const void *const tw_public[TW_NSLOTS];

static pthread_once_t once = PTHREAD_ONCE_INIT;

/* A name nobody defines after us: calling it is calling a function that does not exist. */
static void missing(void)
{
    abort();
}

static void *open_wrappers(const char *impl)
{
    Dl_info di;
    char path[PATH_MAX];
    if (!dladdr((void *)open_wrappers, &di) || !di.dli_fname)
        return NULL;
    const char *slash = strrchr(di.dli_fname, '/');
    int dirlen = slash ? (int)(slash - di.dli_fname) : 1;
    const char *dir = slash ? di.dli_fname : ".";
    if (snprintf(path, sizeof path, "%.*s/libtally-mpi-%s.so", dirlen, dir, impl) >=
        (int)sizeof path)
        return NULL;
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static void bind_all(void)
{
    int saved = errno;
    static void *entries[TW_NSLOTS];
    const char *impl = NULL;
    if (dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world"))
        impl = "openmpi";
    else if (dlsym(RTLD_DEFAULT, "MPIR_Err_return_comm"))
        impl = "mpich";
    void *h = impl ? open_wrappers(impl) : NULL;
    typedef int (*bind_fn)(const void *const *, unsigned, void **);
    bind_fn b = h ? (bind_fn)dlsym(h, "tallyw_bind") : NULL;
    if (!b || b(tw_public, TW_NSLOTS, entries) != 0)
        memset(entries, 0, sizeof entries);
    for (unsigned i = 0; i < TW_NSLOTS; i++) {
        void *f = entries[i];
        if (!f)
            f = dlsym(RTLD_NEXT, tw_slot_names[i]);
        if (!f)
            f = (void *)missing;
        __atomic_store_n(&tw_slots[i], f, __ATOMIC_RELEASE);
    }
    errno = saved;
}

/* The definition of name after this library's: the implementation's own (for the wrappers of
 * names the implementation has no PMPI name of: MPICH's mpi_f08 bindings). */
__attribute__((visibility("default"))) void *tally_mpi_next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    /* not a tail call: RTLD_NEXT is relative to the object dlsym returns into, this one */
    __asm__ volatile("" ::: "memory");
    return f;
}

/* The stub of every slot calls this before its first use (tramp.S, tw_lazy_common). */
__attribute__((visibility("hidden"))) void tw_bind(unsigned long slot)
{
    pthread_once(&once, bind_all);
}
