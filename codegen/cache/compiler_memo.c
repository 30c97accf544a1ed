/*
 * The compiler's identity in every cache key, remembered. Asking a
 * compiler costs a process (`cc --version`: a fork and an exec, more on a
 * loaded machine) or a library's load (NVRTC: 100 MB), and every start
 * paid it before its first key, runs served wholly from the disk cache
 * included. So the answer is kept:
 *   1. in memory, per cache and target, for the life of the process;
 *   2. in the disk cache's folder, as compiler-<hash>.id, under the
 *      compiler's stamp (the backend's compiler_stamp: each of its files'
 *      resolved path, device, inode, size, mtime and ctime, a stat each).
 *      A later process with the same stamp reads the id there and asks
 *      nothing. A compiler that changes (another binary at the path, an
 *      upgrade or an edit in place: a new inode, size or ctime) has another
 *      stamp, is asked again, and its new id gives new keys: no program of
 *      the old compiler is served for it.
 * A file is "XLACCID1\n<stamp>\n<id>\n", read through the disk cache's
 * reader (a regular file of ours that only we can write) and used only
 * when its stamp is the one computed now. An id is stored only when the
 * compiler answered and its stamp was the same after asking as before.
 * Without a disk cache, or with a read-only one, the compiler is asked once
 * a process, as before. Files are tiny and few (one per compiler ever used)
 * and are not evicted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_state.h"
#include "compile.h"

#define MEMO_MAGIC "XLACCID1\n"
#define MEMO_MAX 8192

/* path of the memo of stamp (its hash names it) in dir. */
static void memo_path(const char *dir, xg_target t, const xe_text *stamp, char *path, size_t len)
{
    char hex[33];
    xg_hash_hex(stamp->buf, stamp->len, hex);
    snprintf(path, len, "%s/compiler-%s-%s.id", dir, xg_target_get(t)->name, hex);
}

/* The id in text (a memo's bytes) when text was made under this very stamp; false otherwise. */
static bool memo_parse(const char *text, const xe_text *stamp, char *id, size_t len)
{
    size_t ml = strlen(MEMO_MAGIC);
    if (strncmp(text, MEMO_MAGIC, ml) != 0)
        return false;
    const char *s = text + ml, *s_end = strchr(s, '\n');
    if (!s_end || (size_t)(s_end - s) != stamp->len || memcmp(s, stamp->buf, stamp->len) != 0)
        return false;
    const char *i = s_end + 1, *i_end = strchr(i, '\n');
    if (!i_end || i_end == i || (size_t)(i_end - i) >= len || i_end[1] != '\0')
        return false;
    snprintf(id, len, "%.*s", (int)(i_end - i), i);
    return true;
}

/*
 * The id in the memo at path when it is there, ours (xg_disk_read's checks) and made under stamp.
 * A memo that is there but refused (another's, a link, writable by others) is one warning: it is
 * not used, and the answer asked anew replaces it.
 */
static bool memo_read(const char *path, const xe_text *stamp, char *id, size_t len)
{
    void *data = NULL;
    size_t n = 0;
    char why[200];
    xg_disk_read_result r = xg_disk_read(path, MEMO_MAX, &data, &n, why, sizeof why);
    if (r == XG_DISK_BAD)
        fprintf(stderr,
                "xlac: warning: compiler identity file %s not used (%s); the compiler is asked "
                "again and the file replaced\n",
                path, why);
    if (r != XG_DISK_READ)
        return false;
    ((char *)data)[n] = '\0'; /* xg_disk_read leaves a byte past the end */
    bool ok = strlen(data) == n && memo_parse(data, stamp, id, len);
    free(data);
    return ok;
}

/* Writes the memo (a temp file renamed into place: readers never see half of one); failures are
 * quiet. */
static void memo_write(const char *path, const xe_text *stamp, const char *id)
{
    char tmp[4400];
    const char *slash = strrchr(path, '/');
    snprintf(tmp, sizeof tmp, "%.*s/.%s.xlac.XXXXXX", (int)(slash - path), path, slash + 1);
    int fd =
        mkstemp(tmp); /* 0600; a ".xlac." temp left by a killed writer is swept after an hour */
    if (fd < 0)
        return;
    xe_text t = {0};
    xe_text_printf(&t, "%s%.*s\n%s\n", MEMO_MAGIC, (int)stamp->len, stamp->buf, id);
    xe_status st;
    bool ok = !t.oom && xg_write_fd(fd, tmp, t.buf, t.len, &st) == XE_OK; /* closes fd */
    if (!ok || rename(tmp, path) != 0)
        unlink(tmp);
    xe_text_free(&t);
}

/* Whether the compiler's stamp is still stamp (it did not change while it was asked). */
static bool same_stamp(xg_cache *c, xg_target t, const xe_text *stamp)
{
    xe_text now = {0};
    bool same = xg_compiler_stamp(t, &c->o, &now) && now.len == stamp->len && !now.oom &&
                !memcmp(now.buf, stamp->buf, stamp->len);
    xe_text_free(&now);
    return same;
}

/* 2., then asking: the id into c->compiler_id[t]. */
static void tell(xg_cache *c, xg_target t)
{
    char *id = c->compiler_id[t], path[4300] = "";
    size_t len = sizeof c->compiler_id[t];
    xe_text stamp = {0};
    bool stamped = c->disk.dir && xg_compiler_stamp(t, &c->o, &stamp) && !stamp.oom;
    if (stamped) {
        memo_path(c->disk.dir, t, &stamp, path, sizeof path);
        if (memo_read(path, &stamp, id, len)) {
            xe_text_free(&stamp);
            return;
        }
    }
    bool known = false;
    snprintf(id, len, "%s", xg_compiler_id(t, &c->o, &known));
    if (stamped && known && !c->disk.readonly && !strchr(id, '\n') && same_stamp(c, t, &stamp))
        memo_write(path, &stamp, id);
    xe_text_free(&stamp);
}

const char *xg_cache_compiler_id(xg_cache *c, xg_target t)
{
    pthread_mutex_lock(&c->compiler_lock);
    if (!c->compiler_told[t]) { /* 1. */
        tell(c, t);
        c->compiler_told[t] = true;
    }
    pthread_mutex_unlock(&c->compiler_lock);
    return c->compiler_id[t];
}
