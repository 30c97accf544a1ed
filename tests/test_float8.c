/*
 * The low-precision storage dtypes (executor/ir/lowp.c) against references
 * written here from ONNX's definitions, in double:
 * - every bit pattern of each float8 kind (and of float4 e2m1, and e8m0) decodes to the value its fields
 *   say (the reference spells each kind out: bias, NaN, inf), and encodes
 *   back to itself (NaN to a NaN of the kind);
 * - encoding rounds to nearest, ties to even: every midpoint between
 *   neighbours goes to the even one, a hair either side to the nearer, and
 *   random doubles go where a brute-force nearest search says;
 * - at the edges: the largest finite value, the tie above it, inf and NaN
 *   with saturate on and off, -0 and tiny negatives (no -0 in the fnuz
 *   kinds);
 * - the 4- and 2-bit integers wrap and sign-extend, and pack two (four) to
 *   a byte, low bits first, as ONNX does;
 * - importing a packed int4 TensorProto: an odd count takes its last
 *   half-byte, data short of the dims (raw_data or int32_data) is an error
 *   naming the tensor, in a .pb file and as a model's initializer.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/xlac.h"
#include "support/pb.h"
#include "support/tmpdir.h"

static const xe_dtype kinds[4] = {XE_F8E4M3FN, XE_F8E4M3FNUZ, XE_F8E5M2, XE_F8E5M2FNUZ};

/* The reference: ONNX's table of the four kinds, decoded field by field. */
typedef struct ref_kind {
    int ebits, mbits, bias;
    int nan_kind; /* 0: S.1111.111 (e4m3fn), 1: exponent all ones (e5m2, IEEE), 2: 0x80 (fnuz) */
    double max, min_sub;
} ref_kind;

static ref_kind ref_of(xe_dtype dt)
{
    switch (dt) {
    case XE_F8E4M3FN: return (ref_kind){4, 3, 7, 0, 448.0, 0x1p-9};
    case XE_F8E4M3FNUZ: return (ref_kind){4, 3, 8, 2, 240.0, 0x1p-10};
    case XE_F8E5M2: return (ref_kind){5, 2, 15, 1, 57344.0, 0x1p-16};
    default: return (ref_kind){5, 2, 16, 2, 57344.0, 0x1p-17};
    }
}

static bool ref_is_nan(int b, const ref_kind *k)
{
    int e = (b >> k->mbits) & ((1 << k->ebits) - 1), m = b & ((1 << k->mbits) - 1);
    if (k->nan_kind == 2)
        return b == 0x80;
    if (k->nan_kind == 0)
        return (b & 0x7f) == 0x7f;
    return e == (1 << k->ebits) - 1 && m != 0;
}

static double ref_decode(int b, const ref_kind *k)
{
    if (ref_is_nan(b, k))
        return NAN;
    int e = (b >> k->mbits) & ((1 << k->ebits) - 1), m = b & ((1 << k->mbits) - 1);
    double sign = b & 0x80 ? -1.0 : 1.0;
    if (k->nan_kind == 1 && e == (1 << k->ebits) - 1)
        return sign * INFINITY;
    double frac = (double)m / (double)(1 << k->mbits);
    double v = e == 0 ? frac * pow(2.0, 1 - k->bias) : (1.0 + frac) * pow(2.0, e - k->bias);
    return sign * v;
}

Test(float8, every_bit_pattern_decodes_and_round_trips)
{
    for (int q = 0; q < 4; q++) {
        xe_dtype dt = kinds[q];
        ref_kind k = ref_of(dt);
        for (int b = 0; b < 256; b++) {
            double want = ref_decode(b, &k), got = xe_f8_to_f64((uint8_t)b, dt);
            if (isnan(want)) {
                cr_assert(isnan(got), "%s 0x%02x: got %g, want NaN", xe_dtype_name(dt), b, got);
                cr_assert(isnan(xe_f8_to_f64(xe_f8_from_f64(got, dt, true), dt)));
                continue;
            }
            cr_assert(got == want && signbit(got) == signbit(want), "%s 0x%02x: got %a, want %a",
                      xe_dtype_name(dt), b, got, want);
            if (isinf(want)) /* inf goes to the largest finite value when saturating */
                cr_assert_eq(xe_f8_from_f64(want, dt, false), b, "%s 0x%02x", xe_dtype_name(dt), b);
            else
                cr_assert_eq(xe_f8_from_f64(want, dt, true), b, "%s 0x%02x: encodes to 0x%02x",
                             xe_dtype_name(dt), b, xe_f8_from_f64(want, dt, true));
            /* through f32 and f16, as Cast does: exact in both */
            cr_assert_eq(xe_f8_from_f64((double)(float)want, dt, false), b);
            if (!isinf(want))
                cr_assert_eq(xe_f8_from_f64(xe_f16_to_f32(xe_f32_to_f16((float)want)), dt, false), b);
        }
        cr_assert_eq(xe_f8_max(dt), k.max, "%s", xe_dtype_name(dt));
        cr_assert_eq(xe_f8_to_f64(1, dt), k.min_sub, "%s", xe_dtype_name(dt));
    }
}

