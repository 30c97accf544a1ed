/*
 * Builders of the ops that read their input at computed places, each one
 * executor node with ONNX's semantics (ONNX's reference: the kernels'
 * comments in executor/devices/cpu/ say how):
 *   GridSample: grid_sample; mode bilinear / nearest / bicubic (opsets 16 to 19),
 *     linear / nearest / cubic (20 on), 2-D and 3-D; x and grid f16, f32 or f64.
 *   DeformConv: deform_conv2d, 2-D; an absent bias is zeros, an absent mask
 *     stays absent (every tap weighs 1); f32 and f64.
 *   RoiAlign: roi_align; opset 10 (no coordinate_transformation_mode) is
 *     output_half_pixel; f16, f32 and f64 with i64 batch indices.
 *   MaxUnpool: max_unpool into the unpooled shape its window gives; an
 *     output_shape other than that shape is refused (ONNX's reference and
 *     onnxruntime read it differently: to_output_shape).
 */
#include <string.h>

#include "onnx_impl.h"

/* Whether x's dtype is one of the float types an op here takes (f16 only when f16_ok). */
static bool float_input(ox_b *b, int x, const char *what, bool f16_ok)
{
    if (x < 0)
        return false;
    xe_dtype dt = ox_type(b, x)->dtype;
    if (dt == XE_F32 || dt == XE_F64 || (f16_ok && dt == XE_F16))
        return true;
    ox_unsupported(b, "%s is %s; supported: %sf32 and f64", what, xe_dtype_name(dt),
                   f16_ok ? "f16, " : "");
    return false;
}

/* GridSample's mode as the executor names it; NULL (b failed) for an unknown one. */
static const char *grid_mode(ox_b *b)
{
    bool old = b->opset < 20;
    const char *m = ox_str(b, "mode", old ? "bilinear" : "linear");
    if (!strcmp(m, old ? "bilinear" : "linear"))
        return "linear";
    if (!strcmp(m, old ? "bicubic" : "cubic"))
        return "cubic";
    if (!strcmp(m, "nearest"))
        return "nearest";
    ox_invalid(b, "mode \"%s\" is not %s, nearest or %s (opset %d)", m, old ? "bilinear" : "linear",
               old ? "bicubic" : "cubic", b->opset);
    return NULL;
}

xe_code ox_b_grid_sample(ox_b *b)
{
    int x = ox_in(b, 0), grid = ox_in(b, 1);
    if (!float_input(b, x, "X", true) || !float_input(b, grid, "grid", true))
        return ox_status(b);
    int r = ox_rank(b, x);
    if (r != 4 && r != 5)
        return ox_unsupported(b, "GridSample of a rank-%d input (2-D and 3-D are supported)", r);
    const char *mode = grid_mode(b), *pad = ox_str(b, "padding_mode", "zeros");
    if (!mode)
        return ox_status(b);
    if (strcmp(pad, "zeros") && strcmp(pad, "border") && strcmp(pad, "reflection"))
        return ox_invalid(b, "padding_mode \"%s\" is not zeros, border or reflection", pad);
    char pad_copy[16];
    strcpy(pad_copy, pad); /* ox_str's buffer is one for the node */
    ox_at at[3] = {OX_STR("mode", mode), OX_STR("padding_mode", pad_copy),
                   OX_BOOL("align_corners", ox_int(b, "align_corners", 0) != 0)};
    ox_out(b, 0, ox_op(b, XE_OP_GRID_SAMPLE, (int[]){x, grid}, 2, at, 3));
    return ox_status(b);
}

/* An ints attribute of exactly n values into v (absent: each dflt); false (b failed) otherwise. */
static bool ints_of(ox_b *b, const char *name, int n, int64_t dflt, int64_t *v)
{
    int64_t got[8];
    int k = ox_ints(b, name, got, 8);
    for (int d = 0; d < n; d++)
        v[d] = k < 0 ? dflt : got[d < k ? d : 0];
    if (k >= 0 && k != n) {
        ox_invalid(b, "%s has %d values, expected %d", name, k, n);
        return false;
    }
    return !b->failed;
}

xe_code ox_b_deform_conv(ox_b *b)
{
    int x = ox_in(b, 0), w = ox_in(b, 1), offset = ox_in(b, 2), bias = ox_in(b, 3),
        mask = ox_in(b, 4);
    if (!float_input(b, x, "X", false) || w < 0 || offset < 0)
        return ox_status(b);
    if (ox_rank(b, x) != 4)
        return ox_unsupported(b, "DeformConv of a rank-%d input (2-D is supported)", ox_rank(b, x));
    const xe_shape *ws = &ox_type(b, w)->shape;
    int64_t ks[2], s[2], d[2], p[4];
    if (ws->rank != 4 || ws->dims[0] < 0 || ws->dims[2] < 0 || ws->dims[3] < 0)
        return ox_unsupported(b, "DeformConv needs a 4-D weight with known dims");
    if (!ints_of(b, "kernel_shape", 2, -1, ks) || !ints_of(b, "strides", 2, 1, s) ||
        !ints_of(b, "dilations", 2, 1, d) || !ints_of(b, "pads", 4, 0, p))
        return ox_status(b);
    if (ks[0] >= 0 && (ks[0] != ws->dims[2] || ks[1] != ws->dims[3]))
        return ox_invalid(b, "kernel_shape does not match the weight's kernel dims");
    if (bias < 0) {
        xe_shape bs = {.rank = 1, .dims = {ws->dims[0]}};
        xe_tensor *zeros = ox_new_tensor(b, ox_type(b, x)->dtype, &bs);
        if (!zeros)
            return ox_status(b);
        memset(zeros->data, 0, (size_t)ws->dims[0] * xe_dtype_size(zeros->dtype));
        bias = ox_const(b, zeros);
    }
    ox_at at[5] = {OX_INTS("strides", s, 2), OX_INTS("pads", p, 4), OX_INTS("dilations", d, 2),
                   OX_I("groups", ox_int(b, "group", 1)),
                   OX_I("offset_groups", ox_int(b, "offset_group", 1))};
    int in[5] = {x, w, offset, bias, mask};
    ox_out(b, 0, ox_op(b, XE_OP_DEFORM_CONV2D, in, mask >= 0 ? 5 : 4, at, 5));
    return ox_status(b);
}

