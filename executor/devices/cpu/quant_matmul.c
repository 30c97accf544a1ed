/*
 * dynamic_quant_matmul(x, w, w_scale, colsum) on the CPU: what onnxruntime's quantize_dynamic
 * writes around every product,
 *
 *   (q, xs, zp) = DynamicQuantizeLinear(x)
 *   y = f32(MatMulInteger(q, w, zp, 0)) * (xs * w_scale)
 *
 * in three passes instead of some thirty per-op kernels: the range of x (one read), the u8
 * quantization of x (one read, one write of a quarter of its bytes), the exact i32 product of the
 * u8 and i8 operands (oneDNN's int8 matmul, w packed once by dnnl_matmul.c as for any constant
 * weights, and split in two first where the CPU has no VNNI, since oneDNN's AVX2 kernel saturates
 * in int16; the loop here for what oneDNN refuses) and the rescale, acc - zp colsum(w) (colsum
 * folded at import) as f32, times xs * w_scale.
 *
 * The arithmetic is the per-op composition's (frontends/onnx/ops/quant.c), operation for
 * operation, so the results are the same bits: the range holds 0 and is taken with xe_min_f32 /
 * xe_max_f32 (NaN propagates), scale = (hi - lo) / 255, round half to even as ox_round_even
 * writes it (the op round: nearbyintf in the default rounding mode), saturation to [0, 255] with
 * the same maximum and minimum, the same truncating cast (NaN gives 0), the i32 terms wrapping.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dnnl_engine.h"
#include "kernels.h"
#include "scalar.h"
#include "scalar_narrow.h"

/* Below this many elements, one thread. */
#define PARALLEL_MIN (1 << 15)
/* Lanes of the range's accumulators (a vector's worth, so the loop vectorises). */
#define LANES 16

/* min(max(round(v), 0), 255) cast to u8 (truncating, NaN gives 0), as the composition. */
static inline uint8_t saturate_u8(float v)
{
    return (uint8_t)xe_f32_to_narrow(nearbyintf(v), 0.0f, 255.0f);
}

/* [lo, hi] of x[0..n) and 0, by xe_min_f32 and xe_max_f32 (their order does not matter). */
static void value_range(const float *x, int64_t n, float *lo, float *hi)
{
    float l = 0.0f, h = 0.0f;
#pragma omp parallel if (n >= PARALLEL_MIN)
    {
        float vl[LANES] = {0}, vh[LANES] = {0};
#pragma omp for schedule(static) nowait
        for (int64_t i = 0; i < n / LANES; i++)
            for (int j = 0; j < LANES; j++) {
                vl[j] = xe_min_f32(vl[j], x[i * LANES + j]);
                vh[j] = xe_max_f32(vh[j], x[i * LANES + j]);
            }
#pragma omp critical(xe_quant_range)
        for (int j = 0; j < LANES; j++) {
            l = xe_min_f32(l, vl[j]);
            h = xe_max_f32(h, vh[j]);
        }
    }
    for (int64_t i = n / LANES * LANES; i < n; i++) {
        l = xe_min_f32(l, x[i]);
        h = xe_max_f32(h, x[i]);
    }
    *lo = l;
    *hi = h;
}

/* q = saturate(round(x / scale) + zp), n elements. */
static void quantize(const float *x, int64_t n, float scale, float zp, uint8_t *q)
{
#pragma omp parallel for simd schedule(static) if (parallel : n >= PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
        q[i] = (uint8_t)xe_f32_to_narrow(nearbyintf(x[i] / scale) + zp, 0.0f, 255.0f);
    }
}

