/*
 * view.c - `tally view [--port N] [--bind ADDR] [--open] EXPERIMENT...`: a local web UI.
 *
 * An HTTP server (libmicrohttpd, one internal thread: requests are answered one at a time) that
 * serves the pages of src/web (compiled into the executable: no file is read to serve them) and
 * one JSON API whose documents are exactly those of `tally print --json`: the server holds one
 * print state (print.h) per experiment and runs print's own views into memory. The browser never
 * receives events, only report models. A view is a model (src/analyzer/report_*.c), its print
 * view (print_*.c, a command with recorded data, PR_DATA_*) and a page of src/web/app.js: every
 * print command with data is served under the same name with no change here.
 *
 *   GET /                      the UI (index.html, app.js, style.css: the asset table)
 *   GET /api/info              {"experiments":[{"index":0,"path":...}],"views":[...],...}
 *   GET /api/view?exp=N&view=V[&arg=A][&SETTING=VALUE]...
 *                              the JSON of `tally print --json -SETTING VALUE... -V A` on
 *                              experiment N, every setting back to its default first. Settings:
 *                              the print commands metrics, cmetrics, sort, limit, name,
 *                              thread_select, sample_select, cpu_select, filters, inlines.
 *                              Errors: 400 {"error":"<print's message>"}.
 *
 * Safe by default: bound to 127.0.0.1 (another address only with --bind, with a warning); a
 * request whose Host is not this server's loopback name is refused (403: a web page of another
 * site cannot reach it through DNS rebinding); only GET and HEAD, no body; the request's headers
 * and URL fit in 16 KiB (libmicrohttpd answers 414/431 past that) and each argument in 4 KiB;
 * nothing in a request names a file: the assets are a fixed table, and the views read only the
 * experiments given on the command line (and the sources and binaries those experiments name,
 * as `tally print` does; a view's argument is a function or a file among the lines with data,
 * never a path opened as given); the commands that read other files (-script, -setpath,
 * -addpath, -pathmap) are not served.
 *
 * Runs until SIGINT or SIGTERM. Errors of the command line exit 2, a port in use 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "print.h"
#include "view_assets.h"
#include "analyzer/lazyload.h"

#define MAX_ARG 4096           /* bytes of one query argument */
#define MEMORY_LIMIT (16 * 1024) /* per connection: the request line and headers */

typedef struct server {
    pstate_t *st; /* one print state per experiment */
    char **applied; /* by state: the settings of its last request (NULL: unknown) */
    size_t n;
    unsigned port;
    int loopback; /* bound to a loopback address: Host must name it */
} server_t;

/* The settings a request may give: print commands, applied in this order before the view. */
static const char *const settings[] = { "metrics", "cmetrics", "sort", "limit", "name",
                                        "thread_select", "sample_select", "cpu_select",
                                        "filters", "inlines" };
/* Views without recorded data of events (PR_DATA_* 0: no losses to tell) that are served too:
 * every print command that writes a JSON report is served (tests/e2e/view_server.py checks print's
 * command list against this server's). */
static const char *const plain_views[] = { "metric_list", "experiment_list", "blocks",
                                           "callstack", "callstack_history", "mpi_matrix",
                                           "objects", "cmetric_list", "indxobj_list" };

/* ---- responses ------------------------------------------------------------------------------ */

static enum MHD_Result send_bytes(struct MHD_Connection *c, unsigned status, const char *type,
                                  const void *data, size_t len, int copy)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, (void *)data, copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* {"error":"msg"} with status. */
static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *msg)
{
    sink_t s;
    if (sink_mem(&s))
        return MHD_NO;
    json_t j;
    json_init(&j, &s);
    json_obj_begin(&j);
    json_key(&j, "error");
    json_str(&j, msg);
    json_obj_end(&j);
    json_end_doc(&j);
    size_t len;
    const char *d = sink_data(&s, &len);
    enum MHD_Result ret = send_bytes(c, status, "application/json", d ? d : "", d ? len : 0, 1);
    sink_close(&s);
    return ret;
}

/* ---- the API -------------------------------------------------------------------------------- */

static int is_served_view(const char *name)
{
    for (size_t i = 0; i < sizeof plain_views / sizeof *plain_views; i++)
        if (!strcmp(name, plain_views[i]))
            return 1;
    return pr_is_view(name);
}

