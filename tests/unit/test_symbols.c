/*
 * test_symbols.c - symbolization on real ELF files: functions of this test program (global and
 * static) and of libc, the same id for every address inside a function, source lines (DWARF 5 as
 * gcc 12 emits it, and DWARF 4), C++ names, a stripped library (call-frame ranges, gaps, a
 * zero-sized symbol), a separate debug file found by .gnu_debuglink, the vDSO, inlined code and
 * its call sites, PLT stubs, and the fallbacks:
 * a missing file, a non-ELF file, an ELF file without symbols, a changed build-id.
 *
 * The fixture libraries (tests/unit/symbols_fixture*.c*) are dlopened from SYMFIX_DIR.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
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

/* A fixture library of SYMFIX_DIR: its handle, path and load bias. */
typedef struct fixture {
    void *h;
    char path[4096];
    uint64_t bias;
} fixture_t;

static void fixture_open(fixture_t *fx, const char *name)
{
    snprintf(fx->path, sizeof fx->path, "%s/%s", SYMFIX_DIR, name);
    fx->h = dlopen(fx->path, RTLD_NOW | RTLD_LOCAL);
    if (!fx->h)
        fail_msg("%s", dlerror());
    char p[4096];
    fx->bias = bias_of(dlsym(fx->h, "fix_global") ? dlsym(fx->h, "fix_global")
                                                    : dlsym(fx->h, "cxxfix_hidden_addr"),
                       p, sizeof p);
}

/* The ELF address of fixture symbol name (a function), or of what its getter returns. */
static uint64_t fix_addr(const fixture_t *fx, const char *name)
{
    void *p = dlsym(fx->h, name);
    assert_non_null(p);
    return (uint64_t)(uintptr_t)p - fx->bias;
}

static uint64_t fix_getter(const fixture_t *fx, const char *getter)
{
    void *(*g)(void) = (void *(*)(void))dlsym(fx->h, getter);
    assert_non_null(g);
    return (uint64_t)(uintptr_t)g() - fx->bias;
}

static int fix_line(const fixture_t *fx, const char *getter)
{
    int (*g)(void) = (int (*)(void))dlsym(fx->h, getter);
    assert_non_null(g);
    return g();
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
    assert_int_equal(f, 0); /* dense ids from 0, in order of first lookup */
    const sym_func_t *fn = sym_func(s, f);
    assert_string_equal(fn->name, "symbols_test_global");
    assert_string_equal(fn->long_name, "symbols_test_global");
    assert_string_equal(fn->mangled, "symbols_test_global");
    assert_int_equal(fn->addr, a);
    assert_true(fn->size > 0);
    assert_int_equal(fn->object, obj);
    assert_int_equal(sym_func_at(s, obj, a + 3), f); /* inside: the same function */
    assert_int_equal(sym_func_at(s, obj, a + fn->size - 1), f);
    assert_int_equal(sym_object(s, obj)->status, SYM_OBJ_OK);
    assert_string_equal(sym_object(s, obj)->message, "");
    uint32_t g = sym_func_at(s, obj, (uint64_t)(uintptr_t)symbols_test_static - bias);
    assert_int_equal(g, 1);
    assert_string_equal(sym_func(s, g)->name, "symbols_test_static");
    assert_int_equal(sym_nfuncs(s), 2);
    assert_ptr_equal(sym_func(s, f), fn); /* pointers stay valid */
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
    uint64_t a = (uint64_t)(uintptr_t)fn - bias;
    uint32_t f = sym_func_at(s, obj, a);
    assert_non_null(strstr(sym_func(s, f)->name, "qsort"));
    assert_int_equal(sym_func_at(s, obj, a), f);
    const sym_object_t *o = sym_object(s, obj);
    assert_string_equal(o->name, strrchr(path, '/') + 1);
    assert_int_equal(o->status, SYM_OBJ_OK);
    /* malloc has aliases at its address (__libc_malloc, ...): the global without underscores */
    void *m = dlsym(RTLD_DEFAULT, "malloc");
    if (m && bias_of(m, path, sizeof path) == bias)
        assert_string_equal(sym_func(s, sym_func_at(s, obj, (uint64_t)(uintptr_t)m - bias))->name,
                            "malloc");
    /* an address before every symbol still names a function, the same one each time */
    uint32_t h1 = sym_func_at(s, obj, 0x10), h2 = sym_func_at(s, obj, 0x11);
    assert_int_equal(h1, h2);
    assert_non_null(strstr(sym_func(s, h1)->name, "<static>@0x"));
    /* with libc6-dbg (the Debian image has it) the symbols and lines come from the debug file */
    if (*o->debugfile) {
        assert_non_null(strstr(o->debugfile, "/usr/lib/debug/.build-id/"));
        const char *file;
        uint32_t line;
        assert_int_equal(sym_line_at(s, obj, a, &file, &line), 0);
        assert_true(line > 0);
    }
    sym_free(s);
}

