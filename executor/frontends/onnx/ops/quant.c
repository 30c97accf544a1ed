/*
 * QuantizeLinear and DequantizeLinear (opsets 10 to 25) as compositions, in
 * the forms onnxruntime's quantizer writes into QDQ models: a scale and a
 * zero point per tensor (a scalar or one element) or per axis (1-D, as long
 * as the input's dim `axis`), over the 8- and 16-bit integers:
 *
 *   DequantizeLinear: y = (f32(x) - f32(zero_point)) * f32(scale), in scale's dtype
 *   QuantizeLinear:   y = clamp(round_half_even(f32(x) / f32(scale)) + zero_point, lo, hi)
 *                     in zero_point's dtype (output_dtype's, else u8, without one)
 *
 * which is what the ONNX reference and onnxruntime compute (f32 arithmetic,
 * one division, ties to even, saturation to the target's range). The 4- and
 * 2-bit integers go the same way (their ranges: i4 [-8, 7], u4 [0, 15],
 * i2 [-2, 1], u2 [0, 3]). To a float8 kind there is no integer rounding:
 * y = cast(f32(x) / f32(scale)), rounded to nearest even in the float8 and
 * saturated unless the attribute saturate is 0; a float8 zero point must be
 * 0 (ONNX) and is not added, as the ONNX reference does not add it (so -0
 * stays -0). To FLOAT4E2M1 (no NaN, no inf: it saturates) the zero point
 * is added before the cast, as the reference does. Blocked quantization
 * (block_size > 0): the scale and zero point have x's shape but
 * ceil(dim / block_size) along axis, each element repeated over its block.
 * A precision other than f32 is refused as unsupported.
 *
 * DynamicQuantizeLinear computes its scale and zero point from x's range
 * (which always holds 0) as the ONNX reference does:
 *   scale = (max(x, 0) - min(x, 0)) / 255, zero_point = clamp(round(-min / scale), 0, 255)
 */
#include <math.h>

#include "onnx_impl.h"

static xe_code done(ox_b *b, int y)
{
    ox_out(b, 0, y);
    return ox_status(b);
}

/* The integer types a quantized tensor may have here. */
static bool quant_dtype(xe_dtype dt)
{
    return dt == XE_U8 || dt == XE_I8 || dt == XE_U16 || dt == XE_I16 || xe_dtype_is_subbyte(dt);
}

void ox_quant_range(xe_dtype dt, double *lo, double *hi)
{
    int bits = xe_dtype_bits(dt);
    bool is_signed = !xe_dtype_is_unsigned(dt);
    *lo = is_signed ? -ldexp(1, bits - 1) : 0;
    *hi = is_signed ? ldexp(1, bits - 1) - 1 : ldexp(1, bits) - 1;
}

/* Blocked: v of x's rank with ceil(dim / block) along axis, each element repeated block times
 * along it (a broadcast over a new dim after axis, merged into it, cut to x's dim). */
static int blocked(ox_b *b, int v, int r, int axis, const xe_shape *xs, int64_t block,
                   const char *what)
{
    const xe_shape *s = &ox_type(b, v)->shape;
    bool fits = s->rank == r && axis >= 0 && axis < r && xs->dims[axis] >= 0;
    for (int d = 0; fits && d < r; d++)
        fits = d == axis ? s->dims[d] == (xs->dims[d] + block - 1) / block
                         : s->dims[d] == xs->dims[d] && s->dims[d] >= 0;
    if (!fits) {
        ox_invalid(b, "%s must have the input's shape with ceil(dim / %lld) along axis %d", what,
                   (long long)block, axis);
        return -1;
    }
    int64_t up[XE_MAX_RANK + 1], wide[XE_MAX_RANK], lo[XE_MAX_RANK] = {0}, hi[XE_MAX_RANK];
    for (int d = 0, k = 0; d < r; d++) {
        up[k++] = s->dims[d];
        if (d == axis)
            up[k++] = 1;
        wide[d] = d == axis ? s->dims[d] * block : s->dims[d];
        hi[d] = xs->dims[d];
    }
    int u = ox_reshape(b, v, up, r + 1);
    up[axis + 1] = block;
    ox_at at = OX_INTS("shape", up, r + 1);
    u = ox_op(b, XE_OP_BROADCAST_TO, &u, 1, &at, 1);
    return ox_slice(b, ox_reshape(b, u, wide, r), lo, hi);
}

