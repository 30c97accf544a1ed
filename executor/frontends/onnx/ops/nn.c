/*
 * Builders of ONNX's linear algebra and normalisation ops: MatMul, Gemm
 * (matmul with transposes, alpha, beta C), Softmax and LogSoftmax (before
 * opset 13 over the flattened trailing axes), Hardmax, LayerNormalization,
 * BatchNormalization at inference, InstanceNormalization, LpNormalization,
 * MeanVarianceNormalization, LRN, GlobalAverage/MaxPool, all as the
 * executor's elementwise ops and reductions.
 */
#include <math.h>
#include <string.h>

#include "onnx_impl.h"

static xe_code done(ox_b *b, int y)
{
    ox_out(b, 0, y);
    return ox_status(b);
}

static int like(ox_b *b, int x, double v)
{
    return x < 0 ? -1 : ox_scalar(b, ox_type(b, x)->dtype, v);
}

/* axes [from, rank) into a; the count. */
static int tail_axes(int from, int rank, int64_t *a)
{
    for (int d = from; d < rank; d++)
        a[d - from] = d;
    return rank - from;
}

/* Whether input k was left transposed for the product to take (rewrite.c); false when absent. */
static bool input_swapped(ox_b *b, size_t k)
{
    return k < b->np->n_input && ox_value_swapped(b->c, b->np->input[k]);
}

xe_code ox_b_matmul(ox_b *b)
{
    int in[2] = {ox_in(b, 0), ox_in(b, 1)};
    ox_at at[2] = {OX_BOOL("transpose_a", input_swapped(b, 0)),
                   OX_BOOL("transpose_b", input_swapped(b, 1))};
    int n_at = at[0].i || at[1].i ? 2 : 0;        /* transposes left to it (rewrite.c) */
    int q = n_at ? -1 : ox_qdq_product(b, false); /* between QDQ pairs: int8 (qdq.c) */
    if (q >= 0 || b->failed)
        return done(b, q);
    return done(b, ox_op(b, XE_OP_MATMUL, in, 2, at, n_at));
}

/*
 * When a Gemm's A is X reshaped to [M, k] where X's leading dims make M and
 * its trailing ones k (as exporters flatten a Linear's input), and C
 * broadcasts along the rows: X as [leading..., k]; else -1. The product is
 * then taken with the rows kept apart and merged after, and the reshape
 * that exporters put back after the Gemm folds into that one (ox_reshape),
 * so no reshape has to name two leading dims at once (a graph built per
 * size can then serve every size, executor/runtime/generalise.c).
 */
static int merged_rows(ox_b *b, int a, int c)
{
    const xe_graph *g = b->c->g;
    if (a < 0 || b->failed || ox_int(b, "transA", 0) || g->nodes[a]->op != XE_OP_RESHAPE ||
        xe_node_attr(g->nodes[a], "copy") ||
        (c >= 0 &&
         (ox_rank(b, c) > 2 || (ox_rank(b, c) == 2 && ox_type(b, c)->shape.dims[0] != 1))))
        return -1;
    int x = g->nodes[a]->inputs[0];
    const xe_shape *xs = &ox_type(b, x)->shape, *as = &ox_type(b, a)->shape;
    if (as->rank != 2 || as->dims[1] < 1 || xs->rank < 2 || xs->dims[0] < 0)
        return -1;
    int64_t k = 1, lead[XE_MAX_RANK];
    int p = xs->rank;
    while (p > 1 && k < as->dims[1] && xs->dims[p - 1] > 0)
        k *= xs->dims[--p];
    if (k != as->dims[1] || p < 2)
        return -1;
    for (int d = 0; d < p; d++)
        lead[d] = xs->dims[d] < 0 ? -1 : xs->dims[d];
    lead[p] = k;
    for (int d = 0, unknown = 0; d < p; d++)
        if (lead[d] < 0 && ++unknown > 1)
            return -1;
    return p + 1 == xs->rank ? x : ox_reshape(b, x, lead, p + 1);
}

