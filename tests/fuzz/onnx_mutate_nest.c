/*
 * The ONNX mutator's structural changes (see onnx_mutate_impl.h): a node
 * wrapped into an If (its condition a constant the importer folds, or a
 * computed value it must refuse) or into a Loop body, once or up to six
 * times over, so subgraphs nest; nodes duplicated, removed, reordered or
 * moved into another graph (only one that is not inside the node, so the
 * model stays a tree); graph inputs, outputs and initializers added,
 * removed or duplicated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_mutate_impl.h"

/* ---- small builders ------------------------------------------------------------------------- */

static Onnx__NodeProto *new_node(const char *op)
{
    Onnx__NodeProto *n = malloc(sizeof *n);
    if (n) {
        onnx__node_proto__init(n);
        n->op_type = xm_strdup(op);
    }
    return n;
}

static void add_name(char ***arr, size_t *n, const char *s)
{
    char *d = xm_strdup(s);
    if (d)
        xm_insert((void ***)arr, n, *n, d);
}

static Onnx__ValueInfoProto *new_info(const char *name)
{
    Onnx__ValueInfoProto *v = malloc(sizeof *v);
    if (v) {
        onnx__value_info_proto__init(v);
        v->name = xm_strdup(name);
    }
    return v;
}

static Onnx__GraphProto *new_graph(void)
{
    Onnx__GraphProto *g = malloc(sizeof *g);
    if (g)
        onnx__graph_proto__init(g);
    return g;
}

static void add_graph_attr(Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g)
{
    Onnx__AttributeProto *a = g ? malloc(sizeof *a) : NULL;
    if (!a) {
        if (g)
            onnx__graph_proto__free_unpacked(g, NULL);
        return;
    }
    onnx__attribute_proto__init(a);
    a->name = xm_strdup(name);
    a->has_type = true;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    a->g = g;
    xm_insert((void ***)&n->attribute, &n->n_attribute, n->n_attribute, a);
}

/* A Constant node making a bool scalar named out. */
static Onnx__NodeProto *bool_constant(xm_rng *r, const char *out)
{
    Onnx__NodeProto *n = new_node("Constant");
    Onnx__AttributeProto *a = malloc(sizeof *a);
    Onnx__TensorProto *t = malloc(sizeof *t);
    uint8_t *v = malloc(1);
    if (!n || !a || !t || !v) {
        free(v), free(t), free(a);
        if (n)
            onnx__node_proto__free_unpacked(n, NULL);
        return NULL;
    }
    onnx__tensor_proto__init(t);
    t->has_data_type = true;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    *v = xm_below(r, 4) != 0;
    t->has_raw_data = true;
    t->raw_data = (ProtobufCBinaryData){1, v};
    onnx__attribute_proto__init(a);
    a->name = xm_strdup("value");
    a->has_type = true;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    a->t = t;
    xm_insert((void ***)&n->attribute, &n->n_attribute, 0, a);
    add_name(&n->output, &n->n_output, out);
    return n;
}

/* ---- nesting -------------------------------------------------------------------------------- */

/* A graph holding node n (taken) whose outputs are n's. */
static Onnx__GraphProto *body_of(Onnx__NodeProto *n)
{
    Onnx__GraphProto *g = new_graph();
    if (!g) {
        onnx__node_proto__free_unpacked(n, NULL);
        return NULL;
    }
    xm_insert((void ***)&g->node, &g->n_node, 0, n);
    for (size_t k = 0; k < n->n_output; k++) {
        Onnx__ValueInfoProto *v = new_info(n->output[k]);
        if (v)
            xm_insert((void ***)&g->output, &g->n_output, g->n_output, v);
    }
    return g;
}

