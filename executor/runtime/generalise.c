/*
 * One graph for every size (specialise.c). A graph built per input-shape
 * signature has its sizes baked in: reshape and broadcast_to shapes, slice
 * ends, and constants folded from shape computations (a causal mask, the
 * position ids). Compiled clusters are identified by their text, so each
 * size would compile its own programs. Given the graph built at the fed
 * shapes (a) and the same model built with every symbolic dim one larger
 * (b), what differs between them is what depends on the sizes, and it is
 * rewritten so that the graph no longer names them:
 *   1. the inputs keep their symbolic dims (`?`);
 *   2. a constant that differs becomes an extra graph input, its dims `?`
 *      where they differ; the session feeds its value (a cluster border,
 *      so clusters see an input, not the value);
 *   3. a reshape or broadcast_to dim that differs takes the operand dim
 *      that tracks it (copy=[...]), or for one reshape dim, -1;
 *      a slice end that differs and is the whole dim becomes open;
 *   4. the rewritten graph, inferred at the fed shapes, must give every
 *      node the type it had in a.
 * Anything else that differs (another attribute, another structure) and
 * the graph stays as built, with its sizes baked in: correct, compiled per
 * size. Clusters of a rewritten graph are the same text at every size, so
 * the plugin's cache goes shape-generic after two sizes as it does for any
 * graph with `?` dims.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_impl.h"
#include "xlac/op.h"

static bool same_value(const xe_tensor *x, const xe_tensor *y)
{
    return x->dtype == y->dtype && xe_shape_equal(&x->shape, &y->shape) && x->nbytes == y->nbytes &&
           (!x->nbytes || !memcmp(x->data, y->data, x->nbytes));
}

static bool same_attr(const xe_attr *x, const xe_attr *y)
{
    if (strcmp(x->name, y->name) || x->kind != y->kind)
        return false;
    switch (x->kind) {
    case XE_ATTR_INTS:
        return x->n == y->n && (!x->n || !memcmp(x->ints, y->ints, (size_t)x->n * sizeof *x->ints));
    case XE_ATTR_FLOATS:
        return x->n == y->n &&
               (!x->n || !memcmp(x->floats, y->floats, (size_t)x->n * sizeof *x->floats));
    case XE_ATTR_FLOAT:
        return x->f == y->f || (x->f != x->f && y->f != y->f);
    case XE_ATTR_STRING:
        return !strcmp(x->s, y->s);
    case XE_ATTR_DTYPE:
        return x->dtype == y->dtype;
    default:
        return x->i == y->i;
    }
}

/* Same op, operands and attribute names (values may differ). */
static bool same_structure(const xe_node *x, const xe_node *y)
{
    if (x->op != y->op || x->n_inputs != y->n_inputs || x->n_attrs != y->n_attrs ||
        !!x->body != !!y->body ||
        (x->n_inputs && memcmp(x->inputs, y->inputs, (size_t)x->n_inputs * sizeof *x->inputs)))
        return false;
    for (int k = 0; k < x->n_attrs; k++)
        if (strcmp(x->attrs[k].name, y->attrs[k].name) || x->attrs[k].kind != y->attrs[k].kind)
            return false;
    return true;
}

typedef struct gen {
    const xe_graph *a, *b;
    xe_graph *c;        /* the rewrite of a */
    xe_tensor **extras; /* values of the constants made inputs */
    int n_extras;
    xe_status st;
    char *why; /* the first thing that cannot be rewritten (why_len bytes) */
    size_t why_len;
} gen;

/* Records, once, why node i (of a) keeps the graph from serving every size; false. */
static bool why_not(gen *g, int i, const char *what)
{
    if (g->why && g->why_len && !g->why[0]) {
        const xe_node *n = i >= 0 ? g->a->nodes[i] : NULL;
        if (n)
            snprintf(g->why, g->why_len, "node '%s' (%s): %s", n->name ? n->name : "?",
                     xe_op_name(n->op), what);
        else
            snprintf(g->why, g->why_len, "%s", what);
    }
    return false;
}

