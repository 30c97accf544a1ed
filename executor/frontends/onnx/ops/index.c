/*
 * Builders of index arithmetic ops exporters write, as decompositions into
 * executor ops:
 *   GatherND: the index tuples become flat positions (index times stride,
 *     summed over the tuple, negative ones wrapped) into the data reshaped
 *     to [positions, rest...], read with one gather. Constant indices (the
 *     padding masks of BERT and T5) fold to constant positions at load time.
 *   ScatterND, ScatterElements (reduction none, add, mul, max, min): the
 *     written rows' positions compared with every position (a one-hot
 *     mask), the updates summed through it, selected over the data where a
 *     row was hit (ONNX requires the positions to be unique, so the sum is
 *     the update); a reduction reduces them all with the data.
 *   ReverseSequence: one gather of rows reordered by index arithmetic.
 *   NonZero: the executor's nonzero (its count depends on the data: it
 *     runs per op, at a cluster border).
 *   TopK (constant k): k rounds of argmax and max along the axis.
 *   CumSum: out[j] = sum over i of x[i] * T[j, i], T a constant 0/1 matrix
 *     (lower or upper triangle, the diagonal kept unless exclusive), as a
 *     multiply and a sum over the last axis (the axis moved there and back).
 *     Sums of n <= OX_CUMSUM_MAX: the n x n product stays small.
 */
#include <math.h>
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

/* The offsets of GatherND's batches in the flattened data: batch i (row-major over the first
 * bd dims) at i * p, shaped [B0, .., B(bd-1), 1, ..] to broadcast over rank-dims positions. */
static int batch_offsets(ox_b *b, const xe_shape *s, int bd, int64_t p, int rank)
{
    xe_shape os = {.rank = rank};
    for (int d = 0; d < rank; d++)
        os.dims[d] = d < bd ? s->dims[d] : 1;
    xe_tensor *t = ox_new_tensor(b, XE_I64, &os);
    if (!t)
        return -1;
    for (int64_t i = 0; i < xe_tensor_numel(t); i++)
        ((int64_t *)t->data)[i] = i * p;
    return ox_const(b, t);
}

/* GatherND: the data flattened over its first batch_dims + k dims, one gather of the flat
 * positions (each index row dotted with the dims' strides, plus its batch's offset). */
xe_code ox_b_gather_nd(ox_b *b)
{
    int x = ox_in(b, 0), idx = ox_in(b, 1);
    if (x < 0 || idx < 0)
        return ox_status(b);
    const xe_shape *s = &ox_type(b, x)->shape, *is = &ox_type(b, idx)->shape;
    int64_t bd64 = ox_int(b, "batch_dims", 0);
    if (bd64 < 0 || bd64 >= is->rank || bd64 >= s->rank)
        return ox_invalid(b, "batch_dims %lld is not below both ranks (%d and %d)", (long long)bd64,
                          s->rank, is->rank);
    int bd = (int)bd64;
    if (is->rank < 1 || is->dims[is->rank - 1] < 1 || is->dims[is->rank - 1] > s->rank - bd)
        return ox_invalid(b, "indices of shape rank %d do not index data of rank %d", is->rank,
                          s->rank);
    int k = (int)is->dims[is->rank - 1];
    if (!known_dims(s, 0, s->rank) || !xe_dtype_is_int(ox_type(b, idx)->dtype))
        return ox_unsupported(b, "GatherND needs data of known dims and integer indices");
    for (int d = 0; d < bd; d++)
        if (is->dims[d] >= 0 && is->dims[d] != s->dims[d])
            return ox_invalid(b, "batch dim %d is %lld in the indices but %lld in the data", d,
                              (long long)is->dims[d], (long long)s->dims[d]);
    int64_t flat[XE_MAX_RANK], stride[XE_MAX_RANK], dims[XE_MAX_RANK], p = 1, batches = 1;
    for (int d = k - 1; d >= 0; d--) {
        stride[d] = p;
        dims[d] = s->dims[bd + d];
        p *= s->dims[bd + d];
    }
    for (int d = 0; d < bd; d++)
        batches *= s->dims[d];
    flat[0] = batches * p;
    for (int d = bd + k; d < s->rank; d++)
        flat[1 + d - bd - k] = s->dims[d];
    int data = ox_reshape(b, x, flat, 1 + s->rank - bd - k);
    int ix = ox_cast(b, idx, XE_I64);
    int dim = ox_ints_const(b, dims, k), zero = ox_scalar(b, XE_I64, 0);
    ix = ox_select(b, ox_bin(b, XE_OP_LESS, ix, zero), ox_bin(b, XE_OP_ADD, ix, dim), ix);
    int64_t last = is->rank - 1;
    int pos = ox_reduce(b, XE_OP_REDUCE_SUM, ox_bin(b, XE_OP_MUL, ix, ox_ints_const(b, stride, k)),
                        &last, 1, false);
    if (bd > 0)
        pos = ox_bin(b, XE_OP_ADD, pos, batch_offsets(b, s, bd, p, is->rank - 1));
    int in[2] = {data, pos};
    ox_at at = OX_I("axis", 0);
    return done(b, ox_op(b, XE_OP_GATHER, in, 2, &at, 1));
}

