/*
 * test_backtrack.c - backtracking on crafted x86-64 instruction sequences: the trigger found at
 * the PC or before it, every reason it stops for, and the effective address computed from the
 * registers, undoing what the instructions after the trigger added to them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "analyzer/backtrack.h"

static csh cs;

static int setup(void **state)
{
    (void)state;
    return bt_open(&cs);
}

static int teardown(void **state)
{
    (void)state;
    cs_close(&cs);
    return 0;
}

/* Decodes hex (spaces allowed) at ELF address lo. */
static void decode(const char *hex, uint64_t lo, bt_func_t *f)
{
    uint8_t code[256];
    size_t n = 0;
    for (const char *p = hex; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        unsigned v;
        assert_int_equal(sscanf(p, "%2x", &v), 1);
        code[n++] = (uint8_t)v;
        p += 2;
    }
    assert_int_equal(bt_func_decode(cs, code, n, lo, f), 0);
}

/* mov 0x30(%rax),%rax; add $1,%rdx; test %rax,%rax; jne 0x1000; ret: a linked-list walk */
static const char *list_loop = "488b4030 4883c201 4885c0 75f3 c3";

static void test_at_pc(void **state)
{
    (void)state;
    bt_func_t f;
    decode(list_loop, 0x1000, &f);
    uint64_t regs[EXP_MREF_NREGS] = { 0 };
    regs[0] = 0x5000;
    bt_result_t r;
    /* a clock sample waiting at the load: the load itself, registers its own */
    bt_find(cs, &f, 0x1000, BT_AT_PC, regs, 0xffff, &r);
    assert_int_equal(r.reason, 0);
    assert_int_equal(r.trigger, 0x1000);
    assert_int_equal(r.distance, 0);
    assert_int_equal(r.op.base, 0);
    assert_int_equal(r.op.index, BT_REG_NONE);
    assert_int_equal(r.op.disp, 0x30);
    assert_int_equal(r.op.size, 8);
    assert_false(r.op.write);
    assert_true(r.ea_ok);
    assert_int_equal(r.ea, 0x5030);
    assert_true(r.base_ok);
    assert_int_equal(r.base_value, 0x5000);
    /* one instruction later: the load is found, but it overwrote its own base register */
    bt_find(cs, &f, 0x1004, BT_AT_PC, regs, 0xffff, &r);
    assert_int_equal(r.reason, 0);
    assert_int_equal(r.trigger, 0x1000);
    assert_int_equal(r.distance, 1);
    assert_int_equal(r.op.disp, 0x30);
    assert_false(r.ea_ok);
    assert_int_equal(r.ea_reason, EXP_DUNK_REG_CHANGED);
    /* at the jne, through test and add */
    bt_find(cs, &f, 0x100b, BT_BEFORE_PC, regs, 0xffff, &r);
    assert_int_equal(r.reason, 0);
    assert_int_equal(r.distance, 3);
    /* after the jne: stopped by the jump */
    bt_find(cs, &f, 0x100d, BT_BEFORE_PC, regs, 0xffff, &r);
    assert_int_equal(r.reason, EXP_DUNK_JUMP_CALL);
    /* nothing before the first instruction */
    bt_find(cs, &f, 0x1000, BT_BEFORE_PC, regs, 0xffff, &r);
    assert_int_equal(r.reason, EXP_DUNK_OUT_OF_RANGE);
    /* not an instruction boundary */
    bt_find(cs, &f, 0x1002, BT_AT_PC, regs, 0xffff, &r);
    assert_int_equal(r.reason, EXP_DUNK_BAD_TARGET);
    /* precise: the PC must be the trigger */
    bt_find(cs, &f, 0x1004, BT_EXACT, regs, 0xffff, &r);
    assert_int_equal(r.reason, EXP_DUNK_NOT_MEMREF);
    bt_find(cs, &f, 0x1000, BT_EXACT, regs, 0xffff, &r);
    assert_int_equal(r.reason, 0);
    /* registers not recorded: the trigger, no address */
    bt_find(cs, &f, 0x1000, BT_AT_PC, regs, 0, &r);
    assert_int_equal(r.reason, 0);
    assert_false(r.ea_ok);
    assert_int_equal(r.ea_reason, EXP_DUNK_NO_VA);
    bt_func_free(&f);
}

