/*
 * The code generator's lines (warnings, and at info one per compile): each
 * is formatted here and handed to the host's log (xg_options.log: the
 * plugin's, which filters by XLAC_LOG and may send it to Python's logging),
 * or, without one, written to stderr as "xlac: warning: ..." when it is a
 * warning or an error.
 */
#include <stdarg.h>
#include <stdio.h>

#include "xg.h"

static const char *const words[] = {"error", "warning", "info", "debug"};

void xg_log(const xg_options *o, xg_log_level level, const char *fmt, ...)
{
    if (!o->log && level > XG_LOG_WARNING)
        return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (o->log)
        o->log(level, text);
    else
        fprintf(stderr, "xlac: %s: %s\n", words[level], text);
}
