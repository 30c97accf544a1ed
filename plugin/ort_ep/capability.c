/*
 * GetCapability: which of onnxruntime's nodes xlac takes, decided by the
 * plugin's own clustering pass on xlac's own graph of them.
 *
 *   1. candidates: nodes of the ONNX domain whose values have tensor types
 *      xlac holds (a node with a subgraph, another domain or an unknown
 *      type stays with onnxruntime);
 *   2. the candidates as one ONNX model, imported by xlac; a node the
 *      importer refuses is named in its report and left out, and the
 *      import is tried again (a few times at most);
 *   3. the plugin's pass (xlac_pass: XLAC_AUTO_JIT's level, XLAC_FLAGS,
 *      --clustering_debug's dumps and summary) on that graph;
 *   4. each launch node's body, by its nodes' names (onnxpb.c), is a group
 *      of onnxruntime nodes: a node goes to the cluster that holds all of
 *      its xlac nodes; one whose nodes all folded away at import (shape
 *      arithmetic) goes with the group that reads all it writes;
 *   5. a group with a node of onnxruntime's on a path between two of its
 *      nodes is dropped (onnxruntime could not fuse it), and each group is
 *      imported on its own, as Compile will see it, and dropped when xlac
 *      cannot build it (a shape it needs that onnxruntime computes);
 *   6. each group is handed to onnxruntime as one node to fuse, with its
 *      constant initializers as inputs (no copy of them is kept).
 * The clusters counted in --stats are those the fused nodes run (compute.c).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/io.h"
#include "xlac/op.h"
#include "xo.h"

#define XO_IMPORT_TRIES 4

typedef struct plan {
    const xo_api *a;
    xo_model m;
    bool *take;    /* per node: a candidate (1., 2.) */
    bool *refused; /* per node: the importer refused it (2.) */
    int *group;    /* per node: its group, -1 none (4.) */
    int n_groups;
    int *first, *readers; /* the nodes reading value v: readers[first[v] .. first[v + 1]) */
    int id;               /* this graph's number (dump file names) */
    bool debug;           /* --clustering_debug */
} plan;

/* ---- 1. candidates ------------------------------------------------------------ */

static bool onnx_domain(const char *d)
{
    return !d[0] || !strcmp(d, "ai.onnx");
}

static bool typed(const xo_value *v)
{
    return xo_elem_size(v->elem) && v->rank >= 0;
}

/* take[k] for every node xlac could import; a node reading an untyped value of a node left out is
 * left out. */
static void candidates(plan *p)
{
    const xo_model *m = &p->m;
    for (int k = 0; k < m->n_nodes; k++)
        p->take[k] = !m->nodes[k].refuse && !p->refused[k] && onnx_domain(m->nodes[k].domain);
    for (int k = 0; k < m->n_nodes; k++) /* in order: a writer is decided before its readers */
        for (int j = 0; p->take[k] && j < m->nodes[k].n_in; j++) {
            int v = m->nodes[k].in[j];
            int w = v >= 0 ? m->values[v].producer : -1;
            if (v >= 0 && m->values[v].name[0] && (w < 0 || !p->take[w]) && !typed(&m->values[v]))
                p->take[k] = false;
        }
}

/* ---- 2. the import --------------------------------------------------------------- */

/* Leaves out every node the report names ("node 'n<K>' ("); false when it names none. */
static bool leave_out_reported(plan *p, const char *report)
{
    bool any = false;
    for (const char *s = report; s && (s = strstr(s, "node 'n")); s += 7) {
        char *end;
        long k = strtol(s + 7, &end, 10);
        if (end != s + 7 && *end == '\'' && k >= 0 && k < p->m.n_nodes && !p->refused[k]) {
            p->refused[k] = true;
            any = true;
        }
    }
    return any;
}

/* DIR/ort_graph_ID.onnx: the model xlac read from onnxruntime's graph (--clustering_debug), every
 * node. */
