/*
 * The plugin's log: one level for the process (XLAC_LOG, parsed with the
 * other flags in flags.c; the Python package may change it later) and one
 * destination, stderr or a host's sink (the Python package routes the
 * lines into its logging module, xlac_log_configure in preload.c). Every
 * line of the plugin and of the code generator (xg_options.log) passes
 * here, so a level silences them all and a sink receives them all. A line
 * is written with one fputs, so lines from several threads do not mix.
 *
 * The level and the sink are process-wide as stderr is: they are what a
 * person watching the process asked for, not a session's option.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "xlac_plugin.h"

static atomic_int log_level = XG_LOG_WARNING;
static _Atomic(xlac_log_sink) log_sink;

static const char *const words[] = {"error", "warning", "info", "debug"};

int xlac_log_set(int level, xlac_log_sink sink)
{
    int was = atomic_load(&log_level);
    if (level >= XG_LOG_ERROR && level <= XG_LOG_DEBUG)
        atomic_store(&log_level, level);
    atomic_store(&log_sink, sink);
    return was;
}

bool xlac_log_on(xg_log_level level)
{
    return (int)level <= atomic_load(&log_level);
}

void xlac_log_text(xg_log_level level, const char *text)
{
    if (!xlac_log_on(level))
        return;
    xlac_log_sink sink = atomic_load(&log_sink);
    if (sink) {
        sink((int)level, text);
        return;
    }
    char line[1200];
    snprintf(line, sizeof line, "%sxlac: %s: %s\n", xlac_progress_shown() ? "\r\033[K" : "",
             words[level], text);
    fputs(line, stderr);
}

void xlac_log(xg_log_level level, const char *fmt, ...)
{
    if (!xlac_log_on(level))
        return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    xlac_log_text(level, text);
}
