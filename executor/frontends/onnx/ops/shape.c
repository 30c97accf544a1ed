/*
 * Builders of ONNX's shape ops: Reshape, Flatten, Squeeze, Unsqueeze,
 * Transpose, Concat, Split, Slice, Expand, Tile, Shape, Size, Constant,
 * ConstantOfShape, Range. Their shape parameters (an attribute in older
 * opsets, an input in newer ones) must be known at load time; values
 * computed from shapes are folded to constants as they are built.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

static xe_code done(ox_b *b, int y)
{
    ox_out(b, 0, y);
    return ox_status(b);
}

#define ONE_UNKNOWN "a reshape of a value with more than one unknown dim is not supported"

int ox_reshape_dims(ox_b *b, int x, const int64_t *dims, int rank, const char *too_many)
{
    int64_t d[XE_MAX_RANK];
    int wild = 0;
    for (int k = 0; k < rank; k++) {
        d[k] = dims[k] < 0 ? -1 : dims[k];
        wild += dims[k] < 0;
    }
    if (wild > 1) {
        ox_unsupported(b, "%s", too_many);
        return -1;
    }
    return ox_reshape(b, x, d, rank);
}

/* Axes from the attribute (before opset `since`) or from input k; -1 when absent. */
static int axes_of(ox_b *b, int since, int k, int64_t *axes)
{
    if (b->opset < since)
        return ox_ints(b, "axes", axes, XE_MAX_RANK);
    if (ox_in(b, k) < 0)
        return -1;
    return ox_const_ints(b, k, "axes", axes, XE_MAX_RANK);
}

xe_code ox_b_reshape(ox_b *b)
{
    int x = ox_in(b, 0);
    int64_t shape[XE_MAX_RANK];
    int n = ox_const_ints(b, 1, "shape", shape, XE_MAX_RANK);
    if (n < 0 || x < 0)
        return ox_status(b);
    const xe_shape *in = &ox_type(b, x)->shape;
    bool allowzero = ox_int(b, "allowzero", 0) != 0;
    for (int k = 0; k < n; k++) {
        if (shape[k] == 0 && !allowzero) {
            if (k >= in->rank)
                return ox_invalid(b, "shape[%d] = 0 copies a dim the input does not have", k);
            shape[k] = in->dims[k] < 0 ? XE_DIM_UNKNOWN : in->dims[k];
        } else if (shape[k] == -1) {
            shape[k] = XE_DIM_UNKNOWN;
        }
    }
    return done(b, ox_reshape_dims(b, x, shape, n, ONE_UNKNOWN));
}

xe_code ox_b_flatten(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x);
    int64_t axis = ox_int(b, "axis", 1);
    axis = axis < 0 ? axis + r : axis; /* in [-r, r]: r flattens everything into dim 0 */
    if (x < 0 || axis < 0 || axis > r)
        return x < 0 ? ox_status(b)
                     : ox_invalid(b, "axis %lld is out of range", (long long)ox_int(b, "axis", 1));
    const xe_shape *s = &ox_type(b, x)->shape;
    int64_t d[2] = {1, 1};
    for (int k = 0; k < s->rank; k++) {
        int64_t *p = &d[k >= axis];
        *p = (*p < 0 || s->dims[k] < 0) ? XE_DIM_UNKNOWN : *p * s->dims[k];
    }
    return done(b, ox_reshape_dims(b, x, d, 2, ONE_UNKNOWN));
}

xe_code ox_b_squeeze(ox_b *b)
{
    int x = ox_in(b, 0);
    int64_t axes[XE_MAX_RANK], out[XE_MAX_RANK];
    int n = axes_of(b, 13, 1, axes), r = ox_rank(b, x), m = 0;
    bool drop[XE_MAX_RANK] = {0};
    if (x < 0 || b->failed)
        return ox_status(b);
    const xe_shape *s = &ox_type(b, x)->shape;
    for (int k = 0; k < n; k++) {
        int a;
        if (!ox_axis(b, axes[k], r, &a))
            return ox_status(b);
        drop[a] = true;
    }
    for (int d = 0; d < r; d++) {
        if (n < 0 && s->dims[d] < 0)
            return ox_unsupported(
                b, "Squeeze without axes of a value with unknown dims is not supported");
        if (n < 0)
            drop[d] = s->dims[d] == 1;
        if (!drop[d])
            out[m++] = s->dims[d];
    }
    return done(b, ox_reshape_dims(b, x, out, m, ONE_UNKNOWN));
}

