/*
 * export_callgrind.c - the callgrind format (callgrind_annotate, KCachegrind), as valgrind's
 * --dump-instr=yes writes it: positions "instr line", events = the metrics asked (raw units: ns,
 * bytes, counts).
 *
 * Each function's cost lines are its exclusive values per position: the ELF address of an
 * instruction (a return address minus one for a caller's frame) and its source line (the
 * instruction's line; for the function an inlined function was inlined into, the line it was
 * called at), with fi=/fe= where that line is in another file than the function's (its inlined
 * code, with -inlines off). A call line ("calls=1 target", then the position of the call site
 * and the call's cost) is what the call site paid for the callee: of every event, each distinct
 * function on its stack is paid for once, by the call into its innermost occurrence (tally's
 * attributed caller edge); the events where that occurrence is the outermost frame of the stack
 * are paid by a function <Total> that calls it; the calls into its outer occurrences are written
 * too, at no cost (the call graph is whole). So a reader's inclusive cost of a function (what
 * its callers paid) is the function table's, recursion included; each line's and instruction's
 * exclusive cost is tally's; and a line's or an instruction's own cost plus the calls made there
 * is its inclusive value wherever recursion does not put it on a stack twice. A sampling
 * profile does not count calls: every call line says one call. Names, files and objects are
 * written once and then referred to by number ("fn=(n)"). See export.h.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/satadd.h"
#include "base/sink.h"
#include "base/u64map.h"
#include "export/export.h"

#define NONE UINT32_MAX

typedef struct cg_site { /* a function at a position: a cost line and the calls made there */
    uint32_t fn, pos, vals; /* vals: index of its exclusive vector */
} cg_site_t;

typedef struct cg_call { /* from a site (NONE: from <Total>) into a callee */
    uint32_t site, callee, vals;
} cg_call_t;

typedef struct cg_ctx {
    ses_t *s;
    const xp_opts_t *o;
    const uint8_t *leafonly; /* the engine's metrics of the leaf only, or NULL */
    int nm;                  /* the engine's vector width */
    sink_t out;
    rep_names_t names;
    tally_err_t *err;
    /* the aggregation: positions (line id, pc id), sites, calls, their vectors */
    u64map_t pos_ix, site_ix, call_ix;
    uint32_t *pos_line, *pos_pc;
    size_t npos, pos_cap;
    cg_site_t *sites;
    size_t nsites, sites_cap;
    cg_call_t *calls;
    size_t ncalls, calls_cap;
    uint64_t *vals; /* [index * nmetrics written] */
    size_t nvals, vals_cap;
    uint64_t *vabove; /* scratch [nm]: the vector without the metrics of the leaf only */
    uint64_t *vzero;  /* [nm] zeros: a call paid for at another occurrence */
    /* per stack (scratch) */
    uint32_t *fids, *ffrm, *fpos, *lstart, *lcount, *pcof, *stamp;
    size_t fids_cap, ffrm_cap, fpos_cap, lstart_cap, lcount_cap, pcof_cap, stamp_cap;
    uint32_t serial;
    /* writing */
    uint8_t *fn_seen;
    const char **fn_file; /* by function: the file its fl= names */
    size_t nfn;
    const char **files, **objs; /* compressed names, by number - 1 */
    size_t nfiles, nobjs;
} cg_ctx_t;

static int oom(cg_ctx_t *c)
{
    return tally_errf(c->err, TALLY_ENOMEM, "out of memory writing the callgrind export");
}

/* A new zeroed vector: its index in *vix. */
static int new_vals(cg_ctx_t *c, uint32_t *vix)
{
    size_t w = (size_t)c->o->nmetrics;
    if (c->nvals >= NONE || GROW_W(c->vals, c->nvals, c->vals_cap, w))
        return oom(c);
    memset(c->vals + c->nvals * w, 0, w * sizeof *c->vals);
    *vix = (uint32_t)c->nvals++;
    return 0;
}

static void add_vals(cg_ctx_t *c, uint32_t vix, const uint64_t *v)
{
    uint64_t *dst = c->vals + (size_t)vix * (size_t)c->o->nmetrics;
    for (int k = 0; k < c->o->nmetrics; k++)
        sat_add_to(&dst[k], v[c->o->metrics[k]]);
}

