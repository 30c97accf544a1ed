/*
 * grid_sample (ONNX GridSample, infer/sample.c), as ONNX's reference and
 * PyTorch's grid_sampler compute it. Per output point, per spatial dim k
 * (D, H, W of x; the grid's last dim lists them innermost first):
 *
 *   1. the normalised coordinate g in [-1, 1] becomes a pixel coordinate,
 *      (g + 1) / 2 * (size - 1) with align_corners, ((g + 1) * size - 1) / 2
 *      without, held in f32 as the reference holds it; nearest rounds it
 *      half to even;
 *   2. outside [lo, hi] (align_corners: [0, size - 1]; else [-0.5, size - 0.5])
 *      border clamps it to [0, size - 1] and reflection folds it back by the
 *      nearer border;
 *   3. the taps: nearest 1 (the coordinate truncated), linear 2 (floor and
 *      floor + 1, weights 1 - t and t), cubic 4 (floor - 1 .. floor + 2, Keys'
 *      weights with a = -0.75), t the coordinate less its floor;
 *   4. a tap outside [0, size) reads zero (zeros), the clamped pixel (border)
 *      or the reflected one (reflection).
 *
 * The result is the sum over the taps' product of weights of the pixels; the
 * taps and weights of a point are worked once and used for every channel.
 */
#include <math.h>
#include <string.h>

#include "kernels.h"

#define MAX_DIMS 3 /* spatial dims: H, W or D, H, W */
#define MAX_TAPS 4 /* per dim: cubic's */

typedef enum sample_mode {
    MODE_LINEAR,  /* two taps per dim */
    MODE_NEAREST, /* one tap */
    MODE_CUBIC,   /* four taps */
} sample_mode;

typedef enum pad_mode {
    PAD_ZEROS,      /* outside reads 0 */
    PAD_BORDER,     /* outside reads the nearest border pixel */
    PAD_REFLECTION, /* outside reads the pixel mirrored at the border */
} pad_mode;

/* The settings of one run. */
typedef struct sampler {
    sample_mode mode;
    pad_mode pad;
    bool align;
    int nd;                 /* spatial dims */
    int64_t size[MAX_DIMS]; /* x's spatial dims */
    double lo[MAX_DIMS];    /* the coordinates' borders per dim */
    double hi[MAX_DIMS];
    int64_t stride[MAX_DIMS]; /* of x's spatial dims, in elements */
} sampler;

/* The taps of one point along one dim: offsets into x (-1: reads zero) and weights. */
typedef struct taps {
    int n;
    int64_t off[MAX_TAPS];
    double w[MAX_TAPS];
} taps;

/* x folded back into [lo, hi] by the nearer border, as often as it takes. */
static double reflect(double x, double lo, double hi)
{
    double range = hi - lo;
    if (range <= 0)
        return lo; /* one pixel, align_corners: the only place there is */
    if (x < lo) {
        double dx = lo - x, n = trunc(dx / range), r = dx - n * range;
        return fmod(n, 2) == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi, n = trunc(dx / range), r = dx - n * range;
        return fmod(n, 2) == 0 ? hi - r : lo + r;
    }
    return x;
}

/* Tap i along dim k as an element offset, -1 when it reads zero. */
static int64_t tap_offset(const sampler *s, int k, int64_t i)
{
    int64_t n = s->size[k];
    if (s->pad == PAD_ZEROS && (i < 0 || i >= n))
        return -1;
    if (s->pad == PAD_REFLECTION && (i < 0 || i >= n))
        i = (int64_t)reflect((double)i, s->lo[k], s->hi[k]);
    i = i < 0 ? 0 : i >= n ? n - 1 : i;
    return i * s->stride[k];
}

/* Keys' cubic convolution weights (a = -0.75) of the four taps around t in [0, 1). */
static void cubic_weights(double t, double *w)
{
    const double a = -0.75;
    double x0 = t + 1, x1 = t, x2 = 1 - t, x3 = 2 - t;
    w[0] = ((a * x0 - 5 * a) * x0 + 8 * a) * x0 - 4 * a;
    w[1] = ((a + 2) * x1 - (a + 3)) * x1 * x1 + 1;
    w[2] = ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1;
    w[3] = ((a * x3 - 5 * a) * x3 + 8 * a) * x3 - 4 * a;
}

/* Steps 1 and 2: the pixel coordinate, in f32, of normalised coordinate g along dim k. */
static float coordinate(const sampler *s, int k, double g)
{
    double n = (double)s->size[k];
    float x = (float)(s->align ? (g + 1) / 2 * (n - 1) : ((g + 1) * n - 1) / 2);
    if (s->mode == MODE_NEAREST)
        x = rintf(x);
    if (x < s->lo[k] || x > s->hi[k]) {
        if (s->pad == PAD_BORDER)
            x = x < 0 ? 0 : x > n - 1 ? (float)(n - 1) : x;
        else if (s->pad == PAD_REFLECTION)
            x = (float)reflect(x, s->lo[k], s->hi[k]);
    }
    return x;
}

