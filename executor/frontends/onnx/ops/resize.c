/*
 * Resize (and Upsample, its older form) as gathers with constant positions,
 * one axis at a time (nearest, linear and cubic are separable): for each
 * output position along an axis its source coordinate (the coordinate
 * transformation mode), then
 *   nearest: one gather of the rounded position (the nearest mode);
 *   linear:  two gathers, floor and floor + 1, weighted 1 - t and t;
 *   cubic:   four gathers, floor - 1 to floor + 2, with Keys' weights
 *            (cubic_coeff_a; exclude_outside renormalises).
 * Positions outside the input read its edge, as ONNX's reference does.
 * The output sizes come from `sizes`, or `scales` times the input's dims,
 * which must be known at load (a graph built per input size has them).
 * Not supported: tf_crop_and_resize, antialias, keep_aspect_ratio_policy
 * other than stretch, and an axis resized to more than OX_FOLD_MAX
 * positions (its position and weight tables are built at load).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

#define OX_RESIZE_TAPS 4

typedef struct resize {
    int mode;         /* 0 nearest, 1 linear, 3 cubic: taps - 1 */
    char coord[32];   /* coordinate_transformation_mode */
    char nearest[32]; /* nearest_mode */
    double a;         /* cubic_coeff_a */
    bool exclude;     /* exclude_outside */
} resize;

/* The source coordinate of output position i along an axis of in -> out at scale. */
static double source(const resize *r, int64_t i, int64_t in, int64_t out, double scale)
{
    double width = scale * (double)in; /* ONNX's output_width: a real number */
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

/* Taps (positions clamped to the edge) and weights of output position i. */
static int taps(const resize *r, double x, int64_t in, int64_t *pos, double *w)
{
    if (r->mode == 0) {
        int64_t p = nearest(r, x);
        pos[0] = p < 0 ? 0 : p >= in ? in - 1 : p;
        w[0] = 1;
        return 1;
    }
    int n = r->mode + 1;
    int64_t f = (int64_t)floor(x), first = n == 2 ? f : f - 1;
    double t = x - (double)f, sum = 0;
    for (int k = 0; k < n; k++) {
        int64_t p = first + k;
        w[k] = n == 2 ? (k ? t : 1 - t) : keys(t - (double)(k - 1), r->a);
        if (r->exclude && (p < 0 || p >= in))
            w[k] = 0;
        sum += w[k];
        pos[k] = p < 0 ? 0 : p >= in ? in - 1 : p;
    }
    for (int k = 0; r->exclude && sum != 0 && k < n; k++)
        w[k] /= sum;
    return n;
}

/* y resized along axis from in to out at scale. */
static int resize_axis(ox_b *b, const resize *r, int y, int axis, int64_t in, int64_t out,
                       double scale)
{
    int n = r->mode + 1, rank = ox_rank(b, y);
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
        taps(r, source(r, i, in, out, scale), in, p, w);
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
    return acc;
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
    if (r->mode < 0)
        ox_unsupported(b, "mode '%s' is not supported", mode);
    else if (!strcmp(r->coord, "tf_crop_and_resize"))
        ox_unsupported(b, "coordinate_transformation_mode tf_crop_and_resize is not supported");
    else if (ox_int(b, "antialias", 0))
        ox_unsupported(b, "antialias is not supported");
    else if (strcmp(ox_str(b, "keep_aspect_ratio_policy", "stretch"), "stretch"))
        ox_unsupported(b, "keep_aspect_ratio_policy other than stretch is not supported");
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

/* Per dim of x: output size and scale, from sizes or scales (over axes when given). */
static bool out_sizes(ox_b *b, int x, int64_t *out, double *scale)
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
    if (y < 0 || !read_attrs(b, &r) || !out_sizes(b, y, out, scale))
        return ox_status(b);
    if (!xe_dtype_is_float(ox_type(b, y)->dtype) && r.mode != 0)
        return ox_unsupported(b, "linear and cubic Resize of %s is not supported",
                              xe_dtype_name(ox_type(b, y)->dtype));
    const xe_shape *s = &ox_type(b, y)->shape;
    int64_t in[XE_MAX_RANK];
    int rank = s->rank;
    memcpy(in, s->dims, sizeof in);
    for (int d = 0; d < rank; d++)
        if (out[d] != in[d] || scale[d] != 1)
            y = resize_axis(b, &r, y, d, in[d], out[d], scale[d]);
    ox_out(b, 0, y);
    return ox_status(b);
}
