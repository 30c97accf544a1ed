/*
 * What each device slot is without loading anything: the built-in device
 * of a slot (from the generated registry, xe_device_registry), else the
 * slot's own facts (name, word, label, whether placement may choose it),
 * a table that is never available. A leaf below the device registry's two
 * halves: device.c (the calls through a slot's table) and device_load.c
 * (loading a device library, whose table must repeat these facts).
 */
#include <stddef.h>

#include "device_impl.h"

static const char *absent_reason(void)
{
    return "xlac was built without this device";
}

static bool never(void)
{
    return false;
}

/* Each slot's own facts, and the table of a slot with no device. */
static const xe_device_ops absent[XE_DEV_COUNT] = {
    [XE_DEV_CPU] = {.slot = XE_DEV_CPU, .name = "CPU:0", .xla_name = "XLA_CPU:0", .word = "cpu", .label = "CPU",
                    .available = never, .unavailable_reason = absent_reason},
    [XE_DEV_GPU] = {.slot = XE_DEV_GPU, .name = "GPU:0", .xla_name = "XLA_GPU:0", .word = "gpu", .label = "CUDA",
                    .auto_place = true, .available = never, .unavailable_reason = absent_reason},
    [XE_DEV_EXTRA] = {.slot = XE_DEV_EXTRA, .name = "EXTRA:0", .xla_name = "XLA_EXTRA:0", .word = "extra", .label = "extra",
                      .available = never, .unavailable_reason = absent_reason},
};

const xe_device_ops *xe_device_builtin(xe_device dev)
{
    for (int i = 0; xe_device_registry[i]; i++)
        if (xe_device_registry[i]->slot == dev)
            return xe_device_registry[i];
    return NULL;
}

const xe_device_ops *xe_device_slot_facts(xe_device dev)
{
    const xe_device_ops *b = xe_device_builtin(dev);
    return b ? b : &absent[dev < XE_DEV_COUNT ? dev : XE_DEV_EXTRA];
}
