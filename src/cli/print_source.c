/*
 * print_source.c - annotated source and disassembly: -source FUNC|FILE and -disasm FUNC. Metrics
 * come from the engine's line and instruction tables (ENG_KIND_LINE, ENG_KIND_PC); the code bytes
 * from the binary (sym_read_code), the instructions from capstone, the source text from the file
 * the debug information names. See print.h.
 */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"

#define HOT_SHARE 0.75 /* a line or instruction with this share of the hottest one is marked ## */

/* ---- shared: the function asked for ---------------------------------------------------------- */

typedef struct target {
    uint32_t func, obj;
    uint64_t addr, size;
    const sym_func_t *f;
} target_t;

static int find_target(pstate_t *ps, const char *name, target_t *t)
{
    const eng_table_t *ft = pr_table(ps, ENG_KIND_FUNCTION, 0);
    if (!ft)
        return 1;
    names_t nm;
    pr_names_build(ps, &nm, ft);
    long id = pr_find_function(ps, ft, &nm, name);
    pr_names_free(&nm);
    if (id < 0)
        return 1;
    t->func = (uint32_t)id;
    t->f = sym_func(ps->sym, t->func);
    t->obj = t->f->object;
    t->addr = t->f->addr;
    t->size = t->f->size;
    if (t->obj == UINT32_MAX || !t->size) {
        fprintf(stderr, "tally: '%s' has no known code range (no symbol size): nothing to "
                        "annotate\n", name);
        return 1;
    }
    return 0;
}

/* Reads the function's bytes; NULL after reporting. */
static uint8_t *read_code(pstate_t *ps, const target_t *t)
{
    uint8_t *code = malloc(t->size);
    if (!code)
        return NULL;
    long n = sym_read_code(ps->sym, t->obj, t->addr, code, t->size);
    if (n != (long)t->size) {
        fprintf(stderr, "tally: cannot read the code of '%s' from '%s' (%s)\n", t->f->name,
                sym_object(ps->sym, t->obj)->path, *sym_object(ps->sym, t->obj)->message
                                                       ? sym_object(ps->sym, t->obj)->message
                                                       : "the binary does not hold it");
        free(code);
        return NULL;
    }
    return code;
}

/* ---- -source ---------------------------------------------------------------------------------- */

typedef struct linevals {
    uint64_t excl[ENG_NMETRICS], incl[ENG_NMETRICS];
    int code; /* the line has instructions */
} linevals_t;

/* ---- where sources are: -setpath, -addpath, -pathmap ---------------------------------------- */

static int add_path(pstate_t *ps, const char *dir)
{
    char **np = realloc(ps->paths, (ps->npaths + 1) * sizeof *np);
    if (!np || !(np[ps->npaths] = strdup(dir))) {
        if (np)
            ps->paths = np;
        fprintf(stderr, "tally: out of memory\n");
        return 1;
    }
    ps->paths = np;
    ps->npaths++;
    return 0;
}

void pr_paths_free(pstate_t *ps)
{
    for (size_t i = 0; i < ps->npaths; i++)
        free(ps->paths[i]);
    free(ps->paths);
    for (size_t i = 0; i < ps->nmaps; i++) {
        free(ps->map_from[i]);
        free(ps->map_to[i]);
    }
    free(ps->map_from);
    free(ps->map_to);
    ps->paths = ps->map_from = ps->map_to = NULL;
    ps->npaths = ps->nmaps = 0;
}

/* -setpath DIR[:DIR...]: the directories searched for sources ("." is the current directory). */
int set_setpath(pstate_t *ps, const char *arg)
{
    for (size_t i = 0; i < ps->npaths; i++)
        free(ps->paths[i]);
    ps->npaths = 0;
    return set_addpath(ps, arg);
}

int set_addpath(pstate_t *ps, const char *arg)
{
    char *copy = strdup(arg), *save = NULL;
    if (!copy)
        return 1;
    int rc = 0;
    for (char *d = strtok_r(copy, ":", &save); d && !rc; d = strtok_r(NULL, ":", &save))
        rc = add_path(ps, d);
    free(copy);
    return rc;
}

