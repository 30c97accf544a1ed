/*
 * The structured ops' shape functions and CPU kernels: reductions, argmax,
 * reshape, transpose, broadcast_to, concat, slice, matmul and softmax.
 *
 * Each case builds a one-node graph through the API (inputs, node,
 * attribute setters, xe_node_infer), runs the op's CPU kernel into a
 * buffer with guard bytes on both sides, and compares every element with
 * a double-precision reference computed here, independently of the
 * kernels. Shapes are random (size-1 and zero-size dims included); every
 * axis combination is tried with and without keepdims, with negative
 * axes. Tolerances: f64 1e-12, f32 1e-5, f16 2e-2, relative to the sum of
 * |terms| for sums, means and matmul; ints exact; NaN matches NaN only.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/xlac.h"

#define GUARD 64
#define GUARD_BYTE 0xA5

static xe_status st;
static uint64_t rng = 0x5eed;

static double urand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static int irand(int n)
{
    return (int)(urand() * n);
}

static const xe_dtype num_dtypes[] = {XE_F32, XE_F64, XE_F16, XE_I32, XE_I64};
static const xe_dtype float_dtypes[] = {XE_F32, XE_F64, XE_F16};
static const xe_dtype all_dtypes[] = {XE_F32, XE_F64, XE_F16, XE_I32, XE_I64, XE_BOOL};

/* ---- tensors and shapes ------------------------------------------------------------ */

/* Values uniform in [lo, hi); ints floored; bools random. */
static xe_tensor *random_tensor(xe_dtype dt, const xe_shape *s, double lo, double hi)
{
    xe_tensor *t = xe_tensor_new(dt, s, XE_DEV_CPU, &st);
    cr_assert_not_null(t, "%s", st.msg);
    for (int64_t i = 0; i < xe_tensor_numel(t); i++) {
        double v = lo + (hi - lo) * urand();
        if (dt == XE_BOOL)
            v = urand() < 0.5;
        else if (!xe_dtype_is_float(dt))
            v = floor(v);
        xe_store_f64(t->data, dt, i, v);
    }
    return t;
}

/* Random shape of the given rank: dims 0 (10%), 1 (25%) or 2..6. */
static xe_shape random_shape(int rank)
{
    xe_shape s = {.rank = rank};
    for (int d = 0; d < rank; d++) {
        double u = urand();
        s.dims[d] = u < 0.1 ? 0 : u < 0.35 ? 1 : 2 + irand(5);
    }
    return s;
}

static xe_shape shape_of(int rank, const int64_t *dims)
{
    return xe_shape_make(rank, dims);
}

static double at(const xe_tensor *t, int64_t i)
{
    return xe_load_f64(t->data, t->dtype, i);
}

/* Rounds a double the way dtype dt stores it. */
static double as_dtype(xe_dtype dt, double v)
{
    switch (dt) {
    case XE_F32: return (float)v;
    case XE_F16: return xe_f16_to_f32(xe_f32_to_f16((float)v));
    default: return v;
    }
}

/*
 * got against want for dtype dt; scale is the magnitude the error is
 * relative to (|want| or the sum of |terms|). NaN matches NaN only.
 */
static void check(const char *what, xe_dtype dt, double got, double want, double scale, int64_t i)
{
    if (isnan(want) || isnan(got)) {
        cr_assert(isnan(want) && isnan(got), "%s[%lld] (%s): got %.17g want %.17g", what,
                  (long long)i, xe_dtype_name(dt), got, want);
        return;
    }
    if (!xe_dtype_is_float(dt) || isinf(want)) {
        cr_assert_eq(got, want, "%s[%lld] (%s): got %.17g want %.17g", what, (long long)i,
                     xe_dtype_name(dt), got, want);
        return;
    }
    double tol = dt == XE_F64 ? 1e-12 : dt == XE_F32 ? 1e-5 : 2e-2;
    double floor_abs = dt == XE_F16 ? 1e-7 : dt == XE_F32 ? 1e-37 : 0; /* subnormal results */
    double s = fmax(fabs(want), scale);
    cr_assert(fabs(got - want) <= tol * s + floor_abs, "%s[%lld] (%s): got %.17g want %.17g (scale %g)",
              what, (long long)i, xe_dtype_name(dt), got, want, s);
}

/* ---- one-node graphs ------------------------------------------------------------------- */

typedef struct one_node {
    xe_graph *g;
    xe_node *n;
} one_node;

/* A graph of inputs of the given types and one node `r = op(inputs...)`, not yet inferred. */
static one_node make_node(const char *op, const xe_type *types, int n_in)
{
    one_node o = {.g = xe_graph_new("structured.xg")};
    cr_assert_not_null(o.g);
    int idx[8];
    for (int k = 0; k < n_in; k++) {
        char name[16];
        snprintf(name, sizeof name, "i%d", k);
        idx[k] = xe_graph_add_input(o.g, name, &types[k], &st);
        cr_assert_geq(idx[k], 0, "%s", st.msg);
    }
    int opid = xe_op_find(op, strlen(op));
    cr_assert_geq(opid, 0, "unknown op %s", op);
    int r = xe_graph_add_node(o.g, "r", opid, idx, n_in, &st);
    cr_assert_geq(r, 0, "%s", st.msg);
    o.n = o.g->nodes[r];
    return o;
}

static one_node make_node_t(const char *op, xe_tensor **in, int n_in)
{
    xe_type types[8];
    for (int k = 0; k < n_in; k++)
        types[k] = (xe_type){in[k]->dtype, in[k]->shape};
    return make_node(op, types, n_in);
}

static void set_ints(one_node o, const char *name, const int64_t *v, int n)
{
    cr_assert_eq(xe_node_set_ints(o.n, name, v, n, &st), XE_OK, "%s", st.msg);
}

static void set_int(one_node o, const char *name, int64_t v)
{
    cr_assert_eq(xe_node_set_int(o.n, name, v, &st), XE_OK, "%s", st.msg);
}

static void set_bool(one_node o, const char *name, bool v)
{
    cr_assert_eq(xe_node_set_bool(o.n, name, v, &st), XE_OK, "%s", st.msg);
}

static void infer_ok(one_node o)
{
    cr_assert_eq(xe_node_infer(o.g, o.n, &st), XE_OK, "%s", st.msg);
}

/* Inference must fail with a message containing `want`. */
static void infer_fails(one_node o, const char *want)
{
    xe_status_clear(&st);
    xe_code c = xe_node_infer(o.g, o.n, &st);
    cr_assert_neq(c, XE_OK, "expected an error containing \"%s\"", want);
    cr_assert(strstr(st.msg, want), "message \"%s\" lacks \"%s\"", st.msg, want);
    xe_graph_destroy(o.g);
}

/*
 * Runs the node's CPU kernel into a guarded buffer of the inferred type;
 * returns a copy of the output, or NULL (with *code) when the kernel fails.
 */
