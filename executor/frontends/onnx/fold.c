/*
 * Load-time folding: a node whose inputs are all constants becomes a
 * constant, computed once at import by the op's own CPU kernel (so a folded
 * value is exactly what running it would give). This is what turns ONNX
 * shape arithmetic (Shape, Gather on shapes, Concat, Cast, Range, ...) into
 * the constants that Reshape, Expand, Slice and friends need, and it takes
 * weight transposes and casts out of every run. Stateful and data-dependent
 * ops are never folded, nor results above OX_FOLD_MAX elements. Larger
 * folds and the constants builders make at load (above OX_FOLD_SMALL
 * elements) also share a budget per import, in elements twice the bytes of
 * the model's weights (as stored, not as declared) plus OX_FOLD_MAX: a
 * weight transpose always fits, but a 1 KB model cannot
 * make the importer fold thirty 16M-element Expands and Pads (18 s under
 * the fuzzer, 2.8 s now; a bigger model, hours). What does not fit is
 * computed at run time, as a result above OX_FOLD_MAX is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

/* The bytes of data tensor t holds (raw, typed, or the length of its external data), not what its
   dims declare: a dim of 2^62 over 32 bytes must not buy a budget. At most 2^50. */
static int64_t stored_bytes(const Onnx__TensorProto *t)
{
    uint64_t n = (uint64_t)t->raw_data.len + 4 * (uint64_t)(t->n_float_data + t->n_int32_data) +
                 8 * (uint64_t)(t->n_int64_data + t->n_double_data + t->n_uint64_data);
    for (size_t k = 0; k < t->n_external_data; k++) {
        const Onnx__StringStringEntryProto *e = t->external_data[k];
        if (e->key && e->value && !strcmp(e->key, "length") &&
            strspn(e->value, "0123456789") == strlen(e->value))
            n += strlen(e->value) > 15 ? (uint64_t)1 << 50 : strtoull(e->value, NULL, 10);
    }
    return n > (uint64_t)1 << 50 ? (int64_t)1 << 50 : (int64_t)n;
}

void ox_fold_budget(ox_ctx *c)
{
    const Onnx__GraphProto *g = c->model ? c->model->graph : NULL;
    int64_t bytes = 0;
    for (size_t k = 0; g && k < g->n_initializer && bytes < (int64_t)1 << 50; k++)
        bytes += stored_bytes(g->initializer[k]);
    c->fold_left = (int64_t)OX_FOLD_MAX + 2 * bytes;
}

bool ox_fold_charge(ox_ctx *c, int64_t numel)
{
    if (numel <= OX_FOLD_SMALL)
        return true;
    if (numel > c->fold_left)
        return false;
    c->fold_left -= numel;
    return true;
}

static bool foldable(const xe_graph *g, const xe_node *n)
{
    const xe_op_def *d = xe_op_get(n->op);
    if (!d || n->op == XE_OP_CONST || n->op == XE_OP_INPUT || n->op == XE_OP_GET || n->body ||
        !xe_op_kernel(d, XE_DEV_CPU) ||
        (d->flags & (XE_OPF_STATEFUL | XE_OPF_DATA_DEPENDENT_SHAPE | XE_OPF_COLLECTIVE)))
        return false;
    int64_t numel = xe_shape_numel(&n->type.shape);
    if (numel < 0 || numel > OX_FOLD_MAX)
        return false;
    for (int k = 0; k < n->n_inputs; k++)
        if (g->nodes[n->inputs[k]]->op != XE_OP_CONST)
            return false;
    return true;
}

/* Node n becomes const(value): its inputs and attributes go. */
static void become_const(xe_node *n, xe_tensor *value)
{
    free(n->inputs);
    n->inputs = NULL;
    n->n_inputs = 0;
    while (n->n_attrs > 0) {
        char name[256];
        snprintf(name, sizeof name, "%s", n->attrs[n->n_attrs - 1].name);
        xe_node_remove_attr(n, name);
    }
    n->op = XE_OP_CONST;
    n->value = value;
}

xe_code ox_fold(ox_ctx *c, int node, xe_status *st)
{
    xe_graph *g = c->g;
    xe_node *n = g->nodes[node];
    if (!foldable(g, n))
        return XE_OK;
    xe_tensor *in[OX_MAX_IO];
    if (n->n_inputs > OX_MAX_IO || !ox_fold_charge(c, xe_shape_numel(&n->type.shape)))
        return XE_OK;
    for (int k = 0; k < n->n_inputs; k++)
        in[k] = g->nodes[n->inputs[k]]->value;
    xe_tensor *out = xe_tensor_new(n->type.dtype, &n->type.shape, XE_DEV_CPU, st);
    if (!out)
        return st->code;
    xe_kernel_args a = {.graph = g, .node = n, .n_in = n->n_inputs, .in = in, .out = out};
    xe_status kst;
    xe_status_clear(&kst);
    if (xe_op_kernel(xe_op_get(n->op), XE_DEV_CPU)(&a, &kst) != XE_OK) {
        xe_tensor_release(out); /* left to run time, which reports the same failure */
        return XE_OK;
    }
    become_const(n, out);
    return XE_OK;
}