/* Steps 3 and 4 along dim k for pixel coordinate x. */
static void dim_taps(const sampler *s, int k, float x, taps *t)
{
    if (!isfinite(x)) { /* no pixel: reads zero (the reference has no answer) */
        *t = (taps){.n = 1, .off = {-1}, .w = {1}};
        return;
    }
    float far = (float)s->size[k] + 8; /* every tap beyond this reads as it would there */
    x = x < -far ? -far : x > far ? far : x;
    if (s->mode == MODE_NEAREST) {
        *t = (taps){.n = 1, .off = {tap_offset(s, k, (int64_t)x)}, .w = {1}};
        return;
    }
    double f = floor(x), frac = (double)(x - (float)f);
    int64_t i0 = (int64_t)f;
    if (s->mode == MODE_LINEAR) {
        *t = (taps){.n = 2, .w = {1 - frac, frac}};
        t->off[0] = tap_offset(s, k, i0);
        t->off[1] = tap_offset(s, k, i0 + 1);
        return;
    }
    t->n = 4;
    cubic_weights(frac, t->w);
    for (int j = 0; j < 4; j++)
        t->off[j] = tap_offset(s, k, i0 - 1 + j);
}

/* The value of one channel's image img at the taps t[0..nd) (their weights' products). */
static double interpolate(const sampler *s, const void *img, xe_dtype dt, const taps *t)
{
    double sum = 0;
    int j[MAX_DIMS] = {0};
    for (;;) {
        double w = 1;
        int64_t off = 0;
        for (int k = 0; k < s->nd && off >= 0; k++) {
            int64_t o = t[k].off[j[k]];
            off = o < 0 ? -1 : off + o;
            w *= t[k].w[j[k]];
        }
        if (off >= 0)
            sum += w * xe_load_f64(img, dt, off);
        int k = s->nd - 1;
        while (k >= 0 && ++j[k] == t[k].n)
            j[k--] = 0;
        if (k < 0)
            return sum;
    }
}

/* The run's settings from the node and x's shape. */
static void read_sampler(const xe_kernel_args *a, sampler *s)
{
    const char *mode = xe_node_attr_string(a->node, "mode", "linear");
    const char *pad = xe_node_attr_string(a->node, "padding_mode", "zeros");
    const xe_shape *x = &a->in[0]->shape;
    *s = (sampler){.mode = !strcmp(mode, "nearest") ? MODE_NEAREST
                           : !strcmp(mode, "cubic") ? MODE_CUBIC
                                                    : MODE_LINEAR,
                   .pad = !strcmp(pad, "border")       ? PAD_BORDER
                          : !strcmp(pad, "reflection") ? PAD_REFLECTION
                                                       : PAD_ZEROS,
                   .align = xe_node_attr_bool(a->node, "align_corners", false),
                   .nd = x->rank - 2};
    int64_t stride = 1;
    for (int k = s->nd - 1; k >= 0; k--) {
        s->size[k] = x->dims[k + 2];
        s->stride[k] = stride;
        stride *= s->size[k];
        s->lo[k] = s->align ? 0 : -0.5;
        s->hi[k] = s->align ? (double)s->size[k] - 1 : (double)s->size[k] - 0.5;
    }
}

xe_code xe_cpu_grid_sample(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    const xe_tensor *x = a->in[0], *grid = a->in[1];
    xe_tensor *y = a->out;
    sampler s;
    read_sampler(a, &s);
    int64_t n = x->shape.dims[0], c = x->shape.dims[1], image = 1, points = 1;
    for (int k = 0; k < s.nd; k++) {
        image *= s.size[k];
        points *= y->shape.dims[k + 2];
    }
    size_t xsz = xe_dtype_size(x->dtype);
#pragma omp parallel for collapse(2) if (n * points * c > 4096)
    for (int64_t b = 0; b < n; b++)
        for (int64_t p = 0; p < points; p++) {
            taps t[MAX_DIMS];
            int64_t g0 = (b * points + p) * s.nd;
            for (int k = 0; k < s.nd; k++) {
                double g = xe_load_f64(grid->data, grid->dtype, g0 + s.nd - 1 - k);
                dim_taps(&s, k, coordinate(&s, k, g), &t[k]);
            }
            for (int64_t ch = 0; ch < c; ch++) {
                const char *img = (const char *)x->data + (size_t)((b * c + ch) * image) * xsz;
                xe_store_f64(y->data, y->dtype, (b * c + ch) * points + p,
                             interpolate(&s, img, x->dtype, t));
            }
        }
    return XE_OK;
}
