/*
 * non_max_suppression (ONNX NonMaxSuppression, infer/nms.c): per batch
 * and class, the candidates (every box, or those scoring above
 * score_threshold) sorted by descending score, ties by the lower index
 * (NaN last), then a greedy pass keeps a box unless its IoU with a box
 * already kept exceeds iou_threshold, up to max_output_boxes_per_class.
 * The IoU is worked in f32 in onnxruntime's order of operations, so a box
 * at the threshold goes the same way. The count depends on the data, so
 * the kernel allocates its output (as nonzero does).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

/* A candidate box of one class. */
typedef struct cand {
    float score;
    int64_t idx;
} cand;

/* The settings of one run. */
typedef struct nms_run {
    const float *boxes, *scores;
    int64_t batches, classes, n, max_out;
    float iou, score_min;
    bool has_score_min, center;
    cand *cands;   /* n per class */
    int64_t *kept; /* n per class: the indices kept so far */
    int64_t *rows; /* 3 per selected box */
    int64_t n_rows;
} nms_run;

/* Descending score, then ascending index; NaN after every number. */
static int by_score(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    if (isnan(a->score) != isnan(b->score))
        return isnan(a->score) ? 1 : -1;
    if (!isnan(a->score) && a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Box b's extent along one axis as [lo, hi]: corners at c[i], c[j] or a center and a size. */
static void extent(const float *c, int i, int j, bool center, float *lo, float *hi)
{
    if (center) {
        float half = c[j] / 2;
        *lo = c[i] - half;
        *hi = c[i] + half;
    } else {
        *lo = fminf(c[i], c[j]);
        *hi = fmaxf(c[i], c[j]);
    }
}

/* Whether boxes a and b overlap by more than iou (onnxruntime's SuppressByIOU). */
static bool suppresses(const float *a, const float *b, bool center, float iou)
{
    int xi = center ? 0 : 1, xj = center ? 2 : 3, yi = center ? 1 : 0, yj = center ? 3 : 2;
    float ax0, ax1, bx0, bx1, ay0, ay1, by0, by1;
    extent(a, xi, xj, center, &ax0, &ax1);
    extent(b, xi, xj, center, &bx0, &bx1);
    float ix0 = fmaxf(ax0, bx0), ix1 = fminf(ax1, bx1);
    if (ix1 <= ix0)
        return false;
    extent(a, yi, yj, center, &ay0, &ay1);
    extent(b, yi, yj, center, &by0, &by1);
    float iy0 = fmaxf(ay0, by0), iy1 = fminf(ay1, by1);
    if (iy1 <= iy0)
        return false;
    float inter = (ix1 - ix0) * (iy1 - iy0);
    float area_a = (ax1 - ax0) * (ay1 - ay0), area_b = (bx1 - bx0) * (by1 - by0);
    float uni = area_a + area_b - inter;
    if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0)
        return false;
    return inter / uni > iou;
}

/* The kept boxes of batch bi, class ci, appended to r->rows. */
static void one_class(nms_run *r, int64_t bi, int64_t ci)
{
    const float *sc = r->scores + (bi * r->classes + ci) * r->n;
    const float *bx = r->boxes + bi * r->n * 4;
    int64_t m = 0, k = 0;
    for (int64_t i = 0; i < r->n; i++)
        if (!r->has_score_min || sc[i] > r->score_min)
            r->cands[m++] = (cand){sc[i], i};
    qsort(r->cands, (size_t)m, sizeof(cand), by_score);
    for (int64_t i = 0; i < m && k < r->max_out; i++) {
        int64_t idx = r->cands[i].idx;
        bool keep = true;
        for (int64_t j = 0; j < k && keep; j++)
            keep = !suppresses(bx + idx * 4, bx + r->kept[j] * 4, r->center, r->iou);
        if (!keep)
            continue;
        r->kept[k++] = idx;
        int64_t *row = r->rows + 3 * r->n_rows++;
        row[0] = bi, row[1] = ci, row[2] = idx;
    }
}

/* One element of a scalar operand, dflt when it has none. */
static double scalar(const xe_tensor *t, double dflt)
{
    return xe_tensor_numel(t) > 0 ? xe_load_f64(t->data, t->dtype, 0) : dflt;
}

/* max_output_boxes_per_class clamped to [0, n] (i64 read exactly: INT64_MAX means all). */
static int64_t max_out(const xe_tensor *t, int64_t n)
{
    if (xe_tensor_numel(t) == 0)
        return 0;
    int64_t v = t->dtype == XE_I64 ? ((const int64_t *)t->data)[0] : (int64_t)scalar(t, 0);
    return v < 0 ? 0 : v > n ? n : v;
}

/* The selected rows as a new [n_rows, 3] i64 tensor. */
static xe_tensor *result(const nms_run *r, xe_status *st)
{
    xe_shape s = {.rank = 2, .dims = {r->n_rows, 3}};
    xe_tensor *out = xe_tensor_new(XE_I64, &s, XE_DEV_CPU, st);
    if (out && r->n_rows)
        memcpy(out->data, r->rows, (size_t)r->n_rows * 3 * sizeof(int64_t));
    return out;
}

xe_code xe_cpu_nms(const xe_kernel_args *a, xe_status *st)
{
    const xe_tensor *b = a->in[0], *s = a->in[1];
    nms_run r = {.boxes = b->data,
                 .scores = s->data,
                 .batches = b->shape.dims[0],
                 .classes = s->shape.dims[1],
                 .n = b->shape.dims[1],
                 .iou = (float)scalar(a->in[3], 0),
                 .has_score_min = a->n_in > 4 && xe_tensor_numel(a->in[4]) > 0,
                 .center = xe_node_attr_int(a->node, "center_point_box", 0) == 1};
    r.max_out = max_out(a->in[2], r.n);
    if (r.has_score_min)
        r.score_min = (float)scalar(a->in[4], 0);
    size_t n = (size_t)(r.n ? r.n : 1);
    size_t rows = (size_t)(r.batches * r.classes * r.max_out);
    r.cands = malloc(n * sizeof(cand));
    r.kept = malloc(n * sizeof(int64_t));
    r.rows = malloc((rows ? rows : 1) * 3 * sizeof(int64_t));
    xe_tensor *out = NULL;
    if (!r.cands || !r.kept || !r.rows)
        xe_fail(st, XE_ERR_NOMEM, "out of memory (%zu selected boxes)", rows);
    else {
        for (int64_t bi = 0; bi < r.batches; bi++)
            for (int64_t ci = 0; ci < r.classes; ci++)
                one_class(&r, bi, ci);
        out = result(&r, st);
    }
    free(r.cands);
    free(r.kept);
    free(r.rows);
    if (!out)
        return st->code;
    *a->out_ret = out;
    return XE_OK;
}