/* The finite non-negative values of kind dt in increasing order, with their bits; returns the count. */
static int positives(xe_dtype dt, double *v, uint8_t *bits)
{
    int n = 0;
    for (int b = 0; b < 128; b++) {
        double x = xe_f8_to_f64((uint8_t)b, dt);
        if (isfinite(x)) {
            v[n] = x;
            bits[n++] = (uint8_t)b;
        }
    }
    for (int i = 1; i < n; i++) /* increasing with the bits already; check it */
        cr_assert_lt(v[i - 1], v[i]);
    return n;
}

/* Bits of the finite value nearest to x (x >= 0, at most the largest), ties to the even mantissa. */
static uint8_t nearest(const double *v, const uint8_t *bits, int n, double x)
{
    int best = 0;
    for (int i = 1; i < n; i++) {
        double d = fabs(v[i] - x), db = fabs(v[best] - x);
        if (d < db || (d == db && (bits[i] & 1) == 0))
            best = i;
    }
    return bits[best];
}

Test(float8, rounds_to_nearest_even)
{
    double v[128];
    uint8_t bits[128];
    uint64_t r = 0x9e3779b97f4a7c15u;
    for (int q = 0; q < 4; q++) {
        xe_dtype dt = kinds[q];
        int n = positives(dt, v, bits);
        for (int i = 0; i + 1 < n; i++) {
            double mid = (v[i] + v[i + 1]) / 2, even = (bits[i] & 1) == 0 ? v[i] : v[i + 1];
            cr_assert_eq(xe_f8_to_f64(xe_f8_from_f64(mid, dt, true), dt), even, "%s: %a goes to %a",
                         xe_dtype_name(dt), mid, even);
            cr_assert_eq(xe_f8_from_f64(nextafter(mid, 0), dt, true), bits[i]);
            cr_assert_eq(xe_f8_from_f64(nextafter(mid, INFINITY), dt, true), bits[i + 1]);
            uint8_t neg = xe_f8_from_f64(-mid, dt, true);
            cr_assert_eq(xe_f8_to_f64(neg, dt), -even, "%s: -%a", xe_dtype_name(dt), mid);
        }
        for (int t = 0; t < 20000; t++) { /* random values in range, against the brute-force search */
            r = r * 6364136223846793005u + 1442695040888963407u;
            double x = ldexp((double)(r >> 11) * 0x1p-53, (int)(r % 40) - 24) * v[n - 1] / 2;
            if (x > v[n - 1])
                continue;
            cr_assert_eq(xe_f8_from_f64(x, dt, true), nearest(v, bits, n, x), "%s: %a",
                         xe_dtype_name(dt), x);
        }
    }
}

