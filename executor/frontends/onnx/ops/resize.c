/*
 * Resize (and Upsample, its older form) as gathers with constant positions,
 * one axis at a time (nearest, linear and cubic are separable): for each
 * output position along an axis its source coordinate (the coordinate
 * transformation mode), then
 *   nearest: one gather of the rounded position (the nearest mode);
 *   linear:  two gathers, floor and floor + 1, weighted 1 - t and t;
 *   cubic:   four gathers, floor - 1 to floor + 2, with Keys' weights
 *            (cubic_coeff_a; exclude_outside renormalises);
 *   antialias (linear or cubic, downsampling by s < 1): the kernel
 *            stretched by 1/s, about 2/s or 4/s taps, weights normalised.
 * Positions outside the input read its edge, as ONNX's reference does;
 * under tf_crop_and_resize (the roi's window of each axis) an output
 * position whose source lies outside the input is extrapolation_value.
 * The output sizes come from `sizes` (scaled alike on every axis under
 * keep_aspect_ratio_policy not_larger / not_smaller), or `scales` times
 * the input's dims, which must be known at load (a graph built per input
 * size has them), as must the roi. Not supported: an axis resized to more
 * than OX_FOLD_MAX positions (its position and weight tables are built at
 * load), or with more than OX_RESIZE_TAPS taps.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

#define OX_RESIZE_TAPS 64 /* the most taps of one output position (antialias at 1/16) */

typedef struct resize {
    int mode;                    /* 0 nearest, 1 linear, 3 cubic */
    char coord[32];              /* coordinate_transformation_mode */
    char nearest[32];            /* nearest_mode */
    double a;                    /* cubic_coeff_a */
    bool exclude;                /* exclude_outside */
    bool antialias;              /* linear and cubic only */
    bool crop;                   /* tf_crop_and_resize */
    double extrapolation;        /* extrapolation_value, under crop */
    double roi[2 * XE_MAX_RANK]; /* per dim: the window's start, then per dim its end */
} resize;

/* The source coordinate of output position i along axis d of in -> out at scale. */
static double source(const resize *r, int d, int64_t i, int64_t in, int64_t out, double scale)
{
    double width = scale * (double)in; /* ONNX's output_width: a real number */
    if (r->crop) {
        double lo = r->roi[d], hi = r->roi[XE_MAX_RANK + d], span = (hi - lo) * (double)(in - 1);
        return lo * (double)(in - 1) + (width == 1 ? span / 2 : (double)i * span / (width - 1));
    }
    if (!strcmp(r->coord, "align_corners"))
        return width == 1 ? 0.0 : (double)i * (double)(in - 1) / (width - 1);
    if (!strcmp(r->coord, "asymmetric"))
        return (double)i / scale;
    if (!strcmp(r->coord, "pytorch_half_pixel"))
        return width == 1 ? -0.5 : ((double)i + 0.5) / scale - 0.5;
    if (!strcmp(r->coord, "half_pixel_symmetric")) {
        double offset = (double)in / 2 * (1 - (double)out / width);
        return offset + ((double)i + 0.5) / scale - 0.5;
    }
    return ((double)i + 0.5) / scale - 0.5; /* half_pixel */
}

/* The nearest position to x (not an integer) by the nearest mode. */
static int64_t nearest(const resize *r, double x)
{
    double f = floor(x), t = x - f;
    if (t == 0)
        return (int64_t)f;
    if (!strcmp(r->nearest, "floor"))
        return (int64_t)f;
    if (!strcmp(r->nearest, "ceil"))
        return (int64_t)f + 1;
    if (!strcmp(r->nearest, "round_prefer_ceil"))
        return (int64_t)f + (t >= 0.5);
    return (int64_t)f + (t > 0.5); /* round_prefer_floor */
}

/* Keys' cubic weight at distance s. */
static double keys(double s, double a)
{
    s = fabs(s);
    if (s <= 1)
        return ((a + 2) * s - (a + 3)) * s * s + 1;
    return s < 2 ? ((a * s - 5 * a) * s + 8 * a) * s - 4 * a : 0;
}

/* The first tap's offset from floor(x) along an axis at scale: -1 for cubic, 0 for linear,
 * further out under antialias when downsampling (the kernel stretched by 1/scale). In double,
 * finite or not: taps_fit checks it before any conversion. */
static double first_tap_at(const resize *r, double scale)
{
    double s = r->antialias && scale < 1 ? scale : 1;
    return floor(-(r->mode == 3 ? 2 : 1) / s) + 1;
}

/* The number of taps per output position along an axis at scale, in double (taps_fit). */
static double n_taps_at(const resize *r, double scale)
{
    return r->mode == 0 ? 1 : 2 - 2 * first_tap_at(r, scale);
}

