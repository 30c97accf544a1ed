/*
 * Differential tests of the per-op GPU kernels (executor/devices/cuda/) against
 * the per-op CPU kernels, which are the reference.
 *
 * Each case is a one-op graph in the text format. Its inputs get seeded
 * random values (with NaN, infinities and out-of-range values mixed in
 * where the op must handle them), the CPU kernel and the GPU kernel both
 * run, and the outputs are compared: exactly for integers, bool, argmax
 * indices and every op that only moves or selects values; within a
 * relative bound for float arithmetic (f32 1e-5, f64 1e-12, f16 2e-2)
 * plus an absolute floor that grows with the number of terms summed.
 * NaN matches NaN only, infinities match only themselves. The GPU output
 * sits between guard bytes that must survive the kernel, to catch
 * out-of-bounds writes.
 *
 * Every test skips visibly without a CUDA device. Define
 * XLAC_GPU_TEST_ON_CPU to run the harness with the CPU kernel on both
 * sides (a self-check of the tests on a machine without a GPU).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "xlac/xlac.h"

#define GUARD 256       /* guard bytes on each side of a GPU output */
#define GUARD_BYTE 0xA5 /* their pattern */
#define MAX_INPUTS 4

#ifdef XLAC_GPU_TEST_ON_CPU
#define TEST_DEV XE_DEV_CPU
#define SKIP_WITHOUT_GPU() ((void)0)
#else
#define TEST_DEV xe_gpu_device()
#define SKIP_WITHOUT_GPU()                                                                         \
    do {                                                                                           \
        if (!xe_gpu_available())                                                                   \
            cr_skip_test("skipped: no CUDA device");                                               \
    } while (0)
#endif

/* How input values are drawn. */
typedef enum fill_mode {
    FILL_FINE,    /* floats uniform in [-3, 3], ints in [-5, 5] */
    FILL_COARSE,  /* multiples of 1/4 in [-2, 2] (ties for comparisons and argmax) */
    FILL_SPECIAL, /* FINE plus NaN, +-inf, +-3e9, +-0.5, -0 at fixed spots */
    FILL_NEAR1,   /* floats in [0.995, 1.005], ints in [-2, 2] (long products stay finite) */
    FILL_POS,     /* floats in [0.25, 3] (no NaN from log/sqrt/pow) */
} fill_mode;

/* How outputs are compared. */
typedef struct tol {
    double rel;      /* relative bound for floats; 0: exact */
    double abs;      /* absolute floor */
} tol;

/* ---- random values ------------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(next_u64() >> 11) * (1.0 / 9007199254740992.0);
}

static double special_value(int64_t i)
{
    static const double v[] = {NAN, INFINITY, -INFINITY, 3e9, -3e10, 0.5, -0.5, -0.0, 2.5, -2.5};
    return v[(i / 7) % (int64_t)(sizeof v / sizeof v[0])];
}

static double draw(xe_dtype dt, fill_mode mode, int64_t i)
{
    bool fl = xe_dtype_is_float(dt);
    if (dt == XE_BOOL)
        return (double)(next_u64() & 1);
    switch (mode) {
    case FILL_COARSE: return fl ? (double)((int64_t)(next_u64() % 17) - 8) / 4.0 : (double)((int64_t)(next_u64() % 7) - 3);
    case FILL_NEAR1: return fl ? uniform(0.995, 1.005) : (double)((int64_t)(next_u64() % 5) - 2);
    case FILL_POS: return fl ? uniform(0.25, 3.0) : (double)(next_u64() % 6);
    case FILL_SPECIAL:
        if (fl && i % 7 == 3)
            return special_value(i);
        if (!fl && i % 11 == 5)
            return (i / 11) % 2 ? 2147483647.0 : -2147483648.0;
        /* fall through */
    default: return fl ? uniform(-3.0, 3.0) : (double)((int64_t)(next_u64() % 11) - 5);
    }
}

static xe_tensor *random_tensor(const xe_type *t, fill_mode mode)
{
    xe_status st;
    xe_tensor *x = xe_tensor_new(t->dtype, &t->shape, XE_DEV_CPU, &st);
    cr_assert_not_null(x, "%s", st.msg);
    int64_t n = xe_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        double v = draw(t->dtype, mode, i);
        if (t->dtype == XE_I64 && mode == FILL_SPECIAL && i % 11 == 5)
            ((int64_t *)x->data)[i] = (i / 11) % 2 ? INT64_MAX : INT64_MIN;
        else if (t->dtype == XE_I64 && mode == FILL_SPECIAL && i % 11 == 7) /* a float cast rounds once */
            ((int64_t *)x->data)[i] = ((int64_t)1 << 60) + ((int64_t)1 << 36) + 1 - (i / 11) % 2 * 2;
        else
            xe_store_f64(x->data, t->dtype, i, v);
    }
    return x;
}

/* ---- one case -------------------------------------------------------------------------- */

