/*
 * Fusion planning: which values of a cluster live in memory and which
 * kernels compute them.
 *
 *   1. types     every body node's concrete type, from the input types
 *   2. uses      consumers per node (body outputs count as uses)
 *   3. mat       materialize inputs, non-scalar constants, outputs,
 *                reductions, softmax, matmul, and values read twice
 *   4. steps     one step per materialized computed node, in order
 *   5. merge     consecutive loop steps of one shape become one kernel
 *                with several outputs (multi-output fusion)
 *   6. verify    the plan's invariants (xg_plan_verify)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "xlac/op.h"

xe_code xg_body_types(const xe_graph *body, const xe_type *in_types, xe_type *types, xe_status *st)
{
    for (int i = 0; i < body->n_nodes; i++) {
        const xe_node *n = body->nodes[i];
        if (n->op == XE_OP_INPUT) {
            int pos = 0;
            while (pos < body->n_inputs && body->inputs[pos] != i)
                pos++;
            types[i] = in_types[pos];
            continue;
        }
        const xe_op_def *d = xe_op_get(n->op);
        xe_type in[16];
        if (n->n_inputs > 16 || !d || !d->infer)
            return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (%s) cannot be planned", n->name, xe_op_name(n->op));
        for (int k = 0; k < n->n_inputs; k++)
            in[k] = types[n->inputs[k]];
        types[i] = n->type;
        if (d->infer(n, in, n->n_inputs, &types[i], st) != XE_OK)
            return xe_status_prefix(st, "node %s (%s): ", n->name, xe_op_name(n->op));
    }
    return XE_OK;
}

static bool is_scalar_const(const xe_node *n)
{
    return n->op == XE_OP_CONST && n->value && xe_tensor_numel(n->value) == 1;
}

/* Ops whose value is just an index map of their input: cheap to recompute. */
static bool is_index_map(int op)
{
    return op == XE_OP_RESHAPE || op == XE_OP_TRANSPOSE || op == XE_OP_BROADCAST_TO ||
           op == XE_OP_SLICE || op == XE_OP_IOTA;
}

static xg_step_kind step_kind(const xe_node *n)
{
    const xe_op_def *d = xe_op_get(n->op);
    if (d->cls == XE_CLASS_REDUCE || d->cls == XE_CLASS_ARGMAX)
        return XG_STEP_REDUCE;
    if (d->cls == XE_CLASS_SOFTMAX)
        return XG_STEP_SOFTMAX;
    if (d->cls == XE_CLASS_MATMUL)
        return XG_STEP_LIBRARY;
    return XG_STEP_LOOP;
}

static void mark_materialized(xg_plan *p)
{
    const xe_graph *b = p->body;
    for (int i = 0; i < b->n_outputs; i++)
        p->mat[b->outputs[i]] = true;
    for (int i = 0; i < b->n_nodes; i++) {
        const xe_node *n = b->nodes[i];
        if (n->op == XE_OP_INPUT || (n->op == XE_OP_CONST && !is_scalar_const(n)))
            p->mat[i] = true;
        else if (n->op != XE_OP_CONST && step_kind(n) != XG_STEP_LOOP)
            p->mat[i] = true;
        else if (p->uses[i] >= 2 && n->op != XE_OP_CONST && !is_index_map(n->op))
            p->mat[i] = true;
        if (n->op != XE_OP_CONST && n->op != XE_OP_INPUT && step_kind(n) == XG_STEP_LIBRARY)
            for (int k = 0; k < n->n_inputs; k++) /* BLAS reads memory */
                p->mat[n->inputs[k]] = true;
    }
}

/* Reduced dims are all outside the kept ones and the innermost dim is kept. */
static bool is_column_reduce(const xg_plan *p, const xe_node *n)
{
    const xe_shape *s = &p->types[n->inputs[0]].shape;
    if (s->rank < 2 || xe_op_get(n->op)->cls == XE_CLASS_ARGMAX)
        return false;
    bool mask[XE_MAX_RANK] = {0};
    const xe_attr *a = xe_node_attr(n, "axes");
    if (!a)
        return false;
    for (int k = 0; k < a->n; k++)
        mask[a->ints[k] < 0 ? a->ints[k] + s->rank : a->ints[k]] = true;
    if (mask[s->rank - 1])
        return false;
    bool seen_kept = false;
    for (int d = 0; d < s->rank; d++) {
        if (!mask[d])
            seen_kept = true;
        else if (seen_kept)
            return false;
    }
    return true;
}