static xe_tensor *run_guarded(one_node o, xe_tensor **in, int n_in, xe_code *code)
{
    xe_type t = o.n->type;
    cr_assert(xe_shape_is_known(&t.shape), "inferred shape is not known");
    size_t bytes = (size_t)xe_shape_numel(&t.shape) * xe_dtype_size(t.dtype);
    unsigned char *raw = malloc(bytes + 2 * GUARD);
    cr_assert_not_null(raw);
    memset(raw, GUARD_BYTE, bytes + 2 * GUARD);
    xe_tensor *out = xe_tensor_wrap(t.dtype, &t.shape, XE_DEV_CPU, raw + GUARD, &st);
    cr_assert_not_null(out, "%s", st.msg);
    uint64_t state = 0;
    xe_kernel_args a = {.graph = o.g, .node = o.n, .n_in = n_in, .in = in, .out = out, .state = &state};
    xe_kernel_fn k = xe_op_kernel(xe_op_get(o.n->op), XE_DEV_CPU);
    cr_assert_not_null(k, "no CPU kernel for %s", xe_op_name(o.n->op));
    xe_status_clear(&st);
    *code = k(&a, &st);
    for (int i = 0; i < GUARD; i++) {
        cr_assert_eq(raw[i], GUARD_BYTE, "%s wrote before its output", xe_op_name(o.n->op));
        cr_assert_eq(raw[GUARD + bytes + i], GUARD_BYTE, "%s wrote past its output", xe_op_name(o.n->op));
    }
    xe_tensor *copy = *code == XE_OK ? xe_tensor_to_device(out, XE_DEV_CPU, &st) : NULL;
    cr_assert(*code != XE_OK || copy, "%s", st.msg);
    xe_tensor_release(out);
    free(raw);
    return copy;
}

/* Infers, runs (must succeed), destroys the graph; returns the output. */
static xe_tensor *run_ok(one_node o, xe_tensor **in, int n_in)
{
    infer_ok(o);
    xe_code c;
    xe_tensor *r = run_guarded(o, in, n_in, &c);
    cr_assert_eq(c, XE_OK, "%s: %s", xe_op_name(o.n->op), st.msg);
    xe_graph_destroy(o.g);
    return r;
}

static void release_all(xe_tensor **t, int n)
{
    for (int k = 0; k < n; k++)
        xe_tensor_release(t[k]);
}

/* Multi-index of flat index i in shape s. */
static void unflatten(const xe_shape *s, int64_t i, int64_t *idx)
{
    for (int d = s->rank - 1; d >= 0; d--) {
        idx[d] = s->dims[d] ? i % s->dims[d] : 0;
        i = s->dims[d] ? i / s->dims[d] : 0;
    }
}

static int64_t flatten(const xe_shape *s, const int64_t *idx)
{
    int64_t f = 0;
    for (int d = 0; d < s->rank; d++)
        f = f * s->dims[d] + idx[d];
    return f;
}

/* ---- reductions ------------------------------------------------------------------------ */

static const char *reduce_ops[] = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"};

/* Double reference of one reduction; want/scale per output (keepdims layout). */
typedef struct red_ref {
    double *want, *scale;
    int64_t n_out, count;
} red_ref;

static void reduce_accumulate(int op, xe_dtype dt, double v, double *acc, double *abs_acc, uint64_t *iacc)
{
    bool is_int = !xe_dtype_is_float(dt);
    switch (op) {
    case 0:
    case 1:
        *acc += v;
        *abs_acc += fabs(v);
        if (is_int) /* a float's value may be NaN: converting it is undefined */
            *iacc += (uint64_t)(int64_t)v;
        break;
    case 2: *acc = isnan(*acc) || isnan(v) ? NAN : fmax(*acc, v); break;
    case 3: *acc = isnan(*acc) || isnan(v) ? NAN : fmin(*acc, v); break;
    default:
        *acc *= v;
        if (is_int)
            *iacc *= (uint64_t)(int64_t)v;
        break;
    }
}

static red_ref reduce_reference(int op, const xe_tensor *x, const bool *mask)
{
    xe_shape ks = x->shape;
    red_ref r = {.count = 1};
    for (int d = 0; d < ks.rank; d++)
        if (mask[d]) {
            r.count *= ks.dims[d];
            ks.dims[d] = 1;
        }
    r.n_out = xe_shape_numel(&ks);
    r.want = calloc((size_t)r.n_out + 1, sizeof(double));
    r.scale = calloc((size_t)r.n_out + 1, sizeof(double));
    uint64_t *iacc = calloc((size_t)r.n_out + 1, sizeof(uint64_t));
    double init = op == 2 ? -INFINITY : op == 3 ? INFINITY : op == 4 ? 1 : 0;
    for (int64_t o = 0; o < r.n_out; o++) {
        r.want[o] = init;
        iacc[o] = op == 4;
    }
    int64_t idx[XE_MAX_RANK];
    for (int64_t i = 0; i < xe_tensor_numel(x); i++) {
        unflatten(&x->shape, i, idx);
        for (int d = 0; d < ks.rank; d++)
            if (mask[d])
                idx[d] = 0;
        int64_t o = flatten(&ks, idx);
        reduce_accumulate(op, x->dtype, at(x, i), &r.want[o], &r.scale[o], &iacc[o]);
    }
    for (int64_t o = 0; o < r.n_out; o++) {
        if (op == 1)
            r.want[o] /= (double)r.count, r.scale[o] /= (double)(r.count ? r.count : 1);
        if (op == 4)
            r.scale[o] = fabs(r.want[o]);
        if (xe_dtype_is_float(x->dtype))
            continue;
        int64_t v = (int64_t)iacc[o]; /* ints: wrapped sum/product, truncated mean */
        if (op == 1)
            v = r.count ? v / r.count : 0;
        if (op == 0 || op == 1 || op == 4)
            r.want[o] = x->dtype == XE_I32 ? (double)(int32_t)(uint32_t)(uint64_t)v : (double)v;
    }
    free(iacc);
    return r;
}

/* One reduction of x over mask (axes written with random signs), checked. */
static void check_reduce(int op, xe_tensor *x, const bool *mask, bool all_default, bool keepdims)
{
    one_node o = make_node_t(reduce_ops[op], &x, 1);
    int64_t axes[XE_MAX_RANK];
    int n_axes = 0, rank = x->shape.rank;
    for (int d = rank - 1; d >= 0; d--) /* listed in reverse order on purpose */
        if (mask[d])
            axes[n_axes++] = urand() < 0.5 ? d - rank : d;
    if (!all_default)
        set_ints(o, "axes", axes, n_axes);
    if (keepdims || urand() < 0.5)
        set_bool(o, "keepdims", keepdims);
    infer_ok(o);
    red_ref r = reduce_reference(op, x, mask);
    cr_assert_eq(xe_shape_numel(&o.n->type.shape), r.n_out);
    cr_assert_eq(o.n->type.shape.rank, keepdims ? rank : rank - n_axes, "rank after %s", reduce_ops[op]);
    xe_code c;
    xe_tensor *y = run_guarded(o, &x, 1, &c);
    if ((op == 2 || op == 3) && r.count == 0 && r.n_out > 0) {
        cr_assert_eq(c, XE_ERR_RUNTIME, "%s over an empty axis must fail", reduce_ops[op]);
        cr_assert(strstr(st.msg, "over an empty axis"), "%s", st.msg);
    } else {
        cr_assert_eq(c, XE_OK, "%s: %s", reduce_ops[op], st.msg);
        /* a product of n rounded factors is good to n unit roundoffs, which
           for long f32 rows is more than the flat tolerance */
        double prod_growth = 1;
        if (op == 4 && (x->dtype == XE_F32 || x->dtype == XE_F64))
            prod_growth = fmax(1, (double)r.count * (x->dtype == XE_F32 ? 0x1p-24 : 0x1p-53) /
                                      (x->dtype == XE_F32 ? 1e-5 : 1e-12));
        for (int64_t i = 0; i < r.n_out; i++)
            check(reduce_ops[op], x->dtype, at(y, i), as_dtype(x->dtype, r.want[i]), r.scale[i] * prod_growth, i);
    }
    xe_tensor_release(y);
    free(r.want);
    free(r.scale);
    xe_graph_destroy(o.g);
}

