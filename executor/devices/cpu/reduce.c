/*
 * CPU kernels of the reductions (sum mean max min prod) and argmax
 * (softmax, which shares the view, is in cpu/softmax.c).
 *
 * Both view the operand as [outer, K, inner] after merging adjacent
 * dims that are reduced together or kept together: a row reduction has
 * inner == 1 (contiguous; vectorized with an OpenMP simd reduction, as
 * DESIGN.md's performance note asks), a column reduction has outer == 1
 * (rows of the input are accumulated into an output vector, so reads stay
 * contiguous). Reductions over axes that are not one block (e.g. axes
 * [0,2] of a rank-3 tensor) are done in passes, one block at a time.
 */
#include <float.h>
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
    int op; /* XE_OP_REDUCE_* */
    xe_dtype dt;
    okI v;
    const void *x;
    void *y;
    int64_t count; /* elements per output for the mean (over all passes) */
    bool last;     /* the final pass applies the mean's division */
} red;

#define FEW_ROWS 4 /* below this many rows, threads split each row instead */
#define PRAGMA(x) _Pragma(#x)

/* f16 loads: the F16C instruction where the compiler targets it (exact either way). */
#ifdef __F16C__
#include <immintrin.h>
#define H2F(v) _cvtsh_ss(v)
#else
#define H2F(v) xe_h2f(v)
#endif
#define F2H(v) xe_f2h((float)(v))
#define KEEP(v) (v)
#define ADD(a, b) ((a) + (b))
#define MUL(a, b) ((a) * (b))
#define MAXI(a, b) ((a) > (b) ? (a) : (b))
#define MINI(a, b) ((a) < (b) ? (a) : (b))
/* NaN-propagating, +0 above -0 (scalar.h's xe_max_f32 and xe_min_f32, for float and double) */
#define MAXF(a, b) ((a) != (a) || (a) > (b) ? (a) : (a) == (b) ? ((a) == 0 ? (a) + (b) : (a)) : (b))
#define MINF(a, b)                                                                                 \
    ((a) != (a) || (a) < (b) ? (a) : (a) == (b) ? ((a) == 0 ? -(-(a) - (b)) : (a)) : (b))
#define I2U(v) ((uint64_t)(int64_t)(v)) /* int sums and products wrap in uint64 */
#define I2I(v) ((int64_t)(v))

/*
 * One contiguous row folded with an OpenMP reduction clause RED: vectorized
 * (simd) and, for the few-long-rows case, split across threads too.
 */
#define DEF_ROW_FOLD(NAME, T, ACC, LOAD, INIT, RED, COMBINE)                                       \
    static ACC NAME(const T *restrict x, int64_t K, bool par)                                      \
    {                                                                                              \
        ACC s = INIT;                                                                              \
        if (par) {                                                                                 \
            PRAGMA(omp parallel for simd reduction(RED : s))                                       \
            for (int64_t k = 0; k < K; k++)                                                        \
                s = COMBINE(s, LOAD(x[k]));                                                        \
        } else {                                                                                   \
            PRAGMA(omp simd reduction(RED : s))                                                    \
            for (int64_t k = 0; k < K; k++)                                                        \
                s = COMBINE(s, LOAD(x[k]));                                                        \
        }                                                                                          \
        return s;                                                                                  \
    }

/*
 * Float max/min of a row: a vectorized max/min plus a NaN flag (NaN wins).
 * The vector max leaves the sign of a zero result to the order of the
 * lanes; a zero result is refolded in order with FOLD (+0 above -0), so
 * that it is the zero that every other path gives. So is a result of EDGE
 * (-FLT_MAX for a float max): clang's OpenMP starts each private max at the
 * lowest finite value, not at -inf as gcc's does, so a row of -inf would
 * end there.
 */