Test(float8, saturates_or_overflows_at_the_edges)
{
    for (int q = 0; q < 4; q++) {
        xe_dtype dt = kinds[q];
        ref_kind k = ref_of(dt);
        uint8_t max = xe_f8_from_f64(k.max, dt, true);
        double quantum = ldexp(1.0, (int)floor(log2(k.max)) - k.mbits);
        double tie = k.max + quantum / 2; /* max's mantissa is all ones but in e4m3fn: its tie rounds up */
        bool tie_up = dt != XE_F8E4M3FN;
        const char *name = xe_dtype_name(dt);
        cr_assert_eq(xe_f8_from_f64(k.max, dt, false), max, "%s", name);
        cr_assert_eq(xe_f8_from_f64(tie, dt, true), max, "%s: the tie above max saturates", name);
        uint8_t over = xe_f8_from_f64(tie, dt, false), way = xe_f8_from_f64(1e30, dt, false);
        uint8_t inf = xe_f8_from_f64(INFINITY, dt, false), ninf = xe_f8_from_f64(-INFINITY, dt, false);
        double ov = xe_f8_to_f64(over, dt), wv = xe_f8_to_f64(way, dt);
        if (k.nan_kind == 1) { /* e5m2 has inf */
            cr_assert(isinf(ov) && ov > 0 && isinf(wv), "%s: %g %g", name, ov, wv);
            cr_assert(isinf(xe_f8_to_f64(inf, dt)) && xe_f8_to_f64(ninf, dt) < 0);
        } else {
            cr_assert(tie_up ? isnan(ov) : ov == k.max, "%s: the tie gives %g", name, ov);
            cr_assert(isnan(wv) && isnan(xe_f8_to_f64(inf, dt)) && isnan(xe_f8_to_f64(ninf, dt)), "%s", name);
        }
        cr_assert_eq(xe_f8_to_f64(xe_f8_from_f64(INFINITY, dt, true), dt), k.max, "%s", name);
        cr_assert_eq(xe_f8_to_f64(xe_f8_from_f64(-INFINITY, dt, true), dt), -k.max, "%s", name);
        cr_assert_eq(xe_f8_to_f64(xe_f8_from_f64(-1e30, dt, true), dt), -k.max, "%s", name);
        cr_assert(isnan(xe_f8_to_f64(xe_f8_from_f64(NAN, dt, true), dt)), "%s", name);
        cr_assert(isnan(xe_f8_to_f64(xe_f8_from_f64(-NAN, dt, false), dt)), "%s", name);
        /* -0 and what rounds to it: 0x80 where the kind has -0, else +0 (0x80 is the fnuz NaN) */
        uint8_t nz = k.nan_kind == 2 ? 0x00 : 0x80;
        cr_assert_eq(xe_f8_from_f64(-0.0, dt, true), nz, "%s", name);
        cr_assert_eq(xe_f8_from_f64(-k.min_sub / 2, dt, true), nz, "%s: a negative tie to zero", name);
        cr_assert_eq(xe_f8_from_f64(-1e-30, dt, false), nz, "%s", name);
        cr_assert_eq(xe_f8_from_f64(k.min_sub / 2 * 1.0000001, dt, true), 1, "%s", name);
    }
    /* the values ONNX's node tests write: e4m3fn 0x7f is NaN, e5m2 0x7c is inf */
    cr_assert(isnan(xe_f8_to_f64(0x7f, XE_F8E4M3FN)) && isnan(xe_f8_to_f64(0xff, XE_F8E4M3FN)));
    cr_assert_eq(xe_f8_to_f64(0x7c, XE_F8E5M2), INFINITY);
    cr_assert_eq(xe_f8_from_f64(1000000.0, XE_F8E4M3FN, true), 0x7e);
    cr_assert_eq(xe_f8_from_f64(-1000000.0, XE_F8E4M3FNUZ, true), 0xff);
}

Test(float8, load_and_store_go_through_the_kinds)
{
    uint8_t buf[4];
    for (int q = 0; q < 4; q++) {
        xe_store_f64(buf, kinds[q], 1, 1e9); /* xe_store_f64 saturates, as ONNX's Cast by default */
        cr_assert_eq(xe_load_f64(buf, kinds[q], 1), xe_f8_max(kinds[q]));
        xe_store_f64(buf, kinds[q], 2, -0.3);
        cr_assert_eq(xe_load_f64(buf, kinds[q], 2), xe_f8_to_f64(xe_f8_from_f64(-0.3, kinds[q], true), kinds[q]));
        cr_assert_eq(xe_dtype_size(kinds[q]), 1);
        cr_assert(xe_dtype_is_storage(kinds[q]) && !xe_dtype_is_float(kinds[q]) && !xe_dtype_is_integer(kinds[q]));
    }
}

