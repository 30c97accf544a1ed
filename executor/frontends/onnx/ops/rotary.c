/*
 * The builder of ONNX's RotaryEmbedding (opset 23) as elementwise ops:
 * x as [B, S, heads, D] (from [B, heads, S, D] by a transpose, or from
 * [B, S, hidden] by a reshape with num_heads), its first
 * rotary_embedding_dim entries split in two halves x1, x2 (interleaved:
 * the even and the odd ones, through a reshape to [.., half, 2]), rotated
 *   real = cos x1 - sin x2,  imag = sin x1 + cos x2
 * with cos and sin [B, S, half] (gathered from the caches by position_ids
 * when given) broadcast over the heads, put back in their places, the rest
 * passed through. Every dim but one must be known.
 */
#include <stdint.h>
#include <string.h>

#include "onnx_impl.h"

#define WHY "RotaryEmbedding needs every dim but one known"

/* x[..., from:to] along the last axis (-1 when x failed: it has no last axis). */
static int lastcut(ox_b *b, int x, int64_t from, int64_t to)
{
    int r = ox_rank(b, x);
    if (x < 0 || r < 1)
        return -1;
    int64_t beg[XE_MAX_RANK] = {0}, end[XE_MAX_RANK];
    for (int d = 0; d < r; d++)
        end[d] = d == r - 1 ? to : INT64_MAX;
    beg[r - 1] = from;
    return ox_slice(b, x, beg, end);
}

/* x [..., n] as [..., n / 2, 2] and its part p (0 even, 1 odd) as [..., n / 2]. */
static int strided(ox_b *b, int x, int p)
{
    const xe_shape *s = &ox_type(b, x)->shape;
    int64_t d[XE_MAX_RANK];
    if (x < 0 || s->rank < 1 || s->rank >= XE_MAX_RANK)
        return -1;
    memcpy(d, s->dims, sizeof d);
    d[s->rank - 1] = s->dims[s->rank - 1] / 2, d[s->rank] = 2;
    int v = lastcut(b, ox_reshape_dims(b, x, d, s->rank + 1, WHY), p, p + 1);
    return ox_reshape_dims(b, v, d, s->rank, WHY);
}

/* real and imag [..., half] woven into [..., 2 * half] (interleaved) or concatenated. */
static int woven(ox_b *b, int re, int im, bool interleaved)
{
    const xe_shape *s = &ox_type(b, re)->shape;
    int r = s->rank, parts[2] = {re, im};
    int64_t d[XE_MAX_RANK];
    if (re < 0 || im < 0 || r < 1 || r >= XE_MAX_RANK)
        return -1;
    memcpy(d, s->dims, sizeof d);
    ox_at ax = OX_I("axis", interleaved ? r : r - 1);
    if (!interleaved)
        return ox_op(b, XE_OP_CONCAT, parts, 2, &ax, 1);
    d[r] = 1;
    for (int k = 0; k < 2; k++)
        parts[k] = ox_reshape_dims(b, parts[k], d, r + 1, WHY);
    int v = ox_op(b, XE_OP_CONCAT, parts, 2, &ax, 1);
    d[r - 1] = s->dims[r - 1] * 2;
    return ox_reshape_dims(b, v, d, r, WHY);
}

/* cos or sin as [B, S, 1, half]. */
static int cache(ox_b *b, int k, int pos, int64_t half)
{
    int c = ox_in(b, k);
    if (pos >= 0) {
        int in[2] = {c, ox_cast(b, pos, XE_I64)};
        ox_at at = OX_I("axis", 0);
        c = ox_op(b, XE_OP_GATHER, in, 2, &at, 1);
    }
    const xe_shape *s = &ox_type(b, c)->shape;
    if (c >= 0 && (s->rank != 3 || s->dims[2] != half)) {
        ox_invalid(b, "the cos and sin caches must give [batch, sequence, %lld]", (long long)half);
        return -1;
    }
    int64_t d[4] = {s->dims[0], s->dims[1], 1, half};
    return c < 0 ? -1 : ox_reshape_dims(b, c, d, 4, WHY);
}

xe_code ox_b_rotary(ox_b *b)
{
    int x = ox_in(b, 0), pos = ox_in(b, 3);
    if (x < 0 || ox_in(b, 1) < 0 || ox_in(b, 2) < 0)
        return ox_status(b);
    const xe_shape *xs = &ox_type(b, x)->shape;
    int r = xs->rank, perm[4] = {0, 2, 1, 3};
    int64_t heads = ox_int(b, "num_heads", 0), orig[XE_MAX_RANK];
    bool inter = ox_int(b, "interleaved", 0) != 0;
    memcpy(orig, xs->dims, sizeof orig);
    if (!xe_dtype_is_float(ox_type(b, x)->dtype))
        return ox_unsupported(b, "RotaryEmbedding of %s is not supported",
                              xe_dtype_name(ox_type(b, x)->dtype));
    int v;
    if (r == 4) {
        v = ox_transpose(b, x, perm, 4);
    } else if (r == 3) {
        if (heads < 1 || xs->dims[2] < 0 || xs->dims[2] % heads)
            return ox_invalid(b, "a 3-D input needs num_heads dividing its hidden size");
        int64_t d[4] = {xs->dims[0], xs->dims[1], heads, xs->dims[2] / heads};
        v = ox_reshape_dims(b, x, d, 4, WHY);
    } else {
        return ox_invalid(b, "RotaryEmbedding's input must be 3-D or 4-D (rank %d)", r);
    }
    int64_t hd = ox_type(b, v)->shape.dims[3], rd = ox_int(b, "rotary_embedding_dim", 0);
    rd = rd == 0 ? hd : rd;
    if (hd < 2 || rd < 2 || rd > hd || rd % 2)
        return ox_invalid(b, "rotary_embedding_dim %lld does not fit a head of %lld", (long long)rd,
                          (long long)hd);
    int cs = cache(b, 1, pos, rd / 2), sn = cache(b, 2, pos, rd / 2);
    int rot = rd == hd ? v : lastcut(b, v, 0, rd);
    int x1 = inter ? strided(b, rot, 0) : lastcut(b, rot, 0, rd / 2);
    int x2 = inter ? strided(b, rot, 1) : lastcut(b, rot, rd / 2, rd);
    int re = ox_bin(b, XE_OP_SUB, ox_bin(b, XE_OP_MUL, cs, x1), ox_bin(b, XE_OP_MUL, sn, x2));
    int im = ox_bin(b, XE_OP_ADD, ox_bin(b, XE_OP_MUL, sn, x1), ox_bin(b, XE_OP_MUL, cs, x2));
    int y = woven(b, re, im, inter);
    if (rd < hd) {
        int parts[2] = {y, lastcut(b, v, rd, hd)};
        ox_at ax = OX_I("axis", 3);
        y = ox_op(b, XE_OP_CONCAT, parts, 2, &ax, 1);
    }
    y = r == 4 ? ox_transpose(b, y, perm, 4) : ox_reshape_dims(b, y, orig, 3, WHY);
    if (y >= 0)
        ox_out(b, 0, y);
    return ox_status(b);
}
