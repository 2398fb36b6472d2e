/*
 * report.h - report models: what a view shows, as data, computed from a session (session.h) and
 * apart from any formatting. Text and JSON (src/cli), exporters and a web server format these;
 * none of them computes.
 *
 * Models (one file per family):
 *   report_table.c   display names (two functions of one name in different objects are told
 *                    apart), rows sorted and limited (functions, load objects, instructions,
 *                    lines), callers-callees, the call tree with its children ordered, one
 *                    function's summary (fsingle), the suggestion of near names.
 *   report_run.c     the run: its span and duration (one definition for every view), how a
 *                    process ended, the data's trustworthiness, -header, -overview, -thread_list.
 *   report_time.c    over time: the metric totals of each sample, the samples with their
 *                    resource deltas, the timeline (per thread and column, the hottest function
 *                    or the main state).
 *   report_source.c  annotated source and disassembly: which function or file, its lines' and
 *                    instructions' metrics (inlined call sites included), the groups that make a
 *                    function's rows add up to it, branch targets and callees, the source text
 *                    (found through the session's archive copies, path maps and directories).
 *   report_range.c   functions per time column: what a time range selected in a front end shows,
 *                    summed there without asking the engine again.
 *   report_blocks.c  profiled blocks (report_blocks.h): performance callstacks at monitor points,
 *                    their history, the whole-run profile of blocks per thread and summed.
 *   report_stacks.c  stacks as the exporters write them: every distinct stack (or every
 *                    (thread, stack) pair) with its vector, and every selected event in time
 *                    order, their frames mapped to functions as the tables map them.
 *   report_trace.c   traced calls: heap stacks (-leaks, -allocs), a stack's frames as
 *                    "function + offset", sync objects' kinds and names (the rest of the traced
 *                    views' data comes from analyzer/traces.h).
 *
 * Ownership and lifetimes: a model owns its arrays and names (rep_*_free); the metric vectors its
 * rows point to belong to the engine and are valid until the engine computes again (engine.h):
 * build a model, format it, free it. Not thread-safe. Errors: negative TALLY_E* codes with a
 * message in *err (out of memory, a name not found with suggestions, an ambiguous name).
 */
#ifndef TALLY_ANALYZER_REPORT_H
#define TALLY_ANALYZER_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/engine.h"
#include "analyzer/session.h"
#include "base/err.h"
#include "analyzer/report_blocks.h"

/* ---- common --------------------------------------------------------------------------------- */

/* Metric flavors, as bits (a metric spec may ask for several). */
enum { REP_FL_E = 1, REP_FL_I = 2, REP_FL_A = 4 };

/* How a view's rows are named, sorted and limited. */
typedef struct rep_opts {
    int namefmt;                  /* 0 short, 1 long, 2 mangled */
    int sort_flavor, sort_metric; /* REP_FL_*, ENG_M_*; sort_metric -1: by name */
    long limit;                   /* rows kept after sorting; 0: all */
    int kind; /* the objects of callers-callees and the call tree: ENG_KIND_FUNCTION (0, the
                 default) or ENG_KIND_BLOCK */
} rep_opts_t;

/* A row: a name and metric vectors by flavor (index 0 exclusive, 1 inclusive, 2 attributed;
 * NULL: the row has none of that flavor), each indexed by metric. */
typedef struct rep_row {
    const char *name;
    const uint64_t *v[3];
    int mark;    /* '*' for the focus of callers-callees; 0 otherwise */
    uint32_t id; /* the object's id in its kind */
} rep_row_t;

/* The value of flavor fl (REP_FL_*) and metric of a row, 0 when it has none of that flavor. */
uint64_t rep_row_value(const rep_row_t *r, int fl, int metric);
/* Sorts rows by (flavor, metric) descending, then by name; metric -1: by name only. */
void rep_sort_rows(rep_row_t *rows, size_t n, int flavor, int metric);