/* The constant n x n 0/1 matrix T[j, i] of a cumulative sum, in dtype dt. */
static int cumsum_matrix(ox_b *b, xe_dtype dt, int64_t n, bool exclusive, bool reverse)
{
    xe_shape sh = {.rank = 2, .dims = {n, n}};
    xe_tensor *t = ox_new_tensor(b, dt, &sh);
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
    bool prod = !strcmp(b->np->op_type, "CumProd");
    if (n < 0 || n > OX_CUMSUM_MAX || !known_dims(&t->shape, 0, r))
        return ox_unsupported(b, "%s needs known dims and an axis of at most %d", b->np->op_type,
                              OX_CUMSUM_MAX);
    if (t->dtype == XE_BOOL)
        return ox_invalid(b, "%s of bool is not defined", b->np->op_type);
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
    int m = cumsum_matrix(b, prod ? XE_BOOL : t->dtype, n, ox_int(b, "exclusive", 0),
                          ox_int(b, "reverse", 0));
    /* CumProd: the product of x where the triangle holds, 1 elsewhere (never x * 0, which is NaN at
     * inf) */
    y = prod ? ox_select(b, m, y, ox_scalar(b, t->dtype, 1)) : ox_bin(b, XE_OP_MUL, y, m);
    int64_t last = r;
    y = ox_reduce(b, prod ? XE_OP_REDUCE_PROD : XE_OP_REDUCE_SUM, y, &last, 1, false);
    return done(b, axis == r - 1 ? y : ox_transpose(b, y, perm, r));
}

/* 0, 1, ..., n-1 as an i64 constant of shape [n]. */
static int positions(ox_b *b, int64_t n)
{
    xe_shape sh = {.rank = 1, .dims = {n}};
    xe_tensor *t = ox_new_tensor(b, XE_I64, &sh);
    for (int64_t i = 0; t && i < n; i++)
        ((int64_t *)t->data)[i] = i;
    return ox_const(b, t);
}

/* x with a dim of 1 appended (rank r + 1) or inserted at position at. */
static int with_unit_dim(ox_b *b, int x, int at)
{
    const xe_shape *s = &ox_type(b, x)->shape;
    int64_t d[XE_MAX_RANK];
    if (s->rank >= XE_MAX_RANK) {
        ox_unsupported(b, "rank %d leaves no room for a scatter's extra dim", s->rank);
        return -1;
    }
    for (int k = 0, j = 0; k <= s->rank; k++)
        d[k] = k == at ? 1 : s->dims[j++];
    return ox_reshape(b, x, d, s->rank + 1);
}

/* Integer indices with negative ones wrapped by dim (an i64 node), as i64. */
static int wrapped(ox_b *b, int idx, int dim)
{
    idx = ox_cast(b, idx, XE_I64);
    int zero = ox_scalar(b, XE_I64, 0);
    return ox_select(b, ox_bin(b, XE_OP_LESS, idx, zero), ox_bin(b, XE_OP_ADD, idx, dim), idx);
}

