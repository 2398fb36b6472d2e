/*
 * fuzz_experiment.c - a libFuzzer harness over the experiment reader and every view of
 * `tally print` and `tally check`, in process.
 *
 * An input is a whole experiment directory in a simple archive (tests/fuzz/pack.py makes one from
 * a real experiment): files one after another, each introduced by a line "@@ <path>\n" and
 * running until the next "\n@@ " or the end; "@@ <path>@<offset>\n" writes the contents at that
 * byte offset of the file (below 64 MiB), the bytes skipped being zeros, so that the mostly
 * empty chunks of an events file take little room. Paths are relative ("log", "events",
 * "_f1.tally/log", ...): made of [A-Za-z0-9._-] parts joined by '/', no "..", at most 4 deep;
 * a file named "views" is not written: it chooses what is run, one line each: "text" and "json"
 * (a `tally print` in that format, text if neither is given), "check" (`tally check`), or a
 * command of `tally print` with its argument ("functions", "limit 3", "filters thread==1",
 * "source main", ...; not those reading other files: script, setpath, addpath, pathmap), at
 * most MAX_STEPS of them, or "export FORMAT" (`tally export --format=FORMAT` into a file of the
 * temporary directory: chrome, pprof, callgrind, folded or speedscope); an input without it runs "functions" and "header" in text, and
 * `tally check`. A file named "events" is padded with zeros to a whole chunk (the size its
 * header gives, at most 1 MiB), so the inputs can leave out the unused ends of chunks. Each
 * input is unpacked into a fresh directory under /dev/shm (else $TMPDIR; $TALLY_FUZZ_TMPDIR
 * chooses); the views print to /dev/null. Load records of the seeds name paths that do not exist (an experiment's archive/
 * may hold the binary), so no input reads the debug information of the system's libraries.
 *
 * Built by tests/CMakeLists.txt with clang -fsanitize=fuzzer,address,undefined when available.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

static char g_root[4096]; /* the temp dir of this process */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static int path_ok(const char *p, size_t n)
{
    if (n == 0 || n > 200 || p[0] == '/')
        return 0;
    int depth = 1;
    size_t part = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '/') {
            if (part == 0 || ++depth > 4)
                return 0;
            part = 0;
            continue;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
        part++;
        if (part == 2 && p[i] == '.' && p[i - 1] == '.' && (i + 1 == n || p[i + 1] == '/'))
            return 0; /* ".." */
    }
    return part > 0;
}

static void write_file(const char *dir, const char *rel, size_t rn, off_t off, const uint8_t *d,
                       size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%.*s", dir, (int)rn, rel);
    for (char *s = path + strlen(dir) + 1; (s = strchr(s, '/')); s++) { /* parent dirs */
        *s = 0;
        mkdir(path, 0755);
        *s = '/';
    }
    int fd = open(path, O_RDWR | O_CREAT, 0644); /* the directory is new for every input */
    if (fd < 0)
        return;
    while (n) {
        ssize_t w = pwrite(fd, d, n, off);
        if (w <= 0)
            break;
        d += w;
        off += w;
        n -= (size_t)w;
    }
    size_t base = rn >= 6 && !memcmp(rel + rn - 6, "events", 6) ? rn - 6 : rn;
    if (base < rn && (base == 0 || rel[base - 1] == '/')) { /* pad to a whole chunk */
        struct stat st;
        uint32_t hs = 4096, cs = 0;
        if (!fstat(fd, &st) && st.st_size >= 20 && pread(fd, &cs, 4, 16) == 4 && cs &&
            cs <= (1u << 20) && st.st_size > hs) {
            off_t k = (st.st_size - hs + cs - 1) / cs;
            if (ftruncate(fd, hs + k * cs))
                (void)0;
        }
    }
    close(fd);
}

static void run_print(const char *exp, const char *cmds, int json)
{
    char *argv[] = { "print", json ? "--json" : (char *)exp, json ? (char *)exp : NULL, NULL };
    if (!freopen(cmds, "r", stdin))
        abort();
    cmd_print(json ? 3 : 2, argv);
    fflush(stdout);
}

