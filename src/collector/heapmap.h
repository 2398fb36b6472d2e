/*
 * heapmap.h - the allocation map of dataspace profiling: which heap blocks are recorded when
 * heap tracing is off.
 *
 * With dataspace data asked for (`-p +...`, a `+` counter) and heap tracing off, the collector
 * still records enough of the heap for the analyzer to name an address inside a block by the
 * call site that allocated it: every block of at least HEAPMAP_LARGE bytes, every mapping
 * (mmap, mremap), and one smaller block in HEAPMAP_SAMPLE chosen by its address. Each kept block
 * is a MAP_ALLOC record with the allocation's stack (the same payload as HEAP_ALLOC), each end
 * of one a MAP_FREE record (docs/FORMAT.md); they carry no metric, so the heap views do not see
 * them. The heap interposers reach it through the tracing core (trace.h: trace_heap_on is
 * TRACE_HEAP_MAP), whose trace_alloc and trace_free ask the functions below whether a call is
 * kept before they take its time and stack.
 *
 * The choice needs no table of blocks: a small block is kept when its address hashes into the
 * sample, which is true again when that address is freed; a large block is freed with a usable
 * size (malloc_usable_size) at least its requested size. A realloc's old block is gone when its
 * end is recorded (no usable size to ask): it is kept when its address is sampled or its bit is
 * set in heapmap_large, a filter of the addresses large blocks were ever kept at (bits are never
 * cleared: a stale one costs a record, never a wrong name). So every kept block's end is
 * recorded, and an address is never named after a block that no longer holds it. A free that
 * the choice keeps for a block that was not kept (a usable size over the limit for a smaller
 * request, a stale bit) is a MAP_FREE the analyzer finds nothing for.
 *
 * Depends on collector.h. Called inside a traced call (heap.c's trace_enter): nothing here is
 * traced (malloc_usable_size is not interposed).
 */
#ifndef TALLY_COLLECTOR_HEAPMAP_H
#define TALLY_COLLECTOR_HEAPMAP_H

#include <malloc.h>
#include <stdint.h>

#include "collector.h"
#include "experiment/evformat.h"

#define HEAPMAP_LARGE EXP_MAP_LARGE   /* bytes: every block at least this large is kept */
#define HEAPMAP_SAMPLE EXP_MAP_SAMPLE /* one smaller block in this many, by address */

/* Decides from the settings whether this process keeps the map (dataspace asked for, heap
 * tracing off, not --heap-map=off); p->set.heap_map then says whether it does. Returns it. */
int heapmap_settings(coll_proc_t *p) COLL_HIDDEN;

/* The filter of addresses large blocks were kept at: one bit per hash of the address. */
#define HEAPMAP_LARGE_BITS (1u << 20)
extern uint64_t heapmap_large[HEAPMAP_LARGE_BITS / 64] COLL_HIDDEN;

static inline uint32_t heapmap_large_bit(const void *p)
{
    return (uint32_t)((((uint64_t)(uintptr_t)p >> 4) * 0xc2b2ae3d27d4eb4full) >> 44);
}

/* Is an address in the sample of small blocks? */
static inline int heapmap_sampled(const void *p)
{
    uint64_t h = ((uint64_t)(uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull;
    return h < UINT64_MAX / HEAPMAP_SAMPLE;
}

/* Is the allocation of size bytes at p by call (EXP_HEAP_*) kept? */
static inline int heapmap_keep_alloc(const void *p, uint64_t size, uint32_t call)
{
    if (call == EXP_HEAP_MMAP || call == EXP_HEAP_MREMAP)
        return 1;
    if (size >= HEAPMAP_LARGE) {
        uint32_t b = heapmap_large_bit(p);
        __atomic_fetch_or(&heapmap_large[b / 64], 1ull << (b % 64), __ATOMIC_RELAXED);
        return 1;
    }
    return heapmap_sampled(p);
}

/* Is the end of the block at p kept? call: EXP_HEAP_*; asked before the real free (the block's
 * usable size is still there), but after a realloc (the old block is gone: the filter of large
 * blocks says); the ends of mappings are always kept. guard: the thread's
 * tracing guard (trace.h), held meanwhile. */
static inline int heapmap_keep_free(int *guard, const void *p, uint32_t call)
{
    if (call == EXP_HEAP_MMAP || call == EXP_HEAP_MREMAP)
        return 1;
    if (heapmap_sampled(p))
        return 1;
    if (call != EXP_HEAP_MALLOC) { /* realloc, reallocarray: the filter of large blocks */
        uint32_t b = heapmap_large_bit(p);
        return (int)(__atomic_load_n(&heapmap_large[b / 64], __ATOMIC_RELAXED) >> (b % 64) & 1);
    }
    (*guard)++;
    int big = malloc_usable_size((void *)p) >= HEAPMAP_LARGE;
    (*guard)--;
    return big;
}

#endif
