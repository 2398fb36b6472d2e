/*
 * export_tau.c - TAU's text profiles: a file profile.N.0.T per process and thread with profiled
 * blocks (analyzer/report_blocks.h), read by TAU's pprof and ParaProf. See export.h.
 *
 * A file: "<n> templated_functions_MULTI_<METRIC>", the column line "# Name Calls Subrs Excl
 * Incl ProfileCalls #" followed by <metadata> (pid, tid, executable), one line per block
 * ("NAME" calls subrs excl incl 0 GROUP="GROUP", times in microseconds written exactly from the
 * model's nanoseconds; a counter's counts as they are), then one line per call path of two
 * blocks or more, as TAU writes its callpath timers under TAU_CALLPATH: the path's blocks root
 * first joined by " => ", the path's own values (rep_bpath_t), group "TAU_CALLPATH | " and its
 * last block's group; then "0 aggregates" and "0 userevents". One quantity (wall: TIME, cpu:
 * CPU_TIME, a counter: its name) is written into the directory itself; several go into
 * MULTI__<METRIC>
 * subdirectories, as TAU lays out a run with several metrics.
 *
 * Node N: the process's MPI rank when it is a rank's own process; every other process (no MPI,
 * a rank's descendants) takes the next number after the highest rank, in the session's order.
 * Thread T: the process's main thread 0, its other threads with blocks 1, 2, ... in the model's
 * order.
 * A name has no quoting in the format: '"' is written as '\'' and a control byte as '?'.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sink.h"
#include "export/export.h"

static const char *tau_metric(const char *q)
{
    return !strcmp(q, "wall") ? "TIME" : !strcmp(q, "cpu") ? "CPU_TIME" : q;
}

/* s with '"' and control bytes replaced, into buf (n bytes). */
static const char *plain(const char *s, char *buf, size_t n)
{
    size_t i = 0;
    for (; s[i] && i + 1 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[i] = c == '"' ? '\'' : c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    buf[i] = 0;
    return buf;
}

static void xml_text(sink_t *o, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '&')
            sink_printf(o, "&amp;");
        else if (c == '<')
            sink_printf(o, "&lt;");
        else if (c == '>')
            sink_printf(o, "&gt;");
        else if (c == '"')
            sink_printf(o, "&quot;");
        else if (c < 0x20 || c == 0x7f)
            sink_printf(o, "?");
        else
            sink_printf(o, "%c", c);
    }
}

static void attr(sink_t *o, const char *name, const char *value)
{
    sink_printf(o, "<attribute><name>%s</name><value>", name);
    xml_text(o, value);
    sink_printf(o, "</value></attribute>");
}

/* ns as microseconds, exactly: 1234567 -> "1234.567" */
static void usec(sink_t *o, uint64_t ns)
{
    sink_printf(o, "%llu.%03llu", (unsigned long long)(ns / 1000),
                (unsigned long long)(ns % 1000));
}

/* One row: name written by the caller, then its counts, times and group. */
static void row_values(sink_t *o, const rep_bvals_t *v, unsigned q, int time, const char *group,
                       const char *prefix, char *gbuf, size_t n)
{
    sink_printf(o, "\" %llu %llu ", (unsigned long long)v->calls, (unsigned long long)v->subrs);
    if (time) { /* times in microseconds; counters as counts, as TAU writes them */
        usec(o, v->excl[q]);
        sink_printf(o, " ");
        usec(o, v->incl[q]);
    } else {
        sink_printf(o, "%llu %llu", (unsigned long long)v->excl[q], (unsigned long long)v->incl[q]);
    }
    sink_printf(o, " 0 GROUP=\"%s%s\"\n", prefix, plain(group, gbuf, n));
}

/* The group of thread t's block called name (TAU_DEFAULT when it has none). */
static const char *group_of(const rep_bthread_t *t, const char *name)
{
    for (size_t i = 0; i < t->nrows; i++)
        if (!strcmp(t->rows[i].name, name))
            return t->rows[i].group && *t->rows[i].group ? t->rows[i].group : "TAU_DEFAULT";
    return "TAU_DEFAULT";
}

