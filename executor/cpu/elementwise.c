/*
 * CPU kernels of the elementwise ops: binary arithmetic, comparisons,
 * logical ops, unary functions, select and cast.
 *
 * Every kernel walks the output with the broadcast iterator (broadcast.c),
 * which hands over one row at a time with per-operand steps; the row loops
 * below specialise the common steps (1 and 0) so that gcc vectorizes the
 * same-shape and scalar-operand cases. f16 is computed in float and
 * rounded once. The arithmetic of binary, comparison, logical and unary
 * ops is the ops.def expression of each op and compute type (the functions
 * it calls are scalar.h's), which the GPU kernels and the generated code
 * share: the switches below are expanded from ops.def, one per dtype.
 */
#include "broadcast.h"
#include "kernels.h"
#include "scalar.h"

/* Pointers and the op for one elementwise launch. */
typedef struct ew {
    const void *in[3];
    void *out;
    int op;
    xe_dtype dt;     /* operand dtype */
    bool variant;    /* the op's XV attribute is set: its XV expressions */
    double a[XE_MAX_OP_FLOATS]; /* the op's float attributes, a0.. in ops.def */
    xe_dtype to;     /* cast target */
} ew;

#define ID(v) (v)
/* f16 <-> f32 without branches (bit for bit dtype.c's), so that f16 rows vectorize. */
#define H2F(v) xe_h2f_vec(v)
#define F2H(v) xe_f2h_vec(v)

/*
 * Row loop templates. BODY computes the output from x (and y, z) which the
 * template loads with LOAD from the operands' rows; STORE converts back.
 */
#define ROW1(TI, TO, LOAD, STORE, BODY)                                                      \
    do {                                                                                     \
        const TI *restrict pa = (const TI *)c->in[0] + off[0];                               \
        TO *restrict po = (TO *)c->out + out_off;                                            \
        if (step[0] == 1) {                                                                  \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                            \
                __typeof__(LOAD(pa[0])) x = LOAD(pa[i]);                                     \
                (void)x; /* XE_NA does not read it */                                        \
                po[i] = STORE(BODY);                                                         \
            }                                                                                \
        } else {                                                                             \
            for (int64_t i = 0; i < n; i++) {                                                \
                __typeof__(LOAD(pa[0])) x = LOAD(pa[i * step[0]]);                           \
                (void)x; /* XE_NA does not read it */                                        \
                po[i] = STORE(BODY);                                                         \
            }                                                                                \
        }                                                                                    \
    } while (0)

#define ROW2(TI, TO, LOAD, STORE, BODY)                                                      \
    do {                                                                                     \
        const TI *restrict pa = (const TI *)c->in[0] + off[0];                               \
        const TI *restrict pb = (const TI *)c->in[1] + off[1];                               \
        TO *restrict po = (TO *)c->out + out_off;                                            \
        typedef __typeof__(LOAD(pa[0])) T_;                                                  \
        if (step[0] == 1 && step[1] == 1) {                                                  \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                            \
                T_ x = LOAD(pa[i]), y = LOAD(pb[i]);                                         \
                (void)x, (void)y; /* XE_NA reads neither */                                  \
                po[i] = STORE(BODY);                                                         \
            }                                                                                \
        } else if (step[0] == 1 && step[1] == 0) {                                           \
            T_ y = LOAD(pb[0]);                                                              \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                            \
                T_ x = LOAD(pa[i]);                                                          \
                (void)x, (void)y; /* XE_NA reads neither */                                  \
                po[i] = STORE(BODY);                                                         \
            }                                                                                \
        } else if (step[0] == 0 && step[1] == 1) {                                           \
            T_ x = LOAD(pa[0]);                                                              \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                            \
                T_ y = LOAD(pb[i]);                                                          \
                (void)x, (void)y; /* XE_NA reads neither */                                  \
                po[i] = STORE(BODY);                                                         \
            }                                                                                \
        } else {                                                                             \
            for (int64_t i = 0; i < n; i++) {                                                \
                T_ x = LOAD(pa[i * step[0]]), y = LOAD(pb[i * step[1]]);                     \
                (void)x, (void)y; /* XE_NA reads neither */                                  \
                po[i] = STORE(BODY);                                                         \
            }                                                                                \
        }                                                                                    \
    } while (0)

/* ---- binary, comparisons, logical ops and unary ops: the ops.def expressions ---- */

/* ops.def rows other than the ones a switch below asks for expand to nothing. */
#define X(ENUM, name, min_in, max_in, cls, flags)

/* A two-operand row op: the class decides the output (the other arm is dead code). */
#define CASE2(ENUM, cls, EXPR, TI, LOAD, STORE)                                              \
    case XE_OP_##ENUM:                                                                       \
        if ((cls) == XE_CLASS_BINARY)                                                        \
            ROW2(TI, TI, LOAD, STORE, EXPR);                                                 \
        else                                                                                 \
            ROW2(TI, uint8_t, LOAD, ID, EXPR);                                               \
        break;

