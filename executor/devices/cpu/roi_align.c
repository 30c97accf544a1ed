/*
 * roi_align (ONNX RoiAlign, infer/roi.c), as ONNX's reference and
 * onnxruntime compute it. A region [x1, y1, x2, y2] scaled by
 * spatial_scale (less half a pixel with half_pixel; without it a region is
 * at least 1x1) is cut into output_height x output_width bins; each bin is
 * sampled on a grid of sampling_ratio (0: ceil(bin size)) points per side,
 * each point bilinear in the four pixels around it (a point more than a
 * pixel outside the image weighs nothing; one past the last row or column
 * takes it). avg: the mean of the points' values. max: the largest, over
 * the points, of the largest of a point's four weighted pixels, the odd
 * rule both implementations share (not the largest interpolated value).
 * The points' pixels and weights are worked once per region, for every
 * channel.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

/* One sampling point: the four pixels' offsets in an image and their weights. */
typedef struct point {
    int64_t pos[4];
    double w[4];
} point;

/* The settings of one run. */
typedef struct roi_run {
    int64_t c, h, w, oh, ow, sampling;
    double scale;
    bool half_pixel, max;
} roi_run;

/* The bilinear point at (y, x) of an h x w image (the reference's pre_calc). */
static point bilinear(const roi_run *r, double y, double x)
{
    if (y < -1.0 || y > (double)r->h || x < -1.0 || x > (double)r->w)
        return (point){{0, 0, 0, 0}, {0, 0, 0, 0}};
    y = y > 0 ? y : 0;
    x = x > 0 ? x : 0;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
    if (y0 >= r->h - 1)
        y1 = y0 = r->h - 1, y = (double)y0;
    else
        y1 = y0 + 1;
    if (x0 >= r->w - 1)
        x1 = x0 = r->w - 1, x = (double)x0;
    else
        x1 = x0 + 1;
    double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
    return (point){{y0 * r->w + x0, y0 * r->w + x1, y1 * r->w + x0, y1 * r->w + x1},
                   {hy * hx, hy * lx, ly * hx, ly * lx}};
}

/* One bin's value over its gh x gw points pts of image img. */
static double bin_value(const roi_run *r, const point *pts, int64_t n, const void *img, xe_dtype dt,
                        int64_t count)
{
    double v = 0;
    for (int64_t i = 0; i < n; i++) {
        const point *p = &pts[i];
        double q[4];
        for (int k = 0; k < 4; k++)
            q[k] = p->w[k] * xe_load_f64(img, dt, p->pos[k]);
        if (!r->max) {
            v += q[0] + q[1] + q[2] + q[3];
            continue;
        }
        double m = fmax(fmax(q[0], q[1]), fmax(q[2], q[3]));
        v = i == 0 ? m : fmax(v, m);
    }
    return r->max ? v : v / (double)count;
}

/* One region's bins: where they start, their size and the grid of points in each. */
typedef struct region {
    double x1, y1, bh, bw;
    int64_t gh, gw;
} region;

/* Region box's geometry (the reference's roi_align_forward). */
static region region_of(const roi_run *r, const double *box)
{
    double off = r->half_pixel ? 0.5 : 0;
    region g = {.x1 = box[0] * r->scale - off, .y1 = box[1] * r->scale - off};
    double rw = box[2] * r->scale - off - g.x1, rh = box[3] * r->scale - off - g.y1;
    if (!r->half_pixel) {
        rw = rw > 1 ? rw : 1;
        rh = rh > 1 ? rh : 1;
    }
    g.bh = rh / (double)r->oh, g.bw = rw / (double)r->ow;
    double gh = r->sampling > 0 ? (double)r->sampling : ceil(g.bh);
    double gw = r->sampling > 0 ? (double)r->sampling : ceil(g.bw);
    if (!(gh > 0 && gw > 0)) /* a region upside down (or NaN): no points, every bin 0 */
        gh = gw = 0;
    g.gh = gh > 1e9 ? (int64_t)1e9 : (int64_t)gh; /* beyond: refused as too many points */
    g.gw = gw > 1e9 ? (int64_t)1e9 : (int64_t)gw;
    return g;
}

