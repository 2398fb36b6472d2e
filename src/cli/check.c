/*
 * check.c - `tally check EXP...`: reads every file of an experiment with the one reader and says
 * what it found and what is damaged. Exit 0 when intact, 1 when anything was lost or corrupt.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "experiment/reader.h"

static void usage(FILE *out)
{
    esc_fprintf(out, "usage: tally check EXPERIMENT...\n\n"
                 "Reads the log and the event streams of an experiment and of its descendant\n"
                 "processes, and reports their contents and any damage (a truncated or corrupt\n"
                 "file, lost events). Exits 1 if anything is damaged.\n");
}

static int check_one(const char *path)
{
    tally_err_t err = { 0 };
    exp_experiment_t *e;
    if (exp_open(path, &e, &err))
        return cli_report(&err);
    exp_stacks_t *stacks = exp_stacks_new();
    exp_scan_stats_t st;
    int rc = exp_scan(e, stacks, NULL, NULL, &st, &err);
    int damaged = 0;
    size_t njobs = 0; /* directories of MPI jobs (mpirun tally collect): no process of their own */
    for (size_t i = 0; i < e->nprocs; i++)
        njobs += e->procs[i]->is_job != 0;
    size_t nprocs = e->nprocs - njobs;
    esc_printf("%s: %zu process%s\n", path, nprocs, nprocs == 1 ? "" : "es");
    for (size_t i = 0; i < e->nprocs; i++) {
        const exp_process_t *p = e->procs[i];
        if (p->is_job) {
            esc_printf("  %s: the directory of an MPI job (%llu ranks), no process of its own\n",
                       *p->name ? p->name : "(root)", (unsigned long long)p->mpi_size);
        } else {
            esc_printf("  %s pid %u: %zu log records, %zu threads, %zu load objects, %zu samples",
                       *p->name ? p->name : "(root)", p->pid, p->nrecords, p->nthreads,
                       p->nobjects, p->nsamples);
            if (p->has_end)
                esc_printf(", ended: %s\n", p->end_how);
            else
                esc_printf(", ended without a record\n");
        }
        for (size_t w = 0; w < p->nwarnings; w++)
            esc_printf("    warning: %s\n", p->warnings[w]);
        /* damage is what the reader says it is (a code and a place), never a wording */
        for (size_t d = 0; d < p->ndamage; d++) {
            const exp_damage_t *dm = &p->damage[d];
            if (dm->offset != UINT64_MAX)
                esc_printf("    damage: %s at offset %llu of %s%s%s\n", tally_strerror(dm->code),
                       (unsigned long long)dm->offset, *p->name ? p->name : "",
                       *p->name ? "/" : "", dm->file);
            damaged = 1;
        }
    }
    if (rc) {
        esc_printf("  events: %s\n", err.msg);
        damaged = 1;
    } else {
        esc_printf("  events: %llu in %llu chunks (%llu unused), %zu distinct stacks\n",
               (unsigned long long)st.events, (unsigned long long)st.chunks,
               (unsigned long long)st.unused_chunks, exp_stacks_count(stacks));
        unsigned long long lost = 0;
        for (int r = 1; r < EXP_LOST_NREASONS; r++)
            lost += st.lost[r];
        if (st.bad_chunks || st.bad_records || st.seq_gaps || st.unknown_records) {
            esc_printf("  damage: %llu bad chunks, %llu bad records, %llu gaps, %llu unknown "
                   "records\n", (unsigned long long)st.bad_chunks,
                   (unsigned long long)st.bad_records, (unsigned long long)st.seq_gaps,
                   (unsigned long long)st.unknown_records);
            if (st.bad_offset != UINT64_MAX) {
                const exp_process_t *bp = e->procs[st.bad_proc];
                esc_printf("  first damage: %s at offset %llu of %s%sevents\n", st.bad_what,
                       (unsigned long long)st.bad_offset, bp->name, *bp->name ? "/" : "");
            }
            damaged = 1;
        }
        if (lost)
            esc_printf("  lost while recording: %llu events (busy %llu, disk full %llu, no stack "
                   "%llu)\n", lost, (unsigned long long)st.lost[EXP_LOST_BUSY],
                   (unsigned long long)st.lost[EXP_LOST_DISK],
                   (unsigned long long)st.lost[EXP_LOST_NOSTACK]);
    }
    esc_printf("  %s\n", damaged ? "DAMAGED" : "ok");
    exp_stacks_free(stacks);
    exp_close(e);
    return damaged ? 1 : 0;
}

int cmd_check(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(stdout);
        return 0;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        int r = check_one(argv[i]);
        if (r > rc)
            rc = r;
    }
    return rc;
}
