/*
 * blockstat.c - the statistics of profiled blocks of one thread (contract in blockstat.h).
 *
 * Sections: memory; entry and exit; the callstack at a monitor point; the end.
 */
#define _GNU_SOURCE
#include "blockstat.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

/* ---- memory: anonymous mappings grown with mremap (zero-filled, no malloc) ---- */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 4096 / elem;
    while (ncap < need) {
        if (ncap > (SIZE_MAX / elem) / 2)
            return -ENOMEM;
        ncap *= 2;
    }
    size_t olen = *cap * elem, nlen = (ncap * elem + 4095) & ~(size_t)4095;
    void *q = *p ? mremap(*p, olen, nlen, MREMAP_MAYMOVE)
                 : mmap(0, nlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED)
        return -ENOMEM;
    *p = q;
    *cap = nlen / elem;
    return 0;
}

int bs_init(bs_thread_t *t, unsigned nq)
{
    memset(t, 0, sizeof *t);
    if (nq < 1 || nq > BS_MAXQ)
        return -EINVAL;
    t->nq = nq;
    if (grow((void **)&t->nodes, &t->cap_nodes, 1, sizeof *t->nodes))
        return -ENOMEM;
    t->nnodes = 1; /* the root */
    return 0;
}

void bs_free(bs_thread_t *t)
{
    if (t->blocks)
        munmap(t->blocks, t->nblocks * sizeof *t->blocks);
    if (t->nodes)
        munmap(t->nodes, t->cap_nodes * sizeof *t->nodes);
    if (t->stack)
        munmap(t->stack, t->cap_stack * sizeof *t->stack);
    memset(t, 0, sizeof *t);
}

void bs_restart(bs_thread_t *t, const uint64_t *now)
{
    memset(t->blocks, 0, t->nblocks * sizeof *t->blocks);
    memset(t->nodes, 0, t->nnodes * sizeof *t->nodes);
    t->nnodes = 1;
    t->unmatched = t->lost = 0;
    uint32_t parent = 0;
    for (size_t i = 0; i < t->depth; i++) {
        bs_frame_t *f = &t->stack[i];
        bs_node_t *n = &t->nodes[t->nnodes]; /* the stack's path, one node a level */
        n->parent = parent;
        n->block = f->block;
        n->calls = 1;
        t->nodes[parent].first_child = (uint32_t)t->nnodes;
        if (i > 0) {
            t->blocks[t->stack[i - 1].block].subrs++;
            t->nodes[parent].subrs++;
        }
        f->node = parent = (uint32_t)t->nnodes++;
        t->blocks[f->block].calls++;
        t->blocks[f->block].active++;
        for (unsigned q = 0; q < t->nq; q++) {
            f->start[q] = now[q];
            f->child[q] = 0;
        }
    }
}

/* ---- entry and exit ---- */

int bs_enter(bs_thread_t *t, uint32_t block, const uint64_t *now)
{
    if ((block >= t->nblocks && grow((void **)&t->blocks, &t->nblocks, (size_t)block + 1,
                                     sizeof *t->blocks)) ||
        grow((void **)&t->stack, &t->cap_stack, t->depth + 1, sizeof *t->stack) ||
        grow((void **)&t->nodes, &t->cap_nodes, t->nnodes + 1, sizeof *t->nodes)) {
        t->lost++;
        return -ENOMEM;
    }
    uint32_t parent = 0;
    if (t->depth) {
        bs_frame_t *up = &t->stack[t->depth - 1];
        parent = up->node;
        t->blocks[up->block].subrs++;
        t->nodes[parent].subrs++;
    }
    /* the child of the parent's path for this block: most are found first (moved to the front) */
    uint32_t *link = &t->nodes[parent].first_child, n = *link;
    while (n && t->nodes[n].block != block) {
        link = &t->nodes[n].next_sibling;
        n = *link;
    }
    if (n) {
        if (link != &t->nodes[parent].first_child) { /* move to front */
            *link = t->nodes[n].next_sibling;
            t->nodes[n].next_sibling = t->nodes[parent].first_child;
            t->nodes[parent].first_child = n;
        }
    } else {
        n = (uint32_t)t->nnodes++;
        bs_node_t *nn = &t->nodes[n];
        nn->parent = parent;
        nn->block = block;
        nn->next_sibling = t->nodes[parent].first_child;
        t->nodes[parent].first_child = n;
    }
    t->nodes[n].calls++;
    bs_stat_t *b = &t->blocks[block];
    b->calls++;
    b->active++;
    bs_frame_t *f = &t->stack[t->depth++];
    f->block = block;
    f->node = n;
    for (unsigned q = 0; q < t->nq; q++) {
        f->start[q] = now[q];
        f->child[q] = 0;
    }
    return 0;
}

