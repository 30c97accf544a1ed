/*
 * Every op's CPU kernel against a double-precision reference computed
 * here, on random shapes with broadcasting, size-1 and zero-size dims.
 * Outputs are written into buffers with guard bytes on both sides, which
 * must come back untouched. Tolerances: f64 1e-12, f32 1e-5, f16 1e-2
 * (relative, with an absolute floor scaled by the operands), ints and
 * bools exact; NaN must match NaN and nothing else.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scalar.h"
#include "support/optable.h"
#include "xlac/op.h"
#include "xlac/xlac.h"

#define GUARD 64
static xe_status st;
static uint64_t rng = 12345;

static double urand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static const xe_dtype all_dtypes[] = {XE_F32, XE_F64, XE_F16, XE_I32, XE_I64, XE_BOOL};

static xe_tensor *random_tensor(xe_dtype dt, const xe_shape *s, double lo, double hi)
{
    xe_tensor *t = xe_tensor_new(dt, s, XE_DEV_CPU, &st);
    cr_assert_not_null(t, "%s", st.msg);
    for (int64_t i = 0; i < xe_tensor_numel(t); i++) {
        double v = lo + (hi - lo) * urand();
        xe_store_f64(t->data, dt, i, xe_dtype_is_float(dt) ? v : dt == XE_BOOL ? (double)(v > (lo + hi) / 2) : floor(v));
    }
    return t;
}

/* Builds "input a: T, input b: T, r = OP(a, b, ATTRS)" and runs r's CPU kernel into a guarded buffer. */
static xe_tensor *run_kernel(const char *op, const char *attrs, xe_tensor **in, int n_in, xe_type *out_type)
{
    char text[2048], ty[128];
    int u = snprintf(text, sizeof text, "xlac.graph v1\n");
    for (int k = 0; k < n_in; k++)
        u += snprintf(text + u, sizeof text - (size_t)u, "input i%d: %s\n", k,
                      xe_type_str(&(xe_type){in[k]->dtype, in[k]->shape}, ty, sizeof ty));
    u += snprintf(text + u, sizeof text - (size_t)u, "r = %s(", op);
    for (int k = 0; k < n_in; k++)
        u += snprintf(text + u, sizeof text - (size_t)u, "%si%d", k ? ", " : "", k);
    snprintf(text + u, sizeof text - (size_t)u, "%s%s)\noutput r\n", n_in && attrs[0] ? ", " : "", attrs);
    xe_graph *g = xe_parse_string(text, "op.xg", &st);
    if (!g)
        return NULL;
    xe_node *n = g->nodes[g->n_nodes - 1];
    *out_type = n->type;
    size_t bytes = (size_t)xe_shape_numel(&n->type.shape) * xe_dtype_size(n->type.dtype);
    unsigned char *raw = malloc(bytes + 2 * GUARD);
    memset(raw, 0xA5, bytes + 2 * GUARD);
    xe_tensor *out = xe_tensor_wrap(n->type.dtype, &n->type.shape, XE_DEV_CPU, raw + GUARD, &st);
    uint64_t state = 0;
    xe_kernel_args a = {.graph = g, .node = n, .n_in = n_in, .in = in, .out = out, .state = &state};
    xe_code c = xe_op_kernel(xe_op_get(n->op), XE_DEV_CPU)(&a, &st);
    cr_assert_eq(c, XE_OK, "%s: %s", op, st.msg);
    for (int k = 0; k < GUARD; k++) {
        cr_assert_eq(raw[k], 0xA5, "%s wrote before its output", op);
        cr_assert_eq(raw[GUARD + bytes + k], 0xA5, "%s wrote past its output", op);
    }
    xe_tensor *copy = xe_tensor_to_device(out, XE_DEV_CPU, &st);
    xe_tensor_release(out);
    free(raw);
    xe_graph_destroy(g);
    return copy;
}

