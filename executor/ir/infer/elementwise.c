/*
 * Shape functions of the elementwise ops and the source ops (inputs,
 * constants, iota, random), plus unique and nonzero. Binary ops need operands of one
 * dtype and broadcast by numpy's rules; unknown dims propagate.
 */
#include <string.h>

#include "kernels.h"

static xe_code broadcast_types(const xe_type *in, int n, xe_shape *out, xe_status *st)
{
    xe_shape s = in[0].shape;
    for (int k = 1; k < n; k++) {
        xe_shape r;
        if (!xe_shape_broadcast(&s, &in[k].shape, &r)) {
            char a[128], b[128];
            return xe_fail(st, XE_ERR_GRAPH, "shapes %s and %s do not broadcast",
                           xe_shape_str(&s, a, sizeof a), xe_shape_str(&in[k].shape, b, sizeof b));
        }
        s = r;
    }
    *out = s;
    return XE_OK;
}

static xe_code same_dtype(const xe_type *a, const xe_type *b, xe_status *st)
{
    if (a->dtype == b->dtype)
        return XE_OK;
    return xe_fail(st, XE_ERR_GRAPH, "operands have different dtypes %s and %s (use cast)",
                   xe_dtype_name(a->dtype), xe_dtype_name(b->dtype));
}

/* A shape attribute: a list of non-negative dims. */
static xe_code shape_attr(const xe_node *n, const char *name, xe_shape *s, xe_status *st)
{
    const xe_attr *a = xe_node_attr(n, name);
    if (!a || a->kind != XE_ATTR_INTS)
        return xe_fail(st, XE_ERR_GRAPH, "needs %s=[...] (a list of dims)", name);
    if (a->n > XE_MAX_RANK)
        return xe_fail(st, XE_ERR_GRAPH, "%s has rank %d, above the maximum %d", name, a->n,
                       XE_MAX_RANK);
    s->rank = a->n;
    for (int k = 0; k < a->n; k++) {
        if (a->ints[k] < 0 || a->ints[k] > ((int64_t)1 << 40))
            return xe_fail(st, XE_ERR_GRAPH, "%s[%d]=%lld is not a valid dim", name, k,
                           (long long)a->ints[k]);
        s->dims[k] = a->ints[k];
    }
    return XE_OK;
}

/* dtype attribute with a default; float_only rejects ints and bool. */
static xe_code dtype_attr(const xe_node *n, const char *name, xe_dtype dflt, bool float_only,
                          xe_dtype *out, xe_status *st)
{
    const xe_attr *a = xe_node_attr(n, name);
    if (a && a->kind != XE_ATTR_DTYPE)
        return xe_fail(st, XE_ERR_GRAPH, "%s must be a dtype such as f32", name);
    *out = a ? a->dtype : dflt;
    if (float_only && !xe_dtype_is_float(*out))
        return xe_fail(st, XE_ERR_GRAPH, "%s=%s: only float dtypes are allowed", name,
                       xe_dtype_name(*out));
    return XE_OK;
}

xe_code xe_infer_source(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)in, (void)n_in;
    if (n->op == XE_OP_CONST) {
        if (!n->value)
            return xe_fail(st, XE_ERR_GRAPH, "const has no value");
        *out = (xe_type){n->value->dtype, n->value->shape};
        return XE_OK;
    }
    *out = n->type;
    return XE_OK;
}

xe_code xe_infer_iota(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)in, (void)n_in;
    if (shape_attr(n, "shape", &out->shape, st) != XE_OK ||
        dtype_attr(n, "dtype", XE_I32, false, &out->dtype, st) != XE_OK)
        return st->code;
    int64_t axis = xe_node_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += out->shape.rank;
    if (out->shape.rank > 0 && (axis < 0 || axis >= out->shape.rank))
        return xe_fail(st, XE_ERR_GRAPH, "axis=%lld out of range for rank %d",
                       (long long)xe_node_attr_int(n, "axis", 0), out->shape.rank);
    if (out->dtype == XE_BOOL)
        return xe_fail(st, XE_ERR_GRAPH, "iota of bool is not defined");
    return XE_OK;
}

xe_code xe_infer_binary(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    if (same_dtype(&in[0], &in[1], st) != XE_OK)
        return st->code;
    if (in[0].dtype == XE_BOOL && n->op != XE_OP_MAXIMUM && n->op != XE_OP_MINIMUM)
        return xe_fail(st, XE_ERR_GRAPH, "%s is not defined on bool (use logical_and/or)",
                       xe_op_row_of(n->op)->name);
    if ((xe_op_row_of(n->op)->flags & XE_OPF_INT_ONLY) && !xe_dtype_is_integer(in[0].dtype))
        return xe_fail(st, XE_ERR_GRAPH, "%s needs integer operands, got %s",
                       xe_op_row_of(n->op)->name, xe_dtype_name(in[0].dtype));
    out->dtype = in[0].dtype;
    return broadcast_types(in, n_in, &out->shape, st);
}

xe_code xe_infer_compare(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n;
    if (same_dtype(&in[0], &in[1], st) != XE_OK)
        return st->code;
    out->dtype = XE_BOOL;
    return broadcast_types(in, n_in, &out->shape, st);
}

