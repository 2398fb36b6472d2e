/*
 * bigexec.c - execs a program with arguments of a given total length, near the kernel's limit,
 * and an environment of its own ("X=1"): wl_bigexec <bytes> <program>. The arguments are
 * strings of 'a' of at most 100000 bytes (one string may not exceed 128 KiB). If the exec fails,
 * prints why and exits 126.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    size_t total = strtoull(argv[1], NULL, 10), chunk = 100000;
    size_t nargs = total / chunk + 2;
    char **args = calloc(nargs + 2, sizeof *args);
    size_t k = 0;
    args[k++] = argv[2];
    for (size_t left = total; left;) {
        size_t n = left < chunk ? left : chunk;
        char *a = malloc(n + 1);
        memset(a, 'a', n);
        a[n] = 0;
        args[k++] = a;
        left -= n;
    }
    args[k] = NULL;
    char *env[] = { "X=1", NULL };
    execve(argv[2], args, env);
    printf("exec failed: %s\n", strerror(errno));
    return 126;
}