static void check_value(const char *what, xe_dtype dt, double got, double want, double scale, int64_t i)
{
    if (isnan(want) || isnan(got)) {
        cr_assert(isnan(want) && isnan(got), "%s[%lld] (%s): got %.17g want %.17g", what, (long long)i,
                  xe_dtype_name(dt), got, want);
        return;
    }
    if (isinf(want) && dt != XE_F16) {
        cr_assert_eq(got, want, "%s[%lld]: got %g want %g", what, (long long)i, got, want);
        return;
    }
    double tol = dt == XE_F64 ? 1e-12 : dt == XE_F32 ? 1e-5 : dt == XE_F16 ? 1e-2 : 0;
    if (dt == XE_F16 && fabs(want) > 65504)
        return; /* overflows f16: inf is the right answer there */
    cr_assert(fabs(got - want) <= tol * fmax(fabs(want), scale), "%s[%lld] (%s): got %.17g want %.17g", what,
              (long long)i, xe_dtype_name(dt), got, want);
}

/* Rounds a reference the way the dtype stores it. */
static double as_dtype(xe_dtype dt, double v)
{
    switch (dt) {
    case XE_F32: return (float)v;
    case XE_F16: return xe_f16_to_f32(xe_f32_to_f16((float)v));
    case XE_I32: return (double)(int32_t)(int64_t)v;
    case XE_BOOL: return v != 0;
    default: return v;
    }
}

/* Element i of operand t broadcast to out. */
static double bload(const xe_tensor *t, const xe_shape *out, int64_t i)
{
    int64_t off = 0, mul = 1;
    for (int d = out->rank - 1; d >= 0; d--) {
        int64_t idx = i % out->dims[d];
        i /= out->dims[d];
        int td = d - (out->rank - t->shape.rank);
        if (td >= 0) {
            if (t->shape.dims[td] != 1)
                off += idx * mul;
            mul *= t->shape.dims[td];
        }
    }
    return xe_load_f64(t->data, t->dtype, off);
}

static double ref_binary(const char *op, xe_dtype dt, double a, double b)
{
    bool in = xe_dtype_is_int(dt);
    if (!strcmp(op, "add")) return a + b;
    if (!strcmp(op, "sub")) return a - b;
    if (!strcmp(op, "mul")) return a * b;
    if (!strcmp(op, "div")) return in ? (b == 0 ? 0 : floor(a / b)) : a / b;
    if (!strcmp(op, "pow")) return in ? (double)xe_pow_i64((int64_t)a, (int64_t)b) : pow(a, b);
    if (!strcmp(op, "maximum")) return isnan(a) || isnan(b) ? NAN : fmax(a, b);
    if (!strcmp(op, "minimum")) return isnan(a) || isnan(b) ? NAN : fmin(a, b);
    if (!strcmp(op, "equal")) return a == b;
    if (!strcmp(op, "not_equal")) return a != b;
    if (!strcmp(op, "less")) return a < b;
    if (!strcmp(op, "less_equal")) return a <= b;
    if (!strcmp(op, "greater")) return a > b;
    if (!strcmp(op, "greater_equal")) return a >= b;
    if (!strcmp(op, "logical_and")) return a && b;
    if (!strcmp(op, "logical_or")) return a || b;
    return NAN; /* no reference written here: test_op_table checks the op */
}

static xe_shape random_shape(int *rank_out)
{
    xe_shape s = {.rank = (int)(urand() * 4)};
    for (int d = 0; d < s.rank; d++)
        s.dims[d] = urand() < 0.1 ? 0 : urand() < 0.3 ? 1 : 1 + (int64_t)(urand() * 6);
    if (rank_out)
        *rank_out = s.rank;
    return s;
}

/* A shape that broadcasts with s: some dims 1, maybe fewer leading dims. */
static xe_shape broadcast_partner(const xe_shape *s)
{
    xe_shape p = {.rank = s->rank - (s->rank && urand() < 0.3)};
    for (int d = 0; d < p.rank; d++)
        p.dims[d] = urand() < 0.3 ? 1 : s->dims[d + s->rank - p.rank];
    return p;
}

