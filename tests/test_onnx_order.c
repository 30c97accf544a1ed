/*
 * Nodes in any order (issue 34): an ONNX file whose nodes are not in
 * topological order imports as onnxruntime runs it, sorted at import
 * (executor/frontends/onnx/order.c). convert_float_to_float16 with
 * keep_io_types writes the Casts of the graph inputs last; here a graph
 * written in every other order runs exactly like the one in order; a cycle
 * is still an error that names a node, never a hang.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "support/pb.h"
#include "support/tmpdir.h"
#include "xlac/xlac.h"

#define F32 1

static xe_status st;

static void setup(void)
{
    xe_status_clear(&st);
    xt_tmp_make("/tmp/xlac-onnx-order-XXXXXX");
}

TestSuite(onnx_order, .init = setup, .fini = xt_tmp_fini, .timeout = 60);

/* A value f32[4] named name, as GraphProto field `field`. */
static void vi(pb *g, int field, const char *name)
{
    const int64_t four[1] = {4};
    pb_graph_value(g, field, name, F32, four, 1);
}

static pb unary(const char *op, const char *in, const char *out)
{
    pb n = {0};
    pb_str(&n, 1, in);
    pb_str(&n, 2, out);
    pb_str(&n, 3, out);
    pb_str(&n, 4, op);
    return n;
}

/* x -> Neg a -> Exp b -> Abs y, its nodes in the order given (a permutation of 0 1 2). */
static const char *write_chain(const char *name, const int *order, bool cycle)
{
    pb nodes[3] = {unary("Neg", cycle ? "y" : "x", "a"), unary("Exp", "a", "b"), unary("Abs", "b", "y")};
    pb g = {0}, m = {0}, os = {0};
    for (int k = 0; k < 3; k++)
        pb_msg(&g, 1, &nodes[order[k]]);
    vi(&g, 11, "x");
    vi(&g, 12, "y");
    pb_str(&g, 2, "g");
    pb_int(&m, 1, 8);
    pb_int(&os, 2, 17);
    pb_msg(&m, 8, &os);
    pb_msg(&m, 7, &g);
    const char *path = xt_path(name);
    pb_write_file(&m, path);
    return path;
}

static void run4(const char *path, float *y)
{
    xe_graph *g = xe_load_graph(path, NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_session_options o = {.place = XE_PLACE_CPU};
    xe_session *s = xe_session_new(g, &o, &st);
    cr_assert_not_null(s, "%s", st.msg);
    xe_shape sh = xe_shape_make(1, (int64_t[]){4});
    xe_tensor *x = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st), *out = NULL;
    for (int k = 0; k < 4; k++)
        ((float *)x->data)[k] = (float)k - 1.5f;
    cr_assert_eq(xe_session_run(s, &x, &out, &st), XE_OK, "%s", st.msg);
    memcpy(y, out->data, 4 * sizeof *y);
    xe_tensor_release(out);
    xe_tensor_release(x);
    xe_session_destroy(s);
}

Test(onnx_order, any_order_of_the_nodes_runs_as_the_sorted_one)
{
    float want[4], got[4];
    run4(write_chain("sorted.onnx", (int[]){0, 1, 2}, false), want);
    const int perms[5][3] = {{2, 1, 0}, {1, 0, 2}, {0, 2, 1}, {2, 0, 1}, {1, 2, 0}};
    for (int p = 0; p < 5; p++) {
        char name[32];
        snprintf(name, sizeof name, "perm%d.onnx", p);
        run4(write_chain(name, perms[p], false), got);
        for (int k = 0; k < 4; k++)
            cr_assert_eq(got[k], want[k], "order %d: y[%d] = %g, want %g", p, k, got[k], want[k]);
    }
}

Test(onnx_order, a_cycle_is_an_error_naming_a_node)
{
    xe_graph *g = xe_load_graph(write_chain("cycle.onnx", (int[]){2, 1, 0}, true), NULL, &st);
    cr_assert_null(g, "a cycle imported");
    cr_assert(strstr(st.msg, "not defined before it is used") || strstr(st.msg, "cycle"), "%s", st.msg);
}