xe_code ox_b_unsqueeze(ox_b *b)
{
    int x = ox_in(b, 0);
    int64_t axes[XE_MAX_RANK], out[XE_MAX_RANK];
    int n = axes_of(b, 13, 1, axes), r = ox_rank(b, x);
    bool ins[XE_MAX_RANK] = {0};
    if (x < 0 || b->failed)
        return ox_status(b);
    if (n < 0 || r + n > XE_MAX_RANK)
        return n < 0 ? ox_invalid(b, "needs axes")
                     : ox_unsupported(b, "rank above 8 is not supported");
    for (int k = 0; k < n; k++) {
        int a;
        if (!ox_axis(b, axes[k], r + n, &a))
            return ox_status(b);
        ins[a] = true;
    }
    const xe_shape *s = &ox_type(b, x)->shape;
    for (int d = 0, j = 0; d < r + n; d++)
        out[d] = ins[d] ? 1 : s->dims[j++];
    return done(b, ox_reshape_dims(b, x, out, r + n, ONE_UNKNOWN));
}

xe_code ox_b_transpose(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x), perm[XE_MAX_RANK];
    int64_t p[XE_MAX_RANK];
    int n = ox_ints(b, "perm", p, XE_MAX_RANK);
    for (int d = 0; d < r; d++)
        perm[d] = n < 0 ? r - 1 - d : (int)p[d];
    if (n >= 0 && n != r)
        return ox_invalid(b, "perm has %d entries for rank %d", n, r);
    if (ox_transpose_to_matmul(b, x, perm, r)) /* a flag of its MatMul (rewrite.c) */
        return ox_status(b);
    return done(b, ox_transpose(b, x, perm, r));
}

xe_code ox_b_concat(ox_b *b)
{
    int in[OX_MAX_IO], n = 0, axis;
    for (int k = 0; k < b->n_in; k++)
        if (ox_in(b, k) >= 0)
            in[n++] = ox_in(b, k);
    if (!n || !ox_axis(b, ox_int(b, "axis", 0), ox_rank(b, in[0]), &axis))
        return n ? ox_status(b) : ox_invalid(b, "needs inputs");
    if (n == 1)
        return done(b, in[0]);
    ox_at a = OX_I("axis", axis);
    return done(b, ox_op(b, XE_OP_CONCAT, in, n, &a, 1));
}

/* x[.., lo:hi, ..] along axis. */
static int slice_axis(ox_b *b, int x, int axis, int64_t lo, int64_t hi)
{
    int64_t beg[XE_MAX_RANK], end[XE_MAX_RANK];
    for (int d = 0; d < ox_rank(b, x); d++) {
        beg[d] = d == axis ? lo : 0;
        end[d] = d == axis ? hi : INT64_MAX;
    }
    return ox_slice(b, x, beg, end);
}

xe_code ox_b_split(ox_b *b)
{
    int x = ox_in(b, 0), axis, n_out = ox_n_out(b);
    int64_t split[OX_MAX_IO];
    if (x < 0 || !ox_axis(b, ox_int(b, "axis", 0), ox_rank(b, x), &axis))
        return ox_status(b);
    int64_t dim = ox_type(b, x)->shape.dims[axis];
    int n = b->opset < 13      ? ox_ints(b, "split", split, OX_MAX_IO)
            : ox_in(b, 1) >= 0 ? ox_const_ints(b, 1, "split", split, OX_MAX_IO)
                               : -1;
    if (b->failed)
        return ox_status(b);
    if (n < 0) {
        if (dim < 0)
            return ox_unsupported(b, "an even Split of an unknown dim is not supported");
        int64_t parts = ox_int(b, "num_outputs", n_out);
        if (parts < 1 || parts != n_out)
            return ox_invalid(
                b,
                "num_outputs is %lld for a node of %d outputs (they must be equal, and at least 1)",
                (long long)parts, n_out);
        int64_t each = dim / parts + (dim % parts != 0); /* each * n <= dim: no overflow */
        for (n = 0; n < n_out; n++) {
            int64_t rest = dim - each * n;
            split[n] = rest >= each ? each : rest > 0 ? rest : 0;
        }
    }
    if (n != n_out)
        return ox_invalid(b, "split has %d parts for %d outputs", n, n_out);
    int64_t at = 0;
    for (int k = 0; k < n; k++) /* sizes, summed in 64 bits even when the dim is unknown */
        if (split[k] < 0 || __builtin_add_overflow(at, split[k], &at) || (dim >= 0 && at > dim))
            return ox_invalid(
                b, "split's parts must be sizes that add up to the dim %lld (part %d is %lld)",
                (long long)dim, k, (long long)split[k]);
    if (dim >= 0 && at != dim)
        return ox_invalid(b, "split's parts add up to %lld, not to the dim %lld", (long long)at,
                          (long long)dim);
    at = 0;
    for (int k = 0; k < n; k++) {
        ox_out(b, k, slice_axis(b, x, axis, at, at + split[k]));
        at += split[k];
    }
    return ox_status(b);
}

