/*
 * export.c - `tally export --format=F [-o FILE] [options] EXPERIMENT...`: writes an analysis in a
 * format other viewers read (pprof, callgrind, folded, chrome, speedscope; src/export/export.h),
 * or, --format=tau, TAU's profile files of the profiled blocks into a directory.
 * The selection, filter, metric and naming options are print's (same names and meanings), applied
 * to the session before the export; the exporter formats the report models.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/session.h"
#include "cli.h"
#include "export/export.h"

static void usage(FILE *out)
{
    esc_fprintf(out,
        "usage: tally export --format=FORMAT [-o FILE] [options] EXPERIMENT...\n\n"
        "Writes the experiments (one run, as tally print aggregates them) in a format other\n"
        "viewers read. The output streams: memory stays flat however many events there are.\n\n"
        "formats:\n"
        "  pprof        gzipped profile.proto: go tool pprof, pprof's web UI (binary); samples\n"
        "               labelled thread, tid and period (the clock interval, ns)\n"
        "  callgrind    callgrind_annotate, KCachegrind: per instruction and line (events =\n"
        "               metrics, calls = inclusive)\n"
        "  folded       'a;b;c value' lines of the first metric: flamegraph.pl, inferno\n"
        "  chrome       Trace Event JSON: samples per thread over time with their stacks,\n"
        "               traced calls, thread states and profiled blocks (collected with\n"
        "               --block-trace=on) as slices, sample packets, counters as tracks\n"
        "               (chrome://tracing, Perfetto)\n"
        "  speedscope   speedscope's JSON: a sampled profile per thread, and evented ones of\n"
        "               its traced calls and heap allocations\n"
        "  tau          TAU's profile.N.0.T files of the profiled blocks (pprof, ParaProf),\n"
        "               into the directory -o names (default: the current directory)\n\n"
        "options:\n"
        "  -f, --format=FORMAT       the format (required)\n"
        "  -o, --output=FILE         write to FILE ('-' or none: standard output); tau: the\n"
        "                            directory (made when missing)\n"
        "  --force                   tau: replace the profile.* files already in the directory\n"
        "  -metrics LIST             metric names, comma-separated (default: every metric with\n"
        "                            data; folded, chrome and speedscope use the first)\n"
        "  -thread_select LIST       threads by number, as tally print -thread_list numbers them\n"
        "  -sample_select LIST       sample periods by number\n"
        "  -cpu_select LIST          CPUs by number\n"
        "  -filters EXPR             keep the events the filter expression selects\n"
        "  -name short|long|mangled  how functions are named (short)\n"
        "  -inlines on|off           inlined functions as frames of their own (on)\n"
        "  -object_hide NAME         a load object's functions as one frame <NAME>\n"
        "  -object_api NAME          only the functions through which the object is entered\n"
        "  -object_show NAME         each function of the object (the default)\n"
        "  -h, --help                this help\n\n"
        "See 'man tally-export'.\n");
}

typedef struct objmode {
    const char *name;
    int mode;
} objmode_t;

/* The option a names (without dashes and "=value"), or NULL. */
static const char *const opts_with_arg[] = {
    "format", "f", "output", "o", "metrics", "thread_select", "sample_select", "cpu_select",
    "filters", "name", "inlines", "object_hide", "object_api", "object_show",
};

static int apply_object_modes(ses_t *s, const objmode_t *om, size_t n, tally_err_t *err)
{
    if (!n)
        return 0;
    if (!eng_compute(s->eng, ENG_KIND_LOADOBJECT, 0, err)) /* every object of the data known */
        return 1;
    size_t nobj = sym_nobjects(s->sym);
    for (size_t i = 0; i < n; i++) {
        int found = 0;
        for (size_t o = 0; o < nobj; o++) {
            const sym_object_t *so = sym_object(s->sym, (uint32_t)o);
            if (!strcmp(om[i].name, "all") || !strcmp(om[i].name, so->name) ||
                !strcmp(om[i].name, so->path)) {
                eng_set_object_mode(s->eng, (uint32_t)o, om[i].mode);
                found = 1;
            }
        }
        if (!found) {
            tally_errf(err, TALLY_ENOTFOUND, "no load object named '%s' in the data (see tally "
                       "print -objects)", om[i].name);
            return 2;
        }
    }
    return 0;
}

/* The metrics: those named in list, or every metric with data (totalcpu first, as the engine
 * numbers them). */
static int choose_metrics(ses_t *s, const char *list, int **out, int *n, tally_err_t *err)
{
    int nm = eng_nmetrics(s->eng);
    int *m = calloc((size_t)nm + 1, sizeof *m);
    if (!m)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    *out = m;
    *n = 0;
    if (!list) {
        for (int k = 0; k < nm; k++)
            if (eng_has_metric(s->eng, k))
                m[(*n)++] = k;
        if (!*n)
            return tally_errf(err, TALLY_ENOTFOUND, "the selection has no data: nothing to "
                              "export (see tally print -overview)");
        return 0;
    }
    char *copy = strdup(list);
    if (!copy)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    int rc = 0;
    for (char *save, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int k = eng_metric_find(s->eng, tok);
        if (k < 0) {
            rc = tally_errf(err, TALLY_EUSAGE, "-metrics: no metric named '%s' (see tally print "
                            "-metric_list)", tok);
            break;
        }
        if (*n < nm)
            m[(*n)++] = k;
    }
    free(copy);
    if (!rc && !*n)
        rc = tally_errf(err, TALLY_EUSAGE, "-metrics: no metric named in '%s'", list);
    return rc;
}

