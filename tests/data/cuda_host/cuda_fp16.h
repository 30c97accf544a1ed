/* Host stand-in for <cuda_fp16.h> (see cuda_runtime.h here): f16 through the executor's own
   conversions. */
#pragma once
#include <stdint.h>
extern "C" float xe_f16_to_f32(uint16_t h);
extern "C" uint16_t xe_f32_to_f16(float f);
typedef uint16_t __half;
static inline float __half2float(__half h) { return xe_f16_to_f32(h); }
static inline __half __ushort_as_half(uint16_t v) { return v; }
static inline uint16_t __half_as_ushort(__half h) { return h; }
static inline __half __float2half_rn(float f) { return xe_f32_to_f16(f); }