#define ROW_ARGS const ew *c, int64_t n, int64_t out_off, const int64_t *off, const int64_t *step

static void rows2_f32(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, f32, float, ID, ID)
#include "xlac/ops.def"
#undef XB
    default: break;
    }
}

static void rows2_f16(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, f32, xe_f16, H2F, F2H)
#include "xlac/ops.def"
#undef XB
    default: break;
    }
}

static void rows2_f64(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, f64, double, ID, ID)
#include "xlac/ops.def"
#undef XB
    default: break;
    }
}

static void rows2_i32(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, i32, int32_t, ID, ID)
#include "xlac/ops.def"
#undef XB
    default: break;
    }
}

static void rows2_i64(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, i64, int64_t, ID, ID)
#include "xlac/ops.def"
#undef XB
    default: break;
    }
}

static void rows2_bool(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, b, uint8_t, ID, ID)
#include "xlac/ops.def"
#undef XB
    default: break;
    }
}

/* Binary ops, comparisons and logical ops: operands of one dtype, broadcast. */
static void rows2(void *ctx, int64_t n, int64_t out_off, const int64_t *off, const int64_t *step)
{
    const ew *c = ctx;
    switch (c->dt) {
    case XE_F32: rows2_f32(c, n, out_off, off, step); break;
    case XE_F64: rows2_f64(c, n, out_off, off, step); break;
    case XE_F16: rows2_f16(c, n, out_off, off, step); break;
    case XE_I32: rows2_i32(c, n, out_off, off, step); break;
    case XE_I64: rows2_i64(c, n, out_off, off, step); break;
    case XE_BOOL: rows2_bool(c, n, out_off, off, step); break;
    default: break;
    }
}

/*
 * Unary rows: in float functions the op's float attributes are a0..a3
 * (ops.def), and an op whose XV attribute is set takes its XV expression.
 */
#define CASE1(ENUM, EXPR, TI, LOAD, STORE)                                                   \
    case XE_OP_##ENUM: ROW1(TI, TI, LOAD, STORE, EXPR); break;

static void rows1_f32(ROW_ARGS)
{
    const float a0 = (float)c->a[0], a1 = (float)c->a[1], a2 = (float)c->a[2], a3 = (float)c->a[3];
    (void)a0, (void)a1, (void)a2, (void)a3;
    if (c->variant) {
        switch (c->op) {
#define XV(E, attr, f32, f64) CASE1(E, f32, float, ID, ID)
#include "xlac/ops.def"
#undef XV
        default: break;
        }
        return;
    }
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, f32, float, ID, ID)
#include "xlac/ops.def"
#undef XU
    default: break;
    }
}

static void rows1_f16(ROW_ARGS)
{
    const float a0 = (float)c->a[0], a1 = (float)c->a[1], a2 = (float)c->a[2], a3 = (float)c->a[3];
    (void)a0, (void)a1, (void)a2, (void)a3;
    if (c->variant) {
        switch (c->op) {
#define XV(E, attr, f32, f64) CASE1(E, f32, xe_f16, H2F, F2H)
#include "xlac/ops.def"
#undef XV
        default: break;
        }
        return;
    }
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, f32, xe_f16, H2F, F2H)
#include "xlac/ops.def"
#undef XU
    default: break;
    }
}

static void rows1_f64(ROW_ARGS)
{
    const double a0 = (double)c->a[0], a1 = (double)c->a[1], a2 = (double)c->a[2], a3 = (double)c->a[3];
    (void)a0, (void)a1, (void)a2, (void)a3;
    if (c->variant) {
        switch (c->op) {
#define XV(E, attr, f32, f64) CASE1(E, f64, double, ID, ID)
#include "xlac/ops.def"
#undef XV
        default: break;
        }
        return;
    }
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, f64, double, ID, ID)
#include "xlac/ops.def"
#undef XU
    default: break;
    }
}

static void rows1_i32(ROW_ARGS)
{
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, i32, int32_t, ID, ID)
#include "xlac/ops.def"
#undef XU
    default: break;
    }
}

static void rows1_i64(ROW_ARGS)
{
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, i64, int64_t, ID, ID)
#include "xlac/ops.def"
#undef XU
    default: break;
    }
}

static void rows1_bool(ROW_ARGS)
{
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, b, uint8_t, ID, ID)
#include "xlac/ops.def"
#undef XU
    default: break;
    }
}

static void rows1(void *ctx, int64_t n, int64_t out_off, const int64_t *off, const int64_t *step)
{
    const ew *c = ctx;
    switch (c->dt) {
    case XE_F32: rows1_f32(c, n, out_off, off, step); break;
    case XE_F64: rows1_f64(c, n, out_off, off, step); break;
    case XE_F16: rows1_f16(c, n, out_off, off, step); break;
    case XE_I32: rows1_i32(c, n, out_off, off, step); break;
    case XE_I64: rows1_i64(c, n, out_off, off, step); break;
    case XE_BOOL: rows1_bool(c, n, out_off, off, step); break;
    default: break;
    }
}

