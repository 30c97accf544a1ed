/*
 * Conversions of the narrow dtypes (xlac/dtype.h) that the CPU kernels and
 * dtype.c share: bf16 <-> f32 (round to nearest even, NaN stays a quiet
 * NaN) and a float to the narrow integers (truncate, NaN gives 0, saturate).
 * They live beside scalar.h rather than in it because scalar.h's common part
 * is the start of every generated program, and the code generator has no
 * narrow dtypes yet (plan/supports.c): when it gets them, these move there.
 */
#ifndef XE_SCALAR_NARROW_H
#define XE_SCALAR_NARROW_H

#include "scalar.h"

/* bfloat16 <-> binary32: bf16 is the top half of a binary32; rounding to nearest even, a NaN stays a quiet NaN. */
static inline XE_VEC_INLINE float xe_bf2f(uint16_t b)
{
    return xe_f32_of_bits((uint32_t)b << 16);
}

static inline XE_VEC_INLINE uint16_t xe_f2bf(float f)
{
    uint32_t x = xe_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* A float to the narrow integers (Cast): truncated toward zero, NaN gives 0, out of range saturates. */
static inline int64_t xe_f64_to_range(double x, int64_t lo, int64_t hi)
{
    int64_t v = xe_f64_to_i64(x);
    return v < lo ? lo : v > hi ? hi : v;
}

/* The same for an f32 x into [lo, hi] (the narrow integers' bounds, as floats), by selects that
   vectorize: clamped first, the value truncates inside the range; NaN gives 0. The double and
   int64 of xe_f64_to_range kept a QDQ model's f32 -> u8 casts scalar (5 ns an element on AVX2). */
static inline XE_VEC_INLINE int32_t xe_f32_to_narrow(float x, float lo, float hi)
{
    float c = xe_min_f32(xe_max_f32(x, lo), hi);
    return (int32_t)xe_select_f32(c == c, c, 0.0f);
}

static inline uint64_t xe_f64_to_u64(double x)
{
    if (x != x || x <= 0.0)
        return 0;
    if (x >= 18446744073709551615.0)
        return (uint64_t)18446744073709551615ULL;
    return (uint64_t)x;
}

#endif