int ox_quant_per_axis(ox_b *b, int v, int r, int axis, const xe_shape *xs, const char *what)
{
    if (v < 0)
        return -1;
    const xe_shape *s = &ox_type(b, v)->shape;
    int64_t n = xe_shape_numel(s), dims[XE_MAX_RANK] = {0};
    if (s->rank <= 1 && n == 1)
        return ox_reshape(b, v, dims, 0);
    if (s->rank != 1 || n < 0) {
        ox_unsupported(b,
                       "%s of rank %d is not supported (a scalar or 1-D, per axis; blocked is not)",
                       what, s->rank);
        return -1;
    }
    if (axis < 0 || axis >= r || (xs->dims[axis] >= 0 && xs->dims[axis] != n)) {
        ox_invalid(b, "%s has %lld elements but the input's axis %d has %lld", what, (long long)n,
                   axis, (long long)(axis >= 0 && axis < r ? xs->dims[axis] : -1));
        return -1;
    }
    for (int d = 0; d < r; d++)
        dims[d] = d == axis ? n : 1;
    return ox_reshape(b, v, dims, r);
}

/* v per axis, or blocked when the node has a block_size. */
static int per_axis(ox_b *b, int v, int r, int axis, const xe_shape *xs, const char *what)
{
    int64_t block = ox_int(b, "block_size", 0);
    if (v >= 0 && block > 0)
        return blocked(b, v, r, axis, xs, block, what);
    return ox_quant_per_axis(b, v, r, axis, xs, what);
}

/* The checks both ops share: a block size of 0 or more, an axis in range, a scale. *axis
 * normalised. */
static bool common(ox_b *b, int x, int *axis)
{
    if (ox_int(b, "block_size", 0) < 0) {
        ox_invalid(b, "block_size=%lld is negative", (long long)ox_int(b, "block_size", 0));
        return false;
    }
    if (x < 0 || ox_in(b, 1) < 0) {
        if (!b->failed)
            ox_invalid(b, "needs an input and a scale");
        return false;
    }
    int r = ox_rank(b, x);
    if (!xe_dtype_is_float(ox_type(b, ox_in(b, 1))->dtype)) {
        ox_invalid(b, "the scale must be a float tensor");
        return false;
    }
    int64_t a = ox_int(b, "axis", 1);
    if (r == 0 ||
        (xe_shape_numel(&ox_type(b, ox_in(b, 1))->shape) == 1 && ox_int(b, "block_size", 0) == 0)) {
        *axis = 0; /* per tensor: the axis is not used */
        return true;
    }
    return ox_axis(b, a, r, axis);
}

/*
 * When x is this import's QuantizeLinear to an integer type (its last node: the cast of the
 * rounded, zero-pointed and clamped f32 value v, below), v; else -1. DequantizeLinear then reads
 * v in place of f32(x): an integer within the type's range converts exactly both ways, so that is
 * the same value, but for a NaN, which the cast makes 0 and the caller selects so. Between QDQ
 * pairs the values then stay f32 from one op to the next, where each pair cast to the narrow type
 * and back (without VNNI, where no int8 step takes the pair): in a cluster the narrow value
 * ended it, so every conv of a QDQ network was a cluster of its own, with its casts per op and
 * its layouts converted at both sides.
 */
