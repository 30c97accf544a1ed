/*
 * Matmul epilogues (codegen/plan/epilogue.c, the executor's xe_cpu_rows):
 * the product computed whole by the engine, then the elementwise work
 * after it (bias, activation, residual, scale, cast) and the softmax of
 * attention scores run as one pass over its rows, a range per thread.
 *
 * Differential: each graph compiled whole as one C cluster and run, against
 * the same graph op by op (f32: 1e-5 of the largest magnitude) and against
 * the graph with every f32 made f64, op by op (the f64 reference: 1e-4).
 * Sizes are odd on purpose: panel remainders, fewer rows than a panel,
 * K = 1, transposed operands, broadcast bias, batches. The executor's
 * row ranges are also checked alone: every row covered once.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "support/differ.h"
#include "support/plan_of.h"
#include "xg_impl.h"
#include "xlac/op.h"
#include "xlac/xlac.h"

/* Compiled as one C cluster, against op by op and the f64 reference; `panels`: steps the plan runs per panel. */
static void check(const char *text, int panels)
{
    char *plan = xt_plan_text(text);
    int found = xt_count(plan, "on the matmul's rows");
    cr_assert_eq(found, panels, "%d panel steps, want %d\n%s\n%s", found, panels, plan, text);
    free(plan);
    xt_check_cluster(text, NULL);
}

/* matmul, bias, GELU, matmul, bias, residual (mlp_block) at odd sizes: two epilogues, one per matmul. */
Test(epilogue, mlp_at_odd_sizes, .timeout = 300)
{
    static const int dims[][3] = {{301, 37, 53}, {1, 9, 5}, {5, 1, 3}, {257, 130, 1}, {2, 3, 300}};
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++) {
        int M = dims[i][0], K = dims[i][1], H = dims[i][2];
        char text[1024];
        snprintf(text, sizeof text,
                 "xlac.graph v1\ninput x: f32[%d,%d]\ninput w1: f32[%d,%d]\ninput b1: f32[%d]\n"
                 "input w2: f32[%d,%d]\ninput b2: f32[%d]\n"
                 "h0 = matmul(x, w1)\nh1 = add(h0, b1)\nh2 = gelu(h1, approximate=true)\n"
                 "o0 = matmul(h2, w2)\no1 = add(o0, b2)\ny = add(o1, x)\noutput y\n",
                 M, K, K, H, H, H, K, K);
        check(text, 2);
    }
}

/* Transposed operands (a transpose read through as a BLAS flag, and the attribute), ReLU, tanh, scale, cast. */
Test(epilogue, transposed_operands_and_other_epilogues, .timeout = 300)
{
    check("xlac.graph v1\ninput x: f32[133,17]\ninput w: f32[29,17]\ninput b: f32[29]\n"
          "t = transpose(w)\ny = matmul(x, t)\nz = add(y, b)\nr = relu(z)\noutput r\n", 1);
    check("xlac.graph v1\ninput x: f32[17,133]\ninput w: f32[17,29]\n"
          "y = matmul(x, w, transpose_a=true)\ns = const(f32[], 0.25)\nz = mul(y, s)\nr = tanh(z)\noutput r\n", 1);
    check("xlac.graph v1\ninput x: f32[70,8]\ninput w: f32[8,40]\n"
          "y = matmul(x, w)\nh = cast(y, to=f16)\nz = cast(h, to=f32)\noutput z\n", 1);
    check("xlac.graph v1\ninput x: f64[65,7]\ninput w: f64[7,3]\ninput r: f64[65,3]\n"
          "y = matmul(x, w)\nz = add(y, r)\nq = sigmoid(z)\noutput q\noutput y\n", 1);
}

/* Batched matmul (batch of both, batch broadcast against a matrix) with a bias per column. */
Test(epilogue, batched_products, .timeout = 300)
{
    check("xlac.graph v1\ninput x: f32[3,35,6]\ninput w: f32[3,6,11]\ninput b: f32[11]\n"
          "y = matmul(x, w)\nz = add(y, b)\nr = gelu(z)\noutput r\n", 1);
    check("xlac.graph v1\ninput x: f32[2,3,9,6]\ninput w: f32[6,5]\n"
          "y = matmul(x, w)\nz = relu(y)\noutput z\n", 1);
    check("xlac.graph v1\ninput x: f32[2,1,9,6]\ninput w: f32[3,5,6]\n"
          "y = matmul(x, w, transpose_b=true)\nz = neg(y)\noutput z\n", 1);
}

/* Reads that are not at the product's own element keep the plain path: no panel step. */
Test(epilogue, misaligned_reads_are_not_panels, .timeout = 300)
{
    check("xlac.graph v1\ninput x: f32[20,6]\ninput w: f32[6,20]\n"
          "y = matmul(x, w)\nt = transpose(y)\nz = add(y, t)\noutput z\n", 0);
    check("xlac.graph v1\ninput x: f32[20,6]\ninput w: f32[6,20]\n"
          "y = matmul(x, w)\ns = reduce_sum(y, axes=[0], keepdims=true)\nz = sub(y, s)\noutput z\n", 0);
}

