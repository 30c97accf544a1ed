/*
 * Private to codegen/: a loaded program, shared by program.c (the common
 * run loop) and the backends' load, launch and unload steps (targets/c/backend.c,
 * targets/cuda/program.c), which keep their own state in priv.
 */
#ifndef XG_PROGRAM_IMPL_H
#define XG_PROGRAM_IMPL_H

#include "backend.h"
#include "plan.h"
#include "share.h"
#include "xg_impl.h"
#include "xlac/op.h"

struct xg_program {
    const xg_backend *backend;
    xe_device device;
    xe_graph *body;    /* our own copy */
    xe_type *in_types; /* the types the program was built for */
    xg_plan *plan;
    void **fn;        /* per step: the backend's kernel (a C function, a cudaKernel_t) */
    xg_shares shares; /* steps that run an earlier step's kernel on their own buffers (share.h) */
    int *born,
        *dies; /* per node: the step that writes it and the last that reads it (lifetime.c; -1 and
                  INT_MAX for inputs, constants and outputs, which live the whole run) */
    int *view_of; /* per node: the node whose buffer its own views (a reshape's copy step that does
                     not run, lifetime.c), else -1 */
    xe_tensor *
        *consts; /* per node: a materialized constant on the program's device, made at load */
    void *priv;  /* the backend's own state (C: the dlopen handle; CUDA: cuda/program.c's) */
    xe_kernel_cache *kcache; /* per node: a library step's kernel cache (its oneDNN primitive and
                                packed weights), made on its first run, freed with the program */
};

/* The step whose kernel step i runs: i itself, or the one it shares (the backends' loads). */
int xg_program_kernel_step(const xg_program *p, int i);

/* Each buffer's lifetime (lifetime.c): p->born and p->dies. */
xe_code xg_lifetimes_build(xg_program *p, xe_status *st);
/* The last step that runs together with step i (a matmul's panel or cuBLASLt epilogue steps), else
 * i. */
int xg_group_last(const xg_program *p, int i);
/* Whether step i of p does not run: its one output views its input's buffer (p->view_of). */
bool xg_step_is_view(const xg_program *p, int i);
/* Makes the buffers steps [first, last] write that do not exist yet, their pointers in ptrs: a
   view's is its input's buffer under its own shape. */
xe_code xg_buffers_make(xg_program *p, const xe_type *types, int first, int last, xe_tensor **bufs,
                        void **ptrs, xe_status *st);
/* Releases the made buffers that no step after step done reads. */
void xg_buffers_release(const xg_program *p, int done, xe_tensor **bufs, void **ptrs);

/* The C target's conv with its epilogue as oneDNN post-ops (targets/c/dnnl_step.c). */
xe_code xg_c_conv_epilogue(xg_program *p, const xg_conv_epi *e, xe_tensor **bufs, xe_status *st);

/* The C target's fused attention, steps [first, pv] (targets/c/attention_step.c). */
xe_code xg_c_attention(xg_program *p, int first, int pv, const xe_type *types, xe_tensor **bufs,
                       void *const *ptrs, const int64_t *S, xe_status *st);
/* Whether step i starts a fused attention this program's backend runs (xg_step.attention). */
bool xg_runs_attention(const xg_program *p, int i);

/* CUDA's load, launch and unload (targets/cuda/program.c), the slots of xg_backend_cuda. */
xe_code xg_cuda_load(xg_program *p, const xg_artifact *a, const xg_options *o, xe_status *st);
void xg_cuda_unload(xg_program *p);
/* A matmul with its bias/ReLU/GELU epilogue as one cuBLASLt call (targets/cuda/blaslt.c). */
xe_code xg_cuda_matmul_epilogue(xg_program *p, const xg_blas_epi *e, xe_tensor **bufs,
                                xe_status *st);
xe_code xg_cuda_launch(xg_program *p, int step, const xe_type *types, void *const *ptrs,
                       const int64_t *S, xe_status *st);

#endif
