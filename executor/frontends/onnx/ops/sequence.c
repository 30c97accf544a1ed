/*
 * Sequences at import: a sequence value is the list of the nodes that hold
 * its tensors (ox_seq), so the executor never sees one. Every position
 * must be known at load (a constant, or folded); a sequence whose length
 * depends on the data cannot be a list and is refused.
 *   SequenceEmpty: an empty list of dtype `dtype` (default f32).
 *   SequenceConstruct: the inputs' nodes.
 *   SequenceInsert: a copy with the tensor at `position` (default: the end).
 *   SequenceAt: the node at `position`; SequenceLength: a constant.
 *   ConcatFromSequence: one concat of the nodes (new_axis=1: each first
 *     reshaped with a dim of 1 at the axis); an empty sequence is refused
 *     (its elements' shape is unknown).
 *   SplitToSequence: slices along `axis` (known length): `split` a scalar
 *     (chunks of that size, the last one what is left), 1-D (the lengths),
 *     or absent (chunks of 1, the axis dropped when keepdims is 0).
 */
#include <stdint.h>
#include <stdlib.h>

#include "onnx_impl.h"

static xe_code nomem(ox_b *b)
{
    xe_fail(&b->st, XE_ERR_NOMEM, "out of memory");
    b->failed = true;
    return b->st.code;
}

/* Constant position input k of a sequence of n, negative from the end, into [0, n + extra). */
static bool position(ox_b *b, int k, int64_t n, int64_t extra, int64_t *pos)
{
    const xe_tensor *t = ox_need_const(b, k, "position");
    if (!t)
        return false;
    if (xe_tensor_numel(t) != 1)
        return ox_invalid(b, "position must be one value"), false;
    int64_t p = (int64_t)xe_load_f64(t->data, t->dtype, 0);
    if (p < 0)
        p += n;
    if (p < 0 || p >= n + extra)
        return ox_invalid(b, "position %lld is out of range for a sequence of %lld",
                          (long long)xe_load_f64(t->data, t->dtype, 0), (long long)n),
               false;
    *pos = p;
    return true;
}

xe_code ox_b_sequence_empty(ox_b *b)
{
    int64_t onnx_dt = ox_int(b, "dtype", 1 /* FLOAT */);
    ox_seq s = {.n = 0};
    if (!ox_dtype((int32_t)onnx_dt, &s.dt))
        return ox_unsupported(b, "dtype %s is not supported", ox_dtype_name((int32_t)onnx_dt));
    return ox_out_seq(b, 0, &s);
}

xe_code ox_b_sequence_construct(ox_b *b)
{
    ox_seq s = {.n = b->n_in, .nodes = b->in};
    for (int k = 0; k < b->n_in; k++) {
        if (b->in[k] < 0)
            return ox_invalid(b, "input %d is not a tensor", k);
        if (ox_type(b, b->in[k])->dtype != ox_type(b, b->in[0])->dtype)
            return ox_invalid(b, "input %d is %s, input 0 %s", k,
                              xe_dtype_name(ox_type(b, b->in[k])->dtype),
                              xe_dtype_name(ox_type(b, b->in[0])->dtype));
    }
    if (!b->n_in)
        return ox_invalid(b, "SequenceConstruct needs at least one input");
    s.dt = ox_type(b, b->in[0])->dtype;
    return ox_out_seq(b, 0, &s);
}

xe_code ox_b_sequence_insert(ox_b *b)
{
    const ox_seq *s = ox_in_seq(b, 0);
    int x = ox_in(b, 1);
    int64_t pos = s ? s->n : 0;
    if (!s || (b->n_in > 2 && ox_in(b, 2) >= 0 && !position(b, 2, s->n, 1, &pos)))
        return ox_status(b);
    if (x < 0)
        return ox_invalid(b, "the tensor to insert is missing");
    if (ox_type(b, x)->dtype != s->dt)
        return ox_invalid(b, "inserts %s into a sequence of %s",
                          xe_dtype_name(ox_type(b, x)->dtype), xe_dtype_name(s->dt));
    int *nodes = malloc((size_t)(s->n + 1) * sizeof *nodes);
    if (!nodes)
        return nomem(b);
    for (int64_t i = 0, j = 0; i <= s->n; i++)
        nodes[i] = i == pos ? x : s->nodes[j++];
    ox_seq r = {.dt = s->dt, .n = s->n + 1, .nodes = nodes};
    ox_out_seq(b, 0, &r);
    free(nodes);
    return ox_status(b);
}

xe_code ox_b_sequence_at(ox_b *b)
{
    const ox_seq *s = ox_in_seq(b, 0);
    int64_t pos;
    if (!s || !position(b, 1, s->n, 0, &pos))
        return ox_status(b);
    ox_out(b, 0, s->nodes[pos]);
    return ox_status(b);
}

