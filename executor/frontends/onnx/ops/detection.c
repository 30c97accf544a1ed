/*
 * Builders of the ops detection heads end with:
 *   NonMaxSuppression: the executor's non_max_suppression, one node with
 *     ONNX's inputs; an absent max_output_boxes_per_class or iou_threshold
 *     becomes ONNX's default (0 boxes, an IoU of 0) as a constant, an
 *     absent score_threshold stays absent (every box a candidate). Its
 *     count depends on the scores, so it runs per op, at a cluster border.
 */
#include "onnx_impl.h"

/* ONNX input k, or a scalar constant of dt holding dflt where it is absent. */
static int or_default(ox_b *b, int k, xe_dtype dt, double dflt)
{
    int x = ox_in(b, k);
    return x >= 0 ? x : ox_scalar(b, dt, dflt);
}

xe_code ox_b_nms(ox_b *b)
{
    int boxes = ox_in(b, 0), scores = ox_in(b, 1);
    if (b->failed)
        return ox_status(b);
    if (boxes < 0 || scores < 0)
        return ox_invalid(b, "boxes and scores are required");
    int64_t center = ox_int(b, "center_point_box", 0);
    if (center != 0 && center != 1)
        return ox_invalid(b, "center_point_box must be 0 or 1, got %lld", (long long)center);
    int in[5] = {boxes, scores, or_default(b, 2, XE_I64, 0), or_default(b, 3, XE_F32, 0),
                 ox_in(b, 4)};
    ox_at at = OX_I("center_point_box", center);
    ox_out(b, 0, ox_op(b, XE_OP_NON_MAX_SUPPRESSION, in, in[4] >= 0 ? 5 : 4, &at, 1));
    return ox_status(b);
}
