/*
 * test_symbols_data.c - data objects named from DWARF (symbols_data.h) in a fixture library of
 * known variables (tests/unit/data_fixture.c, dlopened from DATAFIX): seed 002's descriptors for
 * every form, the chain's levels, scalars, the layout of a structure, and the reasons when
 * nothing can be named.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analyzer/symbols_data.h"

static void *lib;
static uintptr_t base;
static sym_ctx_t *sym;
static sym_data_t *sd;
static uint32_t obj;

static int setup(void **state)
{
    (void)state;
    lib = dlopen(DATAFIX, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return -1;
    Dl_info info;
    if (!dladdr(dlsym(lib, "gi"), &info))
        return -1;
    base = (uintptr_t)info.dli_fbase;
    sym = sym_new();
    obj = sym_object_add(sym, DATAFIX, "");
    sd = sym_data_new(sym);
    return sym && sd ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    sym_data_free(sd);
    sym_free(sym);
    dlclose(lib);
    return 0;
}

/* The object at the address of variable name plus off. */
static void at(const char *name, uint64_t off, sym_dref_t *r)
{
    void *p = dlsym(lib, name);
    assert_non_null(p);
    sym_data_static(sd, obj, (uint64_t)((uintptr_t)p - base) + off, r);
}

static void expect(const char *name, uint64_t off, const char *desc, int levels, int scalar)
{
    sym_dref_t r;
    at(name, off, &r);
    assert_int_equal(r.reason, 0);
    assert_string_equal(r.desc, desc);
    assert_int_equal(r.nlevels, levels);
    assert_int_equal(r.scalar, scalar);
    assert_int_equal(r.kind, SYM_DATA_STATIC);
    assert_string_equal(r.var, name);
}

static void test_descriptors(void **state)
{
    (void)state;
    expect("gi", 0, "{int gi}", 1, 1);
    expect("gi", 3, "{int gi}", 1, 1);
    expect("gu", 0, "{unsigned_int gu}", 1, 1);          /* spaces become '_' */
    expect("gc", 0, "{const+int gc}", 1, 1);
    expect("gcp", 0, "{const+pointer+int gcp}", 1, 1);   /* int *const */
    expect("gpc", 0, "{pointer+const+int gpc}", 1, 1);   /* const int * */
    expect("gsz", 0, "{my_size gsz}", 1, 1);             /* a typedef by its name */
    /* a structure: named by its type, then the member, nested down to a scalar */
    expect("gouter", 0, "{structure:outer}.{int a}", 2, 0);
    expect("gouter", offsetof(struct { int a; struct { short s; double d; } in; }, in) + 8,
           "{structure:outer}.{structure:inner in}.{double d}", 3, 0);
    expect("gouter", 8 + 16 + 2 * sizeof(long), "{structure:outer}.{array+long_int arr}.{long_int -}",
           3, 0);
    expect("gun", 0, "{union:number}.{int i}", 2, 0);
    expect("ganon", 4, "{structure:-}.{int y}", 2, 0);
    /* the levels are the prefixes: the aggregates containing the object */
    sym_dref_t r;
    at("gouter", 16, &r);
    assert_int_equal(r.nlevels, 3);
    assert_int_equal(r.end[0], strlen("{structure:outer}"));
    assert_int_equal(r.end[1], strlen("{structure:outer}.{structure:inner in}"));
    assert_true(r.has_agg);
    /* padding inside: the aggregate itself */
    at("gouter", 4, &r); /* the hole between a and in */
    assert_int_equal(r.reason, 0);
    assert_string_equal(r.desc, "{structure:outer}");
}

static void test_layout(void **state)
{
    (void)state;
    sym_dref_t r;
    at("gouter", 0, &r);
    sym_member_t *m;
    size_t n;
    uint64_t size;
    assert_int_equal(sym_data_layout(sd, obj, r.agg, &m, &n, &size), 0);
    assert_int_equal(size, 64);
    assert_int_equal(n, 4);
    const char *want[4] = { "{int a}", "{structure:inner in}", "{array+long_int arr}",
                            "{char tail}" };
    const uint64_t off[4] = { 0, 8, 24, 56 }, sz[4] = { 4, 16, 32, 1 };
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(m[i].desc, want[i]);
        assert_int_equal(m[i].offset, off[i]);
        assert_int_equal(m[i].size, sz[i]);
    }
    free(m);
}

static void test_reasons(void **state)
{
    (void)state;
    sym_dref_t r;
    /* code: no variable there */
    void *f = dlsym(lib, "data_fixture_sum");
    sym_data_static(sd, obj, (uint64_t)((uintptr_t)f - base), &r);
    assert_int_equal(r.reason, EXP_DUNK_UNDETERMINABLE);
    /* an object without DWARF: reason 1 */
    uint32_t none = sym_object_add(sym, "/nonexistent/libnothing.so", "");
    sym_dquery_t q;
    memset(&q, 0, sizeof q);
    q.pc = 0x1000;
    q.op.base = 0;
    q.op.index = BT_REG_NONE;
    sym_data_at(sd, none, &q, &r);
    assert_int_equal(r.reason, EXP_DUNK_NO_DEBUG);
}

/* Thread-locals by their offset in the library's TLS block (this thread's block: dlinfo). */
static void test_tls(void **state)
{
    (void)state;
    long (*sum)(void) = (long (*)(void))dlsym(lib, "data_fixture_sum");
    assert_non_null(sum);
    assert_true(sum() != 0); /* a use allocates this thread's block */
    char *blk = NULL;
    assert_int_equal(dlinfo(lib, RTLD_DI_TLS_DATA, &blk), 0);
    assert_non_null(blk);
    char *first = dlsym(lib, "tl_first"), *inner = dlsym(lib, "tl_inner");
    assert_non_null(first);
    assert_non_null(inner);
    sym_dref_t r;
    assert_int_equal(sym_data_tls(sd, obj, (uint64_t)(first - blk), &r), 1);
    assert_int_equal(r.reason, 0);
    assert_string_equal(r.desc, "{long_int tl_first}");
    assert_int_equal(r.kind, SYM_DATA_TLS);
    assert_int_equal(r.scalar, 1);
    assert_int_equal(sym_data_tls(sd, obj, (uint64_t)(inner - blk) + 8, &r), 1);
    assert_string_equal(r.desc, "{structure:inner}.{double d}");
    assert_string_equal(r.var, "tl_inner");
    /* beyond the block: not this object's thread-local data */
    assert_int_equal(sym_data_tls(sd, obj, 1u << 20, &r), 0);
    /* an object without a TLS block */
    uint32_t none = sym_object_add(sym, "/nonexistent/libnothing.so", "");
    assert_int_equal(sym_data_tls(sd, none, 0, &r), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_descriptors),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_reasons),
        cmocka_unit_test(test_tls),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
