/*
 * blocksel.c - selective profiling files in TAU's syntax (contract in blocksel.h).
 */
#include "blocksel.h"

#include <string.h>

int blocksel_match(const char *p, const char *s)
{
    const char *star = NULL, *back = NULL;
    while (*s) {
        if (*p == '#' || *p == '*') {
            star = ++p;
            back = s;
        } else if (*p == '?' || *p == *s) {
            p++;
            s++;
        } else if (star) {
            p = star;
            s = ++back;
        } else {
            return 0;
        }
    }
    while (*p == '#' || *p == '*')
        p++;
    return !*p;
}

/* The routine name of a TAU signature: the identifier (with C++ '::', '~', operators and
 * wildcards) just before the argument list, or NULL when the entry has no argument list. */
static int routine_match(const char *entry, const char *name)
{
    const char *open = strchr(entry, '(');
    if (!open)
        return 0;
    const char *end = open;
    while (end > entry && end[-1] == ' ')
        end--;
    const char *b = end;
    while (b > entry && b[-1] != ' ' && b[-1] != '*' && b[-1] != '&')
        b--;
    char id[512];
    size_t n = (size_t)(end - b);
    if (!n || n >= sizeof id)
        return 0;
    memcpy(id, b, n);
    id[n] = 0;
    return blocksel_match(id, name);
}

static int entry_match(const char *entry, const char *name)
{
    return blocksel_match(entry, name) || routine_match(entry, name);
}

int blocksel_active(const blocksel_t *s, const char *name)
{
    for (unsigned i = 0; i < s->nexclude; i++)
        if (entry_match(s->exclude[i], name))
            return 0;
    if (!s->has_include)
        return 1;
    for (unsigned i = 0; i < s->ninclude; i++)
        if (entry_match(s->include[i], name))
            return 1;
    return 0;
}

static char *trim(char *a, char *e)
{
    while (a < e && (*a == ' ' || *a == '\t' || *a == '\r'))
        a++;
    while (e > a && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    *e = 0;
    return a;
}

int blocksel_parse(blocksel_t *s, char *text, size_t n, unsigned *line, const char **why)
{
    memset(s, 0, sizeof *s);
    enum { NONE, INCL, EXCL } in = NONE;
    unsigned ln = 0;
    char *p = text, *end = text + n;
    if (memchr(text, 0, n)) {
        *line = 1;
        *why = "a NUL byte: not a text file";
        return -1;
    }
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        ln++;
        char *l = trim(p, le);
        p = nl ? nl + 1 : end;
        *line = ln;
        if (!*l)
            continue;
        if (in == NONE) {
            if (l[0] == '#')
                continue;
            if (!strcmp(l, "BEGIN_EXCLUDE_LIST"))
                in = EXCL;
            else if (!strcmp(l, "BEGIN_INCLUDE_LIST"))
                in = INCL, s->has_include = 1;
            else if (!strncmp(l, "BEGIN_FILE_", 11)) {
                *why = "file include and exclude lists name source files, which tally does not "
                       "know while the program runs: list the routines instead";
                return -1;
            } else if (!strncmp(l, "BEGIN_INSTRUMENT_SECTION", 24)) {
                *why = "instrumentation sections place timers at source lines, which needs a "
                       "source instrumentor: put tally_start/tally_stop in the code instead";
                return -1;
            } else {
                *why = "expected BEGIN_EXCLUDE_LIST or BEGIN_INCLUDE_LIST";
                return -1;
            }
            continue;
        }
        if (!strcmp(l, in == EXCL ? "END_EXCLUDE_LIST" : "END_INCLUDE_LIST")) {
            in = NONE;
            continue;
        }
        if (!strncmp(l, "BEGIN_", 6) || !strncmp(l, "END_", 4)) {
            *why = in == EXCL ? "the exclude list is not ended (END_EXCLUDE_LIST)"
                              : "the include list is not ended (END_INCLUDE_LIST)";
            return -1;
        }
        unsigned *cnt = in == EXCL ? &s->nexclude : &s->ninclude;
        if (*cnt >= BLOCKSEL_MAX) {
            *why = "more than 4096 entries in one list";
            return -1;
        }
        (in == EXCL ? s->exclude : s->include)[(*cnt)++] = l;
    }
    if (in != NONE) {
        *line = ln;
        *why = in == EXCL ? "the exclude list is not ended (END_EXCLUDE_LIST)"
                          : "the include list is not ended (END_INCLUDE_LIST)";
        return -1;
    }
    return 0;
}
