/*
 * What planning asks about a cluster's values, below every planning file:
 * the kind of step a node makes, the value a product reads as an operand
 * (through a transpose of its last two dims), the axes a reduction folds,
 * whether a value is read only inside a step, and the buffers a value's
 * computation reads. fusion.c, attention.c, epilogue.c and locals.c call
 * it; it calls none of them, as chibicc keeps its type helpers in type.c
 * under both the parser and the code generator.
 */
#include "plan.h"
#include "xlac/op.h"

xg_step_kind xg_step_kind_of(const xe_node *n)
{
    const xe_op_def *d = xe_op_get(n->op);
    if (d->cls == XE_CLASS_REDUCE || d->cls == XE_CLASS_ARGMAX)
        return XG_STEP_REDUCE;
    if (d->cls == XE_CLASS_SOFTMAX)
        return XG_STEP_SOFTMAX;
    if (d->cls == XE_CLASS_MATMUL || n->op == XE_OP_CONV2D)
        return XG_STEP_LIBRARY;
    return XG_STEP_LOOP;
}

/*
 * The value matmul node reads as input k: a transpose that swaps only the last
 * two dims is read through, its input handed to BLAS with the operand's
 * transpose flag flipped (*flip), never copied.
 */
int xg_matmul_operand(const xe_graph *b, const xe_type *types, int node, int k, bool *flip)
{
    int in = b->nodes[node]->inputs[k];
    const xe_node *t = b->nodes[in];
    *flip = false;
    if (b->nodes[node]->op != XE_OP_MATMUL) /* a conv reads its operands as they are */
        return in;
    if (t->op != XE_OP_TRANSPOSE || types[t->inputs[0]].shape.rank < 2)
        return in;
    int r = types[t->inputs[0]].shape.rank, perm[XE_MAX_RANK];
    xe_status st = {0};
    if (xe_transpose_perm(t, r, perm, &st) != XE_OK)
        return in;
    for (int d = 0; d < r - 2; d++)
        if (perm[d] != d)
            return in;
    if (perm[r - 2] != r - 1 || perm[r - 1] != r - 2)
        return in;
    *flip = true;
    return t->inputs[0];
}

void xg_reduce_mask(const xe_node *n, int rank, bool *mask)
{
    if (n->op == XE_OP_ARGMAX) {
        const xe_attr *a = xe_node_attr(n, "axis");
        for (int d = 0; d < rank; d++)
            mask[d] = !a;
        if (a)
            mask[a->i < 0 ? a->i + rank : a->i] = true;
        return;
    }
    const xe_attr *a = xe_node_attr(n, "axes");
    for (int d = 0; d < rank; d++)
        mask[d] = !a;
    for (int k = 0; a && k < a->n; k++)
        mask[a->ints[k] < 0 ? a->ints[k] + rank : a->ints[k]] = true;
}

bool xg_read_only_inside(const xg_plan *p, int node, const bool *in_row)
{
    const xe_graph *b = p->body;
    for (int i = 0; i < b->n_outputs; i++)
        if (b->outputs[i] == node)
            return false;
    for (int j = 0; j < b->n_nodes; j++) {
        const xe_node *n = b->nodes[j];
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] != node)
                continue;
            if (!in_row[j] && (p->mat[j] || !xg_read_only_inside(p, j, in_row)))
                return false;
            break;
        }
    }
    return true;
}

static void reads_through(const xg_plan *p, int node, bool root, void (*visit)(void *ctx, int buf),
                          void *ctx)
{
    if (!root && p->mat[node]) {
        visit(ctx, node);
        return;
    }
    const xe_node *n = p->body->nodes[node];
    for (int k = 0; k < n->n_inputs; k++)
        reads_through(p, n->inputs[k], false, visit, ctx);
}

void xg_value_reads(const xg_plan *p, int node, void (*visit)(void *ctx, int buf), void *ctx)
{
    reads_through(p, node, true, visit, ctx);
    if (xg_step_kind_of(p->body->nodes[node]) != XG_STEP_LIBRARY)
        return;
    for (int k = 0; k < 2; k++) {
        bool flip;
        int src = xg_matmul_operand(p->body, p->types, node, k, &flip);
        if (flip && p->mat[src]) /* read through a transpose that may have a buffer of its own */
            visit(ctx, src);
    }
}
