/*
 * export_callgrind.c - the callgrind format (callgrind_annotate, KCachegrind): events are the
 * metrics asked (raw units: ns, bytes, counts), each function's exclusive values on its cost
 * line and, for each of its callees, the attributed value of the call (the callee's share of
 * the function's inclusive metric), so a reader's inclusive (self plus calls) is the function
 * table's inclusive, recursion included; the events where a function is the outermost frame are
 * paid by a function <Total> that calls it. Positions are source lines (the function's first line;
 * 0 when unknown). A sampling profile does not count calls: every call line says one call.
 * Names and files are written once and then referred to by number ("fn=(n)"). See export.h.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "base/sink.h"
#include "export/export.h"

typedef struct cg_ctx {
    ses_t *s;
    const xp_opts_t *o;
    sink_t out;
    rep_names_t names;
    uint8_t *fn_seen;   /* by function id: its name was written */
    const char **files; /* compressed file names, by number - 1 */
    size_t nfiles;
} cg_ctx_t;

/* The source file and first line of function id ("<unknown>", 0 when there is none). */
static const char *func_file(cg_ctx_t *c, uint32_t id, uint32_t *line)
{
    const sym_func_t *f = sym_func(c->s->sym, id);
    const char *file = NULL;
    *line = 0;
    if (f->object != UINT32_MAX && sym_line_at(c->s->sym, f->object, f->addr, &file, line) < 0)
        file = NULL;
    if (!file)
        *line = 0;
    return file ? file : "<unknown>";
}

/* "(n)" for a file written before, else "(n) name": the number of a file is its first pointer's
 * position (the symbol context owns the strings, so a pointer is a file). */
static void put_file(cg_ctx_t *c, const char *key, const char *file)
{
    for (size_t i = 0; i < c->nfiles; i++)
        if (c->files[i] == file) {
            sink_printf(&c->out, "%s=(%zu)\n", key, i + 1);
            return;
        }
    const char **nf = realloc(c->files, (c->nfiles + 1) * sizeof *nf);
    if (!nf) {
        sink_printf(&c->out, "%s=%s\n", key, file);
        return;
    }
    c->files = nf;
    c->files[c->nfiles++] = file;
    sink_printf(&c->out, "%s=(%zu) %s\n", key, c->nfiles, file);
}

static void put_fn(cg_ctx_t *c, const char *key, uint32_t id)
{
    if (c->fn_seen[id]) {
        sink_printf(&c->out, "%s=(%u)\n", key, id + 1);
        return;
    }
    c->fn_seen[id] = 1;
    sink_printf(&c->out, "%s=(%u) %s\n", key, id + 1,
                xp_func_name(c->s, &c->names, c->o->namefmt, id));
}

static void put_costs(cg_ctx_t *c, uint32_t line, const uint64_t *v)
{
    sink_printf(&c->out, "%u", line);
    for (int k = 0; k < c->o->nmetrics; k++)
        sink_printf(&c->out, " %llu", (unsigned long long)v[c->o->metrics[k]]);
    sink_printf(&c->out, "\n");
}

int xp_callgrind(ses_t *s, const xp_opts_t *o, FILE *out, tally_err_t *err)
{
    cg_ctx_t c = { .s = s, .o = o };
    const eng_table_t *t = eng_compute(s->eng, ENG_KIND_FUNCTION, 1, err);
    if (!t)
        return err->code ? err->code : TALLY_ENOMEM;
    int rc = rep_names_build(s->eng, t, o->namefmt, &c.names, err);
    if (rc)
        return rc;
    c.fn_seen = calloc(t->nobjects ? t->nobjects : 1, 1);
    if (!c.fn_seen) {
        rep_names_free(&c.names);
        return tally_errf(err, TALLY_ENOMEM, "out of memory writing the callgrind export");
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
    sink_printf(&c.out, "positions: line\n");
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
    sink_printf(&c.out, "\n\n");
    size_t nm = (size_t)t->nmetrics;
    for (size_t id = 0; id < t->nobjects && !sink_error(&c.out); id++) {
        if (!t->present[id])
            continue;
        uint32_t line;
        put_file(&c, "fl", func_file(&c, (uint32_t)id, &line));
        put_fn(&c, "fn", (uint32_t)id);
        put_costs(&c, line, t->excl + id * nm);
        for (size_t e = t->callee_start[id]; e < t->callee_start[id + 1]; e++) {
            const eng_edge_t *ed = &t->callees[e];
            uint32_t cline;
            put_file(&c, "cfl", func_file(&c, ed->other, &cline));
            put_fn(&c, "cfn", ed->other);
            sink_printf(&c.out, "calls=1 %u\n", cline);
            put_costs(&c, line, ed->value);
        }
        sink_printf(&c.out, "\n");
    }
    /* A function's inclusive cost in a callgrind reader is what its callers paid for calling it
     * (callgrind_annotate replaces its own sum with that): the events where it is the outermost
     * frame (the root of a stack, or a stack cut short) are paid by <Total>, which calls each such
     * function with them. */
    static const char total_file[] = "<tally>";
    put_file(&c, "fl", total_file);
    sink_printf(&c.out, "fn=(%zu) <Total>\n", t->nobjects + 1);
    uint64_t *zeros = calloc(nm, sizeof *zeros);
    if (!zeros)
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory writing the callgrind export");
    if (zeros)
        put_costs(&c, 0, zeros);
    free(zeros);
    for (size_t id = 0; !rc && id < t->nobjects && !sink_error(&c.out); id++) {
        const uint64_t *ov = t->outermost + id * nm;
        int any = 0;
        for (int k = 0; k < o->nmetrics; k++)
            any |= ov[o->metrics[k]] != 0;
        if (!t->present[id] || !any)
            continue;
        uint32_t cline;
        put_file(&c, "cfl", func_file(&c, (uint32_t)id, &cline));
        put_fn(&c, "cfn", (uint32_t)id);
        sink_printf(&c.out, "calls=1 %u\n", cline);
        put_costs(&c, 0, ov);
    }
    if (!rc && sink_error(&c.out))
        rc = tally_errf(err, TALLY_EIO, "writing the callgrind export failed");
    free(c.fn_seen);
    free(c.files);
    rep_names_free(&c.names);
    return rc;
}
