/*
 * print_mpi.c - the views of MPI jobs (tally collect -M on): -rank_list, -rank_select,
 * -mpi_imbalance, -mpi_callsites. Models in analyzer/report_mpi.h. See print.h.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/report_mpi.h"
#include "print.h"

/* A metric's raw sum in row v, 0 when the experiments do not have it. */
static uint64_t raw(const pstate_t *ps, const uint64_t *v, const char *name)
{
    int m = eng_metric_find(ps->ses->eng, name);
    return m >= 0 ? v[m] : 0;
}

static double secs(const pstate_t *ps, const uint64_t *v, const char *name)
{
    int m = eng_metric_find(ps->ses->eng, name);
    return m >= 0 ? pr_scaled(ps->ses->eng, m, v[m]) : 0.0;
}

int view_rank_list(pstate_t *ps, const char *a)
{
    tally_err_t err = { 0 };
    rep_ranks_t r;
    if (rep_mpi_ranks(ps->ses, &r, &err))
        return pr_report(&err);
    static const char *const counts[] = { "mpisends", "mpibytessent", "mpireceives",
                                          "mpibytesrecv", "mpiother", "mpicollsent",
                                          "mpicollrecv" };
    sink_t *o = &ps->out;
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "rank_list");
        json_key(&j, "selection");
        json_str(&j, eng_thread_selection(ps->ses->eng));
        json_key(&j, "ranks");
        json_arr_begin(&j);
    } else {
        sink_printf(o, "Ranks (threads selected: %s)\n\n", eng_thread_selection(ps->ses->eng));
        sink_printf(o, "%6s %7s %11s %10s %9s %14s %9s %14s %9s %8s  %s\n", "Rank", "Threads",
                    "MPI sec.", "CPU sec.", "Sends", "Bytes sent", "Receives", "Bytes recv.",
                    "Other", "Dropped", "Host");
    }
    for (size_t i = 0; i < r.n; i++) {
        const rep_rank_t *k = &r.ranks[i];
        double mpi = secs(ps, k->value, "mpitime"), cpu = secs(ps, k->value, "totalcpu");
        if (ps->json) {
            json_obj_begin(&j);
            json_key(&j, "rank");
            json_u64(&j, k->rank);
            json_key(&j, "host");
            json_str(&j, k->host);
            json_key(&j, "processes");
            json_u64(&j, k->nprocs);
            json_key(&j, "threads");
            json_u64(&j, k->nthreads);
            json_key(&j, "mpitime");
            json_num(&j, mpi);
            json_key(&j, "totalcpu");
            json_num(&j, cpu);
            for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
                json_key(&j, counts[c]);
                json_u64(&j, raw(ps, k->value, counts[c]));
            }
            json_key(&j, "dropped");
            json_u64(&j, k->dropped);
            json_obj_end(&j);
        } else {
            sink_printf(o, "%6llu %7u %11.3f %10.3f %9llu %14llu %9llu %14llu %9llu %8llu  %s\n",
                        (unsigned long long)k->rank, k->nthreads, mpi, cpu,
                        (unsigned long long)raw(ps, k->value, "mpisends"),
                        (unsigned long long)raw(ps, k->value, "mpibytessent"),
                        (unsigned long long)raw(ps, k->value, "mpireceives"),
                        (unsigned long long)raw(ps, k->value, "mpibytesrecv"),
                        (unsigned long long)raw(ps, k->value, "mpiother"),
                        (unsigned long long)k->dropped, k->host);
        }
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(o, "\n");
    }
    rep_mpi_ranks_free(&r);
    return 0;
}

int set_rank_select(pstate_t *ps, const char *a)
{
    tally_err_t err = { 0 };
    if (rep_mpi_select_ranks(ps->ses, a, &err))
        return pr_report(&err);
    return 0;
}

