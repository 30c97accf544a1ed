/*
 * The elementwise ops' shape functions and CPU kernels against references
 * computed here in double precision (or exactly, for integers, select,
 * cast, iota and const), written independently of executor/ir/scalar.h.
 *
 * Every op runs on every dtype it accepts, on fixed shapes that cover
 * numpy broadcasting ([3,1,4] with [5,4], scalars, size-1 and zero-size
 * dims, outputs large enough for the OpenMP path) and on random shapes.
 * Each output lands in a buffer with guard bytes on both sides, and the
 * inputs must come back unchanged (tests/support/ref.c). Tolerances: f64
 * 1e-12, f32 1e-5, f16 1e-2 relative; integers exact; NaN matches NaN only.
 *
 * Also here: shape-function errors, the random ops (Philox known answers,
 * determinism per (seed, run, element), moments), unique, and the shared
 * scalar functions of scalar.h (f16 conversions checked against dtype.c's
 * on every half value).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "rng.h"
#include "scalar.h"
#include "support/optable.h"
#include "support/ref.h"
#include "xlac/xlac.h"

static xe_status st;

#define LEN(a) ((int)(sizeof(a) / sizeof *(a)))
#define SHAPE(...) ref_shape(LEN(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__})
#define SCALAR ((xe_shape){.rank = 0})

/* Runs op (no attributes) on in and returns its output; asserts success. */
static xe_tensor *run(int op, xe_tensor *const *in, int n_in)
{
    ref_op o;
    ref_op_new(&o, op, in, n_in);
    xe_tensor *r = ref_op_run(&o, in, n_in, NULL, &st);
    cr_assert_not_null(r, "%s: %s", xe_op_name(op), st.msg);
    ref_op_free(&o);
    return r;
}

/* "add f32 [3,1,4] [5,4]" for messages. */
static const char *describe(char *buf, size_t len, int op, xe_tensor *const *in, int n_in)
{
    int u = snprintf(buf, len, "%s %s", xe_op_name(op), xe_dtype_name(in[n_in - 1]->dtype));
    for (int k = 0; k < n_in && u > 0 && (size_t)u < len; k++) {
        char s[96];
        u += snprintf(buf + u, len - (size_t)u, " %s", xe_shape_str(&in[k]->shape, s, sizeof s));
    }
    return buf;
}

/* Exact equality, NaN matching NaN. */
static void expect_exact(const char *what, int64_t i, double got, double want)
{
    cr_assert(got == want || (isnan(got) && isnan(want)), "%s[%lld]: got %.17g, want %.17g", what,
              (long long)i, got, want);
}

/* Overwrites up to 3 random elements of a float tensor with NaN, inf, -inf or -0. */
static void sprinkle_specials(xe_tensor *t)
{
    static const double specials[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0};
    int64_t n = xe_tensor_numel(t);
    if (!xe_dtype_is_float(t->dtype) || n == 0)
        return;
    for (int k = 0; k < 3; k++)
        if (ref_urand() < 0.5)
            xe_store_f64(t->data, t->dtype, ref_irand(0, n - 1), specials[ref_irand(0, 4)]);
}

/* Smallest magnitude below which a dtype's rounding is absolute, not relative. */
static double tiny(xe_dtype dt)
{
    return dt == XE_F16 ? 6.2e-5 : dt == XE_F32 ? 1.2e-38 : 2.3e-308;
}

/* ---- fixed shape pairs ------------------------------------------------------- */

typedef struct shape_pair {
    xe_shape a, b;
} shape_pair;

static int fixed_pairs(shape_pair *p)
{
    int n = 0;
    p[n++] = (shape_pair){SHAPE(3, 1, 4), SHAPE(5, 4)};
    p[n++] = (shape_pair){SHAPE(5, 4), SHAPE(3, 1, 4)};
    p[n++] = (shape_pair){SCALAR, SHAPE(2, 3)};
    p[n++] = (shape_pair){SHAPE(2, 3), SCALAR};
    p[n++] = (shape_pair){SCALAR, SCALAR};
    p[n++] = (shape_pair){SHAPE(1), SHAPE(7)};
    p[n++] = (shape_pair){SHAPE(0, 3), SHAPE(1, 3)};
    p[n++] = (shape_pair){SHAPE(4, 0), SHAPE(4, 1)};
    p[n++] = (shape_pair){SHAPE(0), SCALAR};
    p[n++] = (shape_pair){SHAPE(2, 1, 3, 1), SHAPE(1, 4, 1, 5)};
    p[n++] = (shape_pair){SHAPE(300, 129), SHAPE(129)};     /* parallel, row broadcast */
    p[n++] = (shape_pair){SHAPE(129, 1), SHAPE(129, 300)};  /* parallel, column broadcast */
    p[n++] = (shape_pair){SHAPE(40000), SHAPE(40000)};      /* parallel, same shape */
    p[n++] = (shape_pair){SCALAR, SHAPE(40000)};            /* parallel, scalar operand */
    p[n++] = (shape_pair){SHAPE(7, 1, 5000), SHAPE(7, 3, 1)}; /* parallel, both broadcast */
    return n;
}

/* Fixed pairs then `extra` random ones; returns the count. */
static int shape_pairs(shape_pair *p, int extra)
{
    int n = fixed_pairs(p);
    for (int k = 0; k < extra; k++) {
        xe_shape a = ref_random_shape(4, 6, true), b = ref_broadcast_partner(&a);
        p[n++] = ref_urand() < 0.5 ? (shape_pair){a, b} : (shape_pair){b, a};
    }
    return n;
}

/* ---- binary arithmetic --------------------------------------------------------- */

static double ref_float_binary(int op, double a, double b)
{
    switch (op) {
    case XE_OP_ADD: return a + b;
    case XE_OP_SUB: return a - b;
    case XE_OP_MUL: return a * b;
    case XE_OP_DIV: return a / b;
    case XE_OP_POW: return pow(a, b);
    case XE_OP_MAXIMUM: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case XE_OP_MINIMUM: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    default: return NAN; /* no reference written here: test_op_table checks the op */
    }
}

static int64_t wrap(xe_dtype dt, uint64_t v)
{
    return dt == XE_I32 ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v;
}

