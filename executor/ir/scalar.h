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

#if !defined(__CUDACC_RTC__) && !defined(XE_SCALAR_NO_LIBC_HEADERS) /* generated C: see backend_c.c */
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

/*
 * c ? a : b in bit operations. gcc sinks arithmetic whose result only one
 * arm of a ?: uses into a branch, and threads a constant arm through the
 * arithmetic after it; either way the loop gets a branch that holds
 * floating-point arithmetic, which it does not vectorize. These selects
 * keep both sides computed and the loop straight. (CUDA: a plain ?:.)
 */
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
XE_HOSTDEV static inline float xe_select_f32(int c, float a, float b)
{
    return c ? a : b;
}
XE_HOSTDEV static inline double xe_select_f64(int c, double a, double b)
{
    return c ? a : b;
}
#else
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
#endif

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
 * unless both are +0. Selects, not branches: the loops vectorise.
 */
XE_HOSTDEV static inline XE_VEC_INLINE float xe_max_f32(float a, float b)
{
    float tie = xe_select_f32(a == 0.0f, a + b, a);
    return xe_select_f32((a != a) | (a > b), a, xe_select_f32(a == b, tie, b)); /* | not ||: no branch */
}
XE_HOSTDEV static inline XE_VEC_INLINE float xe_min_f32(float a, float b)
{
    float tie = xe_select_f32(a == 0.0f, -(-a - b), a);
    return xe_select_f32((a != a) | (a < b), a, xe_select_f32(a == b, tie, b));
}
XE_HOSTDEV static inline XE_VEC_INLINE double xe_max_f64(double a, double b)
{
    double tie = xe_select_f64(a == 0.0, a + b, a);
    return xe_select_f64((a != a) | (a > b), a, xe_select_f64(a == b, tie, b));
}
XE_HOSTDEV static inline XE_VEC_INLINE double xe_min_f64(double a, double b)
{
    double tie = xe_select_f64(a == 0.0, -(-a - b), a);
    return xe_select_f64((a != a) | (a < b), a, xe_select_f64(a == b, tie, b));
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
XE_HOSTDEV static inline float xe_log_f32(float x)
{
    return logf(x);
}
XE_HOSTDEV static inline float xe_floor_f32(float x)
{
    return floorf(x);
}
XE_HOSTDEV static inline float xe_ceil_f32(float x)
{
    return ceilf(x);
}
#else

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
 * xe_h2f_vec(xe_f2h_vec(x)) bit for bit (checked on every float), in half the operations: a
 * generated f16 loop rounds every op's result to f16 and goes on in float. |x| + 2^13 of its
 * binade, whose ulp is the half's step there, rounds |x| to 11 bits (to even, as f2h) and the
 * subtraction is exact; the binade is held to the halves' denormal step (2^-24) below and to 2^15
 * above, so that every large value comes out above 65504, which is infinity. A NaN keeps f2h's
 * ten payload bits, quiet. Under gcc's -fassociative-math (generated code's --fast_math) the
 * addition and subtraction would cancel: the conversions instead.
 */