Test(ops, binary_and_compare_every_dtype_with_broadcasting)
{
    for (int op = 0; op < XE_OP_COUNT; op++) /* the binary ops and comparisons of the table */
        for (size_t di = 0; di < 6; di++) {
            xe_op_class cls = xe_op_get(op)->cls;
            const char *name = xe_op_name(op);
            if ((cls != XE_CLASS_BINARY && cls != XE_CLASS_COMPARE) || isnan(ref_binary(name, XE_F64, 1, 2)))
                continue;
            xe_dtype dt = all_dtypes[di];
            bool arith = cls == XE_CLASS_BINARY;
            if (dt == XE_BOOL && arith && op != XE_OP_MAXIMUM && op != XE_OP_MINIMUM)
                continue;
            for (int trial = 0; trial < 12; trial++) {
                xe_shape sa = random_shape(NULL), sb = broadcast_partner(&sa);
                if (urand() < 0.5) {
                    xe_shape t = sa;
                    sa = sb;
                    sb = t;
                }
                double lo = !strcmp(name, "pow") ? (xe_dtype_is_int(dt) ? -3 : 0.1) : -8;
                double hi = !strcmp(name, "pow") ? 4 : 8;
                xe_tensor *in[2] = {random_tensor(dt, &sa, lo, hi), random_tensor(dt, &sb, lo, hi)};
                if (trial == 0 && xe_dtype_is_float(dt) && xe_tensor_numel(in[0]) > 0)
                    xe_store_f64(in[0]->data, dt, 0, NAN);
                xe_type ot;
                xe_tensor *r = run_kernel(name, "", in, 2, &ot);
                cr_assert_not_null(r, "%s", st.msg);
                for (int64_t i = 0; i < xe_tensor_numel(r); i++) {
                    double a = bload(in[0], &r->shape, i), b = bload(in[1], &r->shape, i);
                    double want = ref_binary(name, dt, a, b);
                    if (arith)
                        want = as_dtype(dt, want);
                    if (dt == XE_F16 && arith) /* the kernel computes in float from f16 operands */
                        want = as_dtype(XE_F16, (float)want);
                    check_value(name, arith ? dt : XE_BOOL, xe_load_f64(r->data, r->dtype, i), want,
                                arith ? fmax(fabs(a), fabs(b)) : 0, i);
                }
                xe_tensor_release(r);
                xe_tensor_release(in[0]);
                xe_tensor_release(in[1]);
            }
        }
}

static double ref_unary(const char *op, bool approximate, double x)
{
    if (!strcmp(op, "neg")) return -x;
    if (!strcmp(op, "abs")) return fabs(x);
    if (!strcmp(op, "exp")) return exp(x);
    if (!strcmp(op, "log")) return log(x);
    if (!strcmp(op, "sqrt")) return sqrt(x);
    if (!strcmp(op, "rsqrt")) return 1 / sqrt(x);
    if (!strcmp(op, "tanh")) return tanh(x);
    if (!strcmp(op, "sigmoid")) return 1 / (1 + exp(-x));
    if (!strcmp(op, "relu")) return x < 0 ? 0 : x;
    if (!strcmp(op, "erf")) return erf(x);
    if (!strcmp(op, "sin")) return sin(x);
    if (!strcmp(op, "cos")) return cos(x);
    if (!strcmp(op, "floor")) return floor(x);
    if (!strcmp(op, "ceil")) return ceil(x);
    if (!strcmp(op, "round")) return nearbyint(x);
    if (!strcmp(op, "gelu"))
        return approximate ? 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)))
                           : 0.5 * x * (1 + erf(x / sqrt(2)));
    if (!strcmp(op, "logical_not")) return !x;
    return NAN; /* no reference written here: test_op_table checks the op */
}

