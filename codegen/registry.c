/*
 * The backend registry: every code-generation target of this build, one
 * line each, and the look-ups the rest of codegen/ and the plugin use to
 * reach a target by id, by name or by the executor device it runs on.
 * Adding a target is one folder under targets/ plus one line here.
 */
#include <string.h>

#include "backend.h"

static const xg_backend *const backends[] = {[XG_TARGET_C] = &xg_backend_c, [XG_TARGET_CUDA] = &xg_backend_cuda};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

const xg_backend *xg_backend_for(xg_target target)
{
    return backends[target];
}

const xg_target_info *xg_target_get(xg_target t)
{
    return &backends[t]->info;
}

bool xg_target_by_name(const char *name, xg_target *t)
{
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (strcmp(name, backends[i]->info.name) == 0) {
            *t = backends[i]->target;
            return true;
        }
    return false;
}

xg_target xg_target_for_device(xe_device dev)
{
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (backends[i]->info.device == dev)
            return backends[i]->target;
    return xg_host_target();
}

xg_target xg_host_target(void)
{
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (backends[i]->info.host_program)
            return backends[i]->target;
    return backends[0]->target;
}

const char *xg_compiler_words(xg_target t, bool is_ptx)
{
    return backends[t]->compiler_words(is_ptx);
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

