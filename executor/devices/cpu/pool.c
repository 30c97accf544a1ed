/*
 * CPU max_pool2d and avg_pool2d (ONNX MaxPool and AveragePool over NCHW,
 * f32 and f64, with strides, dilations, asymmetric pads and ceil_mode).
 *
 * Each output row is computed a tap at a time: for tap (i, j) the valid
 * output columns form one range, and the row is updated along it (max, or
 * sum), a loop that vectorises. avg_pool2d then divides each element by
 * its window's count: the taps inside the input, or with
 * count_include_pad the taps inside the padded input (never the extra
 * positions that ceil_mode adds past the end padding), as onnxruntime
 * and PyTorch count them. max propagates NaN; a window with no tap inside
 * the input gives -inf (max) or NaN (average of nothing).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels.h"
#include "nn.h"

/* Below this many window taps a pool runs on the calling thread. */
#define PARALLEL_MIN_TAPS (1 << 16)

/* Taps k in [0, n) with lo <= x0 + k*d < hi. */
static int64_t taps_inside(int64_t x0, int64_t d, int64_t n, int64_t lo, int64_t hi)
{
    int64_t c = 0;
    for (int64_t k = 0; k < n; k++)
        c += x0 + k * d >= lo && x0 + k * d < hi;
    return c;
}

/* The divisor of avg_pool2d at (oh, ow). */
static int64_t window_count(const xe_window *p, int64_t oh, int64_t ow)
{
    int64_t ih0 = oh * p->sh - p->pt, iw0 = ow * p->sw - p->pl;
    if (p->count_include_pad)
        return taps_inside(ih0, p->dh, p->kh, -p->pt, p->h + p->pb) *
               taps_inside(iw0, p->dw, p->kw, -p->pl, p->w + p->pr);
    return taps_inside(ih0, p->dh, p->kh, 0, p->h) * taps_inside(iw0, p->dw, p->kw, 0, p->w);
}

/*
 * Output row oh of plane nc: MAX selects max (NaN wins) or sum, then avg
 * divides. T is float or double.
 */
#define POOL_ROW(T)                                                                                \
    static void pool_row_##T(const xe_window *p, const T *x, T *y, bool max, int64_t nc,           \
                             int64_t oh)                                                           \
    {                                                                                              \
        const T *plane = x + nc * p->h * p->w;                                                     \
        T *out = y + (nc * p->oh + oh) * p->ow;                                                    \
        for (int64_t q = 0; q < p->ow; q++)                                                        \
            out[q] = max ? (T)-INFINITY : (T)0;                                                    \
        for (int64_t i = 0; i < p->kh; i++) {                                                      \
            int64_t ih = oh * p->sh - p->pt + i * p->dh;                                           \
            if (ih < 0 || ih >= p->h)                                                              \
                continue;                                                                          \
            const T *row = plane + ih * p->w;                                                      \
            for (int64_t j = 0; j < p->kw; j++) {                                                  \
                int64_t iw0 = j * p->dw - p->pl, lo, hi;                                           \
                xe_window_range(iw0, p->sw, p->w, p->ow, &lo, &hi);                                \
                if (max)                                                                           \
                    for (int64_t q = lo; q < hi; q++) {                                            \
                        T v = row[iw0 + q * p->sw];                                                \
                        out[q] = v > out[q] || v != v ? v : out[q];                                \
                    }                                                                              \
                else                                                                               \
                    for (int64_t q = lo; q < hi; q++)                                              \
                        out[q] += row[iw0 + q * p->sw];                                            \
            }                                                                                      \
        }                                                                                          \
        if (!max)                                                                                  \
            for (int64_t q = 0; q < p->ow; q++)                                                    \
                out[q] /= (T)window_count(p, oh, q);                                               \
    }
POOL_ROW(float)
POOL_ROW(double)

static xe_code pool(const xe_kernel_args *a, bool max, xe_status *st)
{
    xe_window p;
    if (xe_window_read(a->node, &a->in[0]->shape, NULL, &p, st) != XE_OK)
        return xe_status_prefix(st, "node %s (%s): ", a->node->name, xe_op_name(a->node->op));
    xe_dtype dt = a->out->dtype;
    if (dt != XE_F32 && dt != XE_F64)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (%s): %s is not supported", a->node->name,
                       xe_op_name(a->node->op), xe_dtype_name(dt));
    int64_t rows = p.n * p.c * p.oh;
    double taps = (double)rows * (double)p.ow * (double)(p.kh * p.kw);
#pragma omp parallel for schedule(static) if (taps >= PARALLEL_MIN_TAPS)
    for (int64_t r = 0; r < rows; r++) {
        if (dt == XE_F32)
            pool_row_float(&p, a->in[0]->data, a->out->data, max, r / p.oh, r % p.oh);
        else
            pool_row_double(&p, a->in[0]->data, a->out->data, max, r / p.oh, r % p.oh);
    }
    return XE_OK;
}

xe_code xe_cpu_max_pool2d(const xe_kernel_args *a, xe_status *st)
{
    return pool(a, true, st);
}

xe_code xe_cpu_avg_pool2d(const xe_kernel_args *a, xe_status *st)
{
    return pool(a, false, st);
}