/* Ends the innermost instance at now. */
static void pop(bs_thread_t *t, const uint64_t *now)
{
    bs_frame_t *f = &t->stack[--t->depth];
    bs_stat_t *b = &t->blocks[f->block];
    bs_node_t *n = &t->nodes[f->node];
    b->active--;
    for (unsigned q = 0; q < t->nq; q++) {
        uint64_t incl = now[q] >= f->start[q] ? now[q] - f->start[q] : 0;
        uint64_t excl = incl >= f->child[q] ? incl - f->child[q] : 0;
        b->excl[q] += excl;
        if (!b->active)
            b->incl[q] += incl;
        n->excl[q] += excl;
        n->incl[q] += incl;
        if (t->depth)
            t->stack[t->depth - 1].child[q] += incl;
    }
}

int bs_exit(bs_thread_t *t, uint32_t block, const uint64_t *now)
{
    if (!bs_on_stack(t, block))
        return 1;
    while (t->stack[t->depth - 1].block != block) {
        pop(t, now);
        t->unmatched++;
    }
    pop(t, now);
    return 0;
}

/* ---- the callstack at a monitor point ---- */

size_t bs_callstack(bs_thread_t *t, const uint64_t *now, bs_row_t *rows)
{
    size_t d = t->depth;
    for (size_t i = 0; i < d; i++) {
        bs_frame_t *f = &t->stack[i];
        bs_row_t *r = &rows[i];
        r->block = f->block;
        for (unsigned q = 0; q < t->nq; q++) {
            uint64_t incl = now[q] >= f->start[q] ? now[q] - f->start[q] : 0;
            uint64_t inner = f->child[q];
            if (i + 1 < d && now[q] >= t->stack[i + 1].start[q])
                inner += now[q] - t->stack[i + 1].start[q];
            r->iincl[q] = incl;
            r->iexcl[q] = incl >= inner ? incl - inner : 0;
        }
    }
    /* the block's totals with its open instances: every instance's exclusive, the outermost
     * instance's inclusive (mark: 1 + the row of the block's outermost instance) */
    for (size_t i = 0; i < d; i++)
        t->blocks[rows[i].block].mark = 0;
    for (size_t i = 0; i < d; i++) {
        bs_stat_t *b = &t->blocks[rows[i].block];
        if (!b->mark) {
            b->mark = (uint32_t)i + 1;
            for (unsigned q = 0; q < t->nq; q++) {
                rows[i].excl[q] = b->excl[q];
                rows[i].incl[q] = b->incl[q] + rows[i].iincl[q];
            }
        }
        bs_row_t *o = &rows[b->mark - 1];
        for (unsigned q = 0; q < t->nq; q++)
            o->excl[q] += rows[i].iexcl[q];
    }
    for (size_t i = 0; i < d; i++) {
        bs_stat_t *b = &t->blocks[rows[i].block];
        bs_row_t *o = &rows[b->mark - 1];
        rows[i].calls = b->calls;
        rows[i].subrs = b->subrs;
        if (o != &rows[i])
            for (unsigned q = 0; q < t->nq; q++) {
                rows[i].excl[q] = o->excl[q];
                rows[i].incl[q] = o->incl[q];
            }
    }
    return d;
}

/* ---- the end ---- */

void bs_end_all(bs_thread_t *t, const uint64_t *now)
{
    while (t->depth)
        pop(t, now);
}
