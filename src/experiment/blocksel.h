/*
 * blocksel.h - selective profiling of blocks: a file in TAU's selective instrumentation syntax,
 * given at collect time (`tally collect --blocks=FILE`), says which profiled blocks are active.
 *
 *     # a comment (outside the lists)
 *     BEGIN_EXCLUDE_LIST           blocks not profiled
 *     void quicksort(int *, int, int)
 *     sort_#                       '#' (and '*') match any characters, '?' one character
 *     END_EXCLUDE_LIST
 *     BEGIN_INCLUDE_LIST           when present: only these blocks are profiled
 *     int main(int, char **)
 *     END_INCLUDE_LIST
 *
 * An entry matches a block whose name equals it (a block of tally_start("loop 1")), or whose
 * name equals the entry's routine name: TAU writes routines with their signatures, so the
 * identifier before the argument list is taken (`void quicksort(int *, int, int)` names
 * `quicksort`). A block is active when no exclude entry matches it and, if there is an include
 * list, an include entry does. File lists (BEGIN_FILE_INCLUDE_LIST, BEGIN_FILE_EXCLUDE_LIST) and
 * instrumentation sections name source files and code locations, which tally does not know when
 * the program runs: the parser refuses them with the line, so a selection is never silently
 * wider than asked.
 *
 * Used by `tally collect` (checks the file before running) and by the collector (at start, in
 * normal context). The parser works in place on the caller's text (it writes NULs) and keeps
 * pointers into it; rules are at most BLOCKSEL_MAX. No allocation, no stdio; thread-compatible.
 */
#ifndef TALLY_EXPERIMENT_BLOCKSEL_H
#define TALLY_EXPERIMENT_BLOCKSEL_H

#include <stddef.h>

#define BLOCKSEL_MAX 4096

typedef struct blocksel {
    const char *include[BLOCKSEL_MAX], *exclude[BLOCKSEL_MAX];
    unsigned ninclude, nexclude;
    int has_include; /* an include list was given (even empty: then nothing is active) */
} blocksel_t;

/* Parses text[0..n) (modified). 0, or -1 with *line (1-based) and *why (a static sentence). */
int blocksel_parse(blocksel_t *s, char *text, size_t n, unsigned *line, const char **why);

/* Is the block called name active under s? */
int blocksel_active(const blocksel_t *s, const char *name);

/* Does pattern ('#' and '*': any characters, '?': one) match the whole of s? */
int blocksel_match(const char *pattern, const char *s);

#endif
