/*
 * The CPU compute engine (executor/devices/cpu/dnnl_*.c, oneDNN) as a session runs
 * it: conv2d and matmul with constant weights (const nodes), where the
 * primitive is made once per node and shape and the weights are packed
 * into the engine's layout once. test_ops_window and test_ops cover the
 * kernels called without a cache (a primitive per call); here every case
 * runs several times through a session, with new inputs and with a new
 * input shape (the cached primitive must be replaced), and each result is
 * compared with a direct double-precision reference. NaN never passes
 * unless the reference is NaN.
 *
 * Tolerance: f32 1e-5 relative to the sum of |terms| of each output.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/dnnl_engine.h"
#include "support/ref.h"
#include "xlac/xlac.h"

static xe_status st;

static double at(const xe_tensor *t, int64_t i)
{
    return xe_load_f64(t->data, t->dtype, i);
}

/* A const node holding t (the graph takes a reference). */
static int add_const(xe_graph *g, const char *name, xe_tensor *t)
{
    int i = xe_graph_add_node(g, name, XE_OP_CONST, NULL, 0, &st);
    cr_assert(i >= 0, "%s", st.msg);
    g->nodes[i]->value = xe_tensor_retain(t);
    g->nodes[i]->type = (xe_type){t->dtype, t->shape};
    return i;
}

/* A session over g (which it takes), op by op with no graph pass. */
static xe_session *session_of(xe_graph *g)
{
    cr_assert_eq(xe_graph_infer(g, &st), XE_OK, "%s", st.msg);
    xe_session_options opt = {.no_passes = true};
    xe_session *s = xe_session_new(g, &opt, &st);
    cr_assert_not_null(s, "%s", st.msg);
    return s;
}

/* Runs s on one input and returns its one output. */
static xe_tensor *run1(xe_session *s, xe_tensor *x)
{
    xe_tensor *out = NULL;
    cr_assert_eq(xe_session_run(s, &x, &out, &st), XE_OK, "%s", st.msg);
    return out;
}

/* ---- conv2d -------------------------------------------------------------------------------- */

typedef struct conv_geo {
    int64_t cg, mg, groups, k[2], s[2], d[2], pads[4]; /* pads [t, l, b, r] */
} conv_geo;

static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1)
{
    return (in + p0 + p1 - (d * (k - 1) + 1)) / s + 1;
}

/* Checks y = conv(x, w) + b against a direct double-precision loop. */
static void check_conv(const xe_tensor *y, const xe_tensor *x, const xe_tensor *w,
                       const xe_tensor *b, const conv_geo *g, const char *what)
{
    int64_t N = x->shape.dims[0], C = x->shape.dims[1], H = x->shape.dims[2], W = x->shape.dims[3];
    int64_t M = g->mg * g->groups;
    int64_t OH = out_dim(H, g->k[0], g->s[0], g->d[0], g->pads[0], g->pads[2]);
    int64_t OW = out_dim(W, g->k[1], g->s[1], g->d[1], g->pads[1], g->pads[3]);
    cr_assert(y->shape.rank == 4 && y->shape.dims[0] == N && y->shape.dims[1] == M &&
                  y->shape.dims[2] == OH && y->shape.dims[3] == OW,
              "%s: output shape", what);
    for (int64_t i = 0; i < N * M * OH * OW; i++) {
        int64_t ow = i % OW, oh = i / OW % OH, m = i / (OW * OH) % M, n = i / (OW * OH * M);
        double acc = at(b, m), mag = fabs(acc);
        for (int64_t c = 0; c < g->cg; c++)
            for (int64_t ki = 0; ki < g->k[0]; ki++)
                for (int64_t kj = 0; kj < g->k[1]; kj++) {
                    int64_t ih = oh * g->s[0] - g->pads[0] + ki * g->d[0];
                    int64_t iw = ow * g->s[1] - g->pads[1] + kj * g->d[1];
                    if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                        continue;
                    double t = at(x, ((n * C + (m / g->mg) * g->cg + c) * H + ih) * W + iw) *
                               at(w, ((m * g->cg + c) * g->k[0] + ki) * g->k[1] + kj);
                    acc += t;
                    mag += fabs(t);
                }
        ref_expect(what, XE_F32, i, at(y, i), acc, mag);
    }
}

/* The graph x -> conv2d(x, const w, const b) with x's batch and height unknown. */
static xe_session *conv_session(const conv_geo *g, xe_tensor *w, xe_tensor *b, int64_t wd)
{
    xe_graph *gr = xe_graph_new("engine.xg");
    xe_type xt = {XE_F32, ref_shape(4, (int64_t[]){XE_DIM_UNKNOWN, g->cg * g->groups,
                                                   XE_DIM_UNKNOWN, wd})};
    int in[3] = {xe_graph_add_input(gr, "x", &xt, &st), add_const(gr, "w", w),
                 add_const(gr, "b", b)};
    int c = xe_graph_add_node(gr, "conv", XE_OP_CONV2D, in, 3, &st);
    cr_assert(c >= 0, "%s", st.msg);
    xe_node *n = gr->nodes[c];
    xe_node_set_ints(n, "strides", g->s, 2, &st);
    xe_node_set_ints(n, "dilations", g->d, 2, &st);
    xe_node_set_ints(n, "pads", g->pads, 4, &st);
    xe_node_set_int(n, "groups", g->groups, &st);
    cr_assert_eq(xe_graph_add_output(gr, c, &st), XE_OK, "%s", st.msg);
    return session_of(gr);
}