static void dwarf4_library(void **state)
{
    fixture_t fx;
    fixture_open(&fx, "libsymfix_dw4.so");
    sym_ctx_t *s = sym_new();
    uint32_t obj = sym_object_add(s, fx.path, NULL);
    uint64_t a = fix_addr(&fx, "fix_global"), st = fix_getter(&fx, "fix_static_addr");
    assert_string_equal(sym_func(s, sym_func_at(s, obj, a))->name, "fix_global");
    assert_string_equal(sym_func(s, sym_func_at(s, obj, st))->name, "fix_static");
    const char *file;
    uint32_t line;
    assert_int_equal(sym_line_at(s, obj, a, &file, &line), 0);
    assert_non_null(strstr(file, "symbols_fixture.c"));
    assert_int_equal(line, fix_line(&fx, "fix_global_line"));
    assert_int_equal(sym_line_at(s, obj, st, &file, &line), 0);
    assert_int_equal(line, fix_line(&fx, "fix_static_line"));
    /* no line information outside the code */
    assert_int_equal(sym_line_at(s, obj, 0x1, &file, &line), -1);
    /* a symbol without a size covers its code up to the next function */
    uint64_t z = fix_addr(&fx, "fix_nosize");
    uint32_t fz = sym_func_at(s, obj, z + 2);
    assert_string_equal(sym_func(s, fz)->name, "fix_nosize");
    assert_true(sym_func(s, fz)->size >= 5);
    assert_string_equal(sym_func(s, sym_func_at(s, obj, fix_getter(&fx, "fix_nocfi_addr")))->name,
                        "fix_nocfi");
    sym_free(s);
    dlclose(fx.h);
}

static void stripped_library(void **state)
{
    fixture_t fx;
    fixture_open(&fx, "libsymfix_stripped.so");
    sym_ctx_t *s = sym_new();
    uint32_t obj = sym_object_add(s, fx.path, "");
    /* exported functions come from .dynsym */
    uint64_t a = fix_addr(&fx, "fix_global");
    assert_string_equal(sym_func(s, sym_func_at(s, obj, a))->name, "fix_global");
    assert_int_equal(sym_object(s, obj)->status, SYM_OBJ_OK);
    assert_string_equal(sym_object(s, obj)->debugfile, "");
    /* a static function is its call-frame range, named by its start */
    uint64_t st = fix_getter(&fx, "fix_static_addr");
    uint32_t f = sym_func_at(s, obj, st);
    char want[128];
    snprintf(want, sizeof want, "<static>@0x%llx (libsymfix_stripped.so)", (unsigned long long)st);
    assert_string_equal(sym_func(s, f)->name, want);
    assert_string_equal(sym_func(s, f)->long_name, want);
    assert_string_equal(sym_func(s, f)->mangled, want);
    assert_int_equal(sym_func(s, f)->addr, st);
    assert_true(sym_func(s, f)->size > 0);
    assert_int_equal(sym_func_at(s, obj, st + 1), f);
    assert_int_equal(sym_func_at(s, obj, st + sym_func(s, f)->size - 1), f);
    /* code with neither symbol nor call-frame information: the gap around it */
    uint64_t nc = fix_getter(&fx, "fix_nocfi_addr");
    uint32_t g = sym_func_at(s, obj, nc);
    assert_int_not_equal(g, f);
    const sym_func_t *gf = sym_func(s, g);
    assert_non_null(strstr(gf->name, "<static>@0x"));
    assert_non_null(strstr(gf->name, " (libsymfix_stripped.so)"));
    assert_true(gf->addr <= nc && nc < gf->addr + gf->size);
    assert_int_equal(sym_func_at(s, obj, nc + 4), g);
    /* the zero-sized exported symbol still covers its code */
    assert_string_equal(sym_func(s, sym_func_at(s, obj, fix_addr(&fx, "fix_nosize") + 2))->name,
                        "fix_nosize");
    /* no DWARF: no lines */
    const char *file;
    uint32_t line;
    assert_int_equal(sym_line_at(s, obj, a, &file, &line), -1);
    sym_free(s);
    dlclose(fx.h);
}

