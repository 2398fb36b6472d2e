/*
 * print_data.c - the dataspace views: -data_objects, -data_single NAME, -data_layout, -memobj
 * cacheline|page, -false_sharing. Each asks for the dataspace model (analyzer/report_data.h) and
 * formats it as text or JSON; nothing here computes.
 *
 * Metrics: one column per source that had samples: clock profiling as "User CPU" seconds (the
 * user CPU time of the samples), a counter as its events, titled (and keyed in JSON: e.NAME)
 * by the counter's metric name, as -functions names it; each with its percentage of <Total>.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/report_data.h"
#include "analyzer/symbols.h"
#include "print.h"

/* ---- shared ----------------------------------------------------------------------------------- */

/* The metric name of source s (1..: the counter of id s - 1, as the user gave it, e.g.
 * page-faults): the same in every process that has that counter, else "counterN" (the source
 * that counts the counters from the last one on is named so when they differ). */
static void src_metric(const pstate_t *ps, uint32_t s, char *buf, size_t n)
{
    const char *name = NULL;
    int same = 1;
    for (size_t x = 0; x < ps->ses->nexps && same; x++) {
        const exp_experiment_t *e = ps->ses->exps[x];
        for (size_t i = 0; i < e->nprocs && same; i++) {
            const exp_process_t *p = e->procs[i];
            for (size_t c = 0; c < p->ncounters; c++) {
                const exp_counter_t *k = &p->counters[c];
                uint32_t src = k->id + 1 < REP_DS_SOURCES ? k->id + 1 : REP_DS_SOURCES - 1;
                if (src != s || k->metric >= p->nmetrics)
                    continue;
                if (name && strcmp(name, p->metrics[k->metric].name))
                    same = 0;
                name = p->metrics[k->metric].name;
            }
        }
    }
    if (name && same)
        snprintf(buf, n, "%s", name);
    else
        snprintf(buf, n, "counter%u", s);
}

/* A source's column title: "User CPU" for clock profiling, a counter's metric name. */
static void src_title(const pstate_t *ps, uint32_t s, char *buf, size_t n)
{
    if (s == 0)
        snprintf(buf, n, "User CPU");
    else
        src_metric(ps, s, buf, n);
}

/* A source's column width in text: at least 17, its title's length. */
static int src_width(const pstate_t *ps, uint32_t s)
{
    char t[80];
    src_title(ps, s, t, sizeof t);
    return strlen(t) > 17 ? (int)strlen(t) : 17;
}

/* The data's model, or 1 after reporting; a note when there is no dataspace data at all. */
static int load(pstate_t *ps, rep_data_t *d)
{
    tally_err_t err = { 0 };
    if (rep_data(ps->ses, d, &err))
        return pr_report(&err);
    return 0;
}

static void no_data_note(pstate_t *ps, const rep_data_t *d)
{
    if (!d->memrefs && !ps->json)
        sink_printf(&ps->out, "(no dataspace data: collect with -p +on, -p +hi or a '+' counter)\n");
}

static void text_header(pstate_t *ps, const rep_data_t *d)
{
    sink_t *o = &ps->out;
    for (uint32_t s = 0; s < REP_DS_SOURCES; s++) {
        if (!(d->sources >> s & 1))
            continue;
        char t[80];
        src_title(ps, s, t, sizeof t);
        sink_printf(o, "%-*s ", src_width(ps, s), t);
    }
    sink_printf(o, "%9s  ", "Samples");
}

