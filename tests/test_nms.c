/*
 * non_max_suppression (ONNX NonMaxSuppression: executor/ir/infer/nms.c,
 * devices/cpu/nms.c) against a reference written here in doubles, a
 * different algorithm from the kernel's sort-then-sweep: each step scans
 * every remaining candidate for the best (highest score, then lowest
 * index), keeps it, and strikes out every candidate it overlaps by more
 * than the threshold. Boxes lie on an integer grid and the thresholds are
 * dyadic, so f32 and f64 agree on every IoU comparison; scores come from
 * a few values, so ties are common. The shape function's refusals name
 * what is wrong, and the op parses from the text format.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "support/ref_dev.h"
#include "xlac/xlac.h"

static xe_status st;

/* One configuration. */
typedef struct cfg {
    int64_t B, C, N, max_out;
    double iou, score_min; /* score_min < -1: no score_threshold input */
    int center;
} cfg;

/* Box a's [lo, hi] along x (axis 0) or y (axis 1), for either box format. */
static void span(const float *a, int axis, int center, double *lo, double *hi)
{
    if (center) {
        *lo = a[axis] - a[axis + 2] / 2.0;
        *hi = a[axis] + a[axis + 2] / 2.0;
        return;
    }
    double p = a[1 - axis], q = a[3 - axis]; /* corners: [y1, x1, y2, x2] */
    *lo = p < q ? p : q;
    *hi = p < q ? q : p;
}

static double ref_iou(const float *a, const float *b, int center)
{
    double alo[2], ahi[2], blo[2], bhi[2], inter = 1, aa = 1, ab = 1;
    for (int ax = 0; ax < 2; ax++) {
        span(a, ax, center, &alo[ax], &ahi[ax]);
        span(b, ax, center, &blo[ax], &bhi[ax]);
        double w =
            (ahi[ax] < bhi[ax] ? ahi[ax] : bhi[ax]) - (alo[ax] > blo[ax] ? alo[ax] : blo[ax]);
        inter *= w > 0 ? w : 0;
        aa *= ahi[ax] - alo[ax];
        ab *= bhi[ax] - blo[ax];
    }
    if (inter <= 0 || aa <= 0 || ab <= 0)
        return 0;
    return inter / (aa + ab - inter);
}

/* The reference's rows for batch bi, class ci appended to rows (3 each); the new count. */
static int64_t ref_class(const cfg *c, const float *boxes, const float *scores, int64_t bi,
                         int64_t ci, int64_t *rows, int64_t n_rows)
{
    const float *sc = scores + (bi * c->C + ci) * c->N, *bx = boxes + bi * c->N * 4;
    bool *alive = calloc((size_t)c->N + 1, 1);
    for (int64_t i = 0; i < c->N; i++)
        alive[i] = c->score_min < -1 || sc[i] > c->score_min;
    for (int64_t kept = 0; kept < c->max_out; kept++) {
        int64_t best = -1;
        for (int64_t i = 0; i < c->N; i++)
            if (alive[i] && (best < 0 || sc[i] > sc[best]))
                best = i;
        if (best < 0)
            break;
        rows[3 * n_rows] = bi, rows[3 * n_rows + 1] = ci, rows[3 * n_rows + 2] = best;
        n_rows++;
        alive[best] = false;
        for (int64_t i = 0; i < c->N; i++)
            if (alive[i] && ref_iou(bx + best * 4, bx + i * 4, c->center) > c->iou)
                alive[i] = false;
    }
    free(alive);
    return n_rows;
}

/* Random boxes on an integer grid (corners in either order, or centers and sizes). */
static xe_tensor *grid_boxes(const cfg *c)
{
    xe_tensor *t = ref_zeros(XE_F32, &(xe_shape){3, {c->B, c->N, 4}});
    float *v = t->data;
    for (int64_t i = 0; i < c->B * c->N; i++) {
        float *b = v + 4 * i;
        if (c->center) {
            b[0] = (float)ref_irand(0, 20), b[1] = (float)ref_irand(0, 20);
            b[2] = (float)(2 * ref_irand(0, 6)), b[3] = (float)(2 * ref_irand(0, 6));
        } else
            for (int k = 0; k < 4; k++)
                b[k] = (float)ref_irand(0, 20);
    }
    return t;
}

