/*
 * reader.c - experiment reader; see reader.h. Sections: records, log parsing, the process tree,
 * stacks, event scanning.
 */
#define _GNU_SOURCE
#include "reader.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/fsafe.h"
#include "../base/leb128.h"
#include "logfile.h"

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        /* The reader's allocations are small next to the data; running out here is fatal for
         * the analysis anyway, but we must not return garbage. */
        fprintf(stderr, "tally: out of memory\n");
        abort();
    }
    return q;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xrealloc(NULL, n), s, n);
}

#define GROW(arr, n, cap)                                                  \
    do {                                                                   \
        if ((n) == (cap)) {                                                \
            (cap) = (cap) ? 2 * (cap) : 8;                                 \
            (arr) = xrealloc((arr), (cap) * sizeof *(arr));                \
        }                                                                  \
    } while (0)

/* ---- records ------------------------------------------------------------------------------ */

const char *exp_record_get(const exp_record_t *r, const char *key)
{
    for (uint32_t i = 0; i < r->nfields; i++)
        if (!strcmp(r->fields[i].key, key))
            return r->fields[i].val;
    return NULL;
}

uint64_t exp_record_u64(const exp_record_t *r, const char *key, uint64_t dflt)
{
    const char *v = exp_record_get(r, key);
    if (!v || !*v)
        return dflt;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 0);
    return (errno || *end) ? dflt : (uint64_t)x;
}

static char *get_dup(const exp_record_t *r, const char *key)
{
    const char *v = exp_record_get(r, key);
    return xstrdup(v ? v : "");
}

/* ---- log parsing -------------------------------------------------------------------------- */

static void add_warning(exp_process_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_warning(exp_process_t *p, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    p->warnings = xrealloc(p->warnings, (p->nwarnings + 1) * sizeof *p->warnings);
    p->warnings[p->nwarnings++] = xstrdup(buf);
}

/* Splits one line (modified in place) into a record. */
static void parse_line(char *line, exp_record_t *r)
{
    size_t cap = 0;
    memset(r, 0, sizeof *r);
    char *save = NULL;
    char *tok = strtok_r(line, " ", &save);
    r->kind = xstrdup(tok ? tok : "");
    while ((tok = strtok_r(NULL, " ", &save))) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = 0;
        GROW(r->fields, r->nfields, cap);
        exp_field_t *f = &r->fields[r->nfields++];
        f->key = xstrdup(tok);
        f->val = xstrdup(eq + 1);
        exp_pct_decode(f->val);
    }
}

static exp_thread_t *find_thread(exp_process_t *p, uint32_t tid)
{
    for (size_t i = p->nthreads; i-- > 0;)
        if (p->threads[i].tid == tid)
            return &p->threads[i];
    return NULL;
}

static exp_thread_t *add_thread(exp_process_t *p, uint32_t tid, size_t *cap)
{
    GROW(p->threads, p->nthreads, *cap);
    exp_thread_t *th = &p->threads[p->nthreads++];
    memset(th, 0, sizeof *th);
    th->tid = tid;
    th->t_end = EXP_T_NEVER;
    return th;
}