/* numpy's // on integers, with x // 0 = 0. */
static int64_t ref_floordiv(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static int64_t ref_int_pow(xe_dtype dt, int64_t a, int64_t e)
{
    if (e < 0)
        return a == 1 ? 1 : a == -1 ? (e % 2 ? -1 : 1) : 0;
    uint64_t r = 1;
    for (int64_t k = 0; k < e; k++)
        r *= (uint64_t)a;
    return wrap(dt, r);
}

static int64_t ref_int_binary(int op, xe_dtype dt, int64_t a, int64_t b)
{
    switch (op) {
    case XE_OP_ADD: return wrap(dt, (uint64_t)a + (uint64_t)b);
    case XE_OP_SUB: return wrap(dt, (uint64_t)a - (uint64_t)b);
    case XE_OP_MUL: return wrap(dt, (uint64_t)a * (uint64_t)b);
    case XE_OP_DIV: return ref_floordiv(a, b);
    case XE_OP_POW: return ref_int_pow(dt, a, b);
    case XE_OP_MAXIMUM: return a > b ? a : b;
    default: return a < b ? a : b; /* minimum */
    }
}

/* Operand ranges: pow keeps results small, div gets zeros for ints. */
static void binary_range(int op, xe_dtype dt, int which, double *lo, double *hi)
{
    bool is_int = xe_dtype_is_int(dt);
    if (op == XE_OP_POW) {
        *lo = which == 0 ? (is_int ? -4 : -2) : -3;
        *hi = which == 0 ? 5 : (is_int ? 9 : 3);
    } else if (op == XE_OP_DIV) {
        *lo = is_int ? -20 : -10;
        *hi = is_int ? 21 : 10;
    } else {
        *lo = is_int ? -1000 : -100;
        *hi = is_int ? 1001 : 100;
    }
}

static void check_binary(int op, xe_tensor *const *in, const xe_tensor *r)
{
    char what[256];
    describe(what, sizeof what, op, in, 2);
    xe_dtype dt = in[0]->dtype;
    cr_assert_eq(r->dtype, dt, "%s: result dtype %s", what, xe_dtype_name(r->dtype));
    for (int64_t i = 0; i < xe_tensor_numel(r); i++) {
        double a = ref_load_bcast(in[0], &r->shape, i), b = ref_load_bcast(in[1], &r->shape, i);
        double got = xe_load_f64(r->data, dt, i), want, scale = tiny(dt);
        if (dt == XE_BOOL)
            want = op == XE_OP_MAXIMUM ? (a || b) : (a && b);
        else if (xe_dtype_is_int(dt))
            want = (double)ref_int_binary(op, dt, (int64_t)a, (int64_t)b);
        else
            want = ref_round(dt, ref_float_binary(op, a, b));
        if (op == XE_OP_ADD || op == XE_OP_SUB)
            scale = fmax(scale, fmax(fabs(a), fabs(b)));
        ref_expect(what, dt, i, got, want, scale);
    }
}

Test(elementwise, binary_every_op_dtype_and_broadcast)
{
    ref_seed(1);
    shape_pair pairs[64];
    int n_pairs = shape_pairs(pairs, 12);
    for (int op = 0; op < XE_OP_COUNT; op++) /* the binary ops of the table with a reference here */
        for (int di = 0; di < 6; di++) {
            xe_dtype dt = ref_all_dtypes[di];
            if (xe_op_get(op)->cls != XE_CLASS_BINARY || isnan(ref_float_binary(op, 1, 2)))
                continue;
            if (dt == XE_BOOL && op != XE_OP_MAXIMUM && op != XE_OP_MINIMUM)
                continue;
            for (int p = 0; p < n_pairs; p++) {
                double lo0, hi0, lo1, hi1;
                binary_range(op, dt, 0, &lo0, &hi0);
                binary_range(op, dt, 1, &lo1, &hi1);
                xe_tensor *in[2] = {ref_random_tensor(dt, &pairs[p].a, lo0, hi0),
                                    ref_random_tensor(dt, &pairs[p].b, lo1, hi1)};
                sprinkle_specials(in[0]);
                sprinkle_specials(in[1]);
                xe_tensor *r = run(op, in, 2);
                check_binary(op, in, r);
                xe_tensor_release(r);
                xe_tensor_release(in[0]);
                xe_tensor_release(in[1]);
            }
        }
}

/* Runs a binary op on two 1-D int64 vectors of dtype dt; returns raw int64 results. */
static void run_int_vectors(int op, xe_dtype dt, const int64_t *a, const int64_t *b, int n,
                            int64_t *out)
{
    xe_shape s = SHAPE(n);
    xe_tensor *in[2] = {ref_zeros(dt, &s), ref_zeros(dt, &s)};
    for (int i = 0; i < n; i++) {
        if (dt == XE_I32) {
            ((int32_t *)in[0]->data)[i] = (int32_t)a[i];
            ((int32_t *)in[1]->data)[i] = (int32_t)b[i];
        } else {
            ((int64_t *)in[0]->data)[i] = a[i];
            ((int64_t *)in[1]->data)[i] = b[i];
        }
    }
    xe_tensor *r = run(op, in, 2);
    for (int i = 0; i < n; i++)
        out[i] = dt == XE_I32 ? ((int32_t *)r->data)[i] : ((int64_t *)r->data)[i];
    xe_tensor_release(r);
    xe_tensor_release(in[0]);
    xe_tensor_release(in[1]);
}

Test(elementwise, integer_division_power_and_wraparound)
{
    /* floor division: numpy's //, x // 0 = 0, MIN // -1 wraps */
    const int64_t da[] = {7, -7, 7, -7, 6, -6, 0, 5, -5, INT32_MIN, INT32_MAX, 1};
    const int64_t db[] = {2, 2, -2, -2, 3, 3, 3, 0, 0, -1, -1, -3};
    const int64_t dw[] = {3, -4, -4, 3, 2, -2, 0, 0, 0, INT32_MIN, -INT32_MAX, -1};
    int64_t got[16];
    run_int_vectors(XE_OP_DIV, XE_I32, da, db, LEN(da), got);
    for (int i = 0; i < LEN(da); i++)
        cr_assert_eq(got[i], dw[i], "i32 %lld // %lld: got %lld, want %lld", (long long)da[i],
                     (long long)db[i], (long long)got[i], (long long)dw[i]);
    const int64_t la[] = {INT64_MIN, INT64_MIN, INT64_MAX, -9, (int64_t)1 << 62};
    const int64_t lb[] = {-1, 2, -1, 4, -3};
    const int64_t lw[] = {INT64_MIN, INT64_MIN / 2, -INT64_MAX, -3, -1537228672809129302LL};
    run_int_vectors(XE_OP_DIV, XE_I64, la, lb, LEN(la), got);
    for (int i = 0; i < LEN(la); i++)
        cr_assert_eq(got[i], lw[i], "i64 %lld // %lld: got %lld", (long long)la[i],
                     (long long)lb[i], (long long)got[i]);
    /* integer pow: negative exponents give 0 except for bases 1 and -1 */
    const int64_t pa[] = {2, 1, -1, -1, 0, 3, -2, 2, 0, 5, 2};
    const int64_t pb[] = {-1, -5, -3, -2, -1, 0, 3, 30, 0, 3, 31};
    const int64_t pw[] = {0, 1, -1, 1, 0, 1, -8, 1 << 30, 1, 125, INT32_MIN};
    run_int_vectors(XE_OP_POW, XE_I32, pa, pb, LEN(pa), got);
    for (int i = 0; i < LEN(pa); i++)
        cr_assert_eq(got[i], pw[i], "i32 %lld ** %lld: got %lld, want %lld", (long long)pa[i],
                     (long long)pb[i], (long long)got[i], (long long)pw[i]);
    /* + - * wrap around as numpy's do */
    const int64_t wa[] = {INT32_MAX, INT32_MIN, 65536};
    const int64_t wb[] = {1, 1, 65536};
    int64_t sum[3], diff[3], prod[3];
    run_int_vectors(XE_OP_ADD, XE_I32, wa, wb, 3, sum);
    run_int_vectors(XE_OP_SUB, XE_I32, wa, wb, 3, diff);
    run_int_vectors(XE_OP_MUL, XE_I32, wa, wb, 3, prod);
    cr_assert_eq(sum[0], INT32_MIN);
    cr_assert_eq(diff[1], INT32_MAX);
    cr_assert_eq(prod[2], 0);
    const int64_t ba[] = {INT64_MAX, ((int64_t)1 << 53) + 1};
    const int64_t bb[] = {1, 2};
    run_int_vectors(XE_OP_ADD, XE_I64, ba, bb, 2, sum);
    cr_assert_eq(sum[0], INT64_MIN);
    cr_assert_eq(sum[1], ((int64_t)1 << 53) + 3, "i64 add must be exact beyond 2^53");
}

Test(elementwise, float_maximum_minimum_propagate_nan_and_division_by_zero)
{
    xe_dtype dts[] = {XE_F32, XE_F64, XE_F16};
    const double a[] = {NAN, 1, NAN, -INFINITY, 2, 1, -1, 0};
    const double b[] = {2, NAN, NAN, 3, INFINITY, 0, 0, 0};
    for (int di = 0; di < 3; di++) {
        xe_shape s = SHAPE(LEN(a));
        xe_tensor *in[2] = {ref_tensor_from(dts[di], &s, a), ref_tensor_from(dts[di], &s, b)};
        xe_tensor *mx = run(XE_OP_MAXIMUM, in, 2), *mn = run(XE_OP_MINIMUM, in, 2);
        xe_tensor *dv = run(XE_OP_DIV, in, 2);
        const double wmax[] = {NAN, NAN, NAN, 3, INFINITY, 1, 0, 0};
        const double wmin[] = {NAN, NAN, NAN, -INFINITY, 2, 0, -1, 0};
        const double wdiv[] = {NAN, NAN, NAN, -INFINITY, 0, INFINITY, -INFINITY, NAN};
        for (int i = 0; i < LEN(a); i++) {
            expect_exact("maximum", i, xe_load_f64(mx->data, dts[di], i), wmax[i]);
            expect_exact("minimum", i, xe_load_f64(mn->data, dts[di], i), wmin[i]);
            expect_exact("div", i, xe_load_f64(dv->data, dts[di], i), wdiv[i]);
        }
        xe_tensor_release(mx);
        xe_tensor_release(mn);
        xe_tensor_release(dv);
        xe_tensor_release(in[0]);
        xe_tensor_release(in[1]);
    }
}

Test(elementwise, f16_is_computed_in_float_and_rounded_once)
{
    /* 2049 is not an f16 (spacing 2 above 2048): 2048 + 1 rounds to even, 2048;
       (2048 + 1) + 1 done in f16 steps would stay 2048, in float once it is 2050 */
    xe_shape s = SHAPE(3);
    const double a[] = {2048, 0.1, 65504};
    const double b[] = {1, 0.2, 65504};
    xe_tensor *in[2] = {ref_tensor_from(XE_F16, &s, a), ref_tensor_from(XE_F16, &s, b)};
    xe_tensor *r = run(XE_OP_ADD, in, 2);
    const double want[] = {2048, ref_round(XE_F16, (double)((float)xe_f16_to_f32(xe_f32_to_f16(0.1f)) +
                                                         xe_f16_to_f32(xe_f32_to_f16(0.2f)))),
                           INFINITY};
    for (int i = 0; i < 3; i++)
        expect_exact("f16 add", i, xe_load_f64(r->data, XE_F16, i), want[i]);
    xe_tensor_release(r);
    xe_tensor_release(in[0]);
    xe_tensor_release(in[1]);
}

/* ---- comparisons and logical ops -------------------------------------------------- */

/* 1 or 0; -1 for an op without a reference here (test_op_table checks it). */
static int ref_compare(int op, double a, double b)
{
    switch (op) {
    case XE_OP_EQUAL: return a == b;
    case XE_OP_NOT_EQUAL: return a != b;
    case XE_OP_LESS: return a < b;
    case XE_OP_LESS_EQUAL: return a <= b;
    case XE_OP_GREATER: return a > b;
    case XE_OP_GREATER_EQUAL: return a >= b;
    default: return -1;
    }
}

Test(elementwise, comparisons_every_dtype_to_bool)
{
    ref_seed(2);
    shape_pair pairs[64];
    int n_pairs = shape_pairs(pairs, 10);
    char what[256];
    for (int op = 0; op < XE_OP_COUNT; op++) /* the comparisons of the table */
        for (int di = 0; di < 6; di++)
            for (int p = 0; p < n_pairs; p++) {
                if (xe_op_get(op)->cls != XE_CLASS_COMPARE || ref_compare(op, 0, 0) < 0)
                    continue;
                xe_dtype dt = ref_all_dtypes[di];
                /* a narrow range so that equal values are common */
                xe_tensor *in[2] = {ref_random_tensor(dt, &pairs[p].a, -3, 3),
                                    ref_random_tensor(dt, &pairs[p].b, -3, 3)};
                if (xe_dtype_is_float(dt))
                    for (int k = 0; k < 2; k++)
                        for (int64_t i = 0; i < xe_tensor_numel(in[k]); i++)
                            xe_store_f64(in[k]->data, dt, i,
                                         floor(xe_load_f64(in[k]->data, dt, i) * 2) / 2);
                sprinkle_specials(in[0]);
                sprinkle_specials(in[1]);
                xe_tensor *r = run(op, in, 2);
                describe(what, sizeof what, op, in, 2);
                cr_assert_eq(r->dtype, XE_BOOL, "%s gives %s", what, xe_dtype_name(r->dtype));
                for (int64_t i = 0; i < xe_tensor_numel(r); i++) {
                    double a = ref_load_bcast(in[0], &r->shape, i);
                    double b = ref_load_bcast(in[1], &r->shape, i);
                    cr_assert_eq(((uint8_t *)r->data)[i], ref_compare(op, a, b),
                                 "%s[%lld]: %g vs %g", what, (long long)i, a, b);
                }
                xe_tensor_release(r);
                xe_tensor_release(in[0]);
                xe_tensor_release(in[1]);
            }
}

Test(elementwise, logical_ops_with_broadcasting)
{
    ref_seed(3);
    shape_pair pairs[64];
    int n_pairs = shape_pairs(pairs, 10);
    char what[256];
    for (int p = 0; p < n_pairs; p++) {
        xe_tensor *in[2] = {ref_random_tensor(XE_BOOL, &pairs[p].a, 0, 1),
                            ref_random_tensor(XE_BOOL, &pairs[p].b, 0, 1)};
        xe_tensor *land = run(XE_OP_LOGICAL_AND, in, 2), *lor = run(XE_OP_LOGICAL_OR, in, 2);
        xe_tensor *lnot = run(XE_OP_LOGICAL_NOT, in, 1);
        describe(what, sizeof what, XE_OP_LOGICAL_AND, in, 2);
        for (int64_t i = 0; i < xe_tensor_numel(land); i++) {
            bool a = ref_load_bcast(in[0], &land->shape, i) != 0;
            bool b = ref_load_bcast(in[1], &land->shape, i) != 0;
            cr_assert_eq(((uint8_t *)land->data)[i], a && b, "%s[%lld]", what, (long long)i);
            cr_assert_eq(((uint8_t *)lor->data)[i], a || b, "or: %s[%lld]", what, (long long)i);
        }
        for (int64_t i = 0; i < xe_tensor_numel(lnot); i++)
            cr_assert_eq(((uint8_t *)lnot->data)[i], !((uint8_t *)in[0]->data)[i], "not[%lld]",
                         (long long)i);
        xe_tensor_release(land);
        xe_tensor_release(lor);
        xe_tensor_release(lnot);
        xe_tensor_release(in[0]);
        xe_tensor_release(in[1]);
    }
}

/* ---- unary -------------------------------------------------------------------------- */

static double ref_unary(int op, double x, bool approximate)
{
    switch (op) {
    case XE_OP_NEG: return -x;
    case XE_OP_ABS: return fabs(x);
    case XE_OP_EXP: return exp(x);
    case XE_OP_LOG: return log(x);
    case XE_OP_SQRT: return sqrt(x);
    case XE_OP_RSQRT: return 1.0 / sqrt(x);
    case XE_OP_TANH: return tanh(x);
    case XE_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case XE_OP_RELU: return isnan(x) ? x : x > 0 ? x : 0.0;
    case XE_OP_ERF: return erf(x);
    case XE_OP_SIN: return sin(x);
    case XE_OP_COS: return cos(x);
    case XE_OP_ASIN: return asin(x);
    case XE_OP_ACOS: return acos(x);
    case XE_OP_ATAN: return atan(x);
    case XE_OP_FLOOR: return floor(x);
    case XE_OP_CEIL: return ceil(x);
    case XE_OP_GELU:
        if (approximate)
            return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
        return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    default: return NAN; /* no reference written here: test_op_table checks the op */
    }
}

/* Runs a unary op (its XV attribute set to `approximate` unless -1) and checks it elementwise. */
static void check_unary(int op, xe_tensor *x, int approximate)
{
    ref_op o;
    ref_op_new(&o, op, &x, 1);
    if (approximate >= 0)
        cr_assert_eq(xe_node_set_bool(o.node, optable_variant_attr(op), approximate, &st), XE_OK);
    xe_tensor *r = ref_op_run(&o, &x, 1, NULL, &st);
    cr_assert_not_null(r, "%s: %s", xe_op_name(op), st.msg);
    char what[256];
    describe(what, sizeof what, op, &x, 1);
    if (approximate >= 0)
        strcat(what, approximate ? " approximate" : " erf");
    cr_assert_eq(r->dtype, x->dtype, "%s", what);
    cr_assert(xe_shape_equal(&r->shape, &x->shape), "%s: shape changed", what);
    for (int64_t i = 0; i < xe_tensor_numel(r); i++) {
        double v = xe_load_f64(x->data, x->dtype, i), got = xe_load_f64(r->data, r->dtype, i);
        double want = ref_unary(op, v, approximate > 0);
        if (xe_dtype_is_int(x->dtype))
            want = (double)wrap(x->dtype, (uint64_t)(int64_t)want);
        else
            want = ref_round(x->dtype, want);
        ref_expect(what, x->dtype, i, got, want, fmax(1.0, fabs(v)));
    }
    xe_tensor_release(r);
    ref_op_free(&o);
}

static const double unary_specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 0.5, -0.5};

