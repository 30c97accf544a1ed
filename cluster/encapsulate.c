/*
 * Encapsulation: the graph after mark-for-compilation, where each cluster
 * is replaced by one launch node whose body holds the cluster's ops.
 *
 *   cluster_K = xlac_launch(ext_in..., @cluster="cluster_K", @device="XLA_CPU:0") {
 *     input ext_in: TYPE            # named after the value entering the cluster
 *     ...the cluster's ops, names, attributes, lines and devices kept...
 *     output v                      # each value used outside (or a graph output)
 *   }
 *   v = get(cluster_K, index=I)     # the ORIGINAL name: downstream is unchanged
 *
 * The steps:
 *   1. which cluster values are used outside their cluster;
 *   2. an order of the contracted graph (each cluster one unit): units are
 *      visited by their first node and each emits its producers first, so
 *      the result is topological and depends only on node indices;
 *   3. emission: plain nodes are copied, a cluster becomes its launch node
 *      (with the body) and one get per output;
 *   4. inputs, outputs, shape inference of the new graph.
 */
#include <stdlib.h>
#include <string.h>

#include "xc.h"
#include "xlac/op.h"

typedef struct encap {
    const xe_graph *g;
    const xc_clustering *c;
    int launch_op;
    xe_graph *ng;
    int *valmap;   /* per node of g: the node of ng holding its value */
    bool *outside; /* per node of g: its value leaves its cluster */
    int *bodymap;  /* per node of g: its index in the body being built, or -1 */
    char *state;   /* per unit: 0 new, 1 in progress, 2 emitted */
    int *order;    /* units in emission order */
    int n_order;
} encap;

const char *xc_xla_device_name(xe_device dev)
{
    return xe_device_xla_name(dev);
}

static int unit_of(const encap *e, int i)
{
    int k = e->c->cluster[i];
    return k >= 0 ? e->g->n_nodes + k : i;
}

/* ---- 1. values leaving their cluster -------------------------------------- */

static xe_code find_outside(encap *e, xe_status *st)
{
    const xe_graph *g = e->g;
    const int *cl = e->c->cluster;
    int *uses = xe_graph_use_counts(g);
    if (!uses)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int i = 0; i < g->n_outputs; i++)
        e->outside[g->outputs[i]] = true;
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (cl[n->inputs[k]] != cl[i])
                e->outside[n->inputs[k]] = true;
        /* a value nobody uses still leaves its cluster, so every body has an output */
        if (uses[i] == 0)
            e->outside[i] = true;
    }
    free(uses);
    return XE_OK;
}

/* ---- 2. order of the contracted graph -------------------------------------- */

static bool visit(encap *e, int u, xe_status *st);

/* Visits the producer units of node i (other than its own unit). */
static bool visit_inputs(encap *e, int i, xe_status *st)
{
    const xe_node *n = e->g->nodes[i];
    for (int k = 0; k < n->n_inputs; k++) {
        int u = unit_of(e, n->inputs[k]);
        if (u != unit_of(e, i) && !visit(e, u, st))
            return false;
    }
    return true;
}

static bool visit(encap *e, int u, xe_status *st)
{
    if (e->state[u] == 2)
        return true;
    if (e->state[u] == 1) {
        xe_fail(st, XE_ERR_GRAPH, "internal: contracting the clusters created a cycle");
        return false;
    }
    e->state[u] = 1;
    int n = e->g->n_nodes;
    if (u < n) {
        if (!visit_inputs(e, u, st))
            return false;
    } else {
        const xc_cluster *k = &e->c->clusters[u - n];
        for (int j = 0; j < k->n_nodes; j++)
            if (!visit_inputs(e, k->nodes[j], st))
                return false;
    }
    e->state[u] = 2;
    e->order[e->n_order++] = u;
    return true;
}

static xe_code order_units(encap *e, xe_status *st)
{
    for (int i = 0; i < e->g->n_nodes; i++)
        if (!visit(e, unit_of(e, i), st))
            return st->code;
    return XE_OK;
}

/* ---- 3. emission ------------------------------------------------------------ */

static const char *const stale[] = {"@cluster", "@device", "@reason"};

/* Adds a copy of node s to dst with inputs remapped through map, without clustering annotations. */
static int copy_node(xe_graph *dst, const xe_node *s, const int *map, xe_status *st)
{
    int *in = malloc((size_t)(s->n_inputs ? s->n_inputs : 1) * sizeof *in);
    if (!in)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory"), -1;
    for (int k = 0; k < s->n_inputs; k++)
        in[k] = map[s->inputs[k]];
    int idx = xe_graph_add_node(dst, s->name, s->op, in, s->n_inputs, st);
    free(in);
    if (idx >= 0 && xe_node_copy_payload(dst->nodes[idx], s, st) != XE_OK)
        return -1;
    if (idx >= 0 &&
        !s->body) /* annotations of an earlier clustering (a re-run dump) no longer hold */
        for (size_t k = 0; k < sizeof stale / sizeof stale[0]; k++)
            xe_node_remove_attr(dst->nodes[idx], stale[k]);
    return idx;
}

