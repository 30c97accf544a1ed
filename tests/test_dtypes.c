/*
 * The narrow dtypes (u8 i8 i16 u16 u32 u64 bf16, xlac/dtype.h): cast both
 * ways with its edges (integers wrap, floats truncate and saturate, NaN
 * gives 0, bf16 rounds to nearest even), floor division and wrap-around of
 * the integer arithmetic, comparisons, ops that refuse them as unsupported,
 * .npy round trips and headers, .xg names and literals, and a graph over
 * u8 and i16 values run clustered (XLAC_AUTO_JIT=2) against op by op.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/ref.h"
#include "support/tmpdir.h"
#include "xlac/io.h"
#include "xlac/xlac.h"

static xe_status st;

#define LEN(a) ((int)(sizeof(a) / sizeof *(a)))

/* A rank-1 tensor of n raw values of dtype dt. */
static xe_tensor *raw_tensor(xe_dtype dt, const void *vals, int64_t n)
{
    xe_shape s = ref_shape(1, (int64_t[]){n});
    xe_tensor *t = xe_tensor_new(dt, &s, XE_DEV_CPU, &st);
    cr_assert_not_null(t, "%s", st.msg);
    memcpy(t->data, vals, (size_t)n * xe_dtype_size(dt));
    return t;
}

/* Runs a two-operand op on a and b; NULL with st set when it is refused. */
static xe_tensor *run2(int op, xe_tensor *a, xe_tensor *b)
{
    xe_tensor *in[2] = {a, b};
    ref_op o;
    ref_op_new(&o, op, in, 2);
    xe_tensor *r = ref_op_run(&o, in, 2, NULL, &st);
    ref_op_free(&o);
    return r;
}

static xe_tensor *run1(int op, xe_tensor *a)
{
    ref_op o;
    ref_op_new(&o, op, &a, 1);
    xe_tensor *r = ref_op_run(&o, &a, 1, NULL, &st);
    ref_op_free(&o);
    return r;
}

Test(dtypes, names_sizes_and_parse)
{
    static const struct {
        xe_dtype dt;
        const char *name;
        size_t size;
    } want[] = {{XE_U8, "u8", 1},   {XE_I8, "i8", 1},   {XE_I16, "i16", 2}, {XE_U16, "u16", 2},
                {XE_U32, "u32", 4}, {XE_U64, "u64", 8}, {XE_BF16, "bf16", 2}};
    for (int k = 0; k < LEN(want); k++) {
        xe_dtype got;
        cr_assert_str_eq(xe_dtype_name(want[k].dt), want[k].name);
        cr_assert_eq(xe_dtype_size(want[k].dt), want[k].size);
        cr_assert(xe_dtype_parse(want[k].name, strlen(want[k].name), &got) && got == want[k].dt);
        cr_assert(xe_dtype_is_narrow(want[k].dt));
    }
    xe_dtype d;
    cr_assert(!xe_dtype_parse("u", 1, &d) && !xe_dtype_parse("u80", 3, &d) && !xe_dtype_parse("bf", 2, &d));
    cr_assert(!xe_dtype_parse(NULL, 0, &d));
    cr_assert(xe_dtype_is_float(XE_BF16) && !xe_dtype_is_integer(XE_BF16));
    cr_assert(xe_dtype_is_integer(XE_U64) && xe_dtype_is_unsigned(XE_U64) && !xe_dtype_is_int(XE_U8));
    cr_assert(!xe_dtype_is_narrow(XE_F32) && !xe_dtype_is_narrow(XE_BOOL));
}

