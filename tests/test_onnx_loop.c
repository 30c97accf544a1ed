/*
 * Loop and sequences at import (executor/frontends/onnx/ops/loop.c,
 * ops/sequence.c), on models written here by hand: a Loop with a constant
 * trip count unrolls (its carried value and its stacked scan output as
 * ONNX defines them), a list built with SequenceEmpty and SequenceInsert
 * concatenates, and each case xlac cannot unroll or keep as a list is
 * refused with a message naming the op and why: a trip count or a body
 * condition computed at run time, a sequence given to an op that takes
 * tensors, an empty sequence concatenated; a sequence as the graph's output
 * is its tensors, one graph output each (NAME.0, NAME.1).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "support/pb.h"
#include "support/tmpdir.h"
#include "xlac/xlac.h"

#define F32 1
#define I64 7
#define BOOL 9

static xe_status st;

static void setup(void)
{
    xe_status_clear(&st);
    xt_tmp_make("/tmp/xlac-onnx-loop-XXXXXX");
}

TestSuite(onnx_loop, .init = setup, .fini = xt_tmp_fini, .timeout = 60);

static const int64_t four[1] = {4};

/* NodeProto op(in0, in1, ...) -> out (inputs "" allowed), attributes added by the caller. */
static pb node(const char *op, const char *const *in, int n_in, const char *out)
{
    pb n = {0};
    for (int k = 0; k < n_in; k++)
        pb_str(&n, 1, in[k]);
    pb_str(&n, 2, out);
    pb_str(&n, 3, out);
    pb_str(&n, 4, op);
    return n;
}

/* An int attribute on node n. */
static void attr_int(pb *n, const char *name, int64_t v)
{
    pb a = {0};
    pb_str(&a, 1, name);
    pb_int(&a, 3, (uint64_t)v);
    pb_int(&a, 20, 2); /* INT */
    pb_msg(n, 5, &a);
}

/* A graph attribute on node n. */
static void attr_graph(pb *n, const char *name, pb *g)
{
    pb a = {0};
    pb_str(&a, 1, name);
    pb_msg(&a, 6, g);
    pb_int(&a, 20, 5); /* GRAPH */
    pb_msg(n, 5, &a);
}

/* A scalar i64 initializer of graph g. */
static void init_i64(pb *g, const char *name, int64_t v)
{
    pb t = {0};
    pb_int(&t, 2, I64);
    pb_int(&t, 7, (uint64_t)v);
    pb_str(&t, 8, name);
    pb_msg(g, 5, &t);
}

/* The model of graph g (opset 17) written to name; its path. */
static const char *write_model(const char *name, pb *g)
{
    pb m = {0}, os = {0};
    pb_str(g, 2, "g");
    pb_int(&m, 1, 8);
    pb_int(&os, 2, 17);
    pb_msg(&m, 8, &os);
    pb_msg(&m, 7, g);
    const char *path = xt_path(name);
    pb_write_file(&m, path);
    return path;
}

/* body(i, c, a) = (cond, a + a, -(a + a)); cond is c, or the graph input `flag` when cond_flag. */
static pb doubling_body(bool cond_flag)
{
    pb g = {0}, n;
    n = node("Add", (const char *[]){"a", "a"}, 2, "s");
    pb_msg(&g, 1, &n);
    n = node("Neg", (const char *[]){"s"}, 1, "t");
    pb_msg(&g, 1, &n);
    n = node("Identity", (const char *[]){cond_flag ? "flag" : "c"}, 1, "co");
    pb_msg(&g, 1, &n);
    pb_str(&g, 2, "body");
    pb_graph_value(&g, 11, "i", I64, NULL, 0);
    pb_graph_value(&g, 11, "c", BOOL, NULL, 0);
    pb_graph_value(&g, 11, "a", F32, four, 1);
    pb_graph_value(&g, 12, "co", BOOL, NULL, 0);
    pb_graph_value(&g, 12, "s", F32, four, 1);
    pb_graph_value(&g, 12, "t", F32, four, 1);
    return g;
}

/* y, ys = Loop(M, "", x) with the doubling body; M the initializer 3 or the graph input m. */
static const char *write_loop(const char *name, bool m_input, bool cond_flag)
{
    pb g = {0}, body = doubling_body(cond_flag);
    pb n = {0};
    pb_str(&n, 1, "m");
    pb_str(&n, 1, "");
    pb_str(&n, 1, "x");
    pb_str(&n, 2, "y");
    pb_str(&n, 2, "ys");
    pb_str(&n, 3, "loop");
    pb_str(&n, 4, "Loop");
    attr_graph(&n, "body", &body);
    pb_msg(&g, 1, &n);
    if (!m_input)
        init_i64(&g, "m", 3);
    pb_graph_value(&g, 11, "x", F32, four, 1);
    if (m_input)
        pb_graph_value(&g, 11, "m", I64, NULL, 0);
    if (cond_flag)
        pb_graph_value(&g, 11, "flag", BOOL, NULL, 0);
    pb_graph_value(&g, 12, "y", F32, four, 1);
    pb_graph_value(&g, 12, "ys", F32, (int64_t[]){3, 4}, 2);
    return write_model(name, &g);
}

/* Runs g (the session takes it) on x = [-1.5, -0.5, 0.5, 1.5]; its outputs in out. */
static void run(xe_graph *g, xe_tensor **out)
{
    xe_session_options o = {.place = XE_PLACE_CPU};
    xe_session *s = xe_session_new(g, &o, &st);
    cr_assert_not_null(s, "%s", st.msg);
    xe_shape sh = xe_shape_make(1, four);
    xe_tensor *x = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    for (int k = 0; k < 4; k++)
        ((float *)x->data)[k] = (float)k - 1.5f;
    cr_assert_eq(xe_session_run(s, &x, out, &st), XE_OK, "%s", st.msg);
    xe_tensor_release(x);
    xe_session_destroy(s);
}