/* A GPU output between guard bytes: t wraps the middle of raw. */
typedef struct guarded {
    void *raw;
    size_t nbytes;
    xe_tensor *t;
} guarded;

static guarded guarded_new(const xe_type *ty)
{
    xe_status st;
    guarded g = {0};
    g.nbytes = (size_t)xe_shape_numel(&ty->shape) * xe_dtype_size(ty->dtype);
    size_t total = g.nbytes + 2 * GUARD;
    unsigned char *pattern = malloc(total);
    cr_assert_not_null(pattern);
    memset(pattern, GUARD_BYTE, total);
#ifdef XLAC_GPU_TEST_ON_CPU
    g.raw = pattern;
#else
    g.raw = xe_gpu_alloc(total, &st);
    cr_assert_not_null(g.raw, "%s", st.msg);
    cr_assert_eq(xe_gpu_copy_to_device(g.raw, pattern, total, &st), XE_OK, "%s", st.msg);
    free(pattern);
#endif
    g.t = xe_tensor_wrap(ty->dtype, &ty->shape, TEST_DEV, (char *)g.raw + GUARD, &st);
    cr_assert_not_null(g.t, "%s", st.msg);
    return g;
}

/* The output's bytes on the host, after checking the guards; caller frees. */
static unsigned char *guarded_fetch(guarded *g, const char *what)
{
    xe_status st;
    size_t total = g->nbytes + 2 * GUARD;
    unsigned char *h = malloc(total);
    cr_assert_not_null(h);
#ifdef XLAC_GPU_TEST_ON_CPU
    memcpy(h, g->raw, total);
#else
    cr_assert_eq(xe_gpu_copy_to_host(h, g->raw, total, &st), XE_OK, "%s: %s", what, st.msg);
#endif
    for (size_t i = 0; i < GUARD; i++) {
        cr_assert_eq(h[i], GUARD_BYTE, "%s: write before the output (byte -%zu)", what, GUARD - i);
        cr_assert_eq(h[GUARD + g->nbytes + i], GUARD_BYTE, "%s: write past the output (byte +%zu)",
                     what, i);
    }
    (void)st;
    return h;
}

static void guarded_free(guarded *g)
{
    xe_tensor_release(g->t);
#ifdef XLAC_GPU_TEST_ON_CPU
    free(g->raw);
#else
    xe_gpu_free(g->raw);
#endif
}

/* Element i of a host buffer compared as the case's tolerance says. */
static void compare_elem(const void *cpu, const void *gpu, xe_dtype dt, int64_t i, tol t,
                         const char *what)
{
    if (dt == XE_I64) {
        int64_t c = ((const int64_t *)cpu)[i], g = ((const int64_t *)gpu)[i];
        cr_assert_eq(c, g, "%s: element %lld: cpu %lld, gpu %lld", what, (long long)i, (long long)c,
                     (long long)g);
        return;
    }
    double c = xe_load_f64(cpu, dt, i), g = xe_load_f64(gpu, dt, i);
    if (isnan(c) || isnan(g)) {
        cr_assert(isnan(c) && isnan(g), "%s: element %lld: cpu %g, gpu %g (NaN matches NaN only)",
                  what, (long long)i, c, g);
        return;
    }
    if (c == g)
        return;
    cr_assert(t.rel > 0 && !isinf(c) && !isinf(g) && fabs(c - g) <= t.rel * fabs(c) + t.abs,
              "%s: element %lld: cpu %.17g, gpu %.17g", what, (long long)i, c, g);
}

/* Relative bound of a dtype: 0 (exact) for integers and bool. */
static double dtype_rel(xe_dtype dt)
{
    return dt == XE_F16 ? 2e-2 : dt == XE_F32 ? 1e-5 : dt == XE_F64 ? 1e-12 : 0;
}

/*
 * Float tolerance for a dtype when `terms` values of magnitude up to 3 are
 * summed into one output: the absolute floor grows like the random walk
 * of rounding errors, sqrt(terms), with a margin (a missing or doubled
 * term is still far outside it).
 */
static tol float_tol(xe_dtype dt, double terms)
{
    double rel = dtype_rel(dt);
    return (tol){rel, rel * 12.0 * sqrt(terms < 1 ? 1 : terms)};
}

/* One rounded function of a few operands (elementwise ops, softmax). */
static tol ew_tol(xe_dtype dt)
{
    double rel = dtype_rel(dt);
    return (tol){rel, rel * 0.1};
}

/* Products of `terms` factors: each multiply adds a rounding error. */
static tol prod_tol(xe_dtype dt, double terms)
{
    double rel = dtype_rel(dt);
    return (tol){rel * 4.0 * sqrt(terms < 1 ? 1 : terms), rel};
}

static const tol EXACT = {0, 0};

typedef struct run_result {
    xe_code cpu, gpu;   /* kernel codes */
    char msg[XE_STATUS_MSG_MAX]; /* the GPU kernel's message when it failed */
} run_result;