xe_code ox_b_gemm(ox_b *b)
{
    int a = ox_in(b, 0), w = ox_in(b, 1), c = ox_in(b, 2);
    int rows = merged_rows(b, a, c), in[2] = {rows >= 0 ? rows : a, w};
    double alpha = ox_float(b, "alpha", 1.0), beta = ox_float(b, "beta", 1.0);
    ox_at at[2] = {OX_BOOL("transpose_a", ox_int(b, "transA", 0) != 0),
                   OX_BOOL("transpose_b", ox_int(b, "transB", 0) != 0)};
    int y = rows < 0 && !at[0].i && a >= 0 && ox_rank(b, a) == 2 ? ox_qdq_product(b, at[1].i) : -1;
    if (y < 0 && !b->failed) /* not between QDQ pairs (qdq.c) */
        y = ox_op(b, XE_OP_MATMUL, in, 2, at, 2);
    if (alpha != 1.0)
        y = ox_bin(b, XE_OP_MUL, y, like(b, y, alpha));
    if (c >= 0 && beta != 0.0)
        y = ox_bin(b, XE_OP_ADD, y, beta == 1.0 ? c : ox_bin(b, XE_OP_MUL, c, like(b, c, beta)));
    if (rows >= 0 && y >= 0) {
        int64_t merged[2] = {-1, ox_type(b, y)->shape.dims[ox_rank(b, y) - 1]};
        y = ox_reshape(b, y, merged, 2);
    }
    return done(b, y);
}

/* The softmax axes: [axis, rank) before opset 13, {axis} from 13 on. */
static int softmax_axes(ox_b *b, int x, int64_t *axes)
{
    int axis, r = ox_rank(b, x);
    if (!ox_axis(b, ox_int(b, "axis", b->opset < 13 ? 1 : -1), r, &axis))
        return -1;
    if (b->opset >= 13) {
        axes[0] = axis;
        return 1;
    }
    return tail_axes(axis, r, axes);
}

/* x - max(x) over the axes, kept. */
static int shifted(ox_b *b, int x, const int64_t *axes, int n)
{
    return ox_bin(b, XE_OP_SUB, x, ox_reduce(b, XE_OP_REDUCE_MAX, x, axes, n, true));
}

xe_code ox_b_softmax(ox_b *b)
{
    int x = ox_in(b, 0);
    int64_t axes[XE_MAX_RANK];
    int n = x < 0 ? -1 : softmax_axes(b, x, axes);
    if (n < 0)
        return ox_status(b);
    if (n == 1) {
        ox_at a = OX_I("axis", axes[0]);
        return done(b, ox_op(b, XE_OP_SOFTMAX, &x, 1, &a, 1));
    }
    int e = ox_un(b, XE_OP_EXP, shifted(b, x, axes, n));
    return done(b, ox_bin(b, XE_OP_DIV, e, ox_reduce(b, XE_OP_REDUCE_SUM, e, axes, n, true)));
}

xe_code ox_b_log_softmax(ox_b *b)
{
    int x = ox_in(b, 0);
    int64_t axes[XE_MAX_RANK];
    int n = x < 0 ? -1 : softmax_axes(b, x, axes);
    if (n < 0)
        return ox_status(b);
    int s = shifted(b, x, axes, n);
    int lse =
        ox_un(b, XE_OP_LOG, ox_reduce(b, XE_OP_REDUCE_SUM, ox_un(b, XE_OP_EXP, s), axes, n, true));
    return done(b, ox_bin(b, XE_OP_SUB, s, lse));
}

