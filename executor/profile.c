/*
 * The Chrome trace written by --profile: complete events ("ph":"X"), one
 * per op launch, in the JSON object format that Perfetto and
 * chrome://tracing open:
 *
 *   {"traceEvents":[{"name":"t1","cat":"add","ph":"X","ts":0.000,"dur":1.250,
 *                    "pid":1,"tid":1},...],"displayTimeUnit":"ms"}
 *
 * Events are kept in the order they were recorded (a composite op's event
 * comes after those of the ops it ran). Timestamps are written relative to
 * the earliest start, so the trace begins at 0 whatever the order. A
 * profile is best effort while recording (an event that cannot be stored
 * is dropped), but writing it checks every write.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

typedef struct event {
    char *name, *cat;
    double start, dur; /* microseconds on the session's clock */
} event;

struct xe_profile {
    event *ev;
    size_t n, cap;
};

xe_profile *xe_profile_new(void)
{
    return calloc(1, sizeof(xe_profile));
}

void xe_profile_destroy(xe_profile *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->ev[i].name);
        free(p->ev[i].cat);
    }
    free(p->ev);
    free(p);
}

static bool grow(xe_profile *p)
{
    if (p->n < p->cap)
        return true;
    size_t cap = p->cap ? p->cap * 2 : 256;
    event *ev = realloc(p->ev, cap * sizeof *ev);
    if (!ev)
        return false;
    p->ev = ev;
    p->cap = cap;
    return true;
}

void xe_profile_add(xe_profile *p, const char *name, const char *cat, double start_us,
                    double dur_us)
{
    if (!p || !grow(p))
        return;
    event e = {strdup(name ? name : ""), strdup(cat ? cat : ""), start_us,
               isfinite(dur_us) && dur_us > 0 ? dur_us : 0};
    if (!e.name || !e.cat || !isfinite(start_us)) {
        free(e.name);
        free(e.cat);
        return;
    }
    p->ev[p->n++] = e;
}

/* A JSON string literal: quotes, backslashes and control bytes escaped. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static double earliest(const xe_profile *p)
{
    double t = p->n ? p->ev[0].start : 0;
    for (size_t i = 1; i < p->n; i++)
        if (p->ev[i].start < t)
            t = p->ev[i].start;
    return t;
}

static void write_events(const xe_profile *p, FILE *f)
{
    double origin = earliest(p);
    fputs("{\"traceEvents\":[", f);
    for (size_t i = 0; i < p->n; i++) {
        const event *e = &p->ev[i];
        fputs(i ? ",\n{\"name\":" : "\n{\"name\":", f);
        json_string(f, e->name);
        fputs(",\"cat\":", f);
        json_string(f, e->cat);
        fprintf(f, ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":1}", e->start - origin,
                e->dur);
    }
    fputs("\n],\"displayTimeUnit\":\"ms\"}\n", f);
}

xe_code xe_profile_write(const xe_profile *p, const char *path, xe_status *st)
{
    if (!p || !path)
        return xe_fail(st, XE_ERR_USAGE, "no profile to write");
    FILE *f = fopen(path, "w");
    if (!f)
        return xe_fail(st, XE_ERR_IO, "%s: cannot write the profile: %s", path, strerror(errno));
    write_events(p, f);
    int bad = ferror(f);
    int err = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (bad)
        return xe_fail(st, XE_ERR_IO, "%s: writing the profile failed: %s", path, strerror(err));
    return XE_OK;
}