/* A scatter's reduction attribute. */
typedef enum scatter_red {
    RED_NONE, /* the update replaces the data */
    RED_ADD,  /* data + the sum of the updates */
    RED_MUL,  /* data * their product */
    RED_MAX,  /* the largest of the data and the updates */
    RED_MIN,  /* the smallest */
} scatter_red;

/*
 * The updates combined per written position, where hit ([.., Q, ..] bool)
 * holds: upd where hit, else a neutral value (0 for add, 1 for mul) or the
 * data itself (max, min, which need no neutral value of the dtype), reduced
 * over the hits' axis q; data is there broadcast to the hits' shape.
 */
static int scatter_reduce(ox_b *b, scatter_red red, int hit, int upd, int data, int64_t q)
{
    xe_dtype dt = ox_type(b, upd)->dtype;
    int fill = red == RED_MAX || red == RED_MIN ? data : ox_scalar(b, dt, red == RED_MUL ? 1 : 0);
    int op = red == RED_MUL   ? XE_OP_REDUCE_PROD
             : red == RED_MAX ? XE_OP_REDUCE_MAX
             : red == RED_MIN ? XE_OP_REDUCE_MIN
                              : XE_OP_REDUCE_SUM;
    return ox_reduce(b, op, ox_select(b, hit, upd, fill), &q, 1, false);
}

/* data combined with the reduced updates r (where every q hit, r of max and min lacks data). */
static int scatter_apply(ox_b *b, scatter_red red, int data, int r)
{
    int op = red == RED_ADD   ? XE_OP_ADD
             : red == RED_MUL ? XE_OP_MUL
             : red == RED_MAX ? XE_OP_MAXIMUM
                              : XE_OP_MINIMUM;
    return ox_bin(b, op, data, r);
}

/*
 * The scatter both ScatterND and ScatterElements reduce to: rows of data
 * [P, rest...] written by rows of upd [Q, rest...] at positions pos [Q]:
 * hit[q, p] = (pos[q] == p); the written value of row p is the sum over q
 * of the hits' updates (the last write wins in ONNX only for unique
 * positions, which is what it requires); a reduction combines them all.
 */
static int scatter_rows(ox_b *b, int data, int pos, int upd, scatter_red red)
{
    const xe_shape *ds = &ox_type(b, data)->shape;
    int r = ds->rank;
    int64_t q0 = 0;
    int hit =
        ox_bin(b, XE_OP_EQUAL, with_unit_dim(b, pos, 1), positions(b, ds->dims[0])); /* [Q, P] */
    int h = hit; /* [Q, P, 1...] against upd [Q, 1, rest...] */
    for (int k = 1; k < r; k++)
        h = with_unit_dim(b, h, ox_rank(b, h));
    int up = with_unit_dim(b, upd, 1);
    if (red != RED_NONE)
        return scatter_apply(b, red, data, scatter_reduce(b, red, h, up, data, q0));
    int sum = scatter_reduce(b, RED_ADD, h, up, -1, q0);
    int any = ox_reduce(b, XE_OP_REDUCE_SUM, ox_cast(b, h, XE_I32), &q0, 1, false);
    return ox_select(b, ox_bin(b, XE_OP_GREATER, any, ox_scalar(b, XE_I32, 0)), sum, data);
}

/* The reduction attribute (b failed for an unknown one). */
static scatter_red scatter_reduction(ox_b *b)
{
    static const char *names[] = {"none", "add", "mul", "max", "min"};
    const char *red = ox_str(b, "reduction", "none");
    for (int k = 0; k < 5; k++)
        if (!strcmp(red, names[k]))
            return (scatter_red)k;
    ox_invalid(b, "reduction '%s' is not none, add, mul, max or min", red);
    return RED_NONE;
}

