/*
 * If with a condition known at load time (a constant, or folded: exporters
 * write If over shape checks, and a graph built per input size folds
 * them): the branch taken is built in place, its initializers as
 * constants, its nodes by the op table like the graph's own (they see the
 * enclosing graph's values), its outputs become the If's. A condition
 * computed at run time (torch.cond on the data) builds both branches and
 * selects each output by it: exact (the branches have no side effects and
 * the select takes only the chosen one's values, NaN or not), at the cost
 * of running both; each output pair must have the same dtype and shape,
 * else the If is refused naming the output and both shapes.
 */
#include "onnx_impl.h"

/* Branch output k's node, or -1 (error set). */
static int branch_output(ox_b *b, const Onnx__GraphProto *g, size_t k)
{
    bool found = false;
    const char *name = g->output[k]->name ? g->output[k]->name : "";
    int x = name[0] ? ox_value_get(b->c, name, &found) : -1;
    if (!name[0])
        ox_invalid(b, "branch output %zu has no name", k);
    else if (!found)
        ox_invalid(b, "branch output '%s' is produced by no node", name);
    else if (x < 0 && ox_value_find(b->c, name)->seq)
        ox_unsupported(b, "branch output '%s' is a sequence, which If does not return", name);
    else if (x < 0) /* its producer did not import, and is listed */
        ox_unsupported(b, "branch output '%s' depends on nodes that do not import", name);
    return found ? x : -1;
}

static const Onnx__GraphProto *branch(ox_b *b, const char *attr)
{
    const Onnx__AttributeProto *a = ox_attr(b, attr);
    const Onnx__GraphProto *g = a ? a->g : NULL;
    if (!g)
        ox_invalid(b, "the %s is missing", attr);
    else if (g->n_output != b->np->n_output)
        ox_invalid(b, "the %s has %zu outputs, the node %zu", attr, g->n_output, b->np->n_output);
    return g && g->n_output == b->np->n_output ? g : NULL;
}

/* Both branches built, each output selected by the run-time condition. */
static xe_code select_branches(ox_b *b)
{
    int cond = ox_in(b, 0);
    const xe_type *ct = ox_type(b, cond);
    if (xe_shape_numel(&ct->shape) != 1)
        return ox_invalid(b, "the condition has %lld values, not one",
                          (long long)xe_shape_numel(&ct->shape));
    const Onnx__GraphProto *then = branch(b, "then_branch"), *other = branch(b, "else_branch");
    if (!then || !other || !ox_build_subgraph(b, then, "then branch") ||
        !ox_build_subgraph(b, other, "else branch"))
        return ox_status(b);
    cond = ox_reshape(b, ox_cast(b, cond, XE_BOOL), NULL, 0); /* a scalar: no broadcast */
    for (size_t k = 0; k < then->n_output && !b->failed; k++) {
        int x = branch_output(b, then, k), y = branch_output(b, other, k);
        if (x < 0 || y < 0)
            return ox_status(b);
        const xe_type *tx = ox_type(b, x), *ty = ox_type(b, y);
        if (tx->dtype != ty->dtype || !xe_shape_equal(&tx->shape, &ty->shape)) {
            char sx[128], sy[128];
            xe_type_str(tx, sx, sizeof sx);
            xe_type_str(ty, sy, sizeof sy);
            return ox_unsupported(b,
                                  "a condition computed at run time with output %zu %s in the then "
                                  "branch and %s in the else branch is not supported (both "
                                  "branches run and one is selected: they must agree)",
                                  k, sx, sy);
        }
        ox_out(b, (int)k, ox_select(b, cond, x, y));
    }
    return ox_status(b);
}

xe_code ox_b_if(ox_b *b)
{
    int c0 = ox_in(b, 0);
    if (c0 >= 0 && b->c->g->nodes[c0]->op != XE_OP_CONST && b->c->g->nodes[c0]->op != XE_OP_INPUT)
        return select_branches(b);
    const xe_tensor *cond = ox_need_const(b, 0, "cond");
    if (!cond)
        return ox_status(b);
    if (xe_tensor_numel(cond) != 1)
        return ox_invalid(b, "the condition holds %lld values, not one",
                          (long long)xe_tensor_numel(cond));
    bool taken = xe_load_f64(cond->data, cond->dtype, 0) != 0;
    const Onnx__GraphProto *g = branch(b, taken ? "then_branch" : "else_branch");
    if (!g || !ox_build_subgraph(b, g, taken ? "then branch" : "else branch"))
        return ox_status(b);
    for (size_t k = 0; k < g->n_output && !b->failed; k++) {
        int x = branch_output(b, g, k);
        if (x < 0)
            return ox_status(b);
        ox_out(b, (int)k, x);
    }
    return ox_status(b);
}
