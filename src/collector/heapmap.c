/*
 * heapmap.c - the allocation map of dataspace profiling; see heapmap.h.
 */
#include "heapmap.h"

#include "counters.h"

uint64_t heapmap_large[HEAPMAP_LARGE_BITS / 64];

int heapmap_settings(coll_proc_t *p)
{
    int on = p->set.heap_map && !p->set.heap && (p->set.clock_mref || counters_dataspace());
    p->set.heap_map = on;
    return on;
}