static void dump_model(plan *p)
{
    const char *dir = xo_g.state.flags.dump_graph_prefix;
    size_t len;
    int *ins = NULL, n_ins;
    xe_status st;
    xe_status_clear(&st);
    bool *all =
        malloc((size_t)p->m.n_nodes + 1); /* every node read (a refused one has no attributes) */
    for (int k = 0; all && k < p->m.n_nodes; k++)
        all[k] = !p->m.nodes[k].refuse;
    char *bytes =
        dir && all ? xo_model_write(p->a, &p->m, all, NULL, 0, &len, &ins, &n_ins, &st) : NULL;
    free(all);
    char path[4096];
    snprintf(path, sizeof path, "%s/ort_graph_%d.onnx", dir ? dir : ".", p->id);
    FILE *f = bytes && xe_mkdirs(dir, 0777, &st) == XE_OK ? fopen(path, "wb") : NULL;
    bool ok = f && fwrite(bytes, 1, len, f) == len;
    if (f)
        ok = fclose(f) == 0 && ok;
    if (dir && !ok)
        fprintf(stderr, "xlac: warning: %s not written; the run goes on\n", path);
    free(bytes);
    free(ins);
}

/* The candidates imported, leaving out the nodes the importer refuses; NULL when none can be. */
static xe_graph *import_all(plan *p, xe_status *st)
{
    for (int tries = 0; tries < XO_IMPORT_TRIES; tries++) {
        char *report = NULL;
        int *ins = NULL, n_ins = 0;
        xe_graph *g = xo_model_import(p->a, &p->m, p->take, NULL, 0, &ins, &n_ins, &report, st);
        free(ins);
        if (g) {
            free(report);
            return g;
        }
        bool again = leave_out_reported(p, report ? report : st->msg);
        if (again)
            candidates(p);
        free(report);
        if (!again)
            break;
    }
    if (p->debug)
        fprintf(
            stderr,
            "xlac: onnxruntime graph %d: xlac cannot import it (%s): onnxruntime runs all of it\n",
            p->id, st->msg);
    xe_status_clear(st);
    return NULL;
}

/* ---- 3. the pass, 4. clusters back to onnxruntime's nodes ------------------------------ */

/* The model node an xlac node of the import comes from (its name: n<K>[.I] or v<J>[...]), -1 if
 * none. */
static int origin(const xo_model *m, const char *name)
{
    char *end;
    if ((name[0] != 'n' && name[0] != 'v') || name[1] < '0' || name[1] > '9')
        return -1;
    long k = strtol(name + 1, &end, 10);
    if (name[0] == 'n')
        return k < m->n_nodes ? (int)k : -1;
    return k < m->n_values ? m->values[k].producer : -1;
}

/* Node k's xlac nodes seen in cluster c (-1: outside every cluster): its cluster, or -1 once they
 * disagree. */
static void note(int *where, int k, int c)
{
    if (k >= 0)
        where[k] = where[k] == -2 || where[k] == c ? c : -1;
}

/* Whether a cluster computes nothing: casts and data movement alone (reshape, transpose, slice,
   concat, broadcast_to). onnxruntime runs those as views and single copies; a fused node would add
   its launch and a copy of each output for nothing fused (measured: docs/onnxruntime-ep.md). */
static bool moves_only(const xe_graph *body)
{
    for (int j = 0; j < body->n_nodes; j++) {
        const xe_op_def *d = xe_op_get(body->nodes[j]->op);
        if (!d || (d->cls != XE_CLASS_SOURCE && d->cls != XE_CLASS_STRUCTURE &&
                   d->cls != XE_CLASS_CAST && d->cls != XE_CLASS_SHAPE))
            return false;
    }
    return true;
}

/* Whether a cluster is a convolution network's: convolutions at least a third of its products
   (conv2d against matmul). onnxruntime's CPU EP runs those faster than a fused node does: the
   real-models bench had ResNet, MobileNetV2, EfficientNet and ConvNeXt-T (22 convolutions beside
   36 products, 38 %) at 0.37-0.78x onnxruntime with them taken, while ViT, Whisper and the other
   transformers, whose one or two convolutions embed the input (at most 8 % of their products),
   were at 0.80-1.25x (docs/onnxruntime-ep.md). */
static bool conv_network(const xe_graph *body)
{
    int convs = 0, products = 0;
    for (int j = 0; j < body->n_nodes; j++) {
        convs += body->nodes[j]->op == XE_OP_CONV2D;
        products += body->nodes[j]->op == XE_OP_CONV2D || body->nodes[j]->op == XE_OP_MATMUL;
    }
    return convs > 0 && 3 * convs >= products;
}