static int cmp_samples(const void *a, const void *b)
{
    const exp_sample_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The path of a load record: as recorded, or for a relative one (dlopen("./x.so")), resolved
 * against the working directory of the process when it was loaded (the record's cwd, else the
 * start record's), so that it names the same file whatever directory tally runs in. */
static char *load_path(const exp_process_t *p, const exp_record_t *r)
{
    const char *path = exp_record_get(r, "path");
    if (!path)
        return xstrdup("");
    const char *cwd = exp_record_get(r, "cwd");
    if (!cwd || *cwd != '/')
        cwd = p->cwd;
    if (!*path || *path == '/' || *path == '[' || !cwd || *cwd != '/')
        return xstrdup(path);
    while (path[0] == '.' && path[1] == '/')
        for (path += 2; *path == '/'; path++) {
        }
    size_t nc = strlen(cwd);
    while (nc > 1 && cwd[nc - 1] == '/')
        nc--;
    size_t np = strlen(path);
    char *out = xrealloc(NULL, nc + np + 2);
    memcpy(out, cwd, nc);
    out[nc] = '/';
    memcpy(out + nc + (nc > 1), path, np + 1);
    if (nc == 1)
        out[0] = '/';
    return out;
}

/* The build-id of a load record in lower case, or "" (with a warning) when it is not one: a
 * build-id names files in the experiment's archive, so anything but hex digits is refused. */
static char *load_buildid(exp_process_t *p, const exp_record_t *r, const char *path)
{
    const char *id = exp_record_get(r, "buildid");
    if (!id || !*id)
        return xstrdup("");
    if (!fs_buildid_ok(id)) {
        char shown[40];
        size_t n = 0;
        for (const char *c = id; *c && n + 1 < sizeof shown; c++)
            shown[n++] = *c >= 0x20 && *c < 0x7f ? *c : '?';
        shown[n] = 0;
        add_warning(p, "log line %u: the load record of '%s' has a build-id that is not 2 to 128 "
                    "hexadecimal digits ('%s%s'): ignored, the object is treated as having none",
                    r->line, path, shown, id[n] ? "..." : "");
        p->notes = xrealloc(p->notes, (p->nnotes + 1) * sizeof *p->notes);
        p->notes[p->nnotes++] = p->warnings[p->nwarnings - 1];
        return xstrdup("");
    }
    char *out = xstrdup(id);
    for (char *c = out; *c; c++)
        if (*c >= 'A' && *c <= 'F')
            *c = (char)(*c - 'A' + 'a');
    return out;
}

/* Numbers the mapping generations of a process (reader.h): a load whose code range overlaps an
 * object loaded before it (unloaded since, or not) starts a new generation at its time, unless it
 * is the same object again (same path, build-id and addresses: a library reloaded in place). */
static void mapping_generations(exp_process_t *p)
{
    size_t cap = 1;
    p->gen_t = xrealloc(NULL, sizeof *p->gen_t);
    p->gen_t[0] = 0;
    p->ngens = 1;
    for (size_t i = 0; i < p->nobjects; i++) {
        exp_object_t *o = &p->objects[i];
        o->gen_lo = p->ngens - 1;
        o->gen_hi = UINT32_MAX;
        int conflict = 0;
        for (size_t j = 0; j < i; j++) {
            exp_object_t *q = &p->objects[j];
            if (q->gen_hi != UINT32_MAX || o->lo >= q->hi || q->lo >= o->hi || o->lo == o->hi)
                continue;
            if (q->bias == o->bias && q->lo == o->lo && q->hi == o->hi &&
                !strcmp(q->path, o->path) && !strcmp(q->buildid, o->buildid))
                continue;
            conflict = 1;
        }
        if (!conflict || p->ngens == UINT32_MAX - 1)
            continue;
        uint64_t t = o->t_load > p->gen_t[p->ngens - 1] ? o->t_load : p->gen_t[p->ngens - 1];
        GROW(p->gen_t, p->ngens, cap);
        p->gen_t[p->ngens++] = t;
        o->gen_lo = p->ngens - 1;
        for (size_t j = 0; j < i; j++) {
            exp_object_t *q = &p->objects[j];
            if (q->gen_hi == UINT32_MAX && o->lo < q->hi && q->lo < o->hi &&
                !(q->bias == o->bias && q->lo == o->lo && q->hi == o->hi &&
                  !strcmp(q->path, o->path) && !strcmp(q->buildid, o->buildid)))
                q->gen_hi = o->gen_lo; /* displaced: no longer in force from this generation */
        }
    }
}

static const char *record_get(void *r, const char *key)
{
    return exp_record_get(r, key);
}

/* Interprets the records of a process into its typed fields. */
static void interpret(exp_process_t *p)
{
    size_t tcap = 0, ocap = 0, scap = 0, pcap = 0;
    for (size_t i = 0; i < p->nrecords; i++) {
        exp_record_t *r = &p->records[i];
        const char *k = r->kind;
        uint64_t t = exp_record_u64(r, "t", 0);
        if (t > p->t_end && t != EXP_T_NEVER)
            p->t_end = t;
        if (!strcmp(k, "start")) {
            p->t_start = t;
            p->real_start = exp_record_u64(r, "real", 0);
            p->pid = (uint32_t)exp_record_u64(r, "pid", 0);
            p->ppid = (uint32_t)exp_record_u64(r, "ppid", 0);
            p->ncpus = (uint32_t)exp_record_u64(r, "ncpus", 0);
            p->host = get_dup(r, "host");
            p->kernel = get_dup(r, "kernel");
            p->arch = get_dup(r, "arch");
            p->exe = get_dup(r, "exe");
            p->cwd = get_dup(r, "cwd");
        } else if (!strcmp(k, "settings")) {
            const char *bad;
            if (exp_settings_from_log(&p->settings, record_get, r, &bad))
                add_warning(p, "log line %u: the settings record has a bad value for '%s' "
                            "(taken as its default)", r->line, bad);
            p->has_settings = 1;
            p->clock_ns = p->settings.clock_ns;
            free(p->clock_source);
            p->clock_source = get_dup(r, "clock_source");
            p->sync_on = p->settings.sync.mode != EXP_SYNC_OFF;
            p->sync_ns = p->settings.sync.ns;
            p->sync_calibrated = exp_record_u64(r, "sync_calibrated", 0) != 0;
            p->sync_calibration = exp_record_u64(r, "sync_calibration", 0);
            p->heap_on = p->settings.heap;
            p->io_on = p->settings.io;
        } else if (!strcmp(k, "thread")) {
            uint32_t tid = (uint32_t)exp_record_u64(r, "tid", 0);
            exp_thread_t *th = find_thread(p, tid);
            if (!th || th->t_end != EXP_T_NEVER)
                th = add_thread(p, tid, &tcap); /* tids are reused after a thread ends */
            th->t_start = t;
            free(th->name);
            free(th->how);
            th->name = get_dup(r, "name");
            th->how = get_dup(r, "how");
        } else if (!strcmp(k, "thread-end")) {
            uint32_t tid = (uint32_t)exp_record_u64(r, "tid", 0);
            exp_thread_t *th = find_thread(p, tid);
            if (!th) {
                th = add_thread(p, tid, &tcap);
                th->name = xstrdup("");
                th->how = xstrdup("unknown");
            }
            th->t_end = t;
            th->cpu = exp_record_u64(r, "cpu", 0);
            th->user = exp_record_u64(r, "user", 0);
            th->system = exp_record_u64(r, "system", 0);
            th->samples = exp_record_u64(r, "samples", 0);
        } else if (!strcmp(k, "load")) {
            GROW(p->objects, p->nobjects, ocap);
            exp_object_t *o = &p->objects[p->nobjects++];
            o->id = (uint32_t)exp_record_u64(r, "id", 0);
            o->path = load_path(p, r);
            o->buildid = load_buildid(p, r, o->path);
            o->bias = exp_record_u64(r, "bias", 0);
            o->lo = exp_record_u64(r, "lo", 0);
            o->hi = exp_record_u64(r, "hi", 0);
            o->t_load = t;
            o->t_unload = EXP_T_NEVER;
        } else if (!strcmp(k, "unload")) {
            uint32_t id = (uint32_t)exp_record_u64(r, "id", 0);
            for (size_t j = p->nobjects; j-- > 0;)
                if (p->objects[j].id == id && p->objects[j].t_unload == EXP_T_NEVER) {
                    p->objects[j].t_unload = t;
                    break;
                }
        } else if (!strcmp(k, "sample")) {
            GROW(p->samples, p->nsamples, scap);
            exp_sample_t *s = &p->samples[p->nsamples++];
            s->id = (uint32_t)exp_record_u64(r, "id", p->nsamples - 1);
            s->t = t;
            s->reason = get_dup(r, "reason");
            s->label = get_dup(r, "label");
            s->utime = exp_record_u64(r, "utime", 0);
            s->stime = exp_record_u64(r, "stime", 0);
            s->minflt = exp_record_u64(r, "minflt", 0);
            s->majflt = exp_record_u64(r, "majflt", 0);
            s->inblock = exp_record_u64(r, "inblock", 0);
            s->oublock = exp_record_u64(r, "oublock", 0);
            s->nvcsw = exp_record_u64(r, "nvcsw", 0);
            s->nivcsw = exp_record_u64(r, "nivcsw", 0);
            s->maxrss = exp_record_u64(r, "maxrss", 0);
            s->rss = exp_record_u64(r, "rss", 0);
            s->rchar = exp_record_u64(r, "rchar", 0);
            s->wchar = exp_record_u64(r, "wchar", 0);
        } else if (!strcmp(k, "pause") || !strcmp(k, "resume")) {
            GROW(p->pauses, p->npauses, pcap);
            p->pauses[p->npauses].t = t;
            p->pauses[p->npauses++].paused = !strcmp(k, "pause");
        } else if (!strcmp(k, "stats")) {
            p->has_stats = 1;
            p->st_samples = exp_record_u64(r, "samples", 0);
            p->st_expected = exp_record_u64(r, "expected", 0);
            p->st_unwind_failures = exp_record_u64(r, "unwind_failures", 0);
            p->st_dropped_busy = exp_record_u64(r, "dropped_busy", 0);
            p->st_dropped_disk = exp_record_u64(r, "dropped_disk", 0);
            p->st_truncated_stacks = exp_record_u64(r, "truncated_stacks", 0);
        } else if (!strcmp(k, "warning")) {
            add_warning(p, "%s", exp_record_get(r, "what") ? exp_record_get(r, "what") : "");
        } else if (!strcmp(k, "end")) {
            p->has_end = 1;
            free(p->end_how);
            free(p->end_signame);
            p->end_how = get_dup(r, "how");
            p->end_signame = get_dup(r, "name");
            p->end_status = (int)exp_record_u64(r, "status", 0);
            p->end_signal = (int)exp_record_u64(r, "signal", 0);
        }
    }
    if (!p->host)
        p->host = xstrdup(""), p->kernel = xstrdup(""), p->arch = xstrdup(""),
        p->exe = xstrdup(""), p->cwd = xstrdup("");
    if (!p->clock_source)
        p->clock_source = xstrdup("");
    mapping_generations(p);
    /* packets from several threads reach the log in the order they were written, which is not
     * always the order of their times: sort by time (then by id, their order of taking) */
    qsort(p->samples, p->nsamples, sizeof *p->samples, cmp_samples);
}

/* Splits the raw cmdline line into argv; each argument is percent-decoded on its own. */
static void parse_cmdline(exp_process_t *p, const char *raw)
{
    const char *v = strstr(raw, " argv=");
    if (!v)
        return;
    char *copy = xstrdup(v + 6);
    size_t cap = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        GROW(p->argv, p->argc, cap);
        exp_pct_decode(tok);
        p->argv[p->argc++] = xstrdup(tok);
    }
    free(copy);
}

static int read_file(const char *path, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = xrealloc(NULL, cap);
    for (;;) {
        if (n + 1 >= cap)
            buf = xrealloc(buf, cap *= 2);
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(buf);
            close(fd);
            return -e;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    *out = buf;
    *len = n;
    return 0;
}

static int parse_log(exp_process_t *p, tally_err_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/log", p->dir);
    char *buf;
    size_t len;
    int rc = read_file(path, &buf, &len);
    if (rc == -ENOENT || rc == -ENOTDIR)
        return tally_errf(err, TALLY_ENOTEXP, "'%s' is not an experiment (no log file)", p->dir);
    if (rc)
        return tally_errf(err, TALLY_EIO, "cannot read '%s': %s", path, strerror(-rc));
    if (memchr(buf, 0, len)) {
        /* A crash can leave a zero-filled tail; keep what precedes it. */
        len = strlen(buf);
        add_warning(p, "the log ends in zero bytes after offset %zu (cut off by a crash?)", len);
    }
    char *nl = strchr(buf, '\n');
    if (!nl || strncmp(buf, "tally-experiment ", 17)) {
        free(buf);
        return tally_errf(err, TALLY_ENOTEXP,
                          "'%s' is not an experiment (its log does not start with "
                          "'tally-experiment')", p->dir);
    }
    unsigned version = 0;
    if (sscanf(buf, "tally-experiment version=%u", &version) != 1 || version == 0) {
        free(buf);
        return tally_errf(err, TALLY_ECORRUPT, "%s:1: bad first line", path);
    }
    if (version > EXP_FORMAT_VERSION) {
        free(buf);
        return tally_errf(err, TALLY_EVERSION,
                          "'%s' was written in experiment format version %u; this tally reads "
                          "versions up to %u: use a newer tally", p->dir, version,
                          EXP_FORMAT_VERSION);
    }
    size_t cap = 0;
    uint32_t lineno = 1;
    char *cmdline_raw = NULL;
    for (char *line = nl + 1; *line; lineno++) {
        char *end = strchr(line, '\n');
        if (!end) {
            add_warning(p, "%s:%u: the last line is incomplete (the process was cut off while "
                        "writing it); ignored", path, lineno + 1);
            break;
        }
        *end = 0;
        if (*line) {
            if (!strncmp(line, "cmdline ", 8) && !cmdline_raw)
                cmdline_raw = xstrdup(line);
            GROW(p->records, p->nrecords, cap);
            parse_line(line, &p->records[p->nrecords]);
            p->records[p->nrecords++].line = lineno + 1;
        }
        line = end + 1;
    }
    free(buf);
    interpret(p);
    if (cmdline_raw) {
        parse_cmdline(p, cmdline_raw);
        free(cmdline_raw);
    }
    return 0;
}

/* ---- the process tree --------------------------------------------------------------------- */

static int is_descendant_name(const char *n)
{
    size_t len = strlen(n);
    return n[0] == '_' && len > 6 && !strcmp(n + len - 6, ".tally");
}

/* Orders _f2 before _f10: by kind letter, then number. */
static int cmp_names(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    if (x[1] != y[1])
        return x[1] - y[1];
    long nx = strtol(x + 2, NULL, 10), ny = strtol(y + 2, NULL, 10);
    return nx < ny ? -1 : nx > ny;
}

static void free_process(exp_process_t *p);

static int load_tree(exp_experiment_t *e, const char *dir, const char *name, int32_t parent,
                     size_t *cap, tally_err_t *err)
{
    exp_process_t *p = calloc(1, sizeof *p);
    if (!p)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    p->dir = xstrdup(dir);
    p->name = xstrdup(name);
    p->parent = parent;
    exp_settings_default(&p->settings);
    int rc = parse_log(p, err);
    if (rc) {
        free_process(p);
        return rc;
    }
    GROW(e->procs, e->nprocs, *cap);
    p->index = (uint32_t)e->nprocs;
    e->procs[e->nprocs++] = p;

    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char **names = NULL;
    size_t n = 0, ncap = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (is_descendant_name(de->d_name)) {
            GROW(names, n, ncap);
            names[n++] = xstrdup(de->d_name);
        }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        char sub[4096], subname[4096];
        snprintf(sub, sizeof sub, "%s/%s", dir, names[i]);
        snprintf(subname, sizeof subname, "%s%s%s", name, *name ? "/" : "", names[i]);
        tally_err_t sub_err = { 0 };
        if (load_tree(e, sub, subname, (int32_t)p->index, cap, &sub_err))
            add_warning(p, "descendant %s was not read: %s", subname, sub_err.msg);
        free(names[i]);
    }
    free(names);
    return 0;
}

int exp_open(const char *path, exp_experiment_t **out, tally_err_t *err)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return tally_errf(err, errno == ENOENT ? TALLY_ENOTFOUND : TALLY_EIO,
                          "cannot open experiment '%s': %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return tally_errf(err, TALLY_ENOTEXP,
                          "'%s' is not an experiment (experiments are directories such as "
                          "test.1.tally)", path);
    exp_experiment_t *e = calloc(1, sizeof *e);
    if (!e)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    e->path = xstrdup(path);
    size_t cap = 0;
    int rc = load_tree(e, path, "", -1, &cap, err);
    if (rc) {
        exp_close(e);
        return rc;
    }
    *out = e;
    return 0;
}

