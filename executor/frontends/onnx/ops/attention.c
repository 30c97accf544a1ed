/*
 * ONNX's Attention (opset 23+) as the executor's ops, following ONNX's
 * reference step by step: 3-D inputs split into heads, Q and K each scaled
 * by sqrt(scale), the past key and value concatenated in front (the present
 * outputs), K and V repeated for grouped heads, QK^T (soft-capped), plus a
 * bias from the mask, the causal frontier and the sliding window (constants
 * computed at load where they depend on shapes only; per batch, from the
 * valid key counts nonpad_kv_seqlen, where it is given), a softmax whose
 * fully masked rows are 0, and the product with V.
 */
#include <math.h>
#include <string.h>

#include "onnx_impl.h"

/* [B, S, H*E] -> [B, H, S, E] */
static int split_heads(ox_b *b, int x, int64_t heads)
{
    const xe_shape *s = &ox_type(b, x)->shape;
    if (heads <= 0 || s->dims[2] % heads) {
        ox_invalid(b, "hidden size %lld is not a multiple of %lld heads", (long long)s->dims[2],
                   (long long)heads);
        return -1;
    }
    int64_t d[4] = {s->dims[0], s->dims[1], heads, s->dims[2] / heads};
    int perm[4] = {0, 2, 1, 3};
    return ox_transpose(b, ox_reshape(b, x, d, 4), perm, 4);
}

/* [B, Hk, S, E] -> [B, Hk*g, S, E], each head repeated g times in place (np.repeat). */
static int repeat_heads(ox_b *b, int x, int64_t g)
{
    if (g == 1 || x < 0)
        return x;
    const xe_shape *s = &ox_type(b, x)->shape;
    int64_t d5[5] = {s->dims[0], s->dims[1], 1, s->dims[2], s->dims[3]};
    int64_t big[5] = {s->dims[0], s->dims[1], g, s->dims[2], s->dims[3]};
    int64_t d4[4] = {s->dims[0], s->dims[1] * g, s->dims[2], s->dims[3]};
    ox_at at = OX_INTS("shape", big, 5);
    int y = ox_reshape(b, x, d5, 5);
    y = ox_op(b, XE_OP_BROADCAST_TO, &y, 1, &at, 1);
    return ox_reshape(b, y, d4, 4);
}

/* The [L, S] bias of the causal frontier and the window, offset by the past's length. */
static int shape_bias(ox_b *b, xe_dtype dt, int64_t l, int64_t s, int64_t off, bool causal,
                      int64_t left, int64_t right)
{
    int64_t dims[2] = {l, s};
    xe_shape sh = xe_shape_make(2, dims);
    xe_tensor *t = ox_new_tensor(b, dt, &sh);
    if (!t)
        return b->failed = true, -1;
    for (int64_t i = 0; i < l; i++)
        for (int64_t j = 0; j < s; j++) {
            int64_t diff = i + off - j;
            bool ok = (!causal || diff >= 0) && (left < 0 || diff <= left) &&
                      (right < 0 || -diff <= right);
            xe_store_f64(t->data, dt, i * s + j, ok ? 0.0 : -INFINITY);
        }
    return ox_const(b, t);
}

/* i64 positions 0 .. n-1 along axis d of a rank-4 [1, 1, 1, 1] with n there. */
static int positions4(ox_b *b, int64_t n, int d)
{
    int64_t dims[4] = {1, 1, 1, 1};
    dims[d] = n;
    ox_at at[3] = {OX_INTS("shape", dims, 4), OX_I("axis", d), OX_DT("dtype", XE_I64)};
    return ox_op(b, XE_OP_IOTA, NULL, 0, at, 3);
}

/* ok && cond (ok -1: cond alone). */
static int both(ox_b *b, int ok, int cond)
{
    return ok < 0 ? cond : ox_bin(b, XE_OP_LOGICAL_AND, ok, cond);
}

