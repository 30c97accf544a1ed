/*
 * Sessions end to end through the public API: parse, run, feed `?` dims
 * with several shapes, data-dependent shapes (unique), composite nodes
 * and `get`, the placement log, feeding errors, the user data of a
 * registered op reaching its kernel, and reshapes that view their input.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/xlac.h"

static xe_status st;

static xe_session *session_from(const char *text, const xe_session_options *opt)
{
    xe_graph *g = xe_parse_string(text, "s.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_session *s = xe_session_new(g, opt, &st);
    cr_assert_not_null(s, "%s", st.msg);
    return s;
}

static xe_tensor *f32_tensor(int rank, const int64_t *dims, const float *vals)
{
    xe_shape sh = xe_shape_make(rank, dims);
    xe_tensor *t = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    cr_assert_not_null(t);
    if (vals && t->nbytes)
        memcpy(t->data, vals, t->nbytes);
    return t;
}

Test(session, fused_sum_reference)
{
    xe_session *s = session_from("xlac.graph v1\n"
                                 "input x: f32[2,2]\ninput y: f32[2,2]\ninput z: f32[2,2]\n"
                                 "t0 = mul(y, z)\nt1 = add(x, t0)\n"
                                 "s = reduce_sum(t1, axes=[0,1], keepdims=false)\noutput s\n",
                                 NULL);
    float xv[] = {1, 2, 3, 4}, yv[] = {1, 1, 2, 2}, zv[] = {3, 4, 5, 6};
    xe_tensor *in[3] = {f32_tensor(2, (int64_t[]){2, 2}, xv), f32_tensor(2, (int64_t[]){2, 2}, yv),
                        f32_tensor(2, (int64_t[]){2, 2}, zv)};
    xe_tensor *out[1];
    cr_assert_eq(xe_session_run(s, in, out, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(out[0]->shape.rank, 0);
    cr_assert_float_eq(((float *)out[0]->data)[0], 10.0f + 3 + 4 + 10 + 12, 1e-6);
    xe_tensor_release(out[0]);
    for (int i = 0; i < 3; i++)
        xe_tensor_release(in[i]);
    xe_session_destroy(s);
}

Test(session, unknown_dims_take_each_fed_shape)
{
    xe_session *s = session_from("xlac.graph v1\ninput x: f32[?,2]\n"
                                 "y = reduce_sum(x, axes=[1])\noutput y\n", NULL);
    for (int rows = 1; rows <= 3; rows++) {
        float v[6] = {1, 2, 3, 4, 5, 6};
        xe_tensor *in = f32_tensor(2, (int64_t[]){rows, 2}, v), *out;
        cr_assert_eq(xe_session_run(s, &in, &out, &st), XE_OK, "%s", st.msg);
        cr_assert_eq(out->shape.dims[0], rows);
        cr_assert_float_eq(((float *)out->data)[rows - 1], v[2 * rows - 2] + v[2 * rows - 1], 0);
        xe_tensor_release(in);
        xe_tensor_release(out);
    }
    xe_session_destroy(s);
}

Test(session, feed_errors_name_the_input)
{
    xe_session *s = session_from("xlac.graph v1\ninput x: f32[?,2]\ny = neg(x)\noutput y\n", NULL);
    float v[3] = {1, 2, 3};
    xe_tensor *in = f32_tensor(1, (int64_t[]){3}, v), *out = NULL;
    cr_assert_neq(xe_session_run(s, &in, &out, &st), XE_OK);
    cr_assert(strstr(st.msg, "input x: expected f32[?,2], got f32[3]"), "%s", st.msg);
    xe_tensor_release(in);
    xe_session_destroy(s);
}

Test(session, unique_output_length_depends_on_data)
{
    xe_session *s = session_from("xlac.graph v1\ninput x: f32[6]\nu = unique(x)\n"
                                 "d = mul(u, u)\noutput d\n", NULL);
    float v[6] = {3, 1, 3, 2, 1, 3};
    xe_tensor *in = f32_tensor(1, (int64_t[]){6}, v), *out;
    cr_assert_eq(xe_session_run(s, &in, &out, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(out->shape.dims[0], 3);
    float *o = out->data;
    cr_assert(o[0] == 1 && o[1] == 4 && o[2] == 9);
    xe_tensor_release(in);
    xe_tensor_release(out);
    xe_session_destroy(s);
}

Test(session, composite_body_runs_op_by_op_and_get_picks_outputs)
{
    xe_session *s = session_from("xlac.graph v1\ninput x: f32[3]\n"
                                 "c = call(x) {\n  input a: f32[3]\n  b = neg(a)\n  e = add(a, b)\n"
                                 "  output e\n  output b\n}\n"
                                 "n = get(c, index=1)\nz = get(c, index=0)\noutput n\noutput z\n",
                                 NULL);
    float v[3] = {1, -2, 3};
    xe_tensor *in = f32_tensor(1, (int64_t[]){3}, v), *out[2];
    cr_assert_eq(xe_session_run(s, &in, out, &st), XE_OK, "%s", st.msg);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(((float *)out[0]->data)[i], -v[i]);
        cr_assert_eq(((float *)out[1]->data)[i], 0.0f);
    }
    xe_tensor_release(in);
    xe_tensor_release(out[0]);
    xe_tensor_release(out[1]);
    xe_session_destroy(s);
}

Test(session, placement_log_lists_every_executed_op)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *log = open_memstream(&buf, &len);
    xe_session_options opt = {.place = XE_PLACE_CPU, .log_placement = true, .log = log};
    xe_session *s = session_from("xlac.graph v1\ninput x: f32[2]\na = exp(x)\nb = neg(a)\n"
                                 "output b\n", &opt);
    float v[2] = {0, 1};
    xe_tensor *in = f32_tensor(1, (int64_t[]){2}, v), *out;
    cr_assert_eq(xe_session_run(s, &in, &out, &st), XE_OK, "%s", st.msg);
    fclose(log);
    cr_assert_str_eq(buf, "placement: a exp CPU:0\nplacement: b neg CPU:0\n");
    free(buf);
    xe_tensor_release(in);
    xe_tensor_release(out);
    xe_session_destroy(s);
}

Test(session, runtime_errors_name_the_node)
{
    xe_session *s = session_from("xlac.graph v1\ninput x: f32[?,0]\n"
                                 "m = reduce_max(x, axes=[1])\noutput m\n", NULL);
    xe_tensor *in = f32_tensor(2, (int64_t[]){2, 0}, NULL), *out = NULL;
    cr_assert_neq(xe_session_run(s, &in, &out, &st), XE_OK);
    cr_assert(strstr(st.msg, "s.xg:3:") && strstr(st.msg, "node m (reduce_max)"), "%s", st.msg);
    xe_tensor_release(in);
    xe_session_destroy(s);
}

/* ---- registered ops: the definition's user data reaches the kernel ------------ */

