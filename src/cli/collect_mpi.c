/*
 * collect_mpi.c - `tally collect -M on` (collect_mpi.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/monotime.h"
#include "cli.h"
#include "collect_mpi.h"
#include "experiment/logfile.h"
#include "experiment/logrec.h"

int collect_mpi_lib(const char *collector, char *out, size_t cap)
{
    const char *slash = strrchr(collector, '/');
    int dl = slash ? (int)(slash - collector) : 1;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%.*s/libtally-mpi.so", dl, slash ? collector : ".");
    if (access(path, R_OK) != 0 || strlen(path) >= cap) {
        cli_error("collect", "-M on: cannot find the MPI wrappers '%s' beside the collector; "
                  "build tally with mpicc.openmpi or mpicc.mpich installed", path);
        return -1;
    }
    snprintf(out, cap, "%s", path);
    return 0;
}

/* The job's name, made safe for a file name: the launcher's job id, or for Hydra (which names
 * none) the host and the pid of the proxy that started this rank. */
static void job_key(const exp_mpi_rank_t *mr, char *out, size_t cap)
{
    char raw[256];
    if (mr->job[0]) {
        snprintf(raw, sizeof raw, "%s", mr->job);
    } else {
        char host[128] = "";
        gethostname(host, sizeof host - 1);
        snprintf(raw, sizeof raw, "%s-%ld", host, (long)getppid());
    }
    size_t k = 0;
    for (const char *s = raw; *s && k + 1 < cap; s++)
        out[k++] = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                           (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' || *s == '_'
                       ? *s
                       : '_';
    out[k] = 0;
}

static void claim_path(const char *dir, const char *prog, const exp_mpi_rank_t *mr, char *out,
                       size_t cap)
{
    const char *base = strrchr(prog, '/');
    base = base ? base + 1 : prog;
    char key[200];
    job_key(mr, key, sizeof key);
    snprintf(out, cap, "%s/.%s.%s.tally-job", dir, base, key);
}

/* The top's log, once: the `job` record says the directory holds the ranks of one job. */
static void write_job_log(const char *top, const exp_mpi_rank_t *mr)
{
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/log", top);
    int fd = exp_log_create(path);
    if (fd < 0)
        return; /* another rank's, or said when the rank's own experiment fails */
    char buf[512];
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_JOB);
    exp_line_u64(&l, EXP_KEY_T, mono_ns());
    exp_line_str(&l, EXP_KEY_LAUNCHER, mr->launcher);
    if (mr->job[0])
        exp_line_str(&l, EXP_KEY_JOB, mr->job);
    if (mr->size)
        exp_line_u64(&l, EXP_KEY_SIZE, mr->size);
    exp_line_write(&l, fd);
    close(fd);
}

/* Reads the name a claim file holds into out: 0, or -1 (none yet, or unreadable). */
static int read_claim(const char *claim, char *out, size_t cap)
{
    int fd = open(claim, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n <= 0 || out[n - 1] != '\n')
        return -1;
    out[n - 1] = 0;
    return strchr(out, '/') || !strcmp(out, ".") || !strcmp(out, "..") ? -1 : 0;
}

/* The first rank: the claim file is created exclusively first (so exactly one rank chooses),
 * then the next free <prog>.<n>.tally is made and its name written into the claim in one write
 * ending with a newline (the others wait for it). 0: top is ours; 1: another rank has the
 * claim; -1: an error (said). */
static int claim_new(const char *dir, const char *prog, const char *claim, char *top,
                     size_t tcap)
{
    int fd = open(claim, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 && errno == EEXIST)
        return 1;
    if (fd < 0) {
        cli_error("collect", "cannot create '%s': %s", claim, strerror(errno));
        return -1;
    }
    const char *base = strrchr(prog, '/');
    base = base ? base + 1 : prog;
    char name[NAME_MAX + 2];
    int n, made = 0;
    for (n = 1; n < 100000 && !made; n++) {
        snprintf(name, sizeof name - 1, "%s.%d.tally", base, n);
        snprintf(top, tcap, "%s/%s", dir, name);
        if (mkdir(top, 0755) == 0)
            made = 1;
        else if (errno != EEXIST)
            break;
    }
    if (!made) {
        cli_error("collect", "cannot create experiment '%s': %s", top, strerror(errno));
        close(fd);
        unlink(claim);
        return -1;
    }
    size_t len = strlen(name);
    name[len] = '\n';
    int ok = write(fd, name, len + 1) == (ssize_t)(len + 1);
    int e = errno;
    close(fd);
    if (!ok) {
        cli_error("collect", "cannot write '%s': %s", claim, strerror(e ? e : ENOSPC));
        unlink(claim);
        rmdir(top);
        return -1;
    }
    return 0;
}

int collect_mpi_job_dir(const char *directory, const char *output, const char *prog,
                        const exp_mpi_rank_t *mr, char *top, size_t tcap, char *exp,
                        size_t ecap)
{
    const char *dir = directory ? directory : ".";
    if (output) {
        size_t n = strlen(output);
        snprintf(top, tcap, "%s/%s%s", dir, output,
                 n > 6 && !strcmp(output + n - 6, ".tally") ? "" : ".tally");
        if (mkdir(top, 0755) < 0 && errno != EEXIST) {
            cli_error("collect", "cannot create experiment '%s': %s", top, strerror(errno));
            return -1;
        }
    } else {
        char claim[PATH_MAX], name[NAME_MAX + 2];
        claim_path(dir, prog, mr, claim, sizeof claim);
        int found = 0;
        /* 10 ms apart, for up to a minute: the first rank writes the name right after it
         * creates the claim, but a loaded machine may not run it for a while */
        for (int attempt = 0; attempt < 6000 && !found; attempt++) {
            if (read_claim(claim, name, sizeof name) == 0) {
                snprintf(top, tcap, "%s/%s", dir, name);
                char mine[PATH_MAX + 64];
                snprintf(mine, sizeof mine, "%s/_r%llu.tally", top, (unsigned long long)mr->rank);
                struct stat st;
                if (lstat(mine, &st) == 0 || lstat(top, &st) != 0) {
                    /* a claim left by an earlier job of the same name: not ours */
                    unlink(claim);
                    continue;
                }
                found = 1;
                break;
            }
            if (access(claim, F_OK) == 0) { /* created, its name not written yet */
                struct timespec ts = { 0, 10000000 };
                nanosleep(&ts, NULL);
                continue;
            }
            int rc = claim_new(dir, prog, claim, top, tcap);
            if (rc < 0)
                return -1;
            found = rc == 0;
        }
        if (!found) {
            cli_error("collect", "could not agree on the job's experiment through '%s'; give "
                      "every rank the same name with -o", claim);
            return -1;
        }
    }
    write_job_log(top, mr);
    snprintf(exp, ecap, "%s/_r%llu.tally", top, (unsigned long long)mr->rank);
    if (mkdir(exp, 0755) < 0) {
        if (errno == EEXIST)
            cli_error("collect", "rank %llu is already recorded in '%s'; remove it or choose "
                      "another name with -o", (unsigned long long)mr->rank, top);
        else
            cli_error("collect", "cannot create experiment '%s': %s", exp, strerror(errno));
        return -1;
    }
    return 0;
}

void collect_mpi_job_end(const char *directory, const char *prog, const exp_mpi_rank_t *mr)
{
    if (mr->rank != 0)
        return;
    char claim[PATH_MAX];
    claim_path(directory ? directory : ".", prog, mr, claim, sizeof claim);
    unlink(claim);
}
