/* test_esc.c - strings made harmless as text and in JSON (src/base/esc.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/esc.h"

static char *text(const char *s)
{
    static char buf[1024];
    size_t n = esc_text(buf, sizeof buf, s);
    assert_int_equal(n, strlen(buf));
    return buf;
}

static void test_text_controls(void **state)
{
    assert_string_equal(text("plain name_1"), "plain name_1");
    assert_string_equal(text("red\x1b[31mX"), "red\\x1b[31mX");
    assert_string_equal(text("a\nb\tc\rd"), "a\\nb\\tc\\rd");
    assert_string_equal(text("\x01\x7f"), "\\x01\\x7f");
    assert_string_equal(text("title\x1b]0;pwned\x07"), "title\\x1b]0;pwned\\x07");
}

static void test_text_unicode(void **state)
{
    assert_string_equal(text("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), /* é € 😀 kept */
                        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    assert_string_equal(text("c1 \xc2\x9b" "31m"), "c1 \\u009b31m");   /* CSI as U+009B */
    assert_string_equal(text("\xc2\x85"), "\\u0085");                 /* NEL */
    assert_string_equal(text("a\xe2\x80\xae" "b"), "a\\u202eb");      /* RLO */
    assert_string_equal(text("\xe2\x81\xa6\xe2\x81\xa9"), "\\u2066\\u2069");
    assert_string_equal(text("\xe2\x80\xa8"), "\\u2028");
    assert_string_equal(text("\xe2\x80\x8f"), "\\u200f");
}

static void test_text_invalid(void **state)
{
    assert_string_equal(text("\xff\xfe"), "\\xff\\xfe");
    assert_string_equal(text("\x9b" "31m"), "\\x9b31m");      /* a raw 8-bit CSI */
    assert_string_equal(text("\xc0\xaf"), "\\xc0\\xaf");       /* overlong '/' */
    assert_string_equal(text("\xed\xa0\x80"), "\\xed\\xa0\\x80"); /* a surrogate */
    assert_string_equal(text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80"); /* > U+10FFFF */
    assert_string_equal(text("cut \xe2\x82"), "cut \\xe2\\x82");
    assert_string_equal(text("\xe2\x82" "A"), "\\xe2\\x82" "A");
}

static void test_text_idempotent_and_truncated(void **state)
{
    const char *nasty = "x\x1b[2J\n\xe2\x80\xae\xff\xc2\x9b" "caf\xc3\xa9";
    char once[256], twice[256];
    esc_text(once, sizeof once, nasty);
    esc_text(twice, sizeof twice, once);
    assert_string_equal(once, twice);
    char small[6];
    size_t n = esc_text(small, sizeof small, "ab\x1b" "cd");
    assert_int_equal(n, strlen("ab\\x1bcd"));
    assert_string_equal(small, "ab"); /* never half an escape */
    assert_int_equal(esc_text(NULL, 0, "\n"), 2);
}

static char *json(const char *s)
{
    static char *buf;
    size_t len;
    free(buf);
    FILE *f = open_memstream(&buf, &len);
    esc_json(f, s);
    fclose(f);
    return buf;
}

static void test_json(void **state)
{
    assert_string_equal(json("a\"b\\c"), "\"a\\\"b\\\\c\"");
    assert_string_equal(json("\x1b[31m\n\t\r\b\f\x7f"), "\"\\u001b[31m\\n\\t\\r\\b\\f\\u007f\"");
    assert_string_equal(json("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
    assert_string_equal(json("\xc2\x9b\xe2\x80\xae"), "\"\\u009b\\u202e\"");
    assert_string_equal(json("\xff" "a\xe2\x82"), "\"\\udcff" "a\\udce2\\udc82\"");
}

static char *fmt(const char *f, ...)
{
    static char *buf;
    size_t len;
    free(buf);
    FILE *out = open_memstream(&buf, &len);
    va_list ap;
    va_start(ap, f);
    int r = esc_vfprintf(out, f, ap);
    va_end(ap);
    fclose(out);
    assert_int_equal(r, (int)len);
    return buf;
}

static void test_printf(void **state)
{
    assert_string_equal(fmt("%s\n", "a\nb"), "a\\nb\n");
    assert_string_equal(fmt("[%-6s|%6s]", "\x1b", "x"), "[\\x1b  |     x]");
    assert_string_equal(fmt("[%*s]", 5, "\t"), "[   \\t]");
    assert_string_equal(fmt("[%-*.*s]", 6, 2, "a\x1bzz"), "[a\\x1b ]");
    assert_string_equal(fmt("[%.1s]", "\x1b[31m"), "[\\x1b]");
    assert_string_equal(fmt("%c%c", 'A', 0x1b), "A\\x1b");
    assert_string_equal(fmt("%d %5ld %zu %llu %x %%", -3, 42L, (size_t)7, 1ULL << 40, 255),
                        "-3    42 7 1099511627776 ff %");
    assert_string_equal(fmt("%.2f %8.3f %g", 1.005, 2.5, 1e-9), "1.00    2.500 1e-09");
    assert_string_equal(fmt("%5.1f%%|%-4d|%04d", 12.34, 5, 7), " 12.3%|5   |0007");
    assert_string_equal(fmt("%*d|%-*d|%.*f", 4, 1, 3, 2, 1, 3.14159), "   1|2  |3.1");
    assert_string_equal(fmt("%s", (char *)NULL), "(null)");
    errno = ENOENT;
    assert_string_equal(fmt("%m"), "No such file or directory");
    char longname[600];
    memset(longname, 0x1b, sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    const char *out = fmt("%s", longname);
    assert_int_equal(strlen(out), 4 * (sizeof longname - 1));
}

/* An unbuffered stream whose writes are counted. */
static size_t nwrites;
static char written[256];
static size_t nwritten;

static ssize_t count_write(void *cookie, const char *b, size_t n)
{
    (void)cookie;
    nwrites++;
    if (nwritten + n < sizeof written) {
        memcpy(written + nwritten, b, n);
        nwritten += n;
    }
    return (ssize_t)n;
}

/* A message to an unbuffered stream (stderr: the ranks of `mpirun tally collect` share one) is
 * one write, its escaped arguments and %m included; a buffered stream gets the same bytes. */
static void test_printf_one_write(void **state)
{
    FILE *f = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = count_write });
    assert_non_null(f);
    assert_int_equal(setvbuf(f, NULL, _IONBF, 0), 0);
    nwrites = nwritten = 0;
    errno = EACCES;
    int r = esc_fprintf(f, "tally: archive: %u binar%s copied (%.2f MB), %s: %m\n", 1u, "y",
                        0.03, "a\x1b" "b");
    const char *want = "tally: archive: 1 binary copied (0.03 MB), a\\x1bb: Permission denied\n";
    assert_int_equal(nwrites, 1);
    assert_int_equal(r, (int)strlen(want));
    written[nwritten] = 0;
    assert_string_equal(written, want);
    fclose(f);
    errno = EACCES;
    assert_string_equal(fmt("tally: archive: %u binar%s copied (%.2f MB), %s: %m\n", 1u, "y",
                            0.03, "a\x1b" "b"), want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_controls),
        cmocka_unit_test(test_text_unicode),
        cmocka_unit_test(test_text_invalid),
        cmocka_unit_test(test_text_idempotent_and_truncated),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_printf),
        cmocka_unit_test(test_printf_one_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
