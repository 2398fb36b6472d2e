/*
 * blockstacks.c - the call paths of profiled blocks as stacks for the engine (contract in
 * blockstacks.h).
 *
 * Sections: rows and quantities; one process; the set.
 */
#include "analyzer/blockstacks.h"

#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/u64map.h"
#include "experiment/logrec.h"

/* ---- rows and quantities ---------------------------------------------------------------------- */

int bstk_parse_rows(const char *s, unsigned width, int (*each)(void *, const uint64_t *),
                    void *ctx)
{
    uint64_t nums[64];
    if (width > 64)
        return -1;
    if (!*s)
        return 0;
    for (;;) {
        unsigned k = 0;
        for (;;) {
            if (*s < '0' || *s > '9' || k >= width)
                return -1;
            uint64_t v = 0;
            while (*s >= '0' && *s <= '9') {
                if (v > (UINT64_MAX - 9) / 10)
                    return -1;
                v = v * 10 + (uint64_t)(*s++ - '0');
            }
            nums[k++] = v;
            if (*s != ',')
                break;
            s++;
        }
        if (k != width || each(ctx, nums))
            return -1;
        if (!*s)
            return 0;
        if (*s++ != ';')
            return -1;
    }
}

unsigned bstk_quantities(const char *setting, char names[][BSTK_QNAME], unsigned max)
{
    unsigned n = 0;
    const char *m = setting ? setting : "";
    while (*m && n < max) {
        size_t len = strcspn(m, ",");
        if (len) {
            size_t c = len < BSTK_QNAME - 1 ? len : BSTK_QNAME - 1;
            memcpy(names[n], m, c);
            names[n][c] = 0;
            n++;
        }
        m += len;
        if (*m == ',')
            m++;
    }
    if (!n && max) {
        strcpy(names[0], "wall");
        n = 1;
    }
    return n;
}

/* ---- one process ------------------------------------------------------------------------------ */

typedef struct build {
    bstk_t *b;
    size_t cap_stacks, cap_names;
    u64map_t name_ids; /* hash of a name (probed on a clash) -> block id */
    /* the process being read */
    uint32_t exp, proc, tid;
    const char **pname; /* by the process's block id: its name; NULL: not declared */
    size_t npname, cap_pname;
    unsigned pq;        /* the process's quantities ... */
    unsigned qmap[BSTK_QMAX]; /* ... as the set's */
    size_t base;        /* the stacks index of the current thread's node 1 */
    uint64_t next;      /* the node number the next row must have */
    int oom;
} build_t;

static uint64_t name_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h >> 1;
}

/* The set's id of block name, added when new; UINT32_MAX on no memory. */
static uint32_t name_id(build_t *c, const char *name)
{
    bstk_t *b = c->b;
    for (uint64_t k = name_hash(name);; k = (k + 1) & (UINT64_MAX >> 1)) {
        int found;
        uint32_t *slot = u64map_slot(&c->name_ids, k, &found);
        if (!slot)
            return UINT32_MAX;
        if (found) {
            if (!strcmp(b->names[*slot], name))
                return *slot;
            continue;
        }
        if (GROW(b->names, b->nnames, c->cap_names)) {
            u64map_remove(&c->name_ids, k);
            return UINT32_MAX;
        }
        b->names[b->nnames] = name;
        *slot = (uint32_t)b->nnames;
        return (uint32_t)b->nnames++;
    }
}

/* A row of block-paths: parent, id, calls, subrs, then per quantity excl, incl. */
static int path_row(void *v, const uint64_t *x)
{
    build_t *c = v;
    bstk_t *b = c->b;
    /* node numbers start at 1 (0 is the root); a parent is always logged before its child */
    if (x[1] >= c->npname || !c->pname[x[1]] || x[0] >= c->next)
        return -1;
    uint32_t id = name_id(c, c->pname[x[1]]);
    if (id == UINT32_MAX || GROW(b->stacks, b->nstacks, c->cap_stacks)) {
        c->oom = 1;
        return -1;
    }
    bstk_stack_t *s = &b->stacks[b->nstacks];
    memset(s, 0, sizeof *s);
    s->exp = c->exp;
    s->proc = c->proc;
    s->tid = c->tid;
    s->block = id;
    s->parent = x[0] ? (long)(c->base + x[0] - 1) : -1;
    s->depth = s->parent < 0 ? 1 : b->stacks[s->parent].depth + 1;
    s->calls = x[2];
    for (unsigned q = 0; q < c->pq; q++)
        s->excl[c->qmap[q]] = x[4 + 2 * q];
    b->nstacks++;
    c->next++;
    return 0;
}

