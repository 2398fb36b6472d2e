/* tally.c - the tally executable: dispatches to one subcommand per file (see cli.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const struct command {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} commands[] = {
    { "collect", cmd_collect, "run a program and record an experiment" },
    { "print", cmd_print, "report on an experiment in the er_print command language" },
    { "check", cmd_check, "verify an experiment and report damage" },
    { "archive", cmd_archive, "copy an experiment's binaries (and sources) into it" },
    { "view", cmd_view, "a web UI of experiments, served on 127.0.0.1" },
    { "export", cmd_export,
      "write an experiment as pprof, callgrind, folded, chrome, speedscope, tau" },
};

static void usage(FILE *out)
{
    esc_fprintf(out, "usage: tally <command> [options] [args]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        esc_fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    esc_fprintf(out, "\n'tally <command> -h' describes a command; 'man tally-<command>' in full.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        esc_printf("tally %s\n", TALLY_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    esc_fprintf(stderr, "tally: '%s' is not a tally command; see 'tally --help'\n", argv[1]);
    return 2;
}