Test(ops, unary_every_dtype)
{
    for (int op = 0; op < XE_OP_COUNT; op++) /* the unary ops of the table, each XV variant too */
        for (int variant = 0; variant < 2; variant++) {
            for (size_t di = 0; di < 6; di++) {
                const char *name = xe_op_name(op), *v = optable_variant_attr(op);
                unsigned flags = xe_op_get(op)->flags;
                if (xe_op_get(op)->cls != XE_CLASS_UNARY || (variant && !v) || isnan(ref_unary(name, false, 0.5)))
                    continue;
                xe_dtype dt = all_dtypes[di];
                bool float_only = flags & XE_OPF_FLOAT_ONLY, bool_only = flags & XE_OPF_BOOL_ONLY;
                if ((float_only && !xe_dtype_is_float(dt)) || (bool_only != (dt == XE_BOOL)))
                    continue;
                char attrs[64] = "";
                if (variant)
                    snprintf(attrs, sizeof attrs, "%s=true", v);
                for (int trial = 0; trial < 6; trial++) {
                    xe_shape s = random_shape(NULL);
                    bool positive = !strcmp(name, "log") || !strcmp(name, "sqrt") || !strcmp(name, "rsqrt");
                    xe_tensor *in[1] = {random_tensor(dt, &s, positive ? 0.01 : -6, 6)};
                    xe_type ot;
                    xe_tensor *r = run_kernel(name, attrs, in, 1, &ot);
                    cr_assert_not_null(r, "%s", st.msg);
                    for (int64_t i = 0; i < xe_tensor_numel(r); i++) {
                        double x = xe_load_f64(in[0]->data, dt, i);
                        double want = as_dtype(dt, ref_unary(name, variant, x));
                        /* gelu's 1 + erf(x) cancels for negative x: judge it against |x| */
                        check_value(name, dt, xe_load_f64(r->data, dt, i), want,
                                    !strcmp(name, "gelu") ? fabs(x) : 1e-30, i);
                    }
                    xe_tensor_release(r);
                    xe_tensor_release(in[0]);
                }
            }
        }
}

Test(ops, select_and_cast)
{
    for (size_t di = 0; di < 6; di++) {
        xe_dtype dt = all_dtypes[di];
        xe_shape s = {.rank = 2, .dims = {3, 4}}, sc = {.rank = 1, .dims = {4}};
        xe_tensor *in[3] = {random_tensor(XE_BOOL, &sc, 0, 1), random_tensor(dt, &s, -5, 5), random_tensor(dt, &s, -5, 5)};
        xe_type ot;
        xe_tensor *r = run_kernel("select", "", in, 3, &ot);
        for (int64_t i = 0; i < 12; i++)
            cr_assert_eq(xe_load_f64(r->data, dt, i),
                         xe_load_f64(((uint8_t *)in[0]->data)[i % 4] ? in[1]->data : in[2]->data, dt, i));
        xe_tensor_release(r);
        for (size_t ti = 0; ti < 6; ti++) {
            char attr[32];
            snprintf(attr, sizeof attr, "to=%s", xe_dtype_name(all_dtypes[ti]));
            xe_tensor *c = run_kernel("cast", attr, &in[1], 1, &ot);
            for (int64_t i = 0; i < 12; i++) {
                double x = xe_load_f64(in[1]->data, dt, i);
                double want = all_dtypes[ti] == XE_BOOL ? x != 0 : xe_dtype_is_int(all_dtypes[ti]) ? trunc(x) : x;
                check_value("cast", all_dtypes[ti], xe_load_f64(c->data, all_dtypes[ti], i), as_dtype(all_dtypes[ti], want), 1, i);
            }
            xe_tensor_release(c);
        }
        for (int k = 0; k < 3; k++)
            xe_tensor_release(in[k]);
    }
}

/* Reference reduction over the axes in mask. */
static void ref_reduce(const char *op, const xe_tensor *x, const bool *mask, double *out, int64_t n_out)
{
    const xe_shape *s = &x->shape;
    bool mx = !strcmp(op, "reduce_max"), mn = !strcmp(op, "reduce_min"), pr = !strcmp(op, "reduce_prod");
    int64_t *count = calloc((size_t)n_out + 1, sizeof *count);
    for (int64_t o = 0; o < n_out; o++)
        out[o] = mx ? -INFINITY : mn ? INFINITY : pr ? 1 : 0;
    for (int64_t i = 0; i < xe_tensor_numel(x); i++) {
        int64_t rem = i, o = 0, mul = 1;
        for (int d = s->rank - 1; d >= 0; d--) {
            int64_t idx = rem % s->dims[d];
            rem /= s->dims[d];
            if (!mask[d]) {
                o += idx * mul;
                mul *= s->dims[d];
            }
        }
        double v = xe_load_f64(x->data, x->dtype, i);
        out[o] = mx ? (isnan(v) || v > out[o] ? v : out[o]) : mn ? (isnan(v) || v < out[o] ? v : out[o])
                 : pr ? out[o] * v : out[o] + v;
        count[o]++;
    }
    if (!strcmp(op, "reduce_mean"))
        for (int64_t o = 0; o < n_out; o++)
            out[o] = xe_dtype_is_int(x->dtype) ? trunc(out[o] / (double)count[o]) : out[o] / (double)count[o];
    free(count);
}

