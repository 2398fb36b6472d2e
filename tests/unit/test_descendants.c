/*
 * test_descendants.c - how the reader orders and numbers the processes of an experiment
 * (src/experiment/reader.c): the root first, then its descendants depth first, the fork children
 * (_f<n>) before the new images (_x<n>), each by number (_f2 before _f10), each process's index
 * its position and its parent the index of the directory it is in. Directories that are not
 * descendants (no leading '_', no .tally) are not read.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "experiment/logfile.h"
#include "experiment/logrec.h"
#include "experiment/reader.h"

static char root[256];

/* Makes the experiment directory rel (under root; "" for the root) with a log of process pid. */
static void make_exp(const char *rel, uint64_t pid)
{
    char d[1024], path[1100], buf[512];
    snprintf(d, sizeof d, "%s%s%s", root, *rel ? "/" : "", rel);
    assert_int_equal(mkdir(d, 0755), 0);
    snprintf(path, sizeof path, "%s/log", d);
    int fd = exp_log_create(path);
    assert_true(fd >= 0);
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_START);
    exp_line_u64(&l, EXP_KEY_T, 1000 + pid);
    exp_line_u64(&l, EXP_KEY_PID, pid);
    assert_int_equal(exp_line_write(&l, fd), 0);
    exp_line_begin(&l, buf, sizeof buf, EXP_LOG_END);
    exp_line_u64(&l, EXP_KEY_T, 9000);
    exp_line_str(&l, EXP_KEY_HOW, "exit");
    exp_line_u64(&l, EXP_KEY_STATUS, 0);
    assert_int_equal(exp_line_write(&l, fd), 0);
    close(fd);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd);
}

static void test_order(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/tally-test-desc-%d.tally", getpid());
    /* created in an order unlike the one expected (readdir's order is the file system's) */
    make_exp("", 1);
    make_exp("_x1.tally", 60);
    make_exp("_f10.tally", 50);
    make_exp("_f2.tally", 20);
    make_exp("_f1.tally", 10);
    make_exp("_f2.tally/_x2.tally", 32);
    make_exp("_f2.tally/_f1.tally", 30);
    make_exp("_f2.tally/_x1.tally", 31);
    make_exp("_f2.tally/_f1.tally/_f1.tally", 40);
    char other[600];
    snprintf(other, sizeof other, "%s/archive", root); /* not a descendant */
    assert_int_equal(mkdir(other, 0755), 0);
    snprintf(other, sizeof other, "%s/_f3.tally.tmp", root); /* not a descendant either */
    assert_int_equal(mkdir(other, 0755), 0);

    exp_experiment_t *e = NULL;
    tally_err_t err = { 0 };
    assert_int_equal(exp_open(root, &e, &err), 0);
    static const struct {
        const char *name;
        uint32_t pid;
        int32_t parent;
    } want[] = {
        { "", 1, -1 },
        { "_f1.tally", 10, 0 },
        { "_f2.tally", 20, 0 },
        { "_f2.tally/_f1.tally", 30, 2 },
        { "_f2.tally/_f1.tally/_f1.tally", 40, 3 },
        { "_f2.tally/_x1.tally", 31, 2 },
        { "_f2.tally/_x2.tally", 32, 2 },
        { "_f10.tally", 50, 0 },
        { "_x1.tally", 60, 0 },
    };
    size_t n = sizeof want / sizeof *want;
    for (size_t i = 0; i < e->nprocs; i++)
        print_message("%zu: %s pid %u parent %d\n", i, e->procs[i]->name, e->procs[i]->pid,
                      e->procs[i]->parent);
    assert_int_equal(e->nprocs, n);
    for (size_t i = 0; i < n; i++) {
        const exp_process_t *p = e->procs[i];
        assert_string_equal(p->name, want[i].name);
        assert_int_equal(p->pid, want[i].pid);
        assert_int_equal(p->parent, want[i].parent);
        assert_int_equal(p->index, i);
        assert_int_equal(p->ndamage, 0);
    }
    exp_close(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_order, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
