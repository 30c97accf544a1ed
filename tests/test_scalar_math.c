/*
 * The f32 exp, log, tanh, erf, sigmoid and both gelus of scalar.h (the
 * CPU's vectorised math, shared by the per-op kernels and generated C)
 * against double precision references, in ulps of the float result.
 *
 * Every 257th float bit pattern (257 is odd, so the sweep visits every
 * exponent, both signs and mantissas of every parity: a few seconds in
 * all; XE_ULP_STRIDE=1 in the environment sweeps every float, for the
 * numbers in docs/numerics.md, about a minute a function) plus the special
 * values and the edges of each function's pieces. An error is measured in
 * ulps of the reference's binade; inf counts as 2^128, so a result that
 * overflows a little early or late is a finite distance. Where the
 * reference is below FLT_MIN (denormal or zero results) the tolerance is
 * FLT_MIN absolute instead. NaN must give NaN and only NaN. The largest
 * error found per function is logged for the notes.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "scalar.h"

#include <stdlib.h>

#ifndef MAX_ULP
#define MAX_ULP 2.0 /* test_scalar_math_fast.c: 3.5 under --fast_math's flags */
#endif
#define STRIDE 257u

/* The sweep's step: STRIDE, or XE_ULP_STRIDE from the environment (1: every float). */
static uint64_t stride(void)
{
    const char *s = getenv("XE_ULP_STRIDE");
    long v = s ? strtol(s, NULL, 10) : 0;
    return v > 0 ? (uint64_t)v : STRIDE;
}

typedef float (*f32_fn)(float);
typedef double (*ref_fn)(double);

/* The worst case of one sweep. */
typedef struct worst {
    double ulp; /* largest ulp error over normal results */
    float at;   /* where */
    long fails; /* values outside the bounds */
} worst;

static double ref_exp(double x)
{
    return exp(x);
}
static double ref_log(double x)
{
    return log(x);
}
static double ref_erf(double x)
{
    return erf(x);
}
/* 0.5 x (1 + erf(x / sqrt 2)) written with erfc: no cancellation for x < 0. */
static double ref_gelu_erf(double x)
{
    return 0.5 * x * erfc(-x * 0.70710678118654752440);
}
static double ref_softplus(double x)
{
    return (x > 0 ? x : 0) + log1p(exp(-fabs(x)));
}
static double ref_expm1(double x)
{
    return x > 0 ? x : expm1(x);
}
static float elu_1(float x)
{
    return xe_elu_f32(x, 1.0f);
}
static double ref_tanh(double x)
{
    return tanh(x);
}
static double ref_sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}
/* 0.5 x (1 + tanh u) written as x / (1 + exp(-2u)): no cancellation for x < 0. */
static double ref_gelu_tanh(double x)
{
    double u = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

static float bits_to_f32(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* Error of got against ref in ulps of ref's binade; < 0 when ref is below FLT_MIN. */
static double ulp_error(float got, double ref)
{
    double g = isinf(got) ? copysign(0x1p128, got) : (double)got;
    double r = fabs(ref) > 0x1p128 ? copysign(0x1p128, ref) : ref;
    if (fabs(r) < FLT_MIN)
        return -1.0;
    int e;
    frexp(r, &e); /* |r| = m 2^e, m in [0.5, 1): a float ulp there is 2^(e - 24) */
    return fabs(g - r) / ldexp(1.0, e - 24);
}

/* Checks one value, folding it into w; reports the first few failures. */
static void check(const char *name, f32_fn f, ref_fn ref, float x, worst *w)
{
    float got = f(x);
    double want = ref((double)x);
    bool ok;
    if (isnan(want) || isnan(got)) {
        ok = isnan(want) && isnan(got);
    } else {
        double u = ulp_error(got, want);
        if (u < 0) {
            ok = fabs((double)got - want) <= FLT_MIN;
        } else {
            ok = u <= MAX_ULP;
            if (u > w->ulp) {
                w->ulp = u;
                w->at = x;
            }
        }
    }
    if (!ok && w->fails++ < 5)
        cr_log_error("%s(%a) = %a, want %a", name, (double)x, (double)got, want);
}

/* Specials, and the values either side of every edge of the functions' pieces. */
static const float edges[] = {
    0.0f,
    FLT_MIN,
    FLT_TRUE_MIN,
    FLT_MAX,
    INFINITY,
    1.0f,
    0.5f,
    0.625f,
    9.0f,
    88.72283935546875f,
    88.72283172607422f,
    87.33654f,
    103.97208f,
    104.0f,
    89.0f,
    0x1p-12f,
    0x1p-30f,
    0.3465736f,
    0.6931472f,
    1e-45f,
    10.0f,
    20.0f,
    44.36142f,
    5.0f,
    7.2f,
    10.07f,
    3e6f,
    1e30f,
    0.70710677f,
    1.4142135f,
    3.92f,
    14.0f,
    14.9f,
    0.7071068f,
    1.1754942e-38f,
    1.1754945e-38f,
};

static worst sweep(const char *name, f32_fn f, ref_fn ref)
{
    worst w = {0};
    uint64_t step = stride();
    for (uint64_t b = 0; b < (1ull << 32); b += step)
        check(name, f, ref, bits_to_f32((uint32_t)b), &w);
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++)
        for (int d = -4; d <= 4; d++)
            for (int s = 0; s < 2; s++) {
                float e = s ? -edges[i] : edges[i];
                uint32_t b;
                memcpy(&b, &e, sizeof b);
                if (isinf(e) && d > 0)
                    continue; /* past inf lie NaNs, checked below */
                check(name, f, ref, bits_to_f32(b + (uint32_t)d), &w);
            }
    const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0xffffffffu};
    for (size_t i = 0; i < sizeof nans / sizeof *nans; i++)
        cr_expect(isnan(f(bits_to_f32(nans[i]))), "%s(NaN 0x%08x) is not NaN", name, nans[i]);
    cr_log_info("%s: max %.3f ulp at x = %a (%g), %ld failures", name, w.ulp, (double)w.at, (double)w.at, w.fails);
    return w;
}

