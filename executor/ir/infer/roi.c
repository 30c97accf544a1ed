/*
 * Shape functions of two region ops of ONNX (kernels in devices/cpu/roi_align.c
 * and devices/cpu/max_unpool.c):
 *
 *   roi_align(x, rois, batch_indices, mode="avg", half_pixel=true, output_height=1,
 *             output_width=1, sampling_ratio=0, spatial_scale=1.0)
 *     x [N, C, H, W] (f16, f32, f64), rois [R, 4] of x's dtype ([x1, y1, x2, y2]),
 *     batch_indices i64 [R]; the result [R, C, output_height, output_width].
 *   max_unpool(x, indices, kernel, strides, pads)
 *     x [N, C, d...] (1 to 3 pooled dims), indices i64 of x's shape (flat positions in
 *     the result, as MaxPool's second output gives them); the result is x's dtype,
 *     [N, C, (d - 1) * stride - pad_begin - pad_end + kernel ...].
 */
#include <string.h>

#include "kernels.h"

/* Whether dim a (maybe unknown) can be b (maybe unknown). */
static bool fits(int64_t a, int64_t b)
{
    return a < 0 || b < 0 || a == b;
}

xe_code xe_infer_roi_align(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                           xe_status *st)
{
    (void)n_in;
    const char *mode = xe_node_attr_string(n, "mode", "avg");
    if (strcmp(mode, "avg") && strcmp(mode, "max"))
        return xe_fail(st, XE_ERR_GRAPH, "mode \"%s\" is not \"avg\" or \"max\"", mode);
    int64_t oh = xe_node_attr_int(n, "output_height", 1),
            ow = xe_node_attr_int(n, "output_width", 1);
    if (oh < 1 || ow < 1 || xe_node_attr_int(n, "sampling_ratio", 0) < 0)
        return xe_fail(st, XE_ERR_GRAPH,
                       "output_height %lld and output_width %lld must be >= 1, sampling_ratio >= 0",
                       (long long)oh, (long long)ow);
    xe_dtype dt = in[0].dtype;
    if (dt != XE_F16 && dt != XE_F32 && dt != XE_F64)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "x must be f16, f32 or f64, got %s",
                       xe_dtype_name(dt));
    if (in[1].dtype != dt || in[2].dtype != XE_I64)
        return xe_fail(st, XE_ERR_GRAPH, "rois must be x's %s and batch_indices i64, got %s and %s",
                       xe_dtype_name(dt), xe_dtype_name(in[1].dtype), xe_dtype_name(in[2].dtype));
    const xe_shape *x = &in[0].shape, *r = &in[1].shape, *b = &in[2].shape;
    if (x->rank != 4 || r->rank != 2 || !fits(r->dims[1], 4) || b->rank != 1 ||
        !fits(r->dims[0], b->dims[0]))
        return xe_fail(st, XE_ERR_GRAPH,
                       "x must be [N, C, H, W], rois [R, 4] and batch_indices [R], got ranks %d, "
                       "%d and %d",
                       x->rank, r->rank, b->rank);
    int64_t rois = b->dims[0] >= 0 ? b->dims[0] : r->dims[0];
    *out = (xe_type){dt, {.rank = 4, .dims = {rois, x->dims[1], oh, ow}}};
    return XE_OK;
}

/* Ints attribute name of n, k values >= lo (absent: each dflt); false with st set otherwise. */
static bool window_ints(const xe_node *n, const char *name, int k, int64_t lo, int64_t dflt,
                        int64_t *v, xe_status *st)
{
    const xe_attr *a = xe_node_attr(n, name);
    for (int d = 0; d < k; d++)
        v[d] = dflt;
    if (!a)
        return true;
    if (a->kind != XE_ATTR_INTS || a->n != k) {
        xe_fail(st, XE_ERR_GRAPH, "%s must be %d integers", name, k);
        return false;
    }
    for (int d = 0; d < k; d++)
        if ((v[d] = a->ints[d]) < lo) {
            xe_fail(st, XE_ERR_GRAPH, "%s[%d] is %lld, below %lld", name, d, (long long)v[d],
                    (long long)lo);
            return false;
        }
    return true;
}

xe_code xe_infer_max_unpool(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                            xe_status *st)
{
    (void)n_in;
    const xe_shape *x = &in[0].shape, *ix = &in[1].shape;
    int k = x->rank - 2;
    if (k < 1 || k > 3)
        return xe_fail(st, XE_ERR_GRAPH,
                       "x must be [N, C, d...] with 1 to 3 pooled dims, got rank %d", x->rank);
    if (in[1].dtype != XE_I64 || ix->rank != x->rank)
        return xe_fail(st, XE_ERR_GRAPH, "indices must be i64 of x's rank %d, got %s of rank %d",
                       x->rank, xe_dtype_name(in[1].dtype), ix->rank);
    for (int d = 0; d < x->rank; d++)
        if (!fits(x->dims[d], ix->dims[d]))
            return xe_fail(st, XE_ERR_GRAPH, "indices must have x's shape (dim %d: %lld and %lld)",
                           d, (long long)ix->dims[d], (long long)x->dims[d]);
    int64_t kern[3], s[3], p[6];
    if (!xe_node_attr(n, "kernel"))
        return xe_fail(st, XE_ERR_GRAPH, "needs kernel=[...] (one per pooled dim)");
    if (!window_ints(n, "kernel", k, 1, 1, kern, st) ||
        !window_ints(n, "strides", k, 1, 1, s, st) || !window_ints(n, "pads", 2 * k, 0, 0, p, st))
        return st->code;
    xe_shape o = {.rank = x->rank, .dims = {x->dims[0], x->dims[1]}};
    for (int d = 0; d < k; d++) {
        int64_t v = x->dims[d + 2];
        o.dims[d + 2] = v < 0 ? XE_DIM_UNKNOWN : (v - 1) * s[d] - p[d] - p[d + k] + kern[d];
        if (v >= 0 && o.dims[d + 2] < 0)
            return xe_fail(st, XE_ERR_GRAPH, "pooled dim %d would unpool to %lld", d,
                           (long long)o.dims[d + 2]);
    }
    *out = (xe_type){in[0].dtype, o};
    return XE_OK;
}
