/*
 * The recurrent op (ONNX RNN, GRU, LSTM in one node: executor/ir/recurrent.h).
 * Its two CPU paths are compared with each other: f32 runs on oneDNN's RNN
 * primitives (dnnl_recurrent.c: ONNX's gate orders and biases reordered
 * into oneDNN's) and f64 in the kernel's own loop (recurrent.c), on the same
 * random operands, for every cell, direction and optional input: a gate or
 * a bias put in the wrong place by either shows as a difference far above
 * f32's rounding. (Both are checked against onnxruntime and ONNX's
 * reference in python/tests/test_recurrent.py.) The shape function refuses
 * bad attributes, counts and shapes with a message naming what is wrong.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "support/ref_dev.h"
#include "xlac/xlac.h"

static xe_status st;

/* One configuration of the op. */
typedef struct cfg {
    const char *cell, *dir, *act;
    bool bias, h0, c0, peep, lbr;
    int64_t S, N, I, H;
} cfg;

static int gates_of(const cfg *c)
{
    return !strcmp(c->cell, "lstm") ? 4 : !strcmp(c->cell, "gru") ? 3 : 1;
}

/* The operands of c in dtype dt (the same values whatever dt: seeded). */
static int operands(const cfg *c, xe_dtype dt, xe_tensor **in)
{
    int64_t D = !strcmp(c->dir, "bidirectional") ? 2 : 1, G = gates_of(c) * c->H;
    ref_seed(7);
    int n = 0;
    in[n++] = ref_random_tensor(dt, &(xe_shape){3, {c->S, c->N, c->I}}, -1, 1);
    in[n++] = ref_random_tensor(dt, &(xe_shape){3, {D, G, c->I}}, -0.6, 0.6);
    in[n++] = ref_random_tensor(dt, &(xe_shape){3, {D, G, c->H}}, -0.6, 0.6);
    if (c->bias)
        in[n++] = ref_random_tensor(dt, &(xe_shape){2, {D, 2 * G}}, -1, 1);
    if (c->h0)
        in[n++] = ref_random_tensor(dt, &(xe_shape){3, {D, c->N, c->H}}, -1, 1);
    if (c->c0)
        in[n++] = ref_random_tensor(dt, &(xe_shape){3, {D, c->N, c->H}}, -1, 1);
    if (c->peep)
        in[n++] = ref_random_tensor(dt, &(xe_shape){2, {D, 3 * c->H}}, -1, 1);
    return n;
}

static void set_attrs(ref_op *o, const cfg *c)
{
    xe_node *n = o->node;
    cr_assert_eq(xe_node_set_string(n, "cell", c->cell, &st), XE_OK);
    cr_assert_eq(xe_node_set_string(n, "direction", c->dir, &st), XE_OK);
    if (c->act)
        cr_assert_eq(xe_node_set_string(n, "activation", c->act, &st), XE_OK);
    const char *names[] = {"bias", "initial_h", "initial_c", "peepholes"};
    bool on[] = {c->bias, c->h0, c->c0, c->peep};
    for (int k = 0; k < 4; k++)
        if (on[k])
            cr_assert_eq(xe_node_set_bool(n, names[k], true, &st), XE_OK);
    if (c->lbr)
        cr_assert_eq(xe_node_set_bool(n, "linear_before_reset", true, &st), XE_OK);
}

/* c's result in dtype dt; asserts that it ran. */
static xe_tensor *run(const cfg *c, xe_dtype dt)
{
    xe_tensor *in[7];
    int n = operands(c, dt, in);
    ref_op o;
    ref_op_new(&o, XE_OP_RECURRENT, in, n);
    set_attrs(&o, c);
    xe_tensor *out = ref_op_run(&o, in, n, NULL, &st);
    cr_assert_not_null(out, "%s %s: %s", c->cell, c->dir, st.msg);
    ref_op_free(&o);
    for (int k = 0; k < n; k++)
        xe_tensor_release(in[k]);
    return out;
}

/* f32 (the engine) against f64 (the loop): shape, then every element within 2e-5 + 2e-4|want|. */
static void compare(const cfg *c)
{
    xe_tensor *e = run(c, XE_F32), *l = run(c, XE_F64);
    int64_t D = !strcmp(c->dir, "bidirectional") ? 2 : 1;
    int64_t extra = gates_of(c) == 4 ? 2 : 1;
    int64_t want[4] = {c->S + extra, D, c->N, c->H};
    cr_assert_eq(e->shape.rank, 4);
    for (int d = 0; d < 4; d++)
        cr_assert_eq(e->shape.dims[d], want[d], "%s %s: dim %d is %lld", c->cell, c->dir, d,
                     (long long)e->shape.dims[d]);
    double worst = 0, sum = 0;
    for (int64_t i = 0; i < xe_tensor_numel(e); i++) {
        double g = xe_load_f64(e->data, XE_F32, i), w = xe_load_f64(l->data, XE_F64, i);
        cr_assert(fabs(g - w) <= 2e-5 + 2e-4 * fabs(w),
                  "%s %s bias=%d h0=%d c0=%d peep=%d lbr=%d: "
                  "element %lld is %.7g, the loop says %.7g",
                  c->cell, c->dir, c->bias, c->h0, c->c0, c->peep, c->lbr, (long long)i, g, w);
        worst = fmax(worst, fabs(g - w));
        sum += fabs(w);
    }
    cr_assert(sum > 0.1 * (double)xe_tensor_numel(e) * 0.01, "a result of zeros proves nothing");
    xe_tensor_release(e);
    xe_tensor_release(l);
}

