/*
 * Half-precision products on the CPU engine (issue 37): f16 x f16 -> f16
 * computed in f32 on oneDNN's primitive and rounded once (devices/cpu/
 * dnnl_matmul.c), constant weights widened and packed once, other weights
 * widened per run. Checked against an f64 reference rounded to f16: within
 * one f16 step of it (the f32 sum's order differs from the reference's), and
 * the second run after the constant's data was zeroed still uses the packed
 * copy. NaN and infinities propagate as in the f32 product.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "xlac/xlac.h"

static xe_status st;

static void setup(void)
{
    xe_status_clear(&st);
}

TestSuite(f16_matmul, .init = setup, .timeout = 120);

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float next_f(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((int64_t)(rng >> 40) % 2001 - 1000) / 1000.0f;
}

static xe_tensor *half_tensor(int rank, const int64_t *dims)
{
    xe_shape s = xe_shape_make(rank, dims);
    xe_tensor *t = xe_tensor_new(XE_F16, &s, XE_DEV_CPU, &st);
    cr_assert_not_null(t, "%s", st.msg);
    for (int64_t i = 0; i < xe_tensor_numel(t); i++)
        ((xe_f16 *)t->data)[i] = xe_f32_to_f16(next_f());
    return t;
}

static double h(const xe_tensor *t, int64_t i)
{
    return xe_f16_to_f32(((const xe_f16 *)t->data)[i]);
}

/* c == a [.., M, K] @ b [K, N] within one f16 step of the f64 product rounded to f16. */
static void check(const xe_tensor *c, const xe_tensor *a, const xe_tensor *b, const char *what)
{
    int64_t K = b->shape.dims[0], N = b->shape.dims[1], M = xe_tensor_numel(a) / K;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += h(a, m * K + k) * h(b, k * N + n);
            float want = xe_f16_to_f32(xe_f32_to_f16((float)s)), got = (float)h(c, m * N + n);
            if (isnan(want)) {
                cr_assert(isnan(got), "%s: c[%lld,%lld] = %g, want NaN", what, (long long)m, (long long)n, got);
                continue;
            }
            if (isinf(want)) {
                cr_assert_eq(got, want, "%s: c[%lld,%lld] = %g, want %g", what, (long long)m, (long long)n, got, want);
                continue;
            }
            float step = fmaxf(fabsf(want) * 0x1p-10f, 0x1p-24f);
            cr_assert_leq(fabsf(got - want), step * 1.01f, "%s: c[%lld,%lld] = %g, want %g", what, (long long)m,
                          (long long)n, got, want);
        }
}

static xe_session *session(xe_tensor *a, xe_tensor *b, bool const_b)
{
    xe_graph *g = xe_graph_new("f16.xg");
    xe_type at_ = {XE_F16, a->shape}, bt = {XE_F16, b->shape};
    int in[2] = {xe_graph_add_input(g, "a", &at_, &st), -1};
    if (const_b) {
        in[1] = xe_graph_add_node(g, "b", XE_OP_CONST, NULL, 0, &st);
        g->nodes[in[1]]->value = xe_tensor_retain(b);
        g->nodes[in[1]]->type = bt;
    } else {
        in[1] = xe_graph_add_input(g, "b", &bt, &st);
    }
    int m = xe_graph_add_node(g, "mm", XE_OP_MATMUL, in, 2, &st);
    cr_assert(m >= 0, "%s", st.msg);
    cr_assert_eq(xe_graph_add_output(g, m, &st), XE_OK, "%s", st.msg);
    xe_session_options o = {.place = XE_PLACE_CPU};
    xe_session *s = xe_session_new(g, &o, &st);
    cr_assert_not_null(s, "%s", st.msg);
    return s;
}

static xe_tensor *run(xe_session *s, xe_tensor *a, xe_tensor *b)
{
    xe_tensor *ins[2] = {a, b}, *c = NULL;
    cr_assert_eq(xe_session_run(s, ins, &c, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(c->dtype, XE_F16);
    return c;
}

Test(f16_matmul, within_one_step_of_the_f64_product)
{
    const int64_t shapes[3][4] = {{37, 64, 48, 2}, {2 * 16, 256, 64, 3}, {1, 768, 96, 2}};
    for (int k = 0; k < 3; k++)
        for (int c = 0; c < 2; c++) {
            const int64_t *d = shapes[k];
            xe_tensor *a = d[3] == 3 ? half_tensor(3, (int64_t[]){2, d[0] / 2, d[1]}) : half_tensor(2, d),
                      *b = half_tensor(2, (int64_t[]){d[1], d[2]});
            xe_session *s = session(a, b, c);
            xe_tensor *y = run(s, a, b);
            check(y, a, b, c ? "constant weights" : "weights as an input");
            xe_tensor_release(y);
            xe_session_destroy(s);
            xe_tensor_release(a);
            xe_tensor_release(b);
        }
}

Test(f16_matmul, constant_weights_are_packed_once_and_nan_propagates)
{
    xe_tensor *a = half_tensor(2, (int64_t[]){8, 32}), *b = half_tensor(2, (int64_t[]){32, 16});
    xe_tensor *b0 = half_tensor(2, (int64_t[]){32, 16});
    memcpy(b0->data, b->data, b->nbytes);
    ((xe_f16 *)a->data)[3] = xe_f32_to_f16(NAN); /* row 0: NaN everywhere */
    ((xe_f16 *)a->data)[32 + 5] = xe_f32_to_f16(INFINITY);
    xe_session *s = session(a, b, true);
    xe_tensor *y = run(s, a, b);
    check(y, a, b0, "first run");
    xe_tensor_release(y);
    memset(b->data, 0, b->nbytes);
    y = run(s, a, b);
    check(y, a, b0, "second run after the constant was zeroed");
    xe_tensor_release(y);
    xe_session_destroy(s);
    xe_tensor_release(a);
    xe_tensor_release(b);
    xe_tensor_release(b0);
}