/*
 * Runs node `name` of graph `text` on both devices with random inputs and
 * compares. `runs` > 1 runs stateful ops again (state advancing on both).
 */
static run_result run_case_n(const char *text, const char *name, fill_mode mode, tol t, int runs)
{
    xe_status st;
    run_result res = {XE_OK, XE_OK, ""};
    xe_graph *g = xe_parse_string(text, "case.xg", &st);
    cr_assert_not_null(g, "%s\n%s", st.msg, text);
    int idx = xe_graph_find(g, name);
    cr_assert_geq(idx, 0, "no node %s", name);
    const xe_node *n = g->nodes[idx];
    const xe_op_def *def = xe_op_get(n->op);
    cr_assert(def && xe_op_kernel(def, XE_DEV_CPU) && xe_op_kernel(def, xe_gpu_device()), "%s has no %s kernel",
              xe_op_name(n->op), def && xe_op_kernel(def, XE_DEV_CPU) ? "GPU" : "CPU");
    xe_tensor *cin[MAX_INPUTS] = {0}, *gin[MAX_INPUTS] = {0};
    cr_assert_leq(n->n_inputs, MAX_INPUTS);
    for (int k = 0; k < n->n_inputs; k++) {
        cin[k] = random_tensor(&g->nodes[n->inputs[k]]->type, mode);
        gin[k] = xe_tensor_to_device(cin[k], TEST_DEV, &st);
        cr_assert_not_null(gin[k], "%s", st.msg);
    }
    uint64_t cstate = 0, gstate = 0;
    char what[256];
    for (int r = 0; r < runs; r++) {
        xe_tensor *cout = xe_tensor_new(n->type.dtype, &n->type.shape, XE_DEV_CPU, &st);
        cr_assert_not_null(cout, "%s", st.msg);
        guarded gout = guarded_new(&n->type);
        xe_kernel_args ca = {g, n, n->n_inputs, cin, cout, NULL, &cstate, NULL, NULL, NULL};
        xe_kernel_args ga = {g, n, n->n_inputs, gin, gout.t, NULL, &gstate, NULL, NULL, NULL};
        xe_status cst, gst;
        xe_status_clear(&cst);
        xe_status_clear(&gst);
        res.cpu = xe_op_kernel(def, XE_DEV_CPU)(&ca, &cst);
        res.gpu = xe_op_kernel(def, TEST_DEV)(&ga, &gst);
        snprintf(res.msg, sizeof res.msg, "%s", gst.msg);
        snprintf(what, sizeof what, "%s (%s %s, run %d)", name, xe_op_name(n->op),
                 xe_type_str(&n->type, (char[128]){0}, 128), r);
        if (res.cpu == XE_OK && res.gpu == XE_OK) {
            unsigned char *h = guarded_fetch(&gout, what);
            int64_t numel = xe_tensor_numel(cout);
            for (int64_t i = 0; i < numel; i++)
                compare_elem(cout->data, h + GUARD, n->type.dtype, i, t, what);
            free(h);
        }
        cr_assert_eq(cstate, gstate, "%s: state cpu %llu, gpu %llu", what,
                     (unsigned long long)cstate, (unsigned long long)gstate);
        xe_tensor_release(cout);
        guarded_free(&gout);
        if (res.cpu != XE_OK || res.gpu != XE_OK)
            break;
    }
    for (int k = 0; k < n->n_inputs; k++) {
        xe_tensor_release(cin[k]);
        xe_tensor_release(gin[k]);
    }
    xe_graph_destroy(g);
    return res;
}

/* One run that both kernels must complete. */
static void check_case(const char *text, const char *name, fill_mode mode, tol t)
{
    run_result r = run_case_n(text, name, mode, t, 1);
    cr_assert_eq(r.cpu, XE_OK, "CPU kernel failed on\n%s", text);
    cr_assert_eq(r.gpu, XE_OK, "GPU kernel failed: %s\non\n%s", r.msg, text);
}

/* Builds "input a: T[..]\n..." + "y = OP(args)\noutput y" into buf. */
static const char *graph1(char *buf, size_t len, const char *op, const char *attrs, int n_in,
                          const char *const *types)
{
    int w = snprintf(buf, len, "xlac.graph v1\n");
    char args[256] = "";
    for (int k = 0; k < n_in; k++) {
        w += snprintf(buf + w, len - (size_t)w, "input x%d: %s\n", k, types[k]);
        size_t al = strlen(args);
        snprintf(args + al, sizeof args - al, "%sx%d", k ? ", " : "", k);
    }
    snprintf(buf + w, len - (size_t)w, "y = %s(%s%s%s)\noutput y\n", op, args,
             attrs && *attrs ? (n_in ? ", " : "") : "", attrs ? attrs : "");
    return buf;
}

static const char *const ALL_DTYPES[] = {"f32", "f64", "f16", "i32", "i64", "bool"};
static const char *const NUM_DTYPES[] = {"f32", "f64", "f16", "i32", "i64"};
static const char *const FLOAT_DTYPES[] = {"f32", "f64", "f16"};