Test(float8, float4_e2m1_has_sixteen_values_and_saturates)
{
    static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6}; /* ONNX's table, S.EE.M */
    for (int b = 0; b < 16; b++) {
        double want = b & 8 ? -mag[b & 7] : mag[b & 7], got = xe_f8_to_f64((uint8_t)b, XE_F4E2M1);
        cr_assert(got == want && signbit(got) == signbit(want), "0x%x: %g, want %g", b, got, want);
        cr_assert_eq(xe_f8_from_f64(want, XE_F4E2M1, false), b, "0x%x", b);
    }
    /* midpoints to the even mantissa: 0.25 0.75 1.25 1.75 2.5 3.5 5 */
    static const double mid[7] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5};
    static const uint8_t even[7] = {0x0, 0x2, 0x2, 0x4, 0x4, 0x6, 0x6};
    for (int i = 0; i < 7; i++) {
        cr_assert_eq(xe_f8_from_f64(mid[i], XE_F4E2M1, true), even[i], "%g", mid[i]);
        cr_assert_eq(xe_f8_from_f64(-mid[i], XE_F4E2M1, true), even[i] | 8, "-%g", mid[i]);
    }
    /* no inf, no NaN: beyond 6 saturates either way, NaN gives -0 (0x8) as ONNX's reference */
    cr_assert_eq(xe_f8_from_f64(6.9, XE_F4E2M1, false), 0x7);
    cr_assert_eq(xe_f8_from_f64(INFINITY, XE_F4E2M1, false), 0x7);
    cr_assert_eq(xe_f8_from_f64(-1e9, XE_F4E2M1, true), 0xf);
    cr_assert_eq(xe_f8_from_f64(NAN, XE_F4E2M1, true), 0x8);
    cr_assert_eq(xe_f8_from_f64(-0.0, XE_F4E2M1, true), 0x8);
    cr_assert_eq(xe_f8_from_f64(-0.2, XE_F4E2M1, true), 0x8);
    cr_assert_eq(xe_f8_max(XE_F4E2M1), 6);
    cr_assert_eq(xe_dtype_bits(XE_F4E2M1), 4);
    uint8_t packed = 0x7f, vals[2]; /* two values to a byte, the first in the low bits, no sign extension */
    xe_subbyte_unpack(&packed, 2, XE_F4E2M1, vals);
    cr_assert(vals[0] == 0xf && vals[1] == 0x7, "%x %x", vals[0], vals[1]);
}

Test(float8, e8m0_is_a_power_of_two_rounded_up)
{
    for (int b = 0; b < 255; b++) {
        cr_assert_eq(xe_f8_to_f64((uint8_t)b, XE_F8E8M0), ldexp(1.0, b - 127), "0x%02x", b);
        if (b > 0) /* 2^-127 is an f32 subnormal: the reference's f32 exponent field is 0, rounded up */
            cr_assert_eq(xe_f8_from_f64(ldexp(1.0, b - 127), XE_F8E8M0, true), b, "0x%02x", b);
    }
    cr_assert(isnan(xe_f8_to_f64(0xff, XE_F8E8M0)));
    cr_assert_eq(xe_f8_from_f64(ldexp(1.0, -127), XE_F8E8M0, true), 1);
    cr_assert_eq(xe_f8_from_f64(0.0, XE_F8E8M0, true), 0);
    cr_assert_eq(xe_f8_from_f64(1.1, XE_F8E8M0, true), 128);   /* up: 2 */
    cr_assert_eq(xe_f8_from_f64(0.124, XE_F8E8M0, true), 124); /* up: 0.125 */
    cr_assert_eq(xe_f8_from_f64(-2.0, XE_F8E8M0, true), 128);  /* no sign */
    cr_assert_eq(xe_f8_from_f64(INFINITY, XE_F8E8M0, true), 0xff);
    cr_assert_eq(xe_f8_from_f64(NAN, XE_F8E8M0, false), 0xff);
    cr_assert_eq(xe_f8_from_f64(ldexp(1.5, 127), XE_F8E8M0, true), 0xfe);  /* saturates */
    cr_assert_eq(xe_f8_from_f64(ldexp(1.5, 127), XE_F8E8M0, false), 0xff); /* else NaN */
    cr_assert_eq(xe_f8_max(XE_F8E8M0), ldexp(1.0, 127));
}

/* ---- the sub-byte integers ---------------------------------------------------------- */

