/*
 * test_unwind_remote.c - the sampler's unwinder of blocked threads (collector/unwind_remote.c) on
 * a thread of this test blocked in read() under a few frames of its own: the walk finds those
 * frames, and what it costs in system calls. libunwind reads the call-frame tables a byte at a
 * time, each byte as an aligned word: the walk must copy a page of other memory once, not read
 * the same word again and again (process_vm_readv is wrapped and counted: -Wl,--wrap).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector/unwind_remote.h"
#include "experiment/evformat.h"

/* ---- process_vm_readv, counted ---------------------------------------------------------------- */

#define MAXCALLS 4096
static struct {
    int on;
    unsigned n;
    uint64_t addr[MAXCALLS], len[MAXCALLS];
} rd;

ssize_t __real_process_vm_readv(pid_t pid, const struct iovec *l, unsigned long nl,
                                const struct iovec *r, unsigned long nr, unsigned long flags);
ssize_t __wrap_process_vm_readv(pid_t pid, const struct iovec *l, unsigned long nl,
                                const struct iovec *r, unsigned long nr, unsigned long flags)
{
    if (rd.on && rd.n < MAXCALLS && nr == 1) {
        rd.addr[rd.n] = (uint64_t)(uintptr_t)r[0].iov_base;
        rd.len[rd.n++] = r[0].iov_len;
    }
    return __real_process_vm_readv(pid, l, nl, r, nr, flags);
}

/* ---- a thread blocked under known frames -------------------------------------------------------- */

static int pipefd[2];
static volatile pid_t blocked_tid;
static volatile int sink;

__attribute__((noinline)) static void level3(void)
{
    char c;
    blocked_tid = (pid_t)syscall(SYS_gettid);
    sink += (int)read(pipefd[0], &c, 1); /* blocks until the test writes */
}
__attribute__((noinline)) static void level2(void) { level3(); sink++; }
__attribute__((noinline)) static void level1(void) { level2(); sink++; }

static void *blocked_main(void *arg)
{
    (void)arg;
    level1();
    return NULL;
}

/* The thread's user pc and sp while it is blocked in read (its /proc syscall file). */
static int blocked_at(pid_t tid, uint64_t *sp, uint64_t *pc)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    for (int tries = 0; tries < 2000; tries++) {
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            return -1;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n > 0) {
            buf[n] = 0;
            long nr;
            unsigned long long a[6], s, p;
            if (sscanf(buf, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &nr, &a[0], &a[1],
                       &a[2], &a[3], &a[4], &a[5], &s, &p) == 9 && nr == 0 /* read */) {
                *sp = s;
                *pc = p;
                return 0;
            }
        }
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    return -1;
}

static int within(uint64_t pc, void (*fn)(void))
{
    uint64_t a = (uint64_t)(uintptr_t)fn;
    return pc > a && pc < a + 256; /* a return address inside the (small) function */
}

static void test_blocked_walk(void **state)
{
    (void)state;
    assert_int_equal(pipe(pipefd), 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, blocked_main, NULL), 0);
    while (!blocked_tid) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    uint64_t sp = 0, pc = 0;
    assert_int_equal(blocked_at(blocked_tid, &sp, &pc), 0);

    uint64_t out[64];
    uint32_t flags;
    int spliced;
    static unwind_memo_t memo;
    for (int walk = 0; walk < 2; walk++) { /* the first loads libunwind; both are counted */
        rd.n = 0;
        rd.on = 1;
        uint32_t n = unwind_blocked(pc, sp, NULL, out, 64, &flags, &spliced, &memo);
        rd.on = 0;
        int found = 0;
        for (uint32_t i = 0; i < n; i++)
            found |= within(out[i], level2) << 0 | within(out[i], level1) << 1;
        assert_int_equal(found, 3); /* level3's callers, through the blocked read */
        /* no page of memory outside the stack is read twice within a walk, and nothing is read a
         * word at a time twice: every call reads something not read before in the walk */
        uint64_t base = sp & ~(uint64_t)4095;
        for (unsigned i = 0; i < rd.n; i++) {
            if (rd.addr[i] >= base && rd.addr[i] < base + 64 * 4096)
                continue; /* the stack: copied a page at a time, on demand */
            for (unsigned j = 0; j < i; j++) {
                if (rd.addr[j] >= base && rd.addr[j] < base + 64 * 4096)
                    continue;
                uint64_t lo = rd.addr[j], hi = rd.addr[j] + rd.len[j];
                if (rd.addr[i] >= lo && rd.addr[i] < hi) {
                    fail_msg("walk %d: call %u read %#llx again (call %u read %#llx, %llu bytes)",
                             walk, i, (unsigned long long)rd.addr[i], j,
                             (unsigned long long)rd.addr[j], (unsigned long long)rd.len[j]);
                }
            }
        }
        printf("walk %d: %u frames, %u reads of memory\n", walk, n, rd.n);
    }
    /* the memo of the second walk says the same walk again would read the same */
    assert_true(unwind_memo_same(&memo, pc, sp, NULL));
    assert_int_equal(write(pipefd[1], "x", 1), 1);
    pthread_join(th, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocked_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
