/*
 * CUDA programs: the cubin (or PTX) is loaded with cudaLibraryLoadData,
 * kernels are looked up with cudaLibraryGetKernel and launched on the
 * executor's stream with cudaLaunchKernel. Every kernel takes one struct
 * (the buffer pointers, the sizes and the workspace, laid out as the
 * generated xg_args): by value, or through a device copy written before
 * each launch when it is too large (xg_args_in_memory). Launch dimensions
 * come from the SM count and the occupancy the runtime reports for each
 * kernel (asked once, at load). The runtime's functions are opened when
 * the first program loads (cuda_libs.c), not linked.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "geometry.h"
#include "program_impl.h"

#ifdef XG_HAVE_CUDA
#include "cuda_libs.h"

/* A CUDA program's own state (xg_program.priv). */
typedef struct cuda_state {
    cudaLibrary_t libs[XG_MAX_CUBINS]; /* one per cubin of the artifact (a pack holds several) */
    int n_libs;
    void *workspace;     /* XG_WORKSPACE_BYTES of device memory (split reductions), zeroed */
    int64_t *max_blocks; /* per step: blocks resident on the device at once (SMs x occupancy) */
    void *dargs; /* xg_args_in_memory: the argument block's device copy, written per launch */
    pthread_mutex_t args_lock; /* ... and held from that write to the launch that reads it */
} cuda_state;

static xe_code cuda_check(cudaError_t e, const char *what, xe_status *st)
{
    if (e == cudaSuccess)
        return XE_OK;
    cudaGetLastError(); /* do not leave it for the per-op fallback's launch check */
    return xe_fail(st, XE_ERR_COMPILE, "%s: %s", what, cudaGetErrorString(e));
}

/* Blocks of kernel k resident on the device at once: the SM count times its occupancy (at least 1
 * each). */
static int64_t resident_blocks(xe_device dev, cudaKernel_t k)
{
    int per_sm = 1;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)k, XG_THREADS, 0) !=
        cudaSuccess) {
        cudaGetLastError(); /* not left for the next launch check */
        per_sm = 1;
    }
    int sms = xe_device_units(dev);
    return (int64_t)(per_sm > 0 ? per_sm : 1) * (sms > 0 ? sms : 1);
}

