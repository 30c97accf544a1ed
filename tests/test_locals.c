/*
 * Values kept in registers (codegen/plan/locals.c): a loop value that only
 * its own multi-output loop kernel reads gets no buffer, and its readers
 * take it from the kernel's memo. Checked on the plan text (which buffers
 * exist, how many kernels) and by running each graph as one C cluster
 * against op by op and the f64 reference (support/differ.c): the value
 * read twice in one loop, one read by a later kernel too (keeps its
 * buffer), a cluster output (keeps it), one read under a select, and a
 * chain long enough that dropping would break the inline-depth bound.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/differ.h"

/* The plan of text has `buffers` buffer lines and `kernels` kernels; then the differential run. */
static void check(const char *text, int buffers, int kernels)
{
    char *plan = xt_plan_text(text);
    cr_assert_eq(xt_count(plan, "\nbuffer "), buffers, "want %d buffers\n%s\n%s", buffers, plan, text);
    cr_assert_eq(xt_count(plan, "\nxg_k"), kernels, "want %d kernels\n%s\n%s", kernels, plan, text);
    free(plan);
    xt_check_cluster(text, NULL);
}

Test(locals, a_value_read_twice_in_its_own_loop_has_no_buffer)
{
    /* act_chain's shape: g is read by its sigmoid and by the final add, both in g's kernel */
    check("xlac.graph v1\ninput x: f32[37,129]\ng = gelu(x)\ns = sigmoid(g)\nt = tanh(x)\nu = mul(s, t)\n"
          "y = add(u, g)\noutput y\n",
          2, 1); /* x and y */
    /* two such values, one read through the other */
    check("xlac.graph v1\ninput x: f32[5,64]\na = exp(x)\nb = mul(a, a)\nc = add(b, a)\nd = mul(c, b)\n"
          "output d\n",
          2, 1);
}

Test(locals, values_read_elsewhere_or_returned_keep_their_buffers)
{
    /* g is also an output of the cluster */
    check("xlac.graph v1\ninput x: f32[7,33]\ng = gelu(x)\ns = sigmoid(g)\ny = add(s, g)\noutput y\noutput g\n",
          3, 1);
    /* g is also read by a reduction, another step */
    check("xlac.graph v1\ninput x: f32[7,33]\ng = tanh(x)\ns = mul(g, g)\nr = reduce_sum(g, axes=[1], "
          "keepdims=true)\ny = add(s, r)\noutput y\n",
          4, 2); /* g, then a row kernel (the sum, the square, the add) */
}

Test(locals, a_value_read_under_a_select_stays_right)
{
    check("xlac.graph v1\ninput x: f32[9,40]\ng = exp(x)\nz = const(f32[], 1)\nc = greater(g, z)\n"
          "s = select(c, g, x)\ny = add(s, g)\noutput y\n",
          2, 1);
}

/* A chain of n - 1 adds on top of v0 = exp(x), each value also read by the last op. */
static char *long_chain(int n)
{
    size_t len = 64 + (size_t)n * 48;
    char *t = malloc(len);
    cr_assert_not_null(t);
    int w = snprintf(t, len, "xlac.graph v1\ninput x: f32[4,16]\nv0 = exp(x)\n");
    for (int i = 1; i < n; i++)
        w += snprintf(t + w, len - (size_t)w, "v%d = add(v%d, x)\n", i, i - 1);
    snprintf(t + w, len - (size_t)w, "y = add(v%d, v0)\noutput y\n", n - 1);
    return t;
}

Test(locals, drops_keep_inline_chains_bounded)
{
    /* v0 is read twice (v1 and y), in its own kernel; dropping it would put 41 ops inline */
    char *text = long_chain(40);
    char *plan = xt_plan_text(text);
    cr_assert(strstr(plan, "\nbuffer v0:"), "v0 keeps its buffer: the chain would exceed XG_MAX_INLINE\n%s", plan);
    free(plan);
    xt_check_cluster(text, NULL);
    free(text);
    text = long_chain(8); /* short: v0 is dropped */
    plan = xt_plan_text(text);
    cr_assert(!strstr(plan, "\nbuffer v0:"), "%s", plan);
    free(plan);
    xt_check_cluster(text, NULL);
    free(text);
}
