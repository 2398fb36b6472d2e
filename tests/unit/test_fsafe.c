/*
 * test_fsafe.c - names taken from untrusted data: which are refused, that a link below the base
 * directory is never followed for reading or writing, that a FIFO or a device is refused without
 * blocking, and that an oversized file is refused.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fsafe.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tally-test-fsafe-%d", getpid());
    return mkdir(dir, 0755);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

static void test_names(void **state)
{
    (void)state;
    assert_true(fs_name_ok("a"));
    assert_true(fs_name_ok("src/usr/include/x.h"));
    assert_true(fs_name_ok("..x/y..") && fs_name_ok(".hidden"));
    const char *bad[] = { "", "/abs", "a/../b", "..", "a/..", "./a", "a/./b", "a//b", "a/" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(fs_name_ok(bad[i]));
    assert_true(fs_buildid_ok("ab") && fs_buildid_ok("0123456789abcdefABCDEF00"));
    assert_false(fs_buildid_ok("") || fs_buildid_ok("abc") || fs_buildid_ok("../../bin/ls") ||
                 fs_buildid_ok("ab/cd") || fs_buildid_ok("zz"));
    char big[200];
    memset(big, 'a', 130);
    big[130] = 0;
    assert_false(fs_buildid_ok(big));
    big[128] = 0;
    assert_true(fs_buildid_ok(big));
}

static void put(const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_links_and_files(void **state)
{
    (void)state;
    char p[512], q[512];
    put("victim", "precious");
    snprintf(p, sizeof p, "%s/base", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    int base = fs_open_dir(p);
    assert_true(base >= 0);
    /* the base itself as a link is refused */
    snprintf(q, sizeof q, "%s/baselink", dir);
    assert_int_equal(symlink(p, q), 0);
    assert_int_equal(fs_open_dir(q), -ELOOP);
    /* directories: created one component at a time; a link component is refused */
    int d = fs_mkdirs_at(base, "src/usr/include");
    assert_true(d >= 0);
    close(d);
    snprintf(q, sizeof q, "%s/base/src/out", dir);
    assert_int_equal(symlink(dir, q), 0);
    assert_int_equal(fs_mkdirs_at(base, "src/out/x"), -ELOOP);
    assert_int_equal(fs_mkdirs_at(base, "src/../x"), -EINVAL);
    /* reading: a link anywhere is refused, so are a FIFO and a device, and a file over max */
    snprintf(q, sizeof q, "%s/base/link", dir);
    snprintf(p, sizeof p, "%s/victim", dir);
    assert_int_equal(symlink(p, q), 0);
    assert_int_equal(fs_open_read_at(base, "link", 0), -ELOOP);
    assert_int_equal(fs_open_read_at(base, "src/out/victim", 0), -ELOOP);
    snprintf(q, sizeof q, "%s/base/fifo", dir);
    assert_int_equal(mkfifo(q, 0644), 0);
    assert_int_equal(fs_open_read_at(base, "fifo", 0), -FS_ENOTREG);
    assert_int_equal(fs_open_read(q, 0), -FS_ENOTREG);
    assert_int_equal(fs_open_read("/dev/zero", 0), -FS_ENOTREG);
    put("base/file", "0123456789");
    int fd = fs_open_read_at(base, "file", 10);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(fs_open_read_at(base, "file", 9), -EFBIG);
    /* writing: a planted link is removed, never written through */
    snprintf(q, sizeof q, "%s/base/x.tmp", dir);
    assert_int_equal(symlink(p, q), 0);
    int replaced, was_link;
    fd = fs_create_at(base, "x.tmp", &replaced, &was_link);
    assert_true(fd >= 0);
    assert_true(replaced && was_link);
    assert_int_equal(write(fd, "copy", 4), 4);
    close(fd);
    char text[32] = "";
    FILE *f = fopen(p, "r");
    assert_non_null(fgets(text, sizeof text, f));
    fclose(f);
    assert_string_equal(text, "precious");
    /* appending: not through a link, not to a file with other hard links */
    snprintf(q, sizeof q, "%s/base/index", dir);
    assert_int_equal(symlink(p, q), 0);
    assert_int_equal(fs_append_at(base, "index"), -ELOOP);
    unlink(q);
    assert_int_equal(link(p, q), 0);
    assert_int_equal(fs_append_at(base, "index"), -EMLINK);
    unlink(q);
    fd = fs_append_at(base, "index");
    assert_true(fd >= 0);
    close(fd);
    close(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test_setup_teardown(test_links_and_files, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
