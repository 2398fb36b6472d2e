/*
 * print_samples.c - the views over time: -sample_list, -sample_detail, the per-sample part of
 * -overview, -timeline; and the selections that go with them (-sample_select, -cpu_select,
 * -filters). Sample k of a process is the period from its k-th sample packet to the next. See
 * print.h.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"

/* ---- -sample_list, -sample_detail ------------------------------------------------------------ */

static int sample_totals(pstate_t *ps, rep_buckets_t *b)
{
    tally_err_t err = { 0 };
    return rep_sample_totals(ps->ses, b, &err) ? pr_report(&err) : 0;
}

static void json_sample(pstate_t *ps, json_t *j, const rep_sample_t *r)
{
    json_obj_begin(j);
    json_key(j, "number");
    json_u64(j, r->k + 1);
    json_key(j, "process");
    json_str(j, r->process);
    json_key(j, "start");
    json_num(j, r->start);
    json_key(j, "duration");
    json_num(j, r->length);
    json_key(j, "reason");
    json_str(j, r->reason ? r->reason : "");
    json_key(j, "label");
    json_str(j, r->label ? r->label : "");
    if (r->has_next) {
        json_key(j, "utime");
        json_num(j, r->utime);
        json_key(j, "stime");
        json_num(j, r->stime);
        const char *keys[] = { "minflt", "majflt", "inblock", "oublock", "nvcsw", "nivcsw",
                               "rchar", "wchar" };
        const uint64_t v[] = { r->minflt, r->majflt, r->inblock, r->oublock, r->nvcsw, r->nivcsw,
                               r->rchar, r->wchar };
        for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
            json_key(j, keys[k]);
            json_u64(j, v[k]);
        }
    }
    json_key(j, "rss_kb");
    json_u64(j, r->rss_kb);
    json_key(j, "maxrss_kb");
    json_u64(j, r->maxrss_kb);
    if (r->v)
        for (int m = 0; m < eng_nmetrics(ps->ses->eng); m++) {
            if (!eng_has_metric(ps->ses->eng, m))
                continue;
            json_key(j, eng_metric(ps->ses->eng, m)->name);
            json_num(j, pr_scaled(ps->ses->eng, m, r->v[m]));
        }
    json_obj_end(j);
}

int view_sample_list(pstate_t *ps)
{
    rep_buckets_t b;
    if (sample_totals(ps, &b))
        return 1;
    sink_t *o = &ps->out;
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "sample_list");
        json_key(&j, "selection");
        json_str(&j, eng_sample_selection(ps->ses->eng));
        json_key(&j, "samples");
        json_arr_begin(&j);
    } else {
        sink_printf(o, "Samples (selected: %s)\n\n%4s %-12s %9s %9s %9s %9s %9s %8s %8s  %s\n",
                    eng_sample_selection(ps->ses->eng), "#", "Process", "Start s", "Length s",
                    "User s", "System s", "Lock+I/O", "Faults", "RSS MB", "Reason / label");
    }
    for (size_t x = 0; x < ps->ses->nexps; x++)
        for (size_t i = 0; i < ps->ses->exps[x]->nprocs; i++) {
            const exp_process_t *p = ps->ses->exps[x]->procs[i];
            for (size_t k = 0; k < p->nsamples; k++) {
                rep_sample_t r;
                rep_sample(ps->ses, &b, p, x == 0 && i == 0, k, &r);
                if (ps->json) {
                    json_sample(ps, &j, &r);
                    continue;
                }
                sink_printf(o, "%4zu %-12.12s %9.3f %9.3f %9.3f %9.3f %9.3f %8llu %8.1f  %s%s%s\n",
                            k + 1, r.process, r.start, r.length, r.utime, r.stime,
                            r.v ? pr_scaled(ps->ses->eng, ENG_M_LOCK, r.v[ENG_M_LOCK] + r.v[ENG_M_IO]) : 0.0,
                            (unsigned long long)(r.minflt + r.majflt), (double)r.rss_kb / 1024.0,
                            r.reason ? r.reason : "", r.label ? " " : "", r.label ? r.label : "");
            }
        }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(o, "\nSample k runs from its packet to the next; its states are summed over "
                       "threads (User s, System s: the kernel's figures for that process; Lock+I/O: User Lock and "
                       "I/O Wait Time recorded in every process of the run, in the root's rows).\n\n");
    }
    rep_buckets_free(&b);
    return 0;
}

