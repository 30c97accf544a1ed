/*
 * The neural-network ops (ONNX semantics): gather, tile, pad, conv2d,
 * max_pool2d and avg_pool2d. Each case builds a one-node graph through the
 * API, runs the op's kernel (CPU, and GPU where a CUDA device exists) and
 * compares every element with a straightforward double-precision
 * reference written here, independently of the kernels, on random inputs
 * over many attribute combinations: negative gather indices, i32 and i64
 * indices, zero repeats, negative (cropping) pads, groups and depthwise
 * convolutions, strides, dilations, asymmetric pads, ceil_mode, 1x1
 * kernels. Bad attributes must be rejected with a message that says what
 * is wrong, and clustering must leave these ops out with a reason.
 *
 * Tolerances: data movement exact; conv2d and avg_pool2d f32 1e-5 and
 * f64 1e-12 relative to the sum of |terms|.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/ref.h"
#include "xc.h"
#include "xlac/xlac.h"
#include "xlac_plugin.h"

#define SKIP_WITHOUT_GPU()                                                                         \
    do {                                                                                           \
        if (!xe_gpu_available())                                                                   \
            cr_skip_test("skipped: no CUDA device");                                               \
    } while (0)

static xe_status st;

/* ---- running an op on a device ------------------------------------------------------ */

/* The GPU run of o's node: inputs copied over, output copied back to the CPU. */
static xe_tensor *run_gpu(ref_op *o, xe_tensor *const *in, int n_in, xe_status *s)
{
    xe_tensor *din[4] = {0}, *dout = NULL, *res = NULL;
    if (ref_op_infer(o, s) != XE_OK)
        return NULL;
    for (int k = 0; k < n_in; k++)
        cr_assert_not_null(din[k] = xe_tensor_to_device(in[k], XE_DEV_GPU, s), "%s", s->msg);
    dout = xe_tensor_new(o->node->type.dtype, &o->node->type.shape, XE_DEV_GPU, s);
    cr_assert_not_null(dout, "%s", s->msg);
    xe_kernel_args a = {o->g, o->node, n_in, din, dout, NULL, NULL, NULL};
    const xe_op_def *d = xe_op_get(o->node->op);
    cr_assert_not_null(d->kernel[XE_DEV_GPU], "%s has no GPU kernel", d->name);
    if (d->kernel[XE_DEV_GPU](&a, s) == XE_OK)
        res = xe_tensor_to_device(dout, XE_DEV_CPU, s);
    for (int k = 0; k < n_in; k++)
        xe_tensor_release(din[k]);
    xe_tensor_release(dout);
    return res;
}

/* Runs o's node on dev; NULL with *s set when inference or the kernel fails. */
static xe_tensor *run_on(xe_device dev, ref_op *o, xe_tensor *const *in, int n_in, xe_status *s)
{
    xe_status_clear(s);
    return dev == XE_DEV_CPU ? ref_op_run(o, in, n_in, NULL, s) : run_gpu(o, in, n_in, s);
}

/* Runs and checks the output's shape and every element against want (scale: NULL exact). */
static void expect_run(xe_device dev, ref_op *o, xe_tensor *const *in, int n_in,
                       const xe_shape *shape, const double *want, const double *scale,
                       const char *what)
{
    xe_tensor *r = run_on(dev, o, in, n_in, &st);
    cr_assert_not_null(r, "%s: %s", what, st.msg);
    char a[128], b[128];
    cr_assert(xe_shape_equal(&r->shape, shape), "%s: shape %s, want %s", what,
              xe_shape_str(&r->shape, a, sizeof a), xe_shape_str(shape, b, sizeof b));
    ref_expect_tensor(what, r, want, scale);
    xe_tensor_release(r);
}

/* Asserts that o's node fails to infer with a message containing `part`. */
static void expect_infer_error(ref_op *o, const char *part)
{
    xe_status_clear(&st);
    cr_assert_neq(ref_op_infer(o, &st), XE_OK, "expected an error containing '%s'", part);
    cr_assert(strstr(st.msg, part), "message '%s' lacks '%s'", st.msg, part);
}

static void set_ints(xe_node *n, const char *name, int count, const int64_t *v)
{
    cr_assert_eq(xe_node_set_ints(n, name, v, count, &st), XE_OK, "%s", st.msg);
}

static void set_int(xe_node *n, const char *name, int64_t v)
{
    cr_assert_eq(xe_node_set_int(n, name, v, &st), XE_OK, "%s", st.msg);
}

/* Row-major coordinates of flat index i in shape s. */
static void coords(const xe_shape *s, int64_t i, int64_t *c)
{
    for (int d = s->rank - 1; d >= 0; d--) {
        c[d] = i % s->dims[d];
        i /= s->dims[d];
    }
}

/* Flat index of coordinates c in shape s. */
static int64_t flat(const xe_shape *s, const int64_t *c)
{
    int64_t i = 0;
    for (int d = 0; d < s->rank; d++)
        i = i * s->dims[d] + c[d];
    return i;
}

static double at(const xe_tensor *t, int64_t i)
{
    return xe_load_f64(t->data, t->dtype, i);
}

static const xe_dtype move_dtypes[] = {XE_F32, XE_F64, XE_F16, XE_I32, XE_I64, XE_BOOL};

/* ---- gather ----------------------------------------------------------------------------- */

