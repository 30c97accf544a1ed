/*
 * Files and folders, the few rules every reader and writer of the tree
 * shares (docs/files-and-signals.md):
 *   - mkdir -p, for the CLI (--save-outputs), the disk cache, the dumps
 *     and xlac-compile;
 *   - a file is read only once it is known to be a regular file: it is
 *     opened O_NONBLOCK (a FIFO's open then returns at once instead of
 *     waiting for a writer), fstat checks what was opened, and the flag is
 *     cleared before reading;
 *   - a file named by a model (ONNX external data) is opened beneath the
 *     model's folder: openat2 with RESOLVE_BENEATH where the kernel has it
 *     (Linux 5.6), else both paths resolved with realpath and compared, so
 *     that neither "..", an absolute path nor a symbolic link leads out;
 *   - a file xlac writes (a dump, a replay folder, a saved output, an
 *     ahead-of-time build) is created through xe_fcreate: never through a
 *     symbolic link planted at its name, never blocking on a FIFO there.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "xlac/io.h"

static xe_code make_dir(const char *path, unsigned mode, xe_status *st)
{
    struct stat sb;
    if (mkdir(path, (mode_t)mode) == 0 ||
        (errno == EEXIST && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)))
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

/* fd (opened O_NONBLOCK) as a blocking descriptor of a regular file; closed, -1 with *st set, if
 * not one. */
static int regular_only(int fd, const char *path, xe_status *st)
{
    struct stat sb;
    const char *why = NULL;
    if (fstat(fd, &sb) != 0)
        why = strerror(errno);
    else if (!S_ISREG(sb.st_mode))
        why = S_ISFIFO(sb.st_mode)  ? "not a regular file (a FIFO)"
              : S_ISDIR(sb.st_mode) ? "not a regular file (a folder)"
                                    : "not a regular file";
    else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
        why = strerror(errno);
    if (!why)
        return fd;
    close(fd);
    xe_fail(st, XE_ERR_IO, "%s: %s", path, why);
    return -1;
}

int xe_open_regular(const char *path, xe_status *st)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        xe_fail(st, XE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    return regular_only(fd, path, st);
}

#ifdef SYS_openat2
/* struct open_how of <linux/openat2.h>, spelled out so that older headers build. */
struct xe_open_how {
    unsigned long long flags, mode, resolve;
};
#define XE_RESOLVE_BENEATH 0x08
#endif

/* The kernel's answer: fd, or -1 with errno (ENOSYS where openat2 is missing). */
static int open_beneath_kernel(const char *dir, const char *rel)
{
#ifdef SYS_openat2
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    struct xe_open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
                              .resolve = XE_RESOLVE_BENEATH};
    int fd = (int)syscall(SYS_openat2, dfd, rel, &how, sizeof how);
    int e = errno;
    close(dfd);
    errno = e;
    return fd;
#else
    (void)dir, (void)rel;
    errno = ENOSYS;
    return -1;
#endif
}

/* Without openat2: both paths resolved, the file's inside the folder's; fd or -1 (EXDEV: outside).
 */