/* -pathmap OLD NEW: a source recorded under OLD is looked for under NEW. */
int set_pathmap(pstate_t *ps, const char *arg)
{
    const char *sp = strchr(arg, ' ');
    if (!sp || !sp[1]) {
        fprintf(stderr, "tally: -pathmap needs two paths: OLD NEW (in a script or the prompt: "
                        "'pathmap /old/tree /new/tree'; on the command line quote them)\n");
        return 2;
    }
    char **nf = realloc(ps->map_from, (ps->nmaps + 1) * sizeof *nf);
    if (nf)
        ps->map_from = nf;
    char **nt = realloc(ps->map_to, (ps->nmaps + 1) * sizeof *nt);
    if (nt)
        ps->map_to = nt;
    if (!nf || !nt)
        return 1;
    while (sp[1] == ' ')
        sp++;
    ps->map_from[ps->nmaps] = strndup(arg, (size_t)(strchr(arg, ' ') - arg));
    ps->map_to[ps->nmaps] = strdup(sp + 1);
    ps->nmaps++;
    return 0;
}

/* Opens a source file the debug information names: as recorded, through the path maps, then by
 * its relative path and base name in each search directory. */
static FILE *open_source(pstate_t *ps, const char *path)
{
    FILE *f = fopen(path, "r");
    if (f)
        return f;
    char buf[8192];
    for (size_t i = 0; i < ps->nmaps; i++) {
        size_t n = strlen(ps->map_from[i]);
        if (!strncmp(path, ps->map_from[i], n) && (path[n] == '/' || !path[n])) {
            snprintf(buf, sizeof buf, "%s%s", ps->map_to[i], path + n);
            if ((f = fopen(buf, "r")))
                return f;
        }
    }
    for (size_t i = 0; i < ps->nexps && path[0] == '/'; i++) { /* archived with tally archive -s */
        snprintf(buf, sizeof buf, "%s/archive/src%s", ps->exps[i]->path, path);
        if ((f = fopen(buf, "r")))
            return f;
    }
    const char *base = strrchr(path, '/');
    for (size_t i = 0; i < ps->npaths; i++) {
        const char *rel = path[0] == '/' ? NULL : path;
        if (rel) {
            snprintf(buf, sizeof buf, "%s/%s", ps->paths[i], rel);
            if ((f = fopen(buf, "r")))
                return f;
        }
        snprintf(buf, sizeof buf, "%s/%s", ps->paths[i], base ? base + 1 : path);
        if ((f = fopen(buf, "r")))
            return f;
    }
    return NULL;
}

static char **read_lines(pstate_t *ps, const char *path, size_t *n)
{
    FILE *f = open_source(ps, path);
    *n = 0;
    if (!f)
        return NULL;
    char **lines = NULL, *buf = NULL;
    size_t cap = 0, bcap = 0;
    ssize_t len;
    while ((len = getline(&buf, &bcap, f)) >= 0) {
        if (len && buf[len - 1] == '\n')
            buf[--len] = 0;
        if (*n == cap) {
            cap = cap ? cap * 2 : 256;
            char **nl = realloc(lines, cap * sizeof *nl);
            if (!nl)
                break;
            lines = nl;
        }
        lines[(*n)++] = strdup(buf);
    }
    free(buf);
    fclose(f);
    return lines;
}

