/*
 * The last step of an import: the graph built with temporary names is
 * copied into the final graph, keeping only the nodes a graph output needs
 * (graph inputs always stay), each under its final name: an ONNX node's
 * output node is named after the ONNX node (or after its output value when
 * the node has no name, several outputs, or the value is a graph output),
 * helper nodes NAME.K, graph inputs after the ONNX inputs. Names are made
 * valid .xg identifiers ([A-Za-z_][A-Za-z0-9_.]*, other characters become
 * '_') and unique; where that changed an ONNX name, the node carries the
 * original as the annotation @onnx="...", so dumps show it. A graph output
 * whose value is not a node of its own (an input, or an alias) gets a
 * `cast` to its own dtype (a copy) named after it. A graph output whose
 * node could not take the output's name (x_1 beside input x) carries that
 * name as @output="x": the CLI saves it as x.npy, the Python package calls
 * the output x. A graph output that is a sequence of n tensors (its length
 * known at import) is n graph outputs, VALUE.0 to VALUE.n-1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

/* live[i]: some graph output depends on node i (inputs are always live). */
static bool *mark_live(const xe_graph *g, const int *outs, int n_outs)
{
    bool *live = calloc((size_t)g->n_nodes + 1, sizeof *live);
    if (!live)
        return NULL;
    for (int k = 0; k < g->n_inputs; k++)
        live[g->inputs[k]] = true;
    for (int k = 0; k < n_outs; k++)
        live[outs[k]] = true;
    for (int i = g->n_nodes - 1; i >= 0; i--)
        for (int k = 0; live[i] && k < g->nodes[i]->n_inputs; k++)
            live[g->nodes[i]->inputs[k]] = true;
    return live;
}

/* Copies node i of c->g into ng under its final name; map[] takes old -> new. */
static xe_code copy_node(ox_ctx *c, xe_graph *ng, int i, int *map, xe_status *st)
{
    const xe_node *n = c->g->nodes[i];
    char *name = xe_graph_fresh_name(ng, c->want[i] ? c->want[i] : "t");
    if (!name)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    int in[OX_MAX_IO + 8],
        *ins = n->n_inputs > OX_MAX_IO + 8 ? malloc((size_t)n->n_inputs * sizeof *ins) : in;
    if (!ins) {
        free(name);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < n->n_inputs; k++)
        ins[k] = map[n->inputs[k]];
    int x = n->op == XE_OP_INPUT ? xe_graph_add_input(ng, name, &n->type, st)
                                 : xe_graph_add_node(ng, name, n->op, ins, n->n_inputs, st);
    if (ins != in)
        free(ins);
    xe_code code = x < 0 ? st->code : xe_node_copy_payload(ng->nodes[x], n, st);
    if (code == XE_OK && c->orig[i] && strcmp(c->orig[i], name))
        code = xe_node_set_string(ng->nodes[x], "@onnx", c->orig[i], st);
    free(name);
    map[i] = x;
    return code;
}

/* Graph output k (value name, node x in ng): a copy when x is not its own node. */
static xe_code add_output(xe_graph *ng, const char *value, int x, bool *used, xe_status *st)
{
    char *want = ox_sanitize(value);
    if (!want)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    xe_node *n = ng->nodes[x];
    xe_code code = XE_OK;
    if (strcmp(n->name, want) || used[x] || n->op == XE_OP_INPUT) {
        char *name = xe_graph_fresh_name(ng, want);
        int y = name ? xe_graph_add_node(ng, name, XE_OP_CAST, &x, 1, st) : -1;
        if (y >= 0 && xe_node_set_dtype(ng->nodes[y], "to", n->type.dtype, st) == XE_OK &&
            xe_node_infer(ng, ng->nodes[y], st) == XE_OK && strcmp(name, value))
            xe_node_set_string(ng->nodes[y], "@onnx", value, st);
        code = !name ? xe_fail(st, XE_ERR_NOMEM, "out of memory") : st->code;
        x = y;
        free(name);
    }
    free(want);
    /* the model's own name of the output, where the node could not take it (x_1 beside input x, y_0
     * for y:0) */
    if (code == XE_OK && x >= 0 && strcmp(ng->nodes[x]->name, value))
        code = xe_node_set_string(ng->nodes[x], "@output", value, st);
    if (code == XE_OK && x >= 0) {
        used[x] = true;
        code = xe_graph_add_output(ng, x, st);
    }
    return code;
}