Test(elementwise, unary_float_ops_every_float_dtype)
{
    ref_seed(4);
    xe_dtype dts[] = {XE_F32, XE_F64, XE_F16};
    xe_shape shapes[12] = {SCALAR, SHAPE(0), SHAPE(3, 0), SHAPE(1), SHAPE(2, 3, 4), SHAPE(40000)};
    for (int k = 6; k < 12; k++)
        shapes[k] = ref_random_shape(4, 6, true);
    for (int op = 0; op < XE_OP_COUNT; op++) /* the unary ops of the table that take floats */
        for (int di = 0; di < 3; di++)
            for (int si = 0; si < 12; si++) {
                if (xe_op_get(op)->cls != XE_CLASS_UNARY || (xe_op_get(op)->flags & XE_OPF_BOOL_ONLY) ||
                    isnan(ref_unary(op, 0.5, false)))
                    continue;
                bool positive = op == XE_OP_LOG || op == XE_OP_SQRT || op == XE_OP_RSQRT;
                xe_tensor *x = ref_random_tensor(dts[di], &shapes[si], positive ? -0.5 : -6, 8);
                int64_t n = xe_tensor_numel(x);
                for (int k = 0; k < LEN(unary_specials) && k < n; k++) /* specials first */
                    xe_store_f64(x->data, dts[di], k, unary_specials[k]);
                if (optable_variant_attr(op)) {
                    check_unary(op, x, 0);
                    check_unary(op, x, 1);
                }
                check_unary(op, x, -1); /* gelu: the default is the erf form */
                xe_tensor_release(x);
            }
}