/* data[..., idx, ...] with ONNX's shape rule and negative indices. */
static double *gather_ref(const xe_tensor *data, const xe_tensor *ix, int axis, xe_shape *out)
{
    const xe_shape *ds = &data->shape;
    *out = (xe_shape){.rank = ds->rank - 1 + ix->shape.rank};
    for (int d = 0, k = 0; d < ds->rank; d++) {
        if (d == axis)
            for (int j = 0; j < ix->shape.rank; j++)
                out->dims[k++] = ix->shape.dims[j];
        else
            out->dims[k++] = ds->dims[d];
    }
    int64_t n = xe_shape_numel(out);
    double *want = calloc((size_t)(n ? n : 1), sizeof *want);
    for (int64_t i = 0; i < n; i++) {
        int64_t c[XE_MAX_RANK], dc[XE_MAX_RANK], ic[XE_MAX_RANK];
        coords(out, i, c);
        for (int j = 0; j < ix->shape.rank; j++)
            ic[j] = c[axis + j];
        int64_t v = (int64_t)at(ix, flat(&ix->shape, ic));
        for (int d = 0; d < ds->rank; d++)
            dc[d] = d < axis    ? c[d]
                    : d == axis ? (v < 0 ? v + ds->dims[axis] : v)
                                : c[d - 1 + ix->shape.rank];
        want[i] = at(data, flat(ds, dc));
    }
    return want;
}

static void gather_cases(xe_device dev)
{
    ref_seed(11);
    for (int t = 0; t < 300; t++) {
        xe_shape ds = ref_random_shape(4, 5, t % 9 == 0);
        if (ds.rank == 0)
            ds = ref_shape(1, (int64_t[]){3});
        int axis = (int)ref_irand(-ds.rank, ds.rank - 1), ax = axis < 0 ? axis + ds.rank : axis;
        xe_shape is = ref_random_shape(3, 4, t % 7 == 0);
        xe_dtype idt = t % 2 ? XE_I32 : XE_I64, dt = move_dtypes[t % 6];
        int64_t dim = ds.dims[ax];
        if (dim == 0)
            is.rank = 1, is.dims[0] = 0; /* nothing to pick from: no indices */
        xe_tensor *data = ref_random_tensor(dt, &ds, -9, 9);
        xe_tensor *ix = ref_random_tensor(idt, &is, (double)-dim, (double)dim);
        xe_tensor *in[2] = {data, ix};
        ref_op o;
        set_int(ref_op_new(&o, XE_OP_GATHER, in, 2), "axis", axis);
        xe_shape out;
        double *want = gather_ref(data, ix, ax, &out);
        expect_run(dev, &o, in, 2, &out, want, NULL, "gather");
        free(want);
        ref_op_free(&o);
        xe_tensor_release(data);
        xe_tensor_release(ix);
    }
}

/* An index outside [-dim, dim) is a run-time error that names it. */
static void gather_out_of_range(xe_device dev)
{
    int64_t bad[] = {3, -4, 100};
    for (int k = 0; k < 3; k++) {
        xe_shape ds = ref_shape(2, (int64_t[]){3, 2}), is = ref_shape(1, (int64_t[]){2});
        xe_tensor *data = ref_random_tensor(XE_F32, &ds, 0, 1);
        xe_tensor *ix = ref_tensor_from(XE_I64, &is, (double[]){0, (double)bad[k]});
        xe_tensor *in[2] = {data, ix};
        ref_op o;
        ref_op_new(&o, XE_OP_GATHER, in, 2);
        xe_tensor *r = run_on(dev, &o, in, 2, &st);
        cr_assert_null(r, "index %lld accepted", (long long)bad[k]);
        char want[64];
        snprintf(want, sizeof want, "index %lld (at position 1) is out of range",
                 (long long)bad[k]);
        cr_assert(strstr(st.msg, want), "message: %s", st.msg);
        ref_op_free(&o);
        xe_tensor_release(data);
        xe_tensor_release(ix);
    }
}

Test(nn_ops, gather)
{
    gather_cases(XE_DEV_CPU);
    gather_out_of_range(XE_DEV_CPU);
}

Test(nn_ops, gather_gpu)
{
    SKIP_WITHOUT_GPU();
    gather_cases(XE_DEV_GPU);
    gather_out_of_range(XE_DEV_GPU);
}

Test(nn_ops, gather_rejects)
{
    ref_op o;
    xe_type f = {XE_F32, ref_shape(2, (int64_t[]){3, 4})},
            i = {XE_I64, ref_shape(1, (int64_t[]){2})};
    ref_op_new_types(&o, XE_OP_GATHER, (xe_type[]){f, f}, 2);
    expect_infer_error(&o, "indices must be i32 or i64, got f32");
    ref_op_free(&o);
    set_int(ref_op_new_types(&o, XE_OP_GATHER, (xe_type[]){f, i}, 2), "axis", 2);
    expect_infer_error(&o, "axis 2 out of range for rank 2");
    ref_op_free(&o);
    f.shape.rank = 0;
    ref_op_new_types(&o, XE_OP_GATHER, (xe_type[]){f, i}, 2);
    expect_infer_error(&o, "gather needs data of rank >= 1");
    ref_op_free(&o);
}

/* ---- tile ------------------------------------------------------------------------------- */

