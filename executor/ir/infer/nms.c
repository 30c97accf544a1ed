/*
 * non_max_suppression's shape function (ONNX NonMaxSuppression):
 *
 *   non_max_suppression(boxes, scores, max_output_boxes_per_class, iou_threshold
 *                       [, score_threshold], center_point_box=0)
 *
 * boxes f32 [batch, boxes, 4] (center_point_box 0: [y1, x1, y2, x2], any
 * two opposite corners; 1: [x_center, y_center, width, height]), scores f32
 * [batch, classes, boxes]; max_output_boxes_per_class an integer, the
 * thresholds f32, each a scalar or one element (none: ONNX's defaults, 0
 * boxes and an IoU threshold of 0; without score_threshold every box is a
 * candidate). The result is i64 [selected, 3], one (batch, class, box) row
 * per kept box: per batch, per class, by descending score, ties by the
 * lower box index, as onnxruntime and ONNX's reference. Its count depends
 * on the data: the CPU kernel (devices/cpu/nms.c) allocates it.
 */
#include "kernels.h"

/* Whether dim a (maybe unknown) can be b (maybe unknown). */
static bool fits(int64_t a, int64_t b)
{
    return a < 0 || b < 0 || a == b;
}

/* A scalar operand (or one of at most one element): an integer when want_int, else f32. */
static xe_code scalar(const xe_type *t, const char *what, bool want_int, xe_status *st)
{
    bool is_int = t->dtype == XE_I64 || t->dtype == XE_I32;
    if (want_int ? !is_int : t->dtype != XE_F32)
        return xe_fail(st, XE_ERR_GRAPH, "%s must be %s, got %s", what,
                       want_int ? "i64 or i32" : "f32", xe_dtype_name(t->dtype));
    int64_t numel = xe_shape_numel(&t->shape);
    if (t->shape.rank > 1 || numel > 1)
        return xe_fail(st, XE_ERR_GRAPH, "%s must be a scalar or one element, got rank %d", what,
                       t->shape.rank);
    return XE_OK;
}

/* boxes [batch, n, 4] and scores [batch, classes, n], both f32. */
static xe_code check_boxes(const xe_type *in, xe_status *st)
{
    const xe_shape *b = &in[0].shape, *s = &in[1].shape;
    if (in[0].dtype != XE_F32 || in[1].dtype != XE_F32)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "boxes and scores must be f32, got %s and %s",
                       xe_dtype_name(in[0].dtype), xe_dtype_name(in[1].dtype));
    if (b->rank != 3 || !fits(b->dims[2], 4))
        return xe_fail(st, XE_ERR_GRAPH, "boxes must be [batch, boxes, 4], got rank %d", b->rank);
    if (s->rank != 3)
        return xe_fail(st, XE_ERR_GRAPH, "scores must be [batch, classes, boxes], got rank %d",
                       s->rank);
    if (!fits(b->dims[0], s->dims[0]) || !fits(b->dims[1], s->dims[2]))
        return xe_fail(st, XE_ERR_GRAPH,
                       "boxes [%lld, %lld, 4] and scores [%lld, %lld, %lld] disagree on the batch "
                       "or the box count",
                       (long long)b->dims[0], (long long)b->dims[1], (long long)s->dims[0],
                       (long long)s->dims[1], (long long)s->dims[2]);
    return XE_OK;
}

xe_code xe_infer_nms(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st)
{
    int64_t center = xe_node_attr_int(n, "center_point_box", 0);
    if (center != 0 && center != 1)
        return xe_fail(st, XE_ERR_GRAPH, "center_point_box must be 0 or 1, got %lld",
                       (long long)center);
    if (check_boxes(in, st) != XE_OK ||
        scalar(&in[2], "max_output_boxes_per_class", true, st) != XE_OK ||
        scalar(&in[3], "iou_threshold", false, st) != XE_OK ||
        (n_in > 4 && scalar(&in[4], "score_threshold", false, st) != XE_OK))
        return st->code;
    *out = (xe_type){XE_I64, {.rank = 2, .dims = {XE_DIM_UNKNOWN, 3}}};
    return XE_OK;
}