Test(elementwise, unary_integer_ops_and_relu_nan)
{
    ref_seed(5);
    xe_dtype dts[] = {XE_I32, XE_I64};
    xe_shape shapes[] = {SCALAR, SHAPE(0), SHAPE(5, 1, 3), SHAPE(40000)};
    for (int op = 0; op < XE_OP_COUNT; op++) /* the unary ops of the table that take integers */
        for (int di = 0; di < 2; di++)
            for (int si = 0; si < LEN(shapes); si++) {
                const xe_op_def *d = xe_op_get(op);
                if (d->cls != XE_CLASS_UNARY || (d->flags & (XE_OPF_FLOAT_ONLY | XE_OPF_BOOL_ONLY)) ||
                    isnan(ref_unary(op, 0.5, false)))
                    continue;
                xe_tensor *x = ref_random_tensor(dts[di], &shapes[si], -1e6, 1e6);
                check_unary(op, x, -1);
                xe_tensor_release(x);
            }
    /* the most negative integer wraps under neg and abs, as in numpy */
    xe_shape s = SHAPE(2);
    xe_tensor *x = ref_zeros(XE_I32, &s);
    ((int32_t *)x->data)[0] = INT32_MIN;
    ((int32_t *)x->data)[1] = -5;
    xe_tensor *ng = run(XE_OP_NEG, &x, 1), *ab = run(XE_OP_ABS, &x, 1), *rl = run(XE_OP_RELU, &x, 1);
    cr_assert_eq(((int32_t *)ng->data)[0], INT32_MIN);
    cr_assert_eq(((int32_t *)ab->data)[0], INT32_MIN);
    cr_assert_eq(((int32_t *)ab->data)[1], 5);
    cr_assert_eq(((int32_t *)rl->data)[0], 0);
    xe_tensor_release(ng);
    xe_tensor_release(ab);
    xe_tensor_release(rl);
    xe_tensor_release(x);
    /* relu(NaN) is NaN, relu(-inf) is 0 */
    const double fv[] = {NAN, -INFINITY, INFINITY, -2, 3};
    s = SHAPE(5);
    for (int di = 0; di < 3; di++) {
        xe_dtype dt = (xe_dtype[]){XE_F32, XE_F64, XE_F16}[di];
        xe_tensor *f = ref_tensor_from(dt, &s, fv);
        xe_tensor *r = run(XE_OP_RELU, &f, 1);
        const double want[] = {NAN, 0, INFINITY, 0, 3};
        for (int i = 0; i < 5; i++)
            expect_exact("relu", i, xe_load_f64(r->data, dt, i), want[i]);
        xe_tensor_release(r);
        xe_tensor_release(f);
    }
}

Test(elementwise, gelu_known_values)
{
    /* the two formulas evaluated in Python's double precision at x = 1, -1, 3 */
    const double x[] = {1, -1, 3};
    const double exact[] = {0.8413447460685429, -0.15865525393145707, 2.99595030590511};
    const double tanhv[] = {0.8411919906082768, -0.15880800939172324, 2.996362607918227};
    xe_shape s = SHAPE(3);
    xe_tensor *t = ref_tensor_from(XE_F64, &s, x);
    for (int approx = 0; approx < 2; approx++) {
        ref_op o;
        ref_op_new(&o, XE_OP_GELU, &t, 1);
        cr_assert_eq(xe_node_set_bool(o.node, "approximate", approx, &st), XE_OK);
        xe_tensor *r = ref_op_run(&o, &t, 1, NULL, &st);
        cr_assert_not_null(r, "%s", st.msg);
        for (int i = 0; i < 3; i++) {
            double got = ((double *)r->data)[i], want = approx ? tanhv[i] : exact[i];
            cr_assert(fabs(got - want) < 1e-14,
                      "gelu(%g, approximate=%d) = %.17g, want %.17g", x[i], approx, got, want);
        }
        xe_tensor_release(r);
        ref_op_free(&o);
    }
    xe_tensor_release(t);
}

/* ---- select ---------------------------------------------------------------------------- */

Test(elementwise, select_every_dtype_broadcasting_all_three)
{
    ref_seed(6);
    shape_pair pairs[64];
    int n_pairs = shape_pairs(pairs, 10);
    char what[256];
    for (int di = 0; di < 6; di++)
        for (int p = 0; p < n_pairs; p++) {
            xe_dtype dt = ref_all_dtypes[di];
            xe_shape out = ref_broadcast(&pairs[p].a, &pairs[p].b);
            xe_shape cs = ref_broadcast_partner(&out);
            xe_tensor *in[3] = {ref_random_tensor(XE_BOOL, &cs, 0, 1),
                                ref_random_tensor(dt, &pairs[p].a, -50, 50),
                                ref_random_tensor(dt, &pairs[p].b, -50, 50)};
            sprinkle_specials(in[1]);
            xe_tensor *r = run(XE_OP_SELECT, in, 3);
            describe(what, sizeof what, XE_OP_SELECT, in, 3);
            cr_assert_eq(r->dtype, dt, "%s", what);
            cr_assert(xe_shape_equal(&r->shape, &out), "%s: wrong shape", what);
            for (int64_t i = 0; i < xe_tensor_numel(r); i++) {
                double c = ref_load_bcast(in[0], &out, i);
                double want = ref_load_bcast(in[c != 0 ? 1 : 2], &out, i);
                expect_exact(what, i, xe_load_f64(r->data, dt, i), want);
            }
            xe_tensor_release(r);
            for (int k = 0; k < 3; k++)
                xe_tensor_release(in[k]);
        }
}

/* ---- cast --------------------------------------------------------------------------------- */

static const double cast_float_values[] = {
    0,     -0.0,   0.4,  -0.6,   1,     -1,   2.7,   -2.7,    127.5,  255,    65504, 70000,
    1e10, -1e10,  3e9,  -3e9,   1e20,  -1e20, 2147483647.0, -2147483648.0, 2147483648.0,
    9.3e18, -9.3e18, INFINITY, -INFINITY, NAN, 1e-30};

static const int64_t cast_int_values[] = {0,         1,          -1,         2,        -100,
                                          127,       INT32_MAX,  INT32_MIN,  (int64_t)1 << 31,
                                          -((int64_t)1 << 31) - 1, (int64_t)1 << 40,
                                          ((int64_t)1 << 53) + 1,  INT64_MAX, INT64_MIN};

