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
 * The narrow dtypes reuse a wider column: u8 i8 i16 u16 compute the i32
 * expression and u32 the i64 one, then wrap to their width (exact: + - *
 * wrap modulo the width, and a quotient, a comparison or a max of values
 * in range is in range, but for INT8_MIN / -1, which wraps as numpy's does);
 * bf16 computes the f32 expression as f16 does; u64 has its own few rows.
 */
#include "broadcast.h"
#include "kernels.h"
#include "scalar.h"
#include "scalar_narrow.h"

/* Pointers and the op for one elementwise launch. */
typedef struct ew {
    const void *in[3];
    void *out;
    int op;
    xe_dtype dt;                /* operand dtype */
    bool variant;               /* the op's XV attribute is set: its XV expressions */
    double a[XE_MAX_OP_FLOATS]; /* the op's float attributes, a0.. in ops.def */
    xe_dtype to;                /* cast target */
    bool saturate; /* cast to float8: beyond the largest finite value gives it (else inf or NaN) */
} ew;

#define ID(v) (v)
/* f16 <-> f32 without branches (bit for bit dtype.c's), so that f16 rows vectorize. */
#define H2F(v) xe_h2f_vec(v)
#define F2H(v) xe_f2h_vec(v)
#define BF2F(v) xe_bf2f(v)
#define F2BF(v) xe_f2bf(v)
/* The narrow integers widen to the column they compute in and wrap back. */
#define W32(v) ((int32_t)(v))
#define W64(v) ((int64_t)(v))
#define TO_U8(v) ((uint8_t)(v))
#define TO_I8(v) ((int8_t)(v))
#define TO_I16(v) ((int16_t)(v))
#define TO_U16(v) ((uint16_t)(v))
#define TO_U32(v) ((uint32_t)(v))

/*
 * Row loop templates. BODY computes the output from x (and y, z) which the
 * template loads with LOAD from the operands' rows; STORE converts back.
 */
#define ROW1(TI, TO, LOAD, STORE, BODY)                                                            \
    do {                                                                                           \
        const TI *restrict pa = (const TI *)c->in[0] + off[0];                                     \
        TO *restrict po = (TO *)c->out + out_off;                                                  \
        if (step[0] == 1) {                                                                        \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                    \
            {                                                                                      \
                __typeof__(LOAD(pa[0])) x = LOAD(pa[i]);                                           \
                (void)x; /* XE_NA does not read it */                                              \
                po[i] = STORE(BODY);                                                               \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                __typeof__(LOAD(pa[0])) x = LOAD(pa[i * step[0]]);                                 \
                (void)x; /* XE_NA does not read it */                                              \
                po[i] = STORE(BODY);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

#define ROW2(TI, TO, LOAD, STORE, BODY)                                                            \
    do {                                                                                           \
        const TI *restrict pa = (const TI *)c->in[0] + off[0];                                     \
        const TI *restrict pb = (const TI *)c->in[1] + off[1];                                     \
        TO *restrict po = (TO *)c->out + out_off;                                                  \
        typedef __typeof__(LOAD(pa[0])) T_;                                                        \
        if (step[0] == 1 && step[1] == 1) {                                                        \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                    \
            {                                                                                      \
                T_ x = LOAD(pa[i]), y = LOAD(pb[i]);                                               \
                (void)x, (void)y; /* XE_NA reads neither */                                        \
                po[i] = STORE(BODY);                                                               \
            }                                                                                      \
        } else if (step[0] == 1 && step[1] == 0) {                                                 \
            T_ y = LOAD(pb[0]);                                                                    \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                    \
            {                                                                                      \
                T_ x = LOAD(pa[i]);                                                                \
                (void)x, (void)y; /* XE_NA reads neither */                                        \
                po[i] = STORE(BODY);                                                               \
            }                                                                                      \
        } else if (step[0] == 0 && step[1] == 1) {                                                 \
            T_ x = LOAD(pa[0]);                                                                    \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                    \
            {                                                                                      \
                T_ y = LOAD(pb[i]);                                                                \
                (void)x, (void)y; /* XE_NA reads neither */                                        \
                po[i] = STORE(BODY);                                                               \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T_ x = LOAD(pa[i * step[0]]), y = LOAD(pb[i * step[1]]);                           \
                (void)x, (void)y; /* XE_NA reads neither */                                        \
                po[i] = STORE(BODY);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* ---- binary, comparisons, logical ops and unary ops: the ops.def expressions ---- */

/* ops.def rows other than the ones a switch below asks for expand to nothing. */
#define X(ENUM, name, min_in, max_in, cls, flags)

/* A two-operand row op: the class decides the output (the other arm is dead code). */
#define CASE2(ENUM, cls, EXPR, TI, LOAD, STORE)                                                    \
    case XE_OP_##ENUM:                                                                             \
        if ((cls) == XE_CLASS_BINARY)                                                              \
            ROW2(TI, TI, LOAD, STORE, EXPR);                                                       \
        else                                                                                       \
            ROW2(TI, uint8_t, LOAD, ID, EXPR);                                                     \
        break;

#define ROW_ARGS const ew *c, int64_t n, int64_t out_off, const int64_t *off, const int64_t *step

static void rows2_f32(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, f32, float, ID, ID)
#include "xlac/ops.def"
#undef XB
    default:
        break;
    }
}

static void rows2_f16(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, f32, xe_f16, H2F, F2H)
#include "xlac/ops.def"
#undef XB
    default:
        break;
    }
}

static void rows2_f64(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, f64, double, ID, ID)
#include "xlac/ops.def"
#undef XB
    default:
        break;
    }
}

static void rows2_i32(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, i32, int32_t, ID, ID)
#include "xlac/ops.def"
#undef XB
    default:
        break;
    }
}