/* bf16 from f32: round to nearest even at bit 16, NaN stays NaN, overflow to infinity. */
Test(dtypes, bf16_rounds_to_nearest_even)
{
    static const struct {
        uint32_t f32;
        uint16_t bf16;
    } cases[] = {
        {0x3f800000u, 0x3f80}, /* 1.0 exactly */
        {0x3f808000u, 0x3f80}, /* a tie, even below: down */
        {0x3f818000u, 0x3f82}, /* a tie, odd below: up */
        {0x3f808001u, 0x3f81}, /* above the tie: up */
        {0x3f807fffu, 0x3f80}, /* below the tie: down */
        {0x7f7fffffu, 0x7f80}, /* the largest float rounds to infinity */
        {0xff800000u, 0xff80}, /* -inf */
        {0x80000000u, 0x8000}, /* -0 */
        {0x00000001u, 0x0000}, /* the smallest subnormal rounds to 0 */
    };
    for (int k = 0; k < LEN(cases); k++) {
        float f;
        memcpy(&f, &cases[k].f32, 4);
        cr_assert_eq(xe_f32_to_bf16(f), cases[k].bf16, "0x%08x: got 0x%04x, want 0x%04x", cases[k].f32,
                     xe_f32_to_bf16(f), cases[k].bf16);
    }
    uint16_t nan = xe_f32_to_bf16(NAN);
    cr_assert(isnan(xe_bf16_to_f32(nan)), "NaN stays NaN (got 0x%04x)", nan);
    uint32_t snan = 0x7f800001u; /* a payload only in the low half: must not become infinity */
    float fs;
    memcpy(&fs, &snan, 4);
    cr_assert(isnan(xe_bf16_to_f32(xe_f32_to_bf16(fs))));
    /* every bf16 is exact in f32: f32 -> bf16 -> f32 -> bf16 is the identity */
    for (uint32_t b = 0; b < 0x10000u; b++) {
        float v = xe_bf16_to_f32((uint16_t)b);
        if (!isnan(v))
            cr_assert_eq(xe_f32_to_bf16(v), b, "bf16 0x%04x", b);
    }
}

/* Cast from f32: truncate toward zero, saturate at the type's ends, NaN gives 0. */
Test(dtypes, cast_float_to_narrow_saturates)
{
    static const float src[] = {-1e30f, -129.7f, -128.0f, -1.9f, -0.5f, 0.0f, 1.9f, 127.9f, 255.5f,
                                256.0f, 70000.0f, 5e9f, 1e30f, NAN, INFINITY, -INFINITY};
    static const double want[][16] = {
        /* u8 */ {0, 0, 0, 0, 0, 0, 1, 127, 255, 255, 255, 255, 255, 0, 255, 0},
        /* i8 */ {-128, -128, -128, -1, 0, 0, 1, 127, 127, 127, 127, 127, 127, 0, 127, -128},
        /* i16 */ {-32768, -129, -128, -1, 0, 0, 1, 127, 255, 256, 32767, 32767, 32767, 0, 32767, -32768},
        /* u16 */ {0, 0, 0, 0, 0, 0, 1, 127, 255, 256, 65535, 65535, 65535, 0, 65535, 0},
        /* u32 */ {0, 0, 0, 0, 0, 0, 1, 127, 255, 256, 70000, 4294967295.0, 4294967295.0, 0, 4294967295.0, 0},
        /* u64 */ {0, 0, 0, 0, 0, 0, 1, 127, 255, 256, 70000, 5e9, 18446744073709551615.0, 0,
                   18446744073709551615.0, 0},
    };
    static const xe_dtype to[] = {XE_U8, XE_I8, XE_I16, XE_U16, XE_U32, XE_U64};
    xe_tensor *s = raw_tensor(XE_F32, src, LEN(src));
    for (int t = 0; t < LEN(to); t++) {
        xe_tensor *r = ref_cast(s, to[t]);
        for (int i = 0; i < LEN(src); i++) {
            double got = to[t] == XE_U64 ? (double)((const uint64_t *)r->data)[i] : xe_load_f64(r->data, to[t], i);
            cr_assert_eq(got, want[t][i], "cast f32 %g to %s: got %.17g, want %.17g", src[i],
                         xe_dtype_name(to[t]), got, want[t][i]);
        }
        xe_tensor_release(r);
    }
    xe_tensor_release(s);
}

