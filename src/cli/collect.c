/*
 * collect.c - `tally collect`: runs a program with the collector preloaded and records an
 * experiment (docs/FORMAT.md). Sections: options, the program, the experiment name, running.
 *
 * The driver creates the experiment directory, starts the target with LD_PRELOAD and one
 * variable, TALLY_SETTINGS (the interface to src/collector: experiment/settings.h), waits
 * for it, and appends the root process's final `end` record from waitpid, so that even a target
 * killed with SIGKILL leaves an experiment that says how it ended.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <getopt.h>
#include <libgen.h>
#include <regex.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "archive.h"
#include "collect_mpi.h"
#include "base/monotime.h"
#include "cli.h"
#include "collect.h"
#include "hwc.h"
#include "experiment/logfile.h"
#include "experiment/reader.h"
#include "experiment/blocksel.h"
#include "experiment/settings.h"
#include "experiment/evwriter.h"
#include "experiment/logrec.h"

#ifndef TALLY_INSTALL_LIBDIR
#define TALLY_INSTALL_LIBDIR "lib"
#endif
#ifndef TALLY_VERSION
#define TALLY_VERSION "(unknown version)"
#endif

/* ---- options ------------------------------------------------------------------------------- */

static void usage(FILE *out)
{
    esc_fprintf(out,
        "usage: tally collect [options] program [args...]\n"
        "\n"
        "Runs program with the collector and records an experiment, <program>.<n>.tally.\n"
        "\n"
        "options:\n"
        "  -p, --clock=[+]on|off|hi|lo|<ms> clock profiling: on = 10 ms (default), hi = 1 ms,\n"
        "                                  lo = 100 ms, or an interval in milliseconds (e.g. 0.5,\n"
        "                                  5ms, or 500us); '+' (+on, +hi) also records each\n"
        "                                  sample's instruction and registers for dataspace\n"
        "                                  profiling (tally print -data_objects)\n"
        "  -h, --counters=[+]CTR[,INT],... counter overflow profiling: a sample every INT events\n"
        "                                  (on, hi, lo or a number) of each counter CTR: an alias\n"
        "                                  (cycles, insts, ...), a software event (page-faults,\n"
        "                                  context-switches, ...), a raw code r<hex>, a libpfm4\n"
        "                                  name, or a data breakpoint mem:<addr|symbol>[/len][:w];\n"
        "                                  '+' also records each event's data address. -h alone\n"
        "                                  lists the counters of this machine\n"
        "  -F, --follow=on|off|all|=REGEX  follow descendant processes (fork, exec, spawn); on;\n"
        "                                  =REGEX: only new programs whose name (file name or\n"
        "                                  path, or argv[0]) the whole extended regex matches\n"
        "  -t, --duration=<t>|<a>-<b>      record only the first <t>, or from a to b; seconds,\n"
        "                                  or with a suffix s or m (minutes): 30s, 2m, 10s-1m\n"
        "  -o, --output=PATH               experiment name, or path (DIR/NAME); a name ending\n"
        "                                  in .er or .tally is kept as given, others get .tally\n"
        "                                  (default <program>.<n>.tally)\n"
        "  -O, --overwrite=PATH            as -o, and an existing experiment there is removed\n"
        "  -d, --directory=DIR             put the experiment in DIR (created if missing)\n"
        "  -C, --comment=LABEL             a comment recorded in the experiment, shown by\n"
        "                                  'tally print -header' (up to 10)\n"
        "      --max-depth=N               deepest call stack recorded (default 1024 frames)\n"
        "  -S, --samples=on|off|<s>        periodic sample packets: on = every second (default)\n"
        "  -l, --sample-signal=SIG         record a sample packet when the program gets SIG\n"
        "  -y, --pause-signal=SIG[,r]      SIG pauses and resumes collection; as gprofng's,\n"
        "                                  the run starts paused (SIG starts recording)\n"
        "                                  unless ',r' is given (starts recording)\n"
        "      --states=on|off             thread states (wait CPU, lock, I/O, sleep); on\n"
        "  -A, --archive=on|off|src        after the run, copy the binaries used into the\n"
        "                                  experiment (on, the default), also the sources (src)\n"
        "  -a KEYWORD                      gprofng's spelling of -A: off; on, ldobjects or\n"
        "                                  usedldobjects (= on); src or usedsrc (= src)\n"
        "  -s, --sync=on|off|<us>|all[,n]  synchronization wait tracing: waits in mutexes,\n"
        "                                  rwlocks, condition variables, semaphores, joins,\n"
        "                                  barriers and spin locks at least as long as a\n"
        "                                  threshold: on (or calibrate) = calibrated, <us>\n"
        "                                  microseconds, all = every call (off by default);\n"
        "                                  ',n' (gprofng's native-API scope) is what tally\n"
        "                                  traces anyway\n"
        "  -H, --heap=on|off               heap tracing: the malloc family, mmap and munmap\n"
        "      --heap-map=on|off           with dataspace data and no -H: record heap blocks of\n"
        "                                  4 KiB or more and 1 in 64 smaller ones, to name\n"
        "                                  addresses in them by allocation site (on)\n"
        "  -i, --io=on|off                 I/O tracing: read, write, open, close, stdio, ...\n"
        "      --blocks=on|off|FILE        profiled blocks (tally_start/tally_stop, programs\n"
        "                                  built with -finstrument-functions): on (default),\n"
        "                                  off, or only those a selective file in TAU's syntax\n"
        "                                  selects (BEGIN_EXCLUDE_LIST ... END_EXCLUDE_LIST)\n"
        "      --block-metrics=LIST        what blocks measure: wall (default), cpu (thread CPU\n"
        "                                  time) and counters (as -h names them, e.g.\n"
        "                                  page-faults), at most 4, e.g. wall,cpu,page-faults\n"
        "      --block-trace=on|off        also record when each block is entered and exited\n"
        "                                  (a timeline: tally export --format=chrome shows\n"
        "                                  the blocks as slices); off by default: the profile\n"
        "                                  alone does not grow with calls\n"
        "  -M, --mpi=on|off                MPI tracing: calls, messages, bytes per rank; as\n"
        "                                  'tally collect -M on mpirun ... ./app' or 'mpirun\n"
        "                                  ... tally collect -M on ./app': one experiment for\n"
        "                                  the job, _r<rank>.tally for each rank\n"
        "  -n, --dry-run                   print what would be done, run nothing\n"
        "  -v, --verbose                   print the settings (as -n does) before running\n"
        "  -V, --version                   print tally's version and exit\n"
        "      --help                      this text\n"
        "\n"
        "With no arguments, prints this text, the counters and what clock profiling can do on\n"
        "this system.\n");
}

/* -s: on or calibrate (calibrated), off, all (every call, threshold 0) or a threshold in
 * microseconds, optionally followed by gprofng's scope ",n" (native APIs: what tally traces).
 * -1: a bad value; -2: a scope tally cannot trace (Java). */
static int parse_sync(const char *v, struct collect_opts *o)
{
    char val[64];
    const char *comma = strchr(v, ',');
    size_t n = comma ? (size_t)(comma - v) : strlen(v);
    if (n >= sizeof val)
        return -1;
    if (comma) {
        if (!comma[1] || comma[1 + strspn(comma + 1, "nj")])
            return -1;
        if (strchr(comma + 1, 'j'))
            return -2;
    }
    memcpy(val, v, n);
    val[n] = 0;
    if (!strcmp(val, "off")) {
        o->sync = NULL;
        return 0;
    }
    if (!strcmp(val, "on") || !strcmp(val, "calibrate")) {
        o->sync = "on";
        return 0;
    }
    if (!strcmp(val, "all")) {
        o->sync = "all";
        return 0;
    }
    char *end;
    errno = 0;
    double us = strtod(val, &end);
    if (errno || end == val || *end || !(us >= 0) || us > 1e9)
        return -1;
    snprintf(o->sync_ns, sizeof o->sync_ns, "%llu", (unsigned long long)(us * 1e3 + 0.5));
    o->sync = o->sync_ns;
    return 0;
}

