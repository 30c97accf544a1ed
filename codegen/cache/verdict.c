/*
 * Demotion verdicts kept on disk (demote.c's step 4, remembered): a program
 * demoted in one process runs per op from its first run in the next one
 * that loads it from the same disk cache, instead of losing again for the
 * runs that a new verdict takes (a bench round, a CLI call, a serving
 * worker's restart are each a new process of a few runs).
 *
 * A verdict is a file "<hex>.slow" beside the program's "<hex>.xlac" (the
 * key's hash, cache_disk.c), one line:
 *
 *   xlac-slow 1 COMPILED_US PER_OP_US
 *
 * It is read as the program files are (cache_files.c: a regular file of
 * ours that nobody else can write, under a size cap) and written to a temp
 * file and renamed. It is consulted only on a disk hit of its program, so
 * one whose program went (evicted, cleaned) is never read. Deleting it, or
 * --demote=0, tries the program compiled again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_impl.h"

#define VERDICT_MAX 256 /* bytes: a verdict is one short line */

void xg_verdict_path(const xg_disk *d, const char *key, char *buf, size_t len)
{
    char hex[33];
    xg_hash_hex(key, strlen(key), hex);
    snprintf(buf, len, "%s/%s.slow", d->dir ? d->dir : "", hex);
}

void xg_verdict_store(xg_disk *d, const char *key, double compiled_us, double per_op_us)
{
    if (!d->dir || d->readonly)
        return;
    char path[4200], tmp[4300], hex[33];
    xg_verdict_path(d, key, path, sizeof path);
    xg_hash_hex(key, strlen(key), hex);
    /* ".<hex>.slow.XXXXXX": hidden, and dropped if a crash leaves it (cache_files.c) */
    snprintf(tmp, sizeof tmp, "%s/.%s.slow.XXXXXX", d->dir, hex);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    bool ok = f && fprintf(f, "xlac-slow 1 %.3f %.3f\n", compiled_us, per_op_us) > 0;
    if (f)
        ok = fclose(f) == 0 && ok;
    else if (fd >= 0)
        close(fd);
    if (fd >= 0 && (!ok || rename(tmp, path) != 0)) {
        int e = errno;
        unlink(tmp);
        fprintf(stderr, "xlac: warning: cannot write the demotion verdict %s (%s)\n", path,
                strerror(e));
    }
}

bool xg_verdict_load(xg_disk *d, const char *key, double *compiled_us, double *per_op_us)
{
    if (!d->dir)
        return false;
    char path[4200], why[200];
    xg_verdict_path(d, key, path, sizeof path);
    void *buf = NULL;
    size_t len = 0;
    if (xg_disk_read(path, VERDICT_MAX, &buf, &len, why, sizeof why) != XG_DISK_READ)
        return false; /* absent, or refused: no verdict (the program is measured again) */
    char line[VERDICT_MAX + 1];
    memcpy(line, buf, len);
    line[len] = '\0';
    free(buf);
    int version = 0;
    char end = 0;
    return sscanf(line, "xlac-slow %d %lf %lf%c", &version, compiled_us, per_op_us, &end) == 4 &&
           version == 1 && end == '\n' && *compiled_us > *per_op_us && *per_op_us > 0;
}