/* The kernels by name, each with the blocks of it the device holds at once. */
static xe_code get_kernels(xg_program *p, cuda_state *cs, xe_status *st)
{
    if (!(cs->max_blocks = calloc((size_t)p->plan->n_steps + 1, sizeof *cs->max_blocks)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int i = 0; i < p->plan->n_steps; i++) {
        if (p->plan->steps[i].kind == XG_STEP_LIBRARY)
            continue;
        char name[32];
        cudaKernel_t k = NULL;
        xg_step_name(xg_program_kernel_step(p, i), name, sizeof name);
        cudaError_t e = cudaErrorSymbolNotFound;
        for (int l = 0; l < cs->n_libs && e != cudaSuccess; l++)
            if ((e = cudaLibraryGetKernel(&k, cs->libs[l], name)) != cudaSuccess)
                cudaGetLastError(); /* not found in this part: not left for the next call */
        if (cuda_check(e, "cudaLibraryGetKernel", st) != XE_OK)
            return st->code;
        p->fn[i] = (void *)k;
        cs->max_blocks[i] = resident_blocks(p->device, k);
    }
    return XE_OK;
}

/* The artifact's cubin (or PTX), or each cubin of a pack, as a library. */
static xe_code load_libraries(cuda_state *cs, const xg_artifact *a, xe_status *st)
{
    int n = xg_cubins_count(a->code, a->code_len);
    if (n < 0)
        return xe_fail(st, XE_ERR_COMPILE, "a damaged pack of cubins (%zu bytes)", a->code_len);
    for (int i = 0; i < (n ? n : 1); i++) {
        size_t len = a->code_len;
        const void *image = n ? xg_cubins_get(a->code, i, &len) : a->code;
        if (cuda_check(cudaLibraryLoadData(&cs->libs[i], image, NULL, NULL, 0, NULL, NULL, 0),
                       "cudaLibraryLoadData", st) != XE_OK)
            return st->code;
        cs->n_libs = i + 1;
    }
    return XE_OK;
}

xe_code xg_cuda_load(xg_program *p, const xg_artifact *a, const xg_options *o, xe_status *st)
{
    (void)o;
    if (!xe_device_available(p->device))
        return xe_fail(st, XE_ERR_DEVICE, "no CUDA device: %s",
                       xe_device_unavailable_reason(p->device));
    if (xg_cudart_ready(st) != XE_OK)
        return st->code;
    cuda_state *cs = calloc(1, sizeof *cs);
    if (!(p->priv = cs))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (load_libraries(cs, a, st) != XE_OK)
        return st->code;
    if (cuda_check(cudaMalloc(&cs->workspace, XG_WORKSPACE_BYTES), "cudaMalloc (workspace)", st) !=
            XE_OK ||
        cuda_check(cudaMemsetAsync(cs->workspace, 0, XG_WORKSPACE_BYTES,
                                   (cudaStream_t)xe_device_stream(p->device)),
                   "cudaMemsetAsync (workspace)", st) != XE_OK)
        return st->code;
    if (xg_args_in_memory(p->plan)) {
        size_t bytes = xg_pack_args(p->plan, NULL, NULL, NULL, NULL, 0);
        if (cuda_check(cudaMalloc(&cs->dargs, bytes), "cudaMalloc (kernel arguments)", st) != XE_OK)
            return st->code;
        pthread_mutex_init(&cs->args_lock, NULL);
    }
    return get_kernels(p, cs, st);
}

void xg_cuda_unload(xg_program *p)
{
    cuda_state *cs = p->priv;
    if (!cs)
        return;
    for (int l = 0; l < cs->n_libs; l++)
        cudaLibraryUnload(cs->libs[l]);
    if (cs->workspace)
        cudaFree(cs->workspace);
    if (cs->dargs) {
        cudaFree(cs->dargs);
        pthread_mutex_destroy(&cs->args_lock);
    }
    free(cs->max_blocks);
    free(cs);
    p->priv = NULL;
}

/*
 * Launches kernel step with its argument block: by value, or (a large
 * cluster) copied to the program's device block first, under its lock so
 * that two threads launching the same program never swap blocks; the
 * copy and the launch are ordered on the one stream.
 */
static cudaError_t launch_with(xg_program *p, int step, unsigned blocks, char *args, size_t len)
{
    cuda_state *cs = p->priv;
    dim3 grid = {blocks, 1, 1}, block = {XG_THREADS, 1, 1};
    cudaStream_t stream = (cudaStream_t)xe_device_stream(p->device);
    if (!cs->dargs) {
        void *params[] = {args};
        return cudaLaunchKernel((const void *)p->fn[step], grid, block, params, 0, stream);
    }
    void *params[] = {&cs->dargs};
    pthread_mutex_lock(&cs->args_lock);
    cudaError_t e = cudaMemcpyAsync(cs->dargs, args, len, cudaMemcpyHostToDevice, stream);
    if (e == cudaSuccess)
        e = cudaLaunchKernel((const void *)p->fn[step], grid, block, params, 0, stream);
    pthread_mutex_unlock(&cs->args_lock);
    return e;
}

xe_code xg_cuda_launch(xg_program *p, int step, const xe_type *types, void *const *ptrs,
                       const int64_t *S, xe_status *st)
{
    cuda_state *cs = p->priv;
    int64_t blocks =
        xg_launch_blocks(p->plan, step, types, &xg_cuda_geometry, cs->max_blocks[step]);
    if (blocks <= 0)
        return XE_OK;
    size_t need = xg_pack_args(p->plan, NULL, NULL, NULL, NULL, 0);
    char small[4096], *args = need <= sizeof small ? small : malloc(need);
    if (!args)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    size_t len = xg_pack_args(p->plan, ptrs, S, cs->workspace, args, need);
    cudaError_t e = launch_with(p, step, (unsigned)blocks, args, len);
    if (args != small)
        free(args);
    if (e == cudaSuccess)
        e = cudaGetLastError();
    else
        cudaGetLastError(); /* not left for the per-op fallback's launch check */
    return e == cudaSuccess
               ? XE_OK
               : xe_fail(st, XE_ERR_DEVICE, "launch of xg_k%d: %s", step, cudaGetErrorString(e));
}
#else
xe_code xg_cuda_load(xg_program *p, const xg_artifact *a, const xg_options *o, xe_status *st)
{
    (void)p, (void)a, (void)o;
    return xe_fail(st, XE_ERR_COMPILE, "xlac was built without CUDA");
}

void xg_cuda_unload(xg_program *p)
{
    (void)p;
}

xe_code xg_cuda_launch(xg_program *p, int step, const xe_type *types, void *const *ptrs,
                       const int64_t *S, xe_status *st)
{
    (void)p, (void)step, (void)types, (void)ptrs, (void)S;
    return xe_fail(st, XE_ERR_COMPILE, "xlac was built without CUDA");
}
#endif