/* The index of key in map, or n when it is new (the caller appends element n). */
static int lookup(cg_ctx_t *c, u64map_t *map, uint64_t key, size_t n, uint32_t *ix, int *isnew)
{
    int found;
    if (n >= NONE)
        return oom(c);
    uint32_t *slot = u64map_slot(map, key, &found);
    if (!slot)
        return oom(c);
    if (!found)
        *slot = (uint32_t)n;
    *ix = *slot;
    *isnew = !found;
    return 0;
}

/* The position (line id, pc id), interned. */
static int pos_of(cg_ctx_t *c, uint32_t line, uint32_t pc, uint32_t *pos)
{
    int isnew, rc;
    uint64_t key = (uint64_t)line << 32 | pc;
    if ((rc = lookup(c, &c->pos_ix, key, c->npos, pos, &isnew)) || !isnew)
        return rc;
    size_t c1 = c->pos_cap, c2 = c->pos_cap;
    if (GROW(c->pos_line, c->npos, c1) || GROW(c->pos_pc, c->npos, c2)) {
        u64map_remove(&c->pos_ix, key);
        return oom(c);
    }
    c->pos_cap = c1 < c2 ? c1 : c2;
    c->pos_line[c->npos] = line;
    c->pos_pc[c->npos++] = pc;
    return 0;
}

/* The site of function fn at position pos, made when new. */
static int site_of(cg_ctx_t *c, uint32_t fn, uint32_t pos, uint32_t *site)
{
    int isnew, rc;
    uint64_t key = (uint64_t)fn << 32 | pos;
    if ((rc = lookup(c, &c->site_ix, key, c->nsites, site, &isnew)) || !isnew)
        return rc;
    uint32_t vix;
    if (GROW(c->sites, c->nsites, c->sites_cap) || new_vals(c, &vix)) {
        u64map_remove(&c->site_ix, key);
        return oom(c);
    }
    c->sites[c->nsites++] = (cg_site_t){ fn, pos, vix };
    return 0;
}

/* The call from site (NONE: <Total>) into callee, made when new; v added to it. */
static int add_call(cg_ctx_t *c, uint32_t site, uint32_t callee, const uint64_t *v)
{
    int isnew, rc;
    uint32_t ix;
    uint64_t key = (uint64_t)site << 32 | callee;
    if ((rc = lookup(c, &c->call_ix, key, c->ncalls, &ix, &isnew)))
        return rc;
    if (isnew) {
        uint32_t vix;
        if (GROW(c->calls, c->ncalls, c->calls_cap) || new_vals(c, &vix)) {
            u64map_remove(&c->call_ix, key);
            return oom(c);
        }
        c->calls[c->ncalls++] = (cg_call_t){ site, callee, vix };
    }
    add_vals(c, c->calls[ix].vals, v);
    return 0;
}

/* Copies n ids into the growing array *dst. */
static int copy_ids(uint32_t **dst, size_t *cap, const uint32_t *src, uint32_t n)
{
    if (n && GROW(*dst, n - 1, *cap))
        return TALLY_ENOMEM;
    if (n)
        memcpy(*dst, src, n * sizeof *src);
    return 0;
}

/* Room for n zeroed entries in *a. */
static int zeroed(uint32_t **a, size_t *cap, size_t n)
{
    if (n && GROW(*a, n - 1, *cap))
        return TALLY_ENOMEM;
    if (n)
        memset(*a, 0, n * sizeof **a);
    return 0;
}

/* One stack (its frames mapped to functions) with vector v: the leaf's site pays v itself; each
 * distinct function is paid for once, by the call into its innermost occurrence. */
