/*
 * view_assets.h - the files of the web UI of `tally view` (src/web), compiled into the
 * executable by src/web/embed.cmake: the server answers a request for one of these paths with
 * its bytes and never opens a file to serve a page. Read-only data; thread-safe.
 */
#ifndef TALLY_CLI_VIEW_ASSETS_H
#define TALLY_CLI_VIEW_ASSETS_H

#include <stddef.h>

typedef struct view_asset {
    const char *path; /* "/index.html": the URL path, exactly */
    const char *type; /* its Content-Type */
    const unsigned char *data;
    size_t len;
} view_asset_t;

/* The asset whose URL path is exactly path, or NULL. */
const view_asset_t *view_asset_find(const char *path);

#endif
