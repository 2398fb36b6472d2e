/*
 * lazylib.h - a shared library loaded at its first use, not at every start of tally.
 *
 * Every run of the tally executable paid for loading and relocating every library any command
 * uses: capstone (disassembly), libpfm4 (counter names), libmicrohttpd with GnuTLS (tally view),
 * libstdc++ (C++ names): 134,000 relocations and 900 page faults, 4.6 ms of CPU before main(),
 * most of `tally collect -p on /bin/true`. Each is now opened by its exact soname (the one it was
 * built against, from CMake) the first time one of its functions is called, by forwarders of the
 * same names and prototypes (analyzer/lazy_*.c, cli/lazy_*.c): callers do not change.
 *
 * lazylib_get resolves a table of symbols once (thread-safe: a mutex around the first load; later
 * calls read a flag). When the library or one of its symbols is missing, it fails, and the reason
 * (dlerror's, naming the file) stays in the table for the caller's message; each forwarder then
 * returns its function's own failure value (NULL, an error code), which callers already handle.
 *
 * Depends on nothing but libc (dlopen). Not for signal context.
 */
#ifndef TALLY_BASE_LAZYLIB_H
#define TALLY_BASE_LAZYLIB_H

#include <pthread.h>
#include <stddef.h>

typedef struct lazylib {
    const char *soname;       /* as dlopen takes it: "libcapstone.so.4" */
    const char *const *names; /* the symbols, in the order of fns */
    void **fns;               /* filled by lazylib_get */
    size_t n;
    pthread_mutex_t lock;     /* PTHREAD_MUTEX_INITIALIZER */
    int state;                /* atomic: 0 not tried, 1 loaded, -1 failed */
    char why[256];            /* when it failed: why, for a message */
} lazylib_t;

#define LAZYLIB(so, names, fns)                                                                    \
    { (so), (names), (void **)(fns), sizeof(names) / sizeof *(names), PTHREAD_MUTEX_INITIALIZER,  \
      0, "" }

/* 0 when every symbol of l is resolved (loading the library the first time); -1 when not, with
 * l->why set. */
int lazylib_get(lazylib_t *l);

#endif
