/*
 * archive.c - `tally archive [-s] EXPERIMENT...`: copies into the experiment what its analysis
 * needs, so that it can be analysed on another machine or after the program was rebuilt: every
 * load object (with a build-id) that every process of the experiment recorded, into
 * EXP/archive/<build-id>, when the file on disk is still the one profiled, and its separate debug
 * file, if it has one, into EXP/archive/<build-id>.debug; with -s also the source
 * files of the lines that have data, into EXP/archive/src/<their absolute path>. `tally collect`
 * runs it at the end of a collection (unless -A off). `tally print` reads archived binaries in
 * place of files that are gone or changed, and archived sources (docs/FORMAT.md, "archive").
 *
 * The experiment may come from someone else: nothing in it can make this write outside it. Every
 * file is written below EXP/archive opened without following a link (base/fsafe.h), through a
 * temporary created exclusively and renamed, under a name that is a build-id (hex, checked by the
 * reader) or a source path without '.'/'..' components; a copy of a binary is checked to have the
 * recorded build-id before it is kept.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/engine.h"
#include "analyzer/symbols.h"
#include "archive.h"
#include "base/fsafe.h"
#include "cli.h"
#include "experiment/reader.h"

#define SOURCE_MAX ((uint64_t)64 << 20) /* a source file bigger than this is not archived */

typedef struct actx {
    const char *exp;  /* the experiment, as given */
    int dir;          /* EXP/archive, opened without following a link */
    int quiet;
    uint64_t bytes;
    int werr; /* the first error writing into the archive (a full disk): said, not hidden */
} actx_t;

/* A file the system's package manager keeps: on a system path (not /usr/local), owned by root
 * and writable by no one else, so it stays what it was until an update (which the analysis sees
 * by the build-id) and need not be copied for the experiment to be analysed here. */
static int system_file(const char *path)
{
    static const char *const dirs[] = { "/usr/", "/lib/", "/lib64/", "/lib32/", "/libx32/",
                                        "/bin/", "/sbin/" };
    int on = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs && !on; i++)
        on = !strncmp(path, dirs[i], strlen(dirs[i]));
    if (!on || !strncmp(path, "/usr/local/", 11))
        return 0;
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
           !(st.st_mode & (S_IWGRP | S_IWOTH));
}

#ifndef TALLY_INSTALL_LIBDIR
#define TALLY_INSTALL_LIBDIR "lib"
#endif

/* One of tally's own libraries (the collector, the MPI wrappers): a libtally* file in the
 * directory the collector is taken from (beside this executable, or ../lib). Its frames are left
 * out of every view, and it comes with tally: referenced, not copied. */