/* Scores from eight values in [0, 1), so that ties are common. */
static xe_tensor *tied_scores(const cfg *c)
{
    xe_tensor *t = ref_zeros(XE_F32, &(xe_shape){3, {c->B, c->C, c->N}});
    for (int64_t i = 0; i < c->B * c->C * c->N; i++)
        ((float *)t->data)[i] = (float)ref_irand(0, 7) / 8.0f;
    return t;
}

/* The kernel's rows for c against the reference's. */
static void compare(const cfg *c)
{
    xe_tensor *in[5] = {grid_boxes(c), tied_scores(c),
                        ref_tensor_from(XE_I64, &(xe_shape){1, {1}}, (double[]){0}),
                        ref_tensor_from(XE_F32, &(xe_shape){0}, (double[]){c->iou}),
                        ref_tensor_from(XE_F32, &(xe_shape){0}, (double[]){c->score_min})};
    ((int64_t *)in[2]->data)[0] = c->max_out; /* exact: INT64_MAX does not pass through double */
    int n_in = c->score_min < -1 ? 4 : 5;
    ref_op o;
    ref_op_new(&o, XE_OP_NON_MAX_SUPPRESSION, in, n_in);
    ref_set_int(o.node, "center_point_box", c->center);
    xe_tensor *out = ref_op_run(&o, in, n_in, NULL, &st);
    cr_assert_not_null(out, "%s", st.msg);
    int64_t cap = c->B * c->C * (c->N + 1), *want = malloc((size_t)cap * 3 * sizeof *want), n = 0;
    for (int64_t bi = 0; bi < c->B; bi++)
        for (int64_t ci = 0; ci < c->C; ci++)
            n = ref_class(c, in[0]->data, in[1]->data, bi, ci, want, n);
    cr_assert_eq(out->dtype, XE_I64);
    cr_assert_eq(out->shape.rank, 2);
    cr_assert_eq(out->shape.dims[1], 3);
    cr_assert_eq(out->shape.dims[0], n,
                 "B%lld C%lld N%lld max %lld iou %g score %g center %d: "
                 "%lld rows, the reference keeps %lld",
                 (long long)c->B, (long long)c->C, (long long)c->N, (long long)c->max_out, c->iou,
                 c->score_min, c->center, (long long)out->shape.dims[0], (long long)n);
    for (int64_t i = 0; i < 3 * n; i++)
        cr_assert_eq(((int64_t *)out->data)[i], want[i], "row %lld col %lld: %lld, want %lld",
                     (long long)(i / 3), (long long)(i % 3), (long long)((int64_t *)out->data)[i],
                     (long long)want[i]);
    free(want);
    xe_tensor_release(out);
    ref_op_free(&o);
    for (int k = 0; k < 5; k++)
        xe_tensor_release(in[k]);
}

Test(nms, matches_the_reference_over_shapes_limits_and_thresholds)
{
    static const int64_t Ns[] = {0, 1, 7, 40}, maxes[] = {0, 1, 3, INT64_MAX};
    static const double ious[] = {0, 0.25, 0.5, 1}, scores[] = {-2, 0.25};
    ref_seed(34);
    int cases = 0;
    for (int ni = 0; ni < 4; ni++)
        for (int mi = 0; mi < 4; mi++)
            for (int ii = 0; ii < 4; ii++)
                for (int si = 0; si < 2; si++)
                    for (int center = 0; center < 2; center++) {
                        cfg c = {1 + (ni + mi) % 2,
                                 1 + 2 * ((ii + si) % 2),
                                 Ns[ni],
                                 maxes[mi],
                                 ious[ii],
                                 scores[si],
                                 center};
                        compare(&c);
                        cases++;
                    }
    cr_assert_eq(cases, 256);
}

