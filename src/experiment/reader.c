/*
 * reader.c - experiment reader; see reader.h. Sections: allocation and files, records, log
 * parsing, the process tree, stacks, event scanning.
 */
#define _GNU_SOURCE
#include "reader.h"

#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/fsafe.h"
#include "../base/grow.h"
#include "../base/leb128.h"
#include "../base/u64map.h"
#include "logfile.h"
#include "experiment/logrec.h"

/* ---- allocation and files ----------------------------------------------------------------- */

static char empty_str[1]; /* the value of absent strings: never written, never freed */


static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    return d ? memcpy(d, s, n) : NULL;
}

/* Opens dir/name (dirfd: a directory descriptor, or AT_FDCWD with a path) for reading if it is a
 * regular file: never through a symbolic link, never blocking on a FIFO. Returns the descriptor
 * with its size in *size, or -errno: -ENOENT when absent, -ELOOP for a symbolic link, -EFTYPE
 * (here -EINVAL) for anything else than a regular file. */
static int open_regular(int dirfd, const char *name, off_t *size)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    *size = st.st_size;
    return fd;
}

/* The sentence for a failed open_regular of path. */
static int open_error(tally_err_t *err, int code, const char *path, int rc)
{
    if (rc == -ELOOP)
        return tally_errf(err, code, "'%s' is a symbolic link; experiments hold regular files "
                          "only (replace it with the file it points to)", path);
    if (rc == -EINVAL)
        return tally_errf(err, code, "'%s' is not a regular file (a FIFO, device or directory); "
                          "experiments hold regular files only", path);
    return tally_errf(err, code, "cannot read '%s': %s", path, strerror(-rc));
}

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
    return (errno || *end || *v == '-') ? dflt : (uint64_t)x;
}

/* The value of key in r (pointing into the log text), "" when absent. */
static char *get_str(const exp_record_t *r, const char *key)
{
    const char *v = exp_record_get(r, key);
    return v ? (char *)v : empty_str;
}

/* ---- log parsing -------------------------------------------------------------------------- */

static int add_warning(exp_process_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int vadd_warning(exp_process_t *p, const char *fmt, va_list ap)
{
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    char *w = dupstr(buf);
    char **nw = w ? realloc(p->warnings, (p->nwarnings + 1) * sizeof *p->warnings) : NULL;
    if (!nw) {
        free(w);
        return TALLY_ENOMEM;
    }
    p->warnings = nw;
    p->warnings[p->nwarnings++] = w;
    return 0;
}

static int add_warning(exp_process_t *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vadd_warning(p, fmt, ap);
    va_end(ap);
    return rc;
}

/* Records damage (code, file, offset) and its sentence among the warnings. */
static int add_damage(exp_process_t *p, int code, const char *file, uint64_t offset,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int add_damage(exp_process_t *p, int code, const char *file, uint64_t offset,
                      const char *fmt, ...)
{
    exp_damage_t *nd = realloc(p->damage, (p->ndamage + 1) * sizeof *p->damage);
    if (!nd)
        return TALLY_ENOMEM;
    p->damage = nd;
    p->damage[p->ndamage++] = (exp_damage_t){ code, file, offset };
    va_list ap;
    va_start(ap, fmt);
    int rc = vadd_warning(p, fmt, ap);
    va_end(ap);
    return rc;
}

/* Splits one line (modified in place, fields decoded in place) into a record whose fields are
 * taken from *pool (grown as needed; the caller turns indexes into pointers at the end). */
static int parse_line(char *line, exp_record_t *r, exp_field_t **pool, size_t *npool,
                      size_t *pool_cap)
{
    memset(r, 0, sizeof *r);
    char *save = NULL;
    char *tok = strtok_r(line, " ", &save);
    r->kind = tok ? tok : empty_str;
    r->fields = (exp_field_t *)(uintptr_t)*npool; /* an index until the pool stops moving */
    while ((tok = strtok_r(NULL, " ", &save))) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok)
            continue;
        *eq = 0;
        if (r->nfields == UINT32_MAX || GROW(*pool, *npool, *pool_cap))
            return TALLY_ENOMEM;
        exp_field_t *f = &(*pool)[(*npool)++];
        f->key = tok;
        f->val = eq + 1;
        exp_pct_decode(f->val);
        r->nfields++;
    }
    return 0;
}

/* Lookups while interpreting: the latest thread of each tid, the latest object of each id. */
typedef struct interp {
    exp_process_t *p;
    u64map_t threads, objects;
    size_t tcap, ocap, scap, pcap, mcap, kcap, ccap;
} interp_t;

static exp_thread_t *find_thread(interp_t *in, uint32_t tid)
{
    const uint32_t *i = u64map_get(&in->threads, tid);
    return i ? &in->p->threads[*i] : NULL;
}

static exp_thread_t *add_thread(interp_t *in, uint32_t tid)
{
    exp_process_t *p = in->p;
    if (GROW(p->threads, p->nthreads, in->tcap) ||
        u64map_put(&in->threads, tid, (uint32_t)p->nthreads))
        return NULL;
    exp_thread_t *th = &p->threads[p->nthreads++];
    memset(th, 0, sizeof *th);
    th->tid = tid;
    th->t_end = EXP_T_NEVER;
    th->name = th->how = empty_str;
    return th;
}

