/*
 * collector.c - the process lifecycle of libtally-collector.so: initialization from the
 * environment, the experiment files of this image, descendants (fork children, new images), the
 * log records written at start and at the end. See collector.h for the contract.
 *
 * Sections: helpers, environment, log records, descendants, initialization, the end, fork child.
 */
#define _GNU_SOURCE
#include "collector.h"
#include "ompstate.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "experiment/mpirank.h"
#include "base/spinlock.h"
#include "signals.h"
#include "source.h"
#include "counters.h"
#include "threads.h"
#include "interpose.h"
#include "maps.h"
#include "sampler.h"
#include "trace.h"
#include "blocks.h"
#include "unwind.h"
#include "experiment/logrec.h"

coll_proc_t coll_proc = { .log_fd = -1, .evfile = { .fd = -1 } };

static const int high_fd_base = 900;
static pid_t init_tid;

/* ---- helpers --------------------------------------------------------------------------------- */

/* The descriptors the collector holds (a bit per descriptor number): the program's close() of one
 * of them is ignored, and its dup2() onto one moves the collector's away first. */
#define OWN_FDS 65536
static uint8_t own_fds[OWN_FDS / 8];

static void own_fd(int fd, int on)
{
    if (fd < 0 || fd >= OWN_FDS)
        return;
    if (on)
        __atomic_or_fetch(&own_fds[fd / 8], (uint8_t)(1u << (fd % 8)), __ATOMIC_RELAXED);
    else
        __atomic_and_fetch(&own_fds[fd / 8], (uint8_t)~(1u << (fd % 8)), __ATOMIC_RELAXED);
}

int coll_fd_owned(int fd)
{
    return fd >= 0 && fd < OWN_FDS &&
           (__atomic_load_n(&own_fds[fd / 8], __ATOMIC_RELAXED) >> (fd % 8)) & 1;
}

int coll_close(int fd)
{
    own_fd(fd, 0);
    return (int)syscall(SYS_close, fd);
}

/* The numbers the collector's descriptors take: from high_fd_base up when the limit allows, else
 * the highest free numbers below the limit (never the lowest, which the program gets next). */
static int move_high(int fd)
{
    struct rlimit rl;
    rlim_t lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
    if (lim > (rlim_t)high_fd_base + 16) {
        int nfd = fcntl(fd, F_DUPFD_CLOEXEC, high_fd_base);
        if (nfd >= 0)
            return nfd;
    }
    if (lim > OWN_FDS)
        lim = OWN_FDS;
    for (int n = (int)lim - 1; n > fd; n--)
        if (fcntl(n, F_GETFD) < 0 && errno == EBADF) {
            int nfd = (int)syscall(SYS_dup3, fd, n, O_CLOEXEC);
            if (nfd >= 0)
                return nfd;
        }
    return -1;
}

int coll_high_fd(int fd)
{
    if (fd < 0)
        return fd;
    if (fd < high_fd_base) {
        int saved = errno;
        int nfd = move_high(fd);
        if (nfd >= 0) {
            syscall(SYS_close, fd);
            fd = nfd;
        }
        errno = saved;
    }
    own_fd(fd, 1);
    return fd;
}

/* RLIMIT_NOFILE is the program's: when it is below the collector's numbers (set by the program,
 * or before tally started), the soft limit is raised to the hard one for as long as the collector
 * opens a descriptor and moves it up, then set back. One opener at a time (a spinlock: the
 * program's view of its limit is restored by the last). */
static int fd_room_lock;
static int fd_room_raised;
static rlim_t fd_room_saved;

void coll_fd_room_enter(void)
{
    spin_lock(&fd_room_lock);
    struct rlimit rl;
    fd_room_raised = 0;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max &&
        rl.rlim_cur < (rlim_t)high_fd_base + 16) {
        fd_room_saved = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
            fd_room_raised = 1;
    }
}