xe_code xe_infer_logical(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    for (int k = 0; k < n_in; k++)
        if (in[k].dtype != XE_BOOL)
            return xe_fail(st, XE_ERR_GRAPH, "%s needs bool operands, got %s",
                           xe_op_row_of(n->op)->name, xe_dtype_name(in[k].dtype));
    out->dtype = XE_BOOL;
    return broadcast_types(in, n_in, &out->shape, st);
}

xe_code xe_infer_unary(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n_in;
    unsigned flags = xe_op_row_of(n->op)->flags;
    xe_dtype dt = in[0].dtype;
    if ((flags & XE_OPF_FLOAT_ONLY) && !xe_dtype_is_float(dt))
        return xe_fail(st, XE_ERR_GRAPH, "%s needs a float operand, got %s",
                       xe_op_row_of(n->op)->name, xe_dtype_name(dt));
    if ((flags & XE_OPF_INT_ONLY) && !xe_dtype_is_integer(dt))
        return xe_fail(st, XE_ERR_GRAPH, "%s needs an integer operand, got %s",
                       xe_op_row_of(n->op)->name, xe_dtype_name(dt));
    if ((flags & XE_OPF_BOOL_ONLY) && dt != XE_BOOL)
        return xe_fail(st, XE_ERR_GRAPH, "%s needs a bool operand, got %s",
                       xe_op_row_of(n->op)->name, xe_dtype_name(dt));
    if (!(flags & XE_OPF_BOOL_ONLY) && dt == XE_BOOL)
        return xe_fail(st, XE_ERR_GRAPH, "%s is not defined on bool", xe_op_row_of(n->op)->name);
    if (xe_op_check_attr_kinds(n, st) != XE_OK)
        return st->code;
    *out = in[0];
    return XE_OK;
}

xe_code xe_infer_select(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n;
    if (in[0].dtype != XE_BOOL)
        return xe_fail(st, XE_ERR_GRAPH, "select's condition must be bool, got %s",
                       xe_dtype_name(in[0].dtype));
    if (same_dtype(&in[1], &in[2], st) != XE_OK)
        return st->code;
    out->dtype = in[1].dtype;
    return broadcast_types(in, n_in, &out->shape, st);
}

xe_code xe_infer_cast(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n_in;
    const xe_attr *a = xe_node_attr(n, "to");
    if (!a || a->kind != XE_ATTR_DTYPE)
        return xe_fail(st, XE_ERR_GRAPH, "cast needs to=DTYPE");
    *out = (xe_type){a->dtype, in[0].shape};
    return XE_OK;
}

/* bitcast(x, to=DTYPE): x's bytes read as DTYPE, of the same width (ONNX BitCast). */
xe_code xe_infer_bitcast(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n_in;
    const xe_attr *a = xe_node_attr(n, "to");
    if (!a || a->kind != XE_ATTR_DTYPE)
        return xe_fail(st, XE_ERR_GRAPH, "bitcast needs to=DTYPE");
    if (xe_dtype_size(a->dtype) != xe_dtype_size(in[0].dtype))
        return xe_fail(st, XE_ERR_GRAPH,
                       "bitcast from %s to %s: the widths differ (%zu and %zu bytes)",
                       xe_dtype_name(in[0].dtype), xe_dtype_name(a->dtype),
                       xe_dtype_size(in[0].dtype), xe_dtype_size(a->dtype));
    *out = (xe_type){a->dtype, in[0].shape};
    return XE_OK;
}

/* det(x): the determinants of x's innermost square matrices, [*, M, M] -> [*] (ONNX Det). */
xe_code xe_infer_det(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n, (void)n_in;
    const xe_shape *s = &in[0].shape;
    if (s->rank < 2)
        return xe_fail(st, XE_ERR_GRAPH, "det needs matrices (rank 2 or more), got rank %d",
                       s->rank);
    int64_t m = s->dims[s->rank - 1], k = s->dims[s->rank - 2];
    if (m >= 0 && k >= 0 && m != k)
        return xe_fail(st, XE_ERR_GRAPH, "det needs square matrices, got %lld x %lld", (long long)k,
                       (long long)m);
    *out = (xe_type){in[0].dtype, {.rank = s->rank - 2}};
    for (int d = 0; d < s->rank - 2; d++)
        out->shape.dims[d] = s->dims[d];
    return XE_OK;
}

xe_code xe_infer_random(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)in, (void)n_in;
    if (shape_attr(n, "shape", &out->shape, st) != XE_OK ||
        dtype_attr(n, "dtype", XE_F32, true, &out->dtype, st) != XE_OK)
        return st->code;
    const xe_attr *seed = xe_node_attr(n, "seed");
    if (seed && seed->kind != XE_ATTR_INT)
        return xe_fail(st, XE_ERR_GRAPH, "seed must be an integer");
    return XE_OK;
}

xe_code xe_infer_nonzero(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n, (void)n_in, (void)st;
    out->dtype = XE_I64; /* [rank, count]: the positions of the nonzero elements (ONNX NonZero) */
    out->shape.rank = 2;
    out->shape.dims[0] = in[0].shape.rank;
    out->shape.dims[1] = XE_DIM_UNKNOWN;
    return XE_OK;
}

xe_code xe_infer_unique(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n, (void)n_in, (void)st;
    out->dtype = in[0].dtype; /* of any rank, flattened (numpy.unique) */
    out->shape.rank = 1;
    out->shape.dims[0] = XE_DIM_UNKNOWN;
    return XE_OK;
}
