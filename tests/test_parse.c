/*
 * The .xg parser and writer.
 *
 * 1. Round trips: parse → write → parse → write gives the same text and
 *    equal graphs (compared field by field, bodies included), for graphs
 *    with every attribute kind, annotations, jit blocks, composites, `?`
 *    dims and constants of every dtype; the examples and random graphs too.
 * 2. One test per error message, asserting its exact FILE:LINE:COL prefix
 *    and a key phrase; data files under tests/data/parse carry their
 *    expectation in a first-line comment ("# expect: LINE:COL: phrase").
 * 3. Fuzz-ish: mutated graphs (byte flips, truncation, junk) never crash
 *    and fail, if at all, with a FILE:LINE:COL: message.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/randgraph.h"
#include "xlac/xlac.h"

#define HDR "xlac.graph v1\n"
#define DATA XLAC_SOURCE_DIR "/tests/data/parse"

static xe_status st;

/* ---- helpers ---------------------------------------------------------------- */

static xe_graph *parse_ok(const char *text, const char *file)
{
    xe_graph *g = xe_parse_string(text, file, &st);
    cr_assert_not_null(g, "%s\n--- text ---\n%s", st.msg, text);
    return g;
}

static char *read_text(const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    cr_assert_eq(xe_read_file(path, &buf, &len, &st), XE_OK, "%s", st.msg);
    return buf;
}