xe_code ox_b_roi_align(ox_b *b)
{
    int x = ox_in(b, 0), rois = ox_in(b, 1), idx = ox_in(b, 2);
    if (!float_input(b, x, "X", true) || rois < 0 || idx < 0)
        return ox_status(b);
    bool half = false;
    if (b->opset >= 16) {
        const char *ct = ox_str(b, "coordinate_transformation_mode", "half_pixel");
        if (strcmp(ct, "half_pixel") && strcmp(ct, "output_half_pixel"))
            return ox_invalid(b,
                              "coordinate_transformation_mode \"%s\" is not half_pixel or "
                              "output_half_pixel",
                              ct);
        half = !strcmp(ct, "half_pixel");
    }
    const char *mode = ox_str(b, "mode", "avg");
    if (strcmp(mode, "avg") && strcmp(mode, "max"))
        return ox_invalid(b, "mode \"%s\" is not avg or max", mode);
    bool max = !strcmp(mode, "max");
    ox_at at[6] = {
        OX_STR("mode", max ? "max" : "avg"),
        OX_BOOL("half_pixel", half),
        OX_I("output_height", ox_int(b, "output_height", 1)),
        OX_I("output_width", ox_int(b, "output_width", 1)),
        OX_I("sampling_ratio", ox_int(b, "sampling_ratio", 0)),
        {.name = "spatial_scale", .kind = XE_ATTR_FLOAT, .f = ox_float(b, "spatial_scale", 1.0)}};
    ox_out(b, 0, ox_op(b, XE_OP_ROI_ALIGN, (int[]){x, rois, idx}, 3, at, 6));
    return ox_status(b);
}

/* y (the unpooled result) when ONNX input 2, output_shape, is its shape; -1 (b failed) for any
 * other. A larger output_shape has two readings that disagree: ONNX's reference (and its node
 * tests) pads the unpooled result with zeros, onnxruntime and torch's MaxUnpool read the indices
 * as positions in output_shape itself; either would be a guess about the exporter. */
static int to_output_shape(ox_b *b, int y)
{
    int64_t want[XE_MAX_RANK];
    const xe_shape *s = &ox_type(b, y)->shape;
    int n = ox_const_ints(b, 2, "output_shape", want, XE_MAX_RANK);
    if (n < 0)
        return -1;
    if (n != s->rank) {
        ox_invalid(b, "output_shape has %d values for a rank-%d result", n, s->rank);
        return -1;
    }
    for (int d = 0; d < n; d++)
        if (s->dims[d] < 0 || want[d] != s->dims[d]) {
            ox_unsupported(b,
                           "output_shape dim %d is %lld and the unpooled one %lld: an output_shape "
                           "other than the unpooled shape is not supported (onnxruntime reads the "
                           "indices in output_shape, ONNX's reference pads the unpooled result)",
                           d, (long long)want[d], (long long)s->dims[d]);
            return -1;
        }
    return y;
}

xe_code ox_b_max_unpool(ox_b *b)
{
    int x = ox_in(b, 0), idx = ox_in(b, 1);
    if (x < 0 || idx < 0)
        return ox_status(b);
    int k = ox_rank(b, x) - 2;
    if (k < 1 || k > 3)
        return ox_unsupported(b, "MaxUnpool of a rank-%d input (1 to 3 pooled dims)", k + 2);
    int64_t kern[3], s[3], p[6];
    if (ox_ints(b, "kernel_shape", kern, 3) < 0)
        return ox_invalid(b, "kernel_shape is required");
    if (!ints_of(b, "kernel_shape", k, 1, kern) || !ints_of(b, "strides", k, 1, s) ||
        !ints_of(b, "pads", 2 * k, 0, p))
        return ox_status(b);
    ox_at at[3] = {OX_INTS("kernel", kern, k), OX_INTS("strides", s, k), OX_INTS("pads", p, 2 * k)};
    int y = ox_op(b, XE_OP_MAX_UNPOOL, (int[]){x, ox_cast(b, idx, XE_I64)}, 2, at, 3);
    if (y >= 0 && b->n_in > 2 && b->in[2] >= 0)
        y = to_output_shape(b, y);
    ox_out(b, 0, y);
    return ox_status(b);
}
