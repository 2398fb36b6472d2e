/*
 * maps.h - the load-object map of the process: `load` and `unload` log records.
 *
 * maps_rescan() walks dl_iterate_phdr and compares with what it logged before: every new object
 * gets an id and a `load` record (path, build-id from its PT_NOTE in memory, load bias, lowest and
 * highest+1 address of its executable PT_LOAD segments); every object that is gone gets `unload`.
 * The main program (empty dlpi_name) is logged with the path of /proc/self/exe, the vDSO as
 * "[vdso]". An object found by a rescan was loaded after the previous rescan began, so its `load`
 * record carries that time (objects loaded by libc itself, e.g. NSS modules, are found late but
 * still cover every sample taken in them).
 *
 * Called at process start, after every interposed dlopen/dlclose/dlmopen, and at the end of the
 * image. Normal context only (takes a mutex, allocates); the profiling signal is blocked while
 * dl_iterate_phdr runs. maps_after_fork() resets the table in a fork child (new experiment: ids
 * start again). Depends on: collector.h, signals.h (blocking).
 */
#ifndef TALLY_COLLECTOR_MAPS_H
#define TALLY_COLLECTOR_MAPS_H

#include "collector.h"

void maps_rescan(coll_proc_t *p);
void maps_after_fork(void);

/* Thread-locals of objects without static TLS (loaded by dlopen): each thread's block of such an
 * object is allocated on the thread's first use, at no fixed place. At a sample that carries a
 * memory reference, before its MEMREF, maps_tls_note writes a TLS_BLOCK record (docs/FORMAT.md)
 * for every such object whose block the calling thread has and has not yet recorded: the block's
 * address, read from the thread's dynamic thread vector (glibc's DTV, at %fs:8: the slot of the
 * object's TLS module id, which rescans take from dl_iterate_phdr). At most 64 objects are
 * followed. AS-safe (loads only; the slot is taken as it is: a thread interrupted inside the
 * dynamic linker's update of its vector may have it stale). */
void maps_tls_note(exp_stream_t *s, uint64_t t) COLL_HIDDEN;

#endif