/* Display names of the objects of a table: the name in the chosen format, with " (<object>)"
 * added to functions that share a name with another function listed. */
typedef struct rep_names {
    const char **name; /* by id; NULL = not present */
    char **owned;
    size_t n;
} rep_names_t;
int rep_names_build(eng_t *eng, const eng_table_t *t, int namefmt, rep_names_t *nm,
                    tally_err_t *err);
void rep_names_free(rep_names_t *nm);

/* Appends "; did you mean: a, b?" with up to three candidates near want to the message in buf
 * (case-insensitive edit distance; gcc clone suffixes ".constprop.0" ignored; NULL skipped). */
void rep_suggest(char *buf, size_t n, const char *want, const char *const *cands, size_t ncands);

/* The function called name among those present in t (its display name, or its short, long or
 * mangled name when that is unique, or the one gcc clone "name.xxx"); its id, or an error:
 * TALLY_EUSAGE when ambiguous, TALLY_ENOTFOUND with suggestions. */
long rep_find_function(eng_t *eng, const eng_table_t *t, const rep_names_t *nm, const char *name,
                       tally_err_t *err);

/* ---- tables: -functions, -objects, -pcs, -lines --------------------------------------------- */

typedef struct rep_table {
    int kind;             /* ENG_KIND_* */
    const eng_table_t *t; /* the engine's table */
    const uint64_t *total;
    rep_row_t total_row;  /* "<Total>" */
    rep_row_t *rows;      /* sorted, limited */
    size_t n;
    rep_names_t names;
} rep_table_t;

int rep_table(ses_t *s, int kind, const rep_opts_t *o, rep_table_t *out, tally_err_t *err);
void rep_table_free(rep_table_t *rt);

/* ---- callers-callees: -callers-callees, -csingle --------------------------------------------- */

typedef struct rep_cc_entry {
    uint32_t id;
    const char *name;
    const uint64_t *excl, *incl; /* the function's own */
    rep_row_t *callers, *callees; /* attributed values (v[2]), sorted by the attributed metric */
    size_t ncallers, ncallees;
} rep_cc_entry_t;

typedef struct rep_cc {
    const uint64_t *total;
    rep_cc_entry_t *entries; /* in the order of the function table (or the one asked) */
    size_t n;
    rep_names_t names;
} rep_cc_t;

/* single: NULL for every function (sorted, limited), or the name of one. */
int rep_callers_callees(ses_t *s, const rep_opts_t *o, const char *single, rep_cc_t *out,
                        tally_err_t *err);
void rep_cc_free(rep_cc_t *cc);

/* ---- the call tree: -calltree ---------------------------------------------------------------- */

typedef struct rep_tree {
    const eng_tree_t *tr; /* the engine's tree: node 0 is <Total> */
    int metric;           /* children ordered by this inclusive metric, descending */
    uint32_t *kids;       /* the children of node k: kids[kid_start[k] .. kid_start[k + 1]) */
    size_t *kid_start;
    const uint64_t *total;
    rep_names_t names;
} rep_tree_t;

/* The name of node k ("<Total>" for the root). */
const char *rep_tree_name(const rep_tree_t *t, uint32_t k);
int rep_calltree(ses_t *s, const rep_opts_t *o, rep_tree_t *out, tally_err_t *err);
void rep_tree_free(rep_tree_t *t);

/* ---- one function: -fsingle ------------------------------------------------------------------ */

typedef struct rep_func {
    uint32_t id;
    const char *name; /* display name */
    const uint64_t *excl, *incl, *total;
    uint64_t size, addr;
    const char *file; /* NULL: unknown */
    uint32_t line;
    const char *object; /* load object path, "<Unknown>" */
    const char *mangled;
    rep_names_t names;
} rep_func_t;

int rep_function(ses_t *s, const rep_opts_t *o, const char *name, rep_func_t *out,
                 tally_err_t *err);
void rep_func_free(rep_func_t *f);

