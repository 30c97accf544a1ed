/*
 * Host stand-in for <cuda_runtime.h>, for tests/test_cuda_host.c: the
 * per-op .cu kernels compiled by the host C++ compiler (launches
 * `k<<<grid, block, 0, s>>>(args)` already rewritten to `k(args)`). A
 * launch is one call by one thread with blockIdx 0, blockDim 1 and
 * gridDim 1, so a grid-stride loop visits every index; copies and memsets
 * are memcpy and memset; the executor's device allocator and host copy
 * are renamed to host versions (cuda_host.cc). Checks index math and
 * host-side launch code, not concurrency.
 */
#pragma once
#include <math.h>
#include <stdint.h>
#include <string.h>

#define xe_gpu_alloc xe_host_gpu_alloc
#define xe_gpu_free xe_host_gpu_free
#define xe_gpu_copy_to_host xe_host_gpu_copy_to_host

typedef int cudaError_t;
enum { cudaSuccess = 0 };
typedef void *cudaStream_t;
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
static inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t)
{
    memcpy(d, s, n);
    return cudaSuccess;
}
static inline cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t)
{
    memset(d, v, n);
    return cudaSuccess;
}
static inline cudaError_t cudaGetLastError() { return cudaSuccess; }
static inline const char *cudaGetErrorString(cudaError_t) { return "host"; }

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
static const dim3 blockIdx(0, 0, 0), threadIdx(0, 0, 0), blockDim(1, 1, 1), gridDim(1, 1, 1);

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __restrict__ __restrict
#define __shared__ static
template <typename T> static inline T __ldg(const T *p) { return *p; }
static inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v)
{
    unsigned long long old = *p;
    *p = v < old ? v : old;
    return old;
}
static inline void __syncthreads() {}
