/*
 * The pieces the QLinear* operators share as compositions (QLinearConv here, onnxruntime's
 * com.microsoft QLinearAdd, QLinearMul, QLinearGlobalAveragePool and QGemm): DequantizeLinear of
 * an operand by its scale and zero point inputs, and QuantizeLinear of an f32 result, with the
 * arithmetic of ONNX's own two ops (ops/quant.c): (f32(x) - f32(zero point)) * scale, and
 * saturate(round_half_even(y / scale) + zero point).
 */
#include "onnx_impl.h"

int ox_ql_param(ox_b *b, int k, int axis, const xe_shape *xs, const char *what)
{
    int v = ox_in(b, k);
    if (v < 0)
        return b->failed ? -1 : (ox_invalid(b, "%s is missing", what), -1);
    int64_t n = xe_shape_numel(&ox_type(b, v)->shape);
    if (axis < 0 && n != 1) {
        ox_unsupported(b, "%s of %lld elements is not supported (one element)", what, (long long)n);
        return -1;
    }
    return ox_quant_per_axis(b, v, xs->rank, axis, xs, what);
}

int ox_ql_dequantize(ox_b *b, int k, int ks, int kz, int axis, const char *what)
{
    int v = ox_in(b, k);
    const xe_shape *xs = &ox_type(b, v)->shape;
    int y = ox_cast(b, v, XE_F32);
    if (kz >= 0 && ox_in(b, kz) >= 0)
        y = ox_bin(b, XE_OP_SUB, y, ox_cast(b, ox_ql_param(b, kz, axis, xs, what), XE_F32));
    return ox_bin(b, XE_OP_MUL, y, ox_cast(b, ox_ql_param(b, ks, axis, xs, what), XE_F32));
}

int ox_ql_quantize(ox_b *b, int y, int ks, int kz, xe_dtype to)
{
    const xe_shape *ys = &ox_type(b, y)->shape;
    int s = ox_cast(b, ox_ql_param(b, ks, -1, ys, "the output scale"), XE_F32);
    int q = ox_round_even(b, ox_bin(b, XE_OP_DIV, y, s));
    if (kz >= 0 && ox_in(b, kz) >= 0)
        q = ox_bin(b, XE_OP_ADD, q,
                   ox_cast(b, ox_ql_param(b, kz, -1, ys, "the output zero point"), XE_F32));
    double lo, hi;
    ox_quant_range(to, &lo, &hi);
    q = ox_bin(b, XE_OP_MAXIMUM, q, ox_scalar(b, XE_F32, lo));
    return ox_cast(b, ox_bin(b, XE_OP_MINIMUM, q, ox_scalar(b, XE_F32, hi)), to);
}

bool ox_ql_eight_bit(ox_b *b, int k, int z, const char *what)
{
    xe_dtype dt = ox_type(b, ox_in(b, k))->dtype;
    if (dt != XE_U8 && dt != XE_I8) {
        ox_unsupported(b, "%s of %s is not supported (u8 or i8)", what, xe_dtype_name(dt));
        return false;
    }
    if (z >= 0 && ox_in(b, z) >= 0 && ox_type(b, ox_in(b, z))->dtype != dt) {
        ox_invalid(b, "the zero point of %s must have its dtype, %s", what, xe_dtype_name(dt));
        return false;
    }
    return true;
}