/*
 * The [B, 1, L, S] bias of nonpad_kv_seqlen n (an external cache): key j of batch b is masked at
 * or past n[b], and the causal frontier and the window take the per-batch offset n[b] - L, as the
 * reference's _apply_causal and _apply_sliding_window do for it.
 */
static int nonpad_bias(ox_b *b, int n, xe_dtype dt, int64_t l, int64_t s, bool causal, int64_t left,
                       int64_t right)
{
    const xe_type *t = ox_type(b, n);
    if (t->shape.rank != 1 || t->shape.dims[0] < 0 || !xe_dtype_is_integer(t->dtype)) {
        ox_invalid(b, "nonpad_kv_seqlen must be an integer vector [batch] of known length");
        return -1;
    }
    int64_t d4[4] = {t->shape.dims[0], 1, 1, 1};
    int len = ox_reshape(b, ox_cast(b, n, XE_I64), d4, 4);
    int i = positions4(b, l, 2), j = positions4(b, s, 3);
    int diff =
        ox_bin(b, XE_OP_SUB,
               ox_bin(b, XE_OP_ADD, i, ox_bin(b, XE_OP_SUB, len, ox_scalar(b, XE_I64, l))), j);
    int ok = ox_bin(b, XE_OP_LESS, j, len);
    if (causal)
        ok = both(b, ok, ox_bin(b, XE_OP_GREATER_EQUAL, diff, ox_scalar(b, XE_I64, 0)));
    if (left >= 0)
        ok = both(b, ok, ox_bin(b, XE_OP_LESS_EQUAL, diff, ox_scalar(b, XE_I64, left)));
    if (right >= 0)
        ok = both(b, ok, ox_bin(b, XE_OP_GREATER_EQUAL, diff, ox_scalar(b, XE_I64, -right)));
    return ox_select(b, ok, ox_scalar(b, dt, 0), ox_scalar(b, dt, -INFINITY));
}

/* The mask as an additive float bias, its last dim padded to s (False / -inf). */
static int mask_bias(ox_b *b, int m, xe_dtype dt, int64_t s)
{
    const xe_type *t = ox_type(b, m);
    int r = t->shape.rank;
    int64_t have = t->shape.dims[r - 1];
    int bias = t->dtype == XE_BOOL
                   ? ox_select(b, m, ox_scalar(b, dt, 0), ox_scalar(b, dt, -INFINITY))
                   : ox_cast(b, m, dt);
    if (have < s && have >= 0) {
        int64_t dims[XE_MAX_RANK];
        memcpy(dims, t->shape.dims, sizeof dims);
        dims[r - 1] = s - have;
        int inf = ox_scalar(b, dt, -INFINITY), in[2];
        ox_at at = OX_INTS("shape", dims, r), cat = OX_I("axis", r - 1);
        in[0] = bias;
        in[1] = ox_op(b, XE_OP_BROADCAST_TO, &inf, 1, &at, 1);
        bias = ox_op(b, XE_OP_CONCAT, in, 2, &cat, 1);
    }
    return bias;
}

/* softmax over the last axis whose fully masked rows (max = -inf) are 0, as the reference. */
static int safe_softmax(ox_b *b, int x, int bias)
{
    int64_t last[1] = {ox_rank(b, x) - 1};
    xe_dtype dt = ox_type(b, x)->dtype;
    int zero = ox_scalar(b, dt, 0), ninf = ox_scalar(b, dt, -INFINITY);
    int m = ox_reduce(b, XE_OP_REDUCE_MAX, x, last, 1, true);
    int e = ox_un(b, XE_OP_EXP,
                  ox_bin(b, XE_OP_SUB, x, ox_select(b, ox_bin(b, XE_OP_EQUAL, m, ninf), zero, m)));
    int s = ox_reduce(b, XE_OP_REDUCE_SUM, e, last, 1, true);
    int p = ox_bin(b, XE_OP_DIV, e,
                   ox_select(b, ox_bin(b, XE_OP_EQUAL, s, zero), ox_scalar(b, dt, 1), s));
    int64_t lb[1] = {ox_rank(b, bias) - 1};
    int bninf = ox_scalar(b, ox_type(b, bias)->dtype, -INFINITY);
    int dead = ox_bin(b, XE_OP_EQUAL, ox_reduce(b, XE_OP_REDUCE_MAX, bias, lb, 1, true), bninf);
    return ox_select(b, dead, zero, p);
}

