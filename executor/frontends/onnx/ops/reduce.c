/*
 * Builders of ONNX's reductions: ReduceSum/Mean/Max/Min/Prod map to the
 * executor's reduce ops; ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp
 * and ReduceSumSquare are an elementwise op around a reduce_sum. Axes come
 * from the attribute or (ReduceSum from opset 13, the others from 18) from
 * a second input known at load time; no axes means all of them, unless
 * noop_with_empty_axes makes it the identity. A reduction over a dim known
 * to be 0 is the constant identity of the reduction (-inf for max, ...).
 * ArgMax and ArgMin (argmax of -x) are here too.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "onnx_impl.h"

/* What is around the reduce_sum of the composite reductions. */
typedef enum reduce_kind {
    RK_PLAIN,  /* the executor op itself */
    RK_L1,     /* sum |x| */
    RK_L2,     /* sqrt(sum x^2) */
    RK_LOGSUM, /* log(sum x) */
    RK_LSE,    /* log(sum exp(x)) */
    RK_SUMSQ,  /* sum x^2 */
} reduce_kind;

static int reduce_axes(ox_b *b, int x, int64_t *axes, bool *noop)
{
    int since = b->entry->op == XE_OP_REDUCE_SUM && b->entry->p == RK_PLAIN ? 13 : 18;
    int n = -1, r = ox_rank(b, x);
    if (b->opset < since)
        n = ox_ints(b, "axes", axes, XE_MAX_RANK);
    else if (ox_in(b, 1) >= 0)
        n = ox_const_ints(b, 1, "axes", axes, XE_MAX_RANK);
    *noop = false;
    if (n <= 0 && !b->failed) {
        *noop = b->opset >= since && ox_int(b, "noop_with_empty_axes", 0) != 0;
        for (n = 0; n < r; n++)
            axes[n] = n;
    }
    for (int k = 0; k < n && !b->failed; k++) {
        int a;
        if (ox_axis(b, axes[k], r, &a))
            axes[k] = a;
    }
    return b->failed ? -1 : n;
}

/* The identity of op for a reduction over an empty dim, as a constant of the output type. */
static int empty_result(ox_b *b, int op, int x, const int64_t *axes, int n, bool keep)
{
    xe_dtype dt = ox_type(b, x)->dtype;
    double v = op == XE_OP_REDUCE_PROD   ? 1
               : op == XE_OP_REDUCE_MAX  ? -INFINITY
               : op == XE_OP_REDUCE_MIN  ? INFINITY
               : op == XE_OP_REDUCE_MEAN ? NAN
                                         : 0;
    if (dt == XE_BOOL) /* max of nothing is false, min of nothing true */
        v = op == XE_OP_REDUCE_MIN || op == XE_OP_REDUCE_PROD;
    else if (xe_dtype_is_int(dt) && isinf(v))
        v = v < 0 ? (dt == XE_I32 ? INT32_MIN : (double)INT64_MIN)
                  : (dt == XE_I32 ? INT32_MAX : (double)INT64_MAX);
    int64_t shape[XE_MAX_RANK];
    int r = 0;
    const xe_shape *s = &ox_type(b, x)->shape;
    for (int d = 0; d < s->rank; d++) {
        bool red = false;
        for (int k = 0; k < n; k++)
            red |= axes[k] == d;
        if (!red || keep)
            shape[r++] = red ? 1 : s->dims[d];
    }
    int c = ox_scalar(b, dt, v);
    ox_at at = OX_INTS("shape", shape, r);
    return ox_op(b, XE_OP_BROADCAST_TO, &c, 1, &at, 1);
}

static bool has_empty_axis(ox_b *b, int x, const int64_t *axes, int n)
{
    for (int k = 0; k < n; k++)
        if (ox_type(b, x)->shape.dims[axes[k]] == 0)
            return true;
    return false;
}

