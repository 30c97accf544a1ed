/*
 * Differential tests of the code generator: random graphs (randgraph.c)
 * compiled whole as one cluster for the C target and run, against the
 * same graph run op by op by the executor (the reference). Tolerances per
 * dtype: f64 1e-9 and f32 2e-4 relative to the largest reference
 * magnitude (sums reassociate), i32 exact; NaN must match NaN.
 * Shape-generic programs are run at two shapes.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/randgraph.h"
#include "xg_impl.h"
#include "xlac/xlac.h"

static xe_status st;

/* Deterministic inputs in [-2, 2) (ints in [-5, 5]). */
static xe_tensor *input_for(const xe_type *t, uint64_t seed)
{
    xe_tensor *x = xe_tensor_new(t->dtype, &t->shape, XE_DEV_CPU, &st);
    cr_assert_not_null(x, "%s", st.msg);
    for (int64_t i = 0; i < xe_tensor_numel(x); i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(seed >> 11) / 9007199254740992.0;
        xe_store_f64(x->data, t->dtype, i, t->dtype == XE_I32 ? (double)((int)(u * 11) - 5) : 4 * u - 2);
    }
    return x;
}

static void compare(const xe_tensor *got, const xe_tensor *want, const char *text, int out)
{
    cr_assert_eq(got->dtype, want->dtype);
    cr_assert(xe_shape_equal(&got->shape, &want->shape), "output %d shape differs\n%s", out, text);
    int64_t n = xe_tensor_numel(want);
    double scale = 1;
    for (int64_t i = 0; i < n; i++) {
        double w = xe_load_f64(want->data, want->dtype, i);
        if (isfinite(w) && fabs(w) > scale)
            scale = fabs(w);
    }
    double tol = want->dtype == XE_F64 ? 1e-9 : want->dtype == XE_F32 ? 2e-4 : 0;
    for (int64_t i = 0; i < n; i++) {
        double g = xe_load_f64(got->data, got->dtype, i), w = xe_load_f64(want->data, want->dtype, i);
        if (isnan(w) || isnan(g)) {
            cr_assert(isnan(w) && isnan(g), "output %d element %lld: got %g want %g\n%s", out, (long long)i, g, w, text);
            continue;
        }
        if (isinf(w) || isinf(g)) {
            cr_assert_eq(g, w, "output %d element %lld: got %g want %g\n%s", out, (long long)i, g, w, text);
            continue;
        }
        cr_assert(fabs(g - w) <= tol * scale, "output %d element %lld: got %.17g want %.17g\n%s", out, (long long)i,
                  g, w, text);
    }
}

/* Runs text op by op and compiled (the whole graph is the cluster body); compares. */
static void check_graph(const char *text, bool generic, int scale_first_dim)
{
    xe_graph *g = xe_parse_string(text, "rand.xg", &st);
    cr_assert_not_null(g, "%s\n%s", st.msg, text);
    int n_in = g->n_inputs, n_out = g->n_outputs;
    xe_type types[8];
    for (int k = 0; k < n_in; k++) {
        types[k] = g->nodes[g->inputs[k]]->type;
        if (scale_first_dim > 1 && types[k].shape.rank > 0 && types[k].shape.dims[0] > 1)
            types[k].shape.dims[0] *= scale_first_dim; /* only valid for the graphs built for it */
    }
    xg_options o;
    xg_options_default(&o);
    xg_artifact *a = NULL;
    cr_assert_eq(xg_build(g, types, generic, XG_TARGET_C, 0, &o, &a, &st), XE_OK, "%s\n%s", st.msg, text);
    xg_program *p = NULL;
    cr_assert_eq(xg_program_load(a, g, types, &p, &st), XE_OK, "%s", st.msg);
    xe_tensor *in[8], *got[8] = {0}, *want[8] = {0};
    for (int k = 0; k < n_in; k++)
        in[k] = input_for(&types[k], 1000 + (uint64_t)k);
    cr_assert_eq(xg_program_run(p, in, n_in, got, n_out, &st), XE_OK, "%s", st.msg);
    xe_session *s = xe_session_new(g, &(xe_session_options){.place = XE_PLACE_CPU}, &st);
    cr_assert_not_null(s, "%s", st.msg);
    cr_assert_eq(xe_session_run(s, in, want, &st), XE_OK, "%s\n%s", st.msg, text);
    for (int k = 0; k < n_out; k++) {
        compare(got[k], want[k], text, k);
        xe_tensor_release(got[k]);
        xe_tensor_release(want[k]);
    }
    for (int k = 0; k < n_in; k++)
        xe_tensor_release(in[k]);
    xe_session_destroy(s);
    xg_program_destroy(p);
    xg_artifact_destroy(a);
}

