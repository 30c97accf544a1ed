/*
 * Private to codegen/: the disk cache (one file per signature key) and the
 * fingerprint's hash.
 */
#ifndef XG_CACHE_IMPL_H
#define XG_CACHE_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xg_impl.h"
#include "xlac/text.h"

/*
 * A compile (or, disk_hit, a load from the disk cache) of cluster name as a
 * slice of the trace, started at t0_ms (CLOCK_MONOTONIC) and lasting ms
 * (cache_trace.c). Call only while xe_trace_on().
 */
void xg_trace_compile(const char *name, xg_target target, const char *cc, bool disk_hit,
                      const char *key, double t0_ms, double ms, bool ok);

/*
 * Shape pattern of a call of body with inputs in (cache_key.c): ranks and
 * which dims are 1, of the inputs and of every value computed from them, as
 * a 32-hex-digit hash; one shape-generic program serves every shape of a pattern.
 */
void xg_shape_pattern(const xe_graph *body, xe_tensor *const *in, int n, char out[40]);
/*
 * Appends the signature key of fingerprint fp to key: the types of the
 * tensors in (or of types when in is NULL), or, pattern given, the
 * shape-generic program's pattern, and compiler, the compiler's id (cache_key.c).
 */
void xg_key_of(const char *fp, xe_tensor *const *in, const xe_type *types, int n,
               const char *pattern, xg_target target, int arch, const xg_options *o,
               const char *compiler, xe_text *key);

/* The XXH3 128-bit hash of len bytes as 32 hex digits (out holds 33). */
void xg_hash_hex(const void *data, size_t len, char out[33]);

typedef struct xg_disk {
    char *dir;     /* NULL: the disk cache is off */
    bool readonly; /* a seeded folder we cannot write: modules are loaded, never stored */
    unsigned long long max_bytes; /* --cache_max_mb in bytes; 0: no limit */
    atomic_ullong rejects;        /* files refused (unsafe, truncated, corrupt, foreign, stale) */
    atomic_bool warned;           /* the one warning per run about a refused file is out */
    atomic_bool store_warned; /* the one warning per run about a file that could not be written */
} xg_disk;

/* Largest cache file read at all (checked with fstat before reading). */
#define XG_DISK_FILE_MAX ((size_t)256 << 20)

/*
 * Opens (creating 0700) the cache folder dir; NULL or "": the disk cache
 * stays off (the plugin resolves the default folder). A folder that is not the user's own or is
 * writable by group or others is not used: one warning, and the disk cache stays off.
 */
void xg_disk_open(xg_disk *d, const char *dir);
void xg_disk_close(xg_disk *d);
/* Loads the artifact stored under key; false on a miss (absent, truncated, corrupt, foreign). */
bool xg_disk_load(xg_disk *d, const char *key, xg_target target, xg_artifact **out);
/* Stores an artifact under key (temp file, fsync, rename); failures only warn. */
void xg_disk_store(xg_disk *d, const char *key, const xg_artifact *a);
/* The file name that holds key ("<32 hex>.xlac"). */
void xg_disk_name(const char *key, char *buf, size_t len);
/* Counts a refused file (key's) and warns about the first one of the run (its path and why). */
void xg_disk_reject(xg_disk *d, const char *key, const char *why);
/*
 * Parses a cache file's bytes: true when magic, checksum, the full key and
 * the target match, with the code and metadata copied into a (which the
 * caller destroys either way). Exposed for the fuzz target.
 */
bool xg_disk_parse(const unsigned char *buf, size_t len, const char *key, xg_target target,
                   xg_artifact *a);

/* verdict.c: demotions remembered beside the programs ("<hex>.slow"). */
/* The verdict file of key's program. */
void xg_verdict_path(const xg_disk *d, const char *key, char *buf, size_t len);
/* A compiled program's loss to its per-op runs: the best times of each, and how many processes
 * found it slower. */
typedef struct xg_verdict {
    double compiled_us, per_op_us;
    int agreed;
} xg_verdict;
/* Slower compiled by this factor or more: one process's verdict holds; a closer one is measured
 * again by the next process (verdict.c). */
#define XG_VERDICT_SURE 1.2
/* Whether v holds from the first run of a later process (a clear loss, or agreed by two). */
bool xg_verdict_sure(const xg_verdict *v);
/* Records that key's program ran slower compiled than per op (failures only warn). */
void xg_verdict_store(xg_disk *d, const char *key, const xg_verdict *v);
/* Removes key's verdict: measured again, the program was the faster (failures only warn). */
void xg_verdict_drop(xg_disk *d, const char *key);
/* Whether an earlier process demoted key's program, and on what times. */
bool xg_verdict_load(xg_disk *d, const char *key, xg_verdict *v);

/* cache_lock.c: one build per signature across the processes of one cache folder. */
typedef enum xg_claim {
    XG_CLAIM_OURS,   /* this process holds key's lock: build, store, then xg_disk_release */
    XG_CLAIM_LOADED, /* another process built it meanwhile: *out holds its artifact */
    XG_CLAIM_NONE,   /* no disk cache, no lock possible, or waited too long: build without a lock */
} xg_claim;
/* After a disk miss: claims key's build, or waits for the process that holds it (bounded). */
xg_claim xg_disk_claim(xg_disk *d, const char *key, xg_target target, xg_artifact **out);
/* Removes key's lock (after the store, or after a failed build). */
void xg_disk_release(xg_disk *d, const char *key);

/* cache_files.c: the file system side. */
typedef enum xg_disk_read_result {
    XG_DISK_ABSENT, /* no such file: a plain miss */
    XG_DISK_READ,   /* read whole into *data */
    XG_DISK_BAD,    /* refused (why says: a link, a FIFO, another user's, too big, ...) */
} xg_disk_read_result;

/*
 * Reads a cache file only if it is a regular file owned by the user, not
 * writable by group or others and at most cap bytes: lstat first (a device
 * is never opened), then open with O_NOFOLLOW | O_NONBLOCK and fstat on the
 * descriptor. A hit touches the file (its mtime is the eviction's clock).
 */
xg_disk_read_result xg_disk_read(const char *path, size_t cap, void **data, size_t *len, char *why,
                                 size_t why_len);
/* Why the folder may not hold the cache (a link, not a folder, another user's, writable by others);
 * NULL if fine. */
const char *xg_disk_dir_unsafe(const char *path);
/* Deletes the least recently used "*.xlac" files of dir until they total at most max_bytes; how
 * many went. */
int xg_disk_evict(const char *dir, unsigned long long max_bytes);

#endif