/* ---- the run: -header, -overview, -thread_list (report_run.c) -------------------------------- */

/* The span of the run over every process of every experiment: from the earliest known start to
 * the latest known end (ns, CLOCK_MONOTONIC); returns its length in seconds (0 when unknown).
 * t0/t1 may be NULL. */
double rep_run_span(const ses_t *s, uint64_t *t0, uint64_t *t1);
/* How process p ended, as a sentence: "exited with status 0", "killed by signal 9 (SIGKILL)". */
void rep_end_text(const exp_process_t *p, char *buf, size_t n);

/* How far the recorded data can be trusted: samples recorded against expected, stacks that
 * could not be unwound or were cut, events dropped, processes without statistics. */
typedef struct rep_trust {
    uint64_t samples, expected, unwind, busy, disk, truncated, nostats;
} rep_trust_t;
void rep_trust(const ses_t *s, rep_trust_t *tr);

typedef struct rep_overview {
    double duration; /* rep_run_span */
    size_t nprocs, nthreads;
    const exp_process_t *root; /* of the first experiment */
    char ended[256];           /* rep_end_text of the root */
    const uint64_t *total;     /* every metric over the selection */
    rep_trust_t trust;
} rep_overview_t;
int rep_overview(ses_t *s, rep_overview_t *out, tally_err_t *err);

/* -header: every process of every experiment, with its own duration and, for a process that
 * ended before writing its statistics, its clock samples counted in the events. */
typedef struct rep_hproc {
    const exp_process_t *p;
    char ended[256];
    int duration_known; /* 0: nothing says when it started */
    double duration;
    int counted_known;  /* samples counted in the events (processes without statistics) */
    uint64_t counted;
} rep_hproc_t;

typedef struct rep_hexp {
    const exp_experiment_t *e;
    rep_hproc_t *procs; /* e->nprocs */
} rep_hexp_t;

typedef struct rep_binary {
    const char *path, *message; /* a binary read that is not the one profiled, or has no symbols */
} rep_binary_t;

typedef struct rep_header {
    rep_hexp_t *exps;
    size_t nexps;
    const exp_scan_stats_t *stats; /* events read, damage */
    uint64_t lost;                 /* events lost while recording, every reason */
    rep_binary_t *binaries;
    size_t nbinaries;
} rep_header_t;
int rep_header(ses_t *s, rep_header_t *out, tally_err_t *err);
void rep_header_free(rep_header_t *h);

/* -thread_list: every thread (numbered for -thread_select), with the events it had and the
 * selection's values. */
typedef struct rep_thread {
    const eng_thread_t *t;
    const exp_process_t *p;
    const char *name, *how, *process; /* "" when unknown; process "(root)" for the root */
    double wall;                      /* seconds from its start to its end (or its process's) */
} rep_thread_t;

typedef struct rep_threads {
    rep_thread_t *threads;
    size_t n;
    const char *selection;
} rep_threads_t;
int rep_threads(ses_t *s, rep_threads_t *out, tally_err_t *err);
void rep_threads_free(rep_threads_t *t);

/* ---- over time: -sample_list, -sample_detail, -overview, -timeline (report_time.c) ---------- */

/* The metric totals of each sample period of the root process of the first experiment (under
 * the selection), over every process of that experiment (a descendant's event counts in the
 * root's period that contains its time): v[k * nmetrics + metric] for sample numbers k in 0..n-1
 * (0: before the first packet). Other experiments given are other runs and not summed here. */
typedef struct rep_buckets {
    size_t n;
    int nmetrics; /* the engine's: the width of each sample's vector */
    uint64_t *v;
} rep_buckets_t;
int rep_sample_totals(ses_t *s, rep_buckets_t *b, tally_err_t *err);
void rep_buckets_free(rep_buckets_t *b);

/* Sample k (0-based) of process p: from its packet to the next one (the last packet of a process
 * starts an empty sample: has_next 0, deltas 0). Times in seconds. */
