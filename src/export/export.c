/*
 * export.c - the format table of `tally export` and what the formats share (export.h).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "export/export.h"

static const struct {
    const char *name;
    int (*fn)(ses_t *, const xp_opts_t *, FILE *, tally_err_t *);
    int binary, dir;
} formats[XP_NFORMATS] = {
    [XP_PPROF] = { "pprof", xp_pprof, 1 },
    [XP_CALLGRIND] = { "callgrind", xp_callgrind, 0 },
    [XP_FOLDED] = { "folded", xp_folded, 0 },
    [XP_CHROME] = { "chrome", xp_chrome, 0 },
    [XP_SPEEDSCOPE] = { "speedscope", xp_speedscope, 0 },
    [XP_TAU] = { "tau", NULL, 0, 1 }, /* a directory: xp_tau */
};

int xp_format_find(const char *name)
{
    for (int f = 0; f < XP_NFORMATS; f++)
        if (!strcmp(name, formats[f].name))
            return f;
    return -1;
}

const char *xp_format_name(int format) { return formats[format].name; }
int xp_format_binary(int format) { return formats[format].binary; }
int xp_format_dir(int format) { return formats[format].dir; }

int xp_write(ses_t *s, const xp_opts_t *o, FILE *out, tally_err_t *err)
{
    if (o->format < 0 || o->format >= XP_NFORMATS || !formats[o->format].fn)
        return tally_errf(err, TALLY_EUSAGE, "no export format %d", o->format);
    if (o->nmetrics < 1)
        return tally_errf(err, TALLY_EUSAGE, "no metric to export");
    int rc = formats[o->format].fn(s, o, out, err);
    if (!rc && (fflush(out) || ferror(out)))
        rc = tally_errf(err, TALLY_EIO, "writing the %s export failed", formats[o->format].name);
    return rc;
}

const char *xp_func_name(ses_t *s, const rep_names_t *nm, int namefmt, uint32_t id)
{
    if (id < nm->n && nm->name[id])
        return nm->name[id];
    return eng_object_name(s->eng, ENG_KIND_FUNCTION, id, namefmt);
}

const char *xp_unit(const eng_metric_def_t *d)
{
    if (d->time)
        return "nanoseconds";
    return d->unit && *d->unit ? d->unit : "count";
}

struct xp_kind {
    int metric;       /* the engine's index of the kind's time metric, -1: none */
    const char *name; /* the kind's name */
};

int xp_traced_ns(ses_t *s, xp_kinds_t *k, const eng_thread_t *t, const exp_event_t *ev,
                 const uint64_t *v, uint64_t *ns, const char **kind)
{
    *ns = 0;
    *kind = NULL;
    if (ev->type == EXP_REC_SYNC || ev->type == EXP_REC_IO) {
        *ns = ev->weight;
        return 0;
    }
    if (ev->type != EXP_REC_TRACE)
        return 0;
    int found;
    uint64_t key = (uint64_t)t->exp << 48 ^ (uint64_t)t->proc << 16 ^ (ev->call & 0xffff);
    uint32_t *slot = u64map_slot(&k->ix, key, &found);
    if (!slot)
        return TALLY_ENOMEM;
    if (!found) {
        if (GROW(k->e, k->n, k->cap)) {
            u64map_remove(&k->ix, key);
            return TALLY_ENOMEM;
        }
        struct xp_kind *e = &k->e[k->n];
        *e = (struct xp_kind){ -1, "?" };
        const exp_process_t *p = s->exps[t->exp]->procs[t->proc];
        for (size_t i = 0; i < p->nkinds; i++) {
            const exp_kind_t *kd = &p->kinds[i];
            if (kd->id != ev->call)
                continue;
            e->name = kd->name;
            for (uint32_t j = 0; j < kd->nmetrics && e->metric < 0; j++) {
                const exp_metric_t *m = kd->metric[j] < p->nmetrics ? &p->metrics[kd->metric[j]]
                                                                   : NULL;
                if (m && m->time && !m->hz)
                    e->metric = eng_metric_find(s->eng, m->name);
            }
            break;
        }
        *slot = (uint32_t)++k->n;
    }
    const struct xp_kind *e = &k->e[*slot - 1];
    *kind = e->name;
    if (e->metric >= 0)
        *ns = v[e->metric];
    return 0;
}

void xp_kinds_free(xp_kinds_t *k)
{
    u64map_free(&k->ix);
    free(k->e);
    memset(k, 0, sizeof *k);
}
