/*
 * Builders of ONNX's convolutions and pooling: Conv and ConvTranspose onto
 * conv2d, MaxPool onto max_pool2d, AveragePool and LpPool onto avg_pool2d. auto_pad
 * (NOTSET, VALID, SAME_UPPER, SAME_LOWER) becomes explicit pads; ONNX's
 * pads order [top, left, bottom, right] is the executor's.
 *
 * A 1-D Conv (Whisper's encoder) is a 2-D one of height 1: reshapes
 * around one conv2d. A 3-D Conv is a sum over the kernel's depth taps of
 * 2-D convs, the output depths folded into the batch: for tap i, the input
 * planes at depth od*sd - pad + i*dd (every od at once: a slice of the
 * depth-padded input, one plane in sd kept) convolved with weight plane i.
 * That is the same arithmetic as a direct 3-D convolution, each part on
 * the engine's conv primitive, and it runs wherever conv2d runs.
 *
 * Pools of 1 to 3 spatial dims are 2-D pools (pool_nd); LpPool is an
 * average pool of |x|^p. Non-float dtypes, MaxPool's Indices output and
 * storage_order 1 are refused as unsupported.
 */
#include <stdio.h>
#include <string.h>

#include "onnx_impl.h"

/* The window of one conv or pool node over sp spatial dims (pads: sp begins, then sp ends). */
typedef struct win {
    int sp;
    int64_t k[3], strides[3], dil[3], pads[6];
    int64_t groups; /* 0: the node's group attribute */
} win;

/* An ints attribute of exactly n entries, or the default. */
static bool pair(ox_b *b, const char *name, int64_t *v, int n, int64_t dflt)
{
    int got = ox_ints(b, name, v, n);
    if (got < 0) {
        for (int i = 0; i < n; i++)
            v[i] = dflt;
        return true;
    }
    if (got != n) {
        ox_unsupported(b, "attribute %s has %d entries, %d expected for this %s", name, got, n,
                       b->np->op_type);
        return false;
    }
    return true;
}

/*
 * f16 and bf16 convolutions and pools compute in f32, as a model stored in half precision is run
 * by onnxruntime's CPU EP where it has no half kernel: the float inputs widened (constant weights
 * fold at load), the result rounded back once (out_as). Returns the input's own dtype.
 */
static xe_dtype widen_inputs(ox_b *b)
{
    int x = ox_in(b, 0);
    xe_dtype dt = x >= 0 ? ox_type(b, x)->dtype : XE_F32;
    if (dt != XE_F16 && dt != XE_BF16)
        return dt;
    for (int k = 0; k < b->n_in; k++)
        if (b->in[k] >= 0 && ox_type(b, b->in[k])->dtype == dt)
            b->in[k] = ox_cast(b, b->in[k], XE_F32);
    return dt;
}

/* Output k is y, rounded back to dt when the inputs were widened. */
static void out_as(ox_b *b, int k, int y, xe_dtype dt)
{
    if (y >= 0)
        ox_out(b, k, dt == XE_F16 || dt == XE_BF16 ? ox_cast(b, y, dt) : y);
}

/* x must be [N,C,H,W] (a Conv: [N,C,L] to [N,C,D,H,W]). */
static bool conv_rank(ox_b *b, int x, bool conv)
{
    if (x < 0)
        return false;
    int r = ox_type(b, x)->shape.rank;
    if (r != 4 && !(conv && (r == 3 || r == 5))) {
        ox_unsupported(b, "only %s %s is supported (input rank %d)", conv ? "1-D to 3-D" : "2-D",
                       b->np->op_type, r);
        return false;
    }
    return true;
}

/* ... and f32 or f64 (f16 and bf16 arrive widened). */
static bool is_2d(ox_b *b, int x, bool conv)
{
    if (!conv_rank(b, x, conv))
        return false;
    xe_dtype dt = ox_type(b, x)->dtype;
    if (dt != XE_F32 && dt != XE_F64) {
        ox_unsupported(b, "%s of %s is not supported (f32 or f64)", b->np->op_type,
                       xe_dtype_name(dt));
        return false;
    }
    return true;
}

/* auto_pad SAME_*: the pads that make the output ceil(in / stride). */
static bool same_pads(ox_b *b, int x, win *w, bool upper)
{
    const xe_shape *s = &ox_type(b, x)->shape;
    for (int d = 0; d < w->sp; d++) {
        int64_t in = s->dims[2 + d];
        if (in < 0) {
            ox_unsupported(b, "auto_pad SAME needs known spatial dims");
            return false;
        }
        int64_t out = in / w->strides[d] + (in % w->strides[d] != 0), tot, ext;
        if (__builtin_mul_overflow(out - 1, w->strides[d], &tot) ||
            __builtin_mul_overflow(w->k[d] - 1, w->dil[d], &ext) ||
            __builtin_add_overflow(tot, ext, &tot) || __builtin_add_overflow(tot, 1 - in, &tot)) {
            ox_invalid(b, "kernel %lld, stride %lld and dilation %lld exceed 64-bit sizes",
                       (long long)w->k[d], (long long)w->strides[d], (long long)w->dil[d]);
            return false;
        }
        tot = tot < 0 ? 0 : tot;
        w->pads[d] = upper ? tot / 2 : tot - tot / 2;
        w->pads[d + w->sp] = tot - w->pads[d];
    }
    return true;
}

