/*
 * xlac-gpu-stream: the device-memory roofline of this GPU, measured the way
 * bench/stream.c measures the host's: a large device-to-device copy by a
 * plain grid-stride kernel, bytes read plus bytes written over the median
 * time (CUDA events). Prints
 * "copy_gbs=%.1f bytes=%zu median_ms=%.3f device=NAME".
 * With --probe it only says whether a usable CUDA device is there: exit 0
 * and the device's name, or exit 3 and "no CUDA device (REASON)".
 * Built by scripts/gpu.sh with nvcc; not part of the CMake build.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

__global__ void copy_kernel(float4 *__restrict__ dst, const float4 *__restrict__ src, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = src[i];
}

static int probe(cudaDeviceProp *prop)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        printf("no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return 3;
    }
    e = cudaGetDeviceProperties(prop, 0);
    if (e != cudaSuccess) {
        printf("no CUDA device (%s)\n", cudaGetErrorString(e));
        return 3;
    }
    return 0;
}

static int run(size_t n4, int reps, const cudaDeviceProp *prop)
{
    float4 *a = NULL, *b = NULL;
    float *t = (float *)malloc((size_t)reps * sizeof *t);
    cudaEvent_t e0, e1;
    if (!t || cudaMalloc(&a, n4 * sizeof *a) != cudaSuccess || cudaMalloc(&b, n4 * sizeof *b) != cudaSuccess) {
        fprintf(stderr, "xlac-gpu-stream: out of memory\n");
        cudaFree(a);
        free(t);
        return 1;
    }
    cudaMemset(a, 0, n4 * sizeof *a);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    int blocks = prop->multiProcessorCount * 8;
    copy_kernel<<<blocks, 256>>>(b, a, n4); /* warm-up */
    for (int r = 0; r < reps; r++) {
        cudaEventRecord(e0);
        copy_kernel<<<blocks, 256>>>(b, a, n4);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&t[r], e0, e1);
    }
    cudaError_t err = cudaGetLastError();
    qsort(t, (size_t)reps, sizeof *t, cmp_float);
    double med = t[reps / 2];
    size_t bytes = 2 * n4 * sizeof(float4);
    if (err == cudaSuccess)
        printf("copy_gbs=%.1f bytes=%zu median_ms=%.3f device=%s\n", bytes / med / 1e6, bytes, med, prop->name);
    else
        fprintf(stderr, "xlac-gpu-stream: %s\n", cudaGetErrorString(err));
    cudaFree(a);
    cudaFree(b);
    free(t);
    return err == cudaSuccess ? 0 : 1;
}

int main(int argc, char **argv)
{
    cudaDeviceProp prop;
    int rc = probe(&prop);
    if (argc > 1 && strcmp(argv[1], "--probe") == 0) {
        if (rc == 0)
            printf("%s\n", prop.name);
        return rc;
    }
    if (rc != 0)
        return rc;
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)256 << 20; /* floats */
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    if (reps < 1 || reps > 1000 || n < 4) {
        fprintf(stderr, "usage: xlac-gpu-stream [--probe | FLOATS [REPS]]\n");
        return 2;
    }
    return run(n / 4, reps, &prop);
}
