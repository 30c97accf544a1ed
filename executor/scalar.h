/*
 * The scalar arithmetic that is not a plain C operator, in one place. The
 * per-op CPU kernels include this file, the CUDA kernels include it, and
 * the code generator prepends its text to every generated C and CUDA
 * program, so all three compute exactly the same function.
 *
 * Plain C that is also valid CUDA C++: no headers beyond <math.h> and
 * <stdint.h> in C (NVRTC has both built in), no C-only or C++-only syntax.
 */
#ifndef XE_SCALAR_H
#define XE_SCALAR_H

#ifndef XE_HOSTDEV
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define XE_HOSTDEV __host__ __device__
#else
#define XE_HOSTDEV
#endif
#endif

#if !defined(__CUDACC_RTC__)
#include <math.h>
#include <stdint.h>
#endif

/* For the branch-free f32 math below: inlined even into the large switch of
   row loops, where gcc would otherwise stop inlining and the call would keep
   the loop from vectorizing. */
#ifndef XE_VEC_INLINE
#if defined(__GNUC__) && !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#define XE_VEC_INLINE __attribute__((always_inline))
#else
#define XE_VEC_INLINE
#endif
#endif

/* A float's bits and back (a union: defined in C and in CUDA). */
XE_HOSTDEV static inline XE_VEC_INLINE uint32_t xe_f32_bits(float f)
{
    union {
        float f;
        uint32_t u;
    } v;
    v.f = f;
    return v.u;
}
XE_HOSTDEV static inline XE_VEC_INLINE float xe_f32_of_bits(uint32_t u)
{
    union {
        uint32_t u;
        float f;
    } v;
    v.u = u;
    return v.f;
}

/* IEEE binary16 <-> binary32, round to nearest even (the bits of f16 tensors). */
XE_HOSTDEV static inline float xe_h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    return xe_f32_of_bits(bits);
}

XE_HOSTDEV static inline uint16_t xe_f2h(float f)
{
    uint32_t x = xe_f32_bits(f), sign = (x >> 16) & 0x8000, absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u)
        return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 | ((absx >> 13) & 0x3ff) : 0));
    if (absx >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00);
    if (absx < 0x33000001u)
        return (uint16_t)sign;
    int32_t exp = (int32_t)(absx >> 23) - 127 + 15;
    uint32_t man = (absx & 0x7fffff) | 0x800000;
    int shift = exp > 0 ? 13 : 14 - exp;
    uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
        half++;
    return (uint16_t)(sign | (exp > 0 ? ((uint32_t)exp << 10) + (half - 0x400) : half));
}

/* numpy floor division on integers; x // 0 is 0 (numpy warns and gives 0). */
XE_HOSTDEV static inline int64_t xe_floordiv_i64(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    if (b == -1)
        return (int64_t)(0 - (uint64_t)a); /* INT64_MIN // -1 wraps as numpy does */
    int64_t q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}

XE_HOSTDEV static inline int32_t xe_floordiv_i32(int32_t a, int32_t b)
{
    return (int32_t)xe_floordiv_i64(a, b);
}

/* Integer power by squaring; a negative exponent gives 0 except for bases 1 and -1. */
XE_HOSTDEV static inline int64_t xe_pow_i64(int64_t a, int64_t e)
{
    if (e < 0)
        return a == 1 ? 1 : a == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, base = (uint64_t)a;
    while (e) {
        if (e & 1)
            r *= base;
        base *= base;
        e >>= 1;
    }
    return (int64_t)r;
}

XE_HOSTDEV static inline int32_t xe_pow_i32(int32_t a, int32_t e)
{
    return (int32_t)xe_pow_i64(a, e);
}

/* Integer + - * and negation wrap around (as numpy's do) instead of
   overflowing, which C leaves undefined. */
