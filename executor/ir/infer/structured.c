/*
 * Shape functions of reductions, argmax, shape ops, matmul and softmax.
 * Each validates its attributes against the operand's rank and computes
 * the output shape; unknown dims pass through where the rule allows.
 */
#include <stdio.h>
#include <string.h>

#include "kernels.h"

/* Normalises axis against rank (negative counts from the end). */
static xe_code norm_axis(int64_t axis, int rank, int *out, xe_status *st)
{
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        return xe_fail(st, XE_ERR_GRAPH, "axis %lld out of range for rank %d", (long long)axis,
                       rank);
    *out = (int)a;
    return XE_OK;
}

static const xe_attr *ints_attr(const xe_node *n, const char *name, bool required, xe_status *st)
{
    const xe_attr *a = xe_node_attr(n, name);
    if (a && a->kind != XE_ATTR_INTS) {
        xe_fail(st, XE_ERR_GRAPH, "%s must be a list of integers", name);
        return NULL;
    }
    if (!a && required)
        xe_fail(st, XE_ERR_GRAPH, "needs %s=[...]", name);
    return a;
}

/* Reduced-axes mask from `axes` (default: all). */
static xe_code reduce_mask(const xe_node *n, int rank, bool *mask, xe_status *st)
{
    xe_status_clear(st);
    const xe_attr *a = ints_attr(n, "axes", false, st);
    if (st->code != XE_OK)
        return st->code;
    memset(mask, 0, (size_t)XE_MAX_RANK * sizeof *mask);
    if (!a) {
        for (int d = 0; d < rank; d++)
            mask[d] = true;
        return XE_OK;
    }
    for (int k = 0; k < a->n; k++) {
        int ax = 0;
        if (norm_axis(a->ints[k], rank, &ax, st) != XE_OK)
            return st->code;
        if (mask[ax])
            return xe_fail(st, XE_ERR_GRAPH, "axis %lld listed twice", (long long)a->ints[k]);
        mask[ax] = true;
    }
    return XE_OK;
}

static xe_shape reduced_shape(const xe_shape *in, const bool *mask, bool keepdims)
{
    xe_shape s = {0};
    for (int d = 0; d < in->rank; d++) {
        if (!mask[d])
            s.dims[s.rank++] = in->dims[d];
        else if (keepdims)
            s.dims[s.rank++] = 1;
    }
    return s;
}

xe_code xe_infer_reduce(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n_in;
    bool mask[XE_MAX_RANK];
    if (in[0].dtype == XE_BOOL)
        return xe_fail(st, XE_ERR_GRAPH, "%s is not defined on bool (cast first)",
                       xe_op_row_of(n->op)->name);
    if (reduce_mask(n, in[0].shape.rank, mask, st) != XE_OK)
        return st->code;
    *out = (xe_type){in[0].dtype,
                     reduced_shape(&in[0].shape, mask, xe_node_attr_bool(n, "keepdims", false))};
    return XE_OK;
}

xe_code xe_infer_argmax(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n_in;
    bool mask[XE_MAX_RANK] = {0};
    const xe_attr *a = xe_node_attr(n, "axis");
    int rank = in[0].shape.rank;
    if (a) {
        int ax = 0;
        if (a->kind != XE_ATTR_INT)
            return xe_fail(st, XE_ERR_GRAPH, "axis must be an integer");
        if (norm_axis(a->i, rank, &ax, st) != XE_OK)
            return st->code;
        mask[ax] = true;
    } else {
        for (int d = 0; d < rank; d++)
            mask[d] = true;
    }
    *out = (xe_type){XE_I64,
                     reduced_shape(&in[0].shape, mask, xe_node_attr_bool(n, "keepdims", false))};
    return XE_OK;
}

/* Prints an ints attribute as "[4,-1,2]" into buf. */
static char *ints_str(const xe_attr *a, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int k = 0; k < a->n && used < len; k++)
        used +=
            (size_t)snprintf(buf + used, len - used, "%s%lld", k ? "," : "", (long long)a->ints[k]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
    return buf;
}

static xe_code reshape_mismatch(const xe_type *in, const xe_attr *a, xe_status *st)
{
    char t[160], s[160];
    return xe_fail(st, XE_ERR_GRAPH, "cannot reshape %s (%lld elements) into %s",
                   xe_type_str(in, t, sizeof t), (long long)xe_shape_numel(&in->shape),
                   ints_str(a, s, sizeof s));
}