/* Region g's points, gh x gw per bin, bins in order. */
static void region_points(const roi_run *r, const region *g, point *pts)
{
    int64_t k = 0;
    for (int64_t ph = 0; ph < r->oh; ph++)
        for (int64_t pw = 0; pw < r->ow; pw++)
            for (int64_t iy = 0; iy < g->gh; iy++) {
                double y = g->y1 + (double)ph * g->bh + ((double)iy + 0.5) * g->bh / (double)g->gh;
                for (int64_t ix = 0; ix < g->gw; ix++) {
                    double x =
                        g->x1 + (double)pw * g->bw + ((double)ix + 0.5) * g->bw / (double)g->gw;
                    pts[k++] = bilinear(r, y, x);
                }
            }
}

/* Every batch index within [0, n); the first bad one is an error that names it. */
static xe_code check_batches(const xe_kernel_args *a, int64_t n, xe_status *st)
{
    const xe_tensor *b = a->in[2];
    for (int64_t k = 0; k < xe_tensor_numel(b); k++) {
        int64_t v = ((const int64_t *)b->data)[k];
        if (v < 0 || v >= n)
            return xe_fail(st, XE_ERR_RUNTIME,
                           "node %s (roi_align): batch index %lld of region %lld is outside [0, "
                           "%lld)",
                           a->node->name, (long long)v, (long long)k, (long long)n);
    }
    return XE_OK;
}

/* *pts holding at least n points (grown as needed); false when out of memory or n too large. */
static bool reserve(point **pts, int64_t *cap, int64_t n)
{
    if (n <= *cap)
        return true;
    if (n > ((int64_t)1 << 30))
        return false;
    point *p = realloc(*pts, (size_t)n * sizeof(point));
    if (!p)
        return false;
    *pts = p, *cap = n;
    return true;
}

/* Region k of the run into y, through the points buffer *pts (capacity *cap). */
static xe_code one_region(const xe_kernel_args *a, const roi_run *r, int64_t k, point **pts,
                          int64_t *cap, xe_status *st)
{
    const xe_tensor *x = a->in[0], *rois = a->in[1];
    double box[4];
    for (int j = 0; j < 4; j++)
        box[j] = xe_load_f64(rois->data, rois->dtype, k * 4 + j);
    region g = region_of(r, box);
    int64_t bins = r->oh * r->ow, per_bin = g.gh * g.gw, count = per_bin > 1 ? per_bin : 1;
    if (!reserve(pts, cap, per_bin * bins))
        return xe_fail(st, XE_ERR_NOMEM,
                       "node %s (roi_align): region %lld needs %lld x %lld sampling points a bin",
                       a->node->name, (long long)k, (long long)g.gh, (long long)g.gw);
    region_points(r, &g, *pts);
    const point *p0 = *pts;
    int64_t b = ((const int64_t *)a->in[2]->data)[k];
    size_t xsz = xe_dtype_size(x->dtype);
#pragma omp parallel for if (r->c * bins * per_bin > 4096)
    for (int64_t ch = 0; ch < r->c; ch++) {
        const char *img = (const char *)x->data + (size_t)((b * r->c + ch) * r->h * r->w) * xsz;
        for (int64_t p = 0; p < bins; p++)
            xe_store_f64(a->out->data, a->out->dtype, (k * r->c + ch) * bins + p,
                         bin_value(r, p0 + p * per_bin, per_bin, img, x->dtype, count));
    }
    return XE_OK;
}

xe_code xe_cpu_roi_align(const xe_kernel_args *a, xe_status *st)
{
    const xe_tensor *x = a->in[0];
    roi_run r = {.c = x->shape.dims[1],
                 .h = x->shape.dims[2],
                 .w = x->shape.dims[3],
                 .oh = a->out->shape.dims[2],
                 .ow = a->out->shape.dims[3],
                 .sampling = xe_node_attr_int(a->node, "sampling_ratio", 0),
                 .scale = xe_node_attr_float(a->node, "spatial_scale", 1.0),
                 .half_pixel = xe_node_attr_bool(a->node, "half_pixel", true),
                 .max = !strcmp(xe_node_attr_string(a->node, "mode", "avg"), "max")};
    if (check_batches(a, x->shape.dims[0], st) != XE_OK)
        return st->code;
    point *pts = NULL;
    int64_t cap = 0;
    xe_code rc = XE_OK;
    for (int64_t k = 0; k < a->out->shape.dims[0] && rc == XE_OK; k++)
        rc = one_region(a, &r, k, &pts, &cap, st);
    free(pts);
    return rc;
}
