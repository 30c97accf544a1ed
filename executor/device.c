/*
 * Devices: CPU:0 always, GPU:0 when the CUDA runtime finds a device.
 * Detection happens once, on first use; any CUDA error there (no driver:
 * error 35, no device: 100, ...) means "no CUDA device" and is kept as a
 * one-line reason. Without the toolkit (no XE_HAVE_CUDA) the GPU functions
 * all report that the build has no CUDA.
 */
#include <pthread.h>
#include <stdio.h>

#include "xlac/device.h"

#ifdef XE_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#endif

const char *xe_device_name(xe_device dev)
{
    return dev == XE_DEV_GPU ? "GPU:0" : "CPU:0";
}

static struct {
    pthread_once_t once;
    bool available;
    int arch, sm_count;
    char reason[256];
#ifdef XE_HAVE_CUDA
    cudaStream_t stream;
    cublasHandle_t blas;
    pthread_mutex_t blas_lock;
#endif
} gpu = {.once = PTHREAD_ONCE_INIT
#ifdef XE_HAVE_CUDA
         , .blas_lock = PTHREAD_MUTEX_INITIALIZER
#endif
};

#ifdef XE_HAVE_CUDA
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
#else
static void detect(void)
{
    snprintf(gpu.reason, sizeof gpu.reason, "xlac was built without CUDA");
}
#endif

bool xe_gpu_available(void)
{
    pthread_once(&gpu.once, detect);
    return gpu.available;
}

const char *xe_gpu_unavailable_reason(void)
{
    pthread_once(&gpu.once, detect);
    return gpu.available ? "" : gpu.reason;
}

int xe_gpu_arch(void)
{
    return xe_gpu_available() ? gpu.arch : 0;
}

int xe_gpu_sm_count(void)
{
    return xe_gpu_available() ? gpu.sm_count : 0;
}

#ifdef XE_HAVE_CUDA
static xe_code cuda_check(cudaError_t e, const char *what, xe_status *st)
{
    if (e == cudaSuccess)
        return XE_OK;
    cudaGetLastError(); /* a failed call is also the thread's last error: clear it */
    return xe_fail(st, XE_ERR_DEVICE, "%s: %s", what, cudaGetErrorString(e));
}

void *xe_gpu_alloc(size_t nbytes, xe_status *st)
{
    void *p = NULL;
    if (!xe_gpu_available()) {
        xe_fail(st, XE_ERR_DEVICE, "no CUDA device: %s", gpu.reason);
        return NULL;
    }
    if (cuda_check(cudaMallocAsync(&p, nbytes, gpu.stream), "cudaMallocAsync", st) != XE_OK)
        return NULL;
    return p;
}

void xe_gpu_free(void *p)
{
    if (p)
        cudaFreeAsync(p, gpu.stream);
}

xe_code xe_gpu_copy_to_device(void *dst, const void *src, size_t n, xe_status *st)
{
    return cuda_check(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, gpu.stream),
                      "copy to device", st);
}

xe_code xe_gpu_copy_to_host(void *dst, const void *src, size_t n, xe_status *st)
{
    xe_code c = cuda_check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, gpu.stream),
                           "copy to host", st);
    return c != XE_OK ? c : xe_gpu_synchronize(st);
}

xe_code xe_gpu_copy_device(void *dst, const void *src, size_t n, xe_status *st)
{
    return cuda_check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, gpu.stream),
                      "device copy", st);
}

xe_code xe_gpu_synchronize(xe_status *st)
{
    if (!xe_gpu_available())
        return XE_OK;
    return cuda_check(cudaStreamSynchronize(gpu.stream), "cudaStreamSynchronize", st);
}

void *xe_gpu_stream(void)
{
    return xe_gpu_available() ? (void *)gpu.stream : NULL;
}

void *xe_gpu_blas(xe_status *st)
{
    if (!xe_gpu_available()) {
        xe_fail(st, XE_ERR_DEVICE, "no CUDA device: %s", gpu.reason);
        return NULL;
    }
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
#else
static xe_code no_cuda(xe_status *st)
{
    return xe_fail(st, XE_ERR_DEVICE, "no CUDA device: %s", gpu.reason);
}

void *xe_gpu_alloc(size_t nbytes, xe_status *st)
{
    (void)nbytes;
    xe_gpu_available();
    no_cuda(st);
    return NULL;
}

void xe_gpu_free(void *p)
{
    (void)p;
}

xe_code xe_gpu_copy_to_device(void *dst, const void *src, size_t n, xe_status *st)
{
    (void)dst, (void)src, (void)n;
    return no_cuda(st);
}

xe_code xe_gpu_copy_to_host(void *dst, const void *src, size_t n, xe_status *st)
{
    (void)dst, (void)src, (void)n;
    return no_cuda(st);
}

xe_code xe_gpu_copy_device(void *dst, const void *src, size_t n, xe_status *st)
{
    (void)dst, (void)src, (void)n;
    return no_cuda(st);
}

xe_code xe_gpu_synchronize(xe_status *st)
{
    (void)st;
    return XE_OK;
}

void *xe_gpu_stream(void)
{
    return NULL;
}

void *xe_gpu_blas(xe_status *st)
{
    xe_gpu_available();
    no_cuda(st);
    return NULL;
}
#endif
