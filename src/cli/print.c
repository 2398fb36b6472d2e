/*
 * print.c - `tally print [options] EXPERIMENT...`: reports in the er_print command language.
 *
 * Commands come from the command line (`-functions`), from a script (`-script FILE`, one command
 * per line, the dash optional) or, when none is given, from an interactive prompt on stdin. They
 * run in order against one metric engine over all the experiments named (several experiments,
 * and every descendant process of each, are aggregated as one run). Setting commands (-metrics,
 * -sort, -limit, -name, -thread_select, -cmetrics) change the state the views that follow use.
 * With --json every view prints one JSON document on one line.
 *
 * This file: the command table, dispatch (command line, scripts, prompt) and main. The views
 * are in print_views.c and print_info.c, the formatting in print_format.c (see print.h).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <limits.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsafe.h"
#include "print.h"

/* ---- commands ------------------------------------------------------------------------------- */

static int run_script(pstate_t *ps, const char *path);
static int run_line(pstate_t *ps, char *line, const char *where);
static void note_saturation(pstate_t *ps);

static int c_functions(pstate_t *ps, const char *a) { return view_list(ps, ps->kind); }
static int c_objects(pstate_t *ps, const char *a) { return view_list(ps, ENG_KIND_LOADOBJECT); }
static int c_lines(pstate_t *ps, const char *a) { return view_list(ps, ENG_KIND_LINE); }

/* -object_show/-object_hide/-object_api NAME|all: by base name, path or "all" */
static int object_mode(pstate_t *ps, const char *a, int mode)
{
    if (!pr_table(ps, ENG_KIND_LOADOBJECT, 0)) /* every object of the data is known */
        return 1;
    int found = 0;
    size_t n = sym_nobjects(ps->ses->sym);
    const char **names = calloc(n + 1, sizeof *names);
    for (size_t o = 0; o < n; o++) {
        const sym_object_t *so = sym_object(ps->ses->sym, (uint32_t)o);
        if (names)
            names[o] = so->name;
        if (!strcmp(a, "all") || !strcmp(a, so->name) || !strcmp(a, so->path)) {
            eng_set_object_mode(ps->ses->eng, (uint32_t)o, mode);
            found = 1;
        }
    }
    if (!found) {
        tally_err_t err = { 0 };
        tally_errf(&err, TALLY_ENOTFOUND, "no load object named '%s' in the data", a);
        pr_suggest(err.msg, sizeof err.msg, a, names, n);
        cli_report(&err);
    }
    free(names);
    return found ? 0 : 1;
}
static int c_object_show(pstate_t *ps, const char *a) { return object_mode(ps, a, ENG_OBJ_SHOW); }
static int c_object_hide(pstate_t *ps, const char *a) { return object_mode(ps, a, ENG_OBJ_HIDE); }
static int c_object_api(pstate_t *ps, const char *a) { return object_mode(ps, a, ENG_OBJ_API); }
static int c_inlines(pstate_t *ps, const char *a)
{
    int on = !strcmp(a, "on") ? 1 : !strcmp(a, "off") ? 0 : -1;
    if (on < 0) {
        esc_fprintf(stderr, "tally: -inlines '%s': use on (inlined functions are frames of their "
                        "own) or off (folded into the function they are inlined in)\n", a);
        return 2;
    }
    eng_set_inlines(ps->ses->eng, on);
    return 0;
}
static int c_objects_default(pstate_t *ps, const char *a)
{
    eng_reset_object_modes(ps->ses->eng);
    return 0;
}
static int c_pcs(pstate_t *ps, const char *a) { return view_list(ps, ENG_KIND_PC); }
static int c_cc(pstate_t *ps, const char *a) { return view_callers_callees(ps, NULL); }
static int c_csingle(pstate_t *ps, const char *a) { return view_callers_callees(ps, a); }
static int c_calltree(pstate_t *ps, const char *a) { return view_calltree(ps); }
static int c_fsingle(pstate_t *ps, const char *a) { return view_fsingle(ps, a); }
static int c_header(pstate_t *ps, const char *a) { return view_header(ps, a); }
static int c_overview(pstate_t *ps, const char *a) { return view_overview(ps); }
static int c_thread_list(pstate_t *ps, const char *a)
{
    return ps->compat && !ps->json ? pr_list_er(ps, 'T') : view_thread_list(ps);
}
static int c_metric_list(pstate_t *ps, const char *a)
{
    return ps->compat && !ps->json ? pr_metric_list_er(ps) : view_metric_list(ps);
}
static int c_script(pstate_t *ps, const char *a) { return run_script(ps, a); }
static int c_leaks(pstate_t *ps, const char *a) { return view_leaks(ps); }
static int c_allocs(pstate_t *ps, const char *a) { return view_allocs(ps); }
static int c_heap(pstate_t *ps, const char *a) { return view_heap(ps); }
static int c_sync_objects(pstate_t *ps, const char *a) { return view_sync_objects(ps); }
static int c_io_files(pstate_t *ps, const char *a) { return view_io_files(ps); }
static int c_sample_list(pstate_t *ps, const char *a)
{
    return ps->compat && !ps->json ? pr_list_er(ps, 'S') : view_sample_list(ps);
}
static int c_timeline(pstate_t *ps, const char *a) { return view_timeline(ps); }
static int c_time_functions(pstate_t *ps, const char *a) { return view_time_functions(ps); }
/* outfile/appendfile FILE: views write to FILE from now on ("-": standard output, "--":
 * standard error), as er_print's. */