/* The external inputs of cluster k become body inputs (first use first). */
static xe_code body_inputs(encap *e, int k, xe_graph *body, int **ext, int *n_ext, xe_status *st)
{
    const xc_cluster *cl = &e->c->clusters[k];
    int total = 1;
    for (int j = 0; j < cl->n_nodes; j++)
        total += e->g->nodes[cl->nodes[j]]->n_inputs;
    if (!(*ext = malloc((size_t)total * sizeof **ext)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int j = 0; j < cl->n_nodes; j++) {
        const xe_node *n = e->g->nodes[cl->nodes[j]];
        for (int q = 0; q < n->n_inputs; q++) {
            int p = n->inputs[q];
            if (e->c->cluster[p] == k || e->bodymap[p] >= 0)
                continue;
            const xe_node *src = e->g->nodes[p];
            int bi = xe_graph_add_input(body, src->name, &src->type, st);
            if (bi < 0)
                return st->code;
            body->nodes[bi]->device = cl->device;
            e->bodymap[p] = bi;
            (*ext)[(*n_ext)++] = p;
        }
    }
    return XE_OK;
}

/* The body of cluster k: inputs, the cluster's nodes, outputs. */
static xe_graph *build_body(encap *e, int k, int **ext, int *n_ext, xe_status *st)
{
    const xc_cluster *cl = &e->c->clusters[k];
    xe_graph *body = xe_graph_new(e->g->file);
    if (!body) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    xe_code c = body_inputs(e, k, body, ext, n_ext, st);
    for (int j = 0; c == XE_OK && j < cl->n_nodes; j++) {
        int i = cl->nodes[j];
        int bi = copy_node(body, e->g->nodes[i], e->bodymap, st);
        if (bi < 0) {
            c = st->code;
            break;
        }
        body->nodes[bi]->device = cl->device; /* constants follow their cluster */
        body->nodes[bi]->jit = -1;
        e->bodymap[i] = bi;
    }
    for (int j = 0; c == XE_OK && j < cl->n_nodes; j++)
        if (e->outside[cl->nodes[j]])
            c = xe_graph_add_output(body, e->bodymap[cl->nodes[j]], st);
    for (int j = 0; j < *n_ext; j++)
        e->bodymap[(*ext)[j]] = -1;
    for (int j = 0; j < cl->n_nodes; j++)
        e->bodymap[cl->nodes[j]] = -1;
    if (c != XE_OK) {
        xe_graph_destroy(body);
        return NULL;
    }
    return body;
}

/* A launch node name free in both graphs: cluster_K, else cluster_K_1, ... */
static char *launch_name(const encap *e, const char *base)
{
    size_t len = strlen(base) + 24;
    char *s = malloc(len);
    if (!s)
        return NULL;
    snprintf(s, len, "%s", base);
    for (int k = 1; xe_graph_find(e->g, s) >= 0 || xe_graph_find(e->ng, s) >= 0; k++)
        snprintf(s, len, "%s_%d", base, k);
    return s;
}

/* Adds the launch node of cluster k (taking body) to the new graph. */
static int add_launch(encap *e, int k, xe_graph *body, const int *ext, int n_ext, xe_status *st)
{
    const xc_cluster *cl = &e->c->clusters[k];
    int *in = malloc((size_t)(n_ext ? n_ext : 1) * sizeof *in);
    char *name = launch_name(e, cl->name);
    int idx = -1;
    if (!in || !name) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
    } else {
        for (int j = 0; j < n_ext; j++)
            in[j] = e->valmap[ext[j]];
        idx = xe_graph_add_node(e->ng, name, e->launch_op, in, n_ext, st);
    }
    free(in);
    free(name);
    if (idx < 0) {
        xe_graph_destroy(body);
        return -1;
    }
    xe_node *n = e->ng->nodes[idx];
    n->body = body;
    n->device = cl->device;
    if (xe_node_set_string(n, "@cluster", cl->name, st) != XE_OK ||
        xe_node_set_string(n, "@device", xc_xla_device_name(cl->device), st) != XE_OK ||
        (cl->must_compile && xe_node_set_bool(n, "must_compile", true, st) != XE_OK))
        return -1;
    return idx;
}