void coll_fd_room_leave(void)
{
    struct rlimit rl;
    if (fd_room_raised && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = fd_room_saved;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    fd_room_raised = 0;
    spin_unlock(&fd_room_lock);
}

void coll_fd_evacuate(int fd)
{
    coll_proc_t *p = &coll_proc;
    if (!coll_fd_owned(fd))
        return;
    coll_fd_room_enter();
    int nfd = fd >= high_fd_base ? fcntl(fd, F_DUPFD_CLOEXEC, high_fd_base) : move_high(fd);
    coll_fd_room_leave();
    if (nfd < 0)
        return;
    own_fd(nfd, 1);
    if (p->log_fd == fd)
        __atomic_store_n(&p->log_fd, nfd, __ATOMIC_RELEASE);
    else if (p->evfile.fd == fd)
        __atomic_store_n(&p->evfile.fd, nfd, __ATOMIC_RELEASE);
    else { /* a descriptor only read (sampler's /proc files, perf): let it go */
        syscall(SYS_close, nfd);
        own_fd(nfd, 0);
    }
    own_fd(fd, 0);
}

void coll_log_write(exp_line_t *l)
{
    if (coll_proc.log_fd >= 0)
        exp_line_write(l, coll_proc.log_fd);
}

void coll_warn(const char *what)
{
    char buf[1024];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_WARNING);
    exp_line_u64(&l, EXP_KEY_T, coll_now());
    exp_line_str(&l, EXP_KEY_WHAT, what);
    coll_log_write(&l);
}

static void path_join(char *out, size_t cap, const char *dir, const char *name)
{
    size_t d = strnlen(dir, cap - 1), n = strnlen(name, cap - 1);
    if (d + 1 + n >= cap)
        n = d + 1 < cap ? cap - d - 2 : 0;
    if (d >= cap - 1)
        d = cap - 2;
    memcpy(out, dir, d);
    out[d] = '/';
    memcpy(out + d + 1, name, n);
    out[d + 1 + n] = 0;
}

/* ---- environment ----------------------------------------------------------------------------- */

static int is_self_entry(const char *e, size_t n, const char *self)
{
    static const char base[] = "libtally-collector.so";
    size_t bl = sizeof base - 1, sl = strlen(self);
    if (n == sl && !strncmp(e, self, n))
        return 1;
    return n >= bl && !strncmp(e + n - bl, base, bl) && (n == bl || e[n - bl - 1] == '/');
}

/* Is the entry e[0..n) a path whose last component is base? */
static int is_base_entry(const char *e, size_t n, const char *base)
{
    size_t bl = strlen(base);
    return n >= bl && !strncmp(e + n - bl, base, bl) && (n == bl || e[n - bl - 1] == '/');
}

/* Does LD_PRELOAD value v hold a library named base (e.g. libtally-mpi.so)? AS-safe. */
int coll_preload_has_base(const char *v, const char *base);
int coll_preload_has_base(const char *v, const char *base)
{
    while (v && *v) {
        size_t n = strcspn(v, ": ");
        if (n && is_base_entry(v, n, base))
            return 1;
        v += n;
        if (*v)
            v++;
    }
    return 0;
}

/* LD_PRELOAD without the collector and the MPI wrappers it added (follow off, E2BIG): written
 * into out. AS-safe. */
size_t coll_preload_strip(const char *v, const char *self, char *out, size_t cap);
size_t coll_preload_strip(const char *v, const char *self, char *out, size_t cap)
{
    size_t o = 0;
    while (v && *v) {
        size_t n = strcspn(v, ": ");
        if (n && !is_self_entry(v, n, self) && !is_base_entry(v, n, "libtally-mpi.so") &&
            o + n + 2 < cap) {
            if (o)
                out[o++] = ':';
            memcpy(out + o, v, n);
            o += n;
        }
        v += n;
        if (*v)
            v++;
    }
    out[o] = 0;
    return o;
}

/* Does LD_PRELOAD value v contain the collector? AS-safe. */
int coll_preload_has_self(const char *v, const char *self);
int coll_preload_has_self(const char *v, const char *self)
{
    while (v && *v) {
        size_t n = strcspn(v, ": ");
        if (n && is_self_entry(v, n, self))
            return 1;
        v += n;
        if (*v)
            v++;
    }
    return 0;
}

/* The settings from TALLY_SETTINGS (generated parsing, settings.h): 0, 1 when the process is not
 * collected (no variable), -1 when the variable is bad (said on stderr). No malloc, no stdio. */
