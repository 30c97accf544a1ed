/*
 * Tensors: a header (dtype, shape, device, reference count) over a buffer
 * that the tensor's device allocates (xe_device_alloc), and copies
 * between devices (xe_device_copy). A view's buffer is memory a keeper
 * holds (a mapped file): the tensor holds the keeper, not the buffer.
 */
#include <stdlib.h>
#include <string.h>

#include "xlac/device.h"
#include "xlac/tensor.h"

static xe_tensor *tensor_header(xe_dtype dt, const xe_shape *shape, xe_device dev, xe_status *st)
{
    if (dt >= XE_DTYPE_COUNT || !xe_shape_is_known(shape) || shape->rank > XE_MAX_RANK) {
        xe_fail(st, XE_ERR_RUNTIME, "cannot allocate a tensor of unknown dtype or shape");
        return NULL;
    }
    xe_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory allocating a tensor header");
        return NULL;
    }
    t->dtype = dt;
    t->shape = *shape;
    t->device = dev;
    t->nbytes = (size_t)xe_shape_numel(shape) * xe_dtype_size(dt);
    t->refcount = 1;
    return t;
}

xe_tensor *xe_tensor_new(xe_dtype dt, const xe_shape *shape, xe_device dev, xe_status *st)
{
    xe_tensor *t = tensor_header(dt, shape, dev, st);
    if (!t)
        return NULL;
    size_t bytes = t->nbytes ? t->nbytes : 1;
    t->data = xe_device_alloc(dev, bytes, st);
    if (!t->data && st->code == XE_ERR_NOMEM) {
        char ty[160];
        xe_fail(st, XE_ERR_NOMEM, "out of memory allocating %s (%zu bytes) on %s",
                xe_type_str(&(xe_type){.dtype = dt, .shape = *shape}, ty, sizeof ty), bytes,
                xe_device_name(dev));
    }
    if (!t->data) {
        free(t);
        return NULL;
    }
    return t;
}

xe_tensor *xe_tensor_wrap(xe_dtype dt, const xe_shape *shape, xe_device dev, void *data,
                          xe_status *st)
{
    xe_tensor *t = tensor_header(dt, shape, dev, st);
    if (!t)
        return NULL;
    t->data = data;
    t->borrowed = true;
    return t;
}

void xe_keeper_retain(xe_tensor_keeper *k)
{
    if (k)
        __atomic_add_fetch(&k->refcount, 1, __ATOMIC_RELAXED);
}

void xe_keeper_release(xe_tensor_keeper *k)
{
    if (k && __atomic_sub_fetch(&k->refcount, 1, __ATOMIC_ACQ_REL) == 0)
        k->drop(k);
}

xe_tensor *xe_tensor_view(xe_dtype dt, const xe_shape *shape, const void *data, xe_tensor_keeper *k,
                          xe_status *st)
{
    xe_tensor *t = xe_tensor_wrap(dt, shape, XE_DEV_CPU, (void *)data, st);
    if (t) {
        t->keeper = k;
        xe_keeper_retain(k);
    }
    return t;
}

/* What an alias of an owned tensor holds: the tensor (xe_tensor_alias). */
typedef struct alias_keeper {
    xe_tensor_keeper keeper; /* first: the keeper is the alias's */
    xe_tensor *base;
} alias_keeper;

static void alias_drop(xe_tensor_keeper *k)
{
    alias_keeper *a = (alias_keeper *)k;
    xe_tensor_release(a->base);
    free(a);
}

xe_tensor *xe_tensor_alias(xe_tensor *base, const xe_shape *shape, xe_status *st)
{
    if ((size_t)xe_shape_numel(shape) * xe_dtype_size(base->dtype) != base->nbytes) {
        xe_fail(st, XE_ERR_RUNTIME, "an alias of %zu bytes as %lld elements", base->nbytes,
                (long long)xe_shape_numel(shape));
        return NULL;
    }
    xe_tensor *t = NULL;
    if (base->keeper || base->borrowed) { /* its memory is held elsewhere already: share that */
        t = xe_tensor_view(base->dtype, shape, base->data, base->keeper, st);
    } else {
        alias_keeper *a = malloc(sizeof *a);
        if (!a) {
            xe_fail(st, XE_ERR_NOMEM, "out of memory");
            return NULL;
        }
        *a = (alias_keeper){.keeper = {.refcount = 1, .drop = alias_drop},
                            .base = xe_tensor_retain(base)};
        t = xe_tensor_view(base->dtype, shape, base->data, &a->keeper, st);
        xe_keeper_release(&a->keeper); /* the view's now, or dropped with base when it failed */
    }
    if (t)
        t->device = base->device;
    return t;
}

xe_tensor *xe_tensor_retain(xe_tensor *t)
{
    if (t) /* atomic: a compiled program's constants are shared by sessions on several threads */
        __atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED);
    return t;
}

void xe_tensor_release(xe_tensor *t)
{
    if (!t || __atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    if (!t->borrowed)
        xe_device_free(t->device, t->data, t->nbytes ? t->nbytes : 1);
    xe_keeper_release(t->keeper);
    free(t);
}

int64_t xe_tensor_numel(const xe_tensor *t)
{
    return xe_shape_numel(&t->shape);
}

xe_tensor *xe_tensor_to_device(const xe_tensor *t, xe_device dev, xe_status *st)
{
    xe_tensor *r = xe_tensor_new(t->dtype, &t->shape, dev, st);
    if (!r || t->nbytes == 0)
        return r;
    if (xe_device_copy(dev, r->data, t->device, t->data, t->nbytes, st) != XE_OK) {
        xe_tensor_release(r);
        return NULL;
    }
    return r;
}

xe_code xe_tensors_to_device(xe_tensor **ts, int n, xe_device dev, xe_status *st)
{
    for (int i = 0; i < n; i++) {
        if (ts[i]->device == dev)
            continue;
        xe_tensor *c = xe_tensor_to_device(ts[i], dev, st);
        if (!c)
            return st->code;
        xe_tensor_release(ts[i]);
        ts[i] = c;
    }
    return XE_OK;
}
