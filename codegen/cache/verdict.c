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
 *   xlac-slow 2 COMPILED_US PER_OP_US AGREED
 *
 * AGREED counts the processes that found the program slower. A clear loss
 * (compiled slower than per op by XG_VERDICT_SURE or more) is taken from
 * one process. A close one is not: on a shared machine the best of a few
 * runs moves by several percent, and a verdict on disk is kept for good.
 * The next process that loads the program runs it compiled and measures
 * it again (compile_policy.c); if it loses again the verdict is rewritten
 * agreed by two and holds from then on, and if it wins the verdict is
 * removed (demote.c). A line of another version is no verdict: the
 * program is measured again.
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

bool xg_verdict_sure(const xg_verdict *v)
{
    return v->agreed >= 2 || v->compiled_us >= v->per_op_us * XG_VERDICT_SURE;
}

void xg_verdict_store(xg_disk *d, const char *key, const xg_verdict *v)
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
    bool ok =
        f && fprintf(f, "xlac-slow 2 %.3f %.3f %d\n", v->compiled_us, v->per_op_us, v->agreed) > 0;
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

void xg_verdict_drop(xg_disk *d, const char *key)
{
    if (!d->dir || d->readonly)
        return;
    char path[4200];
    xg_verdict_path(d, key, path, sizeof path);
    if (unlink(path) != 0 && errno != ENOENT)
        fprintf(stderr, "xlac: warning: cannot remove the demotion verdict %s (%s)\n", path,
                strerror(errno));
}

bool xg_verdict_load(xg_disk *d, const char *key, xg_verdict *v)
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
    return sscanf(line, "xlac-slow %d %lf %lf %d%c", &version, &v->compiled_us, &v->per_op_us,
                  &v->agreed, &end) == 5 &&
           version == 2 && end == '\n' && v->compiled_us > v->per_op_us && v->per_op_us > 0 &&
           v->agreed >= 1;
}
