/*
 * export.c - the format table of `tally export` and what the formats share (export.h).
 */
#define _GNU_SOURCE
#include <string.h>

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
