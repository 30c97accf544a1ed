/*
 * Encapsulation: each cluster becomes one launch node with a body; the
 * values it exports keep their names through get nodes; the new graph is
 * topologically ordered and inferred; it runs (bodies op by op) to the
 * same bits as the original; and its text form parses back and runs too.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "xc.h"
#include "xlac/xlac.h"

static xe_status st;
static int launch_op = -1;

static void setup(void)
{
    xe_status_clear(&st);
    xe_op_def d = {.name = "test_launch",
                   .min_inputs = 0,
                   .max_inputs = -1,
                   .cls = XE_CLASS_COMPOSITE,
                   .device_prefix = "XLA_"};
    launch_op = xe_op_find(d.name, strlen(d.name));
    if (launch_op < 0)
        launch_op = xe_register_op(&d, &st);
    cr_assert_geq(launch_op, 0, "%s", st.msg);
}

TestSuite(encapsulate, .init = setup);

static xe_graph *graph(const char *text)
{
    xe_graph *g = xe_parse_string(text, "e.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    cr_assert_eq(xe_graph_infer(g, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(xe_graph_place(g, XE_PLACE_CPU, &st), XE_OK, "%s", st.msg);
    return g;
}

static xe_graph *encapsulate(const xe_graph *g, xc_clustering **out)
{
    xc_clustering *c = xc_mark_for_compilation(g, NULL, &st);
    cr_assert_not_null(c, "%s", st.msg);
    xe_graph *e = xc_encapsulate(g, c, launch_op, &st);
    cr_assert_not_null(e, "%s", st.msg);
    if (out)
        *out = c;
    else
        xc_clustering_destroy(c);
    return e;
}

static void check_topological(const xe_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i]->n_inputs; k++)
            cr_assert_lt(g->nodes[i]->inputs[k], i, "node %s", g->nodes[i]->name);
}

/* Runs g (consumed) on inputs; returns the outputs. */
static void run(xe_graph *g, xe_tensor **in, xe_tensor **out)
{
    xe_session *s = xe_session_new(g, NULL, &st);
    cr_assert_not_null(s, "%s", st.msg);
    cr_assert_eq(xe_session_run(s, in, out, &st), XE_OK, "%s", st.msg);
    xe_session_destroy(s);
}

static xe_tensor *ramp(int n, float scale)
{
    int64_t dims[1] = {n};
    xe_shape sh = xe_shape_make(1, dims);
    xe_tensor *t = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    cr_assert_not_null(t);
    for (int i = 0; i < n; i++)
        ((float *)t->data)[i] = scale * (float)(i % 5) - 1.25f;
    return t;
}

static void assert_same_bits(xe_tensor *a, xe_tensor *b)
{
    cr_assert_eq(a->dtype, b->dtype);
    cr_assert(xe_shape_equal(&a->shape, &b->shape));
    cr_assert_eq(memcmp(a->data, b->data, a->nbytes), 0);
}

static const char *mixed = "xlac.graph v1\ninput x: f32[8]\ninput y: f32[8]\n"
                           "a = neg(x)\nu = unique(a)\nb = exp(a)\nc = mul(b, y)\n"
                           "v = unique(c)\nd = add(c, a)\noutput d\noutput u\noutput v\n";

Test(encapsulate, structure)
{
    xe_graph *g = graph(mixed);
    xc_clustering *c;
    xe_graph *e = encapsulate(g, &c);
    cr_assert_eq(c->n_clusters, 1);
    check_topological(e);
    int l = xe_graph_find(e, "cluster_0");
    cr_assert_geq(l, 0);
    const xe_node *launch = e->nodes[l];
    cr_assert_eq(launch->op, launch_op);
    cr_assert_not_null(launch->body);
    cr_assert_str_eq(xe_node_attr_string(launch, "@cluster", ""), "cluster_0");
    cr_assert_str_eq(xe_node_attr_string(launch, "@device", ""), "XLA_CPU:0");
    /* inputs: x and y enter; outputs: a (used by unique), c (by unique), d (graph output) */
    cr_assert_eq(launch->n_inputs, 2);
    cr_assert_eq(launch->body->n_inputs, 2);
    cr_assert_eq(launch->body->n_outputs, 3);
    cr_assert_eq(launch->n_tuple, 3);
    for (int i = 0; i < 3; i++) {
        const char *name = (const char *[]){"a", "c", "d"}[i];
        int k = xe_graph_find(e, name);
        cr_assert_geq(k, 0, "%s", name);
        cr_assert_eq(e->nodes[k]->op, XE_OP_GET);
        cr_assert_eq(xe_node_attr_int(e->nodes[k], "index", -1), i);
        cr_assert_eq(e->nodes[k]->inputs[0], l);
    }
    cr_assert_eq(xe_graph_find(e, "b"), -1, "b is internal to the cluster");
    cr_assert_eq(e->n_outputs, 3);
    for (int i = 0; i < 3; i++)
        cr_assert_str_eq(e->nodes[e->outputs[i]]->name, g->nodes[g->outputs[i]]->name);
    for (int i = 0; i < 2; i++)
        cr_assert_str_eq(e->nodes[e->inputs[i]]->name, g->nodes[g->inputs[i]]->name);
    cr_assert_geq(xe_graph_find(launch->body, "b"), 0);
    xc_clustering_destroy(c);
    xe_graph_destroy(e);
    xe_graph_destroy(g);
}