static void rows2_i64(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, i64, int64_t, ID, ID)
#include "xlac/ops.def"
#undef XB
    default:
        break;
    }
}

static void rows2_bool(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, b, uint8_t, ID, ID)
#include "xlac/ops.def"
#undef XB
    default:
        break;
    }
}

/* The narrow dtypes: one switch per dtype from the column it computes in. */
static void rows2_u8(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, i32, uint8_t, W32, TO_U8)
#include "xlac/ops.def"
#undef XB
    default:
        break;
    }
}

static void rows2_i8(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, i32, int8_t, W32, TO_I8)
#include "xlac/ops.def"
#undef XB
    default:
        break;
    }
}

static void rows2_i16(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, i32, int16_t, W32, TO_I16)
#include "xlac/ops.def"
#undef XB
    default:
        break;
    }
}

static void rows2_u16(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, i32, uint16_t, W32, TO_U16)
#include "xlac/ops.def"
#undef XB
    default:
        break;
    }
}

static void rows2_u32(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, i64, uint32_t, W64, TO_U32)
#include "xlac/ops.def"
#undef XB
    default:
        break;
    }
}

static void rows2_bf16(ROW_ARGS)
{
    switch (c->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE2(E, cls, f32, uint16_t, BF2F, F2BF)
#include "xlac/ops.def"
#undef XB
    default:
        break;
    }
}

/* u64 has no wider column: its rows are written out (pow is refused on it, ops.c). */
#define U64_2(OP, TO, EXPR)                                                                        \
    case OP:                                                                                       \
        ROW2(uint64_t, TO, ID, ID, EXPR);                                                          \
        break;

static void rows2_u64(ROW_ARGS)
{
    switch (c->op) {
        U64_2(XE_OP_ADD, uint64_t, x + y)
        U64_2(XE_OP_SUB, uint64_t, x - y)
        U64_2(XE_OP_MUL, uint64_t, x * y)
        U64_2(XE_OP_DIV, uint64_t, (y ? x / y : 0))
        U64_2(XE_OP_MAXIMUM, uint64_t, (x > y ? x : y))
        U64_2(XE_OP_MINIMUM, uint64_t, (x < y ? x : y))
        U64_2(XE_OP_EQUAL, uint8_t, (uint8_t)(x == y))
        U64_2(XE_OP_NOT_EQUAL, uint8_t, (uint8_t)(x != y))
        U64_2(XE_OP_LESS, uint8_t, (uint8_t)(x < y))
        U64_2(XE_OP_LESS_EQUAL, uint8_t, (uint8_t)(x <= y))
        U64_2(XE_OP_GREATER, uint8_t, (uint8_t)(x > y))
        U64_2(XE_OP_GREATER_EQUAL, uint8_t, (uint8_t)(x >= y))
        U64_2(XE_OP_BITWISE_AND, uint64_t, x & y)
        U64_2(XE_OP_BITWISE_OR, uint64_t, x | y)
        U64_2(XE_OP_BITWISE_XOR, uint64_t, x ^ y)
        U64_2(XE_OP_SHIFT_LEFT, uint64_t, (y > 63 ? 0 : x << y))
        U64_2(XE_OP_SHIFT_RIGHT, uint64_t, (y > 63 ? 0 : x >> y))
    default:
        break;
    }
}

