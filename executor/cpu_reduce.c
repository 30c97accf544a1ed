/*
 * CPU kernels of the reductions (sum mean max min prod), argmax and
 * softmax.
 *
 * All three view the operand as [outer, K, inner] after merging adjacent
 * dims that are reduced together or kept together: a row reduction has
 * inner == 1 (contiguous; vectorized with an OpenMP simd reduction, as
 * DESIGN.md's performance note asks), a column reduction has outer == 1
 * (rows of the input are accumulated into an output vector, so reads stay
 * contiguous). Reductions over axes that are not one block (e.g. axes
 * [0,2] of a rank-3 tensor) are done in passes, one block at a time.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "broadcast.h"
#include "kernels.h"
#include "scalar.h"

/* A [outer, K, inner] view of a reduction over one block of dims. */
typedef struct okI {
    int64_t outer, k, inner;
} okI;

static okI view_block(const xe_shape *s, int first, int last)
{
    okI v = {1, 1, 1};
    for (int d = 0; d < s->rank; d++) {
        int64_t n = s->dims[d];
        if (d < first)
            v.outer *= n;
        else if (d <= last)
            v.k *= n;
        else
            v.inner *= n;
    }
    return v;
}

typedef struct red {
    int op;        /* XE_OP_REDUCE_* */
    xe_dtype dt;
    okI v;
    const void *x;
    void *y;
    int64_t count; /* elements per output for the mean (over all passes) */
    bool last;     /* the final pass applies the mean's division */
} red;

/*
 * Row loops (inner == 1) and column loops (inner > 1) for one dtype. ACC is
 * the accumulator type, LOAD converts an element, COMBINE(acc, v) folds.
 */
#define REDUCE_LOOPS(T, ACC, LOAD, STORE, INIT, COMBINE, SIMD)                                  \
    do {                                                                                        \
        const T *restrict x = r->x;                                                             \
        T *restrict y = r->y;                                                                   \
        int64_t O = r->v.outer, K = r->v.k, I = r->v.inner;                                     \
        if (I == 1) {                                                                           \
            _Pragma("omp parallel for if (O * K >= 32768 && O > 1)") for (int64_t o = 0; o < O; o++) { \
                ACC acc = INIT;                                                                 \
                const T *row = x + o * K;                                                       \
                SIMD for (int64_t k = 0; k < K; k++) acc = COMBINE(acc, LOAD(row[k]));          \
                y[o] = STORE(finish(r, acc));                                                   \
            }                                                                                   \
        } else {                                                                                \
            _Pragma("omp parallel for if (O * K * I >= 32768)") for (int64_t c = 0; c < O * ((I + 255) / 256); c++) { \
                int64_t o = c / ((I + 255) / 256), i0 = (c % ((I + 255) / 256)) * 256;          \
                int64_t i1 = i0 + 256 < I ? i0 + 256 : I;                                       \
                ACC acc[256];                                                                   \
                for (int64_t i = i0; i < i1; i++) acc[i - i0] = INIT;                           \
                for (int64_t k = 0; k < K; k++) {                                               \
                    const T *row = x + (o * K + k) * I;                                         \
                    _Pragma("omp simd") for (int64_t i = i0; i < i1; i++)                       \
                        acc[i - i0] = COMBINE(acc[i - i0], LOAD(row[i]));                       \
                }                                                                               \
                for (int64_t i = i0; i < i1; i++) y[o * I + i] = STORE(finish(r, acc[i - i0])); \
            }                                                                                   \
        }                                                                                       \
    } while (0)

