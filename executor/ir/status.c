/*
 * Status messages. Every fallible function fills an xe_status; callers add
 * context on the way up with xe_status_prefix, so the final message reads
 * from the outermost context to the root cause.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "xlac/status.h"

void xe_status_clear(xe_status *st)
{
    if (!st)
        return;
    st->code = XE_OK;
    st->msg[0] = '\0';
}

xe_code xe_fail(xe_status *st, xe_code code, const char *fmt, ...)
{
    if (!st)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->msg, sizeof st->msg, fmt, ap);
    va_end(ap);
    st->code = code;
    return code;
}

xe_code xe_status_prefix(xe_status *st, const char *fmt, ...)
{
    if (!st)
        return XE_ERR_RUNTIME;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    size_t np = strlen(prefix), nm = strnlen(st->msg, sizeof st->msg - 1);
    if (np > sizeof st->msg - 1)
        np = sizeof st->msg - 1;
    if (np + nm > sizeof st->msg - 1) /* keep the prefix, cut the tail */
        nm = sizeof st->msg - 1 - np;
    memmove(st->msg + np, st->msg, nm);
    memcpy(st->msg, prefix, np);
    st->msg[np + nm] = '\0';
    return st->code;
}

const char *xe_code_name(xe_code code)
{
    switch (code) {
    case XE_OK:
        return "ok";
    case XE_ERR_USAGE:
        return "usage error";
    case XE_ERR_PARSE:
        return "parse error";
    case XE_ERR_GRAPH:
        return "graph error";
    case XE_ERR_IO:
        return "I/O error";
    case XE_ERR_NOMEM:
        return "out of memory";
    case XE_ERR_UNSUPPORTED:
        return "unsupported";
    case XE_ERR_DEVICE:
        return "device error";
    case XE_ERR_RUNTIME:
        return "runtime error";
    case XE_ERR_COMPILE:
        return "compile error";
    }
    return "error";
}

int xe_code_exit_status(xe_code code)
{
    switch (code) {
    case XE_OK:
        return 0;
    case XE_ERR_USAGE:
    case XE_ERR_PARSE:
    case XE_ERR_GRAPH:
        return 2;
    default:
        return 1;
    }
}
