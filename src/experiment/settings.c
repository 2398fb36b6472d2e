/*
 * settings.c - defaults, TALLY_SETTINGS encoding and decoding, and the log fields, generated from
 * settings.def. See settings.h. Sections: text helpers, one set of functions per type, the
 * generated functions. Async-signal-safe throughout: no malloc, no stdio, no locale.
 */
#include "experiment/settings.h"
#include "experiment/logfile.h"

#include <string.h>

/* ---- text helpers -------------------------------------------------------------------------- */

typedef struct out {
    char *b;
    size_t cap, len;
    int full;
} out_t;

static void put(out_t *o, const char *s, size_t n)
{
    if (o->full || o->len + n >= o->cap) {
        o->full = 1;
        return;
    }
    memcpy(o->b + o->len, s, n);
    o->len += n;
}

static void puts_(out_t *o, const char *s) { put(o, s, strlen(s)); }

static void put_u64(out_t *o, uint64_t v)
{
    char d[24];
    put(o, d, exp_fmt_u64(d, v));
}

/* A value inside the variable: '%', ',' and bytes outside '!'..'~' as %XX. */
static void put_escaped(out_t *o, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '%' || *p == ',' || *p < '!' || *p > '~') {
            char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };
            put(o, e, 3);
        } else {
            put(o, (const char *)p, 1);
        }
    }
}

/* Whole string s[0..n) as a decimal u64 without sign or spaces; 0 or -1. */
static int parse_u64(const char *s, size_t n, uint64_t *v)
{
    if (n == 0 || n > 20)
        return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

static int is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && !memcmp(s, word, n);
}

/* why = "<prefix><key><middle><value, cut><suffix>" */
static void say(char *why, size_t cap, const char *key, const char *v, size_t n, const char *what)
{
    if (!why || !cap)
        return;
    out_t o = { why, cap, 0, 0 };
    puts_(&o, "bad setting '");
    if (*key) {
        puts_(&o, key);
        puts_(&o, "=");
    }
    put(&o, v, n > 64 ? 64 : n);
    puts_(&o, "': ");
    puts_(&o, what);
    if (o.full)
        o.len = cap - 1;
    why[o.len] = 0;
}

/* ---- the types ------------------------------------------------------------------------------ */
/* For each TYPE: def_TYPE (set the default), eq_TYPE (equal to the default: not encoded),
 * enc_TYPE (the value in the variable), dec_TYPE (parse and check; a static message or NULL),
 * log_TYPE (the log field) and rd_TYPE (parse a log value; 0 or -1). */

static void def_PATH(exp_set_PATH_t *x, uint64_t d) { (void)d; x->s[0] = 0; }
static int eq_PATH(const exp_set_PATH_t *x, uint64_t d) { (void)d; return !x->s[0]; }
static void enc_PATH(out_t *o, const exp_set_PATH_t *x) { put_escaped(o, x->s); }
static const char *dec_PATH(exp_set_PATH_t *x, const char *v, size_t n, uint64_t lo, uint64_t hi)
{
    (void)lo, (void)hi;
    if (n == 0)
        return "an empty path";
    if (n >= sizeof x->s)
        return "the path is too long";
    if (memchr(v, 0, n))
        return "a NUL byte in the path";
    memcpy(x->s, v, n);
    x->s[n] = 0;
    return NULL;
}
/* a PATH is logged only when set (the process context has no log key) */
__attribute__((unused)) static void log_PATH(exp_line_t *l, const char *k, const exp_set_PATH_t *x)
{
    if (x->s[0])
        exp_line_str(l, k, x->s);
}
__attribute__((unused)) static int rd_PATH(exp_set_PATH_t *x, const char *v)
{
    size_t n = strlen(v);
    if (n >= sizeof x->s)
        return -1;
    memcpy(x->s, v, n + 1);
    return 0;
}

