/*
 * Property test of the clustering pass on a few hundred random DAGs
 * (elementwise ops, reductions, softmax, constants, and the ops that must
 * stay out: unique, random_uniform, excluded op names and devices):
 *   - contracting every cluster leaves the graph acyclic;
 *   - every cluster is connected and on one device;
 *   - no excluded op is clustered;
 *   - the encapsulated graph, run with the clusters' bodies op by op (the
 *     launch op's fallback path), gives the op-by-op outputs bit for bit.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "xc.h"
#include "xlac/op.h"
#include "xlac/xlac.h"

static xe_status st;
static int launch_op = -1;

/* The fallback path of the plugin's launch op: the body, op by op. */
static xe_code run_body(const xe_kernel_args *a, xe_tensor **outs, int n_outs, xe_status *s)
{
    (void)n_outs;
    const char *name = xe_node_attr_string(a->node, "@cluster", a->node->name);
    return xe_exec_graph(a->exec, a->node->body, a->in, outs, name, "XLA_", s);
}

static void setup(void)
{
    xe_status_clear(&st);
    xe_op_def d = {.name = "prop_launch",
                   .min_inputs = 0,
                   .max_inputs = -1,
                   .cls = XE_CLASS_COMPOSITE,
                   .composite = run_body,
                   .device_prefix = "XLA_"};
    launch_op = xe_op_find(d.name, strlen(d.name));
    if (launch_op < 0)
        launch_op = xe_register_op(&d, &st);
    cr_assert_geq(launch_op, 0, "%s", st.msg);
}

TestSuite(property, .init = setup, .timeout = 300);

/* ---- a small random graph generator --------------------------------------- */

typedef enum vkind {
    V_FULL,   /* f32[4,3] */
    V_COL,    /* f32[4,1] */
    V_SCALAR, /* f32[] */
} vkind;

typedef struct gen {
    char *text;
    size_t len;
    FILE *f;
    int n; /* values defined */
    vkind kind[256];
    unsigned seed;
} gen;

static unsigned rnd(gen *g, unsigned n)
{
    g->seed = g->seed * 1103515245u + 12345u;
    return (g->seed >> 8) % n;
}

static int pick(gen *g)
{
    return g->n - 1 - (int)rnd(g, (unsigned)(g->n < 6 ? g->n : 6)); /* mostly recent values */
}

static vkind widest(vkind a, vkind b)
{
    return a < b ? a : b;
}

/* A random op of class cls from the op table that takes floats. */
static const char *table_op(gen *g, xe_op_class cls)
{
    int ops[XE_OP_COUNT], n = 0;
    for (int op = 0; op < XE_OP_COUNT; op++)
        if (xe_op_get(op)->cls == cls && !(xe_op_get(op)->flags & (XE_OPF_BOOL_ONLY | XE_OPF_INT_ONLY)))
            ops[n++] = op;
    return xe_op_name(ops[rnd(g, (unsigned)n)]);
}

static void emit_node(gen *g)
{
    int id = g->n, a = pick(g), b = pick(g);
    switch (rnd(g, 10)) {
    case 0:
    case 1:
    case 2:
        fprintf(g->f, "v%d = %s(v%d)\n", id, table_op(g, XE_CLASS_UNARY), a);
        g->kind[id] = g->kind[a];
        break;
    case 3:
    case 4:
    case 5:
        fprintf(g->f, "v%d = %s(v%d, v%d)\n", id, table_op(g, XE_CLASS_BINARY), a, b);
        g->kind[id] = widest(g->kind[a], g->kind[b]);
        break;
    case 6:
        if (g->kind[a] == V_SCALAR)
            fprintf(g->f, "v%d = neg(v%d)\n", id, a), g->kind[id] = V_SCALAR;
        else
            fprintf(g->f, "v%d = reduce_sum(v%d, axes=[1], keepdims=true)\n", id, a),
                g->kind[id] = V_COL;
        break;
    case 7:
        fprintf(g->f, "f%d = reshape(v%d, shape=[-1])\nu%d = unique(f%d)\n", id, a, id, id);
        fprintf(g->f, "v%d = reduce_max(u%d, keepdims=false)\n", id, id);
        g->kind[id] = V_SCALAR;
        break;
    case 8:
        fprintf(g->f, "v%d = random_uniform(shape=[4,3], seed=%u)\n", id, rnd(g, 100));
        g->kind[id] = V_FULL;
        break;
    default:
        if (g->kind[a] == V_FULL && rnd(g, 2))
            fprintf(g->f, "v%d = softmax(v%d, axis=-1)\n", id, a), g->kind[id] = V_FULL;
        else
            fprintf(g->f, "v%d = const(f32[], %d.5)\n", id, (int)rnd(g, 4)), g->kind[id] = V_SCALAR;
        break;
    }
    g->n++;
}