/* 2. constant i of a (b's differs) becomes an input of c. */
static bool const_to_input(gen *g, int i)
{
    const xe_tensor *va = g->a->nodes[i]->value, *vb = g->b->nodes[i]->value;
    if (va->shape.rank != vb->shape.rank || va->dtype != vb->dtype)
        return false;
    xe_node *n = g->c->nodes[i];
    xe_type t = {va->dtype, va->shape};
    for (int d = 0; d < t.shape.rank; d++)
        if (va->shape.dims[d] != vb->shape.dims[d])
            t.shape.dims[d] = XE_DIM_UNKNOWN;
    xe_tensor **e = realloc(g->extras, (size_t)(g->n_extras + 1) * sizeof *e);
    int *in = realloc(g->c->inputs, (size_t)(g->c->n_inputs + 1) * sizeof *in);
    if (e)
        g->extras = e;
    if (in)
        g->c->inputs = in;
    if (!e || !in)
        return false;
    g->extras[g->n_extras++] = xe_tensor_retain(n->value);
    xe_tensor_release(n->value);
    n->value = NULL;
    n->op = XE_OP_INPUT;
    n->type = t;
    g->c->inputs[g->c->n_inputs++] = i;
    return true;
}

/* 3. A shape attribute (reshape, broadcast_to) whose dims differ: copy=[...] and at most one -1. */
static bool general_shape(gen *g, int i, const xe_attr *x, const xe_attr *y, bool may_infer)
{
    const xe_shape *ia = &g->a->nodes[g->a->nodes[i]->inputs[0]]->type.shape;
    const xe_shape *ib = &g->b->nodes[g->b->nodes[i]->inputs[0]]->type.shape;
    if (x->n != y->n || x->n > XE_MAX_RANK || xe_node_attr(g->a->nodes[i], "copy"))
        return false;
    int64_t shape[XE_MAX_RANK], copy[XE_MAX_RANK];
    int wild = 0;
    for (int k = 0; k < x->n; k++) {
        shape[k] = x->ints[k];
        copy[k] = -1;
        if (x->ints[k] == y->ints[k]) {
            wild += x->ints[k] == -1;
            continue;
        }
        for (int j = 0; j < ia->rank && copy[k] < 0; j++) /* the same position first */
            for (int p = 0; p < 2 && copy[k] < 0; p++) {
                int d = p ? j : (k < ia->rank ? k : j);
                if (ia->dims[d] == x->ints[k] && ib->dims[d] == y->ints[k])
                    copy[k] = d;
            }
        shape[k] = copy[k] >= 0 ? 0 : -1;
        wild += copy[k] < 0;
    }
    if (wild > (may_infer ? 1 : 0))
        return false;
    xe_node *n = g->c->nodes[i];
    return xe_node_set_ints(n, "shape", shape, x->n, &g->st) == XE_OK &&
           xe_node_set_ints(n, "copy", copy, x->n, &g->st) == XE_OK;
}

/* 3. A slice end that differs and, in both graphs, is the whole dim: open. */
static bool general_end(gen *g, int i, const xe_attr *x, const xe_attr *y)
{
    const xe_shape *ia = &g->a->nodes[g->a->nodes[i]->inputs[0]]->type.shape;
    const xe_shape *ib = &g->b->nodes[g->b->nodes[i]->inputs[0]]->type.shape;
    int64_t end[XE_MAX_RANK];
    if (x->n != y->n || x->n != ia->rank || x->n > XE_MAX_RANK)
        return false;
    for (int k = 0; k < x->n; k++) {
        end[k] = x->ints[k];
        if (x->ints[k] == y->ints[k])
            continue;
        if (x->ints[k] < ia->dims[k] || y->ints[k] < ib->dims[k])
            return false;
        end[k] = INT64_MAX;
    }
    return xe_node_set_ints(g->c->nodes[i], "end", end, x->n, &g->st) == XE_OK;
}

