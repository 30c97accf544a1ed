/*
 * CPU kernels of the elementwise ops: binary arithmetic, comparisons,
 * logical ops, unary functions, select and cast.
 *
 * Every kernel walks the output with the broadcast iterator (broadcast.c),
 * which hands over one row at a time with per-operand steps; the row loops
 * below specialise the common steps (1 and 0) so that gcc vectorizes the
 * same-shape and scalar-operand cases. f16 is computed in float and
 * rounded once. The arithmetic that is not a C operator comes from
 * scalar.h, which the GPU kernels and the generated code share.
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
    bool approximate;
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
                po[i] = STORE(BODY);                                                         \
            }                                                                                \
        } else {                                                                             \
            for (int64_t i = 0; i < n; i++) {                                                \
                __typeof__(LOAD(pa[0])) x = LOAD(pa[i * step[0]]);                           \
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
                po[i] = STORE(BODY);                                                         \
            }                                                                                \
        } else if (step[0] == 1 && step[1] == 0) {                                           \
            T_ y = LOAD(pb[0]);                                                              \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                            \
                T_ x = LOAD(pa[i]);                                                          \
                po[i] = STORE(BODY);                                                         \
            }                                                                                \
        } else if (step[0] == 0 && step[1] == 1) {                                           \
            T_ x = LOAD(pa[0]);                                                              \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                            \
                T_ y = LOAD(pb[i]);                                                          \
                po[i] = STORE(BODY);                                                         \
            }                                                                                \
        } else {                                                                             \
            for (int64_t i = 0; i < n; i++) {                                                \
                T_ x = LOAD(pa[i * step[0]]), y = LOAD(pb[i * step[1]]);                     \
                po[i] = STORE(BODY);                                                         \
            }                                                                                \
        }                                                                                    \
    } while (0)

/* ---- binary ---------------------------------------------------------------- */