typedef struct rep_sample {
    const exp_process_t *p;
    size_t k;                 /* numbered k + 1 in the views */
    const char *process;      /* "(root)" for the root */
    const char *reason, *label; /* NULL when none */
    int has_next;
    double start;             /* since the start of the run */
    double length, utime, stime;
    uint64_t minflt, majflt, inblock, oublock, nvcsw, nivcsw, rchar, wchar;
    uint64_t rss_kb, maxrss_kb; /* at the end of the sample (its start when it is the last) */
    const uint64_t *v;        /* the sample's metric totals (root process), NULL otherwise */
} rep_sample_t;
void rep_sample(ses_t *s, const rep_buckets_t *b, const exp_process_t *p, int is_root, size_t k,
                rep_sample_t *out);

/* The timeline: the run cut into columns; per thread and column, the function with the most CPU
 * time, or the thread's main state when it mostly did not run. */
#define REP_TL_COLS 64
#define REP_TL_RSTATES 9 /* runtime-state metrics a timeline tells apart (digits 1-9) */
typedef struct rep_tl_row {
    const eng_thread_t *t;
    char cells[REP_TL_COLS + 1]; /* a legend mark, '^' wait CPU, '=' lock, '%' I/O, '.' sleep,
                                    ' ' nothing */
    /* the runtime state (OpenMP, MPI: Work, Wait) the thread spent most of the cell in: '1' +
     * its index in rep_timeline_t.rstates, ' ' none; has_rstates: any cell has one */
    char rstates[REP_TL_COLS + 1];
    int has_rstates;
} rep_tl_row_t;
typedef struct rep_tl_legend {
    char letter;      /* by how many cells the function wins: '1' the most, then 2-9, then
                         punctuation (# @ & ...), '*' for all beyond */
    const char *name; /* display name */
} rep_tl_legend_t;
typedef struct rep_timeline {
    int empty;              /* nothing to show: no span or no thread */
    double span;            /* seconds */
    double cell_ns;
    rep_tl_row_t *rows;     /* threads with a non-blank row */
    size_t nrows;
    rep_tl_legend_t *legend;
    size_t nlegend;
    /* the metrics of runtime states (docs/FORMAT.md) the cells show, by digit: '1' the first */
    int rstates[REP_TL_RSTATES];
    size_t nrstates;
    rep_names_t names;
} rep_timeline_t;
int rep_timeline(ses_t *s, int namefmt, rep_timeline_t *out, tally_err_t *err);
void rep_timeline_free(rep_timeline_t *t);

/* ---- functions per time column: -time_functions (report_range.c) --------------------------- */

/* The run cut into ncols columns of col_ns ns each: an event is in column TSTAMP / col_ns (the
 * filter's TSTAMP: ns since the start of the run; the last column also takes any later event).
 * For each column, each function's exclusive and inclusive value of one metric over the
 * selection's events there, by the rules and the mapping of the function table (object modes,
 * inlines). Summing columns a..b-1 gives exactly the function table under the filter
 * "TSTAMP >= a*col_ns && TSTAMP < b*col_ns" (no upper bound when b is ncols). */
#define REP_TF_COLS 100
typedef struct rep_tcell {
    uint32_t col, fn; /* fn: the function's id (names.name[fn]) */
    uint64_t ex, in;  /* raw sums of the metric */
} rep_tcell_t;
typedef struct rep_tfuncs {
    int metric;
    uint32_t ncols;
    uint64_t col_ns;
    uint64_t *total;    /* [ncols]: the metric over every selected event of the column */
    rep_tcell_t *cells; /* by column, then function id; a function with an event there has one */
    size_t n;
    rep_names_t names;
} rep_tfuncs_t;
int rep_time_functions(ses_t *s, int metric, int namefmt, rep_tfuncs_t *out, tally_err_t *err);
void rep_tfuncs_free(rep_tfuncs_t *t);

