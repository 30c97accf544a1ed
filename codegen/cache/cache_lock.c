/*
 * One build per signature across the processes that share a disk cache
 * (the ranks of an MPI job on one host, or any processes started at once).
 * A process that misses on disk claims the signature by creating
 * DIR/<hash>.lock with O_CREAT | O_EXCL (holding "PID HOST"); it builds,
 * stores the module (cache_disk.c's rename makes it appear whole) and
 * removes the lock. The others poll: when the module appears they load it;
 * when the lock goes away without a module (its holder failed) one of
 * them claims it in turn. A lock whose holder is dead (same host, the PID
 * is gone) or that is older than the bounded wait is stale and removed, so
 * a killed process never blocks the next run; past the bounded wait a
 * process builds for itself (correct, only duplicated work). Lock files do
 * not end in ".xlac", so eviction never counts them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_impl.h"
#include "compile.h"
#include "xlac/io.h"

/* How long a process waits for another's build before it builds for itself. */
#define XG_LOCK_WAIT_S 120.0

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void lock_path(const xg_disk *d, const char *key, char *buf, size_t len)
{
    char hex[33];
    xg_hash_hex(key, strlen(key), hex);
    snprintf(buf, len, "%s/%s.lock", d->dir, hex);
}

/* Creates the lock holding "PID HOST"; false when it exists or cannot be made (errno). */
static bool lock_create(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    char host[256] = "", text[300];
    gethostname(host, sizeof host - 1);
    int n = snprintf(text, sizeof text, "%ld %s\n", (long)getpid(), host);
    bool ok = write(fd, text, (size_t)n) == n;
    close(fd);
    xg_live_lock(path); /* removed by an interrupt's cleanup too */
    (void)ok;           /* an empty lock is judged by its age */
    return true;
}

/* A lock whose holder died (same host, no such PID) or older than the wait. */
static bool lock_stale(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return false; /* gone: not stale, just free */
    if (difftime(time(NULL), sb.st_mtime) > XG_LOCK_WAIT_S)
        return true;
    xe_status st; /* a FIFO planted at the name is not waited on */
    int fd = S_ISREG(sb.st_mode) ? xe_open_regular(path, &st) : -1;
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (fd >= 0 && !f)
        close(fd);
    long pid = 0;
    char host[256] = "", mine[256] = "";
    int got = f ? fscanf(f, "%ld %255s", &pid, host) : 0;
    if (f)
        fclose(f);
    gethostname(mine, sizeof mine - 1);
    return got == 2 && pid > 0 && strcmp(host, mine) == 0 && kill((pid_t)pid, 0) != 0 &&
           errno == ESRCH;
}

xg_claim xg_disk_claim(xg_disk *d, const char *key, xg_target target, xg_artifact **out)
{
    if (!d->dir)
        return XG_CLAIM_NONE;
    if (d->readonly) /* no lock files in a read-only seeded cache: load, else build here */
        return xg_disk_load(d, key, target, out) ? XG_CLAIM_LOADED : XG_CLAIM_NONE;
    char path[4200];
    lock_path(d, key, path, sizeof path);
    double deadline = now_s() + XG_LOCK_WAIT_S;
    for (;;) {
        if (lock_create(path)) {
            if (!xg_disk_load(d, key, target, out)) /* built between our miss and our lock? */
                return XG_CLAIM_OURS;
            unlink(path);
            xg_live_lock_done(path);
            return XG_CLAIM_LOADED;
        }
        if (errno != EEXIST)
            return XG_CLAIM_NONE;
        if (xg_disk_load(d, key, target, out))
            return XG_CLAIM_LOADED;
        if (lock_stale(path))
            unlink(path);
        else if (now_s() > deadline) {
            fprintf(
                stderr,
                "xlac: warning: waited %.0f s for another process to build %s; building it here\n",
                XG_LOCK_WAIT_S, path);
            return XG_CLAIM_NONE;
        } else
            nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
}

void xg_disk_release(xg_disk *d, const char *key)
{
    char path[4200];
    if (!d->dir || d->readonly)
        return;
    lock_path(d, key, path, sizeof path);
    unlink(path);
    xg_live_lock_done(path);
}