/* Binary ops, comparisons and logical ops: operands of one dtype, broadcast. */
static void rows2(void *ctx, int64_t n, int64_t out_off, const int64_t *off, const int64_t *step)
{
    const ew *c = ctx;
    switch (c->dt) {
    case XE_F32:
        rows2_f32(c, n, out_off, off, step);
        break;
    case XE_F64:
        rows2_f64(c, n, out_off, off, step);
        break;
    case XE_F16:
        rows2_f16(c, n, out_off, off, step);
        break;
    case XE_I32:
        rows2_i32(c, n, out_off, off, step);
        break;
    case XE_I64:
        rows2_i64(c, n, out_off, off, step);
        break;
    case XE_BOOL:
        rows2_bool(c, n, out_off, off, step);
        break;
    case XE_U8:
        rows2_u8(c, n, out_off, off, step);
        break;
    case XE_I8:
        rows2_i8(c, n, out_off, off, step);
        break;
    case XE_I16:
        rows2_i16(c, n, out_off, off, step);
        break;
    case XE_U16:
        rows2_u16(c, n, out_off, off, step);
        break;
    case XE_U32:
        rows2_u32(c, n, out_off, off, step);
        break;
    case XE_U64:
        rows2_u64(c, n, out_off, off, step);
        break;
    case XE_BF16:
        rows2_bf16(c, n, out_off, off, step);
        break;
    default:
        break;
    }
}

/*
 * Unary rows: in float functions the op's float attributes are a0..a3
 * (ops.def), and an op whose XV attribute is set takes its XV expression.
 */
#define CASE1(ENUM, EXPR, TI, LOAD, STORE)                                                         \
    case XE_OP_##ENUM:                                                                             \
        ROW1(TI, TI, LOAD, STORE, EXPR);                                                           \
        break;

static void rows1_f32(ROW_ARGS)
{
    const float a0 = (float)c->a[0], a1 = (float)c->a[1], a2 = (float)c->a[2], a3 = (float)c->a[3];
    (void)a0, (void)a1, (void)a2, (void)a3;
    if (c->variant) {
        switch (c->op) {
#define XV(E, attr, f32, f64) CASE1(E, f32, float, ID, ID)
#include "xlac/ops.def"
#undef XV
        default:
            break;
        }
        return;
    }
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, f32, float, ID, ID)
#include "xlac/ops.def"
#undef XU
    default:
        break;
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
        default:
            break;
        }
        return;
    }
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, f32, xe_f16, H2F, F2H)
#include "xlac/ops.def"
#undef XU
    default:
        break;
    }
}

static void rows1_f64(ROW_ARGS)
{
    const double a0 = (double)c->a[0], a1 = (double)c->a[1], a2 = (double)c->a[2],
                 a3 = (double)c->a[3];
    (void)a0, (void)a1, (void)a2, (void)a3;
    if (c->variant) {
        switch (c->op) {
#define XV(E, attr, f32, f64) CASE1(E, f64, double, ID, ID)
#include "xlac/ops.def"
#undef XV
        default:
            break;
        }
        return;
    }
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, f64, double, ID, ID)
#include "xlac/ops.def"
#undef XU
    default:
        break;
    }
}

static void rows1_i32(ROW_ARGS)
{
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, i32, int32_t, ID, ID)
#include "xlac/ops.def"
#undef XU
    default:
        break;
    }
}

static void rows1_i64(ROW_ARGS)
{
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, i64, int64_t, ID, ID)
#include "xlac/ops.def"
#undef XU
    default:
        break;
    }
}

static void rows1_bool(ROW_ARGS)
{
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, b, uint8_t, ID, ID)
#include "xlac/ops.def"
#undef XU
    default:
        break;
    }
}

static void rows1_u8(ROW_ARGS)
{
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, i32, uint8_t, W32, TO_U8)
#include "xlac/ops.def"
#undef XU
    default:
        break;
    }
}

