/*
 * print.h - what the parts of `tally print` share: the state commands change, metric specs, rows
 * and the formatting helpers (print_format.c), and the views (print_views.c, print_info.c,
 * print_samples.c, print_source.c, print_trace.c).
 *
 * A view computes nothing: it asks the analysis session (ps->ses, analyzer/session.h) for a report
 * model (analyzer/report.h) and formats it to ps->out, as text with sink_printf or, with ps->json,
 * as one JSON document on one line through the JSON writer (pr_json_begin, base/json.h). Both
 * escape every string of the experiment (base/esc.h): nothing here writes one raw.
 *
 * Adding a view: its model in src/analyzer/report_*.c (with a unit test), a function
 * `int view_NAME(pstate_t *ps, const char *arg)` in a print_*.c file (one file per family of
 * views), declared here, one line in the command table of print.c, its -h line, its entry in
 * man/tally-print.1, and tests. A view reports errors itself (pr_report) and returns 0, 1 (failed)
 * or 2 (usage error).
 *
 * Depends on: the analyzer (session, report models, engine, symbols). Not thread-safe.
 */
#ifndef TALLY_CLI_PRINT_H
#define TALLY_CLI_PRINT_H

#include <stdint.h>
#include <stdio.h>

#include "analyzer/engine.h"
#include "analyzer/report.h"
#include "analyzer/session.h"
#include "analyzer/symbols.h"
#include "base/err.h"
#include "base/json.h"
#include "base/sink.h"
#include "cli.h"
#include "experiment/reader.h"

/* ---- state ---------------------------------------------------------------------------------- */

enum { FL_E = REP_FL_E, FL_I = REP_FL_I, FL_A = REP_FL_A };

typedef struct mcol {
    int flavor; /* one of FL_* */
    int metric; /* the engine's metric index (ENG_M_* for the builtin ones) */
    int value, percent;
    const eng_metric_def_t *def; /* the metric (owned by the engine) */
} mcol_t;

#define MAXCOLS 64

typedef struct mspec {
    mcol_t cols[MAXCOLS];
    int ncols;
    int name_pos; /* index among cols where the name column goes (ncols = last) */
    char text[512];
} mspec_t;

typedef struct pstate {
    ses_t *ses; /* experiments, symbols, engine and its selections, source paths */
    sink_t out; /* where views write (stdout): text with sink_printf, JSON with json_t */
    int json;
    mspec_t metrics, cmetrics;
    int sort_flavor, sort_metric; /* sort_metric -1: by name */
    long limit;                   /* 0: no limit */
    int namefmt;                  /* 0 short, 1 long, 2 mangled */
    int depth;                    /* -script nesting */
    int data;                     /* PR_DATA_* of the command running (what its losses are) */
    int quit;
    FILE *outf;                   /* outfile/appendfile: the file views write to (NULL: stdout) */
    int compat;                   /* compat er_print: er_print's layouts (print_er.c) */
    /* -kind: the objects of -functions, -callers-callees, -csingle and -calltree (ENG_KIND_FUNCTION
     * or ENG_KIND_BLOCK); the other kind's metrics and sort, restored when it is chosen again */
    int kind;
    mspec_t other_metrics, other_cmetrics;
    int other_sort_flavor, other_sort_metric, other_set;
    int printmode;                /* PR_PM_* (printmode): how tables are written */
    char delim;                   /* PR_PM_DELIM: the delimiter character */
    int viewmode;                 /* PR_VM_* (viewmode) */
    int compare;                  /* PR_CMP_* (compare): several experiments side by side */
    char title[256];              /* the view's title, for an html table (pr_view_title) */
    int quiet;                    /* no confirmation lines (settings files being read) */
    int norc;                     /* --norc: no settings file is read */
    char en_desc[256];            /* en_desc: "on" (or ""), "off", "=REGEX": applied at loading */
} pstate_t;

/* print_modes.c: er_print's display modes (printmode, viewmode, compare), its settings files
 * (.gprofng.rc, .er.rc) and the commands they accept (dmetrics, dsort, en_desc, describe). */