/* Attention scores, softmax(q k^T scale + mask): scale and mask per panel, then the softmax rows. */
Test(epilogue, attention_scores_softmax_per_panel, .timeout = 300)
{
    check("xlac.graph v1\ninput q: f32[67,13]\ninput k: f32[67,13]\ninput m: f32[67,67]\n"
          "sc = matmul(q, k, transpose_b=true)\ns = const(f32[], 0.27735)\nss = mul(sc, s)\nsm = add(ss, m)\n"
          "mx = reduce_max(sm, axes=[1], keepdims=true)\nd = sub(sm, mx)\ne = exp(d)\n"
          "z = reduce_sum(e, axes=[1], keepdims=true)\np = div(e, z)\noutput p\n", 2);
    check("xlac.graph v1\ninput q: f32[2,3,41,8]\ninput k: f32[2,3,41,8]\ninput m: f32[41,41]\n"
          "sc = matmul(q, k, transpose_b=true)\ns = const(f32[], 0.35355)\nss = mul(sc, s)\nsm = add(ss, m)\n"
          "p = softmax(sm, axis=-1)\noutput p\n", 1); /* scale and mask inline in softmax's passes */
    check("xlac.graph v1\ninput q: f64[300,5]\ninput k: f64[5,300]\n"
          "sc = matmul(q, k)\np = softmax(sc)\noutput p\n", 1);
}

/* What xe_cpu_rows' callback saw: each row's count. */
static void count_rows(void *ctx, int64_t r0, int64_t r1)
{
    int *count = ctx;
    for (int64_t r = r0; r < r1; r++)
        __atomic_fetch_add(&count[r], 1, __ATOMIC_RELAXED);
}

/* The executor's row ranges alone: every row once, at any row count, width and thread count. */
Test(epilogue, row_ranges_cover_every_row_once)
{
    static const int64_t sizes[][2] = {{0, 4}, {1, 1}, {3, 29}, {7, 100000}, {1000, 64}, {4097, 1}};
    for (int threads = 1; threads <= 3; threads++)
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            int64_t rows = sizes[i][0], cols = sizes[i][1];
            int *count = calloc((size_t)rows + 1, sizeof *count);
            xe_set_threads(threads);
            xe_cpu_rows(rows, cols, count_rows, count);
            for (int64_t r = 0; r < rows; r++)
                cr_assert_eq(count[r], 1, "row %lld of %lld seen %d times (%d threads)", (long long)r,
                             (long long)rows, count[r], threads);
            free(count);
        }
}

/* The GPU's cuBLASLt epilogue match (xg_blas_epilogue) on text's plan at step 0: bias node name, act, or not. */
static void expect_blas_epi(const char *text, bool want, const char *bias, xg_epi_act act)
{
    xe_graph *g;
    xg_plan *p = xt_plan_of(text, &g);
    xg_blas_epi e;
    bool got = xg_blas_epilogue(p, 0, &e);
    cr_assert_eq(got, want, "%s", text);
    if (got) {
        cr_assert_eq(e.act, act, "%s", text);
        cr_assert_eq(e.bias, bias ? xe_graph_find(g, bias) : -1, "%s", text);
        char *plan = xg_plan_text(p, XG_TARGET_CUDA);
        cr_assert(strstr(plan, "cuBLASLt matmul with its epilogue"), "%s", plan);
        free(plan);
    }
    xg_plan_destroy(p);
    xe_graph_destroy(g);
}

/* What one cuBLASLt call can take: bias, ReLU, tanh-GELU on a 2-D f32 product read by nothing else. */
Test(epilogue, cublaslt_epilogues_match_only_what_they_compute)
{
#define MM "xlac.graph v1\ninput x: f32[8,4]\ninput w: f32[4,6]\ninput b: f32[6]\ny = matmul(x, w)\n"
    expect_blas_epi(MM "z = add(y, b)\nr = gelu(z, approximate=true)\noutput r\n", true, "b", XG_EPI_GELU);
    expect_blas_epi(MM "z = add(b, y)\nr = relu(z)\noutput r\n", true, "b", XG_EPI_RELU);
    expect_blas_epi(MM "z = add(y, b)\noutput z\n", true, "b", XG_EPI_NONE);
    expect_blas_epi(MM "r = relu(y)\noutput r\n", true, NULL, XG_EPI_RELU);
    expect_blas_epi(MM "z = add(y, b)\nr = gelu(z)\noutput r\n", false, NULL, 0);    /* erf GELU */
    expect_blas_epi(MM "z = add(y, b)\nr = relu(z)\noutput r\noutput y\n", false, NULL, 0); /* y read */
    expect_blas_epi(MM "z = add(y, b)\nr = tanh(z)\noutput r\n", false, NULL, 0);
    expect_blas_epi(MM "z = add(y, y)\noutput z\n", false, NULL, 0);
#undef MM
    expect_blas_epi("xlac.graph v1\ninput x: f32[8,4]\ninput w: f32[4,6]\ninput b: f32[8,6]\n"
                    "y = matmul(x, w)\nz = add(y, b)\noutput z\n", false, NULL, 0); /* not a row bias */
    expect_blas_epi("xlac.graph v1\ninput x: f32[8,4]\ninput w: f32[6,4]\ninput b: f32[1,6]\n"
                    "y = matmul(x, w, transpose_b=true)\nz = add(y, b)\noutput z\n", true, "b", XG_EPI_NONE);
    expect_blas_epi("xlac.graph v1\ninput x: f64[8,4]\ninput w: f64[4,6]\n"
                    "y = matmul(x, w)\nr = relu(y)\noutput r\n", false, NULL, 0);
    expect_blas_epi("xlac.graph v1\ninput x: f32[2,8,4]\ninput w: f32[4,6]\n"
                    "y = matmul(x, w)\nr = relu(y)\noutput r\n", false, NULL, 0);
}