/* Every axis subset (and the default) with and without keepdims, for one tensor. */
static void reduce_every_axis_set(int op, xe_tensor *x)
{
    int rank = x->shape.rank;
    for (int set = 0; set <= (1 << rank); set++) {
        bool mask[XE_MAX_RANK] = {0};
        bool dflt = set == (1 << rank);
        for (int d = 0; d < rank; d++)
            mask[d] = dflt || (set >> d & 1);
        check_reduce(op, x, mask, dflt, false);
        check_reduce(op, x, mask, dflt, true);
    }
}

Test(structured, reductions_every_dtype_every_axis_set)
{
    for (int op = 0; op < 5; op++)
        for (size_t di = 0; di < sizeof num_dtypes / sizeof *num_dtypes; di++) {
            xe_dtype dt = num_dtypes[di];
            for (int trial = 0; trial < 10; trial++) {
                xe_shape s = random_shape(trial % 5);
                double lo = op == 4 ? (xe_dtype_is_float(dt) ? 0.5 : -3) : -20;
                double hi = op == 4 ? (xe_dtype_is_float(dt) ? 1.5 : 4) : 20;
                xe_tensor *x = random_tensor(dt, &s, lo, hi);
                if (trial == 3 && xe_dtype_is_float(dt) && xe_tensor_numel(x) > 1)
                    xe_store_f64(x->data, dt, irand((int)xe_tensor_numel(x)), NAN);
                reduce_every_axis_set(op, x);
                xe_tensor_release(x);
            }
        }
}

/* Large row, column and split-axes reductions: the simd, OpenMP and multi-pass paths. */
Test(structured, reductions_large_rows_columns_and_split_axes)
{
    const int64_t shapes[][3] = {{300, 2053, 1}, {2053, 300, 1}, {40, 33, 70}, {1, 65537, 1}};
    const int ranks[] = {2, 2, 3, 2};
    const bool masks[][3] = {{false, true}, {true, false}, {true, false, true}, {true, true}};
    for (int c = 0; c < 4; c++)
        for (size_t di = 0; di < sizeof num_dtypes / sizeof *num_dtypes; di++)
            for (int op = 0; op < 5; op++) {
                xe_dtype dt = num_dtypes[di];
                xe_shape s = shape_of(ranks[c], shapes[c]);
                bool fl = xe_dtype_is_float(dt);
                xe_tensor *x = op == 4 ? random_tensor(dt, &s, fl ? 0.999 : -1, fl ? 1.001 : 2)
                                       : random_tensor(dt, &s, -100, 100);
                check_reduce(op, x, masks[c], false, c == 2);
                xe_tensor_release(x);
            }
}

Test(structured, reductions_nan_propagation_and_empty_sets)
{
    int64_t d2[] = {3, 4};
    xe_shape s = shape_of(2, d2);
    xe_tensor *x = random_tensor(XE_F32, &s, -1, 1);
    ((float *)x->data)[5] = NAN; /* row 1, column 1 */
    bool rows[] = {false, true}, cols[] = {true, false};
    for (int op = 0; op < 5; op++) {
        check_reduce(op, x, rows, false, false);
        check_reduce(op, x, cols, false, true);
    }
    xe_tensor_release(x);
    /* empty reduced axis: sum 0, prod 1, mean NaN (floats) / 0 (ints), max/min errors */
    int64_t e[] = {3, 0};
    xe_shape es = shape_of(2, e);
    for (size_t di = 0; di < sizeof num_dtypes / sizeof *num_dtypes; di++) {
        xe_tensor *z = random_tensor(num_dtypes[di], &es, 0, 1);
        for (int op = 0; op < 5; op++)
            check_reduce(op, z, rows, false, false);
        xe_tensor_release(z);
    }
}

Test(structured, reduction_shape_functions)
{
    xe_type t = {XE_F32, {.rank = 3, .dims = {XE_DIM_UNKNOWN, 4, 5}}};
    one_node o = make_node("reduce_sum", &t, 1);
    set_ints(o, "axes", (int64_t[]){-1}, 1);
    infer_ok(o);
    cr_assert_eq(o.n->type.shape.rank, 2);
    cr_assert_eq(o.n->type.shape.dims[0], XE_DIM_UNKNOWN);
    cr_assert_eq(o.n->type.shape.dims[1], 4);
    set_bool(o, "keepdims", true);
    set_ints(o, "axes", (int64_t[]){0}, 1);
    infer_ok(o);
    cr_assert_eq(o.n->type.shape.rank, 3);
    cr_assert_eq(o.n->type.shape.dims[0], 1);
    xe_graph_destroy(o.g);

    o = make_node("reduce_mean", &t, 1);
    set_ints(o, "axes", (int64_t[]){1, -2}, 2);
    infer_fails(o, "twice");
    o = make_node("reduce_max", &t, 1);
    set_ints(o, "axes", (int64_t[]){3}, 1);
    infer_fails(o, "out of range");
    o = make_node("reduce_min", &t, 1);
    set_ints(o, "axes", (int64_t[]){-4}, 1);
    infer_fails(o, "out of range");
    xe_type b = {XE_BOOL, {.rank = 1, .dims = {3}}};
    infer_fails(make_node("reduce_sum", &b, 1), "bool");
    infer_fails(make_node("reduce_prod", &b, 1), "bool");
    /* default axes: all; a scalar reduces to a scalar */
    o = make_node("reduce_prod", &t, 1);
    infer_ok(o);
    cr_assert_eq(o.n->type.shape.rank, 0);
    xe_graph_destroy(o.g);
    /* mean of ints keeps the dtype */
    xe_type it = {XE_I32, {.rank = 1, .dims = {7}}};
    o = make_node("reduce_mean", &it, 1);
    infer_ok(o);
    cr_assert_eq(o.n->type.dtype, XE_I32);
    xe_graph_destroy(o.g);
}

/* ---- argmax -------------------------------------------------------------------------------- */