static int quantized_f32(ox_b *b, int x)
{
    const xe_graph *g = b->c->g;
    const xe_node *n = g->nodes[x];
    if (n->op != XE_OP_CAST || n->n_inputs != 1 || !ox_top_level(b->c, b->np))
        return -1;
    int v = n->inputs[0];
    const Onnx__NodeProto *q = ox_writer(b->c->model->graph, b->np->input[0]);
    if (!ox_op_is(q, "QuantizeLinear") || g->nodes[v]->op != XE_OP_MINIMUM ||
        ox_type(b, v)->dtype != XE_F32)
        return -1;
    return v;
}

xe_code ox_b_dequantize(ox_b *b)
{
    int x = ox_in(b, 0), axis;
    if (!common(b, x, &axis))
        return ox_status(b);
    xe_dtype in = ox_type(b, x)->dtype, out = ox_type(b, ox_in(b, 1))->dtype;
    if (!quant_dtype(in) && in != XE_I32 && !xe_dtype_is_float8(in) && in != XE_F4E2M1)
        return ox_unsupported(b, "DequantizeLinear of %s is not supported", xe_dtype_name(in));
    xe_dtype want;
    if (ox_attr(b, "output_dtype") && ox_int(b, "output_dtype", 0) != 0 &&
        (!ox_dtype((int32_t)ox_int(b, "output_dtype", 0), &want) || want != out))
        return ox_unsupported(b, "output_dtype other than the scale's is not supported");
    int r = ox_rank(b, x);
    const xe_shape *xs = &ox_type(b, x)->shape;
    int scale = per_axis(b, ox_cast(b, ox_in(b, 1), XE_F32), r, axis, xs, "the scale");
    int v = quantized_f32(b, x), y;
    if (v >= 0) /* f32(x) is v, but for NaN: cast gives 0 */
        y = ox_select(b, ox_bin(b, XE_OP_EQUAL, v, v), v, ox_scalar(b, XE_F32, 0));
    else
        y = ox_cast(b, x, XE_F32);
    if (ox_in(b, 2) >= 0) {
        if (ox_type(b, ox_in(b, 2))->dtype != in)
            return ox_invalid(b, "the zero point's dtype must be the input's");
        y = ox_bin(b, XE_OP_SUB, y,
                   per_axis(b, ox_cast(b, ox_in(b, 2), XE_F32), r, axis, xs, "the zero point"));
    }
    return done(b, ox_cast(b, ox_bin(b, XE_OP_MUL, y, scale), out));
}

/* The dtype QuantizeLinear writes: the zero point's, else output_dtype's, else u8. */
static bool quant_target(ox_b *b, xe_dtype *to)
{
    *to = XE_U8;
    if (ox_in(b, 2) >= 0)
        *to = ox_type(b, ox_in(b, 2))->dtype;
    else if (ox_int(b, "output_dtype", 0) != 0 &&
             !ox_dtype((int32_t)ox_int(b, "output_dtype", 0), to)) {
        ox_unsupported(b, "output_dtype %s is not supported",
                       ox_dtype_name((int32_t)ox_int(b, "output_dtype", 0)));
        return false;
    }
    if (!quant_dtype(*to) && !xe_dtype_is_float8(*to) && *to != XE_F4E2M1) {
        ox_unsupported(b, "QuantizeLinear to %s is not supported", xe_dtype_name(*to));
        return false;
    }
    return true;
}