Test(scalar_math, exp_f32_within_2_ulp, .timeout = 3600)
{
    worst w = sweep("xe_exp_f32", xe_exp_f32, ref_exp);
    cr_expect_eq(w.fails, 0, "xe_exp_f32: %ld values off", w.fails);
}

Test(scalar_math, log_f32_within_2_ulp, .timeout = 3600)
{
    worst w = sweep("xe_log_f32", xe_log_f32, ref_log);
    cr_expect_eq(w.fails, 0, "xe_log_f32: %ld values off", w.fails);
}

Test(scalar_math, erf_f32_within_2_ulp, .timeout = 3600)
{
    worst w = sweep("xe_erf_f32", xe_erf_f32, ref_erf);
    cr_expect_eq(w.fails, 0, "xe_erf_f32: %ld values off", w.fails);
}

Test(scalar_math, gelu_erf_f32_within_2_ulp, .timeout = 3600)
{
    worst w = sweep("xe_gelu_erf_f32", xe_gelu_erf_f32, ref_gelu_erf);
    cr_expect_eq(w.fails, 0, "xe_gelu_erf_f32: %ld values off", w.fails);
}

Test(scalar_math, softplus_f32_within_2_ulp, .timeout = 3600)
{
    worst w = sweep("xe_softplus_f32", xe_softplus_f32, ref_softplus);
    cr_expect_eq(w.fails, 0, "xe_softplus_f32: %ld values off", w.fails);
}

Test(scalar_math, elu_f32_within_2_ulp, .timeout = 3600)
{
    worst w = sweep("xe_elu_f32", elu_1, ref_expm1);
    cr_expect_eq(w.fails, 0, "xe_elu_f32: %ld values off", w.fails);
}

/* floor and ceil are exact: bit for bit floorf and ceilf (signs of zeros, NaN kept). */
Test(scalar_math, floor_ceil_exact, .timeout = 3600)
{
    long off = 0;
    uint64_t step = stride();
    for (uint64_t b = 0; b < (1ull << 32); b += step) {
        float x = bits_to_f32((uint32_t)b), f = xe_floor_f32(x), c = xe_ceil_f32(x), wf = floorf(x),
              wc = ceilf(x);
        bool ok = (isnan(wf) ? isnan(f) : memcmp(&f, &wf, sizeof f) == 0) &&
                  (isnan(wc) ? isnan(c) : memcmp(&c, &wc, sizeof c) == 0);
        if (!ok && off++ < 5)
            cr_log_error("floor/ceil(%a) = %a/%a, want %a/%a", (double)x, (double)f, (double)c,
                         (double)wf, (double)wc);
    }
    cr_expect_eq(off, 0, "%ld values off", off);
}

Test(scalar_math, tanh_f32_within_2_ulp, .timeout = 3600)
{
    worst w = sweep("xe_tanh_f32", xe_tanh_f32, ref_tanh);
    cr_expect_eq(w.fails, 0, "xe_tanh_f32: %ld values off", w.fails);
}

Test(scalar_math, sigmoid_f32_within_2_ulp, .timeout = 3600)
{
    worst w = sweep("xe_sigmoid_f32", xe_sigmoid_f32, ref_sigmoid);
    cr_expect_eq(w.fails, 0, "xe_sigmoid_f32: %ld values off", w.fails);
}