/* Slice's starts, ends, axes and steps: attributes before opset 10, inputs after. */
static int slice_params(ox_b *b, int64_t *st, int64_t *en, int64_t *ax, int64_t *sp)
{
    int n, ne, na = -1, ns = -1;
    if (b->opset < 10) {
        n = ox_ints(b, "starts", st, XE_MAX_RANK);
        ne = ox_ints(b, "ends", en, XE_MAX_RANK);
        na = ox_ints(b, "axes", ax, XE_MAX_RANK);
    } else {
        n = ox_const_ints(b, 1, "starts", st, XE_MAX_RANK);
        ne = ox_const_ints(b, 2, "ends", en, XE_MAX_RANK);
        if (ox_in(b, 3) >= 0)
            na = ox_const_ints(b, 3, "axes", ax, XE_MAX_RANK);
        if (ox_in(b, 4) >= 0)
            ns = ox_const_ints(b, 4, "steps", sp, XE_MAX_RANK);
    }
    if (b->failed)
        return -1;
    if (n < 0 || ne != n || (na >= 0 && na != n) || (ns >= 0 && ns != n)) {
        ox_invalid(b, "starts, ends, axes and steps must have the same length");
        return -1;
    }
    for (int k = 0; k < n; k++) {
        if (na < 0)
            ax[k] = k;
        if (ns < 0)
            sp[k] = 1;
        if (sp[k] == 0) {
            ox_invalid(b, "steps[%d] is 0", k);
            return -1;
        }
    }
    return n;
}

/* Positions of a Python slice [st:en:sp] of a dim (ONNX clamps the same way); the count. */
static int64_t stepped(int64_t st, int64_t en, int64_t sp, int64_t dim, int64_t *pos, int64_t cap)
{
    st = st < 0 ? st + dim : st;
    en = en < 0 ? en + dim : en;
    if (sp > 0) {
        st = st < 0 ? 0 : st > dim ? dim : st;
        en = en < 0 ? 0 : en > dim ? dim : en;
    } else {
        st = st < 0 ? -1 : st > dim - 1 ? dim - 1 : st;
        en = en < -1 ? -1 : en > dim - 1 ? dim - 1 : en;
    }
    int64_t n = 0;
    for (int64_t p = st; (sp > 0 ? p < en : p > en) && n <= cap; p += sp)
        pos[n < cap ? n : cap - 1] = p, n++;
    return n;
}

xe_code ox_b_slice(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x);
    int64_t st[XE_MAX_RANK], en[XE_MAX_RANK], ax[XE_MAX_RANK], sp[XE_MAX_RANK];
    int64_t beg[XE_MAX_RANK], end[XE_MAX_RANK];
    int n = slice_params(b, st, en, ax, sp);
    if (n < 0 || x < 0)
        return ox_status(b);
    for (int d = 0; d < r; d++) {
        beg[d] = 0;
        end[d] = INT64_MAX;
    }
    for (int k = 0; k < n; k++) {
        int a;
        if (!ox_axis(b, ax[k], r, &a))
            return ox_status(b);
        beg[a] = st[k];
        end[a] = en[k];
        if (sp[k] != 1) { /* a stepped axis picks its positions (known dim) */
            int64_t dim = ox_type(b, x)->shape.dims[a], pos[256], m;
            if (dim < 0 || (m = stepped(st[k], en[k], sp[k], dim, pos, 256)) > 256 || m < 1)
                return ox_unsupported(b,
                                      "Slice with steps needs a known dim and 1 to 256 positions");
            x = ox_take(b, x, a, pos, m);
            beg[a] = 0;
            end[a] = INT64_MAX;
        }
    }
    return done(b, ox_slice(b, x, beg, end));
}