/* An If whose branches hold n (taken) and a copy of it, or a Loop whose body holds n. */
static Onnx__NodeProto *wrap(xm_rng *r, Onnx__NodeProto *n, const char *cond)
{
    bool loop = xm_below(r, 4) == 0;
    Onnx__NodeProto *w = new_node(loop ? "Loop" : "If");
    if (!w) {
        onnx__node_proto__free_unpacked(n, NULL);
        return NULL;
    }
    if (loop)
        add_name(&w->input, &w->n_input, ""); /* no trip count: the condition decides */
    add_name(&w->input, &w->n_input, cond);
    for (size_t k = 0; k < n->n_output; k++)
        add_name(&w->output, &w->n_output, n->output[k]);
    Onnx__NodeProto *copy = loop || xm_below(r, 4) == 0 ? NULL : xm_clone(n);
    Onnx__GraphProto *body = body_of(n);
    if (loop && body) { /* body(iteration, cond_in) -> (cond_out, n's outputs as scan outputs) */
        Onnx__NodeProto *id = new_node("Identity");
        Onnx__ValueInfoProto *in[2] = {new_info("xm_iter"), new_info("xm_cond_in")},
                             *out = new_info("xm_cond_out");
        for (int k = 0; k < 2; k++)
            if (in[k])
                xm_insert((void ***)&body->input, &body->n_input, body->n_input, in[k]);
        if (out)
            xm_insert((void ***)&body->output, &body->n_output, 0, out);
        if (id) {
            add_name(&id->input, &id->n_input, "xm_cond_in");
            add_name(&id->output, &id->n_output, "xm_cond_out");
            xm_insert((void ***)&body->node, &body->n_node, body->n_node, id);
        }
    }
    add_graph_attr(w, loop ? "body" : "then_branch", body);
    if (!loop)
        add_graph_attr(w, "else_branch", copy ? body_of(copy) : new_graph());
    return w;
}

bool xm_mut_nest(xm_ctx *c)
{
    int i = xm_pick(c, &c->nodes);
    if (i < 0 || c->nodes.depth[i] >= XM_MAX_NEST)
        return false;
    Onnx__NodeProto *n = c->nodes.p[i];
    Onnx__GraphProto *g = c->nodes.owner[i];
    size_t at = 0;
    while (at < g->n_node && g->node[at] != n)
        at++;
    if (at == g->n_node)
        return false;
    int times = xm_below(&c->r, 4) ? 1 : 2 + (int)xm_below(&c->r, 5);
    if (times > XM_MAX_NEST - c->nodes.depth[i])
        times = XM_MAX_NEST - c->nodes.depth[i];
    char cond[32];
    snprintf(cond, sizeof cond, "xm_c%llx", (unsigned long long)(xm_next(&c->r) & 0xffff));
    bool computed = xm_below(&c->r, 4) == 0 && n->n_input; /* a condition known only at run time */
    if (computed)
        snprintf(cond, sizeof cond, "%.31s", n->input[0]);
    for (int k = 0; k < times && n; k++)
        n = wrap(&c->r, n, cond);
    g->node[at] = n;
    if (!n) { /* out of memory: the node is gone */
        memmove(g->node + at, g->node + at + 1, (g->n_node - at - 1) * sizeof *g->node);
        g->n_node--;
    }
    Onnx__NodeProto *k = computed ? NULL : bool_constant(&c->r, cond);
    if (k)
        xm_insert((void ***)&g->node, &g->n_node, at, k);
    return true;
}

/* ---- nodes ---------------------------------------------------------------------------------- */

static size_t index_in(const Onnx__GraphProto *g, const Onnx__NodeProto *n)
{
    size_t at = 0;
    while (at < g->n_node && g->node[at] != n)
        at++;
    return at;
}

/* Removes node at from g (not freed); returns it. */
static Onnx__NodeProto *take(Onnx__GraphProto *g, size_t at)
{
    Onnx__NodeProto *n = g->node[at];
    memmove(g->node + at, g->node + at + 1, (g->n_node - at - 1) * sizeof *g->node);
    g->n_node--;
    return n;
}

/* Moves n into a graph no deeper than it (so not one inside it). */
static bool move_node(xm_ctx *c, int i, size_t at)
{
    int j = xm_pick(c, &c->graphs);
    if (j < 0 || c->graphs.depth[j] > c->nodes.depth[i] || c->graphs.p[j] == c->nodes.owner[i])
        return false;
    Onnx__GraphProto *to = c->graphs.p[j];
    xm_insert((void ***)&to->node, &to->n_node, xm_below(&c->r, to->n_node + 1),
              take(c->nodes.owner[i], at));
    return true;
}

