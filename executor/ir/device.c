/*
 * Devices through the registry: each public device function finds the
 * table of the device's slot (device_impl.h) and calls it, filling in what
 * an optional slot leaves out (a host-memory device copies with memcpy, a
 * device without a stream has nothing to wait for). A slot that this build
 * has no device for, or whose device library could not be loaded
 * (device_load.c), is answered by a table that is never available. What
 * a slot is called (name, word, label) and whether placement may choose it
 * are that table's facts, the slot's own (device_slots.c): answered without
 * loading a device library, so flags, messages and a CPU placement never
 * load one.
 */
#include <stdio.h>
#include <string.h>

#include "device_impl.h"

const xe_device_ops *xe_device_ops_of(xe_device dev)
{
    const xe_device_ops *b = xe_device_builtin(dev);
    if (b)
        return b;
    const xe_device_ops *loaded = xe_device_module_ops(dev);
    return loaded ? loaded : xe_device_slot_facts(dev); /* no device there: the slot's own facts */
}

const char *xe_device_name(xe_device dev)
{
    return xe_device_slot_facts(dev)->name;
}

const char *xe_device_xla_name(xe_device dev)
{
    return xe_device_slot_facts(dev)->xla_name;
}

const char *xe_device_label(xe_device dev)
{
    return xe_device_slot_facts(dev)->label;
}

const char *xe_device_word(xe_device dev)
{
    return xe_device_slot_facts(dev)->word;
}

bool xe_device_by_word(const char *word, size_t len, xe_device *dev)
{
    for (int d = 0; d < XE_DEV_COUNT; d++) {
        const char *w = xe_device_word((xe_device)d);
        if (strlen(w) == len && memcmp(w, word, len) == 0) {
            *dev = (xe_device)d;
            return true;
        }
    }
    return false;
}

bool xe_device_host_memory(xe_device dev)
{
    return xe_device_ops_of(dev)->host_memory;
}

bool xe_device_auto_place(xe_device dev)
{
    return xe_device_built(dev) && xe_device_slot_facts(dev)->auto_place;
}

bool xe_device_built(xe_device dev)
{
    /* its library may still be missing: not loaded here */
    return xe_device_builtin(dev) || xe_device_module_built(dev);
}

bool xe_device_available(xe_device dev)
{
    const xe_device_ops *o = xe_device_ops_of(dev);
    return !o->available || o->available();
}

const char *xe_device_unavailable_reason(xe_device dev)
{
    const xe_device_ops *o = xe_device_ops_of(dev);
    if (xe_device_available(dev))
        return "";
    const char *missing = xe_device_module_error(dev); /* its library could not be loaded */
    return *missing ? missing : o->unavailable_reason ? o->unavailable_reason() : "";
}

int xe_device_arch(xe_device dev)
{
    const xe_device_ops *o = xe_device_ops_of(dev);
    return o->arch && xe_device_available(dev) ? o->arch() : 0;
}

int xe_device_units(xe_device dev)
{
    const xe_device_ops *o = xe_device_ops_of(dev);
    return o->units && xe_device_available(dev) ? o->units() : 0;
}

void *xe_device_alloc(xe_device dev, size_t nbytes, xe_status *st)
{
    const xe_device_ops *o = xe_device_ops_of(dev);
    if (!xe_device_available(dev) || !o->alloc) {
        xe_fail(st, XE_ERR_DEVICE, "no %s device: %s", o->label, xe_device_unavailable_reason(dev));
        return NULL;
    }
    return o->alloc(nbytes, st);
}

void xe_device_free(xe_device dev, void *p, size_t nbytes)
{
    const xe_device_ops *o = xe_device_ops_of(dev);
    if (p && o->free)
        o->free(p, nbytes);
}

/* From host memory (src) to dev's memory (dst). */
static xe_code copy_in(const xe_device_ops *o, void *dst, const void *src, size_t n, xe_status *st)
{
    if (o->host_memory || !o->copy_from_host) {
        memcpy(dst, src, n);
        return XE_OK;
    }
    return o->copy_from_host(dst, src, n, st);
}

