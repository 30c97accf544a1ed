/*
 * The .xg parser and writer: round trips (parse → write → parse → write
 * gives the same text), one test per error message with its
 * FILE:LINE:COL, and a fuzz-ish test of mutated graphs that must never
 * crash and must report errors in the FILE:LINE:COL form.
 */
#include <criterion/criterion.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "support/randgraph.h"
#include "xlac/xlac.h"

static xe_status st;

static const char *full =
    "xlac.graph v1\n"
    "# every statement kind\n"
    "input x: f32[?,4] @device=\"CPU:0\"\n"
    "input y: f64[]\n"
    "input k: i64[2]\n"
    "c = const(f32[], 0.5)  # trailing comment\n"
    "v = const(i32[2,2], [[1,2],[3,4]])\n"
    "h = const(f16[3], [1.5, -2, nan])\n"
    "b = const(bool[2], [true, false])\n"
    "big = const(i64[1], [9007199254740993])\n"
    "t = mul(x, c, @cluster=\"cluster_0\", @note=\"a \\\"quoted\\\" string\")\n"
    "jit {\n"
    "  u = tanh(t)\n"
    "  s = reduce_sum(u, axes=[0,-1], keepdims=true)\n"
    "}\n"
    "g = gelu(u, approximate=true)\n"
    "f = cast(g, to=f64)\n"
    "e = add(f, y)\n"
    "cl = xlac_launch(e, y, @cluster=\"cluster_1\") {\n"
    "  input a: f64[?,4]\n"
    "  input z: f64[]\n"
    "  w = sub(a, z)\n"
    "  output w\n"
    "}\n"
    "w0 = get(cl, index=0)\n"
    "r = random_uniform(shape=[2], seed=3, minval=-1.5, maxval=2.0)\n"
    "output w0\n"
    "output s\n"
    "output r\n";