xe_code ox_b_scatter_nd(ox_b *b)
{
    int x = ox_in(b, 0), idx = ox_in(b, 1), upd = ox_in(b, 2);
    scatter_red red = scatter_reduction(b);
    if (x < 0 || idx < 0 || upd < 0 || b->failed)
        return ox_status(b);
    const xe_shape *s = &ox_type(b, x)->shape, *is = &ox_type(b, idx)->shape;
    if (is->rank < 1 || is->dims[is->rank - 1] < 1 || is->dims[is->rank - 1] > s->rank)
        return ox_invalid(b, "indices of shape rank %d do not index data of rank %d", is->rank,
                          s->rank);
    if (!known_dims(s, 0, s->rank) || !known_dims(is, 0, is->rank))
        return ox_unsupported(b, "ScatterND needs known dims");
    int k = (int)is->dims[is->rank - 1];
    int64_t flat[XE_MAX_RANK], stride[XE_MAX_RANK], dims[XE_MAX_RANK], p = 1, q = 1,
                                                                       last = is->rank - 1;
    for (int d = k - 1; d >= 0; d--) {
        stride[d] = p;
        dims[d] = s->dims[d];
        p *= s->dims[d];
    }
    for (int d = 0; d < is->rank - 1; d++)
        q *= is->dims[d];
    flat[0] = p;
    for (int d = k; d < s->rank; d++)
        flat[1 + d - k] = s->dims[d];
    int data = ox_reshape(b, x, flat, 1 + s->rank - k);
    int ix = wrapped(b, idx, ox_ints_const(b, dims, k));
    int pos = ox_reduce(b, XE_OP_REDUCE_SUM, ox_bin(b, XE_OP_MUL, ix, ox_ints_const(b, stride, k)),
                        &last, 1, false);
    pos = ox_reshape(b, pos, &q, 1);
    flat[0] = q;
    int rows = ox_reshape(b, ox_cast(b, upd, ox_type(b, x)->dtype), flat, 1 + s->rank - k);
    int64_t shape[XE_MAX_RANK];
    memcpy(shape, s->dims, sizeof shape);
    return done(b, ox_reshape(b, scatter_rows(b, data, pos, rows, red), shape, s->rank));
}

xe_code ox_b_scatter_elements(ox_b *b)
{
    int x = ox_in(b, 0), idx = ox_in(b, 1), upd = ox_in(b, 2), r = ox_rank(b, x), axis;
    scatter_red red = scatter_reduction(b);
    if (x < 0 || idx < 0 || upd < 0 || b->failed || !ox_axis(b, ox_int(b, "axis", 0), r, &axis))
        return ox_status(b);
    const xe_shape *s = &ox_type(b, x)->shape, *is = &ox_type(b, idx)->shape;
    bool ok = is->rank == r && known_dims(s, 0, r) && known_dims(is, 0, r);
    for (int d = 0; ok && d < r; d++)
        ok = d == axis || is->dims[d] == s->dims[d];
    if (!ok)
        return ox_unsupported(b,
                              "ScatterElements needs known dims, and indices as large as the data "
                              "along every axis but the scattered one");
    /* the axis first, the others flattened after it: rows [n] of data, [m] of indices */
    int perm[XE_MAX_RANK];
    for (int d = 0, j = 1; d < r; d++)
        perm[d == axis ? 0 : j++] = d;
    int64_t rest = 1;
    for (int d = 0; d < r; d++)
        rest *= d == axis ? 1 : s->dims[d];
    int64_t n = s->dims[axis], m = is->dims[axis], nr[2] = {n, rest}, mr[2] = {m, rest};
    int data = ox_reshape(b, ox_transpose(b, x, perm, r), nr, 2);
    int ix =
        ox_reshape(b, ox_transpose(b, wrapped(b, idx, ox_ints_const(b, &n, 1)), perm, r), mr, 2);
    int up = ox_reshape(b, ox_transpose(b, ox_cast(b, upd, ox_type(b, x)->dtype), perm, r), mr, 2);
    /* per column c: hit[i, c, p] = (ix[i, c] == p); out[p, c] = sum over i */
    int hit = ox_bin(b, XE_OP_EQUAL, with_unit_dim(b, ix, 2), positions(b, n)); /* [m, rest, n] */
    int64_t i0 = 0;
    int up2 = with_unit_dim(b, up, 2), out;
    if (red != RED_NONE) {
        int data_t = ox_transpose(b, data, (int[]){1, 0}, 2);  /* [rest, n] */
        int r2 = scatter_reduce(b, red, hit, up2, data_t, i0); /* [rest, n] */
        out = ox_transpose(b, scatter_apply(b, red, data_t, r2), (int[]){1, 0}, 2);
    } else {
        int sum = scatter_reduce(b, RED_ADD, hit, up2, -1, i0);
        int any = ox_reduce(b, XE_OP_REDUCE_SUM, ox_cast(b, hit, XE_I32), &i0, 1, false);
        int set = ox_bin(b, XE_OP_GREATER, ox_transpose(b, any, (int[]){1, 0}, 2),
                         ox_scalar(b, XE_I32, 0));
        out = ox_select(b, set, ox_transpose(b, sum, (int[]){1, 0}, 2), data);
    }
    int64_t tshape[XE_MAX_RANK];
    int inv[XE_MAX_RANK];
    for (int d = 0; d < r; d++) {
        tshape[d] = s->dims[perm[d]];
        inv[perm[d]] = d;
    }
    return done(b, ox_transpose(b, ox_reshape(b, out, tshape, r), inv, r));
}