static int set_output(pstate_t *ps, const char *a, const char *mode, const char *cmd)
{
    FILE *f = !strcmp(a, "-") ? stdout : !strcmp(a, "--") ? stderr : fopen(a, mode);
    if (!f) {
        esc_fprintf(stderr, "tally: -%s '%s': %s\n", cmd, a, strerror(errno));
        return 1;
    }
    fflush(ps->out.f);
    if (ps->outf)
        fclose(ps->outf);
    ps->outf = f == stdout || f == stderr ? NULL : f;
    sink_file(&ps->out, f);
    return 0;
}
static int c_outfile(pstate_t *ps, const char *a) { return set_output(ps, a, "w", "outfile"); }
static int c_appendfile(pstate_t *ps, const char *a) { return set_output(ps, a, "a", "appendfile"); }
static int c_version(pstate_t *ps, const char *a)
{
    sink_printf(&ps->out, "tally %s\n", TALLY_VERSION);
    return 0;
}
/* object_list: each load object and how its functions are shown (er_print's object_list). */
static int c_object_list(pstate_t *ps, const char *a)
{
    if (!pr_table(ps, ENG_KIND_LOADOBJECT, 0)) /* every object of the data is known */
        return 1;
    static const char *const mode[] = { "show", "hide", "api", "none" };
    if (ps->compat)
        return pr_object_list_er(ps);
    sink_printf(&ps->out, "Functions Shown  Load Object\n");
    for (size_t o = 0; o < sym_nobjects(ps->ses->sym); o++) {
        int m = eng_object_mode(ps->ses->eng, (uint32_t)o);
        if (m == ENG_OBJ_DROP && ps->viewmode != PR_VM_MACHINE)
            continue; /* tally's own collector: no object of the program */
        sink_printf(&ps->out, "%-15s  %s\n", mode[m == ENG_OBJ_DROP ? 0 : m & 3], sym_object(ps->ses->sym, (uint32_t)o)->name);
    }
    sink_printf(&ps->out, "\n");
    return 0;
}
static int c_quit(pstate_t *ps, const char *a)
{
    ps->quit = 1;
    return 0;
}

static void set_sort_from(pstate_t *ps, const mspec_t *ms)
{
    for (int c = 0; c < ms->ncols; c++)
        if (ms->cols[c].flavor == ps->sort_flavor && ms->cols[c].metric == ps->sort_metric)
            return;
    if (ms->ncols && ps->sort_metric >= 0) {
        ps->sort_flavor = ms->cols[0].flavor;
        ps->sort_metric = ms->cols[0].metric;
    }
}

/* The lines er_print prints when a setting changes (text only: scripts that parse er_print's
 * output expect them). */
static void confirm_metrics(pstate_t *ps)
{
    if (ps->json || ps->quiet)
        return;
    char buf[1024];
    size_t n = 0;
    buf[0] = 0;
    for (int c = 0; c <= ps->metrics.ncols && n < sizeof buf - 80; c++) {
        if (c == ps->metrics.name_pos)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%sname", n ? ":" : "");
        if (c == ps->metrics.ncols)
            break;
        const mcol_t *mc = &ps->metrics.cols[c];
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%c%s%s%s", n ? ":" : "",
                              pr_flavor_char(mc->flavor), mc->value ? "." : "",
                              mc->percent ? "%" : "", mc->def->name);
    }
    sink_printf(&ps->out, "Current metrics: %s\n", buf);
}

/* Does -metrics show the sort metric (its flavor) as a percentage? */
static int sort_shown_percent(const pstate_t *ps)
{
    for (int c = 0; c < ps->metrics.ncols; c++)
        if (ps->metrics.cols[c].flavor == ps->sort_flavor &&
            ps->metrics.cols[c].metric == ps->sort_metric)
            return ps->metrics.cols[c].percent;
    return 0;
}

static void confirm_sort(pstate_t *ps)
{
    if (ps->json || ps->quiet)
        return;
    char title[256];
    pr_sort_title(ps, title, sizeof title);
    if (ps->sort_metric < 0)
        sink_printf(&ps->out, "Current Sort Metric: Name ( name )\n");
    else /* with the metric's visibility in -metrics ("e.%totalcpu"), as er_print */
        sink_printf(&ps->out, "Current Sort Metric: %s ( %c.%s%s )\n", title,
                    pr_flavor_char(ps->sort_flavor), sort_shown_percent(ps) ? "%" : "",
                    eng_metric(ps->ses->eng, ps->sort_metric)->name);
}

static int c_metrics(pstate_t *ps, const char *a)
{
    tally_err_t err = { 0 };
    mspec_t ms;
    if (pr_parse_mspec(ps->ses->eng, a, &ms, FL_E | FL_I, &err))
        return pr_report(&err);
    ps->metrics = ms;
    set_sort_from(ps, &ms);
    confirm_metrics(ps);
    confirm_sort(ps);
    return 0;
}

static int c_cmetrics(pstate_t *ps, const char *a)
{
    tally_err_t err = { 0 };
    mspec_t ms;
    if (pr_parse_mspec(ps->ses->eng, a, &ms, FL_A, &err))
        return pr_report(&err);
    ps->cmetrics = ms;
    return 0;
}

static int c_sort(pstate_t *ps, const char *a)
{
    if (!strcmp(a, "name")) {
        ps->sort_metric = -1;
        confirm_sort(ps);
        return 0;
    }
    tally_err_t err = { 0 };
    mspec_t ms;
    if (pr_parse_mspec(ps->ses->eng, a, &ms, FL_E | FL_I, &err))
        return pr_report(&err);
    if (ms.ncols == 0) {
        esc_fprintf(stderr, "tally: -sort needs one metric such as e.totalcpu or name\n");
        return 1;
    }
    ps->sort_flavor = ms.cols[0].flavor;
    ps->sort_metric = ms.cols[0].metric;
    confirm_sort(ps);
    return 0;
}

static int c_limit(pstate_t *ps, const char *a)
{
    char *end;
    errno = 0;
    long n = strtol(a, &end, 10);
    if (end == a || *end || n < 0 || errno) {
        esc_fprintf(stderr, "tally: -limit '%s': give a number of rows (0 for all)\n", a);
        return 1;
    }
    ps->limit = n;
    if (!ps->json && !ps->quiet && ps->compat) /* er_print says it on stderr */
        esc_fprintf(stderr, "Print limit set to %ld\n", n);
    else if (!ps->json && !ps->quiet)
        sink_printf(&ps->out, "Print limit set to %ld\n", n);
    return 0;
}