/* --blocks: on, off, or a selective file, checked now (its errors name the line). */
static int parse_blocks(const char *v, struct collect_opts *o)
{
    if (!strcmp(v, "on") || !strcmp(v, "off")) {
        snprintf(o->blocks, sizeof o->blocks, "%s", strcmp(v, "on") ? "off" : "");
        return 0;
    }
    char *abs = realpath(v, NULL);
    FILE *f = abs ? fopen(abs, "r") : NULL;
    if (!f) {
        cli_error("collect", "cannot read the selective file '%s' of --blocks: %s (use on, off "
                  "or a file in TAU's selective instrumentation syntax)", v, strerror(errno));
        free(abs);
        return -1;
    }
    static char text[1 << 20];
    static blocksel_t sel;
    size_t n = fread(text, 1, sizeof text, f);
    int too_big = n == sizeof text;
    fclose(f);
    unsigned line = 0;
    const char *why = NULL;
    if (too_big || strlen(abs) >= sizeof o->blocks ||
        blocksel_parse(&sel, text, n, &line, &why)) {
        if (too_big || !why)
            cli_error("collect", "the selective file '%s' is too large or its path too long", v);
        else
            cli_error("collect", "%s:%u: %s", v, line, why);
        free(abs);
        return -1;
    }
    snprintf(o->blocks, sizeof o->blocks, "%s", abs);
    free(abs);
    return 0;
}

/* --block-metrics: wall, cpu and counter names, each at most once, at most 4 (the counters are
 * checked by collect_block_counters once the program is known). */
static int parse_block_metrics(const char *v, struct collect_opts *o)
{
    char copy[256], *save = NULL;
    if (strlen(v) >= sizeof copy || !*v)
        return -1;
    snprintf(copy, sizeof copy, "%s", v);
    const char *seen[4];
    int n = 0;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == 4 || *t == '+')
            return -1;
        for (int i = 0; i < n; i++)
            if (!strcmp(seen[i], t))
                return -1;
        seen[n++] = t;
    }
    if (!n || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
        return -1;
    snprintf(o->block_metrics, sizeof o->block_metrics, "%s", strcmp(v, "wall") ? v : "");
    return 0;
}

int collect_block_counters(struct collect_opts *o, const char *prog, char *why, size_t cap)
{
    char copy[256], *save = NULL;
    size_t len = 0;
    o->block_counters[0] = 0;
    snprintf(copy, sizeof copy, "%s", o->block_metrics);
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "wall") || !strcmp(t, "cpu"))
            continue;
        hwc_set_t set = { .n = 0 };
        char hwhy[768];
        if (hwc_parse(t, prog, &set, hwhy, sizeof hwhy)) {
            snprintf(why, cap, "--block-metrics: %s", hwhy);
            return -1;
        }
        const hwc_counter_t *c = &set.c[0];
        if (c->attr.type == PERF_TYPE_BREAKPOINT || (c->flags & HWC_NPR)) {
            snprintf(why, cap, "--block-metrics: '%s' cannot be a quantity of blocks: %s", t,
                     c->attr.type == PERF_TYPE_BREAKPOINT
                         ? "a data breakpoint is a sampling event (use it with -h)"
                         : "it counts a whole CPU (an uncore PMU's event), not the thread");
            return -1;
        }
        int w = snprintf(o->block_counters + len, sizeof o->block_counters - len,
                         "%s%u:%llu:%llu:%llu", len ? ";" : "", (unsigned)c->attr.type,
                         (unsigned long long)c->attr.config,
                         (unsigned long long)c->attr.config1,
                         (unsigned long long)c->attr.config2);
        if (w < 0 || (size_t)w >= sizeof o->block_counters - len) {
            snprintf(why, cap, "--block-metrics: too many counters");
            return -1;
        }
        len += (size_t)w;
    }
    return 0;
}

static int parse_onoff(const char *v, int *out)
{
    if (!strcmp(v, "on"))
        *out = 1;
    else if (!strcmp(v, "off"))
        *out = 0;
    else
        return -1;
    return 0;
}

/* "on" / "off" / "hi" / "lo" / milliseconds, bare or with "ms", or microseconds with "us"
 * -> ns (0 = off); a leading '+' (not with off) asks for dataspace data (*mref). */
static int parse_clock(const char *v, uint64_t *ns, int *mref)
{
    *mref = *v == '+';
    if (*mref && !strcmp(++v, "off"))
        return -1;
    if (!strcmp(v, "on"))
        *ns = 10000000;
    else if (!strcmp(v, "off"))
        *ns = 0;
    else if (!strcmp(v, "hi") || !strcmp(v, "high"))
        *ns = 1000000;
    else if (!strcmp(v, "lo") || !strcmp(v, "low"))
        *ns = 100000000;
    else {
        char *end;
        errno = 0;
        double ms = strtod(v, &end);
        if (end != v && !strcmp(end, "us")) {
            ms /= 1000;
            end += 2;
        } else if (end != v && !strcmp(end, "ms")) {
            end += 2;
        }
        if (errno || end == v || *end || !(ms >= 0.01) || ms > 10000)
            return -1;
        *ns = (uint64_t)(ms * 1e6 + 0.5);
    }
    return 0;
}

/* "SIGUSR1", "USR1" or a number -> signal number; 0 when not a signal a program may use. */
static int parse_signal(const char *v)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (end != v && !*end)
        return n > 0 && n < NSIG && n != SIGKILL && n != SIGSTOP ? (int)n : 0;
    const char *name = strncmp(v, "SIG", 3) ? v : v + 3;
    for (int sig = 1; sig < NSIG; sig++) {
        const char *ab = sigabbrev_np(sig);
        if (ab && !strcmp(ab, name))
            return sig == SIGKILL || sig == SIGSTOP ? 0 : sig;
    }
    return 0;
}

static int parse_seconds(const char *s, const char *end, uint64_t *ns)
{
    char buf[64];
    size_t n = (size_t)(end - s);
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *e;
    errno = 0;
    double sec = strtod(buf, &e);
    if (e != buf && (!strcmp(e, "m") || !strcmp(e, "s"))) { /* gprofng's suffixes */
        if (*e == 'm')
            sec *= 60;
        e++;
    }
    if (errno || e == buf || *e || !(sec >= 0) || sec > 1e7)
        return -1;
    *ns = (uint64_t)(sec * 1e9 + 0.5);
    return 0;
}

static int parse_duration(const char *v, struct collect_opts *o)
{
    const char *dash = strchr(v, '-');
    o->has_duration = 1;
    if (!dash) {
        o->dur_start = 0;
        return parse_seconds(v, v + strlen(v), &o->dur_end) || o->dur_end == 0 ? -1 : 0;
    }
    if (parse_seconds(v, dash, &o->dur_start) ||
        parse_seconds(dash + 1, dash + 1 + strlen(dash + 1), &o->dur_end) ||
        o->dur_end <= o->dur_start)
        return -1;
    return 0;
}

/* ---- what this system can do ---------------------------------------------------------------- */

static long read_long_file(const char *path, long dflt)
{
    FILE *f = fopen(path, "r");
    long v = dflt;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = dflt;
        fclose(f);
    }
    return v;
}