/* Hardmax: 1 where the (first) maximum along the axis is, from an iota compared with argmax. */
xe_code ox_b_hardmax(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x), axis;
    if (x < 0 || !ox_axis(b, ox_int(b, "axis", b->opset < 13 ? 1 : -1), r, &axis))
        return ox_status(b);
    const xe_type *t = ox_type(b, x);
    xe_dtype dt = t->dtype;
    int64_t shape[XE_MAX_RANK];
    int y = x, rr = r, ax = axis;
    if (!xe_shape_is_known(&t->shape))
        return ox_unsupported(b, "Hardmax of a value with unknown dims is not supported");
    if (b->opset < 13) { /* flatten to [outer, inner] */
        int64_t two[2] = {1, 1};
        for (int d = 0; d < r; d++)
            two[d >= axis] *= t->shape.dims[d];
        y = ox_reshape(b, x, two, 2);
        rr = 2;
        ax = 1;
    }
    memcpy(shape, ox_type(b, y)->shape.dims, sizeof shape);
    ox_at am[2] = {OX_I("axis", ax), OX_BOOL("keepdims", true)};
    ox_at io[3] = {OX_INTS("shape", shape, rr), OX_I("axis", ax), OX_DT("dtype", XE_I64)};
    int hot = ox_bin(b, XE_OP_EQUAL, ox_op(b, XE_OP_IOTA, NULL, 0, io, 3),
                     ox_op(b, XE_OP_ARGMAX, &y, 1, am, 2));
    y = ox_cast(b, hot, dt);
    return done(b, rr == r ? y : ox_reshape(b, y, t->shape.dims, r));
}

/* (x - mean) / sqrt(var + eps) over axes, with mean and 1/sqrt(var + eps) returned (and var,
 * kept dims, where var_out is not NULL). */
static int normalize_var(ox_b *b, int x, const int64_t *axes, int n, double eps, int *mean,
                         int *inv, int *var_out)
{
    *mean = ox_reduce(b, XE_OP_REDUCE_MEAN, x, axes, n, true);
    int d = ox_bin(b, XE_OP_SUB, x, *mean);
    int var = ox_reduce(b, XE_OP_REDUCE_MEAN, ox_bin(b, XE_OP_MUL, d, d), axes, n, true);
    if (var_out)
        *var_out = var;
    *inv = ox_un(b, XE_OP_RSQRT, ox_bin(b, XE_OP_ADD, var, like(b, var, eps)));
    return ox_bin(b, XE_OP_MUL, d, *inv);
}

static int normalize(ox_b *b, int x, const int64_t *axes, int n, double eps, int *mean, int *inv)
{
    return normalize_var(b, x, axes, n, eps, mean, inv, NULL);
}

xe_code ox_b_layer_norm(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x), axis, mean, inv;
    int64_t axes[XE_MAX_RANK];
    if (x < 0 || !ox_axis(b, ox_int(b, "axis", -1), r, &axis))
        return ox_status(b);
    xe_dtype dt = ox_type(b, x)->dtype, work = dt;
    if (ox_int(b, "stash_type", 1) == 1)
        work = XE_F32;
    else if (!ox_dtype((int32_t)ox_int(b, "stash_type", 1), &work) || !xe_dtype_is_float(work))
        return ox_unsupported(b, "attribute stash_type=%lld is not supported",
                              (long long)ox_int(b, "stash_type", 1));
    int n = tail_axes(axis, r, axes);
    int y = normalize(b, ox_cast(b, x, work), axes, n, ox_float(b, "epsilon", 1e-5), &mean, &inv);
    y = ox_bin(b, XE_OP_MUL, ox_cast(b, y, dt), ox_in(b, 1));
    if (ox_in(b, 2) >= 0)
        y = ox_bin(b, XE_OP_ADD, y, ox_in(b, 2));
    ox_out(b, 0, y);
    if (ox_n_out(b) > 1)
        ox_out(b, 1, mean);
    if (ox_n_out(b) > 2)
        ox_out(b, 2, inv);
    return ox_status(b);
}