static int own_file(const char *path)
{
    const char *base = strrchr(path, '/');
    if (!base || strncmp(base + 1, "libtally", 8))
        return 0;
    char dir[PATH_MAX], real[PATH_MAX], mine[PATH_MAX], cand[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", (int)(base - path), path);
    if (!realpath(dir, real))
        return 0;
    snprintf(cand, sizeof cand, "%s", cli_self_dir());
    if (realpath(cand, mine) && !strcmp(real, mine))
        return 1;
    snprintf(cand, sizeof cand, "%s/../%s", cli_self_dir(), TALLY_INSTALL_LIBDIR);
    return realpath(cand, mine) && !strcmp(real, mine);
}

/* The file at path is an ELF file with that build-id. */
static int same_buildid(const char *path, const char *buildid)
{
    char id[129];
    int fd = fs_open_read(path, 0);
    int same = fd >= 0 && sym_fd_buildid(fd, id) == 0 && !strcmp(id, buildid);
    if (fd >= 0)
        close(fd);
    return same;
}

/* Is -rc a failure to write into the archive, rather than to read an original? */
static int write_error(int rc)
{
    return rc == -ENOSPC || rc == -EDQUOT || rc == -EIO || rc == -EROFS || rc == -EFBIG;
}

static void warn(const actx_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(const actx_t *a, const char *fmt, ...)
{
    if (a->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    esc_fprintf(stderr, "tally archive: ");
    esc_vfprintf(stderr, fmt, ap);
    esc_fprintf(stderr, "\n");
    va_end(ap);
}

/* Copies the file open on in to name under the directory dirfd (shown as shown): into a
 * temporary name.tmp created exclusively (whatever was there, a link included, is removed, never
 * followed), checked by check (when not NULL: the copy must have that build-id), then renamed over
 * name. Returns 0 or a negative errno; the temporary never stays. */
static int copy_in(actx_t *a, int in, int dirfd, const char *name, const char *shown,
                   uint64_t max, const char *check)
{
    char tmp[NAME_MAX + 1];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", name) >= (int)sizeof tmp)
        return -ENAMETOOLONG;
    int replaced, was_link;
    int out = fs_create_at(dirfd, tmp, &replaced, &was_link);
    if (out < 0)
        return out;
    if (was_link)
        warn(a, "'%s.tmp' was a symbolic link: removed, not followed", shown);
    uint64_t n = 0;
    int rc = fs_copy_fd(in, out, max, &n);
    if (!rc && check) {
        char id[129];
        if (sym_fd_buildid(out, id) || strcmp(id, check))
            rc = -ESTALE; /* the file changed between its check and its copy */
    }
    if (close(out) && !rc)
        rc = -errno;
    if (!rc && renameat(dirfd, tmp, dirfd, name))
        rc = -errno;
    if (rc)
        unlinkat(dirfd, tmp, 0);
    else
        a->bytes += n;
    if (rc && write_error(rc) && !a->werr)
        a->werr = -rc;
    return rc;
}

/* Whether name under the directory is a regular file (a link there is not an archived copy). */
static int present(int dirfd, const char *name)
{
    struct stat st;
    return !fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode);
}

/* Appends "<build-id> <path>" to the index, the path percent-encoded as in the log (a path with a
 * newline cannot add lines). */
static void index_line(actx_t *a, int ix, const char *id, const char *path)
{
    char line[PATH_MAX * 3 + 160];
    size_t n = (size_t)snprintf(line, sizeof line, "%s ", id);
    for (const unsigned char *c = (const unsigned char *)path; *c && n + 4 < sizeof line; c++) {
        if (*c == '%' || *c == ' ' || *c == '=' || *c < 0x20 || *c == 0x7f)
            n += (size_t)snprintf(line + n, 4, "%%%02X", *c);
        else
            line[n++] = (char)*c;
    }
    line[n++] = '\n';
    ssize_t w = write(ix, line, n);
    if (w != (ssize_t)n && !a->werr)
        a->werr = w < 0 ? errno : ENOSPC;
}

/* Archives the source file `file` (absolute, from the debug information) into
 * archive/src/<file>. Returns 0, 1 when it is not there to copy, -1 when it is refused. */
static int archive_source(actx_t *a, int srcdir, const char *file)
{
    const char *rel = file + 1;
    if (!fs_name_ok(rel)) {
        warn(a, "source '%s' not archived: its name has '.', '..' or empty components", file);
        return -1;
    }
    const char *slash = strrchr(rel, '/');
    int dir = srcdir;
    if (slash) {
        char sub[PATH_MAX];
        if ((size_t)(slash - rel) >= sizeof sub)
            return -1;
        memcpy(sub, rel, (size_t)(slash - rel));
        sub[slash - rel] = 0;
        dir = fs_mkdirs_at(srcdir, sub);
        if (dir < 0) {
            warn(a, "source '%s' not archived: cannot create '%s/archive/src/%s': %s", file,
                 a->exp, sub, fs_strerror(dir));
            return -1;
        }
    }
    int rc = 1;
    int in = fs_open_read(file, SOURCE_MAX);
    if (in >= 0) {
        char shown[PATH_MAX * 2];
        snprintf(shown, sizeof shown, "%s/archive/src%s", a->exp, file);
        int c = copy_in(a, in, dir, slash ? slash + 1 : rel, shown, SOURCE_MAX, NULL);
        close(in);
        if (c) {
            warn(a, "source '%s' not archived: %s", file, fs_strerror(c));
            rc = -1;
        } else {
            rc = 0;
        }
    } else if (in != -ENOENT && in != -ENOTDIR) {
        warn(a, "source '%s' not archived: %s%s", file, fs_strerror(in),
             in == -EFBIG ? " (over 64 MiB)" : "");
        rc = -1;
    }
    if (dir != srcdir)
        close(dir);
    return rc;
}

int archive_experiment(const char *path, int sources, int quiet, int lost_only,
                       archive_stats_t *stats, tally_err_t *err)
{
    exp_experiment_t *e;
    int rc = exp_open(path, &e, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < e->nprocs && !quiet; i++)
        for (size_t k = 0; k < e->procs[i]->nnotes; k++)
            esc_fprintf(stderr, "tally archive: warning: %s%s%s\n", e->procs[i]->name,
                    *e->procs[i]->name ? ": " : "", e->procs[i]->notes[k]);
    /* everything is written below EXP/archive, opened without following a link: nothing the
     * experiment contains can make this write elsewhere */
    actx_t a = { path, -1, quiet, 0, 0 };
    int xfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    a.dir = xfd < 0 ? -errno : fs_mkdirs_at(xfd, "archive");
    if (xfd >= 0)
        close(xfd);
    if (a.dir < 0) {
        rc = tally_errf(err, TALLY_EIO, "cannot use '%s/archive': %s%s", path,
                        fs_strerror(a.dir),
                        a.dir == -ELOOP || a.dir == -ENOTDIR
                            ? "; remove it and run tally archive again" : "");
        exp_close(e);
        return rc;
    }
    int ix = fs_append_at(a.dir, "index");
    if (ix < 0) {
        rc = tally_errf(err, TALLY_EIO, "cannot use '%s/archive/index': %s; remove it and run "
                        "tally archive again", path, fs_strerror(ix));
        close(a.dir);
        exp_close(e);
        return rc;
    }
    sym_ctx_t *sym = sym_new();
    if (!sym) {
        close(ix);
        close(a.dir);
        exp_close(e);
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    }
    unsigned copied = 0, already = 0, noid = 0, failed = 0, debugfiles = 0, referenced = 0;
    for (size_t i = 0; i < e->nprocs; i++) {
        const exp_process_t *p = e->procs[i];
        for (size_t k = 0; k < p->nobjects; k++) {
            const exp_object_t *o = &p->objects[k];
            if (!strcmp(o->path, "[vdso]"))
                continue;
            if (!fs_buildid_ok(o->buildid)) { /* the reader refused any other build-id */
                noid++;
                continue;
            }
            if (present(a.dir, o->buildid)) {
                already++;
                continue;
            }
            /* a library of the system's or tally's own that is still the one profiled: its
             * reference (path and build-id, in the log) is enough, and its build-id note is all
             * that needs reading (its symbol tables were 56% of the instructions of 'tally
             * collect -p on /bin/true'); anything else is read as the analysis would */
            if (lost_only && (system_file(o->path) || own_file(o->path)) &&
                same_buildid(o->path, o->buildid)) {
                referenced++;
                continue;
            }
            uint32_t obj = sym_object_add(sym, o->path, o->buildid);
            const sym_object_t *so = obj == UINT32_MAX ? NULL : sym_object(sym, obj);
            if (!so || (so->status != SYM_OBJ_OK && so->status != SYM_OBJ_NOSYMS)) {
                failed++;
                warn(&a, "not archived: %s", so && *so->message ? so->message : o->path);
                continue;
            }
            if (lost_only && (system_file(o->path) || own_file(o->path))) {
                referenced++; /* by path and build-id, in the log */
                continue;
            }
            int in = fs_open_read(o->path, 0);
            int c = in < 0 ? in : copy_in(&a, in, a.dir, o->buildid, o->buildid, 0, o->buildid);
            if (in >= 0)
                close(in);
            if (c) {
                failed++;
                warn(&a, "cannot copy '%s': %s", o->path,
                     c == -ESTALE ? "it changed while it was copied" : fs_strerror(c));
                continue;
            }
            copied++;
            index_line(&a, ix, o->buildid, o->path);
            /* its separate debug file (symbols of static functions, lines), beside it */
            if (*so->debugfile && !(lost_only && system_file(so->debugfile))) {
                char name[160];
                snprintf(name, sizeof name, "%s.debug", o->buildid);
                int din = fs_open_read(so->debugfile, 0);
                if (din >= 0 && !copy_in(&a, din, a.dir, name, name, 0, NULL))
                    debugfiles++;
                if (din >= 0)
                    close(din);
            }
        }
    }
    close(ix);
    unsigned srcs = 0, srcs_missing = 0, srcs_refused = 0;
    if (sources) {
        int srcdir = fs_mkdirs_at(a.dir, "src");
        if (srcdir < 0)
            warn(&a, "sources not archived: cannot use '%s/archive/src': %s", path,
                 fs_strerror(srcdir));
        eng_t *g = srcdir >= 0 ? eng_new(&e, 1, sym) : NULL;
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
            int r = archive_source(&a, srcdir, file);
            if (r == 0)
                srcs++;
            else if (r > 0)
                srcs_missing++;
            else
                srcs_refused++;
        }
        for (size_t j = 0; j < ndone; j++)
            free(done[j]);
        free(done);
        eng_free(g);
        if (srcdir >= 0)
            close(srcdir);
    }
    if (!quiet) {
        esc_printf("%s: archived %u binar%s (%.1f MB)", path, copied, copied == 1 ? "y" : "ies",
               (double)a.bytes / 1e6);
        if (debugfiles)
            esc_printf(" with %u debug file%s", debugfiles, debugfiles == 1 ? "" : "s");
        if (already)
            esc_printf(", %u already there", already);
        if (referenced)
            esc_printf(", %u librar%s of the system's and tally's own referenced by build-id",
                       referenced,
                       referenced == 1 ? "y" : "ies");
        if (noid)
            esc_printf(", %u without a build-id skipped", noid);
        if (failed)
            esc_printf(", %u could not be archived", failed);
        if (sources)
            esc_printf(", %u source file%s (%u not found%s)", srcs, srcs == 1 ? "" : "s",
                   srcs_missing, srcs_refused ? ", some refused" : "");
        esc_printf("\n");
    }
    close(a.dir);
    sym_free(sym);
    exp_close(e);
    if (stats)
        *stats = (archive_stats_t){ copied, debugfiles, referenced, failed, a.bytes };
    if (a.werr)
        return tally_errf(err, TALLY_EIO, "cannot write the archive '%s/archive': %s (%u object%s "
                          "not archived)", path, strerror(a.werr), failed, failed == 1 ? "" : "s");
    return 0;
}

static void usage(FILE *out)
{
    esc_fprintf(out,
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
        if (archive_experiment(argv[i], sources, quiet, 0, NULL, &err))
            rc = cli_report(&err);
    }
    if (!n) {
        usage(stderr);
        return 2;
    }
    return rc;
}
