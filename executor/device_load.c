/*
 * Devices that are libraries of their own. The CUDA device, its kernels
 * and what they link (the CUDA runtime, cuBLAS, NCCL: over half a
 * gigabyte) are libxlac_cuda.so, not part of libxlac_executor.so, so a
 * program that runs only on the CPU (an ahead-of-time artifact copied to
 * a CPU server, docs/aot.md) needs none of them. The first time anything
 * asks about such a device's slot, the library is loaded with dlopen from
 * the folder libxlac_executor.so itself was loaded from, and its table
 * (`xe_device_NAME`) answers for the slot from then on. A library that
 * is absent or cannot be loaded leaves the slot unavailable, with the
 * reason kept for the message a user sees when they ask for that device
 * ("CUDA device library not found: ..."). Libraries are never unloaded.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "device_impl.h"

static struct {
    pthread_mutex_t lock;
    atomic_bool tried[XE_DEV_COUNT]; /* set (release) once ops/error are final */
    const xe_device_ops *ops[XE_DEV_COUNT];
    char error[XE_DEV_COUNT][640];
} mods = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const xe_device_module *module_of(xe_device dev)
{
    for (int i = 0; xe_device_modules[i].slot != XE_DEV_COUNT; i++)
        if (xe_device_modules[i].slot == dev)
            return &xe_device_modules[i];
    return NULL;
}

bool xe_device_module_built(xe_device dev)
{
    return module_of(dev) != NULL;
}

/* m->library in the folder of the object this code is in (libxlac_executor.so). */
static void library_path(const xe_device_module *m, char *path, size_t cap)
{
    Dl_info info;
    const char *self = dladdr(&mods, &info) && info.dli_fname ? info.dli_fname : "";
    const char *slash = strrchr(self, '/');
    if (slash)
        snprintf(path, cap, "%.*s/%s", (int)(slash - self), self, m->library);
    else
        snprintf(path, cap, "%s", m->library); /* no folder known: the loader's search path */
}

/* Loads m into mods.ops[slot], or says why not in mods.error[slot]. */
static void load(const xe_device_module *m)
{
    char path[512], *err = mods.error[m->slot];
    size_t cap = sizeof mods.error[m->slot];
    library_path(m, path, sizeof path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        if (access(path, F_OK) != 0)
            snprintf(err, cap, "%s device library not found: %s", m->label, path);
        else
            snprintf(err, cap, "%s device library %s could not be loaded: %s", m->label, path, why ? why : "?");
        return;
    }
    const xe_device_ops *o = dlsym(h, m->table);
    if (!o || o->slot != m->slot) {
        snprintf(err, cap, "%s device library %s has no device table %s for its slot", m->label, path, m->table);
        return;
    }
    mods.ops[m->slot] = o;
}

const xe_device_ops *xe_device_module_ops(xe_device dev)
{
    if (dev >= XE_DEV_COUNT)
        return NULL;
    if (!atomic_load_explicit(&mods.tried[dev], memory_order_acquire)) {
        const xe_device_module *m = module_of(dev);
        if (!m)
            return NULL;
        pthread_mutex_lock(&mods.lock);
        if (!atomic_load_explicit(&mods.tried[dev], memory_order_relaxed)) {
            load(m);
            atomic_store_explicit(&mods.tried[dev], true, memory_order_release);
        }
        pthread_mutex_unlock(&mods.lock);
    }
    return mods.ops[dev];
}

const char *xe_device_module_error(xe_device dev)
{
    if (dev >= XE_DEV_COUNT || !module_of(dev) || xe_device_module_ops(dev))
        return "";
    return mods.error[dev];
}
