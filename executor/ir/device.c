/*
 * Devices through the registry: each public device function finds the
 * instance (device_registry.c) and calls its table with its context,
 * filling in what an optional slot leaves out (a host-memory device copies
 * with memcpy, a device without a stream has nothing to wait for). An
 * instance of a kind that this build lacks, or whose device library could
 * not be loaded (device_load.c), is answered by the kind's facts, a table
 * that is never available. What an instance is called (name, word, label)
 * and whether placement may choose it are its kind's facts
 * (device_kinds.c): answered without loading a device library, so flags,
 * messages and a CPU placement never load one.
 */
#include <stdio.h>
#include <string.h>

#include "device_impl.h"

/* A device index that names no instance: answered as a kind this build lacks. */
static const xe_device_instance none = {
    .name = "EXTRA:0", .xla_name = "XLA_EXTRA:0", .made = true, .ops = &xe_device_unknown};

static const xe_device_instance *peek(xe_device dev)
{
    const xe_device_instance *in = xe_device_instance_peek(dev);
    return in ? in : &none;
}

/* The instance, made; its table is never NULL. */
static const xe_device_instance *inst(xe_device dev)
{
    const xe_device_instance *in = xe_device_instance_of(dev);
    return in ? in : &none;
}

static const xe_device_ops *facts(xe_device dev)
{
    return xe_device_entry_facts(peek(dev)->entry);
}

const char *xe_device_name(xe_device dev)
{
    return peek(dev)->name;
}

const char *xe_device_xla_name(xe_device dev)
{
    return peek(dev)->xla_name;
}

const char *xe_device_label(xe_device dev)
{
    return facts(dev)->label;
}

const char *xe_device_word(xe_device dev)
{
    return facts(dev)->word;
}

int xe_device_ordinal(xe_device dev)
{
    return peek(dev)->ordinal;
}

bool xe_device_is_host(xe_device dev)
{
    return peek(dev)->host;
}

bool xe_device_host_memory(xe_device dev)
{
    return inst(dev)->ops->host_memory;
}

bool xe_device_auto_place(xe_device dev)
{
    return xe_device_built(dev) && facts(dev)->auto_place;
}

xe_device xe_device_auto(void)
{
    for (int d = 0; d < xe_device_count(); d++)
        if (xe_device_auto_place(d) && xe_device_available(d))
            return d;
    return XE_DEV_CPU;
}

xe_device xe_device_auto_kind(void)
{
    for (int d = 0; d < xe_device_count(); d++)
        if (facts(d)->auto_place)
            return d;
    return XE_DEV_CPU;
}

bool xe_device_built(xe_device dev)
{
    /* its library may still be missing: not loaded here */
    const xe_device_entry *e = peek(dev)->entry;
    return e && (e->ops || e->library);
}

bool xe_device_available(xe_device dev)
{
    const xe_device_instance *in = inst(dev);
    return !in->failed && (!in->ops->available || in->ops->available(in->ctx));
}

const char *xe_device_unavailable_reason(xe_device dev)
{
    const xe_device_instance *in = inst(dev);
    if (xe_device_available(dev))
        return "";
    if (in->failed)
        return "out of memory making the device's context";
    const char *missing =
        in->entry ? xe_device_module_error(in->entry) : ""; /* its library could not be loaded */
    return *missing                      ? missing
           : in->ops->unavailable_reason ? in->ops->unavailable_reason(in->ctx)
                                         : "";
}

int xe_device_arch(xe_device dev)
{
    const xe_device_instance *in = inst(dev);
    return in->ops->arch && xe_device_available(dev) ? in->ops->arch(in->ctx) : 0;
}

int xe_device_units(xe_device dev)
{
    const xe_device_instance *in = inst(dev);
    return in->ops->units && xe_device_available(dev) ? in->ops->units(in->ctx) : 0;
}

void *xe_device_alloc(xe_device dev, size_t nbytes, xe_status *st)
{
    const xe_device_instance *in = inst(dev);
    if (!xe_device_available(dev) || !in->ops->alloc) {
        xe_fail(st, XE_ERR_DEVICE, "no %s device: %s", in->ops->label,
                xe_device_unavailable_reason(dev));
        return NULL;
    }
    return in->ops->alloc(in->ctx, nbytes, st);
}

void xe_device_free(xe_device dev, void *p, size_t nbytes)
{
    const xe_device_instance *in = inst(dev);
    if (p && in->ops->free)
        in->ops->free(in->ctx, p, nbytes);
}

/* From host memory (src) to the instance's memory (dst). */
static xe_code copy_in(const xe_device_instance *in, void *dst, const void *src, size_t n,
                       xe_status *st)
{
    if (in->ops->host_memory || !in->ops->copy_from_host) {
        memcpy(dst, src, n);
        return XE_OK;
    }
    return in->ops->copy_from_host(in->ctx, dst, src, n, st);
}

/* From the instance's memory (src) to host memory (dst). */
static xe_code copy_out(const xe_device_instance *in, void *dst, const void *src, size_t n,
                        xe_status *st)
{
    if (in->ops->host_memory || !in->ops->copy_to_host) {
        memcpy(dst, src, n);
        return XE_OK;
    }
    return in->ops->copy_to_host(in->ctx, dst, src, n, st);
}

