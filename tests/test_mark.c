/*
 * Mark for compilation on hand-written graphs: chains, diamonds, the
 * cycle case (a -> unique -> b with a -> b), several devices, every
 * reason an op is left out, min/max cluster size, fuel, jit blocks,
 * constants joining their cluster, and determinism.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "xc.h"
#include "xlac/xlac.h"

static xe_status st;

static xe_graph *graph(const char *text)
{
    xe_status_clear(&st);
    xe_graph *g = xe_parse_string(text, "m.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    cr_assert_eq(xe_graph_infer(g, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(xe_graph_place(g, XE_PLACE_CPU, &st), XE_OK, "%s", st.msg);
    return g;
}

static xc_clustering *mark(const xe_graph *g, const xc_options *o)
{
    xc_clustering *c = xc_mark_for_compilation(g, o, &st);
    cr_assert_not_null(c, "%s", st.msg);
    return c;
}

static int node(const xe_graph *g, const char *name)
{
    int i = xe_graph_find(g, name);
    cr_assert_geq(i, 0, "no node %s", name);
    return i;
}

static int cluster_of(const xe_graph *g, const xc_clustering *c, const char *name)
{
    return c->cluster[node(g, name)];
}

static const char *reason_of(const xe_graph *g, const xc_clustering *c, const char *name)
{
    const char *r = c->reason[node(g, name)];
    return r ? r : "(clustered)";
}

#define ASSERT_REASON(g, c, name, want)                                                            \
    cr_assert_str_eq(reason_of(g, c, name), want, "node %s", name)

/* Every cluster: one device, no node listed twice, listed nodes point back. */
static void check_consistent(const xe_graph *g, const xc_clustering *c)
{
    for (int k = 0; k < c->n_clusters; k++) {
        const xc_cluster *cl = &c->clusters[k];
        char name[32];
        snprintf(name, sizeof name, "cluster_%d", k);
        cr_assert_str_eq(cl->name, name);
        for (int j = 0; j < cl->n_nodes; j++) {
            cr_assert_eq(c->cluster[cl->nodes[j]], k);
            cr_assert_eq(g->nodes[cl->nodes[j]]->device, cl->device);
            if (j)
                cr_assert_lt(cl->nodes[j - 1], cl->nodes[j]);
        }
    }
    for (int i = 0; i < g->n_nodes; i++)
        cr_assert((c->cluster[i] >= 0) == (c->reason[i] == NULL), "node %s", g->nodes[i]->name);
}

static const char *chain5 = "xlac.graph v1\ninput x: f32[4]\n"
                            "a = neg(x)\nb = exp(a)\nc = abs(b)\nd = sin(c)\ne = cos(d)\n"
                            "output e\n";

