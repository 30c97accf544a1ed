/*
 * CPU kernel of softmax(x, axis=A): y = exp(x - max) / sum(exp(x - max))
 * along one axis, numerically stable because the row's maximum is
 * subtracted first.
 *
 * The operand is viewed as [outer, K, inner] with K the softmax axis.
 * Innermost axis (inner == 1): each row is contiguous and streamed three
 * times (max, exp and sum, scale), with OpenMP over rows and simd
 * reductions inside a row. Other axes: a chunk of up to LANES adjacent
 * columns is processed together, walking the K rows of the chunk so reads
 * stay contiguous. f32 and f64 keep exp(x - max) in the output between
 * the second and third pass; f16 computes in float and recomputes exp on
 * the last pass instead of reading back rounded f16 values.
 */
#include <math.h>
#include <stdbool.h>

#include "broadcast.h"
#include "kernels.h"
#include "scalar.h"

#define LANES 256 /* columns per chunk when the axis is not innermost */

/*
 * One contiguous row of K elements: T storage, ACC compute type, LOAD and
 * STORE convert, EXP the exponential. SAME (T is ACC) keeps exp in y
 * between the second and third pass; f16 recomputes it instead of reading
 * back rounded values. A NaN anywhere makes the sum NaN, so the whole row
 * comes out NaN as it does in numpy.
 */
#define SOFTMAX_ROW(T, ACC, LOAD, STORE, EXP, SAME, x, y, K)                                       \
    do {                                                                                           \
        ACC m = -INFINITY, s = 0;                                                                  \
        _Pragma("omp simd reduction(max : m)") for (int64_t k = 0; k < (K); k++)                   \
        {                                                                                          \
            ACC e = LOAD((x)[k]);                                                                  \
            m = e > m ? e : m;                                                                     \
        }                                                                                          \
        if (SAME) {                                                                                \
            _Pragma("omp simd reduction(+ : s)") for (int64_t k = 0; k < (K); k++)                 \
            {                                                                                      \
                ACC e = EXP(LOAD((x)[k]) - m);                                                     \
                (y)[k] = STORE(e);                                                                 \
                s += e;                                                                            \
            }                                                                                      \
            ACC inv = (ACC)1 / s;                                                                  \
            _Pragma("omp simd") for (int64_t k = 0; k < (K); k++)(y)[k] =                          \
                STORE(LOAD((y)[k]) * inv);                                                         \
        } else {                                                                                   \
            _Pragma("omp simd reduction(+ : s)") for (int64_t k = 0; k < (K); k++) s +=            \
                EXP(LOAD((x)[k]) - m);                                                             \
            ACC inv = (ACC)1 / s;                                                                  \
            for (int64_t k = 0; k < (K); k++)                                                      \
                (y)[k] = STORE(EXP(LOAD((x)[k]) - m) * inv);                                       \
        }                                                                                          \
    } while (0)

/* Up to LANES columns [i0, i1) of one outer slice, axis stride I. */
#define SOFTMAX_COLS(T, ACC, LOAD, STORE, EXP, SAME, x, y, K, I, i0, i1)                           \
    do {                                                                                           \
        ACC m[LANES], s[LANES];                                                                    \
        int64_t w = (i1) - (i0);                                                                   \
        for (int64_t i = 0; i < w; i++) {                                                          \
            m[i] = -INFINITY;                                                                      \
            s[i] = 0;                                                                              \
        }                                                                                          \
        for (int64_t k = 0; k < (K); k++) {                                                        \
            const T *row = (x) + k * (I) + (i0);                                                   \
            _Pragma("omp simd") for (int64_t i = 0; i < w; i++)                                    \
            {                                                                                      \
                ACC e = LOAD(row[i]);                                                              \
                m[i] = e > m[i] ? e : m[i];                                                        \
            }                                                                                      \
        }                                                                                          \
        for (int64_t k = 0; k < (K); k++) {                                                        \
            const T *row = (x) + k * (I) + (i0);                                                   \
            T *out = (y) + k * (I) + (i0);                                                         \
            _Pragma("omp simd") for (int64_t i = 0; i < w; i++)                                    \
            {                                                                                      \
                ACC e = EXP(LOAD(row[i]) - m[i]);                                                  \
                if (SAME)                                                                          \
                    out[i] = STORE(e);                                                             \
                s[i] += e;                                                                         \
            }                                                                                      \
        }                                                                                          \
        for (int64_t i = 0; i < w; i++)                                                            \
            s[i] = (ACC)1 / s[i];                                                                  \
        for (int64_t k = 0; k < (K); k++) {                                                        \
            const T *row = (x) + k * (I) + (i0);                                                   \
            T *out = (y) + k * (I) + (i0);                                                         \
            if (SAME)                                                                              \
                _Pragma("omp simd") for (int64_t i = 0; i < w; i++) out[i] =                       \
                    STORE(LOAD(out[i]) * s[i]);                                                    \
            else                                                                                   \
                for (int64_t i = 0; i < w; i++)                                                    \
                    out[i] = STORE(EXP(LOAD(row[i]) - m[i]) * s[i]);                               \
        }                                                                                          \
    } while (0)