xe_code xe_device_copy(xe_device to, void *dst, xe_device from, const void *src, size_t n,
                       xe_status *st)
{
    const xe_device_instance *t = inst(to), *f = inst(from);
    if (!xe_device_available(to) || !xe_device_available(from)) {
        xe_device bad = xe_device_available(to) ? from : to;
        return xe_fail(st, XE_ERR_DEVICE, "no %s device: %s", xe_device_label(bad),
                       xe_device_unavailable_reason(bad));
    }
    if (f->ops->host_memory)
        return copy_in(t, dst, src, n, st);
    if (t->ops->host_memory)
        return copy_out(f, dst, src, n, st);
    if (to == from && t->ops->copy_within)
        return t->ops->copy_within(t->ctx, dst, src, n, st);
    void *stage = xe_device_alloc(XE_DEV_CPU, n ? n : 1, st); /* two devices: through the host */
    if (!stage)
        return st->code;
    xe_code c = copy_out(f, stage, src, n, st);
    if (c == XE_OK)
        c = copy_in(t, dst, stage, n, st);
    xe_device_free(XE_DEV_CPU, stage, n ? n : 1);
    return c;
}

xe_code xe_device_synchronize(xe_device dev, xe_status *st)
{
    const xe_device_instance *in = inst(dev);
    return in->ops->synchronize && xe_device_available(dev) ? in->ops->synchronize(in->ctx, st)
                                                            : XE_OK;
}

xe_code xe_device_synchronize_all(xe_status *st)
{
    for (int d = 0; d < xe_device_count(); d++) {
        const xe_device_instance *in = xe_device_instance_peek(d);
        bool in_use = atomic_load_explicit(&in->made, memory_order_acquire);
        if (in_use && xe_device_synchronize(d, st) != XE_OK)
            return st->code;
    }
    return XE_OK;
}

void *xe_device_stream(xe_device dev)
{
    const xe_device_instance *in = inst(dev);
    return in->ops->stream && xe_device_available(dev) ? in->ops->stream(in->ctx) : NULL;
}

void *xe_device_blas(xe_device dev, xe_status *st)
{
    const xe_device_instance *in = inst(dev);
    if (!in->ops->blas || !xe_device_available(dev)) {
        xe_fail(st, XE_ERR_DEVICE, "no BLAS on %s: %s", in->name,
                xe_device_available(dev) ? "the device has none"
                                         : xe_device_unavailable_reason(dev));
        return NULL;
    }
    return in->ops->blas(in->ctx, st);
}

/* A timer remembers the table that made it: the first member of every device's timer struct. */
struct xe_device_timer {
    const xe_device_ops *ops;
};

xe_device_timer *xe_device_timer_begin(xe_device dev)
{
    const xe_device_instance *in = inst(dev);
    return in->ops->timer_begin && xe_device_available(dev) ? in->ops->timer_begin(in->ctx) : NULL;
}

void xe_device_timer_end(xe_device_timer *t)
{
    if (t)
        t->ops->timer_end(t);
}

bool xe_device_timer_read(xe_device_timer *t, double *start_us, double *dur_us)
{
    return t && t->ops->timer_read(t, start_us, dur_us);
}

void xe_device_timer_free(xe_device_timer *t)
{
    if (t)
        t->ops->timer_free(t);
}

/* ---- the first GPU under its old names ----------------------------------------- */

xe_device xe_gpu_device(void)
{
    static atomic_int gpu = -2; /* -2: not looked up yet */
    int d = atomic_load_explicit(&gpu, memory_order_relaxed);
    if (d == -2) {
        d = xe_device_get("gpu", 0);
        atomic_store_explicit(&gpu, d, memory_order_relaxed);
    }
    return d;
}

bool xe_gpu_available(void)
{
    return xe_device_available(xe_gpu_device());
}

const char *xe_gpu_unavailable_reason(void)
{
    return xe_device_unavailable_reason(xe_gpu_device());
}

int xe_gpu_arch(void)
{
    return xe_device_arch(xe_gpu_device());
}

int xe_gpu_sm_count(void)
{
    return xe_device_units(xe_gpu_device());
}

void *xe_gpu_alloc(size_t nbytes, xe_status *st)
{
    return xe_device_alloc(xe_gpu_device(), nbytes, st);
}

void xe_gpu_free(void *p)
{
    xe_device_free(xe_gpu_device(), p, 0);
}

xe_code xe_gpu_synchronize(xe_status *st)
{
    return xe_device_synchronize(xe_gpu_device(), st);
}

void *xe_gpu_stream(void)
{
    return xe_device_stream(xe_gpu_device());
}

void *xe_gpu_blas(xe_status *st)
{
    return xe_device_blas(xe_gpu_device(), st);
}

xe_code xe_gpu_copy_to_device(void *dst, const void *src, size_t n, xe_status *st)
{
    return xe_device_copy(xe_gpu_device(), dst, XE_DEV_CPU, src, n, st);
}

xe_code xe_gpu_copy_to_host(void *dst, const void *src, size_t n, xe_status *st)
{
    return xe_device_copy(XE_DEV_CPU, dst, xe_gpu_device(), src, n, st);
}

xe_code xe_gpu_copy_device(void *dst, const void *src, size_t n, xe_status *st)
{
    return xe_device_copy(xe_gpu_device(), dst, xe_gpu_device(), src, n, st);
}
