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

#define XG_THREADS 256

static xe_code cuda_check(cudaError_t e, const char *what, xe_status *st)
{
    return e == cudaSuccess ? XE_OK : xe_fail(st, XE_ERR_COMPILE, "%s: %s", what, cudaGetErrorString(e));
}

xe_code xg_cuda_load(xg_program *p, const xg_artifact *a, xe_status *st)
{
    if (!xe_gpu_available())
        return xe_fail(st, XE_ERR_DEVICE, "no CUDA device: %s", xe_gpu_unavailable_reason());
    size_t arg_bytes = sizeof(void *) * (size_t)p->body->n_nodes + sizeof(int64_t) * (size_t)(p->plan->n_sizes ? p->plan->n_sizes : 1);
    if (arg_bytes > 4000)
        return xe_fail(st, XE_ERR_COMPILE, "cluster too large for one kernel argument block (%zu bytes)", arg_bytes);
    cudaLibrary_t lib;
    if (cuda_check(cudaLibraryLoadData(&lib, a->code, NULL, NULL, 0, NULL, NULL, 0), "cudaLibraryLoadData", st) != XE_OK)
        return st->code;
    p->library = lib;
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
    p->library = NULL;
}

/* Work items of a step: elements (loop), outputs (reduce), rows (softmax). */
static int64_t step_items(const xg_program *p, int step, const xe_type *types)
{
    const xg_step *s = &p->plan->steps[step];
    return xe_shape_numel(&types[s->outs[0]].shape) /
           (s->kind == XG_STEP_SOFTMAX
                ? (types[s->outs[0]].shape.rank ? types[s->outs[0]].shape.dims[(xe_node_attr_int(p->body->nodes[s->outs[0]], "axis", -1) + types[s->outs[0]].shape.rank) % types[s->outs[0]].shape.rank] : 1)
                : 1);
}

xe_code xg_cuda_launch(xg_program *p, int step, const xe_type *types, void *const *ptrs, const int64_t *S,
                       xe_status *st)
{
    const xg_step *s = &p->plan->steps[step];
    int64_t items = step_items(p, step, types);
    if (items <= 0)
        return XE_OK;
    size_t nb = (size_t)p->body->n_nodes, ns = (size_t)(p->plan->n_sizes ? p->plan->n_sizes : 1);
    char args[4096];
    memcpy(args, ptrs, nb * sizeof(void *));
    memcpy(args + nb * sizeof(void *), S, (p->plan->n_sizes ? ns : 0) * sizeof(int64_t));
    void *params[] = {args};
    int per_sm = 1;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)p->fn[step], XG_THREADS, 0);
    int64_t max_blocks = (int64_t)(per_sm > 0 ? per_sm : 1) * (xe_gpu_sm_count() ? xe_gpu_sm_count() : 1);
    bool block_per_item = s->kind == XG_STEP_REDUCE && !s->column &&
                          p->body->nodes[s->outs[0]]->op != XE_OP_ARGMAX;
    int64_t want = block_per_item ? items : (items + XG_THREADS - 1) / XG_THREADS;
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
