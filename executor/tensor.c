/*
 * Tensors: allocation on a device, reference counting, copies between
 * devices. Host buffers are 64-byte aligned so kernels can use wide loads.
 *
 * Large host buffers are recycled: an op-by-op run allocates and frees the
 * same sizes every iteration, and handing fresh pages to each op would
 * cost a page fault per 4 KiB (the memory system's time, not the op's).
 * Freed buffers of 64 KiB or more wait in a small cache keyed by size.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/tensor.h"

#define CACHE_SLOTS 64
#define CACHE_MIN_BYTES ((size_t)64 << 10)
#define CACHE_MAX_BYTES ((size_t)4 << 30)

static struct {
    pthread_mutex_t lock;
    int n;
    size_t bytes;
    struct {
        void *p;
        size_t size;
    } slot[CACHE_SLOTS];
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *host_alloc(size_t bytes)
{
    size_t size = (bytes + 63) / 64 * 64;
#ifndef XLAC_SANITIZE
    if (size >= CACHE_MIN_BYTES) {
        pthread_mutex_lock(&cache.lock);
        for (int i = cache.n - 1; i >= 0; i--) {
            if (cache.slot[i].size == size) {
                void *p = cache.slot[i].p;
                cache.slot[i] = cache.slot[--cache.n];
                cache.bytes -= size;
                pthread_mutex_unlock(&cache.lock);
                return p;
            }
        }
        pthread_mutex_unlock(&cache.lock);
    }
#endif
    return aligned_alloc(64, size);
}

static void host_free(void *p, size_t bytes)
{
    size_t size = (bytes + 63) / 64 * 64;
    (void)size; /* unused when the sanitizers want every buffer freed at once */
#ifndef XLAC_SANITIZE
    if (p && size >= CACHE_MIN_BYTES) {
        pthread_mutex_lock(&cache.lock);
        if (cache.n == CACHE_SLOTS || cache.bytes + size > CACHE_MAX_BYTES) { /* evict the oldest */
            free(cache.slot[0].p);
            cache.bytes -= cache.slot[0].size;
            cache.slot[0] = cache.slot[--cache.n];
        }
        if (cache.bytes + size <= CACHE_MAX_BYTES) {
            cache.slot[cache.n].p = p;
            cache.slot[cache.n++].size = size;
            cache.bytes += size;
            p = NULL;
        }
        pthread_mutex_unlock(&cache.lock);
    }
#endif
    free(p);
}

__attribute__((destructor)) static void cache_drain(void)
{
    for (int i = 0; i < cache.n; i++)
        free(cache.slot[i].p);
    cache.n = 0;
    cache.bytes = 0;
}

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
    if (dev == XE_DEV_GPU) {
        t->data = xe_gpu_alloc(bytes, st);
    } else {
        t->data = host_alloc(bytes);
        if (!t->data) {
            char ty[160];
            xe_fail(st, XE_ERR_NOMEM, "out of memory allocating %s (%zu bytes)",
                    xe_type_str(&(xe_type){.dtype = dt, .shape = *shape}, ty, sizeof ty), bytes);
        }
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
    if (!t->borrowed) {
        if (t->device == XE_DEV_GPU)
            xe_gpu_free(t->data);
        else
            host_free(t->data, t->nbytes ? t->nbytes : 1);
    }
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
    xe_code c = XE_OK;
    if (t->device == XE_DEV_CPU && dev == XE_DEV_CPU)
        memcpy(r->data, t->data, t->nbytes);
    else if (t->device == XE_DEV_CPU)
        c = xe_gpu_copy_to_device(r->data, t->data, t->nbytes, st);
    else if (dev == XE_DEV_CPU)
        c = xe_gpu_copy_to_host(r->data, t->data, t->nbytes, st);
    else
        c = xe_gpu_copy_device(r->data, t->data, t->nbytes, st);
    if (c != XE_OK) {
        xe_tensor_release(r);
        return NULL;
    }
    return r;
}
