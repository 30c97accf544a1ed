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

int xg_target_count(void)
{
    return (int)xg_backend_count;
}

xg_target xg_target_named(const char *name)
{
    for (size_t i = 0; i < xg_backend_count; i++)
        if (strcmp(name, xg_backend_table[i]->info.name) == 0)
            return (xg_target)i;
    return -1;
}

bool xg_target_by_name(const char *name, xg_target *t)
{
    xg_target found = xg_target_named(name);
    if (found >= 0)
        *t = found;
    return found >= 0;
}

xg_target xg_target_for_device(xe_device dev)
{
    const char *word = xe_device_word(dev);
    for (size_t i = 0; i < xg_backend_count; i++)
        if (strcmp(xg_backend_table[i]->info.device, word) == 0)
            return (xg_target)i;
    return xg_host_target();
}

xe_device xg_target_device(xg_target t)
{
    xe_device dev = xe_device_get(xg_backend_table[t]->info.device, 0);
    return dev < 0 ? XE_DEV_CPU : dev;
}

xg_target xg_host_target(void)
{
    for (size_t i = 0; i < xg_backend_count; i++)
        if (xg_backend_table[i]->info.host_program)
            return (xg_target)i;
    return 0;
}

const char *xg_compiler_words(xg_target t, bool is_ptx)
{
    return xg_backend_table[t]->compiler.compiler_words(is_ptx);
}

const char *xg_compiler_id(xg_target target, const xg_options *o, bool *known)
{
    bool k = false;
    const char *id = xg_backend_for(target)->compiler.compiler_id(o, &k);
    if (known)
        *known = k;
    return id;
}

bool xg_compiler_stamp(xg_target target, const xg_options *o, xe_text *out)
{
    const xg_backend *b = xg_backend_for(target);
    return b->compiler.compiler_stamp && b->compiler.compiler_stamp(o, out);
}
