/*
 * filter.c - parser and evaluator of filter expressions (see filter.h). A recursive-descent parser
 * builds a small tree of nodes in one array; evaluation walks it.
 */
#define _GNU_SOURCE
#include "analyzer/filter.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum op { N_NUM, N_KEY, N_CMP, N_AND, N_OR, N_NOT, N_STACK };
enum rel { R_EQ, R_NE, R_LT, R_LE, R_GT, R_GE };

typedef struct node {
    int op;
    int rel;        /* N_CMP */
    uint64_t num;   /* N_NUM; N_KEY: the key */
    uint32_t term;  /* N_STACK: pattern number */
    int leaf;       /* N_STACK: leaf only */
    int a, b;       /* children */
} node_t;

struct flt {
    node_t *nodes;
    int n, cap, root;
    char **patterns;
    uint32_t npatterns;
    char *text;
};

typedef struct parser {
    flt_t *f;
    const char *s, *p;
    tally_err_t *err;
    int failed;
    int depth; /* nesting of unary operators and parentheses */
} parser_t;

#define MAX_DEPTH 200   /* nesting (the parser and the evaluator recurse) */
#define MAX_NODES 20000 /* terms: a longer expression is not one a person wrote */

static const char *const key_names[FLT_NKEYS] = { "THRID", "TID", "PID", "EXPID", "CPUID",
                                                  "SAMPLE", "TSTAMP", "STATE" };

static int fail(parser_t *ps, const char *what)
{
    if (!ps->failed) /* (a long expression is quoted by its start only) */
        tally_errf(ps->err, TALLY_EUSAGE, "filter '%.60s%s': at %d: %s", ps->s,
                   strlen(ps->s) > 60 ? "..." : "", (int)(ps->p - ps->s) + 1, what);
    ps->failed = 1;
    return -1;
}

static int add(parser_t *ps, node_t nd)
{
    flt_t *f = ps->f;
    if (f->n >= MAX_NODES)
        return fail(ps, "the expression is too long");
    if (f->n == f->cap) {
        int ncap = f->cap ? f->cap * 2 : 16;
        node_t *nn = realloc(f->nodes, (size_t)ncap * sizeof *nn);
        if (!nn)
            return fail(ps, "out of memory");
        f->nodes = nn;
        f->cap = ncap;
    }
    f->nodes[f->n] = nd;
    return f->n++;
}

static void skip(parser_t *ps)
{
    while (isspace((unsigned char)*ps->p))
        ps->p++;
}

/* Consumes the symbol or keyword tok if it comes next (keywords case-insensitive, whole words). */
static int accept(parser_t *ps, const char *tok)
{
    skip(ps);
    size_t n = strlen(tok);
    if (isalpha((unsigned char)tok[0])) {
        if (strncasecmp(ps->p, tok, n) || isalnum((unsigned char)ps->p[n]) || ps->p[n] == '_')
            return 0;
    } else if (strncmp(ps->p, tok, n)) {
        return 0;
    }
    ps->p += n;
    return 1;
}

static int expect(parser_t *ps, const char *tok)
{
    if (accept(ps, tok))
        return 0;
    char msg[64];
    snprintf(msg, sizeof msg, "expected '%s'", tok);
    return fail(ps, msg);
}

static int parse_or(parser_t *ps);

/* FNAME("glob") -> pattern number */
static int parse_fname(parser_t *ps, uint32_t *term)
{
    if (expect(ps, "(") || expect(ps, "\""))
        return -1;
    const char *start = ps->p;
    while (*ps->p && *ps->p != '"')
        ps->p++;
    if (!*ps->p)
        return fail(ps, "the function name pattern has no closing '\"'");
    size_t len = (size_t)(ps->p - start);
    ps->p++;
    if (expect(ps, ")"))
        return -1;
    flt_t *f = ps->f;
    char **np = realloc(f->patterns, (f->npatterns + 1) * sizeof *np);
    if (!np)
        return fail(ps, "out of memory");
    f->patterns = np;
    f->patterns[f->npatterns] = strndup(start, len);
    if (!f->patterns[f->npatterns])
        return fail(ps, "out of memory");
    *term = f->npatterns++;
    return 0;
}

static int parse_value(parser_t *ps)
{
    skip(ps);
    if (isdigit((unsigned char)*ps->p)) {
        char *end;
        errno = 0;
        unsigned long long iv = strtoull(ps->p, &end, 10);
        double v = (double)iv;
        int integer = *end != '.' && *end != 'e' && *end != 'E';
        if (!integer) {
            v = strtod(ps->p, &end);
        } else if (errno == ERANGE) {
            return fail(ps, "the number is too large");
        }
        ps->p = end;
        double scale = 1;
        if (accept(ps, "ns"))
            scale = 1;
        else if (accept(ps, "us"))
            scale = 1e3;
        else if (accept(ps, "ms"))
            scale = 1e6;
        else if (accept(ps, "s"))
            scale = 1e9;
        if (integer && scale == 1)
            return add(ps, (node_t){ .op = N_NUM, .num = iv }); /* exact */
        if (!(v * scale < 18446744073709551615.0))
            return fail(ps, "the number is too large");
        return add(ps, (node_t){ .op = N_NUM, .num = (uint64_t)(v * scale + 0.5) });
    }
    for (int k = 0; k < FLT_NKEYS; k++)
        if (accept(ps, key_names[k]))
            return add(ps, (node_t){ .op = N_KEY, .num = (uint64_t)k });
    if (accept(ps, "LWP"))
        return add(ps, (node_t){ .op = N_KEY, .num = FLT_TID });
    return fail(ps, "expected a number, a keyword (THRID, TID, PID, EXPID, CPUID, SAMPLE, "
                    "TSTAMP, STATE), FNAME(\"name\") or LEAF");
}