/* RMSNormalization: x / sqrt(mean(x^2 over [axis, rank)) + eps) * scale, in the stash type. */
xe_code ox_b_rms_norm(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x), axis;
    int64_t axes[XE_MAX_RANK];
    if (x < 0 || !ox_axis(b, ox_int(b, "axis", -1), r, &axis))
        return ox_status(b);
    xe_dtype dt = ox_type(b, x)->dtype, work = XE_F32;
    int64_t stash = ox_int(b, "stash_type", 1);
    if (stash != 1 && (!ox_dtype((int32_t)stash, &work) || !xe_dtype_is_float(work)))
        return ox_unsupported(b, "attribute stash_type=%lld is not supported", (long long)stash);
    int n = tail_axes(axis, r, axes), xs = ox_cast(b, x, work);
    int ms = ox_reduce(b, XE_OP_REDUCE_MEAN, ox_bin(b, XE_OP_MUL, xs, xs), axes, n, true);
    int inv =
        ox_un(b, XE_OP_RSQRT, ox_bin(b, XE_OP_ADD, ms, like(b, ms, ox_float(b, "epsilon", 1e-5))));
    return done(b,
                ox_bin(b, XE_OP_MUL, ox_cast(b, ox_bin(b, XE_OP_MUL, xs, inv), dt), ox_in(b, 1)));
}

/* A per-channel vector [C] reshaped to [C, 1, ...] for an input of rank r (channels at 1). */
static int per_channel(ox_b *b, int v, int r)
{
    int64_t shape[XE_MAX_RANK] = {-1};
    for (int d = 1; d < r - 1; d++)
        shape[d] = 1;
    return r <= 2 ? v : ox_reshape(b, v, shape, r - 1);
}

/* Training mode (opset 14 on): x normalized by its own statistics over every axis but the
 * channels' (the variance the population's, as ONNX's reference), and the running statistics
 * moved toward them by momentum: outputs 1 and 2 are mean·m + batch_mean·(1 − m) and likewise
 * for the variance. */
static xe_code batch_norm_training(ox_b *b, int x, int r, double eps)
{
    int64_t axes[XE_MAX_RANK] = {0};
    int n = 1 + tail_axes(2, r, axes + 1), mean, inv, var;
    int y = normalize_var(b, x, axes, n, eps, &mean, &inv, &var);
    y = ox_bin(b, XE_OP_MUL, y, per_channel(b, ox_in(b, 1), r));
    ox_out(b, 0, ox_bin(b, XE_OP_ADD, y, per_channel(b, ox_in(b, 2), r)));
    double m = ox_float(b, "momentum", 0.9);
    int batch[2] = {ox_reshape(b, mean, (int64_t[]){-1}, 1),
                    ox_reshape(b, var, (int64_t[]){-1}, 1)};
    for (int k = 1; k <= 2 && k < ox_n_out(b); k++) {
        int run = ox_bin(b, XE_OP_MUL, ox_in(b, 2 + k), like(b, x, m));
        ox_out(b, k,
               ox_bin(b, XE_OP_ADD, run, ox_bin(b, XE_OP_MUL, batch[k - 1], like(b, x, 1 - m))));
    }
    return ox_status(b);
}

xe_code ox_b_batch_norm(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x);
    double eps = ox_float(b, "epsilon", 1e-5);
    if (x >= 0 && ox_int(b, "training_mode", 0) != 0 && b->opset >= 14)
        return batch_norm_training(b, x, r, eps);
    if (ox_int(b, "training_mode", 0) != 0 || (ox_n_out(b) > 1 && b->np->output[1][0]))
        return ox_unsupported(b, "training mode before opset 14 (running statistics outputs) is "
                                 "not supported");
    if (ox_batch_norm_folded(b, x)) /* into the conv before it (rewrite.c) */
        return done(b, x);
    int inv = ox_un(b, XE_OP_RSQRT, ox_bin(b, XE_OP_ADD, ox_in(b, 4), like(b, ox_in(b, 4), eps)));
    int scale = ox_bin(b, XE_OP_MUL, ox_in(b, 1), inv);
    int shift = ox_bin(b, XE_OP_SUB, ox_in(b, 2), ox_bin(b, XE_OP_MUL, ox_in(b, 3), scale));
    int y = ox_bin(b, XE_OP_MUL, x, per_channel(b, scale, r));
    return done(b, ox_bin(b, XE_OP_ADD, y, per_channel(b, shift, r)));
}