static bool general_node(gen *g, int i)
{
    const xe_node *x = g->a->nodes[i], *y = g->b->nodes[i];
    if (!same_structure(x, y))
        return why_not(g, i, "the graph one size larger has another node here");
    if (x->op == XE_OP_CONST)
        return same_value(x->value, y->value) || const_to_input(g, i) ||
               why_not(g, i, "a constant of another rank or dtype at the larger size");
    for (int k = 0; k < x->n_attrs; k++) {
        const xe_attr *p = &x->attrs[k], *q = &y->attrs[k];
        if (p->name[0] == '@' || same_attr(p, q))
            continue;
        bool ok =
            p->kind == XE_ATTR_INTS &&
            (((x->op == XE_OP_RESHAPE || x->op == XE_OP_BROADCAST_TO) &&
              !strcmp(p->name, "shape") && general_shape(g, i, p, q, x->op == XE_OP_RESHAPE)) ||
             (x->op == XE_OP_SLICE && !strcmp(p->name, "end") && general_end(g, i, p, q)));
        if (!ok) {
            char what[96];
            snprintf(what, sizeof what, "attribute '%s' depends on the sizes", p->name);
            return why_not(g, i, what);
        }
    }
    return true;
}

/* 4. c inferred at a's input shapes gives every node a's type; then c's inputs get `?` back. */
static bool check_types(gen *g, const xe_graph *tmpl)
{
    xe_graph *c = g->c;
    for (int k = 0; k < tmpl->n_inputs; k++)
        c->nodes[c->inputs[k]]->type = g->a->nodes[g->a->inputs[k]]->type;
    xe_type *sym = calloc((size_t)g->n_extras + 1, sizeof *sym);
    if (!sym)
        return false;
    for (int k = 0; k < g->n_extras; k++) {
        xe_node *n = c->nodes[c->inputs[tmpl->n_inputs + k]];
        sym[k] = n->type;
        n->type = (xe_type){g->extras[k]->dtype, g->extras[k]->shape};
    }
    bool ok = xe_graph_infer(c, &g->st) == XE_OK;
    for (int i = 0; ok && i < c->n_nodes; i++)
        ok = c->nodes[i]->body ||
             (c->nodes[i]->type.dtype == g->a->nodes[i]->type.dtype &&
              xe_shape_equal(&c->nodes[i]->type.shape, &g->a->nodes[i]->type.shape));
    for (int k = 0; k < tmpl->n_inputs; k++)
        c->nodes[c->inputs[k]]->type = tmpl->nodes[tmpl->inputs[k]]->type;
    for (int k = 0; k < g->n_extras; k++)
        c->nodes[c->inputs[tmpl->n_inputs + k]]->type = sym[k];
    free(sym);
    return ok && xe_graph_infer(c, &g->st) == XE_OK;
}

xe_graph *xe_generalise(const xe_graph *a, const xe_graph *b, const xe_graph *tmpl,
                        xe_tensor ***extras, int *n_extras, char *why, size_t why_len)
{
    gen g = {.a = a, .b = b, .why = why, .why_len = why_len};
    xe_status_clear(&g.st);
    if (why && why_len)
        why[0] = 0;
    *extras = NULL;
    *n_extras = 0;
    bool ok = a->n_nodes == b->n_nodes && a->n_inputs == tmpl->n_inputs &&
              b->n_inputs == a->n_inputs && a->n_outputs == b->n_outputs;
    if (!ok) {
        char what[128];
        snprintf(what, sizeof what,
                 "its structure depends on the sizes (%d nodes, %d at the larger sizes)",
                 a->n_nodes, b->n_nodes);
        why_not(&g, -1, what);
    }
    ok = ok && (g.c = xe_graph_clone(a, &g.st)) != NULL;
    for (int i = 0; ok && i < a->n_nodes; i++)
        ok = general_node(&g, i);
    ok = ok && (check_types(&g, tmpl) ||
                why_not(&g, -1, "the rewritten graph does not infer the types it was built with"));
    if (!ok) {
        for (int k = 0; k < g.n_extras; k++)
            xe_tensor_release(g.extras[k]);
        free(g.extras);
        xe_graph_destroy(g.c);
        return NULL;
    }
    *extras = g.extras;
    *n_extras = g.n_extras;
    return g.c;
}
