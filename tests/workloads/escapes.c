/*
 * escapes.c - a program whose strings are hostile to a terminal, for tests/e2e/escapes.py.
 *
 * Its functions are named with 33-character placeholders that the test overwrites in the built
 * binary (symbol and debug string tables) with names holding ESC sequences, a newline, Unicode
 * bidi overrides, C1 controls, invalid UTF-8 and a C++ mangled name of the same (the assembler
 * refuses such names in source). Each spins for a share of CPU time; one leaks a block (heap
 * tracing); main records a sample packet labelled with the same kinds of bytes and writes the
 * file named by argv[1] (I/O tracing). The test copies this source to a file name of its own and
 * puts a hostile comment line at the marker below before compiling it.
 * Usage: escapes FILE [seconds-per-function] (default 0.15).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tally.h"

static volatile double sink;
static double per_fn = 0.15;

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void spin(void)
{
    double end = cpu_seconds() + per_fn;
    while (cpu_seconds() < end)
        for (int i = 0; i < 20000; i++)
            sink += i * 0.5;
}

/* the placeholders, 33 characters each */
__attribute__((noinline)) void PLACEHOLDER_NAME_ESC_0123456789ab(void) { spin(); }
__attribute__((noinline)) void PLACEHOLDER_NAME_NL_0123456789abc(void) { spin(); }
__attribute__((noinline)) void PLACEHOLDER_NAME_BIDI_0123456789a(void) { spin(); }
__attribute__((noinline)) void PLACEHOLDER_NAME_BADUTF8_01234567(void) { spin(); }
__attribute__((noinline)) void PLACEHOLDER_NAME_CXX_0123456789ab(void) { spin(); }

__attribute__((noinline)) void *PLACEHOLDER_NAME_LEAK_0123456789a(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 1, n);
    return p;
}

static void *leaked;

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (argc > 2)
        per_fn = atof(argv[2]);
    /* HOSTILE COMMENT */
    PLACEHOLDER_NAME_ESC_0123456789ab();
    PLACEHOLDER_NAME_NL_0123456789abc();
	PLACEHOLDER_NAME_BIDI_0123456789a(); /* indented with a tab */
    PLACEHOLDER_NAME_BADUTF8_01234567();
    PLACEHOLDER_NAME_CXX_0123456789ab();
    leaked = PLACEHOLDER_NAME_LEAK_0123456789a(4096);
    leaked = NULL; /* never freed */
    tally_sample("label \x1b[31mred\x1b[0m \n fake \xe2\x80\xae rev \xc2\x9b bad \xff end");
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 1;
    for (int i = 0; i < 8; i++)
        if (write(fd, "0123456789abcdef", 16) != 16)
            return 1;
    close(fd);
    return 0;
}