/*
 * The optional copy=[...] of reshape and broadcast_to: per result dim, -1
 * (the shape attribute's value) or the operand dim it takes, known or not.
 * Graphs built per input size (specialise.c) write their size-dependent
 * dims this way, so that one graph serves every size. given[k] says
 * whether the shape attribute gives result dim k.
 */
static xe_code copied_dims(const xe_node *n, const xe_shape *in, int rank, xe_shape *s, bool *given,
                           xe_status *st)
{
    const xe_attr *c = ints_attr(n, "copy", false, st);
    for (int k = 0; k < rank; k++)
        given[k] = true;
    if (!c)
        return st->code;
    if (c->n != rank)
        return xe_fail(st, XE_ERR_GRAPH, "copy needs %d entries (one per result dim), got %d", rank,
                       c->n);
    for (int k = 0; k < rank; k++) {
        if (c->ints[k] == -1)
            continue;
        if (c->ints[k] < 0 || c->ints[k] >= in->rank)
            return xe_fail(st, XE_ERR_GRAPH, "copy[%d]=%lld is not an operand dim", k,
                           (long long)c->ints[k]);
        s->dims[k] = in->dims[c->ints[k]];
        given[k] = false;
    }
    return XE_OK;
}

xe_code xe_infer_reshape(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n_in;
    xe_status_clear(st);
    const xe_attr *a = ints_attr(n, "shape", true, st);
    if (!a)
        return st->code;
    if (a->n > XE_MAX_RANK)
        return xe_fail(st, XE_ERR_GRAPH, "shape has rank %d, above %d", a->n, XE_MAX_RANK);
    int wild = -1;
    int64_t known = 1;
    xe_shape s = {.rank = a->n};
    bool given[XE_MAX_RANK];
    if (copied_dims(n, &in[0].shape, a->n, &s, given, st) != XE_OK)
        return st->code;
    bool unknown = false; /* a copied dim is unknown: so is the element count */
    for (int k = 0; k < a->n; k++) {
        if (!given[k] && s.dims[k] < 0) {
            unknown = true;
            continue;
        }
        if (!given[k]) {
            if (__builtin_mul_overflow(known, s.dims[k], &known))
                return xe_fail(st, XE_ERR_GRAPH, "shape has more than 2^63 elements");
            continue;
        }
        s.dims[k] = a->ints[k];
        if (a->ints[k] == -1) {
            if (wild >= 0)
                return xe_fail(st, XE_ERR_GRAPH, "shape has more than one -1");
            wild = k;
        } else if (a->ints[k] < 0) {
            return xe_fail(st, XE_ERR_GRAPH, "shape[%d]=%lld is negative", k,
                           (long long)a->ints[k]);
        } else if (__builtin_mul_overflow(known, a->ints[k], &known)) {
            return xe_fail(st, XE_ERR_GRAPH, "shape has more than 2^63 elements");
        }
    }
    int64_t total = unknown ? -1 : xe_shape_numel(&in[0].shape);
    if (total < 0) { /* unknown input dims: only the -1 stays unknown */
        if (wild >= 0)
            s.dims[wild] = XE_DIM_UNKNOWN;
    } else if (wild >= 0) {
        if (known == 0 || total % known != 0)
            return reshape_mismatch(&in[0], a, st);
        s.dims[wild] = total / known;
    } else if (known != total) {
        return reshape_mismatch(&in[0], a, st);
    }
    *out = (xe_type){in[0].dtype, s};
    return XE_OK;
}

/* perm attribute, defaulting to reversed axes; validated as a permutation. */
xe_code xe_transpose_perm(const xe_node *n, int rank, int *perm, xe_status *st)
{
    xe_status_clear(st);
    const xe_attr *a = ints_attr(n, "perm", false, st);
    if (st->code != XE_OK)
        return st->code;
    if (!a) {
        for (int d = 0; d < rank; d++)
            perm[d] = rank - 1 - d;
        return XE_OK;
    }
    if (a->n != rank)
        return xe_fail(st, XE_ERR_GRAPH, "perm has %d entries for rank %d", a->n, rank);
    bool seen[XE_MAX_RANK] = {0};
    for (int d = 0; d < rank; d++) {
        int ax = 0;
        if (norm_axis(a->ints[d], rank, &ax, st) != XE_OK)
            return st->code;
        if (seen[ax])
            return xe_fail(st, XE_ERR_GRAPH, "perm is not a permutation (%d repeats)", ax);
        seen[ax] = true;
        perm[d] = ax;
    }
    return XE_OK;
}