/* NonZero: the executor's nonzero, which runs per op (its count depends on the data). */
xe_code ox_b_nonzero(ox_b *b)
{
    int x = ox_in(b, 0);
    if (x < 0)
        return ox_status(b);
    return done(b, ox_un(b, XE_OP_NONZERO, x));
}

/* Compress: the slices of x along axis (of x flattened, without one) where the 1-D condition
 * holds, as numpy.compress: the condition's nonzero positions, then a gather. A condition
 * shorter than the axis selects among the axis's first elements only. */
xe_code ox_b_compress(ox_b *b)
{
    int x = ox_in(b, 0), c = ox_in(b, 1), axis = 0;
    if (x < 0 || c < 0)
        return ox_status(b);
    if (ox_type(b, c)->dtype != XE_BOOL || ox_rank(b, c) != 1)
        return ox_invalid(b, "the condition must be a 1-D bool tensor");
    if (ox_attr(b, "axis")) {
        if (!ox_axis(b, ox_int(b, "axis", 0), ox_rank(b, x), &axis))
            return ox_status(b);
    } else {
        x = ox_reshape(b, x, (int64_t[]){-1}, 1);
    }
    int at_pos = ox_reshape(b, ox_un(b, XE_OP_NONZERO, c), (int64_t[]){-1}, 1);
    ox_at at = OX_I("axis", axis);
    return done(b, ox_op(b, XE_OP_GATHER, (int[]){x, at_pos}, 2, &at, 1));
}

/* The lowest value of dt, or -inf: what a picked element becomes. */
static double lowest(xe_dtype dt)
{
    switch (dt) {
    case XE_I32:
        return -2147483648.0;
    case XE_I64:
        return -9223372036854775808.0;
    default:
        return -INFINITY;
    }
}

/*
 * TopK with a constant k of at most OX_TOPK_MAX: k rounds of argmax (the
 * first index wins ties, as ONNX asks) and the maximum, each picked
 * position then lowered out of the way; smallest ones through the
 * negation. Values and indices come out sorted. Integers run on i64 keys
 * in the same order (u64 with its top bit flipped; the smallest through
 * bitwise not, which cannot overflow), exact, and each round picks the
 * first unpicked position holding the maximum of the unpicked ones, so
 * that a value equal to the lowered one is still told from a picked one.
 */
#define OX_TOPK_MAX 64

