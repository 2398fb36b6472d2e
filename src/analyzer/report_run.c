/*
 * report_run.c - the models of the views about the run: its span, how processes ended, the
 * data's trustworthiness, -overview, -header, -thread_list. See report.h.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/report.h"

double rep_run_span(const ses_t *s, uint64_t *t0p, uint64_t *t1p)
{
    uint64_t t0 = UINT64_MAX, t1 = 0;
    for (size_t x = 0; x < s->nexps; x++)
        for (size_t i = 0; i < s->exps[x]->nprocs; i++) {
            const exp_process_t *p = s->exps[x]->procs[i];
            if (p->t_start && p->t_start < t0) /* (0: unknown) */
                t0 = p->t_start;
            if (p->t_end != EXP_T_NEVER && p->t_end > t1)
                t1 = p->t_end;
        }
    if (t0p)
        *t0p = t0;
    if (t1p)
        *t1p = t1;
    return t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0;
}

void rep_end_text(const exp_process_t *p, char *buf, size_t n)
{
    if (p->is_job && !p->has_end)
        snprintf(buf, n, "an MPI job: each rank's processes ended as -header says");
    else if (!p->has_end)
        snprintf(buf, n, "ended without a record (killed, e.g. by SIGKILL, or still running)");
    else if (!strcmp(p->end_how, "exit"))
        snprintf(buf, n, "exited with status %d", p->end_status);
    else if (!strcmp(p->end_how, "signal") || !strcmp(p->end_how, "killed"))
        snprintf(buf, n, "killed by signal %d (%s)", p->end_signal,
                 p->end_signame ? p->end_signame : "?");
    else if (!strcmp(p->end_how, "exec"))
        snprintf(buf, n, "replaced its image by exec");
    else
        snprintf(buf, n, "ended: %s", p->end_how);
}

void rep_trust(const ses_t *s, rep_trust_t *tr)
{
    memset(tr, 0, sizeof *tr);
    for (size_t x = 0; x < s->nexps; x++)
        for (size_t i = 0; i < s->exps[x]->nprocs; i++) {
            const exp_process_t *p = s->exps[x]->procs[i];
            if (p->is_job) /* the directory of a job: no process of its own */
                continue;
            if (!p->has_stats) {
                tr->nostats++;
                continue;
            }
            tr->samples += p->st_samples;
            tr->expected += p->st_expected;
            tr->unwind += p->st_unwind_failures;
            tr->busy += p->st_dropped_busy;
            tr->disk += p->st_dropped_disk;
            tr->truncated += p->st_truncated_stacks;
        }
}

int rep_overview(ses_t *s, rep_overview_t *out, tally_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (!eng_compute(s->eng, ENG_KIND_FUNCTION, 0, err))
        return err->code ? err->code : TALLY_ENOMEM;
    out->total = eng_total(s->eng);
    rep_trust(s, &out->trust);
    out->duration = rep_run_span(s, NULL, NULL);
    for (size_t x = 0; x < s->nexps; x++)
        out->nprocs += s->exps[x]->nprocs;
    out->nthreads = eng_nthreads(s->eng);
    out->root = s->exps[0]->procs[0];
    rep_end_text(out->root, out->ended, sizeof out->ended);
    return 0;
}

int rep_header(ses_t *s, rep_header_t *out, tally_err_t *err)
{
    memset(out, 0, sizeof *out);
    /* the binaries' state is known once their frames were looked up */
    if (!eng_compute(s->eng, ENG_KIND_FUNCTION, 0, err))
        return err->code ? err->code : TALLY_ENOMEM;
    out->stats = eng_scan_stats(s->eng);
    for (int r = 0; r < EXP_LOST_NREASONS; r++)
        out->lost += out->stats->lost[r];
    out->exps = calloc(s->nexps + 1, sizeof *out->exps);
    out->binaries = calloc(sym_nobjects(s->sym) + 1, sizeof *out->binaries);
    if (!out->exps || !out->binaries)
        goto nomem;
    out->nexps = s->nexps;
    for (size_t x = 0; x < s->nexps; x++) {
        const exp_experiment_t *e = s->exps[x];
        rep_hexp_t *he = &out->exps[x];
        he->e = e;
        if (!(he->procs = calloc(e->nprocs + 1, sizeof *he->procs)))
            goto nomem;
        uint64_t *counted = NULL; /* samples in the events, for processes without statistics */
        int count_failed = 0;
        for (size_t i = 0; i < e->nprocs; i++) {
            const exp_process_t *p = e->procs[i];
            rep_hproc_t *hp = &he->procs[i];
            hp->p = p;
            rep_end_text(p, hp->ended, sizeof hp->ended);
            hp->duration_known = p->t_start != 0;
            hp->duration = p->t_end > p->t_start ? (double)(p->t_end - p->t_start) * 1e-9 : 0.0;
            if (!p->has_stats && !p->is_job) {
                if (!counted && !count_failed) {
                    counted = calloc(e->nprocs, sizeof *counted);
                    tally_err_t cerr = { 0 };
                    if (!counted || exp_count_samples(e, counted, &cerr))
                        count_failed = 1;
                }
                if (counted && !count_failed) {
                    hp->counted_known = 1;
                    hp->counted = counted[i];
                }
            }
        }
        free(counted);
    }
    for (size_t o = 0; o < sym_nobjects(s->sym); o++) {
        const sym_object_t *so = sym_object(s->sym, (uint32_t)o);
        if (*so->message)
            out->binaries[out->nbinaries++] = (rep_binary_t){ so->path, so->message };
    }
    return 0;
nomem:
    rep_header_free(out);
    return tally_errf(err, TALLY_ENOMEM, "out of memory");
}

void rep_header_free(rep_header_t *h)
{
    for (size_t x = 0; h->exps && x < h->nexps; x++)
        free(h->exps[x].procs);
    free(h->exps);
    free(h->binaries);
    memset(h, 0, sizeof *h);
}

int rep_threads(ses_t *s, rep_threads_t *out, tally_err_t *err)
{
    memset(out, 0, sizeof *out);
    int rc = eng_aggregate(s->eng, err);
    if (rc)
        return rc;
    /* aggregation counted the events of every thread, values only for those selected */
    size_t n = eng_nthreads(s->eng);
    out->selection = eng_thread_selection(s->eng);
    if (!(out->threads = calloc(n + 1, sizeof *out->threads)))
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    out->n = n;
    for (size_t i = 0; i < n; i++) {
        const eng_thread_t *t = eng_thread(s->eng, i);
        const exp_process_t *p = s->exps[t->exp]->procs[t->proc];
        rep_thread_t *r = &out->threads[i];
        r->t = t;
        r->p = p;
        r->name = t->info && t->info->name ? t->info->name : "";
        r->how = t->info && t->info->how ? t->info->how : "";
        r->process = *p->name ? p->name : "(root)";
        /* wall time: from the thread's start to its end (or the end of its process) */
        uint64_t t0 = t->info ? t->info->t_start : p->t_start;
        uint64_t t1 = t->info && t->info->t_end != EXP_T_NEVER ? t->info->t_end : p->t_end;
        r->wall = t0 && t1 > t0 && t1 != EXP_T_NEVER ? (double)(t1 - t0) * 1e-9 : 0.0;
    }
    return 0;
}

void rep_threads_free(rep_threads_t *t)
{
    free(t->threads);
    memset(t, 0, sizeof *t);
}