bool xm_mut_nodes(xm_ctx *c)
{
    int i = xm_pick(c, &c->nodes);
    if (i < 0)
        return false;
    Onnx__GraphProto *g = c->nodes.owner[i];
    size_t at = index_in(g, c->nodes.p[i]);
    if (at == g->n_node)
        return false;
    switch (xm_below(&c->r, 4)) {
    case 0: { /* a copy: two producers of each output */
        Onnx__NodeProto *copy = xm_clone(g->node[at]);
        if (copy)
            xm_insert((void ***)&g->node, &g->n_node, xm_below(&c->r, g->n_node + 1), copy);
        return copy != NULL;
    }
    case 1:
        onnx__node_proto__free_unpacked(take(g, at), NULL);
        return true;
    case 2: { /* out of order: a reader before its producer */
        size_t other = xm_below(&c->r, g->n_node);
        Onnx__NodeProto *t = g->node[at];
        g->node[at] = g->node[other];
        g->node[other] = t;
        return true;
    }
    default:
        return move_node(c, i, at);
    }
}

/* ---- graph inputs, outputs and initializers ------------------------------------------------- */

static char *value_name(xm_ctx *c)
{
    int i = xm_pick(c, &c->values);
    return i >= 0 && xm_below(&c->r, 4) ? xm_strdup(c->values.p[i]) : xm_string(&c->r);
}

static void add_info(xm_ctx *c, Onnx__ValueInfoProto ***arr, size_t *n)
{
    char *name = value_name(c);
    Onnx__ValueInfoProto *v = name ? new_info(name) : NULL;
    free(name);
    if (v)
        xm_insert((void ***)arr, n, xm_below(&c->r, *n + 1), v);
}

static void drop_info(xm_rng *r, Onnx__ValueInfoProto **arr, size_t *n)
{
    if (!*n)
        return;
    size_t k = xm_below(r, *n);
    onnx__value_info_proto__free_unpacked(arr[k], NULL);
    memmove(arr + k, arr + k + 1, (*n - k - 1) * sizeof *arr);
    (*n)--;
}

/* An initializer removed, duplicated (one name twice) or added (named as a value, or anyhow). */
static bool mut_initializer(xm_ctx *c, Onnx__GraphProto *g)
{
    size_t k = xm_below(&c->r, g->n_initializer);
    unsigned how = (unsigned)xm_below(&c->r, 3);
    if (how == 0 && g->n_initializer) {
        onnx__tensor_proto__free_unpacked(g->initializer[k], NULL);
        memmove(g->initializer + k, g->initializer + k + 1,
                (g->n_initializer - k - 1) * sizeof *g->initializer);
        g->n_initializer--;
        return true;
    }
    Onnx__TensorProto *t =
        how == 1 && g->n_initializer ? xm_clone(g->initializer[k]) : xm_tensor_new(&c->r);
    if (!t)
        return false;
    if (how != 1 || !g->n_initializer)
        t->name = value_name(c);
    xm_insert((void ***)&g->initializer, &g->n_initializer, xm_below(&c->r, g->n_initializer + 1),
              t);
    return true;
}

bool xm_mut_graph_io(xm_ctx *c)
{
    int i = xm_pick(c, &c->graphs);
    if (i < 0)
        return false;
    Onnx__GraphProto *g = c->graphs.p[i];
    switch (xm_below(&c->r, 6)) {
    case 0:
        add_info(c, &g->output, &g->n_output);
        return true;
    case 1:
        drop_info(&c->r, g->output, &g->n_output);
        return true;
    case 2: /* an input named as a node's output or an initializer: two definitions */
        add_info(c, &g->input, &g->n_input);
        return true;
    case 3:
        drop_info(&c->r, g->input, &g->n_input);
        return true;
    default:
        return mut_initializer(c, g);
    }
}