xe_code ox_b_instance_norm(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x), mean, inv;
    int64_t axes[XE_MAX_RANK];
    int y = normalize(b, x, axes, tail_axes(2, r, axes), ox_float(b, "epsilon", 1e-5), &mean, &inv);
    y = ox_bin(b, XE_OP_MUL, y, per_channel(b, ox_in(b, 1), r));
    return done(b, ox_bin(b, XE_OP_ADD, y, per_channel(b, ox_in(b, 2), r)));
}

xe_code ox_b_global_pool(ox_b *b)
{
    int x = ox_in(b, 0);
    int64_t axes[XE_MAX_RANK];
    return done(b, ox_reduce(b, b->entry->op, x, axes, tail_axes(2, ox_rank(b, x), axes), true));
}

xe_code ox_b_lp_norm(ox_b *b)
{
    int x = ox_in(b, 0), axis;
    int64_t p = ox_int(b, "p", 2), ax[1];
    if (p != 1 && p != 2)
        return ox_unsupported(b, "attribute p=%lld is not supported (1 or 2)", (long long)p);
    if (x < 0 || !ox_axis(b, ox_int(b, "axis", -1), ox_rank(b, x), &axis))
        return ox_status(b);
    ax[0] = axis;
    int m = p == 1 ? ox_un(b, XE_OP_ABS, x) : ox_bin(b, XE_OP_MUL, x, x);
    int norm = ox_reduce(b, XE_OP_REDUCE_SUM, m, ax, 1, true);
    if (p == 2)
        norm = ox_un(b, XE_OP_SQRT, norm);
    int zero = like(b, x, 0);
    return done(
        b, ox_select(b, ox_bin(b, XE_OP_EQUAL, norm, zero), zero, ox_bin(b, XE_OP_DIV, x, norm)));
}

/* (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9), as ONNX's reference. */
xe_code ox_b_mvn(ox_b *b)
{
    int x = ox_in(b, 0);
    int64_t axes[XE_MAX_RANK] = {0, 2, 3};
    int n = ox_ints(b, "axes", axes, XE_MAX_RANK);
    n = n < 0 ? 3 : n;
    int mean = ox_reduce(b, XE_OP_REDUCE_MEAN, x, axes, n, true);
    int sq = ox_reduce(b, XE_OP_REDUCE_MEAN, ox_bin(b, XE_OP_MUL, x, x), axes, n, true);
    int sd = ox_un(b, XE_OP_SQRT, ox_bin(b, XE_OP_SUB, sq, ox_bin(b, XE_OP_MUL, mean, mean)));
    return done(b, ox_bin(b, XE_OP_DIV, ox_bin(b, XE_OP_SUB, x, mean),
                          ox_bin(b, XE_OP_ADD, sd, like(b, x, 1e-9))));
}

