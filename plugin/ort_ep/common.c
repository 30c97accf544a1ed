/*
 * What every file of the EP shares, below all of them: the process's EP
 * state (xo_g), the per-thread "inside the EP" flag that keeps the EP's
 * pass to the EP's own graphs, and the two conversions between an
 * onnxruntime OrtStatus and xlac's status. A leaf: it calls no other file
 * of plugin/ort_ep, so the files above it never reach each other through it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xo.h"

xo_global xo_g;

static _Thread_local bool in_ep;

bool xo_in_ep(void)
{
    return in_ep;
}

void xo_enter(bool on)
{
    in_ep = on;
}

OrtStatus *xo_status(const xo_api *a, int code, const char *fmt, ...)
{
    char msg[XE_STATUS_MSG_MAX + 64];
    int n = snprintf(msg, sizeof msg, "xlac: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    return XO(a->ort, CreateStatus)(code, msg);
}

xe_code xo_check(const xo_api *a, OrtStatus *s, const char *what, xe_status *st)
{
    if (!s)
        return XE_OK;
    xe_fail(st, XE_ERR_RUNTIME, "onnxruntime's %s: %s", what, XO(a->ort, GetErrorMessage)(s));
    XO(a->ort, ReleaseStatus)(s);
    return st->code;
}