Test(ops, reductions_every_axis_set_and_keepdims)
{
    const char *ops[] = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"};
    for (size_t oi = 0; oi < 5; oi++)
        for (size_t di = 0; di < 5; di++) {
            xe_dtype dt = all_dtypes[di];
            for (int trial = 0; trial < 10; trial++) {
                xe_shape s = {.rank = 1 + (int)(urand() * 3)};
                for (int d = 0; d < s.rank; d++)
                    s.dims[d] = 1 + (int64_t)(urand() * 5);
                int m = 1 + (int)(urand() * ((1 << s.rank) - 1));
                bool mask[XE_MAX_RANK] = {0};
                char attrs[128] = "axes=[";
                for (int d = 0; d < s.rank; d++)
                    if (m >> d & 1) {
                        mask[d] = true;
                        snprintf(attrs + strlen(attrs), 16, "%s%d", attrs[6] ? "," : "", urand() < 0.5 ? d : d - s.rank);
                    }
                snprintf(attrs + strlen(attrs), 32, "], keepdims=%s", urand() < 0.5 ? "true" : "false");
                xe_tensor *in[1] = {random_tensor(dt, &s, oi == 4 ? 0.5 : -4, oi == 4 ? 1.5 : 4)};
                xe_type ot;
                xe_tensor *r = run_kernel(ops[oi], attrs, in, 1, &ot);
                cr_assert_not_null(r, "%s", st.msg);
                int64_t n = xe_tensor_numel(r);
                double *want = calloc((size_t)n + 1, sizeof *want);
                ref_reduce(ops[oi], in[0], mask, want, n);
                for (int64_t i = 0; i < n; i++)
                    check_value(ops[oi], dt, xe_load_f64(r->data, dt, i), as_dtype(dt, want[i]), 64, i);
                free(want);
                xe_tensor_release(r);
                xe_tensor_release(in[0]);
            }
        }
}

/*
 * Long columns: the rows split into chunks whose partials are combined
 * (few tiles of outputs, K >= 1024), tiles narrower than a row (more than
 * 4096 outputs a row), an outer kept dim, and a NaN that must win a max.
 */
