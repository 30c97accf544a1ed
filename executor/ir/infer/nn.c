/*
 * Shape functions of the neural-network ops (ONNX semantics): gather,
 * tile, pad, conv2d, max_pool2d and avg_pool2d, and the attribute readers
 * that nn.h exports to their kernels. Every attribute is validated here
 * (kind, length, range), so a kernel can trust what it reads.
 *
 * Window ops take NCHW input. Output size per spatial dim:
 *   span = in + pad_begin + pad_end - (dilation * (kernel - 1) + 1)
 *   out  = floor(span / stride) + 1, or with ceil_mode ceil(span / stride) + 1,
 *          less one when that last window would start past in + pad_begin.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "nn.h"

/*
 * Optional ints attribute `name` of exactly `len` entries, each >= lo;
 * absent: every entry is dflt.
 */
static xe_code read_ints(const xe_node *n, const char *name, int len, int64_t lo, int64_t dflt,
                         int64_t *out, xe_status *st)
{
    const xe_attr *a = xe_node_attr(n, name);
    if (!a) {
        for (int k = 0; k < len; k++)
            out[k] = dflt;
        return XE_OK;
    }
    if (a->kind != XE_ATTR_INTS)
        return xe_fail(st, XE_ERR_GRAPH, "%s must be a list of integers", name);
    if (a->n != len)
        return xe_fail(st, XE_ERR_GRAPH, "%s needs %d entries, got %d", name, len, a->n);
    for (int k = 0; k < len; k++) {
        if (a->ints[k] < lo)
            return xe_fail(st, XE_ERR_GRAPH, "%s[%d]=%lld must be >= %lld", name, k,
                           (long long)a->ints[k], (long long)lo);
        out[k] = a->ints[k];
    }
    return XE_OK;
}

/* Optional integer flag `name`, 0 or 1 (default 0). */
static xe_code read_flag(const xe_node *n, const char *name, bool *out, xe_status *st)
{
    const xe_attr *a = xe_node_attr(n, name);
    *out = false;
    if (!a)
        return XE_OK;
    if ((a->kind != XE_ATTR_INT && a->kind != XE_ATTR_BOOL) || a->i < 0 || a->i > 1)
        return xe_fail(st, XE_ERR_GRAPH, "%s must be 0 or 1", name);
    *out = a->i == 1;
    return XE_OK;
}

/* Output size of one spatial dim (see the top of the file); -1 with *st set when none fits. */
static int64_t window_out(const xe_window *p, int64_t in, int64_t k, int64_t s, int64_t d,
                          int64_t p0, int64_t p1, const char *dim, xe_status *st)
{
    if (in < 0)
        return XE_DIM_UNKNOWN;
    int64_t ext, padded, span;
    if (__builtin_mul_overflow(d, k - 1, &ext) || __builtin_add_overflow(ext, 1, &ext) ||
        __builtin_add_overflow(in, p0, &padded) || __builtin_add_overflow(padded, p1, &padded) ||
        __builtin_sub_overflow(padded, ext, &span)) {
        xe_fail(st, XE_ERR_GRAPH,
                "%s: pads %lld and %lld, kernel %lld and dilation %lld on a size of %lld exceed "
                "64-bit sizes",
                dim, (long long)p0, (long long)p1, (long long)k, (long long)d, (long long)in);
        return -1;
    }
    if (span < 0) {
        xe_fail(st, XE_ERR_GRAPH,
                "the kernel spans %lld %s (dilated) but the padded input has %lld", (long long)ext,
                dim, (long long)padded);
        return -1;
    }
    int64_t out = span / s + 1;
    if (p->ceil_mode && span % s) {
        out++;
        if ((out - 1) * s >= in + p0) /* the last window would start in the end padding */
            out--;
    }
    return out;
}

