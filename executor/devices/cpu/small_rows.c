/*
 * A few rows times constant weights. A KV-cache decode step multiplies a handful of rows (one per
 * sequence) by each layer's weights: the product reads every weight once and is bound by memory.
 * oneDNN 2.6 on AVX2 (gemm:jit, weights plain) packs B again at every call: on a 2-core AVX2
 * EPYC, a decode step's 8 x 256 x 8192 logits product took 1.5 ms in the model (its 8 MB of
 * weights read, packed and read again) and 0.35 ms alone with B in cache. Here B is packed once,
 * when the primitive is made, into panels of 16 columns, each panel K rows of 16 contiguous
 * floats; a tile of up to 6 rows x 16 columns stays in 12 AVX registers while its panel streams
 * through once. Threads split the panels.
 */
#include "small_rows.h"

#include <stdlib.h>
#include <string.h>

#include "scalar.h"

#define PANEL 16    /* columns of a panel: two AVX vectors */
#define TILE_ROWS 6 /* rows of a tile: 12 accumulators, 2 weight vectors, 1 broadcast */
/* Below this many multiply-adds, one thread. */
#define PARALLEL_MIN (1 << 17)

float *xe_small_rows_pack(const void *b, bool half, int64_t K, int64_t N, int64_t sk, int64_t sn)
{
    int64_t panels = (N + PANEL - 1) / PANEL;
    size_t bytes = (size_t)(panels * K * PANEL) * sizeof(float);
    float *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p)
        return NULL;
    const float *bf = b;
    const xe_f16 *bh = b;
    for (int64_t q = 0; q < panels; q++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < PANEL; j++) {
                int64_t n = q * PANEL + j, at = k * sk + n * sn;
                p[(q * K + k) * PANEL + j] = n >= N ? 0.0f : half ? xe_h2f_vec(bh[at]) : bf[at];
            }
    return p;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))

/* rows (a constant where inlined) rows of A times one panel, into c's first cols columns. */
AVX2 static inline __attribute__((always_inline)) void
tile(int rows, const float *a, int64_t K, const float *panel, float *c, int64_t ldc, int64_t cols)
{
    __m256 acc[TILE_ROWS][2];
    for (int r = 0; r < rows; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        __m256 b0 = _mm256_load_ps(panel + k * PANEL), b1 = _mm256_load_ps(panel + k * PANEL + 8);
        for (int r = 0; r < rows; r++) {
            __m256 x = _mm256_broadcast_ss(a + r * K + k);
            acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
        }
    }
    for (int r = 0; r < rows; r++) {
        if (cols == PANEL) {
            _mm256_storeu_ps(c + r * ldc, acc[r][0]);
            _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
        } else {
            float t[PANEL];
            _mm256_storeu_ps(t, acc[r][0]);
            _mm256_storeu_ps(t + 8, acc[r][1]);
            memcpy(c + r * ldc, t, (size_t)cols * sizeof(float));
        }
    }
}

/* One panel for every row of A, TILE_ROWS at a time. */
AVX2 static void panel_rows(const float *a, const float *panel, float *c, int64_t M, int64_t K,
                            int64_t N, int64_t cols)
{
    for (int64_t m = 0; m < M; m += TILE_ROWS) {
        const float *am = a + m * K;
        float *cm = c + m * N;
        switch (M - m < TILE_ROWS ? M - m : TILE_ROWS) {
        case 1:
            tile(1, am, K, panel, cm, N, cols);
            break;
        case 2:
            tile(2, am, K, panel, cm, N, cols);
            break;
        case 3:
            tile(3, am, K, panel, cm, N, cols);
            break;
        case 4:
            tile(4, am, K, panel, cm, N, cols);
            break;
        case 5:
            tile(5, am, K, panel, cm, N, cols);
            break;
        default:
            tile(6, am, K, panel, cm, N, cols);
            break;
        }
    }
}

bool xe_small_rows_available(void)
{
    static int known; /* 0 unknown, 1 no, 2 yes; a race only repeats the same answer */
    if (!known)
        known = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 2 : 1;
    return known == 2;
}

int xe_small_rows_limit(void)
{
    if (!xe_small_rows_available())
        return 0;
    return __builtin_cpu_supports("avx512f") ? 1 : XE_SMALL_ROWS;
}

void xe_small_rows_run(const float *a, const float *packed, float *c, int64_t M, int64_t K,
                       int64_t N)
{
    int64_t panels = (N + PANEL - 1) / PANEL;
#pragma omp parallel for schedule(static) if (M * K * N >= PARALLEL_MIN)
    for (int64_t q = 0; q < panels; q++) {
        int64_t cols = N - q * PANEL < PANEL ? N - q * PANEL : PANEL;
        panel_rows(a, packed + q * K * PANEL, c + q * PANEL, M, K, N, cols);
    }
}
#else
bool xe_small_rows_available(void)
{
    return false;
}

int xe_small_rows_limit(void)
{
    return 0;
}

void xe_small_rows_run(const float *a, const float *packed, float *c, int64_t M, int64_t K,
                       int64_t N)
{
    (void)a, (void)packed, (void)c, (void)M, (void)K, (void)N;
}
#endif
