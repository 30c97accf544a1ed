/*
 * Fused attention (codegen/plan/attention.c, targets/c/attention_step.c):
 * softmax(Q·Kᵀ·scale + mask)·V as exporters write it, run a block of rows
 * at a time with the scores in per-thread tiles.
 *
 * Which graphs fuse is checked on the plan text; each fused graph is then
 * compiled as one C cluster and run against op by op and against the f64
 * reference (support/differ.c), at sizes that leave partial blocks: Lq
 * not a multiple of the block, one query row, long keys (fewer rows per
 * block), batch dims broadcast, every transpose the products can read
 * through, a softmax written out as ops (per-row values in the tiles),
 * torch's where(isnan(p), 0, p), and NaN in the queries. A shape-generic
 * program runs at shapes other than its own. What must not fuse (K or V
 * constant: an MLP; the scores read after the product; a transposed
 * left operand of ·V) is checked on the plan.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/differ.h"

#define FUSED "launch: fused attention"

/* Graph text: q, k, v inputs of the given shapes, then body, then `output o`. */
static void graph(char *buf, size_t len, const char *q, const char *k, const char *v, const char *extra,
                  const char *body)
{
    snprintf(buf, len, "xlac.graph v1\ninput q: f32%s\ninput k: f32%s\ninput v: f32%s\n%s%soutput o\n", q, k, v,
             extra, body);
}

/* The plan fuses `fused` attentions; then the cluster against op by op and the f64 reference. */
static void check(const char *text, int fused)
{
    char *plan = xt_plan_text(text);
    cr_assert_eq(xt_count(plan, FUSED), fused, "want %d fused attention(s)\n%s\n%s", fused, plan, text);
    free(plan);
    if (fused)
        xt_check_cluster(text, NULL);
}

#define SDPA_MASKED                                                                                             \
    "s = matmul(q, k, transpose_b=true)\nc = const(f32[], 0.125)\nss = mul(s, c)\nsm = add(ss, m)\n"           \
    "p = softmax(sm, axis=-1)\no = matmul(p, v)\n"

/* The exporters' form at odd sizes: rank 3 and 4, Lq not a multiple of a block, one query row, long keys. */
Test(attention, masked_softmax_at_odd_sizes, .timeout = 300)
{
    static const int sizes[][4] = {{2, 3, 67, 13}, {1, 2, 1, 40}, {1, 1, 130, 700}, {3, 1, 65, 64}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        int b = sizes[i][0], h = sizes[i][1], lq = sizes[i][2], lk = sizes[i][3];
        char q[64], k[64], v[64], m[64], text[1024];
        snprintf(q, sizeof q, "[%d,%d,%d,16]", b, h, lq);
        snprintf(k, sizeof k, "[%d,%d,%d,16]", b, h, lk);
        snprintf(v, sizeof v, "[%d,%d,%d,24]", b, h, lk);
        snprintf(m, sizeof m, "input m: f32[%d,%d]\n", lq, lk);
        graph(text, sizeof text, q, k, v, m, SDPA_MASKED);
        check(text, 1);
    }
    char text[1024];
    graph(text, sizeof text, "[6,33,8]", "[6,50,8]", "[6,50,5]", "input m: f32[6,33,50]\n", SDPA_MASKED);
    check(text, 1);
}

/* Transposes read through: K as a transpose node, Q with transpose_a, V with transpose_b; batch broadcast. */
Test(attention, transposed_and_broadcast_operands, .timeout = 300)
{
    char text[1024];
    graph(text, sizeof text, "[2,3,9,20]", "[2,3,31,9]", "[2,3,31,7]", "",
          "kt = transpose(k, perm=[0,1,3,2])\ns = matmul(q, kt, transpose_a=true)\np = softmax(s, axis=-1)\n"
          "o = matmul(p, v)\n");
    check(text, 1);
    graph(text, sizeof text, "[2,3,20,9]", "[2,3,9,31]", "[2,3,7,31]", "",
          "s = matmul(q, k)\np = softmax(s, axis=3)\no = matmul(p, v, transpose_b=true)\n");
    check(text, 1);
    graph(text, sizeof text, "[2,3,20,9]", "[3,31,9]", "[1,3,31,7]", "",
          "s = matmul(q, k, transpose_b=true)\np = softmax(s)\no = matmul(p, v)\n");
    check(text, 1);
}