/* Integer to integer keeps the low bits (numpy's astype); to bool is x != 0. */
Test(dtypes, cast_integers_wrap)
{
    static const int64_t src[] = {-1, 255, 256, -129, 65535, 65536, 4294967297LL, INT64_MIN};
    xe_tensor *s = raw_tensor(XE_I64, src, LEN(src));
    static const xe_dtype to[] = {XE_U8, XE_I8, XE_I16, XE_U16, XE_U32, XE_U64, XE_BOOL};
    for (int t = 0; t < LEN(to); t++) {
        xe_tensor *r = ref_cast(s, to[t]);
        for (int i = 0; i < LEN(src); i++) {
            uint64_t v = (uint64_t)src[i], got = 0, want;
            memcpy(&got, (const char *)r->data + (size_t)i * xe_dtype_size(to[t]), xe_dtype_size(to[t]));
            want = to[t] == XE_BOOL ? v != 0 : xe_dtype_size(to[t]) == 8 ? v : v & ((1ull << (8 * xe_dtype_size(to[t]))) - 1);
            cr_assert_eq(got, want, "cast i64 %lld to %s: got 0x%llx, want 0x%llx", (long long)src[i],
                         xe_dtype_name(to[t]), (unsigned long long)got, (unsigned long long)want);
        }
        xe_tensor_release(r);
    }
    xe_tensor_release(s);
    /* and back: narrow signed values sign-extend, unsigned ones zero-extend */
    int8_t i8[] = {-128, -1, 127};
    uint64_t u64[] = {UINT64_MAX, 1ull << 63, 7};
    xe_tensor *a = raw_tensor(XE_I8, i8, 3), *b = raw_tensor(XE_U64, u64, 3);
    xe_tensor *ra = ref_cast(a, XE_I64), *rb = ref_cast(b, XE_I64), *rf = ref_cast(b, XE_F64);
    const int64_t *pa = ra->data, *pb = rb->data;
    cr_assert(pa[0] == -128 && pa[1] == -1 && pa[2] == 127);
    cr_assert(pb[0] == -1 && pb[1] == INT64_MIN && pb[2] == 7);
    cr_assert_eq(((const double *)rf->data)[0], 18446744073709551615.0); /* unsigned, not -1 */
    cr_assert_eq(((const double *)rf->data)[1], 9223372036854775808.0);
    xe_tensor *all[] = {a, b, ra, rb, rf};
    for (int k = 0; k < LEN(all); k++)
        xe_tensor_release(all[k]);
}

/* Every value of each 8- and 16-bit type survives a round trip through f32, f64, i32, i64 and bf16's range. */
Test(dtypes, cast_round_trips)
{
    static const xe_dtype narrow[] = {XE_U8, XE_I8, XE_I16, XE_U16};
    static const xe_dtype wide[] = {XE_F32, XE_F64, XE_I32, XE_I64, XE_U32, XE_U64};
    for (int n = 0; n < LEN(narrow); n++) {
        int64_t count = xe_dtype_size(narrow[n]) == 1 ? 256 : 65536;
        xe_shape s = ref_shape(1, &count);
        xe_tensor *x = xe_tensor_new(narrow[n], &s, XE_DEV_CPU, &st);
        cr_assert_not_null(x);
        for (int64_t i = 0; i < count; i++)
            memcpy((char *)x->data + i * (int64_t)xe_dtype_size(narrow[n]), &(uint16_t){(uint16_t)i},
                   xe_dtype_size(narrow[n]));
        for (int w = 0; w < LEN(wide); w++) {
            bool is_signed = narrow[n] == XE_I8 || narrow[n] == XE_I16;
            if (is_signed && (wide[w] == XE_U32 || wide[w] == XE_U64))
                continue; /* negative values wrap there: cast_integers_wrap */
            xe_tensor *y = ref_cast(x, wide[w]), *z = ref_cast(y, narrow[n]);
            cr_assert(!memcmp(x->data, z->data, x->nbytes), "%s -> %s -> %s changed a value",
                      xe_dtype_name(narrow[n]), xe_dtype_name(wide[w]), xe_dtype_name(narrow[n]));
            xe_tensor_release(y);
            xe_tensor_release(z);
        }
        xe_tensor_release(x);
    }
    /* bf16 -> f32 -> bf16 is exact; f32 -> bf16 rounds as xe_f32_to_bf16 */
    float f[] = {1.0f, 3.14159265f, -2.5e-3f, 65504.0f, 1.00390625f, NAN};
    xe_tensor *a = raw_tensor(XE_F32, f, LEN(f));
    xe_tensor *b = ref_cast(a, XE_BF16), *c = ref_cast(b, XE_F32), *d = ref_cast(c, XE_BF16);
    for (int i = 0; i < LEN(f); i++) {
        uint16_t bits = ((const uint16_t *)b->data)[i];
        cr_assert_eq(bits, xe_f32_to_bf16(f[i]));
        cr_assert_eq(((const uint16_t *)d->data)[i], bits);
    }
    cr_assert_eq(((const uint16_t *)b->data)[4], 0x3f80); /* 1 + 2^-8: a tie, rounds to even 1.0 */
    xe_tensor *all[] = {a, b, c, d};
    for (int k = 0; k < LEN(all); k++)
        xe_tensor_release(all[k]);
}