static int cmp_samples(const void *a, const void *b)
{
    const exp_sample_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Keeps s (allocated) until the process is freed. 0 or TALLY_ENOMEM (s freed). */
static int own_str(exp_process_t *p, char *s)
{
    char **n = s ? realloc(p->owned, (p->nowned + 1) * sizeof *p->owned) : NULL;
    if (!n) {
        free(s);
        return TALLY_ENOMEM;
    }
    p->owned = n;
    p->owned[p->nowned++] = s;
    return 0;
}

/* The path of a load record: as recorded, or for a relative one (dlopen("./x.so")), resolved
 * against the working directory of the process when it was loaded (the record's cwd, else the
 * start record's), so that it names the same file whatever directory tally runs in. NULL on no
 * memory. */
static char *load_path(exp_process_t *p, const exp_record_t *r)
{
    char *path = get_str(r, EXP_KEY_PATH);
    const char *cwd = exp_record_get(r, EXP_KEY_CWD);
    if (!cwd || *cwd != '/')
        cwd = p->cwd;
    if (!*path || *path == '/' || *path == '[' || !cwd || *cwd != '/')
        return path;
    while (path[0] == '.' && path[1] == '/')
        for (path += 2; *path == '/'; path++) {
        }
    size_t nc = strlen(cwd);
    while (nc > 1 && cwd[nc - 1] == '/')
        nc--;
    size_t np = strlen(path);
    char *out = malloc(nc + np + 2);
    if (!out)
        return NULL;
    memcpy(out, cwd, nc);
    out[nc] = '/';
    memcpy(out + nc + (nc > 1), path, np + 1);
    if (nc == 1)
        out[0] = '/';
    return own_str(p, out) ? NULL : out;
}

/* The build-id of a load record in lower case (in place: it points into the log text), or ""
 * (with a warning and a note) when it is not one: a build-id names files in the experiment's
 * archive, so anything but hex digits is refused. NULL on no memory. */
static char *load_buildid(exp_process_t *p, const exp_record_t *r, const char *path)
{
    char *id = get_str(r, EXP_KEY_BUILDID);
    if (!*id)
        return id;
    if (!fs_buildid_ok(id)) {
        char shown[40];
        size_t n = 0;
        for (const char *c = id; *c && n + 1 < sizeof shown; c++)
            shown[n++] = *c >= 0x20 && *c < 0x7f ? *c : '?';
        shown[n] = 0;
        char **notes = realloc(p->notes, (p->nnotes + 1) * sizeof *p->notes);
        if (!notes)
            return NULL;
        p->notes = notes;
        if (add_warning(p, "log line %u: the load record of '%s' has a build-id that is not 2 to "
                        "128 hexadecimal digits ('%s%s'): ignored, the object is treated as "
                        "having none", r->line, path, shown, id[n] ? "..." : ""))
            return NULL;
        p->notes[p->nnotes++] = p->warnings[p->nwarnings - 1];
        return empty_str;
    }
    for (char *c = id; *c; c++)
        if (*c >= 'A' && *c <= 'F')
            *c = (char)(*c - 'A' + 'a');
    return id;
}

static int same_object(const exp_object_t *q, const exp_object_t *o)
{
    return q->bias == o->bias && q->lo == o->lo && q->hi == o->hi && !strcmp(q->path, o->path) &&
           !strcmp(q->buildid, o->buildid);
}

/* Numbers the mapping generations of a process (reader.h): a load whose code range overlaps an
 * object loaded before it (unloaded since, or not) starts a new generation at its time, unless it
 * is the same object again (same path, build-id and addresses: a library reloaded in place).
 * 0 or TALLY_ENOMEM. */
static int mapping_generations(exp_process_t *p)
{
    size_t cap = 0;
    p->ngens = 0;
    if (GROW(p->gen_t, 0, cap))
        return TALLY_ENOMEM;
    p->gen_t[0] = 0;
    p->ngens = 1;
    for (size_t i = 0; i < p->nobjects; i++) {
        exp_object_t *o = &p->objects[i];
        o->gen_lo = p->ngens - 1;
        o->gen_hi = UINT32_MAX;
        int conflict = 0;
        for (size_t j = 0; j < i && !conflict; j++) {
            exp_object_t *q = &p->objects[j];
            if (q->gen_hi != UINT32_MAX || o->lo >= q->hi || q->lo >= o->hi || o->lo == o->hi)
                continue;
            conflict = !same_object(q, o);
        }
        if (!conflict || p->ngens == UINT32_MAX - 1)
            continue;
        uint64_t t = o->t_load > p->gen_t[p->ngens - 1] ? o->t_load : p->gen_t[p->ngens - 1];
        if (GROW(p->gen_t, p->ngens, cap))
            return TALLY_ENOMEM;
        p->gen_t[p->ngens++] = t;
        o->gen_lo = p->ngens - 1;
        for (size_t j = 0; j < i; j++) {
            exp_object_t *q = &p->objects[j];
            if (q->gen_hi == UINT32_MAX && o->lo < q->hi && q->lo < o->hi && !same_object(q, o))
                q->gen_hi = o->gen_lo; /* displaced: no longer in force from this generation */
        }
    }
    return 0;
}

static const char *record_get(void *r, const char *key)
{
    return exp_record_get(r, key);
}

/* A second start or settings record: the first one is used. */
static int duplicate(exp_process_t *p, const exp_record_t *r)
{
    return add_damage(p, TALLY_ECORRUPT, "log", UINT64_MAX,
                      "log line %u: a second '%s' record; the first one is used", r->line,
                      r->kind);
}

/* Interprets one record into the process's typed fields. 0 or TALLY_ENOMEM. */
static long find_metric(const exp_process_t *p, const char *name)
{
    for (size_t i = 0; i < p->nmetrics; i++)
        if (!strcmp(p->metrics[i].name, name))
            return (long)i;
    return -1;
}

/* A `metric` record: name, title, unit, aggregate (sum), time (0/1). A bad one is refused with a
 * warning naming its line; the rest of the log is read. */
static int declare_metric(interp_t *in, exp_record_t *r)
{
    exp_process_t *p = in->p;
    char *name = get_str(r, EXP_KEY_NAME), *agg = get_str(r, EXP_KEY_AGGREGATE);
    const char *why = NULL;
    if (!exp_decl_name_ok(name))
        why = "its name is not 1 to 63 characters of a-z, 0-9, _ and - starting with a letter";
    else if (!exp_decl_text_ok(get_str(r, EXP_KEY_TITLE), EXP_DECL_TITLE_MAX) || !exp_decl_text_ok(get_str(r, EXP_KEY_UNIT), EXP_DECL_UNIT_MAX))
        why = "its title or unit has control characters or is too long (127, 31 bytes)";
    else if (*agg && strcmp(agg, "sum"))
        why = "its aggregation is not 'sum', the only one this version knows";
    else if (find_metric(p, name) >= 0)
        why = "a metric of that name was declared before";
    else if (p->nmetrics >= 1000)
        why = "too many metrics declared";
    if (why)
        return add_warning(p, "log line %u: metric '%s' is not used: %s", r->line, name, why);
    if (GROW(p->metrics, p->nmetrics, in->mcap))
        return TALLY_ENOMEM;
    exp_metric_t *m = &p->metrics[p->nmetrics++];
    m->name = name;
    m->title = *get_str(r, EXP_KEY_TITLE) ? get_str(r, EXP_KEY_TITLE) : name;
    m->time = exp_record_u64(r, EXP_KEY_TIME, 0) == 1;
    m->unit = m->time ? "s" : *get_str(r, EXP_KEY_UNIT) ? get_str(r, EXP_KEY_UNIT) : "count";
    m->hz = m->time ? 0 : exp_record_u64(r, EXP_KEY_HZ, 0);
    return 0;
}

/* A `counter` record: id, name, metric (declared before), interval, data. */
static int declare_counter(interp_t *in, exp_record_t *r)
{
    exp_process_t *p = in->p;
    const char *ids = exp_record_get(r, EXP_KEY_ID);
    uint64_t id = exp_record_u64(r, EXP_KEY_ID, UINT64_MAX);
    char *name = get_str(r, EXP_KEY_NAME);
    long m = find_metric(p, get_str(r, EXP_KEY_METRIC));
    const char *why = NULL;
    if (!ids || id >= EXP_CTR_MAX)
        why = "its id is not a number from 0 to 63";
    else if (m < 0)
        why = "its metric was not declared before it";
    else if (!exp_decl_text_ok(name, EXP_DECL_TITLE_MAX))
        why = "its name has control characters or is too long";
    for (size_t i = 0; i < p->ncounters && !why; i++)
        if (p->counters[i].id == id)
            why = "a counter with that id was declared before";
    if (why)
        return add_warning(p, "log line %u: counter '%s' is not used: %s", r->line, name, why);
    if (GROW(p->counters, p->ncounters, in->ccap))
        return TALLY_ENOMEM;
    exp_counter_t *c = &p->counters[p->ncounters++];
    memset(c, 0, sizeof *c);
    c->id = (uint32_t)id;
    c->name = name;
    c->metric = (uint32_t)m;
    c->interval = exp_record_u64(r, EXP_KEY_INTERVAL, 0);
    c->data = exp_record_u64(r, EXP_KEY_DATA, 0) == 1;
    return 0;
}

/* A `counter-stats` record: the figures of a counter declared before. */
static int counter_stats(interp_t *in, exp_record_t *r)
{
    exp_process_t *p = in->p;
    uint64_t id = exp_record_u64(r, EXP_KEY_ID, UINT64_MAX);
    for (size_t i = 0; i < p->ncounters; i++) {
        exp_counter_t *c = &p->counters[i];
        if (c->id != id)
            continue;
        c->has_stats = 1;
        c->samples = exp_record_u64(r, EXP_KEY_SAMPLES, 0);
        c->events = exp_record_u64(r, EXP_KEY_EVENTS, 0);
        c->counted = exp_record_u64(r, EXP_KEY_COUNTED, 0);
        c->enabled = exp_record_u64(r, EXP_KEY_ENABLED, 0);
        c->running = exp_record_u64(r, EXP_KEY_RUNNING, 0);
        c->throttled = exp_record_u64(r, EXP_KEY_THROTTLED, 0);
        c->lost = exp_record_u64(r, EXP_KEY_LOST, 0);
        c->dropped = exp_record_u64(r, EXP_KEY_DROPPED, 0);
        return 0;
    }
    return add_warning(p, "log line %u: counter-stats of a counter not declared", r->line);
}

int exp_kind_attr(const exp_kind_t *k, const char *name)
{
    size_t len = strlen(name);
    int i = 0;
    for (const char *s = k->attrs; s && *s; i++) {
        size_t n = strcspn(s, ",");
        if (n == len && !memcmp(s, name, n))
            return (int)k->nmetrics + i;
        s += n;
        if (*s)
            s++;
    }
    return -1;
}

/* A `kind` record: id, name, metrics (comma-separated names of metrics declared before),
 * attrs (names of the values after the metrics', which are not metrics). */
static int declare_kind(interp_t *in, exp_record_t *r)
{
    exp_process_t *p = in->p;
    const char *ids = exp_record_get(r, EXP_KEY_ID);
    uint64_t id = exp_record_u64(r, EXP_KEY_ID, UINT64_MAX);
    char *name = get_str(r, EXP_KEY_NAME), *list = get_str(r, EXP_KEY_METRICS);
    exp_kind_t k = { .id = (uint32_t)id, .name = name };
    const char *why = NULL;
    if (!ids || id > EXP_KIND_MAXID)
        why = "its id is not a number from 0 to 65535";
    else if (!exp_decl_name_ok(name))
        why = "its name is not 1 to 63 characters of a-z, 0-9, _ and - starting with a letter";
    for (size_t i = 0; i < p->nkinds && !why; i++)
        if (p->kinds[i].id == k.id)
            why = "a kind with that id was declared before";
    char one[64];
    for (const char *s = list; *s && !why;) {
        size_t n = strcspn(s, ",");
        long m = -1;
        if (n < sizeof one) {
            memcpy(one, s, n);
            one[n] = 0;
            m = find_metric(p, one);
        }
        if (m < 0)
            why = "it names a metric that was not declared before it";
        else if (k.nmetrics == EXP_KIND_MAXVALUES)
            why = "it has more than 16 metrics";
        else
            k.metric[k.nmetrics++] = (uint32_t)m;
        s += n;
        if (*s)
            s++;
    }
    /* attributes: names as a metric's, after the metrics, 16 values in all */
    k.attrs = get_str(r, EXP_KEY_ATTRS);
    for (const char *s = k.attrs; *s && !why;) {
        size_t n = strcspn(s, ",");
        if (n >= sizeof one) {
            why = "an attribute's name is too long";
            break;
        }
        memcpy(one, s, n);
        one[n] = 0;
        if (!exp_decl_name_ok(one))
            why = "an attribute's name is not 1 to 63 characters of a-z, 0-9, _ and - starting "
                  "with a letter";
        else if (k.nmetrics + k.nattrs == EXP_KIND_MAXVALUES)
            why = "it has more than 16 metrics and attributes";
        else
            k.nattrs++;
        s += n;
        if (*s)
            s++;
    }
    if (why)
        return add_warning(p, "log line %u: record kind '%s' is not used: %s", r->line, name,
                           why);
    if (GROW(p->kinds, p->nkinds, in->kcap))
        return TALLY_ENOMEM;
    p->kinds[p->nkinds++] = k;
    return 0;
}

static int interpret_record(interp_t *in, exp_record_t *r, int *seen_settings)
{
    exp_process_t *p = in->p;
    const char *k = r->kind;
    uint64_t t = exp_record_u64(r, EXP_KEY_T, 0);
    if (t > p->t_end && t != EXP_T_NEVER)
        p->t_end = t;
    if (!strcmp(k, EXP_LOG_START)) {
        if (p->has_start)
            return duplicate(p, r);
        p->has_start = 1;
        p->t_start = t;
        p->real_start = exp_record_u64(r, EXP_KEY_REAL, 0);
        p->pid = (uint32_t)exp_record_u64(r, EXP_KEY_PID, 0);
        p->ppid = (uint32_t)exp_record_u64(r, EXP_KEY_PPID, 0);
        p->ncpus = (uint32_t)exp_record_u64(r, EXP_KEY_NCPUS, 0);
        p->host = get_str(r, EXP_KEY_HOST);
        p->kernel = get_str(r, EXP_KEY_KERNEL);
        p->arch = get_str(r, EXP_KEY_ARCH);
        p->exe = get_str(r, EXP_KEY_EXE);
        p->cwd = get_str(r, EXP_KEY_CWD);
    } else if (!strcmp(k, EXP_LOG_SETTINGS)) {
        if (*seen_settings)
            return duplicate(p, r);
        *seen_settings = 1;
        const char *bad;
        if (exp_settings_from_log(&p->settings, record_get, r, &bad) &&
            add_warning(p, "log line %u: the settings record has a bad value for '%s' (taken as "
                        "its default)", r->line, bad))
            return TALLY_ENOMEM;
        p->has_settings = 1;
        p->clock_ns = p->settings.clock_ns;
        p->clock_source = get_str(r, EXP_KEY_CLOCK_SOURCE);
        p->sync_on = p->settings.sync.mode != EXP_SYNC_OFF;
        p->sync_ns = p->settings.sync.ns;
        p->sync_calibrated = exp_record_u64(r, EXP_KEY_SYNC_CALIBRATED, 0) != 0;
        p->sync_calibration = exp_record_u64(r, EXP_KEY_SYNC_CALIBRATION, 0);
        p->heap_on = p->settings.heap;
        p->io_on = p->settings.io;
    } else if (!strcmp(k, EXP_LOG_THREAD)) {
        uint32_t tid = (uint32_t)exp_record_u64(r, EXP_KEY_TID, 0);
        exp_thread_t *th = find_thread(in, tid);
        if (!th || th->t_end != EXP_T_NEVER)
            th = add_thread(in, tid); /* tids are reused after a thread ends */
        if (!th)
            return TALLY_ENOMEM;
        th->t_start = t;
        th->name = get_str(r, EXP_KEY_NAME);
        th->how = get_str(r, EXP_KEY_HOW);
        th->stack_lo = exp_record_u64(r, EXP_KEY_STACK_LO, 0);
        th->stack_hi = exp_record_u64(r, EXP_KEY_STACK_HI, 0);
        if (th->stack_hi <= th->stack_lo)
            th->stack_lo = th->stack_hi = 0;
    } else if (!strcmp(k, EXP_LOG_THREAD_END)) {
        uint32_t tid = (uint32_t)exp_record_u64(r, EXP_KEY_TID, 0);
        exp_thread_t *th = find_thread(in, tid);
        if (!th) {
            if (!(th = add_thread(in, tid)))
                return TALLY_ENOMEM;
            th->how = "unknown";
        }
        th->t_end = t;
        th->cpu = exp_record_u64(r, EXP_KEY_CPU, 0);
        th->user = exp_record_u64(r, EXP_KEY_USER, 0);
        th->system = exp_record_u64(r, EXP_KEY_SYSTEM, 0);
        th->samples = exp_record_u64(r, EXP_KEY_SAMPLES, 0);
    } else if (!strcmp(k, EXP_LOG_LOAD)) {
        uint32_t id = (uint32_t)exp_record_u64(r, EXP_KEY_ID, 0);
        if (GROW(p->objects, p->nobjects, in->ocap) ||
            u64map_put(&in->objects, id, (uint32_t)p->nobjects))
            return TALLY_ENOMEM;
        exp_object_t *o = &p->objects[p->nobjects++];
        o->id = id;
        if (!(o->path = load_path(p, r)) || !(o->buildid = load_buildid(p, r, o->path)))
            return TALLY_ENOMEM;
        o->bias = exp_record_u64(r, EXP_KEY_BIAS, 0);
        o->lo = exp_record_u64(r, EXP_KEY_LO, 0);
        o->hi = exp_record_u64(r, EXP_KEY_HI, 0);
        o->tls_below = exp_record_u64(r, EXP_KEY_TLS, 0);
        o->t_load = t;
        o->t_unload = EXP_T_NEVER;
    } else if (!strcmp(k, EXP_LOG_UNLOAD)) {
        const uint32_t *j = u64map_get(&in->objects, (uint32_t)exp_record_u64(r, EXP_KEY_ID, 0));
        if (j && p->objects[*j].t_unload == EXP_T_NEVER)
            p->objects[*j].t_unload = t;
    } else if (!strcmp(k, EXP_LOG_SAMPLE)) {
        if (GROW(p->samples, p->nsamples, in->scap))
            return TALLY_ENOMEM;
        exp_sample_t *s = &p->samples[p->nsamples++];
        s->id = (uint32_t)exp_record_u64(r, EXP_KEY_ID, p->nsamples - 1);
        s->t = t;
        s->reason = get_str(r, EXP_KEY_REASON);
        s->label = get_str(r, EXP_KEY_LABEL);
        s->utime = exp_record_u64(r, EXP_KEY_UTIME, 0);
        s->stime = exp_record_u64(r, EXP_KEY_STIME, 0);
        s->minflt = exp_record_u64(r, EXP_KEY_MINFLT, 0);
        s->majflt = exp_record_u64(r, EXP_KEY_MAJFLT, 0);
        s->inblock = exp_record_u64(r, EXP_KEY_INBLOCK, 0);
        s->oublock = exp_record_u64(r, EXP_KEY_OUBLOCK, 0);
        s->nvcsw = exp_record_u64(r, EXP_KEY_NVCSW, 0);
        s->nivcsw = exp_record_u64(r, EXP_KEY_NIVCSW, 0);
        s->maxrss = exp_record_u64(r, EXP_KEY_MAXRSS, 0);
        s->rss = exp_record_u64(r, EXP_KEY_RSS, 0);
        s->rchar = exp_record_u64(r, EXP_KEY_RCHAR, 0);
        s->wchar = exp_record_u64(r, EXP_KEY_WCHAR, 0);
    } else if (!strcmp(k, EXP_LOG_PAUSE) || !strcmp(k, EXP_LOG_RESUME)) {
        if (GROW(p->pauses, p->npauses, in->pcap))
            return TALLY_ENOMEM;
        p->pauses[p->npauses].t = t;
        p->pauses[p->npauses++].paused = !strcmp(k, EXP_LOG_PAUSE);
    } else if (!strcmp(k, EXP_LOG_STATS)) {
        p->has_stats = 1; /* (one per process image: a repeated one replaces it) */
        p->st_samples = exp_record_u64(r, EXP_KEY_SAMPLES, 0);
        p->st_expected = exp_record_u64(r, EXP_KEY_EXPECTED, 0);
        p->st_unwind_failures = exp_record_u64(r, EXP_KEY_UNWIND_FAILURES, 0);
        p->st_dropped_busy = exp_record_u64(r, EXP_KEY_DROPPED_BUSY, 0);
        p->st_dropped_disk = exp_record_u64(r, EXP_KEY_DROPPED_DISK, 0);
        p->st_truncated_stacks = exp_record_u64(r, EXP_KEY_TRUNCATED_STACKS, 0);
        p->st_unwind_no_room = exp_record_u64(r, EXP_KEY_UNWIND_NO_ROOM, 0);
        p->st_ring_lost = exp_record_u64(r, EXP_KEY_RING_LOST, 0);
        p->st_dropped_heap = exp_record_u64(r, EXP_KEY_TRACE_DROPPED_HEAP, 0);
        p->st_dropped_io = exp_record_u64(r, EXP_KEY_TRACE_DROPPED_IO, 0);
        p->st_dropped_sync = exp_record_u64(r, EXP_KEY_TRACE_DROPPED_SYNC, 0);
        uint64_t all = exp_record_u64(r, EXP_KEY_TRACE_DROPPED, 0),
                 known = p->st_dropped_heap + p->st_dropped_io + p->st_dropped_sync;
        p->st_dropped_traced = all > known ? all - known : 0;
        p->st_dropped_api = exp_record_u64(r, EXP_KEY_TRACE_DROPPED_API, 0);
        p->st_disk_full = exp_record_u64(r, EXP_KEY_DISK_FULL, 0) != 0 || p->st_dropped_disk;
        p->st_has_sampler_cpu = exp_record_get(r, EXP_KEY_SAMPLER_CPU) != NULL;
        p->st_sampler_cpu = exp_record_u64(r, EXP_KEY_SAMPLER_CPU, 0);
    } else if (!strcmp(k, EXP_LOG_WARNING)) {
        return add_warning(p, "%s", get_str(r, EXP_KEY_WHAT));
    } else if (!strcmp(k, EXP_LOG_METRIC)) {
        return declare_metric(in, r);
    } else if (!strcmp(k, EXP_LOG_KIND)) {
        return declare_kind(in, r);
    } else if (!strcmp(k, EXP_LOG_COUNTER)) {
        return declare_counter(in, r);
    } else if (!strcmp(k, EXP_LOG_COUNTER_STATS)) {
        return counter_stats(in, r);
    } else if (!strcmp(k, EXP_LOG_MPI)) {
        uint64_t rank = exp_record_u64(r, EXP_KEY_RANK, UINT64_MAX);
        if (rank < UINT64_MAX && !p->mpi_rank1) {
            p->mpi_rank1 = rank + 1;
            p->mpi_size = exp_record_u64(r, EXP_KEY_SIZE, 0);
            p->mpi_launcher = get_str(r, EXP_KEY_LAUNCHER);
            p->mpi_job = get_str(r, EXP_KEY_JOB);
        }
    } else if (!strcmp(k, EXP_LOG_JOB)) {
        p->is_job = 1;
        p->mpi_size = exp_record_u64(r, EXP_KEY_SIZE, 0);
        p->mpi_launcher = get_str(r, EXP_KEY_LAUNCHER);
        p->mpi_job = get_str(r, EXP_KEY_JOB);
    } else if (!strcmp(k, EXP_LOG_END)) {
        p->has_end = 1; /* the last one is used */
        p->end_how = get_str(r, EXP_KEY_HOW);
        p->end_signame = get_str(r, EXP_KEY_NAME);
        p->end_status = (int)exp_record_u64(r, EXP_KEY_STATUS, 0);
        p->end_signal = (int)exp_record_u64(r, EXP_KEY_SIGNAL, 0);
    }
    return 0;
}

/* Interprets the records of a process into its typed fields. 0 or TALLY_ENOMEM. */
static int interpret(exp_process_t *p)
{
    interp_t in = { .p = p };
    int seen_settings = 0, rc = 0;
    p->host = p->kernel = p->arch = p->exe = p->cwd = p->clock_source = empty_str;
    p->end_how = p->end_signame = empty_str;
    for (size_t i = 0; i < p->nrecords && !rc; i++)
        rc = interpret_record(&in, &p->records[i], &seen_settings);
    u64map_free(&in.threads);
    u64map_free(&in.objects);
    if (rc)
        return rc;
    if (!p->has_start) { /* the earliest time the log knows, other than its end */
        uint64_t t0 = 0;
        for (size_t i = 0; i < p->nrecords; i++) {
            uint64_t t = exp_record_u64(&p->records[i], EXP_KEY_T, 0);
            if (t && t != EXP_T_NEVER && (!t0 || t < t0) && strcmp(p->records[i].kind, EXP_LOG_END))
                t0 = t;
        }
        p->t_start = t0;
    }
    if (mapping_generations(p))
        return TALLY_ENOMEM;
    /* packets from several threads reach the log in the order they were written, which is not
     * always the order of their times: sort by time (then by id, their order of taking) */
    if (p->nsamples) /* p->samples is NULL when there are none */
        qsort(p->samples, p->nsamples, sizeof *p->samples, cmp_samples);
    return 0;
}

/* Splits the raw cmdline line into argv; each argument is percent-decoded on its own. The
 * arguments are one allocation with the array (freeing p->argv frees them). */
static int parse_cmdline(exp_process_t *p, const char *raw)
{
    const char *v = strstr(raw, " argv=");
    if (!v)
        return 0;
    v += 6;
    size_t len = strlen(v), n = 1; /* the arguments, and one more */
    for (const char *c = v; *c; c++)
        n += *c != ' ' && (c == v || c[-1] == ' ');
    char **argv = malloc(n * sizeof *argv + len + 1);
    if (!argv)
        return TALLY_ENOMEM;
    char *copy = memcpy((char *)(argv + n), v, len + 1), *save = NULL;
    uint32_t argc = 0;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        exp_pct_decode(tok);
        argv[argc++] = tok;
    }
    p->argv = argv;
    p->argc = argc;
    return 0;
}

