/*
 * The compilation cache's slices in the process's trace (xlac/trace.h):
 * each compile, and each program loaded from the disk cache, is a slice of
 * its own on the thread that did it (a background compile's thread is
 * named "xlac compile"), with what a person asks of it: the cluster, the
 * target, the compiler, how long, the cache key, and whether it worked.
 */
#include <stdio.h>

#include "cache_impl.h"
#include "xlac/trace.h"

void xg_trace_compile(const char *name, xg_target target, const char *cc, bool disk_hit,
                      const char *key, double t0_ms, double ms, bool ok)
{
    char ename[256], ekey[1024], ecc[256], slice[300], args[1800];
    xe_trace_json_escape(name, ename, sizeof ename);
    xe_trace_json_escape(key, ekey, sizeof ekey);
    const xg_target_info *t = xg_target_get(target);
    xe_trace_json_escape(disk_hit                  ? "disk cache"
                         : t && t->system_cc && cc ? cc
                                                   : xg_compiler_words(target, false),
                         ecc, sizeof ecc);
    snprintf(slice, sizeof slice, "%s %s", disk_hit ? "disk load" : "compile", name);
    snprintf(
        args, sizeof args,
        "\"cluster\":\"%s\",\"target\":\"%s\",\"compiler\":\"%s\",\"ms\":%.3f,\"cache_key\":\"%s\","
        "\"result\":\"%s\"",
        ename, t ? t->name : "?", ecc, ms, ekey, ok ? "ok" : "failed");
    xe_trace_slice(slice, disk_hit ? "disk" : "compile", t0_ms * 1e3, ms * 1e3, args);
}