/* Reference argmax over axis (or flattened when axis < 0) at output position o. */
static int64_t argmax_ref(const xe_tensor *x, int axis, int64_t o)
{
    int64_t outer = 1, k = xe_tensor_numel(x), inner = 1;
    if (axis >= 0) {
        k = x->shape.dims[axis];
        for (int d = axis + 1; d < x->shape.rank; d++)
            inner *= x->shape.dims[d];
        for (int d = 0; d < axis; d++)
            outer *= x->shape.dims[d];
    }
    (void)outer;
    int64_t base = (o / inner) * k * inner + o % inner, best = 0;
    for (int64_t i = 0; i < k; i++) {
        double v = at(x, base + i * inner), b = at(x, base + best * inner);
        if (isnan(v)) {
            if (!isnan(b))
                best = i;
            break;
        }
        if (!isnan(b) && v > b)
            best = i;
    }
    return best;
}

static void check_argmax(xe_tensor *x, int axis, bool keepdims)
{
    int rank = x->shape.rank;
    one_node o = make_node_t("argmax", &x, 1);
    if (axis >= 0)
        set_int(o, "axis", urand() < 0.5 ? axis - rank : axis);
    set_bool(o, "keepdims", keepdims);
    infer_ok(o);
    cr_assert_eq(o.n->type.dtype, XE_I64);
    int want_rank = keepdims ? rank : axis >= 0 ? rank - 1 : 0;
    cr_assert_eq(o.n->type.shape.rank, want_rank);
    int64_t n_out = xe_shape_numel(&o.n->type.shape);
    bool empty = (axis >= 0 ? x->shape.dims[axis] : xe_tensor_numel(x)) == 0;
    xe_code c;
    xe_tensor *y = run_guarded(o, &x, 1, &c);
    if (empty && n_out > 0) {
        cr_assert_eq(c, XE_ERR_RUNTIME, "argmax over an empty axis must fail");
        cr_assert(strstr(st.msg, "argmax over an empty axis"), "%s", st.msg);
    } else {
        cr_assert_eq(c, XE_OK, "argmax: %s", st.msg);
        for (int64_t i = 0; i < n_out; i++)
            cr_assert_eq(((int64_t *)y->data)[i], argmax_ref(x, axis, i), "argmax[%lld] axis %d (%s)",
                         (long long)i, axis, xe_dtype_name(x->dtype));
    }
    xe_tensor_release(y);
    xe_graph_destroy(o.g);
}

Test(structured, argmax_ties_nan_every_axis)
{
    for (size_t di = 0; di < sizeof all_dtypes / sizeof *all_dtypes; di++) /* bool too, as numpy */
        for (int trial = 0; trial < 15; trial++) {
            xe_dtype dt = all_dtypes[di];
            xe_shape s = random_shape(trial % 5);
            xe_tensor *x = random_tensor(dt, &s, 0, 4); /* few distinct values: ties */
            if (xe_dtype_is_float(dt))
                for (int64_t i = 0; i < xe_tensor_numel(x); i++)
                    xe_store_f64(x->data, dt, i, floor(at(x, i)));
            if (trial % 3 == 1 && xe_dtype_is_float(dt) && xe_tensor_numel(x) > 2) {
                xe_store_f64(x->data, dt, 1, NAN);
                xe_store_f64(x->data, dt, xe_tensor_numel(x) - 1, NAN);
            }
            for (int axis = -1; axis < s.rank; axis++) {
                check_argmax(x, axis, false);
                check_argmax(x, axis, true);
            }
            xe_tensor_release(x);
        }
    /* large i64 values that doubles cannot tell apart */
    int64_t d1[] = {3};
    xe_shape s = shape_of(1, d1);
    xe_tensor *x = xe_tensor_new(XE_I64, &s, XE_DEV_CPU, &st);
    int64_t big = (int64_t)1 << 60;
    ((int64_t *)x->data)[0] = big;
    ((int64_t *)x->data)[1] = big + 1;
    ((int64_t *)x->data)[2] = big;
    one_node o = make_node_t("argmax", &x, 1);
    xe_tensor *y = run_ok(o, &x, 1);
    cr_assert_eq(((int64_t *)y->data)[0], 1);
    xe_tensor_release(y);
    xe_tensor_release(x);
    /* a long row and a wide column: the parallel paths */
    int64_t d2[] = {70, 1031};
    s = shape_of(2, d2);
    x = random_tensor(XE_F32, &s, -1000, 1000);
    check_argmax(x, 0, false);
    check_argmax(x, 1, true);
    xe_tensor_release(x);
}

Test(structured, argmax_shape_functions)
{
    xe_type t = {XE_F64, {.rank = 2, .dims = {XE_DIM_UNKNOWN, 5}}};
    one_node o = make_node("argmax", &t, 1);
    set_int(o, "axis", 0);
    infer_ok(o);
    cr_assert_eq(o.n->type.dtype, XE_I64);
    cr_assert_eq(o.n->type.shape.rank, 1);
    cr_assert_eq(o.n->type.shape.dims[0], 5);
    set_int(o, "axis", -1);
    set_bool(o, "keepdims", true);
    infer_ok(o);
    cr_assert_eq(o.n->type.shape.dims[0], XE_DIM_UNKNOWN);
    cr_assert_eq(o.n->type.shape.dims[1], 1);
    xe_graph_destroy(o.g);
    o = make_node("argmax", &t, 1);
    set_int(o, "axis", 2);
    infer_fails(o, "out of range");
}

/* ---- reshape, transpose, broadcast_to --------------------------------------------------------- */

Test(structured, reshape_every_dtype_and_errors)
{
    for (size_t di = 0; di < 6; di++)
        for (int trial = 0; trial < 20; trial++) {
            xe_dtype dt = all_dtypes[di];
            xe_shape s = random_shape(trial % 5);
            xe_tensor *x = random_tensor(dt, &s, -50, 50);
            int64_t n = xe_tensor_numel(x);
            /* target: [n] split into factors, maybe with one -1 */
            int64_t target[4];
            int tr = 0;
            int64_t rest = n;
            while (rest > 1 && tr < 3) {
                int64_t f = 2 + irand(3);
                if (rest % f)
                    break;
                target[tr++] = f;
                rest /= f;
            }
            target[tr++] = rest;
            if (n == 0)
                target[0] = 0;
            if (n > 0 && urand() < 0.5)
                target[irand(tr)] = -1;
            one_node o = make_node_t("reshape", &x, 1);
            set_ints(o, "shape", target, tr);
            xe_tensor *y = run_ok(o, &x, 1);
            cr_assert_eq(y->shape.rank, tr);
            cr_assert_eq(xe_tensor_numel(y), n);
            cr_assert(n == 0 || !memcmp(y->data, x->data, x->nbytes), "reshape changed the data");
            xe_tensor_release(y);
            xe_tensor_release(x);
        }
    xe_type t = {XE_F32, {.rank = 2, .dims = {2, 3}}};
    one_node o = make_node("reshape", &t, 1);
    set_ints(o, "shape", (int64_t[]){4, 2}, 2);
    infer_fails(o, "cannot reshape f32[2,3] (6 elements) into [4,2]");
    o = make_node("reshape", &t, 1);
    set_ints(o, "shape", (int64_t[]){-1, -1}, 2);
    infer_fails(o, "more than one -1");
    o = make_node("reshape", &t, 1);
    set_ints(o, "shape", (int64_t[]){-1, 4}, 2);
    infer_fails(o, "cannot reshape f32[2,3] (6 elements) into [-1,4]");
    infer_fails(make_node("reshape", &t, 1), "shape");
    /* unknown dims: only the -1 stays unknown */
    xe_type u = {XE_F32, {.rank = 2, .dims = {XE_DIM_UNKNOWN, 4}}};
    o = make_node("reshape", &u, 1);
    set_ints(o, "shape", (int64_t[]){-1, 2}, 2);
    infer_ok(o);
    cr_assert_eq(o.n->type.shape.dims[0], XE_DIM_UNKNOWN);
    cr_assert_eq(o.n->type.shape.dims[1], 2);
    xe_graph_destroy(o.g);
}