/* strides, dilations and pads (auto_pad resolved); the kernel already in w->k. */
static bool window(ox_b *b, int x, win *w)
{
    if (!pair(b, "strides", w->strides, w->sp, 1) || !pair(b, "dilations", w->dil, w->sp, 1) ||
        !pair(b, "pads", w->pads, 2 * w->sp, 0))
        return false;
    for (int d = 0; d < w->sp; d++)
        if (w->strides[d] < 1 || w->dil[d] < 1 || w->k[d] < 1) {
            ox_invalid(b, "kernel, strides and dilations must be positive");
            return false;
        }
    const char *ap = ox_str(b, "auto_pad", "NOTSET");
    if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER"))
        return same_pads(b, x, w, !strcmp(ap, "SAME_UPPER"));
    if (!strcmp(ap, "VALID"))
        memset(w->pads, 0, sizeof w->pads);
    else if (strcmp(ap, "NOTSET")) {
        ox_unsupported(b, "attribute auto_pad='%s' is not supported", ap);
        return false;
    }
    return true;
}

/* Window op `op` (conv2d, quant_conv2d) over inputs in with w's dims at and at + 1 (the last two
   of a wider window); quant_conv2d's quantization attributes from q. */
static int window_op(ox_b *b, int op, const int *in, int n_in, const win *w, int at,
                     const ox_qdq_conv *q)
{
    int64_t s[2] = {w->strides[at], w->strides[at + 1]}, d[2] = {w->dil[at], w->dil[at + 1]};
    int64_t p[4] = {w->pads[at], w->pads[at + 1], w->pads[w->sp + at], w->pads[w->sp + at + 1]};
    ox_at a[8] = {OX_INTS("strides", s, 2), OX_INTS("pads", p, 4), OX_INTS("dilations", d, 2),
                  OX_I("groups", w->groups ? w->groups : ox_int(b, "group", 1))};
    int n_at = 4;
    if (q) {
        a[n_at++] = OX_I("x_zero_point", q->x_zero);
        if (q->y_dt != XE_F32) {
            a[n_at++] = (ox_at){.name = "y_scale", .kind = XE_ATTR_FLOAT, .f = q->y_scale};
            a[n_at++] = OX_I("y_zero_point", q->y_zero);
            a[n_at++] = OX_DT("y_dtype", q->y_dt);
        }
    }
    return ox_op(b, op, in, n_in, a, n_at);
}

/* conv2d(x, wt[, bias]) with w's dims 0 and 1 (the last two of a wider window). */
static int conv2d(ox_b *b, int x, int wt, int bias, const win *w, int at)
{
    int in[3] = {x, wt, bias};
    return window_op(b, XE_OP_CONV2D, in, bias >= 0 ? 3 : 2, w, at, NULL);
}

/* The Conv between QDQ pairs q as quant_conv2d, bound to its output or to the QuantizeLinear's
   it took over (which the loader then skips). */
static xe_code qdq_conv(ox_b *b, const ox_qdq_conv *q, const win *w)
{
    int y = window_op(b, XE_OP_QUANT_CONV2D, q->in, q->n_in, w, 0, q);
    if (!q->quantize)
        return ox_out(b, 0, y);
    if (ox_out_of(b, q->quantize, 0, y) != XE_OK)
        return ox_status(b);
    if (!ox_absorb(b->c, q->quantize))
        return ox_invalid(b, "%s", "out of memory");
    return ox_out(b, 0, y); /* read by nobody now: any value will do */
}

/* dims of x with one entry replaced (XE_DIM_UNKNOWN stays: reshape makes it -1). */
/* A reshape inside an N-D conv's rewrite (at most one dim unknown). */
static int reshaped(ox_b *b, int x, const int64_t *dims, int rank)
{
    char why[80];
    snprintf(why, sizeof why, "a %d-D Conv needs every dim but one known", rank - 2);
    return ox_reshape_dims(b, x, dims, rank, why);
}

/* 1-D: [N,C,L] as [N,C,1,L], one conv2d, back to [N,M,OL]. */
static int conv1d(ox_b *b, int x, int wt, int bias, win *w)
{
    const xe_shape *xs = &ox_type(b, x)->shape, *ws = &ox_type(b, wt)->shape;
    win w2 = {.sp = 2,
              .k = {1, w->k[0]},
              .strides = {1, w->strides[0]},
              .dil = {1, w->dil[0]},
              .pads = {0, w->pads[0], 0, w->pads[1]},
              .groups = w->groups};
    int64_t x4[4] = {xs->dims[0], xs->dims[1], 1, xs->dims[2]};
    int64_t w4[4] = {ws->dims[0], ws->dims[1], 1, ws->dims[2]};
    int y = conv2d(b, reshaped(b, x, x4, 4), ox_reshape(b, wt, w4, 4), bias, &w2, 0);
    if (y < 0)
        return -1;
    const xe_shape *ys = &ox_type(b, y)->shape;
    int64_t y3[3] = {ys->dims[0], ys->dims[1], ys->dims[3]};
    return reshaped(b, y, y3, 3);
}