static void rows1_i8(ROW_ARGS)
{
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, i32, int8_t, W32, TO_I8)
#include "xlac/ops.def"
#undef XU
    default:
        break;
    }
}

static void rows1_i16(ROW_ARGS)
{
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, i32, int16_t, W32, TO_I16)
#include "xlac/ops.def"
#undef XU
    default:
        break;
    }
}

static void rows1_u16(ROW_ARGS)
{
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, i32, uint16_t, W32, TO_U16)
#include "xlac/ops.def"
#undef XU
    default:
        break;
    }
}

static void rows1_u32(ROW_ARGS)
{
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, i64, uint32_t, W64, TO_U32)
#include "xlac/ops.def"
#undef XU
    default:
        break;
    }
}

/* u64: abs and relu are the identity, neg wraps, bitwise_not flips the 64 bits. */
static void rows1_u64(ROW_ARGS)
{
    switch (c->op) {
    case XE_OP_NEG:
        ROW1(uint64_t, uint64_t, ID, ID, 0 - x);
        break;
    case XE_OP_BITWISE_NOT:
        ROW1(uint64_t, uint64_t, ID, ID, ~x);
        break;
    case XE_OP_ABS:
    case XE_OP_RELU:
        ROW1(uint64_t, uint64_t, ID, ID, x);
        break;
    default:
        break;
    }
}

static void rows1_bf16(ROW_ARGS)
{
    const float a0 = (float)c->a[0], a1 = (float)c->a[1], a2 = (float)c->a[2], a3 = (float)c->a[3];
    (void)a0, (void)a1, (void)a2, (void)a3;
    if (c->variant) {
        switch (c->op) {
#define XV(E, attr, f32, f64) CASE1(E, f32, uint16_t, BF2F, F2BF)
#include "xlac/ops.def"
#undef XV
        default:
            break;
        }
        return;
    }
    switch (c->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE1(E, f32, uint16_t, BF2F, F2BF)
#include "xlac/ops.def"
#undef XU
    default:
        break;
    }
}

static void rows1(void *ctx, int64_t n, int64_t out_off, const int64_t *off, const int64_t *step)
{
    const ew *c = ctx;
    switch (c->dt) {
    case XE_F32:
        rows1_f32(c, n, out_off, off, step);
        break;
    case XE_F64:
        rows1_f64(c, n, out_off, off, step);
        break;
    case XE_F16:
        rows1_f16(c, n, out_off, off, step);
        break;
    case XE_I32:
        rows1_i32(c, n, out_off, off, step);
        break;
    case XE_I64:
        rows1_i64(c, n, out_off, off, step);
        break;
    case XE_BOOL:
        rows1_bool(c, n, out_off, off, step);
        break;
    case XE_U8:
        rows1_u8(c, n, out_off, off, step);
        break;
    case XE_I8:
        rows1_i8(c, n, out_off, off, step);
        break;
    case XE_I16:
        rows1_i16(c, n, out_off, off, step);
        break;
    case XE_U16:
        rows1_u16(c, n, out_off, off, step);
        break;
    case XE_U32:
        rows1_u32(c, n, out_off, off, step);
        break;
    case XE_U64:
        rows1_u64(c, n, out_off, off, step);
        break;
    case XE_BF16:
        rows1_bf16(c, n, out_off, off, step);
        break;
    default:
        break;
    }
}

/* ---- select ---------------------------------------------------------------------- */

#define SELECT(T)                                                                                  \
    do {                                                                                           \
        const uint8_t *pc = (const uint8_t *)c->in[0] + off[0];                                    \
        const T *pa = (const T *)c->in[1] + off[1], *pb = (const T *)c->in[2] + off[2];            \
        T *restrict po = (T *)c->out + out_off;                                                    \
        for (int64_t i = 0; i < n; i++)                                                            \
            po[i] = pc[i * step[0]] ? pa[i * step[1]] : pb[i * step[2]];                           \
    } while (0)

static void select_row(void *ctx, int64_t n, int64_t out_off, const int64_t *off,
                       const int64_t *step)
{
    const ew *c = ctx;
    switch (xe_dtype_size(c->dt)) {
    case 1:
        SELECT(uint8_t);
        break;
    case 2:
        SELECT(uint16_t);
        break;
    case 4:
        SELECT(uint32_t);
        break;
    case 8:
        SELECT(uint64_t);
        break;
    default:
        break;
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