Test(onnx_loop, a_constant_trip_count_unrolls_with_carried_and_scan_outputs)
{
    xe_graph *g = xe_load_graph(write_loop("loop.onnx", false, false), NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_tensor *out[2] = {NULL, NULL};
    run(g, out);
    cr_assert_eq(out[0]->shape.rank, 1);
    cr_assert_eq(out[1]->shape.rank, 2);
    cr_assert_eq(out[1]->shape.dims[0], 3);
    cr_assert_eq(out[1]->shape.dims[1], 4);
    const float *y = out[0]->data, *ys = out[1]->data;
    for (int k = 0; k < 4; k++) {
        float x = (float)k - 1.5f;
        cr_assert_eq(y[k], 8 * x, "y[%d] = %g", k, y[k]);
        for (int i = 0; i < 3; i++)
            cr_assert_eq(ys[i * 4 + k], -x * (float)(2 << i), "ys[%d][%d] = %g", i, k,
                         ys[i * 4 + k]);
    }
    xe_tensor_release(out[0]);
    xe_tensor_release(out[1]);
}

/* Loads path, which must be refused with a message holding each of the two parts. */
static void expect_refused(const char *path, const char *part1, const char *part2)
{
    xe_graph *g = xe_load_graph(path, NULL, &st);
    cr_assert_null(g, "%s imported", path);
    cr_assert(strstr(st.msg, part1) && strstr(st.msg, part2), "%s", st.msg);
}

Test(onnx_loop, a_trip_count_or_condition_computed_at_run_time_is_refused)
{
    expect_refused(write_loop("m_input.onnx", true, false), "Loop",
                   "the trip count M, 'm') is not supported unless it is known at load time");
    expect_refused(write_loop("flag.onnx", false, true), "Loop",
                   "the condition the body computes ('co') is not known at load");
}

/* seq = SequenceEmpty; seq1 = Insert(seq, x); seq2 = Insert(seq1, x2, position 0); then `tail`
   (ConcatFromSequence, or an op that takes tensors) of seq2, or of seq when empty_concat; no tail:
   the graph's output y is seq2 itself. */
static const char *write_sequence(const char *name, const char *tail, bool empty_concat)
{
    pb g = {0}, n;
    n = node("SequenceEmpty", NULL, 0, "seq");
    pb_msg(&g, 1, &n);
    n = node("SequenceInsert", (const char *[]){"seq", "x"}, 2, "seq1");
    pb_msg(&g, 1, &n);
    n = node("Neg", (const char *[]){"x"}, 1, "x2");
    pb_msg(&g, 1, &n);
    init_i64(&g, "zero", 0);
    n = node("SequenceInsert", (const char *[]){"seq1", "x2", "zero"}, 3, tail ? "seq2" : "y");
    pb_msg(&g, 1, &n);
    if (tail) {
        n = node(tail, (const char *[]){empty_concat ? "seq" : "seq2"}, 1, "y");
        if (!strcmp(tail, "ConcatFromSequence")) {
            attr_int(&n, "axis", 0);
            attr_int(&n, "new_axis", 1);
        }
        pb_msg(&g, 1, &n);
    }
    pb_graph_value(&g, 11, "x", F32, four, 1);
    pb_graph_value(&g, 12, "y", F32, (int64_t[]){2, 4}, 2);
    return write_model(name, &g);
}

Test(onnx_loop, sequences_are_lists_of_nodes_at_import)
{
    xe_graph *g = xe_load_graph(write_sequence("seq.onnx", "ConcatFromSequence", false), NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_tensor *out[1] = {NULL};
    run(g, out);
    cr_assert_eq(out[0]->shape.rank, 2);
    cr_assert_eq(out[0]->shape.dims[0], 2);
    const float *y = out[0]->data;
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(y[k], 1.5f - (float)k, "y[0][%d] = %g (x2 was inserted at the front)", k,
                     y[k]);
        cr_assert_eq(y[4 + k], (float)k - 1.5f, "y[1][%d] = %g", k, y[4 + k]);
    }
    xe_tensor_release(out[0]);
}

Test(onnx_loop, what_cannot_be_a_list_is_refused)
{
    expect_refused(write_sequence("neg.onnx", "Neg", false), "Neg",
                   "input 'seq2' is a sequence, which this op does not take");
    expect_refused(write_sequence("empty.onnx", "ConcatFromSequence", true), "ConcatFromSequence",
                   "an empty sequence is not supported");
}

Test(onnx_loop, a_sequence_output_is_its_tensors)
{
    xe_graph *g = xe_load_graph(write_sequence("out.onnx", NULL, false), NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    cr_assert_eq(g->n_outputs, 2);
    for (int k = 0; k < 2; k++) {
        const xe_node *n = g->nodes[g->outputs[k]];
        const char *name = xe_node_attr_string(n, "@output", n->name);
        cr_assert_str_eq(name, k ? "y.1" : "y.0");
    }
    xe_tensor *out[2] = {NULL, NULL};
    run(g, out);
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(((const float *)out[0]->data)[k], 1.5f - (float)k, "y.0[%d]", k);
        cr_assert_eq(((const float *)out[1]->data)[k], (float)k - 1.5f, "y.1[%d]", k);
    }
    xe_tensor_release(out[0]);
    xe_tensor_release(out[1]);
}
