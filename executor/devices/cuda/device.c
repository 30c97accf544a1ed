/*
 * The CUDA device: GPU:0 when the CUDA runtime finds a device. Detection
 * happens once, on first use; any CUDA error there (no driver: error 35,
 * no device: 100, ...) means "no CUDA device" and is kept as a one-line
 * reason. Memory comes from the stream-ordered pool and every copy and
 * kernel runs on the executor's one stream. Kernel times come from CUDA
 * events for the trace's GPU track: a timer records an event before and
 * after the work it brackets; read once the stream has finished, it gives
 * the work's start (on the host clock, xe_now_us, through one reference
 * event recorded and waited for on first use) and its duration. This
 * folder is libxlac_cuda.so, built only when the CUDA toolkit is found
 * and loaded by the executor when the GPU is first asked for
 * (executor/ir/device_load.c).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "device_impl.h"
#include "xlac/session.h"

static struct {
    pthread_once_t once;
    bool available;
    int arch, sm_count;
    char reason[256];
    cudaStream_t stream;
    cublasHandle_t blas;
    pthread_mutex_t blas_lock;
} gpu = {.once = PTHREAD_ONCE_INIT, .blas_lock = PTHREAD_MUTEX_INITIALIZER};

static void detect(void)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(gpu.reason, sizeof gpu.reason, "cudaGetDeviceCount: error %d (%s)", (int)e,
                 cudaGetErrorString(e));
        cudaGetLastError();
        return;
    }
    if (count == 0) {
        snprintf(gpu.reason, sizeof gpu.reason, "the CUDA runtime found no device");
        return;
    }
    struct cudaDeviceProp p;
    if ((e = cudaSetDevice(0)) != cudaSuccess || (e = cudaGetDeviceProperties(&p, 0)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&gpu.stream, cudaStreamNonBlocking)) != cudaSuccess) {
        snprintf(gpu.reason, sizeof gpu.reason, "CUDA device 0 unusable: %s", cudaGetErrorString(e));
        return;
    }
    cudaMemPool_t pool;
    uint64_t keep = UINT64_MAX; /* keep freed blocks across synchronizations */
    if (cudaDeviceGetDefaultMemPool(&pool, 0) == cudaSuccess)
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    cudaGetLastError();
    gpu.arch = p.major * 10 + p.minor;
    gpu.sm_count = p.multiProcessorCount;
    gpu.available = true;
}

static bool cuda_available(void)
{
    pthread_once(&gpu.once, detect);
    return gpu.available;
}

static const char *cuda_unavailable_reason(void)
{
    pthread_once(&gpu.once, detect);
    return gpu.available ? "" : gpu.reason;
}

static int cuda_arch(void)
{
    return gpu.arch;
}

static int cuda_units(void)
{
    return gpu.sm_count;
}

static xe_code cuda_check(cudaError_t e, const char *what, xe_status *st)
{
    if (e == cudaSuccess)
        return XE_OK;
    cudaGetLastError(); /* a failed call is also the thread's last error: clear it */
    return xe_fail(st, XE_ERR_DEVICE, "%s: %s", what, cudaGetErrorString(e));
}

static xe_code cuda_synchronize(xe_status *st)
{
    return cuda_check(cudaStreamSynchronize(gpu.stream), "cudaStreamSynchronize", st);
}

static void *cuda_alloc(size_t nbytes, xe_status *st)
{
    void *p = NULL;
    if (cuda_check(cudaMallocAsync(&p, nbytes, gpu.stream), "cudaMallocAsync", st) != XE_OK)
        return NULL;
    return p;
}

static void cuda_free(void *p, size_t nbytes)
{
    (void)nbytes;
    if (p)
        cudaFreeAsync(p, gpu.stream);
}

static xe_code cuda_copy_from_host(void *dst, const void *src, size_t n, xe_status *st)
{
    return cuda_check(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, gpu.stream),
                      "copy to device", st);
}

static xe_code cuda_copy_to_host(void *dst, const void *src, size_t n, xe_status *st)
{
    xe_code c = cuda_check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, gpu.stream),
                           "copy to host", st);
    return c != XE_OK ? c : cuda_synchronize(st);
}

static xe_code cuda_copy_within(void *dst, const void *src, size_t n, xe_status *st)
{
    return cuda_check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, gpu.stream),
                      "device copy", st);
}


static void *cuda_stream(void)
{
    return (void *)gpu.stream;
}

static void *cuda_blas(xe_status *st)
{
    pthread_mutex_lock(&gpu.blas_lock);
    if (!gpu.blas) {
        cublasStatus_t s = cublasCreate(&gpu.blas);
        if (s == CUBLAS_STATUS_SUCCESS)
            s = cublasSetStream(gpu.blas, gpu.stream);
        if (s != CUBLAS_STATUS_SUCCESS) {
            gpu.blas = NULL;
            xe_fail(st, XE_ERR_DEVICE, "cuBLAS initialisation failed (status %d)", (int)s);
        }
    }
    pthread_mutex_unlock(&gpu.blas_lock);
    return gpu.blas;
}

/* ---- kernel times --------------------------------------------------------- */

struct xe_device_timer {
    const struct xe_device_ops *ops; /* first: device.c reads it */
    cudaEvent_t begin, end;
};
typedef struct xe_device_timer cuda_timer;
extern const xe_device_ops xe_device_cuda;

static struct {
    pthread_once_t once;
    cudaEvent_t ref;
    double ref_us; /* xe_now_us when ref completed */
    bool ok;
} clock_ref = {.once = PTHREAD_ONCE_INIT};

static void make_ref(void)
{
    cudaStream_t s = gpu.stream;
    clock_ref.ok = cudaEventCreate(&clock_ref.ref) == cudaSuccess &&
                   cudaEventRecord(clock_ref.ref, s) == cudaSuccess &&
                   cudaEventSynchronize(clock_ref.ref) == cudaSuccess;
    clock_ref.ref_us = xe_now_us();
    cudaGetLastError();
}

static void cuda_timer_free(xe_device_timer *t);

static xe_device_timer *cuda_timer_begin(void)
{
    if (pthread_once(&clock_ref.once, make_ref) != 0 || !clock_ref.ok)
        return NULL;
    cuda_timer *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ops = &xe_device_cuda;
    if (cudaEventCreate(&t->begin) != cudaSuccess || cudaEventCreate(&t->end) != cudaSuccess ||
        cudaEventRecord(t->begin, gpu.stream) != cudaSuccess) {
        cudaGetLastError();
        cuda_timer_free(t);
        return NULL;
    }
    return t;
}

static void cuda_timer_end(xe_device_timer *t)
{
    if (t && cudaEventRecord(t->end, gpu.stream) != cudaSuccess)
        cudaGetLastError();
}

static bool cuda_timer_read(xe_device_timer *t, double *start_us, double *dur_us)
{
    float from_ref = 0, dur = 0;
    bool ok = t && cudaEventSynchronize(t->end) == cudaSuccess &&
              cudaEventElapsedTime(&from_ref, clock_ref.ref, t->begin) == cudaSuccess &&
              cudaEventElapsedTime(&dur, t->begin, t->end) == cudaSuccess;
    if (!ok) {
        cudaGetLastError();
        return false;
    }
    *start_us = clock_ref.ref_us + (double)from_ref * 1e3;
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
    .slot = XE_DEV_GPU,
    .name = "GPU:0",
    .xla_name = "XLA_GPU:0",
    .word = "gpu",
    .label = "CUDA",
    .auto_place = true,
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