#define ADD(a, b) ((a) + (b))
#define MUL(a, b) ((a) * (b))
#define MAXF(a, b) xe_max_f64((a), (b))
#define MINF(a, b) xe_min_f64((a), (b))
#define MAXI(a, b) ((a) > (b) ? (a) : (b))
#define MINI(a, b) ((a) < (b) ? (a) : (b))
#define WMUL(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
#define TO_D(v) ((double)(v))
#define H_TO_D(v) ((double)xe_f16_to_f32(v))
#define D_TO_H(v) xe_f32_to_f16((float)(v))
#define D_TO_F(v) ((float)(v))
#define KEEP(v) (v)
#define SIMD_SUM _Pragma("omp simd reduction(+ : acc)")
#define SIMD_PROD _Pragma("omp simd reduction(* : acc)")
#define NO_SIMD

/* The mean divides on the last pass; float sums keep their type. */
static inline double finish_d(const red *r, double acc)
{
    return r->op == XE_OP_REDUCE_MEAN && r->last ? acc / (double)r->count : acc;
}
static inline float finish_f(const red *r, float acc)
{
    return r->op == XE_OP_REDUCE_MEAN && r->last ? acc / (float)r->count : acc;
}
static inline int64_t finish_i(const red *r, int64_t acc)
{
    if (r->op == XE_OP_REDUCE_MEAN && r->last)
        return r->count ? acc / r->count : 0;
    return acc;
}

static void reduce_f32(const red *r)
{
#define finish finish_f
    switch (r->op) {
    case XE_OP_REDUCE_SUM:
    case XE_OP_REDUCE_MEAN: REDUCE_LOOPS(float, float, KEEP, KEEP, 0.0f, ADD, SIMD_SUM); break;
    case XE_OP_REDUCE_PROD: REDUCE_LOOPS(float, float, KEEP, KEEP, 1.0f, MUL, SIMD_PROD); break;
    case XE_OP_REDUCE_MAX: REDUCE_LOOPS(float, float, KEEP, KEEP, -INFINITY, xe_max_f32, NO_SIMD); break;
    case XE_OP_REDUCE_MIN: REDUCE_LOOPS(float, float, KEEP, KEEP, INFINITY, xe_min_f32, NO_SIMD); break;
    default: break;
    }
#undef finish
}

static void reduce_f64(const red *r)
{
#define finish finish_d
    switch (r->op) {
    case XE_OP_REDUCE_SUM:
    case XE_OP_REDUCE_MEAN: REDUCE_LOOPS(double, double, KEEP, KEEP, 0.0, ADD, SIMD_SUM); break;
    case XE_OP_REDUCE_PROD: REDUCE_LOOPS(double, double, KEEP, KEEP, 1.0, MUL, SIMD_PROD); break;
    case XE_OP_REDUCE_MAX: REDUCE_LOOPS(double, double, KEEP, KEEP, -INFINITY, MAXF, NO_SIMD); break;
    case XE_OP_REDUCE_MIN: REDUCE_LOOPS(double, double, KEEP, KEEP, INFINITY, MINF, NO_SIMD); break;
    default: break;
    }
#undef finish
}

static void reduce_f16(const red *r)
{
#define finish finish_d
    switch (r->op) {
    case XE_OP_REDUCE_SUM:
    case XE_OP_REDUCE_MEAN: REDUCE_LOOPS(xe_f16, double, H_TO_D, D_TO_H, 0.0, ADD, NO_SIMD); break;
    case XE_OP_REDUCE_PROD: REDUCE_LOOPS(xe_f16, double, H_TO_D, D_TO_H, 1.0, MUL, NO_SIMD); break;
    case XE_OP_REDUCE_MAX: REDUCE_LOOPS(xe_f16, double, H_TO_D, D_TO_H, -INFINITY, MAXF, NO_SIMD); break;
    case XE_OP_REDUCE_MIN: REDUCE_LOOPS(xe_f16, double, H_TO_D, D_TO_H, INFINITY, MINF, NO_SIMD); break;
    default: break;
    }
#undef finish
}