/* 3-D tap i: the input planes it reads for every output depth, as [N*OD, C, H, W]. */
static int depth_tap(ox_b *b, int xt, const win *w, int64_t i, int64_t od, const int64_t *dims)
{
    int64_t sd = w->strides[0], n = dims[0], c = dims[2], h = dims[3], wd = dims[4];
    int64_t begin[5] = {0, i * w->dil[0], 0, 0, 0}, end[5] = {n, i * w->dil[0] + od * sd, c, h, wd};
    for (int k = 0; k < 5; k++)
        end[k] = k == 1 ? end[k] : (int64_t)1 << 62; /* past the end: to the end */
    int v = ox_slice(b, xt, begin, end);             /* [N, OD*sd, C, H, W] */
    if (sd > 1) {
        int64_t r[4] = {n, od, sd, c * h * wd}, b0[4] = {0, 0, 0, 0};
        int64_t e0[4] = {(int64_t)1 << 62, (int64_t)1 << 62, 1, (int64_t)1 << 62};
        v = ox_slice(b, reshaped(b, v, r, 4), b0, e0); /* one plane in sd */
    }
    int64_t r4[4] = {n < 0 ? -1 : n * od, c, h, wd};
    return reshaped(b, v, r4, 4);
}

/* A 3-D conv's depth: the output depth *od (-1 when unknown) and the planes *tail to pad after the
   input so that every tap's slice of OD*sd planes fits; false when a size leaves 64 bits. */
static bool depth_sizes(const win *w, const xe_shape *xs, int64_t *od, int64_t *tail)
{
    int64_t d = xs->dims[2], span, front, padded, reach, t;
    if (__builtin_mul_overflow(w->k[0] - 1, w->dil[0], &span) ||
        __builtin_add_overflow(d, w->pads[0], &front) ||
        __builtin_add_overflow(front, w->pads[3], &padded) ||
        __builtin_sub_overflow(padded, span, &t) || __builtin_sub_overflow(t, 1, &t))
        return false;
    *od = d < 0 ? -1 : t / w->strides[0] + 1;
    *tail = 0;
    if (*od < 1)
        return true;
    return !__builtin_mul_overflow(*od, w->strides[0], &reach) &&
           !__builtin_add_overflow(reach, span, &reach) &&
           !__builtin_sub_overflow(reach, front, tail) &&
           !__builtin_mul_overflow(xs->dims[0] > 0 ? xs->dims[0] : 1, *od, &t) &&
           !__builtin_mul_overflow(xs->dims[1], xs->dims[3], &t) &&
           !__builtin_mul_overflow(t, xs->dims[4], &t);
}

/* 3-D: a conv2d per depth tap over [N*OD, C, H, W], summed, back to [N,M,OD,OH,OW]. */
static int conv3d(ox_b *b, int x, int wt, int bias, win *w)
{
    const xe_shape *xs = &ox_type(b, x)->shape, *ws = &ox_type(b, wt)->shape;
    int64_t kd = w->k[0], od, tail;
    if (!depth_sizes(w, xs, &od, &tail)) {
        ox_invalid(b,
                   "a 3-D Conv's depth (kernel %lld, dilation %lld, pads %lld and %lld) exceeds "
                   "64-bit sizes",
                   (long long)kd, (long long)w->dil[0], (long long)w->pads[0],
                   (long long)w->pads[3]);
        return -1;
    }
    if (od < 1 || xs->dims[1] < 0 || xs->dims[3] < 0 || xs->dims[4] < 0) {
        ox_unsupported(b, "a 3-D Conv needs known channels and spatial dims");
        return -1;
    }
    int64_t pads[10] = {0, 0, w->pads[0], 0, 0, 0, 0, tail > 0 ? tail : 0, 0, 0};
    ox_at pa = OX_INTS("pads", pads, 10);
    int xp = ox_op(b, XE_OP_PAD, &x, 1, &pa, 1), perm[5] = {0, 2, 1, 3, 4};
    int xt = ox_transpose(b, xp, perm, 5); /* [N, Dp, C, H, W] */
    int64_t dims[5] = {xs->dims[0], -1, xs->dims[1], xs->dims[3], xs->dims[4]};
    int y = -1;
    for (int64_t i = 0; i < kd && !b->failed; i++) {
        int64_t wb[5] = {0, 0, i, 0, 0},
                we[5] = {ws->dims[0], ws->dims[1], i + 1, ws->dims[3], ws->dims[4]};
        int64_t w4[4] = {ws->dims[0], ws->dims[1], ws->dims[3], ws->dims[4]};
        int wi = ox_reshape(b, ox_slice(b, wt, wb, we), w4, 4);
        int yi = conv2d(b, depth_tap(b, xt, w, i, od, dims), wi, i == 0 ? bias : -1, w, 1);
        y = i == 0 ? yi : ox_bin(b, XE_OP_ADD, y, yi);
    }
    if (y < 0)
        return -1;
    const xe_shape *ys = &ox_type(b, y)->shape;
    int64_t y5[5] = {xs->dims[0], od, ys->dims[1], ys->dims[2], ys->dims[3]};
    int back[5] = {0, 2, 1, 3, 4};
    return ox_transpose(b, reshaped(b, y, y5, 5), back, 5);
}