Test(subbyte, wraps_and_sign_extends)
{
    for (int64_t v = -40; v <= 40; v++) {
        cr_assert_eq((int8_t)xe_subbyte_wrap(v, XE_I4), (int8_t)(((v % 16 + 16 + 8) % 16) - 8), "i4 %lld", (long long)v);
        cr_assert_eq(xe_subbyte_wrap(v, XE_U4), (uint8_t)((v % 16 + 16) % 16), "u4 %lld", (long long)v);
        cr_assert_eq((int8_t)xe_subbyte_wrap(v, XE_I2), (int8_t)(((v % 4 + 4 + 2) % 4) - 2), "i2 %lld", (long long)v);
        cr_assert_eq(xe_subbyte_wrap(v, XE_U2), (uint8_t)((v % 4 + 4) % 4), "u2 %lld", (long long)v);
    }
    cr_assert_eq(xe_dtype_bits(XE_I4), 4);
    cr_assert_eq(xe_dtype_bits(XE_U2), 2);
    cr_assert_eq(xe_dtype_bits(XE_F8E5M2), 8);
    uint8_t buf[2];
    xe_store_f64(buf, XE_I4, 0, -9.7); /* truncates to -9, wraps to 7, as numpy's astype */
    xe_store_f64(buf, XE_U4, 1, 17.0);
    cr_assert_eq(xe_load_f64(buf, XE_I4, 0), 7);
    cr_assert_eq(xe_load_f64(buf, XE_U4, 1), 1);
}

Test(subbyte, packs_low_bits_first)
{
    /* ONNX: [1, -2, 7] as int4 is 0xe1 0x07; as uint4 [15, 0, 3] is 0x0f 0x03 */
    uint8_t packed[2] = {0xe1, 0x07}, vals[4], back[2] = {0xaa, 0xaa};
    xe_subbyte_unpack(packed, 3, XE_I4, vals);
    cr_assert(vals[0] == 1 && (int8_t)vals[1] == -2 && vals[2] == 7);
    xe_subbyte_pack(vals, 3, XE_I4, back);
    cr_assert(back[0] == 0xe1 && back[1] == 0x07, "%02x %02x", back[0], back[1]);
    uint8_t p2[1] = {0xe4}; /* u2 [0, 1, 2, 3] */
    xe_subbyte_unpack(p2, 4, XE_U2, vals);
    cr_assert(vals[0] == 0 && vals[1] == 1 && vals[2] == 2 && vals[3] == 3);
    xe_subbyte_unpack(p2, 4, XE_I2, vals);
    cr_assert((int8_t)vals[2] == -2 && (int8_t)vals[3] == -1);
    for (int b = 0; b < 256; b++) { /* every byte round-trips in every sub-byte type */
        xe_dtype dts[4] = {XE_I4, XE_U4, XE_I2, XE_U2};
        for (int d = 0; d < 4; d++) {
            uint8_t one = (uint8_t)b, out = 0;
            int n = 8 / xe_dtype_bits(dts[d]);
            xe_subbyte_unpack(&one, n, dts[d], vals);
            xe_subbyte_pack(vals, n, dts[d], &out);
            cr_assert_eq(out, one, "%s 0x%02x", xe_dtype_name(dts[d]), b);
        }
    }
}

/* ---- importing packed tensors ---------------------------------------------------------- */

static xe_status st;

static void setup(void)
{
    xe_status_clear(&st);
    xt_tmp_make("/tmp/xlac-float8-XXXXXX");
}

/* TensorProto {dims [n], data_type, name, raw_data} into t. */
static void tensor(pb *t, const char *name, int dtype, int64_t n, const uint8_t *data, size_t len)
{
    pb_int(t, 1, (uint64_t)n);
    pb_int(t, 2, (uint64_t)dtype);
    pb_str(t, 8, name);
    pb_bytes(t, 9, data, len);
}

/* int32_data (field 5, packed varints) holding data's bytes one per entry. */
static void int32_data(pb *t, const uint8_t *data, size_t len)
{
    pb v = {0};
    for (size_t i = 0; i < len; i++) {
        uint8_t b = data[i];
        if (b < 0x80) {
            pb_raw(&v, &b, 1);
        } else {
            uint8_t two[2] = {(uint8_t)(b | 0x80), 1};
            pb_raw(&v, two, 2);
        }
    }
    pb_bytes(t, 5, v.b, v.n);
    free(v.b);
}

static xe_tensor *read_pb(const char *name, int dtype, int64_t n, const uint8_t *data, size_t len, bool raw)
{
    pb t = {0};
    if (raw) {
        tensor(&t, name, dtype, n, data, len);
    } else {
        pb_int(&t, 1, (uint64_t)n);
        pb_int(&t, 2, (uint64_t)dtype);
        pb_str(&t, 8, name);
        int32_data(&t, data, len);
    }
    pb_write_file(&t, xt_path("t.pb"));
    char *got_name = NULL;
    xe_tensor *x = xe_onnx_read_tensor(xt_path("t.pb"), &got_name, &st);
    free(got_name);
    return x;
}