Test(recurrent, engine_matches_loop_on_every_cell_and_direction)
{
    static const char *const dirs[] = {"forward", "reverse", "bidirectional"};
    int cases = 0;
    for (int d = 0; d < 3; d++)
        for (int opt = 0; opt < 8; opt++) {
            bool b = opt & 1, h = opt & 2, x = opt & 4;
            cfg lstm = {"lstm", dirs[d], NULL, b, h, h && x, x, false, 6, 3, 5, 7};
            cfg lstm2 = {"lstm", dirs[d], NULL, b, h, !h && x, false, false, 4, 2, 3, 4};
            cfg gru = {"gru", dirs[d], NULL, b, h, false, false, x, 6, 3, 5, 7};
            cfg rnn = {"rnn", dirs[d], opt & 4 ? "relu" : "tanh", b, h, false, false, false, 5, 2,
                       4,     6};
            compare(&lstm);
            compare(&lstm2);
            compare(&gru);
            compare(&rnn);
            cases += 4;
        }
    cfg sig = {"rnn", "forward", "sigmoid", true, true, false, false, false, 3, 2, 2, 3};
    compare(&sig);
    cr_assert_eq(cases, 96);
}

/* Batch 1 and one step, the latency case, and a sequence longer than the unrolled import's
   1024-step limit. */
Test(recurrent, one_step_and_a_long_sequence)
{
    cfg one = {"lstm", "forward", NULL, true, true, true, false, false, 1, 1, 8, 16};
    cfg lng = {"gru", "bidirectional", NULL, true, false, false, false, true, 1100, 1, 2, 3};
    compare(&one);
    compare(&lng);
}

/* Y_h is Y's last step (the first, for the reverse direction). */
Test(recurrent, y_h_is_the_last_step_of_y)
{
    cfg c = {"gru", "bidirectional", NULL, true, true, false, false, false, 5, 2, 3, 4};
    xe_tensor *y = run(&c, XE_F32);
    int64_t NH = c.N * c.H, S = c.S;
    const float *v = y->data;
    for (int64_t e = 0; e < NH; e++) {
        cr_assert_eq(v[(S * 2 + 0) * NH + e], v[((S - 1) * 2 + 0) * NH + e]);
        cr_assert_eq(v[(S * 2 + 1) * NH + e], v[(0 * 2 + 1) * NH + e]);
    }
    xe_tensor_release(y);
}

/* The shape function's refusals, each naming what is wrong. */
Test(recurrent, bad_attributes_counts_and_shapes)
{
    cfg c = {"lstm", "forward", NULL, false, false, false, false, false, 3, 2, 4, 5};
    xe_tensor *in[7];
    int n = operands(&c, XE_F32, in);
    struct {
        const char *attr, *value, *msg;
    } bad[] = {{"cell", "gru2", "cell must be"},
               {"direction", "sideways", "direction must be"},
               {"activation", "tanh", "activation is for cell=\"rnn\""},
               {"initial_h", NULL, "takes 4 inputs with these attributes, got 3"}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        ref_op o;
        ref_op_new(&o, XE_OP_RECURRENT, in, n);
        cr_assert_eq(xe_node_set_string(o.node, "cell", "lstm", &st), XE_OK);
        if (bad[k].value)
            cr_assert_eq(xe_node_set_string(o.node, bad[k].attr, bad[k].value, &st), XE_OK);
        else
            cr_assert_eq(xe_node_set_bool(o.node, bad[k].attr, true, &st), XE_OK);
        ref_expect_infer_error(&o, bad[k].msg);
        ref_op_free(&o);
    }
    xe_tensor *w = in[1]; /* a w whose input size is not x's */
    in[1] = ref_random_tensor(XE_F32, &(xe_shape){3, {1, 20, 3}}, -1, 1);
    ref_op o;
    ref_op_new(&o, XE_OP_RECURRENT, in, n);
    ref_expect_infer_error(&o, "w must be f32 [1, 20, 4]");
    ref_op_free(&o);
    xe_tensor_release(in[1]);
    in[1] = w;
    for (int k = 0; k < n; k++)
        xe_tensor_release(in[k]);
}

/* The op in the text format: parsed, inferred and run like any other. */
Test(recurrent, text_format)
{
    const char *text = "xlac.graph v1\n"
                       "input x: f32[2, 1, 1]\n"
                       "w = const(f32[1, 1, 1], [0.5])\n"
                       "r = const(f32[1, 1, 1], [0])\n"
                       "y = recurrent(x, w, r, cell=\"rnn\", direction=\"forward\")\n"
                       "output y\n";
    xe_shape s = ref_shape(3, (int64_t[]){2, 1, 1});
    xe_tensor *x = ref_tensor_from(XE_F32, &s, (double[]){2, -4}), *out = NULL;
    ref_run_graph(text, &x, &out);
    cr_assert_eq(out->shape.rank, 4);
    cr_assert_eq(out->shape.dims[0], 3);
    const float *v = out->data;
    cr_assert_float_eq(v[0], tanhf(1.0f), 1e-6);
    cr_assert_float_eq(v[1], tanhf(-2.0f), 1e-6);
    cr_assert_float_eq(v[2], tanhf(-2.0f), 1e-6);
    xe_tensor_release(x);
    xe_tensor_release(out);
}