Test(encapsulate, same_bits_as_op_by_op_and_text_round_trip)
{
    xe_graph *g = graph(mixed);
    xe_graph *e = encapsulate(g, NULL);
    char *text = xe_write_string(e, &st);
    cr_assert_not_null(text, "%s", st.msg);
    cr_assert(strstr(text, "test_launch") != NULL, "%s", text);
    xe_graph *back = xe_parse_string(text, "dump.xg", &st);
    cr_assert_not_null(back, "%s\n%s", st.msg, text);
    free(text);
    xe_tensor *in[2] = {ramp(8, 0.5f), ramp(8, 1.5f)};
    xe_tensor *ref[3], *got[3], *again[3];
    run(g, in, ref);
    run(e, in, got);
    run(back, in, again);
    for (int i = 0; i < 3; i++) {
        assert_same_bits(ref[i], got[i]);
        assert_same_bits(ref[i], again[i]);
        xe_tensor_release(ref[i]);
        xe_tensor_release(got[i]);
        xe_tensor_release(again[i]);
    }
    xe_tensor_release(in[0]);
    xe_tensor_release(in[1]);
}

/* b (outside) consumes a and sits between a and c in the text: re-sorted. */
Test(encapsulate, reorders_around_outside_consumers)
{
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[6]\n"
                        "a = neg(x)\nb = unique(a)\nc = exp(a)\nd = add(c, x)\n"
                        "output b\noutput d\n");
    xe_graph *e = encapsulate(g, NULL);
    check_topological(e);
    xe_tensor *in[1] = {ramp(6, 2.0f)}, *ref[2], *got[2];
    run(g, in, ref);
    run(e, in, got);
    for (int i = 0; i < 2; i++) {
        assert_same_bits(ref[i], got[i]);
        xe_tensor_release(ref[i]);
        xe_tensor_release(got[i]);
    }
    xe_tensor_release(in[0]);
}

Test(encapsulate, constant_inside_and_dead_value)
{
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[4]\nk = const(f32[], 0.5)\n"
                        "a = mul(x, k)\ndead = exp(a)\nb = sin(a)\noutput b\n");
    xc_clustering *c;
    xe_graph *e = encapsulate(g, &c);
    cr_assert_eq(c->n_clusters, 1);
    cr_assert_eq(c->clusters[0].n_nodes, 4, "k joins, dead stays");
    const xe_node *launch = e->nodes[xe_graph_find(e, "cluster_0")];
    cr_assert_eq(launch->n_inputs, 1);
    cr_assert_eq(launch->body->n_outputs, 2, "b and the unused dead");
    xe_tensor *in[1] = {ramp(4, 1.0f)}, *ref[1], *got[1];
    run(g, in, ref);
    run(e, in, got);
    assert_same_bits(ref[0], got[0]);
    xe_tensor_release(ref[0]);
    xe_tensor_release(got[0]);
    xe_tensor_release(in[0]);
    xc_clustering_destroy(c);
}

Test(encapsulate, name_clash_with_a_user_node)
{
    xe_graph *g = graph("xlac.graph v1\ninput x: f32[4]\n"
                        "cluster_0 = neg(x)\nb = exp(cluster_0)\noutput b\n");
    xe_graph *e = encapsulate(g, NULL);
    int l = xe_graph_find(e, "cluster_0_1");
    cr_assert_geq(l, 0);
    cr_assert_eq(e->nodes[l]->op, launch_op);
    xe_graph_destroy(e);
    xe_graph_destroy(g);
}