static int parse_settings(coll_proc_t *p)
{
    const char *v = exp_settings_find(environ);
    if (!v)
        return 1;
    char why[256];
    if (exp_settings_decode(v, &p->set, why, sizeof why) || !p->set.dir.s[0]) {
        static const char pre[] = "tally collector: ", post[] = "; the program runs unprofiled\n";
        if (!why[0])
            memcpy(why, "no experiment directory in " EXP_SETTINGS_ENV,
                   sizeof "no experiment directory in " EXP_SETTINGS_ENV);
        struct iovec iov[3] = { { (void *)pre, sizeof pre - 1 }, { why, strlen(why) },
                                { (void *)post, sizeof post - 1 } };
        if (writev(2, iov, 3) < 0) {
        }
        return -1;
    }
    const exp_settings_t *s = &p->set;
    if (strlen(s->dir.s) >= sizeof p->dir - 64)
        return -1;
    memcpy(p->dir, s->dir.s, strlen(s->dir.s) + 1);
    p->follow = s->follow;
    p->max_depth = (uint32_t)s->max_depth;
    sources_settings(p);
    p->has_window = s->duration.on;
    p->win_lo = s->duration.lo; /* relative until the root's start is known */
    p->win_hi = s->duration.hi;
    sampler_settings(p);
    trace_settings(p);
    return 0;
}

/* This process runs unprofiled: the new images it starts get the environment without tally's
 * additions, so they do not try again (and print again). Its own environment is left alone. */
static void give_up(coll_proc_t *p)
{
    p->strip_env = 1;
}

/* ---- log records ----------------------------------------------------------------------------- */

static void log_start(coll_proc_t *p)
{
    char buf[3 * PATH_MAX + 1024], exe[PATH_MAX] = "", cwd[PATH_MAX] = "";
    struct utsname u;
    memset(&u, 0, sizeof u);
    uname(&u);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = 0;
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_START);
    exp_line_u64(&l, EXP_KEY_T, p->t_start);
    exp_line_u64(&l, EXP_KEY_REAL, (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec);
    exp_line_u64(&l, EXP_KEY_PID, (uint64_t)getpid());
    exp_line_u64(&l, EXP_KEY_PPID, (uint64_t)getppid());
    exp_line_str(&l, EXP_KEY_HOST, u.nodename);
    exp_line_str(&l, EXP_KEY_KERNEL, u.release);
    exp_line_str(&l, EXP_KEY_ARCH, u.machine);
    exp_line_u64(&l, EXP_KEY_NCPUS, (uint64_t)sysconf(_SC_NPROCESSORS_ONLN));
    exp_line_str(&l, EXP_KEY_EXE, exe);
    exp_line_str(&l, EXP_KEY_CWD, cwd);
    coll_log_write(&l);
}

static void log_cmdline(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    size_t cap = 65536, len = 0;
    char *b = malloc(cap + 1);
    ssize_t r;
    while (b && (r = read(fd, b + len, cap - len)) > 0) {
        len += (size_t)r;
        if (len == cap) {
            char *nb = cap < (1u << 22) ? realloc(b, 2 * cap + 1) : NULL;
            if (!nb)
                break;
            b = nb;
            cap *= 2;
        }
    }
    close(fd);
    if (!b)
        return;
    b[len] = 0;
    int argc = 0;
    for (size_t i = 0; i < len; i++)
        argc += b[i] == 0;
    char **argv = calloc((size_t)argc + 1, sizeof *argv);
    size_t lcap = 3 * len + 256;
    char *lb = malloc(lcap);
    if (argv && lb) {
        int k = 0;
        for (size_t i = 0; i < len && k < argc; i += strlen(b + i) + 1)
            argv[k++] = b + i;
        exp_line_t l;
        exp_line_begin(&l, lb, lcap, EXP_LOG_CMDLINE);
        exp_line_argv(&l, EXP_KEY_ARGV, argv, k);
        coll_log_write(&l);
    }
    free(lb);
    free(argv);
    free(b);
}

static void log_env(void)
{
    static const char *const names[] = { "LD_PRELOAD", "LD_LIBRARY_PATH", "OMP_NUM_THREADS" };
    char buf[8192];
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        size_t n = (size_t)(eq - *e);
        int want = !strncmp(*e, "TALLY_", 6);
        for (size_t i = 0; i < sizeof names / sizeof *names && !want; i++)
            want = strlen(names[i]) == n && !strncmp(*e, names[i], n);
        if (!want)
            continue;
        exp_line_t l;
        exp_line_begin(&l, buf, sizeof buf, EXP_LOG_ENV);
        exp_line_strn(&l, EXP_KEY_NAME, *e, n);
        exp_line_str(&l, EXP_KEY_VALUE, eq + 1);
        coll_log_write(&l);
    }
}

/* The settings record: the table's fields (settings.def) as this image uses them, then what the
 * collector found out (clock source, sync calibration, how states are split). */