/* The conv2d node of graph g (one of conv_session's). */
static const xe_node *conv_node(const xe_graph *g)
{
    const xe_node *n = NULL;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->op == XE_OP_CONV2D)
            n = g->nodes[i];
    cr_assert_not_null(n);
    return n;
}

/* One geometry: three runs (two inputs of one shape, then a new batch and height). */
static void conv_geo_case(const conv_geo *g, int64_t h, int64_t wd)
{
    int64_t M = g->mg * g->groups, C = g->cg * g->groups;
    xe_shape ws = ref_shape(4, (int64_t[]){M, g->cg, g->k[0], g->k[1]}), bs = ref_shape(1, &M);
    xe_tensor *w = ref_random_tensor(XE_F32, &ws, -1, 1), *b = ref_random_tensor(XE_F32, &bs, -1, 1);
    xe_session *s = conv_session(g, w, b, wd);
    int64_t shapes[3][2] = {{2, h}, {2, h}, {1, h + 3}};
    for (int r = 0; r < 3; r++) {
        xe_shape xs = ref_shape(4, (int64_t[]){shapes[r][0], C, shapes[r][1], wd});
        xe_tensor *x = ref_random_tensor(XE_F32, &xs, -1, 1), *y = run1(s, x);
        char what[200];
        snprintf(what, sizeof what,
                 "conv run %d x[%lld,%lld,%lld,%lld] k%lldx%lld g%lld s%lld,%lld d%lld,%lld "
                 "pads %lld,%lld,%lld,%lld",
                 r, (long long)xs.dims[0], (long long)C, (long long)xs.dims[2], (long long)wd,
                 (long long)g->k[0], (long long)g->k[1], (long long)g->groups,
                 (long long)g->s[0], (long long)g->s[1], (long long)g->d[0], (long long)g->d[1],
                 (long long)g->pads[0], (long long)g->pads[1], (long long)g->pads[2],
                 (long long)g->pads[3]);
        check_conv(y, x, w, b, g, what);
        xe_tensor_release(x);
        xe_tensor_release(y);
    }
    xe_session_destroy(s);
    xe_tensor_release(w);
    xe_tensor_release(b);
}