/* Doubles equal bit for bit, except that any NaN equals any NaN. */
static bool same_double(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static void assert_attrs_equal(const xe_attr *a, const xe_attr *b, const char *node)
{
    cr_assert_str_eq(a->name, b->name, "node %s", node);
    cr_assert_eq(a->kind, b->kind, "node %s attr %s", node, a->name);
    switch (a->kind) {
    case XE_ATTR_INT:
    case XE_ATTR_BOOL:
        cr_assert_eq(a->i, b->i, "%s.%s", node, a->name);
        break;
    case XE_ATTR_FLOAT:
        cr_assert(same_double(a->f, b->f), "%s.%s", node, a->name);
        break;
    case XE_ATTR_STRING:
        cr_assert_str_eq(a->s, b->s, "%s.%s", node, a->name);
        break;
    case XE_ATTR_DTYPE:
        cr_assert_eq(a->dtype, b->dtype, "%s.%s", node, a->name);
        break;
    case XE_ATTR_INTS:
        cr_assert_eq(a->n, b->n, "%s.%s", node, a->name);
        for (int k = 0; k < a->n; k++)
            cr_assert_eq(a->ints[k], b->ints[k], "%s.%s[%d]", node, a->name, k);
        break;
    case XE_ATTR_FLOATS:
        cr_assert_eq(a->n, b->n, "%s.%s", node, a->name);
        for (int k = 0; k < a->n; k++)
            cr_assert(same_double(a->floats[k], b->floats[k]), "%s.%s[%d]", node, a->name, k);
        break;
    }
}

static void assert_values_equal(const xe_tensor *a, const xe_tensor *b, const char *node)
{
    cr_assert_eq(!a, !b, "node %s: value present in one graph only", node);
    if (!a)
        return;
    cr_assert_eq(a->dtype, b->dtype, "node %s", node);
    cr_assert(xe_shape_equal(&a->shape, &b->shape), "node %s", node);
    for (int64_t k = 0; k < xe_tensor_numel(a); k++) {
        if (a->dtype == XE_I64)
            cr_assert_eq(((int64_t *)a->data)[k], ((int64_t *)b->data)[k], "%s[%lld]", node,
                         (long long)k);
        else
            cr_assert(
                same_double(xe_load_f64(a->data, a->dtype, k), xe_load_f64(b->data, b->dtype, k)),
                "%s[%lld]", node, (long long)k);
    }
}

static void assert_graphs_equal(const xe_graph *a, const xe_graph *b)
{
    cr_assert_eq(a->n_nodes, b->n_nodes);
    cr_assert_eq(a->n_inputs, b->n_inputs);
    cr_assert_eq(a->n_outputs, b->n_outputs);
    cr_assert_eq(a->n_jit, b->n_jit);
    for (int i = 0; i < a->n_inputs; i++)
        cr_assert_eq(a->inputs[i], b->inputs[i]);
    for (int i = 0; i < a->n_outputs; i++)
        cr_assert_eq(a->outputs[i], b->outputs[i]);
    for (int i = 0; i < a->n_nodes; i++) {
        const xe_node *x = a->nodes[i], *y = b->nodes[i];
        cr_assert_str_eq(x->name, y->name);
        cr_assert_eq(x->op, y->op, "node %s", x->name);
        cr_assert_eq(x->jit, y->jit, "node %s", x->name);
        cr_assert_eq(x->type.dtype, y->type.dtype, "node %s", x->name);
        cr_assert(xe_shape_equal(&x->type.shape, &y->type.shape), "node %s", x->name);
        cr_assert_eq(x->n_inputs, y->n_inputs, "node %s", x->name);
        for (int k = 0; k < x->n_inputs; k++)
            cr_assert_eq(x->inputs[k], y->inputs[k], "node %s", x->name);
        cr_assert_eq(x->n_attrs, y->n_attrs, "node %s", x->name);
        for (int k = 0; k < x->n_attrs; k++)
            assert_attrs_equal(&x->attrs[k], &y->attrs[k], x->name);
        assert_values_equal(x->value, y->value, x->name);
        cr_assert_eq(!x->body, !y->body, "node %s", x->name);
        if (x->body)
            assert_graphs_equal(x->body, y->body);
    }
}

/* parse → write → parse → write: same text, equal graphs. Returns the first text. */
static char *round_trip(const char *text, const char *file)
{
    xe_graph *g = parse_ok(text, file);
    char *t1 = xe_write_string(g, &st);
    cr_assert_not_null(t1, "%s", st.msg);
    xe_graph *g2 = parse_ok(t1, "again.xg");
    char *t2 = xe_write_string(g2, &st);
    cr_assert_not_null(t2, "%s", st.msg);
    cr_assert_str_eq(t1, t2);
    assert_graphs_equal(g, g2);
    free(t2);
    xe_graph_destroy(g);
    xe_graph_destroy(g2);
    return t1;
}

/* ---- 1. round trips ------------------------------------------------------------ */

Test(parse_round_trip, every_kind_file)
{
    char *text = read_text(DATA "/ok_every_kind.xg");
    char *t1 = round_trip(text, "every.xg");
    cr_assert(strstr(t1, "cl = xlac_launch(e, y, @cluster=\"cluster_1\") {\n  input a: f64[?,4]\n"),
              "%s", t1);
    cr_assert(strstr(t1, "input x: f32[?,4] @device=\"CPU:0\"\n"), "%s", t1);
    cr_assert(strstr(t1, "@tag=\"a \\\"q\\\" \\\\ b\""), "%s", t1);
    cr_assert(strstr(t1, "@scales=[0.5,1.0,nan,-inf], @ids=[], @n=-3, @on=false"), "%s", t1);
    cr_assert(strstr(t1, "c16 = const(f16[3], [1.5,-2.0,nan])"), "%s", t1);
    cr_assert(strstr(t1, "cinf = const(f32[3], [inf,-inf,3.40282347e+38])"), "%s", t1);
    cr_assert(strstr(t1, "c64 = const(f64[3], [1e-300,-0.0,2.5])"), "%s", t1);
    cr_assert(strstr(t1, "c32 = const(f32[], 0.5)\n"), "%s", t1);
    cr_assert(strstr(t1, "stddev=1.0000000000000001e-05"), "%s", t1);
    cr_assert(!strstr(t1, "@op"), "%s", t1);
    cr_assert(
        strstr(t1,
               "cann = const(f32[2], [1.0,2.0], @cluster=\"cluster_0\", @device=\"XLA_CPU:0\")\n"),
        "%s", t1);
    cr_assert_eq(strncmp(t1, "xlac.graph v1\n", 14), 0);
    free(t1);
    free(text);
}

Test(parse_round_trip, every_kind_values)
{
    xe_graph *g = xe_parse_file(DATA "/ok_every_kind.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    /* attribute kinds */
    const xe_node *t = g->nodes[xe_graph_find(g, "t")];
    cr_assert_eq(xe_node_attr(t, "@scales")->kind, XE_ATTR_FLOATS);
    cr_assert(isnan(xe_node_attr(t, "@scales")->floats[2]));
    cr_assert_eq(xe_node_attr(t, "@ids")->kind, XE_ATTR_INTS);
    cr_assert_eq(xe_node_attr(t, "@ids")->n, 0);
    cr_assert_eq(xe_node_attr(t, "@n")->kind, XE_ATTR_INT);
    cr_assert_eq(xe_node_attr(t, "@n")->i, -3);
    cr_assert_eq(xe_node_attr(t, "@on")->kind, XE_ATTR_BOOL);
    const xe_node *f = g->nodes[xe_graph_find(g, "f")];
    cr_assert_eq(xe_node_attr(f, "to")->kind, XE_ATTR_DTYPE);
    cr_assert_eq(xe_node_attr(f, "to")->dtype, XE_F64);
    const xe_node *k = g->nodes[xe_graph_find(g, "k")];
    cr_assert_str_eq(xe_node_attr_string(k, "@note", ""), "line\none");
    cr_assert_str_eq(xe_node_attr_string(k, "@tag", ""), "a \"q\" \\ b");
    cr_assert_eq(xe_node_attr(g->nodes[xe_graph_find(g, "rn")], "stddev")->kind, XE_ATTR_FLOAT);
    /* constants of every dtype */
    const xe_tensor *v = g->nodes[xe_graph_find(g, "ci32")]->value;
    cr_assert_eq(v->dtype, XE_I32);
    cr_assert_eq(((int32_t *)v->data)[3], 4);
    cr_assert_eq(((int64_t *)g->nodes[xe_graph_find(g, "ci64")]->value->data)[0],
                 9007199254740993LL);
    v = g->nodes[xe_graph_find(g, "c16")]->value;
    cr_assert_eq(v->dtype, XE_F16);
    cr_assert_eq(xe_load_f64(v->data, XE_F16, 1), -2.0);
    cr_assert(isnan(xe_load_f64(v->data, XE_F16, 2)));
    v = g->nodes[xe_graph_find(g, "c64")]->value;
    cr_assert_eq(((double *)v->data)[0], 1e-300);
    cr_assert(signbit(((double *)v->data)[1]));
    v = g->nodes[xe_graph_find(g, "cb")]->value;
    cr_assert_eq(((uint8_t *)v->data)[0], 1);
    cr_assert_eq(((uint8_t *)v->data)[1], 0);
    cr_assert_eq(((float *)g->nodes[xe_graph_find(g, "cinf")]->value->data)[2],
                 3.4028234663852886e38f);
    cr_assert_eq(g->nodes[xe_graph_find(g, "empty")]->value->shape.dims[0], 0);
    const xe_node *cann = g->nodes[xe_graph_find(g, "cann")];
    cr_assert_str_eq(xe_node_attr_string(cann, "@device", ""), "XLA_CPU:0");
    cr_assert_eq(((float *)cann->value->data)[1], 2.0f);
    /* ? dims, jit blocks, composites, positions */
    const xe_node *x = g->nodes[xe_graph_find(g, "x")];
    cr_assert_eq(x->type.shape.dims[0], XE_DIM_UNKNOWN);
    cr_assert_eq(x->line, 4);
    cr_assert_eq(x->col, 7);
    cr_assert_eq(g->n_jit, 2);
    cr_assert_eq(g->nodes[xe_graph_find(g, "u")]->jit, 0);
    cr_assert_eq(g->nodes[xe_graph_find(g, "s")]->jit, 0);
    cr_assert_eq(g->nodes[xe_graph_find(g, "g")]->jit, -1);
    cr_assert_eq(g->nodes[xe_graph_find(g, "f")]->jit, 1);
    const xe_node *cl = g->nodes[xe_graph_find(g, "cl")];
    cr_assert_eq(cl->op, XE_OP_CALL);
    cr_assert_str_eq(xe_node_attr_string(cl, "@op", ""), "xlac_launch");
    cr_assert_not_null(cl->body);
    cr_assert_eq(cl->body->n_inputs, 2);
    cr_assert_eq(cl->body->n_outputs, 2);
    cr_assert_eq(cl->n_tuple, 2);
    cr_assert_eq(g->nodes[xe_graph_find(g, "w1")]->type.dtype, XE_F64);
    cr_assert_eq(g->n_outputs, 12);
    cr_assert_eq(g->n_inputs, 3);
    xe_graph_destroy(g);
}

Test(parse_round_trip, blocks_and_nested_composites)
{
    char *text = read_text(DATA "/ok_blocks.xg");
    xe_graph *g = parse_ok(text, "blocks.xg");
    cr_assert_eq(g->n_jit, 1, "an empty jit block takes no index");
    const xe_node *outer = g->nodes[xe_graph_find(g, "outer")];
    cr_assert_eq(outer->jit, 0);
    cr_assert_eq(outer->body->nodes[0]->jit, -1, "body nodes are outside jit blocks");
    const xe_node *inner = outer->body->nodes[xe_graph_find(outer->body, "inner")];
    cr_assert_eq(inner->op, XE_OP_CALL);
    cr_assert_null(xe_node_attr(inner, "@op"), "a written call keeps its name");
    cr_assert_eq(xe_node_attr(inner, "alpha")->kind, XE_ATTR_FLOATS);
    cr_assert_eq(xe_graph_find(g, "o"), -1, "a body has its own namespace");
    cr_assert_eq(g->nodes[xe_graph_find(g, "c")]->jit, -1);
    xe_graph_destroy(g);
    char *t1 = round_trip(text, "blocks.xg");
    cr_assert(strstr(t1, "jit {\n  a = exp(x)\n  outer = fused(a, x) {\n    input p: f32[8]\n"),
              "%s", t1);
    cr_assert(strstr(t1, "    inner = call(p, q, alpha=[1.5,2.0], beta=\"b\") {\n      input m"),
              "%s", t1);
    cr_assert(strstr(t1, "  b = get(outer, index=0)\n}\nc = add(b, x)\noutput c\n"), "%s", t1);
    free(t1);
    free(text);
}

Test(parse_round_trip, adjacent_jit_blocks_stay_apart)
{
    const char *text =
        HDR "input x: f32[2]\njit {\na = neg(x)\n}\njit {\nb = neg(a)\n}\noutput b\n";
    xe_graph *g = parse_ok(text, "j.xg");
    cr_assert_eq(g->n_jit, 2);
    cr_assert_eq(g->nodes[1]->jit, 0);
    cr_assert_eq(g->nodes[2]->jit, 1);
    xe_graph_destroy(g);
    char *t1 = round_trip(text, "j.xg");
    cr_assert_str_eq(t1, HDR
                     "input x: f32[2]\njit {\n  a = neg(x)\n}\njit {\n  b = neg(a)\n}\noutput b\n");
    free(t1);
}

Test(parse_round_trip, nested_const_matches_flat)
{
    xe_graph *g = parse_ok(HDR "a = const(i32[2,3], [[1,2,3],[4,5,6]])\n"
                               "b = const(i32[2,3], [1,2,3,4,5,6])\n"
                               "c = const(f64[2,2,1], [[[1],[2]],[[3],[4]]])\n"
                               "d = const(f32[2,2], 7)\n"
                               "e = const(i64[2,0], [[],[]])\n"
                               "output a\noutput c\noutput d\noutput e\n",
                           "n.xg");
    assert_values_equal(g->nodes[0]->value, g->nodes[1]->value, "a");
    cr_assert_eq(((double *)g->nodes[2]->value->data)[3], 4.0);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(((float *)g->nodes[3]->value->data)[k], 7.0f);
    cr_assert_eq(xe_tensor_numel(g->nodes[4]->value), 0);
    xe_graph_destroy(g);
}

Test(parse_round_trip, floats_print_back_exactly)
{
    /* f32 values need 9 digits, f64 values and attributes 17 */
    const char *text =
        HDR "a = const(f32[3], [0.1, 16777217, 1e-45])\n"
            "b = const(f64[2], [0.1, 4.9406564584124654e-324])\n"
            "c = random_uniform(shape=[1], seed=1, minval=0.1, maxval=0.30000000000000004)\n"
            "output a\noutput b\noutput c\n";
    char *t1 = round_trip(text, "f.xg");
    cr_assert(strstr(t1, "a = const(f32[3], [0.100000001,16777216.0,1.40129846e-45])"), "%s", t1);
    cr_assert(strstr(t1, "b = const(f64[2], [0.10000000000000001,4.9406564584124654e-324])"), "%s",
              t1);
    cr_assert(strstr(t1, "maxval=0.30000000000000004"), "%s", t1);
    free(t1);
}

Test(parse_round_trip, examples)
{
    static const char *const names[] = {"fused_sum",    "mlp",     "softmax",
                                        "unique_cycle", "dynamic", "jit_block"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/%s.xg", XLAC_SOURCE_DIR, names[i]);
        char *text = read_text(path);
        free(round_trip(text, path));
        free(text);
    }
    xe_graph *g = xe_parse_file(XLAC_SOURCE_DIR "/examples/dynamic.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    cr_assert_eq(g->nodes[g->inputs[0]]->type.shape.dims[0], XE_DIM_UNKNOWN);
    xe_graph_destroy(g);
}

Test(parse_round_trip, random_graphs)
{
    for (uint64_t seed = 1; seed <= 200; seed++) {
        randgraph_options o = {.n_ops = 10,
                               .allow_opaque = seed % 2,
                               .allow_unknown = seed % 3 == 0,
                               .more_ops = seed % 4 < 2};
        char *text = randgraph_text(seed, &o);
        free(round_trip(text, "r.xg"));
        free(text);
    }
}

Test(parse_round_trip, write_file_and_parse_file)
{
    xe_graph *g = xe_parse_file(DATA "/ok_every_kind.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    char path[] = "/tmp/xlac-parse-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    fclose(fdopen(fd, "w"));
    cr_assert_eq(xe_write_file(g, path, &st), XE_OK, "%s", st.msg);
    xe_graph *g2 = xe_parse_file(path, &st);
    cr_assert_not_null(g2, "%s", st.msg);
    cr_assert_str_eq(g2->file, path);
    assert_graphs_equal(g, g2);
    remove(path);
    cr_assert_neq(xe_write_file(g, "/nonexistent/dir/g.xg", &st), XE_OK);
    cr_assert_eq(st.code, XE_ERR_IO);
    cr_assert(strstr(st.msg, "/nonexistent/dir/g.xg"), "%s", st.msg);
    xe_graph_destroy(g);
    xe_graph_destroy(g2);
}

/* ---- 2. one test per error message ------------------------------------------ */

/* Asserts that text fails with a message starting "e.xg:WHERE" and containing phrase. */
static void expect_error(const char *text, const char *where, const char *phrase)
{
    xe_graph *g = xe_parse_string(text, "e.xg", &st);
    cr_assert_null(g, "expected an error for:\n%s", text);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "e.xg:%s", where);
    cr_assert(!strncmp(st.msg, prefix, strlen(prefix)), "want prefix '%s', got: %s", prefix,
              st.msg);
    cr_assert(strstr(st.msg, phrase), "want '%s' in: %s", phrase, st.msg);
    cr_assert_neq(st.code, XE_OK);
}

Test(parse_error, empty_text)
{
    expect_error("", "1:1: ", "empty graph");
    expect_error("# only a comment\n\n   \n", "1:1: ", "empty graph");
}

Test(parse_error, missing_header)
{
    expect_error("input x: f32[3]\noutput x\n", "1:1: ", "expected the header 'xlac.graph v1'");
    expect_error("# c\n\n  xlac.graf v1\n", "3:3: ", "expected the header");
}

Test(parse_error, bad_version)
{
    expect_error("xlac.graph v2\n", "1:12: ", "unsupported format version 'v2'");
    expect_error("xlac.graph\n", "1:11: ", "expected the version 'v1'");
}

Test(parse_error, junk_after_header)
{
    expect_error("xlac.graph v1 extra\n", "1:15: ", "unexpected 'extra' after the statement");
}

Test(parse_error, unknown_op)
{
    expect_error(HDR "input x: f32[3]\ny = frobnicate(x)\noutput y\n",
                 "3:5: ", "unknown op 'frobnicate'");
}

Test(parse_error, input_as_an_op)
{
    expect_error(HDR "y = input()\noutput y\n",
                 "2:5: ", "declare an input with 'input NAME: TYPE'");
}

Test(parse_error, wrong_arity)
{
    expect_error(HDR "input x: f32[3]\ny = add(x, x, x)\noutput y\n",
                 "3:1: ", "add takes 2 inputs, got 3");
    expect_error(HDR "input x: f32[3]\ny = neg()\noutput y\n",
                 "3:1: ", "neg takes 1 inputs, got 0");
    expect_error(HDR "input x: f32[3]\ny = concat(axis=0)\noutput y\n",
                 "3:1: ", "concat takes at least 1");
}

Test(parse_error, unknown_attribute)
{
    expect_error(HDR "input x: f32[3]\ny = reduce_sum(x, axis=[0])\noutput y\n",
                 "3:19: ", "unknown attribute 'axis' for reduce_sum (expected axes, keepdims)");
    expect_error(HDR "input x: f32[3]\ny = neg(x, axis=1)\noutput y\n",
                 "3:12: ", "unknown attribute 'axis': neg takes no attributes");
    expect_error(HDR "input x: f32[3]\ny = argmax(x, axes=[0])\noutput y\n",
                 "3:15: ", "(expected axis, keepdims)");
    expect_error(HDR "y = iota(shape=[2], dtyp=i32)\noutput y\n",
                 "2:21: ", "(expected shape, axis, dtype)");
}

Test(parse_error, const_attributes)
{
    expect_error(HDR "c = const(f32[], 1, axis=2)\noutput c\n",
                 "2:21: ", "unknown attribute 'axis': const takes no attributes");
    expect_error(HDR "c = const(f32[], 1,)\noutput c\n",
                 "2:20: ", "expected a name or KEY=value, found ')'");
    expect_error(HDR "c = const(f32[], 1 2)\noutput c\n", "2:20: ", "expected ',', found '2'");
}

Test(parse_error, attribute_given_twice)
{
    expect_error(HDR "input x: f32[3]\ny = cast(x, to=f32, to=f64)\noutput y\n",
                 "3:21: ", "attribute 'to' given twice");
}

Test(parse_error, bad_attribute_value)
{
    expect_error(HDR "input x: f32[3]\ny = reshape(x, shape=)\noutput y\n",
                 "3:22: ", "expected an attribute value");
    expect_error(HDR "input x: f32[3]\ny = reshape(x, shape=x)\noutput y\n",
                 "3:22: ", "expected an attribute value");
    expect_error(HDR "input x: f32[3]\ny = reshape(x, shape=[[3]])\noutput y\n",
                 "3:23: ", "nested lists are only allowed in constants");
    expect_error(HDR "input x: f32[3]\ny = gelu(x, approximate=5)\noutput y\n",
                 "3:25: ", "approximate must be true or false");
    expect_error(HDR "input x: f32[2,3]\ny = reduce_sum(x, keepdims=1)\noutput y\n",
                 "3:28: ", "keepdims must be true or false");
    expect_error(HDR "input x: f32[2,3]\ny = matmul(x, x, transpose_b=\"yes\")\noutput y\n",
                 "3:30: ", "transpose_b must be true or false");
    expect_error(HDR "input x: f32[2,3]\ny = softmax(x, axis=1.0)\noutput y\n",
                 "3:21: ", "axis must be an integer");
    expect_error(HDR "input x: f32[2,3]\ny = cast(x, to=5)\noutput y\n",
                 "3:16: ", "to must be a dtype such as f32");
    expect_error(HDR "y = random_normal(shape=[2], seed=1, mean=\"a\")\noutput y\n",
                 "2:43: ", "mean must be a number");
}

Test(parse_error, malformed_literal)
{
    expect_error(HDR "input x: f32[3]\ny = neg(x, @a=1.2.3)\noutput y\n",
                 "3:15: ", "malformed number");
    expect_error(HDR "input x: f32[3]\ny = neg(x, @a=12abc)\noutput y\n",
                 "3:15: ", "malformed number");
    expect_error(HDR "input x: f32[3]\ny = neg(x, @a=99999999999999999999)\noutput y\n",
                 "3:15: ", "integer out of range");
    expect_error(HDR "input x: f32[3]\ny = neg(x, @a=1e999)\noutput y\n",
                 "3:15: ", "number out of range");
    expect_error(HDR "c = const(f32[], abc)\noutput c\n", "2:18: ", "expected a number");
    expect_error(HDR "input x: f32[3]\ny = neg(x, @a=\"bad \\q escape\")\noutput y\n",
                 "3:20: ", "unknown escape '\\q'");
    expect_error(HDR "input x: f32[3]\ny = neg(x, @a=$)\noutput y\n",
                 "3:15: ", "unexpected character");
}

Test(parse_error, undefined_name)
{
    expect_error(HDR "input x: f32[3]\ny = neg(q)\noutput y\n", "3:9: ", "undefined name 'q'");
    expect_error(HDR "input x: f32[3]\ny = add(x, y)\noutput y\n", "3:12: ", "undefined name 'y'");
}

Test(parse_error, duplicate_name)
{
    expect_error(HDR "input x: f32[3]\nx = neg(x)\noutput x\n",
                 "3:1: ", "'x' is already defined at line 2");
    expect_error(HDR "input x: f32[3]\n\ny = neg(x)\ninput y: f32[2]\noutput y\n",
                 "5:7: ", "'y' is already defined at line 4");
}

Test(parse_error, bad_name)
{
    expect_error(HDR "-foo = const(f32[], 1)\noutput -foo\n", "2:1: ", "bad name '-foo'");
    expect_error(HDR "input -inf: f32[]\noutput x\n", "2:7: ", "bad name '-inf'");
}

Test(parse_error, positional_after_attribute)
{
    expect_error(HDR "input x: f32[3]\ny = concat(x, axis=0, x)\noutput y\n",
                 "3:23: ", "positional argument 'x' after attributes");
}

Test(parse_error, unknown_dtype)
{
    expect_error(HDR "c = const(f33[2], 1)\noutput c\n", "2:11: ", "unknown dtype 'f33'");
    expect_error(HDR "input x: [3]\noutput x\n", "2:10: ", "expected a type such as f32[2,3]");
}

Test(parse_error, bad_dims)
{
    expect_error(HDR "input x: f32[-1]\noutput x\n", "2:14: ", "expected a dimension");
    expect_error(HDR "input x: f32[1,2,3,4,5,6,7,8,9]\noutput x\n", "2:29: ", "rank above 8");
    expect_error(HDR "input x: f32[1099511627775,1099511627775]\noutput x\n",
                 "2:28: ", "shape too large");
    expect_error(HDR "c = const(f32[?], 1)\noutput c\n",
                 "2:15: ", "a constant's shape must be fully known");
}

Test(parse_error, const_element_count)
{
    expect_error(HDR "c = const(f32[2], [1,2,3])\noutput c\n",
                 "2:19: ", "constant of 2 elements given 3 values");
    expect_error(HDR "c = const(f32[4], [])\noutput c\n", "2:19: ", "given 0 values");
}

Test(parse_error, const_nesting)
{
    expect_error(HDR "c = const(i32[2,2], [[1,2,3],[3,4]])\noutput c\n",
                 "2:22: ", "does not match the shape [2,2]: 3 items at depth 2, expected 2");
    expect_error(HDR "c = const(i32[3], [[1],[2],[3]])\noutput c\n", "2:20: ", "wrong depth 2");
    expect_error(HDR "c = const(i32[2,2], [[1,2],[3,4],[5,6]])\noutput c\n",
                 "2:21: ", "3 items at depth 1, expected 2");
    expect_error(HDR "c = const(i32[2,2], [[1,2],3])\noutput c\n",
                 "2:21: ", "mixes numbers and lists");
}

Test(parse_error, const_value_range)
{
    expect_error(HDR "c = const(i32[], 0.5)\noutput c\n",
                 "2:18: ", "constant value 0.5 is not an integer for i32");
    expect_error(HDR "c = const(i32[2], [1, 2147483648])\noutput c\n",
                 "2:23: ", "2147483648 is out of range for i32");
    expect_error(HDR "c = const(i64[], nan)\noutput c\n", "2:18: ", "out of range for i64");
    expect_error(HDR "c = const(i64[], 1e19)\noutput c\n", "2:18: ", "out of range for i64");
    expect_error(HDR "c = const(f32[], 1e39)\noutput c\n",
                 "2:18: ", "constant value 1e+39 is out of range for f32");
    expect_error(HDR "c = const(f16[], 70000)\noutput c\n", "2:18: ", "out of range for f16");
    expect_error(HDR "c = const(bool[2], [true, 2])\noutput c\n", "2:27: ", "2 is not a bool");
}

Test(parse_error, const_too_large)
{
    expect_error(HDR "c = const(f32[100000,100000], 0)\noutput c\n",
                 "2:11: ", "constant too large");
}

Test(parse_error, unterminated_string)
{
    expect_error(HDR "input x: f32[3]\ny = neg(x, @a=\"open)\noutput y\n",
                 "3:15: ", "unterminated string");
    expect_error(HDR "input x: f32[3]\ny = neg(x, @a=\"open\\\")\noutput y\n",
                 "3:15: ", "unterminated string");
}

Test(parse_error, unterminated_list)
{
    expect_error(HDR "input x: f32[3]\ny = reshape(x, shape=[3\noutput y\n",
                 "3:24: ", "expected ',' at the end of the line");
    expect_error(HDR "c = const(f32[2], [1,\noutput c\n",
                 "2:22: ", "expected a number at the end of the line");
    expect_error(HDR "input x: f32[3\noutput x\n", "2:15: ", "expected ','");
}

Test(parse_error, unterminated_call)
{
    expect_error(HDR "input x: f32[3]\ny = neg(x\noutput y\n", "3:10: ", "expected ','");
}

Test(parse_error, unterminated_block)
{
    expect_error(HDR "input x: f32[3]\njit {\ny = neg(x)\noutput y\n",
                 "5:1: ", "the jit block opened at line 3 is not closed with '}'");
    expect_error(HDR "input x: f32[3]\ncl = xlac_launch(x) {\n  input a: f32[3]\n  output a\n",
                 "5:1: ", "the body opened at line 3 is not closed with '}'");
}

Test(parse_error, close_without_block)
{
    expect_error(HDR "input x: f32[3]\n}\noutput x\n", "3:1: ", "'}' without an open block");
    expect_error(HDR "input x: f32[3]\n} junk\noutput x\n", "3:3: ", "unexpected 'junk'");
}

Test(parse_error, nested_jit)
{
    expect_error(HDR "input x: f32[3]\njit {\njit {\n",
                 "4:1: ", "jit blocks do not nest (the open one starts at line 3)");
    expect_error(HDR "input x: f32[3]\ncl = xlac_launch(x) {\n  input a: f32[3]\n  jit {\n",
                 "5:3: ", "a jit block cannot be inside a body");
}

Test(parse_error, output_of_unknown_name)
{
    expect_error(HDR "input x: f32[3]\noutput q\n", "3:8: ", "output of an undefined name 'q'");
    expect_error(HDR "input x: f32[3]\noutput\n",
                 "3:7: ", "expected the name of a node at the end of the line");
}

Test(parse_error, trailing_junk)
{
    expect_error(HDR "input x: f32[3]\ny = neg(x)) \noutput y\n",
                 "3:11: ", "unexpected ')' after the statement");
    expect_error(HDR "input x: f32[3]\ny = neg(x) z\noutput y\n",
                 "3:12: ", "unexpected 'z' after the statement");
    expect_error(HDR "input x: f32[3]\noutput x x\n",
                 "3:10: ", "unexpected 'x' after the statement");
    expect_error(HDR "input x: f32[3] junk\noutput x\n", "2:17: ", "expected an annotation");
    expect_error(HDR "input x: f32[3]\njit { a\n", "3:7: ", "unexpected 'a' after the statement");
}

Test(parse_error, not_a_statement)
{
    expect_error(HDR "input x: f32[3]\nx\noutput x\n", "3:1: ", "expected a statement");
    expect_error(HDR "input x: f32[3]\n= neg(x)\noutput x\n", "3:1: ", "expected a statement");
    expect_error(HDR "input x: f32[3]\ny = 3\noutput y\n", "3:5: ", "expected an op name");
    expect_error(HDR "input x: f32[3]\ny = neg x\noutput y\n", "3:9: ", "expected '('");
}

Test(parse_error, no_outputs)
{
    expect_error(HDR "input x: f32[3]\ny = neg(x)\n", "3:1: ", "the graph has no outputs");
    expect_error(HDR "input x: f32[3]\ncl = xlac_launch(x) {\n  input a: f32[3]\n}\noutput x\n",
                 "5:1: ", "the body has no outputs");
}

Test(parse_error, body_on_a_plain_op)
{
    expect_error(HDR "input x: f32[3]\ny = neg(x) {\n  output x\n}\noutput y\n",
                 "3:5: ", "neg does not take a body { ... }");
    expect_error(HDR "input x: f32[3]\ny = call(x)\noutput y\n",
                 "3:5: ", "call needs a body { ... }");
}

Test(parse_error, body_binding)
{
    expect_error(HDR "input x: f32[3]\ncl = xlac_launch(x) {\n  input a: f32[4]\n  output a\n}\no "
                     "= get(cl, index=0)\noutput o\n",
                 "3:1: node cl (xlac_launch): ", "body input 0 is f32[4]");
    expect_error(HDR "input x: f32[3]\ncl = xlac_launch(x) {\n  input a: f32[3]\n  output a\n}\no "
                     "= neg(cl)\noutput o\n",
                 "7:1: node o (neg): ", "pick one with get(cl, index=K)");
    expect_error(HDR "input x: f32[3]\ncl = xlac_launch(x) {\n  input a: f32[3]\n  output a\n}\n"
                     "output cl\n",
                 "7:8: ", "output 'cl' has 1 outputs; pick one with get(cl, index=K)");
    expect_error(HDR "input x: f32[3]\ncl = xlac_launch(x) {\n  input a: f32[3]\n  b = neg(q)\n}\n",
                 "5:11: ", "undefined name 'q'");
    expect_error(HDR "input x: f32[3]\ncl = xlac_launch(x) {\n  input a: f32[3]\n  output x\n}\n",
                 "5:10: ", "output of an undefined name 'x'");
}

Test(parse_error, shape_error_at_its_line)
{
    expect_error(HDR "input x: f32[3]\ninput y: f32[4]\nz = add(x, y)\noutput z\n",
                 "4:1: node z (add): ", "do not broadcast");
    expect_error(HDR "input x: f32[3]\ninput y: f64[3]\n  z = mul(x, y)\noutput z\n",
                 "4:3: node z (mul): ", "f64");
    expect_error(HDR "input x: f32[2,3]\ny = reduce_sum(x, axes=[2])\noutput y\n",
                 "3:1: node y (reduce_sum): ", "axis");
    expect_error(HDR "input x: i32[3]\ny = exp(x)\noutput y\n", "3:1: node y (exp): ", "i32");
}

Test(parse_error, nesting_caps)
{
    char *deep = malloc(200000);
    strcpy(deep, HDR "c = const(f32[1], ");
    for (int i = 0; i < 5000; i++)
        strcat(deep, "[");
    strcat(deep, "1");
    expect_error(deep, "2:", "lists nested deeper than 32");
    strcpy(deep, HDR "input x: f32[3]\n");
    for (int i = 0; i < 2000; i++)
        strcat(deep, "a = call(x) {\ninput x: f32[3]\n");
    expect_error(deep, "", "bodies nested deeper than 32");
    free(deep);
}

Test(parse_error, data_files)
{
    DIR *d = opendir(DATA);
    cr_assert_not_null(d);
    int count = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "err_", 4) != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", DATA, e->d_name);
        char *text = read_text(path);
        char want[256] = "";
        cr_assert_eq(sscanf(text, "# expect: %255[^\n]", want), 1, "%s: no '# expect:' line", path);
        char *phrase = strchr(strchr(want, ':') + 1, ':');
        cr_assert_not_null(phrase, "%s", want);
        *phrase = '\0';
        phrase += 2;
        xe_graph *g = xe_parse_file(path, &st);
        cr_assert_null(g, "%s should fail", path);
        char prefix[1024];
        snprintf(prefix, sizeof prefix, "%s:%s: ", path, want);
        cr_assert(!strncmp(st.msg, prefix, strlen(prefix)), "want prefix %s, got %s", prefix,
                  st.msg);
        cr_assert(strstr(st.msg, phrase), "want '%s' in %s", phrase, st.msg);
        free(text);
        count++;
    }
    closedir(d);
    cr_assert_geq(count, 5);
}

Test(parse_error, files)
{
    cr_assert_null(xe_parse_file("/nonexistent/g.xg", &st));
    cr_assert_eq(st.code, XE_ERR_IO);
    cr_assert(strstr(st.msg, "/nonexistent/g.xg"), "%s", st.msg);
    cr_assert_null(xe_parse_file("/tmp", &st));
    cr_assert_neq(st.code, XE_OK);
    char path[] = "/tmp/xlac-parse-nul-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fwrite(HDR "input x: f32[3]\0\noutput x\n", 1, sizeof HDR + 25, f);
    fclose(f);
    cr_assert_null(xe_parse_file(path, &st));
    cr_assert(strstr(st.msg, ":2:16: "), "where the NUL is: %s", st.msg);
    cr_assert(strstr(st.msg, "NUL"), "%s", st.msg);
    remove(path);
}

/* ---- 3. fuzz ---------------------------------------------------------------------- */

/* Error messages must start FILE:LINE:COL: with positive LINE and COL. */
static void check_message_shape(const char *msg)
{
    regex_t re;
    cr_assert_eq(regcomp(&re, "^f\\.xg:[1-9][0-9]*:[1-9][0-9]*: [^ ]", REG_EXTENDED), 0);
    cr_assert_eq(regexec(&re, msg, 0, NULL, 0), 0, "malformed error message: %s", msg);
    regfree(&re);
}

static uint64_t rng(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 17;
}

/* One mutation of text in place (len > 0): byte flips, truncation, punctuation, junk, line swaps.
 */
static void mutate(char *text, size_t len, uint64_t *s)
{
    size_t at = rng(s) % len;
    switch (rng(s) % 6) {
    case 0:
        text[at] = (char)(rng(s) & 0xff ? rng(s) & 0xff : 1);
        break; /* any byte but NUL */
    case 1:
        text[at] = '\0';
        break; /* truncation */
    case 2:
        text[at] = "[](){},=:?\"#@-.\\\n"[rng(s) % 17];
        break;
    case 3:
        for (int k = 0; k < 5; k++)
            text[rng(s) % len] = (char)(' ' + rng(s) % 95);
        break;
    case 4:
        text[at] = "0123456789e"[rng(s) % 11];
        break;
    default:
        memset(text + at, "9[{a\"-"[rng(s) % 6], (len - at) < 40 ? len - at : 40);
        break;
    }
}

Test(parse_fuzz, mutated_graphs_never_crash, .timeout = 240)
{
    char *every = read_text(DATA "/ok_every_kind.xg");
    char *blocks = read_text(DATA "/ok_blocks.xg");
    uint64_t s = 99;
    int ok = 0, failed = 0;
    for (int i = 0; i < 2400; i++) {
        char *text;
        if (i % 3 == 0)
            text = strdup(i % 2 ? every : blocks);
        else
            text = randgraph_text(
                (uint64_t)(i % 60) + 1,
                &(randgraph_options){.n_ops = 6, .more_ops = i % 2, .allow_opaque = i % 5 == 0});
        size_t len = strlen(text);
        int n = 1 + (int)(rng(&s) % 3);
        for (int k = 0; k < n; k++)
            mutate(text, len, &s);
        xe_graph *g = xe_parse_string(text, "f.xg", &st);
        if (g) {
            char *w = xe_write_string(g, &st);
            cr_assert_not_null(w, "%s", st.msg);
            xe_graph *g2 = xe_parse_string(w, "f.xg", &st);
            cr_assert_not_null(g2, "a written graph must parse back: %s\n%s", st.msg, w);
            xe_graph_destroy(g2);
            free(w);
            xe_graph_destroy(g);
            ok++;
        } else {
            check_message_shape(st.msg);
            failed++;
        }
        free(text);
    }
    free(every);
    free(blocks);
    cr_assert_gt(failed, 1000, "mutations should mostly break graphs (%d ok, %d failed)", ok,
                 failed);
}

Test(parse_fuzz, random_bytes_never_crash)
{
    uint64_t s = 7;
    char buf[600];
    for (int i = 0; i < 500; i++) {
        size_t n = 1 + rng(&s) % (sizeof buf - 1);
        size_t start = i % 2 ? 0 : sizeof HDR - 1;
        memcpy(buf, HDR, sizeof HDR - 1);
        for (size_t k = start; k < n; k++)
            buf[k] = (char)(1 + rng(&s) % 255);
        buf[n > start ? n : start] = '\0';
        xe_graph *g = xe_parse_string(buf, "f.xg", &st);
        if (g)
            xe_graph_destroy(g);
        else
            check_message_shape(st.msg);
    }
}

Test(parse_fuzz, pathological_inputs)
{
    char *big = malloc(1 << 20);
    /* a very long line of one identifier */
    memset(big, 'a', (1 << 20) - 1);
    big[(1 << 20) - 1] = '\0';
    cr_assert_null(xe_parse_string(big, "f.xg", &st));
    check_message_shape(st.msg);
    /* a very long number, a very long name, a very long string */
    char *q = big + sprintf(big, HDR "c = const(f32[], ");
    q += sprintf(q, "%05000d", 9);
    strcpy(q, ")\noutput c\n");
    cr_assert_null(xe_parse_string(big, "f.xg", &st));
    check_message_shape(st.msg);
    cr_assert(strstr(st.msg, "number too long"), "%s", st.msg);
    q = big + sprintf(big, HDR "input ");
    memset(q, 'n', 5000);
    strcpy(q + 5000, ": f32[]\noutput x\n");
    cr_assert_null(xe_parse_string(big, "f.xg", &st));
    check_message_shape(st.msg);
    cr_assert(strstr(st.msg, "longer than"), "%s", st.msg);
    q = big + sprintf(big, HDR "input x: f32[] @s=\"");
    memset(q, 'q', 100000);
    strcpy(q + 100000, "\"\noutput x\n");
    xe_graph *g = parse_ok(big, "f.xg");
    cr_assert_eq(strlen(xe_node_attr_string(g->nodes[0], "@s", "")), 100000);
    xe_graph_destroy(g);
    /* a long flat list */
    q = big + sprintf(big, HDR "c = const(i32[20000], [");
    for (int i = 0; i < 20000; i++)
        q += sprintf(q, i ? ",%d" : "%d", i);
    strcpy(q, "])\noutput c\n");
    g = parse_ok(big, "f.xg");
    cr_assert_eq(((int32_t *)g->nodes[0]->value->data)[19999], 19999);
    xe_graph_destroy(g);
    free(big);
}

/* An ONNX model's output may be called "output", "input" or "jit": --to-xg writes such a node, which must parse back. */
Test(parse_round_trip, nodes_named_like_keywords)
{
    const char *text = "xlac.graph v1\n"
                       "input x: f32[2]\n"
                       "input = neg(x)\n"
                       "jit = abs(input)\n"
                       "output = relu(jit)\n"
                       "output output\n";
    char *t1 = round_trip(text, "keywords.xg");
    cr_assert(strstr(t1, "output = relu(jit)\n"), "%s", t1);
    cr_assert(strstr(t1, "output output\n"), "%s", t1);
    free(t1);
}