static inline int64_t add_wrap(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static void reduce_int(const red *r)
{
#define finish finish_i
    if (r->dt == XE_I32) {
        switch (r->op) {
        case XE_OP_REDUCE_SUM:
        case XE_OP_REDUCE_MEAN: REDUCE_LOOPS(int32_t, int64_t, KEEP, (int32_t), 0, add_wrap, NO_SIMD); break;
        case XE_OP_REDUCE_PROD: REDUCE_LOOPS(int32_t, int64_t, KEEP, (int32_t), 1, WMUL, NO_SIMD); break;
        case XE_OP_REDUCE_MAX: REDUCE_LOOPS(int32_t, int64_t, KEEP, (int32_t), INT64_MIN, MAXI, NO_SIMD); break;
        case XE_OP_REDUCE_MIN: REDUCE_LOOPS(int32_t, int64_t, KEEP, (int32_t), INT64_MAX, MINI, NO_SIMD); break;
        default: break;
        }
    } else {
        switch (r->op) {
        case XE_OP_REDUCE_SUM:
        case XE_OP_REDUCE_MEAN: REDUCE_LOOPS(int64_t, int64_t, KEEP, KEEP, 0, add_wrap, NO_SIMD); break;
        case XE_OP_REDUCE_PROD: REDUCE_LOOPS(int64_t, int64_t, KEEP, KEEP, 1, WMUL, NO_SIMD); break;
        case XE_OP_REDUCE_MAX: REDUCE_LOOPS(int64_t, int64_t, KEEP, KEEP, INT64_MIN, MAXI, NO_SIMD); break;
        case XE_OP_REDUCE_MIN: REDUCE_LOOPS(int64_t, int64_t, KEEP, KEEP, INT64_MAX, MINI, NO_SIMD); break;
        default: break;
        }
    }
#undef finish
}

static void reduce_pass(const red *r)
{
    switch (r->dt) {
    case XE_F32: reduce_f32(r); break;
    case XE_F64: reduce_f64(r); break;
    case XE_F16: reduce_f16(r); break;
    default: reduce_int(r); break;
    }
}

/* The reduced-axes mask of a node for an operand of rank `rank`. */
static void node_mask(const xe_node *n, int rank, bool *mask)
{
    const xe_attr *a = xe_node_attr(n, "axes");
    for (int d = 0; d < rank; d++)
        mask[d] = !a;
    for (int k = 0; a && k < a->n; k++)
        mask[a->ints[k] < 0 ? a->ints[k] + rank : a->ints[k]] = true;
}

xe_code xe_cpu_reduce(const xe_kernel_args *a, xe_status *st)
{
    const xe_tensor *x = a->in[0];
    xe_shape s = x->shape;
    bool mask[XE_MAX_RANK];
    node_mask(a->node, s.rank, mask);
    int64_t count = 1;
    bool empty = false;
    for (int d = 0; d < s.rank; d++)
        if (mask[d]) {
            count *= s.dims[d];
            empty |= s.dims[d] == 0;
        }
    int op = a->node->op;
    if (empty && (op == XE_OP_REDUCE_MAX || op == XE_OP_REDUCE_MIN) && xe_tensor_numel(a->out) > 0)
        return xe_fail(st, XE_ERR_RUNTIME, "%s over an empty axis", xe_op_name(op));
    /* one pass per block of consecutive reduced dims, last block first */
    const void *src = x->data;
    xe_tensor *tmp = NULL;
    int d = s.rank - 1;
    while (d >= 0 && !mask[d])
        d--;
    if (d < 0) { /* nothing reduced: a copy */
        if (a->out->nbytes)
            memcpy(a->out->data, x->data, a->out->nbytes);
        return XE_OK;
    }
    while (d >= 0) {
        int last = d;
        while (d >= 0 && mask[d])
            d--;
        int first = d + 1;
        while (d >= 0 && !mask[d])
            d--;
        bool final = d < 0;
        red r = {.op = op, .dt = x->dtype, .v = view_block(&s, first, last), .x = src,
                 .count = count, .last = final};
        xe_shape next = s;
        next.dims[first] = 1;
        for (int k = first + 1; k <= last; k++)
            next.dims[k] = 1;
        xe_tensor *dst = final ? NULL : xe_tensor_new(x->dtype, &next, XE_DEV_CPU, st);
        if (!final && !dst) {
            xe_tensor_release(tmp);
            return st->code;
        }
        r.y = final ? a->out->data : dst->data;
        if (op == XE_OP_REDUCE_MEAN && !final)
            r.op = XE_OP_REDUCE_SUM;
        reduce_pass(&r);
        xe_tensor_release(tmp);
        tmp = dst;
        src = dst ? dst->data : NULL;
        s = next;
    }
    return XE_OK;
}

/* ---- argmax ------------------------------------------------------------------- */

xe_code xe_cpu_argmax(const xe_kernel_args *a, xe_status *st)
{
    const xe_tensor *x = a->in[0];
    const xe_attr *ax = xe_node_attr(a->node, "axis");
    int rank = x->shape.rank;
    okI v = {1, xe_tensor_numel(x), 1};
    if (ax && rank > 0) {
        int axis = (int)(ax->i < 0 ? ax->i + rank : ax->i);
        v = view_block(&x->shape, axis, axis);
    }
    if (v.k == 0 && v.outer * v.inner > 0)
        return xe_fail(st, XE_ERR_RUNTIME, "argmax over an empty axis");
    int64_t *y = a->out->data;
#pragma omp parallel for if (v.outer * v.k * v.inner >= 32768)
    for (int64_t oi = 0; oi < v.outer * v.inner; oi++) {
        int64_t o = oi / v.inner, i = oi % v.inner, best = 0;
        double bv = 0;
        for (int64_t k = 0; k < v.k; k++) {
            double e = xe_load_f64(x->data, x->dtype, (o * v.k + k) * v.inner + i);
            if (k == 0 || (e > bv && !isnan(bv)) || (isnan(e) && !isnan(bv))) {
                best = k;
                bv = e;
            }
        }
        y[oi] = best;
    }
    return XE_OK;
}

/* ---- softmax -------------------------------------------------------------------- */

#define SOFTMAX(T, ACC, LOAD, STORE, EXP)                                                       \
    do {                                                                                        \
        const T *x = a->in[0]->data;                                                            \
        T *y = a->out->data;                                                                    \
        _Pragma("omp parallel for if (v.outer * v.k * v.inner >= 32768)") for (int64_t oi = 0; oi < v.outer * v.inner; oi++) { \
            int64_t o = oi / v.inner, i = oi % v.inner, base = o * v.k * v.inner + i;           \
            ACC m = -INFINITY, s = 0;                                                           \
            for (int64_t k = 0; k < v.k; k++) {                                                 \
                ACC e = LOAD(x[base + k * v.inner]);                                            \
                m = (e > m || e != e) ? e : m;                                                  \
            }                                                                                   \
            for (int64_t k = 0; k < v.k; k++) {                                                 \
                ACC e = EXP(LOAD(x[base + k * v.inner]) - m);                                   \
                y[base + k * v.inner] = STORE(e);                                               \
                s += e;                                                                         \
            }                                                                                   \
            for (int64_t k = 0; k < v.k; k++)                                                   \
                y[base + k * v.inner] = STORE(LOAD(y[base + k * v.inner]) / s);                 \
        }                                                                                       \
    } while (0)

xe_code xe_cpu_softmax(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    const xe_shape *s = &a->in[0]->shape;
    int64_t axis = xe_node_attr_int(a->node, "axis", -1);
    if (axis < 0)
        axis += s->rank;
    okI v = view_block(s, (int)axis, (int)axis);
    switch (a->in[0]->dtype) {
    case XE_F32: SOFTMAX(float, float, KEEP, KEEP, expf); break;
    case XE_F64: SOFTMAX(double, double, KEEP, KEEP, exp); break;
    case XE_F16: SOFTMAX(xe_f16, float, xe_f16_to_f32, xe_f32_to_f16, expf); break;
    default: break;
    }
    return XE_OK;
}
