/*
 * The disk cache: one file per signature key, named by the key's XXH3-128
 * hash. A file is
 *
 *   "XLACBIN1" | u32 key length | key | u32 target | u32 arch |
 *   u64 code length | code | u64 meta length | meta | 16-byte XXH3-128 of all before
 *
 * and is read whole (cache_files.c: only a regular file of ours that
 * nobody else can write, under a size cap) and checked (magic, lengths,
 * checksum, the full key, which holds the compiler's identity, and the
 * target) before anything in it is used: the cache holds code, so a bad,
 * truncated or foreign file is never loaded; it is counted, warned about
 * (once per run), recompiled and replaced. Files are written to a temp file (0600) in the same
 * folder and renamed into place, so readers never see half a file. They are not fsync'ed: that made
 * every cold compile wait for the disk (25 ms under load here), and a file that a crash leaves
 * short or empty fails the checks above and is rebuilt. A folder the process cannot write (a seeded
 * cache deployed read-only) is used for loading only: nothing is stored, locked or evicted there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "cache_impl.h"
#include "xlac/io.h"
#include "compile.h"

#define MAGIC "XLACBIN1"

void xg_disk_open(xg_disk *d, const char *dir)
{
    char path[4096];
    d->dir = NULL;
    if (!dir || !*dir)
        return;
    snprintf(path, sizeof path, "%s", dir);
    xe_status ms;
    xe_status_clear(&ms);
    if (xe_mkdirs(path, 0700, &ms) != XE_OK) {
        fprintf(stderr,
                "xlac: warning: cache folder %s cannot be created (%s); running without the disk "
                "cache\n",
                path, ms.msg);
        return;
    }
    const char *unsafe = xg_disk_dir_unsafe(path);
    if (unsafe) {
        fprintf(stderr,
                "xlac: warning: cache folder %s is not a folder of yours that only you can write "
                "(%s); running without the disk cache\n",
                path, unsafe);
        return;
    }
    /* a seeded cache on a read-only folder (a deployment, docs/aot.md): used for loading, quietly
     */
    d->readonly = access(path, W_OK | X_OK) != 0;
    if (d->readonly && access(path, R_OK | X_OK) != 0) {
        fprintf(stderr,
                "xlac: warning: cache folder %s is neither writable nor readable; running without "
                "the disk cache\n",
                path);
        return;
    }
    d->dir = strdup(path);
}

void xg_disk_close(xg_disk *d)
{
    free(d->dir);
    d->dir = NULL;
}

void xg_disk_name(const char *key, char *buf, size_t len)
{
    char hex[33];
    xg_hash_hex(key, strlen(key), hex);
    snprintf(buf, len, "%s.xlac", hex);
}

/* Reads n bytes at *pos of a buffer of size len; false past the end. */
static bool take(const unsigned char *buf, size_t len, size_t *pos, void *dst, size_t n)
{
    if (n > len || *pos > len - n)
        return false;
    memcpy(dst, buf + *pos, n);
    *pos += n;
    return true;
}

bool xg_disk_parse(const unsigned char *buf, size_t len, const char *key, xg_target target,
                   xg_artifact *a)
{
    size_t pos = 0;
    char magic[8];
    uint32_t klen, tgt, arch;
    uint64_t clen, mlen;
    if (len < 8 + 16 || !take(buf, len, &pos, magic, 8) || memcmp(magic, MAGIC, 8))
        return false;
    XXH128_hash_t h = XXH3_128bits(buf, len - 16), want;
    memcpy(&want.high64, buf + len - 16, 8);
    memcpy(&want.low64, buf + len - 8, 8);
    if (h.high64 != want.high64 || h.low64 != want.low64)
        return false;
    len -= 16;
    if (!take(buf, len, &pos, &klen, 4) || klen != strlen(key) || klen > len - pos ||
        memcmp(buf + pos, key, klen) != 0)
        return false;
    pos += klen;
    if (!take(buf, len, &pos, &tgt, 4) || !take(buf, len, &pos, &arch, 4) ||
        tgt != (uint32_t)target || !take(buf, len, &pos, &clen, 8) || clen > len - pos)
        return false;
    a->code = malloc(clen + 1);
    if (!a->code || !take(buf, len, &pos, a->code, clen) || !take(buf, len, &pos, &mlen, 8) ||
        mlen > len - pos)
        return false;
    a->code_len = clen;
    a->meta = malloc(mlen + 1);
    if (!a->meta || !take(buf, len, &pos, a->meta, mlen) || pos != len)
        return false;
    a->meta[mlen] = '\0';
    a->target = target;
    a->arch = (int)arch;
    return true;
}

