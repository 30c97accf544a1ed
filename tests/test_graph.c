/*
 * The graph IR and the type helpers: names, attributes, clones, use
 * counts, shape broadcasting and the f16 conversions every CPU kernel uses.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "xlac/xlac.h"

static xe_status st;

static xe_type f32(int rank, const int64_t *dims)
{
    return (xe_type){XE_F32, xe_shape_make(rank, dims)};
}

Test(graph, add_find_and_duplicate_names)
{
    xe_graph *g = xe_graph_new("t.xg");
    xe_type t = f32(1, (int64_t[]){4});
    int x = xe_graph_add_input(g, "x", &t, &st);
    int y = xe_graph_add_node(g, "y", XE_OP_NEG, &x, 1, &st);
    cr_assert(x == 0 && y == 1);
    cr_assert_eq(xe_graph_find(g, "y"), 1);
    cr_assert_eq(xe_graph_find(g, "nope"), -1);
    cr_assert_eq(xe_graph_add_node(g, "y", XE_OP_NEG, &x, 1, &st), -1);
    cr_assert(strstr(st.msg, "already defined"));
    int bad = 7;
    cr_assert_eq(xe_graph_add_node(g, "z", XE_OP_NEG, &bad, 1, &st), -1);
    char *fresh = xe_graph_fresh_name(g, "y");
    cr_assert_str_eq(fresh, "y_1");
    free(fresh);
    xe_graph_destroy(g);
}

Test(graph, attributes_replace_and_read_back)
{
    xe_graph *g = xe_graph_new(NULL);
    int n = xe_graph_add_node(g, "r", XE_OP_IOTA, NULL, 0, &st);
    xe_node *node = g->nodes[n];
    int64_t shape[] = {2, 3};
    cr_assert_eq(xe_node_set_ints(node, "shape", shape, 2, &st), XE_OK);
    cr_assert_eq(xe_node_set_int(node, "axis", 1, &st), XE_OK);
    cr_assert_eq(xe_node_set_int(node, "axis", 0, &st), XE_OK);
    cr_assert_eq(xe_node_set_string(node, "@cluster", "cluster_0", &st), XE_OK);
    cr_assert_eq(node->n_attrs, 3);
    cr_assert_eq(xe_node_attr_int(node, "axis", -5), 0);
    cr_assert_eq(xe_node_attr_int(node, "missing", -5), -5);
    cr_assert_str_eq(xe_node_attr_string(node, "@cluster", ""), "cluster_0");
    xe_node_remove_attr(node, "@cluster");
    cr_assert_null(xe_node_attr(node, "@cluster"));
    cr_assert_eq(xe_node_attr(node, "shape")->ints[1], 3);
    xe_graph_destroy(g);
}

Test(graph, clone_is_deep_and_use_counts_count_outputs)
{
    xe_graph *g = xe_graph_new("a.xg");
    xe_type t = f32(1, (int64_t[]){4});
    int x = xe_graph_add_input(g, "x", &t, &st);
    int ins[] = {x, x};
    int y = xe_graph_add_node(g, "y", XE_OP_ADD, ins, 2, &st);
    xe_node_set_float(g->nodes[y], "@note", 1.5, &st);
    xe_graph_add_output(g, y, &st);
    xe_graph_add_output(g, x, &st);
    xe_graph *c = xe_graph_clone(g, &st);
    cr_assert_not_null(c);
    cr_assert_eq(c->n_nodes, 2);
    cr_assert_eq(c->n_outputs, 2);
    cr_assert_neq(c->nodes[1]->attrs, g->nodes[1]->attrs);
    cr_assert_eq(xe_graph_find(c, "y"), 1);
    int *uses = xe_graph_use_counts(c);
    cr_assert_eq(uses[0], 3); /* twice by y, once as an output */
    cr_assert_eq(uses[1], 1);
    free(uses);
    xe_graph_destroy(g);
    cr_assert_eq(xe_node_attr_float(c->nodes[1], "@note", 0), 1.5);
    xe_graph_destroy(c);
}

Test(shape, numpy_broadcasting)
{
    xe_shape a = xe_shape_make(3, (int64_t[]){3, 1, 4}), b = xe_shape_make(2, (int64_t[]){5, 4});
    xe_shape r;
    cr_assert(xe_shape_broadcast(&a, &b, &r));
    cr_assert(r.rank == 3 && r.dims[0] == 3 && r.dims[1] == 5 && r.dims[2] == 4);
    xe_shape c = xe_shape_make(1, (int64_t[]){3});
    cr_assert_not(xe_shape_broadcast(&b, &c, &r));
    xe_shape u = xe_shape_make(2, (int64_t[]){XE_DIM_UNKNOWN, 4});
    cr_assert(xe_shape_broadcast(&u, &b, &r));
    cr_assert_eq(r.dims[0], 5);
    xe_shape one = xe_shape_make(2, (int64_t[]){1, 4});
    cr_assert(xe_shape_broadcast(&u, &one, &r));
    cr_assert_eq(r.dims[0], XE_DIM_UNKNOWN);
    char buf[64];
    cr_assert_str_eq(xe_type_str(&(xe_type){XE_F16, u}, buf, sizeof buf), "f16[?,4]");
}

Test(dtype, f16_round_trips_every_finite_value)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = xe_f16_to_f32((xe_f16)h);
        if (isnan(f)) {
            cr_assert(isnan(xe_f16_to_f32(xe_f32_to_f16(f))));
            continue;
        }
        cr_assert_eq(xe_f32_to_f16(f), (xe_f16)h, "h=0x%04x f=%g", h, f);
    }
}

Test(dtype, f16_rounds_to_nearest_even)
{
    cr_assert_eq(xe_f32_to_f16(1.0f), 0x3c00);
    cr_assert_eq(xe_f32_to_f16(65504.0f), 0x7bff);
    cr_assert_eq(xe_f32_to_f16(65520.0f), 0x7c00); /* rounds up to inf */
    cr_assert_eq(xe_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00); /* tie to even */
    cr_assert_eq(xe_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);
    cr_assert_eq(xe_f32_to_f16(5.9604645e-8f), 0x0001); /* smallest subnormal */
    cr_assert_eq(xe_f32_to_f16(2.9802322e-8f), 0x0000); /* half of it: tie to even (0) */
    cr_assert_eq(xe_f32_to_f16(-0.0f), 0x8000);
}

Test(status, prefix_and_exit_codes)
{
    xe_status s;
    xe_status_clear(&s);
    xe_fail(&s, XE_ERR_GRAPH, "bad %s", "thing");
    xe_status_prefix(&s, "g.xg:%d:%d: ", 3, 1);
    cr_assert_str_eq(s.msg, "g.xg:3:1: bad thing");
    cr_assert_eq(xe_code_exit_status(XE_ERR_PARSE), 2);
    cr_assert_eq(xe_code_exit_status(XE_ERR_RUNTIME), 1);
    cr_assert_eq(xe_code_exit_status(XE_OK), 0);
}

Test(device, no_gpu_is_reported_not_fatal)
{
    if (xe_gpu_available())
        cr_skip_test("a CUDA device is present");
    cr_assert(strlen(xe_gpu_unavailable_reason()) > 0);
    cr_assert_null(xe_gpu_alloc(16, &st));
    cr_assert_eq(st.code, XE_ERR_DEVICE);
}
