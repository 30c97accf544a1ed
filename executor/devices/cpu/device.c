/*
 * The CPU device: host memory and the CPU kernels (this folder's other
 * files). Host buffers are 64-byte aligned so kernels can use wide loads.
 *
 * Large host buffers are recycled: an op-by-op run allocates and frees the
 * same sizes every iteration, and handing fresh pages to each op would
 * cost a page fault per 4 KiB (the memory system's time, not the op's).
 * Freed buffers of 64 KiB or more wait in a small cache keyed by size.
 * The cache is the process's, as host memory is: an instance of this
 * table has no context of its own (init is NULL).
 */
#include <pthread.h>
#include <stdlib.h>

#include "device_impl.h"

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

static void *host_alloc_bytes(size_t bytes)
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

static void host_free(void *ctx, void *p, size_t bytes)
{
    (void)ctx;
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

static void *host_alloc(void *ctx, size_t bytes, xe_status *st)
{
    (void)ctx;
    void *p = host_alloc_bytes(bytes);
    if (!p)
        xe_fail(st, XE_ERR_NOMEM, "out of memory (%zu bytes)", bytes);
    return p;
}

const xe_kernel_fn xe_cpu_kernels[XE_KERNEL_COUNT] = {
#define CPU_KERNEL(k) [XE_KERNEL_##k] = xe_cpu_##k,
    XE_KERNEL_LIST(CPU_KERNEL)
#undef CPU_KERNEL
        [XE_KERNEL_unique] = xe_cpu_unique,
    [XE_KERNEL_nonzero] = xe_cpu_nonzero,
    [XE_KERNEL_bitcast] = xe_cpu_bitcast,
    [XE_KERNEL_det] = xe_cpu_det,
    [XE_KERNEL_recurrent] = xe_cpu_recurrent,
    [XE_KERNEL_dynamic_quant_matmul] = xe_cpu_dynamic_quant_matmul,
    [XE_KERNEL_quant_conv2d] = xe_cpu_quant_conv2d,
    [XE_KERNEL_quant_add] = xe_cpu_quant_add,
    [XE_KERNEL_nms] = xe_cpu_nms,
    [XE_KERNEL_grid_sample] = xe_cpu_grid_sample,
    [XE_KERNEL_deform_conv2d] = xe_cpu_deform_conv2d,
    [XE_KERNEL_roi_align] = xe_cpu_roi_align,
    [XE_KERNEL_max_unpool] = xe_cpu_max_unpool,
};

const xe_device_ops xe_device_cpu = {
    .name = "CPU",
    .xla_name = "XLA_CPU",
    .word = "cpu",
    .label = "CPU",
    .host_memory = true,
    .alloc = host_alloc,
    .free = host_free,
    .kernels = xe_cpu_kernels,
};