xe_code ox_b_quantize(ox_b *b)
{
    int x = ox_in(b, 0), axis;
    xe_dtype to;
    if (!common(b, x, &axis) || !quant_target(b, &to))
        return ox_status(b);
    int64_t precision = ox_int(b, "precision", 0);
    if (precision != 0 && precision != 1) /* 1: FLOAT */
        return ox_unsupported(b, "precision %s is not supported",
                              ox_dtype_name((int32_t)precision));
    if (!xe_dtype_is_float(ox_type(b, x)->dtype) && ox_type(b, x)->dtype != XE_I32)
        return ox_unsupported(b, "QuantizeLinear of %s is not supported",
                              xe_dtype_name(ox_type(b, x)->dtype));
    int r = ox_rank(b, x);
    const xe_shape *xs = &ox_type(b, x)->shape;
    int scale = per_axis(b, ox_cast(b, ox_in(b, 1), XE_F32), r, axis, xs, "the scale");
    int y = ox_bin(b, XE_OP_DIV, ox_cast(b, x, XE_F32), scale);
    if (xe_dtype_is_float8(to)) {
        int64_t sat = ox_int(b, "saturate", 1);
        ox_at a[2] = {OX_DT("to", to), OX_BOOL("saturate", sat != 0)};
        return done(b, ox_op(b, XE_OP_CAST, &y, 1, a, 2));
    }
    if (to == XE_F4E2M1) { /* the reference adds the zero point, then casts (always saturating) */
        if (ox_in(b, 2) >= 0)
            y = ox_bin(b, XE_OP_ADD, y,
                       per_axis(b, ox_cast(b, ox_in(b, 2), XE_F32), r, axis, xs, "the zero point"));
        return done(b, ox_cast(b, y, to));
    }
    y = ox_round_even(b, y);
    if (ox_in(b, 2) >= 0)
        y = ox_bin(b, XE_OP_ADD, y,
                   per_axis(b, ox_cast(b, ox_in(b, 2), XE_F32), r, axis, xs, "the zero point"));
    double lo, hi;
    ox_quant_range(to, &lo, &hi);
    y = ox_bin(b, XE_OP_MAXIMUM, y, ox_scalar(b, XE_F32, lo));
    y = ox_bin(b, XE_OP_MINIMUM, y, ox_scalar(b, XE_F32, hi)); /* quantized_f32 reads this */
    return done(b, ox_cast(b, y, to));
}

/* round(v) clamped to [lo, hi] as dtype to, v an f32 value. */
static int saturate(ox_b *b, int v, double lo, double hi, xe_dtype to)
{
    v = ox_bin(b, XE_OP_MAXIMUM, ox_round_even(b, v), ox_scalar(b, XE_F32, lo));
    return ox_cast(b, ox_bin(b, XE_OP_MINIMUM, v, ox_scalar(b, XE_F32, hi)), to);
}

xe_code ox_b_dynamic_quantize(ox_b *b)
{
    int x = ox_in(b, 0);
    if (x < 0)
        return b->failed ? ox_status(b) : ox_invalid(b, "needs an input");
    if (ox_type(b, x)->dtype != XE_F32)
        return ox_unsupported(b, "DynamicQuantizeLinear of %s is not supported",
                              xe_dtype_name(ox_type(b, x)->dtype));
    if (ox_dynamic_quant_fuse(b) || b->failed)
        return ox_status(b);
    int r = ox_rank(b, x);
    int64_t axes[XE_MAX_RANK];
    for (int d = 0; d < r; d++)
        axes[d] = d;
    int zero = ox_scalar(b, XE_F32, 0);
    int lo = ox_bin(b, XE_OP_MINIMUM, ox_reduce(b, XE_OP_REDUCE_MIN, x, axes, r, false), zero);
    int hi = ox_bin(b, XE_OP_MAXIMUM, ox_reduce(b, XE_OP_REDUCE_MAX, x, axes, r, false), zero);
    int scale = ox_bin(b, XE_OP_DIV, ox_bin(b, XE_OP_SUB, hi, lo), ox_scalar(b, XE_F32, 255));
    int zp =
        saturate(b, ox_bin(b, XE_OP_SUB, zero, ox_bin(b, XE_OP_DIV, lo, scale)), 0, 255, XE_U8);
    int q = ox_bin(b, XE_OP_ADD, ox_round_even(b, ox_bin(b, XE_OP_DIV, x, scale)),
                   ox_cast(b, zp, XE_F32));
    ox_out(b, 0, saturate(b, q, 0, 255, XE_U8));
    ox_out(b, 1, scale);
    ox_out(b, 2, zp);
    return ox_status(b);
}

