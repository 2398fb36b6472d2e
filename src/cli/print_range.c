/*
 * print_range.c - -time_functions: each function's exclusive and inclusive value of the sort
 * metric per time column of the run (report_range.c). `tally view` sums the columns of the time
 * range the user selects: the JSON gives raw sums (integers, exact) and the scale that makes
 * them the metric's unit, so a range's sums are those of -filters "TSTAMP >= ..." to the digit.
 *
 * JSON: {"view":"time_functions","metric":"totalcpu","title":"Total CPU Time","unit":"s","scale":1e-09,"columns":200,
 *        "column_ns":N,"totals":[raw per column],"functions":["name",...],
 *        "cells":[[column,function index,exclusive raw,inclusive raw],...]}
 * Text: one line per column with its time range, its total and its hottest function.
 */
#include <stdlib.h>

#include "print.h"

int view_time_functions(pstate_t *ps)
{
    tally_err_t err = { 0 };
    int metric = ps->sort_metric >= 0 ? ps->sort_metric
               : ps->metrics.ncols ? ps->metrics.cols[0].metric : ENG_M_TOTALCPU;
    rep_tfuncs_t t;
    if (rep_time_functions(ps->ses, metric, ps->namefmt, &t, &err))
        return pr_report(&err);
    const eng_metric_def_t *d = eng_metric(ps->ses->eng, metric);
    /* the functions named, numbered in order of first use */
    size_t nn = t.names.n;
    uint32_t *index = malloc((nn ? nn : 1) * sizeof *index);
    if (!index) {
        rep_tfuncs_free(&t);
        tally_errf(&err, TALLY_ENOMEM, "out of memory");
        return pr_report(&err);
    }
    for (size_t i = 0; i < nn; i++)
        index[i] = UINT32_MAX;
    sink_t *o = &ps->out;
    if (ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "time_functions");
        json_key(&j, "metric");
        json_str(&j, d->name);
        json_key(&j, "title");
        json_str(&j, d->title);
        json_key(&j, "unit");
        json_str(&j, d->unit);
        json_key(&j, "scale");
        json_num(&j, d->scale);
        json_key(&j, "columns");
        json_u64(&j, t.ncols);
        json_key(&j, "column_ns");
        json_u64(&j, t.col_ns);
        json_key(&j, "totals");
        json_arr_begin(&j);
        for (uint32_t k = 0; k < t.ncols; k++)
            json_u64(&j, t.total[k]);
        json_arr_end(&j);
        json_key(&j, "functions");
        json_arr_begin(&j);
        uint32_t next = 0;
        for (size_t i = 0; i < t.n; i++) {
            uint32_t f = t.cells[i].fn;
            if (f < nn && index[f] == UINT32_MAX) {
                index[f] = next++;
                json_str(&j, t.names.name[f] ? t.names.name[f] : "<Unknown>");
            }
        }
        json_arr_end(&j);
        json_key(&j, "cells");
        json_arr_begin(&j);
        for (size_t i = 0; i < t.n; i++) {
            if (t.cells[i].fn >= nn)
                continue;
            json_arr_begin(&j);
            json_u64(&j, t.cells[i].col);
            json_u64(&j, index[t.cells[i].fn]);
            json_u64(&j, t.cells[i].ex);
            json_u64(&j, t.cells[i].in);
            json_arr_end(&j);
        }
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(o, "%s per time column (%u columns of %.6f s): exclusive total, hottest "
                       "function\n\n", d->title, t.ncols, (double)t.col_ns * 1e-9);
        size_t i = 0;
        for (uint32_t k = 0; k < t.ncols; k++) {
            const char *hot = "";
            uint64_t best = 0;
            for (; i < t.n && t.cells[i].col == k; i++)
                if (t.cells[i].ex > best && t.cells[i].fn < nn && t.names.name[t.cells[i].fn]) {
                    best = t.cells[i].ex;
                    hot = t.names.name[t.cells[i].fn];
                }
            if (!t.total[k])
                continue;
            char v[64];
            pr_fmt_value(v, sizeof v, d, t.total[k]);
            sink_printf(o, "  %10.6f - %10.6f  %12s  %s\n", (double)k * t.col_ns * 1e-9,
                        (double)(k + 1) * t.col_ns * 1e-9, v, hot);
        }
        sink_printf(o, "\n");
    }
    free(index);
    rep_tfuncs_free(&t);
    return 0;
}