enum { PR_PM_TEXT, PR_PM_HTML, PR_PM_DELIM };
enum { PR_VM_USER, PR_VM_EXPERT, PR_VM_MACHINE };
enum { PR_CMP_OFF, PR_CMP_ON, PR_CMP_DELTA, PR_CMP_RATIO };
int c_printmode(pstate_t *ps, const char *a);
int c_viewmode(pstate_t *ps, const char *a);
int c_compare(pstate_t *ps, const char *a);
int c_dmetrics(pstate_t *ps, const char *a);
int c_dsort(pstate_t *ps, const char *a);
int c_en_desc(pstate_t *ps, const char *a);
int c_describe(pstate_t *ps, const char *a);
/* Leaves out the descendant processes en_desc (ps->en_desc, else a settings file's) excludes;
 * between opening the experiments and starting the session. 0, or 1 after reporting. */
int pr_apply_en_desc(pstate_t *ps);
/* A view's title line: printed now as text ("TITLE\n\n"), kept for the next html table, left
 * out of delimiter-separated output (one table a script parses). */
void pr_view_title(pstate_t *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A table in the current printmode other than text (html or delimiter-separated values). */
void pr_table_other(pstate_t *ps, const mspec_t *ms, const rep_row_t *rows, size_t n,
                    const uint64_t *total);
/* Is compare in effect (on, delta or ratio with two or more experiments)? */
int pr_comparing(const pstate_t *ps);
/* -functions/-objects/-pcs/-lines with compare: each experiment's metrics side by side, rows
 * matched by name and load object. */
int view_compare_list(pstate_t *ps, int kind);
/* -callers-callees and -csingle NAME with compare: a block per function, every experiment's
 * attributed metrics side by side (a function missing from some experiments: zeros there). */
int view_compare_cc(pstate_t *ps, const char *single);
/* Reads the settings files (system, home, current directory) unless norc; warnings on stderr. */
void pr_read_rc(pstate_t *ps);

/* A row of a table: values by flavor (NULL when the row has none of that flavor). */
/* The recorded data a view shows: when some of it was lost while recording (a full disk, a busy
 * writer), the view says so at its top, with counts (pr_incomplete_text, pr_json_begin). */
enum { PR_DATA_CLOCK = 1, PR_DATA_HEAP = 2, PR_DATA_IO = 4, PR_DATA_SYNC = 8, PR_DATA_ALL = 15 };

typedef struct pr_lost {
    uint64_t clock, heap, io, sync, traced; /* records lost, by kind (traced: of unknown kind) */
    uint64_t counter; /* counter samples the kernel lost or the collector could not write */
    int disk_full;
} pr_lost_t;

/* What was lost in every process of the loaded experiments, limited to the kinds in data;
 * returns 1 if anything was. */
int pr_lost(const pstate_t *ps, int data, pr_lost_t *l);
/* Text views: a warning line naming what is missing, before the view (nothing when complete),
 * and one for each counter the PMU multiplexed or the kernel throttled (sampled views). */
void pr_incomplete_text(pstate_t *ps);

/* Display names and rows are the report models' (analyzer/report.h). */
typedef rep_names_t names_t;
typedef rep_row_t row_t;

/* ---- formatting (print_format.c) ------------------------------------------------------------ */

double pr_scaled(const eng_t *g, int metric, uint64_t raw); /* raw sum -> the metric's unit */
const char *pr_flavor_word(int fl, int abbrev); /* "Exclusive" / "Excl." */
char pr_flavor_char(int fl);                     /* 'e', 'i', 'a' */
void pr_fmt_value(char *buf, size_t n, const eng_metric_def_t *d, uint64_t raw);
void pr_fmt_percent(char *buf, size_t n, uint64_t raw, uint64_t total);
/* Display names of the objects present in t ("name (object)" where two objects share a name). */
void pr_names_build(pstate_t *ps, names_t *nm, const eng_table_t *t);
void pr_names_free(names_t *nm);
/* Appends "; did you mean: a, b?" with the nearest of cands to the message in buf. */
void pr_suggest(char *buf, size_t n, const char *want, const char **cands, size_t ncands);
/* Parses a metric spec against the metrics of g; allowed: the flavors (FL_*) permitted. */
int pr_parse_mspec(const eng_t *g, const char *text, mspec_t *ms, int allowed, tally_err_t *err);
uint64_t pr_row_value(const row_t *r, int fl, int metric);
/* An aligned table with three header lines (er_print's layout). */
void pr_table_text(pstate_t *ps, const mspec_t *ms, const row_t *rows, size_t n,
                   const uint64_t *total);
/* The same, calling hook(ps, ctx, r) before row r and once more with r = n after the last (to
 * write section titles between rows, as er_print's csingle). */
typedef void (*pr_row_hook)(pstate_t *ps, void *ctx, size_t r);
void pr_table_text_ex(pstate_t *ps, const mspec_t *ms, const row_t *rows, size_t n,
                      const uint64_t *total, pr_row_hook hook, void *ctx);
/* JSON, with the one writer: a view's document opened (`{` and "incomplete":{...} when data is
 * missing), "metrics":[...], a row object, a row's metric members ("e.name":value, ...). */
void pr_json_begin(pstate_t *ps, json_t *j);
void pr_jmetrics(json_t *j, const mspec_t *ms);
void pr_jrow(json_t *j, const mspec_t *ms, const row_t *r, const uint64_t *total);
void pr_jvalues(json_t *j, const mspec_t *ms, const row_t *r, const uint64_t *total);
/* Every metric the data has, as "e.NAME"/"i.NAME" members (in the order given by incl_first). */
void pr_jall_metrics(pstate_t *ps, json_t *j, const uint64_t *ex, const uint64_t *in,
                     int incl_first);
/* The view options of the state, for the report models. */
rep_opts_t pr_opts(const pstate_t *ps);
/* Sorts by the sort metric (attributed flavor when attributed != 0), descending, then name. */
void pr_sort_rows(pstate_t *ps, row_t *rows, size_t n, int attributed);
const char *pr_sort_title(pstate_t *ps, char *buf, size_t n);
const char *pr_fmt_time(uint64_t real_ns, char *buf, size_t n);
void pr_end_text(const exp_process_t *p, char *buf, size_t n); /* "exited with status 0" */

/* ---- views (print_views.c, print_info.c) ---------------------------------------------------- */

int pr_report(tally_err_t *err); /* prints err; returns 1 */
/* The engine's table of kind (with attributed edges if edges), or NULL after reporting. */
const eng_table_t *pr_table(pstate_t *ps, int kind, int edges);
/* The id of the function called name among those in t, or -1 after reporting (with suggestions). */
long pr_find_function(pstate_t *ps, const eng_table_t *t, const names_t *nm, const char *name);

int view_list(pstate_t *ps, int kind);
int view_callers_callees(pstate_t *ps, const char *single);
int view_calltree(pstate_t *ps);
int view_fsingle(pstate_t *ps, const char *name);
int view_header(pstate_t *ps, const char *exp_id);
int view_overview(pstate_t *ps);
int view_thread_list(pstate_t *ps);
int view_metric_list(pstate_t *ps);
/* print_samples.c: samples, the timeline, and the selections over time */
int view_sample_list(pstate_t *ps);
int view_sample_detail(pstate_t *ps, const char *exp_id);
/* er_print's optional [exp_id] of a command: "" or "all" -> *x = SIZE_MAX (every experiment), a
 * number 1..nexps -> its index; anything else is an error said on stderr (1). */
int pr_exp_id(pstate_t *ps, const char *cmd, const char *arg, size_t *x);
int view_timeline(pstate_t *ps);
/* print_range.c: each function's sort metric per time column (tally view's range selection) */
int view_time_functions(pstate_t *ps);

/* ---- views of traced calls (print_trace.c) -------------------------------------------------- */

int view_leaks(pstate_t *ps);
int view_allocs(pstate_t *ps);
int view_heap(pstate_t *ps);
int view_sync_objects(pstate_t *ps);
int view_io_files(pstate_t *ps);
/* The tracing settings of a process, lines of -header; the traced totals, lines of -overview. */
void pr_trace_settings(pstate_t *ps, const exp_process_t *p);
void pr_trace_overview(pstate_t *ps, const uint64_t *total);
void pr_overview_states(pstate_t *ps); /* the states part of -overview (text) */
int set_sample_select(pstate_t *ps, const char *arg);
/* -kind functions|blocks (print_blocks.c) */
int set_kind(pstate_t *ps, const char *arg);
int set_cpu_select(pstate_t *ps, const char *arg);
int set_filters(pstate_t *ps, const char *arg);
/* print_source.c: annotated source and disassembly */
int view_source(pstate_t *ps, const char *arg);
/* profiled blocks (print_blocks.c) */
int view_blocks(pstate_t *ps, const char *arg);
int view_callstack(pstate_t *ps, const char *arg);
int view_callstack_history(pstate_t *ps, const char *arg);
int view_disasm(pstate_t *ps, const char *arg);
int set_setpath(pstate_t *ps, const char *arg);
int set_addpath(pstate_t *ps, const char *arg);
int set_pathmap(pstate_t *ps, const char *arg);
/* print_data.c: dataspace views (data objects, layouts, memory objects, false sharing) */
int view_data_objects(pstate_t *ps, const char *arg);
int view_data_single(pstate_t *ps, const char *name);
int view_data_layout(pstate_t *ps, const char *arg);
int view_memobj(pstate_t *ps, const char *arg);
int view_false_sharing(pstate_t *ps, const char *arg);
/* Tells (on stderr) of every binary read that is not the one profiled: an archived copy used in
 * its place, a file changed or gone. */
void pr_binary_notes(pstate_t *ps);

/* ---- the state for other front ends (print.c; `tally view` serves these views as JSON) ------- */

/* Opens the experiments of paths into a new session ps->ses (notes and errors on stderr), starts
 * it and sets the default metrics; 0, or the exit status after reporting. */
int pr_open(pstate_t *ps, const char *const *paths, size_t npaths, int json);
/* Runs the command called name (its dash optional) with arg ("" when none): what it returns (0,
 * 1 failed, 2 usage error; reported on stderr), or -1 when there is no such command. */
int pr_run(pstate_t *ps, const char *name, const char *arg);
/* Is name (without a dash) a view of recorded data (a command with PR_DATA_*)? The i-th such
 * view's name (NULL past the last); does the command take an argument? */
int pr_is_view(const char *name);
const char *pr_view_name(size_t i);
int pr_view_needs_arg(const char *name);
/* Back to the settings of a fresh state: default metrics and sort, no limit, short names, every
 * thread, sample and CPU, no filter, every load object shown, inlines on, tally's layouts (no
 * -compat). 0, or 1 after reporting. */
int pr_reset(pstate_t *ps);

/* print's command line: --json, -h/--help, commands (a unique abbreviation, a dash or two,
 * `-cmd=ARG`) with their arguments as er_print takes them (an optional argument only when the
 * next word is one and not an existing path), and the experiments, in order. 0; 2 after reporting
 * a usage error (an unknown or ambiguous command, a missing argument); 1 on no memory. *pa is to
 * be freed with pr_args_free whatever the result. */
typedef struct pr_step {
    const void *cmd;  /* print.c's command table entry */
    const char *name; /* the command's full name */
    const char *arg;  /* "" when none */
} pr_step_t;
typedef struct pr_args {
    pr_step_t *steps;
    size_t nsteps;
    const char **paths;
    size_t npaths;
    int json, help;
    int norc;            /* --norc */
    const char *en_desc; /* -en_desc's argument (applied as the experiments load), or NULL */
} pr_args_t;
int pr_parse_args(int argc, char **argv, pr_args_t *pa);
void pr_args_free(pr_args_t *pa);

/* print_job.c: `mpirun -np K tally print`, the analysis as an MPI job (analyzer/jobscan.h).
 * pr_job_start: 1 when this process is done (not rank 0: it served the job; or the job could not
 * start), its exit status in *rc; else 0, *job set on rank 0 of a job (NULL: not a job).
 * pr_job_attach after pr_open (*rc its status), pr_job_end when the commands are done. */
#include "analyzer/jobscan.h"
int pr_job_start(pstate_t *ps, const pr_args_t *pa, job_t **job, int *rc);
void pr_job_attach(pstate_t *ps, job_t *job, int *rc);
void pr_job_end(job_t *job, int *rc);

/* print_er.c: er_print's layouts (-compat er_print) and its load object and metric lists */
int set_compat(pstate_t *ps, const char *a);
/* How many of n rows (<Total> not counted) a table shows under -limit: er_print's limit counts
 * <Total> (-compat), tally's does not. */
size_t pr_limit_rows(const pstate_t *ps, size_t n);
/* er_print's name of instruction or line id (kind ENG_KIND_PC or _LINE), malloc'd; NULL when
 * there is none (or memory ran out). */
char *pr_er_row_name(pstate_t *ps, int kind, uint32_t id);
/* -callers-callees (single NULL) and -csingle in er_print's layout. */
int pr_cc_er(pstate_t *ps, const char *single);
int view_objects_er(pstate_t *ps, const char *a);
int set_object_select(pstate_t *ps, const char *a);
int view_cmetric_list(pstate_t *ps, const char *a);
int pr_object_list_er(pstate_t *ps); /* -object_list in er_print's table */
/* er_print's list of threads ('T'), samples ('S'), CPUs ('C') or experiments ('E'), as its list
 * and selection commands print it (-compat). */
int pr_list_er(pstate_t *ps, int what);
int pr_metric_list_er(pstate_t *ps); /* -metric_list as er_print's (-compat) */
int pr_calltree_er(pstate_t *ps);     /* -calltree as er_print's (-compat) */

/* print_summary.c: -fsummary, -lsummary, -psummary */
int view_fsummary(pstate_t *ps, const char *a);
int view_lsummary(pstate_t *ps, const char *a);
int view_psummary(pstate_t *ps, const char *a);
int pr_fsingle_er(pstate_t *ps, const char *name); /* -fsingle as er_print's (-compat) */

/* print_stats.c: -statistics, er_print's -sample_detail, -cpu_list, -indxobj_list, -indxobj */
int view_statistics(pstate_t *ps, const char *a);
int view_sample_detail_er(pstate_t *ps, const char *a);
int view_cpu_list(pstate_t *ps, const char *a);
int view_indxobj_list(pstate_t *ps, const char *a);
int view_indxobj(pstate_t *ps, const char *a);

/* print_erio.c: er_print's -heap, -heapstat, -ioactivity, -iodetail, -iocallstack, -iostat */
int view_heap_er(pstate_t *ps, const char *a);
int view_heapstat(pstate_t *ps, const char *a);
int view_ioactivity(pstate_t *ps, const char *a);
int view_iodetail(pstate_t *ps, const char *a);
int view_iocallstack(pstate_t *ps, const char *a);
int view_iostat(pstate_t *ps, const char *a);
/* A stack, leaf first: "function + 0xOFFSET" lines (text) or a JSON array (j != NULL); 0, or 1
 * when memory ran out (print_trace.c). */
int pr_print_stack(pstate_t *ps, json_t *j, uint32_t exp, uint32_t proc, const uint64_t *pcs,
                   const uint32_t *fns, uint32_t n);

/* print_mpi.c: MPI jobs (-M on) */
int view_rank_list(pstate_t *ps, const char *a);
int set_rank_select(pstate_t *ps, const char *a);
int view_mpi_imbalance(pstate_t *ps, const char *a);
int view_mpi_callsites(pstate_t *ps, const char *a);
int view_mpi_matrix(pstate_t *ps, const char *a);
int view_mpi_timeline(pstate_t *ps, const char *a);

#endif