#define DEF_ROW_NANFOLD(NAME, T, ACC, LOAD, INIT, EDGE, RED, CMP, FOLD)                            \
    static ACC NAME(const T *restrict x, int64_t K, bool par)                                      \
    {                                                                                              \
        ACC m = INIT;                                                                              \
        int bad = 0;                                                                               \
        if (par) {                                                                                 \
            PRAGMA(omp parallel for simd reduction(RED : m) reduction(| : bad))                    \
            for (int64_t k = 0; k < K; k++) {                                                      \
                ACC v = LOAD(x[k]);                                                                \
                m = v CMP m ? v : m;                                                               \
                bad |= v != v;                                                                     \
            }                                                                                      \
        } else {                                                                                   \
            PRAGMA(omp simd reduction(RED : m) reduction(| : bad))                                 \
            for (int64_t k = 0; k < K; k++) {                                                      \
                ACC v = LOAD(x[k]);                                                                \
                m = v CMP m ? v : m;                                                               \
                bad |= v != v;                                                                     \
            }                                                                                      \
        }                                                                                          \
        if (!bad && (m == 0 || m == EDGE)) {                                                       \
            m = INIT;                                                                              \
            for (int64_t k = 0; k < K; k++)                                                        \
                m = FOLD(m, LOAD(x[k]));                                                           \
        }                                                                                          \
        return bad ? (ACC)NAN : m;                                                                 \
    }

DEF_ROW_FOLD(row_sum_f32, float, float, KEEP, 0.0f, +, ADD)
DEF_ROW_FOLD(row_prod_f32, float, float, KEEP, 1.0f, *, MUL)
DEF_ROW_NANFOLD(row_max_f32, float, float, KEEP, -INFINITY, -FLT_MAX, max, >, MAXF)
DEF_ROW_NANFOLD(row_min_f32, float, float, KEEP, INFINITY, FLT_MAX, min, <, MINF)
DEF_ROW_FOLD(row_sum_f64, double, double, KEEP, 0.0, +, ADD)
DEF_ROW_FOLD(row_prod_f64, double, double, KEEP, 1.0, *, MUL)
DEF_ROW_NANFOLD(row_max_f64, double, double, KEEP, -INFINITY, -DBL_MAX, max, >, MAXF)
DEF_ROW_NANFOLD(row_min_f64, double, double, KEEP, INFINITY, DBL_MAX, min, <, MINF)
DEF_ROW_FOLD(row_sum_f16, xe_f16, float, H2F, 0.0f, +, ADD)
DEF_ROW_FOLD(row_prod_f16, xe_f16, float, H2F, 1.0f, *, MUL)
DEF_ROW_NANFOLD(row_max_f16, xe_f16, float, H2F, -INFINITY, -FLT_MAX, max, >, MAXF)
DEF_ROW_NANFOLD(row_min_f16, xe_f16, float, H2F, INFINITY, FLT_MAX, min, <, MINF)
DEF_ROW_FOLD(row_sum_i32, int32_t, uint64_t, I2U, 0, +, ADD)
DEF_ROW_FOLD(row_prod_i32, int32_t, uint64_t, I2U, 1, *, MUL)
DEF_ROW_FOLD(row_max_i32, int32_t, int64_t, I2I, INT64_MIN, max, MAXI)
DEF_ROW_FOLD(row_min_i32, int32_t, int64_t, I2I, INT64_MAX, min, MINI)
DEF_ROW_FOLD(row_sum_i64, int64_t, uint64_t, I2U, 0, +, ADD)
DEF_ROW_FOLD(row_prod_i64, int64_t, uint64_t, I2U, 1, *, MUL)
DEF_ROW_FOLD(row_max_i64, int64_t, int64_t, I2I, INT64_MIN, max, MAXI)
DEF_ROW_FOLD(row_min_i64, int64_t, int64_t, I2I, INT64_MAX, min, MINI)

/* The mean divides on the last pass. */
static inline float finish_f(const red *r, float acc)
{
    return r->op == XE_OP_REDUCE_MEAN && r->last ? acc / (float)r->count : acc;
}
static inline double finish_d(const red *r, double acc)
{
    return r->op == XE_OP_REDUCE_MEAN && r->last ? acc / (double)r->count : acc;
}
/* Ints: the mean is the (wrapped) sum truncated-divided by the count. */
static inline int64_t finish_i(const red *r, int64_t acc)
{
    if (r->op == XE_OP_REDUCE_MEAN && r->last)
        return r->count ? acc / r->count : 0;
    return acc;
}
#define FINISH_I(r, acc) finish_i((r), (int64_t)(acc))

#define TO_I32(v) ((int32_t)(uint32_t)(uint64_t)(v))
#define TO_I64(v) ((int64_t)(v))