static int one_process(build_t *c, const exp_process_t *p)
{
    bstk_t *b = c->b;
    char qn[BSTK_QMAX][BSTK_QNAME];
    c->pq = bstk_quantities(p->settings.block_metrics.s, qn, BSTK_QMAX);
    c->npname = 0;
    int any = 0;
    for (size_t i = 0; i < p->nrecords; i++) {
        const exp_record_t *r = &p->records[i];
        if (strcmp(r->kind, EXP_LOG_BLOCK))
            continue;
        uint64_t id = exp_record_u64(r, EXP_KEY_ID, UINT64_MAX);
        const char *name = exp_record_get(r, EXP_KEY_NAME);
        if (id >= 65536 || !name)
            continue;
        any = 1;
        if (id >= c->npname) { /* (entries past npname may be an earlier process's) */
            if (GROW(c->pname, id, c->cap_pname))
                return TALLY_ENOMEM;
            for (size_t k = c->npname; k <= id; k++)
                c->pname[k] = NULL;
            c->npname = id + 1;
        }
        c->pname[id] = name;
    }
    if (!any)
        return 0;
    b->any = 1;
    for (unsigned q = 0; q < c->pq; q++) { /* the union of the quantities, by name */
        unsigned k = 0;
        while (k < b->nq && strcmp(b->qname[k], qn[q]))
            k++;
        if (k == b->nq) {
            if (b->nq == BSTK_QMAX) { /* (at most BSTK_QMAX in all: the rest are not shown) */
                c->pq = q;
                break;
            }
            memcpy(b->qname[b->nq++], qn[q], BSTK_QNAME);
        }
        c->qmap[q] = k;
    }
    u64map_t series = { 0 }; /* tid -> its latest paths (a series) */
    size_t *sbase = NULL;      /* by series: the stacks index of its node 1 */
    uint64_t *snext = NULL;    /* by series: the node number its next line starts at */
    size_t nseries = 0, cap_base = 0, cap_next = 0;
    int rc = 0;
    for (size_t i = 0; i < p->nrecords && !rc; i++) {
        const exp_record_t *r = &p->records[i];
        if (strcmp(r->kind, EXP_LOG_BLOCK_PATHS))
            continue;
        const char *rows = exp_record_get(r, EXP_KEY_ROWS);
        c->tid = (uint32_t)exp_record_u64(r, EXP_KEY_TID, 0);
        uint64_t first = exp_record_u64(r, EXP_KEY_FIRST, 0);
        int found;
        uint32_t *slot = u64map_slot(&series, c->tid, &found);
        if (!slot) {
            rc = TALLY_ENOMEM;
            break;
        }
        if (first == 1) { /* a thread's paths (a later thread may reuse an ended one's tid) */
            if (GROW(sbase, nseries, cap_base) || GROW(snext, nseries, cap_next)) {
                rc = TALLY_ENOMEM;
                break;
            }
            *slot = (uint32_t)nseries;
            sbase[nseries] = b->nstacks;
            snext[nseries++] = 1;
        } else if (!found) {
            u64map_remove(&series, c->tid);
            continue; /* the rest of paths whose start is missing: skipped */
        } else if (snext[*slot] != first) {
            continue; /* out of order: skipped */
        }
        uint32_t sr = *slot;
        c->base = sbase[sr];
        c->next = snext[sr];
        size_t before = b->nstacks;
        if (!rows || bstk_parse_rows(rows, 4 + 2 * c->pq, path_row, c)) {
            if (c->oom) {
                rc = TALLY_ENOMEM;
                break;
            }
            /* a malformed line: its rows are dropped, and the paths after it would hang from
             * nodes that are not there, so the thread's later lines are skipped too */
            b->nstacks = before;
            u64map_remove(&series, c->tid);
            continue;
        }
        snext[sr] = c->next;
    }
    free(sbase);
    free(snext);
    u64map_free(&series);
    return rc;
}

/* ---- the set ------------------------------------------------------------------------------------ */

int bstk_build(exp_experiment_t *const *exps, size_t nexps, bstk_t **out, tally_err_t *err)
{
    *out = NULL;
    build_t c = { 0 };
    c.b = calloc(1, sizeof *c.b);
    if (!c.b)
        return tally_errf(err, TALLY_ENOMEM, "out of memory reading the profiled blocks");
    int rc = 0;
    for (size_t x = 0; x < nexps && !rc; x++)
        for (size_t p = 0; p < exps[x]->nprocs && !rc; p++) {
            c.exp = (uint32_t)x;
            c.proc = (uint32_t)p;
            rc = one_process(&c, exps[x]->procs[p]);
        }
    free(c.pname);
    u64map_free(&c.name_ids);
    if (rc) {
        bstk_free(c.b);
        return tally_errf(err, rc, "out of memory reading the profiled blocks");
    }
    *out = c.b;
    return 0;
}

void bstk_free(bstk_t *b)
{
    if (!b)
        return;
    free(b->names);
    free(b->stacks);
    free(b);
}

void bstk_frames(const bstk_t *b, size_t s, uint32_t *ids)
{
    uint32_t n = 0;
    for (long k = (long)s; k >= 0; k = b->stacks[k].parent)
        ids[n++] = b->stacks[k].block;
}