static xe_dtype dtype_of(const char *name)
{
    xe_dtype dt = XE_F32;
    cr_assert(xe_dtype_parse(name, strlen(name), &dt));
    return dt;
}

/* Type string "DT[shape]" into buf. */
static const char *ty(char *buf, size_t len, const char *dt, const char *shape)
{
    snprintf(buf, len, "%s%s", dt, shape);
    return buf;
}

/* ---- elementwise -------------------------------------------------------------------------- */

/* Operand shape pairs: broadcasting, size-1 and zero-size dims, scalars, a large case. */
static const char *const PAIRS[][2] = {
    {"[2,3]", "[2,3]"},     {"[3,1,4]", "[5,1]"}, {"[7]", "[]"},        {"[]", "[6,2]"},
    {"[0,3]", "[1,3]"},     {"[]", "[]"},         {"[300,257]", "[257]"}, {"[64,1,33]", "[1,40,1]"},
    {"[70000]", "[70000]"},
};
#define N_PAIRS (sizeof PAIRS / sizeof PAIRS[0])

static void binary_all(const char *op, bool with_bool, fill_mode mode)
{
    char text[1024], t0[64], t1[64];
    for (size_t d = 0; d < (with_bool ? 6u : 5u); d++) {
        const char *dt = ALL_DTYPES[d];
        for (size_t p = 0; p < N_PAIRS; p++) {
            const char *types[2] = {ty(t0, sizeof t0, dt, PAIRS[p][0]), ty(t1, sizeof t1, dt, PAIRS[p][1])};
            check_case(graph1(text, sizeof text, op, NULL, 2, types), "y", mode,
                       ew_tol(dtype_of(dt)));
        }
    }
}

Test(gpu_ops, binary_arith)
{
    SKIP_WITHOUT_GPU();
    rng_state = 1;
    binary_all("add", false, FILL_SPECIAL);
    binary_all("sub", false, FILL_SPECIAL);
    binary_all("mul", false, FILL_SPECIAL);
    binary_all("div", false, FILL_SPECIAL);
    binary_all("div", false, FILL_COARSE); /* integer x // 0 and exact quotients */
}

Test(gpu_ops, binary_pow_max_min)
{
    SKIP_WITHOUT_GPU();
    rng_state = 2;
    binary_all("pow", false, FILL_FINE);
    binary_all("pow", false, FILL_POS);
    binary_all("maximum", true, FILL_SPECIAL);
    binary_all("minimum", true, FILL_SPECIAL);
}

Test(gpu_ops, compare)
{
    SKIP_WITHOUT_GPU();
    rng_state = 3;
    const char *ops[] = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"};
    for (size_t o = 0; o < 6; o++) {
        binary_all(ops[o], true, FILL_COARSE);
        binary_all(ops[o], false, FILL_SPECIAL);
    }
}

Test(gpu_ops, logical)
{
    SKIP_WITHOUT_GPU();
    rng_state = 4;
    char text[1024], t0[64], t1[64];
    const char *ops[] = {"logical_and", "logical_or"};
    for (size_t o = 0; o < 2; o++)
        for (size_t p = 0; p < N_PAIRS; p++) {
            const char *types[2] = {ty(t0, sizeof t0, "bool", PAIRS[p][0]),
                                    ty(t1, sizeof t1, "bool", PAIRS[p][1])};
            check_case(graph1(text, sizeof text, ops[o], NULL, 2, types), "y", FILL_FINE, EXACT);
        }
}

static const char *const SHAPES1[] = {"[]", "[1]", "[0,4]", "[5,7]", "[3,1,9]", "[70000]"};
#define N_SHAPES1 (sizeof SHAPES1 / sizeof SHAPES1[0])

static void unary_all(const char *op, const char *attrs, const char *const *dts, size_t n_dt,
                      fill_mode mode)
{
    char text[1024], t0[64];
    for (size_t d = 0; d < n_dt; d++)
        for (size_t s = 0; s < N_SHAPES1; s++) {
            const char *types[1] = {ty(t0, sizeof t0, dts[d], SHAPES1[s])};
            check_case(graph1(text, sizeof text, op, attrs, 1, types), "y", mode,
                       ew_tol(dtype_of(dts[d])));
        }
}

Test(gpu_ops, unary)
{
    SKIP_WITHOUT_GPU();
    rng_state = 5;
    const char *float_ops[] = {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf",
                               "sin", "cos", "floor", "ceil", "round", "gelu"};
    for (size_t o = 0; o < sizeof float_ops / sizeof float_ops[0]; o++) {
        unary_all(float_ops[o], NULL, FLOAT_DTYPES, 3, FILL_SPECIAL);
        unary_all(float_ops[o], NULL, FLOAT_DTYPES, 3, FILL_POS);
    }
    unary_all("gelu", "approximate=true", FLOAT_DTYPES, 3, FILL_SPECIAL);
    const char *any_ops[] = {"neg", "abs", "relu"};
    for (size_t o = 0; o < 3; o++)
        unary_all(any_ops[o], NULL, NUM_DTYPES, 5, FILL_SPECIAL);
    const char *b[] = {"bool"};
    unary_all("logical_not", NULL, b, 1, FILL_FINE);
}