/* Why onnxruntime keeps a cluster of xlac's pass, or NULL when the EP takes it. */
static const char *left_to_onnxruntime(const xe_graph *body)
{
    if (moves_only(body))
        return "only casts and data movement, nothing to fuse";
    if (conv_network(body))
        return "a convolution network's (convolutions a third of its products or more), which "
               "onnxruntime's CPU EP runs faster";
    return NULL;
}

/* where[k]: the cluster holding every xlac node of model node k; -1 when none does (or its cluster
   is left to onnxruntime); -2 when it has none. */
static void clusters_of(const plan *p, const xe_graph *g, int *where)
{
    int launch = xo_g.state.launch_op, c = 0;
    for (int k = 0; k < p->m.n_nodes; k++)
        where[k] = -2;
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        if (n->op == launch && n->body) {
            const char *why = left_to_onnxruntime(n->body);
            if (why && p->debug)
                fprintf(stderr, "xlac: onnxruntime graph %d: %s left to onnxruntime: %s\n", p->id,
                        n->name, why);
            for (int j = 0; j < n->body->n_nodes; j++)
                if (n->body->nodes[j]->op != XE_OP_INPUT && n->body->nodes[j]->op != XE_OP_CONST)
                    note(where, origin(&p->m, n->body->nodes[j]->name), why ? -1 : c);
            c++;
        } else if (n->op != XE_OP_INPUT && n->op != XE_OP_CONST && n->op != XE_OP_GET) {
            note(where, origin(&p->m, n->name), -1);
        }
    }
}

/* A node whose xlac nodes all folded joins the group that reads everything it writes (readers
 * first). */
static void attach_folded(plan *p, const int *where)
{
    const xo_model *m = &p->m;
    for (int k = m->n_nodes - 1; k >= 0; k--) {
        if (!p->take[k] || where[k] != -2)
            continue;
        int g = -1;
        bool ok = true;
        for (int j = 0; ok && j < m->nodes[k].n_out; j++) {
            int v = m->nodes[k].out[j];
            ok = v < 0 || !m->values[v].graph_output;
            for (int r = v >= 0 ? p->first[v] : 0; ok && v >= 0 && r < p->first[v + 1]; r++) {
                int reader = p->readers[r];
                ok = p->group[reader] >= 0 && (g < 0 || g == p->group[reader]);
                g = p->group[reader];
            }
        }
        if (ok && g >= 0)
            p->group[k] = g;
    }
}