Test(parse, round_trip_is_exact)
{
    xe_graph *g = xe_parse_string(full, "full.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    cr_assert_eq(g->n_jit, 1);
    cr_assert_eq(g->nodes[xe_graph_find(g, "u")]->jit, 0);
    cr_assert_eq(g->nodes[xe_graph_find(g, "g")]->jit, -1);
    cr_assert_eq(((int64_t *)g->nodes[xe_graph_find(g, "big")]->value->data)[0], 9007199254740993LL);
    char *t1 = xe_write_string(g, &st);
    xe_graph *g2 = xe_parse_string(t1, "again.xg", &st);
    cr_assert_not_null(g2, "%s\n%s", st.msg, t1);
    char *t2 = xe_write_string(g2, &st);
    cr_assert_str_eq(t1, t2);
    cr_assert(strstr(t1, "cl = xlac_launch(e, y, @cluster=\"cluster_1\") {"), "%s", t1);
    cr_assert(strstr(t1, "input x: f32[?,4] @device=\"CPU:0\""), "%s", t1);
    cr_assert_eq(g2->n_nodes, g->n_nodes);
    cr_assert_eq(g2->n_outputs, 3);
    free(t1);
    free(t2);
    xe_graph_destroy(g);
    xe_graph_destroy(g2);
}

Test(parse, random_graphs_round_trip)
{
    for (uint64_t seed = 1; seed <= 200; seed++) {
        char *text = randgraph_text(seed, &(randgraph_options){.n_ops = 10, .allow_opaque = true});
        xe_graph *g = xe_parse_string(text, "r.xg", &st);
        cr_assert_not_null(g, "%s\n%s", st.msg, text);
        char *t1 = xe_write_string(g, &st);
        xe_graph *g2 = xe_parse_string(t1, "r.xg", &st);
        cr_assert_not_null(g2, "%s\n%s", st.msg, t1);
        char *t2 = xe_write_string(g2, &st);
        cr_assert_str_eq(t1, t2);
        free(t1);
        free(t2);
        free(text);
        xe_graph_destroy(g);
        xe_graph_destroy(g2);
    }
}

static void expect_error(const char *text, const char *where, const char *phrase)
{
    xe_graph *g = xe_parse_string(text, "e.xg", &st);
    cr_assert_null(g, "expected an error for:\n%s", text);
    cr_assert(!strncmp(st.msg, where, strlen(where)), "want prefix %s, got: %s", where, st.msg);
    cr_assert(strstr(st.msg, phrase), "want '%s' in: %s", phrase, st.msg);
}

#define HDR "xlac.graph v1\n"

Test(parse, every_error_names_file_line_col)
{
    expect_error("", "e.xg:1:1:", "empty graph");
    expect_error("xlac.graf v1\n", "e.xg:1:1:", "expected the header");
    expect_error("xlac.graph v2\n", "e.xg:1:12:", "unsupported format version");
    expect_error(HDR "input x: f32[3]\ny = frobnicate(x)\noutput y\n", "e.xg:3:5:", "unknown op 'frobnicate'");
    expect_error(HDR "input x: f32[3]\ny = add(x)\noutput y\n", "e.xg:3:1:", "add takes 2 inputs, got 1");
    expect_error(HDR "input x: f32[3]\ny = neg(x, axis=1)\noutput y\n", "e.xg:3:12:", "unknown attribute 'axis'");
    expect_error(HDR "input x: f32[3]\ny = reduce_sum(x, axis=[0])\noutput y\n", "e.xg:3:19:", "expected axes, keepdims");
    expect_error(HDR "input x: f32[3]\ny = neg(q)\noutput y\n", "e.xg:3:9:", "undefined name 'q'");
    expect_error(HDR "input x: f32[3]\nx = neg(x)\noutput x\n", "e.xg:3:1:", "already defined at line 2");
    expect_error(HDR "input x: f32[3]\ninput y: f32[4]\nz = add(x, y)\noutput z\n", "e.xg:4:1:", "do not broadcast");
    expect_error(HDR "input x: f32[3]\ny = neg(x)) \noutput y\n", "e.xg:3:11:", "unexpected ')'");
    expect_error(HDR "c = const(f32[2], [1,2,3])\noutput c\n", "e.xg:2:19:", "given 3 values");
    expect_error(HDR "c = const(f33[2], 1)\noutput c\n", "e.xg:2:11:", "unknown dtype 'f33'");
    expect_error(HDR "input x: f32[3]\ny = neg(x, @a=\"open)\noutput y\n", "e.xg:3:15:", "unterminated string");
    expect_error(HDR "input x: f32[3]\ny = reshape(x, shape=[3\noutput y\n", "e.xg:3:", "expected ','");
    expect_error(HDR "input x: f32[3]\noutput q\n", "e.xg:3:8:", "output of an undefined name 'q'");
    expect_error(HDR "input x: f32[3]\n}\n", "e.xg:3:1:", "without an open block");
    expect_error(HDR "input x: f32[3]\njit {\njit {\n", "e.xg:4:1:", "do not nest");
    expect_error(HDR "input x: f32[3]\njit {\ny = neg(x)\noutput y\n", "e.xg:5:1:", "not closed");
    expect_error(HDR "input x: f32[3]\ny = neg(x)\n", "e.xg:3:1:", "no outputs");
    expect_error(HDR "input x: f32[3]\ny = neg(x, x=1, x=2)\noutput y\n", "e.xg:3:", "unknown attribute 'x'");
    expect_error(HDR "input x: f32[3]\ny = cast(x, to=f32, to=f64)\noutput y\n", "e.xg:3:21:", "given twice");
    expect_error(HDR "input x: f32[3]\ny = neg(x) {\n  output x\n}\noutput y\n", "e.xg:3:5:", "does not take a body");
    expect_error(HDR "input x: f32[3]\ny = neg(x, approximate=5)\noutput y\n", "e.xg:3:", "unknown attribute");
    expect_error(HDR "input x: f32[3]\ny = gelu(x, approximate=5)\noutput y\n", "e.xg:3:1:", "approximate must be");
    expect_error(HDR "input x: f32[3]\ny = add(x, 1)\noutput y\n", "e.xg:3:12:", "expected a name");
}

/* Error messages must look like FILE:LINE:COL: (or a plain FILE:LINE:COL prefix for graph errors). */
static void check_message_shape(const char *msg)
{
    regex_t re;
    cr_assert_eq(regcomp(&re, "^f\\.xg:[0-9]+:[0-9]+: ", REG_EXTENDED), 0);
    cr_assert_eq(regexec(&re, msg, 0, NULL, 0), 0, "malformed error message: %s", msg);
    regfree(&re);
}

Test(parse, mutated_graphs_never_crash, .timeout = 120)
{
    uint64_t s = 99;
    for (int i = 0; i < 3000; i++) {
        char *text = randgraph_text((uint64_t)(i % 50) + 1, &(randgraph_options){.n_ops = 6});
        size_t len = strlen(text);
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        switch (i % 4) {
        case 0: text[(s >> 33) % len] = (char)(s >> 20); break;       /* one byte, any value */
        case 1: text[(s >> 33) % len] = '\0'; break;                  /* truncation */
        case 2: text[(s >> 33) % len] = "[](){},=:?\"#@-"[(s >> 40) % 14]; break;
        default:
            for (int k = 0; k < 5; k++)
                text[((s >> (3 * k)) >> 20) % len] = (char)(' ' + ((s >> (7 * k)) % 95));
        }
        xe_graph *g = xe_parse_string(text, "f.xg", &st);
        if (g)
            xe_graph_destroy(g);
        else
            check_message_shape(st.msg);
        free(text);
    }
}

Test(parse, pathological_inputs)
{
    char *deep = malloc(200000);
    strcpy(deep, HDR "c = const(f32[1], ");
    for (int i = 0; i < 5000; i++)
        strcat(deep, "[");
    strcat(deep, "1");
    cr_assert_null(xe_parse_string(deep, "f.xg", &st));
    cr_assert(strstr(st.msg, "nested deeper"), "%s", st.msg);
    memset(deep, 'a', 199999);
    deep[199999] = '\0';
    cr_assert_null(xe_parse_string(deep, "f.xg", &st));
    check_message_shape(st.msg);
    free(deep);
    cr_assert_null(xe_parse_string(HDR "input x: f32[99999999999999999999]\n", "f.xg", &st));
    check_message_shape(st.msg);
    cr_assert_null(xe_parse_file("/nonexistent/g.xg", &st));
    cr_assert_eq(st.code, XE_ERR_IO);
    cr_assert_null(xe_parse_file("/tmp", &st));
}