static xe_code copy_graph(ox_ctx *c, xe_graph *ng, const int *outs, char *const *names, int n_outs,
                          xe_status *st)
{
    bool *live = mark_live(c->g, outs, n_outs);
    int *map = calloc((size_t)c->g->n_nodes + 1, sizeof *map);
    bool *used = calloc((size_t)c->g->n_nodes + (size_t)n_outs + 1, sizeof *used);
    xe_code code = live && map && used ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (code == XE_OK)
        code = ox_names_reserve(c, c->g->n_nodes, st);
    for (int i = 0; i < c->g->n_nodes && code == XE_OK; i++)
        if (live[i])
            code = copy_node(c, ng, i, map, st);
    for (int k = 0; k < n_outs && code == XE_OK; k++)
        code = add_output(ng, names[k], map[outs[k]], used, st);
    free(live);
    free(map);
    free(used);
    return code;
}

/* Graph outputs flattened into outs and names (n of them): a tensor is one, a sequence of n is n,
   named VALUE.0 to VALUE.n-1 (an import where every sequence's length is known: ox_seq). */
typedef struct out_list {
    int n;
    int *outs;
    char **names; /* owned */
} out_list;

static xe_code list_outputs(ox_ctx *c, out_list *l, xe_status *st)
{
    const Onnx__GraphProto *og = c->model->graph;
    size_t total = 0;
    for (size_t k = 0; k < og->n_output; k++) {
        const ox_value *v = ox_value_find(c, og->output[k]->name);
        total += v && v->seq ? (size_t)v->seq->n : 1;
    }
    l->outs = calloc(total + 1, sizeof *l->outs);
    l->names = calloc(total + 1, sizeof *l->names);
    if (!l->outs || !l->names)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (ox_names_reserve(c, c->g->n_nodes, st) != XE_OK)
        return st->code;
    for (size_t k = 0; k < og->n_output; k++) {
        const char *name = og->output[k]->name;
        const ox_value *v = ox_value_find(c, name);
        for (int e = 0; e < (v && v->seq ? v->seq->n : 1); e++) {
            char buf[32];
            snprintf(buf, sizeof buf, ".%d", e);
            size_t len = strlen(name) + (v && v->seq ? strlen(buf) : 0) + 1;
            if (!(l->names[l->n] = malloc(len)))
                return xe_fail(st, XE_ERR_NOMEM, "out of memory");
            snprintf(l->names[l->n], len, "%s%s", name, v && v->seq ? buf : "");
            int x = l->outs[l->n++] = v && v->seq ? v->seq->nodes[e] : v ? v->node : -1;
            if (v && v->seq && !c->final[x] && c->g->nodes[x]->op != XE_OP_INPUT) {
                /* a helper node: named after the element, as ox_out names an output's node */
                if (ox_want_name(c, x, l->names[l->n - 1], NULL, st) != XE_OK)
                    return st->code;
                c->final[x] = 1;
            }
        }
    }
    return XE_OK;
}

xe_graph *ox_finish(ox_ctx *c, xe_status *st)
{
    out_list l = {0};
    xe_graph *ng = xe_graph_new(c->path);
    xe_code code = ng ? list_outputs(c, &l, st) : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (code == XE_OK)
        code = copy_graph(c, ng, l.outs, l.names, l.n, st);
    for (int k = 0; l.names && k < l.n; k++)
        free(l.names[k]);
    free(l.names);
    free(l.outs);
    if (code == XE_OK)
        code = xe_graph_infer(ng, st);
    if (code != XE_OK) {
        xe_graph_destroy(ng);
        return NULL;
    }
    return ng;
}
