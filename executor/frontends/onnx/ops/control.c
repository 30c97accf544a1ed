/*
 * If with a condition known at load time (a constant, or folded: exporters
 * write If over shape checks, and a graph built per input size folds
 * them): the branch taken is built in place, its initializers as
 * constants, its nodes by the op table like the graph's own (they see the
 * enclosing graph's values), its outputs become the If's. A condition
 * computed at run time is refused by name.
 */
#include <stdio.h>

#include "onnx_impl.h"

xe_code ox_b_if(ox_b *b)
{
    const xe_tensor *cond = ox_need_const(b, 0, "cond");
    if (!cond)
        return ox_status(b);
    if (xe_tensor_numel(cond) != 1)
        return ox_invalid(b, "the condition holds %lld values, not one",
                          (long long)xe_tensor_numel(cond));
    bool taken = xe_load_f64(cond->data, cond->dtype, 0) != 0;
    const Onnx__AttributeProto *a = ox_attr(b, taken ? "then_branch" : "else_branch");
    const Onnx__GraphProto *g = a ? a->g : NULL;
    if (!g)
        return ox_invalid(b, "the %s branch is missing", taken ? "then" : "else");
    if (g->n_output != b->np->n_output)
        return ox_invalid(b, "the branch has %zu outputs, the node %zu", g->n_output,
                          b->np->n_output);
    ox_ctx *c = b->c;
    for (size_t k = 0; k < g->n_initializer && !b->failed; k++) {
        char what[600];
        snprintf(what, sizeof what, "initializer '%.500s'",
                 g->initializer[k]->name ? g->initializer[k]->name : "");
        xe_tensor *t = ox_tensor(g->initializer[k], c->files, what, &b->st);
        if (!t)
            return b->failed = true, b->st.code;
        int x = ox_const(b, t);
        if (x >= 0 && ox_value_set(c, g->initializer[k]->name ? g->initializer[k]->name : "", x,
                                   &b->st) != XE_OK)
            b->failed = true;
    }
    if (b->failed)
        return ox_status(b);
    int errors = c->errs.n_unsupported + c->errs.n_other;
    c->build_nodes(c, g, &b->st); /* the loader's walk (model.c), handed down in c */
    if (c->errs.n_unsupported + c->errs.n_other != errors)
        return ox_unsupported(b, "the %s branch has nodes that do not import (listed)",
                              taken ? "then" : "else");
    for (size_t k = 0; k < g->n_output && !b->failed; k++) {
        bool found;
        const char *name = g->output[k]->name ? g->output[k]->name : "";
        int x = name[0] ? ox_value_get(c, name, &found) : -1;
        if (!name[0])
            return ox_invalid(b, "branch output %zu has no name", k);
        if (!found)
            return ox_invalid(b, "branch output '%s' is produced by no node", name);
        if (x < 0) /* its producer did not import, and is listed */
            return ox_unsupported(b, "branch output '%s' depends on nodes that do not import",
                                  name);
        ox_out(b, (int)k, x);
    }
    return ox_status(b);
}