static bool is_elementwise(int op)
{
    xe_op_class c = xe_op_get(op)->cls;
    return c == XE_CLASS_BINARY || c == XE_CLASS_COMPARE || c == XE_CLASS_LOGICAL ||
           c == XE_CLASS_UNARY || c == XE_CLASS_SELECT || c == XE_CLASS_CAST;
}

/*
 * Whether node (computed inline at the loop's index when `same` holds)
 * reads an output of step prev only at the same index, so that one loop
 * can compute both: the value is then still in a register.
 */
static bool reads_same_index(const xg_plan *p, int node, const xg_step *prev, const xe_shape *shape,
                             bool same, bool root)
{
    for (int k = 0; k < prev->n_outs; k++)
        if (prev->outs[k] == node)
            return same;
    if (p->mat[node] && !root)
        return true;
    const xe_node *n = p->body->nodes[node];
    bool elementwise = is_elementwise(n->op);
    for (int k = 0; k < n->n_inputs; k++) {
        int in = n->inputs[k];
        bool child_same = same && elementwise && xe_shape_equal(&p->types[in].shape, shape);
        if (!reads_same_index(p, in, prev, shape, child_same, false))
            return false;
    }
    return true;
}

/* Consecutive loop steps of one shape whose reads of each other are at the same index. */
static void merge_loops(xg_plan *p)
{
    int w = 0;
    for (int r = 0; r < p->n_steps; r++) {
        xg_step *prev = w ? &p->steps[w - 1] : NULL, *cur = &p->steps[r];
        if (prev && prev->kind == XG_STEP_LOOP && cur->kind == XG_STEP_LOOP &&
            prev->n_outs < XG_MAX_OUTS &&
            xe_shape_equal(&p->types[prev->outs[0]].shape, &p->types[cur->outs[0]].shape) &&
            reads_same_index(p, cur->outs[0], prev, &p->types[cur->outs[0]].shape, true, true)) {
            prev->outs[prev->n_outs++] = cur->outs[0];
            continue;
        }
        p->steps[w++] = *cur;
    }
    p->n_steps = w;
}

static void assign_sizes(xg_plan *p)
{
    int off = 0;
    for (int i = 0; i < p->body->n_nodes; i++) {
        p->soff[i] = off;
        off += p->types[i].shape.rank;
    }
    p->n_sizes = off;
}

void xg_plan_sizes(const xg_plan *p, int64_t *S)
{
    for (int i = 0; i < p->body->n_nodes; i++)
        for (int d = 0; d < p->types[i].shape.rank; d++)
            S[p->soff[i] + d] = p->types[i].shape.dims[d];
}

void xg_plan_destroy(xg_plan *p)
{
    if (!p)
        return;
    free(p->types);
    free(p->mat);
    free(p->uses);
    free(p->steps);
    free(p->soff);
    free(p);
}

/* Marks in ready[] what step s reads: materialized values reached through its inline producers. */
static bool step_reads_ready(const xg_plan *p, int node, const bool *ready, bool root)
{
    if (!root && p->mat[node])
        return ready[node];
    const xe_node *n = p->body->nodes[node];
    for (int k = 0; k < n->n_inputs; k++)
        if (!step_reads_ready(p, n->inputs[k], ready, false))
            return false;
    return true;
}

/*
 * The plan's invariants, checked between planning and emission: every
 * computed buffer is written by exactly one step, after every buffer it
 * reads; a step writes only buffers of its own kind; the outputs of a
 * multi-output loop share one shape; the sizes array covers every dim.
 */