static void debuglink_library(void **state)
{
    fixture_t fx;
    fixture_open(&fx, "libsymfix_debuglink.so");
    sym_ctx_t *s = sym_new();
    uint32_t obj = sym_object_add(s, fx.path, "");
    uint64_t st = fix_getter(&fx, "fix_static_addr");
    assert_string_equal(sym_func(s, sym_func_at(s, obj, st))->name, "fix_static");
    const sym_object_t *o = sym_object(s, obj);
    assert_int_equal(o->status, SYM_OBJ_OK);
    assert_non_null(strstr(o->debugfile, "/.debug/libsymfix_debuglink.so.debug"));
    const char *file;
    uint32_t line;
    assert_int_equal(sym_line_at(s, obj, st, &file, &line), 0);
    assert_non_null(strstr(file, "symbols_fixture.c"));
    assert_int_equal(line, fix_line(&fx, "fix_static_line"));
    /* this library has no build-id: one recorded means it is not the same file */
    uint32_t other = sym_object_add(s, fx.path, "abcdef0123456789");
    assert_int_not_equal(other, obj);
    assert_int_equal(sym_object(s, other)->status, SYM_OBJ_CHANGED);
    assert_non_null(strstr(sym_object(s, other)->message, "none on disk"));
    sym_free(s);
    dlclose(fx.h);
}

