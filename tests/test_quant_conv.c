/*
 * quant_conv2d (issue 37: a Conv between ONNX QDQ pairs as one int8 step; ir/infer/quant_conv.c,
 * devices/cpu/quant_conv.c, dnnl_conv.c). Each configuration runs the op's kernel on seeded
 * random 8-bit operands and compares every output with a reference written here from the op's
 * definition: the window sum of (x - x_zero_point) * w in 64 bits, padding taps adding nothing,
 * then scale[m] * sum + bias[m] in double, quantized (round half to even, saturate) when y_scale
 * is set. The f32 result must match within 1e-5 of the output's range; a quantized one within one
 * step everywhere and exactly almost everywhere (the engine folds scale / y_scale before rounding,
 * so a value within an ulp of a tie may go either way). Both paths: oneDNN's int8 convolution
 * where this CPU has VNNI, and the exact loop with oneDNN held to AVX2 (as on an AVX2-only
 * machine, where oneDNN's u8 x s8 pairs saturate in int16). Operands at the extremes (255 x -128)
 * are in every case. The shape function refuses bad dtypes, zero points and output attributes.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "support/ref_dev.h"
#include "xlac/xlac.h"

static xe_status st;

TestSuite(quant_conv, .timeout = 120);

/* One configuration. */
typedef struct cfg {
    xe_dtype x;                                   /* u8 or i8 */
    int64_t n, c, h, w, m, kh, kw, groups;        /* shapes */
    int64_t sh, sw, dh, dw, pt, pl, pb, pr;       /* window */
    int64_t x_zero;                               /* x's zero point */
    bool bias;                                    /* with a bias */
    xe_dtype y;                                   /* f32, u8 or i8 */
    int64_t y_zero;                               /* quantized output's zero point */
} cfg;

static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1)
{
    return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

/* The reference output of c, in double, [n, m, oh, ow]; y_scale for a quantized one. */
static double *reference(const cfg *c, xe_tensor *const *in, double y_scale, int64_t *count)
{
    int64_t oh = out_dim(c->h, c->kh, c->sh, c->dh, c->pt, c->pb);
    int64_t ow = out_dim(c->w, c->kw, c->sw, c->dw, c->pl, c->pr);
    int64_t cg = c->c / c->groups, mg = c->m / c->groups;
    *count = c->n * c->m * oh * ow;
    double *want = malloc((size_t)*count * sizeof *want);
    const float *scale = in[2]->data, *bias = c->bias ? in[3]->data : NULL;
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t m = 0; m < c->m; m++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    int64_t sum = 0;
                    for (int64_t k = 0; k < cg; k++)
                        for (int64_t a = 0; a < c->kh; a++)
                            for (int64_t b = 0; b < c->kw; b++) {
                                int64_t y = i * c->sh - c->pt + a * c->dh;
                                int64_t x = j * c->sw - c->pl + b * c->dw;
                                if (y < 0 || y >= c->h || x < 0 || x >= c->w)
                                    continue;
                                int64_t ci = m / mg * cg + k;
                                double xv = xe_load_f64(in[0]->data, c->x,
                                                        ((n * c->c + ci) * c->h + y) * c->w + x);
                                double wv = xe_load_f64(in[1]->data, XE_I8,
                                                        ((m * cg + k) * c->kh + a) * c->kw + b);
                                sum += ((int64_t)xv - c->x_zero) * (int64_t)wv;
                            }
                    double v = (double)scale[m] * (double)sum + (bias ? bias[m] : 0.0);
                    if (c->y != XE_F32) {
                        double lo = c->y == XE_U8 ? 0 : -128, hi = c->y == XE_U8 ? 255 : 127;
                        v = nearbyint(v / y_scale) + (double)c->y_zero;
                        v = v < lo ? lo : v > hi ? hi : v;
                    }
                    want[((n * c->m + m) * oh + i) * ow + j] = v;
                }
    return want;
}

/* The operands of c: x and w seeded, their first elements at the extremes. */
static int operands(const cfg *c, xe_tensor **in)
{
    ref_seed((uint64_t)(c->c * 131 + c->m * 7 + c->kh));
    double lo = c->x == XE_U8 ? 0 : -128, hi = c->x == XE_U8 ? 255 : 127;
    in[0] = ref_random_tensor(c->x, &(xe_shape){4, {c->n, c->c, c->h, c->w}}, lo, hi);
    in[1] = ref_random_tensor(XE_I8, &(xe_shape){4, {c->m, c->c / c->groups, c->kh, c->kw}}, -128,
                              127);
    for (int k = 0; k < 4; k++) { /* 255 (or -128) x -128 side by side: past int16 in pairs */
        if (c->x == XE_U8)
            ((uint8_t *)in[0]->data)[k] = 255;
        else
            ((int8_t *)in[0]->data)[k] = -128;
        ((int8_t *)in[1]->data)[k] = -128;
    }
    in[2] = ref_random_tensor(XE_F32, &(xe_shape){1, {c->m}}, 1e-4, 4e-3);
    int n = 3;
    if (c->bias)
        in[n++] = ref_random_tensor(XE_F32, &(xe_shape){1, {c->m}}, -2, 2);
    return n;
}