void xg_disk_reject(xg_disk *d, const char *key, const char *why)
{
    char name[64];
    xg_disk_name(key, name, sizeof name);
    atomic_fetch_add(&d->rejects, 1);
    if (!atomic_exchange(&d->warned, true))
        fprintf(stderr,
                "xlac: warning: disk cache file %s/%s not loaded (%s); it is rebuilt and replaced "
                "(further refused files are counted in --stats disk_rejects)\n",
                d->dir, name, why);
}

bool xg_disk_load(xg_disk *d, const char *key, xg_target target, xg_artifact **out)
{
    if (!d->dir)
        return false;
    char name[64], path[4200], why[200];
    xg_disk_name(key, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", d->dir, name);
    void *buf = NULL;
    size_t len = 0;
    xg_disk_read_result r = xg_disk_read(path, XG_DISK_FILE_MAX, &buf, &len, why, sizeof why);
    if (r != XG_DISK_READ) {
        if (r == XG_DISK_BAD)
            xg_disk_reject(d, key, why);
        return false;
    }
    xg_artifact *a = calloc(1, sizeof *a);
    bool ok = a && xg_disk_parse(buf, len, key, target, a);
    free(buf);
    if (!ok) {
        if (a)
            xg_disk_reject(d, key,
                           "truncated, corrupt, or built for another key, target or compiler");
        xg_artifact_destroy(a);
        return false;
    }
    *out = a;
    return true;
}

static bool put(FILE *f, const void *p, size_t n, XXH3_state_t *h)
{
    XXH3_128bits_update(h, p, n);
    return fwrite(p, 1, n, f) == n;
}

/* A module that could not be written (disk full, a file-size limit): the run goes on, one warning.
 */
static void store_failed(xg_disk *d, const char *path, int err)
{
    if (!atomic_load(&d->warned) &&
        !atomic_exchange(&d->store_warned, true)) /* one disk warning a run */
        fprintf(stderr,
                "xlac: warning: cannot write disk cache file %s (%s); the module is used but not "
                "stored\n",
                path, strerror(err));
}

void xg_disk_store(xg_disk *d, const char *key, const xg_artifact *a)
{
    if (!d->dir || d->readonly)
        return;
    char name[64], path[4200], tmp[4300];
    xg_disk_name(key, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", d->dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", d->dir, name);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        store_failed(d, tmp, errno);
        return;
    }
    FILE *f = fdopen(fd, "wb");
    XXH3_state_t *h = XXH3_createState();
    bool ok = f && h && XXH3_128bits_reset(h) == XXH_OK;
    uint32_t klen = (uint32_t)strlen(key), tgt = (uint32_t)a->target, arch = (uint32_t)a->arch;
    uint64_t clen = a->code_len, mlen = a->meta ? strlen(a->meta) : 0;
    ok = ok && put(f, MAGIC, 8, h) && put(f, &klen, 4, h) && put(f, key, klen, h) &&
         put(f, &tgt, 4, h) && put(f, &arch, 4, h) && put(f, &clen, 8, h) &&
         put(f, a->code, clen, h) && put(f, &mlen, 8, h) && put(f, a->meta ? a->meta : "", mlen, h);
    if (ok) {
        XXH128_hash_t sum = XXH3_128bits_digest(h);
        ok =
            fwrite(&sum.high64, 8, 1, f) == 1 && fwrite(&sum.low64, 8, 1, f) == 1 && fflush(f) == 0;
    }
    if (h)
        XXH3_freeState(h);
    if (f)
        ok = (fclose(f) == 0) && ok;
    else
        close(fd);
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        store_failed(d, path, e);
    } else if (d->max_bytes)
        xg_disk_evict(d->dir, d->max_bytes);
}
