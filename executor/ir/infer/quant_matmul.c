/*
 * The shape function of dynamic_quant_matmul(x, w, w_scale, colsum): x f32 [..., K] (rank 1 or
 * more), w i8 [K, N], w_scale f32 with one element, colsum i32 [N] (the column sums of w, made at
 * import). The result is f32 [..., N]: x's leading dims, w's columns. Everything is checked here,
 * so the CPU kernel (devices/cpu/quant_matmul.c) indexes without checking.
 */
#include "kernels.h"

/* Whether operand k has dtype dt; else a message naming it. */
static xe_code want_dtype(const xe_type *in, int k, const char *what, xe_dtype dt, xe_status *st)
{
    if (in[k].dtype == dt)
        return XE_OK;
    return xe_fail(st, XE_ERR_GRAPH, "%s must be %s, got %s", what, xe_dtype_name(dt),
                   xe_dtype_name(in[k].dtype));
}

/* Whether known dims a and b agree (an unknown one agrees with anything). */
static bool agree(int64_t a, int64_t b)
{
    return a < 0 || b < 0 || a == b;
}

xe_code xe_infer_dynamic_quant_matmul(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                                      xe_status *st)
{
    (void)n;
    if (n_in != 4)
        return xe_fail(st, XE_ERR_GRAPH, "needs x, w, w_scale and colsum");
    if (want_dtype(in, 0, "x", XE_F32, st) != XE_OK || want_dtype(in, 1, "w", XE_I8, st) != XE_OK ||
        want_dtype(in, 2, "w_scale", XE_F32, st) != XE_OK ||
        want_dtype(in, 3, "colsum", XE_I32, st) != XE_OK)
        return st->code;
    const xe_shape *x = &in[0].shape, *w = &in[1].shape;
    if (x->rank < 1 || w->rank != 2 || in[3].shape.rank != 1)
        return xe_fail(st, XE_ERR_GRAPH, "x must be [..., K], w [K, N] and colsum [N]");
    if (xe_shape_numel(&in[2].shape) != 1)
        return xe_fail(st, XE_ERR_GRAPH, "w_scale must have one element");
    if (!agree(x->dims[x->rank - 1], w->dims[0]) || !agree(w->dims[1], in[3].shape.dims[0]))
        return xe_fail(st, XE_ERR_GRAPH, "x's last dim must be w's rows, colsum w's columns");
    *out = (xe_type){XE_F32, *x};
    out->shape.dims[x->rank - 1] = w->dims[1];
    return XE_OK;
}
