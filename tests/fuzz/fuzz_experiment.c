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
 * a file named "names" is not written: its lines are function or file names the name-taking
 * views (-source, -disasm, -csingle, -fsingle) are also run with. A file named "events" is
 * padded with zeros to a whole chunk (the size its header gives, at most 1 MiB), so the inputs
 * can leave out the unused ends of chunks. Each input is unpacked into a fresh directory under
 * $TMPDIR; the views print text and JSON to /dev/null.
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

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_root, sizeof g_root, "%s/tally-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_root))
        abort();
    if (!freopen("/dev/null", "w", stdout))
        abort();
    return 0;
}

static const char *const views[] = {
    "functions", "callers-callees", "calltree", "objects", "lines", "pcs", "header", "overview",
    "thread_list", "experiment_list", "metric_list", "sample_list", "sample_detail 1",
    "sample_detail 2", "timeline", "leaks", "allocs", "heap", "sync_objects", "io_files",
    "inlines off", "functions", "source main", "disasm main", "csingle main", "fsingle main",
    "limit 3", "name long", "calltree", "name mangled", "functions",
};

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
    for (size_t i = 0; i < sizeof views / sizeof *views; i++)
        fprintf(c, "%s\n", views[i]);

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
        if (nn == 5 && !memcmp(name, "names", 5)) {
            const uint8_t *l = body;
            while (l < stop) {
                const uint8_t *e = memchr(l, '\n', (size_t)(stop - l));
                size_t ln = e ? (size_t)(e - l) : (size_t)(stop - l);
                if (ln && ln < 200 && !memchr(l, 0, ln) && !memchr(l, '\r', ln))
                    fprintf(c, "source %.*s\ndisasm %.*s\ncsingle %.*s\nfsingle %.*s\n",
                            (int)ln, l, (int)ln, l, (int)ln, l, (int)ln, l);
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
    fclose(c);

    run_print(exp, cmds, 0);
    run_print(exp, cmds, 1);
    char *cargv[] = { "check", exp, NULL };
    cmd_check(2, cargv);
    fflush(stdout);
    return 0;
}
