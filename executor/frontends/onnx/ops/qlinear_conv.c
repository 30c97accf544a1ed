/*
 * ONNX's quantized convolutions in operator form: QLinearConv (onnxruntime's quantize_static
 * with QuantFormat.QOperator writes it for every Conv) and ConvInteger (quantize_dynamic writes
 * it for every Conv, between a DynamicQuantizeLinear and a Cast and Mul).
 *
 * QLinearConv(x, xs, xz, w, ws, wz, ys, yz[, B]) is read as its QDQ form, the pattern
 * onnxruntime's own session fuses into it:
 *
 *   y = QuantizeLinear(Conv(DQ(x, xs, xz), DQ(w, ws, wz), DQ(B, xs * ws)), ys, yz)
 *
 * so its numbers are the QDQ path's (qdq.c): where the int8 engine is (VNNI), w an i8 constant
 * with zero points zero, per tensor or per output channel, and xs, xz, ys, yz constants, it is
 * one quant_conv2d that quantizes its own output (the sum exact in 32 bits, pads reading xz, the
 * rescale and rounding in f32); otherwise the composition: x and w dequantized in f32 (constant
 * weights fold at load), the f32 convolution on the engine, QuantizeLinear's rounding half to
 * even and saturation. onnxruntime's kernel requantizes (acc + B) * (xs ws / ys) in one multiply;
 * the two differ by one step where a value lies within f32 rounding of a tie.
 *
 * ConvInteger(x, w[, xz, wz]) is exact, as ONNX says: the i32 sums of (x - xz)(w - wz), pads
 * reading xz (a centred zero). Each term is an integer of at most 255 |w - wz|, so an f32
 * convolution of the centred values is exact while 255 times the sum of |w - wz| over one
 * output channel's taps stays within 2^24 (every partial sum an integer below it, in any
 * order). For constant weights the importer checks that bound; past it, the weights are split
 * as 16 hi + lo (lo in [0, 15]), each part convolved in f32 within the bound and the two joined
 * in i32. Weights that are not constant, or past the bound even split, convolve in f64 (exact to
 * 2^53; a slower kernel). The zero points may be values of the run (DynamicQuantizeLinear's).
 */
#include <math.h>
#include <stdlib.h>

#include "onnx_impl.h"

/* The f32 integer bound below which every partial sum of a conv of integers is exact. */
#define F32_EXACT 16777216.0 /* 2^24 */

/* The largest |x - xz| of 8-bit x and zero point xz. */
#define MAX_CENTRED_X 255.0

/* B (input 8, i32 [M]) dequantized by xs * ws: f32(B) * (xs * ws), [M]. */
static int dequantized_bias(ox_b *b)
{
    int bias = ox_in(b, 8);
    const xe_type *t = ox_type(b, bias);
    if (t->dtype != XE_I32 || t->shape.rank != 1)
        return ox_invalid(b, "B must be i32 of one dim"), -1;
    int xs = ox_cast(b, ox_ql_param(b, 1, -1, &t->shape, "x_scale"), XE_F32);
    int ws = ox_cast(b, ox_ql_param(b, 4, 0, &t->shape, "w_scale"), XE_F32);
    return ox_bin(b, XE_OP_MUL, ox_cast(b, bias, XE_F32), ox_bin(b, XE_OP_MUL, xs, ws));
}

xe_code ox_b_qlinear_conv(ox_b *b)
{
    for (int k = 0; k < 8; k++)
        if (ox_in(b, k) < 0)
            return b->failed ? ox_status(b) : ox_invalid(b, "needs 8 inputs (B is the 9th)");
    if (!ox_ql_eight_bit(b, 0, 2, "x") || !ox_ql_eight_bit(b, 3, 5, "w") ||
        !ox_ql_eight_bit(b, 7, -1, "y"))
        return ox_status(b);
    ox_qdq_conv q;
    if (ox_qlinear_conv_match(b, &q)) /* qdq.c: one quant_conv2d */
        return ox_out(b, 0, ox_conv_build(b, q.in[0], q.in[1], -1, &q));
    int x = ox_ql_dequantize(b, 0, 1, 2, -1, "x's scale and zero point");
    int w = ox_ql_dequantize(b, 3, 4, 5, 0, "w's scale and zero point");
    int bias = b->n_in > 8 && ox_in(b, 8) >= 0 ? dequantized_bias(b) : -1;
    int y = ox_conv_build(b, x, w, bias, NULL);
    if (y >= 0)
        ox_out(b, 0, ox_ql_quantize(b, y, 6, 7, ox_type(b, ox_in(b, 7))->dtype));
    return ox_status(b);
}

/* The constant centred weights w - wz (inputs 1 and 3 of b) as f32 values, [M, ...]; NULL when
   w or wz is not a constant (or b failed). wz: absent, one element, or one per output channel. */