/* x's integers as i64 keys ordered as x (largest) or reversed (smallest); and back to dt. */
static int int_keys(ox_b *b, int x, bool largest)
{
    int key = ox_cast(b, x, XE_I64);
    if (ox_type(b, x)->dtype == XE_U64)
        key = ox_bin(b, XE_OP_BITWISE_XOR, key, ox_scalar(b, XE_I64, (double)INT64_MIN));
    return largest ? key : ox_un(b, XE_OP_BITWISE_NOT, key);
}

static int int_values(ox_b *b, int key, xe_dtype dt, bool largest)
{
    int v = largest ? key : ox_un(b, XE_OP_BITWISE_NOT, key);
    if (dt == XE_U64)
        v = ox_bin(b, XE_OP_BITWISE_XOR, v, ox_scalar(b, XE_I64, (double)INT64_MIN));
    return ox_cast(b, v, dt);
}

/* Round j of integer keys v: the maximum of the unpicked into *val, its first position into *idx;
 *taken (-1: none yet) gains it when another round follows. */
static void int_round(ox_b *b, int v, int pos, int axis, int *taken, bool more, int *val, int *idx)
{
    int64_t ax = axis;
    int low = ox_scalar(b, XE_I64, (double)INT64_MIN);
    int vm = *taken < 0 ? v : ox_select(b, *taken, low, v);
    *val = ox_reduce(b, XE_OP_REDUCE_MAX, vm, &ax, 1, true);
    int cand = ox_bin(b, XE_OP_EQUAL, v, *val);
    if (*taken >= 0)
        cand = ox_bin(b, XE_OP_LOGICAL_AND, cand, ox_un(b, XE_OP_LOGICAL_NOT, *taken));
    ox_at at[2] = {OX_I("axis", axis), OX_BOOL("keepdims", true)};
    int c32 = ox_cast(b, cand, XE_I32);
    *idx = ox_op(b, XE_OP_ARGMAX, &c32, 1, at, 2);
    if (more) {
        int hit = ox_bin(b, XE_OP_EQUAL, pos, *idx);
        *taken = *taken < 0 ? hit : ox_bin(b, XE_OP_LOGICAL_OR, *taken, hit);
    }
}

xe_code ox_b_topk(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x), axis;
    int64_t k;
    if (x < 0 || ox_const_ints(b, 1, "k", &k, 1) != 1 ||
        !ox_axis(b, ox_int(b, "axis", -1), r, &axis))
        return ox_status(b);
    const xe_type *t = ox_type(b, x);
    xe_dtype dt = t->dtype;
    int64_t n = t->shape.dims[axis];
    bool is_int = xe_dtype_is_integer(dt);
    if (n < 0 || k < 0 || k > n || k > OX_TOPK_MAX || dt == XE_BOOL || dt == XE_F16)
        return ox_unsupported(
            b, "TopK needs a known axis, k from 0 to %d and an f32, f64, bf16 or integer input",
            OX_TOPK_MAX);
    bool largest = ox_int(b, "largest", 1) != 0;
    int v = is_int ? int_keys(b, x, largest) : largest ? x : ox_un(b, XE_OP_NEG, x);
    int low = is_int ? -1 : ox_scalar(b, ox_type(b, v)->dtype, lowest(ox_type(b, v)->dtype));
    int vals[OX_TOPK_MAX], idxs[OX_TOPK_MAX], pos = positions(b, n), taken = -1;
    int64_t shape[XE_MAX_RANK] = {0}, ax = axis;
    for (int d = 0; d < r; d++)
        shape[d] = d == axis ? n : 1;
    pos = ox_reshape(b, pos, shape, r);
    for (int64_t j = 0; j < k; j++) {
        if (is_int) {
            int_round(b, v, pos, axis, &taken, j + 1 < k, &vals[j], &idxs[j]);
            continue;
        }
        ox_at at[2] = {OX_I("axis", axis), OX_BOOL("keepdims", true)};
        idxs[j] = ox_op(b, XE_OP_ARGMAX, &v, 1, at, 2);
        vals[j] = ox_reduce(b, XE_OP_REDUCE_MAX, v, &ax, 1, true);
        if (j + 1 < k)
            v = ox_select(b, ox_bin(b, XE_OP_EQUAL, pos, idxs[j]), low, v);
    }
    ox_at cat = OX_I("axis", axis);
    int val = k == 1 ? vals[0] : ox_op(b, XE_OP_CONCAT, vals, (int)k, &cat, 1);
    int idx = k == 1 ? idxs[0] : ox_op(b, XE_OP_CONCAT, idxs, (int)k, &cat, 1);
    if (is_int)
        val = int_values(b, val, dt, largest);
    else if (!largest)
        val = ox_un(b, XE_OP_NEG, val);
    ox_out(b, 0, val);
    ox_out(b, 1, idx);
    return ox_status(b);
}

