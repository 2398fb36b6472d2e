/*
 * cli.h - the subcommands of the tally executable. Adding a command takes: a file
 * src/cli/<name>.c with cmd_<name>(), an entry in the commands[] table of tally.c, a man page
 * man/tally-<name>.1, `-h` support, and tests.
 *
 * Only src/cli prints errors and chooses exit statuses: library code returns tally_err_t.
 * Exit statuses: 0 success, 1 failure (bad data, I/O), 2 usage error.
 */
#ifndef TALLY_CLI_CLI_H
#define TALLY_CLI_CLI_H

#include "base/err.h"
#include "base/esc.h"

int cmd_collect(int argc, char **argv);
int cmd_print(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_archive(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_view(int argc, char **argv); /* view.c: not in the fuzz harness's sources */

/* Prints "tally: <msg>" to stderr and returns the exit status for err->code. */
int cli_report(const tally_err_t *err);
/* Prints "tally <cmd>: <fmt...>" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Directory of the running tally executable (for finding libtally-collector.so). */
const char *cli_self_dir(void);

#endif
