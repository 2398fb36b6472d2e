/*
 * export_folded.c - folded stacks: one line per distinct stack, its frames root first joined by
 * ';', a space and its value of the first metric asked (the input of flamegraph.pl, inferno,
 * speedscope). Stacks whose value is 0 are left out. See export.h.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "base/sink.h"
#include "export/export.h"

typedef struct folded_ctx {
    ses_t *s;
    const xp_opts_t *o;
    rep_names_t names;
    sink_t out;
    char *buf; /* one frame's name with ';' replaced */
    size_t cap;
} folded_ctx_t;

static const char *frame_name(folded_ctx_t *c, uint32_t id)
{
    const char *name = xp_func_name(c->s, &c->names, c->o->namefmt, id);
    if (!strchr(name, ';'))
        return name;
    size_t n = strlen(name) + 1;
    if (n > c->cap) {
        char *nb = realloc(c->buf, n);
        if (!nb)
            return "?";
        c->buf = nb;
        c->cap = n;
    }
    memcpy(c->buf, name, n);
    for (char *p = c->buf; (p = strchr(p, ';')); p++)
        *p = ':';
    return c->buf;
}

static int folded_stack(void *ctx, const rep_stack_t *st)
{
    folded_ctx_t *c = ctx;
    uint64_t v = st->v[c->o->metrics[0]];
    if (!v || !st->m->n)
        return 0;
    for (uint32_t i = st->m->n; i-- > 0;)
        sink_printf(&c->out, "%s%s", frame_name(c, st->m->ids[i]), i ? ";" : "");
    sink_printf(&c->out, " %llu\n", (unsigned long long)v);
    return sink_error(&c->out) ? TALLY_EIO : 0;
}

int xp_folded(ses_t *s, const xp_opts_t *o, FILE *out, tally_err_t *err)
{
    folded_ctx_t c = { .s = s, .o = o };
    int rc = rep_stack_names(s, o->namefmt, &c.names, err);
    if (rc)
        return rc;
    sink_file(&c.out, out);
    rc = rep_stacks(s, 0, NULL, 0, folded_stack, &c, err);
    if (rc == TALLY_EIO)
        rc = tally_errf(err, TALLY_EIO, "writing the folded stacks failed");
    free(c.buf);
    rep_names_free(&c.names);
    return rc;
}