/* The whole tensor for one dtype: rows in parallel, or column chunks in parallel. */
#define SOFTMAX_ALL(T, ACC, LOAD, STORE, EXP, SAME)                                                \
    do {                                                                                           \
        const T *x = xv;                                                                           \
        T *y = yv;                                                                                 \
        int64_t K = v.k, I = v.inner, O = v.outer;                                                 \
        bool par = O * K * I >= XE_PARALLEL_MIN;                                                   \
        if (I == 1) {                                                                              \
            _Pragma("omp parallel for if (par && O > 1)") for (int64_t o = 0; o < O; o++)          \
                SOFTMAX_ROW(T, ACC, LOAD, STORE, EXP, SAME, x + o * K, y + o * K, K);              \
        } else {                                                                                   \
            int64_t chunks = (I + LANES - 1) / LANES;                                              \
            _Pragma("omp parallel for if (par && O * chunks > 1)") for (int64_t c = 0;             \
                                                                        c < O * chunks; c++)       \
            {                                                                                      \
                int64_t o = c / chunks, i0 = (c % chunks) * LANES;                                 \
                int64_t i1 = i0 + LANES < I ? i0 + LANES : I;                                      \
                SOFTMAX_COLS(T, ACC, LOAD, STORE, EXP, SAME, x + o * K * I, y + o * K * I, K, I,   \
                             i0, i1);                                                              \
            }                                                                                      \
        }                                                                                          \
    } while (0)

#define KEEP(v) (v)

static void softmax_f32(const void *xv, void *yv, xe_axis_view v)
{
    SOFTMAX_ALL(float, float, KEEP, KEEP, xe_exp_f32, 1);
}

static void softmax_f64(const void *xv, void *yv, xe_axis_view v)
{
    SOFTMAX_ALL(double, double, KEEP, KEEP, exp, 1);
}

static void softmax_f16(const void *xv, void *yv, xe_axis_view v)
{
    SOFTMAX_ALL(xe_f16, float, xe_h2f_vec, xe_f2h_vec, xe_exp_f32, 0);
}

xe_code xe_cpu_softmax(const xe_kernel_args *a, xe_status *st)
{
    const xe_tensor *x = a->in[0];
    int rank = x->shape.rank;
    int64_t axis = xe_node_attr_int(a->node, "axis", -1);
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return xe_fail(st, XE_ERR_GRAPH, "softmax axis %lld out of range for rank %d",
                       (long long)xe_node_attr_int(a->node, "axis", -1), rank);
    xe_axis_view v = xe_axis_view_of(&x->shape, axis);
    if (v.outer * v.k * v.inner == 0)
        return XE_OK;
    switch (x->dtype) {
    case XE_F32:
        softmax_f32(x->data, a->out->data, v);
        break;
    case XE_F64:
        softmax_f64(x->data, a->out->data, v);
        break;
    case XE_F16:
        softmax_f16(x->data, a->out->data, v);
        break;
    default:
        return xe_fail(st, XE_ERR_UNSUPPORTED, "softmax is not defined on %s",
                       xe_dtype_name(x->dtype));
    }
    return XE_OK;
}
