/*
 * symbols_fixture.c - a small library that test_symbols dlopens, built several ways (see
 * tests/CMakeLists.txt): with DWARF 4; stripped, so its static function is known only by its
 * call-frame range; stripped with its symbols and lines in a separate debug file. Keep the
 * one-line functions on one line: the tests expect their line numbers from fix_*_line().
 */
__attribute__((noinline)) static int fix_static(int x) { return x * 7 + 3; }
int fix_static_line(void) { return __LINE__ - 1; }

__attribute__((noinline)) int fix_global(int x) { return fix_static(x) + 1; }
int fix_global_line(void) { return __LINE__ - 1; }

void *fix_static_addr(void) { return (void *)fix_static; }

/* Hand-written code: fix_nocfi has no call-frame information and is hidden (a stripped library
 * has no symbol for it); fix_nosize is an exported function symbol without a size. */
extern void fix_nocfi(void) __attribute__((visibility("hidden")));
void *fix_nocfi_addr(void) { return (void *)fix_nocfi; }

__asm__(".text\n"
        ".p2align 4\n"
        ".globl fix_nocfi\n"
        ".hidden fix_nocfi\n"
        ".type fix_nocfi, @function\n"
        "fix_nocfi:\n"
        "  nop\n  nop\n  nop\n  nop\n  nop\n  nop\n  nop\n  nop\n"
        "  ret\n"
        ".size fix_nocfi, .-fix_nocfi\n"
        ".p2align 4\n"
        ".globl fix_nosize\n"
        ".type fix_nosize, @function\n"
        "fix_nosize:\n"
        "  nop\n  nop\n  nop\n  nop\n"
        "  ret\n");

/* Inlined helpers: fix_inline_caller() inlines fix_helper() at the line fix_inline_call_line()
 * gives, which inlines fix_inner() on the line before. And a call through the PLT: fix_plt_call()
 * calls libc. */
static inline __attribute__((always_inline)) int fix_inner(int x) { return x * x + 11; }
static inline __attribute__((always_inline)) int fix_helper(int x) { return fix_inner(x) * x; }
__attribute__((noinline)) int fix_inline_caller(int x)
{
    return fix_helper(x) * 3;
}
int fix_inline_call_line(void) { return __LINE__ - 2; }

extern char *getenv(const char *);
__attribute__((noinline)) int fix_plt_call(const char *s) { return getenv(s) != 0; }