Test(ops, long_column_reductions_split_rows)
{
    const char *ops[] = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"};
    const struct {
        xe_shape s;
        const char *axes;
        bool mask[3];
    } cases[] = {
        {{2, {3000, 5}}, "axes=[0]", {true, false}},
        {{3, {2, 1500, 7}}, "axes=[1]", {false, true, false}},
        {{2, {1100, 5000}}, "axes=[0]", {true, false}},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (size_t oi = 0; oi < 5; oi++)
            for (size_t di = 0; di < 5; di++) {
                xe_dtype dt = all_dtypes[di];
                bool prod = oi == 4;
                xe_tensor *in[1] = {random_tensor(dt, &cases[ci].s, prod ? 0.999 : -4, prod ? 1.001 : 4)};
                if (xe_dtype_is_float(dt) && oi == 2)
                    xe_store_f64(in[0]->data, dt, 3 * xe_tensor_numel(in[0]) / 4, NAN);
                xe_type ot;
                xe_tensor *r = run_kernel(ops[oi], cases[ci].axes, in, 1, &ot);
                cr_assert_not_null(r, "%s", st.msg);
                int64_t n = xe_tensor_numel(r);
                double *want = calloc((size_t)n + 1, sizeof *want);
                ref_reduce(ops[oi], in[0], cases[ci].mask, want, n);
                double scale = oi == 0 ? 4.0 * (double)(xe_tensor_numel(in[0]) / n) : 4; /* sum: sum of |x| */
                for (int64_t i = 0; i < n; i++)
                    check_value(ops[oi], dt, xe_load_f64(r->data, dt, i), as_dtype(dt, want[i]), scale, i);
                free(want);
                xe_tensor_release(r);
                xe_tensor_release(in[0]);
            }
}

Test(ops, empty_reductions)
{
    xe_shape s = {.rank = 2, .dims = {3, 0}};
    xe_tensor *in[1] = {xe_tensor_new(XE_F32, &s, XE_DEV_CPU, &st)};
    xe_type ot;
    xe_tensor *r = run_kernel("reduce_sum", "axes=[1]", in, 1, &ot);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(((float *)r->data)[i], 0.0f);
    xe_tensor_release(r);
    r = run_kernel("reduce_prod", "axes=[1]", in, 1, &ot);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(((float *)r->data)[i], 1.0f);
    xe_tensor_release(r);
    xe_tensor_release(in[0]);
}

Test(ops, argmax_softmax_matmul)
{
    xe_shape s = {.rank = 2, .dims = {5, 7}};
    xe_tensor *x[1] = {random_tensor(XE_F64, &s, -3, 3)};
    xe_type ot;
    xe_tensor *am = run_kernel("argmax", "axis=1", x, 1, &ot);
    for (int r = 0; r < 5; r++) {
        int best = 0;
        for (int c = 1; c < 7; c++)
            if (((double *)x[0]->data)[r * 7 + c] > ((double *)x[0]->data)[r * 7 + best])
                best = c;
        cr_assert_eq(((int64_t *)am->data)[r], best);
    }
    xe_tensor_release(am);
    xe_tensor *sm = run_kernel("softmax", "axis=-1", x, 1, &ot);
    for (int r = 0; r < 5; r++) {
        double z = 0;
        for (int c = 0; c < 7; c++)
            z += exp(((double *)x[0]->data)[r * 7 + c]);
        for (int c = 0; c < 7; c++)
            check_value("softmax", XE_F64, ((double *)sm->data)[r * 7 + c], exp(((double *)x[0]->data)[r * 7 + c]) / z, 0, c);
    }
    xe_tensor_release(sm);
    const xe_dtype mm_types[] = {XE_F32, XE_F64, XE_F16, XE_I32, XE_I64};
    for (size_t di = 0; di < 5; di++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                xe_dtype dt = mm_types[di];
                xe_shape sa = {.rank = 3, .dims = {2, ta ? 4 : 3, ta ? 3 : 4}}, sb = {.rank = 2, .dims = {tb ? 5 : 4, tb ? 4 : 5}};
                xe_tensor *in[2] = {random_tensor(dt, &sa, -2, 2), random_tensor(dt, &sb, -2, 2)};
                char attrs[64];
                snprintf(attrs, sizeof attrs, "transpose_a=%s, transpose_b=%s", ta ? "true" : "false", tb ? "true" : "false");
                xe_tensor *c = run_kernel("matmul", attrs, in, 2, &ot);
                cr_assert_not_null(c, "%s", st.msg);
                cr_assert(c->shape.rank == 3 && c->shape.dims[1] == 3 && c->shape.dims[2] == 5);
                for (int b = 0; b < 2; b++)
                    for (int i = 0; i < 3; i++)
                        for (int j = 0; j < 5; j++) {
                            double acc = 0, mag = 0;
                            for (int k = 0; k < 4; k++) {
                                double av = xe_load_f64(in[0]->data, dt, b * 12 + (ta ? k * 3 + i : i * 4 + k));
                                double bv = xe_load_f64(in[1]->data, dt, tb ? j * 4 + k : k * 5 + j);
                                acc += av * bv;
                                mag += fabs(av * bv);
                            }
                            check_value("matmul", dt, xe_load_f64(c->data, dt, b * 15 + i * 5 + j), as_dtype(dt, acc),
                                        mag, i);
                        }
                xe_tensor_release(c);
                xe_tensor_release(in[0]);
                xe_tensor_release(in[1]);
            }
    xe_tensor_release(x[0]);
}

Test(ops, shape_ops_move_the_right_elements)
{
    xe_shape s = {.rank = 3, .dims = {2, 3, 4}};
    xe_tensor *x[1] = {random_tensor(XE_I32, &s, -100, 100)};
    const int32_t *v = x[0]->data;
    xe_type ot;
    xe_tensor *t = run_kernel("transpose", "perm=[2,0,1]", x, 1, &ot);
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 3; c++)
                cr_assert_eq(((int32_t *)t->data)[a * 6 + b * 3 + c], v[b * 12 + c * 4 + a]);
    xe_tensor_release(t);
    xe_tensor *sl = run_kernel("slice", "begin=[1,-2,1], end=[2,3,100]", x, 1, &ot);
    cr_assert(sl->shape.dims[0] == 1 && sl->shape.dims[1] == 2 && sl->shape.dims[2] == 3);
    for (int b = 0; b < 2; b++)
        for (int c = 0; c < 3; c++)
            cr_assert_eq(((int32_t *)sl->data)[b * 3 + c], v[12 + (b + 1) * 4 + c + 1]);
    xe_tensor_release(sl);
    xe_tensor *rs = run_kernel("reshape", "shape=[4,-1]", x, 1, &ot);
    cr_assert(rs->shape.dims[1] == 6 && !memcmp(rs->data, v, 24 * 4));
    xe_tensor_release(rs);
    xe_tensor *bc = run_kernel("broadcast_to", "shape=[2,2,3,4]", x, 1, &ot);
    cr_assert(!memcmp(bc->data, v, 96) && !memcmp((int32_t *)bc->data + 24, v, 96));
    xe_tensor_release(bc);
    xe_tensor *two[2] = {x[0], x[0]};
    xe_tensor *cc = run_kernel("concat", "axis=1", two, 2, &ot);
    cr_assert_eq(cc->shape.dims[1], 6);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 6; b++)
            for (int c = 0; c < 4; c++)
                cr_assert_eq(((int32_t *)cc->data)[a * 24 + b * 4 + c], v[a * 12 + (b % 3) * 4 + c]);
    xe_tensor_release(cc);
    xe_tensor *io = run_kernel("iota", "shape=[2,3], axis=1, dtype=i64", NULL, 0, &ot);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(((int64_t *)io->data)[i], i % 3);
    xe_tensor_release(io);
    xe_tensor_release(x[0]);
}