/*
 * A's zero point or scale (per row: [M] becomes [M,1]) or B's (per column: [N] stays), a single
 * element as a scalar; -1 (b failed) for any other shape.
 */
static int mat_param(ox_b *b, int v, bool row)
{
    if (v < 0)
        return -1;
    const xe_shape *s = &ox_type(b, v)->shape;
    int64_t n = xe_shape_numel(s), dims[2] = {n, 1};
    if (s->rank <= 1 && n == 1)
        return ox_reshape(b, v, dims, 0);
    if (s->rank != 1 || n < 0) {
        ox_unsupported(b, "a zero point or scale of rank %d is not supported (a scalar or 1-D)",
                       s->rank);
        return -1;
    }
    return row ? ox_reshape(b, v, dims, 2) : v;
}

/* i32(x) - i32(zero_point k), the zero point per row of A (row) or per column of B. */
static int centred(ox_b *b, int x, int k, bool row)
{
    if (x >= 0 && ox_type(b, x)->dtype != XE_U8 && ox_type(b, x)->dtype != XE_I8) {
        ox_unsupported(b, "integer matmul of %s is not supported (u8, i8)",
                       xe_dtype_name(ox_type(b, x)->dtype));
        return -1;
    }
    int y = ox_cast(b, x, XE_I32);
    return ox_in(b, k) >= 0
               ? ox_bin(b, XE_OP_SUB, y, mat_param(b, ox_cast(b, ox_in(b, k), XE_I32), row))
               : y;
}

/* Whether ONNX input k is absent or a known tensor of zeros (a symmetric quantization's zero
 * point). */
static bool zero_or_absent(ox_b *b, int k)
{
    int x = ox_in(b, k);
    if (x < 0)
        return true;
    const xe_node *n = b->c->g->nodes[x];
    if (n->op != XE_OP_CONST || !n->value)
        return false;
    const uint8_t *p = n->value->data;
    for (size_t i = 0; i < n->value->nbytes; i++)
        if (p[i])
            return false;
    return true;
}

/* sum over the contracted dim of i32(x): A's rows (keepdims: [..., M, 1]) or B's columns ([..., 1,
 * N]). */
static int contracted_sum(ox_b *b, int x, bool of_a)
{
    int64_t axis = of_a ? -1 : -2;
    return ox_reduce(b, XE_OP_REDUCE_SUM, ox_cast(b, x, XE_I32), &axis, 1, true);
}

/*
 * The centred product of MatMulInteger and QLinearMatMul, (A - za)(B - zb), as the engine's exact
 * i32 product of the 8-bit operands themselves (oneDNN's int8 matmul: u8/i8 x i8) and the zero
 * points' terms, which vanish for a symmetric operand:
 *   (A - za)(B - zb) = AB - za colsum(B) - rowsum(A) zb + K za zb.
 * colsum of constant weights folds at load time. Operands of rank 1 keep the centred i32 product.
 */
static int centred_product(ox_b *b, int a, int bb, int za, int zb)
{
    if (a < 0 || bb < 0)
        return -1;
    if (ox_rank(b, a) < 2 || ox_rank(b, bb) < 2 ||
        ox_type(b, a)->shape.dims[ox_rank(b, a) - 1] < 0) {
        int in[2] = {centred(b, a, za, true), centred(b, bb, zb, false)};
        return in[0] < 0 || in[1] < 0 ? -1 : ox_op(b, XE_OP_MATMUL, in, 2, NULL, 0);
    }
    int in[2] = {a, bb}, y = ox_op(b, XE_OP_MATMUL, in, 2, NULL, 0);
    bool has_za = !zero_or_absent(b, za), has_zb = !zero_or_absent(b, zb);
    int pa = has_za ? mat_param(b, ox_cast(b, ox_in(b, za), XE_I32), true) : -1;
    int pb = has_zb ? mat_param(b, ox_cast(b, ox_in(b, zb), XE_I32), false) : -1;
    if (has_za)
        y = ox_bin(b, XE_OP_SUB, y, ox_bin(b, XE_OP_MUL, pa, contracted_sum(b, bb, false)));
    if (has_zb)
        y = ox_bin(b, XE_OP_SUB, y, ox_bin(b, XE_OP_MUL, contracted_sum(b, a, true), pb));
    if (has_za && has_zb) {
        int64_t K = ox_type(b, a)->shape.dims[ox_rank(b, a) - 1];
        int kz =
            ox_bin(b, XE_OP_MUL, ox_bin(b, XE_OP_MUL, pa, pb), ox_scalar(b, XE_I32, (double)K));
        y = ox_bin(b, XE_OP_ADD, y, kz);
    }
    return y;
}