/* Runs c and checks every output against the reference. */
static void check(const cfg *c)
{
    xe_tensor *in[4];
    int n_in = operands(c, in);
    ref_op o;
    ref_op_new(&o, XE_OP_QUANT_CONV2D, in, n_in);
    ref_set_ints(o.node, "strides", 2, (int64_t[]){c->sh, c->sw});
    ref_set_ints(o.node, "dilations", 2, (int64_t[]){c->dh, c->dw});
    ref_set_ints(o.node, "pads", 4, (int64_t[]){c->pt, c->pl, c->pb, c->pr});
    ref_set_int(o.node, "groups", c->groups);
    ref_set_int(o.node, "x_zero_point", c->x_zero);
    double y_scale = 0.05;
    if (c->y != XE_F32) {
        cr_assert_eq(xe_node_set_float(o.node, "y_scale", y_scale, &st), XE_OK, "%s", st.msg);
        ref_set_int(o.node, "y_zero_point", c->y_zero);
        cr_assert_eq(xe_node_set_dtype(o.node, "y_dtype", c->y, &st), XE_OK, "%s", st.msg);
    }
    xe_tensor *got = ref_op_run(&o, in, n_in, NULL, &st);
    cr_assert_not_null(got, "%s", st.msg);
    cr_assert_eq(got->dtype, c->y);
    int64_t count, off = 0;
    double *want = reference(c, in, y_scale, &count), range = 0;
    cr_assert_eq(xe_tensor_numel(got), count);
    for (int64_t i = 0; i < count; i++)
        range = fmax(range, fabs(want[i]));
    for (int64_t i = 0; i < count; i++) {
        double g = xe_load_f64(got->data, got->dtype, i), d = fabs(g - want[i]);
        if (c->y == XE_F32)
            cr_assert(d <= 1e-5 * range + 1e-6, "c=%lld m=%lld: output %lld is %.9g, want %.9g",
                      (long long)c->c, (long long)c->m, (long long)i, g, want[i]);
        else {
            cr_assert(d <= 1, "c=%lld m=%lld: output %lld is %g, want %g (more than a step)",
                      (long long)c->c, (long long)c->m, (long long)i, g, want[i]);
            off += d != 0;
        }
    }
    cr_assert(off * 1000 <= count, "%lld of %lld quantized outputs a step off", (long long)off,
              (long long)count);
    free(want);
    xe_tensor_release(got);
    for (int k = 0; k < n_in; k++)
        xe_tensor_release(in[k]);
    ref_op_free(&o);
}

/* Every configuration: dtypes, zero points, groups, strides, dilations, pads, outputs. */
static void every_configuration(void)
{
    const cfg base = {XE_U8, 2, 16, 9, 11, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, true, XE_F32, 0};
    cfg v[16];
    int n = 0;
    v[n++] = base;
    v[n] = base, v[n].x_zero = 131, n++;
    v[n] = base, v[n].x = XE_I8, v[n].x_zero = -7, n++;
    v[n] = base, v[n].bias = false, n++;
    v[n] = base, v[n].groups = 4, v[n].m = 8, n++;
    v[n] = base, v[n].groups = 16, v[n].m = 16, n++; /* depthwise */
    v[n] = base, v[n].sh = 2, v[n].sw = 2, v[n].pb = 0, v[n].pr = 2, n++;
    v[n] = base, v[n].dh = 2, v[n].dw = 2, v[n].pt = 2, v[n].pb = 2, n++;
    v[n] = base, v[n].kh = 1, v[n].kw = 1, v[n].pt = v[n].pl = v[n].pb = v[n].pr = 0, n++;
    v[n] = base, v[n].c = 3, v[n].x_zero = 128, n++; /* a first layer */
    v[n] = base, v[n].kh = 5, v[n].kw = 2, v[n].pt = 0, v[n].pl = 3, n++;
    v[n] = base, v[n].y = XE_U8, v[n].x_zero = 120, n++;
    v[n] = base, v[n].y = XE_U8, v[n].y_zero = 128, n++;
    v[n] = base, v[n].y = XE_I8, v[n].y_zero = -3, v[n].x = XE_I8, n++;
    v[n] = base, v[n].y = XE_U8, v[n].groups = 16, v[n].m = 16, v[n].y_zero = 9, n++;
    v[n] = base, v[n].y = XE_I8, v[n].bias = false, v[n].c = 64, v[n].m = 64, n++;
    for (int i = 0; i < n; i++)
        check(&v[i]);
}

Test(quant_conv, matches_the_definition_on_the_engine)
{
    every_configuration();
}

Test(quant_conv, matches_the_definition_in_the_loop)
{
    setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1); /* before the engine's first use in this process */
    every_configuration();
}

/* The shape function's refusals, each naming what is wrong. */
Test(quant_conv, refuses_bad_operands_and_attributes)
{
    xe_type u8x = {XE_U8, {4, {1, 4, 5, 5}}}, w = {XE_I8, {4, {6, 4, 3, 3}}};
    xe_type s = {XE_F32, {1, {6}}}, f32x = {XE_F32, {4, {1, 4, 5, 5}}};
    struct {
        xe_type x, s;
        const char *attr, *part;
    } bad[] = {
        {f32x, s, NULL, "x must be u8 or i8"},
        {u8x, (xe_type){XE_F32, {1, {5}}}, NULL, "scale must be f32 [6]"},
        {u8x, s, "x_zero_point", "x_zero_point must be an integer in [0, 255]"},
        {u8x, s, "y_zero_point", "y_dtype and y_zero_point need y_scale"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        xe_type in[3] = {bad[k].x, w, bad[k].s};
        ref_op o;
        ref_op_new_types(&o, XE_OP_QUANT_CONV2D, in, 3);
        if (bad[k].attr)
            ref_set_int(o.node, bad[k].attr, 300);
        ref_expect_infer_error(&o, bad[k].part);
        ref_op_free(&o);
    }
    xe_type in[3] = {u8x, w, s};
    ref_op o;
    ref_op_new_types(&o, XE_OP_QUANT_CONV2D, in, 3);
    cr_assert_eq(xe_node_set_float(o.node, "y_scale", -1.0, &st), XE_OK);
    ref_expect_infer_error(&o, "y_scale must be a positive normal float");
    ref_op_free(&o);
}
