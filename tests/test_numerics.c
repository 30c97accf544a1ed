/*
 * The numerics matrix: fused and op-by-op runs agree bit for bit on the
 * values where IEEE arithmetic is easiest to get subtly wrong. Every
 * elementwise op of the op table (walked from ops.def, so a new op is in
 * the matrix the day it is added) on every dtype it takes, and every
 * reduction kind (reduce_*, argmax) along rows, columns and two trailing
 * axes, over NaN of both signs, both infinities, both zeros, subnormals,
 * the extremes, and for integers INT_MIN, INT_MAX, 0 and -1 (x/0 and
 * INT_MIN/-1 must neither trap nor differ). Binary ops see every pair.
 *
 * The reference is the executor's per-op kernel; under test are the C
 * program the plugin would compile (no --fast_math: no flush to zero) and
 * the generated CUDA in the host emulation (support/cuda_emu.h). Both sides
 * use the same scalar.h, so the matrix holds whatever those functions
 * compute: it compares the two paths, not fixed libm values. Bits must be
 * equal, signed zeros and subnormals included; a NaN must meet a NaN
 * (its sign and payload are not specified by IEEE and are not compared).
 */
#include <criterion/criterion.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/cuda_emu.h"
#include "support/optable.h"
#include "support/ref.h"
#include "support/ref_dev.h"
#include "xg_impl.h"
#include "xlac/xlac.h"

#define MAX_VALS 24
#define GROUP 12 /* ops per program (XG_MAX_OUTS is 16) */

static xe_status st;
static bool fast_math; /* the C program is built with --fast_math (and compared under fast_ok) */

/* The special values of dtype dt; returns how many. */
static int special_values(xe_dtype dt, double *v)
{
    double sub = dt == XE_F16 ? 0x1p-24 : dt == XE_F32 ? 0x1p-149 : 0x1p-1074;
    double sub2 = dt == XE_F16 ? 0x1p-20 : dt == XE_F32 ? 0x1p-130 : 0x1p-1030;
    double big = dt == XE_F16 ? 65504 : dt == XE_F32 ? FLT_MAX : DBL_MAX;
    double tiny = dt == XE_F16 ? 0x1p-14 : dt == XE_F32 ? FLT_MIN : DBL_MIN;
    if (xe_dtype_is_float(dt)) {
        const double f[] = {NAN,  -NAN, INFINITY, -INFINITY, 0.0,   -0.0, sub,
                            -sub, sub2, -sub2,    tiny,      -tiny, 1,    -1,
                            0.5,  -2.5, 3,        100,       -100,  big,  -big};
        memcpy(v, f, sizeof f);
        return (int)(sizeof f / sizeof f[0]);
    }
    if (dt == XE_BOOL) {
        v[0] = 0, v[1] = 1;
        return 2;
    }
    double mn = dt == XE_I32 ? INT32_MIN : (double)INT64_MIN;
    double mx = dt == XE_I32 ? INT32_MAX : 0x1p62; /* i64 max is not a double */
    const double i[] = {0, 1, -1, 2, -7, 7, 31, mn, mx, mn + 1};
    memcpy(v, i, sizeof i);
    return (int)(sizeof i / sizeof i[0]);
}

/* Whether op is an elementwise op of the table with arity `arity`. */
static bool is_elementwise(int op, int arity)
{
    xe_op_class c = xe_op_get(op)->cls;
    if (arity == 1)
        return c == XE_CLASS_UNARY;
    return c == XE_CLASS_BINARY || c == XE_CLASS_COMPARE || c == XE_CLASS_LOGICAL;
}

/* The graph's input types. */
static int input_types(const xe_graph *g, xe_type *types)
{
    for (int k = 0; k < g->n_inputs; k++)
        types[k] = g->nodes[g->inputs[k]]->type;
    return g->n_inputs;
}

