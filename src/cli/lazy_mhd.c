/*
 * lazy_mhd.c - the libmicrohttpd functions view.c calls, forwarded to the library loaded at the
 * first call (base/lazylib.h): only `tally view` loads it, and GnuTLS and the eight libraries
 * behind it, whose constructors every other command ran for nothing. Without it
 * MHD_start_daemon returns NULL and view.c says why (lazy_mhd_why()).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

#include "analyzer/lazyload.h"
#include "base/lazylib.h"


static const char *const names[] = { "MHD_start_daemon_va", "MHD_stop_daemon",
                                     "MHD_get_daemon_info", "MHD_lookup_connection_value",
                                     "MHD_queue_response", "MHD_create_response_from_buffer",
                                     "MHD_destroy_response", "MHD_add_response_header" };
static struct {
    struct MHD_Daemon *(*start_daemon_va)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                          MHD_AccessHandlerCallback, void *, va_list);
    void (*stop_daemon)(struct MHD_Daemon *);
    const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType,
                                                   ...);
    const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind,
                                           const char *);
    enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int,
                                      struct MHD_Response *);
    struct MHD_Response *(*create_response_from_buffer)(size_t, void *,
                                                        enum MHD_ResponseMemoryMode);
    void (*destroy_response)(struct MHD_Response *);
    enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
} fn;
static lazylib_t lib = LAZYLIB(TALLY_SONAME_MHD, names, &fn);

const char *lazy_mhd_why(void)
{
    return lib.why;
}

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port,
                                    MHD_AcceptPolicyCallback apc, void *apc_cls,
                                    MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
    if (lazylib_get(&lib))
        return NULL;
    va_list ap;
    va_start(ap, dh_cls);
    struct MHD_Daemon *d = fn.start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
    va_end(ap);
    return d;
}

/* (the others are called only with a daemon MHD_start_daemon gave: the library is loaded) */
void MHD_stop_daemon(struct MHD_Daemon *daemon)
{
    if (!lazylib_get(&lib))
        fn.stop_daemon(daemon);
}

/* Only for the kinds of information that take no further argument (view.c asks the port). */
const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon,
                                                enum MHD_DaemonInfoType type, ...)
{
    return lazylib_get(&lib) ? NULL : fn.get_daemon_info(daemon, type);
}

const char *MHD_lookup_connection_value(struct MHD_Connection *c, enum MHD_ValueKind kind,
                                        const char *key)
{
    return lazylib_get(&lib) ? NULL : fn.lookup_connection_value(c, kind, key);
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *c, unsigned int status,
                                   struct MHD_Response *r)
{
    return lazylib_get(&lib) ? MHD_NO : fn.queue_response(c, status, r);
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
                                                     enum MHD_ResponseMemoryMode mode)
{
    return lazylib_get(&lib) ? NULL : fn.create_response_from_buffer(size, buffer, mode);
}

void MHD_destroy_response(struct MHD_Response *r)
{
    if (!lazylib_get(&lib))
        fn.destroy_response(r);
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *r, const char *header,
                                        const char *content)
{
    return lazylib_get(&lib) ? MHD_NO : fn.add_response_header(r, header, content);
}