static int c_name(pstate_t *ps, const char *a)
{
    char fmt[32];
    snprintf(fmt, sizeof fmt, "%s", a);
    char *colon = strchr(fmt, ':'); /* er_print's ":soname" suffix is accepted and ignored */
    if (colon)
        *colon = 0;
    if (!strcmp(fmt, "short"))
        ps->namefmt = 0;
    else if (!strcmp(fmt, "long"))
        ps->namefmt = 1;
    else if (!strcmp(fmt, "mangled"))
        ps->namefmt = 2;
    else {
        esc_fprintf(stderr, "tally: -name '%s': use short, long or mangled\n", a);
        return 1;
    }
    return 0;
}

static int c_thread_select(pstate_t *ps, const char *a)
{
    tally_err_t err = { 0 };
    if (eng_select_threads(ps->ses->eng, a, &err))
        return pr_report(&err);
    return ps->compat && !ps->json ? pr_list_er(ps, 'T') : 0; /* er_print shows the selection */
}

static int c_experiment_list(pstate_t *ps, const char *a)
{
    if (ps->compat && !ps->json)
        return pr_list_er(ps, 'E');
    if (ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "experiment_list");
        json_key(&j, "experiments");
        json_arr_begin(&j);
        for (size_t x = 0; x < ps->ses->nexps; x++)
            json_str(&j, ps->ses->exps[x]->path);
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
        return 0;
    }
    for (size_t x = 0; x < ps->ses->nexps; x++)
        sink_printf(&ps->out, "%zu  %s  (%zu process%s)\n", x + 1, ps->ses->exps[x]->path,
                    ps->ses->exps[x]->nprocs, ps->ses->exps[x]->nprocs == 1 ? "" : "es");
    sink_printf(&ps->out, "\n");
    return 0;
}

static int c_help(pstate_t *ps, const char *a);

/* The metrics shown before any -metrics: those of the data the experiments have (er_print's
 * choice for each kind of data), sorted by the first. */
static void default_metrics(pstate_t *ps)
{
    int clock = 0, sync = 0, heap = 0, io = 0;
    for (size_t x = 0; x < ps->ses->nexps; x++)
        for (size_t i = 0; i < ps->ses->exps[x]->nprocs; i++) {
            const exp_process_t *p = ps->ses->exps[x]->procs[i];
            clock |= p->clock_ns != 0;
            sync |= p->sync_on;
            heap |= p->heap_on;
            io |= p->io_on;
        }
    static const struct {
        int which;
        const char *metrics;
    } kinds[] = {
        { 0, "totalcpu" },
        { 1, "sync:syncn" },
        { 2, "heapleakbytes:heapleakcnt:heapallocbytes:heapalloccnt" },
        { 3, "ioreadtime:iowritetime:ioothertime:ioerrortime" },
    };
    int declared = 0; /* (the metrics of profiled blocks are -kind blocks' own: set_kind) */
    for (int k = ENG_NBUILTIN; k < eng_nmetrics(ps->ses->eng); k++)
        declared |= !eng_is_block_metric(ps->ses->eng, k);
    const int have[4] = { clock || !(sync || heap || io || declared), sync, heap, io };
    char m[512] = "", cm[512] = "";
    size_t n = 0, cn = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        if (!have[kinds[k].which])
            continue;
        char copy[128];
        snprintf(copy, sizeof copy, "%s", kinds[k].metrics);
        char *save = NULL;
        for (char *t = strtok_r(copy, ":", &save); t; t = strtok_r(NULL, ":", &save)) {
            /* clock time exclusive and inclusive; traced data inclusive, as er_print does */
            if (k == 0)
                n += (size_t)snprintf(m + n, sizeof m - n, "e.%%%s:i.%%%s:", t, t);
            else
                n += (size_t)snprintf(m + n, sizeof m - n, "i.%s:", t);
            cn += (size_t)snprintf(cm + cn, sizeof cm - cn, k == 0 ? "a.%%%s:" : "a.%s:", t);
        }
    }
    /* metrics the experiments declared: exclusive and inclusive, and attributed, while the
     * specification has room */
    for (int k = ENG_NBUILTIN; k < eng_nmetrics(ps->ses->eng); k++) {
        const char *t = eng_metric(ps->ses->eng, k)->name;
        if (eng_is_block_metric(ps->ses->eng, k))
            continue;
        if (n + 2 * strlen(t) + 16 > 400 || cn + strlen(t) + 16 > 400)
            break;
        n += (size_t)snprintf(m + n, sizeof m - n, "e.%s:i.%s:", t, t);
        cn += (size_t)snprintf(cm + cn, sizeof cm - cn, "a.%s:", t);
    }
    snprintf(m + n, sizeof m - n, "name");
    snprintf(cm + cn, sizeof cm - cn, "name");
    tally_err_t err = { 0 };
    pr_parse_mspec(ps->ses->eng, m, &ps->metrics, FL_E | FL_I, &err);
    pr_parse_mspec(ps->ses->eng, cm, &ps->cmetrics, FL_A, &err);
    ps->sort_flavor = ps->metrics.cols[0].flavor;
    ps->sort_metric = ps->metrics.cols[0].metric;
    ps->kind = ENG_KIND_FUNCTION;
    ps->other_set = 0;
}

/* A command's argument: none, required, or optional (er_print's [exp_id]: on the command line
 * the next word is taken only when it looks like the argument and is not an experiment). */
enum { ARG_NONE, ARG_NEEDED, ARG_OPTIONAL, ARG_OPTIONAL_NAME };
/* ARG_OPTIONAL_NAME: an optional name (-callstack_history [BLOCK]): on the command line the next
 * word is taken when it is no existing path and no option. */