/* div floors (the graph's div; the ONNX importer builds ONNX's truncation from it), x / 0 is 0. */
Test(dtypes, integer_division_and_wrap)
{
    int8_t a8[] = {7, -7, 7, -7, -128, 100, 5};
    int8_t b8[] = {2, 2, -2, -2, -1, 0, 3};
    int8_t q8[] = {3, -4, -4, 3, -128, 0, 1}; /* floor; -128 / -1 wraps, as numpy's does */
    xe_tensor *a = raw_tensor(XE_I8, a8, 7), *b = raw_tensor(XE_I8, b8, 7);
    xe_tensor *q = run2(XE_OP_DIV, a, b);
    cr_assert_not_null(q, "%s", st.msg);
    cr_assert(!memcmp(q->data, q8, 7), "i8 floor division");
    xe_tensor *s = run2(XE_OP_ADD, a, a); /* 100 + 100 wraps to -56, -128 + -128 to 0 */
    cr_assert_eq(((const int8_t *)s->data)[5], -56);
    cr_assert_eq(((const int8_t *)s->data)[4], 0);
    xe_tensor *all[] = {a, b, q, s};
    for (int k = 0; k < LEN(all); k++)
        xe_tensor_release(all[k]);

    uint64_t x64[] = {UINT64_MAX, 1ull << 63, 10, 3};
    uint64_t y64[] = {2, 3, 0, UINT64_MAX};
    xe_tensor *x = raw_tensor(XE_U64, x64, 4), *y = raw_tensor(XE_U64, y64, 4);
    xe_tensor *d = run2(XE_OP_DIV, x, y), *m = run2(XE_OP_MUL, x, y), *lt = run2(XE_OP_LESS, x, y);
    const uint64_t *pd = d->data, *pm = m->data;
    const uint8_t *pl = lt->data;
    cr_assert(pd[0] == UINT64_MAX / 2 && pd[1] == (1ull << 63) / 3 && pd[2] == 0 && pd[3] == 0);
    cr_assert(pm[0] == UINT64_MAX * 2 && pm[2] == 0); /* wraps modulo 2^64 */
    cr_assert(!pl[0] && !pl[1] && !pl[2] && pl[3], "u64 compares unsigned");
    xe_tensor *n = run1(XE_OP_NEG, x);
    cr_assert_eq(((const uint64_t *)n->data)[2], 0 - (uint64_t)10);
    xe_tensor *all2[] = {x, y, d, m, lt, n};
    for (int k = 0; k < LEN(all2); k++)
        xe_tensor_release(all2[k]);

    uint16_t u16a[] = {65535, 300, 2}, u16b[] = {65535, 7, 3};
    xe_tensor *ua = raw_tensor(XE_U16, u16a, 3), *ub = raw_tensor(XE_U16, u16b, 3);
    xe_tensor *um = run2(XE_OP_MUL, ua, ub), *ud = run2(XE_OP_DIV, ua, ub), *us = run2(XE_OP_SUB, ub, ua);
    cr_assert_eq(((const uint16_t *)um->data)[0], (uint16_t)(65535u * 65535u));
    cr_assert_eq(((const uint16_t *)ud->data)[1], 42);
    cr_assert_eq(((const uint16_t *)us->data)[1], (uint16_t)(7 - 300));
    cr_assert_eq(((const uint16_t *)us->data)[2], 1);
    xe_tensor *all3[] = {ua, ub, um, ud, us};
    for (int k = 0; k < LEN(all3); k++)
        xe_tensor_release(all3[k]);
}