/* Reads a whole regular file (at most max bytes) into a NUL-terminated buffer. Returns 0,
 * -errno (see open_regular), or -EFBIG when it is larger than max. */
static int read_file(int dirfd, const char *name, size_t max, char **out, size_t *len)
{
    off_t size;
    int fd = open_regular(dirfd, name, &size);
    if (fd < 0)
        return fd;
    if (size < 0 || (uint64_t)size > max) {
        close(fd);
        return -EFBIG;
    }
    size_t want = (size_t)size, n = 0; /* read no more than fstat said (a file may grow) */
    char *buf = malloc(want + 1);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    while (n < want) {
        ssize_t r = read(fd, buf + n, want - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
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

/* The longest log read: far beyond any real one (a line per thread start and end, object and
 * sample packet), small enough to be held in memory with its records. */
#define LOG_MAX ((size_t)1 << 32)

static int parse_log(exp_process_t *p, int dirfd, tally_err_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/log", p->dir);
    char *buf = NULL;
    size_t len = 0;
    int rc = read_file(dirfd, "log", LOG_MAX, &buf, &len);
    if (rc == -ENOENT || rc == -ENOTDIR) {
        /* gprofng's experiments (x.1.er/) have log.xml and map.xml: say what it is */
        if (faccessat(dirfd, "log.xml", F_OK, AT_SYMLINK_NOFOLLOW) == 0 &&
            faccessat(dirfd, "map.xml", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
            return tally_errf(err, TALLY_ENOTEXP,
                              "'%s' is a gprofng experiment, not a tally one: analyse it with "
                              "'gprofng display text', or record the program again with 'tally "
                              "collect' (it takes gprofng's collect options)", p->dir);
        return tally_errf(err, TALLY_ENOTEXP, "'%s' is not an experiment (no log file)", p->dir);
    }
    if (rc == -ENOMEM)
        return tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", path);
    if (rc == -EFBIG)
        return tally_errf(err, TALLY_ECORRUPT, "'%s' is larger than %zu bytes: not a log tally "
                          "wrote", path, LOG_MAX);
    if (rc)
        return open_error(err, TALLY_EIO, path, rc);
    p->text = buf;
    if (memchr(buf, 0, len)) {
        /* A crash can leave a zero-filled tail; keep what precedes it. */
        len = strlen(buf);
        if (add_damage(p, TALLY_ECORRUPT, "log", len, "the log ends in zero bytes after offset "
                       "%zu (cut off by a crash?)", len))
            return tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", path);
    }
    char *nl = strchr(buf, '\n');
    if (!nl || strncmp(buf, EXP_LOG_MAGIC " ", sizeof EXP_LOG_MAGIC))
        return tally_errf(err, TALLY_ENOTEXP,
                          "'%s' is not an experiment (its log does not start with "
                          "'" EXP_LOG_MAGIC "')", p->dir);
    unsigned version = 0;
    if (sscanf(buf, EXP_LOG_MAGIC " version=%u", &version) != 1 || version == 0)
        return tally_errf(err, TALLY_ECORRUPT, "%s:1: bad first line", path);
    if (version > EXP_FORMAT_VERSION)
        return tally_errf(err, TALLY_EVERSION,
                          "'%s' was written in experiment format version %u; this tally reads "
                          "versions up to %u: use a newer tally", p->dir, version,
                          EXP_FORMAT_VERSION);
    size_t cap = 0, npool = 0, pool_cap = 0;
    uint32_t lineno = 1;
    for (char *line = nl + 1; *line && !rc; lineno++) {
        char *end = strchr(line, '\n');
        if (!end) {
            rc = add_damage(p, TALLY_ECORRUPT, "log", (uint64_t)(line - buf),
                            "%s:%u: the last line is incomplete (the process was cut off while "
                            "writing it); ignored", path, lineno + 1);
            break;
        }
        *end = 0;
        if ((size_t)(end - line) > EXP_LOG_LINE_MAX) {
            rc = add_damage(p, TALLY_ECORRUPT, "log", (uint64_t)(line - buf),
                            "%s:%u: a line of %zu bytes, longer than any tally writes; ignored",
                            path, lineno + 1, (size_t)(end - line));
        } else if (*line) {
            if (!strncmp(line, "cmdline ", 8) && !p->argv && (rc = parse_cmdline(p, line)))
                break;
            if (lineno == UINT32_MAX - 1 || GROW(p->records, p->nrecords, cap) ||
                parse_line(line, &p->records[p->nrecords], &p->fields, &npool, &pool_cap))
                rc = TALLY_ENOMEM;
            else
                p->records[p->nrecords++].line = lineno + 1;
        }
        line = end + 1;
    }
    /* the pool no longer moves: turn field indexes into pointers (no pool when no record has
     * a field: then they have none to point at) */
    for (size_t i = 0; i < p->nrecords; i++)
        p->records[i].fields = p->fields ? p->fields + (uintptr_t)p->records[i].fields : NULL;
    if (!rc)
        rc = interpret(p);
    if (rc)
        return tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", path);
    return 0;
}

/* ---- the process tree --------------------------------------------------------------------- */

uint64_t exp_mpi_rank_of(const exp_experiment_t *e, uint32_t proc)
{
    for (int32_t i = (int32_t)proc, n = 0; i >= 0 && (size_t)i < e->nprocs && n < EXP_MAX_DEPTH + 1;
         i = e->procs[i]->parent, n++)
        if (e->procs[i]->mpi_rank1)
            return e->procs[i]->mpi_rank1;
    return 0;
}

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
static uint64_t first_chunk_time(const exp_process_t *p);

/* A directory waiting to be read: its path, its name relative to the root, its parent. */
typedef struct pending {
    char *dir, *name;
    int32_t parent;
    uint32_t depth;
} pending_t;

/* The directories read so far, by (device, inode): a bind mount cannot make the walk loop. */
static int seen_before(u64map_t *seen, const struct stat *st, int *rc)
{
    int found;
    uint32_t *slot = u64map_slot(seen, (uint64_t)st->st_ino, &found);
    if (!slot) {
        *rc = TALLY_ENOMEM;
        return 0;
    }
    if (found && *slot == (uint32_t)st->st_dev)
        return 1;
    *slot = (uint32_t)st->st_dev;
    return 0;
}

/* Reads the process of one directory (opened as dfd) and queues its descendants, in reverse
 * order so that they are read _f1, _f2, ... and each before the next one's subtree. A
 * descendant's failure is its parent's damage; only the root's failure is an error. */
static int load_one(exp_experiment_t *e, pending_t *job, int dfd, pending_t **stack, size_t *nstack,
                    size_t *scap, size_t *pcap, tally_err_t *err)
{
    exp_process_t *p = calloc(1, sizeof *p);
    if (!p)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    p->dir = job->dir;
    p->name = job->name;
    job->dir = job->name = NULL;
    p->parent = job->parent;
    exp_settings_default(&p->settings);
    int rc = parse_log(p, dfd, err);
    if (!rc && GROW(e->procs, e->nprocs, *pcap))
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory");
    if (rc) {
        free_process(p);
        return rc;
    }
    p->index = (uint32_t)e->nprocs;
    e->procs[e->nprocs++] = p;

    int d2 = dup(dfd);
    DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
    if (!d) {
        if (d2 >= 0)
            close(d2);
        return 0;
    }
    char **names = NULL;
    size_t n = 0, ncap = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (!is_descendant_name(de->d_name))
            continue;
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            rc = add_damage(p, TALLY_ECORRUPT, "log", UINT64_MAX, "descendant %s%s%s is a "
                            "symbolic link; not followed (tally writes directories)", p->name,
                            *p->name ? "/" : "", de->d_name);
            continue;
        }
        if (!S_ISDIR(st.st_mode))
            continue;
        char *nm = dupstr(de->d_name);
        if (!nm || GROW(names, n, ncap)) {
            free(nm);
            rc = TALLY_ENOMEM;
            break;
        }
        names[n++] = nm;
    }
    closedir(d);
    if (!rc && n && job->depth + 1 >= EXP_MAX_DEPTH)
        rc = add_damage(p, TALLY_ECORRUPT, "log", UINT64_MAX, "more than %d levels of "
                        "descendants: %zu descendant(s) of %s were not read", EXP_MAX_DEPTH, n,
                        *p->name ? p->name : "the root");
    else if (!rc && n) /* names is NULL when there are none */
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = n; i-- > 0 && !rc && job->depth + 1 < EXP_MAX_DEPTH;) {
        pending_t c = { .parent = (int32_t)p->index, .depth = job->depth + 1 };
        if (asprintf(&c.dir, "%s/%s", p->dir, names[i]) < 0)
            c.dir = NULL;
        if (asprintf(&c.name, "%s%s%s", p->name, *p->name ? "/" : "", names[i]) < 0)
            c.name = NULL;
        if (!c.dir || !c.name || GROW(*stack, *nstack, *scap)) {
            free(c.dir);
            free(c.name);
            rc = TALLY_ENOMEM;
            break;
        }
        (*stack)[(*nstack)++] = c;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc ? tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", p->dir) : 0;
}

/* Reads the root and its descendants depth first, without recursion. */
static int load_tree(exp_experiment_t *e, const char *root, tally_err_t *err)
{
    pending_t *stack = NULL;
    size_t nstack = 0, scap = 0, pcap = 0;
    u64map_t seen = { 0 };
    int rc = GROW(stack, 0, scap);
    if (!rc) {
        stack[0] = (pending_t){ dupstr(root), dupstr(""), -1, 0 };
        nstack = 1;
        if (!stack[0].dir || !stack[0].name)
            rc = TALLY_ENOMEM;
    }
    if (rc)
        tally_errf(err, rc, "out of memory");
    while (!rc && nstack) {
        pending_t job = stack[--nstack];
        int dfd = open(job.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (job.parent < 0 ? 0 :
                       O_NOFOLLOW));
        struct stat st;
        int loop = 0;
        if (dfd >= 0 && fstat(dfd, &st) == 0)
            loop = seen_before(&seen, &st, &rc);
        if (rc) {
            tally_errf(err, rc, "out of memory");
        } else if (job.parent < 0 && dfd < 0) {
            rc = tally_errf(err, errno == ENOENT ? TALLY_ENOTFOUND : TALLY_EIO,
                            "cannot open experiment '%s': %s", job.dir, strerror(errno));
        } else if (dfd < 0 || loop) {
            exp_process_t *parent = e->procs[job.parent];
            if (dfd < 0)
                rc = add_damage(parent, TALLY_EIO, "log", UINT64_MAX, "descendant %s was not "
                                "read: %s", job.name, strerror(errno));
            else
                rc = add_damage(parent, TALLY_ECORRUPT, "log", UINT64_MAX, "descendant %s was "
                                "not read: it is a directory already read (a bind mount?)",
                                job.name);
            if (rc)
                tally_errf(err, rc, "out of memory");
        } else {
            tally_err_t sub_err = { 0 };
            int32_t parent = job.parent;
            char name[1024];
            snprintf(name, sizeof name, "%s", job.name);
            rc = load_one(e, &job, dfd, &stack, &nstack, &scap, &pcap,
                          parent < 0 ? err : &sub_err);
            if (rc && parent >= 0 && rc != TALLY_ENOMEM) /* a descendant's failure: damage */
                rc = add_damage(e->procs[parent], sub_err.code, "log", UINT64_MAX,
                                "descendant %s was not read: %s", name, sub_err.msg);
            else if (rc && parent >= 0)
                *err = sub_err;
        }
        if (dfd >= 0)
            close(dfd);
        free(job.dir);
        free(job.name);
    }
    for (size_t i = 0; i < nstack; i++) {
        free(stack[i].dir);
        free(stack[i].name);
    }
    free(stack);
    u64map_free(&seen);
    return rc;
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
    if (!e || !(e->path = dupstr(path))) {
        free(e);
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    }
    int rc = load_tree(e, path, err);
    for (size_t i = 0; !rc && i < e->nprocs; i++)
        if (!e->procs[i]->t_start)
            e->procs[i]->t_start = first_chunk_time(e->procs[i]);
    if (rc) {
        exp_close(e);
        return rc;
    }
    *out = e;
    return 0;
}

static void free_process(exp_process_t *p)
{
    free(p->records);
    free(p->fields);
    free(p->text);
    free(p->threads);
    free(p->objects);
    free(p->gen_t);
    free(p->notes);
    for (size_t i = 0; i < p->nowned; i++)
        free(p->owned[i]);
    free(p->owned);
    free(p->samples);
    free(p->pauses);
    free(p->metrics);
    free(p->kinds);
    free(p->counters);
    free(p->argv);
    for (size_t i = 0; i < p->nwarnings; i++)
        free(p->warnings[i]);
    free(p->warnings);
    free(p->damage);
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
    /* finished with the process's secret seed (u64map_hash): frames an experiment chooses
     * cannot make stacks start probing at one slot (the multiplications carry upwards only:
     * frames differing in their high bits alone had the same low bits) */
    return u64map_hash(h);
}

static int table_rehash(exp_stacks_t *s)
{
    size_t size = s->table_size ? s->table_size * 2 : 1024;
    uint32_t *t = calloc(size, sizeof *t);
    if (!t)
        return TALLY_ENOMEM;
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
    return 0;
}

int64_t exp_stacks_intern(exp_stacks_t *s, uint32_t proc, const uint64_t *pcs, uint32_t n,
                          uint32_t flags)
{
    return exp_stacks_intern_gen(s, proc, 0, pcs, n, flags);
}

int64_t exp_stacks_intern_gen(exp_stacks_t *s, uint32_t proc, uint32_t gen, const uint64_t *pcs,
                              uint32_t n, uint32_t flags)
{
    if ((s->count + 1) * 2 > s->table_size && table_rehash(s))
        return -1;
    size_t j = stack_hash(proc, pcs, n, flags, gen) & (s->table_size - 1);
    for (; s->table[j]; j = (j + 1) & (s->table_size - 1)) {
        const struct stack_meta *m = &s->meta[s->table[j] - 1];
        if (m->n == n && m->flags == flags && m->proc == proc && m->gen == gen &&
            (n == 0 || !memcmp(s->frames + m->off, pcs, (size_t)n * sizeof *pcs)))
            return s->table[j] - 1;
    }
    if (s->count >= UINT32_MAX - 1)
        return -1;
    if (s->nframes + n > s->frames_cap || !s->frames) { /* never NULL: frames + off is used */
        size_t cap = s->frames_cap ? s->frames_cap : 4096;
        while (cap < s->nframes + n)
            cap *= 2;
        uint64_t *f = cap <= SIZE_MAX / sizeof *f ? realloc(s->frames, cap * sizeof *f) : NULL;
        if (!f)
            return -1;
        s->frames = f;
        s->frames_cap = cap;
    }
    if (GROW(s->meta, s->count, s->meta_cap))
        return -1;
    if (n) /* an empty stack first: s->frames and pcs may both be NULL */
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

/* Reading a chunk's header maps the pages around it too (the kernel's fault-around): the
 * passes over headers drop what they mapped every HEADER_DROP bytes, so that a pass over a file
 * of gigabytes holds a few megabytes of it. */
#define HEADER_DROP (4u << 20)
static void drop_pages(const uint8_t *m, uint64_t from, uint64_t to)
{
    from &= ~(uint64_t)4095;
    if (to > from)
        madvise((void *)(m + from), to - from, MADV_DONTNEED);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* The smallest STACK record (type, length, id, flags, n = 0): a stream of B bytes of records
 * defines fewer than B / 5 + 1 stack ids, so no id read from it may be larger. */
#define MIN_STACK_RECORD 5

/* Per-stream decoding state: local stack id -> global id. */
struct thread_state {
    uint32_t *map;
    size_t n, cap, max_ids; /* max_ids: what the stream's bytes can define */
    uint64_t *frames;       /* scratch for decoding */
    size_t frames_cap;
    uint32_t cpu; /* from the stream's last CPU record */
};

#define NO_STACK UINT32_MAX

struct intern_log;

/* What a scan of one process shares between its streams. */
struct scan {
    exp_stacks_t *stacks;
    exp_scan_stats_t *st;
    uint32_t proc;
    int oom; /* memory ran out: the scan stops with TALLY_ENOMEM */
    struct intern_log *log; /* exp_scan_parallel: where each STACK record is noted */
};

/* Notes the first damage of the scan: where it is and what. */
static void damage_at(struct scan *sc, uint64_t off, const char *what)
{
    if (sc->st->bad_offset == UINT64_MAX) {
        sc->st->bad_proc = sc->proc;
        sc->st->bad_offset = off;
        sc->st->bad_what = what;
    }
}

/* Decodes a STACK record. 0, 1 for a malformed one, TALLY_ENOMEM. */
static int decode_stack(struct thread_state *ts, struct scan *sc, const uint8_t *p,
                        const uint8_t *end, uint32_t *gid)
{
    uint64_t id, flags, n, first;
    if (leb128_get(&p, end, &id) || leb128_get(&p, end, &flags) || leb128_get(&p, end, &n))
        return 1;
    if (n > (uint64_t)(end - p) || id >= ts->max_ids || flags > UINT32_MAX)
        return 1; /* every frame takes at least one byte; ids are bounded by the stream */
    if (n > ts->frames_cap) {
        uint64_t *f = realloc(ts->frames, n * sizeof *ts->frames);
        if (!f)
            return TALLY_ENOMEM;
        ts->frames = f;
        ts->frames_cap = n;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (i == 0) {
            if (leb128_get(&p, end, &first))
                return 1;
            ts->frames[0] = first;
        } else {
            int64_t d;
            if (leb128_get_signed(&p, end, &d))
                return 1;
            ts->frames[i] = ts->frames[i - 1] + (uint64_t)d;
        }
    }
    if (id >= ts->cap) {
        size_t ncap = ts->cap ? ts->cap : 256;
        while (ncap <= id)
            ncap *= 2;
        if (ncap > ts->max_ids)
            ncap = ts->max_ids;
        uint32_t *m = realloc(ts->map, ncap * sizeof *m);
        if (!m)
            return TALLY_ENOMEM;
        for (size_t i = ts->cap; i < ncap; i++)
            m[i] = NO_STACK;
        ts->map = m;
        ts->cap = ncap;
    }
    int64_t g = exp_stacks_intern(sc->stacks, sc->proc, ts->frames, (uint32_t)n, (uint32_t)flags);
    if (g < 0)
        return TALLY_ENOMEM;
    ts->map[id] = (uint32_t)g;
    if (id >= ts->n)
        ts->n = id + 1;
    *gid = (uint32_t)g;
    return 0;
}

/* A stream being decoded: its chunks in seq order, the position in the current one, and the
 * next event it has to deliver. The streams of a process are merged by the time of that event. */
struct cursor {
    const struct chunk_ref *refs;
    size_t nrefs, next;     /* chunks of the stream; next: index of the next one to load */
    const uint8_t *map;     /* the events file */
    size_t size;            /* its size */
    int fd;                 /* the file open for reading chunks into buf (-1: chunks are read
                               where they are mapped; cursor_read) */
    uint8_t *buf;           /* with fd: the current chunk */
    const uint8_t *chunk;   /* the current chunk (in map or buf) and its offset in the file */
    uint64_t chunk_off;
    int mapped;             /* the current chunk was read from map (its pages are dropped) */
    uint32_t csize, stream, tid;
    const uint8_t *p, *end; /* records left in the current chunk */
    uint64_t t, addr;       /* time and heap address of the chunk's previous records */
    const uint8_t *pk, *pkend; /* inside a HEAP_PACK: its next packed record and its end (p is
                                  then end, so that clock_fast leaves it to cursor_next), */
    const uint8_t *resume;     /* and the record after it; pk NULL: outside */
    struct thread_state ts;
    struct scan *sc;
    const exp_process_t *pr;
    uint32_t gen;     /* the mapping generation genmap is for (0: none yet) */
    uint32_t *genmap; /* local stack id -> global id of the stack in generation gen */
    size_t ngenmap;
    exp_event_t ev; /* the next event */
    uint64_t values[EXP_KIND_MAXVALUES]; /* ev.values of a TRACE event */
    exp_memref_t mref;                   /* ev.mref of a MEMREF event */
    uint64_t regs[EXP_CTR_NREGS];        /* ev.regs of a COUNTER event */
    int ev_clock; /* ev holds a CLOCK event of clock_fast: every other field at its default */
    uint64_t delivered, last_t; /* exp_scan_parallel: events so far, the time of the last one */
    uint32_t nlogged;           /* exp_scan_parallel: STACK records noted so far */
};

/* exp_scan_parallel: the STACK records a worker decoded, each with its place in the serial scan:
 * a stream's records before its first event are interned at the start of the process, stream by
 * stream; the others right after the stream's event before them was delivered. */
struct intern_entry {
    uint32_t proc, stream, initial; /* initial: 0 before the first event, else 1 */
    uint32_t seq;                   /* order in the stream */
    uint64_t t;                     /* the time of the event before it */
    uint32_t worker, id;            /* the worker's provisional stack id (its worker: see
                                       intern_log) */
};

/* The first place of each provisional id (v[id]; worker 0: not seen): interning a stack again
 * changes nothing, so the first record of a stack is the one that gives it its id. */
struct intern_log {
    struct intern_entry *v;
    size_t n, cap;
};

static int cmp_intern(const void *a, const void *b);

static int log_intern(struct intern_log *lg, struct intern_entry e)
{
    if (e.id >= lg->cap) {
        size_t ncap = lg->cap ? 2 * lg->cap : 1024;
        while (ncap <= e.id)
            ncap *= 2;
        struct intern_entry *v = realloc(lg->v, ncap * sizeof *v);
        if (!v)
            return TALLY_ENOMEM;
        memset(v + lg->cap, 0, (ncap - lg->cap) * sizeof *v);
        lg->v = v;
        lg->cap = ncap;
    }
    if (e.id >= lg->n)
        lg->n = e.id + 1;
    if (!lg->v[e.id].worker || cmp_intern(&e, &lg->v[e.id]) < 0)
        lg->v[e.id] = e;
    return 0;
}

/* The offset in the events file of rec, a byte of the cursor's current chunk. */
static inline uint64_t cursor_off(const struct cursor *c, const uint8_t *rec)
{
    return c->chunk_off + (uint64_t)(rec - c->chunk);
}

/* The largest chunk cursor_read copies (a chunk may be up to 1 GiB: larger ones are read where
 * they are mapped). */
#define READ_CHUNK_MAX (1u << 20)

/* The chunk at off read into the cursor's buffer: a copy by pread costs less than mapping its
 * pages (page faults, and dropping them again, which interrupts every CPU the scan's threads
 * run on to flush their TLBs), and keeps nothing resident. NULL when the chunk is to be read
 * where it is mapped (no descriptor, a large chunk, no memory, a read that failed). */
static const uint8_t *cursor_read(struct cursor *c, uint64_t off)
{
    if (c->fd < 0 || c->csize > READ_CHUNK_MAX)
        return NULL;
    if (!c->buf && !(c->buf = malloc(c->csize)))
        return NULL;
    size_t want = c->size - off < c->csize ? (size_t)(c->size - off) : c->csize, got = 0;
    while (got < want) {
        ssize_t n = pread(c->fd, c->buf + got, want - got, (off_t)(off + got));
        if (n <= 0 && !(n < 0 && errno == EINTR))
            return NULL;
        got += n > 0 ? (size_t)n : 0;
    }
    return c->buf;
}

/* Loads the cursor's next chunk; returns 0 when the stream has none left. A chunk the file ends
 * inside is read as far as the file goes. */
static int cursor_load(struct cursor *c)
{
    exp_scan_stats_t *st = c->sc->st;
    if (c->next > 0 && c->mapped) { /* done with the previous chunk, read where it is mapped:
                          its pages leave the resident set, so memory grows with what is kept
                          (the stacks), not with the file; and the neighbours' pages the kernel
                          mapped around it (fault-around: up to 64 KiB aligned in memory, not
                          to chunks), which would otherwise stay once their own stream is past
                          them (another one may fault them in again, from the page cache) */
        uint64_t prev = c->refs[c->next - 1].off, lo = prev > 65536 ? prev - 65536 : 0;
        uint64_t hi = prev + c->csize + 65536;
        drop_pages(c->map, lo, hi < c->size ? hi : c->size);
    }
    if (c->next >= c->nrefs)
        return 0;
    const struct chunk_ref *r = &c->refs[c->next];
    if (c->next == 0 ? r->seq != 0 : r->seq != c->refs[c->next - 1].seq + 1)
        st->seq_gaps++;
    c->next++;
    const uint8_t *ch = cursor_read(c, r->off);
    c->mapped = !ch;
    if (!ch)
        ch = c->map + r->off;
    c->chunk = ch;
    c->chunk_off = r->off;
    uint32_t used = get_le32(ch + 12), room = c->csize - EXP_CHUNK_HEADER_SIZE;
    if (r->off + c->csize > c->size) { /* the file was cut inside this chunk */
        st->bad_chunks++;
        damage_at(c->sc, r->off, "a chunk cut short by the end of the file");
        room = (uint32_t)(c->size - r->off - EXP_CHUNK_HEADER_SIZE);
        if (used > room)
            used = room;
    }
    if (used > room) {
        st->bad_chunks++;
        damage_at(c->sc, r->off + 12, "a chunk whose used size is larger than the chunk");
        used = room;
    }
    c->t = get_le64(ch + 16);
    c->addr = 0;
    c->p = ch + EXP_CHUNK_HEADER_SIZE;
    c->end = c->p + used;
    c->tid = r->tid;
    return 1;
}

/* The global id of the empty stack of a process, for events whose stack was lost. */
static uint32_t lost_stack(struct scan *sc)
{
    int64_t g = exp_stacks_intern(sc->stacks, sc->proc, NULL, 0, EXP_STACK_UNWIND_FAIL);
    if (g < 0) {
        sc->oom = 1;
        return 0;
    }
    return (uint32_t)g;
}

/* The global id of stack g (stream-local id) in the mapping generation of the cursor's event:
 * the same addresses in another generation are other code (a library unloaded and another one
 * loaded at its addresses), so another stack. Generation 0, the only one of most processes,
 * keeps g. */
static uint32_t in_generation(struct cursor *c, uint64_t id, uint32_t g)
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
    exp_stacks_t *stacks = c->sc->stacks;
    uint32_t n, flags, proc;
    const uint64_t *pcs = exp_stacks_get(stacks, g, &n, &flags, &proc);
    if (n > c->ts.frames_cap) {
        uint64_t *f = realloc(c->ts.frames, n * sizeof *c->ts.frames);
        if (!f) {
            c->sc->oom = 1;
            return g;
        }
        c->ts.frames = f;
        c->ts.frames_cap = n;
    }
    if (n) /* interning may move the frames; an empty stack has no frames, maybe no array */
        memcpy(c->ts.frames, pcs, (size_t)n * sizeof *pcs);
    int64_t ng = exp_stacks_intern_gen(stacks, proc, gen, c->ts.frames, n, flags);
    if (ng < 0) {
        c->sc->oom = 1;
        return g;
    }
    if (id >= c->ngenmap) {
        size_t old = c->ngenmap, nn = old ? 2 * old : 256;
        while (nn <= id)
            nn *= 2;
        uint32_t *m = realloc(c->genmap, nn * sizeof *m);
        if (!m) {
            c->sc->oom = 1;
            return g;
        }
        for (size_t i = old; i < nn; i++)
            m[i] = NO_STACK;
        c->genmap = m;
        c->ngenmap = nn;
    }
    c->genmap[id] = (uint32_t)ng;
    return (uint32_t)ng;
}

/* The global id of a stream-local stack id, or the lost stack when it was never defined. */
__attribute__((cold, noinline)) static uint32_t undefined_stack(struct cursor *c,
                                                                const uint8_t *rec)
{
    c->sc->st->bad_records++;
    damage_at(c->sc, cursor_off(c, rec), "a record with an undefined stack id");
    return lost_stack(c->sc);
}

/* (inline, the damage apart: it runs for every event; a call cost 28 instructions an event) */
static inline uint32_t map_stack(struct cursor *c, uint64_t id, const uint8_t *rec)
{
    if (__builtin_expect(id < c->ts.n && c->ts.map[id] != NO_STACK, 1))
        return c->pr->ngens > 1 ? in_generation(c, id, c->ts.map[id]) : c->ts.map[id];
    return undefined_stack(c, rec);
}

/* ---- record decoders: one function per record type, found through a table -------------------- */

/* A decoder reads the payload of a timed record (after its dt: q to rend) into c->ev, which
 * holds the defaults (no stack, zeros, fd -1). Returns 0 for an event, 2 for a record that is not
 * one, -1 for a malformed record. rec is the record's first byte (for damage offsets). */
typedef int (*decode_fn)(struct cursor *c, uint8_t type, const uint8_t *q, const uint8_t *rend,
                         const uint8_t *rec);

/* The optional runtime state that ends a CLOCK or STATE record (EXP_RSTATE_NONE when absent or
 * beyond any kind id + 1; a value naming no declared kind is kept, the engine finds none). */
static inline int rstate_get(const uint8_t *q, const uint8_t *rend, exp_event_t *ev)
{
    uint64_t r;
    if (q >= rend)
        return 0;
    if (leb128_get(&q, rend, &r))
        return -1;
    ev->rstate = r <= EXP_KIND_MAXID + 1u ? (uint32_t)r : EXP_RSTATE_NONE;
    return 0;
}

/* STATE: another thread's state, delivered as its CLOCK event. */
static int decode_state(struct cursor *c, uint8_t type, const uint8_t *q, const uint8_t *rend,
                        const uint8_t *rec)
{
    (void)type;
    exp_event_t *ev = &c->ev;
    uint64_t a, b, d, e;
    if (leb128_get(&q, rend, &e) || leb128_get(&q, rend, &a) || leb128_get(&q, rend, &b) ||
        leb128_get(&q, rend, &d))
        return -1;
    ev->type = EXP_REC_CLOCK;
    ev->tid = (uint32_t)e;
    ev->cpu = UINT32_MAX;
    ev->stack = map_stack(c, a, rec);
    ev->state = (uint32_t)(b < EXP_STATE_COUNT ? b : UINT32_MAX);
    ev->weight = d;
    ev->count = 1;
    return rstate_get(q, rend, ev);
}

/* CPU: no event; the CPU of the events that follow. */
static int decode_cpu(struct cursor *c, uint8_t type, const uint8_t *q, const uint8_t *rend,
                      const uint8_t *rec)
{
    (void)type, (void)rec;
    uint64_t a;
    if (leb128_get(&q, rend, &a))
        return -1;
    c->ts.cpu = a < UINT32_MAX ? (uint32_t)a : UINT32_MAX;
    return 2;
}

static inline __attribute__((always_inline)) int decode_clock(struct cursor *c, uint8_t type,
                                                             const uint8_t *q, const uint8_t *rend,
                                                             const uint8_t *rec)
{
    (void)type;
    exp_event_t *ev = &c->ev;
    uint64_t a, b, d;
    if (leb128_get(&q, rend, &a) || leb128_get(&q, rend, &b) || leb128_get(&q, rend, &d))
        return -1;
    ev->stack = map_stack(c, a, rec);
    ev->state = (uint32_t)(b < EXP_STATE_COUNT ? b : UINT32_MAX);
    ev->weight = d;
    ev->count = 1;
    return q < rend ? rstate_get(q, rend, ev) : 0;
}

static int decode_lost(struct cursor *c, uint8_t type, const uint8_t *q, const uint8_t *rend,
                       const uint8_t *rec)
{
    (void)type, (void)rec;
    exp_event_t *ev = &c->ev;
    exp_scan_stats_t *st = c->sc->st;
    uint64_t a, b;
    if (leb128_get(&q, rend, &a) || leb128_get(&q, rend, &b))
        return -1;
    ev->stack = 0;
    ev->count = a;
    ev->reason = (uint32_t)(b < EXP_LOST_NREASONS ? b : EXP_LOST_NOSTACK);
    st->lost[ev->reason] = sat_add(st->lost[ev->reason], a);
    return 0;
}

static int decode_sync(struct cursor *c, uint8_t type, const uint8_t *q, const uint8_t *rend,
                       const uint8_t *rec)
{
    (void)type;
    exp_event_t *ev = &c->ev;
    uint64_t a, b, d, e;
    if (leb128_get(&q, rend, &a) || leb128_get(&q, rend, &b) || leb128_get(&q, rend, &d) ||
        leb128_get(&q, rend, &e))
        return -1;
    ev->stack = map_stack(c, a, rec);
    ev->weight = b;
    ev->addr = d;
    ev->call = (uint32_t)(e < UINT32_MAX ? e : UINT32_MAX);
    return 0;
}

/* TLS_BLOCK: call is the object's load id, addr the block. */
static int decode_tls_block(struct cursor *c, uint8_t type, const uint8_t *q, const uint8_t *rend,
                            const uint8_t *rec)
{
    (void)type;
    (void)rec;
    uint64_t id, addr;
    if (leb128_get(&q, rend, &id) || leb128_get(&q, rend, &addr) || id > UINT32_MAX)
        return -1;
    c->ev.call = (uint32_t)id;
    c->ev.addr = addr;
    return 0;
}

/* HEAP_ALLOC and HEAP_FREE, and MAP_ALLOC and MAP_FREE (the same payloads). */
static int decode_heap(struct cursor *c, uint8_t type, const uint8_t *q, const uint8_t *rend,
                       const uint8_t *rec)
{
    exp_event_t *ev = &c->ev;
    uint64_t a, b, d;
    int64_t sd;
    if (leb128_get_signed(&q, rend, &sd))
        return -1;
    c->addr += (uint64_t)sd;
    ev->addr = c->addr;
    if (type == EXP_REC_HEAP_ALLOC || type == EXP_REC_MAP_ALLOC) {
        if (leb128_get(&q, rend, &a) || leb128_get(&q, rend, &b))
            return -1;
        ev->stack = map_stack(c, a, rec);
        ev->size = b;
        if (q < rend && leb128_get(&q, rend, &d) == 0) /* absent: malloc */
            ev->call = (uint32_t)(d < UINT32_MAX ? d : UINT32_MAX);
    } else if (q < rend) { /* absent: free */
        if (leb128_get(&q, rend, &a) || leb128_get(&q, rend, &b))
            return -1;
        ev->call = (uint32_t)(a < UINT32_MAX ? a : UINT32_MAX);
        ev->size = b;
    }
    return 0;
}

static int decode_io(struct cursor *c, uint8_t type, const uint8_t *q, const uint8_t *rend,
                     const uint8_t *rec)
{
    (void)type;
    exp_event_t *ev = &c->ev;
    uint64_t a, b, d, e, f, g;
    int64_t sd;
    if (leb128_get(&q, rend, &a) || leb128_get(&q, rend, &b) || leb128_get(&q, rend, &d) ||
        leb128_get(&q, rend, &e) || leb128_get_signed(&q, rend, &sd) || leb128_get(&q, rend, &f))
        return -1;
    ev->stack = map_stack(c, a, rec);
    ev->call = (uint32_t)(b < UINT32_MAX ? b : UINT32_MAX);
    ev->weight = d;
    ev->size = e;
    ev->fd = sd;
    ev->err = (uint32_t)(f < UINT32_MAX ? f : UINT32_MAX);
    if (q < rend) {
        if (leb128_get(&q, rend, &g) || g > (uint64_t)(rend - q) || g > EXP_IO_NAME_MAX)
            return -1;
        ev->name = (const char *)q;
        ev->namelen = (uint32_t)g;
    }
    return 0;
}

/* TRACE: a traced call of a kind declared in the log: kind, stack, n, n values. The kind is not
 * checked here (the process's kinds say what the values are: exp_process_t.kinds). */
static int decode_trace(struct cursor *c, uint8_t type, const uint8_t *q, const uint8_t *rend,
                        const uint8_t *rec)
{
    (void)type;
    exp_event_t *ev = &c->ev;
    uint64_t kind, a, n;
    if (leb128_get(&q, rend, &kind) || leb128_get(&q, rend, &a) || leb128_get(&q, rend, &n) ||
        kind > EXP_KIND_MAXID || n > EXP_KIND_MAXVALUES)
        return -1;
    for (uint64_t i = 0; i < n; i++)
        if (leb128_get(&q, rend, &c->values[i]))
            return -1;
    ev->stack = map_stack(c, a, rec);
    ev->call = (uint32_t)kind;
    ev->nvalues = (uint32_t)n;
    ev->values = c->values;
    ev->count = 1;
    return 0;
}

/* BLOCK: a profiled block entered or exited: (id << 1 | exit). Not an event of any metric; the
 * id is not checked against the log here (the consumer looks its `block` record up). */
static int decode_block(struct cursor *c, uint8_t type, const uint8_t *q, const uint8_t *rend,
                        const uint8_t *rec)
{
    (void)type, (void)rec;
    uint64_t v;
    if (leb128_get(&q, rend, &v) || v >> 1 > EXP_BLOCK_MAXID)
        return -1;
    c->ev.call = (uint32_t)(v >> 1);
    c->ev.bexit = (uint32_t)(v & 1);
    c->ev.count = 1;
    return 0;
}

/* MEMREF: the memory reference behind a sample. */
static int decode_memref(struct cursor *c, uint8_t type, const uint8_t *q, const uint8_t *rend,
                         const uint8_t *rec)
{
    (void)type;
    exp_event_t *ev = &c->ev;
    exp_memref_t *m = &c->mref;
    uint64_t src, a, w, fl, pc, v;
    if (leb128_get(&q, rend, &src) || leb128_get(&q, rend, &a) || leb128_get(&q, rend, &w) ||
        leb128_get(&q, rend, &fl) || leb128_get(&q, rend, &pc) || src > UINT32_MAX ||
        fl & ~(uint64_t)EXP_MREF_FLAGS)
        return -1;
    memset(m, 0, sizeof *m);
    m->source = (uint32_t)src;
    m->flags = (uint32_t)fl;
    m->pc = pc;
    if (fl & EXP_MREF_EA && leb128_get(&q, rend, &m->ea))
        return -1;
    if (fl & EXP_MREF_REGS) {
        if (leb128_get(&q, rend, &v) || v >> EXP_MREF_NREGS)
            return -1;
        m->regmask = (uint32_t)v;
        for (uint32_t r = 0; r < EXP_MREF_NREGS; r++)
            if (v >> r & 1 && leb128_get(&q, rend, &m->regs[r]))
                return -1;
    }
    if (!(fl & (EXP_MREF_EA | EXP_MREF_REGS))) {
        if (leb128_get(&q, rend, &v))
            return -1;
        m->reason = v > 0 && v < EXP_DUNK_NREASONS ? (uint32_t)v : EXP_DUNK_NO_VA;
    }
    ev->stack = map_stack(c, a, rec);
    ev->weight = w;
    ev->call = m->source;
    ev->count = 1;
    ev->mref = m;
    return 0;
}

/* COUNTER: stack, counter id, value, then optionally flags, pc, ea and (EXP_CTR_REGS) n
 * registers. The id is not checked here (the process's counters say what it counts). */
static int decode_counter(struct cursor *c, uint8_t type, const uint8_t *q, const uint8_t *rend,
                          const uint8_t *rec)
{
    (void)type;
    exp_event_t *ev = &c->ev;
    uint64_t a, id, f = 0, pc = 0, ea = 0, n;
    if (leb128_get(&q, rend, &a) || leb128_get(&q, rend, &id) ||
        leb128_get(&q, rend, &c->values[0]) || id >= EXP_CTR_MAX)
        return -1;
    if (q < rend) {
        if (leb128_get(&q, rend, &f) || leb128_get(&q, rend, &pc) || leb128_get(&q, rend, &ea) ||
            f > (EXP_CTR_EXACT | EXP_CTR_REGS))
            return -1;
        if (f & EXP_CTR_REGS) {
            if (leb128_get(&q, rend, &n) || n != EXP_CTR_NREGS)
                return -1;
            for (uint64_t i = 0; i < n; i++)
                if (leb128_get(&q, rend, &c->regs[i]))
                    return -1;
            ev->regs = c->regs;
        }
        ev->dflags = (uint32_t)f;
        ev->pc = pc;
        ev->addr = ea;
    }
    ev->stack = map_stack(c, a, rec);
    ev->call = (uint32_t)id;
    ev->nvalues = 1;
    ev->values = c->values;
    ev->count = 1;
    return 0;
}

/* Record type -> decoder of its payload; NULL: a type this reader does not know (skipped and
 * counted). STACK records are not events: cursor_next decodes them itself. */
static const decode_fn decoders[256] = {
    [EXP_REC_CLOCK] = decode_clock,
    [EXP_REC_LOST] = decode_lost,
    [EXP_REC_SYNC] = decode_sync,
    [EXP_REC_HEAP_ALLOC] = decode_heap,
    [EXP_REC_HEAP_FREE] = decode_heap,
    [EXP_REC_MAP_ALLOC] = decode_heap,
    [EXP_REC_MAP_FREE] = decode_heap,
    [EXP_REC_IO] = decode_io,
    [EXP_REC_TRACE] = decode_trace,
    [EXP_REC_BLOCK] = decode_block,
    [EXP_REC_COUNTER] = decode_counter,
    [EXP_REC_STATE] = decode_state,
    [EXP_REC_CPU] = decode_cpu,
    [EXP_REC_MEMREF] = decode_memref,
    [EXP_REC_TLS_BLOCK] = decode_tls_block,
};

/* The defaults of an event of type: no stack, zeros, fd -1. */
static inline void event_defaults(struct cursor *c, uint8_t type)
{
    exp_event_t *ev = &c->ev;
    ev->type = type;
    ev->stack = EXP_NO_STACK;
    ev->state = ev->reason = ev->call = ev->err = ev->namelen = ev->nvalues = ev->bexit = 0;
    ev->rstate = EXP_RSTATE_NONE;
    ev->weight = ev->count = ev->addr = ev->size = 0;
    ev->fd = -1;
    ev->name = NULL;
    ev->values = NULL;
    ev->mref = NULL;
    ev->dflags = 0;
    ev->pc = 0;
    ev->regs = NULL;
    ev->tid = c->tid;
    ev->cpu = c->ts.cpu;
}

/* Decodes the payload of a timed record of a known type into c->ev. Returns 0 for an event, 2
 * for a record that is not one, -1 for a malformed record. */
static inline int decode_event(struct cursor *c, uint8_t type, const uint8_t *q,
                               const uint8_t *rend, const uint8_t *rec)
{
    event_defaults(c, type);
    decode_fn fn = decoders[type];
    if (fn == decode_clock) /* the table's entry for most records, called directly (inlined) */
        return decode_clock(c, type, q, rend, rec);
    return fn(c, type, q, rend, rec);
}

/* The next packed record of the HEAP_PACK the cursor is in (docs/FORMAT.md), as a HEAP_ALLOC or
 * HEAP_FREE event: 1 when it is now c->ev, 0 when the pack has ended (the cursor goes on after
 * it). A malformed record is damage, and the rest of the pack is skipped. */
static __attribute__((noinline)) int pack_next(struct cursor *c)
{
    const uint8_t *rec = c->pk, *q = rec, *end = c->pkend;
    if (q >= end) {
        c->pk = NULL;
        c->p = c->resume;
        return 0;
    }
    uint8_t h = *q++;
    uint32_t kind = h & 3;
    uint64_t dt = h >> 2, a, b, d = 0;
    int64_t sd;
    if ((dt == EXP_PACK_DT_LONG && leb128_get(&q, end, &dt)) || leb128_get_signed(&q, end, &sd))
        goto bad;
    exp_event_t *ev = &c->ev;
    event_defaults(c, kind == EXP_PACK_ALLOC || kind == EXP_PACK_ALLOC_CALL ? EXP_REC_HEAP_ALLOC
                                                                           : EXP_REC_HEAP_FREE);
    if (kind == EXP_PACK_ALLOC || kind == EXP_PACK_ALLOC_CALL) {
        if (leb128_get(&q, end, &a) || leb128_get(&q, end, &b) ||
            (kind == EXP_PACK_ALLOC_CALL && leb128_get(&q, end, &d)))
            goto bad;
        ev->stack = map_stack(c, a, rec);
        ev->size = b;
        if (kind == EXP_PACK_ALLOC_CALL)
            ev->call = (uint32_t)(d < UINT32_MAX ? d : UINT32_MAX);
    } else if (kind == EXP_PACK_FREE_CALL) {
        if (leb128_get(&q, end, &a) || leb128_get(&q, end, &b))
            goto bad;
        ev->call = (uint32_t)(a < UINT32_MAX ? a : UINT32_MAX);
        ev->size = b;
    }
    c->t += dt;
    ev->t = c->t;
    c->addr += (uint64_t)sd;
    ev->addr = c->addr;
    c->ev_clock = 0;
    c->pk = q;
    return 1;
bad:
    c->sc->st->bad_records++;
    damage_at(c->sc, cursor_off(c, rec), "a malformed packed heap record");
    c->pk = NULL;
    c->p = c->resume;
    return 0;
}

/* An unsigned LEB128 of at most 4 bytes (28 bits: most fields of most records) at q, which has
 * at least 4 readable bytes: the byte after it, or NULL when it is longer (leb128_get reads it). */
static inline __attribute__((always_inline)) const uint8_t *leb_short(const uint8_t *q,
                                                                      uint64_t *v)
{
    uint64_t r = q[0];
    if (__builtin_expect(!(r & 0x80), 1)) {
        *v = r;
        return q + 1;
    }
    r = (r & 0x7f) | (uint64_t)(q[1] & 0x7f) << 7;
    if (!(q[1] & 0x80)) {
        *v = r;
        return q + 2;
    }
    r |= (uint64_t)(q[2] & 0x7f) << 14;
    if (!(q[2] & 0x80)) {
        *v = r;
        return q + 3;
    }
    r |= (uint64_t)(q[3] & 0x7f) << 21;
    if (!(q[3] & 0x80)) {
        *v = r;
        return q + 4;
    }
    return NULL;
}

/* The longest CLOCK record clock_fast reads: type, length, 5 fields of at most 4 bytes (its
 * fields are read before their record's end is checked, so this much of the chunk must be left;
 * the last records of a chunk take the general path). */
#define CLOCK_FAST_MAX (2 + 5 * 4)

/* The CLOCK record at c->p, the most frequent by far, decoded without the decoders' table:
 * 1 when it is now c->ev, 0 when it is not a CLOCK record with a one-byte length and fields of
 * at most 4 bytes, is too near the chunk's end, or has a length that runs past the chunk's end
 * (the general path reads it, and says what is wrong with it). What it delivers is exactly what decode_event and decode_clock deliver. */
static inline __attribute__((always_inline)) int clock_fast(struct cursor *c)
{
    const uint8_t *rec = c->p;
    if (__builtin_expect(c->end - rec < CLOCK_FAST_MAX, 0) || rec[0] != EXP_REC_CLOCK ||
        (rec[1] & 0x80))
        return 0;
    const uint8_t *q = rec + 2;
    if (rec[1] > c->end - q)
        return 0;
    const uint8_t *rend = q + rec[1];
    uint64_t dt, a, b, d, r = EXP_RSTATE_NONE;
    if (!(q = leb_short(q, &dt)) || !(q = leb_short(q, &a)) || !(q = leb_short(q, &b)) ||
        !(q = leb_short(q, &d)) || q > rend || (q < rend && (!(q = leb_short(q, &r)) || q > rend)))
        return 0;
    exp_event_t *ev = &c->ev;
    if (!c->ev_clock) { /* the defaults of decode_event, once after another kind of event */
        ev->type = EXP_REC_CLOCK;
        ev->reason = ev->call = ev->err = ev->namelen = ev->nvalues = 0;
        ev->addr = ev->size = 0;
        ev->fd = -1;
        ev->name = NULL;
        ev->values = NULL;
        ev->mref = NULL;
        ev->dflags = 0;
        ev->pc = 0;
        ev->regs = NULL;
        ev->count = 1;
        c->ev_clock = 1;
    }
    c->p = rend;
    c->t += dt;
    ev->t = c->t;
    ev->tid = c->tid;
    ev->cpu = c->ts.cpu;
    ev->stack = map_stack(c, a, rec);
    ev->state = (uint32_t)(b < EXP_STATE_COUNT ? b : UINT32_MAX);
    ev->weight = d;
    ev->rstate = r <= EXP_KIND_MAXID + 1u ? (uint32_t)r : EXP_RSTATE_NONE;
    return 1;
}

/* Decodes records until the cursor holds its next event; returns 0 when the stream ends (or
 * memory ran out: sc->oom). (cursor_next_fast is the way in: it decodes a CLOCK record that
 * comes next in the caller's loop, without a call.) */
static __attribute__((noinline)) int cursor_next(struct cursor *c)
{
    exp_scan_stats_t *st = c->sc->st;
    while (!c->sc->oom) {
        if (c->pk) {
            if (!pack_next(c))
                continue;
            st->records++;
            if (c->sc->oom)
                return 0;
            st->events++;
            return 1;
        }
        if (__builtin_expect(clock_fast(c), 1)) {
            st->records++;
            if (c->sc->oom)
                return 0;
            st->events++;
            return 1;
        }
        while (c->p >= c->end)
            if (!cursor_load(c))
                return 0;
        const uint8_t *rec = c->p;
        uint8_t type = *c->p++;
        uint64_t len, dt;
        if (type == 0 || leb128_get(&c->p, c->end, &len) ||
            (len > (uint64_t)(c->end - c->p) &&
             (type != EXP_REC_HEAP_PACK || len != EXP_PACK_OPEN))) {
            st->bad_records++;
            damage_at(c->sc, cursor_off(c, rec), "a record that cannot be framed");
            c->p = c->end; /* the rest of the chunk cannot be framed */
            continue;
        }
        if (type == EXP_REC_HEAP_PACK) { /* its records are read by pack_next; one still open
                                            when its process ended reaches the used bytes */
            c->pk = c->p;
            c->resume = c->pkend = len == EXP_PACK_OPEN ? c->end : c->p + len;
            c->p = c->end;
            continue;
        }
        const uint8_t *q = c->p, *rend = c->p + len;
        c->p = rend;
        st->records++;
        if (type == EXP_REC_STACK) {
            uint32_t gid;
            int rc = decode_stack(&c->ts, c->sc, q, rend, &gid);
            if (rc == 0 && c->sc->log && log_intern(c->sc->log, (struct intern_entry){
                                             c->sc->proc, c->stream, c->delivered > 0,
                                             c->nlogged++, c->last_t, 1, gid })) {
                c->sc->oom = 1;
                return 0;
            }
            if (rc < 0)
                c->sc->oom = 1;
            else if (rc) {
                st->bad_records++;
                damage_at(c->sc, cursor_off(c, rec), "a malformed stack record");
            }
            continue;
        }
        if (!decoders[type]) {
            st->unknown_records++; /* skipped (its time, if any, is unknown too) */
            continue;
        }
        if (leb128_get(&q, rend, &dt)) {
            st->bad_records++;
            damage_at(c->sc, cursor_off(c, rec), "a record without its time");
            continue;
        }
        c->t += dt;
        c->ev.t = c->t;
        c->ev_clock = 0;
        int rc = decode_event(c, type, q, rend, rec);
        if (rc == 2)
            continue;
        if (rc) {
            st->bad_records++;
            damage_at(c->sc, cursor_off(c, rec), "a malformed record");
            continue;
        }
        if (c->sc->oom)
            return 0;
        if (type != EXP_REC_LOST)
            st->events++;
        return 1;
    }
    return 0;
}

static inline __attribute__((always_inline)) int cursor_next_fast(struct cursor *c)
{
    if (__builtin_expect(!c->sc->oom && clock_fast(c), 1)) {
        exp_scan_stats_t *st = c->sc->st;
        st->records++;
        if (c->sc->oom)
            return 0;
        st->events++;
        return 1;
    }
    return cursor_next(c);
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
static int merge_streams(struct cursor *cs, size_t ncs, exp_event_cb cb, void *ctx,
                         struct scan *sc)
{
    struct cursor **h = malloc((ncs ? ncs : 1) * sizeof *h);
    if (!h)
        return TALLY_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < ncs; i++)
        if (cursor_next(&cs[i]))
            h[n++] = &cs[i];
    for (size_t i = n / 2; i-- > 0;)
        heap_sift_down(h, n, i);
    int rc = 0;
    while (n && !rc && !sc->oom) {
        struct cursor *c = h[0];
        if (cb)
            rc = cb(ctx, &c->ev);
        if (!cursor_next_fast(c))
            h[0] = h[--n];
        heap_sift_down(h, n, 0);
    }
    free(h);
    return rc ? rc : sc->oom ? TALLY_ENOMEM : 0;
}

/* Maps the events file of process pr: *m (NULL when there is none, or it is empty), *size. */
static int map_events(const exp_process_t *pr, char *path, size_t pathlen, const uint8_t **m,
                      size_t *size, tally_err_t *err)
{
    *m = NULL;
    *size = 0;
    if ((size_t)snprintf(path, pathlen, "%s/events", pr->dir) >= pathlen)
        return tally_errf(err, TALLY_EIO, "cannot read the events of '%s': the path is too long",
                          pr->dir);
    off_t fsize;
    int fd = open_regular(AT_FDCWD, path, &fsize);
    if (fd == -ENOENT)
        return 0; /* no events: nothing was profiled in this process */
    if (fd < 0)
        return open_error(err, TALLY_EIO, path, fd);
    if (fsize == 0) {
        close(fd);
        return 0;
    }
    if (fsize < EXP_EV_HEADER_BYTES) {
        close(fd);
        return tally_errf(err, TALLY_ECORRUPT, "%s: the file is shorter than its header "
                          "(%lld bytes)", path, (long long)fsize);
    }
    void *p = mmap(NULL, (size_t)fsize, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
        return tally_errf(err, e == ENOMEM ? TALLY_ENOMEM : TALLY_EIO, "cannot map '%s': %s",
                          path, strerror(e));
    *m = p;
    *size = (size_t)fsize;
    return 0;
}

/* Checks the file header; *hsize, *csize. */
static int check_header(const char *path, const uint8_t *m, size_t size, uint32_t *hsize,
                        uint32_t *csize, tally_err_t *err)
{
    if (memcmp(m, EXP_EV_MAGIC, 8))
        return tally_errf(err, TALLY_ECORRUPT, "%s: not a tally events file (bad magic at "
                          "offset 0)", path);
    uint32_t version = get_le32(m + 8);
    *hsize = get_le32(m + 12);
    *csize = get_le32(m + 16);
    if (version > EXP_FORMAT_VERSION)
        return tally_errf(err, TALLY_EVERSION, "%s: events format version %u is newer than "
                          "this tally reads (%u): use a newer tally", path, version,
                          EXP_FORMAT_VERSION);
    if (*hsize < EXP_EV_HEADER_BYTES || *hsize > size)
        return tally_errf(err, TALLY_ECORRUPT, "%s: bad header size %u at offset 12 (the file "
                          "has %zu bytes)", path, *hsize, size);
    if (*csize < 4096 || *csize > (1u << 30) || *csize % 4096)
        return tally_errf(err, TALLY_ECORRUPT, "%s: bad chunk size %u at offset 16 (a multiple "
                          "of 4096 up to 1 GiB)", path, *csize);
    return 0;
}

/* The earliest chunk start of process p's events (0 when none): when the log has no start. */
static uint64_t first_chunk_time(const exp_process_t *p)
{
    char path[4096];
    const uint8_t *m;
    size_t size;
    uint32_t hsize, csize;
    uint64_t t0 = 0;
    if (map_events(p, path, sizeof path, &m, &size, NULL) || !m)
        return 0;
    if (!check_header(path, m, size, &hsize, &csize, NULL))
        for (uint64_t off = hsize, dropped = 0; off + EXP_CHUNK_HEADER_SIZE <= size;
             off += csize) {
            uint64_t t = get_le64(m + off + 16);
            if (get_le32(m + off) == EXP_CHUNK_MAGIC && t && (!t0 || t < t0))
                t0 = t;
            if (off - dropped >= HEADER_DROP) {
                drop_pages(m, dropped, off);
                dropped = off;
            }
        }
    munmap((void *)m, size);
    return t0;
}

/* The events of one process ready to be decoded: its mapped file, its chunks grouped by stream
 * (refs, sorted by stream then seq) and one cursor per stream. */
struct proc_scan {
    const exp_process_t *pr;
    const uint8_t *m;
    size_t size;
    struct chunk_ref *refs;
    struct cursor *cs;
    size_t nrefs, ncs;
    struct scan sc;
    char path[4096]; /* last: proc_scan_init clears what comes before */
};

static void proc_scan_done(struct proc_scan *ps)
{
    for (size_t i = 0; ps->cs && i < ps->ncs; i++) {
        free(ps->cs[i].ts.map);
        free(ps->cs[i].ts.frames);
        free(ps->cs[i].genmap);
        free(ps->cs[i].buf);
    }
    free(ps->cs);
    free(ps->refs);
    if (ps->m)
        munmap((void *)ps->m, ps->size);
    ps->cs = NULL;
    ps->refs = NULL;
    ps->m = NULL;
}

/* Maps the events of pr and sets up a cursor per stream (none when pr has no events). Damage of
 * the chunk headers is counted in st. */
static int proc_scan_init(struct proc_scan *ps, const exp_process_t *pr, exp_stacks_t *stacks,
                          exp_scan_stats_t *st, tally_err_t *err)
{
    memset(ps, 0, offsetof(struct proc_scan, path));
    ps->pr = pr;
    ps->sc = (struct scan){ stacks, st, pr->index, 0, NULL };
    int rc = map_events(pr, ps->path, sizeof ps->path, &ps->m, &ps->size, err);
    if (rc || !ps->m)
        return rc;
    const uint8_t *m = ps->m;
    size_t size = ps->size;
    uint32_t hsize, csize;
    if ((rc = check_header(ps->path, m, size, &hsize, &csize, err)))
        goto fail;
    size_t nchunks = (size - hsize + csize - 1) / csize; /* at most size / 4096 */
    ps->refs = malloc((nchunks ? nchunks : 1) * sizeof *ps->refs);
    if (!ps->refs) {
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", ps->path);
        goto fail;
    }
    struct chunk_ref *refs = ps->refs;
    size_t nrefs = 0, ncs = 0;
    uint64_t dropped = 0;
    for (size_t i = 0; i < nchunks; i++) {
        uint64_t off = hsize + (uint64_t)i * csize;
        st->chunks++;
        if (off - dropped >= HEADER_DROP) {
            drop_pages(m, dropped, off);
            dropped = off;
        }
        if (off + EXP_CHUNK_HEADER_SIZE > size) {
            st->bad_chunks++;
            damage_at(&ps->sc, off, "a chunk header cut short by the end of the file");
            continue;
        }
        uint32_t magic = get_le32(m + off);
        if (magic == 0) {
            st->unused_chunks++;
            continue;
        }
        if (magic != EXP_CHUNK_MAGIC) {
            st->bad_chunks++;
            damage_at(&ps->sc, off, "a chunk with a bad magic number");
            continue;
        }
        refs[nrefs++] = (struct chunk_ref){ get_le32(m + off + 24), get_le32(m + off + 8),
                                            get_le32(m + off + 4), off };
    }
    /* and the rest: exp_scan_parallel maps every process before it reads any, so what the
     * headers faulted in would stay resident for all of them at once (all of a small file) */
    drop_pages(m, dropped, size);
    if (nrefs)
        qsort(refs, nrefs, sizeof *refs, cmp_chunks);
    for (size_t i = 0; i < nrefs; i++)
        ncs += i == 0 || refs[i].stream != refs[i - 1].stream;
    ps->cs = calloc(ncs ? ncs : 1, sizeof *ps->cs);
    if (!ps->cs) {
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", ps->path);
        goto fail;
    }
    for (size_t i = 0, k = 0; i < nrefs; i++) {
        if (i && refs[i].stream == refs[i - 1].stream)
            continue;
        struct cursor *c = &ps->cs[k++];
        c->refs = &refs[i];
        while (i + c->nrefs < nrefs && refs[i + c->nrefs].stream == refs[i].stream)
            c->nrefs++;
        c->map = m;
        c->size = size;
        c->csize = csize;
        c->sc = &ps->sc;
        c->pr = pr;
        c->stream = refs[i].stream;
        c->ev.proc = pr->index;
        c->ev.stream = refs[i].stream;
        c->ts.cpu = UINT32_MAX;
        c->fd = -1;
        /* ids are bounded by the records the stream's chunks hold in the file (a chunk the
         * file ends inside holds less than its size says) */
        uint64_t room = 0;
        for (size_t k = 0; k < c->nrefs; k++) {
            uint64_t off = c->refs[k].off, in = size - off < csize ? size - off : csize;
            room += in - EXP_CHUNK_HEADER_SIZE; /* (a header is whole: see above) */
        }
        c->ts.max_ids = (size_t)(room / MIN_STACK_RECORD) + 1;
    }
    ps->nrefs = nrefs;
    ps->ncs = ncs;
    return 0;
fail:
    proc_scan_done(ps);
    return rc;
}

static int scan_process(const exp_process_t *pr, exp_stacks_t *stacks, exp_event_cb cb,
                        void *ctx, exp_scan_stats_t *st, tally_err_t *err)
{
    struct proc_scan *ps = malloc(sizeof *ps);
    if (!ps)
        return tally_errf(err, TALLY_ENOMEM, "out of memory reading the events of '%s'", pr->dir);
    int rc = proc_scan_init(ps, pr, stacks, st, err);
    if (!rc && ps->m) {
        rc = merge_streams(ps->cs, ps->ncs, cb, ctx, &ps->sc);
        if (rc == TALLY_ENOMEM && ps->sc.oom)
            rc = tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", ps->path);
    }
    proc_scan_done(ps);
    free(ps);
    return rc;
}

int exp_scan(const exp_experiment_t *e, exp_stacks_t *stacks, exp_event_cb cb, void *ctx,
             exp_scan_stats_t *st, tally_err_t *err)
{
    exp_scan_stats_t local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    st->bad_offset = UINT64_MAX;
    for (size_t i = 0; i < e->nprocs; i++) {
        int rc = scan_process(e->procs[i], stacks, cb, ctx, st, err);
        if (rc)
            return rc;
    }
    return 0;
}

static int count_sample(void *ctx, const exp_event_t *ev)
{
    if (ev->type == EXP_REC_CLOCK && ev->state <= EXP_STATE_SYSTEM)
        ((uint64_t *)ctx)[ev->proc]++;
    return 0;
}

int exp_count_samples(const exp_experiment_t *e, uint64_t *counts, tally_err_t *err)
{
    memset(counts, 0, e->nprocs * sizeof *counts);
    exp_stacks_t *stacks = exp_stacks_new();
    if (!stacks)
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    int rc = exp_scan(e, stacks, count_sample, counts, NULL, err);
    exp_stacks_free(stacks);
    return rc;
}

/* ---- the parallel scan ------------------------------------------------------------------------ */

struct pworker;

/* A job: streams read one after the other by one worker (one stream, or every stream of a
 * process when there are many processes: each worker then holds the stacks of fewer). */
struct pjob {
    struct cursor *cs;
    size_t n, chunks;
};

struct pscan {
    struct pjob *jobs;    /* the largest first */
    size_t njobs, next;   /* next: the next job to take (atomic) */
    int stop;             /* atomic: a worker failed or needs the serial scan */
    exp_pscan_cb cb;
    void *ctx;
};

struct pworker {
    struct pscan *p;
    unsigned index;
    exp_stacks_t *stacks; /* the worker's provisional stack ids */
    exp_scan_stats_t st;
    struct intern_log log;
    int result; /* 0, EXP_SCAN_NEED_ORDER, a callback's stop value, TALLY_ENOMEM */
};

/* Decodes the stream of cursor c to its end for worker w: 0, or why it stopped. */
static int pworker_stream(struct pworker *w, struct cursor *c)
{
    struct pscan *p = w->p;
    struct scan sc = { w->stacks, &w->st, c->pr->index, 0, &w->log };
    c->sc = &sc;
    int r = 0;
    char path[4096]; /* its chunks are read, not mapped (cursor_read), from the same file */
    off_t size;
    if ((size_t)snprintf(path, sizeof path, "%s/events", c->pr->dir) < sizeof path &&
        (c->fd = open_regular(AT_FDCWD, path, &size)) >= 0 && (uint64_t)size != c->size) {
        close(c->fd);
        c->fd = -1;
    }
    if (c->fd < -1)
        c->fd = -1;
    while (!r && cursor_next_fast(c)) {
        if (c->delivered && c->ev.t < c->last_t) {
            r = EXP_SCAN_NEED_ORDER; /* time goes back: only the merge knows the order */
            break;
        }
        r = p->cb(p->ctx, w->index, &c->ev);
        c->delivered++;
        c->last_t = c->ev.t;
    }
    if (sc.oom)
        r = TALLY_ENOMEM;
    else if (!r && w->st.bad_offset != UINT64_MAX)
        r = EXP_SCAN_NEED_ORDER; /* damage: the first one is the serial scan's to name */
    c->sc = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
    return r;
}

/* Decodes jobs, one at a time, until none is left or a worker stops. */
static void *pworker_run(void *arg)
{
    struct pworker *w = arg;
    struct pscan *p = w->p;
    while (!__atomic_load_n(&p->stop, __ATOMIC_RELAXED)) {
        size_t j = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (j >= p->njobs)
            break;
        int r = 0;
        for (size_t k = 0; k < p->jobs[j].n && !r; k++)
            r = pworker_stream(w, &p->jobs[j].cs[k]);
        if (r) {
            w->result = r;
            __atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
            break;
        }
    }
    return NULL;
}

static int cmp_jobs(const void *a, const void *b)
{
    const struct pjob *x = a, *y = b;
    return x->chunks != y->chunks ? (x->chunks > y->chunks ? -1 : 1) : 0;
}

/* The order in which the serial scan interns the STACK records: within a process, first the
 * records before each stream's first event, stream by stream, then the others as the merge
 * delivers the event before each (by time, then stream). */
static int cmp_intern(const void *a, const void *b)
{
    const struct intern_entry *x = a, *y = b;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    if (x->initial != y->initial)
        return x->initial < y->initial ? -1 : 1;
    if (x->initial && x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void stats_add(exp_scan_stats_t *to, const exp_scan_stats_t *from)
{
    to->chunks += from->chunks;
    to->unused_chunks += from->unused_chunks;
    to->bad_chunks += from->bad_chunks;
    to->records += from->records;
    to->unknown_records += from->unknown_records;
    to->bad_records += from->bad_records;
    to->seq_gaps += from->seq_gaps;
    to->events += from->events;
    for (int r = 0; r < EXP_LOST_NREASONS; r++)
        to->lost[r] = sat_add(to->lost[r], from->lost[r]);
}

int exp_scan_parallel(const exp_experiment_t *e, exp_stacks_t *stacks, unsigned nworkers,
                      exp_pscan_cb cb, void *ctx, uint32_t **remap, exp_scan_stats_t *st,
                      tally_err_t *err)
{
    exp_scan_stats_t local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    st->bad_offset = UINT64_MAX;
    if (nworkers == 0)
        nworkers = 1;
    for (unsigned w = 0; w < nworkers; w++)
        remap[w] = NULL;
    for (size_t i = 0; i < e->nprocs; i++)
        if (e->procs[i]->ngens > 1)
            return EXP_SCAN_NEED_ORDER; /* stacks are interned per generation as events come */
    struct proc_scan *procs = calloc(e->nprocs ? e->nprocs : 1, sizeof *procs);
    struct pworker *ws = calloc(nworkers, sizeof *ws);
    pthread_t *tids = calloc(nworkers, sizeof *tids);
    struct pscan p = { .cb = cb, .ctx = ctx };
    size_t ninit = 0;
    int rc = 0;
    if (!procs || !ws || !tids) {
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", e->path);
        goto out;
    }
    size_t njobs = 0;
    for (; ninit < e->nprocs; ninit++) {
        if ((rc = proc_scan_init(&procs[ninit], e->procs[ninit], stacks, st, err))) {
            goto out;
        }
        njobs += procs[ninit].ncs;
    }
    if (st->bad_offset != UINT64_MAX) {
        rc = EXP_SCAN_NEED_ORDER;
        goto out;
    }
    p.jobs = malloc((njobs ? njobs : 1) * sizeof *p.jobs);
    if (!p.jobs) {
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", e->path);
        goto out;
    }
    int by_process = e->nprocs > nworkers;
    for (size_t i = 0; i < e->nprocs; i++)
        for (size_t k = 0; k < procs[i].ncs; k++) {
            if (by_process && k > 0) {
                p.jobs[p.njobs - 1].n++;
                p.jobs[p.njobs - 1].chunks += procs[i].cs[k].nrefs;
            } else {
                p.jobs[p.njobs++] = (struct pjob){ &procs[i].cs[k], 1, procs[i].cs[k].nrefs };
            }
        }
    qsort(p.jobs, p.njobs, sizeof *p.jobs, cmp_jobs);
    for (unsigned w = 0; w < nworkers; w++) {
        ws[w].p = &p;
        ws[w].index = w;
        ws[w].st.bad_offset = UINT64_MAX;
        if (!(ws[w].stacks = exp_stacks_new())) {
            rc = tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", e->path);
            goto out;
        }
    }
    /* worker 0 is this thread; a worker that cannot start leaves its share to the others */
    uint8_t *started = calloc(nworkers, 1);
    if (!started) {
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", e->path);
        goto out;
    }
    for (unsigned w = 1; w < nworkers && w < p.njobs; w++)
        started[w] = pthread_create(&tids[w], NULL, pworker_run, &ws[w]) == 0;
    pworker_run(&ws[0]);
    for (unsigned w = 1; w < nworkers; w++)
        if (started[w])
            pthread_join(tids[w], NULL);
    free(started);
    for (unsigned w = 0; w < nworkers; w++) /* an error first, then a stop, then the fallback */
        if (ws[w].result < 0 || (ws[w].result && (rc == 0 || rc == EXP_SCAN_NEED_ORDER)))
            rc = rc < 0 ? rc : ws[w].result;
    if (rc == TALLY_ENOMEM)
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", e->path);
    if (rc)
        goto out;

    /* the stacks, interned as the serial scan would: the same ids */
    size_t nlog = 0;
    for (unsigned w = 0; w < nworkers; w++)
        nlog += ws[w].log.n;
    struct intern_entry *all = malloc((nlog ? nlog : 1) * sizeof *all);
    size_t nall = 0;
    if (!all) {
        rc = tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", e->path);
        goto out;
    }
    for (unsigned w = 0; w < nworkers; w++)
        for (size_t i = 0; i < ws[w].log.n; i++)
            if (ws[w].log.v[i].worker) {
                all[nall] = ws[w].log.v[i];
                all[nall++].worker = w;
            }
    nlog = nall;
    qsort(all, nlog, sizeof *all, cmp_intern);
    for (unsigned w = 0; w < nworkers && !rc; w++) {
        size_t n = exp_stacks_count(ws[w].stacks);
        if (!(remap[w] = malloc((n ? n : 1) * sizeof *remap[w])))
            rc = tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", e->path);
    }
    for (size_t i = 0; i < nlog && !rc; i++) {
        uint32_t n, flags, proc;
        const uint64_t *pcs = exp_stacks_get(ws[all[i].worker].stacks, all[i].id, &n, &flags, &proc);
        int64_t g = exp_stacks_intern(stacks, proc, pcs, n, flags);
        if (g < 0)
            rc = tally_errf(err, TALLY_ENOMEM, "out of memory reading '%s'", e->path);
        else
            remap[all[i].worker][all[i].id] = (uint32_t)g;
    }
    free(all);
    for (unsigned w = 0; w < nworkers; w++)
        stats_add(st, &ws[w].st);
out:
    if (rc)
        for (unsigned w = 0; w < nworkers; w++) {
            free(remap[w]);
            remap[w] = NULL;
        }
    for (size_t i = 0; i < ninit; i++)
        proc_scan_done(&procs[i]);
    for (unsigned w = 0; ws && w < nworkers; w++) {
        exp_stacks_free(ws[w].stacks);
        free(ws[w].log.v);
    }
    free(p.jobs);
    free(tids);
    free(ws);
    free(procs);
    return rc;
}