/* QK^T soft-capped, plus the bias; *qk_out gets what qk_matmul_output_mode asks for. */
static int scores(ox_b *b, int q, int k, int bias, int *qk_out)
{
    int in[2] = {q, k};
    ox_at tb = OX_BOOL("transpose_b", true);
    int qk = ox_op(b, XE_OP_MATMUL, in, 2, &tb, 1);
    double cap = ox_float(b, "softcap", 0.0);
    if (cap > 0) {
        int c = ox_scalar(b, ox_type(b, qk)->dtype, cap);
        qk = ox_bin(b, XE_OP_MUL, ox_un(b, XE_OP_TANH, ox_bin(b, XE_OP_DIV, qk, c)), c);
    }
    int with = bias >= 0 ? ox_bin(b, XE_OP_ADD, qk, bias) : qk;
    *qk_out = ox_int(b, "qk_matmul_output_mode", 0) == 2 ? with : qk;
    return with;
}

/* Q's heads a whole multiple of K's (grouped-query attention), V's as many as K's, one head size.
 */
static bool heads_fit(ox_b *b, const xe_shape *q, const xe_shape *k, const xe_shape *v)
{
    if (k->dims[1] <= 0 || q->dims[1] % k->dims[1] || v->dims[1] != k->dims[1]) {
        ox_invalid(
            b,
            "%lld query heads do not group over %lld key and %lld value heads (a whole multiple of "
            "at least one is needed)",
            (long long)q->dims[1], (long long)k->dims[1], (long long)v->dims[1]);
        return false;
    }
    if (q->dims[3] != k->dims[3] || q->dims[3] <= 0) {
        ox_invalid(b, "the query's head size %lld and the key's %lld differ or are empty",
                   (long long)q->dims[3], (long long)k->dims[3]);
        return false;
    }
    return true;
}

/* Q, K and V as [batch, heads, seq, head size]: 3-D inputs split by q_num_heads and kv_num_heads.
 */
static bool heads_of(ox_b *b, int *q, int *k, int *v)
{
    bool three = ox_rank(b, *q) == 3;
    if (!xe_shape_is_known(&ox_type(b, *q)->shape) || !xe_shape_is_known(&ox_type(b, *k)->shape) ||
        !xe_shape_is_known(&ox_type(b, *v)->shape) || (ox_rank(b, *q) != 4 && !three)) {
        ox_unsupported(b, "Attention needs 3-D or 4-D inputs with known dims");
        return false;
    }
    if (three) {
        *q = split_heads(b, *q, ox_int(b, "q_num_heads", 0));
        *k = split_heads(b, *k, ox_int(b, "kv_num_heads", 0));
        *v = split_heads(b, *v, ox_int(b, "kv_num_heads", 0));
    }
    return !b->failed;
}

/* The additive bias of the [L, S] scores: the mask's, plus the causal frontier, the window and the
   valid keys' (per batch from nonpad, else constants offset by the past's length); -1 for none. */
static int attention_bias(ox_b *b, int mask, int nonpad, xe_dtype dt, int64_t l, int64_t s,
                          int64_t past)
{
    bool causal = ox_int(b, "is_causal", 0) != 0;
    int64_t left = ox_int(b, "left_window_size", -1), right = ox_int(b, "right_window_size", -1);
    int bias = mask >= 0 ? mask_bias(b, mask, dt, s) : -1, more = -1;
    if (nonpad >= 0)
        more = nonpad_bias(b, nonpad, dt, l, s, causal, left, right);
    else if (causal || left >= 0 || right >= 0)
        more = shape_bias(b, dt, l, s, past, causal, left, right);
    if (more < 0)
        return bias;
    return bias >= 0 ? ox_bin(b, XE_OP_ADD, bias, more) : more;
}