/* MatMulInteger: (i32(A) - a_zero_point) @ (i32(B) - b_zero_point), exact in i32. */
xe_code ox_b_matmul_integer(ox_b *b)
{
    int a = ox_in(b, 0), w = ox_in(b, 1);
    for (int k = 0; k < 2; k++) {
        int x = k ? w : a;
        if (x >= 0 && ox_type(b, x)->dtype != XE_U8 && ox_type(b, x)->dtype != XE_I8)
            return ox_unsupported(b, "integer matmul of %s is not supported (u8, i8)",
                                  xe_dtype_name(ox_type(b, x)->dtype));
    }
    return done(b, centred_product(b, a, w, 2, 3));
}

/*
 * QLinearMatMul, as the ONNX reference computes it: the i32 product of the centred operands times
 * f32(a_scale b_scale / y_scale), plus y_zero_point, in f64, rounded half to even and saturated
 * to y_zero_point's dtype.
 */
xe_code ox_b_qlinear_matmul(ox_b *b)
{
    for (int k = 0; k < 8; k++)
        if (ox_in(b, k) < 0)
            return b->failed ? ox_status(b) : ox_invalid(b, "needs 8 inputs");
    xe_dtype to = ox_type(b, ox_in(b, 7))->dtype, ta = ox_type(b, ox_in(b, 0))->dtype,
             tb = ox_type(b, ox_in(b, 3))->dtype;
    if (!quant_dtype(to) || (ta != XE_U8 && ta != XE_I8) || (tb != XE_U8 && tb != XE_I8))
        return ox_unsupported(b, "QLinearMatMul of %s and %s to %s is not supported",
                              xe_dtype_name(ta), xe_dtype_name(tb), xe_dtype_name(to));
    int prod = centred_product(b, ox_in(b, 0), ox_in(b, 3), 2, 5);
    int sa = mat_param(b, ox_cast(b, ox_in(b, 1), XE_F32), true),
        sb = mat_param(b, ox_cast(b, ox_in(b, 4), XE_F32), false);
    int scale = ox_bin(b, XE_OP_DIV, ox_bin(b, XE_OP_MUL, sa, sb),
                       mat_param(b, ox_cast(b, ox_in(b, 6), XE_F32), false));
    int y = ox_bin(b, XE_OP_MUL, ox_cast(b, prod, XE_F64), ox_cast(b, scale, XE_F64));
    y = ox_bin(b, XE_OP_ADD, y, mat_param(b, ox_cast(b, ox_in(b, 7), XE_F64), false));
    double lo = to == XE_U8 || to == XE_U16 ? 0 : to == XE_I8 ? -128 : -32768;
    double hi = to == XE_U8 ? 255 : to == XE_I8 ? 127 : to == XE_U16 ? 65535 : 32767;
    y = ox_bin(b, XE_OP_MAXIMUM, ox_round_even(b, y), ox_scalar(b, XE_F64, lo));
    return done(b, ox_cast(b, ox_bin(b, XE_OP_MINIMUM, y, ox_scalar(b, XE_F64, hi)), to));
}