Test(mark, chain_is_one_cluster)
{
    xe_graph *g = graph(chain5);
    xc_clustering *c = mark(g, NULL);
    check_consistent(g, c);
    cr_assert_eq(c->n_clusters, 1);
    cr_assert_eq(c->clusters[0].n_nodes, 5);
    cr_assert_str_eq(c->clusters[0].name, "cluster_0");
    ASSERT_REASON(g, c, "x", XC_REASON_INPUT);
    cr_assert_not(c->clusters[0].must_compile);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

Test(mark, diamond_is_one_cluster)
{
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[4]\n"
                        "a = neg(x)\nb = exp(a)\nc = abs(a)\nd = add(b, c)\noutput d\n");
    xc_clustering *c = mark(g, NULL);
    check_consistent(g, c);
    cr_assert_eq(c->n_clusters, 1);
    cr_assert_eq(c->clusters[0].n_nodes, 4);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

/* a -> unique -> ... -> b and a -> b: one cluster {a, b} would be a cycle. */
Test(mark, cycle_case_keeps_a_and_b_apart)
{
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[4]\n"
                        "a = neg(x)\nu = unique(a)\ns = reduce_sum(u, keepdims=true)\n"
                        "b = add(a, s)\nc = exp(b)\noutput c\n");
    xc_clustering *c = mark(g, NULL);
    check_consistent(g, c);
    int ka = cluster_of(g, c, "a"), kb = cluster_of(g, c, "b");
    cr_assert(ka < 0 || ka != kb, "a and b share a cluster");
    ASSERT_REASON(g, c, "u", XC_REASON_DATA_DEPENDENT);
    ASSERT_REASON(g, c, "a", XC_REASON_CYCLE);
    cr_assert_geq(kb, 0);
    cr_assert_eq(cluster_of(g, c, "c"), kb);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

/* The smallest form: a -> u -> b, a -> b with only a and b compilable. */
Test(mark, cycle_case_minimal)
{
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[4]\n"
                        "a = neg(x)\nr = random_uniform(shape=[4], seed=1)\nu = add(a, r)\n"
                        "b = mul(a, u)\noutput b\n");
    xc_options o;
    xc_options_default(&o);
    const char *ex[] = {"add"};
    o.ops_to_exclude = ex;
    o.n_ops_to_exclude = 1;
    xc_clustering *c = mark(g, &o);
    check_consistent(g, c);
    cr_assert_eq(c->n_clusters, 0);
    ASSERT_REASON(g, c, "a", XC_REASON_CYCLE);
    ASSERT_REASON(g, c, "b", XC_REASON_CYCLE);
    ASSERT_REASON(g, c, "u", XC_REASON_FLAG);
    ASSERT_REASON(g, c, "r", XC_REASON_STATEFUL);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

Test(mark, clusters_are_single_device)
{
    xe_graph *g = graph(chain5);
    g->nodes[node(g, "c")]->device = xe_gpu_device();
    g->nodes[node(g, "d")]->device = xe_gpu_device();
    g->nodes[node(g, "e")]->device = xe_gpu_device();
    xc_clustering *c = mark(g, NULL);
    check_consistent(g, c);
    cr_assert_eq(c->n_clusters, 2);
    cr_assert_eq(c->clusters[0].device, XE_DEV_CPU);
    cr_assert_eq(c->clusters[0].n_nodes, 2);
    cr_assert_eq(c->clusters[1].device, xe_gpu_device());
    cr_assert_eq(c->clusters[1].n_nodes, 3);
    xc_clustering_destroy(c);

    xc_options o;
    xc_options_default(&o);
    o.devices[xe_gpu_device()] = false;
    c = mark(g, &o);
    check_consistent(g, c);
    cr_assert_eq(c->n_clusters, 1);
    ASSERT_REASON(g, c, "d", XC_REASON_DEVICE);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

static bool no_sin(const xe_graph *g, const xe_node *n, xe_device dev, bool must, void *user,
                   const char **reason)
{
    (void)g, (void)dev, (void)must;
    ++*(int *)user;
    if (strcmp(xe_op_name(n->op), "sin") == 0) {
        *reason = XC_REASON_NO_CODEGEN;
        return false;
    }
    return true;
}

Test(mark, predicate_reason_and_split)
{
    xe_graph *g = graph(chain5);
    xc_options o;
    xc_options_default(&o);
    int calls = 0;
    o.supports = no_sin;
    o.user = &calls;
    xc_clustering *c = mark(g, &o);
    check_consistent(g, c);
    cr_assert_gt(calls, 0);
    ASSERT_REASON(g, c, "d", XC_REASON_NO_CODEGEN);
    ASSERT_REASON(g, c, "e", XC_REASON_TOO_SMALL);
    cr_assert_eq(c->n_clusters, 1);
    cr_assert_eq(c->clusters[0].n_nodes, 3);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

Test(mark, min_cluster_size)
{
    xe_graph *g = graph(chain5);
    xc_options o;
    xc_options_default(&o);
    o.min_cluster_size = 6;
    xc_clustering *c = mark(g, &o);
    cr_assert_eq(c->n_clusters, 0);
    ASSERT_REASON(g, c, "a", XC_REASON_TOO_SMALL);
    xc_clustering_destroy(c);
    o.min_cluster_size = 5;
    c = mark(g, &o);
    cr_assert_eq(c->n_clusters, 1);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

Test(mark, max_cluster_size_splits)
{
    xe_graph *g = graph(chain5);
    xc_options o;
    xc_options_default(&o);
    o.max_cluster_size = 2;
    xc_clustering *c = mark(g, &o);
    check_consistent(g, c);
    cr_assert_eq(c->n_clusters, 2);
    for (int k = 0; k < c->n_clusters; k++)
        cr_assert_leq(c->clusters[k].n_nodes, 2);
    ASSERT_REASON(g, c, "e", XC_REASON_MAX_SIZE);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

Test(mark, fuel_limits_candidates_in_order)
{
    xe_graph *g = graph(chain5);
    xc_options o;
    xc_options_default(&o);
    o.fuel = 3;
    xc_clustering *c = mark(g, &o);
    check_consistent(g, c);
    cr_assert_eq(c->n_clusters, 1);
    cr_assert_eq(c->clusters[0].n_nodes, 3);
    cr_assert_geq(cluster_of(g, c, "c"), 0);
    ASSERT_REASON(g, c, "d", XC_REASON_FUEL);
    ASSERT_REASON(g, c, "e", XC_REASON_FUEL);
    xc_clustering_destroy(c);
    o.fuel = 0;
    c = mark(g, &o);
    cr_assert_eq(c->n_clusters, 0);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

Test(mark, level1_dissolves_clusters_without_intermediate)
{
    /* a and b both graph outputs: fusing them removes no tensor */
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[4]\n"
                        "a = neg(x)\nb = exp(a)\noutput a\noutput b\n");
    xc_options o;
    xc_options_default(&o);
    o.need_intermediate = true;
    xc_clustering *c = mark(g, &o);
    cr_assert_eq(c->n_clusters, 0);
    ASSERT_REASON(g, c, "a", XC_REASON_NO_INTERMEDIATE);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);

    g = graph(chain5);
    c = mark(g, &o);
    cr_assert_eq(c->n_clusters, 1);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

Test(mark, constants_join_their_only_cluster)
{
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[4]\n"
                        "k = const(f32[], 2.0)\nj = const(f32[], 3.0)\n"
                        "a = mul(x, k)\nb = exp(a)\nc = add(b, j)\nd = unique(c)\n"
                        "e = add(d, j)\noutput e\noutput b\n");
    xc_clustering *c = mark(g, NULL);
    check_consistent(g, c);
    cr_assert_eq(c->n_clusters, 1);
    cr_assert_eq(cluster_of(g, c, "k"), 0, "k is used only in cluster_0");
    ASSERT_REASON(g, c, "j", XC_REASON_CONSTANT);
    ASSERT_REASON(g, c, "e", XC_REASON_TOO_SMALL);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

Test(mark, jit_block_is_one_must_compile_cluster)
{
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[4]\n"
                        "a = neg(x)\njit {\n  b = exp(a)\n}\nc = abs(b)\nd = sin(c)\noutput d\n");
    xc_options o;
    xc_options_default(&o);
    o.auto_cluster = false;
    xc_clustering *c = mark(g, &o);
    check_consistent(g, c);
    cr_assert_eq(c->n_clusters, 1, "a jit block of one op is kept");
    cr_assert(c->clusters[0].must_compile);
    cr_assert_eq(cluster_of(g, c, "b"), 0);
    ASSERT_REASON(g, c, "a", XC_REASON_AUTO_OFF);
    xc_clustering_destroy(c);
    o.auto_cluster = true;
    c = mark(g, &o);
    check_consistent(g, c);
    cr_assert_eq(c->n_clusters, 2, "auto clusters never absorb a jit block");
    cr_assert_neq(cluster_of(g, c, "a"), cluster_of(g, c, "b"));
    cr_assert_eq(cluster_of(g, c, "c"), cluster_of(g, c, "d"));
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

Test(mark, jit_block_with_unique_fails_naming_the_op)
{
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[4]\n"
                        "jit {\n  a = neg(x)\n  u = unique(a)\n}\noutput u\n");
    xe_status_clear(&st);
    xc_clustering *c = xc_mark_for_compilation(g, NULL, &st);
    cr_assert_null(c);
    cr_assert_neq(st.code, XE_OK);
    cr_assert(strstr(st.msg, "m.xg:5:") != NULL, "%s", st.msg);
    cr_assert(strstr(st.msg, "node u (unique) in a jit block cannot be compiled: "
                             "data-dependent output shape") != NULL,
              "%s", st.msg);
    xe_graph_destroy(g);
}

Test(mark, deterministic)
{
    const char *text = "xlac.graph v1\ninput x: f32[4]\ninput y: f32[4]\n"
                       "a = neg(x)\nb = exp(y)\nu = unique(a)\nc = add(a, b)\n"
                       "d = mul(c, c)\nr = reduce_sum(u, keepdims=true)\ne = add(d, r)\n"
                       "f = abs(e)\noutput f\n";
    xe_graph *g1 = graph(text), *g2 = graph(text);
    xc_clustering *c1 = mark(g1, NULL), *c2 = mark(g2, NULL), *c3 = mark(g1, NULL);
    cr_assert_eq(c1->n_clusters, c2->n_clusters);
    cr_assert_gt(c1->n_clusters, 0);
    for (int i = 0; i < g1->n_nodes; i++) {
        cr_assert_eq(c1->cluster[i], c2->cluster[i]);
        cr_assert_eq(c1->cluster[i], c3->cluster[i]);
        if (c1->reason[i])
            cr_assert_str_eq(c1->reason[i], c2->reason[i]);
    }
    for (int k = 0; k < c1->n_clusters; k++)
        cr_assert_str_eq(c1->clusters[k].name, c2->clusters[k].name);
    xc_clustering_destroy(c1);
    xc_clustering_destroy(c2);
    xc_clustering_destroy(c3);
    xe_graph_destroy(g1);
    xe_graph_destroy(g2);
}

Test(mark, summary_and_annotations)
{
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[4]\n"
                        "a = neg(x)\nb = exp(a)\nu = unique(b)\noutput u\n");
    xc_clustering *c = mark(g, NULL);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    xc_write_summary(f, g, c, 7);
    fclose(f);
    cr_assert(strstr(text, "session 7") != NULL, "%s", text);
    cr_assert(strstr(text, "clusters built: 1") != NULL, "%s", text);
    cr_assert(strstr(text, "ops clustered: 2") != NULL, "%s", text);
    cr_assert(strstr(text, "cluster_0: 2 ops on XLA_CPU:0: exp (1), neg (1)") != NULL, "%s", text);
    /* counts apart from the text, and every node left out named under its reason */
    cr_assert(strstr(text, "  by op: unique (1)\n") != NULL, "%s", text);
    cr_assert(strstr(text, "  by reason:\n    data-dependent output shape (1): u\n") != NULL, "%s", text);
    free(text);
    xe_graph *a = xc_annotate(g, c, &st);
    cr_assert_not_null(a, "%s", st.msg);
    cr_assert_str_eq(xe_node_attr_string(a->nodes[node(a, "a")], "@cluster", ""), "cluster_0");
    cr_assert_str_eq(xe_node_attr_string(a->nodes[node(a, "u")], "@reason", ""),
                     XC_REASON_DATA_DEPENDENT);
    char *dot = xc_dot_string(g, c, &st);
    cr_assert_not_null(dot);
    cr_assert(strstr(dot, "subgraph cluster_0") != NULL);
    cr_assert(strstr(dot, "data-dependent output shape") != NULL);
    free(dot);
    /* the picture of the decisions: two boxes (io2 inputs, io3 outputs), tensors counted per arrow */
    char *boxes = xc_cluster_dot_string(g, c, &st);
    cr_assert_not_null(boxes, "%s", st.msg);
    cr_assert(strstr(boxes, "g0 [label=\"cluster_0\\n2 ops on XLA_CPU:0\\nexp (1), neg (1)\""), "%s", boxes);
    cr_assert(strstr(boxes, "g1 [label=\"left out: data-dependent output shape\\n1 op\\nunique (1)\""), "%s",
              boxes);
    cr_assert(strstr(boxes, "io2 [label=\"graph inputs (1)\""), "%s", boxes);
    cr_assert(strstr(boxes, "io2 -> g0 [label=\"1\"]"), "%s", boxes);
    cr_assert(strstr(boxes, "g0 -> g1 [label=\"1\"]"), "%s", boxes);
    cr_assert(strstr(boxes, "g1 -> io3 [label=\"1\"]") && !strstr(boxes, "g0 -> io3"), "%s", boxes);
    free(boxes);
    xe_graph_destroy(a);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

Test(mark, a_conv_with_nothing_to_fuse_is_not_clustered)
{
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[1,2,5,5]\ninput w: f32[3,2,3,3]\n"
                        "y = conv2d(x, w)\nr = reshape(y, shape=[27])\noutput r\n");
    xc_clustering *c = mark(g, NULL); /* the default predicate compiles every op */
    check_consistent(g, c);
    cr_assert_eq(c->n_clusters, 0, "a conv with a reshape is no reason to launch a cluster");
    ASSERT_REASON(g, c, "y", XC_REASON_CONV_ALONE);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

Test(mark, a_matmul_with_nothing_to_fuse_is_not_clustered)
{
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[8,4]\ninput w: f32[8,4]\n"
                        "t = transpose(w)\ny = matmul(x, t)\noutput y\n");
    xc_clustering *c = mark(g, NULL);
    check_consistent(g, c);
    cr_assert_eq(c->n_clusters, 0, "a transpose feeding a matmul is no reason to launch a cluster");
    ASSERT_REASON(g, c, "y", XC_REASON_MATMUL_ALONE);
    ASSERT_REASON(g, c, "t", XC_REASON_MATMUL_ALONE);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);

    g = graph("xlac.graph v1\ninput x: f32[8,4]\ninput w: f32[4,8]\ninput b: f32[8]\n"
              "y = matmul(x, w)\nz = add(y, b)\noutput z\n");
    c = mark(g, NULL);
    check_consistent(g, c);
    cr_assert_eq(c->n_clusters, 1, "a bias add fuses with the matmul");
    cr_assert_eq(cluster_of(g, c, "y"), cluster_of(g, c, "z"));
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

/*
 * The static cost model's second rule (mark.c, saves_too_little): a cluster with a library product
 * whose fusion saves under 1/32 of the bytes its ops move is not formed. A scale of small weights
 * feeding a large product saves 2 x 32 KiB (ws neither written nor read back) and one launch
 * (16 KiB) against the product's 8.5 MiB: dissolved, with the reason on both ops.
 */
Test(mark, a_product_whose_fusion_saves_too_little_is_not_clustered)
{
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[4096,16]\ninput w: f32[16,512]\ninput s: f32[]\n"
                        "ws = mul(w, s)\ny = matmul(x, ws)\noutput y\n");
    xc_clustering *c = mark(g, NULL);
    check_consistent(g, c);
    cr_assert_eq(c->n_clusters, 0, "a scaled weight saves nothing beside the product");
    ASSERT_REASON(g, c, "ws", XC_REASON_LITTLE_SAVED);
    ASSERT_REASON(g, c, "y", XC_REASON_LITTLE_SAVED);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}

/* What it keeps: the product's epilogue (its 8 MiB output neither written nor read back), small
 * products (the launches saved weigh more than the bytes), clusters without a library product
 * however little they save, and unknown sizes (nothing to reckon with). */
Test(mark, the_cost_model_keeps_epilogues_small_products_and_elementwise_clusters)
{
    const char *keep[] = {
        "xlac.graph v1\ninput x: f32[4096,16]\ninput w: f32[16,512]\ninput b: f32[512]\n"
        "y = matmul(x, w)\nz = add(y, b)\nr = relu(z)\noutput r\n",
        "xlac.graph v1\ninput x: f32[64,16]\ninput w: f32[16,64]\ninput s: f32[]\n"
        "ws = mul(w, s)\ny = matmul(x, ws)\noutput y\n",
        "xlac.graph v1\ninput x: f32[4096,512]\ninput s: f32[1,512]\n"
        "a = add(x, s)\nb = mul(a, s)\noutput a\noutput b\n",
        "xlac.graph v1\ninput x: f32[?,16]\ninput w: f32[16,512]\ninput s: f32[]\n"
        "ws = mul(w, s)\ny = matmul(x, ws)\noutput y\n",
    };
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
        xe_graph *g = graph(keep[i]);
        xc_clustering *c = mark(g, NULL);
        check_consistent(g, c);
        cr_assert_eq(c->n_clusters, 1, "graph %zu: kept as one cluster", i);
        for (int n = 0; n < c->n_nodes; n++)
            cr_assert(!c->reason[n] || strcmp(c->reason[n], XC_REASON_LITTLE_SAVED) != 0, "graph %zu", i);
        xc_clustering_destroy(c);
        xe_graph_destroy(g);
    }
}

/* The reason is in the summary, under "by reason", with the ops it left out. */
Test(mark, the_cost_models_reason_is_in_the_summary)
{
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[4096,16]\ninput w: f32[16,512]\ninput s: f32[]\n"
                        "ws = mul(w, s)\ny = matmul(x, ws)\noutput y\n");
    xc_clustering *c = mark(g, NULL);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    xc_write_summary(f, g, c, 0);
    fclose(f);
    cr_assert(strstr(text, "    saves too little beside its library products (2): "), "%s", text);
    free(text);
    xc_clustering_destroy(c);
    xe_graph_destroy(g);
}