static void text_values(pstate_t *ps, const rep_data_t *d, const rep_dsv_t *v)
{
    sink_t *o = &ps->out;
    const rep_dsv_t *tot = &d->objs[0].v;
    for (uint32_t s = 0; s < REP_DS_SOURCES; s++) {
        if (!(d->sources >> s & 1))
            continue;
        double pct = tot->w[s] ? 100.0 * (double)v->w[s] / (double)tot->w[s] : 0;
        int w = src_width(ps, s) - 8; /* the value's width: the percentage takes 8 */
        if (s == 0)
            sink_printf(o, "%*.3f %6.2f%% ", w, (double)v->w[s] * 1e-9, pct);
        else
            sink_printf(o, "%*llu %6.2f%% ", w, (unsigned long long)v->w[s], pct);
    }
    sink_printf(o, "%9llu  ", (unsigned long long)v->n);
}

static void json_values(const pstate_t *ps, json_t *j, const rep_data_t *d, const rep_dsv_t *v)
{
    for (uint32_t s = 0; s < REP_DS_SOURCES; s++) {
        if (!(d->sources >> s & 1))
            continue;
        if (s == 0) {
            json_key(j, "e.user");
            json_num(j, (double)v->w[0] * 1e-9);
        } else {
            char m[80], k[84];
            src_metric(ps, s, m, sizeof m);
            snprintf(k, sizeof k, "e.%s", m);
            json_key(j, k);
            json_u64(j, v->w[s]);
        }
    }
    json_key(j, "samples");
    json_u64(j, v->n);
}

static const char *kind_word(const rep_dobj_t *o)
{
    static const char *const k[] = { "total", "scalars", "unknown", "unknown_reason", "aggregate",
                                     "object" };
    return o->kind >= 0 && o->kind <= REP_DOBJ_OBJECT ? k[o->kind] : "object";
}

static const char *scope_word(int scope)
{
    return scope == 1   ? "static"
           : scope == 2 ? "local"
           : scope == 3 ? "pointee"
           : scope == 4 ? "thread-local"
           : scope == 5 ? "stack"
           : scope == 6 ? "heap"
                        : "";
}

/* ---- -data_objects ---------------------------------------------------------------------------- */

int view_data_objects(pstate_t *ps, const char *arg)
{
    (void)arg;
    rep_data_t d;
    if (load(ps, &d))
        return 1;
    size_t shown = ps->limit > 0 && (size_t)ps->limit < d.nobjs ? (size_t)ps->limit : d.nobjs;
    sink_t *o = &ps->out;
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "data_objects");
        json_key(&j, "memrefs");
        json_u64(&j, d.memrefs);
        json_key(&j, "heap_untraced");
        json_u64(&j, d.heap_untraced);
        json_key(&j, "heap_mapped");
        json_u64(&j, d.heap_mapped);
        json_key(&j, "objects");
        json_arr_begin(&j);
    } else {
        no_data_note(ps, &d);
        sink_printf(o, "Data objects (%llu memory references)\n\n", (unsigned long long)d.memrefs);
        text_header(ps, &d);
        sink_printf(o, "Name\n");
    }
    for (size_t i = 0; i < shown; i++) {
        const rep_dobj_t *x = &d.objs[i];
        if (ps->json) {
            json_obj_begin(&j);
            json_key(&j, "name");
            json_str(&j, x->name);
            json_key(&j, "kind");
            json_str(&j, kind_word(x));
            if (x->kind == REP_DOBJ_REASON) {
                json_key(&j, "reason");
                json_u64(&j, (uint64_t)x->reason);
            }
            if (x->kind == REP_DOBJ_OBJECT || x->kind == REP_DOBJ_AGGREGATE) {
                json_key(&j, "scope");
                json_str(&j, scope_word(x->scope));
                json_key(&j, "via");
                json_str(&j, x->via);
                json_key(&j, "scalar");
                json_bool(&j, x->scalar);
            }
            json_values(ps, &j, &d, &x->v);
            json_obj_end(&j);
        } else {
            text_values(ps, &d, &x->v);
            sink_printf(o, "%s\n", x->name);
        }
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else if (d.heap_untraced > d.heap_mapped) {
        sink_printf(o, "\n(%llu <Unknown> references have an address: heap blocks are named by "
                    "their allocation site only when the heap is traced, collect -H on)\n",
                    (unsigned long long)d.heap_untraced);
    } else if (d.heap_untraced) {
        sink_printf(o, "\n(%llu <Unknown> references have an address outside the heap blocks "
                    "the allocation map keeps (those of at least %u bytes, 1 in %u smaller "
                    "ones): collect -H on names every heap block)\n",
                    (unsigned long long)d.heap_untraced, EXP_MAP_LARGE, EXP_MAP_SAMPLE);
    }
    rep_data_free(&d);
    return 0;
}

