/*
 * The CUDA device: an instance per GPU (GPU:0, GPU:1, ...), each with a
 * context of its own (cuda_ctx: the CUDA device's ordinal, its stream, its
 * cuBLAS handle, its clock reference). Detection happens once per
 * instance, on its first question; any CUDA error there (no driver: error 35,
 * no device: 100, ...) means "no CUDA device" and is kept as a one-line
 * reason. Memory comes from the stream-ordered pool and every copy and
 * kernel runs on the instance's stream. The kernels (the .cu files) take
 * the first GPU's stream (xe_gpu_stream): until they are handed their
 * instance, GPU:1 and above answer "not available" with that reason.
 * Kernel times come from CUDA events for the trace's GPU track: a timer records an event before and
 * after the work it brackets; read once the stream has finished, it gives
 * the work's start (on the host clock, xe_now_us, through one reference
 * event recorded and waited for on first use) and its duration. This
 * folder is libxlac_cuda.so, built only when the CUDA toolkit is found
 * and loaded by the executor when the GPU is first asked for
 * (executor/ir/device_load.c).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "device_impl.h"
#include "xlac/session.h"

/* An instance's context: CUDA device `ordinal`, its stream, its BLAS handle, its clock reference.
 */
typedef struct cuda_ctx {
    int ordinal;
    pthread_mutex_t once_lock;
    atomic_bool detected;
    bool available;
    int arch, sm_count;
    char reason[256];
    cudaStream_t stream;
    cublasHandle_t blas;
    pthread_mutex_t blas_lock;
    atomic_bool clock_made; /* the timers' reference event (kernel times) */
    cudaEvent_t clock_ref;
    double clock_ref_us; /* xe_now_us when clock_ref completed */
    bool clock_ok;
} cuda_ctx;

static void *cuda_init(int ordinal)
{
    cuda_ctx *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->ordinal = ordinal;
    pthread_mutex_init(&g->once_lock, NULL);
    pthread_mutex_init(&g->blas_lock, NULL);
    return g; /* lives as long as the process, as the instance does */
}

/* Whether CUDA device g->ordinal can be used; else says why in g->reason. */
static bool detect_count(cuda_ctx *g)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(g->reason, sizeof g->reason, "cudaGetDeviceCount: error %d (%s)", (int)e,
                 cudaGetErrorString(e));
        cudaGetLastError();
        return false;
    }
    if (count == 0) {
        snprintf(g->reason, sizeof g->reason, "the CUDA runtime found no device");
        return false;
    }
    if (g->ordinal >= count) {
        snprintf(g->reason, sizeof g->reason, "the CUDA runtime found %d device%s: no device %d",
                 count, count == 1 ? "" : "s", g->ordinal);
        return false;
    }
    if (g->ordinal > 0) { /* the kernels (the .cu files, xk_stream) run on the first GPU's stream */
        snprintf(g->reason, sizeof g->reason, "GPU:%d: this build's CUDA kernels run on GPU:0 only",
                 g->ordinal);
        return false;
    }
    return true;
}

static void detect(cuda_ctx *g)
{
    if (!detect_count(g))
        return;
    struct cudaDeviceProp p;
    cudaError_t e;
    if ((e = cudaSetDevice(g->ordinal)) != cudaSuccess ||
        (e = cudaGetDeviceProperties(&p, g->ordinal)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        snprintf(g->reason, sizeof g->reason, "CUDA device %d unusable: %s", g->ordinal,
                 cudaGetErrorString(e));
        return;
    }
    cudaMemPool_t pool;
    uint64_t keep = UINT64_MAX; /* keep freed blocks across synchronizations */
    if (cudaDeviceGetDefaultMemPool(&pool, g->ordinal) == cudaSuccess)
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    cudaGetLastError();
    g->arch = p.major * 10 + p.minor;
    g->sm_count = p.multiProcessorCount;
    g->available = true;
}

/* Runs fn(g) once per context (pthread_once hands its routine no argument). */
static void once(cuda_ctx *g, atomic_bool *done, void (*fn)(cuda_ctx *g))
{
    if (atomic_load_explicit(done, memory_order_acquire))
        return;
    pthread_mutex_lock(&g->once_lock);
    if (!atomic_load_explicit(done, memory_order_relaxed)) {
        fn(g);
        atomic_store_explicit(done, true, memory_order_release);
    }
    pthread_mutex_unlock(&g->once_lock);
}

/* Detection runs once per instance, on its first question. */
static cuda_ctx *detected(void *ctx)
{
    cuda_ctx *g = ctx;
    once(g, &g->detected, detect);
    return g;
}

static bool cuda_available(void *ctx)
{
    return detected(ctx)->available;
}

static const char *cuda_unavailable_reason(void *ctx)
{
    cuda_ctx *g = detected(ctx);
    return g->available ? "" : g->reason;
}

static int cuda_arch(void *ctx)
{
    return ((cuda_ctx *)ctx)->arch;
}

static int cuda_units(void *ctx)
{
    return ((cuda_ctx *)ctx)->sm_count;
}

static xe_code cuda_check(cudaError_t e, const char *what, xe_status *st)
{
    if (e == cudaSuccess)
        return XE_OK;
    cudaGetLastError(); /* a failed call is also the thread's last error: clear it */
    return xe_fail(st, XE_ERR_DEVICE, "%s: %s", what, cudaGetErrorString(e));
}

static xe_code cuda_synchronize(void *ctx, xe_status *st)
{
    cuda_ctx *g = ctx;
    return cuda_check(cudaStreamSynchronize(g->stream), "cudaStreamSynchronize", st);
}

static void *cuda_alloc(void *ctx, size_t nbytes, xe_status *st)
{
    cuda_ctx *g = ctx;
    void *p = NULL;
    if (cuda_check(cudaMallocAsync(&p, nbytes, g->stream), "cudaMallocAsync", st) != XE_OK)
        return NULL;
    return p;
}

static void cuda_free(void *ctx, void *p, size_t nbytes)
{
    cuda_ctx *g = ctx;
    (void)nbytes;
    if (p)
        cudaFreeAsync(p, g->stream);
}

static xe_code cuda_copy_from_host(void *ctx, void *dst, const void *src, size_t n, xe_status *st)
{
    cuda_ctx *g = ctx;
    return cuda_check(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, g->stream),
                      "copy to device", st);
}

