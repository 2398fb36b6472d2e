/*
 * lazyload.h - the libraries the tally executable loads at their first use rather than at its
 * start (base/lazylib.h has why): each has forwarders of the functions tally calls, of the same
 * names and prototypes, in lazy_<library>.c, and says here why it could not be loaded (an empty
 * string while it was not tried or loaded well), for messages.
 *
 * analyzer: capstone (disassembly), libstdc++'s __cxa_demangle. cli: libpfm4 (counters, collect
 * -h), libmicrohttpd (tally view).
 */
#ifndef TALLY_ANALYZER_LAZYLOAD_H
#define TALLY_ANALYZER_LAZYLOAD_H

const char *lazy_capstone_why(void);
const char *lazy_cxxabi_why(void);
const char *lazy_pfm_why(void);
const char *lazy_mhd_why(void);

#endif
