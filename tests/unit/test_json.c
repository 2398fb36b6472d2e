/* test_json.c - the sink (src/base/sink.c) and the one JSON writer (src/base/json.c). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/sink.h"

static void test_sink_mem_escapes(void **state)
{
    sink_t s;
    assert_int_equal(sink_mem(&s), 0);
    sink_printf(&s, "%s|%d|%c\n", "a\x1b[31mb", 42, '\x07');
    size_t n;
    const char *d = sink_data(&s, &n);
    assert_string_equal(d, "a\\x1b[31mb|42|\\x07\n");
    assert_int_equal(n, strlen(d));
    sink_printf(&s, "more");
    assert_string_equal(sink_data(&s, NULL), "a\\x1b[31mb|42|\\x07\nmore");
    assert_int_equal(sink_error(&s), 0);
    sink_close(&s);
}

static void test_sink_file(void **state)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    sink_t s;
    sink_file(&s, f);
    sink_printf(&s, "x=%s", "\xe2\x80\xae");
    assert_null(sink_data(&s, NULL));
    sink_close(&s);
    fclose(f);
    assert_string_equal(buf, "x=\\u202e");
    free(buf);
}

static const char *doc(sink_t *s) { return sink_data(s, NULL); }

static void test_json_structure(void **state)
{
    sink_t s;
    sink_mem(&s);
    json_t j;
    json_init(&j, &s);
    json_obj_begin(&j);
    json_key(&j, "view");
    json_str(&j, "functions");
    json_key(&j, "rows");
    json_arr_begin(&j);
    for (int i = 0; i < 3; i++) {
        json_obj_begin(&j);
        json_keyf(&j, "%c.%s", 'e', "totalcpu");
        json_num(&j, i * 0.5);
        json_obj_end(&j);
    }
    json_arr_end(&j);
    json_key(&j, "empty");
    json_arr_begin(&j);
    json_arr_end(&j);
    json_key(&j, "o");
    json_obj_begin(&j);
    json_obj_end(&j);
    json_key(&j, "n");
    json_u64(&j, UINT64_MAX);
    json_key(&j, "i");
    json_i64(&j, -5);
    json_key(&j, "b");
    json_bool(&j, 1);
    json_key(&j, "z");
    json_null(&j);
    json_obj_end(&j);
    json_end_doc(&j);
    assert_string_equal(doc(&s), "{\"view\":\"functions\",\"rows\":[{\"e.totalcpu\":0},"
                                 "{\"e.totalcpu\":0.5},{\"e.totalcpu\":1}],\"empty\":[],\"o\":{},"
                                 "\"n\":18446744073709551615,\"i\":-5,\"b\":true,\"z\":null}\n");
    /* a second document on its own line, no leading comma */
    json_arr_begin(&j);
    json_str(&j, "a");
    json_str(&j, "b");
    json_arr_end(&j);
    json_end_doc(&j);
    assert_string_equal(strchr(doc(&s), '\n') + 1, "[\"a\",\"b\"]\n");
    sink_close(&s);
}

static void test_json_numbers_and_strings(void **state)
{
    sink_t s;
    sink_mem(&s);
    json_t j;
    json_init(&j, &s);
    json_arr_begin(&j);
    json_num(&j, 1e15);        /* not below 1e15: %.9g */
    json_num(&j, 999999999999999.0);
    json_num(&j, 1.0 / 3);
    json_num(&j, -2);
    json_num(&j, 0.0 / 0.0);   /* NaN */
    json_num(&j, 1.0 / 0.0);
    json_str(&j, "q\"b\\\n\x1b\xff");
    json_strf(&j, "%s-%d", "x", 3);
    json_str(&j, NULL);
    json_arr_end(&j);
    assert_string_equal(doc(&s), "[1e+15,999999999999999,0.333333333,-2,null,null,"
                                 "\"q\\\"b\\\\\\n\\u001b\\udcff\",\"x-3\",\"\"]");
    sink_close(&s);
}

static void test_json_deep(void **state)
{
    /* no depth limit: 100,000 levels */
    sink_t s;
    sink_mem(&s);
    json_t j;
    json_init(&j, &s);
    for (int i = 0; i < 100000; i++) {
        json_obj_begin(&j);
        json_key(&j, "c");
        json_arr_begin(&j);
    }
    for (int i = 0; i < 100000; i++) {
        json_arr_end(&j);
        json_obj_end(&j);
    }
    size_t n;
    const char *d = sink_data(&s, &n);
    assert_int_equal(n, 100000 * strlen("{\"c\":[]}"));
    assert_memory_equal(d, "{\"c\":[{\"c\":[", 12);
    assert_memory_equal(d + n - 4, "]}]}", 4);
    sink_close(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sink_mem_escapes),
        cmocka_unit_test(test_sink_file),
        cmocka_unit_test(test_json_structure),
        cmocka_unit_test(test_json_numbers_and_strings),
        cmocka_unit_test(test_json_deep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
