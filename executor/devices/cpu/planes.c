/*
 * Transposed planes: n matrices of rows x cols elements, each stored row
 * after row, rewritten column after column. With rows = C and cols = H*W
 * that is NCHW to NHWC; with rows = H*W and cols = C the way back. The
 * engine's reorders between those layouts (dnnl_engine.c) come here.
 *
 * Why not oneDNN's own reorder: in oneDNN 2.6 its jit:uni reorder moves
 * a u8 8x32x64x64 value NCHW to NHWC in 0.43-0.53 ms (about 2 GB/s) and
 * f32 8x64x32x32 in 0.36 ms (ONEDNN_VERBOSE, 2 threads, AVX-512 EPYC); a
 * QDQ ResNet spent a third of its convolutions' time there.
 *
 * The work is square tiles of one 16-byte vector per row (16x16 bytes,
 * 8x8 two-byte, 4x4 four-byte elements) transposed in registers by the
 * perfect shuffle: interleaving row i with row i + k/2 rotates an
 * element's (row, column) index bits left by one, so log2(k) rounds of it
 * transpose a k x k tile. Four-byte elements (f32, the convolutions'
 * values) take wider tiles first where the build has them: 16x16 of one
 * 64-byte vector per row (AVX-512), then 8x8 of 32 bytes (AVX), the 4x4
 * ones only for what those leave; the 4x4 tile alone moved 9-10 GB/s on a
 * [64, 32x32] plane, a call per 64 bytes. The tiles go through blocks of 64 x 64
 * elements, so a block's reads and writes both stay in the L1 cache; what
 * does not fill a tile is copied element by element. Elements are moved,
 * never converted, so the result is bit-exact for any type; 8-byte
 * elements take 2x2 tiles, 16-, 32- and 64-byte ones (a blocked layout's
 * channel block, dnnl_engine.c) fixed-size copies, other sizes memcpy.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "planes.h"

#if defined(__AVX__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Below this many bytes, the calling thread does it all. */
#define PARALLEL_MIN_BYTES (1 << 17)
/* A block's side, in elements (a multiple of every tile's side); 16 for elements over 4 bytes,
   so that a block stays within 16 KB. */
#define BLOCK 64
#define WIDE_BLOCK 16

/* Element by element, elements of type T: d[c * ds + r] = s[r * ss + c]. */
#define ELEMENTS(T, s, ss, d, ds, nr, nc)                                                          \
    for (int64_t r = 0; r < (nr); r++)                                                             \
        for (int64_t c = 0; c < (nc); c++)                                                         \
            ((T *)(void *)(d))[c * (ds) + r] = ((const T *)(const void *)(s))[r * (ss) + c];

/* The wide elements: a channel block of a blocked layout (8 or 16 channels of 1, 2 or 4 bytes)
   moved as one, by the vector moves a fixed-size copy compiles to. */
typedef struct {
    uint64_t q[2];
} bytes16;
typedef struct {
    uint64_t q[4];
} bytes32;
typedef struct {
    uint64_t q[8];
} bytes64;

/* Element by element over rows [0, nr), columns [0, nc); strides in elements of es bytes. */
static void transpose_elements(const char *s, int64_t ss, char *d, int64_t ds, int64_t nr,
                               int64_t nc, size_t es)
{
    if (es == 1)
        ELEMENTS(uint8_t, s, ss, d, ds, nr, nc)
    else if (es == 2)
        ELEMENTS(uint16_t, s, ss, d, ds, nr, nc)
    else if (es == 4)
        ELEMENTS(uint32_t, s, ss, d, ds, nr, nc)
    else if (es == 8)
        ELEMENTS(uint64_t, s, ss, d, ds, nr, nc)
    else if (es == 16)
        ELEMENTS(bytes16, s, ss, d, ds, nr, nc)
    else if (es == 32)
        ELEMENTS(bytes32, s, ss, d, ds, nr, nc)
    else if (es == 64)
        ELEMENTS(bytes64, s, ss, d, ds, nr, nc)
    else
        for (int64_t r = 0; r < nr; r++)
            for (int64_t c = 0; c < nc; c++)
                memcpy(d + (c * ds + r) * (int64_t)es, s + (r * ss + c) * (int64_t)es, es);
}

#if defined(__SSE2__)
/* Rows v[0..k) of a k x k tile of (16 / k)-byte elements, transposed in place. */
#define SHUFFLE_ROUNDS(v, k, lo, hi)                                                               \
    for (int round = 1; round < (k); round *= 2) {                                                 \
        __m128i t[k];                                                                              \
        for (int i = 0; i < (k) / 2; i++) {                                                        \
            t[2 * i] = lo(v[i], v[i + (k) / 2]);                                                   \
            t[2 * i + 1] = hi(v[i], v[i + (k) / 2]);                                               \
        }                                                                                          \
        memcpy(v, t, sizeof t);                                                                    \
    }

/* One k x k tile from s (row stride ss bytes) to d (row stride ds bytes). */
#define TILE_FN(name, k, lo, hi)                                                                   \
    static void name(const char *s, int64_t ss, char *d, int64_t ds)                               \
    {                                                                                              \
        __m128i v[k];                                                                              \
        for (int i = 0; i < (k); i++)                                                              \
            v[i] = _mm_loadu_si128((const __m128i *)(const void *)(s + i * ss));                   \
        SHUFFLE_ROUNDS(v, k, lo, hi)                                                               \
        for (int i = 0; i < (k); i++)                                                              \
            _mm_storeu_si128((__m128i *)(void *)(d + i * ds), v[i]);                               \
    }