/* ---- traced calls: -leaks, -allocs, -heap, -sync_objects (report_trace.c) -------------------- */

/* A frame of a stack: its function's display name, the offset of the PC in it, the PC. */
typedef struct rep_frame {
    const char *name;
    uint64_t offset, pc;
} rep_frame_t;

/* The frames (leaf first) of a stack of n PCs whose functions are fns, recorded in process proc
 * of experiment exp, into frames (room for n). */
void rep_frames(ses_t *s, int namefmt, uint32_t exp, uint32_t proc, const uint64_t *pcs,
                const uint32_t *fns, uint32_t n, rep_frame_t *frames);

typedef struct rep_heap_row {
    uint32_t exp, proc, n; /* the stack: n frames */
    const uint64_t *pcs;   /* the engine's */
    const uint32_t *fns;
    uint64_t count, bytes;
} rep_heap_row_t;

/* -leaks (leaks != 0: the blocks never freed) or -allocs: every distinct allocating stack, most
 * bytes first, with the totals over all of them. */
typedef struct rep_heap_stacks {
    rep_heap_row_t *rows;
    size_t n;
    uint64_t instances, bytes;
} rep_heap_stacks_t;
int rep_heap_stacks(ses_t *s, int leaks, rep_heap_stacks_t *out, tally_err_t *err);
void rep_heap_stacks_free(rep_heap_stacks_t *h);

/* The kind of a sync object, from the call of its first wait (EXP_SYNC_*): "mutex", "rwlock",
 * "condition", "semaphore", "thread", "barrier", "spinlock", "?". */
const char *rep_sync_kind(uint32_t call);
/* Its name: the variable (with "+offset" inside it), "<thread>" for a join, "<unknown>". */
void rep_sync_name(const char *var, uint64_t offset, uint32_t call, char *buf, size_t n);

/* ---- stacks: what the exporters write (report_stacks.c) ----------------------------------- */

/* A stack with its vector: frames mapped to functions as every table maps them (engine.h,
 * eng_mapped_t), so the exclusive and inclusive values a reader sums from these stacks are those
 * of the function table. */
typedef struct rep_stack {
    const eng_mapped_t *m;
    const eng_thread_t *thread; /* NULL: summed over the selected threads */
    const uint64_t *v;          /* [eng_nmetrics] */
} rep_stack_t;
typedef int (*rep_stack_fn)(void *ctx, const rep_stack_t *st);
/* Calls fn for every distinct stack with a non-zero vector under the selection; with per_thread,
 * once per (thread, stack) instead (thread set), ordered by thread, with the values of the
 * metrics listed (metrics[0..nmetrics), engine indices; the others 0) summed per pair and the
 * pairs whose listed values are all 0 left out. Memory grows with the distinct stacks (and
 * pairs), never with events. fn's non-zero return stops and is returned. */
int rep_stacks(ses_t *s, int per_thread, const int *metrics, int nmetrics, rep_stack_fn fn,
               void *ctx, tally_err_t *err);

/* A selected event, in time order within its process (so within its thread), with its vector and
 * its stack mapped to functions (m NULL when the event has no stack). */
typedef struct rep_event {
    const exp_event_t *ev;
    const eng_thread_t *thread;
    const eng_mapped_t *m;
    const uint64_t *v;
} rep_event_t;
typedef int (*rep_event_fn)(void *ctx, const rep_event_t *e);
int rep_events(ses_t *s, rep_event_fn fn, void *ctx, tally_err_t *err);

/* The display names of the functions of the data (the function table's, rep_names_build), for
 * the ids of rep_stack_t and rep_event_t. */
int rep_stack_names(ses_t *s, int namefmt, rep_names_t *nm, tally_err_t *err);

/* ---- annotated source and disassembly: -source, -disasm (report_source.c) --------------------- */

/* Where a model says something on the side (a source file that is refused or cut): the front end
 * shows it as a note. msg is a complete sentence without "tally: note: ". */