Test(engine, conv_variants_with_constant_weights)
{
    ref_seed(26);
    static const conv_geo fixed[] = {
        {.cg = 16, .mg = 32, .groups = 1, .k = {3, 3}, .s = {1, 1}, .d = {1, 1}, .pads = {1, 1, 1, 1}},
        {.cg = 3, .mg = 16, .groups = 1, .k = {7, 7}, .s = {2, 2}, .d = {1, 1}, .pads = {3, 3, 3, 3}},
        {.cg = 32, .mg = 16, .groups = 1, .k = {1, 1}, .s = {1, 1}, .d = {1, 1}},        /* pointwise */
        {.cg = 1, .mg = 1, .groups = 32, .k = {3, 3}, .s = {1, 1}, .d = {1, 1}, .pads = {1, 1, 1, 1}},
        {.cg = 1, .mg = 1, .groups = 24, .k = {5, 5}, .s = {2, 2}, .d = {1, 1}, .pads = {1, 2, 2, 1}},
        {.cg = 1, .mg = 2, .groups = 8, .k = {3, 3}, .s = {1, 1}, .d = {2, 2}, .pads = {2, 2, 2, 2}},
        {.cg = 8, .mg = 8, .groups = 4, .k = {3, 3}, .s = {2, 1}, .d = {1, 1}, .pads = {0, 1, 1, 0}},
        {.cg = 16, .mg = 16, .groups = 1, .k = {3, 1}, .s = {1, 1}, .d = {3, 1}, .pads = {0, 0, 2, 0}},
        {.cg = 5, .mg = 7, .groups = 1, .k = {1, 3}, .s = {1, 2}, .d = {1, 1}, .pads = {0, 0, 0, 0}},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        conv_geo_case(&fixed[i], 11, 13);
    for (int t = 0; t < 40; t++) { /* random: plain, grouped, depthwise, depthwise multiplier */
        int kind = t % 4;
        conv_geo g = {.groups = kind == 0 ? 1 : ref_irand(2, 6)};
        g.cg = kind >= 2 ? 1 : ref_irand(1, 9);
        g.mg = kind == 2 ? 1 : ref_irand(1, 9);
        for (int k = 0; k < 2; k++) {
            g.k[k] = ref_irand(1, 3);
            g.s[k] = ref_irand(1, 2);
            g.d[k] = ref_irand(1, 2);
        }
        for (int k = 0; k < 4; k++)
            g.pads[k] = ref_irand(0, 2);
        conv_geo_case(&g, ref_irand(6, 10), ref_irand(6, 10));
    }
}

/* A NaN in the input reaches exactly the outputs whose window covers it. */
Test(engine, conv_nan_propagates)
{
    ref_seed(7);
    conv_geo g = {.cg = 16, .mg = 16, .groups = 1, .k = {3, 3}, .s = {1, 1}, .d = {1, 1},
                  .pads = {1, 1, 1, 1}};
    xe_shape ws = ref_shape(4, (int64_t[]){16, 16, 3, 3}), bs = ref_shape(1, (int64_t[]){16});
    xe_tensor *w = ref_random_tensor(XE_F32, &ws, -1, 1), *b = ref_random_tensor(XE_F32, &bs, -1, 1);
    xe_session *s = conv_session(&g, w, b, 8);
    xe_shape xs = ref_shape(4, (int64_t[]){1, 16, 8, 8});
    xe_tensor *x = ref_random_tensor(XE_F32, &xs, -1, 1);
    ((float *)x->data)[3 * 64 + 4 * 8 + 4] = NAN; /* channel 3, row 4, column 4 */
    xe_tensor *y = run1(s, x);
    for (int64_t i = 0; i < 16 * 64; i++) {
        int64_t r = i / 8 % 8, c = i % 8;
        bool covered = r >= 3 && r <= 5 && c >= 3 && c <= 5;
        cr_assert(isnan(((float *)y->data)[i]) == covered, "output %lld: NaN %d, covered %d",
                  (long long)i, isnan(((float *)y->data)[i]), covered);
    }
    xe_tensor_release(x);
    xe_tensor_release(y);
    xe_session_destroy(s);
    xe_tensor_release(w);
    xe_tensor_release(b);
}

/*
 * Constant weights are packed once: after the first run, the const's own
 * memory is overwritten, and the next run still computes with the weights
 * it packed (a kernel that read the const each run would see the zeros).
 */
Test(engine, constant_weights_are_packed_once)
{
    ref_seed(3);
    conv_geo g = {.cg = 16, .mg = 32, .groups = 1, .k = {3, 3}, .s = {1, 1}, .d = {1, 1},
                  .pads = {1, 1, 1, 1}};
    xe_shape ws = ref_shape(4, (int64_t[]){32, 16, 3, 3}), bs = ref_shape(1, (int64_t[]){32});
    xe_tensor *w = ref_random_tensor(XE_F32, &ws, -1, 1), *b = ref_random_tensor(XE_F32, &bs, -1, 1);
    xe_tensor *w0 = ref_random_tensor(XE_F32, &ws, 0, 0);
    memcpy(w0->data, w->data, w->nbytes);
    xe_session *s = conv_session(&g, w, b, 9);
    xe_shape xs = ref_shape(4, (int64_t[]){1, 16, 9, 9});
    xe_tensor *x = ref_random_tensor(XE_F32, &xs, -1, 1);
    xe_tensor_release(run1(s, x));
    memset(w->data, 0, w->nbytes);
    xe_tensor *y = run1(s, x);
    check_conv(y, x, w0, b, &g, "second run after the const was zeroed");
    xe_tensor_release(x);
    xe_tensor_release(y);
    xe_session_destroy(s);
    xe_tensor_release(w);
    xe_tensor_release(w0);
    xe_tensor_release(b);
}

/* ---- matmul -------------------------------------------------------------------------------- */

/* Checks c = op(a) op(b) (numpy matmul rules, batch broadcast) against doubles. */
static void check_matmul(const xe_tensor *c, const xe_tensor *a, const xe_tensor *b, bool ta,
                         bool tb, const char *what)
{
    const xe_shape *as = &a->shape, *bs = &b->shape;
    int64_t ar = as->dims[as->rank - 2], ac = as->dims[as->rank - 1];
    int64_t br = bs->dims[bs->rank - 2], bc = bs->dims[bs->rank - 1];
    int64_t M = ta ? ac : ar, K = ta ? ar : ac, N = tb ? br : bc;
    int64_t nb = xe_tensor_numel(c) / (M * N);
    xe_shape cb = c->shape;
    cb.rank -= 2;
    for (int64_t i = 0; i < nb; i++) {
        int64_t ia = 0, ib = 0, ma = 1, mb = 1, f = i;
        for (int d = cb.rank - 1; d >= 0; d--) { /* right-aligned broadcast batch index */
            int64_t k = f % cb.dims[d];
            f /= cb.dims[d];
            int da = d - (cb.rank - (as->rank - 2)), db = d - (cb.rank - (bs->rank - 2));
            if (da >= 0) {
                ia += (as->dims[da] == 1 ? 0 : k) * ma;
                ma *= as->dims[da];
            }
            if (db >= 0) {
                ib += (bs->dims[db] == 1 ? 0 : k) * mb;
                mb *= bs->dims[db];
            }
        }
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double acc = 0, mag = 0;
                for (int64_t k = 0; k < K; k++) {
                    double t = at(a, ia * ar * ac + (ta ? k * ac + m : m * ac + k)) *
                               at(b, ib * br * bc + (tb ? n * bc + k : k * bc + n));
                    acc += t;
                    mag += fabs(t);
                }
                ref_expect(what, XE_F32, (i * M + m) * N + n, at(c, (i * M + m) * N + n), acc, mag);
            }
    }
}