/* ---- select ---------------------------------------------------------------------- */

#define SELECT(T)                                                                            \
    do {                                                                                     \
        const uint8_t *pc = (const uint8_t *)c->in[0] + off[0];                              \
        const T *pa = (const T *)c->in[1] + off[1], *pb = (const T *)c->in[2] + off[2];      \
        T *restrict po = (T *)c->out + out_off;                                              \
        for (int64_t i = 0; i < n; i++)                                                      \
            po[i] = pc[i * step[0]] ? pa[i * step[1]] : pb[i * step[2]];                     \
    } while (0)

static void select_row(void *ctx, int64_t n, int64_t out_off, const int64_t *off, const int64_t *step)
{
    const ew *c = ctx;
    switch (xe_dtype_size(c->dt)) {
    case 1: SELECT(uint8_t); break;
    case 2: SELECT(uint16_t); break;
    case 4: SELECT(uint32_t); break;
    case 8: SELECT(uint64_t); break;
    default: break;
    }
}

/* ---- cast ------------------------------------------------------------------------ */

/* Reads element i of any dtype as double (exact for every value but i64 beyond 2^53). */
static double load_any(const void *p, xe_dtype dt, int64_t i)
{
    return xe_load_f64(p, dt, i);
}

static void cast_row(void *ctx, int64_t n, int64_t out_off, const int64_t *off, const int64_t *step)
{
    const ew *c = ctx;
    const char *src = c->in[0];
    size_t es = xe_dtype_size(c->dt);
    for (int64_t i = 0; i < n; i++) {
        int64_t k = out_off + i;
        const void *p = src + (size_t)(off[0] + i * step[0]) * es;
        if (c->dt == XE_I64 && c->to == XE_I64) {
            ((int64_t *)c->out)[k] = *(const int64_t *)p;
            continue;
        }
        if (c->dt == XE_I64 && c->to == XE_I32) {
            ((int32_t *)c->out)[k] = (int32_t)(uint32_t)(uint64_t)(*(const int64_t *)p);
            continue;
        }
        if (c->dt == XE_I64 && (c->to == XE_F32 || c->to == XE_F16)) { /* one rounding, not two */
            float f = (float)*(const int64_t *)p;
            if (c->to == XE_F32)
                ((float *)c->out)[k] = f;
            else
                ((xe_f16 *)c->out)[k] = xe_f32_to_f16(f);
            continue;
        }
        double v = load_any(p, c->dt, 0);
        switch (c->to) {
        case XE_F32: ((float *)c->out)[k] = (float)v; break;
        case XE_F64: ((double *)c->out)[k] = v; break;
        case XE_F16: ((xe_f16 *)c->out)[k] = xe_f32_to_f16((float)v); break;
        case XE_I32: ((int32_t *)c->out)[k] = xe_f64_to_i32(v); break;
        case XE_I64:
            ((int64_t *)c->out)[k] = c->dt == XE_I32 ? (int64_t)(*(const int32_t *)p) : xe_f64_to_i64(v);
            break;
        case XE_BOOL: ((uint8_t *)c->out)[k] = v != 0; break;
        default: break;
        }
    }
}

/* ---- entry points ----------------------------------------------------------------- */

static xe_code run_rows(const xe_kernel_args *a, xe_bcast_row_fn fn, ew *c)
{
    const xe_shape *shapes[3];
    for (int k = 0; k < a->n_in; k++) {
        shapes[k] = &a->in[k]->shape;
        c->in[k] = a->in[k]->data;
    }
    c->out = a->out->data;
    c->op = a->node->op;
    xe_bcast b;
    xe_bcast_init(&b, &a->out->shape, shapes, a->n_in);
    xe_bcast_run(&b, fn, c);
    return XE_OK;
}

xe_code xe_cpu_binary(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    ew c = {.dt = a->in[0]->dtype};
    return run_rows(a, rows2, &c);
}

xe_code xe_cpu_compare(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    ew c = {.dt = a->in[0]->dtype};
    return run_rows(a, rows2, &c);
}

xe_code xe_cpu_logical(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    ew c = {.dt = XE_BOOL};
    return run_rows(a, rows2, &c);
}

xe_code xe_cpu_unary(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    ew c = {.dt = a->in[0]->dtype, .variant = xe_op_variant(a->node)};
    xe_op_float_attrs(a->node, c.a);
    return run_rows(a, rows1, &c);
}

xe_code xe_cpu_select(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    ew c = {.dt = a->in[1]->dtype};
    return run_rows(a, select_row, &c);
}

xe_code xe_cpu_cast(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    ew c = {.dt = a->in[0]->dtype, .to = a->out->dtype};
    return run_rows(a, cast_row, &c);
}
