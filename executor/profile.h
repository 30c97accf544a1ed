/*
 * Private: a Chrome trace (the JSON array format that Perfetto and
 * chrome://tracing read). The session records one complete ("ph":"X")
 * event per op launch and writes the file when it is destroyed.
 */
#ifndef XE_PROFILE_H
#define XE_PROFILE_H

#include "xlac/status.h"

typedef struct xe_profile xe_profile;

xe_profile *xe_profile_new(void);
void xe_profile_destroy(xe_profile *p);
/* One event: name (node name), cat (op name), start and duration in microseconds. */
void xe_profile_add(xe_profile *p, const char *name, const char *cat, double start_us,
                    double dur_us);
/* Writes {"traceEvents":[...]} to path. */
xe_code xe_profile_write(const xe_profile *p, const char *path, xe_status *st);

#endif
