/*
 * Shape functions of the ops that sample their input at computed
 * positions (ONNX GridSample and DeformConv; kernels in
 * devices/cpu/grid_sample.c and devices/cpu/deform_conv.c):
 *
 *   grid_sample(x, grid, mode="linear", padding_mode="zeros", align_corners=false)
 *     x [N, C, H, W] or [N, C, D, H, W] (f16, f32, f64), grid [N, H', W', 2] or
 *     [N, D', H', W', 3] (f16, f32, f64), its last dim (x, y[, z]) from the
 *     innermost dim of x out; the result is x's dtype, [N, C, H', W'] or
 *     [N, C, D', H', W'].
 *   deform_conv2d(x, w, offset, bias[, mask], strides, pads, dilations, groups, offset_groups)
 *     conv2d's x [N, C, H, W] and w [M, C/groups, kh, kw]; offset
 *     [N, offset_groups*kh*kw*2, OH, OW], bias [M], mask [N, offset_groups*kh*kw, OH, OW],
 *     all of x's dtype (f32, f64); the result [N, M, OH, OW] as conv2d's window gives it.
 */
#include <string.h>

#include "kernels.h"
#include "nn.h"

/* Whether dim a (maybe unknown) can be b (maybe unknown). */
static bool fits(int64_t a, int64_t b)
{
    return a < 0 || b < 0 || a == b;
}

static bool is_float(xe_dtype dt)
{
    return dt == XE_F16 || dt == XE_F32 || dt == XE_F64;
}

/* String attribute name of n is one of the n_ok words in ok (absent: the first). */
static xe_code one_of(const xe_node *n, const char *name, const char *const *ok, int n_ok,
                      xe_status *st)
{
    const char *v = xe_node_attr_string(n, name, ok[0]);
    for (int k = 0; k < n_ok; k++)
        if (!strcmp(v, ok[k]))
            return XE_OK;
    return xe_fail(st, XE_ERR_GRAPH, "%s \"%s\" is not one of \"%s\", \"%s\", \"%s\"", name, v,
                   ok[0], ok[1], n_ok > 2 ? ok[2] : ok[1]);
}

xe_code xe_infer_grid_sample(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                             xe_status *st)
{
    (void)n_in;
    static const char *const modes[] = {"linear", "nearest", "cubic"};
    static const char *const pads[] = {"zeros", "border", "reflection"};
    if (one_of(n, "mode", modes, 3, st) != XE_OK || one_of(n, "padding_mode", pads, 3, st) != XE_OK)
        return st->code;
    const xe_shape *x = &in[0].shape, *g = &in[1].shape;
    if (!is_float(in[0].dtype) || !is_float(in[1].dtype))
        return xe_fail(st, XE_ERR_UNSUPPORTED, "x and grid must be f16, f32 or f64, got %s and %s",
                       xe_dtype_name(in[0].dtype), xe_dtype_name(in[1].dtype));
    if (x->rank != 4 && x->rank != 5)
        return xe_fail(st, XE_ERR_GRAPH, "x must be [N, C, H, W] or [N, C, D, H, W], got rank %d",
                       x->rank);
    if (g->rank != x->rank || !fits(g->dims[0], x->dims[0]) ||
        !fits(g->dims[g->rank - 1], x->rank - 2))
        return xe_fail(st, XE_ERR_GRAPH,
                       "grid must be [N, <%d output dims>, %d] with x's N, got rank %d",
                       x->rank - 2, x->rank - 2, g->rank);
    xe_shape s = {.rank = x->rank, .dims = {x->dims[0] >= 0 ? x->dims[0] : g->dims[0], x->dims[1]}};
    for (int d = 2; d < x->rank; d++)
        s.dims[d] = g->dims[d - 1];
    *out = (xe_type){in[0].dtype, s};
    return XE_OK;
}

/* offset (channels per offset group: per) or mask (per 1) is [N, og*kh*kw*per, OH, OW]. */
static xe_code check_field(const xe_type *t, const xe_window *p, int64_t og, int64_t per,
                           const char *what, xe_status *st)
{
    const xe_shape *s = &t->shape;
    int64_t ch = og * p->kh * p->kw * per;
    if (s->rank != 4 || !fits(s->dims[0], p->n) || !fits(s->dims[1], ch) ||
        !fits(s->dims[2], p->oh) || !fits(s->dims[3], p->ow))
        return xe_fail(st, XE_ERR_GRAPH,
                       "%s must be [N, %lld, %lld, %lld] (offset groups x kernel taps%s, the "
                       "output's rows and columns), got rank %d",
                       what, (long long)ch, (long long)p->oh, (long long)p->ow,
                       per == 2 ? " x 2" : "", s->rank);
    return XE_OK;
}

xe_code xe_infer_deform_conv2d(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                               xe_status *st)
{
    xe_window p;
    if (in[0].dtype != XE_F32 && in[0].dtype != XE_F64)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "deform_conv2d needs f32 or f64, got %s",
                       xe_dtype_name(in[0].dtype));
    if (xe_same_dtype_as_input(in, n_in, st) != XE_OK)
        return st->code;
    if (xe_window_read(n, &in[0].shape, &in[1].shape, &p, st) != XE_OK)
        return st->code;
    int64_t og = xe_node_attr_int(n, "offset_groups", 1);
    if (og < 1 || (p.c >= 0 && p.c % og))
        return xe_fail(st, XE_ERR_GRAPH,
                       "offset_groups %lld must be >= 1 and divide the %lld "
                       "input channels",
                       (long long)og, (long long)p.c);
    if (check_field(&in[2], &p, og, 2, "offset", st) != XE_OK ||
        (n_in > 4 && check_field(&in[4], &p, og, 1, "mask", st) != XE_OK))
        return st->code;
    if (in[3].shape.rank != 1 || !fits(in[3].shape.dims[0], p.m))
        return xe_fail(st, XE_ERR_GRAPH, "the bias must be [%lld] (one per output channel)",
                       (long long)p.m);
    *out = (xe_type){in[0].dtype, {.rank = 4, .dims = {p.n, p.m, p.oh, p.ow}}};
    return XE_OK;
}