static const struct pcmd {
    const char *name;
    int nargs; /* ARG_* */
    int (*fn)(pstate_t *, const char *);
    const char *arg, *help;
    int data; /* PR_DATA_*: the recorded data the view shows (its losses are said at its top) */
} pcmds[] = {
    { "functions", 0, c_functions, "", "functions with their metrics, <Total> first", PR_DATA_ALL },
    { "callers-callees", 0, c_cc, "", "each function with its callers and callees (attributed)", PR_DATA_ALL },
    { "csingle", 1, c_csingle, "NAME", "callers and callees of one function", PR_DATA_ALL },
    { "calltree", 0, c_calltree, "", "the call tree with inclusive metrics", PR_DATA_ALL },
    { "fsummary", 0, view_fsummary, "", "each function's metrics, size, address, file, object", PR_DATA_ALL },
    { "lsummary", 0, view_lsummary, "", "each source line's metrics, address, file, object", PR_DATA_ALL },
    { "psummary", 0, view_psummary, "", "each instruction's metrics, address, file, object", PR_DATA_ALL },
    { "fsingle", 1, c_fsingle, "NAME", "one function's metrics, size, address, file, object", PR_DATA_ALL },
    { "load_objects", 0, c_objects, "", "load objects with their metrics, <Total> first", PR_DATA_ALL },
    { "objects", 0, view_objects_er, "", "load objects of the data and what is wrong with them (er_print's objects)", 0 },
    { "object_select", 1, set_object_select, "OBJ[,OBJ]", "show the functions of these load objects, hide the others", 0 },
    { "cmetric_list", 0, view_cmetric_list, "", "the callers-callees metrics and sort", 0 },
    { "compat", 1, set_compat, "er_print|off", "er_print's layouts for scripts that parse them (also --compat=er_print)", 0 },
    { "lines", 0, c_lines, "", "source lines with their metrics", PR_DATA_ALL },
    { "object_show", 1, c_object_show, "NAME|all", "show the functions of a load object", 0 },
    { "object_hide", 1, c_object_hide, "NAME|all", "show a load object as one entry <name>", 0 },
    { "object_api", 1, c_object_api, "NAME|all", "show only the functions it is entered by", 0 },
    { "objects_default", 0, c_objects_default, "", "show every load object's functions", 0 },
    { "inlines", 1, c_inlines, "on|off", "inlined functions as frames (on) or folded (off)", 0 },
    { "pcs", 0, c_pcs, "", "instructions with their metrics", PR_DATA_ALL },
    { "source", 1, view_source, "FUNC|FILE", "source annotated with metrics per line", PR_DATA_ALL },
    { "disasm", 1, view_disasm, "FUNC", "disassembly annotated with metrics per instruction", PR_DATA_ALL },
    { "setpath", 1, set_setpath, "DIR[:DIR]", "directories searched for sources", 0 },
    { "addpath", 1, set_addpath, "DIR[:DIR]", "add directories to search for sources", 0 },
    { "pathmap", 1, set_pathmap, "'OLD NEW'", "sources recorded under OLD are under NEW", 0 },
    { "metrics", 1, c_metrics, "SPEC", "metrics shown, e.g. e.%totalcpu:i.%totalcpu:name", 0 },
    { "cmetrics", 1, c_cmetrics, "SPEC", "metrics of callers-callees, e.g. a.%totalcpu:name", 0 },
    { "metric_list", 0, c_metric_list, "", "metrics available and the current settings", 0 },
    { "sort", 1, c_sort, "METRIC", "sort by a metric (e.totalcpu, i.user, ...) or name", 0 },
    { "limit", 1, c_limit, "N", "show at most N rows (0: all)", 0 },
    { "name", 1, c_name, "short|long|mangled", "how function names are shown", 0 },
    { "header", ARG_OPTIONAL, c_header, "[EXP_ID]", "what was collected, how the run ended, data quality (of experiment EXP_ID, default all)", PR_DATA_ALL },
    { "overview", 0, c_overview, "", "totals of the run and how trustworthy they are", PR_DATA_ALL },
    { "thread_list", 0, c_thread_list, "", "threads, numbered for -thread_select", PR_DATA_ALL },
    { "thread_select", 1, c_thread_select, "LIST", "analyse only threads LIST: all, 2, 1,3-5", 0 },
    { "experiment_list", 0, c_experiment_list, "", "the experiments loaded", 0 },
    { "sample_list", 0, c_sample_list, "", "sample packets: time, length, CPU, faults, states", PR_DATA_ALL },
    { "sample_detail", ARG_OPTIONAL, view_sample_detail_er, "[EXP_ID]", "statistics of the selected samples, then of each (er_print's; EXP_ID default all)", PR_DATA_ALL },
    { "sample_info", ARG_OPTIONAL, view_sample_detail, "[EXP_ID]", "everything tally knows of each selected sample: resources, RSS, metrics", PR_DATA_ALL },
    { "statistics", ARG_OPTIONAL, view_statistics, "[EXP_ID]", "span, thread time by state, resource counts over the selected samples", PR_DATA_ALL },
    { "cpu_list", 0, view_cpu_list, "", "per experiment, how many CPUs the selected events ran on", PR_DATA_ALL },
    { "indxobj_list", 0, view_indxobj_list, "", "the index object types of -indxobj", 0 },
    { "indxobj", 1, view_indxobj, "TYPE", "exclusive metrics by Threads, CPUs, Samples, Seconds, Processes, Experiment_IDs", PR_DATA_ALL },
    { "sample_select", 1, set_sample_select, "LIST", "analyse only samples LIST: all, 3-7,9", 0 },
    { "cpu_select", 1, set_cpu_select, "LIST", "analyse only events on CPUs LIST: all, 0,2", 0 },
    { "filters", 1, set_filters, "EXPR", "analyse only events where EXPR holds (none: all)", 0 },
    { "timeline", 0, c_timeline, "", "per thread over time: hottest function or state, runtime states", PR_DATA_CLOCK },
    { "time_functions", 0, c_time_functions, "", "per time column: each function's sort metric", PR_DATA_ALL },
    { "blocks", 0, view_blocks, "", "profiled blocks: calls, subrs, excl., incl., call paths", 0 },
    { "kind", 1, set_kind, "functions|blocks", "objects of -functions, -callers-callees, -calltree", 0 },
    { "callstack", ARG_OPTIONAL, view_callstack, "[N|all]", "performance callstacks at monitor point N (all)", 0 },
    { "callstack_history", ARG_OPTIONAL_NAME, view_callstack_history, "[BLOCK]", "how blocks change from one monitor point to the next", 0 },
    { "leaks", 0, c_leaks, "", "heap blocks never freed, by allocating stack, largest first", PR_DATA_HEAP },
    { "allocs", 0, c_allocs, "", "heap allocations by allocating stack, largest first", PR_DATA_HEAP },
    { "heap", 0, view_heap_er, "", "allocations and leaks by allocating stack, <Total> first (er_print's heap)", PR_DATA_HEAP },
    { "heap_peak", 0, c_heap, "", "each process's peak heap, the stacks live at it, temporaries", PR_DATA_HEAP },
    { "heapstat", 0, view_heapstat, "", "the highest peak; allocations and leaks by size range", PR_DATA_HEAP },
    { "ioactivity", 0, view_ioactivity, "", "I/O times by file, <Total> first", PR_DATA_IO },
    { "iodetail", 0, view_iodetail, "", "I/O times by file descriptor opened", PR_DATA_IO },
    { "iocallstack", 0, view_iocallstack, "", "I/O times, bytes and calls by calling stack", PR_DATA_IO },
    { "iostat", 0, view_iostat, "", "I/O calls by kind and size range, longest, totals", PR_DATA_IO },
    { "sync_objects", 0, c_sync_objects, "", "mutexes, conditions, ... waited on, most first", PR_DATA_SYNC },
    { "io_files", 0, c_io_files, "", "I/O time, bytes and calls by file", PR_DATA_IO },
    { "data_objects", 0, view_data_objects, "", "data objects with their metrics, <Total> first (-p +on)", PR_DATA_CLOCK },
    { "data_single", 1, view_data_single, "NAME", "one data object: metrics, scope, aggregates", PR_DATA_CLOCK },
    { "data_layout", 0, view_data_layout, "", "structure types: members at offsets, holes", PR_DATA_CLOCK },
    { "memobj", 1, view_memobj, "cacheline|page", "memory objects by cache line or page", PR_DATA_CLOCK },
    { "false_sharing", 0, view_false_sharing, "", "cache lines threads share at different offsets", PR_DATA_CLOCK },
    { "rank_list", 0, view_rank_list, "", "MPI ranks: MPI time, CPU, messages, bytes, drops", PR_DATA_ALL },
    { "rank_select", 1, set_rank_select, "LIST", "analyse only MPI ranks LIST: all, 0, 1,3-5", 0 },
    { "mpi_imbalance", 0, view_mpi_imbalance, "", "MPI time per function: min, mean, max over ranks", PR_DATA_ALL },
    { "mpi_callsites", 0, view_mpi_callsites, "", "MPI time per MPI call site over ranks; late arrivals, late senders", PR_DATA_ALL },
    { "mpi_matrix", 0, view_mpi_matrix, "", "MPI messages and bytes between every pair of ranks", 0 },
    { "mpi_timeline", 0, view_mpi_timeline, "", "MPI calls over time, a line per rank", PR_DATA_ALL },
    { "script", 1, c_script, "FILE", "run the commands in FILE, one per line", 0 },
    { "outfile", 1, c_outfile, "FILE", "write what follows to FILE (-: standard output, --: standard error)", 0 },
    { "appendfile", 1, c_appendfile, "FILE", "append what follows to FILE", 0 },
    { "object_list", 0, c_object_list, "", "load objects and how their functions are shown", 0 },
    { "version", 0, c_version, "", "tally's version", 0 },
    { "printmode", 1, c_printmode, "text|html|C", "tables as text, an html table, or values separated by C", 0 },
    { "viewmode", 1, c_viewmode, "user|expert|machine", "machine: tally's collector frames as recorded", 0 },
    { "compare", 1, c_compare, "on|off|delta|ratio", "several experiments side by side (delta, ratio: against the first)", 0 },
    { "dmetrics", 1, c_dmetrics, "SPEC", "default metrics, merged as in settings files (e.g. ie!.any:e%.totalcpu)", 0 },
    { "en_desc", 1, c_en_desc, "on|off|=REGEX", "descendant processes read: all, none, those whose program matches (applied as the experiments load)", 0 },
    { "describe", 0, c_describe, "", "the keywords of -filters and their values in each experiment", 0 },
    { "dsort", 1, c_dsort, "SPEC", "default sort: the first of SPEC's metrics shown (e.g. ei.any:name)", 0 },
    { "help", 0, c_help, "", "this list", 0 },
    { "quit", 0, c_quit, "", "leave the interactive prompt (also: exit)", 0 },
    { "exit", 0, c_quit, "", NULL, 0 },
};
#define NPCMDS (sizeof pcmds / sizeof pcmds[0])