/* ONNX's own example shape (6 boxes, one class) and a larger one, many times over. */
Test(nms, many_random_draws)
{
    ref_seed(7);
    for (int k = 0; k < 200; k++) {
        cfg c = {1 + k % 3,
                 1 + k % 4,
                 1 + ref_irand(0, 60),
                 1 + ref_irand(0, 8),
                 ref_irand(0, 4) / 4.0,
                 k % 2 ? -2 : 0.375,
                 k % 5 == 0};
        compare(&c);
    }
}

/* The shape function's refusals, each naming what is wrong. */
Test(nms, bad_types_and_shapes)
{
    struct {
        xe_shape boxes, scores;
        xe_dtype box_dt, max_dt;
        int center;
        const char *msg;
    } bad[] = {
        {{3, {1, 5, 4}}, {3, {1, 2, 5}}, XE_F32, XE_I64, 2, "center_point_box must be 0 or 1"},
        {{3, {1, 5, 5}}, {3, {1, 2, 5}}, XE_F32, XE_I64, 0, "boxes must be [batch, boxes, 4]"},
        {{3, {1, 5, 4}}, {2, {2, 5}}, XE_F32, XE_I64, 0, "scores must be [batch, classes, boxes]"},
        {{3, {1, 5, 4}}, {3, {1, 2, 6}}, XE_F32, XE_I64, 0, "disagree on the batch or the box"},
        {{3, {2, 5, 4}}, {3, {1, 2, 5}}, XE_F32, XE_I64, 0, "disagree on the batch or the box"},
        {{3, {1, 5, 4}}, {3, {1, 2, 5}}, XE_F64, XE_I64, 0, "boxes and scores must be f32"},
        {{3, {1, 5, 4}},
         {3, {1, 2, 5}},
         XE_F32,
         XE_F32,
         0,
         "max_output_boxes_per_class must be i64 or i32"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        xe_type in[4] = {{bad[k].box_dt, bad[k].boxes},
                         {bad[k].box_dt, bad[k].scores},
                         {bad[k].max_dt, {0}},
                         {XE_F32, {1, {1}}}};
        ref_op o;
        ref_op_new_types(&o, XE_OP_NON_MAX_SUPPRESSION, in, 4);
        ref_set_int(o.node, "center_point_box", bad[k].center);
        ref_expect_infer_error(&o, bad[k].msg);
        ref_op_free(&o);
    }
    xe_type in[4] = {
        {XE_F32, {3, {1, 5, 4}}}, {XE_F32, {3, {1, 2, 5}}}, {XE_I64, {0}}, {XE_F32, {1, {2}}}};
    ref_op o;
    ref_op_new_types(&o, XE_OP_NON_MAX_SUPPRESSION, in, 4);
    ref_expect_infer_error(&o, "iou_threshold must be a scalar or one element");
    ref_op_free(&o);
}

/* The op in the text format: two boxes that overlap by 81/119 and one apart. */
Test(nms, text_format)
{
    const char *text = "xlac.graph v1\n"
                       "input boxes: f32[1, 3, 4]\n"
                       "input scores: f32[1, 1, 3]\n"
                       "m = const(i64[], 10)\n"
                       "iou = const(f32[], 0.5)\n"
                       "k = non_max_suppression(boxes, scores, m, iou, center_point_box=0)\n"
                       "output k\n";
    xe_tensor *in[2] = {
        ref_tensor_from(XE_F32, &(xe_shape){3, {1, 3, 4}},
                        (double[]){0, 0, 10, 10, 1, 1, 10, 10, 20, 20, 30, 30}),
        ref_tensor_from(XE_F32, &(xe_shape){3, {1, 1, 3}}, (double[]){0.5, 0.75, 0.25})};
    xe_tensor *out = NULL;
    ref_run_graph(text, in, &out);
    cr_assert_eq(out->shape.dims[0], 2);
    const int64_t *v = out->data, want[6] = {0, 0, 1, 0, 0, 2};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(v[i], want[i], "element %d is %lld", i, (long long)v[i]);
    xe_tensor_release(out);
    for (int k = 0; k < 2; k++)
        xe_tensor_release(in[k]);
}