/* Whether an axis at scale needs at most OX_RESIZE_TAPS taps per position (antialias at a small
   scale widens the kernel by 1 / scale). */
static bool taps_fit(const resize *r, double scale)
{
    return n_taps_at(r, scale) <= OX_RESIZE_TAPS;
}

/* first_tap_at and n_taps_at as integers, for an axis taps_fit has passed. */
static int64_t first_tap(const resize *r, double scale)
{
    return (int64_t)first_tap_at(r, scale);
}

static int64_t n_taps(const resize *r, double scale)
{
    return (int64_t)n_taps_at(r, scale);
}

/* Taps (positions clamped to the edge) and weights of source coordinate x; the kernel is
 * evaluated at each tap's distance from x (times scale under antialias). */
static void taps(const resize *r, double x, int64_t in, double scale, int64_t *pos, double *w)
{
    if (r->mode == 0) {
        int64_t p = nearest(r, x);
        pos[0] = p < 0 ? 0 : p >= in ? in - 1 : p;
        w[0] = 1;
        return;
    }
    int64_t f = (int64_t)floor(x), first = f + first_tap(r, scale), n = n_taps(r, scale);
    double s = r->antialias && scale < 1 ? scale : 1, sum = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t p = first + k;
        double dist = fabs((double)p - x) * s;
        w[k] = r->mode == 1 ? fmax(0, 1 - dist) : keys(dist, r->a);
        if (r->exclude && (p < 0 || p >= in))
            w[k] = 0;
        sum += w[k];
        pos[k] = p < 0 ? 0 : p >= in ? in - 1 : p;
    }
    for (int64_t k = 0; (r->exclude || r->antialias) && sum != 0 && k < n; k++)
        w[k] /= sum;
}

/* Under crop: y with the positions along axis whose source lies outside [0, in - 1] set to
 * extrapolation_value (ONNX's reference does this after each axis). */
static int extrapolate(ox_b *b, const resize *r, int y, int axis, const xe_shape *ws, int64_t in,
                       int64_t out, double scale)
{
    xe_tensor *m = xe_tensor_new(XE_BOOL, ws, XE_DEV_CPU, &b->st);
    if (!m)
        return b->failed = true, -1;
    bool any = false;
    for (int64_t i = 0; i < out; i++) {
        double x = source(r, axis, i, in, out, scale);
        ((bool *)m->data)[i] = x < 0 || x > (double)(in - 1);
        any |= ((bool *)m->data)[i];
    }
    if (!any)
        return xe_tensor_release(m), y;
    int e = ox_scalar(b, ox_type(b, y)->dtype, r->extrapolation);
    return ox_select(b, ox_const(b, m), e, y);
}

/* y resized along axis from in to out at scale. */
static int resize_axis(ox_b *b, const resize *r, int y, int axis, int64_t in, int64_t out,
                       double scale)
{
    int n = (int)n_taps(r, scale), rank = ox_rank(b, y);
    xe_dtype dt = ox_type(b, y)->dtype;
    xe_shape ps = {.rank = 1, .dims = {out}}, ws = {.rank = rank};
    for (int d = 0; d < rank; d++)
        ws.dims[d] = d == axis ? out : 1;
    xe_tensor *pos[OX_RESIZE_TAPS] = {0}, *wt[OX_RESIZE_TAPS] = {0};
    for (int k = 0; k < n && !b->failed; k++) {
        pos[k] = xe_tensor_new(XE_I64, &ps, XE_DEV_CPU, &b->st);
        wt[k] = xe_tensor_new(dt, &ws, XE_DEV_CPU, &b->st);
        b->failed = !pos[k] || !wt[k];
    }
    for (int64_t i = 0; i < out && !b->failed; i++) {
        int64_t p[OX_RESIZE_TAPS];
        double w[OX_RESIZE_TAPS];
        taps(r, source(r, axis, i, in, out, scale), in, scale, p, w);
        for (int k = 0; k < n; k++) {
            ((int64_t *)pos[k]->data)[i] = p[k];
            xe_store_f64(wt[k]->data, dt, i, w[k]);
        }
    }
    ox_at at = OX_I("axis", axis);
    int acc = -1;
    for (int k = 0; k < n; k++) {
        int in2[2] = {y, ox_const(b, pos[k])};
        int g = ox_op(b, XE_OP_GATHER, in2, 2, &at, 1);
        int term = n == 1 ? g : ox_bin(b, XE_OP_MUL, g, ox_const(b, wt[k]));
        acc = k == 0 ? term : ox_bin(b, XE_OP_ADD, acc, term);
        if (n == 1)
            xe_tensor_release(wt[k]);
    }
    return r->crop && !b->failed ? extrapolate(b, r, acc, axis, &ws, in, out, scale) : acc;
}

