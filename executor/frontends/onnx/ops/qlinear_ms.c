/*
 * onnxruntime's quantized operators of domain com.microsoft that its quantize_static writes in
 * QuantFormat.QOperator around QLinearConv (a QOperator ResNet: QLinearAdd for the residual sums,
 * QLinearGlobalAveragePool, QGemm for the classifier), read as their QDQ forms, the same
 * arithmetic as the QDQ path: each operand dequantized in f32 ((x - zero point) * scale), the f32
 * op, and the result quantized (round half to even, saturation), or left f32 where the op says.
 * onnxruntime's kernels fold the scales into one multiplier per operand, so the two differ by one
 * step where a value lies within f32 rounding of a tie. Clusters fuse each composition into one
 * loop over the 8-bit values; a QLinearAdd of two same-shape values with constant scales and zero
 * points is one quant_add step where the int8 engine is (VNNI), bit for bit the composition.
 *
 *   QLinearAdd, QLinearMul (A, As, Az, B, Bs, Bz, Cs, Cz):  C = Q(DQ(A) op DQ(B)), broadcasting
 *   QLinearGlobalAveragePool (X, xs, xz, ys, yz; channels_last): Y = Q(mean of DQ(X) over space)
 *   QGemm (A, As, Az, B, Bs, Bz[, C[, ys[, yz]]]; alpha, transA, transB):
 *       Y = alpha DQ(A)' DQ(B)' + f32(C) alpha As Bs   (C i32, its scale alpha As Bs)
 *       quantized by ys, yz when ys is given, else f32; Bs per tensor or per output column
 */
#include "onnx_impl.h"

xe_code ox_b_qlinear_binary(ox_b *b)
{
    for (int k = 0; k < 7; k++)
        if (k != 2 && k != 5 && ox_in(b, k) < 0)
            return b->failed ? ox_status(b)
                             : ox_invalid(b, "needs A, A_scale, B, B_scale and C_scale");
    if (!ox_ql_eight_bit(b, 0, 2, "A") || !ox_ql_eight_bit(b, 3, 5, "B"))
        return ox_status(b);
    int step = b->entry->op == XE_OP_ADD ? ox_qlinear_add_step(b) : -1;
    if (step >= 0 || b->failed) /* qdq.c: one quant_add, the composition's bits */
        return ox_out(b, 0, step);
    int a = ox_ql_dequantize(b, 0, 1, 2, -1, "A's scale and zero point");
    int c = ox_ql_dequantize(b, 3, 4, 5, -1, "B's scale and zero point");
    xe_dtype to = ox_type(b, ox_in(b, 0))->dtype;
    return ox_out(b, 0, ox_ql_quantize(b, ox_bin(b, b->entry->op, a, c), 6, 7, to));
}

xe_code ox_b_qlinear_global_pool(ox_b *b)
{
    for (int k = 0; k < 4; k++)
        if (k != 2 && ox_in(b, k) < 0)
            return b->failed ? ox_status(b) : ox_invalid(b, "needs X, x_scale and y_scale");
    if (!ox_ql_eight_bit(b, 0, 2, "X"))
        return ox_status(b);
    int r = ox_rank(b, ox_in(b, 0));
    bool last = ox_int(b, "channels_last", 0) != 0;
    if (r < 3)
        return ox_invalid(b, "X must have a batch, a channel and a spatial dim (rank %d)", r);
    int64_t axes[XE_MAX_RANK];
    for (int d = 0; d < r - 2; d++)
        axes[d] = last ? 1 + d : 2 + d;
    int x = ox_ql_dequantize(b, 0, 1, 2, -1, "X's scale and zero point");
    int y = ox_reduce(b, XE_OP_REDUCE_MEAN, x, axes, r - 2, true);
    return ox_out(b, 0, ox_ql_quantize(b, y, 3, 4, ox_type(b, ox_in(b, 0))->dtype));
}

/* QGemm's B dequantized, per tensor or per output column (B [K, N], or [N, K] when trans). */
static int qgemm_b(ox_b *b, bool trans)
{
    return ox_ql_dequantize(b, 3, 4, 5, trans ? 0 : 1, "B's scale and zero point");
}

xe_code ox_b_qgemm(ox_b *b)
{
    for (int k = 0; k < 5; k++)
        if (k != 2 && ox_in(b, k) < 0)
            return b->failed ? ox_status(b) : ox_invalid(b, "needs A, a_scale, B and b_scale");
    if (!ox_ql_eight_bit(b, 0, 2, "A") || !ox_ql_eight_bit(b, 3, 5, "B"))
        return ox_status(b);
    if (ox_rank(b, ox_in(b, 0)) != 2 || ox_rank(b, ox_in(b, 3)) != 2)
        return ox_invalid(b, "A and B must be matrices");
    bool ta = ox_int(b, "transA", 0) != 0, tb = ox_int(b, "transB", 0) != 0;
    double alpha = ox_float(b, "alpha", 1.0);
    int perm[2] = {1, 0};
    int a = ox_ql_dequantize(b, 0, 1, 2, -1, "A's scale and zero point"), w = qgemm_b(b, tb);
    int in[2] = {ta ? ox_transpose(b, a, perm, 2) : a, tb ? ox_transpose(b, w, perm, 2) : w};
    int y = ox_op(b, XE_OP_MATMUL, in, 2, NULL, 0);
    if (alpha != 1.0)
        y = ox_bin(b, XE_OP_MUL, y, ox_scalar(b, XE_F32, alpha));
    if (b->n_in > 6 && ox_in(b, 6) >= 0) {
        if (ox_type(b, ox_in(b, 6))->dtype != XE_I32)
            return ox_invalid(b, "C must be i32");
        const xe_shape *ys = &ox_type(b, y)->shape; /* [M, N]: b_scale per column */
        int s = ox_bin(b, XE_OP_MUL, ox_cast(b, ox_ql_param(b, 1, -1, ys, "a_scale"), XE_F32),
                       ox_cast(b, ox_ql_param(b, 4, 1, ys, "b_scale"), XE_F32));
        s = alpha != 1.0 ? ox_bin(b, XE_OP_MUL, s, ox_scalar(b, XE_F32, alpha)) : s;
        y = ox_bin(b, XE_OP_ADD, y, ox_bin(b, XE_OP_MUL, ox_cast(b, ox_in(b, 6), XE_F32), s));
    }
    if (b->n_in <= 7 || ox_in(b, 7) < 0)
        return ox_out(b, 0, y); /* no y_scale: the f32 result */
    xe_dtype to = b->n_in > 8 && ox_in(b, 8) >= 0 ? ox_type(b, ox_in(b, 8))->dtype : XE_U8;
    if (to != XE_U8 && to != XE_I8)
        return ox_unsupported(b, "QGemm to %s is not supported (u8 or i8)", xe_dtype_name(to));
    return ox_out(b, 0, ox_ql_quantize(b, y, 7, 8, to));
}
