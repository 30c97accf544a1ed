/*
 * The disk cache's file system side, written for a folder that someone
 * else may have planted things in. The cache holds native code, so a file
 * is read only when it is a regular file of ours that nobody else can
 * write: it is opened without following links and without blocking (a
 * FIFO never hangs the run), checked with fstat on the opened descriptor
 * (type, owner, mode, a size cap before any byte is read), then read
 * whole. Every refusal says why, for the one warning per run that
 * cache_disk.c prints. Eviction keeps the folder under --cache_max_mb,
 * dropping the least recently used modules first (a hit touches its file),
 * and temp files that a writer killed mid-write left an hour ago.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_impl.h"
#include "xlac/vec.h"

/* Why st (of the file at path) may not be loaded; NULL when it may. */
static const char *unsafe_reason(const struct stat *sb, size_t cap)
{
    if (S_ISLNK(sb->st_mode))
        return "a symbolic link";
    if (S_ISDIR(sb->st_mode))
        return "a folder";
    if (S_ISFIFO(sb->st_mode))
        return "a FIFO";
    if (S_ISCHR(sb->st_mode) || S_ISBLK(sb->st_mode))
        return "a device";
    if (!S_ISREG(sb->st_mode))
        return "not a regular file";
    if (sb->st_uid != geteuid() && sb->st_uid != 0) /* root's: a seeded cache deployed read-only */
        return "owned by another user";
    if (sb->st_mode & 022)
        return "writable by group or others";
    if ((unsigned long long)sb->st_size > cap)
        return "larger than the size cap";
    return NULL;
}

/* Reads exactly len bytes (EINTR retried); false on a short read. */
static bool read_all(int fd, unsigned char *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

xg_disk_read_result xg_disk_read(const char *path, size_t cap, void **data, size_t *len, char *why,
                                 size_t why_len)
{
    struct stat sb;
    *data = NULL;
    *len = 0;
    if (lstat(path, &sb) != 0)
        return errno == ENOENT ? XG_DISK_ABSENT
                               : (snprintf(why, why_len, "%s", strerror(errno)), XG_DISK_BAD);
    const char *bad = unsafe_reason(&sb, cap); /* before opening: a device is never opened */
    int fd = bad ? -1 : open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (!bad && fd < 0)
        bad = errno == ELOOP ? "a symbolic link" : strerror(errno);
    if (!bad && fstat(fd, &sb) != 0) /* the file opened, not the name looked at */
        bad = strerror(errno);
    if (!bad)
        bad = unsafe_reason(&sb, cap);
    unsigned char *buf = bad ? NULL : malloc((size_t)sb.st_size + 1);
    if (!bad && !buf)
        bad = "out of memory";
    if (!bad && !read_all(fd, buf, (size_t)sb.st_size))
        bad = "shorter than its size (being written?)";
    if (!bad)
        futimens(fd, NULL); /* the eviction's "recently used" */
    if (fd >= 0)
        close(fd);
    if (bad) {
        free(buf);
        snprintf(why, why_len, "%s", bad);
        return XG_DISK_BAD;
    }
    *data = buf;
    *len = (size_t)sb.st_size;
    return XG_DISK_READ;
}

/*
 * Why a folder above path lets others replace the cache folder; NULL when none does. A folder that
 * anyone may write without the sticky bit (which /tmp has) lets anyone rename what is in it.
 */
static const char *parent_unsafe(const char *path)
{
    static _Thread_local char why[4200];
    char real[4096];
    if (!realpath(path, real))
        return NULL; /* the folder itself was checked; a vanished parent is the next open's problem
                      */
    for (char *slash = strrchr(real, '/'); slash; slash = strrchr(real, '/')) {
        *slash = '\0';
        const char *dir = real[0] ? real : "/";
        struct stat sb;
        if (stat(dir, &sb) == 0 && (sb.st_mode & S_IWOTH) && !(sb.st_mode & S_ISVTX)) {
            snprintf(why, sizeof why,
                     "its parent folder %.3900s can be written by anyone and has no sticky bit, "
                     "so anyone could replace the cache folder",
                     dir);
            return why;
        }
        if (!real[0])
            break;
    }
    return NULL;
}

const char *xg_disk_dir_unsafe(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return strerror(errno);
    if (S_ISLNK(sb.st_mode))
        return "a symbolic link";
    if (!S_ISDIR(sb.st_mode))
        return "not a folder";
    if (sb.st_uid != geteuid() && sb.st_uid != 0) /* root's: a seeded cache deployed read-only */
        return "owned by another user";
    if (sb.st_mode & 022)
        return "writable by group or others";
    return parent_unsafe(path);
}

typedef struct cached_file {
    char name[64];
    off_t size;
    struct timespec used;
} cached_file;

static int older_first(const void *a, const void *b)
{
    const struct timespec *x = &((const cached_file *)a)->used,
                          *y = &((const cached_file *)b)->used;
    if (x->tv_sec != y->tv_sec)
        return x->tv_sec < y->tv_sec ? -1 : 1;
    return x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec;
}

/* A writer's temp file (".<hex>.xlac.XXXXXX", a verdict's ".<hex>.slow.XXXXXX") untouched for an
 * hour: its process died mid-write. */
static void drop_if_stale_temp(int dfd, const char *name)
{
    struct stat sb;
    if (name[0] == '.' && (strstr(name, ".xlac.") || strstr(name, ".slow.")) &&
        fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) &&
        sb.st_mtime < time(NULL) - 3600)
        unlinkat(dfd, name, 0);
}

/* The folder's "<hex>.xlac" files (regular, not links) into *out; their total size into *total. */
static int list_modules(int dfd, DIR *d, cached_file **out, unsigned long long *total)
{
    int n = 0, cap = 0;
    *total = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        struct stat sb;
        drop_if_stale_temp(dfd, e->d_name);
        if (len < 6 || len >= sizeof((cached_file *)0)->name ||
            strcmp(e->d_name + len - 5, ".xlac") || e->d_name[0] == '.' ||
            fstatat(dfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode))
            continue;
        cached_file *m = XE_VEC_GROW(*out, cap, n + 1, 64);
        if (!m)
            break;
        *out = m;
        memcpy((*out)[n].name, e->d_name, len + 1); /* len < sizeof name: checked above */
        (*out)[n].size = sb.st_size;
        (*out)[n].used = sb.st_mtim;
        *total += (unsigned long long)sb.st_size;
        n++;
    }
    return n;
}

int xg_disk_evict(const char *dir, unsigned long long max_bytes)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    cached_file *files = NULL;
    unsigned long long total = 0;
    int n = list_modules(dirfd(d), d, &files, &total), evicted = 0;
    if (total > max_bytes && files)
        qsort(files, (size_t)n, sizeof *files, older_first);
    for (int i = 0; i < n && total > max_bytes; i++)
        if (unlinkat(dirfd(d), files[i].name, 0) == 0) {
            total -= (unsigned long long)files[i].size;
            evicted++;
        }
    free(files);
    closedir(d);
    return evicted;
}