static int parse_unary(parser_t *ps)
{
    if (ps->depth >= MAX_DEPTH)
        return fail(ps, "the expression is nested too deeply");
    if (accept(ps, "!")) {
        ps->depth++;
        int a = parse_unary(ps);
        ps->depth--;
        return a < 0 ? -1 : add(ps, (node_t){ .op = N_NOT, .a = a });
    }
    if (accept(ps, "(")) {
        ps->depth++;
        int a = parse_or(ps);
        ps->depth--;
        if (a < 0 || expect(ps, ")"))
            return -1;
        return a;
    }
    uint32_t term;
    if (accept(ps, "FNAME")) {
        if (parse_fname(ps, &term) || expect(ps, "SOME") || expect(ps, "IN") ||
            expect(ps, "STACK"))
            return -1;
        return add(ps, (node_t){ .op = N_STACK, .term = term });
    }
    if (accept(ps, "LEAF")) {
        if (expect(ps, "IN") || expect(ps, "FNAME") || parse_fname(ps, &term))
            return -1;
        return add(ps, (node_t){ .op = N_STACK, .term = term, .leaf = 1 });
    }
    int a = parse_value(ps);
    if (a < 0)
        return -1;
    static const struct { const char *tok; int rel; } rels[] = {
        { "==", R_EQ }, { "!=", R_NE }, { "<=", R_LE }, { ">=", R_GE }, { "<", R_LT },
        { ">", R_GT },  { "=", R_EQ },
    };
    for (size_t i = 0; i < sizeof rels / sizeof rels[0]; i++) {
        if (accept(ps, rels[i].tok)) {
            int b = parse_value(ps);
            return b < 0 ? -1 : add(ps, (node_t){ .op = N_CMP, .rel = rels[i].rel, .a = a, .b = b });
        }
    }
    return fail(ps, "expected a comparison (==, !=, <, <=, >, >=)");
}

static int parse_and(parser_t *ps)
{
    int a = parse_unary(ps);
    while (a >= 0 && accept(ps, "&&")) {
        int b = parse_unary(ps);
        a = b < 0 ? -1 : add(ps, (node_t){ .op = N_AND, .a = a, .b = b });
    }
    return a;
}

static int parse_or(parser_t *ps)
{
    int a = parse_and(ps);
    while (a >= 0 && accept(ps, "||")) {
        int b = parse_and(ps);
        a = b < 0 ? -1 : add(ps, (node_t){ .op = N_OR, .a = a, .b = b });
    }
    return a;
}

int flt_parse(const char *text, flt_t **out, tally_err_t *err)
{
    *out = NULL;
    flt_t *f = calloc(1, sizeof *f);
    if (!f || !(f->text = strdup(text))) {
        free(f);
        return tally_errf(err, TALLY_ENOMEM, "out of memory");
    }
    parser_t ps = { f, text, text, err, 0, 0 };
    f->root = parse_or(&ps);
    skip(&ps);
    if (f->root >= 0 && *ps.p)
        fail(&ps, "unexpected text after the expression (missing && or ||?)");
    if (ps.failed) {
        flt_free(f);
        return TALLY_EUSAGE;
    }
    *out = f;
    return 0;
}

void flt_free(flt_t *f)
{
    if (!f)
        return;
    for (uint32_t i = 0; i < f->npatterns; i++)
        free(f->patterns[i]);
    free(f->patterns);
    free(f->nodes);
    free(f->text);
    free(f);
}

static uint64_t value(const flt_t *f, int k, const flt_event_t *ev)
{
    const node_t *nd = &f->nodes[k];
    return nd->op == N_NUM ? nd->num : ev->v[nd->num];
}

static int eval(const flt_t *f, int k, const flt_event_t *ev, flt_stack_fn stack, void *ctx)
{
    const node_t *nd = &f->nodes[k];
    switch (nd->op) {
    case N_AND:
        return eval(f, nd->a, ev, stack, ctx) && eval(f, nd->b, ev, stack, ctx);
    case N_OR:
        return eval(f, nd->a, ev, stack, ctx) || eval(f, nd->b, ev, stack, ctx);
    case N_NOT:
        return !eval(f, nd->a, ev, stack, ctx);
    case N_STACK:
        return stack(ctx, nd->term, nd->leaf);
    case N_CMP: {
        uint64_t a = value(f, nd->a, ev), b = value(f, nd->b, ev);
        switch (nd->rel) {
        case R_EQ: return a == b;
        case R_NE: return a != b;
        case R_LT: return a < b;
        case R_LE: return a <= b;
        case R_GT: return a > b;
        default: return a >= b;
        }
    }
    default: /* a bare value: true when not zero */
        return value(f, k, ev) != 0;
    }
}

int flt_eval(const flt_t *f, const flt_event_t *ev, flt_stack_fn stack, void *ctx)
{
    return eval(f, f->root, ev, stack, ctx);
}

int flt_uses(const flt_t *f, int key)
{
    for (int i = 0; i < f->n; i++)
        if (f->nodes[i].op == N_KEY && f->nodes[i].num == (uint64_t)key)
            return 1;
    return 0;
}

uint32_t flt_npatterns(const flt_t *f) { return f->npatterns; }
const char *flt_pattern(const flt_t *f, uint32_t term) { return f->patterns[term]; }
const char *flt_text(const flt_t *f) { return f->text; }