/* A random graph over inputs x0 (f32[4,3]) and x1 (f32[4,1]). */
static char *random_graph(unsigned seed, int n_ops)
{
    gen g = {.seed = seed};
    g.f = open_memstream(&g.text, &g.len);
    fprintf(g.f, "xlac.graph v1\ninput x0: f32[4,3]\ninput x1: f32[4,1]\n"
                 "v0 = neg(x0)\nv1 = abs(x1)\n");
    g.kind[0] = V_FULL;
    g.kind[1] = V_COL;
    g.n = 2;
    for (int i = 0; i < n_ops; i++)
        emit_node(&g);
    fprintf(g.f, "output v%d\n", g.n - 1);
    for (int i = 0; i < 2; i++)
        fprintf(g.f, "output v%d\n", 2 + (int)rnd(&g, (unsigned)(g.n - 2)));
    fclose(g.f);
    return g.text;
}

/* ---- the properties ------------------------------------------------------------ */

/* Units of the contracted graph: a cluster, or a node outside every cluster. */
static int unit(const xe_graph *g, const xc_clustering *c, int i)
{
    return c->cluster[i] >= 0 ? g->n_nodes + c->cluster[i] : i;
}

static bool dfs_cycle(const xe_graph *g, const xc_clustering *c, int u, char *color)
{
    color[u] = 1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (unit(g, c, i) != u)
            continue;
        for (int k = 0; k < g->nodes[i]->n_inputs; k++) {
            int p = unit(g, c, g->nodes[i]->inputs[k]);
            if (p == u)
                continue;
            if (color[p] == 1 || (color[p] == 0 && dfs_cycle(g, c, p, color)))
                return true;
        }
    }
    color[u] = 2;
    return false;
}

static void check_acyclic(const xe_graph *g, const xc_clustering *c, unsigned seed)
{
    char *color = calloc((size_t)(g->n_nodes + c->n_clusters), 1);
    for (int i = 0; i < g->n_nodes; i++) {
        int u = unit(g, c, i);
        cr_assert_not(color[u] == 0 && dfs_cycle(g, c, u, color), "seed %u: cycle", seed);
    }
    free(color);
}

/* Connected through edges inside the cluster (ignoring direction). */
static void check_connected(const xe_graph *g, const xc_clustering *c, int k, unsigned seed)
{
    const xc_cluster *cl = &c->clusters[k];
    bool *seen = calloc((size_t)g->n_nodes, 1);
    int reached = 1;
    seen[cl->nodes[0]] = true;
    for (bool grew = true; grew;) {
        grew = false;
        for (int j = 0; j < cl->n_nodes; j++) {
            const xe_node *n = g->nodes[cl->nodes[j]];
            for (int q = 0; q < n->n_inputs; q++) {
                int p = n->inputs[q], i = cl->nodes[j];
                if (c->cluster[p] != k || seen[p] == seen[i])
                    continue;
                seen[p] = seen[i] = true;
                reached++;
                grew = true;
            }
        }
    }
    free(seen);
    cr_assert_eq(reached, cl->n_nodes, "seed %u: %s is not connected", seed, cl->name);
}

static void check_clusters(const xe_graph *g, const xc_clustering *c, const xc_options *o,
                           unsigned seed)
{
    check_acyclic(g, c, seed);
    for (int k = 0; k < c->n_clusters; k++) {
        const xc_cluster *cl = &c->clusters[k];
        cr_assert_geq(cl->n_nodes, o->min_cluster_size > 1 ? 1 : 1);
        check_connected(g, c, k, seed);
        int ops = 0;
        for (int j = 0; j < cl->n_nodes; j++) {
            const xe_node *n = g->nodes[cl->nodes[j]];
            const char *op = xe_op_name(n->op);
            bool konst = n->op == XE_OP_CONST; /* a constant moves to its cluster's device */
            cr_assert(konst || n->device == cl->device, "seed %u: %s", seed, n->name);
            cr_assert(konst || o->devices[n->device], "seed %u: %s excluded device", seed, n->name);
            cr_assert(strcmp(op, "unique") && strcmp(op, "random_uniform") && strcmp(op, "input"),
                      "seed %u: %s (%s) clustered", seed, n->name, op);
            for (int x = 0; x < o->n_ops_to_exclude; x++)
                cr_assert(strcmp(op, o->ops_to_exclude[x]), "seed %u: excluded %s", seed, op);
            ops += n->op != XE_OP_CONST;
        }
        cr_assert_geq(ops, o->min_cluster_size, "seed %u: %s too small", seed, cl->name);
        if (o->max_cluster_size > 0)
            cr_assert_leq(ops, o->max_cluster_size, "seed %u: %s too big", seed, cl->name);
    }
}