static xe_code cuda_copy_to_host(void *ctx, void *dst, const void *src, size_t n, xe_status *st)
{
    cuda_ctx *g = ctx;
    xe_code c = cuda_check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, g->stream),
                           "copy to host", st);
    return c != XE_OK ? c : cuda_synchronize(ctx, st);
}

static xe_code cuda_copy_within(void *ctx, void *dst, const void *src, size_t n, xe_status *st)
{
    cuda_ctx *g = ctx;
    return cuda_check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, g->stream),
                      "device copy", st);
}

static void *cuda_stream(void *ctx)
{
    return (void *)((cuda_ctx *)ctx)->stream;
}

static void *cuda_blas(void *ctx, xe_status *st)
{
    cuda_ctx *g = ctx;
    pthread_mutex_lock(&g->blas_lock);
    if (!g->blas) {
        cublasStatus_t s = cublasCreate(&g->blas);
        if (s == CUBLAS_STATUS_SUCCESS)
            s = cublasSetStream(g->blas, g->stream);
        if (s != CUBLAS_STATUS_SUCCESS) {
            g->blas = NULL;
            xe_fail(st, XE_ERR_DEVICE, "cuBLAS initialisation failed (status %d)", (int)s);
        }
    }
    pthread_mutex_unlock(&g->blas_lock);
    return g->blas;
}

/* ---- kernel times --------------------------------------------------------- */

struct xe_device_timer {
    const struct xe_device_ops *ops; /* first: device.c reads it */
    cuda_ctx *g;
    cudaEvent_t begin, end;
};
typedef struct xe_device_timer cuda_timer;
extern const xe_device_ops xe_device_cuda;

/* The instance's reference event: recorded and waited for once, it ties the stream's clock to
 * xe_now_us. */
static void make_ref(cuda_ctx *g)
{
    g->clock_ok = cudaEventCreate(&g->clock_ref) == cudaSuccess &&
                  cudaEventRecord(g->clock_ref, g->stream) == cudaSuccess &&
                  cudaEventSynchronize(g->clock_ref) == cudaSuccess;
    g->clock_ref_us = xe_now_us();
    cudaGetLastError();
}

static void cuda_timer_free(xe_device_timer *t);

static xe_device_timer *cuda_timer_begin(void *ctx)
{
    cuda_ctx *g = ctx;
    once(g, &g->clock_made, make_ref);
    if (!g->clock_ok)
        return NULL;
    cuda_timer *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ops = &xe_device_cuda;
    t->g = g;
    if (cudaEventCreate(&t->begin) != cudaSuccess || cudaEventCreate(&t->end) != cudaSuccess ||
        cudaEventRecord(t->begin, g->stream) != cudaSuccess) {
        cudaGetLastError();
        cuda_timer_free(t);
        return NULL;
    }
    return t;
}

static void cuda_timer_end(xe_device_timer *t)
{
    if (t && cudaEventRecord(t->end, t->g->stream) != cudaSuccess)
        cudaGetLastError();
}

static bool cuda_timer_read(xe_device_timer *t, double *start_us, double *dur_us)
{
    float from_ref = 0, dur = 0;
    bool ok = t && cudaEventSynchronize(t->end) == cudaSuccess &&
              cudaEventElapsedTime(&from_ref, t->g->clock_ref, t->begin) == cudaSuccess &&
              cudaEventElapsedTime(&dur, t->begin, t->end) == cudaSuccess;
    if (!ok) {
        cudaGetLastError();
        return false;
    }
    *start_us = t->g->clock_ref_us + (double)from_ref * 1e3;
    *dur_us = (double)dur * 1e3;
    return true;
}

static void cuda_timer_free(xe_device_timer *t)
{
    if (!t)
        return;
    if (t->begin)
        cudaEventDestroy(t->begin);
    if (t->end)
        cudaEventDestroy(t->end);
    free(t);
}

static const xe_kernel_fn cuda_kernels[XE_KERNEL_COUNT] = {
#define CUDA_KERNEL(k) [XE_KERNEL_##k] = xe_gpu_##k,
    XE_KERNEL_LIST(CUDA_KERNEL)
#undef CUDA_KERNEL
};

const xe_device_ops xe_device_cuda = {
    .name = "GPU",
    .xla_name = "XLA_GPU",
    .word = "gpu",
    .label = "CUDA",
    .auto_place = true,
    .init = cuda_init,
    .available = cuda_available,
    .unavailable_reason = cuda_unavailable_reason,
    .arch = cuda_arch,
    .units = cuda_units,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .copy_from_host = cuda_copy_from_host,
    .copy_to_host = cuda_copy_to_host,
    .copy_within = cuda_copy_within,
    .synchronize = cuda_synchronize,
    .stream = cuda_stream,
    .blas = cuda_blas,
    .timer_begin = cuda_timer_begin,
    .timer_end = cuda_timer_end,
    .timer_read = cuda_timer_read,
    .timer_free = cuda_timer_free,
    .kernels = cuda_kernels,
};
