/*
 * The timeline (xlac/trace.h): complete events ("ph":"X") kept in memory
 * under one mutex and written at the end as Chrome trace-event JSON:
 *
 *   {"traceEvents":[
 *   {"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"main"}},
 *   {"name":"a","cat":"exp","ph":"X","ts":0.000,"dur":1.250,"pid":1,"tid":1,"args":{...}},
 *   ...],"displayTimeUnit":"ms"}
 *
 * A thread's track id is given on its first event (a thread-local number,
 * from 1); device streams use ids from GPU_TID. Timestamps are written
 * relative to the earliest event, so a trace begins at 0.
 *
 * Several files may be recorded at once (two sessions that profile, each
 * to its own file): each recording keeps its path, its start time and its
 * owner, and events carry the owner of the thread that recorded them
 * (xe_trace_owner_swap: a session while it runs, its background compiles).
 * A file gets the events that ended after its start and that are its
 * owner's or nobody's (owner 0); a recording of owner 0 gets every event.
 * An event no file takes is not kept, and those no file still takes are
 * dropped when a file is written.
 * Recording is
 * best effort (an event that cannot be stored is dropped); writing checks
 * every write, and the file is written whole or not at all (xe_publish: a
 * temp file beside it, renamed into place), so a full disk leaves the
 * previous trace as it was and the failure is kept for the caller's exit
 * status (xe_trace_failed). An interrupted process writes what it has,
 * marked "interrupted" (xe_trace_interrupted).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/io.h"
#include "xlac/session.h"
#include "xlac/trace.h"
#include "xlac/vec.h"

#define GPU_TID 1000 /* the track of GPU:N's stream is GPU_TID + N */

typedef struct event {
    char *name, *cat, *args; /* args: the inside of a JSON object, or NULL */
    double start, dur;       /* microseconds on xe_now_us's clock */
    int tid;
    int owner; /* the recording thread's owner; 0: nobody's */
} event;

typedef struct recording {
    char *path;
    int users;     /* starts for this path not yet stopped */
    int owner;     /* whose events the file takes; 0: everyone's */
    double start;  /* xe_now_us at the first start */
    double family; /* xe_publish's rule; 0: this process's file replaces the previous one */
} recording;

typedef struct track_name {
    int tid;
    char *name;
} track_name;

atomic_int xe_trace_mode;

static struct {
    pthread_mutex_t lock;
    recording *recs; /* the files being recorded */
    int n_recs, cap_recs;
    event *ev;
    size_t n, cap;
    track_name *names;
    int n_names, cap_names;
    double run_us; /* XE_TRACE_TOTALS */
    unsigned long long runs;
    int interrupted; /* the signal that interrupted the run, 0: none */
    bool failed;     /* a write failed: why */
    char why[sizeof(((xe_status *)0)->msg)];
} T = {.lock = PTHREAD_MUTEX_INITIALIZER};

static atomic_int next_tid = 1;
static _Thread_local int my_tid;
static _Thread_local int my_owner;

int xe_trace_owner_swap(int owner)
{
    int was = my_owner;
    my_owner = owner;
    return was;
}

int xe_trace_owner(void)
{
    return my_owner;
}

static int thread_tid(void)
{
    if (!my_tid)
        my_tid = atomic_fetch_add(&next_tid, 1);
    return my_tid;
}

/* Under the lock: sets (or replaces) the name of track tid. */
static void set_name(int tid, const char *name)
{
    for (int i = 0; i < T.n_names; i++) {
        if (T.names[i].tid == tid) {
            char *copy = strdup(name);
            if (copy) {
                free(T.names[i].name);
                T.names[i].name = copy;
            }
            return;
        }
    }
    track_name *grown = XE_VEC_GROW(T.names, T.cap_names, T.n_names + 1, 8);
    if (!grown)
        return;
    T.names = grown;
    if ((T.names[T.n_names].name = strdup(name)))
        T.names[T.n_names++].tid = tid;
}

void xe_trace_name_thread(const char *name)
{
    int tid = thread_tid();
    pthread_mutex_lock(&T.lock);
    set_name(tid, name);
    pthread_mutex_unlock(&T.lock);
}

/* Under the lock: the recording of path, or NULL. */
static recording *find(const char *path)
{
    for (int i = 0; i < T.n_recs; i++)
        if (strcmp(T.recs[i].path, path) == 0)
            return &T.recs[i];
    return NULL;
}