static void tile_cases(xe_device dev)
{
    ref_seed(12);
    for (int t = 0; t < 200; t++) {
        xe_shape s = ref_random_shape(4, 4, t % 8 == 0), os = s;
        int64_t reps[XE_MAX_RANK];
        for (int d = 0; d < s.rank; d++) {
            reps[d] = t % 13 == 0 && d == 0 ? 0 : ref_irand(1, 3);
            os.dims[d] = s.dims[d] * reps[d];
        }
        xe_tensor *x = ref_random_tensor(move_dtypes[t % 6], &s, -9, 9);
        int64_t n = xe_shape_numel(&os);
        double *want = calloc((size_t)(n ? n : 1), sizeof *want);
        for (int64_t i = 0; i < n; i++) {
            int64_t c[XE_MAX_RANK];
            coords(&os, i, c);
            for (int d = 0; d < s.rank; d++)
                c[d] %= s.dims[d];
            want[i] = at(x, flat(&s, c));
        }
        ref_op o;
        set_ints(ref_op_new(&o, XE_OP_TILE, &x, 1), "repeats", s.rank, reps);
        expect_run(dev, &o, &x, 1, &os, want, NULL, "tile");
        free(want);
        ref_op_free(&o);
        xe_tensor_release(x);
    }
}

Test(nn_ops, tile)
{
    tile_cases(XE_DEV_CPU);
}

Test(nn_ops, tile_gpu)
{
    SKIP_WITHOUT_GPU();
    tile_cases(XE_DEV_GPU);
}

Test(nn_ops, tile_rejects)
{
    ref_op o;
    xe_type f = {XE_F32, ref_shape(2, (int64_t[]){3, 4})};
    ref_op_new_types(&o, XE_OP_TILE, &f, 1);
    expect_infer_error(&o, "needs repeats=[...]");
    ref_op_free(&o);
    set_ints(ref_op_new_types(&o, XE_OP_TILE, &f, 1), "repeats", 1, (int64_t[]){2});
    expect_infer_error(&o, "repeats needs 2 entries, got 1");
    ref_op_free(&o);
    set_ints(ref_op_new_types(&o, XE_OP_TILE, &f, 1), "repeats", 2, (int64_t[]){2, -1});
    expect_infer_error(&o, "repeats[1]=-1 must be >= 0");
    ref_op_free(&o);
}

/* ---- pad -------------------------------------------------------------------------------- */

/* Random pads for each dim of s, negative (cropping) ones included; out gets the result shape. */
static void random_pads(const xe_shape *s, int64_t *pads, xe_shape *out)
{
    *out = *s;
    for (int d = 0; d < s->rank; d++) {
        pads[d] = ref_irand(-1, 2);
        pads[s->rank + d] = ref_irand(-1, 3);
        if (s->dims[d] + pads[d] + pads[s->rank + d] < 0)
            pads[d] = pads[s->rank + d] = 0;
        out->dims[d] = s->dims[d] + pads[d] + pads[s->rank + d];
    }
}

static void pad_cases(xe_device dev)
{
    ref_seed(13);
    for (int t = 0; t < 300; t++) {
        xe_shape s = ref_random_shape(4, 4, t % 8 == 0), os;
        int64_t pads[2 * XE_MAX_RANK];
        random_pads(&s, pads, &os);
        xe_dtype dt = move_dtypes[t % 6];
        double value = dt == XE_BOOL ? 1 : dt == XE_I32 || dt == XE_I64 ? -7 : t % 3 ? 2.5 : 0;
        xe_tensor *x = ref_random_tensor(dt, &s, -9, 9);
        int64_t n = xe_shape_numel(&os);
        double *want = calloc((size_t)(n ? n : 1), sizeof *want);
        for (int64_t i = 0; i < n; i++) {
            int64_t c[XE_MAX_RANK];
            bool inside = true;
            coords(&os, i, c);
            for (int d = 0; d < s.rank; d++) {
                c[d] -= pads[d];
                inside = inside && c[d] >= 0 && c[d] < s.dims[d];
            }
            want[i] = inside ? at(x, flat(&s, c)) : value;
        }
        ref_op o;
        xe_node *nd = ref_op_new(&o, XE_OP_PAD, &x, 1);
        set_ints(nd, "pads", 2 * s.rank, pads);
        if (value != 0)
            cr_assert_eq(xe_node_set_float(nd, "value", value, &st), XE_OK);
        expect_run(dev, &o, &x, 1, &os, want, NULL, "pad");
        free(want);
        ref_op_free(&o);
        xe_tensor_release(x);
    }
}

Test(nn_ops, pad)
{
    pad_cases(XE_DEV_CPU);
}

Test(nn_ops, pad_gpu)
{
    SKIP_WITHOUT_GPU();
    pad_cases(XE_DEV_GPU);
}

Test(nn_ops, pad_rejects)
{
    ref_op o;
    xe_type f = {XE_F32, ref_shape(2, (int64_t[]){3, 4})}, i = {XE_I32, f.shape};
    ref_op_new_types(&o, XE_OP_PAD, &f, 1);
    expect_infer_error(&o, "needs pads=[begin..., end...] (4 entries)");
    ref_op_free(&o);
    set_ints(ref_op_new_types(&o, XE_OP_PAD, &f, 1), "pads", 2, (int64_t[]){1, 1});
    expect_infer_error(&o, "pads needs 4 entries, got 2");
    ref_op_free(&o);
    set_ints(ref_op_new_types(&o, XE_OP_PAD, &f, 1), "pads", 4, (int64_t[]){0, -3, 0, -2});
    expect_infer_error(&o, "crop dim 1 of size 4 below 0");
    ref_op_free(&o);
    xe_node *nd = ref_op_new_types(&o, XE_OP_PAD, &i, 1);
    set_ints(nd, "pads", 4, (int64_t[]){1, 1, 1, 1});
    cr_assert_eq(xe_node_set_float(nd, "value", 0.5, &st), XE_OK);
    expect_infer_error(&o, "value 0.5 does not fit i32");
    ref_op_free(&o);
}

