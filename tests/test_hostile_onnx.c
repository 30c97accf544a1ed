/*
 * Hostile ONNX models (issue 31's reproductions), each written here with a
 * few protobuf fields and loaded in this process, so that a signal fails
 * the test as a crash:
 *   - subgraphs nested 4,000 deep (protobuf-c unpacked them recursively:
 *     SIGSEGV), and 20,000 deep with a malformed innermost graph (the
 *     diagnosing walk recursed too);
 *   - Attention (opset 23) with zero KV heads (SIGFPE);
 *   - Split with num_outputs=0 (SIGFPE);
 *   - a graph output with no name beside an initializer named "" (SIGSEGV);
 *   - names with a NUL inside, "t\0a" and "t\0b", whose difference was 0;
 *   - GatherElements with indices 7 and -9 on an axis of 4 (zeros, no error);
 *   - a Conv with a pad of 2^62 (a signed overflow in its shape function).
 * Each must be an error that names the node or the limit; the valid
 * neighbours (a GatherElements with -1, nesting 20 deep) must still run.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/pb.h"
#include "support/tmpdir.h"
#include "xlac/xlac.h"

#define F32 1
#define I64 7
#define BOOL_T 9

static xe_status st;

static void setup(void)
{
    xe_status_clear(&st);
    xt_tmp_make("/tmp/xlac-hostile-onnx-XXXXXX");
}

TestSuite(hostile_onnx, .init = setup, .fini = xt_tmp_fini, .timeout = 120);

/* A NodeProto of op with inputs ins[n_in] and outputs outs[n_out] (name: its first output). */
static pb node_of(const char *op, const char *const *ins, int n_in, const char *const *outs, int n_out)
{
    pb n = {0};
    for (int k = 0; k < n_in; k++)
        pb_str(&n, 1, ins[k]);
    for (int k = 0; k < n_out; k++)
        pb_str(&n, 2, outs[k]);
    pb_str(&n, 3, outs[0]);
    pb_str(&n, 4, op);
    return n;
}

static void attr_int(pb *n, const char *name, int64_t v)
{
    pb a = {0};
    pb_str(&a, 1, name);
    pb_int(&a, 3, (uint64_t)v);
    pb_int(&a, 20, 2); /* INT */
    pb_msg(n, 5, &a);
}

static void attr_ints(pb *n, const char *name, const int64_t *v, int count)
{
    pb a = {0};
    pb_str(&a, 1, name);
    for (int k = 0; k < count; k++)
        pb_int(&a, 8, (uint64_t)v[k]);
    pb_int(&a, 20, 7); /* INTS */
    pb_msg(n, 5, &a);
}

/* ModelProto {ir_version 9, opset, graph} written to the test folder as name. */
static const char *write_model(const char *name, pb *graph, int opset)
{
    pb m = {0}, os = {0};
    pb_int(&m, 1, 9);
    pb_int(&os, 2, (uint64_t)opset);
    pb_msg(&m, 8, &os);
    pb_str(graph, 2, "g");
    pb_msg(&m, 7, graph);
    const char *path = xt_path(name);
    pb_write_file(&m, path);
    return path;
}

/* The load fails, its message holding every word of want ('|' separated). */
static void refused(const char *path, const char *want)
{
    xe_status_clear(&st);
    xe_graph *g = xe_load_graph(path, NULL, &st);
    cr_assert_null(g, "%s loaded", path);
    char words[256];
    snprintf(words, sizeof words, "%s", want);
    for (char *w = strtok(words, "|"); w; w = strtok(NULL, "|"))
        cr_assert(strstr(st.msg, w), "'%s' not in: %s", w, st.msg);
}

/* GraphProto inside NodeProto inside ... depth deep, the innermost a truncated tag: the bare nesting. */
static const char *write_nested_junk(const char *name, int depth)
{
    pb inner = {0};
    pb_raw(&inner, "\xff\xff\xff", 3);
    for (int d = 0; d < depth; d++) {
        pb a = {0}, n = {0}, g = {0};
        pb_msg(&a, 6, &inner);
        pb_msg(&n, 5, &a);
        pb_msg(&g, 1, &n);
        inner = g;
    }
    return write_model(name, &inner, 17);
}

