/*
 * userns.c - enters a new user namespace after some work, as sandboxes do; unshare(CLONE_NEWUSER)
 * needs a single-threaded process, so the collector's own thread must step aside. Prints
 * "unshare ok" or "unshare failed: <reason>" and exits 0 or 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

static volatile double sink;

int main(void)
{
    for (long i = 0; i < 50000000; i++)
        sink += (double)i;
    if (unshare(CLONE_NEWUSER)) {
        printf("unshare failed: %s\n", strerror(errno));
        return 1;
    }
    for (long i = 0; i < 50000000; i++)
        sink += (double)i;
    printf("unshare ok\n");
    return 0;
}