static void def_U64(uint64_t *x, uint64_t d) { *x = d; }
static int eq_U64(const uint64_t *x, uint64_t d) { return *x == d; }
static void enc_U64(out_t *o, const uint64_t *x) { put_u64(o, *x); }
static const char *dec_U64(uint64_t *x, const char *v, size_t n, uint64_t lo, uint64_t hi)
{
    uint64_t y;
    if (parse_u64(v, n, &y))
        return "not a decimal number";
    if (y < lo || y > hi)
        return "out of range";
    *x = y;
    return NULL;
}
static void log_U64(exp_line_t *l, const char *k, const uint64_t *x) { exp_line_u64(l, k, *x); }
static int rd_U64(uint64_t *x, const char *v) { return parse_u64(v, strlen(v), x); }

/* PERIOD: 0 = off, else [lo, hi] */
#define def_PERIOD def_U64
#define eq_PERIOD eq_U64
#define enc_PERIOD enc_U64
#define log_PERIOD log_U64
#define rd_PERIOD rd_U64
static const char *dec_PERIOD(uint64_t *x, const char *v, size_t n, uint64_t lo, uint64_t hi)
{
    if (is(v, n, "0") || is(v, n, "off")) {
        *x = 0;
        return NULL;
    }
    return dec_U64(x, v, n, lo, hi);
}

/* CLOCK: a PERIOD whose 0 is `off` in the log */
#define def_CLOCK def_U64
#define eq_CLOCK eq_U64
#define enc_CLOCK enc_U64
#define dec_CLOCK dec_PERIOD
static void log_CLOCK(exp_line_t *l, const char *k, const uint64_t *x)
{
    if (*x)
        exp_line_u64(l, k, *x);
    else
        exp_line_str(l, k, "off");
}
static int rd_CLOCK(uint64_t *x, const char *v)
{
    if (!strcmp(v, "off")) {
        *x = 0;
        return 0;
    }
    return rd_U64(x, v);
}

static void def_BOOL(int *x, uint64_t d) { *x = d != 0; }
static int eq_BOOL(const int *x, uint64_t d) { return *x == (d != 0); }
static void enc_BOOL(out_t *o, const int *x) { puts_(o, *x ? "on" : "off"); }
static const char *dec_BOOL(int *x, const char *v, size_t n, uint64_t lo, uint64_t hi)
{
    (void)lo, (void)hi;
    if (is(v, n, "on") || is(v, n, "1"))
        *x = 1;
    else if (is(v, n, "off") || is(v, n, "0"))
        *x = 0;
    else
        return "use on or off";
    return NULL;
}
static void log_BOOL(exp_line_t *l, const char *k, const int *x) { exp_line_str(l, k, *x ? "on" : "off"); }
static int rd_BOOL(int *x, const char *v)
{
    if (!strcmp(v, "on") || !strcmp(v, "1"))
        *x = 1;
    else if (!strcmp(v, "off") || !strcmp(v, "0"))
        *x = 0;
    else
        return -1;
    return 0;
}

static void def_SIG(int *x, uint64_t d) { *x = (int)d; }
static int eq_SIG(const int *x, uint64_t d) { return *x == (int)d; }
static void enc_SIG(out_t *o, const int *x) { put_u64(o, (uint64_t)*x); }
static const char *dec_SIG(int *x, const char *v, size_t n, uint64_t lo, uint64_t hi)
{
    uint64_t y;
    if (parse_u64(v, n, &y))
        return "not a signal number";
    if (y < lo || y > hi)
        return "not a signal tally can use";
    *x = (int)y;
    return NULL;
}
static void log_SIG(exp_line_t *l, const char *k, const int *x) { exp_line_u64(l, k, (uint64_t)*x); }
static int rd_SIG(int *x, const char *v)
{
    uint64_t y;
    if (parse_u64(v, strlen(v), &y) || y > 1024)
        return -1;
    *x = (int)y;
    return 0;
}

/* SIGOPT: 0 = none (and then not logged) */
#define def_SIGOPT def_SIG
#define eq_SIGOPT eq_SIG
#define enc_SIGOPT enc_SIG
#define rd_SIGOPT rd_SIG
static const char *dec_SIGOPT(int *x, const char *v, size_t n, uint64_t lo, uint64_t hi)
{
    if (is(v, n, "0")) {
        *x = 0;
        return NULL;
    }
    return dec_SIG(x, v, n, lo, hi);
}
static void log_SIGOPT(exp_line_t *l, const char *k, const int *x)
{
    if (*x)
        exp_line_u64(l, k, (uint64_t)*x);
}