static void cxx_names(void **state)
{
    fixture_t fx;
    fixture_open(&fx, "libsymfix_cxx.so");
    sym_ctx_t *s = sym_new();
    uint32_t obj = sym_object_add(s, fx.path, "");
    static const struct {
        const char *mangled, *long_name, *name;
    } cases[] = {
        { "_ZNK5fixns6WidgetIiE3getEi", "fixns::Widget<int>::get(int) const",
          "fixns::Widget<int>::get" },
        { "_ZN5fixns5twiceIiEET_S1_", "int fixns::twice<int>(int)", "fixns::twice<int>" },
        { "_ZNK5fixns5AdderclEi", "fixns::Adder::operator()(int) const",
          "fixns::Adder::operator()" },
        { "_ZN5fixnslsIiEEbRKNS_6WidgetIT_EEi",
          "bool fixns::operator<< <int>(fixns::Widget<int> const&, int)",
          "fixns::operator<< <int>" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const sym_func_t *f = sym_func(s, sym_func_at(s, obj, fix_addr(&fx, cases[i].mangled)));
        assert_string_equal(f->mangled, cases[i].mangled);
        assert_string_equal(f->long_name, cases[i].long_name);
        assert_string_equal(f->name, cases[i].name);
    }
    const sym_func_t *h = sym_func(s, sym_func_at(s, obj, fix_getter(&fx, "cxxfix_hidden_addr")));
    assert_string_equal(h->long_name, "(anonymous namespace)::hidden(int)");
    assert_string_equal(h->name, "(anonymous namespace)::hidden");
    /* the cold part of a function split by the compiler keeps its clone suffix */
    int (*split)(int) = (int (*)(int))dlsym(fx.h, "cxxfix_split");
    assert_non_null(split);
    split(12345);
    void **ra = dlsym(fx.h, "cxxfix_cold_ra");
    assert_non_null(ra);
    const sym_func_t *c = sym_func(s, sym_func_at(s, obj, (uint64_t)(uintptr_t)*ra - fx.bias - 1));
    if (strstr(c->mangled, ".cold")) {
        assert_string_equal(c->long_name, "fixns::split(int) [clone .cold]");
        assert_string_equal(c->name, "fixns::split [clone .cold]");
    } else {
        assert_string_equal(c->name, "fixns::split"); /* the compiler did not split it */
    }
    sym_free(s);
    dlclose(fx.h);
}

/* A test that cannot run here says why and is counted: main() then exits 77, which CTest
 * reports as skipped (SKIP_RETURN_CODE), never as passed. */
static int skipped;
#define SKIP_BECAUSE(why)                                                                          \
    do {                                                                                           \
        print_message("skipped: %s\n", why);                                                      \
        skipped++;                                                                                 \
        skip();                                                                                    \
    } while (0)

static void vdso(void **state)
{
    const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    if (!base)
        SKIP_BECAUSE("no vDSO in the auxiliary vector (valgrind hides it)");
    void *h = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *fn = h ? dlsym(h, "__vdso_clock_gettime") : NULL;
    if (!fn)
        SKIP_BECAUSE("the vDSO has no __vdso_clock_gettime");
    char path[4096];
    uint64_t a = (uint64_t)(uintptr_t)fn - bias_of(fn, path, sizeof path);
    sym_ctx_t *s = sym_new();
    uint32_t obj = sym_object_add(s, "[vdso]", "");
    assert_non_null(strstr(sym_func(s, sym_func_at(s, obj, a))->name, "clock_gettime"));
    assert_int_equal(sym_object(s, obj)->status, SYM_OBJ_OK);
    assert_string_equal(sym_object(s, obj)->name, "[vdso]");
    uint32_t other = sym_object_add(s, "[vdso]", "0123456789abcdef0123456789abcdef01234567");
    sym_func_at(s, other, a);
    assert_int_equal(sym_object(s, other)->status, SYM_OBJ_CHANGED);
    assert_non_null(strstr(sym_object(s, other)->message, "vDSO"));
    sym_free(s);
    dlclose(h);
}

static void fallbacks(void **state)
{
    sym_ctx_t *s = sym_new();
    uint32_t missing = sym_object_add(s, "/nonexistent/libgone.so", "abcd");
    uint32_t f = sym_func_at(s, missing, 0x1234);
    assert_int_equal(sym_object(s, missing)->status, SYM_OBJ_MISSING);
    assert_non_null(strstr(sym_object(s, missing)->message, "'/nonexistent/libgone.so' no longer exists"));
    assert_string_equal(sym_func(s, f)->name, "<unknown> (libgone.so)");
    assert_int_equal(sym_func(s, f)->object, missing);
    assert_int_equal(sym_func_at(s, missing, 0x9999), f);
    const char *file;
    uint32_t line;
    assert_int_equal(sym_line_at(s, missing, 0x1234, &file, &line), -1);

    char tmp[] = "/tmp/tally-test-symbols-XXXXXX";
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not an ELF file\n", 16), 16);
    close(fd);
    uint32_t junk = sym_object_add(s, tmp, "");
    uint32_t j = sym_func_at(s, junk, 0x10);
    assert_int_equal(sym_object(s, junk)->status, SYM_OBJ_UNREADABLE);
    assert_non_null(strstr(sym_object(s, junk)->message, "not an ELF file"));
    assert_non_null(strstr(sym_func(s, j)->name, "<unknown> (tally-test-symbols-"));
    assert_int_not_equal(j, f);
    unlink(tmp);

    /* an ELF header and nothing else: no symbols, one range for all of it */
    char tiny[] = "/tmp/tally-test-symbols-XXXXXX";
    fd = mkstemp(tiny);
    assert_true(fd >= 0);
    Elf64_Ehdr eh = { .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
                      .e_ehsize = sizeof eh };
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    assert_int_equal(write(fd, &eh, sizeof eh), (ssize_t)sizeof eh);
    close(fd);
    uint32_t bare = sym_object_add(s, tiny, "");
    uint32_t b = sym_func_at(s, bare, 0x1000);
    assert_int_equal(sym_object(s, bare)->status, SYM_OBJ_NOSYMS);
    assert_non_null(strstr(sym_func(s, b)->name, "<static>@0x0 (tally-test-symbols-"));
    assert_int_equal(sym_func_at(s, bare, 0x2000), b);
    unlink(tiny);

    char path[4096] = "";
    bias_of((void *)symbols_test_global, path, sizeof path);
    uint32_t changed = sym_object_add(s, path, "0123456789abcdef0123456789abcdef01234567");
    uint32_t c = sym_func_at(s, changed,
                             (uint64_t)(uintptr_t)symbols_test_global -
                                 bias_of((void *)symbols_test_global, path, sizeof path));
    assert_int_equal(sym_object(s, changed)->status, SYM_OBJ_CHANGED);
    assert_non_null(strstr(sym_object(s, changed)->message, "has changed since it was profiled"));
    assert_non_null(strstr(sym_object(s, changed)->message, "0123456789ab..."));
    assert_string_equal(sym_func(s, c)->name, "symbols_test_global"); /* still read: best effort */

    uint32_t u = sym_func_unknown(s);
    assert_string_equal(sym_func(s, u)->name, "<Unknown>");
    assert_int_equal(sym_func(s, u)->object, UINT32_MAX);
    assert_int_equal(sym_func_unknown(s), u);
    assert_int_equal(sym_func_at(s, 12345, 0x10), u); /* an index no sym_object_add gave */
    sym_free(s);
    sym_free(NULL);
}

/* Inlined code and its call sites (DWARF 4, and DWARF 5 in a separate debug file); a call through
 * the PLT names its stub "func@plt". */
static void record_site(void *ctx, const char *file, uint32_t line)
{
    uint32_t *sites = ctx; /* [0]: how many, then the lines */
    if (strstr(file, "symbols_fixture.c") && sites[0] < 4)
        sites[++sites[0]] = line;
}

static void inlines_and_plt(void **state)
{
    static const char *const libs[] = { "libsymfix_dw4.so", "libsymfix_debuglink.so" };
    for (int v = 0; v < 2; v++) {
        fixture_t fx;
        fixture_open(&fx, libs[v]);
        sym_ctx_t *s = sym_new();
        uint32_t obj = sym_object_add(s, fx.path, NULL);
        uint64_t a = fix_addr(&fx, "fix_inline_caller");
        uint32_t call = fix_line(&fx, "fix_inline_call_line");
        const sym_func_t *caller = sym_func(s, sym_func_at(s, obj, a));
        assert_string_equal(caller->name, "fix_inline_caller");
        int found = 0;
        for (uint64_t x = a; x < a + caller->size && !found; x++) {
            sym_inline_t inl[4];
            int n = sym_inlines_at(s, obj, x, inl, 4);
            if (n < 2)
                continue;
            assert_int_equal(n, 2); /* innermost first, each with the line it was inlined at */
            assert_string_equal(sym_func(s, inl[0].func)->name, "fix_inner");
            assert_int_equal(inl[0].call_line, call - 3);
            assert_string_equal(sym_func(s, inl[1].func)->name, "fix_helper");
            assert_non_null(inl[1].call_file);
            assert_non_null(strstr(inl[1].call_file, "symbols_fixture.c"));
            assert_int_equal(inl[1].call_line, call);
            const char *file;
            uint32_t line;
            assert_int_equal(sym_line_at(s, obj, x, &file, &line), 0); /* the inner line */
            assert_int_equal(line, call - 4);
            found = 1;
        }
        assert_true(found);
        uint32_t sites[5] = { 0 };
        assert_int_equal(sym_inline_sites(s, obj, a, record_site, sites), 0);
        assert_true(sites[0] >= 2); /* both levels (once per address range) */
        int outer = 0, inner = 0;
        for (uint32_t k = 1; k <= sites[0] && k < 5; k++) {
            outer |= sites[k] == call;
            inner |= sites[k] == call - 3;
        }
        assert_true(outer && inner);
        /* the call in fix_plt_call goes to a PLT stub */
        uint64_t p = fix_addr(&fx, "fix_plt_call");
        unsigned char code[64];
        long got = sym_read_code(s, obj, p, code, sizeof code);
        assert_true(got > 5);
        const char *stub = NULL;
        for (long i = 0; i + 5 <= got && !stub; i++) {
            if (code[i] != 0xe8 && code[i] != 0xe9)
                continue;
            int32_t rel;
            memcpy(&rel, code + i + 1, 4);
            const sym_func_t *t = sym_func(s, sym_func_at(s, obj, p + (uint64_t)i + 5 + rel));
            if (strstr(t->name, "@plt"))
                stub = t->name;
        }
        assert_non_null(stub);
        assert_string_equal(stub, "getenv@plt");
        sym_free(s);
        dlclose(fx.h);
    }
}

/* test_symbols [name]: every test but vdso, or only the tests matching name (CTest runs vdso on its
 * own, so that its skip on a machine without a vDSO does not hide the others' results). */
int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    else
        cmocka_set_skip_filter("vdso");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(own_functions),     cmocka_unit_test(libc_function),
        cmocka_unit_test(dwarf4_library),    cmocka_unit_test(stripped_library),
        cmocka_unit_test(debuglink_library), cmocka_unit_test(cxx_names),
        cmocka_unit_test(vdso),              cmocka_unit_test(fallbacks),
        cmocka_unit_test(inlines_and_plt),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    return failed ? failed : skipped ? 77 : 0;
}
