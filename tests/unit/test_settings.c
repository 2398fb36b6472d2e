/* test_settings.c - the table of collector settings (experiment/settings.h): defaults, the
 * TALLY_SETTINGS encoding round trip, values rejected with a message naming them, and the log
 * record round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "experiment/settings.h"

/* every setting away from its default */
static void all_set(exp_settings_t *s)
{
    exp_settings_default(s);
    strcpy(s->dir.s, "/tmp/a dir,with%odd=chars\t/x.1.tally");
    s->root_pid = 4242;
    s->owner_pid = 4343;
    s->root_t0 = 123456789012345ull;
    s->clock_ns = 2500000;
    s->clock_signal = SIGRTMAX - 6;
    s->clock_timer = 1;
    s->follow = 0;
    s->duration.on = 1;
    s->duration.lo = 1000;
    s->duration.hi = 5000000000ull;
    s->max_depth = 77;
    s->sync.mode = EXP_SYNC_THRESHOLD;
    s->sync.ns = 50000;
    s->heap = 1;
    s->io = 1;
    s->sample_ns = 0;
    s->states_ns = 20000000;
    s->sample_signal = 10;
    s->pause_signal = 12;
}

static void assert_same(const exp_settings_t *a, const exp_settings_t *b)
{
    assert_string_equal(a->dir.s, b->dir.s);
    assert_int_equal(a->root_pid, b->root_pid);
    assert_int_equal(a->owner_pid, b->owner_pid);
    assert_int_equal(a->root_t0, b->root_t0);
    assert_int_equal(a->clock_ns, b->clock_ns);
    assert_int_equal(a->clock_signal, b->clock_signal);
    assert_int_equal(a->clock_timer, b->clock_timer);
    assert_int_equal(a->follow, b->follow);
    assert_int_equal(a->duration.on, b->duration.on);
    assert_int_equal(a->duration.lo, b->duration.lo);
    assert_int_equal(a->duration.hi, b->duration.hi);
    assert_int_equal(a->max_depth, b->max_depth);
    assert_int_equal(a->sync.mode, b->sync.mode);
    assert_int_equal(a->sync.ns, b->sync.ns);
    assert_int_equal(a->heap, b->heap);
    assert_int_equal(a->io, b->io);
    assert_int_equal(a->sample_ns, b->sample_ns);
    assert_int_equal(a->states_ns, b->states_ns);
    assert_int_equal(a->sample_signal, b->sample_signal);
    assert_int_equal(a->pause_signal, b->pause_signal);
}