/* ---- the text format and clustering ------------------------------------------------------ */

/* Parses text; returns the message of the error it must give. */
static const char *parse_error(const char *text)
{
    xe_status_clear(&st);
    xe_graph *g = xe_parse_string(text, "nn.xg", &st);
    cr_assert_null(g, "accepted:\n%s", text);
    return st.msg;
}

Test(nn_ops, parser_attributes)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"t = tile(x, reps=[2,2])", "unknown attribute 'reps' for tile (expected repeats)"},
        {"t = pad(x, pads=[1,1,1,1], value=\"z\")", "value must be a number"},
        {"t = gather(x, i, axis=1.5)", "axis must be an integer"},
        {"t = pad(x, pads=[1,1,1,1], mode=\"reflect\")", "unknown attribute 'mode' for pad"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char text[512];
        snprintf(text, sizeof text,
                 "xlac.graph v1\ninput x: f32[2,3]\ninput i: i64[2]\n%s\noutput t\n", bad[k].text);
        const char *msg = parse_error(text);
        cr_assert(strstr(msg, bad[k].want), "%s\nmessage '%s' lacks '%s'", bad[k].text, msg,
                  bad[k].want);
        cr_assert(strstr(msg, "nn.xg:4:"), "message '%s' does not name the line", msg);
    }
}