static void log_settings(coll_proc_t *p)
{
    static exp_settings_t ls; /* one thread here: initialization or a fork child */
    char buf[1024];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_SETTINGS);
    ls = p->set;
    ls.sync.ns = trace_cfg.sync_threshold;
    sources_settings_in_use(p, &ls);
    exp_settings_log(&ls, &l);
    sources_log_settings(p, &l);
    trace_log_settings(&l);
    coll_log_write(&l);
    sources_log_decl(p);
}

/* `sample` record with getrusage(RUSAGE_SELF) figures, the process's I/O bytes and resident
 * set. AS-safe. */
void coll_log_sample(coll_proc_t *p, const char *reason, const char *label)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    char buf[512];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_SAMPLE);
    exp_line_u64(&l, EXP_KEY_T, coll_now());
    exp_line_u64(&l, EXP_KEY_ID, __atomic_fetch_add(&p->sample_id, 1, __ATOMIC_RELAXED));
    exp_line_str(&l, EXP_KEY_REASON, reason);
    exp_line_u64(&l, EXP_KEY_UTIME, (uint64_t)ru.ru_utime.tv_sec * 1000000000u +
                                  (uint64_t)ru.ru_utime.tv_usec * 1000u);
    exp_line_u64(&l, EXP_KEY_STIME, (uint64_t)ru.ru_stime.tv_sec * 1000000000u +
                                  (uint64_t)ru.ru_stime.tv_usec * 1000u);
    exp_line_u64(&l, EXP_KEY_MINFLT, (uint64_t)ru.ru_minflt);
    exp_line_u64(&l, EXP_KEY_MAJFLT, (uint64_t)ru.ru_majflt);
    exp_line_u64(&l, EXP_KEY_INBLOCK, (uint64_t)ru.ru_inblock);
    exp_line_u64(&l, EXP_KEY_OUBLOCK, (uint64_t)ru.ru_oublock);
    exp_line_u64(&l, EXP_KEY_NVCSW, (uint64_t)ru.ru_nvcsw);
    exp_line_u64(&l, EXP_KEY_NIVCSW, (uint64_t)ru.ru_nivcsw);
    exp_line_u64(&l, EXP_KEY_MAXRSS, (uint64_t)ru.ru_maxrss);
    char sbuf[256];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, sbuf, sizeof sbuf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n > 0)
        __atomic_add_fetch(&p->own_rchar, (uint64_t)n, __ATOMIC_RELAXED);
    if (n > 0) { /* size resident shared ...: pages */
        sbuf[n] = 0;
        const char *q = strchr(sbuf, ' ');
        if (q)
            exp_line_u64(&l, EXP_KEY_RSS, (uint64_t)strtoull(q + 1, NULL, 10) *
                                        (uint64_t)sysconf(_SC_PAGESIZE) / 1024u);
    }
    fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
    n = fd >= 0 ? read(fd, sbuf, sizeof sbuf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n > 0) { /* rchar, wchar: bytes read and written through system calls, less the
                  * collector's own reads of /proc (this read included) */
        sbuf[n] = 0;
        uint64_t own = __atomic_add_fetch(&p->own_rchar, (uint64_t)n, __ATOMIC_RELAXED);
        const char *r = strstr(sbuf, "rchar: "), *w = strstr(sbuf, "wchar: ");
        uint64_t rchar = r ? (uint64_t)strtoull(r + 7, NULL, 10) : 0;
        if (r)
            exp_line_u64(&l, EXP_KEY_RCHAR, rchar > own ? rchar - own : 0);
        if (w)
            exp_line_u64(&l, EXP_KEY_WCHAR, (uint64_t)strtoull(w + 7, NULL, 10));
    }
    if (label && *label)
        exp_line_str(&l, EXP_KEY_LABEL, label);
    coll_log_write(&l);
}

/* ---- descendants ----------------------------------------------------------------------------- */