/* If nodes nested depth deep, each then branch the next (else: an Identity); innermost Identity(x). */
static const char *write_nested(const char *name, int depth)
{
    pb inner = {0};
    {
        const char *i[] = {"x"}, *o[] = {"y0"};
        pb n = node_of("Identity", i, 1, o, 1);
        pb_msg(&inner, 1, &n);
        pb_graph_value(&inner, 12, "y0", F32, (int64_t[]){2}, 1);
    }
    for (int d = 1; d < depth; d++) {
        pb g = {0}, n = {0}, then_a = {0}, else_a = {0}, flat = {0};
        char out[32], in[32];
        snprintf(out, sizeof out, "y%d", d);
        snprintf(in, sizeof in, "y%d", d - 1);
        pb_str(&n, 1, "c");
        pb_str(&n, 2, out);
        pb_str(&n, 4, "If");
        const char *fi[] = {"x"}, *fo[] = {in}; /* else: a flat branch of the same output */
        pb e = node_of("Identity", fi, 1, fo, 1);
        pb_msg(&flat, 1, &e);
        pb_graph_value(&flat, 12, in, F32, (int64_t[]){2}, 1);
        pb_str(&then_a, 1, "then_branch");
        pb_msg(&then_a, 6, &inner);
        pb_int(&then_a, 20, 5); /* GRAPH */
        pb_str(&else_a, 1, "else_branch");
        pb_msg(&else_a, 6, &flat);
        pb_int(&else_a, 20, 5);
        pb_msg(&n, 5, &then_a);
        pb_msg(&n, 5, &else_a);
        pb_msg(&g, 1, &n);
        pb_graph_value(&g, 12, out, F32, (int64_t[]){2}, 1);
        inner = g;
    }
    pb_graph_value(&inner, 11, "x", F32, (int64_t[]){2}, 1);
    pb c = {0}; /* the condition, known at load time (a branch is imported, not run) */
    pb_int(&c, 2, BOOL_T);
    pb_bytes(&c, 9, "\1", 1);
    pb_str(&c, 8, "c");
    pb_msg(&inner, 5, &c);
    return write_model(name, &inner, 17);
}

