/*
 * What the control flow unrolled at import shares (Loop in ops/loop.c,
 * Scan in ops/scan.c, ConcatFromSequence's new axis in ops/sequence.c):
 * binding a body's inputs by name before it is built in place
 * (ox_build_subgraph), reading its outputs after, and stacking the values
 * of every iteration along an axis. A leaf below those files.
 */
#include <stdint.h>

#include "onnx_impl.h"

/* Body input or output v's name ("" when it has none). */
static const char *io_name(const Onnx__ValueInfoProto *v)
{
    return v->name ? v->name : "";
}

bool ox_body_bind(ox_b *b, const Onnx__GraphProto *body, size_t k, int node, const ox_seq *seq)
{
    const char *name = io_name(body->input[k]);
    if (!name[0])
        return ox_invalid(b, "body input %zu has no name", k), false;
    xe_code code =
        seq ? ox_value_set_seq(b->c, name, seq, &b->st) : ox_value_set(b->c, name, node, &b->st);
    if (code != XE_OK)
        b->failed = true;
    return code == XE_OK;
}

bool ox_body_output(ox_b *b, const Onnx__GraphProto *body, size_t k, ox_carried *out)
{
    const char *name = io_name(body->output[k]);
    const ox_value *v = name[0] ? ox_value_find(b->c, name) : NULL;
    if (!v)
        return ox_invalid(b, "body output %zu ('%s') is produced by no node", k, name), false;
    if (v->node < 0 && !v->seq)
        return ox_unsupported(b, "body output '%s' depends on nodes that do not import", name),
               false;
    ox_seq *copy = v->seq ? ox_seq_copy(v->seq) : NULL;
    if (v->seq && !copy)
        return xe_fail(&b->st, XE_ERR_NOMEM, "out of memory"), b->failed = true, false;
    *out = (ox_carried){v->node, copy};
    return true;
}

int ox_unit_dim(ox_b *b, int x, int axis)
{
    if (x < 0 || b->failed)
        return -1;
    const xe_shape *s = &ox_type(b, x)->shape;
    int64_t d[XE_MAX_RANK];
    if (s->rank + 1 > XE_MAX_RANK)
        return ox_unsupported(b, "stacking values of rank %d is not supported (rank above %d)",
                              s->rank, XE_MAX_RANK),
               -1;
    for (int k = 0, j = 0; k <= s->rank; k++)
        d[k] = k == axis ? 1 : s->dims[j++];
    return ox_reshape_dims(b, x, d, s->rank + 1,
                           "stacking values with more than one unknown dim is not supported");
}

int ox_stack(ox_b *b, int *x, int64_t n, int axis)
{
    if (n < 1 || n > INT32_MAX)
        return ox_invalid(b, "internal: stacking %lld values", (long long)n), -1;
    for (int64_t i = 0; i < n; i++)
        x[i] = ox_unit_dim(b, x[i], axis);
    ox_at at = OX_I("axis", axis);
    return n == 1 ? x[0] : ox_op(b, XE_OP_CONCAT, x, (int)n, &at, 1);
}