/* Checks y = transpose(x, perm) element by element (bit patterns). */
static void check_transposed(const xe_tensor *x, const xe_tensor *y, const int *perm)
{
    size_t es = xe_dtype_size(x->dtype);
    int64_t idx[XE_MAX_RANK], src[XE_MAX_RANK];
    for (int64_t i = 0; i < xe_tensor_numel(y); i++) {
        unflatten(&y->shape, i, idx);
        for (int d = 0; d < y->shape.rank; d++)
            src[perm[d]] = idx[d];
        int64_t j = flatten(&x->shape, src);
        cr_assert(!memcmp((char *)y->data + (size_t)i * es, (char *)x->data + (size_t)j * es, es),
                  "transpose[%lld] (%s)", (long long)i, xe_dtype_name(x->dtype));
    }
}

static void transpose_case(xe_tensor *x, const int *perm, bool with_attr)
{
    int rank = x->shape.rank;
    one_node o = make_node_t("transpose", &x, 1);
    if (with_attr) {
        int64_t p[XE_MAX_RANK];
        for (int d = 0; d < rank; d++)
            p[d] = urand() < 0.3 ? perm[d] - rank : perm[d];
        set_ints(o, "perm", p, rank);
    }
    xe_tensor *y = run_ok(o, &x, 1);
    for (int d = 0; d < rank; d++)
        cr_assert_eq(y->shape.dims[d], x->shape.dims[perm[d]]);
    check_transposed(x, y, perm);
    xe_tensor_release(y);
}

Test(structured, transpose_every_dtype_random_perms_and_tiles)
{
    for (size_t di = 0; di < 6; di++)
        for (int trial = 0; trial < 25; trial++) {
            xe_shape s = random_shape(trial % 6);
            xe_tensor *x = random_tensor(all_dtypes[di], &s, -50, 50);
            int perm[XE_MAX_RANK];
            for (int d = 0; d < s.rank; d++)
                perm[d] = d;
            for (int d = s.rank - 1; d > 0; d--) {
                int j = irand(d + 1), t = perm[d];
                perm[d] = perm[j];
                perm[j] = t;
            }
            transpose_case(x, perm, true);
            for (int d = 0; d < s.rank; d++) /* default: reversed axes */
                perm[d] = s.rank - 1 - d;
            transpose_case(x, perm, false);
            xe_tensor_release(x);
        }
    /* the tiled inner-swap path: odd sizes around the tile edge, with a batch dim */
    const int64_t shapes[][3] = {{70, 45, 1}, {3, 33, 65}, {1, 31, 100}, {2, 1, 300}};
    for (size_t di = 0; di < 6; di++)
        for (int c = 0; c < 4; c++) {
            xe_shape s = shape_of(c == 0 ? 2 : 3, shapes[c]);
            xe_tensor *x = random_tensor(all_dtypes[di], &s, -1000, 1000);
            int p2[] = {1, 0}, p3[] = {0, 2, 1}, p3b[] = {2, 0, 1};
            transpose_case(x, c == 0 ? p2 : p3, true);
            if (c)
                transpose_case(x, p3b, true);
            xe_tensor_release(x);
        }
}

Test(structured, transpose_shape_functions)
{
    xe_type t = {XE_I32, {.rank = 3, .dims = {XE_DIM_UNKNOWN, 3, 4}}};
    one_node o = make_node("transpose", &t, 1);
    infer_ok(o);
    cr_assert_eq(o.n->type.shape.dims[0], 4);
    cr_assert_eq(o.n->type.shape.dims[2], XE_DIM_UNKNOWN);
    xe_graph_destroy(o.g);
    o = make_node("transpose", &t, 1);
    set_ints(o, "perm", (int64_t[]){0, 1}, 2);
    infer_fails(o, "perm has 2 entries for rank 3");
    o = make_node("transpose", &t, 1);
    set_ints(o, "perm", (int64_t[]){0, 1, -3}, 3);
    infer_fails(o, "not a permutation");
    o = make_node("transpose", &t, 1);
    set_ints(o, "perm", (int64_t[]){0, 1, 3}, 3);
    infer_fails(o, "out of range");
}

Test(structured, broadcast_to_every_dtype_and_errors)
{
    for (size_t di = 0; di < 6; di++)
        for (int trial = 0; trial < 25; trial++) {
            xe_shape s = random_shape(trial % 4);
            xe_shape to = {.rank = s.rank + irand(3)};
            for (int d = 0; d < to.rank; d++) {
                int sd = d - (to.rank - s.rank);
                to.dims[d] = sd < 0 ? irand(4) : s.dims[sd] == 1 ? irand(5) : s.dims[sd];
            }
            xe_tensor *x = random_tensor(all_dtypes[di], &s, -50, 50);
            one_node o = make_node_t("broadcast_to", &x, 1);
            set_ints(o, "shape", to.dims, to.rank);
            xe_tensor *y = run_ok(o, &x, 1);
            cr_assert(xe_shape_equal(&y->shape, &to));
            int64_t idx[XE_MAX_RANK], src[XE_MAX_RANK];
            for (int64_t i = 0; i < xe_tensor_numel(y); i++) {
                unflatten(&to, i, idx);
                for (int d = 0; d < s.rank; d++)
                    src[d] = s.dims[d] == 1 ? 0 : idx[d + to.rank - s.rank];
                cr_assert_eq(at(y, i), at(x, flatten(&s, src)), "broadcast_to[%lld]", (long long)i);
            }
            xe_tensor_release(y);
            xe_tensor_release(x);
        }
    xe_type t = {XE_F32, {.rank = 2, .dims = {2, 3}}};
    one_node o = make_node("broadcast_to", &t, 1);
    set_ints(o, "shape", (int64_t[]){2, 4}, 2);
    infer_fails(o, "cannot broadcast [2,3] to [2,4]");
    o = make_node("broadcast_to", &t, 1);
    set_ints(o, "shape", (int64_t[]){3}, 1);
    infer_fails(o, "cannot broadcast rank 2 to rank 1");
    xe_type u = {XE_F32, {.rank = 2, .dims = {XE_DIM_UNKNOWN, 1}}};
    o = make_node("broadcast_to", &u, 1);
    set_ints(o, "shape", (int64_t[]){5, 2, 4}, 3);
    infer_ok(o);
    cr_assert_eq(o.n->type.shape.dims[2], 4);
    xe_graph_destroy(o.g);
}

