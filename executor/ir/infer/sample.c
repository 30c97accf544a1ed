/*
 * Shape functions of the ops that sample their input at computed
 * positions (ONNX GridSample; kernel in devices/cpu/grid_sample.c):
 *
 *   grid_sample(x, grid, mode="linear", padding_mode="zeros", align_corners=false)
 *     x [N, C, H, W] or [N, C, D, H, W] (f16, f32, f64), grid [N, H', W', 2] or
 *     [N, D', H', W', 3] (f16, f32, f64), its last dim (x, y[, z]) from the
 *     innermost dim of x out; the result is x's dtype, [N, C, H', W'] or
 *     [N, C, D', H', W'].
 */
#include <string.h>

#include "kernels.h"

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
