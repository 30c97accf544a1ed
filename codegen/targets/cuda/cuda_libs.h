/*
 * The CUDA runtime and cuBLASLt, as the GPU target calls them: through
 * pointers that cuda_libs.c fills on first use (dlopen), not linked. Linked,
 * they were libxlac.so's own dependencies (cuBLASLt alone is 540 MB), and
 * every process that preloaded the plugin paid to load them at its start,
 * about 70 ms on a machine without a GPU, CPU-only runs and runs served
 * from the disk cache included. A GPU program is loaded only after the
 * executor found the GPU (libxlac_cuda.so, which links the same two
 * libraries, is loaded by then), so the libraries opened here are the ones
 * already in the process: one runtime, one context, one stream.
 *
 * A file that includes this header after <cuda_runtime_api.h> and
 * <cublasLt.h> calls the functions by their own names; xg_cudart_ready or
 * xg_cublaslt_ready must have answered XE_OK first.
 */
#ifndef XG_CUDA_LIBS_H
#define XG_CUDA_LIBS_H

#ifdef XG_HAVE_CUDA
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "xlac/status.h"

#define XG_CUDART_FUNCS(X)                                                                         \
    X(cudaFree)                                                                                    \
    X(cudaGetErrorString)                                                                          \
    X(cudaGetLastError)                                                                            \
    X(cudaLaunchKernel)                                                                            \
    X(cudaLibraryGetKernel)                                                                        \
    X(cudaLibraryLoadData)                                                                         \
    X(cudaLibraryUnload)                                                                           \
    X(cudaMalloc)                                                                                  \
    X(cudaMemcpyAsync)                                                                             \
    X(cudaMemsetAsync)                                                                             \
    X(cudaOccupancyMaxActiveBlocksPerMultiprocessor)
#define XG_CUBLASLT_FUNCS(X)                                                                       \
    X(cublasLtCreate)                                                                              \
    X(cublasLtGetStatusString)                                                                     \
    X(cublasLtMatmul)                                                                              \
    X(cublasLtMatmulDescCreate)                                                                    \
    X(cublasLtMatmulDescDestroy)                                                                   \
    X(cublasLtMatmulDescSetAttribute)                                                              \
    X(cublasLtMatrixLayoutCreate)                                                                  \
    X(cublasLtMatrixLayoutDestroy)

#define XG_CUDA_DECLARE(f) extern __typeof__(&f) xg_p_##f;
XG_CUDART_FUNCS(XG_CUDA_DECLARE)
XG_CUBLASLT_FUNCS(XG_CUDA_DECLARE)
#undef XG_CUDA_DECLARE

/* XE_OK once the CUDA runtime's functions are here (opened the first time); else why not. */
xe_code xg_cudart_ready(xe_status *st);
/* XE_OK once cuBLASLt's functions are here (opened the first time); else why not. */
xe_code xg_cublaslt_ready(xe_status *st);

#ifndef XG_CUDA_LIBS_IMPL /* cuda_libs.c defines the pointers under the functions' own names */
#undef cudaFree
#define cudaFree xg_p_cudaFree
#undef cudaGetErrorString
#define cudaGetErrorString xg_p_cudaGetErrorString
#undef cudaGetLastError
#define cudaGetLastError xg_p_cudaGetLastError
#undef cudaLaunchKernel
#define cudaLaunchKernel xg_p_cudaLaunchKernel
#undef cudaLibraryGetKernel
#define cudaLibraryGetKernel xg_p_cudaLibraryGetKernel
#undef cudaLibraryLoadData
#define cudaLibraryLoadData xg_p_cudaLibraryLoadData
#undef cudaLibraryUnload
#define cudaLibraryUnload xg_p_cudaLibraryUnload
#undef cudaMalloc
#define cudaMalloc xg_p_cudaMalloc
#undef cudaMemcpyAsync
#define cudaMemcpyAsync xg_p_cudaMemcpyAsync
#undef cudaMemsetAsync
#define cudaMemsetAsync xg_p_cudaMemsetAsync
#undef cudaOccupancyMaxActiveBlocksPerMultiprocessor
#define cudaOccupancyMaxActiveBlocksPerMultiprocessor                                              \
    xg_p_cudaOccupancyMaxActiveBlocksPerMultiprocessor
#undef cublasLtCreate
#define cublasLtCreate xg_p_cublasLtCreate
#undef cublasLtGetStatusString
#define cublasLtGetStatusString xg_p_cublasLtGetStatusString
#undef cublasLtMatmul
#define cublasLtMatmul xg_p_cublasLtMatmul
#undef cublasLtMatmulDescCreate
#define cublasLtMatmulDescCreate xg_p_cublasLtMatmulDescCreate
#undef cublasLtMatmulDescDestroy
#define cublasLtMatmulDescDestroy xg_p_cublasLtMatmulDescDestroy
#undef cublasLtMatmulDescSetAttribute
#define cublasLtMatmulDescSetAttribute xg_p_cublasLtMatmulDescSetAttribute
#undef cublasLtMatrixLayoutCreate
#define cublasLtMatrixLayoutCreate xg_p_cublasLtMatrixLayoutCreate
#undef cublasLtMatrixLayoutDestroy
#define cublasLtMatrixLayoutDestroy xg_p_cublasLtMatrixLayoutDestroy
#endif
#endif

#endif