/* The stored shape of an operand whose logical last two dims are d (swapped when transposed). */
static xe_shape stored(int r, const int64_t *d, bool trans)
{
    xe_shape s = ref_shape(r, d);
    if (trans) {
        s.dims[r - 2] = d[r - 1];
        s.dims[r - 1] = d[r - 2];
    }
    return s;
}

/* x (logical dims xd, batch unknown) @ const b (logical bd), three runs (the last with batch 1). */
static void matmul_case(int xr, const int64_t *xd, int br, const int64_t *bd, bool ta, bool tb)
{
    xe_shape xs = stored(xr, xd, ta), bs = stored(br, bd, tb);
    xe_tensor *b = ref_random_tensor(XE_F32, &bs, -1, 1);
    xe_graph *g = xe_graph_new("engine.xg");
    xe_type xt = {XE_F32, xs};
    for (int d = 0; d < xr - 2; d++)
        xt.shape.dims[d] = XE_DIM_UNKNOWN;
    int in[2] = {xe_graph_add_input(g, "x", &xt, &st), add_const(g, "b", b)};
    int m = xe_graph_add_node(g, "mm", XE_OP_MATMUL, in, 2, &st);
    cr_assert(m >= 0, "%s", st.msg);
    xe_node_set_bool(g->nodes[m], "transpose_a", ta, &st);
    xe_node_set_bool(g->nodes[m], "transpose_b", tb, &st);
    cr_assert_eq(xe_graph_add_output(g, m, &st), XE_OK, "%s", st.msg);
    xe_session *s = session_of(g);
    for (int r = 0; r < 3; r++) {
        xe_shape rs = xs;
        if (r == 2 && xr > 2)
            rs.dims[0] = 1; /* broadcasts against any batch of b */
        xe_tensor *x = ref_random_tensor(XE_F32, &rs, -1, 1), *c = run1(s, x);
        char what[160];
        snprintf(what, sizeof what, "matmul run %d rank %d @ rank %d ta %d tb %d", r, xr, br, ta,
                 tb);
        check_matmul(c, x, b, ta, tb, what);
        xe_tensor_release(x);
        xe_tensor_release(c);
    }
    xe_session_destroy(s);
    xe_tensor_release(b);
}

Test(engine, matmul_forms_with_constant_weights)
{
    ref_seed(11);
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        matmul_case(2, (int64_t[]){37, 64}, 2, (int64_t[]){64, 48}, ta, tb);
        matmul_case(3, (int64_t[]){3, 17, 33}, 2, (int64_t[]){33, 65}, ta, tb);
        matmul_case(3, (int64_t[]){2, 5, 40}, 3, (int64_t[]){2, 40, 24}, ta, tb);
        matmul_case(4, (int64_t[]){2, 1, 9, 16}, 3, (int64_t[]){3, 16, 8}, ta, tb);
        /* rows of b a multiple of 256 bytes: where oneDNN takes b plain, it is stored padded
           (dnnl_matmul.c padded_plain), a batch of them too */
        matmul_case(2, (int64_t[]){24, 64}, 2, (int64_t[]){64, 256}, ta, tb);
        matmul_case(3, (int64_t[]){2, 5, 128}, 3, (int64_t[]){2, 128, 64}, ta, tb);
    }
    matmul_case(2, (int64_t[]){1, 768}, 2, (int64_t[]){768, 768}, false, false);
    matmul_case(2, (int64_t[]){128, 256}, 2, (int64_t[]){256, 768}, false, true);
    /* b one matrix with batch dims of 1: a's batch folded into its rows */
    matmul_case(4, (int64_t[]){2, 3, 7, 16}, 3, (int64_t[]){1, 16, 24}, false, false);
    matmul_case(3, (int64_t[]){4, 9, 32}, 4, (int64_t[]){1, 1, 32, 8}, false, true);
}

/*
 * x [2, 5, 16] @ const b [16, 64], as a transformer's linear layer: the batch is folded into the
 * rows and b packed once (a rank-3 product kept b plain and read it on every run). The second
 * run, after b's data was zeroed, must still compute with the packed copy. (Where oneDNN takes
 * b plain, as its gemm-based matmul on AVX2 does, b is copied only when its rows are padded:
 * 64 floats are 256 bytes, so they are; 8 were read in place and this test failed there.)
 */
