/*
 * session.h - one analysis session: the experiments opened, the symbols of their binaries (with
 * the copies archived in them), the metric engine over all of them with its selections (threads,
 * samples, CPUs, filters: set on the engine), and where source files are looked for (search
 * directories, path maps). Every front end (print, export, the web server) starts here; report
 * models (report.h) are computed from a session.
 *
 * Use: ses_new, ses_open for each experiment, ses_start (symbols and engine); then the engine
 * (s->eng) computes and the report models read it. ses_free releases everything.
 *
 * Depends on the experiment reader, symbols and engine. Not thread-safe. Library code: errors
 * are returned (tally_err_t), nothing is printed.
 */
#ifndef TALLY_ANALYZER_SESSION_H
#define TALLY_ANALYZER_SESSION_H

#include <stddef.h>

#include "analyzer/engine.h"
#include "analyzer/symbols.h"
#include "base/err.h"
#include "experiment/reader.h"

typedef struct ses {
    exp_experiment_t **exps; /* in the order opened; owned */
    size_t nexps;
    sym_ctx_t *sym;          /* after ses_start */
    eng_t *eng;              /* after ses_start: aggregates every process of every experiment */
    char **paths;            /* directories searched for sources, in order */
    size_t npaths;
    char **map_from, **map_to; /* a source under map_from[i] is looked for under map_to[i] */
    size_t nmaps;
    size_t *nprocs_read;       /* per experiment: the processes read (ses_keep_processes) */
} ses_t;

/* An empty session, or NULL when memory ran out. */
ses_t *ses_new(void);
/* Opens the experiment at path and adds it; on error nothing is added. */
int ses_open(ses_t *s, const char *path, tally_err_t *err);
/* The symbol context (binaries archived in each experiment's archive/ are used in place of the
 * missing or changed ones) and the engine over every experiment opened. */
int ses_start(ses_t *s, tally_err_t *err);
/* Source search directories: ses_add_paths appends each of "DIR[:DIR...]", ses_set_paths
 * replaces them all. */
int ses_add_paths(ses_t *s, const char *dirs, tally_err_t *err);
int ses_set_paths(ses_t *s, const char *dirs, tally_err_t *err);
/* A source recorded under from (a directory or file) is looked for under to. */
int ses_add_pathmap(ses_t *s, const char *from, const char *to, tally_err_t *err);
/* The i-th candidate path for a source file recorded as path, through the path maps then the
 * search directories, into buf; returns 0, or -1 when there are no more candidates. (The file's
 * copy archived in an experiment and the recorded path itself come before these.) */
int ses_source_candidate(const ses_t *s, const char *path, size_t i, char *buf, size_t n);
/* er_print's en_desc: keeps the root process of every experiment opened and the descendants
 * keep(ctx, process) accepts; the others are left out of the analysis (their parents remapped to
 * the nearest kept ancestor). Before ses_start. */
int ses_keep_processes(ses_t *s, int (*keep)(void *ctx, const exp_process_t *p), void *ctx,
                       tally_err_t *err);
void ses_free(ses_t *s);

#endif