static void test_defaults(void **state)
{
    (void)state;
    exp_settings_t s, d;
    char why[256], buf[EXP_SETTINGS_ENC_MAX];
    exp_settings_default(&d);
    assert_int_equal(d.clock_ns, 10000000);
    assert_int_equal(d.clock_signal, SIGRTMAX - 4);
    assert_int_equal(d.follow, 1);
    assert_int_equal(d.max_depth, 1024);
    assert_int_equal(d.sample_ns, 1000000000);
    assert_int_equal(d.states_ns, 10000000);
    assert_int_equal(d.sync.mode, EXP_SYNC_OFF);
    assert_int_equal(d.heap, 0);
    assert_int_equal(d.duration.on, 0);
    /* the defaults encode to nothing, and nothing decodes to the defaults */
    assert_int_equal(exp_settings_encode(&d, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    assert_int_equal(exp_settings_decode("", &s, why, sizeof why), 0);
    assert_same(&s, &d);
    /* a single setting stays a single short pair */
    d.sample_ns = 0;
    assert_int_equal(exp_settings_encode(&d, buf, sizeof buf), 3);
    assert_string_equal(buf, "S=0");
}

static void test_round_trip(void **state)
{
    (void)state;
    exp_settings_t a, b;
    char buf[EXP_SETTINGS_ENC_MAX], why[256];
    all_set(&a);
    long n = exp_settings_encode(&a, buf, sizeof buf);
    assert_true(n > 0);
    assert_int_equal((size_t)n, strlen(buf));
    /* the value is safe in an environment string and in a comma-separated list */
    for (const char *p = buf; *p; p++)
        assert_true(*p > ' ' && *p <= '~');
    assert_null(strstr(buf, ",with")); /* ',' and '%' of the path are escaped */
    assert_null(strstr(buf, "%odd"));
    int rc = exp_settings_decode(buf, &b, why, sizeof why);
    if (rc)
        fail_msg("%s", why);
    assert_same(&a, &b);
    /* an open-ended window, calibrated and every-call sync */
    a.duration.hi = UINT64_MAX;
    a.sync.mode = EXP_SYNC_CALIBRATE;
    a.sync.ns = 0;
    assert_true(exp_settings_encode(&a, buf, sizeof buf) > 0);
    assert_int_equal(exp_settings_decode(buf, &b, why, sizeof why), 0);
    assert_same(&a, &b);
    assert_int_equal(exp_settings_decode("s=all", &b, why, sizeof why), 0);
    assert_int_equal(b.sync.mode, EXP_SYNC_THRESHOLD);
    assert_int_equal(b.sync.ns, 0);
    /* too small a buffer is an error, never a cut value */
    assert_int_equal(exp_settings_encode(&a, buf, 20), -1);
}

static void test_rejected(void **state)
{
    (void)state;
    static const struct {
        const char *v, *key;
    } bad[] = {
        { "m=0", "m=0" },              /* max depth below 1 */
        { "m=65537", "m=65537" },      /* above 65536 */
        { "p=5", "p=5" },              /* clock below 10 us */
        { "p=12x", "p=12x" },          /* not a number */
        { "p=-1", "p=-1" },
        { "p=99999999999999999999999", "p=" }, /* overflow */
        { "F=maybe", "F=maybe" },
        { "g=3", "g=3" },              /* not a real-time signal */
        { "l=99", "l=99" },
        { "S=10", "S=10" },            /* sample packets below 1 ms */
        { "t=5-3", "t=5-3" },          /* window ending before it starts */
        { "t=abc", "t=abc" },
        { "s=sometimes", "s=sometimes" },
        { "d=", "d=" },
        { "zz=1", "zz=1" },            /* unknown key */
        { "p", "'p'" },                /* not key=value */
        { "d=%4", "%-escape" },
        { "d=%zz", "%-escape" },
        { "r=0", "r=0" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        exp_settings_t s;
        char why[256];
        if (exp_settings_decode(bad[i].v, &s, why, sizeof why) != -1)
            fail_msg("'%s' was accepted", bad[i].v);
        if (!strstr(why, bad[i].key) || strncmp(why, "bad setting", 11))
            fail_msg("'%s': message '%s' does not name it", bad[i].v, why);
    }
    /* a bad value anywhere in the list is found */
    exp_settings_t s;
    char why[256];
    assert_int_equal(exp_settings_decode("p=1000000,m=0,H=on", &s, why, sizeof why), -1);
    assert_non_null(strstr(why, "m=0"));
}

static void test_find(void **state)
{
    (void)state;
    char *env[] = { "A=1", "TALLY_SETTINGSX=no", "TALLY_SETTINGS=p=0", "B=2", NULL };
    assert_string_equal(exp_settings_find(env), "p=0");
    char *none[] = { "A=1", NULL };
    assert_null(exp_settings_find(none));
}

/* the log record: written by exp_settings_log, read back through a getter like the reader's */
typedef struct {
    char *keys[64], *vals[64];
    int n;
} fields_t;

static const char *get(void *ctx, const char *key)
{
    fields_t *f = ctx;
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->keys[i], key))
            return f->vals[i];
    return NULL;
}

static void split(char *line, fields_t *f)
{
    f->n = 0;
    strtok(line, " \n"); /* the kind */
    for (char *t; (t = strtok(NULL, " \n")) && f->n < 64;) {
        char *eq = strchr(t, '=');
        assert_non_null(eq);
        *eq = 0;
        exp_pct_decode(eq + 1);
        f->keys[f->n] = t;
        f->vals[f->n++] = eq + 1;
    }
}

static void test_log_round_trip(void **state)
{
    (void)state;
    exp_settings_t a, b;
    for (int variant = 0; variant < 3; variant++) {
        all_set(&a);
        if (variant == 1) {
            exp_settings_default(&a); /* clock on, no window, sync off, no signals */
        } else if (variant == 2) {
            a.clock_ns = 0;
            a.duration.hi = UINT64_MAX;
            a.sample_signal = 0;
        }
        char buf[1024];
        exp_line_t l;
        exp_line_begin(&l, buf, sizeof buf, "settings");
        exp_settings_log(&a, &l);
        assert_int_equal(l.cut, 0);
        buf[l.len] = 0;
        if (variant == 2) {
            assert_non_null(strstr(buf, " clock=off"));
            assert_null(strstr(buf, "sample_signal"));
        }
        if (variant == 1)
            assert_non_null(strstr(buf, " duration=all"));
        fields_t f;
        split(buf, &f);
        const char *badkey = "x";
        assert_int_equal(exp_settings_from_log(&b, get, &f, &badkey), 0);
        assert_null(badkey);
        /* the process context is not logged: compare the rest */
        strcpy(b.dir.s, a.dir.s);
        b.root_pid = a.root_pid;
        b.owner_pid = a.owner_pid;
        b.root_t0 = a.root_t0;
        assert_same(&a, &b);
    }
    /* a bad value is counted and named, and left at its default */
    char line[] = "settings clock=fast max_depth=12";
    fields_t f;
    split(line, &f);
    const char *badkey = NULL;
    assert_int_equal(exp_settings_from_log(&b, get, &f, &badkey), 1);
    assert_string_equal(badkey, "clock");
    assert_int_equal(b.clock_ns, 10000000);
    assert_int_equal(b.max_depth, 12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),     cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_rejected),     cmocka_unit_test(test_find),
        cmocka_unit_test(test_log_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