Test(engine, folded_batch_packs_the_weights_once)
{
    ref_seed(12);
    xe_shape xs = ref_shape(3, (int64_t[]){2, 5, 16}), bs = ref_shape(2, (int64_t[]){16, 64});
    xe_tensor *b = ref_random_tensor(XE_F32, &bs, -1, 1), *b0 = ref_random_tensor(XE_F32, &bs, 0, 0);
    memcpy(b0->data, b->data, b->nbytes);
    xe_graph *g = xe_graph_new("engine.xg");
    xe_type xt = {XE_F32, xs};
    int in[2] = {xe_graph_add_input(g, "x", &xt, &st), add_const(g, "b", b)};
    int m = xe_graph_add_node(g, "mm", XE_OP_MATMUL, in, 2, &st);
    cr_assert(m >= 0, "%s", st.msg);
    cr_assert_eq(xe_graph_add_output(g, m, &st), XE_OK, "%s", st.msg);
    xe_session *s = session_of(g);
    xe_tensor *x = ref_random_tensor(XE_F32, &xs, -1, 1);
    xe_tensor_release(run1(s, x));
    memset(b->data, 0, b->nbytes);
    xe_tensor *c = run1(s, x);
    check_matmul(c, x, b0, false, false, "second run after the const was zeroed");
    xe_tensor_release(x);
    xe_tensor_release(c);
    xe_session_destroy(s);
    xe_tensor_release(b);
    xe_tensor_release(b0);
}

/* Two non-constant operands (attention's Q.K^T), batched, with transposes. */
Test(engine, matmul_of_two_inputs)
{
    ref_seed(12);
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        xe_shape as = stored(4, (int64_t[]){2, 3, 19, 32}, ta), bs = stored(4, (int64_t[]){2, 3, 32, 21}, tb);
        xe_tensor *a = ref_random_tensor(XE_F32, &as, -1, 1), *b = ref_random_tensor(XE_F32, &bs, -1, 1);
        xe_graph *g = xe_graph_new("engine.xg");
        xe_type at_ = {XE_F32, as}, bt = {XE_F32, bs};
        int in[2] = {xe_graph_add_input(g, "a", &at_, &st), xe_graph_add_input(g, "b", &bt, &st)};
        int m = xe_graph_add_node(g, "mm", XE_OP_MATMUL, in, 2, &st);
        xe_node_set_bool(g->nodes[m], "transpose_a", ta, &st);
        xe_node_set_bool(g->nodes[m], "transpose_b", tb, &st);
        cr_assert_eq(xe_graph_add_output(g, m, &st), XE_OK, "%s", st.msg);
        xe_session *s = session_of(g);
        xe_tensor *ins[2] = {a, b}, *c = NULL;
        cr_assert_eq(xe_session_run(s, ins, &c, &st), XE_OK, "%s", st.msg);
        check_matmul(c, a, b, ta, tb, "matmul of two inputs");
        xe_tensor_release(c);
        xe_session_destroy(s);
        xe_tensor_release(a);
        xe_tensor_release(b);
    }
}

/* ---- threads ------------------------------------------------------------------------------- */

/* A session's thread count is the calling thread's team for its runs (kernels, loops, oneDNN). */
Test(engine, session_threads_set_the_one_count)
{
    for (int n = 1; n <= 3; n++) {
        xe_graph *g = xe_graph_new("engine.xg");
        xe_type xt = {XE_F32, ref_shape(2, (int64_t[]){8, 8})};
        int in[2] = {xe_graph_add_input(g, "x", &xt, &st), 0};
        in[1] = in[0];
        int m = xe_graph_add_node(g, "mm", XE_OP_MATMUL, in, 2, &st);
        cr_assert_eq(xe_graph_add_output(g, m, &st), XE_OK, "%s", st.msg);
        cr_assert_eq(xe_graph_infer(g, &st), XE_OK, "%s", st.msg);
        xe_session_options opt = {.no_passes = true, .threads = n};
        xe_session *s = xe_session_new(g, &opt, &st);
        cr_assert_not_null(s, "%s", st.msg);
        xe_tensor *x = ref_random_tensor(XE_F32, &xt.shape, -1, 1), *y = run1(s, x);
        cr_assert_eq(xe_threads(), n, "threads %d after a run with threads=%d", xe_threads(), n);
        check_matmul(y, x, x, false, false, "threads");
        xe_tensor_release(x);
        xe_tensor_release(y);
        xe_session_destroy(s);
    }
}

/* ---- one kernel cache slot shared by threads (a compiled program shared by sessions) ------- */

typedef struct shared_slot_job {
    xe_graph *g;            /* x -> conv2d(x, const w, const b) */
    xe_kernel_cache *slot;  /* the one slot every thread uses */
    int64_t batch;          /* this thread's batch: a shape of its own on the shelf */
    bool ok;
    char why[XE_STATUS_MSG_MAX + 64];
} shared_slot_job;