xe_code ox_b_expand(ox_b *b)
{
    int x = ox_in(b, 0);
    int64_t shape[XE_MAX_RANK];
    int n = ox_const_ints(b, 1, "shape", shape, XE_MAX_RANK);
    if (n < 0 || x < 0)
        return ox_status(b);
    const xe_shape *s = &ox_type(b, x)->shape;
    int r = n > s->rank ? n : s->rank;
    int64_t out[XE_MAX_RANK];
    for (int d = 0; d < r; d++) {
        int64_t a = d - (r - s->rank) >= 0 ? s->dims[d - (r - s->rank)] : 1;
        int64_t c = d - (r - n) >= 0 ? shape[d - (r - n)] : 1;
        if (a < 0 && c == 1)
            return ox_unsupported(b, "Expand of an unknown dim is not supported");
        if (a >= 0 && a != 1 && c != 1 && a != c)
            return ox_invalid(b, "cannot expand dim %d of size %lld to %lld", d, (long long)a,
                              (long long)c);
        out[d] = c == 1 ? a : c;
    }
    ox_at at = OX_INTS("shape", out, r);
    return done(b, ox_op(b, XE_OP_BROADCAST_TO, &x, 1, &at, 1));
}

/* Tile: [d0,d1] -> reshape [1,d0,1,d1] -> broadcast [r0,d0,r1,d1] -> reshape [r0 d0, r1 d1]. */
xe_code ox_b_tile(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x);
    int64_t rep[XE_MAX_RANK], mid[2 * XE_MAX_RANK], big[2 * XE_MAX_RANK], out[XE_MAX_RANK];
    int n = ox_const_ints(b, 1, "repeats", rep, XE_MAX_RANK);
    if (n < 0 || x < 0)
        return ox_status(b);
    const xe_shape *s = &ox_type(b, x)->shape;
    if (n != r)
        return ox_invalid(b, "repeats has %d entries for rank %d", n, r);
    if (2 * r > XE_MAX_RANK || !xe_shape_is_known(s)) { /* the tile op */
        ox_at at = OX_INTS("repeats", rep, r);
        return done(b, ox_op(b, XE_OP_TILE, &x, 1, &at, 1));
    }
    for (int d = 0; d < r; d++) {
        mid[2 * d] = 1;
        big[2 * d] = rep[d];
        mid[2 * d + 1] = big[2 * d + 1] = s->dims[d];
        if (rep[d] < 0 || __builtin_mul_overflow(rep[d], s->dims[d], &out[d]))
            return ox_invalid(b, "repeats[%d] = %lld is negative or makes the output too large", d,
                              (long long)rep[d]);
    }
    ox_at at = OX_INTS("shape", big, 2 * r);
    int y = ox_reshape(b, x, mid, 2 * r);
    y = ox_op(b, XE_OP_BROADCAST_TO, &y, 1, &at, 1);
    return done(b, ox_reshape(b, y, out, r));
}

xe_code ox_b_shape(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x);
    if (x < 0)
        return ox_status(b);
    const xe_shape *s = &ox_type(b, x)->shape;
    int64_t lo = ox_int(b, "start", 0), hi = ox_int(b, "end", r), v[XE_MAX_RANK];
    lo = lo < 0 ? lo + r : lo;
    hi = hi < 0 ? hi + r : hi;
    lo = lo < 0 ? 0 : lo > r ? r : lo;
    hi = hi < lo ? lo : hi > r ? r : hi;
    for (int64_t d = lo; d < hi; d++) {
        if (s->dims[d] < 0)
            return ox_unsupported(
                b, "Shape of an unknown dim is not supported (it is folded at load time)");
        v[d - lo] = s->dims[d];
    }
    return done(b, ox_ints_const(b, v, (int)(hi - lo)));
}

xe_code ox_b_size(ox_b *b)
{
    int x = ox_in(b, 0);
    if (x < 0)
        return ox_status(b);
    int64_t n = xe_shape_numel(&ox_type(b, x)->shape);
    if (n < 0)
        return ox_unsupported(b, "Size of a value with unknown dims is not supported");
    return done(b, ox_scalar(b, XE_I64, (double)n));
}
