/*
 * archive.c - `tally archive [-s] EXPERIMENT...`: copies into the experiment what its analysis
 * needs, so that it can be analysed on another machine or after the program was rebuilt: every
 * load object (with a build-id) that every process of the experiment recorded, into
 * EXP/archive/<build-id>, when the file on disk is still the one profiled, and its separate debug
 * file, if it has one, into EXP/archive/<build-id>.debug; with -s also the source
 * files of the lines that have data, into EXP/archive/src/<their absolute path>. `tally collect`
 * runs it at the end of a collection (unless -A off). `tally print` reads archived binaries in
 * place of files that are gone or changed, and archived sources (docs/FORMAT.md, "archive").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/engine.h"
#include "analyzer/symbols.h"
#include "archive.h"
#include "cli.h"
#include "experiment/reader.h"

/* Copies src to dst through dst.tmp and a rename, so a copy is whole or absent. */
static int copy_file(const char *src, const char *dst, uint64_t *bytes)
{
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", dst);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -errno;
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) {
        int e = errno;
        close(in);
        return -e;
    }
    char buf[1 << 16];
    ssize_t n;
    int rc = 0;
    while ((n = read(in, buf, sizeof buf)) > 0) {
        if (write(out, buf, (size_t)n) != n) {
            rc = -(errno ? errno : ENOSPC);
            break;
        }
        *bytes += (uint64_t)n;
    }
    if (n < 0)
        rc = -errno;
    close(in);
    if (close(out) && !rc)
        rc = -errno;
    if (!rc && rename(tmp, dst))
        rc = -errno;
    if (rc)
        unlink(tmp);
    return rc;
}

/* mkdir -p of the directory part of path. */
static void make_parents(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        mkdir(path, 0755);
        *p = '/';
    }
}

int archive_experiment(const char *path, int sources, int quiet, tally_err_t *err)
{
    exp_experiment_t *e;
    int rc = exp_open(path, &e, err);
    if (rc)
        return rc;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/archive", path);
    if (mkdir(dir, 0755) && errno != EEXIST) {
        rc = tally_errf(err, TALLY_EIO, "cannot create '%s': %s", dir, strerror(errno));
        exp_close(e);
        return rc;
    }
    sym_ctx_t *sym = sym_new();
    if (!sym) {
        exp_close(e);
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    }
    char index[PATH_MAX + 16];
    snprintf(index, sizeof index, "%s/index", dir);
    FILE *ix = fopen(index, "a");
    unsigned copied = 0, present = 0, noid = 0, failed = 0, debugfiles = 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < e->nprocs; i++) {
        const exp_process_t *p = e->procs[i];
        for (size_t k = 0; k < p->nobjects; k++) {
            const exp_object_t *o = &p->objects[k];
            if (!strcmp(o->path, "[vdso]"))
                continue;
            if (!*o->buildid) {
                noid++;
                continue;
            }
            char dst[PATH_MAX + 256];
            snprintf(dst, sizeof dst, "%s/%s", dir, o->buildid);
            if (access(dst, F_OK) == 0) {
                present++;
                continue;
            }
            uint32_t obj = sym_object_add(sym, o->path, o->buildid);
            const sym_object_t *so = obj == UINT32_MAX ? NULL : sym_object(sym, obj);
            if (!so || (so->status != SYM_OBJ_OK && so->status != SYM_OBJ_NOSYMS)) {
                failed++;
                if (!quiet)
                    fprintf(stderr, "tally archive: not archived: %s\n",
                            so && *so->message ? so->message : o->path);
                continue;
            }
            int c = copy_file(o->path, dst, &bytes);
            if (c) {
                failed++;
                if (!quiet)
                    fprintf(stderr, "tally archive: cannot copy '%s': %s\n", o->path,
                            strerror(-c));
                continue;
            }
            copied++;
            if (ix)
                fprintf(ix, "%s %s\n", o->buildid, o->path);
            /* its separate debug file (symbols of static functions, lines), beside it */
            char ddst[PATH_MAX + 264];
            snprintf(ddst, sizeof ddst, "%s.debug", dst);
            if (*so->debugfile && !copy_file(so->debugfile, ddst, &bytes))
                debugfiles++;
        }
    }
    if (ix)
        fclose(ix);
    unsigned srcs = 0, srcs_missing = 0;
    if (sources) {
        eng_t *g = eng_new(&e, 1, sym);
        const eng_table_t *t = g ? eng_compute(g, ENG_KIND_LINE, 0, err) : NULL;
        char **done = NULL;
        size_t ndone = 0;
        for (size_t id = 0; t && id < t->nobjects; id++) {
            const char *file;
            uint32_t line, fn;
            if (!t->present[id] || eng_line_info(g, (uint32_t)id, &file, &line, &fn) || !file ||
                file[0] != '/')
                continue;
            size_t j;
            for (j = 0; j < ndone && strcmp(done[j], file); j++) {
            }
            if (j < ndone)
                continue;
            char **nd = realloc(done, (ndone + 1) * sizeof *nd);
            if (!nd)
                break;
            done = nd;
            done[ndone++] = strdup(file);
            char dst[PATH_MAX * 2];
            snprintf(dst, sizeof dst, "%s/src%s", dir, file);
            make_parents(dst);
            if (copy_file(file, dst, &bytes))
                srcs_missing++;
            else
                srcs++;
        }
        for (size_t j = 0; j < ndone; j++)
            free(done[j]);
        free(done);
        eng_free(g);
    }
    if (!quiet) {
        printf("%s: archived %u binar%s (%.1f MB)", path, copied, copied == 1 ? "y" : "ies",
               (double)bytes / 1e6);
        if (debugfiles)
            printf(" with %u debug file%s", debugfiles, debugfiles == 1 ? "" : "s");
        if (present)
            printf(", %u already there", present);
        if (noid)
            printf(", %u without a build-id skipped", noid);
        if (failed)
            printf(", %u could not be archived", failed);
        if (sources)
            printf(", %u source file%s (%u not found)", srcs, srcs == 1 ? "" : "s",
                   srcs_missing);
        printf("\n");
    }
    sym_free(sym);
    exp_close(e);
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tally archive [-s] [-q] EXPERIMENT...\n\n"
            "Copies the binaries an experiment used (by build-id, when they are still the ones\n"
            "profiled) into EXPERIMENT/archive, so that it analyses correctly on another machine\n"
            "or after the program was rebuilt or deleted. tally collect does this at the end of\n"
            "every collection unless -A off.\n\n"
            "options:\n"
            "  -s, --sources   also copy the source files of the lines that have data\n"
            "  -q, --quiet     say nothing unless something fails\n"
            "  -h, --help      this text\n");
}

int cmd_archive(int argc, char **argv)
{
    int sources = 0, quiet = 0, rc = 0, n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-s") || !strcmp(a, "--sources")) {
            sources = 1;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (a[0] == '-') {
            cli_error("archive", "unknown option '%s'; see 'tally archive -h'", a);
            return 2;
        }
    }
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-')
            continue;
        n++;
        tally_err_t err = { 0 };
        if (archive_experiment(argv[i], sources, quiet, &err))
            rc = cli_report(&err);
    }
    if (!n) {
        usage(stderr);
        return 2;
    }
    return rc;
}
