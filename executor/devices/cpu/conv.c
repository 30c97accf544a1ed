/*
 * CPU conv2d (ONNX Conv over NCHW): f32 on the CPU engine (cpu/dnnl_conv.c,
 * oneDNN); f64, and what the engine refuses, by im2col + BLAS gemm here.
 * f64 stays on OpenBLAS because oneDNN has no f64 convolution or product;
 * the f64 path is also the double-precision reference the tests hold the
 * engine to.
 *
 * For image n and group g, the output block Y[M/g, OH*OW] is
 * W_g[M/g, K] x col[K, OH*OW] with K = C/g * kh * kw, where row
 * (c, i, j) of col holds input channel c shifted by tap (i, j) at every
 * output position (zero where the tap falls in the padding). The output
 * positions are cut into column blocks so that a block of col stays in
 * the core's cache, and the (image, group, block) tasks are one OpenMP
 * loop of single-threaded gemms, the way cpu/matmul.c runs BLAS inside
 * the executor's one thread pool. A bias is written into the block first
 * and the gemm adds to it (beta = 1).
 *
 * Two shapes skip im2col: a 1x1 kernel with stride 1 and no padding,
 * whose input already is the column matrix, and a depthwise convolution
 * (one input and one output channel per group), which is a direct loop
 * over rows that vectorises along the output row.
 */
#include <cblas.h>
#include <omp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/dnnl_engine.h"
#include "kernels.h"
#include "nn.h"

/* Bytes of one column block of col: about a core's L2 (larger and smaller timed the same). */
#define COL_BLOCK_BYTES (1024 * 1024)
/* A column block is at least this many output positions (when there are that many). */
#define MIN_COLS 64
/* Below this many multiply-adds a conv runs on the calling thread. */
#define PARALLEL_MIN_MACS (1 << 18)

typedef struct conv_job {
    xe_window p;
    const char *x, *w, *b; /* input, weight, bias (NULL: none) */
    char *y;               /* output */
    size_t es;             /* element size: 4 (f32) or 8 (f64) */
    int64_t cg, mg;        /* input and output channels per group */
    int64_t K, P;          /* gemm depth cg*kh*kw; output positions oh*ow */
    int64_t cols, parts;   /* columns per block; blocks per (image, group) */
    bool pointwise;        /* 1x1, stride 1, no padding: no im2col */
} conv_job;

/* Copies n elements, src read every `step` elements, to contiguous dst. */
static void copy_strided(char *dst, const char *src, int64_t n, int64_t step, size_t es)
{
    if (step == 1) {
        memcpy(dst, src, (size_t)n * es);
    } else if (es == 4) {
        for (int64_t k = 0; k < n; k++)
            ((uint32_t *)dst)[k] = ((const uint32_t *)src)[k * step];
    } else {
        for (int64_t k = 0; k < n; k++)
            ((uint64_t *)dst)[k] = ((const uint64_t *)src)[k * step];
    }
}

/* One row of col: input plane x shifted by tap (i, j), output positions [p0, p0 + cols). */
static void im2col_row(const conv_job *jb, const char *x, char *dst, int64_t i, int64_t j,
                       int64_t p0, int64_t cols)
{
    const xe_window *p = &jb->p;
    size_t es = jb->es;
    for (int64_t q = 0, pos = p0; q < cols;) {
        int64_t oh = pos / p->ow, ow0 = pos % p->ow;
        int64_t run = p->ow - ow0 < cols - q ? p->ow - ow0 : cols - q;
        int64_t ih = oh * p->sh - p->pt + i * p->dh, iw0 = ow0 * p->sw - p->pl + j * p->dw;
        char *d = dst + (size_t)q * es;
        if (ih < 0 || ih >= p->h) {
            memset(d, 0, (size_t)run * es);
        } else {
            int64_t lo, hi;
            xe_window_range(iw0, p->sw, p->w, run, &lo, &hi);
            memset(d, 0, (size_t)lo * es);
            if (hi > lo) /* an empty range may start left of the row: no pointer to form then */
                copy_strided(d + (size_t)lo * es, x + (size_t)(ih * p->w + iw0 + lo * p->sw) * es,
                             hi - lo, p->sw, es);
            memset(d + (size_t)hi * es, 0, (size_t)(run - hi) * es);
        }
        q += run;
        pos += run;
    }
}

/* col[K, cols] for image n, group g, output positions [p0, p0 + cols). */
static void im2col(const conv_job *jb, int64_t n, int64_t g, int64_t p0, int64_t cols, char *col)
{
    const xe_window *p = &jb->p;
    const char *x = jb->x + (size_t)((n * p->c + g * jb->cg) * p->h * p->w) * jb->es;
    for (int64_t c = 0; c < jb->cg; c++)
        for (int64_t i = 0; i < p->kh; i++)
            for (int64_t j = 0; j < p->kw; j++) {
                int64_t r = (c * p->kh + i) * p->kw + j;
                im2col_row(jb, x + (size_t)(c * p->h * p->w) * jb->es,
                           col + (size_t)(r * cols) * jb->es, i, j, p0, cols);
            }
}

