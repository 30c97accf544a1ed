/*
 * What a kind of device is without loading anything: a built-in kind's
 * own table, else the kind's facts (name, word, label, whether placement
 * may choose it), a table that is never available. The facts are for the
 * kinds a build may have as a library of its own or not at all (the GPU):
 * a message, a flag (--devices=cpu,gpu) or a CPU placement names them
 * without loading the library, and a CPU-only build still knows what
 * "gpu" is ("xlac was built without this device"). A leaf below the
 * registry's parts: device_registry.c (the instances), device_load.c
 * (loading a device library, whose table must repeat these facts).
 */
#include <stddef.h>
#include <string.h>

#include "device_impl.h"

static const char *absent_reason(void *ctx)
{
    (void)ctx;
    return "xlac was built without this device";
}

static bool never(void *ctx)
{
    (void)ctx;
    return false;
}

/* The facts of each kind that may be a module or absent, by its module's name. */
static const struct {
    const char *module;
    xe_device_ops facts;
} kinds[] = {
    {"cuda",
     {.name = "GPU",
      .xla_name = "XLA_GPU",
      .word = "gpu",
      .label = "CUDA",
      .auto_place = true,
      .available = never,
      .unavailable_reason = absent_reason}},
};

/* A kind the facts table does not know: never available. */
const xe_device_ops xe_device_unknown = {.name = "EXTRA",
                                         .xla_name = "XLA_EXTRA",
                                         .word = "extra",
                                         .label = "extra",
                                         .available = never,
                                         .unavailable_reason = absent_reason};

const xe_device_ops *xe_device_entry_facts(const xe_device_entry *e)
{
    if (!e)
        return &xe_device_unknown;
    if (e->ops)
        return e->ops;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (e->module && !strcmp(kinds[i].module, e->module))
            return &kinds[i].facts;
    return &xe_device_unknown;
}