static int imbalance(pstate_t *ps, int callsites)
{
    tally_err_t err = { 0 };
    int m = eng_metric_find(ps->ses->eng, "mpitime");
    if (m < 0) {
        tally_errf(&err, TALLY_EUSAGE, "no MPI calls were recorded (collect with -M on)");
        return pr_report(&err);
    }
    rep_imb_t t;
    if (rep_mpi_imbalance(ps->ses, m, callsites, &t, &err))
        return pr_report(&err);
    const char *view = callsites ? "mpi_callsites" : "mpi_imbalance";
    sink_t *o = &ps->out;
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, view);
        json_key(&j, "metric");
        json_str(&j, "mpitime");
        json_key(&j, "ranks");
        json_u64(&j, t.nranks);
        if (callsites) {
            json_key(&j, "late_collectives");
            json_u64(&j, t.late_matched);
            json_key(&j, "late_skipped");
            json_u64(&j, t.late_skipped);
            json_key(&j, "messages_paired");
            json_u64(&j, t.ls_matched);
            json_key(&j, "messages_unpaired");
            json_u64(&j, t.ls_unmatched);
            json_key(&j, "late_sender_waits");
            json_u64(&j, t.ls_waits);
            json_key(&j, "unknown_communicator");
            json_u64(&j, t.late_unknown);
            json_key(&j, "hosts");
            json_u64(&j, t.nhosts);
            json_key(&j, "late_cross_host");
            json_num(&j, (double)t.late_cross * 1e-9);
        }
        json_key(&j, "rows");
        json_arr_begin(&j);
    } else {
        sink_printf(o, "MPI time per %s over %zu rank%s, by its maximum\n\n",
                    callsites ? "MPI call site" : "function (inclusive)", t.nranks,
                    t.nranks == 1 ? "" : "s");
        if (callsites) {
            sink_printf(o, "Late: the other members' wait at barriers and all-to-all collectives "
                        "(any\ncommunicator) where this call site entered last (%llu matched, "
                        "%llu left out),\nand the rank that caused the most of it.\n",
                        (unsigned long long)t.late_matched, (unsigned long long)t.late_skipped);
            sink_printf(o, "Late send: the receivers' wait for sends from this call site that "
                        "started after\nthe receive (%llu of %llu paired messages waited for a "
                        "late sender; %llu left\nunpaired), and the rank that caused the most "
                        "of it.\n",
                        (unsigned long long)t.ls_waits, (unsigned long long)t.ls_matched,
                        (unsigned long long)t.ls_unmatched);
            if (t.late_unknown)
                sink_printf(o, "(%llu collectives and messages on communicators tally cannot "
                            "name across ranks\nwere left out: intercommunicators, or made by "
                            "calls tally does not trace.)\n",
                            (unsigned long long)t.late_unknown);
            if (t.nhosts > 1)
                sink_printf(o, "Warning: the ranks ran on %zu hosts, whose clocks are not "
                            "synchronized: %.6f s of\nthe late times compare ranks on different "
                            "hosts and are off by their clocks' offset.\n",
                            t.nhosts, (double)t.late_cross * 1e-9);
            sink_printf(o, "\n");
        }
        sink_printf(o, "%10s %10s %10s %8s %8s", "Min sec.", "Mean sec.", "Max sec.", "Max rank",
                    "Max/mean");
        if (callsites)
            sink_printf(o, " %10s %9s %10s %9s", "Late sec.", "Late rank", "Late send", "Send rank");
        sink_printf(o, "  %s\n", "Name");
    }
    size_t n = ps->limit > 0 && (size_t)ps->limit < t.n ? (size_t)ps->limit : t.n;
    for (size_t i = 0; i < n; i++) {
        const rep_imb_row_t *r = &t.rows[i];
        double mn = pr_scaled(ps->ses->eng, m, r->min), mx = pr_scaled(ps->ses->eng, m, r->max);
        double mean = r->mean * pr_scaled(ps->ses->eng, m, 1);
        double ratio = mean > 0 ? mx / mean : 0;
        if (ps->json) {
            json_obj_begin(&j);
            json_key(&j, "name");
            json_str(&j, r->name);
            json_key(&j, "min");
            json_num(&j, mn);
            json_key(&j, "mean");
            json_num(&j, mean);
            json_key(&j, "max");
            json_num(&j, mx);
            json_key(&j, "max_rank");
            json_u64(&j, r->max_rank);
            json_key(&j, "min_rank");
            json_u64(&j, r->min_rank);
            if (callsites) {
                json_key(&j, "late");
                json_num(&j, (double)r->late * 1e-9);
                json_key(&j, "late_max");
                json_num(&j, (double)r->late_max * 1e-9);
                json_key(&j, "late_rank");
                if (r->late_max)
                    json_u64(&j, r->late_rank);
                else
                    json_null(&j);
                json_key(&j, "late_send");
                json_num(&j, (double)r->late_send * 1e-9);
                json_key(&j, "late_send_max");
                json_num(&j, (double)r->late_send_max * 1e-9);
                json_key(&j, "late_send_rank");
                if (r->late_send_max)
                    json_u64(&j, r->late_send_rank);
                else
                    json_null(&j);
            }
            json_obj_end(&j);
        } else {
            sink_printf(o, "%10.6f %10.6f %10.6f %8llu %8.2f", mn, mean, mx,
                        (unsigned long long)r->max_rank, ratio);
            if (callsites && r->late_max)
                sink_printf(o, " %10.6f %9llu", (double)r->late * 1e-9,
                            (unsigned long long)r->late_rank);
            else if (callsites)
                sink_printf(o, " %10s %9s", "0", "-");
            if (callsites && r->late_send_max)
                sink_printf(o, " %10.6f %9llu", (double)r->late_send * 1e-9,
                            (unsigned long long)r->late_send_rank);
            else if (callsites)
                sink_printf(o, " %10s %9s", "0", "-");
            sink_printf(o, "  %s\n", r->name);
        }
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(o, "\n");
    }
    rep_mpi_imbalance_free(&t);
    return 0;
}