/* Y block rows of group g, image n, columns [p0, p0 + cols) set to the bias. */
static void fill_bias(const conv_job *jb, char *y, int64_t g, int64_t cols)
{
    for (int64_t m = 0; m < jb->mg; m++) {
        char *row = y + (size_t)(m * jb->P) * jb->es;
        if (jb->es == 4) {
            float v = ((const float *)jb->b)[g * jb->mg + m];
            for (int64_t q = 0; q < cols; q++)
                ((float *)row)[q] = v;
        } else {
            double v = ((const double *)jb->b)[g * jb->mg + m];
            for (int64_t q = 0; q < cols; q++)
                ((double *)row)[q] = v;
        }
    }
}

/* Task t = (image, group, column block): im2col (unless pointwise), then one gemm. */
static void conv_task(const conv_job *jb, int64_t t, char *col)
{
    int64_t blk = t % jb->parts, ng = t / jb->parts, g = ng % jb->p.groups, n = ng / jb->p.groups;
    int64_t p0 = blk * jb->cols, cols = jb->P - p0 < jb->cols ? jb->P - p0 : jb->cols;
    int64_t ldb = cols;
    const char *B = col;
    if (jb->pointwise) {
        B = jb->x + (size_t)((n * jb->p.c + g * jb->cg) * jb->P + p0) * jb->es;
        ldb = jb->P;
    } else {
        im2col(jb, n, g, p0, cols, col);
    }
    char *y = jb->y + (size_t)((n * jb->p.m + g * jb->mg) * jb->P + p0) * jb->es;
    const char *w = jb->w + (size_t)(g * jb->mg * jb->K) * jb->es;
    if (jb->b)
        fill_bias(jb, y, g, cols);
    int M = (int)jb->mg, N = (int)cols, K = (int)jb->K, ldy = (int)jb->P;
    if (jb->es == 4)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, (const float *)w, K,
                    (const float *)B, (int)ldb, jb->b ? 1.0f : 0.0f, (float *)y, ldy);
    else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0, (const double *)w, K,
                    (const double *)B, (int)ldb, jb->b ? 1.0 : 0.0, (double *)y, ldy);
}

static void blas_one_thread(void)
{
    openblas_set_num_threads(1);
}

/* Column blocks: cache-sized, and enough tasks for every thread when the work allows. */
static void plan_blocks(conv_job *jb, int threads)
{
    int64_t cols = COL_BLOCK_BYTES / (int64_t)((size_t)jb->K * jb->es);
    cols = cols < MIN_COLS ? MIN_COLS : cols;
    int64_t images = jb->p.n * jb->p.groups;
    if (images * ((jb->P + cols - 1) / cols) < threads) { /* cut finer so every thread has work */
        int64_t want = (threads + images - 1) / images;
        int64_t finer = (jb->P + want - 1) / want;
        cols = finer < cols ? finer : cols;
        cols = cols < 16 ? 16 : cols;
    }
    jb->cols = cols < jb->P ? cols : jb->P;
    jb->parts = (jb->P + jb->cols - 1) / jb->cols;
}

/* The im2col + gemm path over every task. */
static xe_code conv_gemm(conv_job *jb, const xe_kernel_args *a, xe_status *st)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, blas_one_thread);
    int threads = omp_get_max_threads();
    plan_blocks(jb, threads);
    if (jb->K > INT32_MAX || jb->P > INT32_MAX || jb->mg > INT32_MAX)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (conv2d): dims above 2^31", a->node->name);
    char *col = NULL;
    if (!jb->pointwise && !(col = malloc((size_t)threads * (size_t)(jb->K * jb->cols) * jb->es)))
        return xe_fail(st, XE_ERR_NOMEM, "node %s (conv2d): out of memory for im2col (%lld bytes)",
                       a->node->name, (long long)(threads * jb->K * jb->cols * (int64_t)jb->es));
    int64_t tasks = jb->p.n * jb->p.groups * jb->parts;
    double macs = (double)jb->p.n * (double)jb->p.m * (double)jb->P * (double)jb->K;
#pragma omp parallel for schedule(dynamic, 1) if (tasks > 1 && macs >= PARALLEL_MIN_MACS)
    for (int64_t t = 0; t < tasks; t++)
        conv_task(jb, t,
                  col ? col + (size_t)omp_get_thread_num() * (size_t)(jb->K * jb->cols) * jb->es
                      : NULL);
    free(col);
    return XE_OK;
}