/* From dev's memory (src) to host memory (dst). */
static xe_code copy_out(const xe_device_ops *o, void *dst, const void *src, size_t n, xe_status *st)
{
    if (o->host_memory || !o->copy_to_host) {
        memcpy(dst, src, n);
        return XE_OK;
    }
    return o->copy_to_host(dst, src, n, st);
}

xe_code xe_device_copy(xe_device to, void *dst, xe_device from, const void *src, size_t n, xe_status *st)
{
    const xe_device_ops *t = xe_device_ops_of(to), *f = xe_device_ops_of(from);
    if (!xe_device_available(to) || !xe_device_available(from)) {
        xe_device bad = xe_device_available(to) ? from : to;
        return xe_fail(st, XE_ERR_DEVICE, "no %s device: %s", xe_device_label(bad), xe_device_unavailable_reason(bad));
    }
    if (f->host_memory)
        return copy_in(t, dst, src, n, st);
    if (t->host_memory)
        return copy_out(f, dst, src, n, st);
    if (to == from && t->copy_within)
        return t->copy_within(dst, src, n, st);
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
    const xe_device_ops *o = xe_device_ops_of(dev);
    return o->synchronize && xe_device_available(dev) ? o->synchronize(st) : XE_OK;
}

void *xe_device_stream(xe_device dev)
{
    const xe_device_ops *o = xe_device_ops_of(dev);
    return o->stream && xe_device_available(dev) ? o->stream() : NULL;
}

void *xe_device_blas(xe_device dev, xe_status *st)
{
    const xe_device_ops *o = xe_device_ops_of(dev);
    if (!o->blas || !xe_device_available(dev)) {
        xe_fail(st, XE_ERR_DEVICE, "no BLAS on %s: %s", o->name,
                xe_device_available(dev) ? "the device has none" : xe_device_unavailable_reason(dev));
        return NULL;
    }
    return o->blas(st);
}

/* A timer remembers the table that made it: the first member of every device's timer struct. */
struct xe_device_timer {
    const xe_device_ops *ops;
};

xe_device_timer *xe_device_timer_begin(xe_device dev)
{
    const xe_device_ops *o = xe_device_ops_of(dev);
    return o->timer_begin && xe_device_available(dev) ? o->timer_begin() : NULL;
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

/* ---- the GPU slot under its old names ---------------------------------------- */

bool xe_gpu_available(void) { return xe_device_available(XE_DEV_GPU); }
const char *xe_gpu_unavailable_reason(void) { return xe_device_unavailable_reason(XE_DEV_GPU); }
int xe_gpu_arch(void) { return xe_device_arch(XE_DEV_GPU); }
int xe_gpu_sm_count(void) { return xe_device_units(XE_DEV_GPU); }
void *xe_gpu_alloc(size_t nbytes, xe_status *st) { return xe_device_alloc(XE_DEV_GPU, nbytes, st); }
void xe_gpu_free(void *p) { xe_device_free(XE_DEV_GPU, p, 0); }
xe_code xe_gpu_synchronize(xe_status *st) { return xe_device_synchronize(XE_DEV_GPU, st); }
void *xe_gpu_stream(void) { return xe_device_stream(XE_DEV_GPU); }
void *xe_gpu_blas(xe_status *st) { return xe_device_blas(XE_DEV_GPU, st); }

xe_code xe_gpu_copy_to_device(void *dst, const void *src, size_t n, xe_status *st)
{
    return xe_device_copy(XE_DEV_GPU, dst, XE_DEV_CPU, src, n, st);
}

xe_code xe_gpu_copy_to_host(void *dst, const void *src, size_t n, xe_status *st)
{
    return xe_device_copy(XE_DEV_CPU, dst, XE_DEV_GPU, src, n, st);
}

xe_code xe_gpu_copy_device(void *dst, const void *src, size_t n, xe_status *st)
{
    return xe_device_copy(XE_DEV_GPU, dst, XE_DEV_GPU, src, n, st);
}
