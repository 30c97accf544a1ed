/*
 * ONNX's CausalConvWithState (opset 27) as the executor's ops, in the
 * steps of ONNX's reference: the past state (zeros when absent) put in
 * front of the input along time, a depthwise 1-D convolution over that
 * without padding (a conv2d of height 1, one group per channel, with the
 * optional bias), an optional SiLU, and the present state as the last
 * k - 1 steps of the padded input. f16 and bf16 convolve in f32 and round
 * once, as Conv does; the SiLU then computes in f32 from the rounded
 * result and rounds again, as the reference does.
 */
#include <string.h>

#include "onnx_impl.h"

/* past (or zeros [B, C, k-1] of x's dtype) and x along time; x itself when there is no past. */
static int padded_input(ox_b *b, int x, int past, int64_t k)
{
    const xe_shape *xs = &ox_type(b, x)->shape;
    if (past >= 0) {
        const xe_type *pt = ox_type(b, past);
        if (pt->shape.rank != 3 || pt->shape.dims[0] != xs->dims[0] ||
            pt->shape.dims[1] != xs->dims[1] || pt->shape.dims[2] != k - 1 ||
            pt->dtype != ox_type(b, x)->dtype) {
            ox_invalid(b, "past_state must be [batch, channels, k - 1] of the input's dtype");
            return -1;
        }
    }
    if (k == 1)
        return x;
    int pad = past;
    if (pad < 0) {
        int64_t d[3] = {xs->dims[0], xs->dims[1], k - 1};
        int zero = ox_scalar(b, ox_type(b, x)->dtype, 0);
        ox_at at = OX_INTS("shape", d, 3);
        pad = ox_op(b, XE_OP_BROADCAST_TO, &zero, 1, &at, 1);
    }
    int in[2] = {pad, x};
    ox_at cat = OX_I("axis", 2);
    return ox_op(b, XE_OP_CONCAT, in, 2, &cat, 1);
}

/* The depthwise convolution of padded [B, C, T + k - 1] with w [C, 1, k] (and bias [C]): [B, C, T],
   in f32. */
static int depthwise(ox_b *b, int padded, int w, int bias, int64_t k)
{
    const xe_shape *ps = &ox_type(b, padded)->shape;
    int64_t c = ps->dims[1], x4[4] = {ps->dims[0], c, 1, ps->dims[2]}, w4[4] = {c, 1, 1, k};
    int64_t ones[2] = {1, 1}, zeros[4] = {0, 0, 0, 0};
    ox_at at[4] = {OX_INTS("strides", ones, 2), OX_INTS("pads", zeros, 4),
                   OX_INTS("dilations", ones, 2), OX_I("groups", c)};
    int in[3] = {ox_reshape(b, ox_cast(b, padded, XE_F32), x4, 4),
                 ox_reshape(b, ox_cast(b, w, XE_F32), w4, 4), ox_cast(b, bias, XE_F32)};
    int y = ox_op(b, XE_OP_CONV2D, in, bias >= 0 ? 3 : 2, at, 4);
    int64_t y3[3] = {ps->dims[0], c, ps->dims[2] - (k - 1)};
    return ox_reshape(b, y, y3, 3);
}

/* The inputs' ranks, dims and dtypes as the schema has them; the kernel size into *k. */
static bool operands_fit(ox_b *b, int x, int w, int bias, int64_t *k)
{
    const xe_type *xt = ox_type(b, x), *wt = ox_type(b, w);
    if (xt->dtype != XE_F32 && xt->dtype != XE_F16 && xt->dtype != XE_BF16) {
        ox_unsupported(b, "CausalConvWithState of %s is not supported (f32, f16 or bf16)",
                       xe_dtype_name(xt->dtype));
        return false;
    }
    if (xt->shape.rank != 3 || !xe_shape_is_known(&xt->shape) || wt->shape.rank != 3 ||
        !xe_shape_is_known(&wt->shape)) {
        ox_unsupported(b, "CausalConvWithState needs a rank-3 input and weight with known dims");
        return false;
    }
    *k = wt->shape.dims[2];
    const xe_type *bt = bias >= 0 ? ox_type(b, bias) : NULL;
    if (wt->shape.dims[0] != xt->shape.dims[1] || wt->shape.dims[1] != 1 || *k < 1 ||
        wt->dtype != xt->dtype ||
        (bt && (bt->shape.rank != 1 || bt->shape.dims[0] != xt->shape.dims[1] ||
                bt->dtype != xt->dtype))) {
        ox_invalid(b, "CausalConvWithState needs a weight [channels, 1, k] and a bias [channels] "
                      "of the input's dtype");
        return false;
    }
    return true;
}

xe_code ox_b_causal_conv_with_state(ox_b *b)
{
    int x = ox_in(b, 0), w = ox_in(b, 1), bias = ox_in(b, 2), past = ox_in(b, 3);
    int64_t k;
    if (x < 0 || w < 0 || !operands_fit(b, x, w, bias, &k))
        return ox_status(b);
    const char *act = ox_str(b, "activation", "none");
    bool silu = !strcmp(act, "silu") || !strcmp(act, "swish");
    if (!silu && strcmp(act, "none"))
        return ox_invalid(b, "activation must be none, silu or swish, got '%s'", act);
    xe_dtype dt = ox_type(b, x)->dtype;
    int padded = padded_input(b, x, past, k);
    int y = ox_cast(b, depthwise(b, padded, w, bias, k), dt);
    if (silu) {
        int y32 = ox_cast(b, y, XE_F32);
        y = ox_cast(b, ox_bin(b, XE_OP_MUL, y32, ox_un(b, XE_OP_SIGMOID, y32)), dt);
    }
    ox_out(b, 0, y);
    if (ox_n_out(b) > 1 && padded >= 0) {
        const xe_shape *ps = &ox_type(b, padded)->shape;
        int64_t begin[3] = {0, 0, ps->dims[2] - (k - 1)},
                end[3] = {ps->dims[0], ps->dims[1], ps->dims[2]};
        ox_out(b, 1, ox_slice(b, padded, begin, end));
    }
    return ox_status(b);
}