static void list_commands(FILE *out)
{
    for (size_t i = 0; i < NPCMDS; i++) {
        if (!pcmds[i].help)
            continue;
        char left[64];
        snprintf(left, sizeof left, "-%s %s", pcmds[i].name, pcmds[i].arg);
        esc_fprintf(out, "  %-30s %s\n", left, pcmds[i].help);
    }
}

static int c_help(pstate_t *ps, const char *a)
{
    esc_printf("Commands (on the command line with a leading '-', in scripts and at the prompt "
           "with or without it):\n");
    list_commands(stdout);
    esc_printf("\n");
    return 0;
}

/* er_print's other spellings of commands. */
static const struct { const char *alias, *name; } aliases[] = {
    { "gprof", "callers-callees" },  { "ctree", "calltree" },
    { "exp_list", "experiment_list" }, { "lwp_list", "thread_list" },
    { "lwp_select", "thread_select" }, { "gmetric_list", "cmetric_list" },
};

/* The command called name (leading dashes ignored): its full name, one of er_print's aliases, or
 * a prefix of exactly one command's name ("func"), as er_print accepts them. NULL when there is
 * none; *ambiguous (when not NULL) then says whether the prefix fits several. */
static const struct pcmd *find_cmd_amb(const char *name, int *ambiguous)
{
    while (*name == '-')
        name++;
    if (ambiguous)
        *ambiguous = 0;
    for (size_t i = 0; i < NPCMDS; i++)
        if (!strcmp(pcmds[i].name, name))
            return &pcmds[i];
    for (size_t a = 0; a < sizeof aliases / sizeof *aliases; a++)
        if (!strcmp(aliases[a].alias, name))
            return find_cmd_amb(aliases[a].name, NULL);
    size_t len = strlen(name), nfit = 0;
    const struct pcmd *fit = NULL;
    for (size_t i = 0; len && i < NPCMDS; i++)
        if (pcmds[i].help && !strncmp(pcmds[i].name, name, len)) {
            fit = &pcmds[i];
            nfit++;
        }
    if (nfit == 1)
        return fit;
    if (nfit > 1 && ambiguous)
        *ambiguous = 1;
    return NULL;
}