static xe_code same_type(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *s)
{
    (void)n, (void)n_in, (void)s;
    *out = in[0];
    return XE_OK;
}

/* Fills the output with the float the op was registered with. */
static xe_code fill_from_user(const xe_kernel_args *a, xe_status *s)
{
    (void)s;
    const float *v = a->op_user;
    for (int64_t i = 0; i < xe_tensor_numel(a->out); i++)
        ((float *)a->out->data)[i] = *v;
    return XE_OK;
}

Test(session, registered_op_kernel_gets_its_user_data)
{
    static float value = 7.5f;
    xe_op_def def = {
        .name = "test_fill_from_user",
        .min_inputs = 1,
        .max_inputs = 1,
        .cls = XE_CLASS_UNARY,
        .infer = same_type,
        .kernel = {[XE_DEV_CPU] = fill_from_user},
        .user = &value,
    };
    cr_assert_geq(xe_register_op(&def, &st), 0, "%s", st.msg);
    xe_session *s = session_from(
        "xlac.graph v1\ninput x: f32[3]\ny = test_fill_from_user(x)\noutput y\n", NULL);
    xe_tensor *in = f32_tensor(1, (int64_t[]){3}, (float[]){1, 2, 3}), *out = NULL;
    cr_assert_eq(xe_session_run(s, &in, &out, &st), XE_OK, "%s", st.msg);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(((float *)out->data)[i], 7.5f);
    xe_tensor_release(in);
    xe_tensor_release(out);
    xe_session_destroy(s);
}

/* A reshape op by op views its input's bytes (XE_OPF_VIEW): a chain of them over an intermediate
 * keeps that tensor alive past the run, and a reader of both sees the same values. */
Test(session, reshapes_view_their_input_and_keep_it_alive)
{
    xe_session *s = session_from("xlac.graph v1\ninput x: f32[2,3]\n"
                                 "a = exp(x)\nb = reshape(a, shape=[3,2])\nc = reshape(b, shape=[6])\n"
                                 "d = neg(b)\ne = reshape(x, shape=[6])\noutput c\noutput d\noutput e\n",
                                 NULL);
    float xv[] = {0, 1, -1, 2, 0.5f, -3};
    xe_tensor *in[1] = {f32_tensor(2, (int64_t[]){2, 3}, xv)};
    xe_tensor *out[3] = {0};
    cr_assert_eq(xe_session_run(s, in, out, &st), XE_OK, "%s", st.msg);
    cr_expect(out[2]->data == in[0]->data, "reshape(x) is a view of the fed x");
    cr_expect(out[0]->keeper != NULL && out[0]->shape.rank == 1 && out[0]->shape.dims[0] == 6,
              "c views exp(x)'s buffer");
    xe_tensor_release(out[1]);
    xe_tensor_release(out[2]);
    xe_tensor_release(in[0]);
    xe_session_destroy(s); /* c alone holds exp(x) now */
    for (int i = 0; i < 6; i++)
        cr_expect_float_eq(((float *)out[0]->data)[i], expf(xv[i]), 1e-6f, "c[%d]", i);
    xe_tensor_release(out[0]);
}
