/*
 * session.c - one analysis session: experiments, symbols, engine, source paths. See session.h.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/session.h"

ses_t *ses_new(void) { return calloc(1, sizeof(ses_t)); }

int ses_open(ses_t *s, const char *path, tally_err_t *err)
{
    exp_experiment_t **ne = realloc(s->exps, (s->nexps + 1) * sizeof *ne);
    if (!ne)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    s->exps = ne;
    int rc = exp_open(path, &s->exps[s->nexps], err);
    if (rc)
        return rc;
    s->nexps++;
    return 0;
}

int ses_start(ses_t *s, tally_err_t *err)
{
    s->sym = sym_new();
    if (!s->sym)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    for (size_t i = 0; i < s->nexps; i++) { /* binaries archived in them */
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/archive", s->exps[i]->path);
        sym_add_archive(s->sym, dir);
    }
    s->eng = eng_new(s->exps, s->nexps, s->sym);
    if (!s->eng)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    return 0;
}

static int add_path(ses_t *s, const char *dir, tally_err_t *err)
{
    char **np = realloc(s->paths, (s->npaths + 1) * sizeof *np);
    if (np)
        s->paths = np;
    if (!np || !(np[s->npaths] = strdup(dir)))
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    s->npaths++;
    return 0;
}

int ses_add_paths(ses_t *s, const char *dirs, tally_err_t *err)
{
    char *copy = strdup(dirs), *save = NULL;
    if (!copy)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    int rc = 0;
    for (char *d = strtok_r(copy, ":", &save); d && !rc; d = strtok_r(NULL, ":", &save))
        rc = add_path(s, d, err);
    free(copy);
    return rc;
}

int ses_set_paths(ses_t *s, const char *dirs, tally_err_t *err)
{
    for (size_t i = 0; i < s->npaths; i++)
        free(s->paths[i]);
    s->npaths = 0;
    return ses_add_paths(s, dirs, err);
}

int ses_add_pathmap(ses_t *s, const char *from, const char *to, tally_err_t *err)
{
    char **nf = realloc(s->map_from, (s->nmaps + 1) * sizeof *nf);
    if (nf)
        s->map_from = nf;
    char **nt = realloc(s->map_to, (s->nmaps + 1) * sizeof *nt);
    if (nt)
        s->map_to = nt;
    char *f = nf && nt ? strdup(from) : NULL, *t = f ? strdup(to) : NULL;
    if (!t) {
        free(f);
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    }
    s->map_from[s->nmaps] = f;
    s->map_to[s->nmaps] = t;
    s->nmaps++;
    return 0;
}

int ses_source_candidate(const ses_t *s, const char *path, size_t i, char *buf, size_t n)
{
    for (size_t m = 0; m < s->nmaps; m++) {
        size_t len = strlen(s->map_from[m]);
        if (!strncmp(path, s->map_from[m], len) && (path[len] == '/' || !path[len])) {
            if (i-- == 0) {
                snprintf(buf, n, "%s%s", s->map_to[m], path + len);
                return 0;
            }
        }
    }
    const char *base = strrchr(path, '/');
    for (size_t d = 0; d < s->npaths; d++) {
        if (path[0] != '/' && i-- == 0) { /* by its relative path */
            snprintf(buf, n, "%s/%s", s->paths[d], path);
            return 0;
        }
        if (i-- == 0) { /* by its base name */
            snprintf(buf, n, "%s/%s", s->paths[d], base ? base + 1 : path);
            return 0;
        }
    }
    return -1;
}

int ses_keep_processes(ses_t *s, int (*keep)(void *ctx, const exp_process_t *p), void *ctx,
                       tally_err_t *err)
{
    if (s->eng)
        return tally_errf(err, TALLY_EUSAGE, "descendant processes are chosen before the "
                                             "analysis starts");
    if (!s->nprocs_read) {
        s->nprocs_read = calloc(s->nexps + 1, sizeof *s->nprocs_read);
        if (!s->nprocs_read)
            return tally_errf(err, TALLY_ENOMEM, "out of memory");
        for (size_t x = 0; x < s->nexps; x++)
            s->nprocs_read[x] = s->exps[x]->nprocs;
    }
    for (size_t x = 0; x < s->nexps; x++) {
        exp_experiment_t *e = s->exps[x];
        size_t n = e->nprocs;
        exp_process_t **order = malloc((n + 1) * sizeof *order);
        int32_t *newidx = malloc((n + 1) * sizeof *newidx);
        if (!order || !newidx) {
            free(order);
            free(newidx);
            return tally_errf(err, TALLY_ENOMEM, "out of memory");
        }
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            newidx[i] = -1;
            if (i == 0 || keep(ctx, e->procs[i])) {
                newidx[i] = (int32_t)k;
                order[k++] = e->procs[i];
            }
        }
        size_t kept = k;
        for (size_t i = 0; i < n; i++)
            if (newidx[i] < 0)
                order[k++] = e->procs[i];
        for (size_t i = 0; i < kept; i++) { /* the nearest kept ancestor */
            int32_t a = order[i]->parent, hops = 0;
            while (a >= 0 && (size_t)a < n && newidx[a] < 0 && hops++ < (int32_t)n)
                a = e->procs[a]->parent;
            order[i]->parent = a >= 0 && (size_t)a < n ? newidx[a] : -1;
        }
        for (size_t i = 0; i < n; i++)
            order[i]->index = (uint32_t)i;
        memcpy(e->procs, order, n * sizeof *order);
        e->nprocs = kept;
        free(order);
        free(newidx);
    }
    return 0;
}

void ses_free(ses_t *s)
{
    if (!s)
        return;
    eng_free(s->eng);
    sym_free(s->sym);
    for (size_t i = 0; i < s->nexps; i++) {
        if (s->nprocs_read) /* the processes left out are the experiment's too */
            s->exps[i]->nprocs = s->nprocs_read[i];
        exp_close(s->exps[i]);
    }
    free(s->nprocs_read);
    free(s->exps);
    for (size_t i = 0; i < s->npaths; i++)
        free(s->paths[i]);
    free(s->paths);
    for (size_t i = 0; i < s->nmaps; i++) {
        free(s->map_from[i]);
        free(s->map_to[i]);
    }
    free(s->map_from);
    free(s->map_to);
    free(s);
}