static const struct pcmd *find_cmd(const char *name) { return find_cmd_amb(name, NULL); }

static void unknown_cmd(const char *name, const char *where)
{
    tally_err_t err = { 0 };
    int amb;
    if (!find_cmd_amb(name, &amb) && amb) {
        const char *bare = name;
        while (*bare == '-')
            bare++;
        char fits[512] = "";
        size_t len = strlen(bare), used = 0;
        for (size_t i = 0; i < NPCMDS && used < sizeof fits - 64; i++)
            if (pcmds[i].help && !strncmp(pcmds[i].name, bare, len))
                used += (size_t)snprintf(fits + used, sizeof fits - used, "%s-%s",
                                         used ? ", " : "", pcmds[i].name);
        tally_errf(&err, TALLY_EUSAGE, "%s%sambiguous command '%s': it begins %s", where ? where : "",
                   where ? ": " : "", name, fits);
        cli_report(&err);
        return;
    }
    tally_errf(&err, TALLY_EUSAGE, "%s%sunknown command '%s'", where ? where : "",
               where ? ": " : "", name);
    const char *cands[NPCMDS];
    for (size_t i = 0; i < NPCMDS; i++)
        cands[i] = pcmds[i].name;
    const char *bare = name;
    while (*bare == '-')
        bare++;
    pr_suggest(err.msg, sizeof err.msg, bare, cands, NPCMDS);
    size_t len = strlen(err.msg);
    snprintf(err.msg + len, sizeof err.msg - len, " (see 'tally print -h')");
    cli_report(&err);
}

static void note_empty_selection(pstate_t *ps, const struct pcmd *c);

/* One command line of a script or the prompt: "cmd [arg]". */
static int run_line(pstate_t *ps, char *line, const char *where)
{
    char *p = line;
    while (isspace((unsigned char)*p))
        p++;
    char *end = p + strlen(p);
    while (end > p && isspace((unsigned char)end[-1]))
        *--end = 0;
    if (!*p)
        return 0;
    if (*p == '#') { /* er_print echoes a script's comment lines (on stderr) */
        if (!ps->json && where && ps->compat)
            esc_fprintf(stderr, "%s\n", p);
        else if (!ps->json && where)
            sink_printf(&ps->out, "%s\n", p);
        return 0;
    }
    char *arg = p;
    while (*arg && !isspace((unsigned char)*arg))
        arg++;
    if (*arg) {
        *arg++ = 0;
        while (isspace((unsigned char)*arg))
            arg++;
    }
    const struct pcmd *c = find_cmd(p);
    if (!c) {
        unknown_cmd(p, where);
        return 2;
    }
    if (c->nargs == ARG_NEEDED && !*arg) {
        esc_fprintf(stderr, "tally: %s%s-%s needs an argument: %s\n", where ? where : "",
                where ? ": " : "", c->name, c->arg);
        return 2;
    }
    ps->data = c->data;
    pr_incomplete_text(ps);
    int rc = c->fn(ps, arg);
    fflush(stdout);
    fflush(ps->out.f);
    note_saturation(ps);
    note_empty_selection(ps, c);
    return rc;
}

/* Says, once per selection, that the selection (threads, samples, CPUs, filter) left no event:
 * the view just printed was all zeros for that reason, not because nothing was recorded. */
static void note_empty_selection(pstate_t *ps, const struct pcmd *c)
{
    static char said[1024];
    eng_t *g = ps->ses->eng;
    if (ps->kind == ENG_KIND_BLOCK && (c->fn == c_functions || c->fn == c_cc ||
                                       c->fn == c_csingle || c->fn == c_calltree))
        return; /* (these views show the block paths, not events) */
    if (!g || !ps->data || !eng_selecting(g) || eng_selected_events(g) != 0 ||
        eng_scan_stats(g)->events == 0)
        return;
    char now[sizeof said];
    snprintf(now, sizeof now, "%s|%s|%s|%s", eng_thread_selection(g), eng_sample_selection(g),
             eng_cpu_selection(g), eng_filter(g));
    if (strcmp(now, said) == 0)
        return;
    memcpy(said, now, sizeof said);
    esc_fprintf(stderr, "tally: warning: the selection matches none of the %llu events recorded "
                        "(threads %s, samples %s, CPUs %s, filter %s): the figures shown are all "
                        "zero for that reason; see -thread_list and -sample_list, or widen "
                        "the filter\n",
                (unsigned long long)eng_scan_stats(g)->events, eng_thread_selection(g),
                eng_sample_selection(g), eng_cpu_selection(g), eng_filter(g));
}