static void free_process(exp_process_t *p)
{
    for (size_t i = 0; i < p->nrecords; i++) {
        exp_record_t *r = &p->records[i];
        for (uint32_t j = 0; j < r->nfields; j++) {
            free(r->fields[j].key);
            free(r->fields[j].val);
        }
        free(r->fields);
        free(r->kind);
    }
    free(p->records);
    for (size_t i = 0; i < p->nthreads; i++) {
        free(p->threads[i].name);
        free(p->threads[i].how);
    }
    free(p->threads);
    for (size_t i = 0; i < p->nobjects; i++) {
        free(p->objects[i].path);
        free(p->objects[i].buildid);
    }
    free(p->objects);
    free(p->gen_t);
    free(p->notes);
    for (size_t i = 0; i < p->nsamples; i++) {
        free(p->samples[i].reason);
        free(p->samples[i].label);
    }
    free(p->samples);
    free(p->pauses);
    for (uint32_t i = 0; i < p->argc; i++)
        free(p->argv[i]);
    free(p->argv);
    for (size_t i = 0; i < p->nwarnings; i++)
        free(p->warnings[i]);
    free(p->warnings);
    free(p->host);
    free(p->kernel);
    free(p->arch);
    free(p->exe);
    free(p->cwd);
    free(p->clock_source);
    free(p->end_how);
    free(p->end_signame);
    free(p->dir);
    free(p->name);
    free(p);
}