/* bf16 arithmetic computes in f32 and rounds once. */
Test(dtypes, bf16_arithmetic_rounds_once)
{
    uint16_t a[] = {xe_f32_to_bf16(1.0f), xe_f32_to_bf16(3.0f)};
    uint16_t b[] = {xe_f32_to_bf16(0.00390625f), xe_f32_to_bf16(7.0f)};
    xe_tensor *x = raw_tensor(XE_BF16, a, 2), *y = raw_tensor(XE_BF16, b, 2);
    xe_tensor *s = run2(XE_OP_ADD, x, y), *d = run2(XE_OP_DIV, x, y);
    cr_assert_not_null(s, "%s", st.msg);
    cr_assert_eq(((const uint16_t *)s->data)[0], 0x3f80); /* 1 + 2^-8 ties to even: 1 */
    cr_assert_eq(((const uint16_t *)d->data)[1], xe_f32_to_bf16(3.0f / 7.0f));
    xe_tensor *e = run1(XE_OP_EXP, x);
    cr_assert_not_null(e, "%s", st.msg);
    cr_assert_eq(((const uint16_t *)e->data)[0], xe_f32_to_bf16(expf(1.0f)));
    xe_tensor *all[] = {x, y, s, d, e};
    for (int k = 0; k < LEN(all); k++)
        xe_tensor_release(all[k]);
}

/* Ops without a kernel for a narrow dtype are refused as unsupported (never computed wrong). */
Test(dtypes, other_ops_refuse_as_unsupported)
{
    uint8_t v[] = {1, 2, 3, 4};
    xe_tensor *x = raw_tensor(XE_U8, v, 4);
    int ops[] = {XE_OP_REDUCE_SUM, XE_OP_ARGMAX, XE_OP_REDUCE_MAX, XE_OP_UNIQUE};
    for (int k = 0; k < LEN(ops); k++) {
        ref_op o;
        ref_op_new(&o, ops[k], &x, 1);
        xe_node_set_ints(o.node, "axes", (int64_t[]){0}, 1, &st);
        cr_assert_eq(ref_op_infer(&o, &st), XE_ERR_UNSUPPORTED, "%s on u8: %s", xe_op_name(ops[k]), st.msg);
        cr_assert(strstr(st.msg, "u8"), "%s", st.msg);
        ref_op_free(&o);
    }
    uint64_t w[] = {2, 3};
    xe_tensor *y = raw_tensor(XE_U64, w, 2);
    cr_assert_null(run2(XE_OP_POW, y, y));
    cr_assert_eq(st.code, XE_ERR_UNSUPPORTED, "%s", st.msg);
    xe_tensor_release(x);
    xe_tensor_release(y);
}

static void make_tmp(void)
{
    xt_tmp_make("/tmp/xlac_dtypes_XXXXXX");
}

/* Every narrow dtype: written with numpy's descr, read back bit for bit. */
Test(dtypes, npy_round_trip_and_descrs, .init = make_tmp, .fini = xt_tmp_fini)
{
    static const struct {
        xe_dtype dt;
        const char *descr;
    } want[] = {{XE_U8, "'|u1'"},  {XE_I8, "'|i1'"},  {XE_I16, "'<i2'"}, {XE_U16, "'<u2'"},
                {XE_U32, "'<u4'"}, {XE_U64, "'<u8'"}, {XE_BF16, "'<V2'"}};
    for (int k = 0; k < LEN(want); k++) {
        xe_shape s = ref_shape(2, (int64_t[]){3, 5});
        xe_tensor *t = xe_tensor_new(want[k].dt, &s, XE_DEV_CPU, &st);
        for (size_t i = 0; i < t->nbytes; i++)
            ((uint8_t *)t->data)[i] = (uint8_t)(i * 37 + 11);
        cr_assert_eq(xe_npy_write(xt_path("a.npy"), t, &st), XE_OK, "%s", st.msg);
        char head[128];
        xt_read_head(xt_path("a.npy"), head, sizeof head);
        cr_assert(strstr(head + 10, want[k].descr), "%s: header %s", xe_dtype_name(want[k].dt), head + 10);
        xe_tensor *r = xe_npy_read(xt_path("a.npy"), &st);
        cr_assert_not_null(r, "%s", st.msg);
        cr_assert_eq(r->dtype, want[k].dt);
        cr_assert(!memcmp(r->data, t->data, t->nbytes));
        xe_tensor_release(r);
        xe_tensor_release(t);
    }
}