xe_code xe_trace_start_for(const char *path, int owner, xe_status *st)
{
    if (!path || !*path)
        return xe_fail(st, XE_ERR_USAGE, "trace: no file name");
    int tid = thread_tid();
    double now = xe_now_us();
    pthread_mutex_lock(&T.lock);
    xe_code c = XE_OK;
    recording *r = find(path);
    if (r) { /* joined: a file two owners share takes every event */
        r->users++;
        if (r->owner != owner)
            r->owner = 0;
    } else {
        recording *grown = XE_VEC_GROW(T.recs, T.cap_recs, T.n_recs + 1, 4);
        char *copy = grown ? strdup(path) : NULL;
        if (grown)
            T.recs = grown;
        if (!copy)
            c = xe_fail(st, XE_ERR_NOMEM, "out of memory starting a trace");
        else
            T.recs[T.n_recs++] = (recording){copy, 1, owner, now, 0};
    }
    if (c == XE_OK) {
        set_name(tid, "main");
        atomic_fetch_or(&xe_trace_mode, XE_TRACE_EVENTS);
    }
    pthread_mutex_unlock(&T.lock);
    return c;
}

xe_code xe_trace_start(const char *path, xe_status *st)
{
    return xe_trace_start_for(path, 0, st);
}

/* Whether recording r's file takes event e. */
static bool takes(const recording *r, const event *e)
{
    return (!r->owner || !e->owner || e->owner == r->owner) && e->start + e->dur >= r->start;
}

/* Under the lock: whether any file being recorded takes event e. */
static bool wanted(const event *e)
{
    for (int k = 0; k < T.n_recs; k++)
        if (takes(&T.recs[k], e))
            return true;
    return false;
}

static bool grow(void)
{
    if (T.n < T.cap)
        return true;
    size_t cap = T.cap ? T.cap * 2 : 1024;
    event *ev = realloc(T.ev, cap * sizeof *ev);
    if (!ev)
        return false;
    T.ev = ev;
    T.cap = cap;
    return true;
}

static void add(int tid, const char *name, const char *cat, double start_us, double dur_us,
                const char *args)
{
    event e = {strdup(name ? name : ""),
               strdup(cat ? cat : ""),
               args ? strdup(args) : NULL,
               start_us,
               isfinite(dur_us) && dur_us > 0 ? dur_us : 0,
               tid,
               my_owner};
    bool ok = e.name && e.cat && (!args || e.args) && isfinite(start_us);
    pthread_mutex_lock(&T.lock);
    ok = ok && wanted(&e) && grow(); /* a session nobody profiles keeps nothing */
    if (ok)
        T.ev[T.n++] = e;
    pthread_mutex_unlock(&T.lock);
    if (!ok) {
        free(e.name);
        free(e.cat);
        free(e.args);
    }
}

void xe_trace_slice(const char *name, const char *cat, double start_us, double dur_us,
                    const char *args)
{
    add(thread_tid(), name, cat, start_us, dur_us, args);
}

void xe_trace_slice_gpu(int device, const char *name, const char *cat, double start_us,
                        double dur_us, const char *args)
{
    char track[32];
    snprintf(track, sizeof track, "GPU:%d stream", device);
    pthread_mutex_lock(&T.lock);
    set_name(GPU_TID + device, track);
    pthread_mutex_unlock(&T.lock);
    add(GPU_TID + device, name, cat, start_us, dur_us, args);
}

void xe_trace_totals_on(void)
{
    atomic_fetch_or(&xe_trace_mode, XE_TRACE_TOTALS);
}

void xe_trace_run_add(double us)
{
    pthread_mutex_lock(&T.lock);
    T.run_us += us;
    T.runs++;
    pthread_mutex_unlock(&T.lock);
}

double xe_trace_run_totals(unsigned long long *runs)
{
    pthread_mutex_lock(&T.lock);
    double us = T.run_us;
    if (runs)
        *runs = T.runs;
    pthread_mutex_unlock(&T.lock);
    return us;
}

void xe_trace_json_escape(const char *s, char *buf, size_t len)
{
    size_t k = 0;
    for (; s && *s && k + 7 < len; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            k += (size_t)snprintf(buf + k, len - k, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            k += (size_t)snprintf(buf + k, len - k, "\\u%04x", c);
        else
            buf[k++] = (char)c;
    }
    if (len)
        buf[k < len ? k : len - 1] = '\0';
}

/* A JSON string literal. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static double earliest(const recording *r)
{
    double t = INFINITY;
    for (size_t i = 0; i < T.n; i++)
        if (takes(r, &T.ev[i]) && T.ev[i].start < t)
            t = T.ev[i].start;
    return isfinite(t) ? t : r->start;
}

static xe_code write_events(FILE *f, void *user, xe_status *st)
{
    (void)st;
    const recording *r = user;
    double origin = earliest(r);
    fputs("{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
          "\"args\":{\"name\":\"xlac\"}}",
          f);
    for (int i = 0; i < T.n_names; i++) {
        fprintf(
            f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":",
            T.names[i].tid);
        json_string(f, T.names[i].name);
        fputs("}}", f);
    }
    for (size_t i = 0; i < T.n; i++) {
        const event *e = &T.ev[i];
        if (!takes(r, e))
            continue;
        fputs(",\n{\"name\":", f);
        json_string(f, e->name);
        fputs(",\"cat\":", f);
        json_string(f, e->cat);
        fprintf(f, ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":%d", e->start - origin,
                e->dur, e->tid);
        if (e->args)
            fprintf(f, ",\"args\":{%s}}", e->args);
        else
            fputc('}', f);
    }
    if (T.interrupted) /* the run was cut short: what came before the signal */
        fprintf(
            f,
            ",\n{\"name\":\"interrupted\",\"ph\":\"i\",\"s\":\"g\",\"ts\":%.3f,\"pid\":1,\"tid\":0,"
            "\"args\":{\"signal\":%d}}",
            xe_now_us() - origin, T.interrupted);
    fprintf(f, "\n],\"displayTimeUnit\":\"ms\"%s}\n", T.interrupted ? ",\"interrupted\":true" : "");
    return XE_OK;
}

