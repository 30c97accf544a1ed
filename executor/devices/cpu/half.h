/*
 * f16 <-> f32 over arrays (half.c): the CPU's widening and narrowing of half-precision values
 * around the engine's f32 products.
 */
#ifndef XE_CPU_HALF_H
#define XE_CPU_HALF_H

#include <stdint.h>

#include "xlac/dtype.h"

/*
 * to[i] = from[i] widened, n values. Every value as xe_h2f gives it except a signaling NaN, which
 * may come out quiet (F16C's conversion sets the quiet bit): for values that go on into
 * arithmetic, which quiets it anyway. Runs on the OpenMP team once n is large.
 */
void xe_cpu_widen_f16(const xe_f16 *from, float *to, int64_t n);

/* to[i] = from[i] rounded to f16, n values, exactly as xe_f2h (NaN payloads included). */
void xe_cpu_narrow_f16(const float *from, xe_f16 *to, int64_t n);

#endif
