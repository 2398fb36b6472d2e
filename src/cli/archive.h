/*
 * archive.h - archiving an experiment (archive.c), also used by `tally collect` at the end of a
 * collection.
 */
#ifndef TALLY_CLI_ARCHIVE_H
#define TALLY_CLI_ARCHIVE_H

#include <stdint.h>

#include "base/err.h"

/* What an archiving did (for `tally collect`'s summary). */
typedef struct archive_stats {
    unsigned copied, debugfiles, referenced, failed;
    uint64_t bytes;
} archive_stats_t;

/* Copies the experiment's binaries (and with sources, its source files) into path/archive.
 * quiet: print nothing but failures. lost_only (`tally collect`'s default): a binary the system
 * manages (under /usr, /lib, /bin or /sbin but /usr/local, owned by root, writable by no one
 * else), and tally's own libraries (the collector), are only referenced, by the path and
 * build-id the log records (the analysis checks the build-id, and finds its debug file by
 * build-id), and copied otherwise; `tally archive` copies every one. stats may be NULL. Returns 0 or a negative TALLY_E* code. */
int archive_experiment(const char *path, int sources, int quiet, int lost_only,
                       archive_stats_t *stats, tally_err_t *err);

#endif
