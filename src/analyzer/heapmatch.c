/*
 * heapmatch.c - live heap blocks of a process; see heapmatch.h. Sections: the block tables,
 * allocation and release.
 */
#include "analyzer/heapmatch.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/u64map.h"

/* ---- the block tables ------------------------------------------------------------------------- */

/* A table of blocks with an index by address; removal moves the last block into the hole. */
typedef struct btab {
    hm_block_t *b;
    size_t n, cap;
    u64map_t index; /* addr -> position in b */
    uint64_t bytes;
} btab_t;

struct hm {
    btab_t heap, maps;
};

static int btab_add(btab_t *t, const hm_block_t *b)
{
    if (t->n == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 1024;
        hm_block_t *nb = realloc(t->b, ncap * sizeof *nb);
        if (!nb)
            return TALLY_ENOMEM;
        t->b = nb;
        t->cap = ncap;
    }
    if (u64map_put(&t->index, b->addr, (uint32_t)t->n))
        return TALLY_ENOMEM;
    t->b[t->n++] = *b;
    t->bytes += b->size;
    return 0;
}

/* Ends block i. */
static void btab_end(btab_t *t, size_t i, hm_end_fn end, void *ctx)
{
    hm_block_t gone = t->b[i];
    u64map_remove(&t->index, gone.addr);
    if (i != t->n - 1) {
        t->b[i] = t->b[t->n - 1];
        u64map_put(&t->index, t->b[i].addr, (uint32_t)i); /* present: cannot grow */
    }
    t->n--;
    t->bytes -= gone.size;
    if (end)
        end(ctx, &gone);
}

static void btab_free(btab_t *t)
{
    free(t->b);
    u64map_free(&t->index);
    memset(t, 0, sizeof *t);
}

hm_t *hm_new(void) { return calloc(1, sizeof(hm_t)); }

void hm_free(hm_t *h)
{
    if (!h)
        return;
    btab_free(&h->heap);
    btab_free(&h->maps);
    free(h);
}

void hm_clear(hm_t *h)
{
    btab_free(&h->heap);
    btab_free(&h->maps);
}

/* ---- allocation and release ------------------------------------------------------------------- */

int hm_alloc(hm_t *h, uint64_t addr, uint64_t size, int mapped, const hm_info_t *info,
             hm_end_fn end, void *ctx)
{
    btab_t *t = mapped ? &h->maps : &h->heap;
    const uint32_t *live = u64map_get(&t->index, addr);
    if (live)
        btab_end(t, *live, end, ctx);
    hm_block_t b = { addr, size, size, mapped, *info };
    return btab_add(t, &b);
}

uint64_t hm_release(hm_t *h, uint64_t addr, uint64_t size, int mapped, hm_end_fn end, void *ctx)
{
    btab_t *t = mapped ? &h->maps : &h->heap;
    const uint32_t *at = u64map_get(&t->index, addr);
    if (!mapped || (at && t->b[*at].span == size)) {
        if (!at)
            return 0;
        uint64_t n = t->b[*at].size;
        btab_end(t, *at, end, ctx);
        return n;
    }
    /* a range of mappings: every block it overlaps loses the overlap (its head or tail: the
     * block starts later or ends sooner; a hole in the middle only lowers its size) */
    uint64_t lo = addr, hi = addr + size, released = 0;
    for (size_t i = t->n; i-- > 0;) {
        hm_block_t *b = &t->b[i];
        uint64_t blo = b->addr, bhi = b->addr + b->span;
        uint64_t olo = lo > blo ? lo : blo, ohi = hi < bhi ? hi : bhi;
        if (olo >= ohi)
            continue;
        uint64_t overlap = ohi - olo < b->size ? ohi - olo : b->size;
        released += overlap;
        if (overlap == b->size || (olo == blo && ohi == bhi)) {
            btab_end(t, i, end, ctx);
            continue;
        }
        b->size -= overlap;
        t->bytes -= overlap;
        if (ohi == bhi) {
            b->span = olo - blo;
        } else if (olo == blo) { /* the head went: the block now starts at ohi */
            u64map_remove(&t->index, b->addr);
            b->addr = ohi;
            b->span = bhi - ohi;
            if (u64map_put(&t->index, b->addr, (uint32_t)i))
                return released; /* no memory: the block is no longer found by address */
        }
    }
    return released;
}

void hm_foreach(const hm_t *h, hm_end_fn fn, void *ctx)
{
    for (size_t i = 0; i < h->heap.n; i++)
        fn(ctx, &h->heap.b[i]);
    for (size_t i = 0; i < h->maps.n; i++)
        fn(ctx, &h->maps.b[i]);
}

size_t hm_count(const hm_t *h) { return h->heap.n + h->maps.n; }
uint64_t hm_bytes(const hm_t *h) { return h->heap.bytes + h->maps.bytes; }