/* Depthwise output row oh of plane (n, c): out = bias + sum of taps, along the row. */
#define DEPTHWISE_ROW(T)                                                                           \
    static void depthwise_row_##T(const conv_job *jb, int64_t nc, int64_t oh)                      \
    {                                                                                              \
        const xe_window *p = &jb->p;                                                               \
        int64_t c = nc % p->c;                                                                     \
        const T *x = (const T *)jb->x + nc * p->h * p->w,                                          \
                *w = (const T *)jb->w + c * p->kh * p->kw;                                         \
        T *y = (T *)jb->y + (nc * p->oh + oh) * p->ow;                                             \
        T bias = jb->b ? ((const T *)jb->b)[c] : 0;                                                \
        for (int64_t q = 0; q < p->ow; q++)                                                        \
            y[q] = bias;                                                                           \
        for (int64_t i = 0; i < p->kh; i++) {                                                      \
            int64_t ih = oh * p->sh - p->pt + i * p->dh;                                           \
            if (ih < 0 || ih >= p->h)                                                              \
                continue;                                                                          \
            for (int64_t j = 0; j < p->kw; j++) {                                                  \
                int64_t iw0 = j * p->dw - p->pl, lo, hi;                                           \
                xe_window_range(iw0, p->sw, p->w, p->ow, &lo, &hi);                                \
                const T *row = x + ih * p->w;                                                      \
                T wv = w[i * p->kw + j];                                                           \
                for (int64_t q = lo; q < hi; q++)                                                  \
                    y[q] += wv * row[iw0 + q * p->sw];                                             \
            }                                                                                      \
        }                                                                                          \
    }
DEPTHWISE_ROW(float)
DEPTHWISE_ROW(double)

static void conv_depthwise(const conv_job *jb)
{
    int64_t rows = jb->p.n * jb->p.c * jb->p.oh;
    double macs = (double)rows * (double)jb->p.ow * (double)(jb->p.kh * jb->p.kw);
#pragma omp parallel for schedule(static) if (macs >= PARALLEL_MIN_MACS)
    for (int64_t r = 0; r < rows; r++) {
        if (jb->es == 4)
            depthwise_row_float(jb, r / jb->p.oh, r % jb->p.oh);
        else
            depthwise_row_double(jb, r / jb->p.oh, r % jb->p.oh);
    }
}

xe_code xe_cpu_conv2d(const xe_kernel_args *a, xe_status *st)
{
    if (a->out->dtype == XE_F32) { /* the engine (cpu/dnnl_conv.c); what it refuses runs here */
        xe_code c = xe_dnnl_conv2d(a, st);
        if (c != XE_ERR_UNSUPPORTED)
            return c;
        xe_status_clear(st);
    }
    conv_job jb = {.x = a->in[0]->data, .w = a->in[1]->data, .y = a->out->data};
    if (xe_window_read(a->node, &a->in[0]->shape, &a->in[1]->shape, &jb.p, st) != XE_OK)
        return xe_status_prefix(st, "node %s (conv2d): ", a->node->name);
    if (a->out->dtype != XE_F32 && a->out->dtype != XE_F64)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (conv2d): %s is not supported",
                       a->node->name, xe_dtype_name(a->out->dtype));
    jb.b = a->n_in > 2 ? a->in[2]->data : NULL;
    jb.es = xe_dtype_size(a->out->dtype);
    jb.cg = jb.p.c / jb.p.groups;
    jb.mg = jb.p.m / jb.p.groups;
    jb.K = jb.cg * jb.p.kh * jb.p.kw;
    jb.P = jb.p.oh * jb.p.ow;
    if (xe_tensor_numel(a->out) == 0)
        return XE_OK;
    if (jb.K == 0) { /* no input channels: the bias alone */
        for (int64_t t = 0; t < jb.p.n * jb.p.groups; t++)
            if (jb.b)
                fill_bias(&jb, jb.y + (size_t)(t * jb.mg * jb.P) * jb.es, t % jb.p.groups, jb.P);
            else
                memset(jb.y + (size_t)(t * jb.mg * jb.P) * jb.es, 0,
                       (size_t)(jb.mg * jb.P) * jb.es);
        return XE_OK;
    }
    if (jb.cg == 1 && jb.mg == 1)
        return conv_depthwise(&jb), XE_OK;
    jb.pointwise = jb.p.kh == 1 && jb.p.kw == 1 && jb.p.sh == 1 && jb.p.sw == 1 && jb.p.pt == 0 &&
                   jb.p.pl == 0 && jb.p.pb == 0 && jb.p.pr == 0;
    return conv_gemm(&jb, a, st);
}