/* The attributes into r; false (b failed) for what is not supported. */
static bool read_attrs(ox_b *b, resize *r)
{
    char mode[32];
    snprintf(mode, sizeof mode, "%s", ox_str(b, "mode", "nearest"));
    r->mode = !strcmp(mode, "nearest")                               ? 0
              : !strcmp(mode, "linear") || !strcmp(mode, "bilinear") ? 1
              : !strcmp(mode, "cubic")                               ? 3
                                                                     : -1;
    bool upsample = !strcmp(b->np->op_type, "Upsample");
    snprintf(r->coord, sizeof r->coord, "%s",
             upsample || b->opset < 11 ? "asymmetric"
                                       : ox_str(b, "coordinate_transformation_mode", "half_pixel"));
    snprintf(r->nearest, sizeof r->nearest, "%s",
             upsample || b->opset < 11 ? "floor" : ox_str(b, "nearest_mode", "round_prefer_floor"));
    r->a = ox_float(b, "cubic_coeff_a", -0.75);
    r->exclude = ox_int(b, "exclude_outside", 0) != 0;
    r->antialias = ox_int(b, "antialias", 0) != 0;
    r->crop = !strcmp(r->coord, "tf_crop_and_resize");
    r->extrapolation = ox_float(b, "extrapolation_value", 0);
    const char *keep = ox_str(b, "keep_aspect_ratio_policy", "stretch");
    if (r->mode < 0)
        ox_unsupported(b, "mode '%s' is not supported", mode);
    else if (r->antialias && r->mode == 0)
        ox_invalid(b, "antialias applies to linear and cubic modes, not nearest");
    else if (strcmp(keep, "stretch") && strcmp(keep, "not_larger") && strcmp(keep, "not_smaller"))
        ox_invalid(b, "keep_aspect_ratio_policy '%s' is not stretch, not_larger or not_smaller",
                   keep);
    return !b->failed;
}

/* Known floats of input k into v (up to cap): the count, or -1. */
static int const_floats(ox_b *b, int k, const char *what, double *v, int cap)
{
    const xe_tensor *t = ox_need_const(b, k, what);
    if (!t)
        return -1;
    int64_t n = xe_tensor_numel(t);
    if (n > cap) {
        ox_invalid(b, "%s has %lld values, at most %d are allowed", what, (long long)n, cap);
        return -1;
    }
    for (int64_t i = 0; i < n; i++)
        v[i] = xe_load_f64(t->data, t->dtype, i);
    return (int)n;
}

/* The roi (input 1) of tf_crop_and_resize into r->roi, over axes (n of them, or every dim). */
static bool read_roi(ox_b *b, resize *r, int rank, const int64_t *axes, int n)
{
    for (int d = 0; d < rank; d++) {
        r->roi[d] = 0;
        r->roi[XE_MAX_RANK + d] = 1;
    }
    if (!r->crop)
        return true;
    double v[2 * XE_MAX_RANK];
    int got = ox_in(b, 1) < 0 ? -1 : const_floats(b, 1, "roi", v, 2 * XE_MAX_RANK);
    if (got < 0)
        return b->failed ? false : (ox_invalid(b, "tf_crop_and_resize needs the roi input"), false);
    if (got != 2 * n)
        return ox_invalid(b, "roi has %d values for %d axes (a start and an end per axis)", got, n),
               false;
    for (int k = 0; k < n; k++) {
        int d;
        if (!ox_axis(b, axes[k], rank, &d))
            return false;
        r->roi[d] = v[k];
        r->roi[XE_MAX_RANK + d] = v[n + k];
    }
    return true;
}

/* sizes' scales under keep_aspect_ratio_policy not_larger (the least) or not_smaller (the
 * greatest), one for every axis; the output sizes rounded half up, as ONNX's reference. */
static void keep_aspect(ox_b *b, const xe_shape *s, const int64_t *axes, int n, int64_t *sizes)
{
    const char *keep = ox_str(b, "keep_aspect_ratio_policy", "stretch");
    if (!strcmp(keep, "stretch"))
        return;
    bool larger = !strcmp(keep, "not_smaller");
    double scale = 0;
    for (int k = 0; k < n; k++) {
        int d = (int)(axes[k] < 0 ? axes[k] + s->rank : axes[k]);
        double v = (double)sizes[k] / (double)s->dims[d];
        scale = k == 0 || (larger ? v > scale : v < scale) ? v : scale;
    }
    for (int k = 0; k < n; k++) {
        int d = (int)(axes[k] < 0 ? axes[k] + s->rank : axes[k]);
        sizes[k] = (int64_t)(scale * (double)s->dims[d] + 0.5);
    }
}