static int cg_stack(void *ctx, const eng_mapped_t *m, const uint64_t *v)
{
    cg_ctx_t *c = ctx;
    eng_t *g = c->s->eng;
    uint32_t n = m->n, npcs = m->npcs, exp = m->exp, stack = m->stack;
    if (!n)
        return 0;
    /* the function frames (the mapping of the lines and instructions below replaces m's) */
    if (copy_ids(&c->fids, &c->fids_cap, m->ids, n) ||
        copy_ids(&c->ffrm, &c->ffrm_cap, m->frame, n) ||
        zeroed(&c->lstart, &c->lstart_cap, npcs) || zeroed(&c->lcount, &c->lcount_cap, npcs) ||
        zeroed(&c->fpos, &c->fpos_cap, n) || GROW(c->pcof, npcs ? npcs - 1 : 0, c->pcof_cap))
        return oom(c);
    int rc;
    /* the lines of each raw frame: its line, then the lines its inlined code was called at (the
     * functions of that frame: the inlined ones innermost first, then the containing one) */
    eng_mapped_t lm, pm;
    if ((rc = eng_map_stack(g, exp, stack, ENG_KIND_LINE, &lm, c->err)))
        return rc;
    for (uint32_t i = lm.n; i-- > 0;) {
        uint32_t r = lm.frame[i];
        if (r < npcs) {
            c->lstart[r] = i;
            c->lcount[r]++;
        }
    }
    /* copy the line ids: the next mapping reuses the engine's array */
    uint32_t *lines = NULL;
    size_t lcap = 0;
    if (copy_ids(&lines, &lcap, lm.ids, lm.n)) {
        free(lines);
        return oom(c);
    }
    uint32_t nlines = lm.n;
    if ((rc = eng_map_stack(g, exp, stack, ENG_KIND_PC, &pm, c->err))) {
        free(lines);
        return rc;
    }
    for (uint32_t r = 0; r < npcs; r++)
        c->pcof[r] = NONE;
    for (uint32_t i = 0; i < pm.n; i++)
        if (pm.frame[i] < npcs)
            c->pcof[pm.frame[i]] = pm.ids[i];
    /* each function frame's position: the p-th function of a raw frame is at its p-th line */
    for (uint32_t j = 0, p = 0; j < n && !rc; j++) {
        uint32_t r = c->ffrm[j];
        p = j && c->ffrm[j - 1] == r ? p + 1 : 0;
        uint32_t line = NONE, pc = NONE;
        if (r < npcs) {
            if (p < c->lcount[r] && c->lstart[r] + p < nlines)
                line = lines[c->lstart[r] + p];
            pc = c->pcof[r];
        }
        rc = pos_of(c, line, pc, &c->fpos[j]);
    }
    free(lines);
    if (rc)
        return rc;
    /* exclusive: the leaf's site */
    uint32_t site;
    if ((rc = site_of(c, c->fids[0], c->fpos[0], &site)))
        return rc;
    add_vals(c, c->sites[site].vals, v);
    /* above the leaf, the vector without the metrics of the leaf only */
    const uint64_t *vabove = v;
    if (c->leafonly) {
        for (int k = 0; k < c->nm; k++)
            c->vabove[k] = c->leafonly[k] ? 0 : v[k];
        vabove = c->vabove;
    }
    /* the calls: into each function's innermost occurrence */
    size_t nfn = eng_nobjects(g, ENG_KIND_FUNCTION);
    if (nfn > c->stamp_cap) {
        size_t old = c->stamp_cap;
        if (GROW(c->stamp, nfn - 1, c->stamp_cap))
            return oom(c);
        memset(c->stamp + old, 0, (c->stamp_cap - old) * sizeof *c->stamp);
    }
    if (++c->serial == 0) {
        memset(c->stamp, 0, c->stamp_cap * sizeof *c->stamp);
        c->serial = 1;
    }
    for (uint32_t i = 0; i < n && !rc; i++) {
        uint32_t f = c->fids[i];
        const uint64_t *vx = i ? vabove : v;
        if (f < c->stamp_cap && c->stamp[f] == c->serial) {
            /* an outer occurrence: the call is made (the call graph has it) at no cost */
            if (i + 1 < n && !(rc = site_of(c, c->fids[i + 1], c->fpos[i + 1], &site)))
                rc = add_call(c, site, f, c->vzero);
            continue;
        }
        if (f < c->stamp_cap)
            c->stamp[f] = c->serial;
        if (i + 1 == n) {
            rc = add_call(c, NONE, f, vx);
            continue;
        }
        if (!(rc = site_of(c, c->fids[i + 1], c->fpos[i + 1], &site)))
            rc = add_call(c, site, f, vx);
    }
    return rc;
}