/* Runs text as one compiled C program (the CPU target, default options: no --fast_math). */
static void run_c(const char *text, xe_tensor **in, xe_tensor **got)
{
    xe_graph *g = xe_parse_string(text, "numerics.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_type types[8];
    int n_in = input_types(g, types);
    xg_options o;
    xg_options_default(&o);
    o.fast_math = fast_math;
    xg_artifact *a = NULL;
    xg_program *p = NULL;
    cr_assert_eq(xg_build(g, types, false, XG_TARGET_C, 0, &o, &a, &st), XE_OK, "%s\n%s", st.msg,
                 text);
    cr_assert_eq(xg_program_load(a, g, types, &o, &p, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(xg_program_run(p, in, n_in, got, g->n_outputs, &st), XE_OK, "%s\n%s", st.msg,
                 text);
    xg_program_destroy(p);
    xg_artifact_destroy(a);
    xe_graph_destroy(g);
}

/* Runs text's CUDA program in the host emulation (7 resident blocks). */
static void run_cuda_emu(const char *text, xe_tensor **in, xe_tensor **got)
{
    xe_graph *g = xe_parse_string(text, "numerics.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_type types[8];
    input_types(g, types);
    cuda_emu *e = cuda_emu_build(g, types, false, &st);
    cr_assert_not_null(e, "%s\n%s", st.msg, text);
    cr_assert_eq(cuda_emu_run(e, in, got, 7, &st), XE_OK, "%s\n%s", st.msg, text);
    cuda_emu_destroy(e);
    xe_graph_destroy(g);
}

/* Element i of got and want: the same bits, or both NaN. */
static bool same_element(const xe_tensor *got, const xe_tensor *want, int64_t i)
{
    size_t sz = xe_dtype_size(want->dtype);
    if (!memcmp((const char *)got->data + i * sz, (const char *)want->data + i * sz, sz))
        return true;
    return xe_dtype_is_float(want->dtype) && isnan(xe_load_f64(got->data, got->dtype, i)) &&
           isnan(xe_load_f64(want->data, want->dtype, i));
}

/*
 * The CUDA emulation's rule for elementwise ops: scalar.h gives some ops
 * (exp, tanh, sigmoid, gelu, ...) their own CUDA formula, which the GPU's
 * per-op kernels share, so against the CPU's per-op run only the IEEE
 * classes must be equal: NaN with NaN, the same infinity, the same signed
 * zero, a subnormal never flushed (beyond the dtype's tolerance); finite
 * values within the tolerance of ref_tolerance.
 */
static bool same_class(const xe_tensor *got, const xe_tensor *want, int64_t i, bool any_zero)
{
    if (!xe_dtype_is_float(want->dtype))
        return false;
    double g = xe_load_f64(got->data, got->dtype, i), w = xe_load_f64(want->data, want->dtype, i);
    if (isnan(g) || isnan(w) || isinf(g) || isinf(w))
        return false;
    if (g == 0 && w == 0)
        return any_zero || signbit(g) == signbit(w);
    double normal = want->dtype == XE_F16 ? 0x1p-14 : want->dtype == XE_F32 ? FLT_MIN : DBL_MIN;
    return fabs(g - w) <= ref_tolerance(want->dtype) * fmax(fabs(w), normal);
}

/* How two results must agree. */
typedef enum rule {
    EXACT,      /* bit for bit (NaN with any NaN) */
    CLASS,      /* same_class: the IEEE classes, finite values within the tolerance */
    CLASS_FAST, /* --fast_math's promise: CLASS, except that a zero's sign may be lost */
} rule;

/* Counts (and logs the first few) elements that differ; `path` names the path under test. */
static int compare(const char *path, const char *stmt, const xe_tensor *got, const xe_tensor *want,
                   const xe_tensor *x, const xe_tensor *y, rule r)
{
    cr_assert_eq(got->dtype, want->dtype);
    cr_assert_eq(xe_tensor_numel(got), xe_tensor_numel(want));
    int bad = 0;
    for (int64_t i = 0; i < xe_tensor_numel(want); i++) {
        if (same_element(got, want, i) || (r != EXACT && same_class(got, want, i, r == CLASS_FAST)))
            continue;
        if (bad++ < 4)
            cr_log_error("%s: %.*s at [%lld] (x=%.17g%s%.17g): got %.17g, per op %.17g", path,
                         (int)strcspn(stmt, "\n"), stmt, (long long)i,
                         x && i < xe_tensor_numel(x) ? xe_load_f64(x->data, x->dtype, i) : NAN,
                         y ? ", y=" : "", y ? xe_load_f64(y->data, y->dtype, i) : 0.0,
                         xe_load_f64(got->data, got->dtype, i),
                         xe_load_f64(want->data, want->dtype, i));
    }
    return bad;
}

/* A program under construction: a header of inputs, statements oK = ..., then one output each. */
typedef struct program {
    char text[16384];
    char stmts[16][200];
    int n_outs;
    bool reductions; /* reductions: bit for bit in the CUDA emulation too (see same_class) */
} program;

/* Runs p on its inputs per op, compiled (C) and emulated (CUDA); returns how many elements differ.
 */
static int check_program(const program *p, xe_tensor **in, bool binary)
{
    xe_tensor *want[16] = {0}, *got_c[16] = {0}, *got_cu[16] = {0};
    ref_run_graph(p->text, in, want);
    run_c(p->text, in, got_c);
    if (!fast_math) /* NVRTC's --use_fast_math flushes subnormals by design: the emulation does not
                       model it */
        run_cuda_emu(p->text, in, got_cu);
    int bad = 0;
    for (int k = 0; k < p->n_outs; k++) {
        const xe_tensor *x = binary ? in[0] : NULL, *y = binary ? in[1] : NULL;
        bad += compare(fast_math ? "C --fast_math" : "C", p->stmts[k], got_c[k], want[k], x, y,
                       fast_math ? CLASS_FAST : EXACT);
        if (!fast_math)
            bad += compare("CUDA emulation", p->stmts[k], got_cu[k], want[k], x, y,
                           p->reductions ? EXACT : CLASS);
        xe_tensor_release(want[k]);
        xe_tensor_release(got_c[k]);
        xe_tensor_release(got_cu[k]);
    }
    return bad;
}

/* Starts p with a header of input declarations. */
static void program_start(program *p, const char *inputs)
{
    p->n_outs = 0;
    snprintf(p->text, sizeof p->text, "xlac.graph v1\n%s", inputs);
}

/* Adds statement "oK = EXPR" as an output of p. */
static void program_add(program *p, const char *expr)
{
    cr_assert_lt(p->n_outs, 16);
    snprintf(p->stmts[p->n_outs], sizeof p->stmts[0], "o%d = %s\n", p->n_outs, expr);
    size_t len = strlen(p->text), add = strlen(p->stmts[p->n_outs]);
    cr_assert_lt(len + add, sizeof p->text);
    memcpy(p->text + len, p->stmts[p->n_outs], add + 1);
    p->n_outs++;
}

/* Appends the outputs, runs p and empties it; returns how many elements differ. */
static int program_flush(program *p, xe_tensor **in, bool binary, const char *inputs)
{
    if (!p->n_outs)
        return 0;
    for (int k = 0; k < p->n_outs; k++) {
        size_t len = strlen(p->text);
        snprintf(p->text + len, sizeof p->text - len, "output o%d\n", k);
    }
    int bad = check_program(p, in, binary);
    program_start(p, inputs);
    return bad;
}

/* Inputs for an elementwise program: x = the values (unary), or x, y = every pair (binary). */
static int64_t elementwise_inputs(xe_dtype dt, bool binary, xe_tensor **in)
{
    double v[MAX_VALS], xs[MAX_VALS * MAX_VALS], ys[MAX_VALS * MAX_VALS];
    int nv = special_values(dt, v);
    int64_t n = binary ? nv * nv : nv;
    for (int i = 0; i < n; i++) {
        xs[i] = binary ? v[i / nv] : v[i];
        ys[i] = binary ? v[i % nv] : v[i];
    }
    xe_shape s = ref_shape(1, (int64_t[]){n});
    in[0] = ref_tensor_from(dt, &s, xs);
    in[1] = ref_tensor_from(dt, &s, ys);
    return n;
}

/* The expression "OP(x[, y][, ATTR=true])" when op takes dtype dt (a one-op graph parses), else
 * false. */
static bool op_expr(int op, int arity, const char *attr, xe_dtype dt, char *buf, size_t cap)
{
    const char *d = xe_dtype_name(dt);
    snprintf(buf, cap, "%s(x%s%s%s%s)", xe_op_name(op), arity == 2 ? ", y" : "", attr ? ", " : "",
             attr ? attr : "", attr ? "=true" : "");
    char text[512];
    snprintf(text, sizeof text, "xlac.graph v1\ninput x: %s[2]\ninput y: %s[2]\no = %s\noutput o\n",
             d, d, buf);
    xe_graph *g = xe_parse_string(text, "probe.xg", &st);
    if (!g)
        return false;
    xe_graph_destroy(g);
    return true;
}

static const xe_dtype all_types[] = {XE_F32, XE_F64, XE_F16, XE_I32, XE_I64, XE_BOOL};

/* Every op of the table with `arity` operands (and its variant) that takes dtype dt; returns how
 * many. */
static int check_elementwise(xe_dtype dt, int arity, int *bad)
{
    bool binary = arity == 2;
    xe_tensor *in[2];
    int64_t n = elementwise_inputs(dt, binary, in);
    char inputs[128], expr[160];
    const char *d = xe_dtype_name(dt);
    snprintf(inputs, sizeof inputs,
             binary ? "input x: %s[%lld]\ninput y: %s[%lld]\n" : "input x: %s[%lld]\n", d,
             (long long)n, d, (long long)n);
    program p = {.reductions = false};
    program_start(&p, inputs);
    int tested = 0;
    for (int op = 0; op < xe_op_count(); op++) {
        if (!is_elementwise(op, arity))
            continue;
        for (int variant = 0; variant < (optable_variant_attr(op) ? 2 : 1); variant++) {
            if (!op_expr(op, arity, variant ? optable_variant_attr(op) : NULL, dt, expr,
                         sizeof expr))
                continue;
            program_add(&p, expr);
            tested++;
            if (p.n_outs == GROUP)
                *bad += program_flush(&p, in, binary, inputs);
        }
    }
    for (int to = 0; arity == 1 && to < 6;
         to++) { /* cast, elementwise too: NaN and inf to ints saturate */
        snprintf(expr, sizeof expr, "cast(x, to=%s)", xe_dtype_name(all_types[to]));
        if (p.n_outs == GROUP)
            *bad += program_flush(&p, in, binary, inputs);
        program_add(&p, expr), tested++;
    }
    *bad += program_flush(&p, in, binary, inputs);
    xe_tensor_release(in[0]);
    xe_tensor_release(in[1]);
    return tested;
}

/* Every op of that many operands on every dtype: more than 40 (op, dtype) pairs, no element differs. */
static void check_every_op(int operands, const char *kind)
{
    int bad = 0, tested = 0;
    for (size_t d = 0; d < sizeof all_types / sizeof all_types[0]; d++)
        tested += check_elementwise(all_types[d], operands, &bad);
    cr_log_info("%s: %d (op, dtype) pairs", kind, tested);
    cr_assert_gt(tested, 40, "the op table's %s ops were found", kind);
    cr_assert_eq(bad, 0, "%d elements differ between fused and per-op runs (see the log)", bad);
}

Test(numerics, every_unary_op_on_special_values_fused_equals_per_op, .timeout = 900)
{
    check_every_op(1, "unary");
}

Test(numerics, every_binary_op_on_every_pair_of_special_values_fused_equals_per_op, .timeout = 900)
{
    check_every_op(2, "binary");
}

/* ---- reductions ---------------------------------------------------------------- */

#define COLS 8
#define MAX_ROWS 24

/*
 * Rows of special values for dtype dt (each row one pattern), into
 * m[r*COLS + c]; returns the rows. Every row's sum, product, max and min
 * is the same in any order of combining (exact, or overflowing whatever
 * the order), so a tree on the GPU must give the per-op bits too.
 */
static int reduction_rows(xe_dtype dt, double *m)
{
    double v[MAX_VALS];
    special_values(dt, v);
    /* indices into special_values: floats 0 NaN 1 -NaN 2 inf 3 -inf 4 +0 5 -0 6 sub 7 -sub 8 sub2 9
       -sub2 10 tiny 11 -tiny 12 1 13 -1 14 0.5 15 -2.5 16 3 17 100 18 -100 19 big 20 -big; integers
       0 0 1 1 2 -1 3 2 4 -7 5 7 6 31 7 min 8 max 9 min+1 */
    static const int frows[][COLS] = {
        {0, 12, 13, 14, 15, 16, 17, 18}, {12, 13, 14, 15, 16, 17, 18, 0},
        {12, 2, 0, 3, 12, 12, 12, 12},   {2, 3, 12, 12, 12, 12, 12, 12},
        {5, 5, 5, 5, 5, 5, 5, 5},        {4, 5, 4, 5, 4, 5, 4, 5},
        {5, 4, 4, 4, 4, 4, 4, 4},        {6, 6, 6, 6, 6, 6, 6, 6},
        {7, 6, 8, 9, 6, 7, 8, 9},        {2, 2, 2, 2, 2, 2, 2, 2},
        {3, 3, 3, 3, 3, 3, 3, 3},        {19, 19, 19, 19, 19, 19, 19, 19},
        {4, 2, 12, 12, 12, 12, 12, 12},  {1, 0, 1, 0, 12, 12, 12, 12},
        {13, 15, 18, 5, 13, 13, 13, 12}, {10, 10, 11, 14, 14, 14, 14, 14},
        {8, 8, 8, 8, 8, 8, 8, 8},        {20, 20, 20, 20, 20, 20, 20, 20},
        {5, 7, 5, 7, 5, 7, 5, 7},        {16, 16, 16, 16, 16, 16, 16, 16},
    };
    static const int irows[][COLS] = {
        {8, 8, 8, 8, 8, 8, 8, 8}, {7, 2, 1, 1, 1, 1, 1, 1}, {0, 0, 0, 0, 0, 0, 0, 0},
        {7, 7, 7, 7, 7, 7, 7, 7}, {9, 8, 2, 3, 4, 5, 6, 1}, {6, 6, 6, 6, 6, 6, 6, 6},
        {2, 2, 2, 2, 2, 2, 2, 2}, {4, 5, 3, 0, 1, 2, 2, 7},
    };
    bool fl = xe_dtype_is_float(dt);
    int rows = fl ? (int)(sizeof frows / sizeof frows[0]) : (int)(sizeof irows / sizeof irows[0]);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < COLS; c++)
            m[r * COLS + c] = v[fl ? frows[r][c] : irows[r][c]];
    return rows;
}

/* Whether "o = EXPR" parses over the inputs declared in `inputs`. */
static bool parses(const char *inputs, const char *expr)
{
    char text[1024];
    snprintf(text, sizeof text, "xlac.graph v1\n%so = %s\noutput o\n", inputs, expr);
    xe_graph *g = xe_parse_string(text, "probe.xg", &st);
    if (g)
        xe_graph_destroy(g);
    return g != NULL;
}

static const char *const reductions[] = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
                                         "reduce_prod"};

/* Every reduction kind along rows (x), columns (xt) and two trailing axes (z), on dtype dt. */
static int check_reductions(xe_dtype dt, int *bad)
{
    double m[MAX_ROWS * COLS], mt[MAX_ROWS * COLS];
    int rows = reduction_rows(dt, m);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < COLS; c++)
            mt[c * rows + r] = m[r * COLS + c];
    xe_shape sx = ref_shape(2, (int64_t[]){rows, COLS}),
             st_ = ref_shape(2, (int64_t[]){COLS, rows});
    xe_shape sz = ref_shape(3, (int64_t[]){rows, 2, COLS / 2});
    xe_tensor *in[3] = {ref_tensor_from(dt, &sx, m), ref_tensor_from(dt, &st_, mt),
                        ref_tensor_from(dt, &sz, m)};
    char inputs[160], expr[128];
    const char *d = xe_dtype_name(dt);
    snprintf(inputs, sizeof inputs,
             "input x: %s[%d,%d]\ninput xt: %s[%d,%d]\ninput z: %s[%d,2,%d]\n", d, rows, COLS, d,
             COLS, rows, d, rows, COLS / 2);
    const char *forms[] = {"%s(x, axes=[1])", "%s(xt, axes=[0])",
                           "%s(z, axes=[1,2], keepdims=true)"};
    program p = {.reductions = true};
    program_start(&p, inputs);
    int tested = 0;
    for (int f = 0; f < 3; f++) {
        for (size_t k = 0; k < sizeof reductions / sizeof reductions[0]; k++) {
            snprintf(expr, sizeof expr, forms[f], reductions[k]);
            if (parses(inputs, expr))
                program_add(&p, expr), tested++;
        }
        snprintf(expr, sizeof expr,
                 f == 0   ? "argmax(x, axis=1)"
                 : f == 1 ? "argmax(xt, axis=0)"
                          : "argmax(z, axis=2)");
        if (parses(inputs, expr))
            program_add(&p, expr), tested++;
        if (p.n_outs > 10)
            *bad += program_flush(&p, in, false, inputs);
    }
    *bad += program_flush(&p, in, false, inputs);
    for (int k = 0; k < 3; k++)
        xe_tensor_release(in[k]);
    return tested;
}

Test(numerics, every_reduction_kind_on_special_values_fused_equals_per_op, .timeout = 900)
{
    int bad = 0, tested = 0;
    for (size_t d = 0; d < sizeof all_types / sizeof all_types[0]; d++)
        tested += check_reductions(all_types[d], &bad);
    cr_log_info("reductions: %d (kind, axes, dtype) triples", tested);
    cr_assert_gt(tested, 60);
    cr_assert_eq(bad, 0, "%d elements differ between fused and per-op runs (see the log)", bad);
}

/*
 * --fast_math on the CPU keeps the IEEE classes (docs/plugin.md): NaN stays
 * NaN, infinities stay, comparisons with NaN stay false, casts of NaN and
 * inf saturate as per op, subnormals are not flushed; only a zero's sign
 * may be lost and finite results may differ within the tolerance.
 */
Test(numerics, fast_math_keeps_nan_inf_and_subnormals_for_every_op, .timeout = 900)
{
    fast_math = true;
    int bad = 0, tested = 0;
    for (size_t d = 0; d < sizeof all_types / sizeof all_types[0]; d++)
        for (int arity = 1; arity <= 2; arity++)
            tested += check_elementwise(all_types[d], arity, &bad);
    cr_log_info("--fast_math: %d (op, dtype) pairs", tested);
    cr_assert_eq(bad, 0, "%d elements break --fast_math's promise (see the log)", bad);
}