XE_HOSTDEV static inline int32_t xe_add_i32(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}
XE_HOSTDEV static inline int32_t xe_sub_i32(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a - (uint32_t)b);
}
XE_HOSTDEV static inline int32_t xe_mul_i32(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a * (uint32_t)b);
}
XE_HOSTDEV static inline int64_t xe_add_i64(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}
XE_HOSTDEV static inline int64_t xe_sub_i64(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a - (uint64_t)b);
}
XE_HOSTDEV static inline int64_t xe_mul_i64(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a * (uint64_t)b);
}
XE_HOSTDEV static inline int32_t xe_abs_i32(int32_t a)
{
    return a < 0 ? xe_sub_i32(0, a) : a;
}
XE_HOSTDEV static inline int64_t xe_abs_i64(int64_t a)
{
    return a < 0 ? xe_sub_i64(0, a) : a;
}

/*
 * NaN-propagating maximum and minimum (numpy's maximum/minimum), with
 * IEEE 754-2019's order of signed zeros: max(+0, -0) = +0 and
 * min(+0, -0) = -0 whichever comes first, so that a reduction gives the
 * same zero in any order (per-op kernels, fused loops, GPU trees). On a
 * tie of zeros, a + b is +0 unless both are -0, and -(-a - b) is -0
 * unless both are +0.
 */
XE_HOSTDEV static inline float xe_max_f32(float a, float b)
{
    return (a != a || a > b) ? a : a == b ? (a == 0.0f ? a + b : a) : b;
}
XE_HOSTDEV static inline float xe_min_f32(float a, float b)
{
    return (a != a || a < b) ? a : a == b ? (a == 0.0f ? -(-a - b) : a) : b;
}
XE_HOSTDEV static inline double xe_max_f64(double a, double b)
{
    return (a != a || a > b) ? a : a == b ? (a == 0.0 ? a + b : a) : b;
}
XE_HOSTDEV static inline double xe_min_f64(double a, double b)
{
    return (a != a || a < b) ? a : a == b ? (a == 0.0 ? -(-a - b) : a) : b;
}

/*
 * exp and tanh in f32. On the CPU they are written out in selects and
 * arithmetic (no calls, no tables, no branches) so that gcc vectorizes the
 * loops that use them, which it does not do with libm's expf/tanhf. They are
 * within 2 ulp of the exact result over the whole float range, NaN gives
 * NaN, exp overflows to inf above 88.72 and underflows gradually (denormal
 * results, then 0 below -103.98), and tanh(+-inf) = +-1, tanh(-0) = -0.
 * Only * + - / and selects: no fmaf (a libcall where the target has no FMA),
 * and C11 does not contract a * b + c, so every build computes the same bits.
 * The GPU's expf and tanhf are fast already: CUDA code uses them.
 */
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
XE_HOSTDEV static inline float xe_exp_f32(float x)
{
    return expf(x);
}
XE_HOSTDEV static inline float xe_tanh_f32(float x)
{
    return tanhf(x);
}
#else

/*
 * c ? a : b in bit operations. gcc sinks arithmetic whose result only one
 * arm of a ?: uses into a branch, and threads a constant arm through the
 * arithmetic after it; either way the loop gets a branch that holds
 * floating-point arithmetic, which it does not vectorize. These selects
 * keep both sides computed and the loop straight.
 */
static inline XE_VEC_INLINE float xe_select_f32(int c, float a, float b)
{
    uint32_t m = 0u - (uint32_t)(c != 0);
    return xe_f32_of_bits((xe_f32_bits(a) & m) | (xe_f32_bits(b) & ~m));
}
static inline XE_VEC_INLINE double xe_select_f64(int c, double a, double b)
{
    union {
        double d;
        uint64_t u;
    } va, vb;
    va.d = a;
    vb.d = b;
    uint64_t m = (uint64_t)0 - (uint64_t)(c != 0);
    va.u = (va.u & m) | (vb.u & ~m);
    return va.d;
}

static inline XE_VEC_INLINE uint32_t xe_select_u32(int c, uint32_t a, uint32_t b)
{
    uint32_t m = 0u - (uint32_t)(c != 0);
    return (a & m) | (b & ~m);
}

/*
 * xe_h2f and xe_f2h bit for bit (checked on every half and every float),
 * without branches, so that the CPU kernels' f16 loops vectorize. Every path
 * is computed and the right one selected; the denormal ones go through a
 * float addition with a magic constant, whose operands and result are
 * normal floats, so flush-to-zero modes do not change them.
 */