/* ---- -data_single ----------------------------------------------------------------------------- */

/* The function+offset of object x's t-th trigger instruction. */
static void trigger_name(pstate_t *ps, const rep_dobj_t *x, int t, char *buf, size_t n)
{
    const sym_func_t *f = sym_func(ps->ses->sym, sym_func_at(ps->ses->sym, x->trig_obj[t],
                                                               x->trig_pc[t]));
    if (f && f->name && f->size)
        snprintf(buf, n, "%s+0x%llx", f->name, (unsigned long long)(x->trig_pc[t] - f->addr));
    else
        snprintf(buf, n, "<Unknown>");
}

int view_data_single(pstate_t *ps, const char *name)
{
    rep_data_t d;
    if (load(ps, &d))
        return 1;
    long k = rep_data_find(&d, name);
    if (k < 0) {
        const char **c = malloc((d.nobjs ? d.nobjs : 1) * sizeof *c);
        char msg[1024];
        snprintf(msg, sizeof msg, "no data object '%s' has samples (see -data_objects)", name);
        if (c) {
            for (size_t i = 0; i < d.nobjs; i++)
                c[i] = d.objs[i].name;
            pr_suggest(msg, sizeof msg, name, c, d.nobjs);
            free(c);
        }
        tally_err_t err = { 0 };
        tally_errf(&err, TALLY_ENOTFOUND, "%s", msg);
        rep_data_free(&d);
        return pr_report(&err);
    }
    const rep_dobj_t *x = &d.objs[k];
    sink_t *o = &ps->out;
    /* the aggregates containing it: the prefixes of its chain */
    size_t len = strlen(x->name);
    if (ps->json) {
        json_t j;
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "data_single");
        json_key(&j, "name");
        json_str(&j, x->name);
        json_key(&j, "kind");
        json_str(&j, kind_word(x));
        json_key(&j, "scope");
        json_str(&j, scope_word(x->scope));
        json_key(&j, "via");
        json_str(&j, x->via);
        json_key(&j, "scalar");
        json_bool(&j, x->scalar);
        json_values(ps, &j, &d, &x->v);
        json_key(&j, "samples_without_address");
        json_u64(&j, x->v_noaddr.n);
        json_key(&j, "triggers");
        json_arr_begin(&j);
        for (int t = 0; t < REP_DS_TRIGGERS && x->trig_n[t]; t++) {
            char fn[512];
            trigger_name(ps, x, t, fn, sizeof fn);
            json_obj_begin(&j);
            json_key(&j, "object");
            json_str(&j, sym_object(ps->ses->sym, x->trig_obj[t])->path);
            char pc[32];
            snprintf(pc, sizeof pc, "0x%llx", (unsigned long long)x->trig_pc[t]);
            json_key(&j, "pc");
            json_str(&j, pc);
            json_key(&j, "function");
            json_str(&j, fn);
            json_key(&j, "samples");
            json_u64(&j, x->trig_n[t]);
            json_obj_end(&j);
        }
        json_arr_end(&j);
        json_key(&j, "containers");
        json_arr_begin(&j);
        for (size_t i = 1; i < len; i++)
            if (x->name[i] == '.' && x->name[i - 1] == '}') {
                char *pre = strndup(x->name, i);
                if (pre)
                    json_str(&j, pre);
                free(pre);
            }
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        sink_printf(o, "%s\n", x->name);
        sink_printf(o, "  kind:       %s%s%s\n", kind_word(x), *scope_word(x->scope) ? ", " : "",
                    scope_word(x->scope));
        if (*x->via)
            sink_printf(o, "  reached as: %s\n", x->via);
        for (uint32_t s = 0; s < REP_DS_SOURCES; s++) {
            if (!(d.sources >> s & 1))
                continue;
            char t[80];
            src_title(ps, s, t, sizeof t);
            double pct = d.objs[0].v.w[s] ? 100.0 * (double)x->v.w[s] / (double)d.objs[0].v.w[s] : 0;
            if (s == 0)
                sink_printf(o, "  %-11s %.3f s (%.2f%%)\n", t, (double)x->v.w[s] * 1e-9, pct);
            else
                sink_printf(o, "  %-11s %llu (%.2f%%)\n", t, (unsigned long long)x->v.w[s], pct);
        }
        sink_printf(o, "  samples:    %llu (%llu without a known address)\n",
                    (unsigned long long)x->v.n, (unsigned long long)x->v_noaddr.n);
        for (int t = 0; t < REP_DS_TRIGGERS && x->trig_n[t]; t++) {
            char fn[512];
            trigger_name(ps, x, t, fn, sizeof fn);
            sink_printf(o, "  trigger:    %s (%s, 0x%llx): %llu samples\n", fn,
                        sym_object(ps->ses->sym, x->trig_obj[t])->name,
                        (unsigned long long)x->trig_pc[t], (unsigned long long)x->trig_n[t]);
        }
        for (size_t i = 1; i < len; i++)
            if (x->name[i] == '.' && x->name[i - 1] == '}')
                sink_printf(o, "  in:         %.*s\n", (int)i, x->name);
    }
    rep_data_free(&d);
    return 0;
}