/* LRN: x / (bias + alpha / size * window sum of x^2 over channels)^beta. */
xe_code ox_b_lrn(ox_b *b)
{
    int x = ox_in(b, 0);
    int64_t size = ox_int(b, "size", 0);
    if (x < 0)
        return ox_status(b);
    const xe_shape *s = &ox_type(b, x)->shape;
    if (size < 1 || size > 64 || s->rank < 2 || !xe_shape_is_known(s))
        return ox_unsupported(b, "LRN needs known dims and a size from 1 to 64");
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo, c = s->dims[1], shape[XE_MAX_RANK];
    int sq = ox_bin(b, XE_OP_MUL, x, x), parts[3], n = 0;
    memcpy(shape, s->dims, sizeof shape);
    ox_at cat = OX_I("axis", 1);
    if (lo > 0 && (shape[1] = lo) > 0) {
        ox_at at = OX_INTS("shape", shape, s->rank);
        int z = like(b, x, 0);
        parts[n++] = ox_op(b, XE_OP_BROADCAST_TO, &z, 1, &at, 1);
    }
    parts[n++] = sq;
    if (hi > 0 && (shape[1] = hi) > 0) {
        ox_at at = OX_INTS("shape", shape, s->rank);
        int z = like(b, x, 0);
        parts[n++] = ox_op(b, XE_OP_BROADCAST_TO, &z, 1, &at, 1);
    }
    int padded = n == 1 ? sq : ox_op(b, XE_OP_CONCAT, parts, n, &cat, 1), sum = -1;
    for (int64_t k = 0; k < size; k++) {
        int64_t beg[XE_MAX_RANK] = {0}, end[XE_MAX_RANK];
        for (int d = 0; d < s->rank; d++)
            end[d] = d == 1 ? k + c : INT64_MAX;
        beg[1] = k;
        int w = ox_slice(b, padded, beg, end);
        sum = k ? ox_bin(b, XE_OP_ADD, sum, w) : w;
    }
    double alpha = ox_float(b, "alpha", 1e-4), beta = ox_float(b, "beta", 0.75),
           bias = ox_float(b, "bias", 1.0);
    int den = ox_bin(b, XE_OP_ADD, like(b, x, bias),
                     ox_bin(b, XE_OP_MUL, sum, like(b, x, alpha / (double)size)));
    return done(b, ox_bin(b, XE_OP_DIV, x, ox_bin(b, XE_OP_POW, den, like(b, x, beta))));
}

/*
 * GroupNormalization: x [N, C, ...] as [N, G, C/G * rest], normalized over
 * its last axis (in the stash type), back to [N, C, ...]; scale and bias per
 * channel (opset 21), or per group before opset 21, applied in the grouped
 * form. Known channels and spatial dims.
 */
xe_code ox_b_group_norm(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x), mean, inv;
    if (x < 0 || ox_in(b, 1) < 0 || ox_in(b, 2) < 0)
        return ox_status(b);
    const xe_shape *xs = &ox_type(b, x)->shape;
    int64_t g = ox_int(b, "num_groups", -1), rest = 1;
    if (r < 2 || g < 1 || xs->dims[1] < 0 || xs->dims[1] % g)
        return ox_invalid(b, "num_groups must divide the channels (rank 2 or more)");
    for (int d = 1; d < r; d++) {
        if (xs->dims[d] < 0)
            return ox_unsupported(b, "GroupNormalization needs known channels and spatial dims");
        rest *= xs->dims[d];
    }
    xe_dtype dt = ox_type(b, x)->dtype, work = XE_F32;
    int64_t stash = ox_int(b, "stash_type", 1);
    if (stash != 1 && (!ox_dtype((int32_t)stash, &work) || !xe_dtype_is_float(work)))
        return ox_unsupported(b, "attribute stash_type=%lld is not supported", (long long)stash);
    int64_t grouped[3] = {xs->dims[0], g, rest / g}, back[XE_MAX_RANK], last = 2;
    memcpy(back, xs->dims, sizeof back);
    int y = ox_reshape_dims(b, ox_cast(b, x, work), grouped, 3,
                            "GroupNormalization needs known channels");
    y = ox_cast(b, normalize(b, y, &last, 1, ox_float(b, "epsilon", 1e-5), &mean, &inv), dt);
    if (b->opset < 21) { /* scale and bias [G] */
        int64_t g1[2] = {g, 1};
        y = ox_bin(b, XE_OP_MUL, y, ox_reshape(b, ox_in(b, 1), g1, 2));
        y = ox_bin(b, XE_OP_ADD, y, ox_reshape(b, ox_in(b, 2), g1, 2));
        return done(b, ox_reshape_dims(b, y, back, r, "GroupNormalization needs known channels"));
    }
    y = ox_reshape_dims(b, y, back, r, "GroupNormalization needs known channels");
    y = ox_bin(b, XE_OP_MUL, y, per_channel(b, ox_in(b, 1), r));
    return done(b, ox_bin(b, XE_OP_ADD, y, per_channel(b, ox_in(b, 2), r)));
}