Test(subbyte_import, odd_counts_take_the_last_half_byte, .init = setup, .fini = xt_tmp_fini)
{
    const uint8_t data[2] = {0xe1, 0x07};
    for (int raw = 0; raw < 2; raw++) {
        xe_tensor *x = read_pb("w", 22 /* INT4 */, 3, data, 2, raw);
        cr_assert_not_null(x, "%s", st.msg);
        cr_assert_eq(x->dtype, XE_I4);
        const int8_t *v = x->data;
        cr_assert(v[0] == 1 && v[1] == -2 && v[2] == 7, "%d %d %d", v[0], v[1], v[2]);
        xe_tensor_release(x);
        x = read_pb("w", 21 /* UINT4 */, 4, data, 2, raw);
        cr_assert_not_null(x, "%s", st.msg);
        const uint8_t *u = x->data;
        cr_assert(x->dtype == XE_U4 && u[0] == 1 && u[1] == 14 && u[2] == 7 && u[3] == 0);
        xe_tensor_release(x);
    }
}

Test(subbyte_import, short_data_is_refused_by_name, .init = setup, .fini = xt_tmp_fini)
{
    const uint8_t data[3] = {0x11, 0x22, 0x33};
    struct {
        int dtype;
        int64_t n;
        size_t len;
        bool raw;
    } bad[] = {
        {22, 5, 2, true},   /* 5 int4 need 3 bytes */
        {22, 5, 2, false},  /* ... or 3 int32_data entries */
        {21, 2, 2, true},   /* 2 uint4 need 1 byte, not 2 */
        {26, 9, 2, true},   /* 9 int2 need 3 bytes */
        {25, 1000, 0, true},
        {17, 3, 2, true},   /* float8: a byte each */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        xe_status_clear(&st);
        xe_tensor *x = read_pb("w4", bad[i].dtype, bad[i].n, data, bad[i].len, bad[i].raw);
        cr_assert_null(x, "case %zu read", i);
        cr_assert(strstr(st.msg, "t.pb") && (strstr(st.msg, "raw_data holds") || strstr(st.msg, "holds 2 values")),
                  "case %zu: %s", i, st.msg);
    }
}

/* A model whose initializer w (int4, n values, raw_data of len bytes) is cast to f32 as y. */
static void write_model(const char *path, int64_t n, const uint8_t *data, size_t len)
{
    pb g = {0}, m = {0}, opset = {0}, init = {0}, node = {0}, attr = {0}, vi = {0}, type = {0}, tt = {0};
    tensor(&init, "w", 22, n, data, len);
    pb_msg(&g, 5, &init);
    pb_str(&node, 1, "w");
    pb_str(&node, 2, "y");
    pb_str(&node, 3, "cast_w");
    pb_str(&node, 4, "Cast");
    pb_str(&attr, 1, "to");
    pb_int(&attr, 3, 1); /* i = FLOAT */
    pb_int(&attr, 20, 2); /* type = INT */
    pb_msg(&node, 5, &attr);
    pb_msg(&g, 1, &node);
    pb_int(&tt, 1, 1);
    pb_msg(&type, 1, &tt);
    pb_str(&vi, 1, "y");
    pb_msg(&vi, 2, &type);
    pb_msg(&g, 12, &vi);
    pb_str(&g, 2, "g");
    pb_int(&m, 1, 9);
    pb_int(&opset, 2, 21);
    pb_msg(&m, 8, &opset);
    pb_msg(&m, 7, &g);
    pb_write_file(&m, path);
}

Test(subbyte_import, an_initializer_short_of_its_dims_is_named, .init = setup, .fini = xt_tmp_fini)
{
    const uint8_t data[2] = {0xe1, 0x07};
    write_model(xt_path("ok.onnx"), 3, data, 2);
    xe_graph *g = xe_onnx_load(xt_path("ok.onnx"), NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_graph_destroy(g);
    write_model(xt_path("short.onnx"), 7, data, 2);
    xe_status_clear(&st);
    cr_assert_null(xe_onnx_load(xt_path("short.onnx"), NULL, &st));
    cr_assert(strstr(st.msg, "initializer 'w'") && strstr(st.msg, "raw_data holds 2 bytes, its dims need 4"),
              "%s", st.msg);
}