/* Under the lock: writes recording r's file. */
static xe_code write_file(const recording *r, xe_status *st)
{
    const char *path = r->path;
    static char
        last[4200]; /* this process's last trace (under the lock): a later one replaces it */
    char used[4200];
    double family = strcmp(last, path) ? r->family : 0;
    xe_code c = xe_publish(path, write_events, (void *)r, family, used, sizeof used, st);
    if (c == XE_OK)
        snprintf(last, sizeof last, "%s", used);
    if (c != XE_OK) {
        T.failed = true;
        snprintf(T.why, sizeof T.why, "%s", st->msg);
    } else if (strcmp(used, path) != 0) {
        fprintf(
            stderr,
            "xlac: note: trace %s was written by another process of this run; this one's is %s\n",
            path, used);
    }
    return c;
}

/* Under the lock: frees event i's strings. */
static void free_event(size_t i)
{
    free(T.ev[i].name);
    free(T.ev[i].cat);
    free(T.ev[i].args);
}

/* Under the lock: drops every event and name (no recording is left). */
static void clear(void)
{
    for (size_t i = 0; i < T.n; i++)
        free_event(i);
    for (int i = 0; i < T.n_names; i++)
        free(T.names[i].name);
    free(T.ev);
    free(T.names);
    free(T.recs);
    T.ev = NULL;
    T.names = NULL;
    T.recs = NULL;
    T.n = T.cap = 0;
    T.n_names = T.cap_names = 0;
    T.n_recs = T.cap_recs = 0;
    atomic_fetch_and(&xe_trace_mode, ~XE_TRACE_EVENTS);
}

/* Under the lock: ends recording r (written or not); keeps the events the others still take. */
static void end(recording *r)
{
    free(r->path);
    *r = T.recs[--T.n_recs];
    if (!T.n_recs) {
        clear();
        return;
    }
    size_t kept = 0;
    for (size_t i = 0; i < T.n; i++) {
        if (wanted(&T.ev[i]))
            T.ev[kept++] = T.ev[i];
        else
            free_event(i);
    }
    T.n = kept;
}

void xe_trace_set_family(const char *path, double start)
{
    pthread_mutex_lock(&T.lock);
    recording *r = path ? find(path) : NULL;
    if (r)
        r->family = start;
    pthread_mutex_unlock(&T.lock);
}

bool xe_trace_failed(xe_status *st)
{
    pthread_mutex_lock(&T.lock);
    bool failed = T.failed;
    if (failed)
        xe_fail(st, XE_ERR_IO, "%s", T.why);
    pthread_mutex_unlock(&T.lock);
    return failed;
}

/* Under the lock: leaves path's recording; the last to leave writes the file when write. */
static xe_code leave(const char *path, bool write, xe_status *st)
{
    recording *r = path ? find(path) : NULL;
    if (!r || --r->users > 0)
        return XE_OK;
    xe_code c = write ? write_file(r, st) : XE_OK;
    end(r);
    return c;
}

void xe_trace_discard(const char *path)
{
    pthread_mutex_lock(&T.lock);
    (void)leave(path, false, NULL);
    pthread_mutex_unlock(&T.lock);
}

void xe_trace_mark_interrupted(int signo)
{
    pthread_mutex_lock(&T.lock);
    T.interrupted = signo;
    pthread_mutex_unlock(&T.lock);
}

xe_code xe_trace_interrupted(int signo, xe_status *st)
{
    pthread_mutex_lock(&T.lock);
    xe_code c = XE_OK;
    if (T.n_recs > 0)
        T.interrupted = signo;
    while (T.n_recs > 0) { /* every file, what it has; the first failure is the one told */
        xe_status each;
        xe_status_clear(&each);
        if (write_file(&T.recs[T.n_recs - 1], &each) != XE_OK && c == XE_OK) {
            c = each.code;
            *st = each;
        }
        end(&T.recs[T.n_recs - 1]);
    }
    pthread_mutex_unlock(&T.lock);
    return c;
}

xe_code xe_trace_stop(const char *path, xe_status *st)
{
    pthread_mutex_lock(&T.lock);
    xe_code c = leave(path, true, st);
    pthread_mutex_unlock(&T.lock);
    return c;
}
