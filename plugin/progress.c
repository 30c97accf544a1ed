/*
 * The progress line, on a terminal only (report.c installs it when stderr
 * is one): while clusters compile, one line that names them,
 *   xlac: compiling 3/7 clusters: cluster_2…
 * and, once a compile has run for over a second, how long each has been
 * running, refreshed four times a second by a thread of its own,
 *   xlac: compiling 3/7 clusters: cluster_2 (4.1 s), cluster_5 (0.3 s)…
 * erased when the last compile ends. K counts compiles begun, N the
 * clusters built. The state is the process's, as its terminal is.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "xlac_plugin.h"

#define SHOWN_MAX 4 /* compiles named on the line */
#define RUNNING_MAX 64

typedef struct running {
    char name[64];
    double t0; /* seconds, CLOCK_MONOTONIC */
} running;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t ticker;
    bool ticking, stop, shown;
    running r[RUNNING_MAX];
    int n;
    unsigned long long begun;
    const xlac_state *s;
} P = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Under the lock: the line, with times when with_times. */
static void draw(bool with_times)
{
    char line[512];
    unsigned long long n = atomic_load(&P.s->n_clusters);
    size_t used =
        (size_t)snprintf(line, sizeof line, "\rxlac: compiling %llu/%llu clusters:", P.begun,
                         n > P.begun ? n : P.begun);
    double t = now_s();
    for (int i = 0; i < P.n && i < SHOWN_MAX && used < sizeof line; i++) {
        if (with_times)
            used += (size_t)snprintf(line + used, sizeof line - used, "%s %s (%.1f s)",
                                     i ? "," : "", P.r[i].name, t - P.r[i].t0);
        else
            used += (size_t)snprintf(line + used, sizeof line - used, "%s %s", i ? "," : "",
                                     P.r[i].name);
    }
    if (used < sizeof line)
        snprintf(line + used, sizeof line - used, "%s\xe2\x80\xa6\033[K",
                 P.n > SHOWN_MAX ? ", ..." : "");
    fputs(line, stderr);
    fflush(stderr);
    P.shown = true;
}

static void *tick(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&P.lock);
    while (!P.stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 250 * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&P.wake, &P.lock, &until);
        if (!P.stop && P.n > 0 && now_s() - P.r[0].t0 > 1.0)
            draw(true);
    }
    pthread_mutex_unlock(&P.lock);
    return NULL;
}

/* Under the lock: the running compile's slot leaves (the oldest stay first). */
static void leave(const char *name)
{
    for (int i = 0; i < P.n; i++)
        if (strncmp(P.r[i].name, name, sizeof P.r[i].name - 1) == 0) {
            memmove(&P.r[i], &P.r[i + 1], (size_t)(P.n - i - 1) * sizeof P.r[0]);
            P.n--;
            return;
        }
}

void xlac_progress_compile(void *user, const char *name, bool begin)
{
    pthread_mutex_lock(&P.lock);
    P.s = user;
    if (begin) {
        P.begun++;
        if (P.n < RUNNING_MAX) {
            snprintf(P.r[P.n].name, sizeof P.r[P.n].name, "%s", name);
            P.r[P.n++].t0 = now_s();
        }
        if (!P.ticking && !P.stop)
            P.ticking = pthread_create(&P.ticker, NULL, tick, NULL) == 0;
        draw(false);
    } else {
        leave(name);
        if (P.n == 0 && P.shown) {
            fputs("\r\033[K", stderr);
            P.shown = false;
        }
    }
    pthread_mutex_unlock(&P.lock);
}

bool xlac_progress_shown(void)
{
    pthread_mutex_lock(&P.lock);
    bool shown = P.shown;
    pthread_mutex_unlock(&P.lock);
    return shown;
}

void xlac_progress_stop(void)
{
    pthread_mutex_lock(&P.lock);
    bool joining = P.ticking;
    P.stop = true;
    P.ticking = false;
    pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.lock);
    if (joining)
        pthread_join(P.ticker, NULL);
}