/* Says once that some sums saturated (data whose weights add up past 2^64: damaged or made). */
static void note_saturation(pstate_t *ps)
{
    static int said;
    if (ps->ses->eng && !said && eng_saturated(ps->ses->eng)) {
        said = 1;
        esc_fprintf(stderr, "tally: warning: some sums reached 2^64-1 and were saturated (shown as "
                        "the largest value) instead of wrapping around: the experiment's weights "
                        "are not those of a real run (damaged or crafted); check it with 'tally "
                        "check'\n");
    }
}

static int run_script(pstate_t *ps, const char *path)
{
    if (ps->depth > 8) {
        esc_fprintf(stderr, "tally: -script '%s': scripts nested too deeply (a script runs itself?)\n",
                path);
        return 1;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        esc_fprintf(stderr, "tally: cannot read script '%s': %s\n", path, strerror(errno));
        return 1;
    }
    ps->depth++;
    char *line = NULL;
    size_t cap = 0;
    int rc = 0, lineno = 0;
    while (!ps->quit && getline(&line, &cap, f) >= 0) {
        char where[512];
        snprintf(where, sizeof where, "%s:%d", path, ++lineno);
        /* as er_print: a command that is unknown or fails is reported and the script goes on;
         * the worst status is the script's */
        int r = run_line(ps, line, where);
        if (r > rc)
            rc = r;
    }
    free(line);
    fclose(f);
    ps->depth--;
    return rc;
}

static void interactive(pstate_t *ps)
{
    int tty = isatty(0);
    if (tty)
        esc_printf("tally print: %zu experiment%s loaded; 'help' lists the commands, 'quit' "
               "leaves.\n", ps->ses->nexps, ps->ses->nexps == 1 ? "" : "s");
    char *line = NULL;
    size_t cap = 0;
    while (!ps->quit) {
        if (tty) {
            esc_printf("(tally) ");
            fflush(stdout);
        }
        if (getline(&line, &cap, stdin) < 0)
            break;
        run_line(ps, line, NULL); /* an error is reported; the prompt goes on */
    }
    free(line);
    if (tty)
        esc_printf("\n");
}

/* ---- a state for other front ends (print.h) -------------------------------------------------- */