#define BINARY_FLOAT(TI, TO, LOAD, STORE, SFX, POW, C)                                      \
    switch (c->op) {                                                                         \
    case XE_OP_ADD: ROW2(TI, TO, LOAD, STORE, x + y); break;                                 \
    case XE_OP_SUB: ROW2(TI, TO, LOAD, STORE, x - y); break;                                 \
    case XE_OP_MUL: ROW2(TI, TO, LOAD, STORE, x * y); break;                                 \
    case XE_OP_DIV: ROW2(TI, TO, LOAD, STORE, x / y); break;                                 \
    case XE_OP_POW: ROW2(TI, TO, LOAD, STORE, POW(x, y)); break;                             \
    case XE_OP_MAXIMUM: ROW2(TI, TO, LOAD, STORE, xe_max_##SFX(x, y)); break;                \
    case XE_OP_MINIMUM: ROW2(TI, TO, LOAD, STORE, xe_min_##SFX(x, y)); break;                \
    default: break;                                                                          \
    }

#define BINARY_INT(T, SFX)                                                                   \
    switch (c->op) {                                                                         \
    case XE_OP_ADD: ROW2(T, T, ID, ID, xe_add_##SFX(x, y)); break;                           \
    case XE_OP_SUB: ROW2(T, T, ID, ID, xe_sub_##SFX(x, y)); break;                           \
    case XE_OP_MUL: ROW2(T, T, ID, ID, xe_mul_##SFX(x, y)); break;                           \
    case XE_OP_DIV: ROW2(T, T, ID, ID, xe_floordiv_##SFX(x, y)); break;                      \
    case XE_OP_POW: ROW2(T, T, ID, ID, xe_pow_##SFX(x, y)); break;                           \
    case XE_OP_MAXIMUM: ROW2(T, T, ID, ID, x > y ? x : y); break;                            \
    case XE_OP_MINIMUM: ROW2(T, T, ID, ID, x < y ? x : y); break;                            \
    default: break;                                                                          \
    }

static void binary_row(void *ctx, int64_t n, int64_t out_off, const int64_t *off, const int64_t *step)
{
    const ew *c = ctx;
    switch (c->dt) {
    case XE_F32: BINARY_FLOAT(float, float, ID, ID, f32, powf, c); break;
    case XE_F64: BINARY_FLOAT(double, double, ID, ID, f64, pow, c); break;
    case XE_F16: BINARY_FLOAT(xe_f16, xe_f16, H2F, F2H, f32, powf, c); break;
    case XE_I32: BINARY_INT(int32_t, i32); break;
    case XE_I64: BINARY_INT(int64_t, i64); break;
    case XE_BOOL:
        if (c->op == XE_OP_MAXIMUM)
            ROW2(uint8_t, uint8_t, ID, ID, (uint8_t)(x | y));
        else
            ROW2(uint8_t, uint8_t, ID, ID, (uint8_t)(x & y));
        break;
    default: break;
    }
}

/* ---- comparisons and logical ops ------------------------------------------------ */

#define COMPARE(TI, LOAD)                                                                    \
    switch (c->op) {                                                                         \
    case XE_OP_EQUAL: ROW2(TI, uint8_t, LOAD, ID, x == y); break;                            \
    case XE_OP_NOT_EQUAL: ROW2(TI, uint8_t, LOAD, ID, x != y); break;                        \
    case XE_OP_LESS: ROW2(TI, uint8_t, LOAD, ID, x < y); break;                              \
    case XE_OP_LESS_EQUAL: ROW2(TI, uint8_t, LOAD, ID, x <= y); break;                       \
    case XE_OP_GREATER: ROW2(TI, uint8_t, LOAD, ID, x > y); break;                           \
    case XE_OP_GREATER_EQUAL: ROW2(TI, uint8_t, LOAD, ID, x >= y); break;                    \
    default: break;                                                                          \
    }

static void compare_row(void *ctx, int64_t n, int64_t out_off, const int64_t *off, const int64_t *step)
{
    const ew *c = ctx;
    switch (c->dt) {
    case XE_F32: COMPARE(float, ID); break;
    case XE_F64: COMPARE(double, ID); break;
    case XE_F16: COMPARE(xe_f16, H2F); break;
    case XE_I32: COMPARE(int32_t, ID); break;
    case XE_I64: COMPARE(int64_t, ID); break;
    case XE_BOOL: COMPARE(uint8_t, ID); break;
    default: break;
    }
}

static void logical_row(void *ctx, int64_t n, int64_t out_off, const int64_t *off, const int64_t *step)
{
    const ew *c = ctx;
    if (c->op == XE_OP_LOGICAL_AND)
        ROW2(uint8_t, uint8_t, ID, ID, (uint8_t)(x & y));
    else
        ROW2(uint8_t, uint8_t, ID, ID, (uint8_t)(x | y));
}

/* ---- unary ------------------------------------------------------------------- */

#define UNARY_FLOAT(TI, LOAD, STORE, SFX, F)                                                 \
    switch (c->op) {                                                                         \
    case XE_OP_NEG: ROW1(TI, TI, LOAD, STORE, -x); break;                                    \
    case XE_OP_ABS: ROW1(TI, TI, LOAD, STORE, fabs##F(x)); break;                            \
    case XE_OP_EXP: ROW1(TI, TI, LOAD, STORE, xe_exp_##SFX(x)); break;                       \
    case XE_OP_LOG: ROW1(TI, TI, LOAD, STORE, log##F(x)); break;                             \
    case XE_OP_SQRT: ROW1(TI, TI, LOAD, STORE, sqrt##F(x)); break;                           \
    case XE_OP_RSQRT: ROW1(TI, TI, LOAD, STORE, xe_rsqrt_##SFX(x)); break;                   \
    case XE_OP_TANH: ROW1(TI, TI, LOAD, STORE, xe_tanh_##SFX(x)); break;                     \
    case XE_OP_SIGMOID: ROW1(TI, TI, LOAD, STORE, xe_sigmoid_##SFX(x)); break;               \
    case XE_OP_RELU: ROW1(TI, TI, LOAD, STORE, xe_relu_##SFX(x)); break;                     \
    case XE_OP_ERF: ROW1(TI, TI, LOAD, STORE, erf##F(x)); break;                             \
    case XE_OP_SIN: ROW1(TI, TI, LOAD, STORE, sin##F(x)); break;                             \
    case XE_OP_COS: ROW1(TI, TI, LOAD, STORE, cos##F(x)); break;                             \
    case XE_OP_FLOOR: ROW1(TI, TI, LOAD, STORE, floor##F(x)); break;                         \
    case XE_OP_CEIL: ROW1(TI, TI, LOAD, STORE, ceil##F(x)); break;                           \
    case XE_OP_GELU:                                                                         \
        if (c->approximate)                                                                  \
            ROW1(TI, TI, LOAD, STORE, xe_gelu_tanh_##SFX(x));                                \
        else                                                                                 \
            ROW1(TI, TI, LOAD, STORE, xe_gelu_erf_##SFX(x));                                 \
        break;                                                                               \
    default: break;                                                                          \
    }

#define UNARY_INT(T, SFX)                                                                    \
    switch (c->op) {                                                                         \
    case XE_OP_NEG: ROW1(T, T, ID, ID, xe_sub_##SFX(0, x)); break;                           \
    case XE_OP_ABS: ROW1(T, T, ID, ID, xe_abs_##SFX(x)); break;                              \
    case XE_OP_RELU: ROW1(T, T, ID, ID, x < 0 ? 0 : x); break;                               \
    default: break;                                                                          \
    }

static void unary_row(void *ctx, int64_t n, int64_t out_off, const int64_t *off, const int64_t *step)
{
    const ew *c = ctx;
    switch (c->dt) {
    case XE_F32: UNARY_FLOAT(float, ID, ID, f32, f); break;
    case XE_F64: UNARY_FLOAT(double, ID, ID, f64, ); break;
    case XE_F16: UNARY_FLOAT(xe_f16, H2F, F2H, f32, f); break;
    case XE_I32: UNARY_INT(int32_t, i32); break;
    case XE_I64: UNARY_INT(int64_t, i64); break;
    case XE_BOOL: ROW1(uint8_t, uint8_t, ID, ID, (uint8_t)!x); break;
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
    return run_rows(a, binary_row, &c);
}

xe_code xe_cpu_compare(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    ew c = {.dt = a->in[0]->dtype};
    return run_rows(a, compare_row, &c);
}

xe_code xe_cpu_logical(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    ew c = {.dt = XE_BOOL};
    return run_rows(a, logical_row, &c);
}

xe_code xe_cpu_unary(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    ew c = {.dt = a->in[0]->dtype, .approximate = xe_node_attr_bool(a->node, "approximate", false)};
    return run_rows(a, unary_row, &c);
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