/* The window of b's node (Conv, QLinearConv, ConvInteger) over x, a checked rank, and weight
   wt: false (b failed) when its attributes are refused. */
static bool conv_window(ox_b *b, int x, int wt, win *w)
{
    w->sp = ox_rank(b, x) - 2;
    const xe_shape *ws = &ox_type(b, wt)->shape;
    if (ws->rank != w->sp + 2) {
        ox_unsupported(b, "%s needs a %d-D weight for a %d-D input", b->np->op_type, w->sp + 2,
                       w->sp + 2);
        return false;
    }
    for (int d = 0; d < w->sp; d++) {
        if (ws->dims[2 + d] < 0 || ws->dims[0] < 0 || ws->dims[1] < 0) {
            ox_unsupported(b, "%s needs a weight with known dims", b->np->op_type);
            return false;
        }
        w->k[d] = ws->dims[2 + d];
    }
    int64_t ks[3];
    int nk = ox_ints(b, "kernel_shape", ks, 3);
    bool same = nk == w->sp;
    for (int d = 0; same && d < w->sp; d++)
        same = ks[d] == w->k[d];
    if (nk >= 0 && !same) {
        ox_invalid(b, "kernel_shape does not match the weight's kernel dims");
        return false;
    }
    return window(b, x, w);
}

/* The f32 or f64 convolution over w's spatial dims. */
static int conv_nd(ox_b *b, int x, int wt, int bias, win *w)
{
    return w->sp == 2   ? conv2d(b, x, wt, bias, w, 0)
           : w->sp == 1 ? conv1d(b, x, wt, bias, w)
                        : conv3d(b, x, wt, bias, w);
}

int ox_conv_build(ox_b *b, int x, int wt, int bias, const ox_qdq_conv *q)
{
    win w = {0};
    if (wt < 0 || !(q ? conv_rank(b, x, false) : is_2d(b, x, true)) || !conv_window(b, x, wt, &w))
        return -1;
    if (q)
        return window_op(b, XE_OP_QUANT_CONV2D, q->in, q->n_in, &w, 0, q);
    return conv_nd(b, x, wt, bias, &w);
}

xe_code ox_b_conv(ox_b *b)
{
    xe_dtype dt = widen_inputs(b);
    int x = ox_in(b, 0), wt = ox_in(b, 1), bias = ox_in(b, 2);
    win w = {0};
    if (!is_2d(b, x, true) || wt < 0 || !conv_window(b, x, wt, &w))
        return ox_status(b);
    ox_qdq_conv q;
    if (w.sp == 2 && ox_qdq_conv_match(b, &q)) /* a Conv between QDQ pairs: qdq.c */
        return qdq_conv(b, &q, &w);
    if (w.sp == 2 && ox_conv_fold_batch_norm(b, &wt, &bias)) { /* rewrite.c */
        int y = conv2d(b, x, wt, bias, &w, 0);
        if (y >= 0 && xe_node_set_bool(b->c->g->nodes[y], "@bn_folded", true, &b->st) != XE_OK)
            b->failed = true;
        return out_as(b, 0, y, dt), ox_status(b);
    }
    out_as(b, 0, conv_nd(b, x, wt, bias, &w), dt);
    return ox_status(b);
}

/* One 2-D pool (op) of x over window dims at and at + 1 of w, pads [top, left, bottom, right]. */
static int pool2d(ox_b *b, int op, int x, const win *w, int at, int64_t ceil, int64_t cip)
{
    int64_t k[2] = {w->k[at], w->k[at + 1]}, s[2] = {w->strides[at], w->strides[at + 1]};
    int64_t d[2] = {w->dil[at], w->dil[at + 1]};
    int64_t p[4] = {w->pads[at], w->pads[at + 1], w->pads[w->sp + at], w->pads[w->sp + at + 1]};
    ox_at a[6] = {OX_INTS("kernel", k, 2), OX_INTS("strides", s, 2),
                  OX_INTS("pads", p, 4),   OX_INTS("dilations", d, 2),
                  OX_I("ceil_mode", ceil), OX_I("count_include_pad", cip)};
    return ox_op(b, op, &x, 1, a, op == XE_OP_MAX_POOL2D ? 5 : 6);
}

/*
 * A pool over 1 to 3 spatial dims. 1-D: [N,C,L] as [N,C,1,L]. 3-D: the
 * window is a box, so the pool separates: a 2-D pool over (H, W) of
 * [N, C*D, H, W], then one over D of [N, C, D, OH*OW] with a (kd, 1)
 * window. Max of maxes is the max; an average of averages is the average,
 * since the count of a box's valid positions is the product of its counts
 * per dim (with or without the pads counted, in ceil mode too).
 */