xe_code ox_b_reduce(ox_b *b)
{
    int x = ox_in(b, 0);
    int64_t axes[XE_MAX_RANK];
    bool noop, keep = ox_int(b, "keepdims", 1) != 0;
    int n = x < 0 ? -1 : reduce_axes(b, x, axes, &noop);
    if (n < 0)
        return ox_status(b);
    if (noop) {
        ox_out(b, 0, x);
        return ox_status(b);
    }
    reduce_kind kind = (reduce_kind)b->entry->p;
    int op = b->entry->op, y = x;
    xe_dtype dt = ox_type(b, x)->dtype;
    bool is_bool = dt == XE_BOOL && (op == XE_OP_REDUCE_MAX || op == XE_OP_REDUCE_MIN) &&
                   !has_empty_axis(b, x, axes, n);
    if (is_bool) /* the executor reduces no bools: max/min of 0/1 */
        y = x = ox_cast(b, x, XE_I32);
    if (kind == RK_L1)
        y = ox_un(b, XE_OP_ABS, x);
    else if (kind == RK_L2 || kind == RK_SUMSQ)
        y = ox_bin(b, XE_OP_MUL, x, x);
    else if (kind == RK_LSE)
        y = ox_un(b, XE_OP_EXP, x);
    if (has_empty_axis(b, y, axes, n))
        y = empty_result(b, kind == RK_PLAIN ? op : XE_OP_REDUCE_SUM, y, axes, n, keep);
    else
        y = ox_reduce(b, op, y, axes, n, keep);
    if (kind == RK_LOGSUM || kind == RK_LSE)
        y = ox_un(b, XE_OP_LOG, y);
    if (kind == RK_L2) {
        xe_dtype yt = y < 0 ? XE_F32 : ox_type(b, y)->dtype;
        y = ox_cast(b, ox_un(b, XE_OP_SQRT, ox_cast(b, y, xe_dtype_is_float(yt) ? yt : XE_F64)),
                    yt);
    }
    if (is_bool)
        y = ox_cast(b, y, XE_BOOL);
    ox_out(b, 0, y);
    return ox_status(b);
}

/* The last index of the extreme along axis: the largest position where x equals it. */
static int last_extreme(ox_b *b, int x, int axis, bool keep, bool is_min)
{
    const xe_shape *s = &ox_type(b, x)->shape;
    if (!xe_shape_is_known(s) || ox_type(b, x)->dtype == XE_BOOL) {
        ox_unsupported(b, "select_last_index=1 needs known dims and numbers");
        return -1;
    }
    int64_t ax[1] = {axis};
    int m = ox_reduce(b, is_min ? XE_OP_REDUCE_MIN : XE_OP_REDUCE_MAX, x, ax, 1, true);
    ox_at io[3] = {OX_INTS("shape", s->dims, s->rank), OX_I("axis", axis), OX_DT("dtype", XE_I64)};
    int idx = ox_op(b, XE_OP_IOTA, NULL, 0, io, 3);
    int at = ox_select(b, ox_bin(b, XE_OP_EQUAL, x, m), idx, ox_scalar(b, XE_I64, -1));
    return ox_reduce(b, XE_OP_REDUCE_MAX, at, ax, 1, keep);
}

xe_code ox_b_argmax(ox_b *b)
{
    int x = ox_in(b, 0), axis;
    if (x < 0 || !ox_axis(b, ox_int(b, "axis", 0), ox_rank(b, x), &axis))
        return ox_status(b);
    if (ox_int(b, "select_last_index", 0) != 0) {
        ox_out(b, 0,
               last_extreme(b, x, axis, ox_int(b, "keepdims", 1) != 0,
                            !strcmp(b->np->op_type, "ArgMin")));
        return ox_status(b);
    }
    if (!strcmp(b->np->op_type, "ArgMin"))
        x = ox_type(b, x)->dtype == XE_BOOL ? ox_un(b, XE_OP_LOGICAL_NOT, x)
                                            : ox_un(b, XE_OP_NEG, x);
    ox_at a[2] = {OX_I("axis", axis), OX_BOOL("keepdims", ox_int(b, "keepdims", 1) != 0)};
    ox_out(b, 0, ox_op(b, XE_OP_ARGMAX, &x, 1, a, 2));
    return ox_status(b);
}
