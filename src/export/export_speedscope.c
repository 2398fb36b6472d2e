/*
 * export_speedscope.c - speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * the functions as shared frames, then one sampled profile per thread whose samples are the
 * thread's distinct stacks (root first) weighted by their value of the first metric asked (unit
 * "nanoseconds", "bytes" or "none"), so its left-heavy and sandwich views show the function
 * table's values. (The order of a thread's samples over time is the chrome export's.)
 *
 * Streaming: frames are written from the function table, then each thread's samples as they
 * come (rep_stacks gives them thread by thread); only the weights of the current thread are kept
 * to be written after its samples. See export.h.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "base/sink.h"
#include "export/export.h"

typedef struct ss_ctx {
    ses_t *s;
    const xp_opts_t *o;
    sink_t out;
    rep_names_t names;
    uint32_t *frame_of; /* by function id: its index among the frames */
    size_t nfuncs;
    const eng_thread_t *cur; /* the thread whose profile is open */
    uint64_t *weights, total;
    size_t nw, wcap;
    int nprofiles;
    const char *unit;
} ss_ctx_t;

static void end_profile(ss_ctx_t *c)
{
    if (!c->cur)
        return;
    sink_printf(&c->out, "],\"weights\":[");
    for (size_t i = 0; i < c->nw; i++)
        sink_printf(&c->out, "%s%llu", i ? "," : "", (unsigned long long)c->weights[i]);
    sink_printf(&c->out, "],\"startValue\":0,\"endValue\":%llu}", (unsigned long long)c->total);
    c->cur = NULL;
    c->nw = 0;
    c->total = 0;
}

static void begin_profile(ss_ctx_t *c, const eng_thread_t *t)
{
    char buf[300];
    const char *name = t->info && t->info->name && *t->info->name ? t->info->name : NULL;
    const exp_process_t *p = c->s->exps[t->exp]->procs[t->proc];
    if (name)
        snprintf(buf, sizeof buf, "%s (pid %u, tid %u)", name, p->pid, t->tid);
    else
        snprintf(buf, sizeof buf, "thread %u (pid %u, tid %u)", t->number, p->pid, t->tid);
    sink_printf(&c->out, "%s\n{\"type\":\"sampled\",\"name\":", c->nprofiles++ ? "," : "");
    sink_json_str(&c->out, buf);
    sink_printf(&c->out, ",\"unit\":\"%s\",\"samples\":[", c->unit);
    c->cur = t;
}

static int ss_stack(void *ctx, const rep_stack_t *st)
{
    ss_ctx_t *c = ctx;
    uint64_t v = st->v[c->o->metrics[0]];
    if (!v || !st->m->n)
        return 0;
    if (st->thread != c->cur) {
        end_profile(c);
        begin_profile(c, st->thread);
    }
    if (c->nw == c->wcap) {
        size_t ncap = c->wcap ? c->wcap * 2 : 1024;
        uint64_t *nw = realloc(c->weights, ncap * sizeof *nw);
        if (!nw)
            return TALLY_ENOMEM;
        c->weights = nw;
        c->wcap = ncap;
    }
    c->weights[c->nw] = v;
    sink_printf(&c->out, "%s[", c->nw++ ? "," : "");
    c->total += v;
    for (uint32_t i = st->m->n; i-- > 0;) {
        uint32_t id = st->m->ids[i];
        uint32_t f = id < c->nfuncs ? c->frame_of[id] : UINT32_MAX;
        if (f == UINT32_MAX)
            return TALLY_ENOTFOUND;
        sink_printf(&c->out, "%u%s", f, i ? "," : "");
    }
    sink_printf(&c->out, "]");
    return sink_error(&c->out) ? TALLY_EIO : 0;
}

int xp_speedscope(ses_t *s, const xp_opts_t *o, FILE *out, tally_err_t *err)
{
    ss_ctx_t c = { .s = s, .o = o };
    const eng_metric_def_t *d = eng_metric(s->eng, o->metrics[0]);
    c.unit = d->time ? "nanoseconds" : !strcmp(d->unit, "bytes") ? "bytes" : "none";
    const eng_table_t *t = eng_compute(s->eng, ENG_KIND_FUNCTION, 0, err);
    if (!t)
        return err->code ? err->code : TALLY_ENOMEM;
    int rc = rep_names_build(s->eng, t, o->namefmt, &c.names, err);
    if (rc)
        return rc;
    c.nfuncs = t->nobjects;
    c.frame_of = malloc((c.nfuncs ? c.nfuncs : 1) * sizeof *c.frame_of);
    if (!c.frame_of) {
        rep_names_free(&c.names);
        return tally_errf(err, TALLY_ENOMEM, "out of memory writing the speedscope export");
    }
    sink_file(&c.out, out);
    sink_printf(&c.out, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
                "\"exporter\":\"tally\",\"name\":");
    const exp_process_t *root = s->nexps && s->exps[0]->nprocs ? s->exps[0]->procs[0] : NULL;
    sink_json_str(&c.out, root && root->argc ? root->argv[0] : "tally");
    sink_printf(&c.out, ",\"activeProfileIndex\":0,\"shared\":{\"frames\":[");
    uint32_t nf = 0;
    for (size_t id = 0; id < c.nfuncs; id++) {
        c.frame_of[id] = UINT32_MAX;
        if (!t->present[id])
            continue;
        c.frame_of[id] = nf;
        sink_printf(&c.out, "%s\n{\"name\":", nf++ ? "," : "");
        sink_json_str(&c.out, xp_func_name(s, &c.names, o->namefmt, (uint32_t)id));
        const sym_func_t *f = sym_func(s->sym, (uint32_t)id);
        const char *file;
        uint32_t line;
        if (f->object != UINT32_MAX && sym_line_at(s->sym, f->object, f->addr, &file, &line) == 0) {
            sink_printf(&c.out, ",\"file\":");
            sink_json_str(&c.out, file);
            sink_printf(&c.out, ",\"line\":%u", line);
        }
        sink_printf(&c.out, "}");
    }
    sink_printf(&c.out, "]},\"profiles\":[");
    rc = rep_stacks(s, 1, o->metrics, 1, ss_stack, &c, err);
    if (!rc) {
        end_profile(&c);
        sink_printf(&c.out, "\n]}\n");
    }
    if (rc == TALLY_ENOMEM && !err->code)
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory writing the speedscope export");
    if (rc == TALLY_ENOTFOUND && !err->code)
        rc = tally_errf(err, TALLY_ENOTFOUND, "a stack names a function the table does not have");
    if ((rc == TALLY_EIO && !err->code) || (!rc && sink_error(&c.out)))
        rc = tally_errf(err, TALLY_EIO, "writing the speedscope export failed");
    free(c.frame_of);
    free(c.weights);
    rep_names_free(&c.names);
    return rc;
}
