/*
 * Builders of ONNX's NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
 * (log_softmax over the classes, then the same loss). The target class of
 * each element is picked with a one-hot mask, equal(target, iota over the
 * classes), so no gather op is needed: loss = -sum_c(mask * input) times
 * the class weight, 0 where the target is ignore_index; reduction none,
 * sum, or mean (divided by the sum of the weights that count).
 */
#include <string.h>

#include "onnx_impl.h"

/* shape of x with a 1 put in at axis 1: [N, 1, d1, ...] */
static int classes_axis(ox_b *b, int t)
{
    const xe_shape *s = &ox_type(b, t)->shape;
    int64_t dims[XE_MAX_RANK];
    if (s->rank + 1 > XE_MAX_RANK || !xe_shape_is_known(s)) {
        ox_unsupported(b, "a target with unknown dims or rank above 7 is not supported");
        return -1;
    }
    for (int d = 0, j = 0; d <= s->rank; d++)
        dims[d] = d == 1 ? 1 : s->dims[j++];
    return ox_reshape(b, t, dims, s->rank + 1);
}

/* [1, C, 1, ...] of rank r: v (a [C] vector), or an iota over C when v < 0. */
static int class_row(ox_b *b, int v, int64_t c, int r)
{
    int64_t dims[XE_MAX_RANK];
    for (int d = 0; d < r; d++)
        dims[d] = d == 1 ? c : 1;
    if (v >= 0)
        return ox_reshape(b, v, dims, r);
    ox_at at[3] = {OX_INTS("shape", dims, r), OX_I("axis", 1), OX_DT("dtype", XE_I64)};
    return ox_op(b, XE_OP_IOTA, NULL, 0, at, 3);
}

/* The sum of every element of x, a scalar. */
static int sum_all(ox_b *b, int x)
{
    int64_t axes[XE_MAX_RANK];
    for (int d = 0; d < ox_rank(b, x); d++)
        axes[d] = d;
    return ox_reduce(b, XE_OP_REDUCE_SUM, x, axes, ox_rank(b, x), false);
}

/* The loss of log-probabilities lp [N, C, ...] against target [N, ...], optional weight [C]. */
static int nll(ox_b *b, int lp, int target, int weight)
{
    if (lp < 0 || target < 0)
        return -1;
    const xe_type *t = ox_type(b, lp);
    int r = t->shape.rank;
    int64_t c = r >= 2 ? t->shape.dims[1] : -1, cls[1] = {1};
    if (c < 0)
        return ox_unsupported(b, "needs a known number of classes (dim 1)"), -1;
    xe_dtype dt = t->dtype;
    int tgt = ox_cast(b, target, XE_I64);
    int hot = ox_bin(b, XE_OP_EQUAL, classes_axis(b, tgt), class_row(b, -1, c, r));
    int zero = ox_scalar(b, dt, 0);
    int picked = ox_reduce(b, XE_OP_REDUCE_SUM, ox_select(b, hot, lp, zero), cls, 1, false);
    int w = weight >= 0
                ? ox_reduce(b, XE_OP_REDUCE_SUM,
                            ox_select(b, hot, class_row(b, weight, c, r), zero), cls, 1, false)
                : ox_scalar(b, dt, 1);
    const Onnx__AttributeProto *ii = ox_attr(b, "ignore_index");
    if (ii) {
        int valid = ox_bin(b, XE_OP_NOT_EQUAL, tgt, ox_scalar(b, XE_I64, (double)ii->i));
        w = ox_select(b, valid, w, zero);
    }
    int loss = ox_un(b, XE_OP_NEG, ox_bin(b, XE_OP_MUL, picked, w));
    const char *red = ox_str(b, "reduction", "mean");
    if (!strcmp(red, "none"))
        return loss;
    int sum = sum_all(b, loss);
    if (!strcmp(red, "sum"))
        return sum;
    if (strcmp(red, "mean"))
        return ox_unsupported(b, "attribute reduction='%s' is not supported", red), -1;
    /* mean: over the weights that count (broadcast to the loss's shape first) */
    int wl = ox_bin(b, XE_OP_ADD, ox_bin(b, XE_OP_MUL, loss, zero), w);
    return ox_bin(b, XE_OP_DIV, sum, sum_all(b, wl));
}

xe_code ox_b_nll_loss(ox_b *b)
{
    ox_out(b, 0, nll(b, ox_in(b, 0), ox_in(b, 1), ox_in(b, 2)));
    return ox_status(b);
}

xe_code ox_b_sce_loss(ox_b *b)
{
    int x = ox_in(b, 0);
    int64_t cls[1] = {1};
    if (x < 0)
        return ox_status(b);
    int s = ox_bin(b, XE_OP_SUB, x, ox_reduce(b, XE_OP_REDUCE_MAX, x, cls, 1, true));
    int lse =
        ox_un(b, XE_OP_LOG, ox_reduce(b, XE_OP_REDUCE_SUM, ox_un(b, XE_OP_EXP, s), cls, 1, true));
    int lp = ox_bin(b, XE_OP_SUB, s, lse);
    ox_out(b, 0, nll(b, lp, ox_in(b, 1), ox_in(b, 2)));
    if (ox_n_out(b) > 1)
        ox_out(b, 1, lp);
    return ox_status(b);
}
