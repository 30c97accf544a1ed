/*
 * f32 products of a few rows by constant weights (small_rows.c): a decode step's linear layers,
 * A [M, K] (M <= XE_SMALL_ROWS) times a constant B [K, N], B packed once into column panels.
 */
#ifndef XE_CPU_SMALL_ROWS_H
#define XE_CPU_SMALL_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "xlac/dtype.h"

/* The most rows the kernel takes: above, the engine's packing pays for itself. */
#define XE_SMALL_ROWS 8

/* Whether this CPU runs the kernel (AVX2 and FMA). */
bool xe_small_rows_available(void);

/*
 * The most rows the engine sends to the kernel on this CPU: XE_SMALL_ROWS with AVX2 and FMA but
 * no AVX-512 (oneDNN's AVX2 gemm packs constant weights again at every call), 1 with AVX-512
 * (oneDNN's AVX-512 matmul packs them once, and at 8 rows it is the faster of the two: a decode
 * step's products 0.69-0.75 ms against 0.95-1.11), 0 without AVX2 and FMA.
 */
int xe_small_rows_limit(void);

/*
 * B [K, N], element (k, n) at b[k * sk + n * sn], f32 (half false) or f16 (half true, widened
 * exactly), packed into ceil(N / 16) panels of K x 16 values, zero past N; NULL when out of
 * memory. Free it with free().
 */
float *xe_small_rows_pack(const void *b, bool half, int64_t K, int64_t N, int64_t sk, int64_t sn);

/* C [M, N] (row-major) = A [M, K] (row-major) times the packed B, M <= XE_SMALL_ROWS. Each element
   sums its K products in order, one fused multiply-add at a time. */
void xe_small_rows_run(const float *a, const float *packed, float *c, int64_t M, int64_t K,
                       int64_t N);

#endif