Test(gpu_ops, select)
{
    SKIP_WITHOUT_GPU();
    rng_state = 6;
    static const char *const shapes[][3] = {
        {"[4,5]", "[4,5]", "[4,5]"}, {"[4,1]", "[1,5]", "[]"}, {"[]", "[3]", "[2,1]"},
        {"[0,2]", "[2]", "[1,2]"},   {"[300,1,7]", "[1,50,7]", "[7]"},
    };
    char text[1024], t0[64], t1[64], t2[64];
    for (size_t d = 0; d < 6; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const char *types[3] = {ty(t0, sizeof t0, "bool", shapes[s][0]),
                                    ty(t1, sizeof t1, ALL_DTYPES[d], shapes[s][1]),
                                    ty(t2, sizeof t2, ALL_DTYPES[d], shapes[s][2])};
            check_case(graph1(text, sizeof text, "select", NULL, 3, types), "y", FILL_SPECIAL, EXACT);
        }
}

Test(gpu_ops, cast)
{
    SKIP_WITHOUT_GPU();
    rng_state = 7;
    char text[1024], t0[64], attrs[32];
    const char *shapes[] = {"[]", "[0]", "[3,5]", "[5000]"};
    for (size_t from = 0; from < 6; from++)
        for (size_t to = 0; to < 6; to++)
            for (size_t s = 0; s < 4; s++) {
                const char *types[1] = {ty(t0, sizeof t0, ALL_DTYPES[from], shapes[s])};
                snprintf(attrs, sizeof attrs, "to=%s", ALL_DTYPES[to]);
                /* casts round once, the same way on both devices: exact */
                check_case(graph1(text, sizeof text, "cast", attrs, 1, types), "y", FILL_SPECIAL, EXACT);
            }
}

/* ---- reductions, argmax, softmax ------------------------------------------------------------- */

/* A shape, an attribute string and the number of terms per output (for the tolerance). */
typedef struct red_case {
    const char *shape, *attrs;
    double terms;
} red_case;

static const red_case RED_CASES[] = {
    {"[37,1000]", "axes=[1]", 1000},           /* rows, one warp each */
    {"[3,50000]", "axes=[-1]", 50000},         /* rows, split blocks + combine */
    {"[5000,3]", "axes=[0]", 5000},            /* columns, split */
    {"[4,6000,70]", "axes=[1]", 6000},         /* columns with outer dims */
    {"[64,300,40]", "axes=[0,2]", 2560},       /* two reduced groups */
    {"[7,9]", "", 63},                         /* all (default) */
    {"[200000]", "keepdims=true", 200000},     /* full reduction, split */
    {"[6,1,4]", "axes=[1]", 1},                /* size-1 reduced dim */
    {"[4,5]", "axes=[]", 1},                   /* nothing reduced */
    {"[]", "", 1},                             /* scalar */
    {"[9,13]", "axes=[0,1], keepdims=true", 117},
    {"[100,12]", "axes=[1]", 12},              /* serial kernel */
    {"[0,5]", "axes=[1]", 1},                  /* no outputs */
};
#define N_RED (sizeof RED_CASES / sizeof RED_CASES[0])

static void reduce_all(const char *op, fill_mode mode, bool exact)
{
    char text[1024], t0[64];
    for (size_t d = 0; d < 5; d++) {
        xe_dtype dt = dtype_of(NUM_DTYPES[d]);
        for (size_t c = 0; c < N_RED; c++) {
            const char *types[1] = {ty(t0, sizeof t0, NUM_DTYPES[d], RED_CASES[c].shape)};
            double terms = RED_CASES[c].terms;
            tol t = float_tol(dt, terms);
            if (!strcmp(op, "reduce_mean"))
                t = float_tol(dt, 1);
            else if (!strcmp(op, "reduce_prod"))
                t = prod_tol(dt, terms);
            check_case(graph1(text, sizeof text, op, RED_CASES[c].attrs, 1, types), "y", mode,
                       exact ? EXACT : t);
        }
    }
}

Test(gpu_ops, reduce_sum_mean)
{
    SKIP_WITHOUT_GPU();
    rng_state = 8;
    reduce_all("reduce_sum", FILL_FINE, false);
    reduce_all("reduce_mean", FILL_FINE, false);
    reduce_all("reduce_sum", FILL_COARSE, false); /* NaN-free, exact in floats below 2^24 */
}