xe_code xg_plan_verify(const xg_plan *p, xe_status *st)
{
    const xe_graph *b = p->body;
    bool *ready = calloc((size_t)b->n_nodes + 1, sizeof *ready);
    if (!ready)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory verifying a plan");
    xe_code c = XE_OK;
    for (int i = 0; i < b->n_nodes; i++)
        ready[i] = b->nodes[i]->op == XE_OP_INPUT || (b->nodes[i]->op == XE_OP_CONST && p->mat[i]);
    for (int i = 0; c == XE_OK && i < p->n_steps; i++) {
        const xg_step *s = &p->steps[i];
        for (int k = 0; c == XE_OK && k < s->n_outs; k++) {
            int o = s->outs[k];
            if (o < 0 || o >= b->n_nodes) {
                c = xe_fail(st, XE_ERR_RUNTIME, "plan: step %d writes node %d of %d", i, o, b->n_nodes);
                break;
            }
            const char *name = b->nodes[o]->name;
            if (!p->mat[o] || ready[o])
                c = xe_fail(st, XE_ERR_RUNTIME, "plan: step %d writes %s, not a fresh buffer", i, name);
            else if (step_kind(b->nodes[o]) != s->kind)
                c = xe_fail(st, XE_ERR_RUNTIME, "plan: step %d has the wrong kind for %s", i, name);
            else if (!xe_shape_equal(&p->types[o].shape, &p->types[s->outs[0]].shape))
                c = xe_fail(st, XE_ERR_RUNTIME, "plan: step %d mixes shapes (%s)", i, name);
            else if (!step_reads_ready(p, o, ready, true))
                c = xe_fail(st, XE_ERR_RUNTIME, "plan: step %d reads a buffer before it is written (%s)", i, name);
            else
                ready[o] = true; /* later outputs of a multi-output loop may read it, at the same index */
        }
    }
    for (int i = 0; c == XE_OK && i < b->n_nodes; i++) {
        if (p->mat[i] && !ready[i])
            c = xe_fail(st, XE_ERR_RUNTIME, "plan: no step writes buffer %s", b->nodes[i]->name);
        else if (p->soff[i] < 0 || p->soff[i] + p->types[i].shape.rank > p->n_sizes)
            c = xe_fail(st, XE_ERR_RUNTIME, "plan: sizes of %s out of range", b->nodes[i]->name);
    }
    free(ready);
    return c;
}

xe_code xg_plan_build(const xe_graph *body, const xe_type *in_types, bool generic, xg_plan **out,
                      xe_status *st)
{
    int n = body->n_nodes;
    xg_plan *p = calloc(1, sizeof *p);
    if (!p)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory planning a cluster");
    p->body = body;
    p->generic = generic;
    p->types = calloc((size_t)n + 1, sizeof *p->types);
    p->mat = calloc((size_t)n + 1, sizeof *p->mat);
    p->steps = calloc((size_t)n + 1, sizeof *p->steps);
    p->soff = calloc((size_t)n + 1, sizeof *p->soff);
    p->uses = xe_graph_use_counts(body);
    if (!p->types || !p->mat || !p->steps || !p->soff || !p->uses) {
        xg_plan_destroy(p);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory planning a cluster");
    }
    /* 1. types */
    if (xg_body_types(body, in_types, p->types, st) != XE_OK) {
        xg_plan_destroy(p);
        return st->code;
    }
    /* 2-3. uses (from xe_graph_use_counts) and materialization */
    mark_materialized(p);
    /* 4. one step per materialized computed node */
    for (int i = 0; i < n; i++) {
        const xe_node *nd = body->nodes[i];
        if (!p->mat[i] || nd->op == XE_OP_INPUT || nd->op == XE_OP_CONST)
            continue;
        xg_step *s = &p->steps[p->n_steps++];
        s->kind = step_kind(nd);
        s->n_outs = 1;
        s->outs[0] = i;
        s->column = s->kind == XG_STEP_REDUCE && is_column_reduce(p, nd);
    }
    /* 5. multi-output loops */
    merge_loops(p);
    assign_sizes(p);
    /* 6. verify (cheap: linear in the cluster, so every build runs it) */
    if (xg_plan_verify(p, st) != XE_OK) {
        xg_plan_destroy(p);
        return st->code;
    }
    *out = p;
    return XE_OK;
}