/* Creates <parent>/<prefix><n>.tally for the smallest n for which mkdir succeeds. */
static int make_child_dir(const char *parent, const char *prefix, char *out, size_t cap,
                          char *name, size_t ncap)
{
    for (unsigned n = 1; n < 1000000; n++) {
        snprintf(name, ncap, "%s%u.tally", prefix, n);
        path_join(out, cap, parent, name);
        if (mkdir(out, 0777) == 0)
            return 0;
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

/* Creates <parent>/_r<rank>.tally for the first image of an MPI rank (another one with that
 * name, as MPI_Comm_spawn's children have: _r<rank>.<n>.tally). */
static int make_rank_dir(const char *parent, uint64_t rank, char *out, size_t cap, char *name,
                         size_t ncap)
{
    char r[24];
    r[exp_fmt_u64(r, rank)] = 0;
    for (unsigned n = 1; n < 1000000; n++) {
        if (n == 1)
            snprintf(name, ncap, "_r%s.tally", r);
        else
            snprintf(name, ncap, "_r%s.%u.tally", r, n);
        path_join(out, cap, parent, name);
        if (mkdir(out, 0777) == 0)
            return 0;
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

/* `mpi` record: the rank this image is, as its launcher said (-M on). */
static void log_mpi(const exp_mpi_rank_t *mr)
{
    char buf[512];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_MPI);
    exp_line_u64(&l, EXP_KEY_RANK, mr->rank);
    if (mr->size)
        exp_line_u64(&l, EXP_KEY_SIZE, mr->size);
    exp_line_str(&l, EXP_KEY_LAUNCHER, mr->launcher);
    if (mr->job[0])
        exp_line_str(&l, EXP_KEY_JOB, mr->job);
    coll_log_write(&l);
}

static void log_descendant(int fd, const char *kind, const char *name)
{
    char buf[1024];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_DESCENDANT);
    exp_line_u64(&l, EXP_KEY_T, coll_now());
    exp_line_str(&l, EXP_KEY_KIND, kind);
    exp_line_str(&l, EXP_KEY_DIR, name);
    exp_line_u64(&l, EXP_KEY_PID, (uint64_t)getpid());
    exp_line_write(&l, fd);
}


/* Opens the experiment files of this image in p->dir and writes the opening records. Returns 0,
 * or -1 when not even the log could be written (then the program runs unprofiled). */
static int open_experiment(coll_proc_t *p)
{
    char path[PATH_MAX + 64];
    path_join(path, sizeof path, p->dir, "log");
    coll_fd_room_enter();
    int fd = p->log_fd >= 0 ? p->log_fd : exp_log_create(path);
    if (fd >= 0)
        fd = coll_high_fd(fd);
    coll_fd_room_leave();
    if (fd < 0) {
        /* the root's driver (tally collect, its parent) finds no log and says so: one message */
        if (getpid() == (pid_t)p->set.root_pid && !p->is_descendant &&
            p->set.driver_pid == (uint64_t)getppid())
            return -1;
        char msg[PATH_MAX + 200];
        int n = snprintf(msg, sizeof msg,
                         "tally collector: cannot write the experiment log '%s': %s; the program "
                         "runs unprofiled\n",
                         path, strerror(-fd));
        if (write(2, msg, (size_t)n) < 0) {
        }
        return -1;
    }
    p->log_fd = fd;
    p->ev_ok = 0;
    { /* always there, even without clock profiling: a reader finds a valid, empty file */
        path_join(path, sizeof path, p->dir, "events");
        coll_fd_room_enter();
        int efd = coll_high_fd(open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
        int e = errno;
        coll_fd_room_leave();
        int rc = efd < 0 ? -e : exp_evfile_init_fd(&p->evfile, efd,
                                                        (uint32_t)getpid(), p->t_start, 0);
        if (rc == 0) {
            p->ev_ok = 1;
        } else {
            if (efd >= 0)
                coll_close(p->evfile.fd >= 0 ? p->evfile.fd : efd);
            p->evfile.fd = -1;
            char msg[PATH_MAX + 200];
            snprintf(msg, sizeof msg, "cannot create the events file '%s': %s; no clock profile",
                     path, strerror(-rc));
            coll_warn(msg);
        }
    }
    log_start(p);
    log_cmdline();
    log_env();
    return 0;
}

/* ---- initialization -------------------------------------------------------------------------- */

/* Whether the whole of name, or of its last path component, matches re. */
static int name_matches(const regex_t *re, const char *name)
{
    regmatch_t m;
    const char *slash = strrchr(name, '/');
    const char *cand[2] = { name, slash ? slash + 1 : NULL };
    for (int i = 0; i < 2; i++)
        if (cand[i] && *cand[i] && regexec(re, cand[i], 1, &m, 0) == 0 && m.rm_so == 0 &&
            cand[i][m.rm_eo] == 0)
            return 1;
    return 0;
}

/* -F =REGEX: is this new image (an exec or a spawn of a followed process) one to record? Its
 * executable (the path or the file name) or its argv[0] must match the whole expression. The
 * driver checked that the expression compiles; one that does not here follows nothing. */
static int follow_regex_matches(const char *spec)
{
    regex_t re;
    if (regcomp(&re, spec, REG_EXTENDED) != 0)
        return 0;
    char exe[PATH_MAX], arg0[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    int match = name_matches(&re, exe);
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (!match && fd >= 0) {
        ssize_t r = read(fd, arg0, sizeof arg0 - 1);
        arg0[r > 0 ? r : 0] = 0;
        match = name_matches(&re, arg0);
    }
    if (fd >= 0)
        close(fd);
    regfree(&re);
    return match;
}

static void init_process(coll_proc_t *p)
{
    interpose_resolve();
    p->pid = getpid();
    int ps = parse_settings(p);
    if (ps) {
        if (ps < 0)
            give_up(p);
        return;
    }
    p->t_start = coll_now();
    Dl_info di;
    if (dladdr((void *)coll_ensure_init, &di) && di.dli_fname)
        snprintf(p->self_path, sizeof p->self_path, "%s", di.dli_fname);
    /* the image that built our TALLY_SETTINGS is this process (an exec) or another (a spawn) */
    const char *kind = (pid_t)p->set.owner_pid == p->pid ? "exec" : "spawn";

    int is_root = 0;
    char path[PATH_MAX + 64];
    exp_mpi_rank_t mr;
    int is_rank = p->set.mpi && exp_mpi_rank(environ, &mr);
    p->mpi_rank1 = is_rank ? mr.rank + 1 : 0;
    if (p->set.mpi) { /* libtally-mpi.so: beside the collector */
        const char *slash = strrchr(p->self_path, '/');
        int dl = slash ? (int)(slash - p->self_path) : 1;
        snprintf(p->mpi_path, sizeof p->mpi_path, "%.*s/libtally-mpi.so", dl,
                 slash ? p->self_path : ".");
    }
    if ((pid_t)p->set.root_pid == p->pid) {
        path_join(path, sizeof path, p->dir, "log");
        int fd = exp_log_create(path);
        if (fd >= 0) {
            is_root = 1;
            p->log_fd = fd;
        } else if (fd != -EEXIST) {
            p->log_fd = -1;
            open_experiment(p); /* prints why on stderr */
            give_up(p);
            return;
        }
    }
    if (!is_root) {
        if (!p->follow)
            return; /* a descendant that should not be profiled: leave it alone */
        if (p->set.follow_regex.s[0] && !follow_regex_matches(p->set.follow_regex.s))
            return; /* not one -F =REGEX names: unprofiled, its own descendants may be */
        char dir[PATH_MAX], name[64];
        /* the first image of an MPI rank (its parent image is not that rank: mpirun, orted, the
         * Hydra proxy) is named by its rank */
        int rc = is_rank && p->set.parent_rank != mr.rank + 1
                     ? make_rank_dir(p->dir, mr.rank, dir, sizeof dir, name, sizeof name)
                     : make_child_dir(p->dir, "_x", dir, sizeof dir, name, sizeof name);
        if (rc) {
            /* said once: by the first image that failed in this directory, or by the image
             * that owns it (a directory without a log is one whose image could not start) */
            path_join(path, sizeof path, p->dir, "log");
            char msg[PATH_MAX + 200];
            int n = snprintf(msg, sizeof msg,
                             "tally collector: cannot create a descendant experiment in '%s': %s; "
                             "this process runs unprofiled\n", p->dir, strerror(-rc));
            if (access(path, F_OK) == 0 && write(2, msg, (size_t)n) < 0) {
            }
            give_up(p);
            return;
        }
        path_join(path, sizeof path, p->dir, "log");
        int pfd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (pfd >= 0) {
            log_descendant(pfd, kind, name);
            close(pfd);
        }
        snprintf(p->dir, sizeof p->dir, "%s", dir);
    }
    p->is_descendant = !is_root;
    /* the origin of the duration window: the root's start as the driver or the parent image
     * passed it, else this image's own start */
    p->root_t0 = p->set.root_t0 ? p->set.root_t0 : p->t_start;
    if (p->has_window) {
        p->win_lo += p->root_t0;
        p->win_hi = p->win_hi == UINT64_MAX ? UINT64_MAX : p->win_hi + p->root_t0;
    }
    if (open_experiment(p)) {
        give_up(p);
        return;
    }
    if (is_rank)
        log_mpi(&mr);

    coll_fd_room_enter(); /* libunwind opens its pipe here (interpose.c moves it up) */
    unwind_init();
    coll_fd_room_leave();
    sources_proc_init(p);
    log_settings(p);
    blocks_settings(p); /* after the log: its warnings go there */
    signals_install_fatal(p);
    interpose_init(p);
    p->enabled = 1;
    maps_rescan(p);
    coll_log_sample(p, "start", NULL);
    threads_start(p, (pid_t)syscall(SYS_gettid) == p->pid ? "main" : "pthread_create");
    sampler_initial_pause(p, "start");
    sampler_start(p);
    interpose_mark_thread();
    trace_start(p); /* last: nothing the collector did while starting is traced */
}

int coll_ensure_init(void)
{
    coll_proc_t *p = &coll_proc;
    int s = __atomic_load_n(&p->init_state, __ATOMIC_ACQUIRE);
    if (s == 2)
        return p->enabled;
    int zero = 0;
    if (__atomic_compare_exchange_n(&p->init_state, &zero, 1, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        int saved = errno;
        init_tid = (pid_t)syscall(SYS_gettid);
        trace_thr.guard++; /* libc working for the collector (setenv, ...) is not the program */
        init_process(p);
        trace_thr.guard--;
        __atomic_store_n(&p->init_state, 2, __ATOMIC_RELEASE);
        heap_init_done();
        if (p->enabled) { /* (through the collector API, which needs init_state 2) */
            trace_thr.guard++; /* dlsym's allocations are the collector's, not the program's */
            ompstate_process_start();
            trace_thr.guard--;
        }
        errno = saved;
        return p->enabled;
    }
    if (init_tid == (pid_t)syscall(SYS_gettid))
        return 0; /* called from inside the initialization itself */
    while (__atomic_load_n(&p->init_state, __ATOMIC_ACQUIRE) != 2)
        sched_yield();
    return p->enabled;
}

__attribute__((constructor)) static void collector_constructor(void)
{
    coll_ensure_init();
}

/* ---- the end --------------------------------------------------------------------------------- */

static void log_stats(coll_proc_t *p)
{
    coll_stats_t *st = &p->st;
    char buf[1024];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_STATS);
    exp_line_u64(&l, EXP_KEY_SAMPLES, st->samples);
    exp_line_u64(&l, EXP_KEY_EXPECTED, p->interval_ns ? st->profiled_ns / p->interval_ns : 0);
    exp_line_u64(&l, EXP_KEY_UNWIND_FAILURES, st->unwind_failures);
    exp_line_u64(&l, EXP_KEY_DROPPED_BUSY, st->dropped_busy);
    exp_line_u64(&l, EXP_KEY_DROPPED_DISK, st->dropped_disk);
    exp_line_u64(&l, EXP_KEY_TRUNCATED_STACKS, st->truncated_stacks);
    exp_line_u64(&l, EXP_KEY_STACKS, st->stacks);
    exp_line_u64(&l, EXP_KEY_PROFILED_NS, st->profiled_ns);
    exp_line_u64(&l, EXP_KEY_RING_LOST, st->ring_lost);
    exp_line_u64(&l, EXP_KEY_UNWIND_NO_ROOM, st->unwind_no_room);
    int disk_full = __atomic_load_n(&p->evfile.disk_full, __ATOMIC_RELAXED);
    exp_line_u64(&l, EXP_KEY_DISK_FULL, (uint64_t)disk_full);
    exp_line_u64(&l, EXP_KEY_SAMPLER_CPU, sampler_cpu_ns(p));
    sampler_log_stats(p, &l);
    trace_log_stats(&l);
    coll_log_write(&l);
    sampler_warn_stretched(p);
    trace_warn_dropped(disk_full);
    char msg[160];
    if (st->dropped_disk) {
        static const char t[] = " clock events were lost: no disk space for the events file";
        size_t n = exp_fmt_u64(msg, st->dropped_disk);
        memcpy(msg + n, t, sizeof t);
        coll_warn(msg);
    }
    if (st->unwind_no_room) {
        static const char t[] = " clock samples have only their PC: they landed on a stack too "
                                "small to unwind on (a program's small alternate signal stack)";
        size_t n = exp_fmt_u64(msg, st->unwind_no_room);
        memcpy(msg + n, t, sizeof t);
        coll_warn(msg);
    }
    if (st->dropped_busy + st->ring_lost) {
        static const char t[] = " clock events were dropped (writer busy or kernel ring full)";
        size_t n = exp_fmt_u64(msg, st->dropped_busy + st->ring_lost);
        memcpy(msg + n, t, sizeof t);
        coll_warn(msg);
    }
}

void coll_finalize(const char *how, int status, int sig)
{
    coll_proc_t *p = &coll_proc;
    if (!p->enabled || getpid() != p->pid)
        return;
    /* the profiled blocks' end-of-image profile is written while recording still goes on: what
     * it costs (fresh pages of the log, a membarrier) is counted by a counter of the thread and
     * so must be recorded too, not lost after `final` (its own guard makes it once) */
    int saved = errno;
    blocks_end_image();
    errno = saved;
    if (__atomic_exchange_n(&p->final, 1, __ATOMIC_ACQ_REL))
        return;
    trace_stop();
    counters_final(p);
    threads_stop(p);
    threads_end_others(p);
    log_stats(p);
    counters_log_stats(p);
    coll_log_sample(p, "end", NULL);
    char buf[256];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_END);
    exp_line_u64(&l, EXP_KEY_T, coll_now());
    exp_line_str(&l, EXP_KEY_HOW, how);
    if (!strcmp(how, "exit"))
        exp_line_u64(&l, EXP_KEY_STATUS, (uint64_t)(status & 0xff));
    if (!strcmp(how, "signal")) {
        char name[32] = "SIG";
        const char *ab = sigabbrev_np(sig);
        if (ab && strlen(ab) < sizeof name - 4)
            memcpy(name + 3, ab, strlen(ab) + 1);
        else
            name[0] = 0;
        exp_line_u64(&l, EXP_KEY_SIGNAL, (uint64_t)sig);
        exp_line_str(&l, EXP_KEY_NAME, name);
    }
    coll_log_write(&l);
    errno = saved;
}

void coll_unfinalize(void)
{
    __atomic_store_n(&coll_proc.final, 0, __ATOMIC_RELEASE);
    trace_start(&coll_proc); /* the exec failed: the process goes on */
}

/* The process is exiting with status (on_exit callback, registered in the constructor, so it
 * runs after every other exit handler and after the destructors). */
void coll_exiting(int status)
{
    coll_proc_t *p = &coll_proc;
    if (!p->enabled || getpid() != p->pid || __atomic_load_n(&p->final, __ATOMIC_ACQUIRE))
        return;
    int saved = errno;
    maps_rescan(p);
    coll_finalize("exit", status, 0);
    errno = saved;
}

/* ---- fork child ------------------------------------------------------------------------------ */

static void after_fork(void)
{
    coll_proc_t *p = &coll_proc;
    int parent_log = p->log_fd;
    p->pid = getpid();
    threads_after_fork_child(p);
    maps_after_fork();
    if (p->evfile.fd >= 0)
        coll_close(p->evfile.fd);
    p->evfile.fd = -1;
    p->ev_ok = 0;
    p->log_fd = -1;
    memset(&p->st, 0, sizeof p->st);
    p->final = 0;
    p->sample_id = 0;
    sampler_forget(p); /* the parent's sampler descriptors, whether or not the child is followed */
    if (!p->follow) {
        if (parent_log >= 0)
            coll_close(parent_log);
        p->enabled = 0;
        return;
    }
    char dir[PATH_MAX], name[64];
    int rc = make_child_dir(p->dir, "_f", dir, sizeof dir, name, sizeof name);
    if (rc == 0 && parent_log >= 0)
        log_descendant(parent_log, "fork", name);
    if (parent_log >= 0)
        coll_close(parent_log);
    if (rc) {
        p->enabled = 0;
        return;
    }
    snprintf(p->dir, sizeof p->dir, "%s", dir);
    p->t_start = coll_now();
    if (open_experiment(p)) {
        p->enabled = 0;
        return;
    }
    log_settings(p);
    maps_rescan(p);
    coll_log_sample(p, "start", NULL);
    threads_start(p, "fork-child");
    sampler_initial_pause(p, "fork");
    sampler_start(p);
    interpose_mark_thread();
}

void coll_after_fork_child(void)
{
    fd_room_lock = 0; /* a thread of the parent may have held it: it is not in this process */
    trace_after_fork_child(); /* first: the parent's trace streams are not this process's */
    trace_thr.guard++;
    after_fork();
    if (coll_proc.enabled) {
        api_log_declarations(); /* the collector API's declarations, in the child's own log */
        blocks_after_fork_child();
    }
    trace_thr.guard--;
    trace_start(&coll_proc);
    if (coll_proc.enabled)
        blocks_after_fork_trace();
}