/* A softmax written out as ops (a row kernel: per-row max and sum in the tiles), and torch's NaN guard. */
Test(attention, row_kernel_softmax_and_nan_guard, .timeout = 300)
{
    char text[1024];
    graph(text, sizeof text, "[2,2,45,8]", "[2,2,45,8]", "[2,2,45,8]", "",
          "s = matmul(q, k, transpose_b=true)\nmx = reduce_max(s, axes=[3], keepdims=true)\nd = sub(s, mx)\n"
          "e = exp(d)\nz = reduce_sum(e, axes=[3], keepdims=true)\np = div(e, z)\no = matmul(p, v)\n");
    check(text, 1);
    graph(text, sizeof text, "[1,4,70,16]", "[1,4,70,16]", "[1,4,70,16]", "input m: f32[1,1,70,70]\n",
          "s = matmul(q, k, transpose_b=true)\nsm = add(s, m)\np = softmax(sm, axis=-1)\nn = not_equal(p, p)\n"
          "z = const(f32[], 0)\nw = select(n, z, p)\no = matmul(w, v)\n");
    check(text, 1);
}

/* NaN in query rows (sqrt of a negative number per row): those rows' outputs are NaN, as op by op, the
   others are not. */
Test(attention, nan_in_a_query_row_stays_in_that_row, .timeout = 300)
{
    char text[1024];
    graph(text, sizeof text, "[1,2,40,8]", "[1,2,40,8]", "[1,2,40,8]", "input r: f32[1,2,40,1]\n",
          "n = sqrt(r)\nqq = add(q, n)\ns = matmul(qq, k, transpose_b=true)\np = softmax(s)\no = matmul(p, v)\n");
    check(text, 1);
}

/* One shape-generic program run at other batch, query and key sizes than it was planned at. */
Test(attention, shape_generic_program_at_other_sizes, .timeout = 300)
{
    char plan_at[1024], run_at[1024];
    graph(plan_at, sizeof plan_at, "[2,3,40,16]", "[2,3,50,16]", "[2,3,50,8]", "input m: f32[40,50]\n",
          SDPA_MASKED);
    static const int sizes[][3] = {{2, 40, 50}, {5, 7, 300}, {3, 129, 17}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        int b = sizes[i][0], lq = sizes[i][1], lk = sizes[i][2];
        char q[64], k[64], v[64], m[64];
        snprintf(q, sizeof q, "[%d,3,%d,16]", b, lq);
        snprintf(k, sizeof k, "[%d,3,%d,16]", b, lk);
        snprintf(v, sizeof v, "[%d,3,%d,8]", b, lk);
        snprintf(m, sizeof m, "input m: f32[%d,%d]\n", lq, lk);
        graph(run_at, sizeof run_at, q, k, v, m, SDPA_MASKED);
        xt_check_cluster(plan_at, run_at);
    }
}

/* What keeps the plain steps: weights as K or V (an MLP), scores read after the product, Pᵀ·V. */
Test(attention, what_does_not_fuse)
{
    check("xlac.graph v1\ninput x: f32[2,16,8]\nw1 = const(f32[8,32], 0.5)\nw2 = const(f32[32,8], 0.25)\n"
          "h = matmul(x, w1)\ng = gelu(h)\no = matmul(g, w2)\noutput o\n", 0);
    char text[1024];
    graph(text, sizeof text, "[1,2,9,4]", "[1,2,9,4]", "[1,2,9,4]", "",
          "s = matmul(q, k, transpose_b=true)\np = softmax(s)\no = matmul(p, v)\noutput p\n");
    check(text, 0);
    graph(text, sizeof text, "[1,2,9,4]", "[1,2,9,4]", "[1,2,9,4]", "",
          "s = matmul(q, k, transpose_b=true)\np = softmax(s)\no = matmul(p, v, transpose_a=true)\n");
    check(text, 0);
    graph(text, sizeof text, "[9,4]", "[9,4]", "[9,4]", "",
          "s = matmul(q, k, transpose_b=true)\np = softmax(s)\no = matmul(p, v)\n");
    check(text, 0); /* rank 2: no batch of heads */
}

/* Heads of width 0 or no keys: the program refuses the call (XE_ERR_UNSUPPORTED, which the launch
   runs per op), never a product BLAS would skip, leaving the output unwritten. */
Test(attention, empty_heads_are_refused_not_guessed)
{
    static const char *const shapes[][3] = {{"[1,2,5,0]", "[1,2,7,0]", "[1,2,7,3]"},
                                            {"[1,2,5,4]", "[1,2,0,4]", "[1,2,0,3]"}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        char text[1024];
        graph(text, sizeof text, shapes[i][0], shapes[i][1], shapes[i][2], "",
              "s = matmul(q, k, transpose_b=true)\np = softmax(s)\no = matmul(p, v)\n");
        cr_assert_eq(xt_run_cluster_code(text), XE_ERR_UNSUPPORTED, "%s", text);
    }
}