static int pool_nd(ox_b *b, int op, int x, const win *w, int64_t ceil, int64_t cip)
{
    const xe_shape *xs = &ox_type(b, x)->shape;
    if (w->sp == 2)
        return pool2d(b, op, x, w, 0, ceil, cip);
    for (int d = 1; d < xs->rank; d++)
        if (xs->dims[d] < 0)
            return ox_unsupported(b, "a %d-D %s needs known channels and spatial dims", w->sp,
                                  b->np->op_type),
                   -1;
    if (w->sp == 1) {
        win w2 = {.sp = 2,
                  .k = {1, w->k[0]},
                  .strides = {1, w->strides[0]},
                  .dil = {1, w->dil[0]},
                  .pads = {0, w->pads[0], 0, w->pads[1]}};
        int64_t x4[4] = {xs->dims[0], xs->dims[1], 1, xs->dims[2]};
        int y = pool2d(b, op, reshaped(b, x, x4, 4), &w2, 0, ceil, cip);
        const xe_shape *ys = &ox_type(b, y)->shape;
        int64_t y3[3] = {xs->dims[0], xs->dims[1], ys->dims[3]};
        return y < 0 ? -1 : reshaped(b, y, y3, 3);
    }
    int64_t n = xs->dims[0], c = xs->dims[1], dd = xs->dims[2];
    int64_t x4[4] = {n, c * dd, xs->dims[3], xs->dims[4]};
    int y = pool2d(b, op, reshaped(b, x, x4, 4), w, 1, ceil, cip); /* [N, C*D, OH, OW] */
    if (y < 0)
        return -1;
    int64_t oh = ox_type(b, y)->shape.dims[2], ow = ox_type(b, y)->shape.dims[3];
    int64_t y4[4] = {n, c, dd, oh * ow};
    win wd = {.sp = 2,
              .k = {w->k[0], 1},
              .strides = {w->strides[0], 1},
              .dil = {w->dil[0], 1},
              .pads = {w->pads[0], 0, w->pads[3], 0}};
    y = pool2d(b, op, reshaped(b, y, y4, 4), &wd, 0, ceil, cip); /* [N, C, OD, OH*OW] */
    if (y < 0)
        return -1;
    int64_t y5[5] = {n, c, ox_type(b, y)->shape.dims[2], oh, ow};
    return reshaped(b, y, y5, 5);
}

/* The window of a pool: kernel_shape (required, one entry per spatial dim) and the rest. */
static bool pool_window(ox_b *b, int x, win *w)
{
    if (!is_2d(b, x, true))
        return false;
    w->sp = ox_rank(b, x) - 2;
    int nk = ox_ints(b, "kernel_shape", w->k, 3);
    if (nk != w->sp)
        return (nk < 0
                    ? ox_invalid(b, "kernel_shape is required")
                    : ox_invalid(b, "kernel_shape has %d entries for %d spatial dims", nk, w->sp)),
               false;
    return window(b, x, w);
}

/* MaxPool and AveragePool: the table entry's op names which. */
xe_code ox_b_pool(ox_b *b)
{
    xe_dtype dt = widen_inputs(b);
    int x = ox_in(b, 0);
    bool max = b->entry->op == XE_OP_MAX_POOL2D;
    win w = {0};
    if (max && ox_n_out(b) > 1 && b->np->output[1][0])
        return ox_unsupported(b, "MaxPool's Indices output is not supported");
    if (max && ox_int(b, "storage_order", 0) != 0)
        return ox_unsupported(b, "attribute storage_order=1 is not supported");
    if (!pool_window(b, x, &w))
        return ox_status(b);
    int y = pool_nd(b, b->entry->op, x, &w, ox_int(b, "ceil_mode", 0),
                    ox_int(b, "count_include_pad", 0));
    out_as(b, 0, y, dt);
    return ox_status(b);
}

/* LpPool: (sum over the window of |x|^p)^(1/p), the sum an average pool (pads counted) times the
 * window's size. */
xe_code ox_b_lp_pool(ox_b *b)
{
    xe_dtype half = widen_inputs(b);
    int x = ox_in(b, 0);
    win w = {0};
    int64_t p = ox_int(b, "p", 2), vol = 1;
    if (p < 1 || p > 64)
        return ox_unsupported(b, "LpPool with p=%lld is not supported (1 to 64 are)", (long long)p);
    if (ox_int(b, "ceil_mode", 0) != 0)
        return ox_unsupported(b, "LpPool with ceil_mode=1 is not supported");
    if (!pool_window(b, x, &w))
        return ox_status(b);
    for (int d = 0; d < w.sp; d++)
        vol *= w.k[d];
    xe_dtype dt = ox_type(b, x)->dtype;
    int a = ox_un(b, XE_OP_ABS, x);
    int ap = p == 1   ? a
             : p == 2 ? ox_bin(b, XE_OP_MUL, a, a)
                      : ox_bin(b, XE_OP_POW, a, ox_scalar(b, dt, (double)p));
    int sum = ox_bin(b, XE_OP_MUL, pool_nd(b, XE_OP_AVG_POOL2D, ap, &w, 0, 1),
                     ox_scalar(b, dt, (double)vol));
    int y = p == 1   ? sum
            : p == 2 ? ox_un(b, XE_OP_SQRT, sum)
                     : ox_bin(b, XE_OP_POW, sum, ox_scalar(b, dt, 1.0 / (double)p));
    out_as(b, 0, y, half);
    return ox_status(b);
}

