/*
 * Builders of ONNX's 2-D convolution and pooling: Conv onto conv2d,
 * MaxPool onto max_pool2d, AveragePool onto avg_pool2d. auto_pad
 * (NOTSET, VALID, SAME_UPPER, SAME_LOWER) becomes explicit pads; ONNX's
 * pads order [top, left, bottom, right] is the executor's. 1-D and 3-D
 * forms, non-float dtypes, MaxPool's Indices output and storage_order 1
 * are refused as unsupported.
 */
#include <string.h>

#include "onnx_impl.h"

/* The window of one conv or pool node, in the executor's attribute order. */
typedef struct win {
    int64_t k[2], strides[2], dil[2], pads[4];
} win;

/* An ints attribute of exactly 2 (or 4 for pads) entries, or the default. */
static bool pair(ox_b *b, const char *name, int64_t *v, int n, int64_t dflt)
{
    int got = ox_ints(b, name, v, n);
    if (got < 0) {
        for (int i = 0; i < n; i++)
            v[i] = dflt;
        return true;
    }
    if (got != n) {
        ox_unsupported(b, "attribute %s has %d entries, %d expected for a 2-D %s", name, got, n,
                       b->np->op_type);
        return false;
    }
    return true;
}

/* x must be [N,C,H,W] f32 or f64. */
static bool is_2d(ox_b *b, int x)
{
    if (x < 0)
        return false;
    const xe_type *t = ox_type(b, x);
    if (t->shape.rank != 4) {
        ox_unsupported(b, "only 2-D %s is supported (input rank %d)", b->np->op_type,
                       t->shape.rank);
        return false;
    }
    if (t->dtype != XE_F32 && t->dtype != XE_F64) {
        ox_unsupported(b, "%s of %s is not supported (f32 or f64)", b->np->op_type,
                       xe_dtype_name(t->dtype));
        return false;
    }
    return true;
}

/* auto_pad SAME_*: the pads that make the output ceil(in / stride). */
static bool same_pads(ox_b *b, int x, win *w, bool upper)
{
    const xe_shape *s = &ox_type(b, x)->shape;
    for (int d = 0; d < 2; d++) {
        int64_t in = s->dims[2 + d];
        if (in < 0) {
            ox_unsupported(b, "auto_pad SAME needs known spatial dims");
            return false;
        }
        int64_t out = (in + w->strides[d] - 1) / w->strides[d];
        int64_t tot = (out - 1) * w->strides[d] + (w->k[d] - 1) * w->dil[d] + 1 - in;
        tot = tot < 0 ? 0 : tot;
        w->pads[d] = upper ? tot / 2 : tot - tot / 2;
        w->pads[d + 2] = tot - w->pads[d];
    }
    return true;
}

/* strides, dilations and pads (auto_pad resolved); the kernel already in w->k. */
static bool window(ox_b *b, int x, win *w)
{
    if (!pair(b, "strides", w->strides, 2, 1) || !pair(b, "dilations", w->dil, 2, 1) ||
        !pair(b, "pads", w->pads, 4, 0))
        return false;
    for (int d = 0; d < 2; d++)
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

xe_code ox_b_conv(ox_b *b)
{
    int x = ox_in(b, 0), wt = ox_in(b, 1), bias = ox_in(b, 2);
    win w;
    if (!is_2d(b, x) || wt < 0)
        return ox_status(b);
    const xe_shape *ws = &ox_type(b, wt)->shape;
    if (ws->rank != 4 || ws->dims[2] < 0 || ws->dims[3] < 0)
        return ox_unsupported(b, "Conv needs a 4-D weight with known kernel dims");
    w.k[0] = ws->dims[2];
    w.k[1] = ws->dims[3];
    int64_t ks[2];
    int nk = ox_ints(b, "kernel_shape", ks, 2);
    if (nk >= 0 && (nk != 2 || ks[0] != w.k[0] || ks[1] != w.k[1]))
        return ox_invalid(b, "kernel_shape does not match the weight's dims [%lld, %lld]",
                          (long long)w.k[0], (long long)w.k[1]);
    if (!window(b, x, &w))
        return ox_status(b);
    int in[3] = {x, wt, bias};
    ox_at at[4] = {OX_INTS("strides", w.strides, 2), OX_INTS("pads", w.pads, 4),
                   OX_INTS("dilations", w.dil, 2), OX_I("groups", ox_int(b, "group", 1))};
    ox_out(b, 0, ox_op(b, XE_OP_CONV2D, in, bias >= 0 ? 3 : 2, at, 4));
    return ox_status(b);
}

/* MaxPool and AveragePool: the table entry's op names which. */
xe_code ox_b_pool(ox_b *b)
{
    int x = ox_in(b, 0);
    bool max = ox_current->op == XE_OP_MAX_POOL2D;
    win w;
    if (max && ox_n_out(b) > 1 && b->np->output[1][0])
        return ox_unsupported(b, "MaxPool's Indices output is not supported");
    if (max && ox_int(b, "storage_order", 0) != 0)
        return ox_unsupported(b, "attribute storage_order=1 is not supported");
    if (!is_2d(b, x))
        return ox_status(b);
    int nk = ox_ints(b, "kernel_shape", w.k, 2);
    if (nk != 2)
        return nk < 0 ? ox_invalid(b, "kernel_shape is required")
                      : ox_unsupported(b, "only 2-D %s is supported", b->np->op_type);
    if (!window(b, x, &w))
        return ox_status(b);
    ox_at at[6] = {OX_INTS("kernel", w.k, 2),
                   OX_INTS("strides", w.strides, 2),
                   OX_INTS("pads", w.pads, 4),
                   OX_INTS("dilations", w.dil, 2),
                   OX_I("ceil_mode", ox_int(b, "ceil_mode", 0)),
                   OX_I("count_include_pad", ox_int(b, "count_include_pad", 0))};
    ox_out(b, 0, ox_op(b, ox_current->op, &x, 1, at, max ? 5 : 6));
    return ox_status(b);
}