/* One sample's details, as text. */
static void sample_detail_text(pstate_t *ps, const exp_process_t *p, const rep_sample_t *r)
{
    sink_t *o = &ps->out;
    sink_printf(o, "Sample %zu of %s (pid %u)\n\n", r->k + 1, r->process, p->pid);
    sink_printf(o, "  %-28s %.3f s (packet: %s%s%s)\n", "Start", r->start,
                r->reason ? r->reason : "", r->label ? ", " : "", r->label ? r->label : "");
    if (!r->has_next) {
        sink_printf(o, "  The last packet of the process: the sample is empty.\n\n");
        return;
    }
    sink_printf(o, "  %-28s %.3f s\n", "Length", r->length);
    sink_printf(o, "  %-28s %.3f s\n", "User CPU (kernel)", r->utime);
    sink_printf(o, "  %-28s %.3f s\n", "System CPU (kernel)", r->stime);
    sink_printf(o, "  %-28s %llu minor, %llu major\n", "Page faults",
                (unsigned long long)r->minflt, (unsigned long long)r->majflt);
    sink_printf(o, "  %-28s %llu in, %llu out\n", "Blocks", (unsigned long long)r->inblock,
                (unsigned long long)r->oublock);
    sink_printf(o, "  %-28s %llu read, %llu written\n", "Bytes (system calls)",
                (unsigned long long)r->rchar, (unsigned long long)r->wchar);
    sink_printf(o, "  %-28s %llu voluntary, %llu involuntary\n", "Context switches",
                (unsigned long long)r->nvcsw, (unsigned long long)r->nivcsw);
    sink_printf(o, "  %-28s %.1f MB (peak so far %.1f MB)\n", "Resident set",
                (double)r->rss_kb / 1024.0, (double)r->maxrss_kb / 1024.0);
    if (r->v) {
        eng_t *g = ps->ses->eng;
        sink_printf(o, "\n  Recorded in this sample (all threads):\n");
        for (int m = 0; m < eng_nmetrics(g); m++)
            if (eng_has_metric(g, m))
                sink_printf(o, "    %-26s %.3f %s\n", eng_metric(g, m)->title,
                            pr_scaled(g, m, r->v[m]), eng_metric(g, m)->unit);
    }
    sink_printf(o, "\n");
}

/* -sample_detail [exp_id]: every selected sample (-sample_select) of every process of the
 * experiment (all experiments by default), as er_print's sample_detail. */
int view_sample_detail(pstate_t *ps, const char *exp_id)
{
    size_t only;
    if (pr_exp_id(ps, "sample_detail", exp_id, &only))
        return 1;
    rep_buckets_t b;
    if (sample_totals(ps, &b))
        return 1;
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "sample_detail");
        json_key(&j, "selection");
        json_str(&j, eng_sample_selection(ps->ses->eng));
        json_key(&j, "samples");
        json_arr_begin(&j);
    }
    size_t shown = 0;
    for (size_t x = 0; x < ps->ses->nexps; x++) {
        if (only != SIZE_MAX && x != only)
            continue;
        for (size_t i = 0; i < ps->ses->exps[x]->nprocs; i++) {
            const exp_process_t *p = ps->ses->exps[x]->procs[i];
            for (size_t k = 0; k < p->nsamples; k++) {
                if (!eng_sample_selected(ps->ses->eng, (uint32_t)(k + 1)))
                    continue;
                rep_sample_t r;
                rep_sample(ps->ses, &b, p, x == 0 && i == 0, k, &r);
                shown++;
                if (ps->json)
                    json_sample(ps, &j, &r);
                else
                    sample_detail_text(ps, p, &r);
            }
        }
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else if (!shown) {
        sink_printf(&ps->out, "No sample packets in the selection (samples %s): see -sample_list.\n\n",
                    eng_sample_selection(ps->ses->eng));
    }
    rep_buckets_free(&b);
    return 0;
}