/* "(n)" for a name written before, else "(n) name" (a name's number is its position in tab). */
static void put_name(cg_ctx_t *c, const char ***tab, size_t *n, const char *key, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if ((*tab)[i] == name || !strcmp((*tab)[i], name)) {
            sink_printf(&c->out, "%s=(%zu)\n", key, i + 1);
            return;
        }
    const char **nt = realloc(*tab, (*n + 1) * sizeof *nt);
    if (!nt) {
        sink_printf(&c->out, "%s=%s\n", key, name);
        return;
    }
    *tab = nt;
    (*tab)[(*n)++] = name;
    sink_printf(&c->out, "%s=(%zu) %s\n", key, *n, name);
}

static void put_fn(cg_ctx_t *c, const char *key, uint32_t id)
{
    if (id < c->nfn && c->fn_seen[id]) {
        sink_printf(&c->out, "%s=(%u)\n", key, id + 1);
        return;
    }
    if (id < c->nfn)
        c->fn_seen[id] = 1;
    sink_printf(&c->out, "%s=(%u) %s\n", key, id + 1,
                xp_func_name(c->s, &c->names, c->o->namefmt, id));
}

/* The file and line number of position pos (file NULL: none known). */
static const char *pos_line(cg_ctx_t *c, uint32_t pos, uint32_t *lineno)
{
    const char *file = NULL;
    uint32_t func;
    *lineno = 0;
    if (pos == NONE || c->pos_line[pos] == NONE ||
        eng_line_info(c->s->eng, c->pos_line[pos], &file, lineno, &func) < 0)
        return NULL;
    if (!file)
        *lineno = 0;
    return file;
}

static uint64_t pos_addr(cg_ctx_t *c, uint32_t pos)
{
    uint32_t obj;
    uint64_t addr = 0;
    if (pos == NONE || c->pos_pc[pos] == NONE ||
        eng_pc_info(c->s->eng, c->pos_pc[pos], &obj, &addr) < 0)
        return 0;
    return addr;
}

/* The object of function id's code (NULL: none). */
static const char *fn_object(cg_ctx_t *c, uint32_t id)
{
    uint32_t o = eng_function_object(c->s->eng, id);
    return o == NONE || o >= sym_nobjects(c->s->sym) ? NULL : sym_object(c->s->sym, o)->path;
}

/* Function id's entry: the line of its address (0 when unknown). */
static uint32_t fn_entry_line(cg_ctx_t *c, uint32_t id)
{
    const sym_func_t *f = sym_func(c->s->sym, id);
    const char *file = NULL;
    uint32_t line = 0;
    if (f->object == NONE || f->addr == 0 ||
        sym_line_at(c->s->sym, f->object, f->addr, &file, &line) < 0 || !file)
        return 0;
    return line;
}

static void put_costs(cg_ctx_t *c, uint64_t addr, uint32_t line, uint32_t vix)
{
    sink_printf(&c->out, "0x%llx %u", (unsigned long long)addr, line);
    const uint64_t *v = vix == NONE ? NULL : c->vals + (size_t)vix * (size_t)c->o->nmetrics;
    for (int k = 0; k < c->o->nmetrics; k++)
        sink_printf(&c->out, " %llu", (unsigned long long)(v ? v[k] : 0));
    sink_printf(&c->out, "\n");
}

static int any_cost(cg_ctx_t *c, uint32_t vix)
{
    const uint64_t *v = c->vals + (size_t)vix * (size_t)c->o->nmetrics;
    for (int k = 0; k < c->o->nmetrics; k++)
        if (v[k])
            return 1;
    return 0;
}

/* The call's lines: the callee's object, file and name, one call to its entry, the cost at the
 * caller's position (addr, line). */
static void put_call(cg_ctx_t *c, const cg_call_t *k, uint64_t addr, uint32_t line)
{
    const char *ob = fn_object(c, k->callee);
    if (ob)
        put_name(c, &c->objs, &c->nobjs, "cob", ob);
    put_name(c, &c->files, &c->nfiles, "cfi", c->fn_file[k->callee]);
    put_fn(c, "cfn", k->callee);
    sink_printf(&c->out, "calls=1 0x%llx %u\n",
                (unsigned long long)eng_function_addr(c->s->eng, k->callee),
                fn_entry_line(c, k->callee));
    put_costs(c, addr, line, k->vals);
}

static const cg_ctx_t *sort_ctx; /* for the comparisons (qsort has no context) */