/* Call path k of t as TAU names it: its blocks root first, joined by " => ". chain has room
 * for the path's depth + 1 indices. */
static void path_name(sink_t *o, const rep_bthread_t *t, size_t k, size_t *chain, char *buf,
                      size_t n)
{
    size_t m = 0;
    for (long i = (long)k; i >= 0 && m <= t->paths[k].depth; i = t->paths[i].parent)
        chain[m++] = (size_t)i;
    while (m-- > 0)
        sink_printf(o, "%s%s", plain(t->paths[chain[m]].name, buf, n), m ? " => " : "");
}

static int write_profile(const rep_blocks_t *b, const rep_bthread_t *t, unsigned q,
                         const char *path, tally_err_t *err)
{
    /* call paths of two blocks or more: TAU's callpath timers (TAU_CALLPATH) */
    size_t ncalls = 0;
    unsigned maxdepth = 0;
    for (size_t k = 0; k < t->npaths; k++) {
        ncalls += t->paths[k].depth > 0;
        if (t->paths[k].depth > maxdepth)
            maxdepth = t->paths[k].depth;
    }
    size_t *chain = malloc(((size_t)maxdepth + 1) * sizeof *chain);
    if (!chain)
        return tally_errf(err, TALLY_ENOMEM, "out of memory writing '%s'", path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        free(chain);
        return tally_errf(err, TALLY_EIO, "cannot write '%s': %s", path, strerror(e));
    }
    sink_t o;
    sink_file(&o, f);
    char buf[4096], gbuf[512];
    sink_printf(&o, "%zu templated_functions_MULTI_%s\n", t->nrows + ncalls,
                tau_metric(b->qname[q]));
    sink_printf(&o, "# Name Calls Subrs Excl Incl ProfileCalls # <metadata>");
    snprintf(buf, sizeof buf, "%u", (unsigned)t->p->pid);
    attr(&o, "pid", buf);
    snprintf(buf, sizeof buf, "%u", (unsigned)t->tid);
    attr(&o, "tid", buf);
    attr(&o, "Executable", t->p->exe ? t->p->exe : "");
    attr(&o, "Metric", b->qname[q]);
    sink_printf(&o, "</metadata>\n");
    for (size_t i = 0; i < t->nrows; i++) {
        const rep_brow_t *r = &t->rows[i];
        const char *g = r->group && *r->group ? r->group : "TAU_DEFAULT";
        sink_printf(&o, "\"%s", plain(r->name, buf, sizeof buf));
        row_values(&o, &r->v, q, b->qtime[q], g, "", gbuf, sizeof gbuf);
    }
    for (size_t k = 0; k < t->npaths; k++) {
        const rep_bpath_t *p = &t->paths[k];
        if (!p->depth)
            continue;
        sink_printf(&o, "\"");
        path_name(&o, t, k, chain, buf, sizeof buf);
        row_values(&o, &p->v, q, b->qtime[q], group_of(t, p->name), "TAU_CALLPATH | ", gbuf,
                   sizeof gbuf);
    }
    free(chain);
    sink_printf(&o, "0 aggregates\n0 userevents\n");
    int bad = sink_error(&o) || fflush(f) || ferror(f);
    int e = errno;
    if (fclose(f) || bad)
        return tally_errf(err, TALLY_EIO, "writing '%s' failed: %s", path,
                          strerror(bad ? e : errno));
    return 0;
}

/* Whether name is a TAU profile file: profile.N.C.T with decimal N, C, T. */
static int is_profile_name(const char *name)
{
    if (strncmp(name, "profile.", 8))
        return 0;
    const char *p = name + 8;
    for (int part = 0; part < 3; part++) {
        if (*p < '0' || *p > '9')
            return 0;
        while (*p >= '0' && *p <= '9')
            p++;
        if (part < 2 && *p++ != '.')
            return 0;
    }
    return !*p;
}

/* Makes dir if missing; then, when it holds profile files: removes them when force, else an
 * error (the old files would be read with the new ones). top: also the MULTI__* subdirectories
 * of an earlier export with several metrics (TAU's tools would read those), removed when force
 * leaves them empty. */
