/*
 * deform_conv2d (ONNX DeformConv, 2-D; infer/sample.c), as ONNX's reference
 * computes it: conv2d whose every tap reads x at its own place. Output
 * (i, j)'s tap (a, b) of input channel c (in offset group o = c / (C /
 * offset_groups)) reads x[n, c] at
 *
 *   h = i * stride_h - pad_top  + a * dilation_h + offset[n, ((o*kh + a)*kw + b)*2,     i, j]
 *   w = j * stride_w - pad_left + b * dilation_w + offset[n, ((o*kh + a)*kw + b)*2 + 1, i, j]
 *
 * bilinear in the four pixels around (h, w), each outside the image read
 * as zero (the reference's GridSample with align_corners and zero
 * padding, so the place is held in f32), times mask[n, (o*kh + a)*kw + b,
 * i, j] (1 without a mask). Per batch and group the sampled values are
 * laid out as columns [C/groups * kh * kw, OH * OW] and multiplied by the
 * group's weights; the bias starts each sum.
 */
#include <math.h>
#include <stdlib.h>

#include "kernels.h"
#include "nn.h"

/* The settings of one run. */
typedef struct deform_run {
    xe_window p;
    int64_t og, c_per_og, c_per_g, m_per_g, taps, points;
    const xe_tensor *x, *w, *offset, *bias, *mask;
    double *col; /* [c_per_g * taps, points] */
    double *acc; /* [points] */
} deform_run;

/* Element i of a float tensor's data as a double. */
static inline double at(const xe_tensor *t, int64_t i)
{
    return t->dtype == XE_F32 ? ((const float *)t->data)[i] : ((const double *)t->data)[i];
}

/* Pixel (y, x) of image base (h x w), zero outside. */
static double pixel(const deform_run *r, int64_t base, int64_t y, int64_t x)
{
    if (y < 0 || y >= r->p.h || x < 0 || x >= r->p.w)
        return 0;
    return at(r->x, base + y * r->p.w + x);
}

/* x's image base bilinear at (h, w), held in f32 as the reference holds it. */
static double sample(const deform_run *r, int64_t base, double h, double w)
{
    float fy = (float)h, fx = (float)w;
    if (!isfinite(fy) || !isfinite(fx) || fy < -2 || fx < -2 || fy > (float)r->p.h + 1 ||
        fx > (float)r->p.w + 1)
        return 0; /* every tap outside (or no place at all) */
    float y0 = floorf(fy), x0 = floorf(fx);
    double ty = (double)(fy - y0), tx = (double)(fx - x0);
    int64_t iy = (int64_t)y0, ix = (int64_t)x0;
    double top = (1 - tx) * pixel(r, base, iy, ix) + tx * pixel(r, base, iy, ix + 1);
    double bottom = (1 - tx) * pixel(r, base, iy + 1, ix) + tx * pixel(r, base, iy + 1, ix + 1);
    return (1 - ty) * top + ty * bottom;
}

/* The columns of batch n, group g: row (c, a, b), column (i, j). */
static void fill_columns(deform_run *r, int64_t n, int64_t g)
{
    const xe_window *p = &r->p;
    int64_t oh = p->oh, ow = p->ow;
    for (int64_t cl = 0; cl < r->c_per_g; cl++) {
        int64_t c = g * r->c_per_g + cl, o = c / r->c_per_og, base = (n * p->c + c) * p->h * p->w;
        for (int64_t k = 0; k < r->taps; k++) {
            int64_t a = k / p->kw, b = k % p->kw, tap = o * r->taps + k;
            int64_t off_h = ((n * r->og * r->taps + tap) * 2) * r->points;
            int64_t off_w = off_h + r->points, msk = (n * r->og * r->taps + tap) * r->points;
            double *row = r->col + (cl * r->taps + k) * r->points;
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    int64_t q = i * ow + j;
                    double h = (double)(i * p->sh - p->pt + a * p->dh) + at(r->offset, off_h + q);
                    double w = (double)(j * p->sw - p->pl + b * p->dw) + at(r->offset, off_w + q);
                    double v = sample(r, base, h, w);
                    row[q] = r->mask ? v * at(r->mask, msk + q) : v;
                }
        }
    }
}

/* y[n, m] for the output channels m of group g: the bias plus weights times columns. */
static void multiply(deform_run *r, xe_tensor *y, int64_t n, int64_t g)
{
    int64_t rows = r->c_per_g * r->taps;
    for (int64_t ml = 0; ml < r->m_per_g; ml++) {
        int64_t m = g * r->m_per_g + ml;
        double bias = at(r->bias, m);
        for (int64_t q = 0; q < r->points; q++)
            r->acc[q] = bias;
        for (int64_t k = 0; k < rows; k++) {
            double wv = at(r->w, m * rows + k);
            const double *row = r->col + k * r->points;
            for (int64_t q = 0; q < r->points; q++)
                r->acc[q] += wv * row[q];
        }
        for (int64_t q = 0; q < r->points; q++)
            xe_store_f64(y->data, y->dtype, (n * r->p.m + m) * r->points + q, r->acc[q]);
    }
}

xe_code xe_cpu_deform_conv2d(const xe_kernel_args *a, xe_status *st)
{
    deform_run r = {.x = a->in[0],
                    .w = a->in[1],
                    .offset = a->in[2],
                    .bias = a->in[3],
                    .mask = a->n_in > 4 ? a->in[4] : NULL,
                    .og = xe_node_attr_int(a->node, "offset_groups", 1)};
    if (xe_window_read(a->node, &r.x->shape, &r.w->shape, &r.p, st) != XE_OK)
        return xe_status_prefix(st, "node %s (deform_conv2d): ", a->node->name);
    r.c_per_og = r.p.c / r.og;
    r.c_per_g = r.p.c / r.p.groups;
    r.m_per_g = r.p.m / r.p.groups;
    r.taps = r.p.kh * r.p.kw;
    r.points = r.p.oh * r.p.ow;
    size_t rows = (size_t)(r.c_per_g * r.taps), pts = (size_t)(r.points ? r.points : 1);
    r.col = malloc(rows * pts * sizeof(double));
    r.acc = malloc(pts * sizeof(double));
    if (!r.col || !r.acc) {
        free(r.col);
        free(r.acc);
        return xe_fail(st, XE_ERR_NOMEM, "node %s (deform_conv2d): out of memory (%zu columns)",
                       a->node->name, rows * pts);
    }
    for (int64_t n = 0; n < r.p.n; n++)
        for (int64_t g = 0; g < r.p.groups; g++) {
            fill_columns(&r, n, g);
            multiply(&r, a->out, n, g);
        }
    free(r.col);
    free(r.acc);
    return XE_OK;
}