static void *shared_slot_worker(void *arg)
{
    shared_slot_job *j = arg;
    const xe_node *n = conv_node(j->g);
    xe_tensor *w = j->g->nodes[n->inputs[1]]->value, *b = j->g->nodes[n->inputs[2]]->value;
    xe_shape xs = ref_shape(4, (int64_t[]){j->batch, 16, 7, 7}), ys = ref_shape(4, (int64_t[]){j->batch, 16, 7, 7});
    xe_status ts;
    xe_status_clear(&ts);
    xe_tensor *x = xe_tensor_new(XE_F32, &xs, XE_DEV_CPU, &ts), *y = xe_tensor_new(XE_F32, &ys, XE_DEV_CPU, &ts);
    for (int64_t i = 0; i < xe_tensor_numel(x); i++)
        ((float *)x->data)[i] = (float)((i * 7 + j->batch) % 5 - 2) * 0.25f;
    xe_tensor *in[3] = {x, w, b};
    xe_kernel_args a = {.graph = j->g, .node = n, .n_in = 3, .in = in, .out = y, .cache = j->slot};
    j->ok = true;
    for (int it = 0; it < 20 && j->ok; it++) {
        memset(y->data, 0, y->nbytes);
        if (xe_op_kernel(xe_op_get(XE_OP_CONV2D), XE_DEV_CPU)(&a, &ts) != XE_OK) {
            snprintf(j->why, sizeof j->why, "%s", ts.msg);
            j->ok = false;
        }
        for (int64_t i = 0; j->ok && i < xe_tensor_numel(y); i += 97) { /* a sample, against doubles */
            int64_t ow = i % 7, oh = i / 7 % 7, m = i / 49 % 16, nb = i / (49 * 16);
            double acc = ((float *)b->data)[m];
            for (int64_t c = 0; c < 16; c++)
                for (int64_t ki = 0; ki < 3; ki++)
                    for (int64_t kj = 0; kj < 3; kj++) {
                        int64_t ih = oh - 1 + ki, iw = ow - 1 + kj;
                        if (ih >= 0 && ih < 7 && iw >= 0 && iw < 7)
                            acc += (double)((float *)x->data)[((nb * 16 + c) * 7 + ih) * 7 + iw] *
                                   ((float *)w->data)[((m * 16 + c) * 3 + ki) * 3 + kj];
                    }
            if (fabs(((float *)y->data)[i] - acc) > 1e-4 * (1 + fabs(acc))) {
                snprintf(j->why, sizeof j->why, "batch %lld, element %lld: %g, want %g", (long long)j->batch,
                         (long long)i, ((float *)y->data)[i], acc);
                j->ok = false;
            }
        }
    }
    xe_tensor_release(x);
    xe_tensor_release(y);
    return NULL;
}

/* Threads that share one slot, each at its own shape, all get right results (entries are never replaced). */
Test(engine, threads_share_one_kernel_cache_slot)
{
    ref_seed(5);
    conv_geo g = {.cg = 16, .mg = 16, .groups = 1, .k = {3, 3}, .s = {1, 1}, .d = {1, 1}, .pads = {1, 1, 1, 1}};
    xe_shape ws = ref_shape(4, (int64_t[]){16, 16, 3, 3}), bs = ref_shape(1, (int64_t[]){16});
    xe_tensor *w = ref_random_tensor(XE_F32, &ws, -1, 1), *b = ref_random_tensor(XE_F32, &bs, -1, 1);
    xe_session *s = conv_session(&g, w, b, 7);
    xe_kernel_cache slot = {0};
    enum { N = 12 }; /* more shapes than a shelf holds: the last ones run on primitives of their own */
    shared_slot_job jobs[N];
    pthread_t th[N];
    for (int k = 0; k < N; k++) {
        jobs[k] = (shared_slot_job){.g = (xe_graph *)xe_session_graph(s), .slot = &slot, .batch = 1 + k};
        cr_assert_eq(pthread_create(&th[k], NULL, shared_slot_worker, &jobs[k]), 0);
    }
    for (int k = 0; k < N; k++)
        pthread_join(th[k], NULL);
    for (int k = 0; k < N; k++)
        cr_expect(jobs[k].ok, "thread %d: %s", k, jobs[k].why);
    if (slot.free)
        slot.free(slot.data);
    xe_session_destroy(s);
    xe_tensor_release(w);
    xe_tensor_release(b);
}

/* ---- post-ops: a conv with its residual sum and ReLU in one call (compiled clusters) ------- */

/* The activation of post bits applied to v, in double. */
static double post_ref(unsigned post, double v)
{
    if (post & XE_DNNL_POST_GELU)
        return 0.5 * v * (1 + erf(v / sqrt(2.0)));
    if (post & XE_DNNL_POST_GELU_TANH)
        return 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    if (post & XE_DNNL_POST_SIGMOID)
        return 1 / (1 + exp(-v));
    if (post & XE_DNNL_POST_SILU)
        return v / (1 + exp(-v));
    if (post & XE_DNNL_POST_HARDSWISH)
        return v * (v < -3 ? 0 : v > 3 ? 1 : v / 6 + 0.5);
    return v;
}

/* A conv of geometry g with random weights and bias, its input x [2, C, h, wd] and its plain
   output (conv + bias, op by op), and a residual of that shape, for the engine's calls. */
typedef struct conv_fixture {
    xe_tensor *w, *b, *x, *plain, *res;
    xe_session *s;
    const xe_graph *g;
    const xe_node *n;
} conv_fixture;