/* The states part of -overview (text): each state's share of the thread time, and per sample. */
void pr_overview_states(pstate_t *ps)
{
    const uint64_t *total = eng_total(ps->ses->eng);
    if (!total[ENG_M_TOTAL])
        return;
    sink_t *o = &ps->out;
    static const int states[] = { ENG_M_USER, ENG_M_SYSTEM, ENG_M_WAIT, ENG_M_LOCK, ENG_M_IO,
                                  ENG_M_SLEEP };
    sink_printf(o, "  Thread time:     %.3f s over all threads, by state:\n",
                pr_scaled(ps->ses->eng, ENG_M_TOTAL, total[ENG_M_TOTAL]));
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        int m = states[i];
        double share = 100.0 * (double)total[m] / (double)total[ENG_M_TOTAL];
        int bar = (int)(share / 2.5 + 0.5);
        sink_printf(o, "    %-16s %8.3f s  %6.2f%%  %.*s\n", eng_metric(ps->ses->eng, m)->title,
                    pr_scaled(ps->ses->eng, m, total[m]), share, bar, "########################################");
    }
    rep_buckets_t b;
    if (sample_totals(ps, &b))
        return;
    sink_printf(o, "\n  %4s %-10s %8s %8s %8s %8s %8s %8s  (seconds, all threads)\n", "#", "Label",
                "User", "System", "Wait", "Lock", "I/O", "Sleep");
    const exp_process_t *root = ps->ses->exps[0]->procs[0];
    for (size_t k = 1; k < b.n; k++) {
        const uint64_t *v = b.v + k * (size_t)b.nmetrics;
        if (!v[ENG_M_TOTAL])
            continue;
        const char *label = k - 1 < root->nsamples && root->samples[k - 1].label
                                ? root->samples[k - 1].label
                                : "";
        sink_printf(o, "  %4zu %-10.10s", k, label);
        for (size_t i = 0; i < sizeof states / sizeof states[0]; i++)
            sink_printf(o, " %8.3f", pr_scaled(ps->ses->eng, states[i], v[states[i]]));
        sink_printf(o, "\n");
    }
    rep_buckets_free(&b);
}

/* ---- -timeline ------------------------------------------------------------------------------- */