static enum MHD_Result api_info(server_t *sv, struct MHD_Connection *c)
{
    sink_t s;
    if (sink_mem(&s))
        return MHD_NO;
    json_t j;
    json_init(&j, &s);
    json_obj_begin(&j);
    json_key(&j, "experiments");
    json_arr_begin(&j);
    for (size_t i = 0; i < sv->n; i++) {
        const ses_t *ses = sv->st[i].ses;
        json_obj_begin(&j);
        json_key(&j, "index");
        json_u64(&j, i);
        json_key(&j, "path");
        json_str(&j, ses->exps[0]->path);
        json_key(&j, "processes");
        json_u64(&j, ses->exps[0]->nprocs);
        json_obj_end(&j);
    }
    json_arr_end(&j);
    json_key(&j, "views");
    json_arr_begin(&j);
    for (size_t i = 0;; i++) {
        const char *name = pr_view_name(i);
        if (!name)
            break;
        json_str(&j, name);
    }
    for (size_t i = 0; i < sizeof plain_views / sizeof *plain_views; i++)
        json_str(&j, plain_views[i]);
    json_arr_end(&j);
    json_key(&j, "settings");
    json_arr_begin(&j);
    for (size_t i = 0; i < sizeof settings / sizeof *settings; i++)
        json_str(&j, settings[i]);
    json_arr_end(&j);
    json_obj_end(&j);
    json_end_doc(&j);
    size_t len;
    const char *d = sink_data(&s, &len);
    enum MHD_Result ret = d ? send_bytes(c, 200, "application/json", d, len, 1) : MHD_NO;
    sink_close(&s);
    return ret;
}

/* The message print wrote to stderr, without "tally: " and the line end. */
static void tidy_message(char *m)
{
    size_t len = strlen(m);
    while (len && (m[len - 1] == '\n' || m[len - 1] == ' '))
        m[--len] = 0;
    if (!strncmp(m, "tally: ", 7))
        memmove(m, m + 7, len - 6);
}

/* Runs the settings and the view of a request on state ps into ps->out (a memory sink the caller
 * opened); the messages print wrote (to stderr) into *msg. Returns print's status (0, 1, 2). */
static int run_view(pstate_t *ps, char **applied, struct MHD_Connection *c, const char *view,
                    const char *arg, char **msg, size_t *msglen)
{
    /* the request's settings, as one string: when they are those of the last request on this
     * state, the engine keeps its aggregation (setting anything, even to the same value, makes
     * it scan every event again) */
    char *key = strdup("");
    size_t keylen = 0;
    for (size_t i = 0; key && i < sizeof settings / sizeof *settings; i++) {
        const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, settings[i]);
        if (!v)
            continue;
        /* name=length:value; (unambiguous whatever the value holds) */
        size_t add = strlen(settings[i]) + strlen(v) + 32;
        char *nk = realloc(key, keylen + add);
        if (!nk) {
            free(key);
            key = NULL;
            break;
        }
        key = nk;
        keylen += (size_t)snprintf(key + keylen, add, "%s=%zu:%s;", settings[i], strlen(v), v);
    }
    if (!key)
        return 1;
    FILE *saved = stderr;
    FILE *mem = open_memstream(msg, msglen);
    if (!mem) {
        free(key);
        return 1;
    }
    /* one request at a time (one server thread), and nothing else prints meanwhile: the main
     * thread waits for a signal */
    stderr = mem;
    int rc = 0;
    if (!*applied || strcmp(key, *applied)) {
        free(*applied);
        *applied = NULL;
        rc = pr_reset(ps);
        for (size_t i = 0; !rc && i < sizeof settings / sizeof *settings; i++) {
            const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, settings[i]);
            if (v)
                rc = pr_run(ps, settings[i], v);
        }
        if (!rc) { /* (a setting refused leaves the state unknown: the next request resets) */
            *applied = key;
            key = NULL;
        }
    }
    free(key);
    if (!rc)
        rc = pr_run(ps, view, arg);
    stderr = saved;
    fclose(mem);
    return rc;
}

static enum MHD_Result api_view(server_t *sv, struct MHD_Connection *c)
{
    static const char *const args[] = { "exp", "view", "arg", "metrics", "cmetrics", "sort",
                                        "limit", "name", "thread_select", "sample_select",
                                        "cpu_select", "filters", "inlines" };
    for (size_t i = 0; i < sizeof args / sizeof *args; i++) {
        const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, args[i]);
        if (v && strlen(v) > MAX_ARG) {
            char m[128];
            snprintf(m, sizeof m, "argument '%s' is longer than %d bytes", args[i], MAX_ARG);
            return send_error(c, 413, m);
        }
    }
    const char *ex = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "exp");
    const char *view = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "view");
    const char *arg = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "arg");
    char *end = NULL;
    unsigned long x = ex && *ex ? strtoul(ex, &end, 10) : 0;
    if (ex && (!*ex || *end || x >= sv->n)) {
        char m[128];
        snprintf(m, sizeof m, "exp: give an experiment number from 0 to %zu", sv->n - 1);
        return send_error(c, 400, m);
    }
    if (!view || !is_served_view(view)) {
        char m[256];
        snprintf(m, sizeof m, "view: give one of the views /api/info lists ('%.100s' is not one)",
                 view ? view : "");
        return send_error(c, 400, m);
    }
    if (pr_view_needs_arg(view) && (!arg || !*arg))
        return send_error(c, 400, "arg: this view needs an argument (a function, a file or a "
                                  "number, as in tally print)");
    pstate_t *ps = &sv->st[x];
    if (sink_mem(&ps->out))
        return send_error(c, 500, "out of memory");
    char *msg = NULL;
    size_t msglen = 0;
    int rc = run_view(ps, &sv->applied[x], c, view, arg ? arg : "", &msg, &msglen);
    enum MHD_Result ret;
    size_t len = 0;
    const char *d = sink_data(&ps->out, &len);
    if (rc || !d) {
        if (msg)
            tidy_message(msg);
        ret = send_error(c, 400, msg && *msg ? msg : "the view failed");
    } else {
        ret = send_bytes(c, 200, "application/json", d, len, 1);
    }
    free(msg);
    sink_close(&ps->out);
    sink_file(&ps->out, stdout);
    return ret;
}