static void test_undo(void **state)
{
    (void)state;
    bt_func_t f;
    /* mov (%rax,%rbx,8),%rcx; inc %rbx; add $0x10,%rax; nop; ret */
    decode("488b0cd8 48ffc3 4883c010 90 c3", 0x2000, &f);
    uint64_t regs[EXP_MREF_NREGS] = { 0 };
    regs[0] = 0x7010; /* rax after the add */
    regs[3] = 4;      /* rbx after the inc */
    bt_result_t r;
    bt_find(cs, &f, 0x200b, BT_BEFORE_PC, regs, 0xffff, &r);
    assert_int_equal(r.reason, 0);
    assert_int_equal(r.trigger, 0x2000);
    assert_int_equal(r.op.index, 3);
    assert_int_equal(r.op.scale, 8);
    assert_true(r.ea_ok);
    assert_int_equal(r.ea, 0x7000 + 3 * 8);
    assert_int_equal(r.base_value, 0x7000);
    /* the trigger's destination is not one of its address registers: it does not matter */
    bt_find(cs, &f, 0x2004, BT_BEFORE_PC, regs, 0xffff, &r);
    assert_true(r.ea_ok);
    assert_int_equal(r.ea, 0x7010 + 4 * 8);
    bt_func_free(&f);
}

static void test_branch_target(void **state)
{
    (void)state;
    bt_func_t f;
    /* mov (%rdi),%rax; L: add %rax,%rdx; dec %rcx; jne L; ret */
    decode("488b07 4801c2 48ffc9 75f8 c3", 0x3000, &f);
    uint64_t regs[EXP_MREF_NREGS] = { 0 };
    bt_result_t r;
    bt_find(cs, &f, 0x3006, BT_BEFORE_PC, regs, 0xffff, &r);
    assert_int_equal(r.reason, EXP_DUNK_BRANCH_TARGET);
    /* a PC at the target itself: the skid may have come by the jump (arriving at a target, as
     * the list loop's trigger is one, is fine: test_at_pc) */
    bt_find(cs, &f, 0x3003, BT_BEFORE_PC, regs, 0xffff, &r);
    assert_int_equal(r.reason, EXP_DUNK_BRANCH_TARGET);
    bt_func_free(&f);
}

static void test_static_and_tls(void **state)
{
    (void)state;
    bt_func_t f;
    /* mov 0xff9(%rip),%rax; mov %fs:-8,%rax; ret */
    decode("488b05f90f0000 64488b0425f8ffffff c3", 0x4000, &f);
    uint64_t regs[EXP_MREF_NREGS] = { 0 };
    regs[EXP_MREF_REG_FSBASE] = 0x7f0000001000ull;
    bt_result_t r;
    bt_find(cs, &f, 0x4000, BT_AT_PC, regs, 0, &r);
    assert_int_equal(r.reason, 0);
    assert_int_equal(r.op.base, BT_REG_RIP);
    assert_true(r.ea_static);
    assert_int_equal(r.ea_elf, 0x5000);
    bt_find(cs, &f, 0x4007, BT_AT_PC, regs, 1u << EXP_MREF_REG_FSBASE, &r);
    assert_int_equal(r.reason, 0);
    assert_true(r.op.fs);
    assert_true(r.ea_ok);
    assert_int_equal(r.ea, 0x7f0000000ff8ull);
    bt_func_free(&f);
}

static void test_range_and_nonmemory(void **state)
{
    (void)state;
    char hex[512] = "";
    /* 17 nops that name memory (nopl 0(%rax,%rax,1)) and a lea: none is a trigger */
    for (int i = 0; i < 17; i++)
        strcat(hex, "0f1f440000 ");
    strcat(hex, "488d04c0 c3");
    bt_func_t f;
    decode(hex, 0x6000, &f);
    uint64_t regs[EXP_MREF_NREGS] = { 0 };
    bt_result_t r;
    bt_find(cs, &f, 0x6000 + 17 * 5, BT_AT_PC, regs, 0xffff, &r);
    assert_int_equal(r.reason, EXP_DUNK_OUT_OF_RANGE);
    /* bytes that do not decode: the PC is not among the instructions */
    decode("06 488b00 c3", 0x7000, &f);
    bt_find(cs, &f, 0x7001, BT_AT_PC, regs, 0xffff, &r);
    assert_int_equal(r.reason, EXP_DUNK_BAD_TARGET);
    bt_func_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_at_pc),
        cmocka_unit_test(test_undo),
        cmocka_unit_test(test_branch_target),
        cmocka_unit_test(test_static_and_tls),
        cmocka_unit_test(test_range_and_nonmemory),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