/* Whether a per-thread task-clock event can be opened here (the collector's preferred source). */
static int task_clock_available(void)
{
    struct perf_event_attr a = { 0 };
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = 1000000;
    a.disabled = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

static void print_capabilities(void)
{
    long max_rate = read_long_file("/proc/sys/kernel/perf_event_max_sample_rate", 100000);
    long paranoid = read_long_file("/proc/sys/kernel/perf_event_paranoid", 2);
    struct timespec res;
    clock_getres(CLOCK_THREAD_CPUTIME_ID, &res);
    esc_printf("\nClock profiling on this system:\n");
    if (task_clock_available()) {
        double min_ms = max_rate > 0 ? 1000.0 / (double)max_rate : 0.01;
        esc_printf("  source: per-thread task-clock events (perf_event_open); samples know user and\n"
               "          system mode; each sample is weighted by the CPU time that really passed\n");
        esc_printf("  range: %.3f ms (perf_event_max_sample_rate = %ld/s) to 10000 ms; resolution "
               "%ld ns\n", min_ms < 0.01 ? 0.01 : min_ms, max_rate,
               (long)(res.tv_sec * 1000000000L + res.tv_nsec));
    } else {
        esc_printf("  source: CPU-time timers (perf_event_open is not permitted here: "
               "perf_event_paranoid = %ld);\n"
               "          they fire on scheduler ticks, so intervals below one tick are rounded\n"
               "          up; samples are weighted by the CPU time that really passed\n", paranoid);
        esc_printf("  range: 1 ms to 10000 ms; resolution one scheduler tick\n");
    }
    esc_printf("  default: on = 10 ms, hi = 1 ms, lo = 100 ms\n");
}

/* ---- the program ---------------------------------------------------------------------------- */

static const char *find_program(const char *prog, char *path, size_t cap);

/* -h takes the next argument as its counter list, so 'tally collect -h ./prog' leaves no program
 * (the other options check their values as they are parsed, and say so). When argv[end - 1] is
 * -h's value and looks like the program (a path to an executable file), says so and returns 1;
 * else 0. */
static int swallowed_program(int argc, char **argv, int end)
{
    if (end < 3)
        return 0;
    const char *opt = argv[end - 2], *val = argv[end - 1];
    char path[PATH_MAX];
    struct stat st;
    if (strcmp(opt, "-h") || !strchr(val, '/') || find_program(val, path, sizeof path) ||
        stat(path, &st) || !S_ISREG(st.st_mode) || access(path, X_OK))
        return 0;
    cli_error("collect", "'-h' takes a counter list (e.g. -h cycles,on; 'tally collect -h' alone "
              "lists them), so '%s' was taken as counters%s; '%s' looks like the program: did "
              "you mean 'tally collect -h <counters> %s%s'?", val,
              end >= argc ? " and no program is left to run" : "", val, val,
              end < argc ? " ..." : "");
    return 1;
}

/* Finds program as execvp would; fills path or returns an error message. */
static const char *find_program(const char *prog, char *path, size_t cap)
{
    struct stat st;
    if (strchr(prog, '/')) {
        snprintf(path, cap, "%s", prog);
    } else {
        const char *pathenv = getenv("PATH");
        if (!pathenv || !*pathenv)
            pathenv = "/usr/local/bin:/usr/bin:/bin";
        int found = 0;
        for (const char *p = pathenv; *p && !found;) {
            const char *colon = strchr(p, ':');
            size_t n = colon ? (size_t)(colon - p) : strlen(p);
            snprintf(path, cap, "%.*s%s%s", (int)n, p, n ? "/" : "", prog);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0)
                found = 1;
            p += n + (colon ? 1 : 0);
        }
        if (!found)
            return "not found in PATH";
    }
    if (stat(path, &st) < 0)
        return errno == ENOENT ? "no such file" : strerror(errno);
    if (S_ISDIR(st.st_mode))
        return "is a directory";
    if (!S_ISREG(st.st_mode))
        return "is not a regular file";
    if (access(path, X_OK) < 0)
        return "is not executable (chmod +x?)";
    return NULL;
}

/* The collector library: $TALLY_COLLECTOR, beside the executable, or in the install libdir. */
static int find_collector(char *out, size_t cap)
{
    const char *env = getenv("TALLY_COLLECTOR");
    const char *cands[3];
    char a[PATH_MAX], b[PATH_MAX];
    snprintf(a, sizeof a, "%s/libtally-collector.so", cli_self_dir());
    snprintf(b, sizeof b, "%s/../%s/libtally-collector.so", cli_self_dir(), TALLY_INSTALL_LIBDIR);
    cands[0] = env;
    cands[1] = a;
    cands[2] = b;
    for (int i = 0; i < 3; i++)
        if (cands[i] && access(cands[i], R_OK) == 0 && realpath(cands[i], out) && strlen(out) < cap)
            return 0;
    return -1;
}

/* ---- why the collector may not start in the program ----------------------------------------- */

/* 1: an ELF file with a program interpreter (dynamically linked), 0: an ELF file without one
 * (statically linked: no loader, so no LD_PRELOAD), -1: not ELF or unreadable. */
static int elf_dynamic(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    Elf64_Ehdr eh;
    int rc = -1;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr) &&
        eh.e_phnum < 4096) {
        rc = 0;
        for (unsigned i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph) {
                rc = -1;
                break;
            }
            if (ph.p_type == PT_INTERP) {
                rc = 1;
                break;
            }
        }
    }
    close(fd);
    return rc;
}

/* The interpreter of a '#!' script into out; 0, or -1 when path is not a script. */
static int script_interp(const char *path, char *out, size_t cap)
{
    char b[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, b, sizeof b - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n < 3 || b[0] != '#' || b[1] != '!')
        return -1;
    b[n] = 0;
    char *p = b + 2;
    p += strspn(p, " \t");
    size_t l = strcspn(p, " \t\n");
    if (!l || l >= cap)
        return -1;
    memcpy(out, p, l);
    out[l] = 0;
    return 0;
}

/* A sentence on why the collector cannot start in the program at path, or NULL: the dynamic
 * loader ignores LD_PRELOAD in secure-execution mode (set-user-ID or set-group-ID to someone
 * else, file capabilities), and a statically linked program has no loader at all. For a '#!'
 * script the interpreter is what runs (the kernel ignores set-user-ID on scripts). */
static const char *preload_obstacle(const char *path, char *buf, size_t cap, int depth)
{
    char interp[256];
    int dyn = elf_dynamic(path);
    if (dyn < 0 && depth < 4 && script_interp(path, interp, sizeof interp) == 0)
        return preload_obstacle(interp, buf, cap, depth + 1);
    if (dyn < 0)
        return NULL;
    struct stat st;
    struct statvfs vfs;
    int nosuid = statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOSUID);
    int nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1; /* set-ID bits are ignored then */
    if (stat(path, &st) == 0 && !nosuid && !nnp) {
        const char *what = NULL;
        char who[300];
        if ((st.st_mode & S_ISUID) && st.st_uid != getuid()) {
            struct passwd *pw = getpwuid(st.st_uid);
            what = "set-user-ID";
            if (pw)
                snprintf(who, sizeof who, "user %s", pw->pw_name);
            else
                snprintf(who, sizeof who, "user %u", (unsigned)st.st_uid);
        } else if ((st.st_mode & S_ISGID) && st.st_gid != getgid()) {
            struct group *gr = getgrgid(st.st_gid);
            what = "set-group-ID";
            if (gr)
                snprintf(who, sizeof who, "group %s", gr->gr_name);
            else
                snprintf(who, sizeof who, "group %u", (unsigned)st.st_gid);
        } else if (getuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0) {
            what = "given file capabilities";
            snprintf(who, sizeof who, "those capabilities");
        }
        if (what) {
            snprintf(buf, cap, "'%s' is %s (it runs with the rights of %s): the dynamic loader "
                     "runs it in secure-execution mode, which ignores LD_PRELOAD, so the collector "
                     "cannot start in it and nothing is recorded from it; profile a copy without "
                     "that bit, or run tally with the same rights", path, what, who);
            return buf;
        }
    }
    if (dyn == 0) {
        snprintf(buf, cap, "'%s' is statically linked (it has no program interpreter, so nothing "
                 "loads LD_PRELOAD into it): the collector cannot start in it and nothing is "
                 "recorded from it", path);
        return buf;
    }
    return NULL;
}