TILE_FN(tile_1, 16, _mm_unpacklo_epi8, _mm_unpackhi_epi8)
TILE_FN(tile_2, 8, _mm_unpacklo_epi16, _mm_unpackhi_epi16)
TILE_FN(tile_4, 4, _mm_unpacklo_epi32, _mm_unpackhi_epi32)
TILE_FN(tile_8, 2, _mm_unpacklo_epi64, _mm_unpackhi_epi64)
#endif

#if defined(__AVX512F__)
/* A 16 x 16 tile of 4-byte elements, one 64-byte vector per row: the same perfect shuffle, its
   whole-vector interleave of rows i and i + 8 being two two-source permutes. */
static void tile_4_x16(const char *s, int64_t ss, char *d, int64_t ds)
{
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi =
        _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    __m512i v[16], t[16];
    for (int i = 0; i < 16; i++)
        v[i] = _mm512_loadu_si512((const void *)(s + i * ss));
    for (int round = 1; round < 16; round *= 2) {
        for (int i = 0; i < 8; i++) {
            t[2 * i] = _mm512_permutex2var_epi32(v[i], lo, v[i + 8]);
            t[2 * i + 1] = _mm512_permutex2var_epi32(v[i], hi, v[i + 8]);
        }
        memcpy(v, t, sizeof t);
    }
    for (int i = 0; i < 16; i++)
        _mm512_storeu_si512((void *)(d + i * ds), v[i]);
}
#endif

#if defined(__AVX__)
/* An 8 x 8 tile of 4-byte elements, one 32-byte vector per row: pairs of rows interleaved
   within 128-bit lanes, then quads of them, then the lanes exchanged (AVX has no whole-vector
   interleave of two sources). */
static void tile_4_x8(const char *s, int64_t ss, char *d, int64_t ds)
{
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; i++)
        r[i] = _mm256_loadu_ps((const float *)(const void *)(s + i * ss));
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
    for (int i = 0; i < 8; i++)
        _mm256_storeu_ps((float *)(void *)(d + i * ds), r[i]);
}
#endif

typedef void (*tile_fn)(const char *s, int64_t ss, char *d, int64_t ds);

/* The tiles for elements of es bytes, widest first, and their sides; how many there are. */
static int tiles_for(size_t es, tile_fn fn[3], int64_t side[3])
{
    int n = 0;
#if defined(__AVX512F__)
    if (es == 4) {
        fn[n] = tile_4_x16;
        side[n++] = 16;
    }
#endif
#if defined(__AVX__)
    if (es == 4) {
        fn[n] = tile_4_x8;
        side[n++] = 8;
    }
#endif
#if defined(__SSE2__)
    if (es == 1 || es == 2 || es == 4 || es == 8) {
        fn[n] = es == 1 ? tile_1 : es == 2 ? tile_2 : es == 4 ? tile_4 : tile_8;
        side[n++] = 16 / (int64_t)es;
    }
#endif
    (void)fn;
    (void)side;
    return n;
}

/*
 * Rows [0, nr), columns [0, nc) of s (row stride ss elements) into d (ds): the whole tiles of the
 * widest kind, then the right and bottom edges they leave with the next kind, and element by
 * element where no kind is left.
 */
static void transpose_region(const char *s, int64_t ss, char *d, int64_t ds, int64_t nr, int64_t nc,
                             size_t es, const tile_fn *fn, const int64_t *side, int kinds)
{
    if (nr == 0 || nc == 0)
        return;
    if (kinds == 0) {
        transpose_elements(s, ss, d, ds, nr, nc, es);
        return;
    }
    int64_t k = side[0], fr = nr / k * k, fc = nc / k * k, e = (int64_t)es;
    for (int64_t r = 0; r < fr; r += k)
        for (int64_t c = 0; c < fc; c += k)
            fn[0](s + (r * ss + c) * e, ss * e, d + (c * ds + r) * e, ds * e);
    transpose_region(s + fc * e, ss, d + fc * ds * e, ds, nr, nc - fc, es, fn + 1, side + 1,
                     kinds - 1); /* right edge */
    transpose_region(s + fr * ss * e, ss, d + fr * e, ds, nr - fr, fc, es, fn + 1, side + 1,
                     kinds - 1); /* bottom edge */
}

/* One block: rows [0, nr), columns [0, nc) of s (row stride ss elements) into d (ds). */
static void transpose_block(const char *s, int64_t ss, char *d, int64_t ds, int64_t nr, int64_t nc,
                            size_t es)
{
    tile_fn fn[3];
    int64_t side[3];
    int kinds = tiles_for(es, fn, side);
    transpose_region(s, ss, d, ds, nr, nc, es, fn, side, kinds);
}

void xe_cpu_transpose_planes(const void *src, void *dst, int64_t n, int64_t rows, int64_t cols,
                             size_t es)
{
    const char *s = src;
    char *d = dst;
    int64_t side = es > 4 ? WIDE_BLOCK : BLOCK;
    int64_t rb = (rows + side - 1) / side, plane = rows * cols * (int64_t)es;
    bool wide = (double)n * (double)plane >= PARALLEL_MIN_BYTES;
#pragma omp parallel for collapse(2) schedule(static) if (wide)
    for (int64_t i = 0; i < n; i++)
        for (int64_t b = 0; b < rb; b++) {
            int64_t r = b * side, nr = rows - r < side ? rows - r : side;
            for (int64_t c = 0; c < cols; c += side)
                transpose_block(s + i * plane + (r * cols + c) * (int64_t)es, cols,
                                d + i * plane + (c * rows + r) * (int64_t)es, rows, nr,
                                cols - c < side ? cols - c : side, es);
        }
}
