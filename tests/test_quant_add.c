/*
 * quant_add (an Add between ONNX QDQ pairs as one step: ir/infer/quant_add.c,
 * devices/cpu/quant_add.c). The kernel must be its ONNX composition bit for bit: for every
 * pairing of u8 and i8 operands and outputs, over every byte value, with scales that make
 * rounding ties (sums of quarters over a half) and scales that do not, each output equals the
 * composition's f32 steps written out here one rounding at a time (dequantize each, add, divide,
 * round half to even, add the zero point, saturate), and lies within one step of the sum in
 * exact arithmetic. The sizes cross the kernel's threading threshold. The shape function refuses
 * other dtypes, two shapes, missing or bad scales, zero points outside their range and a y_dtype
 * other than u8 and i8.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "support/ref_dev.h"
#include "xlac/xlac.h"

TestSuite(quant_add, .timeout = 60);

typedef struct params {
    float sa, sb, sy;
    int32_t za, zb, zy;
} params;

/* Element i of an 8-bit tensor as an integer. */
static int32_t at(const xe_tensor *t, int64_t i)
{
    return t->dtype == XE_U8 ? ((const uint8_t *)t->data)[i] : ((const int8_t *)t->data)[i];
}

/* The composition, one f32 rounding per ONNX step. */
static int32_t composition(int32_t a, int32_t b, const params *p, xe_dtype y)
{
    float da = ((float)a - (float)p->za) * p->sa;
    float db = ((float)b - (float)p->zb) * p->sb;
    float s = da + db;
    float r = nearbyintf(s / p->sy) + (float)p->zy;
    float lo = y == XE_U8 ? 0.0f : -128.0f, hi = y == XE_U8 ? 255.0f : 127.0f;
    return (int32_t)(r < lo ? lo : r > hi ? hi : r);
}

/* An 8-bit tensor of n elements cycling through every byte value, offset by `shift`. */
static xe_tensor *bytes(xe_dtype dt, int64_t n, int shift)
{
    xe_status st;
    xe_tensor *t = xe_tensor_new(dt, &(xe_shape){2, {n / 8, 8}}, XE_DEV_CPU, &st);
    cr_assert_not_null(t, "%s", st.msg);
    for (int64_t i = 0; i < n; i++)
        ((uint8_t *)t->data)[i] = (uint8_t)(i * 7 + shift + i / 256);
    return t;
}

static void check(xe_dtype ta, xe_dtype tb, xe_dtype ty, const params *p)
{
    const int64_t n = 70000; /* over the kernel's one-thread limit */
    xe_tensor *in[2] = {bytes(ta, n, 0), bytes(tb, n, 91)};
    ref_op o;
    ref_op_new(&o, XE_OP_QUANT_ADD, in, 2);
    xe_status st;
    cr_assert_eq(xe_node_set_float(o.node, "a_scale", p->sa, &st), XE_OK);
    cr_assert_eq(xe_node_set_float(o.node, "b_scale", p->sb, &st), XE_OK);
    cr_assert_eq(xe_node_set_float(o.node, "y_scale", p->sy, &st), XE_OK);
    ref_set_int(o.node, "a_zero_point", p->za);
    ref_set_int(o.node, "b_zero_point", p->zb);
    ref_set_int(o.node, "y_zero_point", p->zy);
    cr_assert_eq(xe_node_set_dtype(o.node, "y_dtype", ty, &st), XE_OK);
    xe_tensor *y = ref_op_run(&o, in, 2, NULL, &st);
    cr_assert_not_null(y, "%s", st.msg);
    cr_assert_eq(y->dtype, ty);
    int64_t bad = 0, far = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        int32_t a = at(in[0], i), b = at(in[1], i), got = at(y, i);
        double exact = ((a - p->za) * (double)p->sa + (b - p->zb) * (double)p->sb) / p->sy + p->zy;
        double lo = ty == XE_U8 ? 0 : -128, hi = ty == XE_U8 ? 255 : 127;
        exact = exact < lo ? lo : exact > hi ? hi : exact;
        if (got != composition(a, b, p, ty) && bad++ == 0)
            first = i;
        far += fabs(got - exact) > 1.0;
    }
    cr_expect_eq(bad, 0, "%s + %s -> %s: %lld of %lld differ from the composition (first at %lld)",
                 xe_dtype_name(ta), xe_dtype_name(tb), xe_dtype_name(ty), (long long)bad,
                 (long long)n, (long long)first);
    cr_expect_eq(far, 0, "%lld outputs more than a step from the exact sum", (long long)far);
    xe_tensor_release(y);
    xe_tensor_release(in[0]);
    xe_tensor_release(in[1]);
    ref_op_free(&o);
}