/*
 * ConvTranspose as a stride-1 Conv: the input with s-1 zeros after each
 * element along each spatial dim (reshape to [.., D, 1, ..], pad to
 * [.., D, s, ..], reshape to [.., D*s, ..]), convolved with the weight
 * [C, M/g, k..] regrouped to [M, C/g, k..] and flipped along each spatial
 * dim, at dilation d, with pads (k-1)*d - pad_begin before and
 * (k-1)*d - pad_end + output_padding - (s-1) after (the s-1 trailing zeros
 * of the last element are padding already). A negative pad crops the
 * output instead. The sums are those of a direct transposed convolution;
 * each runs on the engine's conv primitive, wherever Conv runs.
 */

/* The ConvTranspose window: k, strides, dilations, and the pads it works out (begin, end; may be <
 * 0). */
typedef struct twin {
    int sp;
    int64_t in[3], k[3], s[3], d[3], op[3], pb[3], pe[3];
    int64_t g; /* groups */
} twin;

#define OX_BIG                                                                                     \
    ((int64_t)1 << 40) /* pads and output dims past this are refused (no overflow below) */

static int64_t floor_half(int64_t v)
{
    return v >= 0 ? v / 2 : -((-v + 1) / 2);
}

/* pads (NOTSET), or those from output_shape and auto_pad, as onnx's reference works them out. */
static bool transposed_pads(ox_b *b, twin *t)
{
    int64_t pads[6], os[3];
    const char *ap = ox_str(b, "auto_pad", "NOTSET");
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER"),
         valid = !strcmp(ap, "VALID");
    if (!same && !valid && strcmp(ap, "NOTSET"))
        return ox_unsupported(b, "attribute auto_pad='%s' is not supported", ap), false;
    bool have_pads = ox_attr(b, "pads") != NULL;
    int nos = ox_ints(b, "output_shape", os, 3);
    if (nos >= 0 && nos != t->sp)
        return ox_unsupported(b, "attribute output_shape has %d entries, %d expected", nos, t->sp),
               false;
    if (!pair(b, "pads", pads, 2 * t->sp, 0))
        return false;
    for (int i = 0; i < t->sp; i++) {
        if (pads[i] > OX_BIG || pads[i + t->sp] > OX_BIG || pads[i] < -OX_BIG ||
            pads[i + t->sp] < -OX_BIG)
            return ox_invalid(b, "pads must be within 2^40"), false;
        int64_t natural = t->s[i] * (t->in[i] - 1) + t->op[i] + (t->k[i] - 1) * t->d[i] + 1;
        int64_t out = nos >= 0 ? os[i] : t->in[i] * t->s[i];
        if (out < 1 || out > OX_BIG)
            return ox_invalid(b, "output_shape must be positive"), false;
        if (valid)
            t->pb[i] = t->pe[i] = 0;
        else if (same && !have_pads) {
            int64_t total = natural - out, h = floor_half(total);
            t->pb[i] = !strcmp(ap, "SAME_UPPER") ? h : total - h;
            t->pe[i] = total - t->pb[i];
        } else {
            t->pb[i] = pads[i];
            t->pe[i] = nos >= 0 ? natural - out - pads[i] : pads[i + t->sp];
        }
        if (!same && !valid && (pads[i] < 0 || pads[i + t->sp] < 0))
            return ox_invalid(b, "pads must not be negative"), false;
        if (natural - t->pb[i] - t->pe[i] < 1)
            return ox_invalid(b, "the output of dim %d would be empty", i), false;
    }
    return true;
}

/* The window attributes of a ConvTranspose with input x and weight wt (known dims checked). */
static bool transposed_window(ox_b *b, int x, int wt, twin *t)
{
    const xe_shape *xs = &ox_type(b, x)->shape, *ws = &ox_type(b, wt)->shape;
    int64_t ks[3];
    if (!pair(b, "strides", t->s, t->sp, 1) || !pair(b, "dilations", t->d, t->sp, 1) ||
        !pair(b, "output_padding", t->op, t->sp, 0))
        return false;
    int nk = ox_ints(b, "kernel_shape", ks, 3);
    for (int i = 0; i < t->sp; i++) {
        t->in[i] = xs->dims[2 + i];
        t->k[i] = ws->dims[2 + i];
        if (nk >= 0 && (nk != t->sp || ks[i] != t->k[i]))
            return ox_invalid(b, "kernel_shape does not match the weight's kernel dims"), false;
        if (t->s[i] < 1 || t->d[i] < 1 || t->k[i] < 1 || t->s[i] > 4096 || t->d[i] > 4096)
            return ox_invalid(b, "kernel, strides and dilations must be positive"), false;
        if (t->op[i] < 0 || (t->op[i] >= t->s[i] && t->op[i] >= t->d[i]))
            return ox_invalid(b, "output_padding must be below the stride or the dilation"), false;
    }
    return transposed_pads(b, t);
}