xe_code ox_b_sequence_length(ox_b *b)
{
    const ox_seq *s = ox_in_seq(b, 0);
    if (!s)
        return ox_status(b);
    ox_out(b, 0, ox_scalar(b, XE_I64, (double)s->n));
    return ox_status(b);
}

xe_code ox_b_concat_from_sequence(ox_b *b)
{
    const ox_seq *s = ox_in_seq(b, 0);
    if (!s)
        return ox_status(b);
    if (!s->n)
        return ox_unsupported(b, "an empty sequence is not supported (its elements' shape is "
                                 "unknown at load)");
    bool new_axis = ox_int(b, "new_axis", 0) != 0;
    int rank = ox_rank(b, s->nodes[0]) + (new_axis ? 1 : 0), axis;
    if (!ox_axis(b, ox_int(b, "axis", 0), rank, &axis))
        return ox_status(b);
    int *in = malloc((size_t)s->n * sizeof *in);
    if (!in)
        return nomem(b);
    for (int k = 0; k < s->n; k++)
        in[k] = s->nodes[k];
    ox_at at = OX_I("axis", axis);
    int y = new_axis    ? ox_stack(b, in, s->n, axis)
            : s->n == 1 ? in[0]
                        : ox_op(b, XE_OP_CONCAT, in, s->n, &at, 1);
    free(in);
    ox_out(b, 0, y);
    return ox_status(b);
}

/* SplitToSequence's part lengths along an axis of length dim into len (cap >= 1 entries): their
   count, -1 (b failed) when split does not fit. */
static int64_t part_lengths(ox_b *b, int64_t dim, int64_t *len, int64_t cap)
{
    int split = ox_in(b, 1);
    int n = split >= 0 ? ox_const_ints(b, 1, "split", len, (int)cap) : 1;
    if (n < 0)
        return -1;
    if (split >= 0 && ox_rank(b, split) > 1)
        return ox_invalid(b, "split must be a scalar or 1-D"), -1;
    bool scalar = split < 0 || ox_rank(b, split) == 0;
    int64_t chunk = split < 0 ? 1 : len[0];
    if (scalar && chunk <= 0)
        return ox_invalid(b, "split is %lld: it must be positive", (long long)chunk), -1;
    int64_t parts = scalar ? (dim + chunk - 1) / chunk : n, sum = 0;
    for (int64_t k = 0; k < parts; k++) {
        if (scalar) /* chunks of that size, the last one what is left */
            len[k] = dim - sum < chunk ? dim - sum : chunk;
        if (len[k] <= 0)
            return ox_invalid(b, "split[%lld] is %lld: it must be positive", (long long)k,
                              (long long)len[k]),
                   -1;
        sum += len[k];
    }
    if (sum != dim)
        return ox_invalid(b, "split's lengths add up to %lld, the axis is %lld long",
                          (long long)sum, (long long)dim),
               -1;
    return parts;
}

/* The part [at, at + len) of x along axis, the axis dropped when squeeze. */
static int part(ox_b *b, int x, int axis, int64_t at, int64_t len, bool squeeze)
{
    const xe_shape *s = &ox_type(b, x)->shape;
    int64_t beg[XE_MAX_RANK], end[XE_MAX_RANK], dims[XE_MAX_RANK];
    for (int d = 0, r = 0; d < s->rank; d++) {
        beg[d] = d == axis ? at : 0;
        end[d] = d == axis ? at + len : INT64_MAX;
        if (d != axis || !squeeze)
            dims[r++] = s->dims[d];
    }
    int y = ox_slice(b, x, beg, end);
    return squeeze ? ox_reshape_dims(b, y, dims, s->rank - 1,
                                     "a part with more than one unknown dim is not supported")
                   : y;
}

xe_code ox_b_split_to_sequence(ox_b *b)
{
    int x = ox_in(b, 0), axis;
    if (x < 0 || !ox_axis(b, ox_int(b, "axis", 0), ox_rank(b, x), &axis))
        return ox_status(b);
    int64_t dim = ox_type(b, x)->shape.dims[axis];
    if (dim < 0)
        return ox_unsupported(b,
                              "the split axis %d has a length unknown at load (a sequence's "
                              "length must be known at import)",
                              axis);
    int64_t *len = malloc((size_t)(dim + 1) * sizeof *len);
    int *nodes = malloc((size_t)(dim + 1) * sizeof *nodes);
    int64_t n = len && nodes ? part_lengths(b, dim, len, dim + 1) : -1;
    if (!len || !nodes)
        nomem(b);
    bool squeeze = ox_in(b, 1) < 0 && !ox_int(b, "keepdims", 1);
    for (int64_t k = 0, at = 0; k < n && !b->failed; at += len[k++])
        nodes[k] = part(b, x, axis, at, len[k], squeeze);
    if (n >= 0 && !b->failed)
        ox_out_seq(b, 0, &(ox_seq){.dt = ox_type(b, x)->dtype, .n = (int)n, .nodes = nodes});
    free(len);
    free(nodes);
    return ox_status(b);
}