/* conv2d's weight [M, C/groups, kh, kw] against input channels c. */
static xe_code read_conv_weight(const xe_node *n, const xe_shape *w, xe_window *p, xe_status *st)
{
    const xe_attr *g = xe_node_attr(n, "groups");
    if (g && (g->kind != XE_ATTR_INT || g->i < 1))
        return xe_fail(st, XE_ERR_GRAPH, "groups must be an integer >= 1");
    p->groups = g ? g->i : 1;
    if (w->rank != 4)
        return xe_fail(st, XE_ERR_GRAPH,
                       "the weight must be 4-D [M, C/groups, kh, kw], got rank %d", w->rank);
    for (int d = 0; d < 4; d++)
        if (w->dims[d] < 0)
            return xe_fail(st, XE_ERR_GRAPH, "the weight's shape must be known");
    p->m = w->dims[0];
    p->kh = w->dims[2];
    p->kw = w->dims[3];
    if (p->kh < 1 || p->kw < 1)
        return xe_fail(st, XE_ERR_GRAPH, "the kernel is empty (%lldx%lld)", (long long)p->kh,
                       (long long)p->kw);
    if (p->m % p->groups)
        return xe_fail(st, XE_ERR_GRAPH, "groups=%lld does not divide the %lld output channels",
                       (long long)p->groups, (long long)p->m);
    if (p->c >= 0 && p->c != w->dims[1] * p->groups)
        return xe_fail(
            st, XE_ERR_GRAPH,
            "the input has %lld channels but the weight takes %lld per group x %lld groups",
            (long long)p->c, (long long)w->dims[1], (long long)p->groups);
    return XE_OK;
}

/* A pool's kernel=[kh,kw] and flags. */
static xe_code read_pool_kernel(const xe_node *n, xe_window *p, xe_status *st)
{
    int64_t k[2];
    if (!xe_node_attr(n, "kernel"))
        return xe_fail(st, XE_ERR_GRAPH, "needs kernel=[kh,kw]");
    if (read_ints(n, "kernel", 2, 1, 1, k, st) != XE_OK)
        return st->code;
    p->m = p->c;
    p->kh = k[0];
    p->kw = k[1];
    p->groups = 1;
    if (read_flag(n, "ceil_mode", &p->ceil_mode, st) != XE_OK)
        return st->code;
    return read_flag(n, "count_include_pad", &p->count_include_pad, st);
}

/* d * (k - 1) + 1 for d, k >= 1, saturated at INT64_MAX (window_out then refuses the sizes). */
static int64_t dilated_extent(int64_t d, int64_t k)
{
    int64_t e;
    return __builtin_mul_overflow(d, k - 1, &e) || __builtin_add_overflow(e, 1, &e) ? INT64_MAX : e;
}

/* Pools: each pad below the dilated kernel, so that a window reaches the input. */
static xe_code check_pool_pads(const xe_window *p, xe_status *st)
{
    int64_t eh = dilated_extent(p->dh, p->kh), ew = dilated_extent(p->dw, p->kw);
    if (p->pt >= eh || p->pb >= eh || p->pl >= ew || p->pr >= ew)
        return xe_fail(
            st, XE_ERR_GRAPH,
            "pads=[%lld,%lld,%lld,%lld] must be smaller than the kernel (%lldx%lld dilated)",
            (long long)p->pt, (long long)p->pl, (long long)p->pb, (long long)p->pr, (long long)eh,
            (long long)ew);
    return XE_OK;
}

xe_code xe_window_read(const xe_node *n, const xe_shape *x, const xe_shape *w, xe_window *p,
                       xe_status *st)
{
    *p = (xe_window){0};
    if (x->rank != 4)
        return xe_fail(st, XE_ERR_GRAPH, "%s needs a 4-D NCHW input, got rank %d",
                       xe_op_row_of(n->op)->name, x->rank);
    p->n = x->dims[0];
    p->c = x->dims[1];
    p->h = x->dims[2];
    p->w = x->dims[3];
    int64_t s[2], d[2], pads[4];
    if ((w ? read_conv_weight(n, w, p, st) : read_pool_kernel(n, p, st)) != XE_OK ||
        read_ints(n, "strides", 2, 1, 1, s, st) != XE_OK ||
        read_ints(n, "dilations", 2, 1, 1, d, st) != XE_OK ||
        read_ints(n, "pads", 4, 0, 0, pads, st) != XE_OK)
        return st->code;
    p->sh = s[0], p->sw = s[1], p->dh = d[0], p->dw = d[1];
    p->pt = pads[0], p->pl = pads[1], p->pb = pads[2], p->pr = pads[3];
    if (!w && check_pool_pads(p, st) != XE_OK)
        return st->code;
    xe_status_clear(st);
    p->oh = window_out(p, p->h, p->kh, p->sh, p->dh, p->pt, p->pb, "rows", st);
    if (st->code == XE_OK)
        p->ow = window_out(p, p->w, p->kw, p->sw, p->dw, p->pl, p->pr, "columns", st);
    return st->code;
}