Test(codegen_diff, random_graphs_match_op_by_op, .timeout = 600)
{
    for (uint64_t seed = 1; seed <= 120; seed++) {
        char *text = randgraph_text(seed, &(randgraph_options){.n_ops = 4 + (int)(seed % 8)});
        check_graph(text, false, 1);
        free(text);
    }
}

Test(codegen_diff, shape_generic_programs_run_at_new_shapes, .timeout = 300)
{
    for (uint64_t seed = 500; seed < 530; seed++) {
        char *text = randgraph_text(seed, &(randgraph_options){.n_ops = 5});
        check_graph(text, true, 1);
        free(text);
    }
}

Test(codegen_diff, one_generic_program_serves_two_batch_sizes)
{
    const char *text = "xlac.graph v1\ninput x: f32[?,64]\ninput y: f32[?,64]\n"
                       "p = mul(x, y)\nq = add(p, x)\ns = reduce_sum(q, axes=[1])\nm = reduce_max(q, axes=[0])\n"
                       "output s\noutput m\n";
    xe_graph *g = xe_parse_string(text, "dyn.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_type t8 = {XE_F32, {2, {8, 64}}}, t8s[2] = {t8, t8};
    xg_options o;
    xg_options_default(&o);
    xg_artifact *a = NULL;
    xg_program *p = NULL;
    cr_assert_eq(xg_build(g, t8s, true, XG_TARGET_C, 0, &o, &a, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(xg_program_load(a, g, t8s, &p, &st), XE_OK, "%s", st.msg);
    xe_session *s = xe_session_new(g, &(xe_session_options){.place = XE_PLACE_CPU}, &st);
    for (int rows = 3; rows <= 300; rows *= 10) {
        xe_type t = {XE_F32, {2, {rows, 64}}};
        xe_tensor *in[2] = {input_for(&t, 7), input_for(&t, 8)}, *got[2], *want[2];
        cr_assert_eq(xg_program_run(p, in, 2, got, 2, &st), XE_OK, "%s", st.msg);
        cr_assert_eq(xe_session_run(s, in, want, &st), XE_OK, "%s", st.msg);
        cr_assert_eq(got[0]->shape.dims[0], rows);
        for (int k = 0; k < 2; k++) {
            compare(got[k], want[k], text, k);
            xe_tensor_release(got[k]);
            xe_tensor_release(want[k]);
            xe_tensor_release(in[k]);
        }
    }
    xe_session_destroy(s);
    xg_program_destroy(p);
    xg_artifact_destroy(a);
}

Test(codegen_diff, compile_errors_carry_the_compiler_log)
{
    xg_options o;
    xg_options_default(&o);
    o.cc = "/nonexistent/cc";
    xe_graph *g = xe_parse_string("xlac.graph v1\ninput x: f32[4]\ny = neg(x)\noutput y\n", "e.xg", &st);
    xe_type t = {XE_F32, {1, {4}}};
    xg_artifact *a = NULL;
    cr_assert_eq(xg_build(g, &t, false, XG_TARGET_C, 0, &o, &a, &st), XE_ERR_COMPILE);
    cr_assert(strstr(st.msg, "/nonexistent/cc"), "%s", st.msg);
    xe_graph_destroy(g);
}
