/*
 * Private to codegen/: a loaded program, shared by program.c (C, common
 * run loop) and program_cuda.c (module load and kernel launch).
 */
#ifndef XG_PROGRAM_IMPL_H
#define XG_PROGRAM_IMPL_H

#include <pthread.h>

#include "plan.h"
#include "xg_impl.h"
#include "xlac/op.h"

struct xg_program {
    xg_target target;
    xe_device device;
    xe_graph *body;     /* our own copy */
    xe_type *in_types;  /* the types the program was built for */
    xg_plan *plan;
    void *dl;           /* C: dlopen handle */
    void **fn;          /* per step: C function or cudaKernel_t */
    void *library;      /* CUDA: cudaLibrary_t */
    void *workspace;    /* CUDA: XG_WORKSPACE_BYTES of device memory (split reductions), zeroed */
    int64_t *max_blocks; /* CUDA, per step: blocks resident on the device at once (SMs x occupancy) */
    xe_tensor **consts;  /* CUDA, per node: the device copy of a materialized constant, made at load */
    void *dargs;         /* CUDA, xg_args_in_memory: the argument block's device copy, written per launch */
    pthread_mutex_t args_lock; /* ... and held from that write to the launch that reads it */
};

xe_code xg_cuda_load(xg_program *p, const xg_artifact *a, xe_status *st);
void xg_cuda_unload(xg_program *p);
xe_code xg_cuda_launch(xg_program *p, int step, const xe_type *types, void *const *ptrs, const int64_t *S,
                       xe_status *st);

#endif