int view_timeline(pstate_t *ps)
{
    tally_err_t err = { 0 };
    rep_timeline_t tl;
    if (rep_timeline(ps->ses, ps->namefmt, &tl, &err))
        return pr_report(&err);
    sink_t *o = &ps->out;
    if (tl.empty) {
        if (ps->json) {
            json_t j; /* (no "incomplete": there is nothing) */
            json_init(&j, o);
            json_obj_begin(&j);
            json_key(&j, "view");
            json_str(&j, "timeline");
            json_key(&j, "threads");
            json_arr_begin(&j);
            json_arr_end(&j);
            json_obj_end(&j);
            json_end_doc(&j);
        } else {
            sink_printf(o, "No events.\n\n");
        }
        rep_timeline_free(&tl);
        return 0;
    }
    if (ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "timeline");
        json_key(&j, "start");
        json_u64(&j, 0);
        json_key(&j, "end");
        json_num(&j, tl.span);
        json_key(&j, "columns");
        json_u64(&j, REP_TL_COLS);
        json_key(&j, "legend");
        json_obj_begin(&j);
        for (size_t i = 0; i < tl.nlegend; i++) {
            json_keyf(&j, "%c", tl.legend[i].letter);
            json_str(&j, tl.legend[i].name);
        }
        static const char *const states[][2] = { { "^", "<Wait CPU>" }, { "=", "<User Lock>" },
                                                  { "%", "<I/O Wait>" }, { ".", "<Sleep>" } };
        for (size_t i = 0; i < 4; i++) {
            json_key(&j, states[i][0]);
            json_str(&j, states[i][1]);
        }
        json_obj_end(&j);
        json_key(&j, "states_legend"); /* runtime states (OpenMP, MPI Work and Wait) */
        json_obj_begin(&j);
        for (size_t i = 0; i < tl.nrstates; i++) {
            json_keyf(&j, "%c", (char)('1' + i));
            json_str(&j, eng_metric(ps->ses->eng, tl.rstates[i])->name);
        }
        json_obj_end(&j);
        json_key(&j, "threads");
        json_arr_begin(&j);
        for (size_t r = 0; r < tl.nrows; r++) {
            json_obj_begin(&j);
            json_key(&j, "thread");
            json_u64(&j, tl.rows[r].t->number);
            json_key(&j, "tid");
            json_u64(&j, tl.rows[r].t->tid);
            json_key(&j, "cells");
            json_str(&j, tl.rows[r].cells);
            if (tl.rows[r].has_rstates) {
                json_key(&j, "states");
                json_str(&j, tl.rows[r].rstates);
            }
            json_obj_end(&j);
        }
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(o, "Timeline: %.3f s in %d columns of %.1f ms; each cell shows the mark of "
                       "the function with the most\nCPU time (1 the most cells, the legend "
                       "follows), or the thread's main state when it mostly did\nnot run (= lock, "
                       "%% I/O, . sleep; ^ waiting for a CPU without running at all)\n\n",
                    tl.span, REP_TL_COLS, tl.cell_ns * 1e-6);
        if (tl.nrstates)
            sink_printf(o, "A line below a thread shows the runtime state it was in most "
                           "(digits, below)\n\n");
        for (size_t r = 0; r < tl.nrows; r++) {
            sink_printf(o, "%4u %7u |%s|\n", tl.rows[r].t->number, tl.rows[r].t->tid,
                        tl.rows[r].cells);
            if (tl.rows[r].has_rstates)
                sink_printf(o, "      states |%s|\n", tl.rows[r].rstates);
        }
        sink_printf(o, "\n");
        for (size_t i = 0; i < tl.nlegend; i++)
            sink_printf(o, "  %c  %s\n", tl.legend[i].letter, tl.legend[i].name);
        for (size_t i = 0; i < tl.nrstates; i++) {
            const eng_metric_def_t *m = eng_metric(ps->ses->eng, tl.rstates[i]);
            sink_printf(o, "  %c  %s (%s)\n", (char)('1' + i), m->title, m->name);
        }
        sink_printf(o, "\n");
    }
    rep_timeline_free(&tl);
    return 0;
}

/* ---- selections ------------------------------------------------------------------------------ */

int set_sample_select(pstate_t *ps, const char *arg)
{
    tally_err_t err = { 0 };
    if (eng_select_samples(ps->ses->eng, arg, &err))
        return pr_report(&err);
    return ps->compat && !ps->json ? pr_list_er(ps, 'S') : 0; /* er_print shows the selection */
}

int set_cpu_select(pstate_t *ps, const char *arg)
{
    tally_err_t err = { 0 };
    if (eng_select_cpus(ps->ses->eng, arg, &err))
        return pr_report(&err);
    return ps->compat && !ps->json ? pr_list_er(ps, 'C') : 0; /* er_print shows the selection */
}

int set_filters(pstate_t *ps, const char *arg)
{
    tally_err_t err = { 0 };
    return eng_set_filter(ps->ses->eng, arg, &err) ? pr_report(&err) : 0;
}
