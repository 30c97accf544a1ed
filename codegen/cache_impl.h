/*
 * Private to codegen/: the disk cache (one file per signature key) and the
 * fingerprint's hash.
 */
#ifndef XG_CACHE_IMPL_H
#define XG_CACHE_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "xg_impl.h"
#include "xlac/text.h"

/* The XXH3 128-bit hash of len bytes as 32 hex digits (out holds 33). */
void xg_hash_hex(const void *data, size_t len, char out[33]);


typedef struct xg_disk {
    char *dir;    /* NULL: the disk cache is off */
} xg_disk;

/*
 * Opens (creating 0700) the cache folder dir; NULL or "": the disk cache
 * stays off (the plugin resolves the default folder). A folder that is not the user's own or is writable by
 * group or others is not used: one warning, and the disk cache stays off.
 */
void xg_disk_open(xg_disk *d, const char *dir);
void xg_disk_close(xg_disk *d);
/* Loads the artifact stored under key; false on a miss (absent, truncated, corrupt, foreign). */
bool xg_disk_load(xg_disk *d, const char *key, xg_target target, xg_artifact **out);
/* Stores an artifact under key (temp file, fsync, rename); failures only warn. */
void xg_disk_store(xg_disk *d, const char *key, const xg_artifact *a);
/* The file name that holds key ("<32 hex>.xlac"). */
void xg_disk_name(const char *key, char *buf, size_t len);

#endif
