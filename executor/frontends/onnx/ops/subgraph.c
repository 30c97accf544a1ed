/*
 * A subgraph (an If's branch, a Loop's body) built in place: its
 * initializers as constants, its nodes by the loader's own walk (they see
 * the enclosing graph's values by name). A leaf shared by control.c and
 * loop.c.
 */
#include <stdio.h>

#include "onnx_impl.h"

bool ox_build_subgraph(ox_b *b, const Onnx__GraphProto *g, const char *which)
{
    ox_ctx *c = b->c;
    for (size_t k = 0; k < g->n_initializer && !b->failed; k++) {
        char what[600];
        snprintf(what, sizeof what, "initializer '%.500s'",
                 g->initializer[k]->name ? g->initializer[k]->name : "");
        xe_tensor *t = ox_tensor(g->initializer[k], c->files, what, &b->st);
        if (!t)
            return b->failed = true, false;
        int x = ox_const(b, t);
        if (x >= 0 && ox_value_set(c, g->initializer[k]->name ? g->initializer[k]->name : "", x,
                                   &b->st) != XE_OK)
            b->failed = true;
    }
    if (b->failed)
        return false;
    int errors = c->errs.n_unsupported + c->errs.n_other;
    c->build_nodes(c, g, &b->st); /* the loader's walk (model.c), handed down in c */
    if (c->errs.n_unsupported + c->errs.n_other != errors) {
        ox_unsupported(b, "the %s has nodes that do not import (listed)", which);
        return false;
    }
    return true;
}