Test(ops, random_ops_are_deterministic_and_distributed)
{
    xe_type ot;
    xe_tensor *a = run_kernel("random_normal", "shape=[100000], seed=7", NULL, 0, &ot);
    xe_tensor *b = run_kernel("random_normal", "shape=[100000], seed=7", NULL, 0, &ot);
    cr_assert(!memcmp(a->data, b->data, a->nbytes), "same seed and run must give the same values");
    double m = 0, q = 0;
    for (int i = 0; i < 100000; i++) {
        double v = ((float *)a->data)[i];
        m += v;
        q += v * v;
    }
    m /= 1e5;
    cr_assert(fabs(m) < 0.02 && fabs(sqrt(q / 1e5 - m * m) - 1) < 0.02, "mean %g", m);
    xe_tensor *u = run_kernel("random_uniform", "shape=[1000], seed=3, minval=2, maxval=3, dtype=f64", NULL, 0, &ot);
    for (int i = 0; i < 1000; i++)
        cr_assert(((double *)u->data)[i] >= 2 && ((double *)u->data)[i] < 3);
    xe_tensor_release(a);
    xe_tensor_release(b);
    xe_tensor_release(u);
}

Test(ops, shape_function_errors)
{
    const char *bad[][2] = {
        {"xlac.graph v1\ninput a: f32[3]\ninput b: i32[3]\nr = add(a, b)\noutput r\n", "different dtypes"},
        {"xlac.graph v1\ninput a: f32[3]\ninput b: f32[4]\nr = add(a, b)\noutput r\n", "do not broadcast"},
        {"xlac.graph v1\ninput a: i32[3]\nr = exp(a)\noutput r\n", "needs a float operand"},
        {"xlac.graph v1\ninput a: f32[2,3]\nr = reshape(a, shape=[4,2])\noutput r\n", "cannot reshape"},
        {"xlac.graph v1\ninput a: f32[2,3]\nr = reduce_sum(a, axes=[2])\noutput r\n", "out of range"},
        {"xlac.graph v1\ninput a: f32[2,3]\ninput b: f32[4,5]\nr = matmul(a, b)\noutput r\n", "contracted dims"},
        {"xlac.graph v1\ninput a: f32[2,3]\nr = transpose(a, perm=[0,0])\noutput r\n", "not a permutation"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        xe_graph *g = xe_parse_string(bad[i][0], "bad.xg", &st);
        cr_assert_null(g);
        cr_assert(strstr(st.msg, "bad.xg:") && strstr(st.msg, bad[i][1]), "%s", st.msg);
    }
}