/* ---- -data_layout ----------------------------------------------------------------------------- */

int view_data_layout(pstate_t *ps, const char *arg)
{
    (void)arg;
    rep_data_t d;
    if (load(ps, &d))
        return 1;
    tally_err_t err = { 0 };
    rep_layout_t *L;
    size_t n;
    if (rep_data_layouts(ps->ses, &d, &L, &n, &err)) {
        rep_data_free(&d);
        return pr_report(&err);
    }
    sink_t *o = &ps->out;
    json_t j;
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, "data_layout");
        json_key(&j, "structures");
        json_arr_begin(&j);
    } else {
        no_data_note(ps, &d);
        if (n) {
            text_header(ps, &d);
            sink_printf(o, "  %-6s %5s  %s\n\n", "Offset", "Size", "Member");
        }
    }
    for (size_t i = 0; i < n; i++) {
        const rep_layout_t *l = &L[i];
        if (ps->json) {
            json_obj_begin(&j);
            json_key(&j, "name");
            json_str(&j, l->agg->name);
            json_key(&j, "size");
            json_u64(&j, l->size);
            json_values(ps, &j, &d, &l->agg->v);
            json_key(&j, "members");
            json_arr_begin(&j);
        } else {
            sink_printf(o, "%s  size %llu\n", l->agg->name, (unsigned long long)l->size);
            text_values(ps, &d, &l->agg->v);
            sink_printf(o, "(the whole structure)\n");
        }
        for (size_t k = 0; k < l->nrows; k++) {
            const rep_layout_row_t *r = &l->rows[k];
            static const rep_dsv_t zero;
            const rep_dsv_t *v = r->v ? r->v : &zero;
            int tail = !r->desc && r->offset + r->size == l->size;
            if (ps->json) {
                json_obj_begin(&j);
                json_key(&j, "name");
                if (r->desc)
                    json_str(&j, r->desc);
                else
                    json_str(&j, tail ? "<padding>" : "<hole>");
                json_key(&j, "offset");
                json_u64(&j, r->offset);
                json_key(&j, "size");
                json_u64(&j, r->size);
                json_values(ps, &j, &d, v);
                json_obj_end(&j);
            } else {
                text_values(ps, &d, v);
                sink_printf(o, "  +%-5llu %5llu  %s\n", (unsigned long long)r->offset,
                            (unsigned long long)r->size,
                            r->desc ? r->desc : tail ? "<padding>" : "<hole>");
            }
        }
        if (ps->json) {
            json_arr_end(&j);
            json_obj_end(&j);
        } else {
            sink_printf(o, "\n");
        }
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else if (!n) {
        sink_printf(o, "(no structure type has samples)\n");
    }
    rep_data_layouts_free(L, n);
    rep_data_free(&d);
    return 0;
}