/* One get per body output, under the original name. */
static xe_code add_gets(encap *e, int k, int launch, xe_status *st)
{
    const xc_cluster *cl = &e->c->clusters[k];
    int out = 0;
    for (int j = 0; j < cl->n_nodes; j++) {
        int i = cl->nodes[j];
        if (!e->outside[i])
            continue;
        const xe_node *s = e->g->nodes[i];
        int idx = xe_graph_add_node(e->ng, s->name, XE_OP_GET, &launch, 1, st);
        if (idx < 0)
            return st->code;
        xe_node *n = e->ng->nodes[idx];
        n->type = s->type;
        n->line = s->line;
        n->col = s->col;
        n->device = cl->device;
        if (xe_node_set_int(n, "index", out++, st) != XE_OK)
            return st->code;
        /* the model's own name of a graph output whose node could not take it (names.c) */
        const char *model_name = xe_node_attr_string(s, "@output", NULL);
        if (model_name && xe_node_set_string(n, "@output", model_name, st) != XE_OK)
            return st->code;
        e->valmap[i] = idx;
    }
    return XE_OK;
}

static xe_code emit_cluster(encap *e, int k, xe_status *st)
{
    int *ext = NULL, n_ext = 0;
    xe_graph *body = build_body(e, k, &ext, &n_ext, st);
    xe_code c = XE_OK;
    int launch = -1;
    if (!body)
        c = st->code != XE_OK ? st->code : xe_fail(st, XE_ERR_RUNTIME, "internal: no body");
    else if ((launch = add_launch(e, k, body, ext, n_ext, st)) < 0)
        c = st->code;
    else
        c = add_gets(e, k, launch, st);
    free(ext);
    return c;
}

static xe_code emit_units(encap *e, xe_status *st)
{
    int n = e->g->n_nodes;
    for (int j = 0; j < e->n_order; j++) {
        int u = e->order[j];
        if (u >= n) {
            if (emit_cluster(e, u - n, st) != XE_OK)
                return st->code;
            continue;
        }
        int idx = copy_node(e->ng, e->g->nodes[u], e->valmap, st);
        if (idx < 0)
            return st->code;
        e->valmap[u] = idx;
    }
    return XE_OK;
}

/* ---- 4. inputs, outputs, inference ---------------------------------------- */

static xe_code finish(encap *e, xe_status *st)
{
    const xe_graph *g = e->g;
    xe_graph *ng = e->ng;
    if (g->n_inputs && !(ng->inputs = malloc((size_t)g->n_inputs * sizeof *ng->inputs)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int i = 0; i < g->n_inputs; i++)
        ng->inputs[i] = e->valmap[g->inputs[i]];
    ng->n_inputs = g->n_inputs;
    for (int i = 0; i < g->n_outputs; i++)
        if (xe_graph_add_output(ng, e->valmap[g->outputs[i]], st) != XE_OK)
            return st->code;
    ng->n_jit = g->n_jit;
    return xe_graph_infer(ng, st);
}

static void encap_free(encap *e)
{
    free(e->valmap);
    free(e->outside);
    free(e->bodymap);
    free(e->state);
    free(e->order);
}

static xe_code encap_alloc(encap *e, xe_status *st)
{
    size_t n = (size_t)e->g->n_nodes + 1, units = n + (size_t)e->c->n_clusters;
    e->valmap = malloc(n * sizeof *e->valmap);
    e->outside = calloc(n, sizeof *e->outside);
    e->bodymap = malloc(n * sizeof *e->bodymap);
    e->state = calloc(units, 1);
    e->order = malloc(units * sizeof *e->order);
    e->ng = xe_graph_new(e->g->file);
    if (!e->valmap || !e->outside || !e->bodymap || !e->state || !e->order || !e->ng)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        e->valmap[i] = e->bodymap[i] = -1;
    return XE_OK;
}

xe_graph *xc_encapsulate(const xe_graph *g, const xc_clustering *c, int launch_op, xe_status *st)
{
    if (c->n_nodes != g->n_nodes) {
        xe_fail(st, XE_ERR_USAGE, "xc_encapsulate: the clustering belongs to another graph");
        return NULL;
    }
    encap e = {.g = g, .c = c, .launch_op = launch_op};
    xe_code code = encap_alloc(&e, st);
    if (code == XE_OK)
        code = find_outside(&e, st); /* 1. */
    if (code == XE_OK)
        code = order_units(&e, st); /* 2. */
    if (code == XE_OK)
        code = emit_units(&e, st); /* 3. */
    if (code == XE_OK)
        code = finish(&e, st); /* 4. */
    xe_graph *ng = e.ng;
    encap_free(&e);
    if (code != XE_OK) {
        xe_graph_destroy(ng);
        return NULL;
    }
    return ng;
}