xe_code xe_infer_transpose(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                           xe_status *st)
{
    (void)n_in;
    int perm[XE_MAX_RANK];
    if (xe_transpose_perm(n, in[0].shape.rank, perm, st) != XE_OK)
        return st->code;
    out->dtype = in[0].dtype;
    out->shape.rank = in[0].shape.rank;
    for (int d = 0; d < in[0].shape.rank; d++)
        out->shape.dims[d] = in[0].shape.dims[perm[d]];
    return XE_OK;
}

xe_code xe_infer_broadcast_to(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                              xe_status *st)
{
    (void)n_in;
    xe_status_clear(st);
    const xe_attr *a = ints_attr(n, "shape", true, st);
    if (!a)
        return st->code;
    if (a->n > XE_MAX_RANK || a->n < in[0].shape.rank)
        return xe_fail(st, XE_ERR_GRAPH, "cannot broadcast rank %d to rank %d", in[0].shape.rank,
                       a->n);
    xe_shape s = {.rank = a->n};
    bool given[XE_MAX_RANK];
    if (copied_dims(n, &in[0].shape, a->n, &s, given, st) != XE_OK)
        return st->code;
    for (int k = 0; k < a->n; k++) {
        if (given[k] && a->ints[k] < 0)
            return xe_fail(st, XE_ERR_GRAPH, "shape[%d]=%lld is negative", k,
                           (long long)a->ints[k]);
        if (given[k])
            s.dims[k] = a->ints[k];
    }
    for (int d = 0; d < in[0].shape.rank; d++) {
        int64_t from = in[0].shape.dims[d], to = s.dims[d + a->n - in[0].shape.rank];
        if (from != to && from != 1 && from != XE_DIM_UNKNOWN) {
            char a1[128], a2[128];
            return xe_fail(st, XE_ERR_GRAPH, "cannot broadcast %s to %s",
                           xe_shape_str(&in[0].shape, a1, sizeof a1),
                           xe_shape_str(&s, a2, sizeof a2));
        }
    }
    *out = (xe_type){in[0].dtype, s};
    return XE_OK;
}

xe_code xe_infer_concat(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    int rank = in[0].shape.rank, ax = 0;
    if (rank == 0)
        return xe_fail(st, XE_ERR_GRAPH, "cannot concat scalars");
    if (norm_axis(xe_node_attr_int(n, "axis", 0), rank, &ax, st) != XE_OK)
        return st->code;
    xe_shape s = in[0].shape;
    for (int k = 1; k < n_in; k++) {
        if (in[k].dtype != in[0].dtype)
            return xe_fail(st, XE_ERR_GRAPH, "input %d is %s, input 0 is %s", k,
                           xe_dtype_name(in[k].dtype), xe_dtype_name(in[0].dtype));
        if (in[k].shape.rank != rank)
            return xe_fail(st, XE_ERR_GRAPH, "input %d has rank %d, input 0 has rank %d", k,
                           in[k].shape.rank, rank);
        for (int d = 0; d < rank; d++) {
            int64_t a = s.dims[d], b = in[k].shape.dims[d];
            if (d == ax)
                s.dims[d] = (a < 0 || b < 0) ? XE_DIM_UNKNOWN : a + b;
            else if (a >= 0 && b >= 0 && a != b)
                return xe_fail(st, XE_ERR_GRAPH, "input %d has dim %d = %lld, input 0 has %lld", k,
                               d, (long long)b, (long long)a);
            else if (a < 0)
                s.dims[d] = b;
        }
    }
    *out = (xe_type){in[0].dtype, s};
    return XE_OK;
}

/* Python slice bounds for one dim of size n: clamped [b, e), empty if e <= b. */
void xe_slice_bounds(int64_t begin, int64_t end, int64_t n, int64_t *b, int64_t *e)
{
    if (begin < 0)
        begin += n;
    if (end < 0)
        end += n;
    *b = begin < 0 ? 0 : begin > n ? n : begin;
    *e = end < *b ? *b : end > n ? n : end;
}

