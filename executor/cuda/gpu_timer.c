/*
 * Kernel times from CUDA events, for the trace's GPU stream track: a timer
 * records an event on the executor's stream before and after the work it
 * brackets; read once the stream has finished, it gives the work's start
 * (on the host clock, xe_now_us, through one reference event recorded and
 * waited for on first use) and its duration as the GPU measured it.
 * Without CUDA (or a device) a timer never starts and reads nothing.
 */
#include <pthread.h>
#include <stdlib.h>

#include "xlac/device.h"
#include "xlac/session.h"

#ifdef XE_HAVE_CUDA
#include <cuda_runtime_api.h>

struct xe_gpu_timer {
    cudaEvent_t begin, end;
};

static struct {
    pthread_once_t once;
    cudaEvent_t ref;
    double ref_us; /* xe_now_us when ref completed */
    bool ok;
} clock_ref = {.once = PTHREAD_ONCE_INIT};

static void make_ref(void)
{
    cudaStream_t s = xe_gpu_stream();
    clock_ref.ok = cudaEventCreate(&clock_ref.ref) == cudaSuccess &&
                   cudaEventRecord(clock_ref.ref, s) == cudaSuccess &&
                   cudaEventSynchronize(clock_ref.ref) == cudaSuccess;
    clock_ref.ref_us = xe_now_us();
    cudaGetLastError();
}

xe_gpu_timer *xe_gpu_timer_begin(void)
{
    if (!xe_gpu_available() || pthread_once(&clock_ref.once, make_ref) != 0 || !clock_ref.ok)
        return NULL;
    xe_gpu_timer *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    if (cudaEventCreate(&t->begin) != cudaSuccess || cudaEventCreate(&t->end) != cudaSuccess ||
        cudaEventRecord(t->begin, xe_gpu_stream()) != cudaSuccess) {
        cudaGetLastError();
        xe_gpu_timer_free(t);
        return NULL;
    }
    return t;
}

void xe_gpu_timer_end(xe_gpu_timer *t)
{
    if (t && cudaEventRecord(t->end, xe_gpu_stream()) != cudaSuccess)
        cudaGetLastError();
}

bool xe_gpu_timer_read(xe_gpu_timer *t, double *start_us, double *dur_us)
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

void xe_gpu_timer_free(xe_gpu_timer *t)
{
    if (!t)
        return;
    if (t->begin)
        cudaEventDestroy(t->begin);
    if (t->end)
        cudaEventDestroy(t->end);
    free(t);
}
#else
xe_gpu_timer *xe_gpu_timer_begin(void)
{
    return NULL;
}

void xe_gpu_timer_end(xe_gpu_timer *t)
{
    (void)t;
}

bool xe_gpu_timer_read(xe_gpu_timer *t, double *start_us, double *dur_us)
{
    (void)t;
    (void)start_us;
    (void)dur_us;
    return false;
}

void xe_gpu_timer_free(xe_gpu_timer *t)
{
    (void)t;
}
#endif