/* ---- concat, slice -------------------------------------------------------------------------------- */

Test(structured, concat_every_dtype_and_errors)
{
    for (size_t di = 0; di < 6; di++)
        for (int trial = 0; trial < 25; trial++) {
            int rank = 1 + trial % 4, axis = irand(rank), n_in = 1 + irand(3);
            xe_shape base = random_shape(rank);
            xe_tensor *in[3];
            int64_t offs[4] = {0};
            for (int k = 0; k < n_in; k++) {
                xe_shape s = base;
                s.dims[axis] = irand(4);
                in[k] = random_tensor(all_dtypes[di], &s, -50, 50);
                offs[k + 1] = offs[k] + s.dims[axis];
            }
            one_node o = make_node_t("concat", in, n_in);
            set_int(o, "axis", urand() < 0.5 ? axis - rank : axis);
            xe_tensor *y = run_ok(o, in, n_in);
            cr_assert_eq(y->shape.dims[axis], offs[n_in]);
            int64_t idx[XE_MAX_RANK];
            for (int64_t i = 0; i < xe_tensor_numel(y); i++) {
                unflatten(&y->shape, i, idx);
                int k = 0;
                while (idx[axis] >= offs[k + 1])
                    k++;
                idx[axis] -= offs[k];
                cr_assert_eq(at(y, i), at(in[k], flatten(&in[k]->shape, idx)), "concat[%lld]", (long long)i);
            }
            xe_tensor_release(y);
            release_all(in, n_in);
        }
    xe_type t[2] = {{XE_F32, {.rank = 2, .dims = {2, 3}}}, {XE_F32, {.rank = 2, .dims = {2, 4}}}};
    one_node o = make_node("concat", t, 2);
    set_int(o, "axis", -1);
    infer_ok(o);
    cr_assert_eq(o.n->type.shape.dims[1], 7);
    xe_graph_destroy(o.g);
    o = make_node("concat", t, 2);
    set_int(o, "axis", 0);
    infer_fails(o, "input 1 has dim 1 = 4, input 0 has 3");
    o = make_node("concat", t, 2);
    set_int(o, "axis", 2);
    infer_fails(o, "out of range");
    t[1].dtype = XE_F64;
    o = make_node("concat", t, 2);
    set_int(o, "axis", 1);
    infer_fails(o, "input 1 is f64, input 0 is f32");
    xe_type sc[2] = {{XE_F32, {0}}, {XE_F32, {0}}};
    infer_fails(make_node("concat", sc, 2), "scalars");
    xe_type u[2] = {{XE_F32, {.rank = 2, .dims = {XE_DIM_UNKNOWN, 3}}}, {XE_F32, {.rank = 2, .dims = {2, 3}}}};
    o = make_node("concat", u, 2);
    set_int(o, "axis", 0);
    infer_ok(o);
    cr_assert_eq(o.n->type.shape.dims[0], XE_DIM_UNKNOWN);
    set_int(o, "axis", 1);
    infer_ok(o);
    cr_assert_eq(o.n->type.shape.dims[0], 2);
    cr_assert_eq(o.n->type.shape.dims[1], 6);
    xe_graph_destroy(o.g);
}

/* Python's slice bounds, written independently of xe_slice_bounds. */
static void py_bounds(int64_t b, int64_t e, int64_t n, int64_t *lo, int64_t *len)
{
    b = b < 0 ? (b + n < 0 ? 0 : b + n) : (b > n ? n : b);
    e = e < 0 ? (e + n < 0 ? 0 : e + n) : (e > n ? n : e);
    *lo = b;
    *len = e > b ? e - b : 0;
}

Test(structured, slice_every_dtype_python_bounds_and_errors)
{
    for (size_t di = 0; di < 6; di++)
        for (int trial = 0; trial < 30; trial++) {
            xe_shape s = random_shape(trial % 5);
            xe_tensor *x = random_tensor(all_dtypes[di], &s, -50, 50);
            int64_t b[XE_MAX_RANK], e[XE_MAX_RANK], lo[XE_MAX_RANK], len[XE_MAX_RANK];
            for (int d = 0; d < s.rank; d++) {
                int64_t n = s.dims[d];
                b[d] = irand((int)(2 * n + 5)) - n - 2;
                e[d] = irand((int)(2 * n + 5)) - n - 2;
                if (urand() < 0.3)
                    e[d] = INT64_MAX / 2; /* "to the end" */
                py_bounds(b[d], e[d], n, &lo[d], &len[d]);
            }
            one_node o = make_node_t("slice", &x, 1);
            set_ints(o, "begin", b, s.rank);
            set_ints(o, "end", e, s.rank);
            xe_tensor *y = run_ok(o, &x, 1);
            int64_t idx[XE_MAX_RANK];
            for (int d = 0; d < s.rank; d++)
                cr_assert_eq(y->shape.dims[d], len[d], "slice dim %d", d);
            for (int64_t i = 0; i < xe_tensor_numel(y); i++) {
                unflatten(&y->shape, i, idx);
                for (int d = 0; d < s.rank; d++)
                    idx[d] += lo[d];
                cr_assert_eq(at(y, i), at(x, flatten(&s, idx)), "slice[%lld]", (long long)i);
            }
            xe_tensor_release(y);
            xe_tensor_release(x);
        }
    xe_type t = {XE_F32, {.rank = 2, .dims = {XE_DIM_UNKNOWN, 5}}};
    one_node o = make_node("slice", &t, 1);
    set_ints(o, "begin", (int64_t[]){0, -2}, 2);
    set_ints(o, "end", (int64_t[]){3, 100}, 2);
    infer_ok(o);
    cr_assert_eq(o.n->type.shape.dims[0], XE_DIM_UNKNOWN);
    cr_assert_eq(o.n->type.shape.dims[1], 2);
    xe_graph_destroy(o.g);
    o = make_node("slice", &t, 1);
    set_ints(o, "begin", (int64_t[]){0}, 1);
    set_ints(o, "end", (int64_t[]){3, 100}, 2);
    infer_fails(o, "one per dim");
    o = make_node("slice", &t, 1);
    set_ints(o, "begin", (int64_t[]){0, 0}, 2);
    infer_fails(o, "end");
}

/* ---- matmul ---------------------------------------------------------------------------------------- */

typedef struct mm_case {
    int ra, rb;
    int64_t a[4], b[4];
    bool ta, tb;
} mm_case;

/* Element (batch index vector bi, row r, col c) of op(X) with X's batch dims broadcast. */
static double mm_elem(const xe_tensor *x, bool trans, bool is_a, const xe_shape *batch,
                      const int64_t *bi, int64_t r, int64_t c)
{
    const xe_shape *s = &x->shape;
    if (s->rank == 1)
        return at(x, is_a ? c : r);
    if (trans) {
        int64_t t = r;
        r = c;
        c = t;
    }
    int64_t idx[XE_MAX_RANK];
    int nb = s->rank - 2;
    for (int d = 0; d < nb; d++) {
        int64_t v = bi[d + batch->rank - nb];
        idx[d] = s->dims[d] == 1 ? 0 : v;
    }
    idx[nb] = r;
    idx[nb + 1] = c;
    return at(x, flatten(s, idx));
}