static inline XE_VEC_INLINE float xe_f16_round_vec(float x)
{
#if defined(__ASSOCIATIVE_MATH__)
    return xe_h2f_vec(xe_f2h_vec(x));
#else
    uint32_t b = xe_f32_bits(x), a = b & 0x7fffffffu, e = a & 0x7f800000u;
    e = e < (113u << 23) ? 113u << 23 : e > (142u << 23) ? 142u << 23 : e;
    float m = xe_f32_of_bits(e + (13u << 23));
    float r = (xe_f32_of_bits(a) + m) - m;
    uint32_t rb = xe_select_u32(r > 65504.0f, 0x7f800000u, xe_f32_bits(r));
    rb = xe_select_u32(a > 0x7f800000u, (a & 0x007fe000u) | 0x7fc00000u, rb);
    return xe_f32_of_bits(rb | (b & 0x80000000u));
#endif
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
static inline XE_VEC_INLINE float xe_exp_core_f32(float x, float lo, int32_t *n_out)
{
    /* n = round(x / ln2): adding 1.5 * 2^23 rounds to an integer, left in the low bits */
    float t = x * 1.44269504088896341f + 12582912.0f;
    int32_t n = (int32_t)(xe_f32_bits(t) & 0x7fffffu) - 0x400000; /* [-150, 128] where used */
    float fn = (float)n;
#if defined(__ASSOCIATIVE_MATH__)
    /* --fast_math (gcc's -fassociative-math) would merge the two parts of ln2 below and
       lose 60 ulp: x + lo - n ln2 in double instead, one expression rounded once (the
       float form is 40 % faster, so it stays where it is safe) */
    float r = (float)((double)x - (double)fn * 0.69314718055994531 + (double)lo);
#else
    float r = x - fn * 0.693359375f;
    r = r - (fn * -2.12194440e-4f - lo); /* one rounding of r, not two */
#endif
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    *n_out = n;
    return p * (r * r) + r + 1.0f; /* exp(r), in [0.70, 1.42] */
}

static inline XE_VEC_INLINE float xe_exp_lo_f32(float x, float lo)
{
    int32_t n;
    float p = xe_exp_core_f32(x, lo, &n);
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

/* xe_exp_f32 bit for bit where the result is normal (x in [-87.3, 88.7]), without the
   denormal scaling and the edge selects; outside, a garbage float (no UB) to select away. */
static inline XE_VEC_INLINE float xe_exp_normal_f32(float x)
{
    int32_t n;
    float p = xe_exp_core_f32(x, 0.0f, &n);
    return xe_f32_of_bits(xe_f32_bits(p) + ((uint32_t)n << 23));
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
    float big = 1.0f - 2.0f / (xe_exp_normal_f32(a + a) + 1.0f); /* used for 2a in [1.25, 18] */
    float r = xe_select_f32(a < 0.625f, small, xe_select_f32(a > 9.0f, 1.0f, big));
    r = xe_select_f32(a == a, r, a); /* NaN: big is not (xe_exp_normal_f32 of NaN) */
    return xe_f32_of_bits(xe_f32_bits(r) | sign);
}

/*
 * log (FreeBSD's e_logf.c without its branches): x = 2^k (1 + f) with 1 + f
 * in [sqrt(2)/2, sqrt(2)), log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)),
 * s = f / (2 + f), R a degree-8 minimax; k ln2 in two parts. Denormal x is
 * scaled by 2^25 first (exactly: no flush). 0 gives -inf, x < 0 NaN, +inf
 * and NaN themselves; within 1 ulp elsewhere (tests/test_scalar_math.c).
 */
static inline XE_VEC_INLINE float xe_log_f32(float x)
{
    int sub = x < 1.17549435e-38f;
    uint32_t ix = xe_f32_bits(xe_select_f32(sub, x * 33554432.0f, x)) + (0x3f800000u - 0x3f3504f3u);
    int32_t k = (int32_t)((ix >> 23) & 0x1ffu) - 0x7f - 25 * sub;
    float f = xe_f32_of_bits((ix & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
    float s = f / (2.0f + f), z = s * s, w = z * z;
    float R = z * (0.66666662693f + w * 0.28498786688f) + w * (0.40000972152f + w * 0.24279078841f);
    float hfsq = 0.5f * f * f, dk = (float)k;
    float r = s * (hfsq + R) + dk * 9.0580006145e-06f - hfsq + f + dk * 6.9313812256e-01f;
    r = xe_select_f32(x == 0.0f, -INFINITY, r);
    r = xe_select_f32(x < 0.0f, NAN, r);
    return xe_select_f32(x < INFINITY, r, x + x); /* +inf and NaN */
}

/*
 * floor and ceil (exact, as floorf and ceilf), which gcc vectorizes only
 * without -ftrapping-math: truncated through int32 where |x| < 2^23 (the
 * others are integers, inf or NaN, and stay), one added or taken where
 * truncation went the wrong way; a zero result takes x's sign (x * 0), so
 * floor(-0) = -0 and ceil(-0.5) = -0.
 */
static inline XE_VEC_INLINE float xe_floor_f32(float x)
{
    int small = fabsf(x) < 8388608.0f;
    float t = (float)(int32_t)xe_select_f32(small, x, 0.0f);
    t = t - xe_select_f32(t > x, 1.0f, 0.0f);
    return xe_select_f32(small, xe_select_f32(t == 0.0f, x * 0.0f, t), x);
}
static inline XE_VEC_INLINE float xe_ceil_f32(float x)
{
    int small = fabsf(x) < 8388608.0f;
    float t = (float)(int32_t)xe_select_f32(small, x, 0.0f);
    t = t + xe_select_f32(t < x, 1.0f, 0.0f);
    return xe_select_f32(small, xe_select_f32(t == 0.0f, x * 0.0f, t), x);
}
#endif

/*
 * f32 max and min reductions of the CPU's row kernels as int32 keys: the
 * bits of x with the lower 31 flipped when negative order as the floats do
 * (-0 below +0), and NaN is the largest key for max, the smallest for min,
 * so it wins as xe_max_f32 / xe_min_f32 make it win. An integer max or min
 * is OpenMP's built-in reduction, which gcc vectorizes at any row length
 * (the user-defined xg_max_f32 reduction goes through a lane array and is
 * ten times slower on short rows). xe_of_key_f32 maps a key back (NaN
 * keys to a NaN).
 */
#define XE_MAXKEY_INIT (-2139095041) /* the key of -inf */
#define XE_MINKEY_INIT 2139095040    /* the key of +inf */
XE_HOSTDEV static inline XE_VEC_INLINE int32_t xe_key_f32(float x, uint32_t nan_key)
{
    uint32_t b = xe_f32_bits(x), neg = 0u - (b >> 31),
             nan = 0u - (uint32_t)((b & 0x7fffffffu) > 0x7f800000u);
    return (int32_t)(((b ^ (neg & 0x7fffffffu)) & ~nan) | (nan_key & nan));
}
XE_HOSTDEV static inline XE_VEC_INLINE int32_t xe_maxkey_f32(float x)
{
    return xe_key_f32(x, 0x7fffffffu);
}
XE_HOSTDEV static inline XE_VEC_INLINE int32_t xe_minkey_f32(float x)
{
    return xe_key_f32(x, 0x80000000u);
}
XE_HOSTDEV static inline float xe_of_key_f32(int32_t k)
{
    uint32_t u = (uint32_t)k;
    return xe_f32_of_bits(u ^ ((0u - (u >> 31)) & 0x7fffffffu));
}

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

/* relu keeps NaN (x > 0 is false for NaN, so test the other way). The f32 selects of this
   file are xe_select_f32 (see there): a ?: with a constant arm keeps a loop from vectorizing. */
XE_HOSTDEV static inline XE_VEC_INLINE float xe_relu_f32(float x)
{
    return xe_select_f32(x < 0.0f, 0.0f, x);
}
XE_HOSTDEV static inline double xe_relu_f64(double x)
{
    return x < 0.0 ? 0.0 : x;
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
XE_HOSTDEV static inline XE_VEC_INLINE float xe_softplus_f32(float x)
{
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
    return (x > 0.0f ? x : 0.0f) + log1pf(xe_exp_f32(-fabsf(x)));
#else
    /* log1p(e) = log(w) + (e - (w - 1)) / w, w = 1 + e rounded: the second term puts back
       what the rounding of w lost (all of e when w == 1) */
    float e = xe_exp_f32(-fabsf(x)), w = 1.0f + e;
    float c =
        (float)((double)e - ((double)w - 1.0)); /* exact in double, in any order where w > 1 */
    float l = xe_select_f32(w == 1.0f, e, xe_log_f32(w) + c / w); /* log1p(e) = e below 2^-24 */
    return xe_select_f32(x > 0.0f, x, 0.0f) + l;
#endif
}
XE_HOSTDEV static inline double xe_softplus_f64(double x)
{
    return (x > 0.0 ? x : 0.0) + log1p(exp(-fabs(x)));
}
/* xe-op end */
/* xe-op leaky_relu: x for x >= 0, alpha x below; NaN stays (a generated program carries this
   section only when it uses leaky_relu) */
XE_HOSTDEV static inline XE_VEC_INLINE float xe_leaky_relu_f32(float x, float alpha)
{
    return xe_select_f32(x < 0.0f, alpha * x, x);
}
XE_HOSTDEV static inline double xe_leaky_relu_f64(double x, double alpha)
{
    return x < 0.0 ? alpha * x : x;
}
/* xe-op end */
/* xe-op elu: x for x > 0, alpha (exp(x) - 1) below, with expm1 so that small x keeps its digits;
   NaN stays (a generated program carries this section only when it uses elu) */
XE_HOSTDEV static inline XE_VEC_INLINE float xe_elu_f32(float x, float alpha)
{
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
    return x > 0.0f ? x : alpha * expm1f(x);
#else
    /* expm1 for x <= 0: x + x^2 R(x) on [-1, 0) (R a degree-6 fit, relative error 6.5e-10),
       exp(x) - 1 below (no cancellation there: exp(x) <= 1/e) */
    float r = 1.692812721267069e-05f;
    r = r * x + 1.8832475546631217e-04f;
    r = r * x + 1.3822415702309406e-03f;
    r = r * x + 8.33105026110533e-03f;
    r = r * x + 4.166629020953762e-02f;
    r = r * x + 1.66666643264367e-01f;
    r = r * x + 4.9999999976145215e-01f;
    float small = xe_select_f32(x == 0.0f, x, x + x * x * r); /* expm1(-0) is -0, as on CUDA */
    float m = xe_select_f32(x < -1.0f, xe_exp_f32(x) - 1.0f, small);
    return xe_select_f32(x > 0.0f, x, alpha * m);
#endif
}
XE_HOSTDEV static inline double xe_elu_f64(double x, double alpha)
{
    return x > 0.0 ? x : alpha * expm1(x);
}
/* xe-op end */
/* xe-op hard_sigmoid: alpha x + beta clamped to [0, 1]; NaN stays (a generated program carries
   this section only when it uses hard_sigmoid) */
XE_HOSTDEV static inline XE_VEC_INLINE float xe_hard_sigmoid_f32(float x, float alpha, float beta)
{
    float y = alpha * x + beta;
    return xe_select_f32(y < 0.0f, 0.0f, xe_select_f32(y > 1.0f, 1.0f, y));
}
XE_HOSTDEV static inline double xe_hard_sigmoid_f64(double x, double alpha, double beta)
{
    double y = alpha * x + beta;
    return y < 0.0 ? 0.0 : y > 1.0 ? 1.0 : y;
}
/* xe-op end */
/* xe-op erf: f32 erf without branches on the CPU, libm's erf in f64 and CUDA's erff on the GPU
   (a generated program carries this section only when it uses erf) */
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
XE_HOSTDEV static inline float xe_erf_f32(float x)
{
    return erff(x);
}
#else
/*
 * |x| < 1: x (1 + (P(x^2) - 1)), P a degree-6 fit of erf(x)/x (relative error 1.5e-9).
 * Beyond: 1 - t h(t) exp(-x^2), t = 2 / (2 + |x|), h a degree-10 fit of
 * erfc(u) exp(u^2) / t over u in [0.5, 10.5] (relative error 2.2e-10): the
 * form is 1 - erfc, so only the absolute error counts there, and x^2 in
 * float is close enough. inf gives t = 0 and 1; NaN stays NaN; the sign is
 * copied back last. Within 1 ulp (tests/test_scalar_math.c).
 */
static inline XE_VEC_INLINE float xe_erf_f32(float x)
{
    uint32_t sign = xe_f32_bits(x) & 0x80000000u;
    float a = xe_f32_of_bits(xe_f32_bits(x) & 0x7fffffffu), z = a * a;
    float p = 7.875875062685488e-05f;
    p = p * z - 8.01686428716587e-04f;
    p = p * z + 5.189087423433974e-03f;
    p = p * z - 2.6854212010626412e-02f;
    p = p * z + 1.1283594715160218e-01f;
    p = p * z - 3.7612626666720334e-01f;
    p = p * z + 1.283791658483509e-01f; /* P - 1: 2/sqrt(pi) lies near a float's half ulp */
    float t = 2.0f / (2.0f + a), h = 6.390882222316795e-02f;
    h = h * t - 3.345315642435532e-01f;
    h = h * t + 7.023002894199005e-01f;
    h = h * t - 7.029888831981281e-01f;
    h = h * t + 3.1701787846259954e-01f;
    h = h * t - 1.4899338489163735e-01f;
    h = h * t + 1.2211084482448205e-01f;
    h = h * t + 1.6940707011290798e-01f;
    h = h * t + 2.476378968076921e-01f;
    h = h * t + 2.8203993938688143e-01f;
    h = h * t + 2.820964472144361e-01f;
    float big = 1.0f - t * h * xe_exp_f32(-z);
    /* a (1 + (P - 1)) in double, rounded once (reassociation cannot undo it) */
    float r = xe_select_f32(a < 1.0f, (float)((double)a * (1.0 + (double)p)), big);
    return xe_f32_of_bits(xe_f32_bits(r) | sign);
}
#endif
/* xe-op end */
/* xe-op gelu: gelu(approximate=false) 0.5 x (1 + erf(x / sqrt 2)) and gelu(approximate=true)
   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (a generated program carries this section only
   when it uses gelu) */
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
XE_HOSTDEV static inline float xe_gelu_erf_f32(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}
XE_HOSTDEV static inline float xe_gelu_tanh_f32(float x)
{
    return 0.5f * x * (1.0f + xe_tanh_f32(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}
#else
/*
 * In double, from erfc(u), u = |x| / sqrt 2: x (1 - erfc(u) / 2) for x >= 0
 * and x erfc(u) / 2 below, so that the negative side, where 1 + erf
 * cancels, keeps its digits down to the denormals. erfc(u) is 1 - u P(u^2)
 * below 0.5 and t h(t) exp(-u^2) above (xe_erf_f32's fits, t = 2 / (2 + u));
 * -u^2 goes to exp in two floats (hi and lo), since exp magnifies its
 * absolute error. gelu(-inf) is -inf * 0 = NaN, as 0.5 x (1 + erf) gives.
 */
static inline XE_VEC_INLINE float xe_gelu_erf_f32(float x)
{
    double d = (double)x, u = xe_select_f64(d < 0.0, -d, d) * 0.70710678118654752440, z = u * u;
    double p = 7.875875062685488e-05;
    p = p * z - 8.01686428716587e-04;
    p = p * z + 5.189087423433974e-03;
    p = p * z - 2.6854212010626412e-02;
    p = p * z + 1.1283594715160218e-01;
    p = p * z - 3.7612626666720334e-01;
    p = p * z + 1.1283791658483509;
    double t = 2.0 / (2.0 + u), h = 6.390882222316795e-02;
    h = h * t - 3.345315642435532e-01;
    h = h * t + 7.023002894199005e-01;
    h = h * t - 7.029888831981281e-01;
    h = h * t + 3.1701787846259954e-01;
    h = h * t - 1.4899338489163735e-01;
    h = h * t + 1.2211084482448205e-01;
    h = h * t + 1.6940707011290798e-01;
    h = h * t + 2.476378968076921e-01;
    h = h * t + 2.8203993938688143e-01;
    h = h * t + 2.820964472144361e-01;
    double v = xe_select_f64(z > 200.0, -200.0, -z); /* in float's range; NaN stays */
    float hi = (float)v, e = xe_exp_lo_f32(hi, (float)(v - (double)hi));
    double erfc = xe_select_f64(u < 0.5, 1.0 - u * p, t * h * (double)e);
    return (float)(d * xe_select_f64(d < 0.0, 0.5 * erfc, 1.0 - 0.5 * erfc));
}

static inline XE_VEC_INLINE float xe_gelu_tanh_f32(float x)
{
    /* The same function as x / (1 + exp(-2 u)), u = sqrt(2/pi) (x + 0.044715 x^3):
       1 + tanh u would cancel for x < 0. -2u is computed in double and passed
       to exp in two floats, because exp magnifies its absolute error (-2u goes
       up to 90 before the result leaves the normal range), and lowered by
       32 ln 2, because exp(-2u) itself may exceed FLT_MAX there. */
    double d = (double)x, v = -d * (1.5957691216057307 + 0.071354816272600249 * d * d);
    v = v - 22.180709777918249;               /* 32 ln 2 */
    v = xe_select_f64(v < -200.0, -200.0, v); /* in float's range; exp's selects decide */
    v = xe_select_f64(v > 200.0, 200.0, v);   /* NaN stays */
    float hi = (float)v, e = xe_exp_lo_f32(hi, (float)(v - (double)hi));
    return (float)(d / (1.0 + (double)e * 4294967296.0));
}
#endif
XE_HOSTDEV static inline double xe_gelu_erf_f64(double x)
{
    return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
}
XE_HOSTDEV static inline double xe_gelu_tanh_f64(double x)
{
    return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}
/* xe-op end */
/* xe-op shift_left: a count outside [0, width) shifts every bit out (ONNX BitShift) */
XE_HOSTDEV static inline int32_t xe_shl_i32(int32_t a, int32_t n)
{
    return n < 0 || n > 31 ? 0 : (int32_t)((uint32_t)a << n);
}
XE_HOSTDEV static inline int64_t xe_shl_i64(int64_t a, int64_t n)
{
    return n < 0 || n > 63 ? 0 : (int64_t)((uint64_t)a << n);
}
/* xe-op end */
/* xe-op shift_right: a count outside [0, width) shifts every bit out (-1 for a negative value);
   arithmetic on signed values, as numpy's right_shift */
XE_HOSTDEV static inline int32_t xe_shr_i32(int32_t a, int32_t n)
{
    return n < 0 || n > 31 ? (a < 0 ? -1 : 0) : a >> n;
}
XE_HOSTDEV static inline int64_t xe_shr_i64(int64_t a, int64_t n)
{
    return n < 0 || n > 63 ? (a < 0 ? -1 : 0) : a >> n;
}
/* xe-op end */
#endif