static conv_fixture fixture_make(const conv_geo *g, int64_t h, int64_t wd)
{
    int64_t M = g->mg * g->groups, C = g->cg * g->groups;
    xe_shape ws = ref_shape(4, (int64_t[]){M, g->cg, g->k[0], g->k[1]}), bs = ref_shape(1, &M);
    conv_fixture f = {.w = ref_random_tensor(XE_F32, &ws, -1, 1), .b = ref_random_tensor(XE_F32, &bs, -1, 1)};
    f.s = conv_session(g, f.w, f.b, wd);
    xe_shape xs = ref_shape(4, (int64_t[]){2, C, h, wd});
    f.x = ref_random_tensor(XE_F32, &xs, -1, 1);
    f.plain = run1(f.s, f.x);
    f.g = xe_session_graph(f.s);
    f.n = conv_node(f.g);
    f.res = ref_random_tensor(XE_F32, &f.plain->shape, -2, 2);
    return f;
}

static void fixture_free(conv_fixture *f)
{
    xe_tensor_release(f->res);
    xe_tensor_release(f->plain);
    xe_tensor_release(f->x);
    xe_session_destroy(f->s);
    xe_tensor_release(f->w);
    xe_tensor_release(f->b);
}

/* One geometry, each post-op combination, with and without a cache slot, against doubles. */
static void post_case(const conv_geo *g, int64_t h, int64_t wd)
{
    conv_fixture f = fixture_make(g, h, wd);
    xe_kernel_cache slot = {0};
    static const unsigned posts[] = {XE_DNNL_POST_SUM, XE_DNNL_POST_GELU, XE_DNNL_POST_SUM | XE_DNNL_POST_GELU_TANH,
                                     XE_DNNL_POST_SIGMOID, XE_DNNL_POST_SILU, XE_DNNL_POST_SUM | XE_DNNL_POST_SILU,
                                     XE_DNNL_POST_HARDSWISH, XE_DNNL_POST_SUM | XE_DNNL_POST_HARDSWISH};
    for (size_t pi = 0; pi < sizeof posts / sizeof *posts; pi++)
        for (int cached = 0; cached < 2; cached++) {
            unsigned post = posts[pi];
            xe_tensor *out = ref_zeros(XE_F32, &f.plain->shape), *in[3] = {f.x, f.w, f.b};
            xe_kernel_args a = {.graph = f.g, .node = f.n, .n_in = 3, .in = in, .out = out,
                                .cache = cached ? &slot : NULL};
            bool sum = post & XE_DNNL_POST_SUM;
            cr_assert_eq(xe_dnnl_conv2d_post(&a, sum ? f.res : NULL, post, &st), XE_OK, "%s", st.msg);
            for (int64_t i = 0; i < xe_tensor_numel(out); i++) {
                double want = post_ref(post, at(f.plain, i) + (sum ? at(f.res, i) : 0));
                cr_assert(fabs(at(out, i) - want) <= 1e-4 * (1 + fabs(want)),
                          "post %u cached %d groups %lld element %lld: %g, want %g", post, cached,
                          (long long)g->groups, (long long)i, at(out, i), want);
            }
            xe_tensor_release(out);
        }
    if (slot.free)
        slot.free(slot.data);
    fixture_free(&f);
}

Test(engine, conv_post_ops_sum_and_activations)
{
    ref_seed(9);
    static const conv_geo geos[] = {
        {.cg = 16, .mg = 32, .groups = 1, .k = {3, 3}, .s = {1, 1}, .d = {1, 1}, .pads = {1, 1, 1, 1}},
        {.cg = 1, .mg = 1, .groups = 24, .k = {3, 3}, .s = {2, 2}, .d = {1, 1}, .pads = {1, 1, 1, 1}},
        {.cg = 4, .mg = 6, .groups = 3, .k = {1, 1}, .s = {1, 1}, .d = {1, 1}},
        {.cg = 3, .mg = 5, .groups = 1, .k = {3, 2}, .s = {1, 2}, .d = {2, 1}, .pads = {0, 1, 2, 0}},
    };
    for (size_t i = 0; i < sizeof geos / sizeof *geos; i++)
        post_case(&geos[i], 9, 10);
}

/* ---- chained layouts: a cluster's chain of convs hands on values in the engine's layout ---- */

/* The offset of NCHW element (n, c, y, x) of a [N, C, H, W] value in layout tag (nhwc or
   nChw8c). */
static int64_t chained_at(dnnl_format_tag_t tag, const xe_shape *s, int64_t n, int64_t c, int64_t y,
                          int64_t x)
{
    int64_t C = s->dims[1], H = s->dims[2], W = s->dims[3];
    if (tag == dnnl_nhwc)
        return ((n * H + y) * W + x) * C + c;
    return (((n * (C / 8) + c / 8) * H + y) * W + x) * 8 + c % 8;
}