static xe_tensor *input(int rows, int cols, unsigned seed)
{
    int64_t dims[2] = {rows, cols};
    xe_shape sh = xe_shape_make(2, dims);
    xe_tensor *t = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    for (int i = 0; i < rows * cols; i++)
        ((float *)t->data)[i] = (float)((int)((seed * 7u + (unsigned)i * 13u) % 17u) - 8) / 4.0f;
    return t;
}

/* Runs g (consumed); out gets its outputs. */
static void run(xe_graph *g, xe_tensor **out, unsigned seed)
{
    xe_tensor *in[2] = {input(4, 3, seed), input(4, 1, seed + 1)};
    xe_session *s = xe_session_new(g, NULL, &st);
    cr_assert_not_null(s, "seed %u: %s", seed, st.msg);
    cr_assert_eq(xe_session_run(s, in, out, &st), XE_OK, "seed %u: %s", seed, st.msg);
    xe_session_destroy(s);
    xe_tensor_release(in[0]);
    xe_tensor_release(in[1]);
}

static void random_options(xc_options *o, unsigned seed)
{
    static const char *excluded[] = {"mul", "exp"};
    xc_options_default(o);
    if (seed % 3 == 0)
        o->max_cluster_size = 2 + (int)(seed % 5);
    if (seed % 4 == 1)
        o->min_cluster_size = 3;
    if (seed % 5 == 2) {
        o->ops_to_exclude = excluded;
        o->n_ops_to_exclude = 2;
    }
    if (seed % 7 == 3)
        o->fuel = seed % 11;
    o->need_intermediate = seed % 6 == 4;
}

static xe_graph *parse(const char *text, unsigned seed)
{
    xe_graph *g = xe_parse_string(text, "random.xg", &st);
    cr_assert_not_null(g, "seed %u: %s\n%s", seed, st.msg, text);
    cr_assert_eq(xe_graph_infer(g, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(xe_graph_place(g, XE_PLACE_CPU, &st), XE_OK, "%s", st.msg);
    return g;
}

/* Structure with devices assigned at random (nothing runs). */
static void structure_round(unsigned seed, const char *text)
{
    xe_graph *g = parse(text, seed);
    for (int i = 0; i < g->n_nodes; i++)
        if ((seed + (unsigned)i * 31u) % 5 == 0 && g->nodes[i]->op != XE_OP_UNIQUE)
            g->nodes[i]->device = xe_gpu_device();
    xc_options o;
    random_options(&o, seed);
    if (seed % 2)
        o.devices[xe_gpu_device()] = false;
    xc_clustering *c = xc_mark_for_compilation(g, &o, &st);
    cr_assert_not_null(c, "seed %u: %s", seed, st.msg);
    check_clusters(g, c, &o, seed);
    xe_graph *e = xc_encapsulate(g, c, launch_op, &st);
    cr_assert_not_null(e, "seed %u: %s", seed, st.msg);
    xe_graph_destroy(e);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

/* CPU only: the clustered run must equal the op-by-op run bit for bit. */
static int run_round(unsigned seed, const char *text)
{
    xe_graph *g = parse(text, seed);
    xc_options o;
    random_options(&o, seed);
    xc_clustering *c = xc_mark_for_compilation(g, &o, &st);
    cr_assert_not_null(c, "seed %u: %s", seed, st.msg);
    check_clusters(g, c, &o, seed);
    int clusters = c->n_clusters;
    xe_graph *e = xc_encapsulate(g, c, launch_op, &st);
    cr_assert_not_null(e, "seed %u: %s\n%s", seed, st.msg, text);
    xc_clustering_destroy(c);
    if (seed % 10 == 0) { /* the dump's text runs as it is */
        char *dump = xe_write_string(e, &st);
        cr_assert_not_null(dump, "%s", st.msg);
        xe_graph_destroy(e);
        e = parse(dump, seed);
        free(dump);
    }
    int n_out = g->n_outputs;
    xe_tensor *ref[3], *got[3];
    run(g, ref, seed);
    run(e, got, seed);
    for (int i = 0; i < n_out; i++) {
        cr_assert_eq(ref[i]->nbytes, got[i]->nbytes, "seed %u", seed);
        cr_assert_eq(memcmp(ref[i]->data, got[i]->data, ref[i]->nbytes), 0,
                     "seed %u: output %d differs\n%s", seed, i, text);
        xe_tensor_release(ref[i]);
        xe_tensor_release(got[i]);
    }
    return clusters;
}

Test(property, random_dags)
{
    int total = 0;
    for (unsigned seed = 1; seed <= 300; seed++) {
        char *text = random_graph(seed, 6 + (int)(seed % 20));
        structure_round(seed, text);
        total += run_round(seed, text);
        free(text);
    }
    cr_assert_gt(total, 100, "the generator should give clusters (got %d)", total);
}
