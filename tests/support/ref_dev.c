/*
 * Running one node on a chosen device and asserting on the result (see
 * ref_dev.h).
 */
#include "support/ref_dev.h"

#include <criterion/criterion.h>
#include <string.h>

/* The GPU run of o's node: inputs copied over, output copied back to the CPU. */
static xe_tensor *run_gpu(ref_op *o, xe_tensor *const *in, int n_in, xe_status *st)
{
    xe_tensor *din[16] = {0}, *dout = NULL, *res = NULL;
    cr_assert(n_in <= 16, "at most 16 inputs");
    if (ref_op_infer(o, st) != XE_OK)
        return NULL;
    for (int k = 0; k < n_in; k++)
        cr_assert_not_null(din[k] = xe_tensor_to_device(in[k], XE_DEV_GPU, st), "%s", st->msg);
    dout = xe_tensor_new(o->node->type.dtype, &o->node->type.shape, XE_DEV_GPU, st);
    cr_assert_not_null(dout, "%s", st->msg);
    xe_kernel_args a = {o->g, o->node, n_in, din, dout, NULL, NULL, NULL, NULL, NULL};
    const xe_op_def *d = xe_op_get(o->node->op);
    cr_assert_not_null(xe_op_kernel(d, XE_DEV_GPU), "%s has no GPU kernel", d->name);
    if (xe_op_kernel(d, XE_DEV_GPU)(&a, st) == XE_OK)
        res = xe_tensor_to_device(dout, XE_DEV_CPU, st);
    for (int k = 0; k < n_in; k++)
        xe_tensor_release(din[k]);
    xe_tensor_release(dout);
    return res;
}

xe_tensor *ref_op_run_on(xe_device dev, ref_op *o, xe_tensor *const *in, int n_in, xe_status *st)
{
    xe_status_clear(st);
    return dev == XE_DEV_CPU ? ref_op_run(o, in, n_in, NULL, st) : run_gpu(o, in, n_in, st);
}

void ref_expect_run(xe_device dev, ref_op *o, xe_tensor *const *in, int n_in, const xe_shape *shape,
                    const double *want, const double *scale, const char *what)
{
    xe_status st;
    xe_tensor *r = ref_op_run_on(dev, o, in, n_in, &st);
    cr_assert_not_null(r, "%s: %s", what, st.msg);
    char a[128], b[128];
    cr_assert(xe_shape_equal(&r->shape, shape), "%s: shape %s, want %s", what,
              xe_shape_str(&r->shape, a, sizeof a), xe_shape_str(shape, b, sizeof b));
    ref_expect_tensor(what, r, want, scale);
    xe_tensor_release(r);
}

void ref_expect_infer_error(ref_op *o, const char *part)
{
    xe_status st;
    xe_status_clear(&st);
    cr_assert_neq(ref_op_infer(o, &st), XE_OK, "expected an error containing '%s'", part);
    cr_assert(strstr(st.msg, part), "message '%s' lacks '%s'", st.msg, part);
}

const char *ref_parse_error(const char *text)
{
    static xe_status st;
    xe_status_clear(&st);
    xe_graph *g = xe_parse_string(text, "nn.xg", &st);
    cr_assert_null(g, "accepted:\n%s", text);
    return st.msg;
}

void ref_set_ints(xe_node *n, const char *name, int count, const int64_t *v)
{
    xe_status st;
    cr_assert_eq(xe_node_set_ints(n, name, v, count, &st), XE_OK, "%s", st.msg);
}

void ref_set_int(xe_node *n, const char *name, int64_t v)
{
    xe_status st;
    cr_assert_eq(xe_node_set_int(n, name, v, &st), XE_OK, "%s", st.msg);
}

void ref_run_graph(const char *text, xe_tensor *const *in, xe_tensor **out)
{
    xe_status st = {0};
    xe_graph *g = xe_parse_string(text, "ref.xg", &st);
    cr_assert_not_null(g, "%s\n%s", st.msg, text);
    xe_session *s = xe_session_new(g, &(xe_session_options){.place = XE_PLACE_CPU}, &st);
    cr_assert_not_null(s, "%s", st.msg);
    cr_assert_eq(xe_session_run(s, in, out, &st), XE_OK, "%s\n%s", st.msg, text);
    xe_session_destroy(s); /* and g, which the session owns */
}
