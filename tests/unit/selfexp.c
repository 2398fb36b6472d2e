/*
 * selfexp.c - synthetic experiments made of the test program's own code (see selfexp.h).
 */
#define _GNU_SOURCE
#include "selfexp.h"

#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "experiment/evwriter.h"
#include "experiment/logfile.h"

uint64_t selfexp_pc_in(void *f) { return (uint64_t)(uintptr_t)f + 1; }

static void write_log(const char *dir)
{
    Dl_info di;
    assert_true(dladdr((void *)selfexp_pc_in, &di) != 0);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = 0;
    const Elf64_Ehdr *eh = di.dli_fbase;
    uint64_t base = (uint64_t)(uintptr_t)di.dli_fbase;
    uint64_t bias = eh->e_type == ET_DYN ? base : 0;

    char path[PATH_MAX], buf[4096];
    snprintf(path, sizeof path, "%s/log", dir);
    int fd = exp_log_create(path);
    assert_true(fd >= 0);
    exp_line_t l;
    exp_line_begin(&l, buf, sizeof buf, "start");
    exp_line_u64(&l, "t", 1000);
    exp_line_u64(&l, "pid", 42);
    assert_int_equal(exp_line_write(&l, fd), 0);
    exp_line_begin(&l, buf, sizeof buf, "settings");
    exp_line_u64(&l, "clock", 1000000);
    assert_int_equal(exp_line_write(&l, fd), 0);
    exp_line_begin(&l, buf, sizeof buf, "load");
    exp_line_u64(&l, "t", 1000);
    exp_line_u64(&l, "id", 0);
    exp_line_str(&l, "path", exe);
    exp_line_hex(&l, "lo", base);
    exp_line_hex(&l, "hi", base + (256u << 20));
    exp_line_hex(&l, "bias", bias);
    assert_int_equal(exp_line_write(&l, fd), 0);
    exp_line_begin(&l, buf, sizeof buf, "end");
    exp_line_u64(&l, "t", 9000);
    exp_line_str(&l, "how", "exit");
    exp_line_u64(&l, "status", 0);
    assert_int_equal(exp_line_write(&l, fd), 0);
    close(fd);
}

void selfexp_write(const char *dir, const selfexp_stack_t *stacks, unsigned nstacks)
{
    assert_int_equal(mkdir(dir, 0755), 0);
    write_log(dir);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/events", dir);
    exp_evfile_t f;
    assert_int_equal(exp_evfile_create(&f, path, 42, 1000, 4096), 0);
    exp_stream_t s;
    exp_stream_init(&s, &f, 42);
    uint64_t t = 2000;
    for (unsigned i = 0; i < nstacks; i++) {
        uint32_t id;
        assert_int_equal(exp_stream_stack(&s, stacks[i].pcs, stacks[i].n, 0, &id), 0);
        assert_int_equal(exp_stream_clock(&s, t += 1000, id, 0, stacks[i].weight), 0);
    }
    exp_stream_finish(&s, t + 1000);
    exp_evfile_close(&f);
}

int selfexp_remove(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}