/* ---- memory objects and false sharing --------------------------------------------------------- */

/* The bytes of a cache line set in mask, as offset ranges: "+0-7 +16-23", "-" for none. */
static void byte_ranges(uint64_t mask, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
    for (int b = 0; b < 64 && k < n;) {
        if (!(mask >> b & 1)) {
            b++;
            continue;
        }
        int e = b;
        while (e + 1 < 64 && mask >> (e + 1) & 1)
            e++;
        int w = e > b ? snprintf(buf + k, n - k, "%s+%d-%d", k ? " " : "", b, e)
                      : snprintf(buf + k, n - k, "%s+%d", k ? " " : "", b);
        k += w > 0 ? (size_t)w : 0;
        b = e + 1;
    }
    if (!buf[0])
        snprintf(buf, n, "-");
}

static int mobj_view(pstate_t *ps, const char *what, int page, int only_fs)
{
    rep_data_t d;
    if (load(ps, &d))
        return 1;
    const rep_mobj_t *m = page ? d.pages : d.lines;
    size_t n = page ? d.npages : d.nlines;
    size_t shown = 0;
    sink_t *o = &ps->out;
    json_t j;
    rep_dsv_t noaddr = { { 0 }, 0 };
    for (int r = 0; r < EXP_DUNK_NREASONS; r++) {
        for (int s = 0; s < REP_DS_SOURCES; s++)
            noaddr.w[s] += d.noaddr[r].w[s];
        noaddr.n += d.noaddr[r].n;
    }
    if (ps->json) {
        pr_json_begin(ps, &j);
        json_key(&j, "view");
        json_str(&j, what);
        json_key(&j, "size");
        json_u64(&j, page ? REP_DS_PAGE : REP_DS_LINE);
        json_key(&j, "without_address");
        json_obj_begin(&j);
        json_values(ps, &j, &d, &noaddr);
        json_key(&j, "reasons");
        json_arr_begin(&j);
        for (int r = 1; r < EXP_DUNK_NREASONS; r++)
            if (d.noaddr[r].n) {
                json_obj_begin(&j);
                json_key(&j, "reason");
                json_u64(&j, (uint64_t)r);
                json_key(&j, "name");
                json_str(&j, rep_data_reason(r));
                json_values(ps, &j, &d, &d.noaddr[r]);
                json_obj_end(&j);
            }
        json_arr_end(&j);
        json_obj_end(&j);
        json_key(&j, "objects");
        json_arr_begin(&j);
    } else {
        no_data_note(ps, &d);
        if (only_fs)
            sink_printf(o, "Cache lines of %d bytes that threads share at different offsets, "
                           "with writes (false sharing)\n\n", REP_DS_LINE);
        else
            sink_printf(o, "Memory objects: %s of %d bytes\n\n", page ? "pages" : "cache lines",
                        page ? REP_DS_PAGE : REP_DS_LINE);
        text_header(ps, &d);
        sink_printf(o, "%-18s %7s %7s %7s  %s\n", "Address", "Threads", "Reads", "Writes",
                    "Data object");
    }
    for (size_t i = 0; i < n; i++) {
        const rep_mobj_t *x = &m[i];
        if (only_fs && !x->false_sharing)
            continue;
        if (ps->limit > 0 && shown >= (size_t)ps->limit)
            break;
        shown++;
        const char *top = x->top >= 0 ? d.objs[x->top].name : "<Unknown>";
        if (ps->json) {
            json_obj_begin(&j);
            json_key(&j, "address");
            json_strf(&j, "0x%llx", (unsigned long long)x->addr);
            json_key(&j, "pid");
            json_u64(&j, ps->ses->exps[x->exp]->procs[x->proc]->pid);
            json_key(&j, "threads");
            json_u64(&j, x->nthreads);
            json_key(&j, "reads");
            json_u64(&j, x->reads);
            json_key(&j, "writes");
            json_u64(&j, x->writes);
            json_key(&j, "false_sharing");
            json_bool(&j, x->false_sharing);
            json_key(&j, "data_object");
            json_str(&j, top);
            json_values(ps, &j, &d, &x->v);
            if (!page) { /* the bytes each thread (the first 8) touched and wrote */
                json_key(&j, "thread_bytes");
                json_arr_begin(&j);
                for (uint32_t t = 0; t < x->ntids; t++) {
                    char tb[256], wb[256];
                    byte_ranges(x->touched[t], tb, sizeof tb);
                    byte_ranges(x->written[t], wb, sizeof wb);
                    json_obj_begin(&j);
                    json_key(&j, "thread");
                    json_u64(&j, x->tids[t]);
                    json_key(&j, "touched");
                    json_str(&j, tb);
                    json_key(&j, "written");
                    json_str(&j, wb);
                    json_obj_end(&j);
                }
                json_arr_end(&j);
            }
            json_obj_end(&j);
        } else {
            text_values(ps, &d, &x->v);
            sink_printf(o, "0x%016llx %7u %7llu %7llu  %s\n", (unsigned long long)x->addr,
                        x->nthreads, (unsigned long long)x->reads,
                        (unsigned long long)x->writes, top);
            for (uint32_t t = 0; only_fs && t < x->ntids; t++) {
                char tb[256], wb[256];
                byte_ranges(x->touched[t], tb, sizeof tb);
                byte_ranges(x->written[t], wb, sizeof wb);
                sink_printf(o, "    thread %u: bytes %s, written %s\n", x->tids[t], tb, wb);
            }
        }
    }
    if (ps->json) {
        json_arr_end(&j);
        json_obj_end(&j);
        json_end_doc(&j);
    } else {
        if (noaddr.n) {
            sink_printf(o, "\nwithout a known address: %llu samples\n",
                        (unsigned long long)noaddr.n);
            for (int r = 1; r < EXP_DUNK_NREASONS; r++)
                if (d.noaddr[r].n)
                    sink_printf(o, "  %9llu  <Unknown>.%s\n", (unsigned long long)d.noaddr[r].n,
                                rep_data_reason(r));
        }
        if (only_fs && !shown)
            sink_printf(o, "(no cache line shows false sharing)\n");
    }
    rep_data_free(&d);
    return 0;
}

int view_memobj(pstate_t *ps, const char *arg)
{
    if (!strcmp(arg, "cacheline") || !strcmp(arg, "Cacheline") || !strcmp(arg, "line"))
        return mobj_view(ps, "memobj_cacheline", 0, 0);
    if (!strcmp(arg, "page") || !strcmp(arg, "Page") || !strcmp(arg, "Vpage_4K"))
        return mobj_view(ps, "memobj_page", 1, 0);
    tally_err_t err = { 0 };
    tally_errf(&err, TALLY_EUSAGE, "unknown memory object type '%s': use cacheline or page", arg);
    pr_report(&err);
    return 2;
}

int view_false_sharing(pstate_t *ps, const char *arg)
{
    (void)arg;
    return mobj_view(ps, "false_sharing", 0, 1);
}