void exp_close(exp_experiment_t *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->nprocs; i++)
        free_process(e->procs[i]);
    free(e->procs);
    free(e->path);
    free(e);
}

uint32_t exp_generation_at(const exp_process_t *p, uint64_t t)
{
    uint32_t lo = 0, hi = p->ngens; /* the last generation starting at or before t */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (p->gen_t[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

const exp_object_t *exp_object_in(const exp_process_t *p, uint64_t pc, uint32_t gen)
{
    const exp_object_t *best = NULL;
    uint32_t best_d = UINT32_MAX;
    for (size_t i = 0; i < p->nobjects; i++) {
        const exp_object_t *o = &p->objects[i];
        if (pc < o->lo || pc >= o->hi)
            continue;
        if (gen >= o->gen_lo && gen < o->gen_hi)
            return o;
        /* in force in another generation only: the nearest one is the best guess */
        uint32_t d = gen < o->gen_lo ? o->gen_lo - gen : gen - (o->gen_hi - 1);
        if (d <= best_d) {
            best = o;
            best_d = d;
        }
    }
    return best;
}

const exp_object_t *exp_object_at(const exp_process_t *p, uint64_t pc, uint64_t t)
{
    const exp_object_t *best = NULL;
    for (size_t i = 0; i < p->nobjects; i++) {
        const exp_object_t *o = &p->objects[i];
        if (pc < o->lo || pc >= o->hi)
            continue;
        if (t >= o->t_load && t < o->t_unload)
            return o;
        best = o; /* wrong time (e.g. t unknown): still the best guess */
    }
    return best;
}

/* ---- stacks ------------------------------------------------------------------------------- */

struct exp_stacks {
    uint64_t *frames; /* all frames, back to back */
    size_t nframes, frames_cap;
    struct stack_meta {
        uint64_t off;
        uint32_t n, flags, proc, gen;
    } *meta;
    size_t count, meta_cap;
    uint32_t *table; /* open addressing: id + 1, 0 = empty */
    size_t table_size;
};

exp_stacks_t *exp_stacks_new(void)
{
    return calloc(1, sizeof(exp_stacks_t));
}

void exp_stacks_free(exp_stacks_t *s)
{
    if (!s)
        return;
    free(s->frames);
    free(s->meta);
    free(s->table);
    free(s);
}

size_t exp_stacks_count(const exp_stacks_t *s)
{
    return s->count;
}

const uint64_t *exp_stacks_get(const exp_stacks_t *s, uint32_t id, uint32_t *n, uint32_t *flags,
                               uint32_t *proc)
{
    const struct stack_meta *m = &s->meta[id];
    if (n)
        *n = m->n;
    if (flags)
        *flags = m->flags;
    if (proc)
        *proc = m->proc;
    return s->frames + m->off;
}

uint32_t exp_stacks_gen(const exp_stacks_t *s, uint32_t id)
{
    return s->meta[id].gen;
}

static uint64_t stack_hash(uint32_t proc, const uint64_t *pcs, uint32_t n, uint32_t flags,
                           uint32_t gen)
{
    uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)proc << 40) ^ ((uint64_t)flags << 32) ^ n ^
                 ((uint64_t)gen << 20);
    for (uint32_t i = 0; i < n; i++) {
        h ^= pcs[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h;
}

static void table_rehash(exp_stacks_t *s)
{
    size_t size = s->table_size ? s->table_size * 2 : 1024;
    uint32_t *t = calloc(size, sizeof *t);
    if (!t) {
        fprintf(stderr, "tally: out of memory\n");
        abort();
    }
    for (size_t id = 0; id < s->count; id++) {
        const struct stack_meta *m = &s->meta[id];
        size_t j = stack_hash(m->proc, s->frames + m->off, m->n, m->flags, m->gen) & (size - 1);
        while (t[j])
            j = (j + 1) & (size - 1);
        t[j] = (uint32_t)id + 1;
    }
    free(s->table);
    s->table = t;
    s->table_size = size;
}

int64_t exp_stacks_intern(exp_stacks_t *s, uint32_t proc, const uint64_t *pcs, uint32_t n,
                          uint32_t flags)
{
    return exp_stacks_intern_gen(s, proc, 0, pcs, n, flags);
}

int64_t exp_stacks_intern_gen(exp_stacks_t *s, uint32_t proc, uint32_t gen, const uint64_t *pcs,
                              uint32_t n, uint32_t flags)
{
    if ((s->count + 1) * 2 > s->table_size)
        table_rehash(s);
    size_t j = stack_hash(proc, pcs, n, flags, gen) & (s->table_size - 1);
    for (; s->table[j]; j = (j + 1) & (s->table_size - 1)) {
        const struct stack_meta *m = &s->meta[s->table[j] - 1];
        if (m->n == n && m->flags == flags && m->proc == proc && m->gen == gen &&
            !memcmp(s->frames + m->off, pcs, (size_t)n * sizeof *pcs))
            return s->table[j] - 1;
    }
    if (s->count >= UINT32_MAX - 1)
        return -1;
    while (s->nframes + n > s->frames_cap) {
        s->frames_cap = s->frames_cap ? 2 * s->frames_cap : 4096;
        s->frames = xrealloc(s->frames, s->frames_cap * sizeof *s->frames);
    }
    GROW(s->meta, s->count, s->meta_cap);
    memcpy(s->frames + s->nframes, pcs, (size_t)n * sizeof *pcs);
    s->meta[s->count] = (struct stack_meta){ s->nframes, n, flags, proc, gen };
    s->nframes += n;
    s->table[j] = (uint32_t)s->count + 1;
    return (int64_t)s->count++;
}

/* ---- event scanning ----------------------------------------------------------------------- */

struct chunk_ref {
    uint32_t stream, seq, tid;
    uint64_t off;
};

static int cmp_chunks(const void *a, const void *b)
{
    const struct chunk_ref *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const uint8_t *p)
{
    return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

/* Per-thread decoding state: local stack id -> global id. */
struct thread_state {
    uint32_t *map;
    size_t n, cap;
    uint64_t *frames; /* scratch for decoding */
    size_t frames_cap;
    uint32_t cpu; /* from the stream's last CPU record */
};

#define NO_STACK UINT32_MAX

static int decode_stack(struct thread_state *ts, exp_stacks_t *stacks, uint32_t proc,
                        const uint8_t *p, const uint8_t *end)
{
    uint64_t id, flags, n, first;
    if (leb128_get(&p, end, &id) || leb128_get(&p, end, &flags) || leb128_get(&p, end, &n))
        return -1;
    if (n > (uint64_t)(end - p)) /* every frame takes at least one byte */
        return -1;
    if (n > ts->frames_cap) {
        ts->frames_cap = n;
        ts->frames = xrealloc(ts->frames, n * sizeof *ts->frames);
    }
    for (uint64_t i = 0; i < n; i++) {
        if (i == 0) {
            if (leb128_get(&p, end, &first))
                return -1;
            ts->frames[0] = first;
        } else {
            int64_t d;
            if (leb128_get_signed(&p, end, &d))
                return -1;
            ts->frames[i] = ts->frames[i - 1] + (uint64_t)d;
        }
    }
    int64_t g = exp_stacks_intern(stacks, proc, ts->frames, (uint32_t)n, (uint32_t)flags);
    if (g < 0)
        return -1;
    while (id >= ts->cap) {
        size_t old = ts->cap;
        ts->cap = ts->cap ? 2 * ts->cap : 256;
        ts->map = xrealloc(ts->map, ts->cap * sizeof *ts->map);
        for (size_t i = old; i < ts->cap; i++)
            ts->map[i] = NO_STACK;
    }
    ts->map[id] = (uint32_t)g;
    if (id >= ts->n)
        ts->n = id + 1;
    return 0;
}

/* The global id of the empty stack of a process, for events whose stack was lost. */
static uint32_t lost_stack(exp_stacks_t *stacks, uint32_t proc)
{
    return (uint32_t)exp_stacks_intern(stacks, proc, NULL, 0, EXP_STACK_UNWIND_FAIL);
}

/* A stream being decoded: its chunks in seq order, the position in the current one, and the
 * next event it has to deliver. The streams of a process are merged by the time of that event. */
struct cursor {
    const struct chunk_ref *refs;
    size_t nrefs, next;     /* chunks of the stream; next: index of the next one to load */
    const uint8_t *map;     /* the events file */
    size_t size;            /* its size */
    uint32_t csize, proc, stream, tid;
    const uint8_t *p, *end; /* records left in the current chunk */
    uint64_t t, addr;       /* time and heap address of the chunk's previous records */
    struct thread_state ts;
    const exp_process_t *pr;
    uint32_t gen;     /* the mapping generation genmap is for (0: none yet) */
    uint32_t *genmap; /* local stack id -> global id of the stack in generation gen */
    size_t ngenmap;
    uint8_t *partial; /* copy of a chunk the file ends inside */
    exp_event_t ev;   /* the next event */
};

/* Loads the cursor's next chunk; returns 0 when the stream has none left. */
static int cursor_load(struct cursor *c, exp_scan_stats_t *st)
{
    if (c->next >= c->nrefs)
        return 0;
    const struct chunk_ref *r = &c->refs[c->next];
    if (c->next == 0 ? r->seq != 0 : r->seq != c->refs[c->next - 1].seq + 1)
        st->seq_gaps++;
    c->next++;
    const uint8_t *ch = c->map + r->off;
    if (r->off + c->csize > c->size) { /* the file was cut inside this chunk */
        st->bad_chunks++;
        c->partial = xrealloc(c->partial, c->csize);
        memset(c->partial, 0, c->csize);
        memcpy(c->partial, ch, c->size - r->off);
        uint32_t avail = (uint32_t)(c->size - r->off - EXP_CHUNK_HEADER_SIZE);
        if (get_le32(c->partial + 12) > avail)
            memcpy(c->partial + 12, &avail, 4);
        ch = c->partial;
    }
    uint32_t used = get_le32(ch + 12);
    if (used > c->csize - EXP_CHUNK_HEADER_SIZE) {
        st->bad_chunks++;
        used = c->csize - EXP_CHUNK_HEADER_SIZE;
    }
    c->t = get_le64(ch + 16);
    c->addr = 0;
    c->p = ch + EXP_CHUNK_HEADER_SIZE;
    c->end = c->p + used;
    c->tid = r->tid;
    return 1;
}

/* The global id of stack g (stream-local id) in the mapping generation of the cursor's event:
 * the same addresses in another generation are other code (a library unloaded and another one
 * loaded at its addresses), so another stack. Generation 0, the only one of most processes,
 * keeps g. */
static uint32_t in_generation(struct cursor *c, exp_stacks_t *stacks, uint64_t id, uint32_t g)
{
    uint32_t gen = exp_generation_at(c->pr, c->ev.t);
    if (gen == 0)
        return g;
    if (gen != c->gen) {
        for (size_t i = 0; i < c->ngenmap; i++)
            c->genmap[i] = NO_STACK;
        c->gen = gen;
    }
    if (id < c->ngenmap && c->genmap[id] != NO_STACK)
        return c->genmap[id];
    uint32_t n, flags, proc;
    const uint64_t *pcs = exp_stacks_get(stacks, g, &n, &flags, &proc);
    if (n > c->ts.frames_cap) {
        c->ts.frames_cap = n;
        c->ts.frames = xrealloc(c->ts.frames, n * sizeof *c->ts.frames);
    }
    memcpy(c->ts.frames, pcs, (size_t)n * sizeof *pcs); /* interning may move the frames */
    int64_t ng = exp_stacks_intern_gen(stacks, proc, gen, c->ts.frames, n, flags);
    if (ng < 0)
        return g;
    while (id >= c->ngenmap) {
        size_t old = c->ngenmap;
        c->ngenmap = c->ngenmap ? 2 * c->ngenmap : 256;
        c->genmap = xrealloc(c->genmap, c->ngenmap * sizeof *c->genmap);
        for (size_t i = old; i < c->ngenmap; i++)
            c->genmap[i] = NO_STACK;
    }
    c->genmap[id] = (uint32_t)ng;
    return (uint32_t)ng;
}

/* The global id of a stream-local stack id, or the lost stack when it was never defined. */
static uint32_t map_stack(struct cursor *c, exp_stacks_t *stacks, uint64_t id,
                          exp_scan_stats_t *st)
{
    if (id < c->ts.n && c->ts.map[id] != NO_STACK)
        return c->pr->ngens > 1 ? in_generation(c, stacks, id, c->ts.map[id]) : c->ts.map[id];
    st->bad_records++;
    return lost_stack(stacks, c->proc);
}

/* Decodes the payload of a timed record (after its dt) into c->ev. Returns 0 for an event, 2 for
 * a record that is not one, 1 for a type this reader does not know, -1 for a malformed record. */
static int decode_event(struct cursor *c, uint8_t type, const uint8_t *q, const uint8_t *rend,
                        exp_stacks_t *stacks, exp_scan_stats_t *st)
{
    exp_event_t *ev = &c->ev;
    uint64_t a, b, d, e, f, g;
    int64_t sd;
    ev->type = type;
    ev->stack = EXP_NO_STACK;
    ev->state = ev->reason = ev->call = ev->err = ev->namelen = 0;
    ev->weight = ev->count = ev->addr = ev->size = 0;
    ev->fd = -1;
    ev->name = NULL;
    ev->tid = c->tid;
    ev->cpu = c->ts.cpu;
    switch (type) {
    case EXP_REC_STATE: /* another thread's state: delivered as its CLOCK event */
        if (leb128_get(&q, rend, &e) || leb128_get(&q, rend, &a) || leb128_get(&q, rend, &b) ||
            leb128_get(&q, rend, &d))
            return -1;
        ev->type = EXP_REC_CLOCK;
        ev->tid = (uint32_t)e;
        ev->cpu = UINT32_MAX;
        ev->stack = map_stack(c, stacks, a, st);
        ev->state = (uint32_t)b;
        ev->weight = d;
        ev->count = 1;
        return 0;
    case EXP_REC_CPU: /* no event: the CPU of the events that follow */
        if (leb128_get(&q, rend, &a))
            return -1;
        c->ts.cpu = (uint32_t)a;
        return 2;
    case EXP_REC_CLOCK:
        if (leb128_get(&q, rend, &a) || leb128_get(&q, rend, &b) || leb128_get(&q, rend, &d))
            return -1;
        ev->stack = map_stack(c, stacks, a, st);
        ev->state = (uint32_t)b;
        ev->weight = d;
        ev->count = 1;
        return 0;
    case EXP_REC_LOST:
        if (leb128_get(&q, rend, &a) || leb128_get(&q, rend, &b))
            return -1;
        ev->stack = 0;
        ev->count = a;
        ev->reason = (uint32_t)b;
        st->lost[b < EXP_LOST_NREASONS ? b : EXP_LOST_NOSTACK] += a;
        return 0;
    case EXP_REC_SYNC:
        if (leb128_get(&q, rend, &a) || leb128_get(&q, rend, &b) || leb128_get(&q, rend, &d) ||
            leb128_get(&q, rend, &e))
            return -1;
        ev->stack = map_stack(c, stacks, a, st);
        ev->weight = b;
        ev->addr = d;
        ev->call = (uint32_t)e;
        return 0;
    case EXP_REC_HEAP_ALLOC:
    case EXP_REC_HEAP_FREE:
        if (leb128_get_signed(&q, rend, &sd))
            return -1;
        c->addr += (uint64_t)sd;
        ev->addr = c->addr;
        if (type == EXP_REC_HEAP_ALLOC) {
            if (leb128_get(&q, rend, &a) || leb128_get(&q, rend, &b))
                return -1;
            ev->stack = map_stack(c, stacks, a, st);
            ev->size = b;
            if (q < rend && leb128_get(&q, rend, &d) == 0) /* absent: malloc */
                ev->call = (uint32_t)d;
        } else if (q < rend) { /* absent: free */
            if (leb128_get(&q, rend, &a) || leb128_get(&q, rend, &b))
                return -1;
            ev->call = (uint32_t)a;
            ev->size = b;
        }
        return 0;
    case EXP_REC_IO:
        if (leb128_get(&q, rend, &a) || leb128_get(&q, rend, &b) || leb128_get(&q, rend, &d) ||
            leb128_get(&q, rend, &e) || leb128_get_signed(&q, rend, &sd) ||
            leb128_get(&q, rend, &f))
            return -1;
        ev->stack = map_stack(c, stacks, a, st);
        ev->call = (uint32_t)b;
        ev->weight = d;
        ev->size = e;
        ev->fd = sd;
        ev->err = (uint32_t)f;
        if (q < rend) {
            if (leb128_get(&q, rend, &g) || g > (uint64_t)(rend - q))
                return -1;
            ev->name = (const char *)q;
            ev->namelen = (uint32_t)g;
        }
        return 0;
    default:
        return 1;
    }
}

/* Decodes records until the cursor holds its next event; returns 0 when the stream ends. */
static int cursor_next(struct cursor *c, exp_stacks_t *stacks, exp_scan_stats_t *st)
{
    for (;;) {
        while (c->p >= c->end)
            if (!cursor_load(c, st))
                return 0;
        uint8_t type = *c->p++;
        uint64_t len, dt;
        if (type == 0 || leb128_get(&c->p, c->end, &len) || len > (uint64_t)(c->end - c->p)) {
            st->bad_records++;
            c->p = c->end; /* the rest of the chunk cannot be framed */
            continue;
        }
        const uint8_t *q = c->p, *rend = c->p + len;
        c->p = rend;
        st->records++;
        if (type == EXP_REC_STACK) {
            if (decode_stack(&c->ts, stacks, c->proc, q, rend))
                st->bad_records++;
            continue;
        }
        if ((type > EXP_REC_IO && type < EXP_REC_STATE) || type > EXP_REC_CPU) {
            st->unknown_records++; /* skipped (its time, if any, is unknown too) */
            continue;
        }
        if (leb128_get(&q, rend, &dt)) {
            st->bad_records++;
            continue;
        }
        c->t += dt;
        c->ev.t = c->t;
        int rc = decode_event(c, type, q, rend, stacks, st);
        if (rc == 2)
            continue;
        if (rc) {
            st->bad_records++;
            continue;
        }
        if (type != EXP_REC_LOST)
            st->events++;
        return 1;
    }
}

/* Min-heap of cursors by (time of the next event, stream). */
static int cursor_before(const struct cursor *a, const struct cursor *b)
{
    return a->ev.t != b->ev.t ? a->ev.t < b->ev.t : a->stream < b->stream;
}

static void heap_sift_down(struct cursor **h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && cursor_before(h[l], h[m]))
            m = l;
        if (l + 1 < n && cursor_before(h[l + 1], h[m]))
            m = l + 1;
        if (m == i)
            return;
        struct cursor *x = h[i];
        h[i] = h[m];
        h[m] = x;
        i = m;
    }
}

/* Delivers the events of every stream of a process, merged by time. */
static int merge_streams(struct cursor *cs, size_t ncs, exp_stacks_t *stacks, exp_event_cb cb,
                         void *ctx, exp_scan_stats_t *st)
{
    struct cursor **h = xrealloc(NULL, (ncs ? ncs : 1) * sizeof *h);
    size_t n = 0;
    for (size_t i = 0; i < ncs; i++)
        if (cursor_next(&cs[i], stacks, st))
            h[n++] = &cs[i];
    for (size_t i = n / 2; i-- > 0;)
        heap_sift_down(h, n, i);
    int rc = 0;
    while (n && !rc) {
        struct cursor *c = h[0];
        if (cb)
            rc = cb(ctx, &c->ev);
        if (!cursor_next(c, stacks, st))
            h[0] = h[--n];
        heap_sift_down(h, n, 0);
    }
    free(h);
    return rc;
}

static int scan_process(const exp_process_t *pr, exp_stacks_t *stacks, exp_event_cb cb,
                        void *ctx, exp_scan_stats_t *st, tally_err_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/events", pr->dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0; /* no events: nothing was profiled in this process */
        return tally_errf(err, TALLY_EIO, "cannot read '%s': %s", path, strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) < 0 || sb.st_size < EXP_EV_HEADER_BYTES) {
        close(fd);
        if (sb.st_size == 0)
            return 0;
        return tally_errf(err, TALLY_ECORRUPT, "%s: the file is shorter than its header "
                          "(%lld bytes)", path, (long long)sb.st_size);
    }
    size_t size = (size_t)sb.st_size;
    const uint8_t *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return tally_errf(err, TALLY_EIO, "cannot map '%s': %s", path, strerror(errno));
    int rc = 0;
    struct chunk_ref *refs = NULL;
    size_t nrefs = 0;
    if (memcmp(m, EXP_EV_MAGIC, 8)) {
        rc = tally_errf(err, TALLY_ECORRUPT, "%s: not a tally events file (bad magic at offset 0)",
                        path);
        goto out;
    }
    uint32_t version = get_le32(m + 8), hsize = get_le32(m + 12), csize = get_le32(m + 16);
    if (version > EXP_FORMAT_VERSION) {
        rc = tally_errf(err, TALLY_EVERSION, "%s: events format version %u is newer than this "
                        "tally reads (%u): use a newer tally", path, version, EXP_FORMAT_VERSION);
        goto out;
    }
    if (hsize < EXP_EV_HEADER_BYTES || hsize > size || csize < 4096 || csize > (1u << 30)) {
        rc = tally_errf(err, TALLY_ECORRUPT, "%s: bad header (header size %u, chunk size %u)",
                        path, hsize, csize);
        goto out;
    }
    size_t nchunks = (size - hsize + csize - 1) / csize;
    refs = xrealloc(NULL, (nchunks ? nchunks : 1) * sizeof *refs);
    for (size_t i = 0; i < nchunks; i++) {
        uint64_t off = hsize + (uint64_t)i * csize;
        st->chunks++;
        if (off + EXP_CHUNK_HEADER_SIZE > size) {
            st->bad_chunks++;
            continue;
        }
        uint32_t magic = get_le32(m + off);
        if (magic == 0) {
            st->unused_chunks++;
            continue;
        }
        if (magic != EXP_CHUNK_MAGIC) {
            st->bad_chunks++;
            continue;
        }
        refs[nrefs++] = (struct chunk_ref){ get_le32(m + off + 24), get_le32(m + off + 8),
                                            get_le32(m + off + 4), off };
    }
    qsort(refs, nrefs, sizeof *refs, cmp_chunks);
    size_t ncs = 0;
    for (size_t i = 0; i < nrefs; i++)
        ncs += i == 0 || refs[i].stream != refs[i - 1].stream;
    struct cursor *cs = xrealloc(NULL, (ncs ? ncs : 1) * sizeof *cs);
    memset(cs, 0, (ncs ? ncs : 1) * sizeof *cs);
    for (size_t i = 0, k = 0; i < nrefs; i++) {
        if (i && refs[i].stream == refs[i - 1].stream)
            continue;
        struct cursor *c = &cs[k++];
        c->refs = &refs[i];
        while (i + c->nrefs < nrefs && refs[i + c->nrefs].stream == refs[i].stream)
            c->nrefs++;
        c->map = m;
        c->size = size;
        c->csize = csize;
        c->proc = pr->index;
        c->pr = pr;
        c->stream = refs[i].stream;
        c->ev.proc = pr->index;
        c->ts.cpu = UINT32_MAX;
    }
    rc = merge_streams(cs, ncs, stacks, cb, ctx, st);
    for (size_t i = 0; i < ncs; i++) {
        free(cs[i].ts.map);
        free(cs[i].ts.frames);
        free(cs[i].genmap);
        free(cs[i].partial);
    }
    free(cs);
out:
    free(refs);
    munmap((void *)m, size);
    return rc;
}

int exp_scan(const exp_experiment_t *e, exp_stacks_t *stacks, exp_event_cb cb, void *ctx,
             exp_scan_stats_t *st, tally_err_t *err)
{
    exp_scan_stats_t local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    for (size_t i = 0; i < e->nprocs; i++) {
        int rc = scan_process(e->procs[i], stacks, cb, ctx, st, err);
        if (rc)
            return rc;
    }
    return 0;
}
