/*
 * lazy_cxxabi.c - __cxa_demangle (symbols.c: C++ names), forwarded to libstdc++ loaded at the
 * first call (base/lazylib.h): only analyses that meet a C++ name load it. Without it a name
 * stays mangled (status -1, as for memory exhausted), as symbols.c already handles.
 */
#define _GNU_SOURCE
#include <stddef.h>

#include "analyzer/lazyload.h"
#include "base/lazylib.h"


static const char *const names[] = { "__cxa_demangle" };
static struct {
    char *(*demangle)(const char *, char *, size_t *, int *);
} fn;
static lazylib_t lib = LAZYLIB(TALLY_SONAME_STDCXX, names, &fn);

const char *lazy_cxxabi_why(void)
{
    return lib.why;
}

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status)
{
    if (lazylib_get(&lib)) {
        if (status)
            *status = -1;
        return NULL;
    }
    return fn.demangle(mangled, buf, len, status);
}