static void remove_root(void)
{
    nftw(g_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* in memory when there is a tmpfs: creating and removing files on a disk's file system
     * took a tenth of the time of an input */
    const char *tmp = getenv("TALLY_FUZZ_TMPDIR");
    struct stat st;
    if (!tmp || !*tmp)
        tmp = !stat("/dev/shm", &st) && S_ISDIR(st.st_mode) && !access("/dev/shm", W_OK)
                  ? "/dev/shm" : getenv("TMPDIR");
    snprintf(g_root, sizeof g_root, "%s/tally-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_root))
        abort();
    atexit(remove_root);
    if (!freopen("/dev/null", "w", stdout))
        abort();
    return 0;
}

/* Commands per input: most views read all the events again, and an input that runs fewer of them
 * is run more often (seeds between them run every view). */
#define MAX_STEPS 8

/* The commands of `tally print` an input may run: not those that read other files. */
static const char *const commands[] = {
    "functions", "callers-callees", "csingle", "calltree", "fsingle", "objects", "lines",
    "object_show", "object_hide", "object_api", "objects_default", "inlines", "pcs", "source",
    "disasm", "metrics", "cmetrics", "metric_list", "sort", "limit", "name", "header", "overview",
    "thread_list", "thread_select", "experiment_list", "sample_list", "sample_detail",
    "sample_select", "cpu_select", "filters", "timeline", "leaks", "allocs", "heap",
    "sync_objects", "io_files", "time_functions", "object_list", "data_objects", "data_single",
    "data_layout", "memobj", "false_sharing", "blocks", "callstack", "callstack_history",
    /* er_print's (print_er.c, print_summary.c, print_stats.c, print_erio.c) */
    "compat", "load_objects", "object_select", "cmetric_list", "fsummary", "lsummary", "psummary",
    "statistics", "sample_info", "cpu_list", "indxobj_list", "indxobj", "heap_peak", "heapstat",
    "ioactivity", "iodetail", "iocallstack", "iostat",
};

/* Whether line l (n bytes) is a command the harness runs: a known one (its argument may be any
 * bytes but NUL and CR: names in an experiment can be). */
static int command_ok(const uint8_t *l, size_t n)
{
    if (n == 0 || n > 200 || memchr(l, 0, n) || memchr(l, '\r', n))
        return 0;
    size_t w = 0;
    while (w < n && l[w] != ' ')
        w++;
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (strlen(commands[i]) == w && !memcmp(commands[i], l, w))
            return 1;
    return 0;
}

/* The formats an "export FORMAT" line may name (one bit each in the input's mask). */
static const char *const export_formats[] = { "chrome", "pprof", "callgrind", "folded",
                                              "speedscope" };

static int export_format(const uint8_t *l, size_t n)
{
    for (size_t i = 0; i < sizeof export_formats / sizeof *export_formats; i++)
        if (n == 7 + strlen(export_formats[i]) && !memcmp(l, "export ", 7) &&
            !memcmp(l + 7, export_formats[i], n - 7))
            return (int)i;
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char exp[4200], cmds[4200];
    snprintf(exp, sizeof exp, "%s/x.tally", g_root);
    snprintf(cmds, sizeof cmds, "%s/commands", g_root);
    nftw(exp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    mkdir(exp, 0755);

    FILE *c = fopen(cmds, "w");
    if (!c)
        abort();
    int text = 0, json = 0, check = 0, nsteps = 0, views = 0;
    unsigned exports = 0;

    /* unpack: "@@ path\n" content ("\n@@ " ends it) */
    const uint8_t *p = data, *end = data + size;
    while (p < end) {
        if (end - p < 3 || memcmp(p, "@@ ", 3))
            break;
        const uint8_t *name = p + 3;
        const uint8_t *nl = memchr(name, '\n', (size_t)(end - name));
        if (!nl)
            break;
        const uint8_t *body = nl + 1, *next = body;
        const uint8_t *stop = end;
        while (next < end) {
            const uint8_t *q = memchr(next, '\n', (size_t)(end - next));
            if (!q)
                break;
            if (end - q >= 4 && !memcmp(q, "\n@@ ", 4)) {
                stop = q;
                break;
            }
            next = q + 1;
        }
        size_t nn = (size_t)(nl - name);
        if (nn == 5 && !memcmp(name, "views", 5)) {
            views = 1;
            for (const uint8_t *l = body; l < stop && nsteps < MAX_STEPS;) {
                const uint8_t *e = memchr(l, '\n', (size_t)(stop - l));
                size_t ln = e ? (size_t)(e - l) : (size_t)(stop - l);
                if (ln == 4 && !memcmp(l, "text", 4))
                    text = 1;
                else if (ln == 4 && !memcmp(l, "json", 4))
                    json = 1;
                else if (ln == 5 && !memcmp(l, "check", 5))
                    check = 1;
                else if (export_format(l, ln) >= 0)
                    exports |= 1u << export_format(l, ln);
                else if (command_ok(l, ln)) {
                    fprintf(c, "%.*s\n", (int)ln, l);
                    nsteps++;
                }
                l += ln + 1;
            }
        } else {
            off_t off = 0;
            const uint8_t *at = memchr(name, '@', nn);
            if (at) {
                for (const uint8_t *d = at + 1; d < nl && off < (64 << 20); d++)
                    off = *d >= '0' && *d <= '9' ? off * 10 + (*d - '0') : (64 << 20);
                nn = (size_t)(at - name);
            }
            if (off < (64 << 20) && path_ok((const char *)name, nn))
                write_file(exp, (const char *)name, nn, off, body, (size_t)(stop - body));
        }
        p = stop < end ? stop + 1 : end;
    }
    if (!views) {
        fprintf(c, "functions\nheader\n");
        check = 1;
    }
    fclose(c);

    if (text || !json)
        run_print(exp, cmds, 0);
    if (json)
        run_print(exp, cmds, 1);
    if (check) {
        char *cargv[] = { "check", exp, NULL };
        cmd_check(2, cargv);
        fflush(stdout);
    }
    for (size_t i = 0; i < sizeof export_formats / sizeof *export_formats; i++)
        if (exports >> i & 1) {
            char fmt[64], out[4300];
            snprintf(fmt, sizeof fmt, "--format=%s", export_formats[i]);
            snprintf(out, sizeof out, "%s/export.out", g_root);
            char *eargv[] = { "export", fmt, "-o", out, exp, NULL };
            cmd_export(5, eargv);
            unlink(out);
        }
    return 0;
}
