/*
 * Folders: mkdir -p, shared by the CLI (--save-outputs), the disk cache,
 * the dumps and xlac-compile.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "xlac/io.h"

static xe_code make_dir(const char *path, unsigned mode, xe_status *st)
{
    struct stat sb;
    if (mkdir(path, (mode_t)mode) == 0 || (errno == EEXIST && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)))
        return XE_OK;
    return xe_fail(st, XE_ERR_IO, "%s: cannot create the folder: %s", path,
                   errno == EEXIST ? "a file of that name exists" : strerror(errno));
}

xe_code xe_mkdirs(const char *path, unsigned mode, xe_status *st)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return xe_fail(st, XE_ERR_USAGE, "%s: path too long", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/' || p[-1] == '/')
            continue;
        *p = '\0';
        if (make_dir(buf, mode, st) != XE_OK)
            return st->code;
        *p = '/';
    }
    return make_dir(buf, mode, st);
}