/* acc[M,N] = q[M,K] w[K,N], exact modulo 2^32 (matmul.c's loop wraps the same way). */
static void product_loop(const uint8_t *q, const int8_t *w, int64_t M, int64_t K, int64_t N,
                         int32_t *acc)
{
#pragma omp parallel for schedule(static) if (M * N * K >= PARALLEL_MIN)
    for (int64_t m = 0; m < M; m++) {
        uint32_t *c = (uint32_t *)acc + m * N;
        memset(c, 0, (size_t)N * sizeof *c);
        for (int64_t k = 0; k < K; k++) {
            uint32_t a = q[m * K + k];
            const int8_t *wk = w + k * N;
            for (int64_t n = 0; n < N; n++)
                c[n] += a * (uint32_t)(int32_t)wk[n];
        }
    }
}

/* acc = q w on oneDNN (dnnl_matmul.c, the node's kernel cache keeps w packed); else the loop. */
static xe_code product(const xe_kernel_args *a, const uint8_t *q, int64_t M, int64_t K, int64_t N,
                       int32_t *acc, xe_status *st)
{
    xe_tensor tq = {.dtype = XE_U8,
                    .shape = {.rank = 2, .dims = {M, K}},
                    .data = (void *)q,
                    .nbytes = (size_t)(M * K),
                    .refcount = 1,
                    .borrowed = true};
    xe_tensor tc = {.dtype = XE_I32,
                    .shape = {.rank = 2, .dims = {M, N}},
                    .data = acc,
                    .nbytes = (size_t)(M * N) * sizeof *acc,
                    .refcount = 1,
                    .borrowed = true};
    xe_tensor *in[2] = {&tq, a->in[1]};
    xe_kernel_args mm = *a;
    mm.n_in = 2;
    mm.in = in;
    mm.out = &tc;
    xe_code c = K > 0 ? xe_dnnl_matmul(&mm, st) : XE_ERR_UNSUPPORTED;
    if (c != XE_ERR_UNSUPPORTED)
        return c;
    xe_status_clear(st);
    product_loop(q, a->in[1]->data, M, K, N, acc);
    return XE_OK;
}

/* y = f32(acc - zp colsum) * s, the i32 terms wrapping as the composition's. */
static void rescale(const int32_t *acc, const int32_t *colsum, int64_t M, int64_t N, uint8_t zp,
                    float s, float *y)
{
#pragma omp parallel for schedule(static) if (M * N >= PARALLEL_MIN)
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            uint32_t v = (uint32_t)acc[m * N + n] - (uint32_t)zp * (uint32_t)colsum[n];
            y[m * N + n] = (float)(int32_t)v * s;
        }
}

xe_code xe_cpu_dynamic_quant_matmul(const xe_kernel_args *a, xe_status *st)
{
    const xe_tensor *x = a->in[0], *w = a->in[1];
    int64_t K = w->shape.dims[0], N = w->shape.dims[1], n = xe_tensor_numel(x);
    int64_t M = K > 0 ? n / K : xe_tensor_numel(a->out) / (N > 0 ? N : 1);
    if (M * N == 0)
        return XE_OK;
    /* 1. DynamicQuantizeLinear's scale and zero point */
    float lo, hi;
    value_range(x->data, n, &lo, &hi);
    float scale = (hi - lo) / 255.0f;
    uint8_t zp = saturate_u8(0.0f - lo / scale);
    /* 2. the u8 operand, 3. its exact product with w */
    uint8_t *q = xe_dnnl_scratch(XE_DNNL_SCRATCH_SRC, (size_t)n + 1);
    int32_t *acc = xe_dnnl_scratch(XE_DNNL_SCRATCH_DST, (size_t)(M * N) * sizeof *acc);
    if (!q || !acc)
        return xe_fail(st, XE_ERR_NOMEM, "node %s (dynamic_quant_matmul): out of memory",
                       a->node->name);
    quantize(x->data, n, scale, (float)zp, q);
    if (product(a, q, M, K, N, acc, st) != XE_OK)
        return st->code;
    /* 4. the rescale: MatMulInteger's centring, Cast, Mul by x_scale * w_scale */
    float s = scale * *(const float *)a->in[2]->data;
    rescale(acc, a->in[3]->data, M, N, zp, s, a->out->data);
    return XE_OK;
}