xe_code xe_infer_slice(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n_in;
    xe_status_clear(st);
    const xe_attr *b = ints_attr(n, "begin", true, st);
    const xe_attr *e = b ? ints_attr(n, "end", true, st) : NULL;
    if (!b || !e)
        return st->code;
    int rank = in[0].shape.rank;
    if (b->n != rank || e->n != rank)
        return xe_fail(st, XE_ERR_GRAPH,
                       "begin and end need %d entries (one per dim), got %d and %d", rank, b->n,
                       e->n);
    xe_shape s = {.rank = rank};
    for (int d = 0; d < rank; d++) {
        int64_t dim = in[0].shape.dims[d], lo, hi;
        if (dim < 0) {
            s.dims[d] = XE_DIM_UNKNOWN;
            continue;
        }
        xe_slice_bounds(b->ints[d], e->ints[d], dim, &lo, &hi);
        s.dims[d] = hi - lo;
    }
    *out = (xe_type){in[0].dtype, s};
    return XE_OK;
}

/* matmul's view of an operand: batch dims, rows, cols after promotion and transpose. */
xe_code xe_infer_matmul(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n_in;
    bool int8 = (in[0].dtype == XE_U8 || in[0].dtype == XE_I8) &&
                (in[1].dtype == XE_U8 || in[1].dtype == XE_I8);
    if (in[0].dtype != in[1].dtype && !int8)
        return xe_fail(st, XE_ERR_GRAPH, "operands have different dtypes %s and %s (use cast)",
                       xe_dtype_name(in[0].dtype), xe_dtype_name(in[1].dtype));
    if (in[0].dtype == XE_BOOL)
        return xe_fail(st, XE_ERR_GRAPH, "matmul is not defined on bool");
    xe_shape a = in[0].shape, b = in[1].shape;
    if (a.rank == 0 || b.rank == 0)
        return xe_fail(st, XE_ERR_GRAPH, "matmul needs operands of rank >= 1");
    bool ta = xe_node_attr_bool(n, "transpose_a", false),
         tb = xe_node_attr_bool(n, "transpose_b", false);
    bool a_vec = a.rank == 1, b_vec = b.rank == 1;
    if (a_vec) /* [k] → [1,k] */
        a = (xe_shape){.rank = 2, .dims = {1, a.dims[0]}};
    if (b_vec) /* [k] → [k,1] */
        b = (xe_shape){.rank = 2, .dims = {b.dims[0], 1}};
    int64_t m = a.dims[a.rank - (ta && !a_vec ? 1 : 2)],
            ka = a.dims[a.rank - (ta && !a_vec ? 2 : 1)];
    int64_t kb = b.dims[b.rank - (tb && !b_vec ? 1 : 2)],
            nn = b.dims[b.rank - (tb && !b_vec ? 2 : 1)];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return xe_fail(st, XE_ERR_GRAPH, "contracted dims differ: %lld and %lld", (long long)ka,
                       (long long)kb);
    xe_shape ba = {.rank = a.rank - 2}, bb = {.rank = b.rank - 2}, batch;
    memcpy(ba.dims, a.dims, sizeof(int64_t) * (size_t)ba.rank);
    memcpy(bb.dims, b.dims, sizeof(int64_t) * (size_t)bb.rank);
    if (!xe_shape_broadcast(&ba, &bb, &batch))
        return xe_fail(st, XE_ERR_GRAPH, "batch dims do not broadcast");
    xe_shape s = batch;
    if (!a_vec)
        s.dims[s.rank++] = m;
    if (!b_vec)
        s.dims[s.rank++] = nn;
    *out = (xe_type){int8 ? XE_I32 : in[0].dtype, s}; /* 8-bit operands: their exact i32 product */
    return XE_OK;
}

xe_code xe_infer_softmax(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n_in;
    int ax = 0;
    if (!xe_dtype_is_float(in[0].dtype))
        return xe_fail(st, XE_ERR_GRAPH, "softmax needs a float operand, got %s",
                       xe_dtype_name(in[0].dtype));
    if (in[0].shape.rank == 0)
        return xe_fail(st, XE_ERR_GRAPH, "softmax needs rank >= 1");
    if (norm_axis(xe_node_attr_int(n, "axis", -1), in[0].shape.rank, &ax, st) != XE_OK)
        return st->code;
    *out = in[0];
    return XE_OK;
}