/* After execv failed with E2BIG: says whether tally's additions to the environment are the cause
 * (the kernel's limit as fs/exec.c computes it: a quarter of the stack size limit, at most
 * 6 MiB, at least 128 KiB, for the strings and their pointers). */
static void explain_e2big(const char *prog, char *const *argv, const char *added_settings,
                          const char *lib)
{
    size_t own = strlen(prog) + 1, nptr = 0;
    for (char *const *a = argv; *a; a++, nptr++)
        own += strlen(*a) + 1;
    const char *old_pre = NULL;
    for (char **e = environ; e && *e; e++, nptr++) {
        own += strlen(*e) + 1;
        if (!strncmp(*e, "LD_PRELOAD=", 11))
            old_pre = *e + 11;
    }
    own += nptr * sizeof(char *);
    size_t added = strlen(EXP_SETTINGS_ENV) + 2 + strlen(added_settings) + sizeof(char *);
    if (old_pre && *old_pre)
        added += strlen(lib) + 1;
    else
        added += strlen("LD_PRELOAD=") + strlen(lib) + 1 + (old_pre ? 0 : sizeof(char *));
    struct rlimit rl;
    size_t limit = 6u << 20;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur / 4 < limit)
        limit = rl.rlim_cur / 4;
    if (limit < 128u << 10)
        limit = 128u << 10;
    if (own <= limit)
        cli_error("collect", "cannot run '%s': the arguments and environment are too long "
                  "(E2BIG) because of what tally adds to the environment: the program's own "
                  "%zu bytes fit the kernel's limit of about %zu bytes, not with the %zu bytes "
                  "of LD_PRELOAD and %s; shorten the arguments or the environment by %zu bytes, "
                  "or raise the limit (a quarter of the stack size limit, 'ulimit -s')", prog,
                  own, limit, added, EXP_SETTINGS_ENV, own + added - limit);
    else
        cli_error("collect", "cannot run '%s': its arguments and environment (%zu bytes) are "
                  "too long for the kernel (E2BIG) even without tally: the limit is about %zu "
                  "bytes (a quarter of the stack size limit), and 128 KiB for one string", prog,
                  own, limit);
}

/* ---- the experiment name -------------------------------------------------------------------- */