/* t (NCHW) rewritten into layout tag (to), or back from it (!to), as a new tensor of t's type. */
static xe_tensor *relayout(const xe_tensor *t, dnnl_format_tag_t tag, bool to)
{
    const xe_shape *s = &t->shape;
    xe_tensor *r = ref_zeros(XE_F32, s);
    const float *src = t->data;
    float *dst = r->data;
    int64_t i = 0;
    for (int64_t n = 0; n < s->dims[0]; n++)
        for (int64_t c = 0; c < s->dims[1]; c++)
            for (int64_t y = 0; y < s->dims[2]; y++)
                for (int64_t x = 0; x < s->dims[3]; x++, i++) {
                    int64_t j = chained_at(tag, s, n, c, y, x);
                    if (to)
                        dst[j] = src[i];
                    else
                        dst[i] = src[j];
                }
    return r;
}

/* One geometry in chain layout tag: each side chained or not, with and without a residual sum, the
   output (back in NCHW) against the plain conv's within float rounding. */
static void chained_case(const conv_geo *g, dnnl_format_tag_t tag)
{
    conv_fixture f = fixture_make(g, 9, 10);
    xe_tensor *x_ch = relayout(f.x, tag, true), *res_ch = relayout(f.res, tag, true);
    xe_kernel_cache slot = {0};
    xe_dnnl_chain_layout_set(tag);
    static const unsigned sides[] = {XE_DNNL_SRC_CHAIN, XE_DNNL_DST_CHAIN, XE_DNNL_LAYOUTS};
    for (int si = 0; si < 3; si++)
        for (int sum = 0; sum < 2; sum++) {
            unsigned post = sides[si] | (sum ? XE_DNNL_POST_SUM : 0u);
            bool src = post & XE_DNNL_SRC_CHAIN, dst = post & XE_DNNL_DST_CHAIN;
            xe_tensor *out = ref_zeros(XE_F32, &f.plain->shape), *in[3] = {src ? x_ch : f.x, f.w, f.b};
            xe_kernel_args a = {.graph = f.g, .node = f.n, .n_in = 3, .in = in, .out = out, .cache = &slot};
            const xe_tensor *r = sum ? (dst ? res_ch : f.res) : NULL;
            cr_assert_eq(xe_dnnl_conv2d_post(&a, r, post, &st), XE_OK, "%s", st.msg);
            xe_tensor *got = dst ? relayout(out, tag, false) : xe_tensor_retain(out);
            for (int64_t i = 0; i < xe_tensor_numel(got); i++) {
                double want = at(f.plain, i) + (sum ? at(f.res, i) : 0);
                cr_assert(fabs(at(got, i) - want) <= 1e-4 * (1 + fabs(want)),
                          "%s, post %#x, groups %lld, element %lld: %g, want %g",
                          tag == dnnl_nhwc ? "nhwc" : "nChw8c", post, (long long)g->groups,
                          (long long)i, at(got, i), want);
            }
            xe_tensor_release(got);
            xe_tensor_release(out);
        }
    xe_dnnl_chain_layout_set(dnnl_format_tag_undef);
    if (slot.free)
        slot.free(slot.data);
    xe_tensor_release(x_ch);
    xe_tensor_release(res_ch);
    fixture_free(&f);
}

Test(engine, chained_convs_read_and_write_the_chain_layout)
{
    ref_seed(12);
    static const conv_geo geos[] = {
        {.cg = 16, .mg = 32, .groups = 1, .k = {3, 3}, .s = {1, 1}, .d = {1, 1}, .pads = {1, 1, 1, 1}},
        {.cg = 1, .mg = 1, .groups = 24, .k = {3, 3}, .s = {2, 2}, .d = {1, 1}, .pads = {1, 1, 1, 1}},
        {.cg = 8, .mg = 16, .groups = 1, .k = {1, 1}, .s = {2, 2}, .d = {1, 1}},
        {.cg = 8, .mg = 8, .groups = 2, .k = {3, 3}, .s = {1, 1}, .d = {1, 1}, .pads = {1, 1, 1, 1}},
    };
    static const dnnl_format_tag_t tags[] = {dnnl_nhwc, dnnl_nChw8c};
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < sizeof geos / sizeof *geos; i++)
            chained_case(&geos[i], tags[t]);
}

/* A chained side whose channels nChw8c would pad is refused (the plan never makes one). */
Test(engine, an_unblockable_chained_conv_is_refused)
{
    ref_seed(13);
    conv_geo g = {.cg = 4, .mg = 4, .groups = 1, .k = {1, 1}, .s = {1, 1}, .d = {1, 1}};
    conv_fixture f = fixture_make(&g, 5, 5);
    xe_tensor *out = ref_zeros(XE_F32, &f.plain->shape), *in[3] = {f.x, f.w, f.b};
    xe_kernel_args a = {.graph = f.g, .node = f.n, .n_in = 3, .in = in, .out = out};
    xe_dnnl_chain_layout_set(dnnl_nChw8c);
    cr_expect_eq(xe_dnnl_conv2d_post(&a, NULL, XE_DNNL_LAYOUTS, &st), XE_ERR_UNSUPPORTED);
    cr_expect(strstr(st.msg, "not a multiple of 8"), "%s", st.msg);
    xe_status_clear(&st);
    xe_dnnl_chain_layout_set(dnnl_format_tag_undef);
    xe_tensor_release(out);
    fixture_free(&f);
}