void xe_window_range(int64_t x0, int64_t s, int64_t lim, int64_t n, int64_t *lo, int64_t *hi)
{
    int64_t a = x0 >= 0 ? 0 : (-x0 + s - 1) / s;
    int64_t b = x0 >= lim ? 0 : (lim - x0 + s - 1) / s;
    *lo = a < n ? a : n;
    *hi = b < n ? b : n;
    if (*hi < *lo)
        *hi = *lo;
}

static xe_code need_float(const xe_node *n, xe_dtype dt, const char *what, xe_status *st)
{
    if (dt != XE_F32 && dt != XE_F64)
        return xe_fail(st, XE_ERR_GRAPH, "%s needs f32 or f64 %s, got %s (cast first)",
                       xe_op_row_of(n->op)->name, what, xe_dtype_name(dt));
    return XE_OK;
}

xe_code xe_same_dtype_as_input(const xe_type *in, int n_in, xe_status *st)
{
    for (int k = 1; k < n_in; k++)
        if (in[k].dtype != in[0].dtype)
            return xe_fail(st, XE_ERR_GRAPH, "input %d is %s, the input is %s", k,
                           xe_dtype_name(in[k].dtype), xe_dtype_name(in[0].dtype));
    return XE_OK;
}

xe_code xe_infer_conv2d(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    xe_window p;
    if (need_float(n, in[0].dtype, "input", st) != XE_OK ||
        xe_same_dtype_as_input(in, n_in, st) != XE_OK)
        return st->code;
    if (xe_window_read(n, &in[0].shape, &in[1].shape, &p, st) != XE_OK)
        return st->code;
    if (n_in == 3 && (in[2].shape.rank != 1 || in[2].shape.dims[0] != p.m))
        return xe_fail(st, XE_ERR_GRAPH, "the bias must be [%lld] (one per output channel)",
                       (long long)p.m);
    *out = (xe_type){in[0].dtype, {.rank = 4, .dims = {p.n, p.m, p.oh, p.ow}}};
    return XE_OK;
}

xe_code xe_infer_pool2d(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n_in;
    xe_window p;
    if (need_float(n, in[0].dtype, "input", st) != XE_OK ||
        xe_window_read(n, &in[0].shape, NULL, &p, st) != XE_OK)
        return st->code;
    *out = (xe_type){in[0].dtype, {.rank = 4, .dims = {p.n, p.c, p.oh, p.ow}}};
    return XE_OK;
}

xe_code xe_gather_axis(const xe_node *n, int rank, int *axis, xe_status *st)
{
    const xe_attr *a = xe_node_attr(n, "axis");
    if (a && a->kind != XE_ATTR_INT)
        return xe_fail(st, XE_ERR_GRAPH, "axis must be an integer");
    int64_t ax = a ? a->i : 0;
    if (rank == 0)
        return xe_fail(st, XE_ERR_GRAPH, "gather needs data of rank >= 1");
    if (ax < -rank || ax >= rank)
        return xe_fail(st, XE_ERR_GRAPH, "axis %lld out of range for rank %d", (long long)ax, rank);
    *axis = (int)(ax < 0 ? ax + rank : ax);
    return XE_OK;
}

xe_code xe_infer_gather(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n_in;
    int axis = 0;
    const xe_shape *d = &in[0].shape, *ix = &in[1].shape;
    if (in[1].dtype != XE_I32 && in[1].dtype != XE_I64)
        return xe_fail(st, XE_ERR_GRAPH, "indices must be i32 or i64, got %s",
                       xe_dtype_name(in[1].dtype));
    if (xe_gather_axis(n, d->rank, &axis, st) != XE_OK)
        return st->code;
    if (d->rank - 1 + ix->rank > XE_MAX_RANK)
        return xe_fail(st, XE_ERR_GRAPH, "the result would have rank %d, above %d",
                       d->rank - 1 + ix->rank, XE_MAX_RANK);
    xe_shape s = {.rank = d->rank - 1 + ix->rank};
    memcpy(s.dims, d->dims, sizeof(int64_t) * (size_t)axis);
    memcpy(s.dims + axis, ix->dims, sizeof(int64_t) * (size_t)ix->rank);
    memcpy(s.dims + axis + ix->rank, d->dims + axis + 1,
           sizeof(int64_t) * (size_t)(d->rank - axis - 1));
    *out = (xe_type){in[0].dtype, s};
    return XE_OK;
}

