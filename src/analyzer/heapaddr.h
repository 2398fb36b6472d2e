/*
 * heapaddr.h - the live heap blocks of one process by address, for the question "which block
 * holds this address now?" (dataspace profiling joins a memory reference to the allocation that
 * made the memory it touched: seed 002's data objects, heap scope).
 *
 * Fed the HEAP_ALLOC and HEAP_FREE events of a process in time order (as exp_scan gives them),
 * it keeps two ordered sets of address ranges: blocks of the malloc family and mappings
 * (mmap, mremap). An allocation ends every live block of its set that it overlaps (their frees
 * were not seen); a free of the malloc family ends the block at that exact address; an munmap
 * removes its range from the mappings, trimming or splitting what it covers in part. ha_find
 * answers from the malloc blocks first (a program's own allocator may carve its blocks out of
 * a traced mapping: the block is the object), then the mappings. Each range remembers where its
 * allocation began (base: offsets into the allocated object stay right after a trim) and the
 * caller's tag (the allocating stack).
 *
 * Complexity: O(log n) expected per operation (treaps with random priorities, from a generator
 * seeded unpredictably for each set: addresses chosen by an experiment cannot make them deep),
 * memory proportional to the live blocks. Not thread-safe. Errors: ha_alloc returns
 * TALLY_ENOMEM (the block is then not known). Depends on libc and base/err.h.
 */
#ifndef TALLY_ANALYZER_HEAPADDR_H
#define TALLY_ANALYZER_HEAPADDR_H

#include <stdint.h>

typedef struct ha_block {
    uint64_t lo, hi;   /* the live range [lo, hi) */
    uint64_t base;     /* where the allocation began (lo, unless its head was unmapped) */
    uint64_t size;     /* the size allocated */
    uint32_t tag;      /* the caller's (the allocating stack) */
    int mapped;
} ha_block_t;

typedef struct ha ha_t;

ha_t *ha_new(void);
void ha_free(ha_t *h);
/* Forgets every block (the next process). */
void ha_clear(ha_t *h);
/* A block of size bytes allocated at addr (mapped: mmap/mremap). 0 or TALLY_ENOMEM. */
int ha_alloc(ha_t *h, uint64_t addr, uint64_t size, int mapped, uint32_t tag);
/* A free at addr; for mappings (munmap, the old range of mremap) of [addr, addr + size). */
void ha_release(ha_t *h, uint64_t addr, uint64_t size, int mapped);
/* The live block holding addr, or NULL; valid until the next change. */
const ha_block_t *ha_find(const ha_t *h, uint64_t addr);

#endif
