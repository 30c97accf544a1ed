/*
 * Products of a few rows by packed constant weights (executor/devices/cpu/small_rows.c), which the
 * engine's f32 and f16 products with at most XE_SMALL_ROWS rows run (dnnl_matmul.c). Every row
 * count up to the limit (tiles of 6 rows and their remainders), widths that fill panels of 16
 * exactly, leave a tail, or are narrower than one, depths of 1 and more, B plain and transposed,
 * f32 and f16: each element against the f64 sum of its products, within the bound of an f32
 * sum of K products, |error| <= K * 2^-23 * sum |a_k b_k| (+ the f64 rounding), and exactly
 * where the products are small integers (every partial sum exact).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "cpu/small_rows.h"
#include "xlac/dtype.h"

TestSuite(small_rows, .timeout = 60);

/* A pseudo-random value in [-1, 1), or an integer in [-4, 4] when integers. */
static float value(uint32_t *s, bool integers)
{
    *s = *s * 1664525u + 1013904223u;
    return integers ? (float)((int)(*s >> 16) % 9 - 4) : (float)(*s >> 8) / 8388608.0f - 1.0f;
}

/* One product M x K x N with B stored [K, N] (or [N, K], transposed) in f32 or f16. */
static void check(int64_t M, int64_t K, int64_t N, bool transposed, bool half, bool integers)
{
    uint32_t seed = (uint32_t)(M * 131 + K * 7 + N);
    float *a = malloc((size_t)(M * K) * sizeof *a), *bf = malloc((size_t)(K * N) * sizeof *bf);
    xe_f16 *bh = malloc((size_t)(K * N) * sizeof *bh);
    float *c = malloc((size_t)(M * N) * sizeof *c);
    cr_assert(a && bf && bh && c);
    for (int64_t i = 0; i < M * K; i++)
        a[i] = value(&seed, integers);
    for (int64_t i = 0; i < K * N; i++) {
        bh[i] = xe_f32_to_f16(value(&seed, integers));
        bf[i] = half ? xe_f16_to_f32(bh[i]) : value(&seed, integers);
    }
    int64_t sk = transposed ? 1 : N, sn = transposed ? K : 1;
    float *packed = xe_small_rows_pack(half ? (const void *)bh : bf, half, K, N, sk, sn);
    cr_assert_not_null(packed);
    xe_small_rows_run(a, packed, c, M, K, N);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double want = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                double b = half ? xe_f16_to_f32(bh[k * sk + n * sn]) : bf[k * sk + n * sn];
                want += (double)a[m * K + k] * b;
                mag += fabs((double)a[m * K + k] * b);
            }
            double got = c[m * N + n], bound = integers ? 0 : (double)K * 0x1p-23 * mag + 1e-30;
            cr_assert(fabs(got - want) <= bound,
                      "M %lld K %lld N %lld%s%s: c[%lld][%lld] = %.9g, f64 %.9g (bound %.3g)",
                      (long long)M, (long long)K, (long long)N, transposed ? " transposed" : "",
                      half ? " f16" : "", (long long)m, (long long)n, got, want, bound);
        }
    free(packed);
    free(a);
    free(bf);
    free(bh);
    free(c);
}

Test(small_rows, every_row_count_and_width_against_f64)
{
    if (!xe_small_rows_available())
        cr_skip_test("skipped: this CPU has no AVX2 and FMA, so the engine does not use the kernel");
    const int64_t widths[] = {1, 15, 16, 17, 48, 300}, depths[] = {1, 7, 256};
    for (int64_t M = 1; M <= XE_SMALL_ROWS; M++)
        for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
            for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++)
                for (int t = 0; t < 2; t++)
                    check(M, depths[d], widths[w], t, false, false);
}

Test(small_rows, f16_weights_and_exact_integer_sums)
{
    if (!xe_small_rows_available())
        cr_skip_test("skipped: this CPU has no AVX2 and FMA, so the engine does not use the kernel");
    for (int64_t M = 1; M <= XE_SMALL_ROWS; M += 3) {
        check(M, 256, 17, false, true, false);
        check(M, 64, 40, true, true, false);
        check(M, 1000, 33, false, false, true);
        check(M, 1000, 33, true, true, true);
    }
}

/* A product large enough for the OpenMP team (M K N >= 2^17): the panels split between threads. */
Test(small_rows, a_parallel_product)
{
    if (!xe_small_rows_available())
        cr_skip_test("skipped: this CPU has no AVX2 and FMA, so the engine does not use the kernel");
    check(8, 256, 1000, false, false, false);
    check(5, 300, 700, true, false, true);
}

/* The rows the engine sends here: none without the kernel, one where oneDNN's AVX-512 matmul
   (weights packed once) is the faster, up to XE_SMALL_ROWS on AVX2 alone. */
Test(small_rows, the_engine_limit_follows_the_cpu)
{
    int limit = xe_small_rows_limit();
    if (!xe_small_rows_available())
        cr_assert_eq(limit, 0);
    else if (__builtin_cpu_supports("avx512f"))
        cr_assert_eq(limit, 1);
    else
        cr_assert_eq(limit, XE_SMALL_ROWS);
}