xe_code xe_tile_repeats(const xe_node *n, int rank, int64_t *reps, xe_status *st)
{
    if (!xe_node_attr(n, "repeats"))
        return xe_fail(st, XE_ERR_GRAPH, "needs repeats=[...] (one per dim)");
    return read_ints(n, "repeats", rank, 0, 1, reps, st);
}

xe_code xe_infer_tile(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n_in;
    int64_t reps[XE_MAX_RANK];
    if (xe_tile_repeats(n, in[0].shape.rank, reps, st) != XE_OK)
        return st->code;
    xe_shape s = in[0].shape;
    for (int d = 0; d < s.rank; d++) {
        if (s.dims[d] > 0 && reps[d] > ((int64_t)1 << 48) / s.dims[d])
            return xe_fail(st, XE_ERR_GRAPH, "repeats[%d]=%lld makes the result too large", d,
                           (long long)reps[d]);
        s.dims[d] = s.dims[d] < 0 ? (reps[d] ? XE_DIM_UNKNOWN : 0) : s.dims[d] * reps[d];
    }
    *out = (xe_type){in[0].dtype, s};
    return XE_OK;
}

xe_code xe_pad_amounts(const xe_node *n, int rank, int64_t *begin, int64_t *end, xe_status *st)
{
    int64_t pads[2 * XE_MAX_RANK];
    if (!xe_node_attr(n, "pads"))
        return xe_fail(st, XE_ERR_GRAPH, "needs pads=[begin..., end...] (%d entries)", 2 * rank);
    if (read_ints(n, "pads", 2 * rank, -((int64_t)1 << 40), 0, pads, st) != XE_OK)
        return st->code;
    for (int d = 0; d < rank; d++) {
        if (pads[d] > ((int64_t)1 << 40) || pads[rank + d] > ((int64_t)1 << 40))
            return xe_fail(st, XE_ERR_GRAPH, "pads for dim %d are too large", d);
        begin[d] = pads[d];
        end[d] = pads[rank + d];
    }
    return XE_OK;
}

/* pad's value must be representable in the operand's dtype. */
static xe_code check_pad_value(const xe_node *n, xe_dtype dt, xe_status *st)
{
    const xe_attr *a = xe_node_attr(n, "value");
    if (!a)
        return XE_OK;
    if (a->kind != XE_ATTR_FLOAT && a->kind != XE_ATTR_INT)
        return xe_fail(st, XE_ERR_GRAPH, "value must be a number");
    double v = a->kind == XE_ATTR_INT ? (double)a->i : a->f;
    bool ok = true;
    if (dt == XE_BOOL)
        ok = v == 0 || v == 1;
    else if (dt == XE_I32)
        ok = v == trunc(v) && v >= -2147483648.0 && v <= 2147483647.0;
    else if (dt == XE_I64)
        ok = v == trunc(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0;
    if (!ok)
        return xe_fail(st, XE_ERR_GRAPH, "value %g does not fit %s", v, xe_dtype_name(dt));
    return XE_OK;
}

xe_code xe_infer_pad(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    (void)n_in;
    int64_t b[XE_MAX_RANK], e[XE_MAX_RANK];
    const xe_shape *x = &in[0].shape;
    if (xe_pad_amounts(n, x->rank, b, e, st) != XE_OK ||
        check_pad_value(n, in[0].dtype, st) != XE_OK)
        return st->code;
    xe_shape s = *x;
    for (int d = 0; d < x->rank; d++) {
        if (x->dims[d] < 0)
            continue;
        s.dims[d] = x->dims[d] + b[d] + e[d];
        if (s.dims[d] < 0)
            return xe_fail(st, XE_ERR_GRAPH, "pads %lld and %lld crop dim %d of size %lld below 0",
                           (long long)b[d], (long long)e[d], d, (long long)x->dims[d]);
    }
    *out = (xe_type){in[0].dtype, s};
    return XE_OK;
}
