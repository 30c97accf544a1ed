/*
 * Devices that are libraries of their own. The CUDA device, its kernels
 * and what they link (the CUDA runtime, cuBLAS, NCCL: over half a
 * gigabyte) are libxlac_cuda.so, not part of libxlac_executor.so, so a
 * program that runs only on the CPU (an ahead-of-time artifact copied to
 * a CPU server, docs/aot.md) needs none of them. The first time anything
 * needs the device itself (is it available, allocate, run a kernel), the
 * library is loaded with dlopen from the folder libxlac_executor.so itself
 * was loaded from, and its table (`xe_device_NAME`) answers for the slot
 * from then on, its per-op kernels included (xe_op_kernel reads them
 * there: they are never copied into the op table). What a slot is called,
 * and whether placement may choose it, are the slot's own facts
 * (device_slots.c): asking them loads nothing, so a run on the CPU never
 * loads the library.
 *
 * A device with a driver (CUDA: libcuda.so.1, which the CUDA runtime opens
 * at its start) is tried cheaply first: when the driver library cannot be
 * opened, no device of that kind can work on this machine, and the slot is
 * unavailable without loading the device's own library (hundreds of MB of
 * runtime and BLAS, about 80 ms of every start on a machine without a
 * GPU). A library that is absent or cannot be loaded leaves the slot
 * unavailable too, with the reason kept for the message a user sees when
 * they ask for that device ("CUDA device library not found: ...", "no CUDA
 * driver (libcuda.so.1: ...)"). Libraries are never unloaded.
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

/*
 * Whether m's driver library (NULL: it has none) opens; else says why not in err. The handle is
 * kept: the device's runtime opens the same library when it starts.
 */
static bool driver_present(const xe_device_module *m, char *err, size_t cap)
{
    if (!m->driver || dlopen(m->driver, RTLD_LAZY | RTLD_LOCAL))
        return true;
    const char *why = dlerror();
    snprintf(err, cap, "no %s driver (%s)", m->label, why ? why : m->driver);
    return false;
}

/* Whether a module's table names its slot as the slot's own facts do (device.c reads them unloaded). */
static bool same_facts(const xe_device_ops *o, const xe_device_ops *facts)
{
    return o->slot == facts->slot && !strcmp(o->name, facts->name) && !strcmp(o->xla_name, facts->xla_name) &&
           !strcmp(o->word, facts->word) && !strcmp(o->label, facts->label) && o->auto_place == facts->auto_place;
}

/* Loads m into mods.ops[slot], or says why not in mods.error[slot]. */
static void load(const xe_device_module *m)
{
    char path[512], *err = mods.error[m->slot];
    size_t cap = sizeof mods.error[m->slot];
    library_path(m, path, sizeof path);
    if (access(path, F_OK) != 0) {
        snprintf(err, cap, "%s device library not found: %s", m->label, path);
        return;
    }
    if (!driver_present(m, err, cap))
        return;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(err, cap, "%s device library %s could not be loaded: %s", m->label, path, why ? why : "?");
        return;
    }
    const xe_device_ops *o = dlsym(h, m->table);
    if (!o || !same_facts(o, xe_device_slot_facts(m->slot))) {
        snprintf(err, cap, "%s device library %s has no device table %s for its slot", m->label, path, m->table);
        return;
    }
    mods.ops[m->slot] = o; /* its kernels are read from it (xe_op_kernel, op_kernel.c) */
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

const xe_device_ops *xe_device_module_loaded(xe_device dev)
{
    if (dev >= XE_DEV_COUNT || !atomic_load_explicit(&mods.tried[dev], memory_order_acquire))
        return NULL;
    return mods.ops[dev];
}

const char *xe_device_module_error(xe_device dev)
{
    if (dev >= XE_DEV_COUNT || !module_of(dev) || xe_device_module_ops(dev))
        return "";
    return mods.error[dev];
}
