/*
 * heapaddr.c - live heap blocks by address; see heapaddr.h. Sections: the treap, the sets.
 */
#include "analyzer/heapaddr.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"

#define NIL UINT32_MAX

/* ---- the treap ------------------------------------------------------------------------------ */

/* Nodes live in one array and are named by index; freed ones chain through `left`. The key is
 * b.lo; live ranges of one set never overlap. */
typedef struct node {
    ha_block_t b;
    uint32_t left, right;
    uint32_t prio;
} node_t;

typedef struct set {
    node_t *n;
    uint32_t cap, used, freelist, root;
    uint64_t rng;
} set_t;

struct ha {
    set_t heap, maps;
};

static uint32_t next_prio(set_t *s)
{
    s->rng ^= s->rng << 13, s->rng ^= s->rng >> 7, s->rng ^= s->rng << 17;
    return (uint32_t)(s->rng >> 32);
}

/* Splits t into keys < key (*l) and keys >= key (*r). */
static void split(set_t *s, uint32_t t, uint64_t key, uint32_t *l, uint32_t *r)
{
    if (t == NIL) {
        *l = *r = NIL;
        return;
    }
    if (s->n[t].b.lo < key) {
        split(s, s->n[t].right, key, &s->n[t].right, r);
        *l = t;
    } else {
        split(s, s->n[t].left, key, l, &s->n[t].left);
        *r = t;
    }
}

/* Joins l and r, every key of l below every key of r. */
static uint32_t merge(set_t *s, uint32_t l, uint32_t r)
{
    if (l == NIL)
        return r;
    if (r == NIL)
        return l;
    if (s->n[l].prio > s->n[r].prio) {
        s->n[l].right = merge(s, s->n[l].right, r);
        return l;
    }
    s->n[r].left = merge(s, l, s->n[r].left);
    return r;
}

static void release_tree(set_t *s, uint32_t t)
{
    while (t != NIL) {
        release_tree(s, s->n[t].right);
        uint32_t left = s->n[t].left;
        s->n[t].left = s->freelist;
        s->freelist = t;
        t = left;
    }
}

static uint32_t new_node(set_t *s, const ha_block_t *b)
{
    uint32_t i;
    if (s->freelist != NIL) {
        i = s->freelist;
        s->freelist = s->n[i].left;
    } else {
        if (s->used == s->cap) {
            uint32_t nc = s->cap ? s->cap * 2 : 256;
            if (nc <= s->cap || nc > UINT32_MAX / 2)
                return NIL;
            node_t *nn = realloc(s->n, (size_t)nc * sizeof *nn);
            if (!nn)
                return NIL;
            s->n = nn;
            s->cap = nc;
        }
        i = s->used++;
    }
    s->n[i].b = *b;
    s->n[i].left = s->n[i].right = NIL;
    s->n[i].prio = next_prio(s);
    return i;
}

/* The node with the greatest key <= key, or NIL. */
static uint32_t floor_node(const set_t *s, uint64_t key)
{
    uint32_t t = s->root, best = NIL;
    while (t != NIL) {
        if (s->n[t].b.lo <= key) {
            best = t;
            t = s->n[t].right;
        } else {
            t = s->n[t].left;
        }
    }
    return best;
}

/* The priorities' generator starts from a seed an experiment cannot predict: with a fixed one,
 * addresses laid out in the order of its priorities made the treap a chain as deep as the blocks
 * (quadratic time, and split's recursion overflowed the stack). */
static uint64_t seed(const set_t *s)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec ^
            (uint64_t)(uintptr_t)s ^ (uint64_t)getpid() << 32;
    }
    return v ? v : 0x9e3779b97f4a7c15ull; /* (xorshift never leaves 0) */
}

static void set_init(set_t *s)
{
    memset(s, 0, sizeof *s);
    s->freelist = s->root = NIL;
    s->rng = seed(s);
}

static void set_free(set_t *s)
{
    free(s->n);
    set_init(s);
}

static int insert(set_t *s, const ha_block_t *b)
{
    uint32_t x = new_node(s, b);
    if (x == NIL)
        return TALLY_ENOMEM;
    uint32_t l, r;
    split(s, s->root, b->lo, &l, &r);
    s->root = merge(s, merge(s, l, x), r);
    return 0;
}

/* Removes [lo, hi) from the set: ranges inside go, ranges across an end are trimmed, a range
 * across both is split in two. */
static void cut(set_t *s, uint64_t lo, uint64_t hi)
{
    if (lo >= hi)
        return;
    ha_block_t tail;
    int has_tail = 0;
    uint32_t last = floor_node(s, hi - 1); /* the range reaching furthest into [lo, hi) */
    if (last != NIL && s->n[last].b.hi > hi) {
        tail = s->n[last].b;
        tail.lo = hi;
        has_tail = 1;
    }
    uint32_t before = lo ? floor_node(s, lo - 1) : NIL;
    if (before != NIL && s->n[before].b.hi > lo)
        s->n[before].b.hi = lo; /* its head stays (its tail, if any, is `tail` above) */
    uint32_t l, m, r;
    split(s, s->root, lo, &l, &m);
    split(s, m, hi, &m, &r);
    release_tree(s, m);
    s->root = merge(s, l, r);
    if (has_tail)
        insert(s, &tail); /* no memory: the tail is forgotten, never wrong */
}

/* ---- the sets --------------------------------------------------------------------------------- */

ha_t *ha_new(void)
{
    ha_t *h = malloc(sizeof *h);
    if (h) {
        set_init(&h->heap);
        set_init(&h->maps);
    }
    return h;
}

void ha_free(ha_t *h)
{
    if (!h)
        return;
    set_free(&h->heap);
    set_free(&h->maps);
    free(h);
}

void ha_clear(ha_t *h)
{
    set_free(&h->heap);
    set_free(&h->maps);
}

int ha_alloc(ha_t *h, uint64_t addr, uint64_t size, int mapped, uint32_t tag)
{
    set_t *s = mapped ? &h->maps : &h->heap;
    uint64_t hi = addr + (size ? size : 1);
    if (hi < addr)
        hi = UINT64_MAX;
    cut(s, addr, hi);
    ha_block_t b = { addr, hi, addr, size, tag, mapped };
    return insert(s, &b);
}

void ha_release(ha_t *h, uint64_t addr, uint64_t size, int mapped)
{
    if (mapped) {
        uint64_t hi = addr + size;
        cut(&h->maps, addr, hi < addr ? UINT64_MAX : hi);
        return;
    }
    set_t *s = &h->heap;
    uint32_t t = floor_node(s, addr);
    if (t != NIL && s->n[t].b.lo == addr)
        cut(s, addr, s->n[t].b.hi);
}

static const ha_block_t *find_in(const set_t *s, uint64_t addr)
{
    uint32_t t = floor_node(s, addr);
    return t != NIL && addr < s->n[t].b.hi ? &s->n[t].b : NULL;
}

const ha_block_t *ha_find(const ha_t *h, uint64_t addr)
{
    const ha_block_t *b = find_in(&h->heap, addr);
    return b ? b : find_in(&h->maps, addr);
}
