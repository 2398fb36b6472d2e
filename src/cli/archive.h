/*
 * archive.h - archiving an experiment (archive.c), also used by `tally collect` at the end of a
 * collection.
 */
#ifndef TALLY_CLI_ARCHIVE_H
#define TALLY_CLI_ARCHIVE_H

#include "base/err.h"

/* Copies the experiment's binaries (and with sources, its source files) into path/archive.
 * quiet: print nothing but failures. Returns 0 or a negative TALLY_E* code. */
int archive_experiment(const char *path, int sources, int quiet, tally_err_t *err);

#endif