/* Float value to integer: truncate, NaN 0, saturate. */
static int64_t ref_float_to_int(xe_dtype to, double v)
{
    double lo = to == XE_I32 ? -2147483648.0 : -9223372036854775808.0;
    double hi = to == XE_I32 ? 2147483647.0 : 9223372036854775807.0;
    if (isnan(v))
        return 0;
    if (v <= lo)
        return to == XE_I32 ? INT32_MIN : INT64_MIN;
    if (v >= hi)
        return to == XE_I32 ? INT32_MAX : INT64_MAX;
    return (int64_t)trunc(v);
}

/* Source element i as an exact int64 (integer dtypes) or double. */
static void load_src(const xe_tensor *t, int64_t i, int64_t *iv, double *fv)
{
    if (t->dtype == XE_I64)
        *iv = ((const int64_t *)t->data)[i];
    else if (t->dtype == XE_I32)
        *iv = ((const int32_t *)t->data)[i];
    else if (t->dtype == XE_BOOL)
        *iv = ((const uint8_t *)t->data)[i];
    *fv = xe_load_f64(t->data, t->dtype, i);
}

static void check_cast_element(xe_dtype from, xe_dtype to, const xe_tensor *src,
                               const xe_tensor *r, int64_t i)
{
    int64_t iv = 0;
    double fv;
    load_src(src, i, &iv, &fv);
    bool src_int = !xe_dtype_is_float(from);
    char what[64];
    snprintf(what, sizeof what, "cast %s->%s of %.17g", xe_dtype_name(from), xe_dtype_name(to), fv);
    if (to == XE_BOOL) {
        cr_assert_eq(((uint8_t *)r->data)[i], src_int ? iv != 0 : fv != 0, "%s", what);
    } else if (to == XE_I64 || to == XE_I32) {
        int64_t want = src_int ? wrap(to, (uint64_t)iv) : ref_float_to_int(to, fv);
        int64_t got = to == XE_I64 ? ((int64_t *)r->data)[i] : ((int32_t *)r->data)[i];
        cr_assert_eq(got, want, "%s[%lld]: got %lld, want %lld", what, (long long)i, (long long)got,
                     (long long)want);
    } else {
        double want = ref_round(to, src_int ? (double)iv : fv);
        ref_expect(what, to, i, xe_load_f64(r->data, to, i), want, tiny(to));
    }
}

static xe_tensor *cast_source(xe_dtype from)
{
    int n = xe_dtype_is_float(from) ? LEN(cast_float_values) : LEN(cast_int_values);
    xe_shape s = SHAPE(n);
    xe_tensor *t = ref_zeros(from, &s);
    for (int i = 0; i < n; i++) {
        if (xe_dtype_is_float(from))
            xe_store_f64(t->data, from, i, cast_float_values[i]);
        else if (from == XE_I64)
            ((int64_t *)t->data)[i] = cast_int_values[i];
        else if (from == XE_I32)
            ((int32_t *)t->data)[i] = (int32_t)(uint32_t)(uint64_t)cast_int_values[i];
        else
            ((uint8_t *)t->data)[i] = cast_int_values[i] != 0;
    }
    return t;
}

Test(elementwise, cast_every_pair_of_dtypes)
{
    for (int fi = 0; fi < 6; fi++)
        for (int ti = 0; ti < 6; ti++) {
            xe_dtype from = ref_all_dtypes[fi], to = ref_all_dtypes[ti];
            xe_tensor *src = cast_source(from);
            xe_tensor *r = ref_cast(src, to);
            for (int64_t i = 0; i < xe_tensor_numel(src); i++)
                check_cast_element(from, to, src, r, i);
            xe_tensor_release(r);
            xe_tensor_release(src);
        }
}

Test(elementwise, cast_large_and_empty_tensors)
{
    ref_seed(7);
    xe_shape shapes[] = {SHAPE(300, 200), SHAPE(0, 4), SCALAR};
    for (int si = 0; si < LEN(shapes); si++)
        for (int fi = 0; fi < 6; fi++)
            for (int ti = 0; ti < 6; ti++) {
                xe_dtype from = ref_all_dtypes[fi], to = ref_all_dtypes[ti];
                xe_tensor *src = ref_random_tensor(from, &shapes[si], -1e5, 1e5);
                xe_tensor *r = ref_cast(src, to);
                cr_assert(xe_shape_equal(&r->shape, &shapes[si]));
                for (int64_t i = 0; i < xe_tensor_numel(src); i++)
                    check_cast_element(from, to, src, r, i);
                xe_tensor_release(r);
                xe_tensor_release(src);
            }
}

/* ---- sources: const, iota ---------------------------------------------------------------- */

Test(elementwise, const_copies_its_value)
{
    ref_seed(8);
    xe_shape shapes[] = {SCALAR, SHAPE(0), SHAPE(3, 5), SHAPE(50000)};
    for (int di = 0; di < 6; di++)
        for (int si = 0; si < LEN(shapes); si++) {
            ref_op o;
            ref_op_new(&o, XE_OP_CONST, NULL, 0);
            xe_tensor *v = ref_random_tensor(ref_all_dtypes[di], &shapes[si], -9, 9);
            o.node->value = v; /* the graph releases it */
            xe_tensor *r = ref_op_run(&o, NULL, 0, NULL, &st);
            cr_assert_not_null(r, "%s", st.msg);
            cr_assert_eq(r->dtype, v->dtype);
            cr_assert(xe_shape_equal(&r->shape, &v->shape));
            cr_assert(v->nbytes == 0 || memcmp(r->data, v->data, v->nbytes) == 0,
                      "const %s: bytes differ", xe_dtype_name(v->dtype));
            xe_tensor_release(r);
            ref_op_free(&o);
        }
}

static xe_tensor *run_iota(const xe_shape *s, int64_t axis, int dtype, xe_status *status)
{
    ref_op o;
    ref_op_new(&o, XE_OP_IOTA, NULL, 0);
    cr_assert_eq(xe_node_set_ints(o.node, "shape", s->dims, s->rank, &st), XE_OK);
    cr_assert_eq(xe_node_set_int(o.node, "axis", axis, &st), XE_OK);
    if (dtype >= 0)
        cr_assert_eq(xe_node_set_dtype(o.node, "dtype", (xe_dtype)dtype, &st), XE_OK);
    xe_tensor *r = ref_op_run(&o, NULL, 0, NULL, status);
    ref_op_free(&o);
    return r;
}

Test(elementwise, iota_along_every_axis)
{
    xe_shape shapes[] = {SHAPE(2, 3, 4), SHAPE(5), SHAPE(0, 3), SHAPE(3, 0), SHAPE(1, 7, 1),
                         SHAPE(300, 200), SCALAR};
    const int dts[] = {-1, XE_I32, XE_I64, XE_F32, XE_F64, XE_F16};
    for (int si = 0; si < LEN(shapes); si++)
        for (int axis = -shapes[si].rank; axis < (shapes[si].rank ? shapes[si].rank : 1); axis++)
            for (int di = 0; di < LEN(dts); di++) {
                xe_tensor *r = run_iota(&shapes[si], axis, dts[di], &st);
                cr_assert_not_null(r, "iota: %s", st.msg);
                cr_assert_eq(r->dtype, dts[di] < 0 ? XE_I32 : (xe_dtype)dts[di]);
                cr_assert(xe_shape_equal(&r->shape, &shapes[si]));
                int ax = shapes[si].rank ? (axis + shapes[si].rank) % shapes[si].rank : 0;
                int64_t strides[XE_MAX_RANK];
                xe_shape_strides(&shapes[si], strides);
                for (int64_t i = 0; i < xe_tensor_numel(r); i++) {
                    double want = shapes[si].rank ? (double)((i / strides[ax]) % shapes[si].dims[ax]) : 0;
                    double got = xe_load_f64(r->data, r->dtype, i);
                    if (r->dtype == XE_F16)
                        want = ref_round(XE_F16, want);
                    cr_assert_eq(got, want, "iota axis %d [%lld]: got %g want %g", axis,
                                 (long long)i, got, want);
                }
                xe_tensor_release(r);
            }
    /* errors: axis out of range, bool dtype */
    xe_shape s = SHAPE(2, 3);
    cr_assert_null(run_iota(&s, 2, -1, &st));
    cr_assert(strstr(st.msg, "axis"), "%s", st.msg);
    cr_assert_null(run_iota(&s, 0, XE_BOOL, &st));
    cr_assert(strstr(st.msg, "bool"), "%s", st.msg);
}