typedef void (*rep_note_fn)(void *ctx, const char *msg);

/* The lines of the source file recorded as path (the copy archived in an experiment, the path
 * itself, the path maps, the search directories: session.h), each without its line end; NULL when
 * none is found (*n = 0). Files over 64 MiB are refused, with a note. */
char **rep_read_source(const ses_t *s, const char *path, rep_note_fn note, void *ctx, size_t *n);
void rep_free_lines(char **lines, size_t n);

/* Metrics of one row of a listing: a source line, an instruction, or a group of code. */
typedef struct rep_annot {
    uint64_t *ex, *in; /* [nmetrics] each (one allocation at ex), NULL until values are added */
    int code;          /* has instructions (else its metric columns stay empty) */
} rep_annot_t;

#define REP_HOT_SHARE 0.75 /* a row with this share of the hottest one's hot metric is hot */
int rep_is_hot(const rep_annot_t *a, int hot_metric, uint64_t max);
/* The exclusive and inclusive vectors of a row (zeros when it has code but no data). */
const uint64_t *rep_annot_ex(const rep_annot_t *a, const uint64_t *zeros);
const uint64_t *rep_annot_in(const rep_annot_t *a, const uint64_t *zeros);

#define REP_MAX_OTHER 8 /* other source files of a function's code with a row each; then one */

/* -source FUNC|FILE: FILE (full path or base name) among the lines with data shows every
 * function's metrics on its lines; FUNC shows the function's own code (its lines, the lines its
 * inlined code was called at when inlines are shown, then one group each for its
 * compiler-generated code, its code without line numbers and its code from other files, so its
 * rows add up to its exclusive metrics). */
typedef struct rep_source {
    char *file;          /* the source file shown */
    char **src;          /* its text, NULL when not found */
    size_t nsrc;
    rep_annot_t *lv;     /* by line number, 0..limit */
    uint32_t limit, lo, hi; /* the lines shown: lo..hi (lo > hi: none) */
    rep_annot_t generated, nolines, other[REP_MAX_OTHER + 1], total;
    const char *other_file[REP_MAX_OTHER];
    size_t nother;
    int is_function;     /* FUNC: the fields below are set */
    const char *function, *object_name, *object_path;
    uint64_t max;        /* the hottest line's hot metric */
    uint64_t *zeros;     /* [nmetrics] zeros: the values of rows with code but no data */
} rep_source_t;
int rep_source(ses_t *s, const rep_opts_t *o, int hot_metric, const char *arg, rep_note_fn note,
               void *ctx, rep_source_t *out, tally_err_t *err);
void rep_source_free(rep_source_t *v);

/* -disasm FUNC: its instructions with their metrics, source lines and branch targets. */
typedef struct rep_insn {
    uint64_t address;
    const char *mnemonic, *op_str;
    int line_kind;     /* sym_line_at: 0 a line, 1 compiler-generated, -1 none */
    const char *file;  /* when line_kind >= 0 */
    uint32_t line;
    int target;        /* a branch inside the function lands here */
    char callee[512];  /* a call's or jump's target outside the function, by name, or "" */
    rep_annot_t a;
} rep_insn_t;

typedef struct rep_disasm {
    const char *function, *object_name, *object_path;
    uint64_t addr, size;
    rep_insn_t *insns;
    size_t n;
    rep_annot_t fn; /* the function: exclusive of its instructions, its inclusive */
    uint64_t max;   /* the hottest instruction's hot metric */
    uint64_t *zeros; /* [nmetrics] zeros: the values of instructions without data */
    void *priv;     /* the disassembler's memory */
} rep_disasm_t;
int rep_disasm(ses_t *s, const rep_opts_t *o, int hot_metric, const char *name, rep_disasm_t *out,
               tally_err_t *err);
void rep_disasm_free(rep_disasm_t *d);

#endif
