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
 * transpose a k x k tile. The tiles go through blocks of 64 x 64
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

#if defined(__SSE2__)
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

typedef void (*tile_fn)(const char *s, int64_t ss, char *d, int64_t ds);

/* The tile of elements of es bytes, and its side; NULL where there is none. */
static tile_fn tile_for(size_t es, int64_t *k)
{
    *k = es == 0 || es > 8 ? 0 : 16 / (int64_t)es;
    return es == 1 ? tile_1 : es == 2 ? tile_2 : es == 4 ? tile_4 : es == 8 ? tile_8 : NULL;
}
#else
typedef void (*tile_fn)(const char *s, int64_t ss, char *d, int64_t ds);
static tile_fn tile_for(size_t es, int64_t *k)
{
    (void)es;
    *k = 0;
    return NULL;
}
#endif

/* One block: rows [0, nr), columns [0, nc) of s (row stride ss elements) into d (ds). */
static void transpose_block(const char *s, int64_t ss, char *d, int64_t ds, int64_t nr, int64_t nc,
                            size_t es)
{
    int64_t k;
    tile_fn tile = tile_for(es, &k);
    int64_t fr = tile ? nr / k * k : 0, fc = tile ? nc / k * k : 0, e = (int64_t)es;
    for (int64_t r = 0; r < fr; r += k)
        for (int64_t c = 0; c < fc; c += k)
            tile(s + (r * ss + c) * e, ss * e, d + (c * ds + r) * e, ds * e);
    transpose_elements(s + fc * e, ss, d + fc * ds * e, ds, nr, nc - fc, es); /* right edge */
    transpose_elements(s + fr * ss * e, ss, d + fr * e, ds, nr - fr, fc, es); /* bottom edge */
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