static int open_beneath_realpath(const char *dir, const char *path)
{
    char rdir[PATH_MAX], rfile[PATH_MAX];
    if (!realpath(dir, rdir) || !realpath(path, rfile))
        return -1;
    size_t n = strlen(rdir);
    if (strncmp(rfile, rdir, n) != 0 || (rfile[n] != '/' && strcmp(rdir, "/") != 0)) {
        errno = EXDEV;
        return -1;
    }
    return open(rfile, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
}

int xe_open_beneath(const char *dir, const char *rel, xe_status *st)
{
    char path[PATH_MAX];
    if (!*dir) /* a model at /m.onnx: its folder is the root */
        dir = "/";
    if (snprintf(path, sizeof path, "%s/%s", dir, rel) >= (int)sizeof path) {
        xe_fail(st, XE_ERR_USAGE, "%s/%s: path too long", dir, rel);
        return -1;
    }
    int fd = rel[0] == '/' ? (errno = EXDEV, -1) : open_beneath_kernel(dir, rel);
    if (fd < 0 && (errno == ENOSYS || errno == EPERM) &&
        rel[0] != '/') /* EPERM: a seccomp filter */
        fd = open_beneath_realpath(dir, path);
    if (fd < 0 && (errno == EXDEV || errno == ELOOP)) {
        xe_fail(st, XE_ERR_GRAPH,
                "%s: resolves outside the model's folder %s (through '..', an absolute "
                "path or a symbolic link): refused",
                path, dir);
        return -1;
    }
    if (fd < 0) {
        xe_fail(st, XE_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    return regular_only(fd, path, st);
}

/* path with ".PID" before its extension: s.json -> s.1234.json (the extension after the last '/').
 */
static void pid_name(const char *path, char *out, size_t len)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : path))
        dot = path + strlen(path);
    snprintf(out, len, "%.*s.%ld%s", (int)(dot - path), path, (long)getpid(), dot);
}

/* The temp file, complete, becomes path (or its .PID name, per the rule of xe_publish); *used says
 * which. */
static xe_code put_in_place(const char *tmp, const char *path, double family_start, char *used,
                            size_t len, xe_status *st)
{
    struct stat sb;
    snprintf(used, len, "%s", path);
    if (family_start > 0) {
        if (link(tmp, path) == 0) { /* nobody had written it: ours, atomically */
            unlink(tmp);
            return XE_OK;
        }
        /* written since this run began, by another process of it: ours goes beside it */
        if (errno == EEXIST && stat(path, &sb) == 0 &&
            (double)sb.st_mtim.tv_sec + (double)sb.st_mtim.tv_nsec / 1e9 >= family_start)
            pid_name(path, used, len);
    }
    if (rename(tmp, used) != 0) {
        int e = errno;
        unlink(tmp);
        return xe_fail(st, XE_ERR_IO, "%s: not written (%s); the previous file is left as it was",
                       used, strerror(e));
    }
    return XE_OK;
}

xe_code xe_publish(const char *path, xe_code (*write)(FILE *f, void *user, xe_status *st),
                   void *user, double family_start, char *used, size_t used_len, xe_status *st)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path) >= (int)sizeof tmp)
        return xe_fail(st, XE_ERR_USAGE, "%s: path too long", path);
    int fd = mkstemp(tmp); /* beside path: the rename stays on one file system */
    if (fd < 0)
        return xe_fail(st, XE_ERR_IO, "%s: not written (cannot create %s: %s)", path, tmp,
                       strerror(errno));
    fchmod(fd, 0644);
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        return xe_fail(st, XE_ERR_IO, "%s: not written: %s", path, strerror(errno));
    }
    xe_code c = write(f, user, st);
    int err = 0;
    if (c == XE_OK && (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0))
        err = errno ? errno : EIO;
    if (fclose(f) != 0 && !err && c == XE_OK)
        err = errno;
    if (c == XE_OK && err)
        c = xe_fail(st, XE_ERR_IO, "%s: not written (%s); the previous file is left as it was",
                    path, strerror(err));
    if (c != XE_OK) {
        unlink(tmp);
        return c;
    }
    return put_in_place(tmp, path, family_start, used, used_len, st);
}

int xe_create(const char *path, unsigned mode, xe_status *st)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                  (mode_t)mode);
    if (fd < 0) {
        int e = errno;
        struct stat sb;
        if (e == ELOOP || (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)))
            xe_fail(st, XE_ERR_IO,
                    "%s: not written: it is a symbolic link (xlac never writes through one)", path);
        else
            xe_fail(st, XE_ERR_IO, "%s: cannot write: %s", path,
                    e == ENXIO ? "it is a FIFO" : strerror(e));
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

FILE *xe_fcreate(const char *path, xe_status *st)
{
    int fd = xe_create(path, 0644, st);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        xe_fail(st, XE_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}
