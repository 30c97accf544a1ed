/*
 * CUDA programs: the cubin (or PTX) is loaded with cudaLibraryLoadData,
 * kernels are looked up with cudaLibraryGetKernel and launched on the
 * executor's stream with cudaLaunchKernel. Every kernel takes one struct
 * by value (the buffer pointers and the sizes, laid out as the generated
 * xg_args). Launch dimensions come from the SM count and the occupancy
 * the runtime reports for the kernel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program_impl.h"

#ifdef XG_HAVE_CUDA
#include <cuda_runtime_api.h>

static xe_code cuda_check(cudaError_t e, const char *what, xe_status *st)
{
    return e == cudaSuccess ? XE_OK : xe_fail(st, XE_ERR_COMPILE, "%s: %s", what, cudaGetErrorString(e));
}

xe_code xg_cuda_load(xg_program *p, const xg_artifact *a, xe_status *st)
{
    if (!xe_gpu_available())
        return xe_fail(st, XE_ERR_DEVICE, "no CUDA device: %s", xe_gpu_unavailable_reason());
    size_t arg_bytes = sizeof(void *) * (size_t)p->body->n_nodes +
                       sizeof(int64_t) * (size_t)(p->plan->n_sizes ? p->plan->n_sizes : 1) + sizeof(void *);
    if (arg_bytes > 4000)
        return xe_fail(st, XE_ERR_COMPILE, "cluster too large for one kernel argument block (%zu bytes)", arg_bytes);
    cudaLibrary_t lib;
    if (cuda_check(cudaLibraryLoadData(&lib, a->code, NULL, NULL, 0, NULL, NULL, 0), "cudaLibraryLoadData", st) != XE_OK)
        return st->code;
    p->library = lib;
    if (cuda_check(cudaMalloc(&p->workspace, XG_WORKSPACE_BYTES), "cudaMalloc (workspace)", st) != XE_OK ||
        cuda_check(cudaMemset(p->workspace, 0, XG_WORKSPACE_BYTES), "cudaMemset (workspace)", st) != XE_OK)
        return st->code;
    for (int i = 0; i < p->plan->n_steps; i++) {
        if (p->plan->steps[i].kind == XG_STEP_LIBRARY)
            continue;
        char name[32];
        cudaKernel_t k;
        xg_step_name(i, name, sizeof name);
        if (cuda_check(cudaLibraryGetKernel(&k, lib, name), "cudaLibraryGetKernel", st) != XE_OK)
            return st->code;
        p->fn[i] = (void *)k;
    }
    return XE_OK;
}

void xg_cuda_unload(xg_program *p)
{
    if (p->library)
        cudaLibraryUnload((cudaLibrary_t)p->library);
    if (p->workspace)
        cudaFree(p->workspace);
    p->library = NULL;
    p->workspace = NULL;
}

xe_code xg_cuda_launch(xg_program *p, int step, const xe_type *types, void *const *ptrs, const int64_t *S,
                       xe_status *st)
{
    bool block_per_item;
    int64_t items = xg_step_items(p->plan, step, types, &block_per_item);
    if (items <= 0)
        return XE_OK;
    size_t nb = (size_t)p->body->n_nodes, ns = (size_t)(p->plan->n_sizes ? p->plan->n_sizes : 1);
    char args[4096];
    memcpy(args, ptrs, nb * sizeof(void *));
    memcpy(args + nb * sizeof(void *), S, (p->plan->n_sizes ? ns : 0) * sizeof(int64_t));
    memcpy(args + nb * sizeof(void *) + ns * sizeof(int64_t), &p->workspace, sizeof(void *));
    void *params[] = {args};
    int per_sm = 1;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)p->fn[step], XG_THREADS, 0);
    int64_t max_blocks = (int64_t)(per_sm > 0 ? per_sm : 1) * (xe_gpu_sm_count() ? xe_gpu_sm_count() : 1);
    int64_t want = block_per_item ? items : (items + XG_THREADS - 1) / XG_THREADS;
    want *= xg_column_chunks(p->plan, step, types, max_blocks); /* then want <= max_blocks */
    if (xg_step_is_split(p->plan, step, types) && max_blocks > XG_SPLIT_BLOCKS)
        max_blocks = XG_SPLIT_BLOCKS;
    dim3 grid = {(unsigned)(want < max_blocks ? want : max_blocks), 1, 1}, block = {XG_THREADS, 1, 1};
    cudaError_t e = cudaLaunchKernel((const void *)p->fn[step], grid, block, params, 0,
                                     (cudaStream_t)xe_gpu_stream());
    if (e == cudaSuccess)
        e = cudaGetLastError();
    return e == cudaSuccess ? XE_OK : xe_fail(st, XE_ERR_DEVICE, "launch of xg_k%d: %s", step, cudaGetErrorString(e));
}
#else
xe_code xg_cuda_load(xg_program *p, const xg_artifact *a, xe_status *st)
{
    (void)p, (void)a;
    return xe_fail(st, XE_ERR_COMPILE, "xlac was built without CUDA");
}

void xg_cuda_unload(xg_program *p)
{
    (void)p;
}

xe_code xg_cuda_launch(xg_program *p, int step, const xe_type *types, void *const *ptrs, const int64_t *S,
                       xe_status *st)
{
    (void)p, (void)step, (void)types, (void)ptrs, (void)S;
    return xe_fail(st, XE_ERR_COMPILE, "xlac was built without CUDA");
}
#endif
