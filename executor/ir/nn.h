/*
 * Private: the attributes of the neural-network ops (gather, tile, pad,
 * conv2d, max_pool2d, avg_pool2d) read and validated once, in
 * infer/nn.c, for the shape functions and for the CPU and CUDA kernels
 * alike, so that a kernel never reads an attribute the shape function did
 * not check. Messages name the attribute and the bad value; the caller
 * adds the node.
 */
#ifndef XE_NN_H
#define XE_NN_H

#include <stdbool.h>
#include <stdint.h>

#include "xlac/op.h"

/*
 * Geometry of a 2-D window op over NCHW data: conv2d (w is its weight) or
 * a pool (kernel=[kh,kw]). Dims of the input that are unknown at
 * inference give unknown output dims (XE_DIM_UNKNOWN).
 */
typedef struct xe_window {
    int64_t n, c, h, w;     /* input batch, channels, height, width */
    int64_t m, oh, ow;      /* output channels, height, width */
    int64_t kh, kw;         /* kernel height and width */
    int64_t sh, sw;         /* strides */
    int64_t dh, dw;         /* dilations */
    int64_t pt, pl, pb, pr; /* pads: top, left, bottom, right */
    int64_t groups;         /* conv2d groups; 1 for pools */
    bool ceil_mode;         /* pools: output size rounded up */
    bool count_include_pad; /* avg_pool2d: pads count in the divisor */
} xe_window;

/* The window of node n over input shape x; w: conv2d's weight shape, NULL for a pool. */
xe_code xe_window_read(const xe_node *n, const xe_shape *x, const xe_shape *w, xe_window *p,
                       xe_status *st);

/* Whether every input has input 0's dtype (a convolution's weight and bias); fails naming the
 * first that does not. */
xe_code xe_same_dtype_as_input(const xe_type *in, int n_in, xe_status *st);

/* Zero point attribute `name` of n for a value of dtype dt (u8 or i8): 0 when absent, else an
   integer in dt's range. */
xe_code xe_quant_zero_point(const xe_node *n, const char *name, xe_dtype dt, int32_t *zp,
                            xe_status *st);
/* quant_add's quantizations (infer/quant_add.c): a's, b's and y's scale and zero point. */
typedef struct xe_quant_add_params {
    float a_scale, b_scale, y_scale;
    int32_t a_zero, b_zero, y_zero;
    xe_dtype y_dt;
} xe_quant_add_params;
/* quant_add's attributes for operands of dtypes a and b (u8 or i8), checked, into *q. */
xe_code xe_quant_add_read(const xe_node *n, xe_dtype a, xe_dtype b, xe_quant_add_params *q,
                          xe_status *st);
/* quant_conv2d's x_zero_point (0 when absent), checked against x's dtype (u8 or i8). */
xe_code xe_quant_conv_zero_point(const xe_node *n, xe_dtype x, int32_t *zp, xe_status *st);
/* A quantized step's output (quant_conv2d, quant_add): f32 (scale 1, zero point 0) without
   y_scale, else y_dtype (u8 or i8, default u8), y_scale and y_zero_point, checked. */
xe_code xe_quant_output(const xe_node *n, xe_dtype *dt, float *scale, int32_t *zp, xe_status *st);

/*
 * The k in [0, n) with 0 <= x0 + k*s < lim, as [*lo, *hi): the output
 * columns whose tap at input column x0 + k*s falls inside the input.
 */
void xe_window_range(int64_t x0, int64_t s, int64_t lim, int64_t n, int64_t *lo, int64_t *hi);

/* gather's axis, normalised against the data's rank. */
xe_code xe_gather_axis(const xe_node *n, int rank, int *axis, xe_status *st);

/* tile's repeats, one per dim of a rank-`rank` operand, each >= 0. */
xe_code xe_tile_repeats(const xe_node *n, int rank, int64_t *reps, xe_status *st);

/* pad's pads split into begin[d] and end[d] (negative: crop). */
xe_code xe_pad_amounts(const xe_node *n, int rank, int64_t *begin, int64_t *end, xe_status *st);

#endif