Test(hostile_onnx, subgraphs_nested_beyond_the_limit_are_refused_by_name)
{
    refused(write_nested("deep.onnx", 4000), "nested more than 128|deep.onnx");
    refused(write_nested_junk("deep_junk.onnx", 20000), "nested more than 128");
    /* 20 deep is an ordinary model: it loads */
    xe_status_clear(&st);
    xe_graph *g = xe_load_graph(write_nested("ok.onnx", 20), NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_graph_destroy(g);
}

Test(hostile_onnx, attention_with_zero_kv_heads_is_an_error)
{
    pb g = {0};
    const char *i[] = {"q", "k", "v"}, *o[] = {"y"};
    pb n = node_of("Attention", i, 3, o, 1);
    pb_msg(&g, 1, &n);
    pb_graph_value(&g, 11, "q", F32, (int64_t[]){1, 2, 4, 8}, 4);
    pb_graph_value(&g, 11, "k", F32, (int64_t[]){1, 0, 4, 8}, 4);
    pb_graph_value(&g, 11, "v", F32, (int64_t[]){1, 0, 4, 8}, 4);
    pb_graph_value(&g, 12, "y", F32, (int64_t[]){1, 2, 4, 8}, 4);
    refused(write_model("attn.onnx", &g, 23), "'y' (Attention|query heads");
}

Test(hostile_onnx, split_with_zero_outputs_is_an_error)
{
    pb g = {0};
    const char *i[] = {"x"}, *o[] = {"a", "b"};
    pb n = node_of("Split", i, 1, o, 2);
    attr_int(&n, "num_outputs", 0);
    pb_msg(&g, 1, &n);
    pb_graph_value(&g, 11, "x", F32, (int64_t[]){4}, 1);
    pb_graph_value(&g, 12, "a", F32, (int64_t[]){2}, 1);
    refused(write_model("split.onnx", &g, 18), "num_outputs is 0");
}

Test(hostile_onnx, a_nameless_output_beside_a_nameless_initializer_is_an_error)
{
    pb g = {0}, t = {0};
    pb_int(&t, 1, 2);
    pb_int(&t, 2, F32);
    pb_bytes(&t, 9, (float[]){1, 2}, 8);
    pb_str(&t, 8, "");
    pb_msg(&g, 5, &t);
    pb_graph_value(&g, 12, NULL, F32, (int64_t[]){2}, 1);
    refused(write_model("noname.onnx", &g, 17), "graph output 0 has no name|initializer 0 has no name");
}

Test(hostile_onnx, names_with_a_nul_inside_are_refused)
{
    pb g = {0}, neg = {0}, ex = {0};
    pb_str(&neg, 1, "x");
    pb_bytes(&neg, 2, "t\0a", 3);
    pb_str(&neg, 4, "Neg");
    pb_str(&ex, 1, "x");
    pb_bytes(&ex, 2, "t\0b", 3);
    pb_str(&ex, 4, "Exp");
    pb_msg(&g, 1, &neg);
    pb_msg(&g, 1, &ex);
    pb n = {0};
    pb_bytes(&n, 1, "t\0a", 3);
    pb_bytes(&n, 1, "t\0b", 3);
    pb_str(&n, 2, "d");
    pb_str(&n, 4, "Sub");
    pb_msg(&g, 1, &n);
    pb_graph_value(&g, 11, "x", F32, (int64_t[]){3}, 1);
    pb_graph_value(&g, 12, "d", F32, (int64_t[]){3}, 1);
    refused(write_model("nul.onnx", &g, 17), "NUL byte inside|NodeProto");
}

/* GatherElements(data [2,4], indices [2,2] given) along axis 1, run op by op; the status of the run. */
static xe_code gather_elements(const int64_t *idx, float *out)
{
    pb g = {0};
    const char *i[] = {"data", "idx"}, *o[] = {"y"};
    pb n = node_of("GatherElements", i, 2, o, 1);
    attr_int(&n, "axis", 1);
    pb_msg(&g, 1, &n);
    pb_graph_value(&g, 11, "data", F32, (int64_t[]){2, 4}, 2);
    pb_graph_value(&g, 11, "idx", I64, (int64_t[]){2, 2}, 2);
    pb_graph_value(&g, 12, "y", F32, (int64_t[]){2, 2}, 2);
    xe_status_clear(&st);
    xe_graph *gr = xe_load_graph(write_model("ge.onnx", &g, 13), NULL, &st);
    cr_assert_not_null(gr, "%s", st.msg);
    xe_session_options opt = {.place = XE_PLACE_CPU};
    xe_session *s = xe_session_new(gr, &opt, &st);
    cr_assert_not_null(s, "%s", st.msg);
    xe_shape ds = xe_shape_make(2, (int64_t[]){2, 4}), is = xe_shape_make(2, (int64_t[]){2, 2});
    xe_tensor *in[2] = {xe_tensor_new(XE_F32, &ds, XE_DEV_CPU, &st), xe_tensor_new(XE_I64, &is, XE_DEV_CPU, &st)};
    for (int k = 0; k < 8; k++)
        ((float *)in[0]->data)[k] = (float)(10 * k);
    memcpy(in[1]->data, idx, 4 * sizeof *idx);
    xe_tensor *y = NULL;
    xe_code c = xe_session_run(s, in, &y, &st);
    if (c == XE_OK)
        memcpy(out, y->data, 4 * sizeof *out);
    xe_tensor_release(y);
    xe_tensor_release(in[0]);
    xe_tensor_release(in[1]);
    xe_session_destroy(s);
    return c;
}

Test(hostile_onnx, gather_elements_out_of_range_is_an_error_and_in_range_is_exact)
{
    float y[4];
    cr_assert_eq(gather_elements((int64_t[]){3, -1, 0, -4}, y), XE_OK, "%s", st.msg);
    float want[4] = {30, 30, 40, 40};
    for (int k = 0; k < 4; k++)
        cr_assert_eq(y[k], want[k], "y[%d] = %g, want %g", k, y[k], want[k]);
    cr_assert_neq(gather_elements((int64_t[]){0, 7, 1, 2}, y), XE_OK, "index 7 on an axis of 4 ran");
    cr_assert(strstr(st.msg, "index 7") && strstr(st.msg, "out of range"), "%s", st.msg);
    cr_assert_neq(gather_elements((int64_t[]){0, 1, -9, 2}, y), XE_OK, "index -9 on an axis of 4 ran");
    cr_assert(strstr(st.msg, "index -9") && strstr(st.msg, "out of range"), "%s", st.msg);
}

Test(hostile_onnx, a_conv_pad_beyond_int64_is_an_error_naming_it)
{
    pb g = {0}, w = {0};
    pb_int(&w, 1, 1), pb_int(&w, 1, 1), pb_int(&w, 1, 1), pb_int(&w, 1, 1);
    pb_int(&w, 2, F32);
    pb_bytes(&w, 9, (float[]){1}, 4);
    pb_str(&w, 8, "w");
    pb_msg(&g, 5, &w);
    const char *i[] = {"x", "w"}, *o[] = {"y"};
    pb n = node_of("Conv", i, 2, o, 1);
    int64_t big = (int64_t)1 << 62;
    attr_ints(&n, "pads", (int64_t[]){big, big, big, big}, 4);
    pb_msg(&g, 1, &n);
    pb_graph_value(&g, 11, "x", F32, (int64_t[]){1, 1, 4, 4}, 4);
    pb_graph_value(&g, 12, "y", F32, (int64_t[]){1, 1, 4, 4}, 4);
    refused(write_model("pad.onnx", &g, 17), "'y' (Conv|pads 4611686018427387904");
}
