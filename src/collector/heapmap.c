/*
 * heapmap.c - the allocation map of dataspace profiling; see heapmap.h.
 */
#define _GNU_SOURCE
#include "heapmap.h"

#include <malloc.h>

#include "counters.h"
#include "experiment/evformat.h"

int heapmap_settings(coll_proc_t *p)
{
    int on = p->set.heap_map && !p->set.heap && (p->set.clock_mref || counters_dataspace());
    p->set.heap_map = on;
    return on;
}

int heapmap_keep_alloc(const void *p, uint64_t size, uint32_t call)
{
    return size >= HEAPMAP_LARGE || call == EXP_HEAP_MMAP || call == EXP_HEAP_MREMAP ||
           heapmap_sampled(p);
}

int heapmap_keep_free(const void *p, uint32_t call)
{
    if (call != EXP_HEAP_MALLOC) /* realloc (the old block is gone: no size to ask), mappings */
        return 1;
    return heapmap_sampled(p) || malloc_usable_size((void *)p) >= HEAPMAP_LARGE;
}
