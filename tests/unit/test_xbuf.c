/* test_xbuf.c - the exports' buffered writer (src/export/xbuf.h): its bytes are the sink's
 * (escaping byte for byte, numbers as printf formats them), across buffer boundaries. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/sink.h"
#include "export/xbuf.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A string of n bytes drawn from a mix: plain ASCII, quotes and backslashes, controls, valid
 * UTF-8 (including hidden marks), and stray bytes. */
static void random_string(char *s, size_t n)
{
    static const char *const pieces[] = { "a", "Z", " ", "\"", "\\", "\n", "\t", "\x01", "\x7f",
                                          "\xc3\xa9", "\xe2\x80\x8f", "\xc2\x85", "\xff",
                                          "\xe2\x82", "\xf0\x9f\x98\x80", ";", "/" };
    size_t k = 0;
    while (k < n) {
        const char *p = pieces[next() % (sizeof pieces / sizeof *pieces)];
        size_t l = strlen(p);
        if (k + l > n)
            break;
        memcpy(s + k, p, l);
        k += l;
    }
    s[k] = 0;
}

/* What the sink writes for str, as JSON (json) or as "%s" text. */
static char *sink_bytes(const char *str, int json, size_t *len)
{
    char *buf = NULL;
    size_t sz = 0;
    FILE *f = open_memstream(&buf, &sz);
    assert_non_null(f);
    sink_t s;
    sink_file(&s, f);
    if (json)
        sink_json_str(&s, str);
    else
        sink_printf(&s, "%s", str);
    assert_int_equal(fclose(f), 0);
    *len = sz;
    return buf;
}

static char *xbuf_bytes(const char *str, int json, size_t *len)
{
    char *buf = NULL;
    size_t sz = 0;
    FILE *f = open_memstream(&buf, &sz);
    assert_non_null(f);
    xbuf_t x;
    assert_int_equal(xb_init(&x, f), 0);
    if (json)
        xb_json(&x, str);
    else
        xb_text(&x, str);
    assert_int_equal(xb_finish(&x), 0);
    assert_int_equal(fclose(f), 0);
    *len = sz;
    return buf;
}

static void test_escaping_is_the_sinks(void **state)
{
    (void)state;
    char s[64];
    for (int i = 0; i < 20000; i++) {
        random_string(s, next() % sizeof s);
        for (int json = 0; json < 2; json++) {
            size_t a, b, c;
            char *want = sink_bytes(s, json, &a);
            char *got = xbuf_bytes(s, json, &b);
            char *kept = xb_escape(s, json, &c);
            assert_non_null(kept);
            assert_int_equal(a, b);
            assert_memory_equal(want, got, a);
            assert_int_equal(a, c);
            assert_memory_equal(want, kept, a);
            free(want);
            free(got);
            free(kept);
        }
    }
}

static void test_numbers(void **state)
{
    (void)state;
    static const uint64_t fixed[] = { 0, 1, 9, 10, 999, 1000, 1001, 123456789, UINT64_MAX,
                                      UINT64_MAX - 999 };
    for (int i = 0; i < 100000; i++) {
        uint64_t v = i < 10 ? fixed[i] : next() >> (next() % 64);
        char want[48], got[48];
        size_t n = xb_fmt_u64(got, v);
        snprintf(want, sizeof want, "%llu", (unsigned long long)v);
        assert_int_equal(n, strlen(want));
        assert_memory_equal(want, got, n);
        n = xb_fmt_us3(got, v);
        snprintf(want, sizeof want, "%llu.%03llu", (unsigned long long)(v / 1000),
                 (unsigned long long)(v % 1000));
        assert_int_equal(n, strlen(want));
        assert_memory_equal(want, got, n);
    }
}

/* Many small writes and some larger than the buffer: the bytes arrive whole and in order. */
static void test_boundaries(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t sz = 0;
    FILE *f = open_memstream(&buf, &sz);
    assert_non_null(f);
    xbuf_t x;
    assert_int_equal(xb_init(&x, f), 0);
    size_t big = (1u << 18) + 12345;
    char *blob = malloc(big);
    assert_non_null(blob);
    for (size_t i = 0; i < big; i++)
        blob[i] = (char)('a' + i % 26);
    size_t want = 0;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 50000; i++) {
            xb_u64(&x, (uint64_t)i);
            xb_char(&x, ',');
            want += (size_t)snprintf(NULL, 0, "%d,", i);
        }
        xb_put(&x, blob, big);
        want += big;
    }
    assert_int_equal(xb_finish(&x), 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(sz, want);
    size_t at = 0;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 50000; i++) {
            char n[32];
            int l = snprintf(n, sizeof n, "%d,", i);
            assert_memory_equal(buf + at, n, (size_t)l);
            at += (size_t)l;
        }
        assert_memory_equal(buf + at, blob, big);
        at += big;
    }
    free(blob);
    free(buf);
}

/* A write that fails is remembered: xb_finish says so. */
static void test_write_error(void **state)
{
    (void)state;
    FILE *f = fopen("/dev/full", "w");
    if (!f)
        skip();
    xbuf_t x;
    assert_int_equal(xb_init(&x, f), 0);
    for (int i = 0; i < 100000; i++)
        xb_str(&x, "0123456789");
    assert_int_equal(xb_finish(&x), -1);
    fclose(f);
}

/* Kept names: by id, replaced, freed. */
static void test_names(void **state)
{
    (void)state;
    xb_names_t nm = { 0 };
    size_t len;
    assert_null(xb_names_get(&nm, 5, &len));
    for (uint32_t id = 0; id < 5000; id += 7) {
        char *s = xb_escape("f\"n", 1, &len);
        assert_int_equal(xb_names_set(&nm, id, s, len), 0);
    }
    const char *k = xb_names_get(&nm, 4998, &len);
    assert_non_null(k);
    assert_int_equal(len, 6);
    assert_memory_equal(k, "\"f\\\"n\"", 6);
    assert_null(xb_names_get(&nm, 4999, &len));
    xb_names_free(&nm);
    assert_null(xb_names_get(&nm, 0, &len));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escaping_is_the_sinks), cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_boundaries),            cmocka_unit_test(test_write_error),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
