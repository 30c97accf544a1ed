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
    union {
        uint32_t u;
        float f;
    } v;
    v.u = bits;
    return v.f;
}

XE_HOSTDEV static inline uint16_t xe_f2h(float f)
{
    union {
        uint32_t u;
        float f;
    } v;
    v.f = f;
    uint32_t x = v.u, sign = (x >> 16) & 0x8000, absx = x & 0x7fffffffu;
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

/* NaN-propagating maximum and minimum (numpy's maximum/minimum). */
XE_HOSTDEV static inline float xe_max_f32(float a, float b)
{
    return (a != a || a > b) ? a : b;
}
XE_HOSTDEV static inline float xe_min_f32(float a, float b)
{
    return (a != a || a < b) ? a : b;
}
XE_HOSTDEV static inline double xe_max_f64(double a, double b)
{
    return (a != a || a > b) ? a : b;
}
XE_HOSTDEV static inline double xe_min_f64(double a, double b)
{
    return (a != a || a < b) ? a : b;
}

XE_HOSTDEV static inline float xe_sigmoid_f32(float x)
{
    return 1.0f / (1.0f + expf(-x));
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
XE_HOSTDEV static inline float xe_gelu_tanh_f32(float x)
{
    return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
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

#endif