/* The pass on g, and the groups it makes (p->group). */
static xe_code make_groups(plan *p, xe_graph *g, const char *config, xe_status *st)
{
    xe_pass_ctx ctx = {.session_id = p->id, .place_mode = XE_PLACE_CPU, .plugin_config = config};
    unsigned long long before = atomic_load(&xo_g.state.n_clusters);
    if (xe_graph_place(g, XE_PLACE_CPU, st) != XE_OK ||
        xlac_pass(&g, &ctx, &xo_g.state, st) != XE_OK) {
        xe_graph_destroy(g);
        return st->code;
    }
    /* counted where they run, once per fused node (compute.c), not here */
    atomic_fetch_sub(&xo_g.state.n_clusters, atomic_load(&xo_g.state.n_clusters) - before);
    int *where = malloc(((size_t)p->m.n_nodes + 1) * sizeof *where);
    if (!where) {
        xe_graph_destroy(g);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    clusters_of(p, g, where);
    for (int k = 0; k < p->m.n_nodes; k++) {
        p->group[k] = p->take[k] && where[k] >= 0 ? where[k] : -1;
        if (p->group[k] >= p->n_groups)
            p->n_groups = p->group[k] + 1;
    }
    attach_folded(p, where);
    free(where);
    xe_graph_destroy(g);
    return XE_OK;
}

/* Who reads each value (p->first, p->readers). */
static xe_code index_readers(plan *p, xe_status *st)
{
    const xo_model *m = &p->m;
    int edges = 0;
    p->first = calloc((size_t)m->n_values + 2, sizeof *p->first);
    for (int k = 0; p->first && k < m->n_nodes; k++)
        for (int j = 0; j < m->nodes[k].n_in; j++)
            if (m->nodes[k].in[j] >= 0)
                p->first[m->nodes[k].in[j] + 1]++, edges++;
    p->readers = malloc(((size_t)edges + 1) * sizeof *p->readers);
    int *fill = calloc((size_t)m->n_values + 1, sizeof *fill);
    if (!p->first || !p->readers || !fill) {
        free(fill);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    for (int v = 0; v < m->n_values; v++)
        p->first[v + 1] += p->first[v];
    for (int k = 0; k < m->n_nodes; k++)
        for (int j = 0; j < m->nodes[k].n_in;
             j++) /* a node reading a value twice is listed twice */
            if (m->nodes[k].in[j] >= 0)
                p->readers[p->first[m->nodes[k].in[j]] + fill[m->nodes[k].in[j]]++] = k;
    free(fill);
    return XE_OK;
}

/* ---- 5. groups onnxruntime can fuse and xlac can build ------------------------------------ */

/* Whether a path leaves group g and comes back into it (onnxruntime could not fuse it). */
static bool leaves_and_returns(const plan *p, int g, int *stack, char *seen)
{
    const xo_model *m = &p->m;
    int top = 0;
    memset(seen, 0, (size_t)m->n_nodes);
    for (int k = 0; k < m->n_nodes; k++) /* start: the readers outside g of what g writes */
        for (int j = 0; p->group[k] == g && j < m->nodes[k].n_out; j++)
            for (int v = m->nodes[k].out[j], r = v >= 0 ? p->first[v] : 0;
                 v >= 0 && r < p->first[v + 1]; r++)
                if (p->group[p->readers[r]] != g && !seen[p->readers[r]])
                    seen[stack[top++] = p->readers[r]] = 1;
    while (top > 0) {
        int k = stack[--top];
        for (int j = 0; j < m->nodes[k].n_out; j++)
            for (int v = m->nodes[k].out[j], r = v >= 0 ? p->first[v] : 0;
                 v >= 0 && r < p->first[v + 1]; r++) {
                int q = p->readers[r];
                if (p->group[q] == g)
                    return true;
                if (!seen[q])
                    seen[stack[top++] = q] = 1;
            }
    }
    return false;
}

/*
 * Whether group g imports on its own, as Compile will read it: as it is, or
 * once the values of some small integer inputs are known (shape arithmetic
 * onnxruntime computes outside it, shared with another group): then Compile
 * builds it per signature of its input shapes and those values (compute.c).
 */
static bool builds_alone(plan *p, int g, bool *take)
{
    for (int k = 0; k < p->m.n_nodes; k++)
        take[k] = p->group[k] == g;
    xe_status st;
    xe_status_clear(&st);
    int *ins = NULL, n_ins = 0, *vals = NULL, n_vals = 0;
    char *report = NULL;
    xe_graph *body = xo_model_import(p->a, &p->m, take, NULL, 0, &ins, &n_ins, &report, &st);
    free(ins);
    if (!body)
        n_vals = xo_value_inputs(&p->m, take, report ? report : st.msg, &vals);
    free(report);
    free(vals);
    if (!body && n_vals > 0 && p->debug)
        fprintf(
            stderr,
            "xlac: onnxruntime graph %d: group %d needs the values of %d of its inputs (shape "
            "arithmetic onnxruntime computes): built per signature of its input shapes and those "
            "values\n",
            p->id, g, n_vals);
    else if (!body && p->debug)
        fprintf(stderr,
                "xlac: onnxruntime graph %d: group %d left to onnxruntime: alone it does not "
                "import: %s\n",
                p->id, g, st.msg);
    xe_graph_destroy(body);
    return body != NULL || n_vals > 0;
}

/* Drops group g (its nodes stay with onnxruntime). */
static void drop(plan *p, int g)
{
    for (int k = 0; k < p->m.n_nodes; k++)
        if (p->group[k] == g)
            p->group[k] = -1;
}

static xe_code check_groups(plan *p, xe_status *st)
{
    int n = p->m.n_nodes;
    int *stack = malloc(((size_t)n + 1) * sizeof *stack);
    char *seen = malloc((size_t)n + 1);
    bool *take = malloc((size_t)n + 1);
    if (!stack || !seen || !take) {
        free(stack), free(seen), free(take);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    for (int g = 0; g < p->n_groups; g++) {
        int size = 0;
        for (int k = 0; k < n; k++)
            size += p->group[k] == g;
        if (!size)
            continue;
        if (leaves_and_returns(p, g, stack, seen)) {
            if (p->debug)
                fprintf(
                    stderr,
                    "xlac: onnxruntime graph %d: group %d left to onnxruntime: a path leaves it "
                    "and comes back\n",
                    p->id, g);
            drop(p, g);
        } else if (!builds_alone(p, g, take)) {
            drop(p, g);
        }
    }
    free(stack), free(seen), free(take);
    return XE_OK;
}

/* ---- 6. the groups to onnxruntime -------------------------------------------------------- */

/* --clustering_debug: fused node k (group g) and onnxruntime's names of its n nodes. */
static void print_group(const plan *p, int g, int k, size_t n)
{
    fprintf(stderr, "xlac: onnxruntime graph %d: fused node %d (group %d, %zu nodes):", p->id, k, g,
            n);
    for (int j = 0; j < p->m.n_nodes; j++)
        if (p->group[j] == g)
            fprintf(stderr, " %s(%s)", p->m.nodes[j].name, p->m.nodes[j].op_type);
    fputc('\n', stderr);
}

static xe_code hand_over(plan *p, OrtEpGraphSupportInfo *info, xe_status *st)
{
    const OrtNode **nodes = malloc(((size_t)p->m.n_nodes + 1) * sizeof *nodes);
    if (!nodes)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    /* constant initializers stay inputs of the fused node: onnxruntime keeps them, xlac copies none
     */
    OrtNodeFusionOptions o = {.ort_version_supported = XO_ORT_API_VERSION,
                              .drop_constant_initializers = false};
    int groups = 0, taken = 0;
    xe_code c = XE_OK;
    for (int g = 0; c == XE_OK && g < p->n_groups; g++) {
        size_t n = 0;
        for (int k = 0; k < p->m.n_nodes; k++)
            if (p->group[k] == g)
                nodes[n++] = p->m.nodes[k].node;
        if (n)
            c = xo_check(p->a, XO(p->a->ep, EpGraphSupportInfo_AddNodesToFuse)(info, nodes, n, &o),
                         "EpGraphSupportInfo_AddNodesToFuse", st);
        if (n && c == XE_OK && p->debug)
            print_group(p, g, groups, n);
        groups += n > 0;
        taken += (int)n;
    }
    free(nodes);
    if (c == XE_OK && p->debug)
        fprintf(
            stderr,
            "xlac: onnxruntime graph %d: %d of its %d nodes in %d fused nodes, the rest left to "
            "onnxruntime\n",
            p->id, taken, p->m.n_nodes, groups);
    return c;
}

static void plan_free(plan *p)
{
    xo_model_free(&p->m);
    free(p->take), free(p->refused), free(p->group), free(p->first), free(p->readers);
}

xe_code xo_capability(const xo_api *a, const OrtGraph *graph, OrtEpGraphSupportInfo *info,
                      const char *config, xe_status *st)
{
    const OrtNode *parent = NULL;
    if (xo_check(a, XO(a->ort, Graph_GetParentNode)(graph, &parent), "Graph_GetParentNode", st))
        return st->code;
    int config_id;
    if (parent || xlac_config_for(&xo_g.state, config, &config_id, st) != XE_OK ||
        xlac_config_flags(&xo_g.state, config_id)->auto_jit == 0)
        return st->code; /* a subgraph of If or Loop, or clustering off: onnxruntime runs it all */
    plan p = {.a = a,
              .id = atomic_fetch_add(&xo_g.graphs, 1),
              .debug = xlac_config_flags(&xo_g.state, config_id)->clustering_debug};
    if (xo_model_read(a, graph, &p.m, st) != XE_OK)
        return st->code;
    size_t n = (size_t)p.m.n_nodes + 1;
    p.take = calloc(n, 1), p.refused = calloc(n, 1), p.group = malloc(n * sizeof *p.group);
    xe_code c = p.take && p.refused && p.group ? index_readers(&p, st)
                                               : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK) {
        candidates(&p);
        if (p.debug)
            dump_model(&p);
        xe_graph *g = import_all(&p, st);
        c = g ? make_groups(&p, g, config, st) : XE_OK;
    }
    if (c == XE_OK && p.n_groups)
        c = check_groups(&p, st);
    if (c == XE_OK)
        c = hand_over(&p, info, st);
    plan_free(&p);
    return c;
}