int pr_open(pstate_t *ps, const char *const *paths, size_t npaths, int json)
{
    int rc = 0;
    ps->json = json;
    tally_err_t err = { 0 };
    ps->ses = ses_new();
    /* sources are also looked for in the current directory */
    if (!ps->ses || ses_add_paths(ps->ses, ".", &err)) {
        esc_fprintf(stderr, "tally: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < npaths && !rc; i++)
        if (ses_open(ps->ses, paths[i], &err))
            rc = cli_report(&err);
    for (size_t i = 0; !rc && i < ps->ses->nexps; i++) { /* what the session will use, and notes */
        const exp_experiment_t *x = ps->ses->exps[i];
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/archive", x->path);
        int d = fs_open_dir(dir);
        if (d >= 0)
            close(d);
        else if (d != -ENOENT)
            esc_fprintf(stderr, "tally: note: '%s' is not used: %s\n", dir, fs_strerror(d));
        for (size_t p = 0; p < x->nprocs; p++) {
            const exp_process_t *pr = x->procs[p];
            for (size_t k = 0; k < pr->nnotes; k++)
                esc_fprintf(stderr, "tally: warning: %s%s%s\n", pr->name, *pr->name ? ": " : "",
                        pr->notes[k]);
        }
    }
    if (!rc)
        rc = pr_apply_en_desc(ps);
    if (!rc && ses_start(ps->ses, &err))
        rc = cli_report(&err);
    const char *threads = getenv("TALLY_SCAN_THREADS"); /* tally-print(1): ENVIRONMENT */
    if (!rc && threads && *threads) {
        char *end;
        unsigned long n = strtoul(threads, &end, 10);
        if (*end || n < 1 || n > 64 || *threads == '-')
            esc_fprintf(stderr, "tally: warning: TALLY_SCAN_THREADS='%s' is not a number of "
                        "threads from 1 to 64: ignored (one per CPU)\n", threads);
        else
            eng_set_scan_threads(ps->ses->eng, (unsigned)n);
    }
    if (!rc) {
        default_metrics(ps);
        pr_read_rc(ps);
    }
    return rc;
}

int pr_run(pstate_t *ps, const char *name, const char *arg)
{
    const struct pcmd *c = find_cmd(name);
    if (!c)
        return -1;
    ps->data = c->data;
    int rc = c->fn(ps, arg ? arg : "");
    note_saturation(ps);
    return rc;
}

int pr_is_view(const char *name)
{
    const struct pcmd *c = find_cmd(name);
    return c && c->data && *name != '-';
}

const char *pr_view_name(size_t i)
{
    for (size_t k = 0; k < NPCMDS; k++)
        if (pcmds[k].data && i-- == 0)
            return pcmds[k].name;
    return NULL;
}

int pr_view_needs_arg(const char *name)
{
    const struct pcmd *c = find_cmd(name);
    return c && c->nargs == ARG_NEEDED;
}

int pr_reset(pstate_t *ps)
{
    tally_err_t err = { 0 };
    default_metrics(ps);
    ps->limit = 0;
    ps->namefmt = 0;
    ps->compat = 0;
    eng_t *g = ps->ses->eng;
    if (eng_select_threads(g, "all", &err) || eng_select_samples(g, "all", &err) ||
        eng_select_cpus(g, "all", &err) || eng_set_filter(g, "", &err))
        return pr_report(&err);
    eng_reset_object_modes(g);
    eng_set_inlines(g, 1);
    return 0;
}

/* ---- main ----------------------------------------------------------------------------------- */

/* Is word the optional argument of the command before it ("all" or a number), rather than an
 * experiment (an existing path wins: `-header 1` with a directory named 1)? */
static int optional_arg(const char *word)
{
    struct stat st;
    if (stat(word, &st) == 0)
        return 0;
    if (!strcmp(word, "all"))
        return 1;
    if (!*word)
        return 0;
    for (const char *p = word; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

static void usage(FILE *out)
{
    esc_fprintf(out,
            "usage: tally print [--json] [-COMMAND [ARG]]... EXPERIMENT...\n\n"
            "Reports on one or more experiments in the er_print command language. Commands run\n"
            "in order; with none, commands are read from stdin (an interactive prompt on a\n"
            "terminal). Several experiments, and every descendant process, count as one run.\n\n"
            "options:\n"
            "  --json                         one JSON document per command, one per line\n"
            "  --norc                         read no settings file (.gprofng.rc, .er.rc)\n"
            "  -h, --help                     this help\n\n"
            "commands:\n");
    list_commands(out);
    esc_fprintf(out, "\nMetric names: totalcpu, user, system, wait, lock, iowait, sleep, total; sync,\n"
                 "syncn; heapalloccnt, heapallocbytes, heapleakcnt, heapleakbytes; ioreadtime,\n"
                 "ioreadbytes, ioreadcnt, iowritetime, iowritebytes, iowritecnt, ioothertime,\n"
                 "ioothercnt, ioerrortime, ioerrorcnt (flavors e. i. a., visibility . %% +).\n"
                 "See 'man tally-print'.\n");
}

int pr_parse_args(int argc, char **argv, pr_args_t *pa)
{
    memset(pa, 0, sizeof *pa);
    pa->steps = calloc((size_t)argc + 1, sizeof *pa->steps);
    pa->paths = calloc((size_t)argc + 1, sizeof *pa->paths);
    if (!pa->steps || !pa->paths) {
        esc_fprintf(stderr, "tally: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            pa->help = 1;
            return 0;
        }
        if (!strcmp(a, "--json")) {
            pa->json = 1;
            continue;
        }
        if (!strcmp(a, "--norc")) {
            pa->norc = 1;
            continue;
        }
        if (a[0] != '-' || !a[1]) {
            pa->paths[pa->npaths++] = a;
            continue;
        }
        char name[128];
        snprintf(name, sizeof name, "%s", a);
        char *eq = strchr(name, '='); /* --limit=5 */
        const char *arg = NULL;
        if (eq) {
            *eq = 0;
            arg = a + (eq - name) + 1;
        }
        const struct pcmd *c = find_cmd(name);
        if (!c) {
            unknown_cmd(a, NULL);
            return 2;
        }
        if (c->fn == c_en_desc && (arg || i + 1 < argc)) /* applied as the experiments load */
            pa->en_desc = arg ? arg : argv[i + 1];
        if (c->nargs == ARG_OPTIONAL && !arg && i + 1 < argc && optional_arg(argv[i + 1]))
            arg = argv[++i];
        struct stat st;
        if (c->nargs == ARG_OPTIONAL_NAME && !arg && i + 1 < argc && argv[i + 1][0] != '-' &&
            stat(argv[i + 1], &st) != 0)
            arg = argv[++i];
        if (c->nargs == ARG_NEEDED && !arg) {
            if (i + 1 >= argc) {
                cli_error("print", "-%s needs an argument: %s", c->name, c->arg);
                return 2;
            }
            arg = argv[++i];
        }
        pa->steps[pa->nsteps++] = (pr_step_t){ c, c->name, arg ? arg : "" };
    }
    return 0;
}

void pr_args_free(pr_args_t *pa)
{
    free(pa->steps);
    free(pa->paths);
    memset(pa, 0, sizeof *pa);
}

int cmd_print(int argc, char **argv)
{
    pr_args_t pa;
    int rc = pr_parse_args(argc, argv, &pa);
    pstate_t ps = { .sort_flavor = FL_E, .sort_metric = ENG_M_TOTALCPU };
    sink_file(&ps.out, stdout);
    if (rc)
        goto out;
    if (pa.help) {
        usage(stdout);
        goto out;
    }
    if (!pa.npaths) {
        cli_error("print", "no experiment given; usage: tally print -functions EXPERIMENT");
        rc = 2;
        goto out;
    }
    ps.norc = pa.norc;
    if (pa.en_desc)
        snprintf(ps.en_desc, sizeof ps.en_desc, "%s", pa.en_desc);
    job_t *job = NULL; /* mpirun -np K tally print: print_job.c */
    if (pr_job_start(&ps, &pa, &job, &rc))
        goto out;
    rc = pr_open(&ps, pa.paths, pa.npaths, pa.json);
    pr_job_attach(&ps, job, &rc);
    if (!rc) {
        if (pa.nsteps == 0) {
            interactive(&ps);
        } else {
            for (size_t i = 0; i < pa.nsteps && !ps.quit; i++) {
                const struct pcmd *c = pa.steps[i].cmd;
                ps.data = c->data;
                pr_incomplete_text(&ps);
                int r = c->fn(&ps, pa.steps[i].arg);
                fflush(stdout);
                fflush(ps.out.f);
                note_saturation(&ps);
                note_empty_selection(&ps, c);
                /* as er_print: a failing command is reported and the others still run; the
                 * exit status is the worst */
                if (r && (r == 2 ? 2 : 1) > rc)
                    rc = r == 2 ? 2 : 1;
            }
        }
    }
    if (ps.ses && ps.ses->sym)
        pr_binary_notes(&ps);
    pr_job_end(job, &rc);
out:
    if (ps.outf && fclose(ps.outf) != 0 && !rc) {
        esc_fprintf(stderr, "tally: the -outfile could not be written: %s\n", strerror(errno));
        rc = 1;
    }
    ses_free(ps.ses);
    pr_args_free(&pa);
    return rc;
}
