/*
 * The process's timeline: Chrome trace-event JSON that Perfetto
 * (ui.perfetto.dev) and chrome://tracing open. One recording per file,
 * started by whoever asks first (xlac-run --trace, a session's
 * profile_path, the plugin's XLAC_FLAGS=--trace) and written when the
 * last of them stops; other files may be recorded at the same time (two
 * sessions that profile), each with the events from its start to its
 * stop that are its owner's. Every thread that records gets its own track
 * (named: "main", "xlac compile", ...); a GPU's stream has a track of its
 * own, fed with kernel times from CUDA events.
 *
 * With no trace started, a recording site costs one relaxed atomic load:
 * `if (xe_trace_on()) { ... }`.
 */
#ifndef XLAC_TRACE_H
#define XLAC_TRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "xlac/status.h"

/* Bits of xe_trace_mode. */
enum {
    XE_TRACE_EVENTS = 1, /* slices are recorded */
    XE_TRACE_TOTALS = 2, /* run times are summed (xe_trace_run_totals), for reports */
};
extern atomic_int xe_trace_mode;

/* Whether slices are being recorded. */
static inline bool xe_trace_on(void)
{
    return atomic_load_explicit(&xe_trace_mode, memory_order_relaxed) & XE_TRACE_EVENTS;
}

/*
 * Starts recording a file at path that takes every event (or joins the
 * recording of path under way). The calling thread's track is "main".
 */
xe_code xe_trace_start(const char *path, xe_status *st);
/*
 * The same for a file that takes only owner's events and nobody's (owner 0;
 * see xe_trace_owner_swap): a session's profile. Joined by another owner,
 * the file takes every event.
 */
xe_code xe_trace_start_for(const char *path, int owner, xe_status *st);
/*
 * Leaves the recording of path; the last to leave writes the file (errors name it) and the
 * events no other recording takes are freed. The file is written whole or not at all
 * (xe_publish): on failure the previous file stays. A path not being recorded: nothing.
 */
xe_code xe_trace_stop(const char *path, xe_status *st);
/* Leaves the recording of path without writing anything (a process that ran no session). */
void xe_trace_discard(const char *path);
/* A write of the trace failed in this process: true, and *st says which file and why. */
bool xe_trace_failed(xe_status *st);
/* xe_publish's family_start for path's file (a plugin inherited by the processes of one run). */
void xe_trace_set_family(const char *path, double start);

/*
 * The calling thread's events are owner's from now on (a session id; 0:
 * nobody's); returns the previous owner, to be put back.
 */
int xe_trace_owner_swap(int owner);
/* The calling thread's owner (handed to a thread that works for it). */
int xe_trace_owner(void);
/*
 * The run is being interrupted by signal signo: writes every file's events
 * so far (with an "interrupted" instant event and "interrupted":true at the
 * top) and ends the recordings. On an ordinary thread, never in a signal handler.
 */
xe_code xe_trace_interrupted(int signo, xe_status *st);
/* From now on a written trace is marked interrupted by signo. */
void xe_trace_mark_interrupted(int signo);

/*
 * One complete slice on the calling thread's track: [start_us, start_us + dur_us)
 * on xe_now_us's clock. args: the inside of a JSON object ("\"k\":1,\"s\":\"x\"")
 * or NULL. Copies everything; an event that cannot be stored is dropped.
 */
void xe_trace_slice(const char *name, const char *cat, double start_us, double dur_us,
                    const char *args);
/* The same on the track of device stream `device` (GPU:N's kernel times). */
void xe_trace_slice_gpu(int device, const char *name, const char *cat, double start_us,
                        double dur_us, const char *args);
/* Names the calling thread's track (shown by Perfetto instead of "thread N"). */
void xe_trace_name_thread(const char *name);

/* Sums of xe_session_run wall time while XE_TRACE_TOTALS is set (xe_trace_totals_on). */
void xe_trace_totals_on(void);
void xe_trace_run_add(double us);
double xe_trace_run_totals(unsigned long long *runs);

/* Appends s to a JSON string's inside (quotes, backslashes, control bytes escaped), into buf[len].
 */
void xe_trace_json_escape(const char *s, char *buf, size_t len);

#endif