static void def_WINDOW(exp_set_WINDOW_t *x, uint64_t d)
{
    (void)d;
    x->on = 0;
    x->lo = 0;
    x->hi = UINT64_MAX;
}
static int eq_WINDOW(const exp_set_WINDOW_t *x, uint64_t d) { (void)d; return !x->on; }
static void put_window(out_t *o, const exp_set_WINDOW_t *x)
{
    put_u64(o, x->lo);
    put(o, "-", 1);
    if (x->hi != UINT64_MAX)
        put_u64(o, x->hi);
}
static void enc_WINDOW(out_t *o, const exp_set_WINDOW_t *x) { put_window(o, x); }
static int parse_window(exp_set_WINDOW_t *x, const char *v, size_t n)
{
    const char *dash = memchr(v, '-', n);
    uint64_t a, b = UINT64_MAX;
    if (!dash || parse_u64(v, (size_t)(dash - v), &a))
        return -1;
    size_t rest = n - (size_t)(dash - v) - 1;
    if (rest && (parse_u64(dash + 1, rest, &b) || b <= a))
        return -1;
    x->on = 1;
    x->lo = a;
    x->hi = b;
    return 0;
}
static const char *dec_WINDOW(exp_set_WINDOW_t *x, const char *v, size_t n, uint64_t lo,
                              uint64_t hi)
{
    (void)lo, (void)hi;
    if (is(v, n, "all")) {
        def_WINDOW(x, 0);
        return NULL;
    }
    return parse_window(x, v, n) ? "use <a>-<b> or <a>- in ns, with b > a" : NULL;
}
static void log_WINDOW(exp_line_t *l, const char *k, const exp_set_WINDOW_t *x)
{
    char b[48];
    out_t o = { b, sizeof b, 0, 0 };
    if (x->on)
        put_window(&o, x);
    else
        puts_(&o, "all");
    b[o.len] = 0;
    exp_line_str(l, k, b);
}
static int rd_WINDOW(exp_set_WINDOW_t *x, const char *v)
{
    if (!strcmp(v, "all")) {
        def_WINDOW(x, 0);
        return 0;
    }
    return parse_window(x, v, strlen(v));
}

static void def_SYNC(exp_set_SYNC_t *x, uint64_t d)
{
    (void)d;
    x->mode = EXP_SYNC_OFF;
    x->ns = 0;
}
static int eq_SYNC(const exp_set_SYNC_t *x, uint64_t d) { (void)d; return x->mode == EXP_SYNC_OFF; }
static void enc_SYNC(out_t *o, const exp_set_SYNC_t *x)
{
    if (x->mode == EXP_SYNC_CALIBRATE)
        puts_(o, "on");
    else if (x->mode == EXP_SYNC_THRESHOLD)
        put_u64(o, x->ns);
    else
        puts_(o, "off");
}
static const char *dec_SYNC(exp_set_SYNC_t *x, const char *v, size_t n, uint64_t lo, uint64_t hi)
{
    (void)lo, (void)hi;
    def_SYNC(x, 0);
    if (is(v, n, "off"))
        return NULL;
    if (is(v, n, "on")) {
        x->mode = EXP_SYNC_CALIBRATE;
        return NULL;
    }
    x->mode = EXP_SYNC_THRESHOLD;
    if (is(v, n, "all"))
        return NULL;
    if (parse_u64(v, n, &x->ns) || x->ns > 1000000000000000ull) {
        def_SYNC(x, 0);
        return "use off, on, all or a threshold in ns";
    }
    return NULL;
}
static void log_SYNC(exp_line_t *l, const char *k, const exp_set_SYNC_t *x)
{
    if (x->mode == EXP_SYNC_OFF)
        exp_line_str(l, k, "off");
    else
        exp_line_u64(l, k, x->ns);
}
static int rd_SYNC(exp_set_SYNC_t *x, const char *v)
{
    def_SYNC(x, 0);
    if (!strcmp(v, "off"))
        return 0;
    x->mode = EXP_SYNC_THRESHOLD;
    return parse_u64(v, strlen(v), &x->ns);
}