/* ---- requests ------------------------------------------------------------------------------- */

static int hexval(char ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
         : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

/* Decodes %XX in place, except %00: a NUL would cut the path or argument short ("/app.js%00.html"
 * would be "/app.js"), so it stays as the three characters and matches nothing. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
    char *w = s;
    for (const char *r = s; *r;) {
        int hi, lo;
        if (r[0] == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0 && (hi | lo)) {
            *w++ = (char)(hi << 4 | lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
    return (size_t)(w - s);
}

/* Is the Host header this server's loopback name (127.0.0.1:PORT, localhost:PORT, [::1]:PORT)? */
static int host_ok(server_t *sv, struct MHD_Connection *c)
{
    if (!sv->loopback)
        return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (!h)
        return 0;
    char want[64];
    static const char *const names[] = { "127.0.0.1", "localhost", "[::1]" };
    for (size_t i = 0; i < 3; i++) {
        snprintf(want, sizeof want, "%s:%u", names[i], sv->port);
        if (!strcasecmp(h, want))
            return 1;
    }
    return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls)
{
    server_t *sv = cls;
    if (!*con_cls) {
        /* the headers are in: refuse now what is refused, before any body is read */
        *con_cls = sv;
        if (strcmp(method, "GET") && strcmp(method, "HEAD"))
            return send_error(c, 405, "only GET and HEAD are served");
        if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length") ||
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding"))
            return send_error(c, 413, "requests have no body here");
        if (!host_ok(sv, c))
            return send_error(c, 403, "this server answers only requests addressed to its "
                                      "loopback name (Host 127.0.0.1:PORT or localhost:PORT)");
        return MHD_YES;
    }
    if (*upload_size) { /* not reached: a request with a body was refused above */
        *upload_size = 0;
        return MHD_NO;
    }
    if (!strcmp(url, "/api/info"))
        return api_info(sv, c);
    if (!strcmp(url, "/api/view"))
        return api_view(sv, c);
    const view_asset_t *a = view_asset_find(!strcmp(url, "/") ? "/index.html" : url);
    if (a)
        return send_bytes(c, 200, a->type, a->data, a->len, 0);
    return send_error(c, 404, "no such page");
}

/* ---- main ----------------------------------------------------------------------------------- */

static void usage(FILE *out)
{
    esc_fprintf(out,
            "usage: tally view [--port N] [--bind ADDR] [--open] EXPERIMENT...\n\n"
            "Serves a web UI of the experiments on http://127.0.0.1:PORT/ until interrupted\n"
            "(^C): overview, functions, callers-callees, flame graph, sandwich, timeline,\n"
            "source, disassembly, heap, sync, I/O, data objects, MPI, blocks, counters, and\n"
            "two experiments side by side.\n\n"
            "options:\n"
            "  --port N        listen on port N (default: a free port, printed)\n"
            "  --bind ADDR     listen on IPv4 address ADDR instead of 127.0.0.1: anyone who can\n"
            "                  reach it can read the experiments (a warning is printed)\n"
            "  --open          start a browser on the URL (xdg-open, or $BROWSER)\n"
            "  -h, --help      this help\n\n"
            "See 'man tally-view'.\n");
}

static void open_browser(const char *url)
{
    pid_t pid = fork();
    if (pid == 0) {
        const char *b = getenv("BROWSER");
        int devnull = open("/dev/null", 0);
        if (devnull >= 0) {
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        if (b && *b)
            execlp(b, b, url, (char *)NULL);
        execlp("xdg-open", "xdg-open", url, (char *)NULL);
        _exit(127);
    }
    if (pid < 0)
        esc_fprintf(stderr, "tally view: cannot start a browser: %s; open %s yourself\n",
                    strerror(errno), url);
}

int cmd_view(int argc, char **argv)
{
    const char **paths = calloc((size_t)argc, sizeof *paths);
    if (!paths)
        return 1;
    size_t npaths = 0;
    long port = 0;
    int launch = 0, rc = 0;
    const char *bind_addr = NULL;
    server_t sv = { 0 };
    struct MHD_Daemon *d = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            goto out;
        } else if (!strcmp(a, "--open")) {
            launch = 1;
        } else if (!strcmp(a, "--port") || !strncmp(a, "--port=", 7)) {
            val = a[6] == '=' ? a + 7 : i + 1 < argc ? argv[++i] : NULL;
            char *end = NULL;
            port = val ? strtol(val, &end, 10) : -1;
            if (!val || !*val || *end || port < 1 || port > 65535) {
                cli_error("view", "--port '%s': give a port number from 1 to 65535",
                          val ? val : "");
                rc = 2;
                goto out;
            }
        } else if (!strcmp(a, "--bind") || !strncmp(a, "--bind=", 7)) {
            bind_addr = a[6] == '=' ? a + 7 : i + 1 < argc ? argv[++i] : NULL;
            if (!bind_addr) {
                cli_error("view", "--bind needs an IPv4 address, such as 0.0.0.0");
                rc = 2;
                goto out;
            }
        } else if (a[0] == '-' && a[1]) {
            cli_error("view", "unknown option '%s' (see 'tally view -h')", a);
            rc = 2;
            goto out;
        } else {
            paths[npaths++] = a;
        }
    }
    if (!npaths) {
        cli_error("view", "no experiment given; usage: tally view EXPERIMENT...");
        rc = 2;
        goto out;
    }
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind_addr && inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1) {
        cli_error("view", "--bind '%s': give an IPv4 address, such as 127.0.0.1 or 0.0.0.0",
                  bind_addr);
        rc = 2;
        goto out;
    }
    sv.loopback = (ntohl(sa.sin_addr.s_addr) >> 24) == 127;
    sv.st = calloc(npaths, sizeof *sv.st);
    sv.applied = calloc(npaths, sizeof *sv.applied);
    if (!sv.st || !sv.applied) {
        rc = 1;
        goto out;
    }
    /* one session per experiment: each is shown on its own, and two side by side */
    for (size_t i = 0; i < npaths && !rc; i++) {
        sv.st[i] = (pstate_t){ .sort_flavor = FL_E, .sort_metric = ENG_M_TOTALCPU, .norc = 1 };
        sink_file(&sv.st[i].out, stdout);
        sv.n++;
        rc = pr_open(&sv.st[i], &paths[i], 1, 1);
    }
    if (rc)
        goto out;
    /* SIGINT and SIGTERM are waited for below; the server thread inherits them blocked */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG,
                         (uint16_t)port, NULL, NULL, on_request, &sv,
                         MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MEMORY_LIMIT,
                         MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
                         MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
                         MHD_OPTION_END);
    if (!d) {
        char addr[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &sa.sin_addr, addr, sizeof addr);
        if (*lazy_mhd_why())
            cli_error("view", "cannot load libmicrohttpd: %s (install it: libmicrohttpd12 on "
                      "Debian)", lazy_mhd_why());
        else if (port)
            cli_error("view", "cannot listen on %s port %ld (in use?); choose another with "
                      "--port, or leave it out for a free one", addr, port);
        else
            cli_error("view", "cannot listen on %s", addr);
        rc = 1;
        goto out;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    sv.port = info ? info->port : (unsigned)port;
    char addr[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, addr, sizeof addr);
    if (!sv.loopback)
        esc_fprintf(stderr, "tally view: warning: listening on %s, not on loopback: anyone who "
                            "can reach this address can read the experiments\n", addr);
    char url[128];
    snprintf(url, sizeof url, "http://%s:%u/",
             sv.loopback || strcmp(addr, "0.0.0.0") ? addr : "127.0.0.1", sv.port);
    esc_printf("tally view: serving %zu experiment%s on %s (^C to stop)\n", sv.n,
               sv.n == 1 ? "" : "s", url);
    fflush(stdout);
    if (launch)
        open_browser(url);
    int sig = 0;
    for (;;) {
        if (sigwait(&stop, &sig) == 0)
            break;
    }
    /* children of --open are reaped by exit */
    esc_fprintf(stderr, "tally view: stopped (%s)\n", strsignal(sig));
out:
    if (d)
        MHD_stop_daemon(d);
    for (size_t i = 0; i < sv.n; i++) {
        ses_free(sv.st[i].ses);
        free(sv.applied[i]);
    }
    free(sv.st);
    free(sv.applied);
    free(paths);
    return rc;
}
