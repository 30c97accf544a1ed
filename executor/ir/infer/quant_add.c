/*
 * The shape function of quant_add(a, b): an ONNX Add between QDQ pairs as one step, what the ONNX
 * importer makes of QuantizeLinear(Add(DequantizeLinear(a), DequantizeLinear(b))) with every
 * scale and zero point per tensor (frontends/onnx/ops/qdq.c; a residual add of a QDQ network):
 *
 *   y = saturate(round_half_even(((f32(a) - a_zero_point) * a_scale
 *                                 + (f32(b) - b_zero_point) * b_scale) / y_scale) + y_zero_point)
 *
 * each step one f32 operation, as the three ONNX nodes compute it, so the result is the
 * composition's bit for bit. a and b are u8 or i8 (each its own), of one shape (no broadcasting);
 * the scales positive normal floats; each zero point an integer in its value's range (default 0);
 * y_dtype u8 (the default) or i8. Everything is checked here, so the CPU kernel
 * (devices/cpu/quant_add.c) reads the attributes without checking.
 */
#include <math.h>

#include "kernels.h"
#include "nn.h"

/* Scale attribute `name`: a positive normal float, required. */
static xe_code scale(const xe_node *n, const char *name, float *s, xe_status *st)
{
    const xe_attr *a = xe_node_attr(n, name);
    if (!a || a->kind != XE_ATTR_FLOAT || !isnormal((float)a->f) || a->f < 0)
        return xe_fail(st, XE_ERR_GRAPH, "%s must be a positive normal float", name);
    *s = (float)a->f;
    return XE_OK;
}

static bool eight_bit(xe_dtype dt)
{
    return dt == XE_U8 || dt == XE_I8;
}

xe_code xe_quant_add_read(const xe_node *n, xe_dtype a, xe_dtype b, xe_quant_add_params *q,
                          xe_status *st)
{
    *q = (xe_quant_add_params){.y_dt = XE_U8};
    if (scale(n, "a_scale", &q->a_scale, st) != XE_OK ||
        scale(n, "b_scale", &q->b_scale, st) != XE_OK ||
        scale(n, "y_scale", &q->y_scale, st) != XE_OK ||
        xe_quant_zero_point(n, "a_zero_point", a, &q->a_zero, st) != XE_OK ||
        xe_quant_zero_point(n, "b_zero_point", b, &q->b_zero, st) != XE_OK)
        return st->code;
    /* y_scale is present, so this reads y_dtype (u8 by default) and y_zero_point. */
    return xe_quant_output(n, &q->y_dt, &q->y_scale, &q->y_zero, st);
}

xe_code xe_infer_quant_add(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                           xe_status *st)
{
    if (n_in != 2)
        return xe_fail(st, XE_ERR_GRAPH, "needs a and b");
    for (int k = 0; k < 2; k++)
        if (!eight_bit(in[k].dtype))
            return xe_fail(st, XE_ERR_GRAPH, "%s must be u8 or i8, got %s", k ? "b" : "a",
                           xe_dtype_name(in[k].dtype));
    if (!xe_shape_equal(&in[0].shape, &in[1].shape)) {
        char sa[96], sb[96];
        return xe_fail(st, XE_ERR_GRAPH,
                       "a and b must have one shape (no broadcasting), got %s and %s",
                       xe_type_str(&in[0], sa, sizeof sa), xe_type_str(&in[1], sb, sizeof sb));
    }
    xe_quant_add_params q;
    if (xe_quant_add_read(n, in[0].dtype, in[1].dtype, &q, st) != XE_OK)
        return st->code;
    *out = (xe_type){q.y_dt, in[0].shape};
    return XE_OK;
}
