#include "err.h"

#include <stdio.h>

int tally_errf(tally_err_t *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *tally_strerror(int code)
{
    static const char *const names[] = {
#define X(name, msg) msg,
        TALLY_ERRNO_MAP(X)
#undef X
    };
    unsigned idx = (unsigned)-code;
    return idx < sizeof names / sizeof names[0] ? names[idx] : "unknown error";
}