Test(gpu_ops, reduce_max_min_prod)
{
    SKIP_WITHOUT_GPU();
    rng_state = 9;
    reduce_all("reduce_max", FILL_SPECIAL, true);
    reduce_all("reduce_min", FILL_SPECIAL, true);
    reduce_all("reduce_max", FILL_COARSE, true);
    reduce_all("reduce_prod", FILL_NEAR1, false);
}

Test(gpu_ops, reduce_empty)
{
    SKIP_WITHOUT_GPU();
    rng_state = 10;
    char text[1024];
    const char *types[1] = {"f32[3,0]"};
    check_case(graph1(text, sizeof text, "reduce_sum", "axes=[1]", 1, types), "y", FILL_FINE, EXACT);
    check_case(graph1(text, sizeof text, "reduce_prod", "axes=[1]", 1, types), "y", FILL_FINE, EXACT);
    check_case(graph1(text, sizeof text, "reduce_mean", "axes=[1]", 1, types), "y", FILL_FINE, EXACT);
    const char *itypes[1] = {"i32[3,0]"};
    check_case(graph1(text, sizeof text, "reduce_mean", "axes=[1]", 1, itypes), "y", FILL_FINE, EXACT);
    run_result r = run_case_n(graph1(text, sizeof text, "reduce_max", "axes=[1]", 1, types), "y",
                              FILL_FINE, EXACT, 1);
    cr_assert_eq(r.cpu, XE_ERR_RUNTIME);
    cr_assert_eq(r.gpu, XE_ERR_RUNTIME, "reduce_max of an empty range must fail: %s", r.msg);
#ifndef XLAC_GPU_TEST_ON_CPU
    cr_assert_neq(strstr(r.msg, "node y"), NULL, "the message names the node: %s", r.msg);
#endif
}

Test(gpu_ops, argmax)
{
    SKIP_WITHOUT_GPU();
    rng_state = 11;
    static const char *const cases[][2] = {
        {"[37,1000]", "axis=1"}, {"[3,50000]", "axis=-1"}, {"[5000,3]", "axis=0"},
        {"[4,600,70]", "axis=1"}, {"[30,40]", ""},         {"[200000]", "keepdims=true"},
        {"[6,1,4]", "axis=1"},   {"[]", ""},              {"[100,12]", "axis=1, keepdims=true"},
        {"[0,5]", "axis=1"},
    };
    char text[1024], t0[64];
    fill_mode modes[] = {FILL_COARSE, FILL_SPECIAL, FILL_FINE};
    for (size_t m = 0; m < 3; m++)
        for (size_t d = 0; d < 5; d++)
            for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
                const char *types[1] = {ty(t0, sizeof t0, NUM_DTYPES[d], cases[c][0])};
                check_case(graph1(text, sizeof text, "argmax", cases[c][1], 1, types), "y", modes[m], EXACT);
            }
    const char *types[1] = {"f32[3,0]"};
    run_result r = run_case_n(graph1(text, sizeof text, "argmax", "axis=1", 1, types), "y", FILL_FINE,
                              EXACT, 1);
    cr_assert_eq(r.gpu, XE_ERR_RUNTIME, "argmax of an empty range must fail: %s", r.msg);
}

Test(gpu_ops, softmax)
{
    SKIP_WITHOUT_GPU();
    rng_state = 12;
    static const char *const cases[][2] = {
        {"[37,1000]", ""},        {"[3,5000]", "axis=1"}, {"[64,30,40]", "axis=1"},
        {"[5]", "axis=0"},        {"[0,4]", ""},          {"[4,1]", ""},
        {"[2,3,7]", "axis=0"},    {"[1000,33]", "axis=-1"},
    };
    char text[1024], t0[64];
    fill_mode modes[] = {FILL_FINE, FILL_SPECIAL};
    for (size_t m = 0; m < 2; m++)
        for (size_t d = 0; d < 3; d++)
            for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
                const char *types[1] = {ty(t0, sizeof t0, FLOAT_DTYPES[d], cases[c][0])};
                check_case(graph1(text, sizeof text, "softmax", cases[c][1], 1, types), "y", modes[m],
                           ew_tol(dtype_of(FLOAT_DTYPES[d])));
            }
}

/* ---- shape ops ------------------------------------------------------------------------------------ */

/* Runs op with one input of each dtype; shape ops move bits, so exact. */
static void shape_all(const char *op, const char *shape, const char *attrs)
{
    char text[1024], t0[64];
    for (size_t d = 0; d < 6; d++) {
        const char *types[1] = {ty(t0, sizeof t0, ALL_DTYPES[d], shape)};
        check_case(graph1(text, sizeof text, op, attrs, 1, types), "y", FILL_SPECIAL, EXACT);
    }
}

Test(gpu_ops, reshape)
{
    SKIP_WITHOUT_GPU();
    rng_state = 13;
    shape_all("reshape", "[6,4]", "shape=[3,8]");
    shape_all("reshape", "[6,4]", "shape=[-1]");
    shape_all("reshape", "[0,4]", "shape=[4,0]");
    shape_all("reshape", "[]", "shape=[1,1]");
}

