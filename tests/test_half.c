/*
 * Half precision on the CPU (issues 34, 37). Products: f16 x f16 -> f16
 * computed in f32 on oneDNN's primitive and rounded once (devices/cpu/
 * dnnl_matmul.c), constant weights widened and packed once, other weights
 * widened per run. Checked against an f64 reference rounded to f16: within
 * one f16 step of it (the f32 sum's order differs from the reference's), and
 * the second run after the constant's data was zeroed still uses the packed
 * copy. NaN and infinities propagate as in the f32 product. Convolutions and
 * pools of an ONNX model stored in f16 (Conv, MaxPool, AveragePool,
 * ConvTranspose) import, computed in f32 and rounded once: the f16 model's
 * outputs are within f16 rounding of the same model in f32 run by xlac.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "support/pb.h"
#include "support/tmpdir.h"
#include "xlac/xlac.h"

static xe_status st;

static void setup(void)
{
    xe_status_clear(&st);
}

TestSuite(half, .init = setup, .timeout = 120);

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

Test(half, within_one_step_of_the_f64_product)
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

Test(half, constant_weights_are_packed_once_and_nan_propagates)
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

static void ints_attr(pb *n, const char *name, const int64_t *v, int count)
{
    pb a = {0};
    pb_str(&a, 1, name);
    for (int k = 0; k < count; k++)
        pb_int(&a, 8, (uint64_t)v[k]);
    pb_int(&a, 20, 7);
    pb_msg(n, 5, &a);
}

/* A NodeProto op(ins) -> out, with kernel/pads/strides for the windows given. */
static void wnode(pb *g, const char *op, const char *ins[], int n_in, const char *out, int64_t k, int64_t s)
{
    pb n = {0};
    for (int i = 0; i < n_in; i++)
        pb_str(&n, 1, ins[i]);
    pb_str(&n, 2, out);
    pb_str(&n, 3, out);
    pb_str(&n, 4, op);
    if (k) {
        ints_attr(&n, "kernel_shape", (int64_t[]){k, k}, 2);
        ints_attr(&n, "strides", (int64_t[]){s, s}, 2);
        ints_attr(&n, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    }
    pb_msg(g, 1, &n);
}

/* x [1,3,8,8] -> Conv(w [4,3,3,3], b [4]) -> Relu -> MaxPool 2 -> ConvTranspose(wt [4,2,3,3]) -> AveragePool 3,
 * in dtype (ONNX 1 f32, 10 f16); weights from the same values either way. */
static const char *conv_model(const char *name, int dtype)
{
    pb g = {0};
    const int64_t wd[4] = {4, 3, 3, 3}, bd[1] = {4}, td[4] = {4, 2, 3, 3};
    const int64_t *dims[3] = {wd, bd, td};
    const int ranks[3] = {4, 1, 4};
    const char *names[3] = {"w", "b", "wt"};
    uint64_t save = rng;
    for (int t = 0; t < 3; t++) {
        pb tp = {0};
        int64_t n = 1;
        for (int d = 0; d < ranks[t]; d++) {
            pb_int(&tp, 1, (uint64_t)dims[t][d]);
            n *= dims[t][d];
        }
        pb_int(&tp, 2, (uint64_t)dtype);
        uint16_t h[128];
        float f[128];
        for (int64_t i = 0; i < n; i++) {
            h[i] = xe_f32_to_f16(next_f() * 0.5f);
            f[i] = xe_f16_to_f32(h[i]);
        }
        pb_bytes(&tp, 9, dtype == 10 ? (const void *)h : (const void *)f, (size_t)n * (dtype == 10 ? 2 : 4));
        pb_str(&tp, 8, names[t]);
        pb_msg(&g, 5, &tp);
    }
    rng = save;
    wnode(&g, "Conv", (const char *[]){"x", "w", "b"}, 3, "c", 0, 0);
    wnode(&g, "Relu", (const char *[]){"c"}, 1, "r", 0, 0);
    pb mp = {0};
    pb_str(&mp, 1, "r");
    pb_str(&mp, 2, "m");
    pb_str(&mp, 3, "m");
    pb_str(&mp, 4, "MaxPool");
    ints_attr(&mp, "kernel_shape", (int64_t[]){2, 2}, 2);
    ints_attr(&mp, "strides", (int64_t[]){2, 2}, 2);
    pb_msg(&g, 1, &mp);
    wnode(&g, "ConvTranspose", (const char *[]){"m", "wt"}, 2, "t", 0, 0);
    wnode(&g, "AveragePool", (const char *[]){"t"}, 1, "y", 3, 1);
    pb_graph_value(&g, 11, "x", dtype, (int64_t[]){1, 3, 8, 8}, 4);
    pb_graph_value(&g, 12, "y", dtype, (int64_t[]){1, 2, 5, 5}, 4);
    pb m = {0}, os = {0};
    pb_int(&m, 1, 8);
    pb_int(&os, 2, 17);
    pb_msg(&m, 8, &os);
    pb_str(&g, 2, "g");
    pb_msg(&m, 7, &g);
    const char *path = xt_path(name);
    pb_write_file(&m, path);
    return path;
}

static xe_tensor *run_model(const char *path, xe_tensor *x)
{
    xe_graph *g = xe_load_graph(path, NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_session_options o = {.place = XE_PLACE_CPU};
    xe_session *s = xe_session_new(g, &o, &st);
    cr_assert_not_null(s, "%s", st.msg);
    xe_tensor *y = NULL;
    cr_assert_eq(xe_session_run(s, &x, &y, &st), XE_OK, "%s", st.msg);
    xe_session_destroy(s);
    return y;
}

Test(half, f16_convolutions_and_pools_import_and_match_f32)
{
    xt_tmp_make("/tmp/xlac-half-XXXXXX");
    const char *p16 = conv_model("c16.onnx", 10), *p32 = conv_model("c32.onnx", 1);
    xe_tensor *x16 = half_tensor(4, (int64_t[]){1, 3, 8, 8});
    xe_shape xs = x16->shape;
    xe_tensor *x32 = xe_tensor_new(XE_F32, &xs, XE_DEV_CPU, &st);
    for (int64_t i = 0; i < xe_tensor_numel(x16); i++)
        ((float *)x32->data)[i] = (float)h(x16, i);
    xe_tensor *y16 = run_model(p16, x16), *y32 = run_model(p32, x32);
    cr_assert_eq(y16->dtype, XE_F16);
    cr_assert_eq(xe_tensor_numel(y16), xe_tensor_numel(y32));
    for (int64_t i = 0; i < xe_tensor_numel(y16); i++) {
        float want = ((float *)y32->data)[i], got = (float)h(y16, i);
        cr_assert_leq(fabsf(got - want), fmaxf(fabsf(want) * 0x1p-9f, 1e-3f), "y[%lld] = %g, f32 %g", (long long)i,
                      got, want);
    }
    xe_tensor_release(y16);
    xe_tensor_release(y32);
    xe_tensor_release(x16);
    xe_tensor_release(x32);
    xt_tmp_fini();
}

/* bf16 bits of f rounded to nearest even (a NaN stays NaN), and back. */
static uint16_t to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static float of_bf16(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* y = MatMul(a [2,3,4], b [4,5]) with every value bf16 (ONNX 16). */
static const char *bf16_matmul_model(void)
{
    pb g = {0};
    wnode(&g, "MatMul", (const char *[]){"a", "b"}, 2, "y", 0, 0);
    pb_graph_value(&g, 11, "a", 16, (int64_t[]){2, 3, 4}, 3);
    pb_graph_value(&g, 11, "b", 16, (int64_t[]){4, 5}, 2);
    pb_graph_value(&g, 12, "y", 16, (int64_t[]){2, 3, 5}, 3);
    pb m = {0}, os = {0};
    pb_int(&m, 1, 8);
    pb_int(&os, 2, 17);
    pb_msg(&m, 8, &os);
    pb_str(&g, 2, "g");
    pb_msg(&m, 7, &g);
    const char *path = xt_path("bf16_matmul.onnx");
    pb_write_file(&m, path);
    return path;
}

static xe_tensor *bf16_tensor(int rank, const int64_t *dims)
{
    xe_shape s = xe_shape_make(rank, dims);
    xe_tensor *t = xe_tensor_new(XE_BF16, &s, XE_DEV_CPU, &st);
    for (int64_t i = 0; i < xe_tensor_numel(t); i++)
        ((uint16_t *)t->data)[i] = to_bf16(next_f());
    return t;
}

/* The engine has no bf16 product: the importer widens the operands to f32 and rounds the product
   back once, so each output is the exact product sum rounded to bf16 (within one bf16 step: the
   f32 sum's order), and a NaN operand gives NaN. */
Test(half, bf16_matmul_imports_in_f32_rounded_once)
{
    xt_tmp_make("/tmp/xlac-half-XXXXXX");
    xe_graph *g = xe_load_graph(bf16_matmul_model(), NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_session_options o = {.place = XE_PLACE_CPU};
    xe_session *s = xe_session_new(g, &o, &st);
    cr_assert_not_null(s, "%s", st.msg);
    xe_tensor *in[2] = {bf16_tensor(3, (int64_t[]){2, 3, 4}), bf16_tensor(2, (int64_t[]){4, 5})};
    const uint16_t *a = in[0]->data, *b = in[1]->data;
    ((uint16_t *)in[0]->data)[0] = to_bf16(NAN); /* row 0 of batch 0 */
    xe_tensor *y = NULL;
    cr_assert_eq(xe_session_run(s, in, &y, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(y->dtype, XE_BF16);
    for (int64_t r = 0; r < 6; r++)
        for (int64_t c = 0; c < 5; c++) {
            double want = 0;
            for (int64_t k = 0; k < 4; k++)
                want += (double)of_bf16(a[r * 4 + k]) * of_bf16(b[k * 5 + c]);
            float got = of_bf16(((const uint16_t *)y->data)[r * 5 + c]);
            if (r == 0)
                cr_assert(isnan(got), "y[0, %lld] = %g, not NaN", (long long)c, got);
            else
                cr_assert_leq(fabs(got - want), fmax(fabs(want) * 0x1p-8, 1e-6),
                              "y[%lld, %lld] = %g, exact %g", (long long)r, (long long)c, got, want);
        }
    xe_tensor_release(y);
    xe_tensor_release(in[0]);
    xe_tensor_release(in[1]);
    xe_session_destroy(s);
    xt_tmp_fini();
}