/* A header naming a type that is not one: refused with the file named, never read. */
Test(dtypes, npy_refuses_unknown_descrs, .init = make_tmp, .fini = xt_tmp_fini)
{
    static const char *bad[] = {"|u3", "<u16", "|V2", "<V4", "u1", "|i1x", "<b2", "<i1", ""};
    for (int k = 0; k < LEN(bad); k++) {
        char hdr[128];
        int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (2,), }", bad[k]);
        while (n < 117)
            hdr[n++] = ' ';
        hdr[n++] = '\n';
        FILE *f = fopen(xt_path("b.npy"), "wb");
        cr_assert_not_null(f);
        fwrite("\x93NUMPY\x01\x00", 1, 8, f);
        uint16_t len = (uint16_t)n;
        fwrite(&len, 2, 1, f);
        fwrite(hdr, 1, (size_t)n, f);
        fwrite("\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 1, 16, f);
        fclose(f);
        cr_assert_null(xe_npy_read(xt_path("b.npy"), &st), "descr '%s' was accepted", bad[k]);
        cr_assert(strstr(st.msg, "b.npy"), "%s", st.msg);
    }
}

/* .xg literals of the narrow types: range-checked, written back as read. */
Test(dtypes, xg_literals)
{
    xe_graph *g = xe_parse_string("xlac.graph v1\n"
                                  "input x: u8[3]\n"
                                  "c = const(u8[3], [0, 255, 7])\n"
                                  "d = const(u64[], 9223372036854775807)\n"
                                  "e = const(bf16[2], [1.5, -2])\n"
                                  "y = add(x, c)\n"
                                  "output y\noutput d\noutput e\n",
                                  "lit.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_graph_destroy(g);
    static const char *bad[] = {"const(u8[1], [256])", "const(u16[1], [-1])", "const(i8[1], [128])",
                                "const(i16[1], [1.5])", "const(bf16[1], [1e39])", "const(u32[], 4294967296)"};
    for (int k = 0; k < LEN(bad); k++) {
        char text[256];
        snprintf(text, sizeof text, "xlac.graph v1\nc = %s\noutput c\n", bad[k]);
        cr_assert_null(xe_parse_string(text, "bad.xg", &st), "%s was accepted", bad[k]);
        cr_assert(strstr(st.msg, "out of range") || strstr(st.msg, "not an integer"), "%s: %s", bad[k], st.msg);
    }
}

/* A graph over u8 and i16 values, clustered (XLAC_AUTO_JIT=2) and op by op: the same outputs. */
Test(dtypes, clustered_matches_op_by_op, .init = make_tmp, .fini = xt_tmp_fini, .timeout = 120)
{
    xt_write_file(xt_path("g.xg"), "xlac.graph v1\n"
                                   "input x: u8[4,8]\n"
                                   "input y: i16[4,8]\n"
                                   "input f: f32[4,8]\n"
                                   "a = add(x, x)\n"
                                   "b = cast(a, to=i16)\n"
                                   "c = mul(b, y)\n"
                                   "d = div(c, y)\n"
                                   "e = cast(d, to=f32)\n"
                                   "g = mul(e, f)\n"
                                   "h = tanh(g)\n"
                                   "k = cast(h, to=u8)\n"
                                   "m = greater(x, k)\n"
                                   "n = select(m, a, k)\n"
                                   "t = transpose(n, perm=[1,0])\n"
                                   "output h\noutput t\noutput d\n");
    const char *argv[] = {XLAC_BINARY_DIR "/bin/xlac-run", xt_path("g.xg"), "--seed", "5", "--print-outputs", NULL};
    const char *env[] = {"XLAC_AUTO_JIT=2", NULL};
    xt_result plain = xt_run_in(xt_tmp, false, NULL, argv);
    xt_result jit = xt_run_in(xt_tmp, true, env, argv);
    cr_assert_eq(plain.rc, 0, "%s", plain.err);
    cr_assert_eq(jit.rc, 0, "%s", jit.err);
    cr_assert_str_eq(jit.out, plain.out);
    cr_assert(strstr(plain.out, "t"), "%s", plain.out);
    xt_result_free(&plain);
    xt_result_free(&jit);
}
