/*
 * heapmatch.h - the live blocks of one process's heap, from its HEAP_ALLOC and HEAP_FREE events
 * in time order: which allocation each free ends, what is still allocated (the leaks, at the
 * end), how many bytes are live at any moment.
 *
 * Blocks of the malloc family are found by their exact address. Mappings (mmap, mremap) are
 * kept apart, by range: an munmap may end several of them, or only part of one (the block then
 * keeps the bytes still mapped, and ends when none are left). An allocation at the address of
 * a block still live ends that block first (its free was not seen: it came from a thread whose
 * record arrived out of order, or the collector missed it). A free of an address no block has
 * is ignored (the block was allocated before tracing began, e.g. in the parent of a fork).
 *
 * Each block carries the caller's data (hm_info_t: stack, thread, time, sequence number...),
 * given back when it ends. Memory: proportional to the live blocks. Not thread-safe. Errors:
 * functions that allocate return TALLY_ENOMEM. Depends on libc and base/err.h.
 */
#ifndef TALLY_ANALYZER_HEAPMATCH_H
#define TALLY_ANALYZER_HEAPMATCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct hm_info {
    uint32_t stack;  /* the allocating stack */
    uint32_t thread; /* the allocating thread (caller's numbering) */
    uint64_t t;      /* the allocation's time */
    uint64_t seq;    /* free for the caller (e.g. the thread's allocation count) */
    uint32_t flags;  /* free for the caller */
} hm_info_t;

typedef struct hm_block {
    uint64_t addr, size; /* size: the bytes still allocated (mappings may shrink) */
    uint64_t span;       /* mappings: [addr, addr + span) holds what is left (holes included) */
    int mapped;          /* from mmap/mremap */
    hm_info_t info;
} hm_block_t;

typedef struct hm hm_t;

/* Called for every block that ends, before it is forgotten. */
typedef void (*hm_end_fn)(void *ctx, const hm_block_t *b);

hm_t *hm_new(void);
void hm_free(hm_t *h);
/* Forgets every block (the next process). */
void hm_clear(hm_t *h);

/* A block of size bytes allocated at addr (mapped: by mmap/mremap). A live block at the same
 * address ends first (end is called for it). */
int hm_alloc(hm_t *h, uint64_t addr, uint64_t size, int mapped, const hm_info_t *info,
             hm_end_fn end, void *ctx);
/* A free at addr (mapped: munmap/mremap of [addr, addr + size)). Calls end for every block it
 * ends; a mapping unmapped in part only shrinks. Returns the bytes it released. */
uint64_t hm_release(hm_t *h, uint64_t addr, uint64_t size, int mapped, hm_end_fn end, void *ctx);

/* The live blocks, in no particular order. */
void hm_foreach(const hm_t *h, hm_end_fn fn, void *ctx);
size_t hm_count(const hm_t *h);
uint64_t hm_bytes(const hm_t *h);

#endif