static inline XE_VEC_INLINE float xe_h2f_vec(uint16_t h)
{
    uint32_t o = (uint32_t)(h & 0x7fff) << 13, e = o & 0x0f800000u;
    o += (uint32_t)(127 - 15) << 23;
    uint32_t inf_nan = o + ((uint32_t)(128 - 16) << 23); /* NaN payload kept, as xe_h2f */
    uint32_t den = xe_f32_bits(xe_f32_of_bits(o + (1u << 23)) - 6.103515625e-05f); /* - 2^-14 */
    o = xe_select_u32(e == 0x0f800000u, inf_nan, xe_select_u32(e == 0, den, o));
    return xe_f32_of_bits(o | (uint32_t)(h & 0x8000) << 16);
}

static inline XE_VEC_INLINE uint16_t xe_f2h_vec(float f)
{
    uint32_t x = xe_f32_bits(f), a = x & 0x7fffffffu;
    uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
    /* normal: rebias, round to nearest even at bit 13 (a carry may reach inf) */
    uint32_t norm = (a - ((uint32_t)(127 - 15) << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
    /* below 2^-14: adding 0.5 rounds to a multiple of 2^-24, the half's denormal step */
    uint32_t den = xe_f32_bits(xe_f32_of_bits(a) + 0.5f) - 0x3f000000u;
    uint32_t r = xe_select_u32(a < (113u << 23), den, norm);
    r = xe_select_u32(a >= (143u << 23), 0x7c00u, r); /* >= 65536 and inf */
    r = xe_select_u32(a > 0x7f800000u, nan, r);
    return (uint16_t)(r | ((x >> 16) & 0x8000u));
}

/*
 * exp(x + lo), lo a small correction to x (0, or the low part of an argument
 * computed in double). Cody-Waite: x = n ln2 + r with |r| <= ln2 / 2, ln2 in
 * two parts so that n * LN2_HI is exact; exp(r) by Cephes' degree-6 minimax
 * polynomial; 2^n added to its exponent bits. Results below 2^-125 take
 * 2^(n + 64) and one multiplication by 2^-64, rounding once into the
 * denormals; a single multiplication also keeps -ffast-math (generated code
 * may be built with it) from merging two scale factors into one that
 * overflows. x is not clamped: the arithmetic runs (without UB) for every x
 * and its result is replaced for x < -104 (0) and x >= 88.7228 (inf or NaN).
 */
static inline XE_VEC_INLINE float xe_exp_lo_f32(float x, float lo)
{
    /* n = round(x / ln2): adding 1.5 * 2^23 rounds to an integer, left in the low bits */
    float t = x * 1.44269504088896341f + 12582912.0f;
    int32_t n = (int32_t)(xe_f32_bits(t) & 0x7fffffu) - 0x400000; /* [-150, 128] where used */
    float fn = (float)n;
    float r = x - fn * 0.693359375f;
    r = r - (fn * -2.12194440e-4f - lo); /* one rounding of r, not two */
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f; /* in [0.70, 1.42] */
    int32_t m = (int32_t)(n < -125) << 6; /* 64 for the denormal range, else 0 */
    float y = xe_f32_of_bits(xe_f32_bits(p) + ((uint32_t)(n + m) << 23)) *
              xe_f32_of_bits((uint32_t)(127 - m) << 23);
    /* exp(-104) < 2^-150 rounds to 0; exp(88.72283935546875) > FLT_MAX + ulp/2;
       x + inf is inf there, and NaN for NaN (which fails both tests) */
    y = xe_select_f32(x < -104.0f, 0.0f, y);
    return xe_select_f32(x < 88.72283935546875f, y, x + INFINITY);
}

static inline XE_VEC_INLINE float xe_exp_f32(float x)
{
    return xe_exp_lo_f32(x, 0.0f);
}

/*
 * tanh: an odd polynomial (Cephes' minimax) below 0.625, where 1 - 2 / (e^2x
 * + 1) would cancel; 1 - 2 / (e^2x + 1) up to 9; 1 beyond (tanh 9 is within
 * half an ulp of 1); the sign copied back last, which keeps -0 and NaN.
 */
static inline XE_VEC_INLINE float xe_tanh_f32(float x)
{
    uint32_t sign = xe_f32_bits(x) & 0x80000000u;
    float a = xe_f32_of_bits(xe_f32_bits(x) & 0x7fffffffu), z = a * a;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float small = p * z * a + a;
    float big = 1.0f - 2.0f / (xe_exp_f32(a + a) + 1.0f);
    float r = xe_select_f32(a < 0.625f, small, xe_select_f32(a > 9.0f, 1.0f, big));
    return xe_f32_of_bits(xe_f32_bits(r) | sign);
}
#endif

/* f64 keeps libm's; these only give every dtype the same spelling. */
XE_HOSTDEV static inline double xe_exp_f64(double x)
{
    return exp(x);
}
XE_HOSTDEV static inline double xe_tanh_f64(double x)
{
    return tanh(x);
}

/* The division in double on the CPU: in float, 1 / (1 + e) adds two roundings to
   exp's error and reaches 2.5 ulp. */
XE_HOSTDEV static inline XE_VEC_INLINE float xe_sigmoid_f32(float x)
{
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
    return 1.0f / (1.0f + xe_exp_f32(-x));
#else
    return (float)(1.0 / (1.0 + (double)xe_exp_f32(-x)));
#endif
}
XE_HOSTDEV static inline double xe_sigmoid_f64(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

XE_HOSTDEV static inline float xe_rsqrt_f32(float x)
{
    return 1.0f / sqrtf(x);
}
XE_HOSTDEV static inline double xe_rsqrt_f64(double x)
{
    return 1.0 / sqrt(x);
}

/* relu keeps NaN (x > 0 is false for NaN, so test the other way). */
XE_HOSTDEV static inline float xe_relu_f32(float x)
{
    return x < 0.0f ? 0.0f : x;
}
XE_HOSTDEV static inline double xe_relu_f64(double x)
{
    return x < 0.0 ? 0.0 : x;
}

/* gelu(approximate=false): 0.5 x (1 + erf(x / sqrt 2)) */
XE_HOSTDEV static inline float xe_gelu_erf_f32(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}
XE_HOSTDEV static inline double xe_gelu_erf_f64(double x)
{
    return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
}

/* gelu(approximate=true): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
XE_HOSTDEV static inline XE_VEC_INLINE float xe_gelu_tanh_f32(float x)
{
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
    return 0.5f * x * (1.0f + xe_tanh_f32(0.79788456080286536f * (x + 0.044715f * x * x * x)));
#else
    /* The same function as x / (1 + exp(-2 u)), u = sqrt(2/pi) (x + 0.044715 x^3):
       1 + tanh u would cancel for x < 0. -2u is computed in double and passed
       to exp in two floats, because exp magnifies its absolute error (-2u goes
       up to 90 before the result leaves the normal range), and lowered by
       32 ln 2, because exp(-2u) itself may exceed FLT_MAX there. */
    double d = (double)x, v = -d * (1.5957691216057307 + 0.071354816272600249 * d * d);
    v = v - 22.180709777918249; /* 32 ln 2 */
    v = xe_select_f64(v < -200.0, -200.0, v); /* in float's range; exp's selects decide */
    v = xe_select_f64(v > 200.0, 200.0, v);   /* NaN stays */
    float hi = (float)v, e = xe_exp_lo_f32(hi, (float)(v - (double)hi));
    return (float)(d / (1.0 + (double)e * 4294967296.0));
#endif
}
XE_HOSTDEV static inline double xe_gelu_tanh_f64(double x)
{
    return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}

/* float → integer casts truncate toward zero, NaN → 0, out of range saturates. */
XE_HOSTDEV static inline int32_t xe_f64_to_i32(double x)
{
    if (x != x)
        return 0;
    if (x >= 2147483647.0)
        return 2147483647;
    if (x <= -2147483648.0)
        return (-2147483647 - 1);
    return (int32_t)x;
}
XE_HOSTDEV static inline int64_t xe_f64_to_i64(double x)
{
    if (x != x)
        return 0;
    if (x >= 9223372036854775807.0)
        return (int64_t)9223372036854775807LL;
    if (x <= -9223372036854775808.0)
        return (int64_t)(-9223372036854775807LL - 1);
    return (int64_t)x;
}

/*
 * CPU column reductions, the per-op kernel and generated C alike: up to
 * XE_COL_WIDE outputs are one tile (each reduced row read whole), else
 * tiles of XE_COL_TILE; with fewer than XE_COL_FEW_TILES tiles and at least
 * two chunks' worth of rows, the rows are split into up to XE_COL_CHUNKS
 * chunks of at least XE_COL_CHUNK_ROWS: a count fixed by the shape, never
 * by the threads, so a result is the same on every machine.
 */
#define XE_COL_WIDE 4096
#define XE_COL_TILE 1024
#define XE_COL_FEW_TILES 8
#define XE_COL_CHUNKS 16
#define XE_COL_CHUNK_ROWS 512
XE_HOSTDEV static inline int64_t xe_column_chunks(int64_t tiles, int64_t rows)
{
    if (tiles >= XE_COL_FEW_TILES || rows < 2 * XE_COL_CHUNK_ROWS)
        return 1;
    return rows / XE_COL_CHUNK_ROWS < XE_COL_CHUNKS ? rows / XE_COL_CHUNK_ROWS : XE_COL_CHUNKS;
}
/* First of the n items in chunk c of parts chunks (the first n % parts chunks one longer). */
XE_HOSTDEV static inline int64_t xe_chunk_begin(int64_t n, int64_t parts, int64_t c)
{
    int64_t q = n / parts, rem = n % parts;
    return c * q + (c < rem ? c : rem);
}

/* xe-op softplus: log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)), which neither overflows
   nor loses the small values (a generated program carries this section only when it uses softplus) */
XE_HOSTDEV static inline float xe_softplus_f32(float x)
{
    return (x > 0.0f ? x : 0.0f) + log1pf(xe_exp_f32(-fabsf(x)));
}
XE_HOSTDEV static inline double xe_softplus_f64(double x)
{
    return (x > 0.0 ? x : 0.0) + log1p(exp(-fabs(x)));
}
/* xe-op end */
/* xe-op leaky_relu: x for x >= 0, alpha x below; NaN stays (a generated program carries this
   section only when it uses leaky_relu) */
XE_HOSTDEV static inline float xe_leaky_relu_f32(float x, float alpha)
{
    return x < 0.0f ? alpha * x : x;
}
XE_HOSTDEV static inline double xe_leaky_relu_f64(double x, double alpha)
{
    return x < 0.0 ? alpha * x : x;
}
/* xe-op end */
/* xe-op elu: x for x > 0, alpha (exp(x) - 1) below, with expm1 so that small x keeps its digits;
   NaN stays (a generated program carries this section only when it uses elu) */
XE_HOSTDEV static inline float xe_elu_f32(float x, float alpha)
{
    return x > 0.0f ? x : alpha * expm1f(x);
}
XE_HOSTDEV static inline double xe_elu_f64(double x, double alpha)
{
    return x > 0.0 ? x : alpha * expm1(x);
}
/* xe-op end */
/* xe-op hard_sigmoid: alpha x + beta clamped to [0, 1]; NaN stays (a generated program carries
   this section only when it uses hard_sigmoid) */
XE_HOSTDEV static inline float xe_hard_sigmoid_f32(float x, float alpha, float beta)
{
    float y = alpha * x + beta;
    return y < 0.0f ? 0.0f : y > 1.0f ? 1.0f : y;
}
XE_HOSTDEV static inline double xe_hard_sigmoid_f64(double x, double alpha, double beta)
{
    double y = alpha * x + beta;
    return y < 0.0 ? 0.0 : y > 1.0 ? 1.0 : y;
}
/* xe-op end */
#endif