/*
 * The column layout's tiles: W adjacent outputs a tile (whole rows when
 * they are at most XE_COL_WIDE; scalar.h has the rule, shared with
 * generated C), per tiles a row of I outputs, and the K input rows in C
 * chunks (xe_column_chunks: more than one when there are few tiles).
 */
typedef struct col_grid {
    int64_t O, K, I; /* the [outer, K, inner] view */
    int64_t W, per, tiles, C;
} col_grid;

static col_grid col_grid_of(const okI *v)
{
    col_grid g = {.O = v->outer, .K = v->k, .I = v->inner};
    g.W = g.I <= XE_COL_WIDE ? g.I + (g.I == 0) : XE_COL_TILE;
    g.per = (g.I + g.W - 1) / g.W;
    g.tiles = g.O * g.per;
    g.C = xe_column_chunks(g.tiles, g.K);
    return g;
}

/*
 * The layouts of one dtype and op, as functions of their operands: T is
 * the element type, ACC the accumulator (read through LOAD, stored
 * through STORE after FINISH(r, acc), the mean's division), INIT the
 * fold's start and COMBINE(acc, v) folds one value; ROW folds one
 * contiguous row (DEF_ROW_FOLD, DEF_ROW_NANFOLD).
 *
 * Rows (inner == 1): threads over rows, or inside each row when there
 * are few.
 */
#define DEF_REDUCE_ROWS(NAME, T, STORE, FINISH, ROW)                                               \
    static void NAME(const red *r, const T *restrict x, T *restrict y, bool big)                   \
    {                                                                                              \
        int64_t O = r->v.outer, K = r->v.k;                                                        \
        if (O < FEW_ROWS) {                                                                        \
            for (int64_t o = 0; o < O; o++)                                                        \
                y[o] = STORE(FINISH(r, ROW(x + o * K, K, big)));                                   \
        } else {                                                                                   \
            _Pragma("omp parallel for if (big)") for (int64_t o = 0; o < O; o++) y[o] =            \
                STORE(FINISH(r, ROW(x + o * K, K, false)));                                        \
        }                                                                                          \
    }

/*
 * Columns (inner > 1): each tile of adjacent outputs accumulates the K
 * input rows of its tile (contiguous reads); threads over tiles and, when
 * there are few, over chunks of the rows, whose partials (part: C x O x I)
 * are combined in chunk order. NAME_tile is tile t over chunk c.
 */
#define DEF_REDUCE_COLS(NAME, T, ACC, LOAD, STORE, FINISH, INIT, COMBINE)                          \
    static inline void NAME##_tile(const red *r, const col_grid *g, const T *restrict x,           \
                                   T *restrict y, ACC *part, int64_t t, int64_t c)                 \
    {                                                                                              \
        int64_t O = g->O, K = g->K, I = g->I, W = g->W;                                            \
        int64_t o = t / g->per, i0 = t % g->per * W;                                               \
        int64_t w = I - i0 < W ? I - i0 : W;                                                       \
        int64_t kb = xe_chunk_begin(K, g->C, c), ke = xe_chunk_begin(K, g->C, c + 1);              \
        ACC acc[XE_COL_WIDE];                                                                      \
        for (int64_t i = 0; i < w; i++)                                                            \
            acc[i] = INIT;                                                                         \
        for (int64_t k = kb; k < ke; k++) {                                                        \
            const T *row = x + (o * K + k) * I + i0;                                               \
            _Pragma("omp simd") for (int64_t i = 0; i < w; i++) acc[i] =                           \
                COMBINE(acc[i], LOAD(row[i]));                                                     \
        }                                                                                          \
        if (g->C > 1)                                                                              \
            memcpy(part + (c * O + o) * I + i0, acc, sizeof(ACC) * (size_t)w);                     \
        else                                                                                       \
            for (int64_t i = 0; i < w; i++)                                                        \
                y[o * I + i0 + i] = STORE(FINISH(r, acc[i]));                                      \
    }                                                                                              \
    static void NAME##_combine(const red *r, const col_grid *g, const ACC *part, T *restrict y)    \
    {                                                                                              \
        int64_t n = g->O * g->I, C = g->C;                                                         \
        _Pragma("omp parallel for if (n * C >= XE_PARALLEL_MIN)") for (int64_t j = 0; j < n; j++)  \
        {                                                                                          \
            ACC a = part[j];                                                                       \
            for (int64_t c = 1; c < C; c++)                                                        \
                a = COMBINE(a, part[c * n + j]);                                                   \
            y[j] = STORE(FINISH(r, a));                                                            \
        }                                                                                          \
    }                                                                                              \
    static void NAME(const red *r, const T *restrict x, T *restrict y, bool big)                   \
    {                                                                                              \
        col_grid g = col_grid_of(&r->v);                                                           \
        ACC *part = g.C > 1 ? malloc(sizeof(ACC) * (size_t)(g.C * g.O * g.I)) : NULL;              \
        if (!part)                                                                                 \
            g.C = 1;                                                                               \
        int64_t tiles = g.tiles, C = g.C;                                                          \
        _Pragma("omp parallel for collapse(2) if (big)") for (int64_t t = 0; t < tiles;            \
                                                              t++) for (int64_t c = 0; c < C; c++) \
            NAME##_tile(r, &g, x, y, part, t, c);                                                  \
        if (C > 1) {                                                                               \
            NAME##_combine(r, &g, part, y);                                                        \
            free(part);                                                                            \
        }                                                                                          \
    }