static int make_dirs(const char *dir)
{
    char buf[PATH_MAX];
    if ((size_t)snprintf(buf, sizeof buf, "%s", dir) >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* Bytes of PATH_MAX kept for the names the collector creates inside the experiment (log,
 * events.<tid>, archive/, _f<n>.tally/...). */
#define EXP_INNER_ROOM 128

/* The experiment's path (n bytes, from snprintf) fits with room for what goes inside it; else
 * says so. */
static int exp_path_fits(int n, const char *out, size_t cap)
{
    if (n >= 0 && (size_t)n + EXP_INNER_ROOM < cap)
        return 1;
    cli_error("collect", "the experiment's path is too long (%d bytes, at most %zu): '%.60s...'; "
              "choose a shorter -d or -o", n, cap - EXP_INNER_ROOM - 1, out);
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && !strcmp(s + n - m, suffix);
}

/* Whether path is an experiment directory -O may replace: a real directory (not a link) with a
 * tally log or a gprofng log.xml in it. */
static int is_experiment_dir(const char *path)
{
    struct stat st;
    char f[PATH_MAX + 16];
    if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        return 0;
    snprintf(f, sizeof f, "%s/log", path);
    if (lstat(f, &st) == 0 && S_ISREG(st.st_mode))
        return 1;
    snprintf(f, sizeof f, "%s/log.xml", path);
    return lstat(f, &st) == 0 && S_ISREG(st.st_mode);
}

static void remove_tree(const char *dir);

/* Creates the experiment directory: -o/-O PATH (DIR/NAME, under -d when relative; a NAME ending
 * in .er or .tally kept as given, others get .tally), or <base>.<n>.tally with the next free n.
 * With -O an existing experiment of that name is removed first. */
static int create_experiment(const struct collect_opts *o, const char *prog, char *out, size_t cap)
{
    char dirbuf[PATH_MAX];
    const char *dir = o->directory ? o->directory : ".";
    const char *name = o->output;
    if (name && strchr(name, '/')) {
        const char *slash = strrchr(name, '/');
        int n = (int)(slash - name);
        if (name[0] == '/' || !o->directory)
            snprintf(dirbuf, sizeof dirbuf, "%.*s", n ? n : 1, name);
        else
            snprintf(dirbuf, sizeof dirbuf, "%s/%.*s", o->directory, n, name);
        dir = dirbuf;
        name = slash + 1;
    }
    if (strcmp(dir, ".") && make_dirs(dir) < 0) {
        cli_error("collect", "cannot create directory '%s': %s", dir, strerror(errno));
        return -1;
    }
    if (name) {
        const char *suffix = ends_with(name, ".tally") || ends_with(name, ".er") ? "" : ".tally";
        if (!exp_path_fits(snprintf(out, cap, "%s%s%s%s", dir, strcmp(dir, "/") ? "/" : "", name,
                                    suffix), out, cap))
            return -1;
        if (o->overwrite && access(out, F_OK) == 0) {
            if (!is_experiment_dir(out)) {
                cli_error("collect", "'%s' exists and is not an experiment (no log or log.xml "
                          "in a directory): -O replaces only an experiment; remove it yourself "
                          "or choose another name", out);
                return -1;
            }
            remove_tree(out);
        }
        if (mkdir(out, 0755) < 0) {
            if (errno == EEXIST)
                cli_error("collect", "experiment '%s' already exists; remove it, choose "
                          "another name with -o, or replace it with -O", out);
            else
                cli_error("collect", "cannot create experiment '%s': %s", out, strerror(errno));
            return -1;
        }
        return 0;
    }
    const char *base = strrchr(prog, '/');
    base = base ? base + 1 : prog;
    for (int n = 1; n < 100000; n++) {
        if (!exp_path_fits(snprintf(out, cap, "%s/%s.%d.tally", dir, base, n), out, cap))
            return -1;
        if (mkdir(out, 0755) == 0)
            return 0;
        if (errno != EEXIST) {
            cli_error("collect", "cannot create experiment '%s': %s", out, strerror(errno));
            return -1;
        }
    }
    cli_error("collect", "no free experiment name for '%s' in '%s'", base, dir);
    return -1;
}

/* ---- running -------------------------------------------------------------------------------- */

static pid_t child_pid;

static void forward_signal(int sig)
{
    if (child_pid > 0)
        kill(child_pid, sig);
}

/* The collector's settings (settings.def) from the options; the process context (directory,
 * root pid and start) is filled in the child. */
static void settings_from_opts(const struct collect_opts *o, exp_settings_t *s)
{
    exp_settings_default(s);
    s->clock_ns = o->clock_ns;
    s->clock_mref = o->clock_mref;
    s->follow = o->follow;
    if (o->has_duration) {
        s->duration.on = 1;
        s->duration.lo = o->dur_start;
        s->duration.hi = o->dur_end ? o->dur_end : UINT64_MAX;
    }
    s->max_depth = o->max_depth;
    s->sample_ns = o->sample_ns;
    s->states_ns = o->states ? (o->clock_ns > 10000000 ? o->clock_ns : 10000000) : 0;
    s->sample_signal = o->sample_sig;
    s->pause_signal = o->pause_sig;
    s->start_paused = o->pause_sig && o->start_paused;
    if (o->follow_regex)
        snprintf(s->follow_regex.s, sizeof s->follow_regex.s, "%s", o->follow_regex);
    if (!o->sync) {
        s->sync.mode = EXP_SYNC_OFF;
    } else if (!strcmp(o->sync, "on")) {
        s->sync.mode = EXP_SYNC_CALIBRATE;
    } else {
        s->sync.mode = EXP_SYNC_THRESHOLD;
        s->sync.ns = strcmp(o->sync, "all") ? strtoull(o->sync, NULL, 10) : 0;
    }
    s->heap = o->heap;
    s->heap_map = !o->no_heap_map;
    s->io = o->io;
    if (o->counters.n &&
        hwc_encode(&o->counters, hwc_cpu_hz(), s->counters.s, sizeof s->counters.s) < 0)
        s->counters.s[0] = 0; /* cannot happen: 16 counters fit */
    snprintf(s->blocks.s, sizeof s->blocks.s, "%s", o->blocks);
    snprintf(s->block_metrics.s, sizeof s->block_metrics.s, "%s", o->block_metrics);
    snprintf(s->block_counters.s, sizeof s->block_counters.s, "%s", o->block_counters);
    s->block_trace = o->block_trace;
    s->mpi = o->mpi;
}

/* Appends the root's end record (after the -C comments); creates a minimal log, with why as a
 * warning, if the collector never started. */
static int record_end(const char *exp, int status, const char *why, int *collector_ran,
                      const struct collect_opts *o)
{
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/log", exp) >= sizeof path)
        return -1; /* (create_experiment left room for it) */
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    *collector_ran = fd >= 0;
    if (fd < 0 && (fd = exp_log_create(path)) < 0)
        return -1;
    char buf[PATH_MAX + 1024];
    exp_line_t l;
    if (!*collector_ran) {
        exp_line_begin(&l, buf, sizeof buf, EXP_LOG_WARNING);
        exp_line_str(&l, EXP_KEY_WHAT, why);
        exp_line_write(&l, fd);
    }
    for (int i = 0; i < o->ncomments; i++) {
        exp_line_begin(&l, buf, sizeof buf, EXP_LOG_COMMENT);
        exp_line_str(&l, EXP_KEY_TEXT, o->comments[i]);
        exp_line_write(&l, fd);
    }
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_END);
    exp_line_u64(&l, EXP_KEY_T, mono_ns());
    if (WIFEXITED(status)) {
        exp_line_str(&l, EXP_KEY_HOW, "exit");
        exp_line_u64(&l, EXP_KEY_STATUS, (uint64_t)WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        exp_line_str(&l, EXP_KEY_HOW, "signal");
        exp_line_u64(&l, EXP_KEY_SIGNAL, (uint64_t)WTERMSIG(status));
        const char *name = sigabbrev_np(WTERMSIG(status));
        char sname[32];
        snprintf(sname, sizeof sname, "SIG%s", name ? name : "?");
        exp_line_str(&l, EXP_KEY_NAME, sname);
    }
    exp_line_str(&l, EXP_KEY_BY, "tally-collect");
    int rc = exp_line_write(&l, fd);
    close(fd);
    return rc;
}

/* One line on what was recorded, and every warning: what was lost must not go unnoticed. */
static void summarize(const char *exp, const char *shown)
{
    tally_err_t err = { 0 };
    exp_experiment_t *e;
    if (exp_open(exp, &e, &err)) {
        esc_fprintf(stderr, "tally: warning: the experiment cannot be read back: %s\n", err.msg);
        return;
    }
    uint64_t samples = 0, dropped = 0, disk = 0, csamples = 0;
    size_t threads = 0;
    /* a process killed before it wrote its statistics: count what its events hold */
    uint64_t *counted = NULL;
    for (size_t i = 0; i < e->nprocs && !counted; i++)
        if (!e->procs[i]->has_stats && (counted = calloc(e->nprocs, sizeof *counted)) &&
            exp_count_samples(e, counted, &err)) {
            esc_fprintf(stderr, "tally: warning: the events cannot be read back: %s\n", err.msg);
            break;
        }
    for (size_t i = 0; i < e->nprocs; i++) {
        const exp_process_t *p = e->procs[i];
        /* the chunks' unused ends back to the disk, for the processes that ended (a descendant
         * still running may be writing) */
        int dfd = p->has_end ? open(p->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (dfd >= 0) {
            long long r = exp_evfile_trim(dfd, "events");
            if (r < 0 && r != -ENOENT && r != -EOPNOTSUPP)
                esc_fprintf(stderr, "tally: note: %s/events: the unused ends of its chunks "
                            "could not be given back to the disk: %s\n", p->dir,
                            strerror((int)-r));
            close(dfd);
        }
        threads += p->nthreads;
        samples += p->has_stats ? p->st_samples : counted ? counted[i] : 0;
        dropped += p->st_dropped_busy;
        disk += p->st_dropped_disk;
        for (size_t c = 0; c < p->ncounters; c++)
            csamples += p->counters[c].samples;
        for (size_t w = 0; w < p->nwarnings; w++)
            esc_fprintf(stderr, "tally: warning: %s%s%s\n", *p->name ? p->name : "",
                    *p->name ? ": " : "", p->warnings[w]);
    }
    char ctr[64] = "";
    if (csamples)
        snprintf(ctr, sizeof ctr, ", %llu counter samples", (unsigned long long)csamples);
    esc_fprintf(stderr, "tally: %s: %llu samples%s, %zu thread%s, %zu process%s\n", shown,
            (unsigned long long)samples, ctr, threads, threads == 1 ? "" : "s", e->nprocs,
            e->nprocs == 1 ? "" : "es");
    free(counted);
    if (disk)
        esc_fprintf(stderr, "tally: warning: %llu samples were lost because the disk was full\n",
                (unsigned long long)disk);
    if (dropped)
        esc_fprintf(stderr, "tally: note: %llu samples were dropped (a sample arrived while the "
                "thread was writing another record)\n", (unsigned long long)dropped);
    exp_close(e);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) < 0 ? 0 : 0; /* best effort: what cannot be removed stays */
}

/* Removes the experiment directory the driver created, with whatever is in it. */
static void remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Ends the driver by the signal that ended the program, as `time` and `nice` do: a shell loop
 * then sees the ^C. The experiment is complete by now; no core file of the driver. */
static void die_like(int sig)
{
    fflush(stdout);
    fflush(stderr);
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(SIG_UNBLOCK, &s, NULL);
    raise(sig);
}

/* The driver's exit status: the program's, or the program's death by a signal. */
static int exit_like(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        die_like(WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return 1;
}

/* What a run with these options does: -n prints it and stops, -v prints it and runs. */
static void print_plan(FILE *out, const struct collect_opts *o, const char *prog,
                       char **prog_argv, const char *lib)
{
    esc_fprintf(out, "would run:    %s", prog);
    for (char **a = prog_argv + 1; *a; a++)
        esc_fprintf(out, " %s", *a);
    esc_fprintf(out, "\ncollector:    %s\n", lib);
    esc_fprintf(out, "experiment:   %s%s%s%s\n", o->directory ? o->directory : "",
                o->directory ? "/" : "", o->output ? o->output : "<program>.<n>.tally (next free n)",
                o->overwrite ? " (replaced if it exists)" : "");
    for (int i = 0; i < o->ncomments; i++)
        esc_fprintf(out, "comment:      %s\n", o->comments[i]);
    if (o->clock_ns)
        esc_fprintf(out, "clock:        every %.3f ms of thread CPU time%s\n",
                    (double)o->clock_ns / 1e6, o->clock_mref ? ", with dataspace data" : "");
    else
        esc_fprintf(out, "clock:        off\n");
    for (int i = 0; i < o->counters.n; i++) {
        const hwc_counter_t *hc = &o->counters.c[i];
        esc_fprintf(out, "counter:      %s%s every %llu events (%s; metric %s)\n",
                    (hc->flags & HWC_DATA) ? "+" : "", hc->name,
                    (unsigned long long)hc->interval, hc->desc, hc->metric);
    }
    if (o->follow && o->follow_regex)
        esc_fprintf(out, "follow:       forks, and new programs whose name matches '%s'\n",
                    o->follow_regex);
    else
        esc_fprintf(out, "follow:       %s\n", o->follow ? "on (fork, exec, spawn)" : "off");
    if (o->has_duration)
        esc_fprintf(out, "duration:     %.3f s to %.3f s\n", (double)o->dur_start / 1e9,
               (double)o->dur_end / 1e9);
    esc_fprintf(out, "max depth:    %u frames\n", o->max_depth);
    if (o->sample_ns)
        esc_fprintf(out, "samples:      every %.3f s", (double)o->sample_ns / 1e9);
    else
        esc_fprintf(out, "samples:      at start and end only");
    if (o->sample_sig)
        esc_fprintf(out, ", and on SIG%s", sigabbrev_np(o->sample_sig));
    esc_fprintf(out, "\nstates:       %s\n", o->states ? "on (wait CPU, lock, I/O, sleep)" : "off");
    if (o->pause_sig)
        esc_fprintf(out, "pause/resume: on SIG%s; %s\n", sigabbrev_np(o->pause_sig),
                    o->start_paused ? "starts paused" : "starts recording");
    if (!o->sync)
        esc_fprintf(out, "sync:         off\n");
    else if (!strcmp(o->sync, "on"))
        esc_fprintf(out, "sync:         waits above 6 x an uncontended lock (calibrated at start)\n");
    else if (!strcmp(o->sync, "all"))
        esc_fprintf(out, "sync:         every call\n");
    else
        esc_fprintf(out, "sync:         waits of %.3f us or more\n", strtod(o->sync, NULL) / 1e3);
    esc_fprintf(out, "heap:         %s\nio:           %s\n", o->heap ? "on" : "off", o->io ? "on" : "off");
    esc_fprintf(out, "blocks:       %s, measuring %s%s\n",
                !o->blocks[0] ? "on" : !strcmp(o->blocks, "off") ? "off" : o->blocks,
                o->block_metrics[0] ? o->block_metrics : "wall",
                o->block_trace ? ", with their timeline" : "");
    esc_fprintf(out, "mpi:          %s\n", o->mpi ? "on" : "off");
    esc_fprintf(out, "archive:      %s\n", o->archive == 2 ? "binaries and sources"
                : o->archive ? "binaries" : "off");
}

int collect_parse_args(int argc, char **argv, struct collect_opts *op, int *prog)
{
    struct collect_opts o = { .clock_ns = 10000000, .follow = 1, .max_depth = 1024,
                              .sample_ns = 1000000000, .states = 1, .archive = 1 };
    static const struct option longopts[] = {
        { "clock", required_argument, 0, 'p' },  { "follow", required_argument, 0, 'F' },
        { "duration", required_argument, 0, 't' }, { "output", required_argument, 0, 'o' },
        { "directory", required_argument, 0, 'd' }, { "dry-run", no_argument, 0, 'n' },
        { "max-depth", required_argument, 0, 1 },  { "help", no_argument, 0, 3 },
        { "sync", required_argument, 0, 's' },     { "heap", required_argument, 0, 'H' },
        { "io", required_argument, 0, 'i' },       { "mpi", required_argument, 0, 'M' },
        { "samples", required_argument, 0, 'S' }, { "sample-signal", required_argument, 0, 'l' },
        { "pause-signal", required_argument, 0, 'y' }, { "states", required_argument, 0, 2 },
        { "archive", required_argument, 0, 'A' }, { "counters", required_argument, 0, 'h' },
        { "blocks", required_argument, 0, 4 }, { "block-metrics", required_argument, 0, 5 },
        { "overwrite", required_argument, 0, 'O' }, { "heap-map", required_argument, 0, 6 },
        { "block-trace", required_argument, 0, 7 },
        { "comment", required_argument, 0, 'C' }, { "verbose", no_argument, 0, 'v' },
        { "version", no_argument, 0, 'V' },
        { 0, 0, 0, 0 },
    };
    *op = o;
    *prog = argc;
    if (argc < 2)
        return COLLECT_HELP_ALL;
    opterr = 0;
    optind = 0; /* (glibc: start over, also for a second call) */
    int c;
    /* '+': stop at the first non-option, the program; its own options are its own. */
    while ((c = getopt_long(argc, argv, "+:p:F:t:o:O:d:C:nh:S:l:y:s:H:i:M:A:a:vV", longopts,
                            NULL)) != -1) {
        switch (c) {
        case 'p':
            if (parse_clock(optarg, &o.clock_ns, &o.clock_mref)) {
                cli_error("collect", "bad clock profiling setting '-p %s': use on, off, hi, lo "
                          "or an interval in milliseconds (0.01 to 10000), with a leading '+' "
                          "for dataspace data (not with off)", optarg);
                return 2;
            }
            break;
        case 'F':
            o.follow_regex = NULL;
            if (optarg[0] == '=') {
                regex_t re;
                char msg[256];
                int rc = optarg[1] ? regcomp(&re, optarg + 1, REG_EXTENDED) : REG_BADPAT;
                if (rc) {
                    if (optarg[1])
                        regerror(rc, &re, msg, sizeof msg);
                    else
                        snprintf(msg, sizeof msg, "it is empty");
                    cli_error("collect", "bad '-F %s': the regular expression is not valid (%s); "
                              "write -F '=REGEX', an extended regular expression the whole name "
                              "of a descendant program must match, e.g. -F '=cc1|ld'", optarg,
                              msg);
                    return 2;
                }
                regfree(&re);
                if (strlen(optarg + 1) >= EXP_SETTINGS_PATH_MAX) {
                    cli_error("collect", "bad '-F': the regular expression is longer than %d "
                              "bytes", EXP_SETTINGS_PATH_MAX - 1);
                    return 2;
                }
                o.follow = 1;
                o.follow_regex = optarg + 1;
            } else if (!strcmp(optarg, "all")) {
                o.follow = 1;
            } else if (parse_onoff(optarg, &o.follow)) {
                cli_error("collect", "bad '-F %s': use on, all, off or =REGEX (follow only the "
                          "descendant programs whose name matches)", optarg);
                return 2;
            }
            break;
        case 't':
            if (parse_duration(optarg, &o)) {
                cli_error("collect", "bad duration '-t %s': use seconds (e.g. 5, 5s or 2m) or "
                          "a range (e.g. 2-10 or 30s-2m)", optarg);
                return 2;
            }
            break;
        case 'o':
        case 'O': {
            size_t n = strlen(optarg);
            const char *base = strrchr(optarg, '/');
            base = base ? base + 1 : optarg;
            if (!n || !*base || !strcmp(base, ".") || !strcmp(base, "..")) {
                cli_error("collect", "bad experiment name '-%c %s': give a name such as "
                          "test.1.er or run.tally, with a directory if you want one "
                          "(/tmp/test.1.er)", c, optarg);
                return 2;
            }
            o.output = optarg;
            o.overwrite = c == 'O';
            break;
        }
        case 'C':
            if (o.ncomments == 10) {
                cli_error("collect", "too many comments: -C can be given up to 10 times");
                return 2;
            }
            if (strlen(optarg) > 1000) {
                cli_error("collect", "the comment '-C %.40s...' is longer than 1000 bytes",
                          optarg);
                return 2;
            }
            o.comments[o.ncomments++] = optarg;
            break;
        case 'v':
            o.verbose = 1;
            break;
        case 'V':
            return COLLECT_VERSION;
        case 'd':
            o.directory = optarg;
            break;
        case 'n':
            o.dry_run = 1;
            break;
        case 1: {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 65536) {
                cli_error("collect", "bad '--max-depth=%s': use 1 to 65536 frames", optarg);
                return 2;
            }
            o.max_depth = (unsigned)v;
            break;
        }
        case 'S': {
            int on;
            if (!parse_onoff(optarg, &on)) {
                o.sample_ns = on ? 1000000000 : 0;
            } else {
                char *end;
                errno = 0;
                double sec = strtod(optarg, &end);
                if (errno || end == optarg || *end || !(sec >= 0.001) || sec > 1e6) {
                    cli_error("collect", "bad '-S %s': use on, off or a period in seconds "
                              "(0.001 or more)", optarg);
                    return 2;
                }
                o.sample_ns = (uint64_t)(sec * 1e9 + 0.5);
            }
            break;
        }
        case 'l':
        case 'y': {
            char sigbuf[64];
            const char *comma = c == 'y' ? strchr(optarg, ',') : NULL;
            if (comma && strcmp(comma, ",r")) {
                cli_error("collect", "bad '-y %s': use -y SIG (start paused; SIG resumes and "
                          "pauses) or -y SIG,r (start recording)", optarg);
                return 2;
            }
            if (c == 'y')
                o.start_paused = !comma;
            snprintf(sigbuf, sizeof sigbuf, "%.*s", comma ? (int)(comma - optarg) : 63, optarg);
            int sig = parse_signal(sigbuf);
            if (!sig) {
                cli_error("collect", "bad signal '-%c %s': use a name such as SIGUSR1 or USR2, "
                          "or a number", c, optarg);
                return 2;
            }
            if (sig == SIGRTMAX - 4 || sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE ||
                sig == SIGILL || sig == SIGABRT || sig == SIGTRAP || sig == SIGSYS) {
                cli_error("collect", "'-%c %s': tally needs that signal itself; use another, "
                          "such as SIGUSR1 or SIGUSR2", c, optarg);
                return 2;
            }
            if (sig == (c == 'l' ? o.pause_sig : o.sample_sig)) {
                cli_error("collect", "'-%c %s': -l and -y need different signals", c, optarg);
                return 2;
            }
            *(c == 'l' ? &o.sample_sig : &o.pause_sig) = sig;
            break;
        }
        case 2:
            if (parse_onoff(optarg, &o.states)) {
                cli_error("collect", "bad '--states=%s': use on or off", optarg);
                return 2;
            }
            break;
        case 's': {
            int rc = parse_sync(optarg, &o);
            if (rc == -2) {
                cli_error("collect", "'-s %s': tally traces native synchronization calls "
                          "only (the scope n); Java's (j) cannot be traced", optarg);
                return 2;
            }
            if (rc) {
                cli_error("collect", "bad synchronization tracing setting '-s %s': use on, off, "
                          "calibrate, all or a threshold in microseconds (e.g. 100), "
                          "optionally with ',n'", optarg);
                return 2;
            }
            break;
        }
        case 'H':
        case 'i':
            if (parse_onoff(optarg, c == 'H' ? &o.heap : &o.io)) {
                cli_error("collect", "bad '-%c %s': use on or off", c, optarg);
                return 2;
            }
            break;
        case 'M':
            if (parse_onoff(optarg, &o.mpi)) {
                cli_error("collect", "bad '-M %s': use on or off", optarg);
                return 2;
            }
            break;
        case 'A':
            if (!strcmp(optarg, "src") || !strcmp(optarg, "sources")) {
                o.archive = 2;
            } else if (parse_onoff(optarg, &o.archive)) {
                cli_error("collect", "bad '-A %s': use on, off or src", optarg);
                return 2;
            }
            break;
        case 4:
            if (parse_blocks(optarg, &o))
                return 2;
            break;
        case 6: {
            int on;
            if (parse_onoff(optarg, &on)) {
                cli_error("collect", "bad '--heap-map=%s': use on or off", optarg);
                return 2;
            }
            o.no_heap_map = !on;
            break;
        }
        case 7:
            if (parse_onoff(optarg, &o.block_trace)) {
                cli_error("collect", "bad '--block-trace=%s': use on or off", optarg);
                return 2;
            }
            break;
        case 5:
            if (parse_block_metrics(optarg, &o)) {
                cli_error("collect", "bad '--block-metrics=%s': give wall, cpu and counters "
                          "(page-faults, context-switches, ...: 'tally collect -h' lists them), "
                          "each at most once, at most 4, separated by commas", optarg);
                return 2;
            }
            break;
        case 'a': /* gprofng's keywords */
            if (!strcmp(optarg, "off")) {
                o.archive = 0;
            } else if (!strcmp(optarg, "on") || !strcmp(optarg, "ldobjects") ||
                       !strcmp(optarg, "usedldobjects")) {
                o.archive = 1;
            } else if (!strcmp(optarg, "src") || !strcmp(optarg, "usedsrc")) {
                o.archive = 2;
            } else {
                cli_error("collect", "bad '-a %s': use off, on, ldobjects, usedldobjects, src "
                          "or usedsrc", optarg);
                return 2;
            }
            break;
        case 'h':
            if (o.ncounter_args == HWC_MAX) {
                cli_error("collect", "too many -h options: at most %d counters", HWC_MAX);
                return 2;
            }
            o.counter_args[o.ncounter_args++] = optarg;
            break;
        case 3:
            return COLLECT_HELP;
        case ':':
            if (optopt == 'h')
                return COLLECT_LISTS;
            cli_error("collect", "option '%s' needs a value; see 'tally collect -h'",
                      argv[optind - 1]);
            return 2;
        default:
            cli_error("collect", "unknown option '%s'; see 'tally collect -h'", argv[optind - 1]);
            return 2;
        }
    }
    if (optind >= argc) {
        if (!swallowed_program(argc, argv, optind))
            cli_error("collect", "no program to run; usage: tally collect [options] program "
                      "[args]");
        return 2;
    }
    *op = o;
    if (op->sync == o.sync_ns) /* (a threshold points into the copy) */
        op->sync = op->sync_ns;
    *prog = optind;
    return 0;
}

int cmd_collect(int argc, char **argv)
{
    struct collect_opts o;
    int optind_prog;
    int rc = collect_parse_args(argc, argv, &o, &optind_prog);
    if (rc == COLLECT_HELP || rc == COLLECT_HELP_ALL) {
        usage(stdout);
        if (rc == COLLECT_HELP_ALL) { /* no arguments: as gprofng's collect, the counters too */
            fputs("\n", stdout);
            hwc_print_lists(stdout);
        }
        print_capabilities();
        return 0;
    }
    if (rc == COLLECT_VERSION) {
        esc_printf("tally collect %s\n", TALLY_VERSION);
        return 0;
    }
    if (rc == COLLECT_LISTS) { /* -h alone: the counters this machine has */
        hwc_print_lists(stdout);
        return 0;
    }
    if (rc)
        return rc;
    char **prog_argv = argv + optind_prog;
    char prog[PATH_MAX], lib[PATH_MAX], exp[PATH_MAX];
    const char *why = find_program(prog_argv[0], prog, sizeof prog);
    if (why && swallowed_program(argc, argv, optind_prog))
        return 2;
    if (why) {
        cli_error("collect", "cannot run '%s': %s", prog_argv[0], why);
        return 1;
    }
    for (int i = 0; i < o.ncounter_args; i++) {
        char hwhy[1024];
        if (hwc_parse(o.counter_args[i], prog, &o.counters, hwhy, sizeof hwhy)) {
            cli_error("collect", "%s", hwhy);
            return 2;
        }
    }
    for (int i = 0; i < o.counters.n; i++)
        if (o.counters.c[i].note[0])
            esc_fprintf(stderr, "tally: warning: %s\n", o.counters.c[i].note);
    {
        char bwhy[1024];
        if (collect_block_counters(&o, prog, bwhy, sizeof bwhy)) {
            cli_error("collect", "%s", bwhy);
            return 2;
        }
    }
    if (find_collector(lib, sizeof lib)) {
        cli_error("collect", "cannot find libtally-collector.so beside '%s' or in ../%s; "
                  "set TALLY_COLLECTOR to its path", cli_self_dir(), TALLY_INSTALL_LIBDIR);
        return 1;
    }
    if (o.dry_run) {
        print_plan(stdout, &o, prog, prog_argv, lib);
        return 0;
    }
    if (o.verbose)
        print_plan(stderr, &o, prog, prog_argv, lib);
    char mpilib[PATH_MAX], top[PATH_MAX];
    exp_mpi_rank_t rank;
    int is_rank = o.mpi && exp_mpi_rank(environ, &rank);
    if (o.mpi && collect_mpi_lib(lib, mpilib, sizeof mpilib))
        return 1;
    if (is_rank ? collect_mpi_job_dir(o.directory, o.output, prog, &rank, top, sizeof top, exp,
                                      sizeof exp)
                : create_experiment(&o, prog, exp, sizeof exp))
        return 1;
    char *expabs = realpath(exp, NULL);
    const char *shown = exp[0] == '.' && exp[1] == '/' ? exp + 2 : exp;
    if (is_rank)
        esc_fprintf(stderr, "tally: recording rank %llu in %s\n", (unsigned long long)rank.rank,
                    shown);
    else
        esc_fprintf(stderr, "tally: recording experiment %s\n", shown);
    char obstacle_buf[PATH_MAX + 512];
    const char *obstacle = preload_obstacle(prog, obstacle_buf, sizeof obstacle_buf, 0);
    if (obstacle)
        esc_fprintf(stderr, "tally: warning: %s\n", obstacle);

    static exp_settings_t set;
    static char enc[EXP_SETTINGS_ENC_MAX];
    settings_from_opts(&o, &set);
    char *preload = lib;
    const char *old_preload = getenv("LD_PRELOAD");
    if (o.mpi && asprintf(&preload, "%s:%s", lib, mpilib) < 0) {
        cli_error("collect", "out of memory");
        return 1;
    }
    if (old_preload && *old_preload &&
        asprintf(&preload, "%s:%s", o.mpi ? preload : lib, old_preload) < 0) {
        cli_error("collect", "out of memory");
        return 1;
    }

    int errpipe[2];
    if (pipe2(errpipe, O_CLOEXEC) < 0) {
        cli_error("collect", "pipe: %s", strerror(errno));
        return 1;
    }
    fflush(NULL);
    child_pid = fork();
    if (child_pid < 0) {
        cli_error("collect", "fork: %s", strerror(errno));
        return 1;
    }
    if (child_pid == 0) {
        close(errpipe[0]);
        set.root_pid = set.owner_pid = (uint64_t)getpid();
        set.driver_pid = (uint64_t)getppid(); /* reports a log the root cannot write */
        set.root_t0 = mono_ns(); /* the origin of -t: the program's start */
        snprintf(set.dir.s, sizeof set.dir.s, "%s", expabs);
        if (exp_settings_encode(&set, enc, sizeof enc) < 0 ||
            setenv(EXP_SETTINGS_ENV, enc, 1) || setenv("LD_PRELOAD", preload, 1))
            _exit(127);
        execv(prog, prog_argv);
        int e = errno;
        if (write(errpipe[1], &e, sizeof e) < 0) {
            /* nothing more we can say */
        }
        _exit(127);
    }
    close(errpipe[1]);
    /* Like a shell waiting for a job: the terminal's ^C goes to the program; we stay to record. */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    struct sigaction sa = { .sa_handler = forward_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int exec_errno = 0;
    ssize_t got;
    while ((got = read(errpipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR)
        ;
    close(errpipe[0]);
    int status = 0;
    while (waitpid(child_pid, &status, 0) < 0)
        if (errno != EINTR) {
            cli_error("collect", "waitpid: %s", strerror(errno));
            return 1;
        }
    if (got == (ssize_t)sizeof exec_errno) {
        if (exec_errno == E2BIG) {
            set.root_pid = set.owner_pid = (uint64_t)child_pid;
            set.root_t0 = mono_ns();
            snprintf(set.dir.s, sizeof set.dir.s, "%s", expabs);
            explain_e2big(prog, prog_argv, exp_settings_encode(&set, enc, sizeof enc) < 0 ? ""
                          : enc, lib);
        } else {
            cli_error("collect", "cannot run '%s': %s", prog, strerror(exec_errno));
        }
        /* Leave no empty experiment behind. */
        rmdir(exp);
        free(expabs);
        return 1;
    }
    int collector_ran = 0;
    char not_started[PATH_MAX + 600];
    if (obstacle)
        snprintf(not_started, sizeof not_started, "%s", obstacle);
    else
        snprintf(not_started, sizeof not_started, "the collector did not start in '%s' (LD_PRELOAD was removed "
                 "or refused before the program started)", prog);
    if (record_end(exp, status, not_started, &collector_ran, &o) < 0) {
        int e = errno;
        if (!collector_ran) { /* nothing readable was written: keep nothing */
            remove_tree(exp);
            cli_error("collect", "cannot write the experiment '%s': %s; the program ran "
                      "unprofiled and no experiment was kept", shown, strerror(e));
            free(expabs);
            int rc = exit_like(status);
            return rc ? rc : 1; /* nothing recorded: a failure, unless the program's is one */
        }
        cli_error("collect", "cannot write to experiment '%s': %s", shown, strerror(e));
    }
    if (!collector_ran && obstacle) /* the reason was told before the program ran */
        cli_error("collect", "warning: %s holds no profile (see above)", shown);
    else if (!collector_ran)
        cli_error("collect", "warning: %s; %s holds no profile", not_started, shown);
    else
        summarize(exp, shown);
    if (collector_ran && o.archive) {
        tally_err_t aerr = { 0 };
        archive_stats_t ast = { 0 };
        if (archive_experiment(is_rank ? top : exp, o.archive == 2, 1, 1, &ast, &aerr))
            cli_error("collect", "warning: archiving '%s' failed: %s (run 'tally archive' "
                      "later)", shown, aerr.msg);
        else
            esc_fprintf(stderr, "tally: archive: %u binar%s copied (%.2f MB%s), %u librar%s "
                        "of the system's and tally's own referenced by build-id ('tally archive "
                        "%s' copies them too)\n",
                        ast.copied, ast.copied == 1 ? "y" : "ies", (double)ast.bytes / 1e6,
                        ast.debugfiles ? " with debug files" : "", ast.referenced,
                        ast.referenced == 1 ? "y" : "ies", is_rank ? top : shown);
    }
    free(expabs);
    if (is_rank)
        collect_mpi_job_end(o.directory, prog, &rank);
    if (WIFSIGNALED(status))
        esc_fprintf(stderr, "tally: %s ended by signal %d (%s)\n", prog_argv[0], WTERMSIG(status),
                strsignal(WTERMSIG(status)));
    return exit_like(status);
}
