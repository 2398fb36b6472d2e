/*
 * export.h - `tally export`: an analysis session written in the formats other viewers read.
 *
 * Formats (one file each): pprof (export_pprof.c: gzipped profile.proto, encoded here, gzip by
 * zlib), callgrind (export_callgrind.c), folded stacks (export_folded.c), Chrome's Trace Event
 * JSON (export_chrome.c) and speedscope's JSON (export_speedscope.c); TAU's profile.N.C.T
 * files of the profiled blocks (export_tau.c: a directory of files, not a stream, so apart from
 * xp_write).
 *
 * A front end: every number comes from a report model (analyzer/report.h: rep_stacks,
 * rep_events, the function table with its callers and callees); nothing is computed twice. Each
 * format streams: what is written goes out as it is made, and memory grows with the distinct
 * stacks, functions and threads of the data, never with its events.
 *
 * Strings of an experiment keep their bytes where the format has its own quoting (JSON through
 * base/json's escaping, protobuf strings); in the line-based formats (folded, callgrind) they are
 * written through the sink's text escaping (no control byte can forge a line) and ';' in a
 * folded frame name becomes ':' (the separator has no quoting). The chrome trace, a record per
 * event, is written through xbuf.h (the same escaping, without printf per record).
 *
 * Depends on the analyzer and base, zlib (pprof). Not thread-safe. Library code: errors are
 * returned with a message (a failed write, no memory), nothing is printed.
 */
#ifndef TALLY_EXPORT_EXPORT_H
#define TALLY_EXPORT_EXPORT_H

#include <stdio.h>

#include "analyzer/report.h"
#include "analyzer/session.h"
#include "base/err.h"
#include "base/u64map.h"

enum xp_format { XP_PPROF, XP_CALLGRIND, XP_FOLDED, XP_CHROME, XP_SPEEDSCOPE, XP_TAU,
                 XP_NFORMATS };

typedef struct xp_opts {
    int format;        /* XP_* */
    int namefmt;       /* 0 short, 1 long, 2 mangled (function names) */
    const int *metrics; /* the engine's metric indices to write, in order (folded, chrome and
                           speedscope write the first) */
    int nmetrics;
    int metrics_given; /* the user named them (else chrome, given no time metric first, writes
                          no samples rather than refuse) */
} xp_opts_t;

/* The format called name ("pprof", ...), or -1. */
int xp_format_find(const char *name);
const char *xp_format_name(int format);
/* Whether the format is binary (pprof): not for a terminal. */
int xp_format_binary(int format);

/* Whether the format writes a directory of files (tau: xp_tau) rather than one stream. */
int xp_format_dir(int format);

/* Writes the session (its engine's current selection) in o->format to out (not XP_TAU). */
int xp_write(ses_t *s, const xp_opts_t *o, FILE *out, tally_err_t *err);

/* The formats, for xp_write. */
int xp_pprof(ses_t *s, const xp_opts_t *o, FILE *out, tally_err_t *err);
int xp_callgrind(ses_t *s, const xp_opts_t *o, FILE *out, tally_err_t *err);
int xp_folded(ses_t *s, const xp_opts_t *o, FILE *out, tally_err_t *err);
int xp_chrome(ses_t *s, const xp_opts_t *o, FILE *out, tally_err_t *err);
int xp_speedscope(ses_t *s, const xp_opts_t *o, FILE *out, tally_err_t *err);

/* TAU's profiles of the profiled blocks b (rep_blocks of the session) into dir (made when
 * missing): profile.N.0.T per process and thread, in MULTI__<METRIC> subdirectories when b has
 * several quantities. A directory that already holds profile.N.C.T files is refused
 * (TALLY_EUSAGE) unless force, which removes them first. No blocks: TALLY_ENOTFOUND. */
int xp_tau(const rep_blocks_t *b, const char *dir, int force, tally_err_t *err);

/* What the evented exports (chrome, speedscope) lay out of a traced event: the time it lasted
 * (ns) and, for a traced call of the collector API (TRACE: MPI calls, a library's own kinds),
 * its kind's name. kinds caches per (experiment, process, kind) which of the engine's metrics
 * is the kind's time; zeroed before the first call, xp_kinds_free after the last. */
typedef struct xp_kinds {
    u64map_t ix;                /* (exp, proc, kind id) -> entry + 1 */
    struct xp_kind *e;
    size_t n, cap;
} xp_kinds_t;
/* The time event ev of thread t lasted: a sync wait's or an I/O call's own (ev->weight), a
 * TRACE record's value in v (the event's vector) of its kind's first metric of time in ns (0:
 * the kind declares none); 0 for the other records. *kind: the TRACE
 * record's kind name ("?": not declared), NULL for the others. TALLY_ENOMEM or 0. */
int xp_traced_ns(ses_t *s, xp_kinds_t *k, const eng_thread_t *t, const exp_event_t *ev,
                 const uint64_t *v, uint64_t *ns, const char **kind);
void xp_kinds_free(xp_kinds_t *k);

/* The name of function id for the exports: the display name, else the engine's name. */
const char *xp_func_name(ses_t *s, const rep_names_t *nm, int namefmt, uint32_t id);
/* The unit word of metric m for formats that name units: "nanoseconds", "bytes", "count" or the
 * declared unit. */
const char *xp_unit(const eng_metric_def_t *d);

#endif