int view_mpi_imbalance(pstate_t *ps, const char *a)
{
    return imbalance(ps, 0);
}

int view_mpi_callsites(pstate_t *ps, const char *a)
{
    return imbalance(ps, 1);
}

int view_mpi_matrix(pstate_t *ps, const char *a)
{
    tally_err_t err = { 0 };
    rep_mpi_matrix_t m;
    if (rep_mpi_matrix(ps->ses, &m, &err))
        return pr_report(&err);
    sink_t *o = &ps->out;
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "mpi_matrix");
        json_key(&j, "ranks");
        json_u64(&j, m.nranks);
        json_key(&j, "pairs");
        json_arr_begin(&j);
    } else {
        sink_printf(o, "Point-to-point messages between ranks (%zu ranks)\n\n", m.nranks);
        sink_printf(o, "%8s %8s %12s %16s\n", "From", "To", "Messages", "Bytes");
    }
    for (size_t i = 0; i < m.n; i++) {
        const rep_mpi_pair_t *p = &m.pairs[i];
        if (ps->json) {
            json_obj_begin(&j);
            json_key(&j, "from");
            json_u64(&j, p->from);
            json_key(&j, "to");
            json_u64(&j, p->to);
            json_key(&j, "msgs");
            json_u64(&j, p->msgs);
            json_key(&j, "bytes");
            json_u64(&j, p->bytes);
            json_obj_end(&j);
        } else {
            sink_printf(o, "%8llu %8llu %12llu %16llu\n", (unsigned long long)p->from,
                        (unsigned long long)p->to, (unsigned long long)p->msgs,
                        (unsigned long long)p->bytes);
        }
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        if (m.nnotes < m.nranks)
            sink_printf(o, "(%zu of %zu ranks said what they sent: a rank tells at "
                        "MPI_Finalize)\n", m.nnotes, m.nranks);
        sink_printf(o, "\n");
    }
    rep_mpi_matrix_free(&m);
    return 0;
}

