/*
 * The shape function of quant_conv2d(x, w, scale[, bias]): a 2-D convolution of 8-bit operands
 * with an f32 result, what the ONNX importer makes of a Conv between QDQ pairs
 * (frontends/onnx/ops/qdq.c):
 *
 *   y[n, m, i, j] = scale[m] * sum over c, a, b of (x[n, c, .., ..] - x_zero_point) * w[m, c, a, b]
 *                   + bias[m]
 *
 * the sum exact in 32 bits, padding taps reading x_zero_point (a real zero). x is u8 or i8
 * [N, C, H, W], w i8 [M, C/groups, kh, kw], scale and bias f32 [M]; the window attributes are
 * conv2d's (strides, pads, dilations, groups), x_zero_point an integer in x's range (default 0).
 * With y_scale (a float) the result is quantized as ONNX QuantizeLinear does it, to y_dtype (u8,
 * the default, or i8): saturate(round_half_even(y / y_scale) + y_zero_point); without, it is y in
 * f32.
 * Everything is checked here, so the CPU kernel (devices/cpu/quant_conv.c) indexes without
 * checking.
 */
#include <math.h>

#include "kernels.h"
#include "nn.h"

xe_code xe_quant_zero_point(const xe_node *n, const char *name, xe_dtype dt, int32_t *zp,
                            xe_status *st)
{
    const xe_attr *a = xe_node_attr(n, name);
    int64_t lo = dt == XE_U8 ? 0 : -128, hi = dt == XE_U8 ? 255 : 127;
    *zp = 0;
    if (a && (a->kind != XE_ATTR_INT || a->i < lo || a->i > hi))
        return xe_fail(st, XE_ERR_GRAPH, "%s must be an integer in [%lld, %lld]", name,
                       (long long)lo, (long long)hi);
    *zp = a ? (int32_t)a->i : 0;
    return XE_OK;
}

xe_code xe_quant_conv_zero_point(const xe_node *n, xe_dtype x, int32_t *zp, xe_status *st)
{
    return xe_quant_zero_point(n, "x_zero_point", x, zp, st);
}

xe_code xe_quant_output(const xe_node *n, xe_dtype *dt, float *scale, int32_t *zp, xe_status *st)
{
    const xe_attr *s = xe_node_attr(n, "y_scale"), *d = xe_node_attr(n, "y_dtype");
    *dt = XE_F32, *scale = 1.0f, *zp = 0;
    if (!s)
        return d || xe_node_attr(n, "y_zero_point")
                   ? xe_fail(st, XE_ERR_GRAPH, "y_dtype and y_zero_point need y_scale")
                   : XE_OK;
    if (s->kind != XE_ATTR_FLOAT || !isnormal((float)s->f) || s->f < 0)
        return xe_fail(st, XE_ERR_GRAPH, "y_scale must be a positive normal float");
    if (d && (d->kind != XE_ATTR_DTYPE || (d->dtype != XE_U8 && d->dtype != XE_I8)))
        return xe_fail(st, XE_ERR_GRAPH, "y_dtype must be u8 or i8");
    *dt = d ? d->dtype : XE_U8;
    *scale = (float)s->f;
    return xe_quant_zero_point(n, "y_zero_point", *dt, zp, st);
}

/* Whether operand k, [M] f32, is one per output channel. */
static xe_code per_channel(const xe_type *in, int k, const char *what, int64_t m, xe_status *st)
{
    if (in[k].dtype != XE_F32 || in[k].shape.rank != 1 || in[k].shape.dims[0] != m)
        return xe_fail(st, XE_ERR_GRAPH, "%s must be f32 [%lld] (one per output channel), got %s",
                       what, (long long)m, xe_dtype_name(in[k].dtype));
    return XE_OK;
}

xe_code xe_infer_quant_conv2d(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                              xe_status *st)
{
    if (n_in < 3 || n_in > 4)
        return xe_fail(st, XE_ERR_GRAPH, "needs x, w, scale and an optional bias");
    if (in[0].dtype != XE_U8 && in[0].dtype != XE_I8)
        return xe_fail(st, XE_ERR_GRAPH, "x must be u8 or i8, got %s", xe_dtype_name(in[0].dtype));
    if (in[1].dtype != XE_I8)
        return xe_fail(st, XE_ERR_GRAPH, "w must be i8, got %s", xe_dtype_name(in[1].dtype));
    int32_t zp, y_zp;
    float y_scale;
    xe_dtype y;
    xe_window p;
    if (xe_quant_conv_zero_point(n, in[0].dtype, &zp, st) != XE_OK ||
        xe_quant_output(n, &y, &y_scale, &y_zp, st) != XE_OK ||
        xe_window_read(n, &in[0].shape, &in[1].shape, &p, st) != XE_OK ||
        per_channel(in, 2, "scale", p.m, st) != XE_OK ||
        (n_in == 4 && per_channel(in, 3, "bias", p.m, st) != XE_OK))
        return st->code;
    *out = (xe_type){y, {.rank = 4, .dims = {p.n, p.m, p.oh, p.ow}}};
    return XE_OK;
}
