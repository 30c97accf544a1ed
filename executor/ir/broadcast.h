/*
 * Private: iterating an output index space with numpy broadcasting. Each
 * operand gets a stride per output dim (0 where it is broadcast); adjacent
 * dims that are contiguous for every operand are merged, so the common
 * same-shape case becomes one flat loop. The walk is split across OpenMP
 * threads for large outputs; the callback gets one row (the innermost
 * merged dim) at a time with per-operand element offsets and strides.
 * Also the [outer, k, inner] view of a shape around one axis.
 */
#ifndef XE_BROADCAST_H
#define XE_BROADCAST_H

#include <stdint.h>

#include "xlac/dtype.h"

#define XE_BCAST_MAX_OPERANDS 4
#define XE_PARALLEL_MIN 32768 /* elements below which kernels stay on one thread */

typedef struct xe_bcast {
    int rank;  /* after merging; >= 1 */
    int n_ops; /* operands (inputs) */
    int64_t dims[XE_MAX_RANK];
    int64_t stride[XE_BCAST_MAX_OPERANDS][XE_MAX_RANK]; /* element strides, 0 = broadcast */
    int64_t numel;
} xe_bcast;

/* Row callback: n elements; out starts at out_off, operand k at off[k] with step step[k]. */
typedef void (*xe_bcast_row_fn)(void *ctx, int64_t n, int64_t out_off, const int64_t *off,
                                const int64_t *step);

void xe_bcast_init(xe_bcast *b, const xe_shape *out, const xe_shape *const *ins, int n_ins);
/* The same with explicit per-operand element strides over the output's dims. */
void xe_bcast_init_strided(xe_bcast *b, const xe_shape *out, int n_ops,
                           const int64_t (*strides)[XE_MAX_RANK]);
/* Calls fn for every row of the output, in parallel when numel >= XE_PARALLEL_MIN. */
void xe_bcast_run(const xe_bcast *b, xe_bcast_row_fn fn, void *ctx);

/* A shape seen around one axis as [outer, k, inner] (softmax, concat, iota). */
typedef struct xe_axis_view {
    int axis;      /* the axis, made non-negative */
    int64_t outer; /* product of the dims before it */
    int64_t k;     /* its size (1 for a scalar) */
    int64_t inner; /* product of the dims after it */
} xe_axis_view;

/* The view of s around axis (negative: counted from the end), which the caller has checked. */
xe_axis_view xe_axis_view_of(const xe_shape *s, int64_t axis);

#endif