/* ---- random --------------------------------------------------------------------------------- */

Test(elementwise, philox_known_answers)
{
    /* Random123's kat_vectors, philox4x32 10 */
    xe_philox_out a = xe_philox(0, 0, 0, 0, 0, 0);
    xe_philox_out b = xe_philox(~0u, ~0u, ~0u, ~0u, ~0u, ~0u);
    xe_philox_out c = xe_philox(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0);
    const uint32_t wa[] = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
    const uint32_t wb[] = {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd};
    const uint32_t wc[] = {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1};
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(a.v[k], wa[k], "zero vector word %d: %08x", k, a.v[k]);
        cr_assert_eq(b.v[k], wb[k], "ones vector word %d: %08x", k, b.v[k]);
        cr_assert_eq(c.v[k], wc[k], "pi vector word %d: %08x", k, c.v[k]);
    }
}

/* A random op node; dtype < 0 keeps the default. */
static void random_node(ref_op *o, int op, const xe_shape *s, int64_t seed, int dtype)
{
    ref_op_new(o, op, NULL, 0);
    cr_assert_eq(xe_node_set_ints(o->node, "shape", s->dims, s->rank, &st), XE_OK);
    cr_assert_eq(xe_node_set_int(o->node, "seed", seed, &st), XE_OK);
    if (dtype >= 0)
        cr_assert_eq(xe_node_set_dtype(o->node, "dtype", (xe_dtype)dtype, &st), XE_OK);
}

static xe_tensor *run_random(ref_op *o, uint64_t *state)
{
    xe_tensor *r = ref_op_run(o, NULL, 0, state, &st);
    cr_assert_not_null(r, "%s: %s", xe_op_name(o->node->op), st.msg);
    return r;
}

static void moments(const xe_tensor *t, double *mean, double *sd)
{
    int64_t n = xe_tensor_numel(t);
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = xe_load_f64(t->data, t->dtype, i);
        cr_assert(isfinite(v), "random value %lld is %g", (long long)i, v);
        s += v;
        s2 += v * v;
    }
    *mean = s / (double)n;
    *sd = sqrt(s2 / (double)n - *mean * *mean);
}

Test(elementwise, random_normal_is_a_function_of_seed_run_and_element)
{
    ref_op o;
    xe_shape s = SHAPE(100000);
    random_node(&o, XE_OP_RANDOM_NORMAL, &s, 7, -1);
    uint64_t state = 0, again = 0;
    xe_tensor *r0 = run_random(&o, &state);
    cr_assert_eq(state, 1, "the run counter must advance");
    xe_tensor *r1 = run_random(&o, &state);
    cr_assert_eq(state, 2);
    xe_tensor *r0b = run_random(&o, &again);
    cr_assert_eq(r0->dtype, XE_F32);
    cr_assert(memcmp(r0->data, r0b->data, r0->nbytes) == 0, "same seed and run must repeat");
    int64_t same = 0;
    for (int64_t i = 0; i < 100000; i++) {
        float v = ((float *)r0->data)[i];
        cr_assert_eq(v, (float)xe_rng_normal(7, 0, (uint64_t)i), "element %lld is not philox(7,0,i)",
                     (long long)i);
        same += v == ((float *)r1->data)[i];
    }
    cr_assert_lt(same, 10, "run 2 repeats run 1 in %lld places", (long long)same);
    double mean, sd;
    moments(r0, &mean, &sd);
    cr_assert(fabs(mean) < 0.02 && fabs(sd - 1) < 0.02, "mean %g sd %g", mean, sd);
    /* a smaller tensor (serial path) holds the same first elements */
    ref_op small;
    xe_shape s2 = SHAPE(10, 100);
    random_node(&small, XE_OP_RANDOM_NORMAL, &s2, 7, -1);
    uint64_t zero = 0;
    xe_tensor *rs = run_random(&small, &zero);
    cr_assert(memcmp(rs->data, r0->data, rs->nbytes) == 0, "element i must not depend on the shape");
    /* another seed gives other values */
    ref_op other;
    random_node(&other, XE_OP_RANDOM_NORMAL, &s2, 8, -1);
    zero = 0;
    xe_tensor *ro = run_random(&other, &zero);
    cr_assert(memcmp(ro->data, rs->data, rs->nbytes) != 0, "seed must matter");
    xe_tensor *list[] = {r0, r1, r0b, rs, ro};
    for (int k = 0; k < LEN(list); k++)
        xe_tensor_release(list[k]);
    ref_op_free(&o);
    ref_op_free(&small);
    ref_op_free(&other);
}

Test(elementwise, random_normal_mean_stddev_and_dtypes)
{
    xe_shape s = SHAPE(100000);
    const int dts[] = {XE_F32, XE_F64, XE_F16};
    for (int di = 0; di < 3; di++) {
        ref_op o;
        random_node(&o, XE_OP_RANDOM_NORMAL, &s, 11, dts[di]);
        cr_assert_eq(xe_node_set_float(o.node, "mean", 3.0, &st), XE_OK);
        cr_assert_eq(xe_node_set_float(o.node, "stddev", 2.0, &st), XE_OK);
        uint64_t state = 5;
        xe_tensor *r = run_random(&o, &state);
        cr_assert_eq(r->dtype, (xe_dtype)dts[di]);
        double mean, sd;
        moments(r, &mean, &sd);
        cr_assert(fabs(mean - 3) < 0.04 && fabs(sd - 2) < 0.04, "%s: mean %g sd %g",
                  xe_dtype_name(r->dtype), mean, sd);
        if (dts[di] == XE_F64)
            for (int64_t i = 0; i < 1000; i++)
                cr_assert_eq(((double *)r->data)[i], 3.0 + 2.0 * xe_rng_normal(11, 5, (uint64_t)i));
        xe_tensor_release(r);
        ref_op_free(&o);
    }
}

Test(elementwise, random_uniform_range_and_resolution)
{
    xe_shape s = SHAPE(100000);
    for (int di = 0; di < 3; di++) {
        xe_dtype dt = (xe_dtype[]){XE_F32, XE_F64, XE_F16}[di];
        ref_op o;
        random_node(&o, XE_OP_RANDOM_UNIFORM, &s, 3, dt);
        uint64_t state = 0;
        xe_tensor *u = run_random(&o, &state);
        double mean, sd;
        moments(u, &mean, &sd);
        cr_assert(fabs(mean - 0.5) < 0.01 && fabs(sd - sqrt(1.0 / 12)) < 0.01, "%s: mean %g sd %g",
                  xe_dtype_name(dt), mean, sd);
        bool fine = false;
        for (int64_t i = 0; i < 100000; i++) {
            double v = xe_load_f64(u->data, dt, i);
            cr_assert(v >= 0 && (v < 1 || dt == XE_F16), "%s uniform[%lld] = %.17g", xe_dtype_name(dt),
                      (long long)i, v);
            fine |= v * 16777216.0 != floor(v * 16777216.0);
            if (dt == XE_F32)
                cr_assert_eq((float)v, xe_rng_uniform_f32(3, 0, (uint64_t)i));
        }
        cr_assert_eq(fine, dt == XE_F64, "%s: 53-bit values only for f64", xe_dtype_name(dt));
        xe_tensor_release(u);
        ref_op_free(&o);
    }
    /* minval / maxval */
    ref_op o;
    random_node(&o, XE_OP_RANDOM_UNIFORM, &s, 4, XE_F64);
    cr_assert_eq(xe_node_set_float(o.node, "minval", -2.0, &st), XE_OK);
    cr_assert_eq(xe_node_set_float(o.node, "maxval", 6.0, &st), XE_OK);
    uint64_t state = 0;
    xe_tensor *u = run_random(&o, &state);
    double mean, sd;
    moments(u, &mean, &sd);
    cr_assert(fabs(mean - 2) < 0.05, "mean %g", mean);
    for (int64_t i = 0; i < 100000; i++)
        cr_assert(((double *)u->data)[i] >= -2 && ((double *)u->data)[i] < 6);
    xe_tensor_release(u);
    ref_op_free(&o);
}