static float *centred_weights(ox_b *b, int64_t *n, int64_t *m)
{
    xe_dtype dt = ox_type(b, ox_in(b, 1))->dtype;
    int w = ox_const_node(b, b->np->input[1], dt);
    int z = b->n_in > 3 && ox_in(b, 3) >= 0 ? ox_const_node(b, b->np->input[3], dt) : -1;
    if (w < 0 || (b->n_in > 3 && ox_in(b, 3) >= 0 && z < 0))
        return NULL;
    const xe_tensor *t = b->c->g->nodes[w]->value, *zt = z >= 0 ? b->c->g->nodes[z]->value : NULL;
    *n = xe_tensor_numel(t);
    *m = t->shape.dims[0];
    int64_t nz = zt ? xe_tensor_numel(zt) : 0;
    if (*m < 1 || (zt && nz != 1 && nz != *m))
        return NULL;
    float *c = malloc((size_t)(*n > 0 ? *n : 1) * sizeof *c);
    for (int64_t i = 0; c && i < *n; i++) {
        int64_t j = nz == 1 ? 0 : i / (*n / *m);
        double v = dt == XE_U8 ? ((const uint8_t *)t->data)[i] : ((const int8_t *)t->data)[i];
        double zv = !zt           ? 0
                    : dt == XE_U8 ? ((const uint8_t *)zt->data)[j]
                                  : ((const int8_t *)zt->data)[j];
        c[i] = (float)(v - zv);
    }
    return c;
}

/* Whether 255 sum |c| over each of the m output channels of c (n values) stays within 2^24. */
static bool within_f32(const float *c, int64_t n, int64_t m)
{
    for (int64_t o = 0; o < m; o++) {
        double s = 0;
        for (int64_t i = o * (n / m); i < (o + 1) * (n / m); i++)
            s += fabs(c[i]);
        if (MAX_CENTRED_X * s > F32_EXACT)
            return false;
    }
    return true;
}

/* c (n values) as a new f32 const shaped as the weights. */
static int weights_const(ox_b *b, const float *c, int64_t n)
{
    xe_tensor *t = ox_new_tensor(b, XE_F32, &ox_type(b, ox_in(b, 1))->shape);
    if (!t)
        return -1;
    for (int64_t i = 0; i < n; i++)
        ((float *)t->data)[i] = c[i];
    return ox_const(b, t);
}

/* x - xz in dt (f32 or f64), xz input 2 of b (absent: 0; one element). */
static int centred_x(ox_b *b, xe_dtype dt)
{
    int x = ox_cast(b, ox_in(b, 0), dt);
    if (b->n_in < 3 || ox_in(b, 2) < 0)
        return x;
    int64_t n = xe_shape_numel(&ox_type(b, ox_in(b, 2))->shape), none[1] = {0};
    if (n != 1) {
        ox_unsupported(b, "an x_zero_point of %lld elements is not supported (one)", (long long)n);
        return -1;
    }
    return ox_bin(b, XE_OP_SUB, x, ox_cast(b, ox_reshape(b, ox_in(b, 2), none, 0), dt));
}

/* i32 of the exact f32 convolution of x - xz by the centred weights c, split as 16 hi + lo past
   the bound (c: n values over m channels, overwritten); -1, with nothing built, when even the
   parts are past it. */
static int exact_f32_conv(ox_b *b, float *c, int64_t n, int64_t m)
{
    if (within_f32(c, n, m))
        return ox_cast(b, ox_conv_build(b, centred_x(b, XE_F32), weights_const(b, c, n), -1, NULL),
                       XE_I32);
    float *hi = malloc((size_t)n * sizeof *hi);
    if (!hi)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        hi[i] = floorf(c[i] / 16.0f);
        c[i] -= 16.0f * hi[i]; /* lo, in [0, 15] */
    }
    int y = -1;
    if (within_f32(hi, n, m) && within_f32(c, n, m)) {
        int x = centred_x(b, XE_F32);
        int yh = ox_cast(b, ox_conv_build(b, x, weights_const(b, hi, n), -1, NULL), XE_I32);
        int yl = ox_cast(b, ox_conv_build(b, x, weights_const(b, c, n), -1, NULL), XE_I32);
        y = ox_bin(b, XE_OP_ADD, ox_bin(b, XE_OP_MUL, yh, ox_scalar(b, XE_I32, 16)), yl);
    }
    free(hi);
    return y;
}

/* The f64 form: both operands centred in f64, exact. */
static int f64_conv(ox_b *b)
{
    int w = ox_cast(b, ox_in(b, 1), XE_F64);
    if (b->n_in > 3 && ox_in(b, 3) >= 0) {
        int r = ox_rank(b, ox_in(b, 1)), k = ox_in(b, 3);
        int64_t n = xe_shape_numel(&ox_type(b, k)->shape), dims[XE_MAX_RANK] = {0};
        int64_t m = ox_type(b, ox_in(b, 1))->shape.dims[0];
        if (n != 1 && n != m) {
            ox_unsupported(b,
                           "a w_zero_point of %lld elements is not supported (one, or one per "
                           "output channel)",
                           (long long)n);
            return -1;
        }
        for (int d = 0; d < r; d++)
            dims[d] = d == 0 && n != 1 ? m : 1;
        w = ox_bin(b, XE_OP_SUB, w, ox_cast(b, ox_reshape(b, k, dims, n == 1 ? 0 : r), XE_F64));
    }
    return ox_cast(b, ox_conv_build(b, centred_x(b, XE_F64), w, -1, NULL), XE_I32);
}

xe_code ox_b_conv_integer(ox_b *b)
{
    if (ox_in(b, 0) < 0 || ox_in(b, 1) < 0)
        return b->failed ? ox_status(b) : ox_invalid(b, "needs x and w");
    if (!ox_ql_eight_bit(b, 0, 2, "x") || !ox_ql_eight_bit(b, 1, 3, "w"))
        return ox_status(b);
    int64_t n = 0, m = 0;
    float *c = centred_weights(b, &n, &m);
    int y = c ? exact_f32_conv(b, c, n, m) : -1;
    free(c);
    if (y < 0 && !b->failed)
        y = f64_conv(b);
    if (y >= 0)
        ox_out(b, 0, y);
    return ox_status(b);
}