/* Sites by function, then file, line and address. */
static int cmp_site(const void *a, const void *b)
{
    const cg_site_t *x = a, *y = b;
    if (x->fn != y->fn)
        return x->fn < y->fn ? -1 : 1;
    cg_ctx_t *c = (cg_ctx_t *)sort_ctx;
    uint32_t lx, ly;
    const char *fx = pos_line(c, x->pos, &lx), *fy = pos_line(c, y->pos, &ly);
    int d = strcmp(fx ? fx : "", fy ? fy : "");
    if (d)
        return d;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    uint64_t ax = pos_addr(c, x->pos), ay = pos_addr(c, y->pos);
    if (ax != ay)
        return ax < ay ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Calls by site (the sites' order; <Total>'s last), then callee. */
static int cmp_call(const void *a, const void *b)
{
    const cg_call_t *x = a, *y = b;
    if (x->site != y->site)
        return x->site < y->site ? -1 : 1;
    return x->callee < y->callee ? -1 : x->callee > y->callee;
}

int xp_callgrind(ses_t *s, const xp_opts_t *o, FILE *out, tally_err_t *err)
{
    cg_ctx_t c = { .s = s, .o = o, .err = err, .nm = eng_nmetrics(s->eng) };
    const eng_table_t *t = eng_compute(s->eng, ENG_KIND_FUNCTION, 0, err);
    if (!t)
        return err->code ? err->code : TALLY_ENOMEM;
    c.leafonly = t->leafonly;
    int rc = rep_names_build(s->eng, t, o->namefmt, &c.names, err);
    if (rc)
        return rc;
    if (!(c.vabove = calloc((size_t)c.nm + 1, sizeof *c.vabove)) ||
        !(c.vzero = calloc((size_t)c.nm + 1, sizeof *c.vzero)))
        rc = oom(&c);
    if (!rc)
        rc = eng_foreach_mapped_stack(s->eng, ENG_KIND_FUNCTION, cg_stack, &c, err);
    u64map_free(&c.pos_ix);
    u64map_free(&c.site_ix);
    u64map_free(&c.call_ix);
    c.nfn = eng_nobjects(s->eng, ENG_KIND_FUNCTION);
    if (!rc && (!(c.fn_seen = calloc(c.nfn + 1, 1)) ||
                !(c.fn_file = calloc(c.nfn + 1, sizeof *c.fn_file))))
        rc = oom(&c);
    if (rc)
        goto out;
    /* the sites in order; the calls renumbered to them */
    uint32_t *order = malloc((c.nsites + 1) * sizeof *order);
    cg_site_t *sorted = malloc((c.nsites + 1) * sizeof *sorted);
    if (!order || !sorted) {
        free(order);
        free(sorted);
        rc = oom(&c);
        goto out;
    }
    memcpy(sorted, c.sites, c.nsites * sizeof *sorted);
    for (size_t i = 0; i < c.nsites; i++) /* (the vector index tells a site's old number) */
        sorted[i].vals = (uint32_t)i;
    sort_ctx = &c;
    qsort(sorted, c.nsites, sizeof *sorted, cmp_site);
    for (size_t i = 0; i < c.nsites; i++)
        order[sorted[i].vals] = (uint32_t)i;
    for (size_t i = 0; i < c.nsites; i++)
        sorted[order[i]].vals = c.sites[i].vals;
    free(c.sites);
    c.sites = sorted;
    for (size_t k = 0; k < c.ncalls; k++)
        if (c.calls[k].site != NONE)
            c.calls[k].site = order[c.calls[k].site];
    free(order);
    qsort(c.calls, c.ncalls, sizeof *c.calls, cmp_call);
    /* each function's file: that of its address, else of its first line, else <unknown> */
    static const char unknown_file[] = "<unknown>";
    for (size_t i = c.nsites; i-- > 0;) {
        uint32_t ln;
        const char *f = pos_line(&c, c.sites[i].pos, &ln);
        if (f && c.sites[i].fn < c.nfn)
            c.fn_file[c.sites[i].fn] = f;
    }
    for (size_t id = 0; id < c.nfn; id++) {
        const sym_func_t *f = sym_func(s->sym, (uint32_t)id);
        const char *file = NULL;
        uint32_t line;
        if (f->object != NONE && f->addr &&
            sym_line_at(s->sym, f->object, f->addr, &file, &line) >= 0 && file)
            c.fn_file[id] = file;
        if (!c.fn_file[id])
            c.fn_file[id] = unknown_file;
    }

    sink_file(&c.out, out);
    sink_printf(&c.out, "# callgrind format\nversion: 1\ncreator: tally\n");
    if (s->nexps && s->exps[0]->nprocs && s->exps[0]->procs[0]->argc) {
        const exp_process_t *p = s->exps[0]->procs[0];
        sink_printf(&c.out, "cmd:");
        for (uint32_t a = 0; a < p->argc; a++)
            sink_printf(&c.out, " %s", p->argv[a]);
        sink_printf(&c.out, "\n");
    }
    sink_printf(&c.out, "positions: instr line\n");
    for (int k = 0; k < o->nmetrics; k++) {
        const eng_metric_def_t *d = eng_metric(s->eng, o->metrics[k]);
        sink_printf(&c.out, "event: %s : %s (%s)\n", d->name, d->title, xp_unit(d));
    }
    sink_printf(&c.out, "events:");
    for (int k = 0; k < o->nmetrics; k++)
        sink_printf(&c.out, " %s", eng_metric(s->eng, o->metrics[k])->name);
    sink_printf(&c.out, "\n");
    sink_printf(&c.out, "summary:");
    for (int k = 0; k < o->nmetrics; k++)
        sink_printf(&c.out, " %llu", (unsigned long long)eng_total(s->eng)[o->metrics[k]]);
    sink_printf(&c.out, "\n");
    /* A function's inclusive cost in a callgrind reader is what its callers paid for calling it
     * (callgrind_annotate replaces its own sum with that): the events where its innermost
     * occurrence is the outermost frame are paid by <Total>, which calls it with them. <Total>
     * comes first, before any ob= (it is in no object); its calls sort last. */
    static const char total_file[] = "<tally>";
    size_t k0 = 0;
    while (k0 < c.ncalls && c.calls[k0].site != NONE)
        k0++;
    sink_printf(&c.out, "\n");
    put_name(&c, &c.files, &c.nfiles, "fl", total_file);
    sink_printf(&c.out, "fn=(%zu) <Total>\n", c.nfn + 1);
    put_costs(&c, 0, 0, NONE);
    for (size_t k = k0; k < c.ncalls && !sink_error(&c.out); k++)
        if (any_cost(&c, c.calls[k].vals))
            put_call(&c, &c.calls[k], 0, 0);
    size_t k = 0;
    for (size_t i = 0; i < c.nsites && !sink_error(&c.out);) {
        uint32_t fn = c.sites[i].fn;
        const char *ffile = fn < c.nfn ? c.fn_file[fn] : unknown_file, *cur = ffile;
        const char *ob = fn_object(&c, fn);
        sink_printf(&c.out, "\n");
        if (ob)
            put_name(&c, &c.objs, &c.nobjs, "ob", ob);
        put_name(&c, &c.files, &c.nfiles, "fl", ffile);
        put_fn(&c, "fn", fn);
        for (; i < c.nsites && c.sites[i].fn == fn; i++) {
            uint32_t line;
            const char *file = pos_line(&c, c.sites[i].pos, &line);
            if (!file)
                file = ffile; /* line 0 of the function */
            if (strcmp(file, cur)) { /* fe= back to the function's file, fi= into another */
                put_name(&c, &c.files, &c.nfiles, strcmp(file, ffile) ? "fi" : "fe", file);
                cur = file;
            }
            uint64_t addr = pos_addr(&c, c.sites[i].pos);
            if (any_cost(&c, c.sites[i].vals) || k >= c.ncalls || c.calls[k].site != i)
                put_costs(&c, addr, line, c.sites[i].vals);
            for (; k < c.ncalls && c.calls[k].site == i; k++)
                put_call(&c, &c.calls[k], addr, line);
        }
    }
    if (sink_error(&c.out))
        rc = tally_errf(err, TALLY_EIO, "writing the callgrind export failed");
out:
    free(c.pos_line);
    free(c.pos_pc);
    free(c.sites);
    free(c.calls);
    free(c.vals);
    free(c.vabove);
    free(c.vzero);
    free(c.fids);
    free(c.ffrm);
    free(c.fpos);
    free(c.lstart);
    free(c.lcount);
    free(c.pcof);
    free(c.stamp);
    free(c.fn_seen);
    free(c.fn_file);
    free(c.files);
    free(c.objs);
    rep_names_free(&c.names);
    return rc;
}