Test(elementwise, random_empty_and_errors)
{
    ref_op o;
    xe_shape z = SHAPE(0, 3);
    random_node(&o, XE_OP_RANDOM_UNIFORM, &z, 1, -1);
    uint64_t state = 0;
    xe_tensor *r = run_random(&o, &state);
    cr_assert_eq(xe_tensor_numel(r), 0);
    cr_assert_eq(state, 1);
    xe_tensor_release(r);
    ref_op_free(&o);
    random_node(&o, XE_OP_RANDOM_NORMAL, &z, 1, XE_I32);
    cr_assert_neq(ref_op_infer(&o, &st), XE_OK);
    cr_assert(strstr(st.msg, "float"), "%s", st.msg);
    ref_op_free(&o);
    ref_op_new(&o, XE_OP_RANDOM_NORMAL, NULL, 0);
    cr_assert_neq(ref_op_infer(&o, &st), XE_OK, "random_normal without shape=");
    cr_assert(strstr(st.msg, "shape"), "%s", st.msg);
    ref_op_free(&o);
}

/* ---- unique ----------------------------------------------------------------------------------- */

static xe_tensor *run_unique(xe_tensor *x)
{
    ref_op o;
    ref_op_new(&o, XE_OP_UNIQUE, &x, 1);
    cr_assert_eq(ref_op_infer(&o, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(o.node->type.shape.rank, 1);
    cr_assert_eq(o.node->type.shape.dims[0], XE_DIM_UNKNOWN, "unique's length is data-dependent");
    xe_tensor *r = ref_op_run(&o, &x, 1, NULL, &st);
    cr_assert_not_null(r, "unique: %s", st.msg);
    cr_assert_eq(r->dtype, x->dtype);
    cr_assert_eq(r->shape.rank, 1);
    ref_op_free(&o);
    return r;
}

Test(elementwise, unique_sorted_distinct_every_dtype)
{
    ref_seed(9);
    for (int di = 0; di < 6; di++)
        for (int trial = 0; trial < 4; trial++) {
            xe_dtype dt = ref_all_dtypes[di];
            xe_shape s = SHAPE(trial == 0 ? 0 : ref_irand(1, 300));
            xe_tensor *x = ref_random_tensor(dt, &s, -20, 20);
            if (xe_dtype_is_float(dt)) /* few distinct values, so repeats are common */
                for (int64_t i = 0; i < s.dims[0]; i++)
                    xe_store_f64(x->data, dt, i, floor(xe_load_f64(x->data, dt, i)) / 4);
            xe_tensor *r = run_unique(x);
            int64_t m = r->shape.dims[0];
            for (int64_t i = 1; i < m; i++)
                cr_assert_lt(xe_load_f64(r->data, dt, i - 1), xe_load_f64(r->data, dt, i),
                             "%s: not strictly increasing at %lld", xe_dtype_name(dt), (long long)i);
            for (int64_t i = 0; i < s.dims[0]; i++) { /* every input value is in the output */
                double v = xe_load_f64(x->data, dt, i);
                bool found = false;
                for (int64_t k = 0; k < m && !found; k++)
                    found = xe_load_f64(r->data, dt, k) == v;
                cr_assert(found, "%s: %g missing from unique's output", xe_dtype_name(dt), v);
            }
            for (int64_t k = 0; k < m; k++) { /* and nothing else */
                bool found = false;
                for (int64_t i = 0; i < s.dims[0] && !found; i++)
                    found = xe_load_f64(x->data, dt, i) == xe_load_f64(r->data, dt, k);
                cr_assert(found, "%s: output %lld not in the input", xe_dtype_name(dt), (long long)k);
            }
            xe_tensor_release(r);
            xe_tensor_release(x);
        }
}

Test(elementwise, unique_nan_last_and_large_integers)
{
    const double v[] = {3, NAN, 1, -0.0, 0, NAN, 1, -INFINITY, INFINITY, NAN};
    const double want[] = {-INFINITY, 0, 1, 3, INFINITY, NAN};
    xe_shape s = SHAPE(LEN(v));
    for (int di = 0; di < 3; di++) {
        xe_dtype dt = (xe_dtype[]){XE_F32, XE_F64, XE_F16}[di];
        xe_tensor *x = ref_tensor_from(dt, &s, v);
        xe_tensor *r = run_unique(x);
        cr_assert_eq(r->shape.dims[0], LEN(want), "%s: %lld values", xe_dtype_name(dt),
                     (long long)r->shape.dims[0]);
        for (int i = 0; i < LEN(want); i++)
            expect_exact("unique", i, xe_load_f64(r->data, dt, i), want[i]);
        xe_tensor_release(r);
        xe_tensor_release(x);
    }
    /* i64 beyond 2^53 stays exact */
    int64_t big = (int64_t)1 << 53;
    const int64_t iv[] = {big + 1, big, big + 1, INT64_MIN, INT64_MAX, big};
    xe_shape s2 = SHAPE(LEN(iv));
    xe_tensor *x = ref_zeros(XE_I64, &s2);
    memcpy(x->data, iv, sizeof iv);
    xe_tensor *r = run_unique(x);
    const int64_t iw[] = {INT64_MIN, big, big + 1, INT64_MAX};
    cr_assert_eq(r->shape.dims[0], LEN(iw));
    for (int i = 0; i < LEN(iw); i++)
        cr_assert_eq(((int64_t *)r->data)[i], iw[i], "i64 unique[%d] = %lld", i,
                     (long long)((int64_t *)r->data)[i]);
    xe_tensor_release(r);
    xe_tensor_release(x);
}

/* As numpy.unique: an operand of any rank is flattened, a scalar gives one value. */
Test(elementwise, unique_flattens_any_rank)
{
    const double v[] = {4, 2, 4, 1, 2, 9};
    xe_shape s = {2, {2, 3}};
    xe_tensor *x = ref_tensor_from(XE_I32, &s, v);
    xe_tensor *r = run_unique(x);
    const int32_t want[] = {1, 2, 4, 9};
    cr_assert_eq(r->shape.dims[0], LEN(want));
    for (int i = 0; i < LEN(want); i++)
        cr_assert_eq(((int32_t *)r->data)[i], want[i]);
    xe_tensor_release(r);
    xe_tensor_release(x);
    xe_shape s0 = {0, {0}};
    x = ref_tensor_from(XE_F32, &s0, (const double[]){2.5});
    r = run_unique(x);
    cr_assert_eq(r->shape.dims[0], 1);
    cr_assert_eq(((float *)r->data)[0], 2.5f);
    xe_tensor_release(r);
    xe_tensor_release(x);
}

/* ---- shape functions ----------------------------------------------------------------------------- */

/* Infers op on the given input types; returns the code, *out the type. */
static xe_code infer(int op, const xe_type *in, int n_in, xe_type *out)
{
    ref_op o;
    ref_op_new_types(&o, op, in, n_in);
    xe_code c = ref_op_infer(&o, &st);
    if (out)
        *out = o.node->type;
    ref_op_free(&o);
    return c;
}

static void expect_infer_error(int op, const xe_type *in, int n_in, const char *needle)
{
    cr_assert_neq(infer(op, in, n_in, NULL), XE_OK, "%s: inference should fail", xe_op_name(op));
    cr_assert(strstr(st.msg, needle), "%s: message '%s' lacks '%s'", xe_op_name(op), st.msg, needle);
}

Test(elementwise, shape_function_errors)
{
    xe_type f32_3 = {XE_F32, SHAPE(3)}, i32_3 = {XE_I32, SHAPE(3)}, f32_4 = {XE_F32, SHAPE(4)};
    xe_type b_3 = {XE_BOOL, SHAPE(3)};
    expect_infer_error(XE_OP_ADD, (xe_type[]){f32_3, i32_3}, 2,
                       "operands have different dtypes f32 and i32");
    expect_infer_error(XE_OP_MUL, (xe_type[]){f32_3, f32_4}, 2, "do not broadcast");
    expect_infer_error(XE_OP_LESS, (xe_type[]){f32_3, i32_3}, 2, "different dtypes");
    expect_infer_error(XE_OP_EXP, (xe_type[]){i32_3}, 1, "exp needs a float operand, got i32");
    expect_infer_error(XE_OP_GELU, (xe_type[]){b_3}, 1, "needs a float operand, got bool");
    expect_infer_error(XE_OP_ADD, (xe_type[]){b_3, b_3}, 2, "add is not defined on bool");
    expect_infer_error(XE_OP_NEG, (xe_type[]){b_3}, 1, "not defined on bool");
    expect_infer_error(XE_OP_LOGICAL_AND, (xe_type[]){b_3, f32_3}, 2, "bool");
    expect_infer_error(XE_OP_LOGICAL_NOT, (xe_type[]){i32_3}, 1, "bool");
    expect_infer_error(XE_OP_SELECT, (xe_type[]){f32_3, f32_3, f32_3}, 3, "bool");
    expect_infer_error(XE_OP_SELECT, (xe_type[]){b_3, f32_3, i32_3}, 3, "different dtypes");
    expect_infer_error(XE_OP_SELECT, (xe_type[]){b_3, f32_3, f32_4}, 3, "do not broadcast");
    expect_infer_error(XE_OP_CAST, (xe_type[]){f32_3}, 1, "to=");
    expect_infer_error(XE_OP_ADD, (xe_type[]){f32_3}, 1, "2 inputs");
    /* the message names the node and the op */
    expect_infer_error(XE_OP_ADD, (xe_type[]){f32_3, i32_3}, 2, "node r (add)");
}

Test(elementwise, shape_functions_broadcast_and_keep_unknown_dims)
{
    xe_type out;
    xe_type a = {XE_F16, SHAPE(3, 1, 4)}, b = {XE_F16, SHAPE(5, 4)};
    cr_assert_eq(infer(XE_OP_POW, (xe_type[]){a, b}, 2, &out), XE_OK, "%s", st.msg);
    cr_assert_eq(out.dtype, XE_F16);
    xe_shape want = SHAPE(3, 5, 4);
    cr_assert(xe_shape_equal(&out.shape, &want));
    cr_assert_eq(infer(XE_OP_GREATER, (xe_type[]){a, b}, 2, &out), XE_OK, "%s", st.msg);
    cr_assert_eq(out.dtype, XE_BOOL);
    xe_type u = {XE_F32, SHAPE(XE_DIM_UNKNOWN, 3)}, one = {XE_F32, SHAPE(1, 3)};
    cr_assert_eq(infer(XE_OP_SUB, (xe_type[]){u, one}, 2, &out), XE_OK, "%s", st.msg);
    cr_assert_eq(out.shape.rank, 2);
    cr_assert_eq(out.shape.dims[0], XE_DIM_UNKNOWN);
    cr_assert_eq(out.shape.dims[1], 3);
    cr_assert_eq(infer(XE_OP_SQRT, (xe_type[]){u}, 1, &out), XE_OK, "%s", st.msg);
    cr_assert_eq(out.shape.dims[0], XE_DIM_UNKNOWN);
    xe_type c = {XE_BOOL, SHAPE(2, 1, 1)}, s = {XE_I64, SCALAR}, v = {XE_I64, SHAPE(6)};
    cr_assert_eq(infer(XE_OP_SELECT, (xe_type[]){c, s, v}, 3, &out), XE_OK, "%s", st.msg);
    cr_assert_eq(out.dtype, XE_I64);
    want = SHAPE(2, 1, 6);
    cr_assert(xe_shape_equal(&out.shape, &want));
    xe_type b1 = {XE_BOOL, SHAPE(3)};
    cr_assert_eq(infer(XE_OP_MAXIMUM, (xe_type[]){b1, b1}, 2, &out), XE_OK, "bool maximum: %s", st.msg);
    cr_assert_eq(infer(XE_OP_EQUAL, (xe_type[]){b1, b1}, 2, &out), XE_OK, "bool equal: %s", st.msg);
}

/* ---- scalar.h: the arithmetic shared with the GPU kernels and generated code ---------------- */

Test(elementwise, scalar_f16_conversions_match_dtype_c)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float a = xe_h2f((uint16_t)h), b = xe_f16_to_f32((xe_f16)h);
        cr_assert((isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0,
                  "xe_h2f(0x%04x) = %a, dtype.c says %a", h, a, b);
        if (!isnan(a))
            cr_assert_eq(xe_f2h(a), (uint16_t)h, "round trip of 0x%04x", h);
    }
    ref_seed(10);
    for (int k = 0; k < 1 << 20; k++) {
        uint32_t bits = (uint32_t)ref_irand(0, 0xffffffffll);
        if (k & 1) /* half of the draws near f16's range, where rounding matters */
            bits = (bits & 0x80001fffu) | ((uint32_t)ref_irand(0x30000000, 0x47ffffff) & 0x7fffe000u);
        float f;
        memcpy(&f, &bits, sizeof f);
        uint16_t a = xe_f2h(f), b = xe_f32_to_f16(f);
        if (isnan(f))
            cr_assert((a & 0x7c00) == 0x7c00 && (a & 0x3ff) && (b & 0x7c00) == 0x7c00 && (b & 0x3ff),
                      "NaN %08x must stay NaN", bits);
        else
            cr_assert_eq(a, b, "xe_f2h(%a) = 0x%04x, dtype.c says 0x%04x", f, a, b);
    }
}

Test(elementwise, scalar_functions)
{
    cr_assert_eq(xe_floordiv_i64(-7, 2), -4);
    cr_assert_eq(xe_floordiv_i64(7, -2), -4);
    cr_assert_eq(xe_floordiv_i64(-8, 2), -4);
    cr_assert_eq(xe_floordiv_i64(5, 0), 0);
    cr_assert_eq(xe_floordiv_i64(INT64_MIN, -1), INT64_MIN);
    cr_assert_eq(xe_floordiv_i32(INT32_MIN, -1), INT32_MIN);
    cr_assert_eq(xe_pow_i64(-1, -7), -1);
    cr_assert_eq(xe_pow_i64(-1, -8), 1);
    cr_assert_eq(xe_pow_i64(3, -1), 0);
    cr_assert_eq(xe_pow_i64(3, 4), 81);
    cr_assert_eq(xe_pow_i32(2, 32), 0);
    cr_assert(isnan(xe_max_f32(NAN, 1)) && isnan(xe_max_f32(1, NAN)));
    cr_assert(isnan(xe_min_f64(NAN, 1)) && isnan(xe_min_f64(1, NAN)));
    cr_assert_eq(xe_max_f64(-1, 2), 2);
    cr_assert_eq(xe_min_f32(-1, 2), -1);
    cr_assert(isnan(xe_relu_f32(NAN)) && isnan(xe_relu_f64(NAN)));
    cr_assert_eq(xe_relu_f32(-3), 0);
    cr_assert_eq(xe_relu_f64(2.5), 2.5);
    cr_assert_eq(xe_sigmoid_f64(0), 0.5);
    cr_assert_eq(xe_rsqrt_f32(4), 0.5f);
    cr_assert_eq(xe_f64_to_i32(NAN), 0);
    cr_assert_eq(xe_f64_to_i32(-2.9), -2);
    cr_assert_eq(xe_f64_to_i32(3e9), INT32_MAX);
    cr_assert_eq(xe_f64_to_i32(-INFINITY), INT32_MIN);
    cr_assert_eq(xe_f64_to_i64(1e19), INT64_MAX);
    cr_assert_eq(xe_f64_to_i64(-1e19), INT64_MIN);
    cr_assert_eq(xe_f64_to_i64(9007199254740993.0), 9007199254740992LL);
    cr_assert(fabs(xe_gelu_erf_f64(1) - 0.8413447460685429) < 1e-15);
    cr_assert(fabs(xe_gelu_tanh_f64(1) - 0.8411919906082768) < 1e-15);
    cr_assert(fabsf(xe_gelu_erf_f32(1) - 0.84134475f) < 1e-6f);
    cr_assert(fabsf(xe_gelu_tanh_f32(1) - 0.84119199f) < 1e-6f);
}