/* [n] or [1, n] (row) or [n, 1] of 0 .. n-1, i64. */
static int positions_as(ox_b *b, int64_t n, bool row)
{
    int64_t d[2] = {row ? 1 : n, row ? n : 1};
    return ox_reshape(b, positions(b, n), d, 2);
}

/*
 * ReverseSequence: time and batch moved first and flattened to rows
 * t * B + b, one gather of the rows src(t, b) * B + b, where src reverses
 * the first len[b] steps (src = len[b] - 1 - t) and keeps the rest (src = t).
 */
xe_code ox_b_reverse_sequence(ox_b *b)
{
    int x = ox_in(b, 0), lens = ox_in(b, 1), r = ox_rank(b, x), ta, ba;
    if (x < 0 || lens < 0 || !ox_axis(b, ox_int(b, "time_axis", 0), r, &ta) ||
        !ox_axis(b, ox_int(b, "batch_axis", 1), r, &ba))
        return ox_status(b);
    const xe_shape *s = &ox_type(b, x)->shape;
    if (r < 2 || ta == ba || (ta > 1 || ba > 1))
        return ox_invalid(b,
                          "time_axis and batch_axis must be 0 and 1 or 1 and 0 (rank 2 or more)");
    if (!known_dims(s, 0, r))
        return ox_unsupported(b, "ReverseSequence needs known dims");
    const xe_type *lt = ox_type(b, lens);
    if (lt->shape.rank != 1 || lt->shape.dims[0] != s->dims[ba] ||
        (lt->dtype != XE_I64 && lt->dtype != XE_I32))
        return ox_invalid(b, "sequence_lens must be [batch] int64");
    int64_t t = s->dims[ta], n = s->dims[ba], flat[XE_MAX_RANK], rows = t * n;
    int perm[XE_MAX_RANK] = {1, 0};
    for (int d = 2; d < r; d++)
        perm[d] = d;
    int xt = ta == 0 ? x : ox_transpose(b, x, perm, r); /* [T, B, rest...] */
    flat[0] = rows;
    for (int d = 2; d < r; d++)
        flat[d - 1] = s->dims[d];
    int data = ox_reshape(b, xt, flat, r - 1);
    int64_t row1[2] = {1, n};
    int len = ox_reshape(b, ox_cast(b, lens, XE_I64), row1, 2);
    int tp = positions_as(b, t, false), bp = positions_as(b, n, true);
    int one = ox_scalar(b, XE_I64, 1);
    int src = ox_select(b, ox_bin(b, XE_OP_LESS, tp, len),
                        ox_bin(b, XE_OP_SUB, ox_bin(b, XE_OP_SUB, len, one), tp), tp);
    int idx = ox_bin(b, XE_OP_ADD, ox_bin(b, XE_OP_MUL, src, ox_scalar(b, XE_I64, n)), bp);
    int in[2] = {data, ox_reshape(b, idx, &rows, 1)};
    ox_at at = OX_I("axis", 0);
    int y = ox_op(b, XE_OP_GATHER, in, 2, &at, 1);
    int64_t back[XE_MAX_RANK];
    back[0] = t, back[1] = n;
    for (int d = 2; d < r; d++)
        back[d] = s->dims[d];
    y = ox_reshape(b, y, back, r);
    return done(b, ta == 0 ? y : ox_transpose(b, y, perm, r));
}
