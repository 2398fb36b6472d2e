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

void ses_free(ses_t *s)
{
    if (!s)
        return;
    eng_free(s->eng);
    sym_free(s->sym);
    for (size_t i = 0; i < s->nexps; i++)
        exp_close(s->exps[i]);
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