static void check_matmul(xe_dtype dt, const mm_case *mc)
{
    xe_shape sa = shape_of(mc->ra, mc->a), sb = shape_of(mc->rb, mc->b);
    bool fl = xe_dtype_is_float(dt);
    xe_tensor *in[2] = {random_tensor(dt, &sa, fl ? -1 : -30, fl ? 1 : 30),
                        random_tensor(dt, &sb, fl ? -1 : -30, fl ? 1 : 30)};
    one_node o = make_node_t("matmul", in, 2);
    if (mc->ta || urand() < 0.3)
        set_bool(o, "transpose_a", mc->ta);
    if (mc->tb || urand() < 0.3)
        set_bool(o, "transpose_b", mc->tb);
    xe_tensor *y = run_ok(o, in, 2);
    bool ta = mc->ta && sa.rank > 1, tb = mc->tb && sb.rank > 1;
    int64_t K = sa.rank == 1 ? sa.dims[0] : sa.dims[sa.rank - (ta ? 2 : 1)];
    int64_t M = sa.rank == 1 ? 1 : sa.dims[sa.rank - (ta ? 1 : 2)];
    int64_t N = sb.rank == 1 ? 1 : sb.dims[sb.rank - (tb ? 2 : 1)];
    xe_shape batch = {.rank = y->shape.rank - (sa.rank > 1) - (sb.rank > 1)};
    for (int d = 0; d < batch.rank; d++)
        batch.dims[d] = y->shape.dims[d];
    cr_assert_eq(xe_tensor_numel(y), xe_shape_numel(&batch) * M * N, "matmul output size");
    int64_t bi[XE_MAX_RANK];
    for (int64_t i = 0; i < xe_tensor_numel(y); i++) {
        int64_t m = i / N % M, n = i % N;
        unflatten(&batch, i / (M * N), bi);
        double want = 0, scale = 0;
        uint64_t iw = 0;
        for (int64_t k = 0; k < K; k++) {
            double p = mm_elem(in[0], ta, true, &batch, bi, m, k) * mm_elem(in[1], tb, false, &batch, bi, k, n);
            want += p;
            scale += fabs(p);
            iw += (uint64_t)(int64_t)mm_elem(in[0], ta, true, &batch, bi, m, k) *
                  (uint64_t)(int64_t)mm_elem(in[1], tb, false, &batch, bi, k, n);
        }
        if (!fl)
            want = dt == XE_I32 ? (double)(int32_t)(uint32_t)iw : (double)(int64_t)iw;
        check("matmul", dt, at(y, i), as_dtype(dt, want), scale, i);
    }
    xe_tensor_release(y);
    release_all(in, 2);
}

static const mm_case mm_cases[] = {
    {1, 1, {5}, {5}, false, false},                      /* vector . vector → scalar */
    {1, 2, {4}, {4, 3}, false, false},                   /* [4] @ [4,3] → [3] */
    {2, 1, {2, 4}, {4}, false, false},                   /* [2,4] @ [4] → [2] */
    {2, 2, {3, 4}, {4, 5}, false, false},
    {2, 2, {4, 3}, {4, 5}, true, false},
    {2, 2, {3, 4}, {5, 4}, false, true},
    {2, 2, {4, 3}, {5, 4}, true, true},
    {1, 2, {4}, {3, 4}, true, true},                     /* transpose_a ignored on a vector */
    {3, 2, {2, 3, 4}, {4, 2}, false, false},             /* batch on one side */
    {2, 3, {3, 4}, {2, 4, 2}, false, false},
    {4, 3, {2, 1, 3, 4}, {5, 4, 2}, false, false},       /* broadcast batch dims */
    {4, 4, {2, 1, 4, 3}, {1, 3, 2, 4}, true, true},
    {3, 1, {2, 3, 4}, {4}, false, false},                /* batched matrix @ vector */
    {1, 3, {4}, {2, 4, 3}, false, false},
    {2, 2, {0, 4}, {4, 5}, false, false},                /* zero-size M, K, N, batch */
    {2, 2, {3, 0}, {0, 5}, false, false},
    {2, 2, {3, 4}, {4, 0}, false, false},
    {3, 3, {0, 3, 4}, {1, 4, 2}, false, false},
    {1, 1, {0}, {0}, false, false},
    {2, 2, {1, 1}, {1, 1}, false, false},
    {2, 2, {37, 70}, {70, 300}, false, false},           /* blocked / parallel / BLAS-sized */
    {3, 2, {3, 40, 65}, {33, 65}, false, true},
    /* past 2^18 multiply-adds BLAS runs as an OpenMP loop of blocks: of columns when C is short, */
    {2, 2, {3, 300}, {300, 400}, false, false},
    {2, 2, {300, 3}, {400, 300}, true, true},
    /* of rows when it is tall, and of batch elements when there are enough */
    {2, 2, {200, 64}, {64, 30}, false, false},
    {2, 2, {64, 200}, {30, 64}, true, true},
    {3, 3, {2, 40, 100}, {1, 100, 70}, false, false},
    {4, 2, {3, 1, 50, 60}, {40, 60}, false, true},
};

Test(structured, matmul_every_dtype_promotion_broadcast_transpose)
{
    for (size_t di = 0; di < sizeof num_dtypes / sizeof *num_dtypes; di++)
        for (size_t c = 0; c < sizeof mm_cases / sizeof *mm_cases; c++)
            check_matmul(num_dtypes[di], &mm_cases[c]);
}

Test(structured, matmul_shape_functions)
{
    xe_type t[2] = {{XE_F32, {.rank = 2, .dims = {XE_DIM_UNKNOWN, 4}}},
                    {XE_F32, {.rank = 2, .dims = {4, XE_DIM_UNKNOWN}}}};
    one_node o = make_node("matmul", t, 2);
    infer_ok(o);
    cr_assert_eq(o.n->type.shape.rank, 2);
    cr_assert_eq(o.n->type.shape.dims[0], XE_DIM_UNKNOWN);
    cr_assert_eq(o.n->type.shape.dims[1], XE_DIM_UNKNOWN);
    xe_graph_destroy(o.g);
    xe_type v[2] = {{XE_F64, {.rank = 1, .dims = {3}}}, {XE_F64, {.rank = 3, .dims = {2, 3, 7}}}};
    o = make_node("matmul", v, 2);
    infer_ok(o);
    cr_assert_eq(o.n->type.shape.rank, 2);
    cr_assert_eq(o.n->type.shape.dims[0], 2);
    cr_assert_eq(o.n->type.shape.dims[1], 7);
    xe_graph_destroy(o.g);
    xe_type k[2] = {{XE_F32, {.rank = 2, .dims = {3, 4}}}, {XE_F32, {.rank = 2, .dims = {5, 6}}}};
    infer_fails(make_node("matmul", k, 2), "contracted dims differ: 4 and 5");
    o = make_node("matmul", k, 2);
    set_bool(o, "transpose_a", true);
    infer_fails(o, "contracted dims differ: 3 and 5");
    xe_type bt[2] = {{XE_F32, {.rank = 3, .dims = {2, 3, 4}}}, {XE_F32, {.rank = 3, .dims = {3, 4, 2}}}};
    infer_fails(make_node("matmul", bt, 2), "batch dims do not broadcast");
    xe_type bo[2] = {{XE_BOOL, {.rank = 2, .dims = {2, 2}}}, {XE_BOOL, {.rank = 2, .dims = {2, 2}}}};
    infer_fails(make_node("matmul", bo, 2), "bool");
    xe_type mixed[2] = {{XE_F32, {.rank = 2, .dims = {2, 2}}}, {XE_F64, {.rank = 2, .dims = {2, 2}}}};
    infer_fails(make_node("matmul", mixed, 2), "different dtypes");
    xe_type sc[2] = {{XE_F32, {0}}, {XE_F32, {.rank = 1, .dims = {2}}}};
    infer_fails(make_node("matmul", sc, 2), "rank >= 1");
}