/* Per dim of x: output size and scale, from sizes or scales (over axes when given); the
 * roi into r. */
static bool out_sizes(ox_b *b, resize *rs, int x, int64_t *out, double *scale)
{
    const xe_shape *s = &ox_type(b, x)->shape;
    int r = s->rank, k_scales = b->opset < 11 ? 1 : 2;
    bool upsample7 = !strcmp(b->np->op_type, "Upsample") && b->opset < 9;
    int64_t axes[XE_MAX_RANK], sizes[XE_MAX_RANK];
    double sc[XE_MAX_RANK];
    int n_axes = ox_ints(b, "axes", axes, XE_MAX_RANK), n_sc = 0, n_sz = 0;
    if (upsample7) {
        const Onnx__AttributeProto *a = ox_attr(b, "scales");
        for (size_t k = 0; a && k < a->n_floats && k < XE_MAX_RANK; k++)
            sc[n_sc++] = a->floats[k];
    } else if (ox_in(b, k_scales) >= 0 &&
               (n_sc = const_floats(b, k_scales, "scales", sc, XE_MAX_RANK)) < 0) {
        return false;
    }
    if (b->opset >= 11 && n_sc <= 0 && ox_in(b, 3) >= 0 &&
        (n_sz = ox_const_ints(b, 3, "sizes", sizes, XE_MAX_RANK)) < 0)
        return false;
    int n = n_sz > 0 ? n_sz : n_sc;
    if (n_axes < 0)
        for (n_axes = 0; n_axes < r; n_axes++)
            axes[n_axes] = n_axes;
    if (n != n_axes)
        return ox_invalid(b, "scales or sizes have %d values for %d axes", n, n_axes), false;
    if (!read_roi(b, rs, r, axes, n_axes))
        return false;
    for (int k = 0; k < n_axes; k++)
        if (axes[k] < -r || axes[k] >= r || s->dims[axes[k] < 0 ? axes[k] + r : axes[k]] < 0)
            return ox_unsupported(b, "Resize of an unknown dim is not supported"), false;
    if (n_sz > 0)
        keep_aspect(b, s, axes, n_sz, sizes);
    for (int d = 0; d < r; d++) {
        out[d] = s->dims[d];
        scale[d] = 1;
    }
    for (int k = 0; k < n; k++) {
        int d;
        if (!ox_axis(b, axes[k], r, &d))
            return false;
        if (s->dims[d] < 0)
            return ox_unsupported(b, "Resize of an unknown dim is not supported"), false;
        double want = n_sz > 0 ? (double)sizes[k] : floor((double)s->dims[d] * sc[k]);
        if (want >
            OX_FOLD_MAX) /* its tables are built here: checked in double, before any conversion */
            return ox_unsupported(b, "Resize to %g along axis %d is beyond %d positions", want, d,
                                  OX_FOLD_MAX),
                   false;
        out[d] = want >= 0 ? (int64_t)want : -1; /* negative or NaN: not valid, below */
        scale[d] = n_sz > 0 ? (double)sizes[k] / (double)s->dims[d] : sc[k];
        if (out[d] < 0 || scale[d] <= 0)
            return ox_invalid(b, "a resized dim of %lld (scale %g) is not valid", (long long)out[d],
                              scale[d]),
                   false;
    }
    return true;
}

xe_code ox_b_resize(ox_b *b)
{
    int y = ox_in(b, 0);
    resize r;
    int64_t out[XE_MAX_RANK];
    double scale[XE_MAX_RANK];
    if (y < 0 || !read_attrs(b, &r) || !out_sizes(b, &r, y, out, scale))
        return ox_status(b);
    if (!xe_dtype_is_float(ox_type(b, y)->dtype) && r.mode != 0)
        return ox_unsupported(b, "linear and cubic Resize of %s is not supported",
                              xe_dtype_name(ox_type(b, y)->dtype));
    const xe_shape *s = &ox_type(b, y)->shape;
    int64_t in[XE_MAX_RANK];
    int rank = s->rank;
    memcpy(in, s->dims, sizeof in);
    for (int d = 0; d < rank; d++)
        if (!taps_fit(&r, scale[d]))
            return ox_unsupported(b,
                                  "Resize at scale %g along axis %d needs more than %d taps per "
                                  "output position (antialias at a small scale)",
                                  scale[d], d, OX_RESIZE_TAPS);
    for (int d = 0; d < rank; d++)
        if (out[d] != in[d] || scale[d] != 1 || r.roi[d] != 0 || r.roi[XE_MAX_RANK + d] != 1)
            y = resize_axis(b, &r, y, d, in[d], out[d], scale[d]);
    ox_out(b, 0, y);
    return ox_status(b);
}