/* x [N, C, D..] with s-1 zeros after each element along each spatial dim: [N, C, D*s..]. */
static int upsampled(ox_b *b, int x, const twin *t)
{
    const xe_shape *xs = &ox_type(b, x)->shape;
    int64_t wide[2 + 6], pads[2 * 8] = {0}, back[5] = {xs->dims[0], xs->dims[1]};
    bool any = false;
    for (int i = 0; i < t->sp; i++)
        any |= t->s[i] > 1;
    if (!any)
        return x;
    wide[0] = xs->dims[0], wide[1] = xs->dims[1];
    int r = 2 + 2 * t->sp;
    for (int i = 0; i < t->sp; i++) {
        wide[2 + 2 * i] = t->in[i], wide[3 + 2 * i] = 1;
        pads[r + 3 + 2 * i] = t->s[i] - 1;
        back[2 + i] = t->in[i] * t->s[i];
    }
    ox_at pa = OX_INTS("pads", pads, 2 * r);
    int w = reshaped(b, x, wide, r);
    int p = w < 0 ? -1 : ox_op(b, XE_OP_PAD, &w, 1, &pa, 1);
    return p < 0 ? -1 : reshaped(b, p, back, 2 + t->sp);
}

/* [C, M/g, k..] as [M, C/g, k..], flipped along each spatial dim. */
static int conv_weight(ox_b *b, int wt, int64_t g, const twin *t)
{
    const xe_shape *ws = &ox_type(b, wt)->shape;
    int64_t c = ws->dims[0], mg = ws->dims[1], kk = 1, dims[5];
    for (int i = 0; i < t->sp; i++)
        kk *= t->k[i];
    int64_t r4[4] = {g, c / g, mg, kk};
    int perm[4] = {0, 2, 1, 3};
    int w = ox_transpose(b, ox_reshape(b, wt, r4, 4), perm, 4);
    dims[0] = g * mg, dims[1] = c / g;
    for (int i = 0; i < t->sp; i++)
        dims[2 + i] = t->k[i];
    w = ox_reshape(b, w, dims, 2 + t->sp);
    for (int i = 0; i < t->sp && w >= 0; i++) {
        if (t->k[i] == 1)
            continue;
        int64_t idx[256];
        if (t->k[i] > 256)
            return ox_unsupported(b, "ConvTranspose kernels over 256 wide are not supported"), -1;
        for (int64_t j = 0; j < t->k[i]; j++)
            idx[j] = t->k[i] - 1 - j;
        w = ox_take(b, w, 2 + i, idx, t->k[i]);
    }
    return w;
}

/* The stride-1 conv of the upsampled input, then the crop of its negative pads. */
static int transposed(ox_b *b, int x, int wt, int bias, const twin *t)
{
    win w = {.sp = t->sp, .groups = t->g};
    int64_t crop_b[5] = {0}, crop_e[5] = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
    bool crop = false;
    for (int i = 0; i < t->sp; i++) {
        int64_t span = (t->k[i] - 1) * t->d[i];
        int64_t pb = span - t->pb[i], pe = span - t->pe[i] + t->op[i] - (t->s[i] - 1);
        w.k[i] = t->k[i], w.strides[i] = 1, w.dil[i] = t->d[i];
        w.pads[i] = pb > 0 ? pb : 0, w.pads[i + t->sp] = pe > 0 ? pe : 0;
        int64_t len = t->in[i] * t->s[i] + w.pads[i] + w.pads[i + t->sp] - span;
        crop_b[2 + i] = pb < 0 ? -pb : 0;
        crop_e[2 + i] = pe < 0 ? len + pe : len;
        crop |= pb < 0 || pe < 0;
    }
    int xu = upsampled(b, x, t), y = -1;
    if (xu < 0)
        return -1;
    y = t->sp == 2   ? conv2d(b, xu, wt, bias, &w, 0)
        : t->sp == 1 ? conv1d(b, xu, wt, bias, &w)
                     : conv3d(b, xu, wt, bias, &w);
    return crop && y >= 0 ? ox_slice(b, y, crop_b, crop_e) : y;
}