/* One op of one dtype: its row and column layouts and the choice between them. */
#define DEF_REDUCE(NAME, T, ACC, LOAD, STORE, FINISH, INIT, COMBINE, ROW)                          \
    DEF_REDUCE_ROWS(NAME##_rows, T, STORE, FINISH, ROW)                                            \
    DEF_REDUCE_COLS(NAME##_cols, T, ACC, LOAD, STORE, FINISH, INIT, COMBINE)                       \
    static void NAME(const red *r)                                                                 \
    {                                                                                              \
        bool big = r->v.outer * r->v.k * r->v.inner >= XE_PARALLEL_MIN;                            \
        if (r->v.inner == 1)                                                                       \
            NAME##_rows(r, r->x, r->y, big);                                                       \
        else                                                                                       \
            NAME##_cols(r, r->x, r->y, big);                                                       \
    }

/*
 * The four reductions of one dtype T (results stored through STORE after
 * FINISH): sum and product accumulate in SACC (read through SLOAD), max
 * and min compare in CACC (through CLOAD) from LOWEST / HIGHEST. Floats do
 * all four in one type, with NaN-propagating max/min; ints sum and
 * multiply in uint64_t (wrapping) and compare in int64_t. The mean is the
 * sum, finished. Defines reduce_SFX(r), which picks r->op's.
 */
#define DEF_REDUCE_OPS(SFX, T, STORE, FINISH, SACC, SLOAD, CACC, CLOAD, LOWEST, HIGHEST, MAX, MIN) \
    DEF_REDUCE(sum_##SFX, T, SACC, SLOAD, STORE, FINISH, (SACC)0, ADD, row_sum_##SFX)              \
    DEF_REDUCE(prod_##SFX, T, SACC, SLOAD, STORE, FINISH, (SACC)1, MUL, row_prod_##SFX)            \
    DEF_REDUCE(max_##SFX, T, CACC, CLOAD, STORE, FINISH, LOWEST, MAX, row_max_##SFX)               \
    DEF_REDUCE(min_##SFX, T, CACC, CLOAD, STORE, FINISH, HIGHEST, MIN, row_min_##SFX)              \
    static void reduce_##SFX(const red *r)                                                         \
    {                                                                                              \
        switch (r->op) {                                                                           \
        case XE_OP_REDUCE_SUM:                                                                     \
        case XE_OP_REDUCE_MEAN:                                                                    \
            sum_##SFX(r);                                                                          \
            break;                                                                                 \
        case XE_OP_REDUCE_PROD:                                                                    \
            prod_##SFX(r);                                                                         \
            break;                                                                                 \
        case XE_OP_REDUCE_MAX:                                                                     \
            max_##SFX(r);                                                                          \
            break;                                                                                 \
        case XE_OP_REDUCE_MIN:                                                                     \
            min_##SFX(r);                                                                          \
            break;                                                                                 \
        default:                                                                                   \
            break;                                                                                 \
        }                                                                                          \
    }

DEF_REDUCE_OPS(f32, float, KEEP, finish_f, float, KEEP, float, KEEP, -INFINITY, INFINITY, MAXF,
               MINF)
/* f16 accumulates in float and rounds once at the end. */
DEF_REDUCE_OPS(f16, xe_f16, F2H, finish_f, float, H2F, float, H2F, -INFINITY, INFINITY, MAXF, MINF)
DEF_REDUCE_OPS(f64, double, KEEP, finish_d, double, KEEP, double, KEEP, -INFINITY, INFINITY, MAXF,
               MINF)
DEF_REDUCE_OPS(i32, int32_t, TO_I32, FINISH_I, uint64_t, I2U, int64_t, I2I, INT64_MIN, INT64_MAX,
               MAXI, MINI)
DEF_REDUCE_OPS(i64, int64_t, TO_I64, FINISH_I, uint64_t, I2U, int64_t, I2I, INT64_MIN, INT64_MAX,
               MAXI, MINI)

static void reduce_pass(const red *r)
{
    switch (r->dt) {
    case XE_F32:
        reduce_f32(r);
        break;
    case XE_F64:
        reduce_f64(r);
        break;
    case XE_F16:
        reduce_f16(r);
        break;
    case XE_I32:
        reduce_i32(r);
        break;
    default:
        reduce_i64(r);
        break;
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

/* Number of blocks of consecutive reduced dims (one pass each). */
static int count_blocks(const bool *mask, int rank)
{
    int blocks = 0;
    for (int d = 0; d < rank; d++)
        blocks += mask[d] && (d == 0 || !mask[d - 1]);
    return blocks;
}

/*
 * Reduces src (dtype dt, shape s) over mask into dst, one pass per block
 * of consecutive reduced dims, last block first; intermediate results go
 * to temporaries of dtype dt.
 */
static xe_code reduce_passes(int op, xe_dtype dt, xe_shape s, const bool *mask, int64_t count,
                             const void *src, void *dst, xe_status *st)
{
    xe_tensor *tmp = NULL;
    int d = s.rank - 1;
    while (d >= 0 && !mask[d])
        d--;
    while (d >= 0) {
        int last = d;
        while (d >= 0 && mask[d])
            d--;
        int first = d + 1;
        while (d >= 0 && !mask[d])
            d--;
        bool final = d < 0;
        red r = {.op = op,
                 .dt = dt,
                 .v = view_block(&s, first, last),
                 .x = src,
                 .count = count,
                 .last = final};
        xe_shape next = s;
        for (int k = first; k <= last; k++)
            next.dims[k] = 1;
        xe_tensor *out = final ? NULL : xe_tensor_new(dt, &next, XE_DEV_CPU, st);
        if (!final && !out) {
            xe_tensor_release(tmp);
            return st->code;
        }
        r.y = final ? dst : out->data;
        if (op == XE_OP_REDUCE_MEAN && !final)
            r.op = XE_OP_REDUCE_SUM;
        reduce_pass(&r);
        xe_tensor_release(tmp);
        tmp = out;
        src = out ? out->data : NULL;
        s = next;
    }
    return XE_OK;
}

/* Converts n elements between f16/f32 or i32/i64 (the promoted pass types). */
static void convert(const void *src, xe_dtype from, void *dst, xe_dtype to, int64_t n)
{
#pragma omp parallel for if (n >= XE_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
        if (from == XE_F16 && to == XE_F32)
            ((float *)dst)[i] = xe_f16_to_f32(((const xe_f16 *)src)[i]);
        else if (from == XE_F32 && to == XE_F16)
            ((xe_f16 *)dst)[i] = xe_f32_to_f16(((const float *)src)[i]);
        else if (from == XE_I32 && to == XE_I64)
            ((int64_t *)dst)[i] = ((const int32_t *)src)[i];
        else
            ((int32_t *)dst)[i] = (int32_t)(uint32_t)(uint64_t)((const int64_t *)src)[i];
    }
}

/*
 * Several passes over f16 or i32 would round or wrap the partial sums and
 * products; those run in f32 / i64 and are converted once at the end.
 */
static xe_code reduce_promoted(int op, const xe_tensor *x, const bool *mask, int64_t count,
                               xe_tensor *y, xe_status *st)
{
    xe_dtype pdt = x->dtype == XE_F16 ? XE_F32 : XE_I64;
    xe_tensor *px = xe_tensor_new(pdt, &x->shape, XE_DEV_CPU, st);
    xe_tensor *py = px ? xe_tensor_new(pdt, &y->shape, XE_DEV_CPU, st) : NULL;
    if (!py) {
        xe_tensor_release(px);
        return st->code;
    }
    convert(x->data, x->dtype, px->data, pdt, xe_tensor_numel(x));
    xe_code c = reduce_passes(op, pdt, x->shape, mask, count, px->data, py->data, st);
    if (c == XE_OK)
        convert(py->data, pdt, y->data, y->dtype, xe_tensor_numel(y));
    xe_tensor_release(px);
    xe_tensor_release(py);
    return c;
}

xe_code xe_cpu_reduce(const xe_kernel_args *a, xe_status *st)
{
    const xe_tensor *x = a->in[0];
    int op = a->node->op, rank = x->shape.rank;
    bool mask[XE_MAX_RANK];
    node_mask(a->node, rank, mask);
    int64_t count = 1;
    bool empty = false;
    for (int d = 0; d < rank; d++)
        if (mask[d]) {
            count *= x->shape.dims[d];
            empty |= x->shape.dims[d] == 0;
        }
    if (x->dtype == XE_BOOL)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "%s is not defined on bool", xe_op_name(op));
    if (empty && (op == XE_OP_REDUCE_MAX || op == XE_OP_REDUCE_MIN) && xe_tensor_numel(a->out) > 0)
        return xe_fail(st, XE_ERR_RUNTIME, "%s over an empty axis", xe_op_name(op));
    if (xe_tensor_numel(a->out) == 0)
        return XE_OK;
    if (count_blocks(mask, rank) == 0) { /* nothing reduced: a copy */
        memcpy(a->out->data, x->data, a->out->nbytes);
        return XE_OK;
    }
    bool exact_max = op == XE_OP_REDUCE_MAX || op == XE_OP_REDUCE_MIN;
    if (count_blocks(mask, rank) > 1 && !exact_max && (x->dtype == XE_F16 || x->dtype == XE_I32))
        return reduce_promoted(op, x, mask, count, a->out, st);
    return reduce_passes(op, x->dtype, x->shape, mask, count, x->data, a->out->data, st);
}

/* ---- argmax ------------------------------------------------------------------- */

/*
 * First index of the maximum along the view's K; a NaN wins (the first
 * one), as numpy's argmax. Compared in the element's own type so large
 * i64 values are exact.
 */
#define ARGMAX(T, ACC, LOAD)                                                                       \
    do {                                                                                           \
        const T *x = xv;                                                                           \
        _Pragma(                                                                                   \
            "omp parallel for if (v.outer * v.k * v.inner >= XE_PARALLEL_MIN)") for (int64_t oi =  \
                                                                                         0;        \
                                                                                     oi <          \
                                                                                     v.outer *     \
                                                                                         v.inner;  \
                                                                                     oi++)         \
        {                                                                                          \
            int64_t o = oi / v.inner, i = oi % v.inner, best = 0;                                  \
            const T *p = x + o * v.k * v.inner + i;                                                \
            ACC bv = LOAD(p[0]);                                                                   \
            for (int64_t k = 1; k < v.k && bv == bv; k++) {                                        \
                ACC e = LOAD(p[k * v.inner]);                                                      \
                if (e > bv || e != e) {                                                            \
                    best = k;                                                                      \
                    bv = e;                                                                        \
                }                                                                                  \
            }                                                                                      \
            y[oi] = best;                                                                          \
        }                                                                                          \
    } while (0)

static void argmax_typed(xe_dtype dt, const void *xv, int64_t *y, okI v)
{
    switch (dt) {
    case XE_F32:
        ARGMAX(float, float, KEEP);
        break;
    case XE_F64:
        ARGMAX(double, double, KEEP);
        break;
    case XE_F16:
        ARGMAX(xe_f16, float, H2F);
        break;
    case XE_I32:
        ARGMAX(int32_t, int32_t, KEEP);
        break;
    case XE_I64:
        ARGMAX(int64_t, int64_t, KEEP);
        break;
    default:
        ARGMAX(uint8_t, uint8_t, KEEP);
        break;
    }
}

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
    if (v.outer * v.inner == 0)
        return XE_OK;
    if (v.k == 0)
        return xe_fail(st, XE_ERR_RUNTIME, "argmax over an empty axis");
    argmax_typed(x->dtype, x->data, a->out->data, v);
    return XE_OK;
}