Test(gpu_ops, transpose)
{
    SKIP_WITHOUT_GPU();
    rng_state = 14;
    shape_all("transpose", "[2,3,4]", "perm=[2,0,1]");
    shape_all("transpose", "[33,65]", "");              /* 2-D tile */
    shape_all("transpose", "[5,33,65]", "perm=[0,2,1]"); /* batched tile */
    shape_all("transpose", "[4,1,6]", "perm=[1,0,2]");   /* only moves a size-1 dim: a copy */
    shape_all("transpose", "[3,4,5,6]", "perm=[3,1,2,0]");
    shape_all("transpose", "[2,3,4,5]", "perm=[0,1,3,2]");
    shape_all("transpose", "[0,3]", "");
    shape_all("transpose", "[]", "");
    shape_all("transpose", "[300,500]", "perm=[1,0]");
}

Test(gpu_ops, broadcast_to)
{
    SKIP_WITHOUT_GPU();
    rng_state = 15;
    shape_all("broadcast_to", "[3,1]", "shape=[2,3,4]");
    shape_all("broadcast_to", "[]", "shape=[5]");
    shape_all("broadcast_to", "[1]", "shape=[0]");
    shape_all("broadcast_to", "[2,3]", "shape=[2,3]");
    shape_all("broadcast_to", "[1,7,1]", "shape=[300,7,50]");
}

Test(gpu_ops, slice)
{
    SKIP_WITHOUT_GPU();
    rng_state = 16;
    shape_all("slice", "[10,8]", "begin=[2,-5], end=[-1,100]");
    shape_all("slice", "[10,8]", "begin=[0,0], end=[10,8]");
    shape_all("slice", "[10,8]", "begin=[5,3], end=[2,4]"); /* empty */
    shape_all("slice", "[4,5,6]", "begin=[1,0,2], end=[3,5,3]");
    shape_all("slice", "[]", "begin=[], end=[]");
    shape_all("slice", "[400,300]", "begin=[-300,1], end=[399,-1]");
}

Test(gpu_ops, concat)
{
    SKIP_WITHOUT_GPU();
    rng_state = 17;
    static const char *const cases[][4] = {
        {"[2,3]", "[4,3]", "[1,3]", "axis=0"}, {"[2,3]", "[2,1]", "[2,5]", "axis=1"},
        {"[2,0]", "[2,4]", "[2,1]", "axis=-1"}, {"[3,2,2]", "[3,7,2]", "[3,1,2]", "axis=1"},
        {"[0,3]", "[0,3]", "[0,3]", "axis=1"},
    };
    char text[1024], t0[64], t1[64], t2[64];
    for (size_t d = 0; d < 6; d++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            const char *types[3] = {ty(t0, sizeof t0, ALL_DTYPES[d], cases[c][0]),
                                    ty(t1, sizeof t1, ALL_DTYPES[d], cases[c][1]),
                                    ty(t2, sizeof t2, ALL_DTYPES[d], cases[c][2])};
            check_case(graph1(text, sizeof text, "concat", cases[c][3], 3, types), "y", FILL_SPECIAL, EXACT);
        }
}

/* ---- matmul ----------------------------------------------------------------------------------------- */

Test(gpu_ops, matmul)
{
    SKIP_WITHOUT_GPU();
    rng_state = 18;
    static const struct {
        const char *a, *b, *attrs;
        double k;
    } cases[] = {
        {"[5,7]", "[7,3]", "", 7},
        {"[7,5]", "[7,3]", "transpose_a=true", 7},
        {"[5,7]", "[3,7]", "transpose_b=true", 7},
        {"[7,5]", "[3,7]", "transpose_a=true, transpose_b=true", 7},
        {"[2,3,5,7]", "[7,4]", "", 7},            /* shared B: batches folded into rows */
        {"[2,3,5,7]", "[3,7,4]", "", 7},          /* strided batched */
        {"[3,1,5,7]", "[2,7,4]", "", 7},          /* batch broadcast both ways: per-batch gemms */
        {"[5,7]", "[4,7,6]", "", 7},              /* shared A: stride 0 */
        {"[7]", "[7,3]", "", 7},
        {"[5,7]", "[7]", "", 7},
        {"[7]", "[7]", "", 7},
        {"[4,7]", "[2,7]", "transpose_a=false, transpose_b=true", 7},
        {"[2,5,0]", "[0,3]", "", 1},              /* K = 0: zeros */
        {"[0,5]", "[5,3]", "", 5},
        {"[70,300]", "[300,90]", "", 300},
        {"[3,33,17]", "[3,17,40]", "", 17},
    };
    char text[1024], t0[64], t1[64];
    for (size_t d = 0; d < 5; d++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            const char *types[2] = {ty(t0, sizeof t0, NUM_DTYPES[d], cases[c].a),
                                    ty(t1, sizeof t1, NUM_DTYPES[d], cases[c].b)};
            xe_dtype dt = dtype_of(NUM_DTYPES[d]);
            check_case(graph1(text, sizeof text, "matmul", cases[c].attrs, 2, types), "y", FILL_FINE,
                       float_tol(dt, 9 * cases[c].k)); /* terms up to 9 */
        }
}

