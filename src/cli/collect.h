/*
 * collect.h - `tally collect`'s options, parsed apart from running anything (collect.c), so that
 * the parser is testable on its own (tests/unit/test_collect_args.c).
 *
 * Depends on the C library. Not thread-safe (getopt's state). Errors are said on stderr
 * (cli_error), as everywhere in src/cli.
 */
#ifndef TALLY_CLI_COLLECT_H
#define TALLY_CLI_COLLECT_H

#include <limits.h>
#include <stdint.h>

#include "hwc.h"

struct collect_opts {
    uint64_t clock_ns; /* 0 = off */
    int clock_mref;    /* -p +...: dataspace data with each clock sample */
    int follow;
    uint64_t dur_start, dur_end; /* ns from start; dur_end 0 = to the end */
    int has_duration;
    const char *output, *directory;
    int overwrite;            /* -O: an existing experiment of that name is replaced */
    const char *comments[10]; /* -C labels */
    int ncomments;
    const char *follow_regex; /* -F =REGEX */
    int start_paused;         /* -y SIG without ',r' */
    int verbose;              /* -v */
    int dry_run;
    unsigned max_depth;
    uint64_t sample_ns; /* periodic sample packets, 0 = off */
    int states;         /* thread-state sampling */
    int sample_sig, pause_sig;
    const char *sync;   /* TALLY_SYNC: NULL (off), "on", "all" or a threshold in ns */
    char sync_ns[32];
    int heap, io;       /* heap and I/O tracing */
    int block_trace;    /* --block-trace=on: a BLOCK record at every entry and exit of a block */
    int no_heap_map;    /* --heap-map=off: no allocation map for dataspace without -H */
    int mpi;            /* MPI tracing (-M) */
    int archive;        /* 0 off, 1 binaries, 2 binaries and sources */
    hwc_set_t counters; /* -h, encoded once the program is known (hwc_parse) */
    const char *counter_args[HWC_MAX]; /* -h as given */
    int ncounter_args;
    char blocks[PATH_MAX];   /* profiled blocks: "" on, "off", or a selective file (absolute) */
    char block_metrics[256]; /* their quantities: "" (wall) or wall, cpu and counters, any order */
    char block_counters[512]; /* the counters among them, as blockctr.h reads them (checked
                                 once the program is known: collect_block_counters) */
};

/* collect_parse_args's answers other than 0 and 2: the help (--help), the help with the counter
 * lists (no arguments at all, as gprofng's collect), the counter lists alone (-h with nothing
 * after it), the version (-V). */
#define COLLECT_HELP 3
#define COLLECT_HELP_ALL 4
#define COLLECT_LISTS 5
#define COLLECT_VERSION 6 /* -V, --version */

/* Parses argv[1..] (stopping at the program, whose own options are its own) into *o, defaults
 * first; *prog gets the index of the program in argv. Returns 0, COLLECT_HELP, or 2 after saying
 * on stderr what is wrong. Runs nothing and creates nothing; o's strings point into argv (or
 * into o). */
int collect_parse_args(int argc, char **argv, struct collect_opts *o, int *prog);
/* The counters of --block-metrics checked against what opens here (a hardware counter on a
 * machine without a PMU does not) and encoded into o->block_counters; 0, or -1 with why. */
int collect_block_counters(struct collect_opts *o, const char *prog, char *why, size_t cap);

#endif
