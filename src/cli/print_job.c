/*
 * print_job.c - `mpirun -np K tally print ...`: the analysis as an MPI job (analyzer/jobscan.h).
 * Rank 0 runs the commands and prints; the other processes open the same experiments quietly and
 * serve its aggregations, each scanning its share of the processes.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "print.h"

/* A process that is not rank 0: opens the experiments with its output kept (what it would print
 * is rank 0's to print; why it failed is sent to rank 0), then serves the job. */
static int serve(job_t *job, pstate_t *ps, const pr_args_t *pa)
{
    fflush(stdout);
    fflush(stderr);
    int out = dup(1), errfd = dup(2), null = open("/dev/null", O_WRONLY);
    FILE *tmp = tmpfile();
    if (out < 0 || errfd < 0 || null < 0 || !tmp) {
        esc_fprintf(stderr, "tally: analysis process %d: cannot redirect its output\n",
                    job_rank(job));
        return 1;
    }
    dup2(null, 1);
    dup2(fileno(tmp), 2);
    int rc = pr_open(ps, pa->paths, pa->npaths, pa->json);
    fflush(stderr);
    char why[1024] = "";
    if (rc) {
        size_t n = (size_t)ftell(tmp);
        size_t from = n > sizeof why - 1 ? n - (sizeof why - 1) : 0;
        fseek(tmp, (long)from, SEEK_SET);
        n = fread(why, 1, sizeof why - 1, tmp);
        why[n] = 0;
        while (n && why[n - 1] == '\n')
            why[--n] = 0;
    }
    dup2(null, 2);
    tally_err_t err = { 0 };
    int s = job_serve(job, rc ? NULL : ps->ses, why, &err);
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(errfd, 2);
    close(out);
    close(errfd);
    close(null);
    fclose(tmp);
    if (s) {
        esc_fprintf(stderr, "tally: analysis process %d: ", job_rank(job));
        return cli_report(&err);
    }
    return rc ? 1 : 0;
}

int pr_job_start(pstate_t *ps, const pr_args_t *pa, job_t **job, int *rc)
{
    tally_err_t err = { 0 };
    *job = NULL;
    if (job_start(job, &err)) {
        *rc = cli_report(&err);
        return 1;
    }
    if (!*job || job_rank(*job) == 0)
        return 0;
    *rc = serve(*job, ps, pa);
    ses_free(ps->ses);
    ps->ses = NULL;
    job_end(*job);
    *job = NULL;
    return 1;
}

void pr_job_attach(pstate_t *ps, job_t *job, int *rc)
{
    tally_err_t err = { 0 };
    if (job && job_attach(job, *rc ? NULL : ps->ses, &err)) {
        int r = cli_report(&err);
        if (!*rc)
            *rc = r;
    }
}

void pr_job_end(job_t *job, int *rc)
{
    tally_err_t err = { 0 };
    const char *stats = getenv("TALLY_JOB_STATS"); /* tally-print(1): ENVIRONMENT */
    if (job && stats && *stats && strcmp(stats, "0")) {
        static char buf[1 << 16];
        job_describe(job, buf, sizeof buf);
        for (char *line = buf, *nl; *line; line = nl + 1) { /* names escaped, not newlines */
            if (!(nl = strchr(line, '\n')))
                break;
            *nl = 0;
            esc_fprintf(stderr, "tally: %s\n", line);
        }
    }
    if (job && job_finish(job, &err)) {
        int r = cli_report(&err);
        if (!*rc)
            *rc = r;
    }
    job_end(job);
}
