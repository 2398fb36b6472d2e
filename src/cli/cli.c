/* cli.c - what the subcommands share: reporting errors, finding the tally installation (cli.h). */
#define _GNU_SOURCE
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_report(const tally_err_t *err)
{
    esc_fprintf(stderr, "tally: %s\n", err->msg[0] ? err->msg : tally_strerror(err->code));
    return err->code == TALLY_EUSAGE ? 2 : 1;
}

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    esc_fprintf(stderr, "tally %s: ", cmd);
    esc_vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

const char *cli_self_dir(void)
{
    static char dir[PATH_MAX];
    if (!dir[0]) {
        ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
        if (n <= 0)
            return ".";
        dir[n] = 0;
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = 0;
    }
    return dir;
}