/* --format=tau: the profiled blocks' model, its notes told, written into dir. */
static int export_tau(ses_t *s, const char *dir, int force)
{
    tally_err_t err = { 0 };
    rep_blocks_t b;
    if (rep_blocks(s, &b, &err))
        return cli_report(&err);
    for (size_t i = 0; i < b.nnotes; i++)
        esc_fprintf(stderr, "tally: %s\n", b.notes[i]);
    int rc = 0;
    if (xp_tau(&b, dir, force, &err))
        rc = cli_report(&err);
    rep_blocks_free(&b);
    return rc;
}

/* After a failed export: removes the half-written file that -o named, when path still names the
 * regular file that was written (made: its fstat). A symbolic link, a FIFO or a device named by
 * -o (/dev/stdout, /dev/full, /dev/null) is never removed. */
static void remove_partial(const char *path, const struct stat *made)
{
    struct stat now;
    if (S_ISREG(made->st_mode) && lstat(path, &now) == 0 && S_ISREG(now.st_mode) &&
        now.st_dev == made->st_dev && now.st_ino == made->st_ino)
        unlink(path);
}

int cmd_export(int argc, char **argv)
{
    const char **paths = calloc((size_t)argc, sizeof *paths);
    objmode_t *om = calloc((size_t)argc, sizeof *om);
    if (!paths || !om) {
        free(paths);
        free(om);
        esc_fprintf(stderr, "tally: out of memory\n");
        return 1;
    }
    size_t npaths = 0, nom = 0;
    const char *format = NULL, *output = NULL, *metrics = NULL, *threads = NULL,
               *samples = NULL, *cpus = NULL, *filters = NULL, *name = NULL, *inlines = NULL;
    int rc = 0, force = 0, selected = 0;
    ses_t *s = NULL;
    FILE *out = NULL;
    int *mlist = NULL;
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            goto done;
        }
        if (a[0] != '-' || !a[1]) {
            paths[npaths++] = a;
            continue;
        }
        if (!strcmp(a, "--force") || !strcmp(a, "-force")) {
            force = 1;
            continue;
        }
        char key[64];
        const char *k = a + (a[1] == '-' ? 2 : 1);
        const char *eq = strchr(k, '=');
        size_t klen = eq ? (size_t)(eq - k) : strlen(k);
        snprintf(key, sizeof key, "%.*s", (int)(klen < sizeof key ? klen : sizeof key - 1), k);
        int known = 0;
        for (size_t o = 0; o < sizeof opts_with_arg / sizeof *opts_with_arg; o++)
            known |= !strcmp(key, opts_with_arg[o]);
        if (!known) {
            cli_error("export", "unknown option '%s'; see 'tally export -h'", a);
            rc = 2;
            break;
        }
        selected |= strcmp(key, "format") && strcmp(key, "f") && strcmp(key, "output") &&
                    strcmp(key, "o");
        const char *val = eq ? eq + 1 : NULL;
        if (!val) {
            if (i + 1 >= argc) {
                cli_error("export", "%s needs a value; see 'tally export -h'", a);
                rc = 2;
                break;
            }
            val = argv[++i];
        }
        if (!strcmp(key, "format") || !strcmp(key, "f"))
            format = val;
        else if (!strcmp(key, "output") || !strcmp(key, "o"))
            output = val;
        else if (!strcmp(key, "metrics"))
            metrics = val;
        else if (!strcmp(key, "thread_select"))
            threads = val;
        else if (!strcmp(key, "sample_select"))
            samples = val;
        else if (!strcmp(key, "cpu_select"))
            cpus = val;
        else if (!strcmp(key, "filters"))
            filters = val;
        else if (!strcmp(key, "name"))
            name = val;
        else if (!strcmp(key, "inlines"))
            inlines = val;
        else
            om[nom++] = (objmode_t){ val, !strcmp(key, "object_hide") ? ENG_OBJ_HIDE
                                          : !strcmp(key, "object_api") ? ENG_OBJ_API
                                                                        : ENG_OBJ_SHOW };
    }
    if (rc)
        goto done;
    xp_opts_t xo = { 0 };
    if (!format) {
        cli_error("export", "no format given: use --format=pprof, callgrind, folded, chrome, "
                  "speedscope or tau");
        rc = 2;
        goto done;
    }
    if ((xo.format = xp_format_find(format)) < 0) {
        cli_error("export", "unknown format '%s': use pprof, callgrind, folded, chrome, "
                  "speedscope or tau", format);
        rc = 2;
        goto done;
    }
    if (xo.format != XP_TAU && force) {
        cli_error("export", "--force is for --format=tau (a file named by -o is replaced)");
        rc = 2;
        goto done;
    }
    if (xo.format == XP_TAU && selected) {
        cli_error("export", "the tau format writes every thread's profiled blocks: print's "
                  "selection, metric and naming options do not apply to it");
        rc = 2;
        goto done;
    }
    if (name) {
        xo.namefmt = !strcmp(name, "short") ? 0 : !strcmp(name, "long") ? 1
                   : !strcmp(name, "mangled") ? 2 : -1;
        if (xo.namefmt < 0) {
            cli_error("export", "-name '%s': use short, long or mangled", name);
            rc = 2;
            goto done;
        }
    }
    if (inlines && strcmp(inlines, "on") && strcmp(inlines, "off")) {
        cli_error("export", "-inlines '%s': use on or off", inlines);
        rc = 2;
        goto done;
    }
    if (!npaths) {
        cli_error("export", "no experiment given; usage: tally export --format=pprof -o "
                  "app.pb.gz app.1.tally");
        rc = 2;
        goto done;
    }
    if (output && !strcmp(output, "-")) {
        if (xo.format == XP_TAU) {
            cli_error("export", "-o -: the tau format writes a directory of files, not a stream; "
                      "name the directory with -o DIR");
            rc = 2;
            goto done;
        }
        output = NULL; /* "-" is standard output, never a file named "-" */
    }
    if (!output && xp_format_binary(xo.format) && isatty(STDOUT_FILENO)) {
        cli_error("export", "the %s format is binary and standard output is a terminal: name a "
                  "file with -o FILE (or redirect standard output)", format);
        rc = 2;
        goto done;
    }
    tally_err_t err = { 0 };
    if (!(s = ses_new())) {
        esc_fprintf(stderr, "tally: out of memory\n");
        rc = 1;
        goto done;
    }
    for (size_t i = 0; i < npaths && !rc; i++)
        if (ses_open(s, paths[i], &err))
            rc = cli_report(&err);
    if (!rc && ses_start(s, &err))
        rc = cli_report(&err);
    if (rc)
        goto done;
    if (xo.format == XP_TAU) {
        rc = export_tau(s, output ? output : ".", force);
        goto done;
    }
    if (inlines)
        eng_set_inlines(s->eng, !strcmp(inlines, "on"));
    if ((threads && eng_select_threads(s->eng, threads, &err)) ||
        (samples && eng_select_samples(s->eng, samples, &err)) ||
        (cpus && eng_select_cpus(s->eng, cpus, &err)) ||
        (filters && eng_set_filter(s->eng, filters, &err))) {
        rc = cli_report(&err);
        goto done;
    }
    if (xo.format == XP_PPROF || xo.format == XP_SPEEDSCOPE)
        eng_split_threads(s->eng, 1); /* per-thread samples from the one scan */
    if (eng_aggregate(s->eng, &err) || choose_metrics(s, metrics, &mlist, &xo.nmetrics, &err)) {
        rc = cli_report(&err);
        goto done;
    }
    int r = apply_object_modes(s, om, nom, &err);
    if (r) {
        cli_report(&err);
        rc = r;
        goto done;
    }
    xo.metrics = mlist;
    xo.metrics_given = metrics != NULL;
    if (xo.format == XP_CHROME && !metrics) /* samples laid out by the first metric of time */
        for (int k = 1; k < xo.nmetrics; k++)
            if (eng_metric(s->eng, mlist[k])->time && !eng_metric(s->eng, mlist[0])->time) {
                int m = mlist[k];
                memmove(mlist + 1, mlist, (size_t)k * sizeof *mlist);
                mlist[0] = m;
            }
    struct stat made = { 0 }; /* what -o opened: removed after a failure only when a file */
    if (output) {
        out = fopen(output, "wb");
        if (!out) {
            cli_error("export", "cannot write '%s': %s", output, strerror(errno));
            rc = 1;
            goto done;
        }
        if (fstat(fileno(out), &made))
            made.st_mode = 0;
    }
    if (xp_write(s, &xo, out ? out : stdout, &err)) {
        rc = cli_report(&err);
        if (rc == 0)
            rc = 1;
    }
    struct stat ls;
    if (out && rc && S_ISREG(made.st_mode) &&
        (lstat(output, &ls) || !S_ISREG(ls.st_mode) || ls.st_dev != made.st_dev ||
         ls.st_ino != made.st_ino)) { /* a file reached through a link: emptied, not removed */
        fflush(out);
        int tr = ftruncate(fileno(out), 0); /* at worst the partial file stays: the error */
        (void)tr;                            /* is reported either way */
    }
    if (out && fclose(out) && !rc) {
        cli_error("export", "writing '%s' failed: %s", output, strerror(errno));
        rc = 1;
    }
    out = NULL;
    if (rc && output)
        remove_partial(output, &made);
    if (!rc && eng_saturated(s->eng))
        esc_fprintf(stderr, "tally: note: some sums reached 2^64-1 and stayed there\n");
done:
    if (out)
        fclose(out);
    free(mlist);
    ses_free(s);
    free(paths);
    free(om);
    return rc;
}
