/*
 * The backend registry: the look-ups the rest of codegen/ and the plugin
 * use to reach a target by id, by name or by the executor device it runs
 * on. The table of targets is the build's (CMakeLists.txt generates
 * gen/xg_targets.c from XG_TARGETS, as it does the executor's device
 * registry), so this file names no target and the targets, which call the
 * emitter and the planner, are never called back from here. Adding a
 * target is one folder under targets/ plus its name in XG_TARGETS.
 */
#include <string.h>

#include "backend.h"

const xg_backend *xg_backend_for(xg_target target)
{
    return xg_backend_table[target];
}

const xg_target_info *xg_target_get(xg_target t)
{
    return &xg_backend_table[t]->info;
}

bool xg_target_by_name(const char *name, xg_target *t)
{
    for (size_t i = 0; i < xg_backend_count; i++)
        if (strcmp(name, xg_backend_table[i]->info.name) == 0) {
            *t = xg_backend_table[i]->target;
            return true;
        }
    return false;
}

xg_target xg_target_for_device(xe_device dev)
{
    for (size_t i = 0; i < xg_backend_count; i++)
        if (xg_backend_table[i]->info.device == dev)
            return xg_backend_table[i]->target;
    return xg_host_target();
}

xg_target xg_host_target(void)
{
    for (size_t i = 0; i < xg_backend_count; i++)
        if (xg_backend_table[i]->info.host_program)
            return xg_backend_table[i]->target;
    return xg_backend_table[0]->target;
}

const char *xg_compiler_words(xg_target t, bool is_ptx)
{
    return xg_backend_table[t]->compiler_words(is_ptx);
}

const char *xg_compiler_id(xg_target target, const xg_options *o, bool *known)
{
    bool k = false;
    const char *id = xg_backend_for(target)->compiler_id(o, &k);
    if (known)
        *known = k;
    return id;
}

bool xg_compiler_stamp(xg_target target, const xg_options *o, xe_text *out)
{
    const xg_backend *b = xg_backend_for(target);
    return b->compiler_stamp && b->compiler_stamp(o, out);
}