/* -mpi_timeline: a line per rank; a column is the dominant MPI function's letter when MPI calls
 * filled at least half of it, '.' when they took some of it, ' ' otherwise. */
int view_mpi_timeline(pstate_t *ps, const char *a)
{
    tally_err_t err = { 0 };
    rep_mpi_timeline_t t;
    if (rep_mpi_timeline(ps->ses, &t, &err))
        return pr_report(&err);
    eng_t *g = ps->ses->eng;
    size_t nf = eng_nobjects(g, ENG_KIND_FUNCTION);
    char *letter = calloc(nf + 1, 1);
    uint32_t *legend = calloc(53, sizeof *legend);
    size_t nl = 0;
    if (!letter || !legend) {
        free(letter);
        free(legend);
        rep_mpi_timeline_free(&t);
        tally_errf(&err, TALLY_ENOMEM, "out of memory");
        return pr_report(&err);
    }
    static const char letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    sink_t *o = &ps->out;
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "mpi_timeline");
        json_key(&j, "span");
        json_num(&j, t.span);
        json_key(&j, "columns");
        json_u64(&j, REP_MPI_TL_COLS);
        json_key(&j, "hosts");
        json_u64(&j, t.nhosts);
        json_key(&j, "ranks");
        json_arr_begin(&j);
        for (size_t r = 0; r < t.n; r++) {
            json_obj_begin(&j);
            json_key(&j, "rank");
            json_u64(&j, t.rows[r].rank);
            json_key(&j, "cells");
            json_arr_begin(&j);
            for (int k = 0; k < REP_MPI_TL_COLS; k++) {
                json_obj_begin(&j);
                json_key(&j, "mpi");
                json_num(&j, (double)t.rows[r].ns[k] * 1e-9);
                json_key(&j, "function");
                json_str(&j, t.rows[r].fn[k] == UINT32_MAX
                                 ? ""
                                 : eng_object_name(g, ENG_KIND_FUNCTION, t.rows[r].fn[k],
                                                   ps->namefmt));
                json_obj_end(&j);
            }
            json_arr_end(&j);
            json_obj_end(&j);
        }
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(o, "MPI calls over %.3f s, %d columns of %.1f ms (letter: the MPI function "
                    "filling at least half a column; '.': less)\n\n", t.span, REP_MPI_TL_COLS,
                    t.cell_ns / 1e6);
        if (t.nhosts > 1)
            sink_printf(o, "Warning: the ranks ran on %zu hosts, whose clocks are not "
                        "synchronized: lines of\ndifferent hosts are shifted by their clocks' "
                        "offset.\n\n", t.nhosts);
        for (size_t r = 0; r < t.n; r++) {
            char line[REP_MPI_TL_COLS + 1];
            for (int k = 0; k < REP_MPI_TL_COLS; k++) {
                uint32_t f = t.rows[r].fn[k];
                line[k] = ' ';
                if (!t.rows[r].ns[k] || f == UINT32_MAX || f > nf)
                    continue;
                line[k] = '.';
                if ((double)t.rows[r].ns[k] < 0.5 * t.cell_ns)
                    continue;
                if (!letter[f] && nl < sizeof letters - 1) {
                    letter[f] = letters[nl];
                    legend[nl++] = f;
                }
                line[k] = letter[f] ? letter[f] : '*';
            }
            line[REP_MPI_TL_COLS] = 0;
            sink_printf(o, "rank %6llu |%s|\n", (unsigned long long)t.rows[r].rank, line);
        }
        sink_printf(o, "\n");
        for (size_t l = 0; l < nl; l++)
            sink_printf(o, "  %c  %s\n", letters[l],
                        eng_object_name(g, ENG_KIND_FUNCTION, legend[l], ps->namefmt));
        sink_printf(o, "\n");
    }
    free(letter);
    free(legend);
    rep_mpi_timeline_free(&t);
    return 0;
}
