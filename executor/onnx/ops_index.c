/*
 * Builders of index arithmetic ops exporters write, as decompositions into
 * executor ops:
 *   GatherND: the index tuples become flat positions (index times stride,
 *     summed over the tuple, negative ones wrapped) into the data reshaped
 *     to [positions, rest...], read with one gather. Constant indices (the
 *     padding masks of BERT and T5) fold to constant positions at load time.
 *   CumSum: out[j] = sum over i of x[i] * T[j, i], T a constant 0/1 matrix
 *     (lower or upper triangle, the diagonal kept unless exclusive), as a
 *     multiply and a sum over the last axis (the axis moved there and back).
 *     Sums of n <= OX_CUMSUM_MAX: the n x n product stays small.
 */
#include <string.h>

#include "onnx_impl.h"

#define OX_CUMSUM_MAX 4096 /* the longest cumulative axis */

static xe_code done(ox_b *b, int y)
{
    ox_out(b, 0, y);
    return ox_status(b);
}

/* Whether every dim of s in [lo, hi) is known. */
static bool known_dims(const xe_shape *s, int lo, int hi)
{
    for (int d = lo; d < hi; d++)
        if (s->dims[d] < 0)
            return false;
    return true;
}

xe_code ox_b_gather_nd(ox_b *b)
{
    int x = ox_in(b, 0), idx = ox_in(b, 1);
    if (x < 0 || idx < 0)
        return ox_status(b);
    if (ox_int(b, "batch_dims", 0) != 0)
        return ox_unsupported(b, "GatherND with batch_dims %lld is not supported (0 is)",
                              (long long)ox_int(b, "batch_dims", 0));
    const xe_shape *s = &ox_type(b, x)->shape, *is = &ox_type(b, idx)->shape;
    if (is->rank < 1 || is->dims[is->rank - 1] < 1 || is->dims[is->rank - 1] > s->rank)
        return ox_invalid(b, "indices of shape rank %d do not index data of rank %d", is->rank, s->rank);
    int k = (int)is->dims[is->rank - 1];
    if (!known_dims(s, 0, s->rank) || !xe_dtype_is_int(ox_type(b, idx)->dtype))
        return ox_unsupported(b, "GatherND needs data of known dims and integer indices");
    int64_t flat[XE_MAX_RANK], stride[XE_MAX_RANK], dims[XE_MAX_RANK], p = 1;
    for (int d = k - 1; d >= 0; d--) {
        stride[d] = p;
        dims[d] = s->dims[d];
        p *= s->dims[d];
    }
    flat[0] = p;
    for (int d = k; d < s->rank; d++)
        flat[1 + d - k] = s->dims[d];
    int data = ox_reshape(b, x, flat, 1 + s->rank - k);
    int ix = ox_cast(b, idx, XE_I64);
    int dim = ox_ints_const(b, dims, k), zero = ox_scalar(b, XE_I64, 0);
    ix = ox_select(b, ox_bin(b, XE_OP_LESS, ix, zero), ox_bin(b, XE_OP_ADD, ix, dim), ix);
    int64_t last = is->rank - 1;
    int pos = ox_reduce(b, XE_OP_REDUCE_SUM, ox_bin(b, XE_OP_MUL, ix, ox_ints_const(b, stride, k)), &last, 1, false);
    int in[2] = {data, pos};
    ox_at at = OX_I("axis", 0);
    return done(b, ox_op(b, XE_OP_GATHER, in, 2, &at, 1));
}

/* The constant n x n 0/1 matrix T[j, i] of a cumulative sum, in dtype dt. */
static int cumsum_matrix(ox_b *b, xe_dtype dt, int64_t n, bool exclusive, bool reverse)
{
    xe_shape sh = {.rank = 2, .dims = {n, n}};
    xe_tensor *t = b->failed ? NULL : xe_tensor_new(dt, &sh, XE_DEV_CPU, &b->st);
    for (int64_t j = 0; t && j < n; j++)
        for (int64_t i = 0; i < n; i++) {
            bool in = reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j);
            xe_store_f64(t->data, dt, j * n + i, in ? 1.0 : 0.0);
        }
    return ox_const(b, t);
}

xe_code ox_b_cumsum(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x), axis;
    int64_t a;
    if (x < 0 || ox_const_ints(b, 1, "axis", &a, 1) != 1 || !ox_axis(b, a, r, &axis))
        return ox_status(b);
    const xe_type *t = ox_type(b, x);
    int64_t n = t->shape.dims[axis];
    if (n < 0 || n > OX_CUMSUM_MAX || !known_dims(&t->shape, 0, r))
        return ox_unsupported(b, "CumSum needs known dims and an axis of at most %d", OX_CUMSUM_MAX);
    if (t->dtype == XE_BOOL)
        return ox_invalid(b, "CumSum of bool is not defined");
    int perm[XE_MAX_RANK];
    for (int d = 0; d < r; d++)
        perm[d] = d == axis ? r - 1 : d == r - 1 ? axis : d;
    int y = axis == r - 1 ? x : ox_transpose(b, x, perm, r);
    int64_t wide[XE_MAX_RANK + 1];
    for (int d = 0; d < r; d++)
        wide[d] = t->shape.dims[perm[d]];
    wide[r] = n;
    wide[r - 1] = 1;
    y = ox_reshape(b, y, wide, r + 1);
    y = ox_bin(b, XE_OP_MUL, y, cumsum_matrix(b, t->dtype, n, ox_int(b, "exclusive", 0), ox_int(b, "reverse", 0)));
    int64_t last = r;
    y = ox_reduce(b, XE_OP_REDUCE_SUM, y, &last, 1, false);
    return done(b, axis == r - 1 ? y : ox_transpose(b, y, perm, r));
}
