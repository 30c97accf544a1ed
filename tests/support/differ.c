/*
 * Differential checks of one compiled C cluster: see differ.h.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "differ.h"
#include "plan_of.h"
#include "ref.h"
#include "xg_impl.h"

static xe_status st;

char *xt_as_f64(const char *text)
{
    char *t = strdup(text);
    cr_assert_not_null(t);
    for (char *p = t; (p = strstr(p, "f32")); p += 3)
        p[2] = '4', p[1] = '6';
    return t;
}

void xt_run_op_by_op(const char *text, xe_tensor *const *in, xe_tensor **out)
{
    xe_graph *g = xe_parse_string(text, "ref.xg", &st);
    cr_assert_not_null(g, "%s\n%s", st.msg, text);
    xe_tensor *conv[XT_MAX_IO] = {0};
    for (int k = 0; k < g->n_inputs; k++) {
        xe_type t = g->nodes[g->inputs[k]]->type;
        conv[k] = ref_zeros(t.dtype, &t.shape);
        for (int64_t i = 0; i < xe_tensor_numel(conv[k]); i++)
            xe_store_f64(conv[k]->data, t.dtype, i, xe_load_f64(in[k]->data, in[k]->dtype, i));
    }
    xe_session *s = xe_session_new(g, &(xe_session_options){.place = XE_PLACE_CPU}, &st);
    cr_assert_not_null(s, "%s", st.msg);
    cr_assert_eq(xe_session_run(s, conv, out, &st), XE_OK, "%s\n%s", st.msg, text);
    for (int k = 0; k < g->n_inputs; k++)
        xe_tensor_release(conv[k]);
    xe_session_destroy(s); /* and g, which the session owns */
}

void xt_expect_close(const xe_tensor *got, const xe_tensor *want, double tol, const char *what, const char *text)
{
    int64_t n = xe_tensor_numel(want);
    cr_assert_eq(xe_tensor_numel(got), n, "%s: sizes differ\n%s", what, text);
    double scale = 1e-30;
    for (int64_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(xe_load_f64(want->data, want->dtype, i)));
    for (int64_t i = 0; i < n; i++) {
        double a = xe_load_f64(got->data, got->dtype, i), b = xe_load_f64(want->data, want->dtype, i);
        bool same = isnan(b) ? isnan(a) : fabs(a - b) <= tol * scale;
        cr_assert(same, "%s: element %lld is %.9g, want %.9g (scale %g)\n%s", what, (long long)i, a, b, scale,
                  text);
    }
}

char *xt_plan_text(const char *text)
{
    xe_graph *g;
    xg_plan *p = xt_plan_of(text, &g);
    char *t = xg_plan_text(p, XG_TARGET_C);
    xg_plan_destroy(p);
    xe_graph_destroy(g);
    return t;
}

int xt_count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *q = hay; (q = strstr(q, needle)); q++)
        n++;
    return n;
}

/* The declared input types of text's graph, and random inputs of them (seeded per input). */
static void random_inputs(const char *text, xe_type *types, xe_tensor **in, int *n)
{
    xe_graph *g = xe_parse_string(text, "in.xg", &st);
    cr_assert_not_null(g, "%s\n%s", st.msg, text);
    cr_assert_leq(g->n_inputs, XT_MAX_IO);
    *n = g->n_inputs;
    for (int k = 0; k < g->n_inputs; k++) {
        types[k] = g->nodes[g->inputs[k]]->type;
        ref_seed(77 + (uint64_t)k);
        in[k] = ref_random_tensor(types[k].dtype, &types[k].shape, -1, 1);
    }
    xe_graph_destroy(g);
}

/* g compiled as one C cluster at types (shape-generic or not) and loaded; *a gets the artifact. */
static xg_program *build(const xe_graph *g, const xe_type *types, bool generic, const char *text, xg_artifact **a)
{
    xg_options o;
    xg_options_default(&o);
    xg_program *p = NULL;
    cr_assert_eq(xg_build(g, types, generic, XG_TARGET_C, 0, &o, a, &st), XE_OK, "%s\n%s", st.msg, text);
    cr_assert_eq(xg_program_load(*a, g, types, &o, &p, &st), XE_OK, "%s", st.msg);
    return p;
}

void xt_check_cluster(const char *text, const char *run_text)
{
    const char *rt = run_text ? run_text : text;
    xe_graph *g = xe_parse_string(text, "cluster.xg", &st);
    cr_assert_not_null(g, "%s\n%s", st.msg, text);
    xe_type types[XT_MAX_IO], run_types[XT_MAX_IO];
    xe_tensor *in[XT_MAX_IO] = {0}, *got[XT_MAX_IO] = {0}, *want[XT_MAX_IO] = {0}, *ref[XT_MAX_IO] = {0};
    xe_tensor *unused[XT_MAX_IO] = {0};
    int n, n_run;
    random_inputs(text, types, unused, &n);
    random_inputs(rt, run_types, in, &n_run);
    cr_assert_eq(n, n_run);
    xg_artifact *a = NULL;
    xg_program *p = build(g, types, run_text != NULL, text, &a);
    cr_assert_eq(xg_program_run(p, in, n, got, g->n_outputs, &st), XE_OK, "%s\n%s", st.msg, rt);
    xt_run_op_by_op(rt, in, want);
    char *t64 = xt_as_f64(rt);
    xt_run_op_by_op(t64, in, ref);
    for (int k = 0; k < g->n_outputs; k++) {
        xt_expect_close(got[k], want[k], 1e-5, "clustered against op by op", rt);
        xt_expect_close(got[k], ref[k], 1e-4, "clustered against the f64 reference", rt);
        xe_tensor_release(got[k]);
        xe_tensor_release(want[k]);
        xe_tensor_release(ref[k]);
    }
    for (int k = 0; k < n; k++) {
        xe_tensor_release(in[k]);
        xe_tensor_release(unused[k]);
    }
    free(t64);
    xg_program_destroy(p);
    xg_artifact_destroy(a);
    xe_graph_destroy(g);
}

xe_code xt_run_cluster_code(const char *text)
{
    xe_graph *g = xe_parse_string(text, "cluster.xg", &st);
    cr_assert_not_null(g, "%s\n%s", st.msg, text);
    xe_type types[XT_MAX_IO];
    xe_tensor *in[XT_MAX_IO] = {0}, *got[XT_MAX_IO] = {0};
    int n;
    random_inputs(text, types, in, &n);
    xg_artifact *a = NULL;
    xg_program *p = build(g, types, false, text, &a);
    xe_code c = xg_program_run(p, in, n, got, g->n_outputs, &st);
    xe_status_clear(&st);
    for (int k = 0; k < g->n_outputs; k++)
        xe_tensor_release(got[k]);
    for (int k = 0; k < n; k++)
        xe_tensor_release(in[k]);
    xg_program_destroy(p);
    xg_artifact_destroy(a);
    xe_graph_destroy(g);
    return c;
}