/* ---- generated from the table --------------------------------------------------------------- */

void exp_settings_default(exp_settings_t *s)
{
#define X(field, type, env, log, dflt, lo, hi) def_##type(&s->field, (uint64_t)(dflt));
#include "experiment/settings.def"
#undef X
}

long exp_settings_encode(const exp_settings_t *s, char *buf, size_t cap)
{
    out_t o = { buf, cap, 0, 0 };
#define X(field, type, env, log, dflt, lo, hi)                                                     \
    if (!eq_##type(&s->field, (uint64_t)(dflt))) {                                                 \
        if (o.len)                                                                                 \
            put(&o, ",", 1);                                                                       \
        puts_(&o, env "=");                                                                        \
        enc_##type(&o, &s->field);                                                                 \
    }
#include "experiment/settings.def"
#undef X
    if (o.full || !cap)
        return -1;
    buf[o.len] = 0;
    return (long)o.len;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

int exp_settings_decode(const char *v, exp_settings_t *s, char *why, size_t cap)
{
    exp_settings_default(s);
    if (why && cap)
        why[0] = 0;
    char val[EXP_SETTINGS_PATH_MAX + 16];
    while (v && *v) {
        size_t n = strcspn(v, ",");
        const char *eq = memchr(v, '=', n);
        if (!eq) {
            say(why, cap, "", v, n, "not key=value");
            return -1;
        }
        size_t kn = (size_t)(eq - v), vl = 0;
        for (const char *p = eq + 1; p < v + n; p++) { /* percent-decode into val */
            char c = *p;
            if (c == '%') {
                int h = p + 2 < v + n ? hexval(p[1]) : -1, l = h >= 0 ? hexval(p[2]) : -1;
                if (l < 0) {
                    say(why, cap, "", v, n, "a bad %-escape");
                    return -1;
                }
                c = (char)(h * 16 + l);
                p += 2;
            }
            if (vl + 1 >= sizeof val) {
                say(why, cap, "", v, kn, "the value is too long");
                return -1;
            }
            val[vl++] = c;
        }
        val[vl] = 0;
        const char *err = "unknown key (from another version of tally?)";
        char key[16] = "";
        memcpy(key, v, kn < sizeof key - 1 ? kn : sizeof key - 1);
        do {
#define X(field, type, env, log, dflt, lo, hi)                                                     \
    if (is(v, kn, env)) {                                                                          \
        err = dec_##type(&s->field, val, vl, (uint64_t)(lo), (uint64_t)(hi));                      \
        break;                                                                                     \
    }
#include "experiment/settings.def"
#undef X
        } while (0);
        if (err) {
            say(why, cap, key, val, vl, err);
            return -1;
        }
        v += n;
        if (*v)
            v++;
    }
    return 0;
}

const char *exp_settings_find(char *const *envp)
{
    static const char name[] = EXP_SETTINGS_ENV "=";
    for (char *const *e = envp; e && *e; e++)
        if (!strncmp(*e, name, sizeof name - 1))
            return *e + sizeof name - 1;
    return NULL;
}

void exp_settings_log(const exp_settings_t *s, exp_line_t *l)
{
    const char *key;
#define X(field, type, env, log, dflt, lo, hi)                                                     \
    if ((key = log) != NULL)                                                                       \
        log_##type(l, key, &s->field);
#include "experiment/settings.def"
#undef X
}

int exp_settings_from_log(exp_settings_t *s, const char *(*get)(void *ctx, const char *key),
                          void *ctx, const char **bad)
{
    int nbad = 0;
    const char *key, *v;
    exp_settings_default(s);
    if (bad)
        *bad = NULL;
#define X(field, type, env, log, dflt, lo, hi)                                                     \
    if ((key = log) != NULL && (v = get(ctx, key)) != NULL && rd_##type(&s->field, v)) {          \
        def_##type(&s->field, (uint64_t)(dflt));                                                   \
        if (!nbad++ && bad)                                                                        \
            *bad = key;                                                                            \
    }
#include "experiment/settings.def"
#undef X
    return nbad;
}