/* ---- sources ------------------------------------------------------------------------------------------ */

Test(gpu_ops, iota)
{
    SKIP_WITHOUT_GPU();
    const char *shapes[] = {"[3,4,5]", "[0,3]", "[]", "[70000]"};
    const char *attrs[] = {"axis=1", "axis=-1", "axis=0", "axis=0"};
    char text[512];
    for (size_t d = 0; d < 5; d++)
        for (size_t s = 0; s < 4; s++) {
            if (!strcmp(shapes[s], "[]") && strcmp(attrs[s], "axis=0"))
                continue;
            snprintf(text, sizeof text, "xlac.graph v1\ny = iota(shape=%s, %s, dtype=%s)\noutput y\n",
                     shapes[s], attrs[s], NUM_DTYPES[d]);
            check_case(text, "y", FILL_FINE, EXACT);
        }
}

Test(gpu_ops, const_value)
{
    SKIP_WITHOUT_GPU();
    check_case("xlac.graph v1\ny = const(f32[3], [1.5, -2, 3])\noutput y\n", "y", FILL_FINE, EXACT);
    check_case("xlac.graph v1\ny = const(i64[], 7)\noutput y\n", "y", FILL_FINE, EXACT);
    check_case("xlac.graph v1\ny = const(f16[2,2], [1, 2, 3, 4])\noutput y\n", "y", FILL_FINE, EXACT);
}

Test(gpu_ops, random)
{
    SKIP_WITHOUT_GPU();
    char text[512];
    for (size_t d = 0; d < 3; d++) {
        /* uniform: integer bits times a power of two, one affine step: bit-identical */
        snprintf(text, sizeof text,
                 "xlac.graph v1\ny = random_uniform(shape=[1000,3], seed=42, dtype=%s, minval=-2.0, "
                 "maxval=5.0)\noutput y\n",
                 FLOAT_DTYPES[d]);
        run_result r = run_case_n(text, "y", FILL_FINE, EXACT, 3);
        cr_assert_eq(r.gpu, XE_OK, "%s", r.msg);
        /* normal: log and cos of CUDA's libm may differ from glibc's by an ulp */
        snprintf(text, sizeof text,
                 "xlac.graph v1\ny = random_normal(shape=[70000], seed=7, dtype=%s, mean=1.0, "
                 "stddev=0.5)\noutput y\n",
                 FLOAT_DTYPES[d]);
        tol t = {dtype_of(FLOAT_DTYPES[d]) == XE_F64 ? 1e-14 : 1e-6, 1e-14};
        if (dtype_of(FLOAT_DTYPES[d]) == XE_F16)
            t = (tol){1e-3, 1e-3};
        r = run_case_n(text, "y", FILL_FINE, t, 2);
        cr_assert_eq(r.gpu, XE_OK, "%s", r.msg);
    }
    check_case("xlac.graph v1\ny = random_normal(shape=[0], seed=1)\noutput y\n", "y", FILL_FINE, EXACT);
}

/* The run counter makes two runs differ, and the GPU advances it like the CPU (checked above). */
Test(gpu_ops, random_runs_differ)
{
    SKIP_WITHOUT_GPU();
    xe_status st;
    xe_graph *g = xe_parse_string("xlac.graph v1\ny = random_uniform(shape=[64], seed=3)\noutput y\n",
                                  "r.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    const xe_node *n = g->nodes[xe_graph_find(g, "y")];
    uint64_t state = 0;
    float h[2][64];
    for (int r = 0; r < 2; r++) {
        xe_tensor *out = xe_tensor_new(XE_F32, &n->type.shape, TEST_DEV, &st);
        cr_assert_not_null(out, "%s", st.msg);
        xe_kernel_args a = {g, n, 0, NULL, out, NULL, &state, NULL, NULL, NULL};
        cr_assert_eq(xe_op_kernel(xe_op_get(n->op), TEST_DEV)(&a, &st), XE_OK, "%s", st.msg);
        xe_tensor *host = xe_tensor_to_device(out, XE_DEV_CPU, &st);
        cr_assert_not_null(host, "%s", st.msg);
        memcpy(h[r], host->data, sizeof h[r]);
        xe_tensor_release(host);
        xe_tensor_release(out);
    }
    cr_assert_eq(state, 2);
    cr_assert_neq(memcmp(h[0], h[1], sizeof h[0]), 0, "two runs gave the same values");
    for (int i = 0; i < 64; i++)
        cr_assert(h[0][i] >= 0.0f && h[0][i] < 1.0f, "uniform value %g outside [0, 1)", h[0][i]);
    xe_graph_destroy(g);
}