Test(scalar_math, gelu_tanh_f32_within_2_ulp, .timeout = 3600)
{
    worst w = sweep("xe_gelu_tanh_f32", xe_gelu_tanh_f32, ref_gelu_tanh);
    cr_expect_eq(w.fails, 0, "xe_gelu_tanh_f32: %ld values off", w.fails);
}

/* The exact answers IEEE and numpy give at the edges (not under --fast_math: signs of zeros). */
#ifndef XE_TEST_FAST_MATH
Test(scalar_math, exact_edges)
{
    cr_expect(xe_exp_f32(INFINITY) == INFINITY);
    cr_expect(xe_exp_f32(-INFINITY) == 0.0f && !signbit(xe_exp_f32(-INFINITY)));
    cr_expect(xe_exp_f32(0.0f) == 1.0f && xe_exp_f32(-0.0f) == 1.0f);
    cr_expect(xe_exp_f32(88.72283172607422f) < INFINITY, "exp of the largest float below ln FLT_MAX overflowed");
    cr_expect(xe_exp_f32(88.72283935546875f) == INFINITY);
    cr_expect(xe_exp_f32(1e30f) == INFINITY && xe_exp_f32(FLT_MAX) == INFINITY);
    cr_expect(xe_exp_f32(-104.0f) == 0.0f && xe_exp_f32(-FLT_MAX) == 0.0f);
    cr_expect(xe_exp_f32(-100.0f) > 0.0f, "exp(-100) is a denormal, not 0");
    cr_expect(xe_tanh_f32(INFINITY) == 1.0f && xe_tanh_f32(-INFINITY) == -1.0f);
    cr_expect(xe_tanh_f32(FLT_MAX) == 1.0f && xe_tanh_f32(-FLT_MAX) == -1.0f);
    cr_expect(xe_tanh_f32(0.0f) == 0.0f && !signbit(xe_tanh_f32(0.0f)));
    cr_expect(xe_tanh_f32(-0.0f) == 0.0f && signbit(xe_tanh_f32(-0.0f)), "tanh(-0) must be -0");
    cr_expect(xe_tanh_f32(FLT_TRUE_MIN) == FLT_TRUE_MIN && xe_tanh_f32(-1e-20f) == -1e-20f);
    cr_expect(xe_sigmoid_f32(INFINITY) == 1.0f && xe_sigmoid_f32(-INFINITY) == 0.0f);
    cr_expect(xe_sigmoid_f32(0.0f) == 0.5f);
    cr_expect(xe_gelu_tanh_f32(INFINITY) == INFINITY);
    cr_expect(isnan(xe_gelu_tanh_f32(-INFINITY)), "gelu(-inf) is -inf * 0 = NaN, as before");
    cr_expect(xe_gelu_tanh_f32(-FLT_MAX) == 0.0f && xe_gelu_tanh_f32(FLT_MAX) == FLT_MAX);
    cr_expect(xe_gelu_tanh_f32(0.0f) == 0.0f);
    cr_expect(xe_log_f32(0.0f) == -INFINITY && xe_log_f32(-0.0f) == -INFINITY);
    cr_expect(xe_log_f32(INFINITY) == INFINITY && isnan(xe_log_f32(-INFINITY)));
    cr_expect(isnan(xe_log_f32(-1.0f)) && isnan(xe_log_f32(-FLT_TRUE_MIN)));
    cr_expect(xe_log_f32(1.0f) == 0.0f && !signbit(xe_log_f32(1.0f)));
    cr_expect(xe_log_f32(FLT_TRUE_MIN) < -103.0f && xe_log_f32(FLT_TRUE_MIN) > -104.0f,
              "log of a denormal");
    cr_expect(xe_erf_f32(INFINITY) == 1.0f && xe_erf_f32(-INFINITY) == -1.0f);
    cr_expect(xe_erf_f32(0.0f) == 0.0f && signbit(xe_erf_f32(-0.0f)), "erf(-0) must be -0");
    cr_expect(xe_erf_f32(FLT_TRUE_MIN) > 0.0f && xe_erf_f32(10.0f) == 1.0f);
    cr_expect(xe_gelu_erf_f32(INFINITY) == INFINITY && isnan(xe_gelu_erf_f32(-INFINITY)));
    cr_expect(xe_gelu_erf_f32(0.0f) == 0.0f && xe_gelu_erf_f32(-FLT_MAX) == 0.0f);
    cr_expect(xe_gelu_erf_f32(-10.0f) < 0.0f, "gelu(-10) = -7.6e-23, not 0");
}
#endif
