/*
 * Status codes and the message buffer that every fallible xlac function
 * fills. A plugin lives inside someone else's process, so nothing here
 * exits or aborts: functions return a code and write a sentence that names
 * the file, line, node and op involved.
 */
#ifndef XLAC_STATUS_H
#define XLAC_STATUS_H

#include <stddef.h>

typedef enum xe_code {
    XE_OK = 0,          /* success */
    XE_ERR_USAGE,       /* bad command line, flag or API argument */
    XE_ERR_PARSE,       /* malformed graph text */
    XE_ERR_GRAPH,       /* well-formed graph that is invalid (shapes, dtypes, names) */
    XE_ERR_IO,          /* file could not be read or written */
    XE_ERR_NOMEM,       /* allocation failed */
    XE_ERR_UNSUPPORTED, /* op, dtype or device combination not implemented */
    XE_ERR_DEVICE,      /* CUDA runtime or driver error */
    XE_ERR_RUNTIME,     /* any other failure while running a graph */
    XE_ERR_COMPILE,     /* generated code failed to compile or load */
} xe_code;

#define XE_STATUS_MSG_MAX 2048

typedef struct xe_status {
    xe_code code;                /* XE_OK until something fails */
    char msg[XE_STATUS_MSG_MAX]; /* one or more lines, no trailing newline */
} xe_status;

/* Resets to XE_OK with an empty message. */
void xe_status_clear(xe_status *st);

/* Sets code and a printf-style message; returns code for `return xe_fail(...)`. */
xe_code xe_fail(xe_status *st, xe_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends context ("while running node t1 (add): ") to an existing message. */
xe_code xe_status_prefix(xe_status *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Short name of a code, e.g. "parse error". */
const char *xe_code_name(xe_code code);

/* Process exit code for a status: 0 ok, 2 usage/graph errors, 1 otherwise. */
int xe_code_exit_status(xe_code code);

#endif
