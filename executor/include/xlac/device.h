/*
 * Devices the executor knows: the host CPU and, when the CUDA runtime
 * finds one, GPU:0. Detection is done once; any CUDA error during
 * detection means "no CUDA device" and is reported with one clear line.
 * In a build without the CUDA toolkit every GPU function reports that.
 */
#ifndef XLAC_DEVICE_H
#define XLAC_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "xlac/status.h"

typedef enum xe_device {
    XE_DEV_CPU, /* host memory, CPU kernels */
    XE_DEV_GPU, /* CUDA device 0 */
    XE_DEV_COUNT
} xe_device;

/* "CPU:0" or "GPU:0". */
const char *xe_device_name(xe_device dev);

/* True once a usable CUDA device was found (detection runs on first call). */
bool xe_gpu_available(void);
/* Why no GPU is available ("built without CUDA", "cudaGetDeviceCount: error 35 ..."). */
const char *xe_gpu_unavailable_reason(void);
/* Compute capability (e.g. 90) and SM count of GPU:0; 0 without a GPU. */
int xe_gpu_arch(void);
int xe_gpu_sm_count(void);

/* Device memory and copies; all synchronous with respect to the executor's stream. */
void *xe_gpu_alloc(size_t nbytes, xe_status *st);
void xe_gpu_free(void *p);
xe_code xe_gpu_copy_to_device(void *dst, const void *src, size_t n, xe_status *st);
xe_code xe_gpu_copy_to_host(void *dst, const void *src, size_t n, xe_status *st);
xe_code xe_gpu_copy_device(void *dst, const void *src, size_t n, xe_status *st);
xe_code xe_gpu_synchronize(xe_status *st);
/* The executor's one stream (a cudaStream_t), NULL without a GPU. */
void *xe_gpu_stream(void);
/* The executor's cuBLAS handle (a cublasHandle_t), created on first use. */
void *xe_gpu_blas(xe_status *st);

/*
 * GPU time of work on the executor's stream (CUDA events, cuda/gpu_timer.c):
 * begin (NULL: no GPU, or it failed), end after the work, read once the
 * stream is done (start on xe_now_us's clock, duration; false: no time), free.
 */
typedef struct xe_gpu_timer xe_gpu_timer;
xe_gpu_timer *xe_gpu_timer_begin(void);
void xe_gpu_timer_end(xe_gpu_timer *t);
bool xe_gpu_timer_read(xe_gpu_timer *t, double *start_us, double *dur_us);
void xe_gpu_timer_free(xe_gpu_timer *t);

#endif