void xg_step_name(int i, char *buf, size_t len)
{
    snprintf(buf, len, "xg_k%d", i);
}

static const char *kind_name(const xg_step *s)
{
    switch (s->kind) {
    case XG_STEP_LOOP: return s->n_outs > 1 ? "loop (multi-output)" : "loop";
    case XG_STEP_REDUCE: return s->column ? "reduce (column order)" : "reduce (row order)";
    case XG_STEP_SOFTMAX: return "softmax rows";
    case XG_STEP_LIBRARY: return "library call (BLAS)";
    }
    return "?";
}

/* Ops computed inline by a step: the unmaterialized producers of its outputs. */
static void list_ops(const xg_plan *p, int node, bool *seen, char *buf, size_t len)
{
    const xe_node *n = p->body->nodes[node];
    if (seen[node])
        return;
    seen[node] = true;
    for (int k = 0; k < n->n_inputs; k++)
        if (!p->mat[n->inputs[k]])
            list_ops(p, n->inputs[k], seen, buf, len);
    size_t used = strlen(buf);
    if (n->op != XE_OP_CONST && used + 40 < len)
        snprintf(buf + used, len - used, " %s(%s)", n->name, xe_op_name(n->op));
}

/*
 * A node's type as plan text. A shape-generic plan prints its pattern
 * ("f32[?,1,?]": the program depends on ranks and size-1 dims only), so
 * the metadata of a generic artifact is the same at every shape it serves.
 */
static char *plan_type_str(const xg_plan *p, int node, char *buf, size_t len)
{
    if (!p->generic)
        return xe_type_str(&p->types[node], buf, len);
    const xe_type *t = &p->types[node];
    size_t u = (size_t)snprintf(buf, len, "%s[", xe_dtype_name(t->dtype));
    for (int d = 0; d < t->shape.rank && u < len; d++)
        u += (size_t)snprintf(buf + u, len - u, "%s%s", d ? "," : "", t->shape.dims[d] == 1 ? "1" : "?");
    if (u < len)
        snprintf(buf + u, len - u, "]");
    return buf;
}

char *xg_plan_text(const xg_plan *p, const char *key)
{
    size_t cap = 4096 + (size_t)p->n_steps * 1024;
    char *buf = calloc(1, cap);
    bool *seen = calloc((size_t)p->body->n_nodes + 1, sizeof *seen);
    if (!buf || !seen) {
        free(buf);
        free(seen);
        return NULL;
    }
    size_t u = (size_t)snprintf(buf, cap, "plan: %d step(s)%s\ncache key: %s\n", p->n_steps,
                                p->generic ? ", shape-generic (sizes are arguments)" : "", key ? key : "-");
    for (int i = 0; i < p->n_steps && u < cap; i++) {
        const xg_step *s = &p->steps[i];
        char name[32], ty[128], ops[768] = "";
        xg_step_name(i, name, sizeof name);
        memset(seen, 0, (size_t)p->body->n_nodes * sizeof *seen);
        for (int k = 0; k < s->n_outs; k++)
            list_ops(p, s->outs[k], seen, ops, sizeof ops);
        u += (size_t)snprintf(buf + u, cap - u, "%s: %s over %s, ops:%s\n", name, kind_name(s),
                              plan_type_str(p, s->kind == XG_STEP_REDUCE ? p->body->nodes[s->outs[0]]->inputs[0] : s->outs[0],
                                            ty, sizeof ty), ops);
    }
    for (int i = 0; i < p->body->n_nodes && u < cap; i++) {
        char ty[128];
        if (p->mat[i])
            u += (size_t)snprintf(buf + u, cap - u, "buffer %s: %s%s\n", p->body->nodes[i]->name,
                                  plan_type_str(p, i, ty, sizeof ty),
                                  p->body->nodes[i]->op == XE_OP_INPUT ? " (input)" : "");
    }
    free(seen);
    return buf;
}