xe_code ox_b_attention(ox_b *b)
{
    int q = ox_in(b, 0), k = ox_in(b, 1), v = ox_in(b, 2), mask = ox_in(b, 3), qk_out;
    if (q < 0 || k < 0 || v < 0)
        return ox_status(b);
    int nonpad = ox_in(b, 6);
    if (nonpad >= 0 && (ox_in(b, 4) >= 0 || ox_in(b, 5) >= 0))
        return ox_invalid(b,
                          "nonpad_kv_seqlen (input 6) cannot be combined with a past key or value");
    bool three = ox_rank(b, q) == 3;
    if (!heads_of(b, &q, &k, &v))
        return ox_status(b);
    xe_dtype dt = ox_type(b, q)->dtype;
    const xe_shape *qs = &ox_type(b, q)->shape;
    double scale =
        ox_attr(b, "scale") ? ox_float(b, "scale", 1.0) : 1.0 / sqrt((double)qs->dims[3]);
    int sc = ox_scalar(b, dt, (double)(dt == XE_F32 ? (float)sqrt(scale) : sqrt(scale)));
    int64_t past = ox_in(b, 4) >= 0 ? ox_type(b, ox_in(b, 4))->shape.dims[2] : 0;
    ox_at cat = OX_I("axis", 2);
    int pk[2] = {ox_in(b, 4), k}, pv[2] = {ox_in(b, 5), v};
    k = past ? ox_op(b, XE_OP_CONCAT, pk, 2, &cat, 1) : k;
    v = ox_in(b, 5) >= 0 && ox_type(b, ox_in(b, 5))->shape.dims[2]
            ? ox_op(b, XE_OP_CONCAT, pv, 2, &cat, 1)
            : v;
    if (k < 0 || v < 0 || !heads_fit(b, qs, &ox_type(b, k)->shape, &ox_type(b, v)->shape))
        return ox_status(b);
    int64_t l = qs->dims[2], s = ox_type(b, k)->shape.dims[2],
            g = qs->dims[1] / ox_type(b, k)->shape.dims[1];
    int bias = attention_bias(b, mask, nonpad, dt, l, s, past);
    int x = scores(b, ox_bin(b, XE_OP_MUL, q, sc), repeat_heads(b, ox_bin(b, XE_OP_MUL, k, sc), g),
                   bias, &qk_out);
    xe_dtype sp = dt;
    if (ox_attr(b, "softmax_precision") &&
        !ox_dtype((int32_t)ox_int(b, "softmax_precision", 1), &sp))
        return ox_unsupported(b, "softmax_precision %lld is not supported",
                              (long long)ox_int(b, "softmax_precision", 1));
    x = ox_cast(b, x, sp);
    ox_at ax = OX_I("axis", -1);
    int p = bias >= 0 ? safe_softmax(b, x, bias) : ox_op(b, XE_OP_SOFTMAX, &x, 1, &ax, 1);
    p = ox_cast(b, p, dt);
    if (ox_int(b, "qk_matmul_output_mode", 0) == 3)
        qk_out = p;
    int y = ox_bin(b, XE_OP_MATMUL, p, repeat_heads(b, v, g));
    if (three && y >= 0) {
        const xe_shape *ys = &ox_type(b, y)->shape;
        int perm[4] = {0, 2, 1, 3};
        int64_t d3[3] = {ys->dims[0], ys->dims[2], ys->dims[1] * ys->dims[3]};
        y = ox_reshape(b, ox_transpose(b, y, perm, 4), d3, 3);
    }
    ox_out(b, 0, y);
    for (int o = 1; o < ox_n_out(b) && o < 4; o++)
        ox_out(b, o, o == 1 ? k : o == 2 ? v : qk_out);
    return ox_status(b);
}