xe_code ox_b_conv_transpose(ox_b *b)
{
    xe_dtype dt = widen_inputs(b);
    int x = ox_in(b, 0), wt = ox_in(b, 1), bias = ox_in(b, 2);
    twin t = {0};
    if (!is_2d(b, x, true) || wt < 0)
        return ox_status(b);
    t.sp = ox_rank(b, x) - 2;
    const xe_shape *xs = &ox_type(b, x)->shape, *ws = &ox_type(b, wt)->shape;
    if (ws->rank != t.sp + 2)
        return ox_unsupported(b, "ConvTranspose needs a %d-D weight for a %d-D input", t.sp + 2,
                              t.sp + 2);
    for (int d = 0; d < ws->rank; d++)
        if (ws->dims[d] < 0 || (d >= 1 && xs->dims[d] < 0))
            return ox_unsupported(
                b, "ConvTranspose needs known channels, spatial dims and weight dims");
    int64_t g = ox_int(b, "group", 1);
    if (g < 1 || xs->dims[1] % g || ws->dims[0] != xs->dims[1])
        return ox_invalid(
            b, "ConvTranspose: weight dim 0 must be the input's channels, a multiple of group");
    if (bias >= 0 &&
        (ox_rank(b, bias) != 1 || (ox_type(b, bias)->shape.dims[0] >= 0 &&
                                   ox_type(b, bias)->shape.dims[0] != g * ws->dims[1])))
        return ox_invalid(b, "ConvTranspose: the bias must be [M]");
    t.g = g;
    if (!transposed_window(b, x, wt, &t))
        return ox_status(b);
    int y = transposed(b, x, conv_weight(b, wt, g, &t), bias, &t);
    out_as(b, 0, y, dt);
    return ox_status(b);
}

/*
 * Col2Im: the blocks of each channel summed into the image, which is a
 * ConvTranspose with C groups of K = prod(block) input channels whose
 * weights are one-hot: input channel c*K + k puts its value at block
 * position k. The input [N, C*K, L] is seen as [N, C*K, L1, ..]; the end
 * pads are worked out so that the output is image_shape (what the strides
 * leave uncovered gets zeros). image_shape and block_shape known at load.
 */
xe_code ox_b_col2im(ox_b *b)
{
    int x = ox_in(b, 0);
    int64_t img[3], blk[3], pads[6], kk = 1, ll = 1;
    twin t = {0};
    if (x < 0)
        return ox_status(b);
    int ni = ox_const_ints(b, 1, "image_shape", img, 3),
        nb = ox_const_ints(b, 2, "block_shape", blk, 3);
    if (ni < 0 || nb < 0)
        return ox_status(b);
    const xe_type *xt = ox_type(b, x);
    if (ni != nb || ni < 1 || xt->shape.rank != 3)
        return ox_invalid(
            b, "Col2Im needs a 3-D input and image_shape and block_shape of one length (1 to 3)");
    if (xt->dtype != XE_F32 && xt->dtype != XE_F64)
        return ox_unsupported(b, "Col2Im of %s is not supported (f32 or f64)",
                              xe_dtype_name(xt->dtype));
    t.sp = ni;
    if (!pair(b, "strides", t.s, t.sp, 1) || !pair(b, "dilations", t.d, t.sp, 1) ||
        !pair(b, "pads", pads, 2 * t.sp, 0))
        return ox_status(b);
    for (int i = 0; i < t.sp; i++) {
        if (img[i] < 1 || blk[i] < 1 || img[i] > OX_BIG || blk[i] > 256 || t.s[i] < 1 ||
            t.s[i] > 4096 || t.d[i] < 1 || t.d[i] > 4096 || pads[i] < 0 || pads[i] > OX_BIG ||
            pads[i + t.sp] < 0 || pads[i + t.sp] > OX_BIG)
            return ox_invalid(b, "Col2Im: image, block, strides, dilations or pads out of range");
        t.k[i] = blk[i];
        t.in[i] = (img[i] + pads[i] + pads[i + t.sp] - t.d[i] * (blk[i] - 1) - 1) / t.s[i] + 1;
        if (t.in[i] < 1)
            return ox_invalid(b, "Col2Im: the block does not fit the padded image");
        t.pb[i] = pads[i];
        t.pe[i] = t.s[i] * (t.in[i] - 1) + t.d[i] * (blk[i] - 1) + 1 - pads[i] - img[i];
        kk *= blk[i]; /* at most 256^3 */
        if (__builtin_mul_overflow(ll, t.in[i], &ll))
            return ox_invalid(b, "Col2Im: the blocks of the padded image exceed 64-bit sizes");
    }
    int64_t ck = xt->shape.dims[1];
    if (ck < 0 || ck % kk || xt->shape.dims[2] != ll)
        return ox_invalid(b, "Col2Im's input must be [N, C * %lld, %lld]", (long long)kk,
                          (long long)ll);
    t.g = ck / kk;
    int64_t xd[5] = {xt->shape.dims[0], ck}, wd[5] = {ck, 1};
    for (int i = 0; i < t.sp; i++)
        xd[2 + i] = t.in[i], wd[2 + i] = blk[i];
    xe_shape ws = {.rank = 2 + t.sp};
    memcpy(ws.dims, wd, sizeof wd);
    xe_tensor *w = ox_new_tensor(b, xt->dtype, &ws);
    if (!w)
        return b->failed = true, b->st.code;
    for (int64_t c = 0; c < ck; c++) /* channel c*K + k: one at block position k */
        for (int64_t k = 0; k < kk; k++)
            xe_store_f64(w->data, xt->dtype, c * kk + k, k == c % kk ? 1.0 : 0.0);
    int wt = ox_const(b, w);
    int y = transposed(b, reshaped(b, x, xd, 2 + t.sp), conv_weight(b, wt, t.g, &t), -1, &t);
    if (y >= 0)
        ox_out(b, 0, y);
    return ox_status(b);
}