/* ---- softmax --------------------------------------------------------------------------------------- */

static void check_softmax(xe_tensor *x, int axis, bool with_attr)
{
    int rank = x->shape.rank;
    one_node o = make_node_t("softmax", &x, 1);
    if (with_attr)
        set_int(o, "axis", urand() < 0.5 ? axis - rank : axis);
    xe_tensor *y = run_ok(o, &x, 1);
    cr_assert(xe_shape_equal(&y->shape, &x->shape));
    int64_t k = x->shape.dims[axis], inner = 1;
    for (int d = axis + 1; d < rank; d++)
        inner *= x->shape.dims[d];
    for (int64_t i = 0; i < xe_tensor_numel(y); i++) {
        int64_t base = i / (k * inner) * k * inner + i % inner;
        double m = -INFINITY, z = 0;
        for (int64_t j = 0; j < k; j++) {
            double v = at(x, base + j * inner);
            m = isnan(v) || isnan(m) ? NAN : fmax(m, v);
        }
        for (int64_t j = 0; j < k; j++)
            z += exp(at(x, base + j * inner) - m);
        double want = exp(at(x, i) - m) / z;
        check("softmax", x->dtype, at(y, i), as_dtype(x->dtype, want), 0, i);
    }
    xe_tensor_release(y);
}

Test(structured, softmax_float_dtypes_every_axis)
{
    for (size_t di = 0; di < 3; di++)
        for (int trial = 0; trial < 20; trial++) {
            xe_dtype dt = float_dtypes[di];
            xe_shape s = random_shape(1 + trial % 4);
            xe_tensor *x = random_tensor(dt, &s, trial % 2 ? -10 : 50, trial % 2 ? 10 : 90);
            if (trial % 5 == 2 && xe_tensor_numel(x) > 0)
                xe_store_f64(x->data, dt, 0, NAN);
            for (int axis = 0; axis < s.rank; axis++)
                check_softmax(x, axis, axis != s.rank - 1 || urand() < 0.5);
            xe_tensor_release(x);
        }
    /* long rows, and a column softmax wider than one chunk */
    int64_t d[] = {33, 1500};
    xe_shape s = shape_of(2, d);
    for (size_t di = 0; di < 3; di++) {
        xe_tensor *x = random_tensor(float_dtypes[di], &s, -20, 20);
        check_softmax(x, 1, true);
        check_softmax(x, 0, true);
        xe_tensor_release(x);
    }
}

Test(structured, softmax_shape_functions)
{
    xe_type t = {XE_F16, {.rank = 2, .dims = {XE_DIM_UNKNOWN, 3}}};
    one_node o = make_node("softmax", &t, 1);
    infer_ok(o);
    cr_assert_eq(o.n->type.dtype, XE_F16);
    cr_assert_eq(o.n->type.shape.dims[0], XE_DIM_UNKNOWN);
    xe_graph_destroy(o.g);
    o = make_node("softmax", &t, 1);
    set_int(o, "axis", 2);
    infer_fails(o, "out of range");
    xe_type it = {XE_I32, {.rank = 1, .dims = {3}}};
    infer_fails(make_node("softmax", &it, 1), "i32");
    xe_type sc = {XE_F32, {0}};
    infer_fails(make_node("softmax", &sc, 1), "rank >= 1");
}

/*
 * copy=[...] (graphs built per size, executor/runtime/generalise.c): a result dim
 * takes an operand dim, known or not; the rest come from shape, with at
 * most one -1 for reshape.
 */
Test(structured, reshape_and_broadcast_to_copy_operand_dims)
{
    xe_type u = {XE_F32, {.rank = 3, .dims = {XE_DIM_UNKNOWN, XE_DIM_UNKNOWN, 8}}};
    one_node o = make_node("reshape", &u, 1);
    set_ints(o, "shape", (int64_t[]){0, 0, 2, 4}, 4);
    set_ints(o, "copy", (int64_t[]){0, 1, -1, -1}, 4);
    infer_ok(o);
    cr_assert_eq(o.n->type.shape.dims[0], XE_DIM_UNKNOWN);
    cr_assert_eq(o.n->type.shape.dims[2], 2);
    xe_graph_destroy(o.g);
    xe_type k = {XE_F32, {.rank = 3, .dims = {2, 5, 8}}};
    o = make_node("reshape", &k, 1);
    set_ints(o, "shape", (int64_t[]){0, 0, -1}, 3);
    set_ints(o, "copy", (int64_t[]){1, 0, -1}, 3);
    infer_ok(o);
    cr_assert(o.n->type.shape.dims[0] == 5 && o.n->type.shape.dims[1] == 2 && o.n->type.shape.dims[2] == 8);
    xe_graph_destroy(o.g);
    o = make_node("reshape", &k, 1);
    set_ints(o, "shape", (int64_t[]){0, 3}, 2);
    set_ints(o, "copy", (int64_t[]){0, -1}, 2);
    infer_fails(o, "cannot reshape");
    o = make_node("reshape", &k, 1);
    set_ints(o, "shape", (int64_t[]){0, 0}, 2);
    set_ints(o, "copy", (int64_t[]){3, -1}, 2);
    infer_fails(o, "copy[0]=3 is not an operand dim");
    o = make_node("reshape", &k, 1);
    set_ints(o, "shape", (int64_t[]){0, 0}, 2);
    set_ints(o, "copy", (int64_t[]){0}, 2 - 1);
    infer_fails(o, "copy needs 2 entries");
    xe_type b = {XE_F32, {.rank = 3, .dims = {1, XE_DIM_UNKNOWN, 1}}};
    o = make_node("broadcast_to", &b, 1);
    set_ints(o, "shape", (int64_t[]){3, 0, 4}, 3);
    set_ints(o, "copy", (int64_t[]){-1, 1, -1}, 3);
    infer_ok(o);
    cr_assert(o.n->type.shape.dims[0] == 3 && o.n->type.shape.dims[1] == XE_DIM_UNKNOWN && o.n->type.shape.dims[2] == 4);
    xe_graph_destroy(o.g);
}