static int prepare_dir(const char *dir, int force, int top, tally_err_t *err)
{
    if (mkdir(dir, 0777) && errno != EEXIST)
        return tally_errf(err, TALLY_EIO, "cannot create the directory '%s': %s", dir,
                          strerror(errno));
    DIR *d = opendir(dir);
    if (!d)
        return tally_errf(err, TALLY_EIO, "cannot open the directory '%s': %s", dir,
                          strerror(errno));
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (top && !strncmp(de->d_name, "MULTI__", 7) && de->d_name[7]) {
            struct stat st;
            if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
                continue;
            char *sub = NULL;
            if (asprintf(&sub, "%s/%s", dir, de->d_name) < 0) {
                rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
                break;
            }
            rc = prepare_dir(sub, force, 0, err);
            if (!rc && force)
                rmdir(sub); /* kept when it holds other files */
            free(sub);
            continue;
        }
        if (!is_profile_name(de->d_name))
            continue;
        if (!force) {
            rc = tally_errf(err, TALLY_EUSAGE, "'%s' already holds TAU profiles (%s): give "
                            "--force to replace them, or another directory with -o", dir,
                            de->d_name);
        } else if (unlinkat(dirfd(d), de->d_name, 0)) {
            rc = tally_errf(err, TALLY_EIO, "cannot remove '%s/%s': %s", dir, de->d_name,
                            strerror(errno));
        }
    }
    closedir(d);
    return rc;
}

int xp_tau(const rep_blocks_t *b, const char *dir, int force, tally_err_t *err)
{
    if (!b->nthreads)
        return tally_errf(err, TALLY_ENOTFOUND, "no profiled blocks were recorded: nothing to "
                          "export as TAU profiles (see tally print -blocks)");
    /* the node of each thread's process */
    uint64_t *node = calloc(b->nthreads, sizeof *node);
    unsigned *tnum = calloc(b->nthreads, sizeof *tnum);
    char *path = NULL;
    int rc = 0;
    if (!node || !tnum) {
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
        goto out;
    }
    uint64_t next = 0;
    for (size_t i = 0; i < b->nthreads; i++)
        if (b->threads[i].p->mpi_rank1 && b->threads[i].p->mpi_rank1 > next)
            next = b->threads[i].p->mpi_rank1; /* highest rank + 1 */
    for (size_t i = 0; i < b->nthreads; i++) {
        const exp_process_t *p = b->threads[i].p;
        size_t first = i;
        int has_main = 0;
        for (size_t k = 0; k < b->nthreads; k++)
            if (b->threads[k].p == p) {
                first = k < first ? k : first;
                has_main |= b->threads[k].tid == p->pid;
            }
        if (first < i) {
            node[i] = node[first];
        } else {
            /* a rank's descendants have no mpi_rank1: they take numbers of their own */
            node[i] = p->mpi_rank1 ? p->mpi_rank1 - 1 : next++;
        }
        if (b->threads[i].tid == p->pid)
            tnum[i] = 0;
        else {
            tnum[i] = has_main ? 1 : 0;
            for (size_t k = 0; k < i; k++)
                tnum[i] += b->threads[k].p == p && b->threads[k].tid != p->pid;
        }
    }
    size_t cap = strlen(dir) + 160;
    if (!(path = malloc(cap))) {
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = prepare_dir(dir, force, 1, err)))
        goto out;
    for (unsigned q = 0; q < b->nq && !rc; q++) {
        char *qdir = path;
        if (b->nq == 1) {
            snprintf(qdir, cap, "%s", dir);
        } else {
            snprintf(qdir, cap, "%s/MULTI__%s", dir, tau_metric(b->qname[q]));
            if ((rc = prepare_dir(qdir, force, 0, err)))
                break;
        }
        size_t dl = strlen(qdir);
        for (size_t i = 0; i < b->nthreads && !rc; i++) {
            snprintf(path + dl, cap - dl, "/profile.%llu.0.%u", (unsigned long long)node[i],
                     tnum[i]);
            rc = write_profile(b, &b->threads[i], q, path, err);
            path[dl] = 0;
        }
    }
out:
    free(path);
    free(node);
    free(tnum);
    return rc;
}
