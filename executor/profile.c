/*
 * The Chrome trace written by --profile: complete events ("ph":"X"), one
 * per op launch, in the JSON object format that Perfetto and
 * chrome://tracing open.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

typedef struct event {
    char *name, *cat;
    double ts, dur;
} event;

struct xe_profile {
    event *ev;
    size_t n, cap;
    double origin; /* first event's start, so timestamps start near 0 */
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

void xe_profile_add(xe_profile *p, const char *name, const char *cat, double start_us, double dur_us)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 256;
        event *ev = realloc(p->ev, cap * sizeof *ev);
        if (!ev)
            return; /* a profile is best effort: drop the event */
        p->ev = ev;
        p->cap = cap;
    }
    if (p->n == 0)
        p->origin = start_us;
    event e = {strdup(name), strdup(cat), start_us - p->origin, dur_us};
    if (!e.name || !e.cat) {
        free(e.name);
        free(e.cat);
        return;
    }
    p->ev[p->n++] = e;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

xe_code xe_profile_write(const xe_profile *p, const char *path, xe_status *st)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return xe_fail(st, XE_ERR_IO, "%s: cannot write the profile: %m", path);
    fprintf(f, "{\"traceEvents\":[\n");
    for (size_t i = 0; i < p->n; i++) {
        fprintf(f, "%s{\"name\":", i ? ",\n" : "");
        json_string(f, p->ev[i].name);
        fprintf(f, ",\"cat\":");
        json_string(f, p->ev[i].cat);
        fprintf(f, ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":1}", p->ev[i].ts,
                p->ev[i].dur);
    }
    fprintf(f, "\n],\"displayTimeUnit\":\"ms\"}\n");
    if (fclose(f) != 0)
        return xe_fail(st, XE_ERR_IO, "%s: write failed", path);
    return XE_OK;
}
