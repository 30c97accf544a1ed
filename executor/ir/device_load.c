/*
 * Devices that are libraries of their own. The CUDA device, its kernels
 * and what they link (the CUDA runtime, cuBLAS, NCCL: over half a
 * gigabyte) are libxlac_cuda.so, not part of libxlac_executor.so, so a
 * program that runs only on the CPU (an ahead-of-time artifact copied to
 * a CPU server, docs/aot.md) needs none of them. The first time anything
 * needs the device itself (is it available, allocate, run a kernel), the
 * library is loaded with dlopen from the folder libxlac_executor.so itself
 * was loaded from, and its table (`xe_device_NAME`) answers for the kind's
 * instances from then on (each with a context of its own, made by the
 * table's init), its per-op kernels included (xe_op_kernel reads them
 * there: they are never copied into the op table). What a kind is called,
 * and whether placement may choose it, are the kind's own facts
 * (device_kinds.c): asking them loads nothing, so a run on the CPU never
 * loads the library.
 *
 * A device with a driver (CUDA: libcuda.so.1, which the CUDA runtime opens
 * at its start) is tried cheaply first: when the driver library cannot be
 * opened, no device of that kind can work on this machine, and its instances are
 * unavailable without loading the device's own library (hundreds of MB of
 * runtime and BLAS, about 80 ms of every start on a machine without a
 * GPU). A library that is absent or cannot be loaded leaves its instances
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

/* The registry's lines (at most XE_DEV_MAX) by index: whether each module was tried, its table, why
 * not. */
static struct {
    pthread_mutex_t lock;
    atomic_bool tried[XE_DEV_MAX]; /* set (release) once ops/error are final */
    const xe_device_ops *ops[XE_DEV_MAX];
    char error[XE_DEV_MAX][640];
} mods = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int line_of(const xe_device_entry *e)
{
    int i = (int)(e - xe_device_registry);
    return i >= 0 && i < XE_DEV_MAX ? i : -1;
}

/* e->library in the folder of the object this code is in (libxlac_executor.so). */
static void library_path(const xe_device_entry *e, char *path, size_t cap)
{
    Dl_info info;
    const char *self = dladdr(&mods, &info) && info.dli_fname ? info.dli_fname : "";
    const char *slash = strrchr(self, '/');
    if (slash)
        snprintf(path, cap, "%.*s/%s", (int)(slash - self), self, e->library);
    else
        snprintf(path, cap, "%s", e->library); /* no folder known: the loader's search path */
}

/*
 * Whether e's driver library (NULL: it has none) opens; else says why not in err. The handle is
 * kept: the device's runtime opens the same library when it starts.
 */
static bool driver_present(const xe_device_entry *e, const char *label, char *err, size_t cap)
{
    if (!e->driver || dlopen(e->driver, RTLD_LAZY | RTLD_LOCAL))
        return true;
    const char *why = dlerror();
    snprintf(err, cap, "no %s driver (%s)", label, why ? why : e->driver);
    return false;
}

/* Whether a module's table names its kind as the kind's own facts do (read unloaded). */
static bool same_facts(const xe_device_ops *o, const xe_device_ops *facts)
{
    return !strcmp(o->name, facts->name) && !strcmp(o->xla_name, facts->xla_name) &&
           !strcmp(o->word, facts->word) && !strcmp(o->label, facts->label) &&
           o->auto_place == facts->auto_place;
}

/* Loads e into mods.ops[line], or says why not in mods.error[line]. */
static void load(const xe_device_entry *e, int line)
{
    char path[512], *err = mods.error[line];
    size_t cap = sizeof mods.error[line];
    const char *label = xe_device_entry_facts(e)->label;
    library_path(e, path, sizeof path);
    if (access(path, F_OK) != 0) {
        snprintf(err, cap, "%s device library not found: %s", label, path);
        return;
    }
    if (!driver_present(e, label, err, cap))
        return;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(err, cap, "%s device library %s could not be loaded: %s", label, path,
                 why ? why : "?");
        return;
    }
    const xe_device_ops *o = dlsym(h, e->table);
    if (!o || !same_facts(o, xe_device_entry_facts(e))) {
        snprintf(err, cap, "%s device library %s has no device table %s for its slot", label, path,
                 e->table);
        return;
    }
    mods.ops[line] = o; /* its kernels are read from it (xe_op_kernel, op_kernel.c) */
}

const xe_device_ops *xe_device_module_ops(const xe_device_entry *e)
{
    int line = line_of(e);
    if (line < 0 || !e->library)
        return NULL;
    if (!atomic_load_explicit(&mods.tried[line], memory_order_acquire)) {
        pthread_mutex_lock(&mods.lock);
        if (!atomic_load_explicit(&mods.tried[line], memory_order_relaxed)) {
            load(e, line);
            atomic_store_explicit(&mods.tried[line], true, memory_order_release);
        }
        pthread_mutex_unlock(&mods.lock);
    }
    return mods.ops[line];
}

const char *xe_device_module_error(const xe_device_entry *e)
{
    int line = line_of(e);
    if (line < 0 || !e->library || xe_device_module_ops(e))
        return "";
    return mods.error[line];
}