Test(nn_ops, xg_round_trip)
{
    const char *text = "xlac.graph v1\ninput x: f32[2,3]\ninput i: i32[4]\n"
                       "g = gather(x, i, axis=1)\nt = tile(g, repeats=[2,1])\n"
                       "p = pad(t, pads=[1,0,0,2], value=-1.5)\noutput p\n";
    xe_status_clear(&st);
    xe_graph *g = xe_parse_string(text, "nn.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    const xe_node *p = g->nodes[xe_graph_find(g, "p")];
    cr_assert(xe_shape_equal(&p->type.shape, &(xe_shape){.rank = 2, .dims = {5, 6}}), "pad shape");
    char *back = xe_write_string(g, &st);
    cr_assert_not_null(back, "%s", st.msg);
    cr_assert(strstr(back, "pad(t, pads=[1,0,0,2], value=-1.5)"), "%s", back);
    xe_graph *g2 = xe_parse_string(back, "back.xg", &st);
    cr_assert_not_null(g2, "%s\n%s", st.msg, back);
    free(back);
    xe_graph_destroy(g2);
    xe_graph_destroy(g);
}

/* A chain that alternates every NN op with a fusible pair (neg, exp). */
static const char *const nn_chain =
    "xlac.graph v1\ninput x: f32[1,2,6,6]\ninput w: f32[2,2,3,3]\ninput i: i64[4]\n"
    "a0 = neg(x)\nb0 = exp(a0)\nn0 = conv2d(b0, w, pads=[1,1,1,1])\n"
    "a1 = neg(n0)\nb1 = exp(a1)\nn1 = max_pool2d(b1, kernel=[2,2])\n"
    "a2 = neg(n1)\nb2 = exp(a2)\nn2 = avg_pool2d(b2, kernel=[2,2])\n"
    "a3 = neg(n2)\nb3 = exp(a3)\nn3 = pad(b3, pads=[0,0,1,1,0,0,1,1])\n"
    "a4 = neg(n3)\nb4 = exp(a4)\nn4 = tile(b4, repeats=[1,1,1,2])\n"
    "a5 = neg(n4)\nb5 = exp(a5)\nn5 = gather(b5, i, axis=3)\n"
    "a6 = neg(n5)\nb6 = exp(a6)\noutput b6\n";

/* Clusters nn_chain at XLAC_AUTO_JIT=level; every NN op must be left out with `reason`. */
static void check_left_out(const char *level, const char *reason)
{
    xe_status_clear(&st);
    xe_graph *g = xe_parse_string(nn_chain, "nn.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    cr_assert_eq(xe_graph_place(g, XE_PLACE_CPU, &st), XE_OK, "%s", st.msg);
    xlac_flags f;
    cr_assert_eq(xlac_flags_parse(&f, level, NULL, NULL, NULL, &st), XE_OK, "%s", st.msg);
    xc_options o;
    xlac_cluster_options(&f, &o);
    xc_clustering *c = xc_mark_for_compilation(g, &o, &st);
    cr_assert_not_null(c, "%s", st.msg);
    for (int k = 0; k <= 6; k++) {
        char nn[8], a[8], b[8];
        snprintf(nn, sizeof nn, "n%d", k);
        snprintf(a, sizeof a, "a%d", k);
        snprintf(b, sizeof b, "b%d", k);
        int i = xe_graph_find(g, nn), ia = xe_graph_find(g, a), ib = xe_graph_find(g, b);
        if (k < 6) {
            cr_assert_eq(c->cluster[i], -1, "%s (%s) was clustered", nn,
                         xe_op_name(g->nodes[i]->op));
            cr_assert_str_eq(c->reason[i], reason, "%s", nn);
        }
        cr_assert(c->cluster[ia] >= 0 && c->cluster[ia] == c->cluster[ib], "%s, %s: %s", a, b,
                  c->reason[ia] ? c->reason[ia] : "different clusters");
    }
    xc_clustering_destroy(c);
    xlac_flags_free(&f);
    xe_graph_destroy(g);
}

Test(nn_ops, clustering_leaves_them_out)
{
    check_left_out("2", "no code generator");
    check_left_out("1", "not fusible at level 1");
}

/* ---- conv2d ------------------------------------------------------------------------------ */

/* Attributes of a window case: strides, dilations, pads [t,l,b,r], groups, flags. */
typedef struct win_case {
    int64_t s[2], d[2], pads[4], groups, kernel[2];
    bool ceil_mode, count_include_pad;
} win_case;

static void set_window_attrs(xe_node *n, const win_case *w, bool pool)
{
    set_ints(n, "strides", 2, w->s);
    set_ints(n, "dilations", 2, w->d);
    set_ints(n, "pads", 4, w->pads);
    if (!pool) {
        set_int(n, "groups", w->groups);
        return;
    }
    set_ints(n, "kernel", 2, w->kernel);
    if (w->ceil_mode)
        set_int(n, "ceil_mode", 1);
    if (w->count_include_pad)
        set_int(n, "count_include_pad", 1);
}

/* Output size of one dim by ONNX's rule (-1: the kernel does not fit). */
static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1,
                       bool ceil_mode)
{
    int64_t span = in + p0 + p1 - (d * (k - 1) + 1);
    if (span < 0)
        return -1;
    int64_t o =
        (int64_t)(ceil_mode ? ceil((double)span / (double)s) : floor((double)span / (double)s)) + 1;
    if (ceil_mode && (o - 1) * s >= in + p0)
        o--;
    return o;
}

/* Direct double-precision convolution; scale[i] is the sum of |terms| of output i. */
static double *conv_ref(const xe_tensor *x, const xe_tensor *w, const xe_tensor *b,
                        const win_case *wc, const xe_shape *os, double **scale)
{
    int64_t N = os->dims[0], M = os->dims[1], OH = os->dims[2], OW = os->dims[3];
    int64_t C = x->shape.dims[1], H = x->shape.dims[2], W = x->shape.dims[3];
    int64_t cg = w->shape.dims[1], KH = w->shape.dims[2], KW = w->shape.dims[3];
    int64_t mg = M / wc->groups, n_out = N * M * OH * OW;
    double *want = calloc((size_t)n_out + 1, sizeof *want);
    *scale = calloc((size_t)n_out + 1, sizeof **scale);
    for (int64_t i = 0; i < n_out; i++) {
        int64_t ow = i % OW, oh = i / OW % OH, m = i / (OW * OH) % M, n = i / (OW * OH * M);
        double acc = b ? at(b, m) : 0, mag = fabs(acc);
        for (int64_t c = 0; c < cg; c++)
            for (int64_t ki = 0; ki < KH; ki++)
                for (int64_t kj = 0; kj < KW; kj++) {
                    int64_t ih = oh * wc->s[0] - wc->pads[0] + ki * wc->d[0];
                    int64_t iw = ow * wc->s[1] - wc->pads[1] + kj * wc->d[1];
                    if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                        continue;
                    double t = at(x, ((n * C + (m / mg) * cg + c) * H + ih) * W + iw) *
                               at(w, ((m * cg + c) * KH + ki) * KW + kj);
                    acc += t;
                    mag += fabs(t);
                }
        want[i] = acc;
        (*scale)[i] = mag;
    }
    return want;
}

/* A random window case: kernels 1..3 (1x1 often), strides 1..3, dilations 1..2, pads 0..2. */
static win_case random_window(void)
{
    win_case w = {.groups = 1};
    for (int k = 0; k < 2; k++) {
        w.kernel[k] = ref_urand() < 0.2 ? 1 : ref_irand(1, 3);
        w.s[k] = ref_urand() < 0.5 ? 1 : ref_irand(2, 3);
        w.d[k] = ref_urand() < 0.7 ? 1 : 2;
    }
    for (int k = 0; k < 4; k++)
        w.pads[k] = ref_urand() < 0.4 ? 0 : ref_irand(0, 2);
    return w;
}

/* One conv2d case with random data; groups and channels per group given. */
static void conv_case(xe_device dev, xe_dtype dt, const win_case *wc, int64_t n, int64_t cg,
                      int64_t mg, int64_t h, int64_t wd, bool bias)
{
    int64_t C = cg * wc->groups, M = mg * wc->groups;
    xe_shape xs = ref_shape(4, (int64_t[]){n, C, h, wd});
    xe_shape ws = ref_shape(4, (int64_t[]){M, cg, wc->kernel[0], wc->kernel[1]});
    xe_shape bs = ref_shape(1, (int64_t[]){M});
    xe_tensor *in[3] = {ref_random_tensor(dt, &xs, -1, 1), ref_random_tensor(dt, &ws, -1, 1),
                        bias ? ref_random_tensor(dt, &bs, -1, 1) : NULL};
    ref_op o;
    set_window_attrs(ref_op_new(&o, XE_OP_CONV2D, in, bias ? 3 : 2), wc, false);
    int64_t oh = out_dim(h, wc->kernel[0], wc->s[0], wc->d[0], wc->pads[0], wc->pads[2], false);
    int64_t ow = out_dim(wd, wc->kernel[1], wc->s[1], wc->d[1], wc->pads[1], wc->pads[3], false);
    if (oh < 0 || ow < 0) {
        expect_infer_error(&o, "the kernel spans");
    } else {
        xe_shape os = ref_shape(4, (int64_t[]){n, M, oh, ow});
        double *scale, *want = conv_ref(in[0], in[1], in[2], wc, &os, &scale);
        char what[160];
        snprintf(what, sizeof what,
                 "conv2d %s x[%lld,%lld,%lld,%lld] k%lldx%lld g%lld s%lld,%lld d%lld,%lld",
                 xe_dtype_name(dt), (long long)n, (long long)C, (long long)h, (long long)wd,
                 (long long)wc->kernel[0], (long long)wc->kernel[1], (long long)wc->groups,
                 (long long)wc->s[0], (long long)wc->s[1], (long long)wc->d[0],
                 (long long)wc->d[1]);
        expect_run(dev, &o, in, bias ? 3 : 2, &os, want, scale, what);
        free(want);
        free(scale);
    }
    ref_op_free(&o);
    for (int k = 0; k < 3; k++)
        xe_tensor_release(in[k]);
}

static void conv_cases(xe_device dev)
{
    ref_seed(14);
    for (int t = 0; t < 400; t++) {
        win_case wc = random_window();
        int shape = t % 4; /* 0: plain, 1: grouped, 2: depthwise, 3: depthwise with multiplier */
        wc.groups = shape == 0 ? 1 : ref_irand(2, 4);
        int64_t cg = shape >= 2 ? 1 : ref_irand(1, 4), mg = shape == 2 ? 1 : ref_irand(1, 4);
        conv_case(dev, t % 3 ? XE_F32 : XE_F64, &wc, ref_irand(1, 2), cg, mg, ref_irand(1, 9),
                  ref_irand(1, 9), t % 5 != 0);
    }
    /* larger: several column blocks and threads, a pointwise conv, a ResNet-like 3x3 */
    win_case w3 = {.s = {1, 1}, .d = {1, 1}, .pads = {1, 1, 1, 1}, .groups = 1, .kernel = {3, 3}};
    win_case w1 = {.s = {1, 1}, .d = {1, 1}, .groups = 1, .kernel = {1, 1}};
    win_case w7 = {.s = {2, 2}, .d = {1, 1}, .pads = {3, 3, 3, 3}, .groups = 1, .kernel = {7, 7}};
    conv_case(dev, XE_F32, &w3, 2, 16, 24, 30, 29, true);
    conv_case(dev, XE_F64, &w3, 1, 8, 8, 40, 40, false);
    conv_case(dev, XE_F32, &w1, 2, 32, 16, 20, 21, true);
    conv_case(dev, XE_F32, &w7, 1, 3, 8, 32, 32, true);
}

Test(nn_ops, conv2d)
{
    conv_cases(XE_DEV_CPU);
}

Test(nn_ops, conv2d_gpu)
{
    SKIP_WITHOUT_GPU();
    conv_cases(XE_DEV_GPU);
}

Test(nn_ops, conv2d_rejects)
{
    static const struct {
        const char *x, *w, *b, *attrs, *want;
    } bad[] = {
        {"f32[1,4,5,5]", "f32[2,3,3,3]", NULL, "",
         "the input has 4 channels but the weight takes 3 per group x 1 groups"},
        {"f32[1,4,5,5]", "f32[3,2,3,3]", NULL, "groups=2",
         "groups=2 does not divide the 3 output channels"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", NULL, "groups=0", "groups must be an integer >= 1"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", NULL, "strides=[1]", "strides needs 2 entries, got 1"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", NULL, "strides=[0,1]", "strides[0]=0 must be >= 1"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", NULL, "pads=[1,1,1]", "pads needs 4 entries, got 3"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", NULL, "pads=[1,-1,1,1]", "pads[1]=-1 must be >= 0"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", NULL, "dilations=[3,3]",
         "the kernel spans 7 rows (dilated) but the padded input has 5"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", "f32[3]", "", "the bias must be [2]"},
        {"f32[4,5,5]", "f32[2,4,3,3]", NULL, "", "conv2d needs a 4-D NCHW input, got rank 3"},
        {"f32[1,4,5,5]", "f32[2,4,3]", NULL, "", "the weight must be 4-D"},
        {"i32[1,4,5,5]", "i32[2,4,3,3]", NULL, "", "conv2d needs f32 or f64 input, got i32"},
        {"f32[1,4,5,5]", "f64[2,4,3,3]", NULL, "", "input 1 is f64, the input is f32"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", NULL, "kernel=[3,3]",
         "unknown attribute 'kernel' for conv2d"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char text[512];
        snprintf(text, sizeof text,
                 "xlac.graph v1\ninput x: %s\ninput w: %s\n%s%s%s\n"
                 "t = conv2d(x, w%s%s%s)\noutput t\n",
                 bad[k].x, bad[k].w, bad[k].b ? "input b: " : "", bad[k].b ? bad[k].b : "",
                 bad[k].b ? "" : "# no bias", bad[k].b ? ", b" : "", *bad[k].attrs ? ", " : "",
                 bad[k].attrs);
        const char *msg = parse_error(text);
        cr_assert(strstr(msg, bad[k].want), "case %zu: message '%s' lacks '%s'", k, msg,
                  bad[k].want);
        cr_assert(strstr(msg, "(conv2d)") || strstr(msg, "unknown attribute"),
                  "message '%s' does not name the op", msg);
    }
}

/* ---- max_pool2d and avg_pool2d ------------------------------------------------------------ */

/* Taps k in [0, n) with lo <= x0 + k*d < hi (the reference's own count). */
static int64_t count_taps(int64_t x0, int64_t d, int64_t n, int64_t lo, int64_t hi)
{
    int64_t c = 0;
    for (int64_t k = 0; k < n; k++)
        c += x0 + k * d >= lo && x0 + k * d < hi;
    return c;
}

/* Direct pooling in double; scale[i]: mean of |x| over the window (avg). */
static double *pool_ref(const xe_tensor *x, const win_case *wc, bool max, const xe_shape *os,
                        double **scale)
{
    int64_t H = x->shape.dims[2], W = x->shape.dims[3], OH = os->dims[2], OW = os->dims[3];
    int64_t n_out = xe_shape_numel(os);
    double *want = calloc((size_t)n_out + 1, sizeof *want);
    *scale = calloc((size_t)n_out + 1, sizeof **scale);
    for (int64_t i = 0; i < n_out; i++) {
        int64_t ow = i % OW, oh = i / OW % OH, nc = i / (OW * OH);
        int64_t ih0 = oh * wc->s[0] - wc->pads[0], iw0 = ow * wc->s[1] - wc->pads[1];
        double acc = max ? -INFINITY : 0, mag = 0;
        for (int64_t ki = 0; ki < wc->kernel[0]; ki++)
            for (int64_t kj = 0; kj < wc->kernel[1]; kj++) {
                int64_t ih = ih0 + ki * wc->d[0], iw = iw0 + kj * wc->d[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                    continue;
                double v = at(x, (nc * H + ih) * W + iw);
                acc = max ? (isnan(v) || v > acc ? v : acc) : acc + v;
                mag += fabs(v);
            }
        int64_t lo_h = wc->count_include_pad ? -wc->pads[0] : 0,
                lo_w = wc->count_include_pad ? -wc->pads[1] : 0;
        int64_t hi_h = H + (wc->count_include_pad ? wc->pads[2] : 0),
                hi_w = W + (wc->count_include_pad ? wc->pads[3] : 0);
        double count = (double)(count_taps(ih0, wc->d[0], wc->kernel[0], lo_h, hi_h) *
                                count_taps(iw0, wc->d[1], wc->kernel[1], lo_w, hi_w));
        want[i] = max ? acc : acc / count;
        (*scale)[i] = max ? 0 : mag / count;
    }
    return want;
}

static void pool_case(xe_device dev, int op, xe_dtype dt, const win_case *wc, const xe_shape *xs)
{
    bool max = op == XE_OP_MAX_POOL2D;
    xe_tensor *x = ref_random_tensor(dt, xs, -4, 4);
    if (xe_tensor_numel(x) > 5) /* a NaN, which max must propagate */
        xe_store_f64(x->data, dt, 5, NAN);
    ref_op o;
    set_window_attrs(ref_op_new(&o, op, &x, 1), wc, true);
    int64_t oh = out_dim(xs->dims[2], wc->kernel[0], wc->s[0], wc->d[0], wc->pads[0], wc->pads[2],
                         wc->ceil_mode);
    int64_t ow = out_dim(xs->dims[3], wc->kernel[1], wc->s[1], wc->d[1], wc->pads[1], wc->pads[3],
                         wc->ceil_mode);
    if (oh < 0 || ow < 0) {
        expect_infer_error(&o, "the kernel spans");
    } else {
        xe_shape os = ref_shape(4, (int64_t[]){xs->dims[0], xs->dims[1], oh, ow});
        double *scale, *want = pool_ref(x, wc, max, &os, &scale);
        char what[200];
        snprintf(what, sizeof what,
                 "%s %s x[%lld,%lld] k%lldx%lld s%lld,%lld d%lld,%lld p%lld,%lld,%lld,%lld ceil%d "
                 "incl%d",
                 xe_op_name(op), xe_dtype_name(dt), (long long)xs->dims[2], (long long)xs->dims[3],
                 (long long)wc->kernel[0], (long long)wc->kernel[1], (long long)wc->s[0],
                 (long long)wc->s[1], (long long)wc->d[0], (long long)wc->d[1],
                 (long long)wc->pads[0], (long long)wc->pads[1], (long long)wc->pads[2],
                 (long long)wc->pads[3], wc->ceil_mode, wc->count_include_pad);
        expect_run(dev, &o, &x, 1, &os, want, scale, what);
        free(want);
        free(scale);
    }
    ref_op_free(&o);
    xe_tensor_release(x);
}

static void pool_cases(xe_device dev)
{
    ref_seed(15);
    for (int t = 0; t < 600; t++) {
        win_case wc = random_window();
        for (int k = 0; k < 4; k++) /* pools take pads below the dilated kernel */
            if (wc.pads[k] >= wc.d[k % 2] * (wc.kernel[k % 2] - 1) + 1)
                wc.pads[k] = 0;
        wc.ceil_mode = t % 2;
        wc.count_include_pad = t % 4 >= 2;
        xe_shape xs = ref_shape(
            4, (int64_t[]){ref_irand(1, 2), ref_irand(1, 3), ref_irand(1, 9), ref_irand(1, 9)});
        int op = t % 3 ? XE_OP_AVG_POOL2D : XE_OP_MAX_POOL2D;
        if (op == XE_OP_MAX_POOL2D)
            wc.count_include_pad = false;
        pool_case(dev, op, t % 5 ? XE_F32 : XE_F64, &wc, &xs);
    }
    /* ResNet's stem pool, and ONNX's case where ceil_mode's last window would start past the input
     */
    win_case stem = {.s = {2, 2}, .d = {1, 1}, .pads = {1, 1, 1, 1}, .kernel = {3, 3}};
    win_case drop = {.s = {2, 2}, .d = {1, 1}, .kernel = {1, 1}, .ceil_mode = true};
    pool_case(dev, XE_OP_MAX_POOL2D, XE_F32, &stem, &(xe_shape){.rank = 4, .dims = {2, 8, 56, 56}});
    pool_case(dev, XE_OP_AVG_POOL2D, XE_F32, &drop, &(xe_shape){.rank = 4, .dims = {1, 1, 2, 2}});
}

Test(nn_ops, pools)
{
    pool_cases(XE_DEV_CPU);
}

Test(nn_ops, pools_gpu)
{
    SKIP_WITHOUT_GPU();
    pool_cases(XE_DEV_GPU);
}

/* ONNX's own examples: ceil_mode keeps a partial window, but not one that starts past the input. */
Test(nn_ops, pool_ceil_mode_shapes)
{
    static const struct {
        const char *attrs, *in, *out;
    } cases[] = {
        {"kernel=[3,3], strides=[2,2]", "f32[1,1,4,4]", "f32[1,1,1,1]"},
        {"kernel=[3,3], strides=[2,2], ceil_mode=1", "f32[1,1,4,4]", "f32[1,1,2,2]"},
        {"kernel=[1,1], strides=[2,2], ceil_mode=1", "f32[1,1,2,2]", "f32[1,1,1,1]"},
        {"kernel=[2,2], strides=[2,2], pads=[1,1,1,1], ceil_mode=1", "f32[1,1,5,5]",
         "f32[1,1,3,3]"},
        {"kernel=[2,2], strides=[2,2], pads=[1,1,1,1], ceil_mode=1", "f32[1,1,6,6]",
         "f32[1,1,4,4]"},
        {"kernel=[3,3], pads=[2,2,2,2], dilations=[2,2]", "f32[1,1,4,4]", "f32[1,1,4,4]"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[512], got[64];
        snprintf(text, sizeof text, "xlac.graph v1\ninput x: %s\nt = max_pool2d(x, %s)\noutput t\n",
                 cases[k].in, cases[k].attrs);
        xe_status_clear(&st);
        xe_graph *g = xe_parse_string(text, "nn.xg", &st);
        cr_assert_not_null(g, "%s", st.msg);
        xe_type_str(&g->nodes[xe_graph_find(g, "t")]->type, got, sizeof got);
        cr_assert_str_eq(got, cases[k].out, "%s", cases[k].attrs);
        xe_graph_destroy(g);
    }
}

Test(nn_ops, pool_rejects)
{
    static const struct {
        const char *op, *x, *attrs, *want;
    } bad[] = {
        {"max_pool2d", "f32[1,1,5,5]", "strides=[2,2]", "needs kernel=[kh,kw]"},
        {"max_pool2d", "f32[1,1,5,5]", "kernel=[0,3]", "kernel[0]=0 must be >= 1"},
        {"max_pool2d", "f32[1,1,5,5]", "kernel=[3,3], pads=[3,0,0,0]",
         "must be smaller than the kernel"},
        {"max_pool2d", "f32[1,1,5,5]", "kernel=[3,3], ceil_mode=2", "ceil_mode must be 0 or 1"},
        {"max_pool2d", "f32[1,1,5,5]", "kernel=[3,3], count_include_pad=1",
         "unknown attribute 'count_include_pad' for max_pool2d"},
        {"avg_pool2d", "f32[1,1,5,5]", "kernel=[3,3], count_include_pad=true",
         "count_include_pad must be 0 or 1"},
        {"avg_pool2d", "f32[1,1,2,5]", "kernel=[3,3]",
         "the kernel spans 3 rows (dilated) but the padded input has 2"},
        {"avg_pool2d", "f32[5,5]", "kernel=[3,3]", "avg_pool2d needs a 4-D NCHW input, got rank 2"},
        {"avg_pool2d", "i64[1,1,5,5]", "kernel=[3,3]",
         "avg_pool2d needs f32 or f64 input, got i64"},
        {"avg_pool2d", "f32[1,1,5,5]", "kernel=[3,3], groups=1",
         "unknown attribute 'groups' for avg_pool2d"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char text[512];
        snprintf(text, sizeof text, "xlac.graph v1\ninput x: %s\nt = %s(x, %s)\noutput t\n",
                 bad[k].x, bad[k].op, bad[k].attrs);
        const char *msg = parse_error(text);
        cr_assert(strstr(msg, bad[k].want), "case %zu: message '%s' lacks '%s'", k, msg,
                  bad[k].want);
    }
}
