/*
 * What the code generator leaves on the system while it works, registered
 * so that an interrupted process can undo it (docs/files-and-signals.md):
 * the compilers it runs (each in its own process group, so Ctrl-C never
 * reaches them), the private temp folders they write in (xlac-cc-*), and
 * the disk cache's .lock files this process holds. Each is registered when
 * made and dropped when undone in the ordinary way; xg_cleanup_interrupted
 * kills and reaps every registered compiler, removes the folders (and the
 * files in them) and this process's locks. It runs on an ordinary thread
 * (the executor's interrupt watcher), not in a signal handler: it takes a
 * mutex and calls opendir.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compile.h"

#define XG_MAX_LIVE 256 /* compiles at once: the compile queue's threads, far fewer */

typedef struct live {
    pid_t child;    /* a running compiler (its process group), 0: none */
    char path[600]; /* a temp folder or a lock file, "" : none */
    bool folder;    /* path is a temp folder (removed with its files) */
} live;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static live items[XG_MAX_LIVE];
static bool stopping; /* after xg_cleanup_interrupted: nothing new is started */

static void add(pid_t child, const char *path, bool folder)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < XG_MAX_LIVE; i++) {
        if (!items[i].child && !items[i].path[0]) {
            items[i].child = child;
            snprintf(items[i].path, sizeof items[i].path, "%s", path ? path : "");
            items[i].folder = folder;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

static void drop(pid_t child, const char *path)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < XG_MAX_LIVE; i++) {
        if ((child && items[i].child == child) ||
            (path && items[i].path[0] && !strcmp(items[i].path, path))) {
            items[i] = (live){0};
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

bool xg_live_child(pid_t child)
{
    pthread_mutex_lock(&lock);
    bool ok = !stopping;
    pthread_mutex_unlock(&lock);
    if (ok)
        add(child, NULL, false);
    return ok;
}
void xg_live_child_done(pid_t child)
{
    drop(child, NULL);
}
void xg_live_folder(const char *path)
{
    add(0, path, true);
}
void xg_live_folder_done(const char *path)
{
    drop(0, path);
}
void xg_live_lock(const char *path)
{
    add(0, path, false);
}
void xg_live_lock_done(const char *path)
{
    drop(0, path);
}

/* Removes folder dir's files (it holds no folders) and the folder. */
static void remove_folder(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        char p[900];
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < (int)sizeof p)
            unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

int xg_cleanup_interrupted(void)
{
    pthread_mutex_lock(&lock);
    stopping = true;
    int n = 0;
    for (int i = 0; i < XG_MAX_LIVE; i++) { /* 1. compilers: killed, then reaped */
        if (items[i].child) {
            kill(-items[i].child, SIGKILL);
            kill(items[i].child, SIGKILL);
        }
    }
    for (int i = 0; i < XG_MAX_LIVE; i++) {
        if (items[i].child) {
            while (waitpid(items[i].child, NULL, 0) < 0 && errno == EINTR)
                ;
            items[i].child = 0;
            n++;
        }
    }
    for (int i = 0; i < XG_MAX_LIVE; i++) { /* 2. temp folders and our locks */
        if (!items[i].path[0])
            continue;
        if (items[i].folder)
            remove_folder(items[i].path);
        else
            unlink(items[i].path);
        items[i] = (live){0};
        n++;
    }
    pthread_mutex_unlock(&lock);
    return n;
}