Test(quant_add, is_its_composition_bit_for_bit)
{
    static const xe_dtype d[2] = {XE_U8, XE_I8};
    params ties = {0.25f, 0.5f, 0.5f, 0, 0, 0}, plain = {0.0137f, 0.021f, 0.0291f, 0, 0, 0};
    for (int i = 0; i < 8; i++) {
        xe_dtype ta = d[i & 1], tb = d[i >> 1 & 1], ty = d[i >> 2];
        ties.za = ta == XE_U8 ? 128 : -3, ties.zb = tb == XE_U8 ? 3 : 7;
        ties.zy = ty == XE_U8 ? 10 : -5;
        plain.za = ta == XE_U8 ? 100 : 5, plain.zb = tb == XE_U8 ? 250 : -128;
        plain.zy = ty == XE_U8 ? 128 : 0;
        check(ta, tb, ty, &ties);
        check(ta, tb, ty, &plain);
    }
}

Test(quant_add, refuses_bad_operands_and_attributes)
{
    xe_type u8 = {XE_U8, {2, {3, 4}}}, i8 = {XE_I8, {2, {3, 4}}};
    struct {
        xe_type a, b;
        const char *zero, *part;
        bool no_scales;
    } bad[] = {
        {{XE_F32, {2, {3, 4}}}, u8, NULL, "a must be u8 or i8", false},
        {u8, {XE_I32, {2, {3, 4}}}, NULL, "b must be u8 or i8", false},
        {u8, {XE_U8, {2, {1, 4}}}, NULL, "one shape (no broadcasting)", false},
        {u8, i8, NULL, "a_scale must be a positive normal float", true},
        {u8, i8, "a_zero_point", "a_zero_point must be an integer in [0, 255]", false},
        {u8, i8, "b_zero_point", "b_zero_point must be an integer in [-128, 127]", false},
        {u8, i8, "y_zero_point", "y_zero_point must be an integer in [0, 255]", false},
    };
    xe_status st;
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        xe_type in[2] = {bad[k].a, bad[k].b};
        ref_op o;
        ref_op_new_types(&o, XE_OP_QUANT_ADD, in, 2);
        if (!bad[k].no_scales)
            for (int s = 0; s < 3; s++)
                cr_assert_eq(xe_node_set_float(o.node, (const char *[]){"a_scale", "b_scale",
                                                                        "y_scale"}[s],
                                               0.5, &st),
                             XE_OK);
        if (bad[k].zero)
            ref_set_int(o.node, bad[k].zero, 300);
        ref_expect_infer_error(&o, bad[k].part);
        ref_op_free(&o);
    }
    xe_type in[2] = {u8, i8};
    ref_op o;
    ref_op_new_types(&o, XE_OP_QUANT_ADD, in, 2);
    cr_assert_eq(xe_node_set_float(o.node, "a_scale", 0.5, &st), XE_OK);
    cr_assert_eq(xe_node_set_float(o.node, "b_scale", 0.5, &st), XE_OK);
    cr_assert_eq(xe_node_set_float(o.node, "y_scale", 1e-40, &st), XE_OK);
    ref_expect_infer_error(&o, "y_scale must be a positive normal float");
    cr_assert_eq(xe_node_set_float(o.node, "y_scale", 0.5, &st), XE_OK);
    cr_assert_eq(xe_node_set_dtype(o.node, "y_dtype", XE_F32, &st), XE_OK);
    ref_expect_infer_error(&o, "y_dtype must be u8 or i8");
    ref_op_free(&o);
}
