/*
 * Static shape inference over a graph: each node's output type from its
 * inputs' types through the op's shape function, with unknown dims
 * propagated. `get` and composite nodes are handled here, since they are
 * about graph structure rather than arithmetic. Messages carry the node's
 * file:line:col, its name and op.
 */
#include <stdlib.h>
#include <string.h>

#include "xlac/op.h"

static xe_code node_error(const xe_graph *g, const xe_node *n, xe_status *st)
{
    char where[512];
    xe_node_where(g, n, where, sizeof where);
    return xe_status_prefix(st, "%s: node %s (%s): ", where, n->name, xe_node_op_name(n));
}

xe_code xe_type_check_size(const xe_type *t, xe_status *st)
{
    char buf[160];
    if (xe_shape_size_ok(&t->shape))
        return XE_OK;
    return xe_fail(st, XE_ERR_GRAPH, "result %s is too large (more than %lld elements)",
                   xe_type_str(t, buf, sizeof buf), (long long)XE_MAX_ELEMS);
}

static xe_code infer_get(const xe_graph *g, xe_node *n, xe_status *st)
{
    const xe_node *src = g->nodes[n->inputs[0]];
    if (!src->body)
        return xe_fail(st, XE_ERR_GRAPH, "input '%s' is not a composite node", src->name);
    int64_t k = xe_node_attr_int(n, "index", -1);
    if (k < 0 || k >= src->n_tuple)
        return xe_fail(st, XE_ERR_GRAPH, "index=%lld out of range: '%s' has %d outputs",
                       (long long)k, src->name, src->n_tuple);
    n->type = src->tuple[k];
    return XE_OK;
}

/* Body inputs must agree with the values bound to them. */
static xe_code check_binding(const xe_graph *g, const xe_node *n, xe_status *st)
{
    const xe_graph *b = n->body;
    if (b->n_inputs != n->n_inputs)
        return xe_fail(st, XE_ERR_GRAPH, "the body declares %d inputs but %d are passed",
                       b->n_inputs, n->n_inputs);
    for (int i = 0; i < n->n_inputs; i++) {
        const xe_type *want = &b->nodes[b->inputs[i]]->type, *got = &g->nodes[n->inputs[i]]->type;
        bool ok = want->dtype == got->dtype && want->shape.rank == got->shape.rank;
        for (int d = 0; ok && d < want->shape.rank; d++)
            ok = want->shape.dims[d] < 0 || got->shape.dims[d] < 0 ||
                 want->shape.dims[d] == got->shape.dims[d];
        if (!ok) {
            char a[128], c[128];
            return xe_fail(st, XE_ERR_GRAPH, "body input %d is %s but '%s' is %s", i,
                           xe_type_str(want, a, sizeof a), g->nodes[n->inputs[i]]->name,
                           xe_type_str(got, c, sizeof c));
        }
    }
    return XE_OK;
}

static xe_code infer_composite(const xe_graph *g, xe_node *n, xe_status *st)
{
    if (!n->body)
        return xe_fail(st, XE_ERR_GRAPH, "a composite op needs a body { ... }");
    if (check_binding(g, n, st) != XE_OK || xe_graph_infer(n->body, st) != XE_OK)
        return st->code;
    const xe_graph *b = n->body;
    xe_type *tuple = malloc((size_t)(b->n_outputs ? b->n_outputs : 1) * sizeof *tuple);
    if (!tuple)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int i = 0; i < b->n_outputs; i++)
        tuple[i] = b->nodes[b->outputs[i]]->type;
    free(n->tuple);
    n->tuple = tuple;
    n->n_tuple = b->n_outputs;
    n->type = (xe_type){0};
    return XE_OK;
}

static xe_code infer_regular(const xe_graph *g, xe_node *n, const xe_op_def *d, xe_status *st)
{
    if (!d->infer)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "op has no shape function");
    xe_type *in = malloc((size_t)(n->n_inputs ? n->n_inputs : 1) * sizeof *in);
    if (!in)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    xe_code c = XE_OK;
    for (int i = 0; i < n->n_inputs && c == XE_OK; i++) {
        const xe_node *src = g->nodes[n->inputs[i]];
        if (src->body)
            c = xe_fail(st, XE_ERR_GRAPH, "'%s' has %d outputs; pick one with get(%s, index=K)",
                        src->name, src->n_tuple, src->name);
        in[i] = src->type;
    }
    xe_type out = n->type;
    if (c == XE_OK && (c = d->infer(n, in, n->n_inputs, &out, st)) == XE_OK)
        c = xe_type_check_size(&out, st);
    const char *why = c == XE_OK ? xe_op_narrow_reason(n->op, in, n->n_inputs, &out) : NULL;
    if (why) {
        xe_dtype dt = out.dtype;
        for (int i = n->n_inputs - 1; i >= 0; i--)
            dt = xe_dtype_is_narrow(in[i].dtype) ? in[i].dtype : dt;
        c = xe_fail(st, XE_ERR_UNSUPPORTED, "%s on %s: %s", d->name, xe_dtype_name(dt), why);
    }
    if (c == XE_OK)
        n->type = out;
    free(in);
    return c;
}

static xe_code check_arity(const xe_node *n, const xe_op_def *d, xe_status *st)
{
    if (n->n_inputs < d->min_inputs || (d->max_inputs >= 0 && n->n_inputs > d->max_inputs)) {
        if (d->min_inputs == d->max_inputs)
            return xe_fail(st, XE_ERR_GRAPH, "%s takes %d inputs, got %d", d->name, d->min_inputs,
                           n->n_inputs);
        return xe_fail(st, XE_ERR_GRAPH, "%s takes at least %d inputs, got %d", d->name,
                       d->min_inputs, n->n_inputs);
    }
    return XE_OK;
}

xe_code xe_node_infer(xe_graph *g, xe_node *n, xe_status *st)
{
    const xe_op_def *d = xe_op_get(n->op);
    xe_code c;
    if (!d)
        c = xe_fail(st, XE_ERR_GRAPH, "unknown op id %d", n->op);
    else if ((c = check_arity(n, d, st)) != XE_OK)
        ;
    else if (n->op == XE_OP_GET)
        c = infer_get(g, n, st);
    else if (d->cls == XE_CLASS_COMPOSITE)
        c = infer_composite(g, n, st);
    else
        c = infer_regular(g, n, d, st);
    return c == XE_OK ? XE_OK : node_error(g, n, st);
}

xe_code xe_graph_infer(xe_graph *g, xe_status *st)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (xe_node_infer(g, g->nodes[i], st) != XE_OK)
            return st->code;
    if (g->n_outputs == 0)
        return xe_fail(st, XE_ERR_GRAPH, "%s: the graph has no outputs", g->file);
    for (int i = 0; i < g->n_outputs; i++) {
        const xe_node *n = g->nodes[g->outputs[i]];
        if (n->body) {
            xe_fail(st, XE_ERR_GRAPH, "output '%s' has %d outputs; pick one with get(%s, index=K)",
                    n->name, n->n_tuple, n->name);
            return node_error(g, n, st);
        }
    }
    return XE_OK;
}
