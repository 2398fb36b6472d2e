/*
 * heap.h - heap tracing: the interposers of the malloc family and of mmap/munmap/mremap.
 *
 * Exported: malloc, calloc, realloc, reallocarray, free, memalign, posix_memalign, aligned_alloc,
 * valloc, pvalloc, mmap, mmap64, munmap, mremap. Each calls the next definition in the lookup
 * order (dlsym RTLD_NEXT): libc's, or the program's own allocator when it brings one in a shared
 * library (jemalloc, tcmalloc) or preloads it after the collector, so whatever `malloc` the
 * program uses is the one traced. (An allocator linked into the executable itself comes before
 * any preload: its calls are not seen, and the start of tracing says so in a warning.)
 *
 * While the real functions are being looked up (dlsym may allocate), allocations come from a
 * small static arena; its blocks are never given back. Allocations made before the collector
 * starts (by libc and the libraries initialized before it) are kept in a table and written at
 * the start with a two-frame stack (function, caller); those freed before are forgotten.
 *
 * Records (trace.h): HEAP_ALLOC after a successful call (time taken after the real call), with
 * the stack; HEAP_FREE before the real free (time taken before it, so another thread reusing
 * the address is seen after it), without a stack; realloc as the free of the old block and the
 * allocation of the new one; a failed call records nothing. errno is what the real call left.
 *
 * With heap tracing off (once the collector's initialization is over) each function of the
 * malloc family is a stub that jumps to the real function: no frame of the collector's between
 * the program and its allocator. mmap, munmap and mremap stay C wrappers (system calls).
 *
 * Depends on trace.h. Normal context; the interposers are as async-signal-safe as the real
 * functions they call (a program calling malloc in a signal handler is recorded like any other).
 */
#ifndef TALLY_COLLECTOR_HEAP_H
#define TALLY_COLLECTOR_HEAP_H

#include "trace.h"

#endif