static void free_lines(char **lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

static void print_cols(pstate_t *ps, const uint64_t *ex, const uint64_t *in, int blank)
{
    char vb[64];
    int metric = ps->sort_metric >= 0 ? ps->sort_metric : ENG_M_TOTALCPU;
    if (blank) {
        printf("%10s %10s", "", "");
        return;
    }
    pr_fmt_value(vb, sizeof vb, metric, ex[metric]);
    printf("%10s ", vb);
    pr_fmt_value(vb, sizeof vb, metric, in[metric]);
    printf("%10s", vb);
}

int view_source(pstate_t *ps, const char *arg)
{
    const eng_table_t *lt = pr_table(ps, ENG_KIND_LINE, 0);
    if (!lt)
        return 1;
    /* the file to show: the function's, or a file named like arg among those with data */
    const char *file = NULL;
    uint32_t lo = 1, hi = UINT32_MAX;
    target_t t = { 0 };
    int have_func = 0;
    for (size_t id = 0; id < lt->nobjects && !file; id++) {
        const char *f;
        uint32_t line, fn;
        if (!lt->present[id] || eng_line_info(ps->eng, (uint32_t)id, &f, &line, &fn) || !f)
            continue;
        const char *base = strrchr(f, '/');
        if (!strcmp(f, arg) || (base && !strcmp(base + 1, arg)))
            file = f;
    }
    /* (the engine keeps one table at a time: what is needed of each is copied before the next) */
    uint64_t fex[ENG_NMETRICS] = { 0 }, fin[ENG_NMETRICS] = { 0 };
    char *file_copy = NULL;
    if (file && !(file = file_copy = strdup(file)))
        return 1;
    if (!file) {
        if (find_target(ps, arg, &t))
            return 1;
        const eng_table_t *ft = pr_table(ps, ENG_KIND_FUNCTION, 0);
        if (!ft)
            return 1;
        memcpy(fex, ft->excl + (size_t)t.func * ENG_NMETRICS, sizeof fex);
        memcpy(fin, ft->incl + (size_t)t.func * ENG_NMETRICS, sizeof fin);
        have_func = 1;
        uint32_t line;
        if (sym_line_at(ps->sym, t.obj, t.addr, &file, &line)) {
            fprintf(stderr, "tally: '%s' has no line information (compiled without -g?); try "
                            "-disasm %s\n", arg, arg);
            return 1;
        }
        lo = hi = line;
    }
    /* the lines that have code in the function: from its instructions */
    size_t nsrc;
    char **src = read_lines(ps, file, &nsrc);
    /* without the text, the lines that have data are still listed by number (up to a bound) */
    size_t limit = src ? nsrc : 20000;
    linevals_t *lv = calloc(limit + 2, sizeof *lv);
    if (!lv)
        return 1;
    if (have_func) {
        uint8_t *code = read_code(ps, &t);
        csh cs;
        if (code && cs_open(CS_ARCH_X86, CS_MODE_64, &cs) == CS_ERR_OK) {
            cs_insn *insn;
            size_t n = cs_disasm(cs, code, t.size, t.addr, 0, &insn);
            for (size_t i = 0; i < n; i++) {
                const char *f;
                uint32_t line;
                if (sym_line_at(ps->sym, t.obj, insn[i].address, &f, &line) || strcmp(f, file))
                    continue;
                if (line < lo)
                    lo = line;
                if (line > hi || hi == UINT32_MAX)
                    hi = line;
                if (line <= limit)
                    lv[line].code = 1;
            }
            cs_free(insn, n);
            cs_close(&cs);
        }
        free(code);
        lo = lo > 3 ? lo - 3 : 1;
    }
    /* metrics of the file's lines (of every function: a line of an inlined helper collects what
     * all its copies did) */
    uint64_t max = 0;
    int metric = ps->sort_metric >= 0 ? ps->sort_metric : ENG_M_TOTALCPU;
    /* a function's lines: what its own instructions did there (a line of an inlined helper
     * shows this function's copy only); a file's lines: everything */
    const eng_table_t *pt = have_func ? pr_table(ps, ENG_KIND_PC, 0) : NULL;
    for (size_t id = 0; pt && id < pt->nobjects; id++) {
        uint32_t obj, line;
        uint64_t addr;
        const char *f;
        if (!pt->present[id] || eng_pc_info(ps->eng, (uint32_t)id, &obj, &addr) || obj != t.obj ||
            addr < t.addr || addr >= t.addr + t.size ||
            sym_line_at(ps->sym, obj, addr, &f, &line) || strcmp(f, file) || line > limit)
            continue;
        for (int m = 0; m < ENG_NMETRICS; m++) {
            lv[line].excl[m] += pt->excl[id * ENG_NMETRICS + m];
            lv[line].incl[m] += pt->incl[id * ENG_NMETRICS + m];
        }
        lv[line].code = 1;
        if (lv[line].excl[metric] > max)
            max = lv[line].excl[metric];
    }
    if (!have_func && !(lt = pr_table(ps, ENG_KIND_LINE, 0))) {
        free(lv);
        free_lines(src, nsrc);
        free(file_copy);
        return 1;
    }
    for (size_t id = 0; !have_func && id < lt->nobjects; id++) {
        const char *f;
        uint32_t line, fn;
        if (!lt->present[id] || eng_line_info(ps->eng, (uint32_t)id, &f, &line, &fn) || !f ||
            strcmp(f, file) || line > limit)
            continue;
        for (int m = 0; m < ENG_NMETRICS; m++) {
            lv[line].excl[m] += lt->excl[id * ENG_NMETRICS + m];
            lv[line].incl[m] += lt->incl[id * ENG_NMETRICS + m];
            if (!have_func && line >= lo && line <= hi)
                fex[m] += lt->excl[id * ENG_NMETRICS + m];
        }
        lv[line].code = 1;
        if (lv[line].excl[metric] > max)
            max = lv[line].excl[metric];
    }
    if (hi == UINT32_MAX || hi > limit)
        hi = (uint32_t)limit;
    if (ps->json) {
        printf("{\"view\":\"source\",\"file\":");
        pr_json_str(stdout, file);
        printf(",\"metric\":\"%s\",\"lines\":[", eng_metrics[metric].name);
        int first = 1;
        for (uint32_t l = lo; l <= hi; l++) {
            printf("%s{\"line\":%u,\"code\":%s,\"e.%s\":", first ? "" : ",", l,
                   lv[l].code ? "true" : "false", eng_metrics[metric].name);
            first = 0;
            pr_json_num(stdout, pr_scaled(metric, lv[l].excl[metric]));
            printf(",\"i.%s\":", eng_metrics[metric].name);
            pr_json_num(stdout, pr_scaled(metric, lv[l].incl[metric]));
            printf(",\"hot\":%s,\"text\":",
                   max && lv[l].excl[metric] >= HOT_SHARE * (double)max ? "true" : "false");
            pr_json_str(stdout, l <= nsrc && src ? src[l - 1] : "");
            printf("}");
        }
        printf("]");
        if (have_func) {
            printf(",\"function\":");
            pr_json_str(stdout, t.f->name);
            printf(",\"e.%s\":", eng_metrics[metric].name);
            pr_json_num(stdout, pr_scaled(metric, fex[metric]));
            printf(",\"i.%s\":", eng_metrics[metric].name);
            pr_json_num(stdout, pr_scaled(metric, fin[metric]));
        }
        printf("}\n");
    } else {
        printf("Source file: %s\n", file);
        if (!src)
            printf("(the file cannot be found here: metrics by line number only; see -setpath, "
                   "-addpath and -pathmap)\n");
        printf("Metric: %s, exclusive and inclusive (%s); ## marks the hottest lines\n\n",
               eng_metrics[metric].title, eng_metrics[metric].unit);
        printf("  %10s %10s\n", "Excl.", "Incl.");
        for (uint32_t l = lo; l <= hi; l++) {
            if (!src && !lv[l].code)
                continue; /* without the text only the lines with code are worth a row */
            int hot = max && lv[l].excl[metric] >= HOT_SHARE * (double)max;
            printf("%s", hot ? "##" : "  ");
            print_cols(ps, lv[l].excl, lv[l].incl, !lv[l].code);
            printf(" %5u. %s\n", l, src && l <= nsrc ? src[l - 1] : "");
        }
        if (have_func) {
            char vb[64], ib[64];
            pr_fmt_value(vb, sizeof vb, metric, fex[metric]);
            pr_fmt_value(ib, sizeof ib, metric, fin[metric]);
            printf("\n  %10s %10s  <Function: %s> (lines without metrics columns have no code)\n",
                   vb, ib, t.f->name);
        }
        printf("\n");
    }
    free(lv);
    free_lines(src, nsrc);
    free(file_copy);
    return 0;
}

/* ---- -disasm ---------------------------------------------------------------------------------- */

int view_disasm(pstate_t *ps, const char *arg)
{
    target_t t;
    if (find_target(ps, arg, &t))
        return 1;
    const eng_table_t *pt = pr_table(ps, ENG_KIND_PC, 0);
    if (!pt)
        return 1;
    uint8_t *code = read_code(ps, &t);
    if (!code)
        return 1;
    csh cs;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
        free(code);
        fprintf(stderr, "tally: capstone cannot disassemble x86-64 here\n");
        return 1;
    }
    cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
    cs_insn *insn;
    size_t n = cs_disasm(cs, code, t.size, t.addr, 0, &insn);
    int metric = ps->sort_metric >= 0 ? ps->sort_metric : ENG_M_TOTALCPU;
    /* metrics per instruction: an instruction id's address is a leaf's pc or a call's return
     * address minus one, both inside the instruction */
    uint64_t *ex = calloc(n + 1, sizeof *ex), *in = calloc(n + 1, sizeof *in), max = 0;
    uint8_t *target = calloc(n + 1, 1);
    for (size_t id = 0; id < pt->nobjects; id++) {
        uint32_t obj;
        uint64_t addr;
        if (!pt->present[id] || eng_pc_info(ps->eng, (uint32_t)id, &obj, &addr) || obj != t.obj ||
            addr < t.addr || addr >= t.addr + t.size)
            continue;
        size_t lo = 0, hi = n; /* the instruction holding addr */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (insn[mid].address <= addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (!lo)
            continue;
        ex[lo - 1] += pt->excl[id * ENG_NMETRICS + metric];
        in[lo - 1] += pt->incl[id * ENG_NMETRICS + metric];
        if (ex[lo - 1] > max)
            max = ex[lo - 1];
    }
    for (size_t i = 0; i < n; i++) { /* branch targets inside the function */
        cs_x86 *x = &insn[i].detail->x86;
        if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM &&
            (cs_insn_group(cs, &insn[i], CS_GRP_JUMP) || cs_insn_group(cs, &insn[i], CS_GRP_CALL))) {
            uint64_t to = (uint64_t)x->operands[0].imm;
            for (size_t j = 0; j < n; j++)
                if (insn[j].address == to)
                    target[j] = 1;
        }
    }
    if (ps->json) {
        printf("{\"view\":\"disasm\",\"function\":");
        pr_json_str(stdout, t.f->name);
        printf(",\"metric\":\"%s\",\"instructions\":[", eng_metrics[metric].name);
    } else {
        printf("Disassembly of %s (%s, 0x%llx, %llu bytes); metric: %s (%s); ## hottest, "
               "> branch target\n\n", t.f->name, sym_object(ps->sym, t.obj)->name,
               (unsigned long long)t.addr, (unsigned long long)t.size, eng_metrics[metric].title,
               eng_metrics[metric].unit);
        printf("  %10s %10s\n", "Excl.", "Incl.");
    }
    const char *last_file = NULL;
    uint32_t last_line = 0;
    size_t nsrc = 0;
    char **src = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *file;
        uint32_t line;
        int has_line = sym_line_at(ps->sym, t.obj, insn[i].address, &file, &line) == 0;
        /* a call's target by name */
        char note[512] = "", callee[500] = "";
        cs_x86 *x = &insn[i].detail->x86;
        if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM &&
            (cs_insn_group(cs, &insn[i], CS_GRP_CALL) || cs_insn_group(cs, &insn[i], CS_GRP_JUMP))) {
            uint64_t to = (uint64_t)x->operands[0].imm;
            if (to < t.addr || to >= t.addr + t.size) {
                const sym_func_t *tf = sym_func(ps->sym, sym_func_at(ps->sym, t.obj, to));
                snprintf(callee, sizeof callee, "%s", tf->name);
                snprintf(note, sizeof note, "  <%s>", callee);
            }
        }
        if (ps->json) {
            printf("%s{\"address\":\"0x%llx\",\"text\":\"%s %s\",\"e.%s\":", i ? "," : "",
                   (unsigned long long)insn[i].address, insn[i].mnemonic, insn[i].op_str,
                   eng_metrics[metric].name);
            pr_json_num(stdout, pr_scaled(metric, ex[i]));
            printf(",\"i.%s\":", eng_metrics[metric].name);
            pr_json_num(stdout, pr_scaled(metric, in[i]));
            printf(",\"line\":%u,\"target\":%s,\"call\":", has_line ? line : 0,
                   target[i] ? "true" : "false");
            pr_json_str(stdout, callee);
            printf("}");
            continue;
        }
        if (has_line && (line != last_line || !last_file || strcmp(file, last_file))) {
            if (!last_file || strcmp(file, last_file)) {
                free_lines(src, nsrc);
                src = read_lines(ps, file, &nsrc);
            }
            const char *b = strrchr(file, '/');
            printf("%23s <%s:%u> %s\n", "", b ? b + 1 : file, line,
                   src && line >= 1 && line <= nsrc ? src[line - 1] : "");
            last_file = file;
            last_line = line;
        }
        char vb[64], ib[64];
        pr_fmt_value(vb, sizeof vb, metric, ex[i]);
        pr_fmt_value(ib, sizeof ib, metric, in[i]);
        printf("%s%10s %10s %c [%6llx] %-7s %s%s\n",
               max && ex[i] >= HOT_SHARE * (double)max ? "##" : "  ", vb, ib,
               target[i] ? '>' : ' ', (unsigned long long)insn[i].address, insn[i].mnemonic,
               insn[i].op_str, note);
    }
    if (ps->json)
        printf("]}\n");
    else
        printf("\n");
    free_lines(src, nsrc);
    cs_free(insn, n);
    cs_close(&cs);
    free(code);
    free(ex);
    free(in);
    free(target);
    return 0;
}
