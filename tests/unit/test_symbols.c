/*
 * test_symbols.c - symbolization on real ELF files: functions of this test program (global and
 * static) and of libc, the same id for every address inside a function, source lines (DWARF 5 as
 * gcc 12 emits it), and the fallbacks: a missing file, a non-ELF file, a changed build-id.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "analyzer/symbols.h"

__attribute__((noinline)) int symbols_test_global(int x) { return x * 3 + 1; }
static const unsigned global_line = __LINE__ - 1;
__attribute__((noinline)) static int symbols_test_static(int x) { return x * 5 + 2; }

/* Load bias and path of the object that holds address a. */
static uint64_t bias_of(const void *a, char *path, size_t n)
{
    Dl_info di;
    struct link_map *lm;
    assert_true(dladdr1(a, &di, (void **)&lm, RTLD_DL_LINKMAP));
    if (lm->l_name && lm->l_name[0])
        snprintf(path, n, "%s", lm->l_name);
    else
        assert_true(readlink("/proc/self/exe", path, n - 1) > 0);
    return (uint64_t)lm->l_addr;
}

static void own_functions(void **state)
{
    sym_ctx_t *s = sym_new();
    char path[4096] = "";
    uint64_t bias = bias_of((void *)symbols_test_global, path, sizeof path);
    uint32_t obj = sym_object_add(s, path, "");
    assert_int_equal(sym_object_add(s, path, ""), obj); /* one object per (path, build-id) */
    uint64_t a = (uint64_t)(uintptr_t)symbols_test_global - bias;
    uint32_t f = sym_func_at(s, obj, a);
    assert_string_equal(sym_func(s, f)->name, "symbols_test_global");
    assert_int_equal(sym_func_at(s, obj, a + 3), f); /* inside: the same function */
    assert_int_equal(sym_object(s, obj)->status, SYM_OBJ_OK);
    uint32_t g = sym_func_at(s, obj, (uint64_t)(uintptr_t)symbols_test_static - bias);
    assert_int_not_equal(g, f);
    assert_string_equal(sym_func(s, g)->name, "symbols_test_static");
    const char *file;
    uint32_t line;
    assert_int_equal(sym_line_at(s, obj, a, &file, &line), 0);
    assert_non_null(strstr(file, "test_symbols.c"));
    assert_int_equal(line, global_line);
    sym_free(s);
}

static void libc_function(void **state)
{
    sym_ctx_t *s = sym_new();
    char path[4096] = "";
    void *fn = dlsym(RTLD_DEFAULT, "qsort");
    uint64_t bias = bias_of(fn, path, sizeof path);
    uint32_t obj = sym_object_add(s, path, "");
    uint32_t f = sym_func_at(s, obj, (uint64_t)(uintptr_t)fn - bias);
    assert_non_null(strstr(sym_func(s, f)->name, "qsort"));
    assert_string_equal(sym_object(s, obj)->name, strrchr(path, '/') + 1);
    /* an address beyond every symbol still names a function, the same one each time */
    uint32_t h1 = sym_func_at(s, obj, 0x10), h2 = sym_func_at(s, obj, 0x11);
    assert_int_equal(h1, h2);
    sym_free(s);
}

static void fallbacks(void **state)
{
    sym_ctx_t *s = sym_new();
    uint32_t missing = sym_object_add(s, "/nonexistent/libgone.so", "abcd");
    uint32_t f = sym_func_at(s, missing, 0x1234);
    assert_int_equal(sym_object(s, missing)->status, SYM_OBJ_MISSING);
    assert_non_null(strstr(sym_object(s, missing)->message, "no longer exists"));
    assert_string_equal(sym_func(s, f)->name, "<unknown> (libgone.so)");
    assert_int_equal(sym_func_at(s, missing, 0x9999), f);

    char tmp[] = "/tmp/tally-test-symbols-XXXXXX";
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not an ELF file\n", 16), 16);
    close(fd);
    uint32_t junk = sym_object_add(s, tmp, "");
    sym_func_at(s, junk, 0x10);
    assert_int_equal(sym_object(s, junk)->status, SYM_OBJ_UNREADABLE);
    unlink(tmp);

    char path[4096] = "";
    bias_of((void *)symbols_test_global, path, sizeof path);
    uint32_t changed = sym_object_add(s, path, "0123456789abcdef0123456789abcdef01234567");
    sym_func_at(s, changed, 0x10);
    assert_int_equal(sym_object(s, changed)->status, SYM_OBJ_CHANGED);
    assert_non_null(strstr(sym_object(s, changed)->message, "has changed"));

    assert_string_equal(sym_func(s, sym_func_unknown(s))->name, "<Unknown>");
    assert_int_equal(sym_func_unknown(s), sym_func_unknown(s));
    sym_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(own_functions),
        cmocka_unit_test(libc_function),
        cmocka_unit_test(fallbacks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
