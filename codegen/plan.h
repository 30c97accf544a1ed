/*
 * Private to codegen/: the fusion plan of one cluster at concrete input
 * types. Every body node gets its concrete type; nodes whose values must
 * live in memory (inputs, constants that are not scalars, body outputs,
 * reductions, softmax, matmul, values with several uses) are
 * "materialized" and get a buffer; all others are computed inline, in
 * registers, by the kernels that read them. The plan is a list of steps:
 * fused loop kernels (one or several outputs of one shape), reduction
 * kernels (row or column order), softmax row kernels, and library calls
 * (matmul through BLAS).
 */
#ifndef XG_PLAN_H
#define XG_PLAN_H

#include "xg.h"

#define XG_MAX_OUTS 8

typedef enum xg_step_kind {
    XG_STEP_LOOP,    /* elementwise and shape ops fused into one loop; several outputs of one shape */
    XG_STEP_REDUCE,  /* reduce_* or argmax, its producers computed inline */
    XG_STEP_SOFTMAX, /* softmax along one axis, one row at a time */
    XG_STEP_LIBRARY, /* matmul: a BLAS call */
} xg_step_kind;

typedef struct xg_step {
    xg_step_kind kind;
    int n_outs;
    int outs[XG_MAX_OUTS]; /* body node indices this step writes */
    bool column;           /* REDUCE: reduced dims outside the kept ones (accumulate rows) */
} xg_step;

typedef struct xg_plan {
    const xe_graph *body;
    xe_type *types;   /* concrete type of each body node */
    bool *mat;        /* materialized: has a buffer */
    int *uses;        /* consumers of each node (body outputs count) */
    int n_steps;
    xg_step *steps;
    bool generic;     /* sizes read from S[] instead of literals */
    int *soff;        /* offset of each node's dims in S[] */
    int n_sizes;
} xg_plan;

/* Concrete types of every body node for the given input types. */
xe_code xg_body_types(const xe_graph *body, const xe_type *in_types, xe_type *types, xe_status *st);

xe_code xg_plan_build(const xe_graph *body, const xe_type *in_types, bool generic, xg_plan **out,
                      xe_status *st);
void xg_plan_destroy(xg_plan *p);
/* The plan's invariants (buffers written once, in order; one shape per loop); run by xg_plan_build. */
xe_code xg_plan_verify(const xg_plan *p, xe_status *st);
/* Fills S[] (n_sizes entries) from the plan's types. */
void xg_plan_sizes(const xg_plan *p, int64_t *S);
/* "kernel xg_k0: loop f32[4096,2048] -> t1, s (ops: mul add)" lines; malloc'd. */
char *xg_plan_text(const xg_plan *p, const char *key);
/* Kernel name of step i ("xg_k3"). */
void xg_step_name(int i, char *buf, size_t len);

/* Emits the whole program for the plan: C11 + OpenMP or CUDA C++. malloc'd. */
char *xg_emit_program(const xg_plan *p, xg_target target, xe_status *st);

#endif
