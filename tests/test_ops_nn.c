/*
 * The data-movement ops that ONNX needs (gather, tile, pad) and what every
 * neural-network op shares: attributes in the text format and clustering.
 * Each case builds a one-node graph through the API, runs the op's kernel
 * (CPU, and GPU where a CUDA device exists) and compares every element,
 * exactly, with a reference written here on random inputs: every dtype,
 * negative gather indices, i32 and i64 indices, zero repeats, negative
 * (cropping) pads. Bad attributes must be rejected with a message that
 * says what is wrong, and clustering must leave every NN op out with a
 * reason. conv2d and the pools are in test_ops_window.c.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/ref_dev.h"
#include "xc.h"
#include "xlac/xlac.h"
#include "xlac_plugin.h"

static xe_status st;

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
        ref_set_int(ref_op_new(&o, XE_OP_GATHER, in, 2), "axis", axis);
        xe_shape out;
        double *want = gather_ref(data, ix, ax, &out);
        ref_expect_run(dev, &o, in, 2, &out, want, NULL, "gather");
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
        xe_tensor *r = ref_op_run_on(dev, &o, in, 2, &st);
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

/* Gathers large enough to be split among threads, at row sizes of 1, 2, 4, 8 and 12 bytes and
   splits inside an outer block (3 blocks of 50001 rows between 2 threads); indices negative too. */
Test(nn_ops, gather_large_rows_split_among_threads, .timeout = 120)
{
    static const struct {
        xe_dtype dt;
        int64_t inner;
    } kinds[] = {{XE_BOOL, 1}, {XE_F16, 1}, {XE_F32, 1}, {XE_I64, 1}, {XE_F32, 3}};
    ref_seed(12);
    for (int k = 0; k < 5; k++) {
        xe_shape ds = ref_shape(3, (int64_t[]){3, 40000, kinds[k].inner});
        xe_shape is = ref_shape(1, (int64_t[]){50001});
        xe_tensor *data = ref_random_tensor(kinds[k].dt, &ds, -9, 9);
        xe_tensor *ix = ref_random_tensor(k % 2 ? XE_I32 : XE_I64, &is, -40000, 39999);
        xe_tensor *in[2] = {data, ix};
        ref_op o;
        ref_set_int(ref_op_new(&o, XE_OP_GATHER, in, 2), "axis", 1);
        xe_shape out;
        double *want = gather_ref(data, ix, 1, &out);
        ref_expect_run(XE_DEV_CPU, &o, in, 2, &out, want, NULL, "gather");
        free(want);
        ref_op_free(&o);
        xe_tensor_release(data);
        xe_tensor_release(ix);
    }
}

Test(nn_ops, gather_gpu)
{
    REF_SKIP_WITHOUT_GPU();
    gather_cases(xe_gpu_device());
    gather_out_of_range(xe_gpu_device());
}

Test(nn_ops, gather_rejects)
{
    ref_op o;
    xe_type f = {XE_F32, ref_shape(2, (int64_t[]){3, 4})},
            i = {XE_I64, ref_shape(1, (int64_t[]){2})};
    ref_op_new_types(&o, XE_OP_GATHER, (xe_type[]){f, f}, 2);
    ref_expect_infer_error(&o, "indices must be i32 or i64, got f32");
    ref_op_free(&o);
    ref_set_int(ref_op_new_types(&o, XE_OP_GATHER, (xe_type[]){f, i}, 2), "axis", 2);
    ref_expect_infer_error(&o, "axis 2 out of range for rank 2");
    ref_op_free(&o);
    f.shape.rank = 0;
    ref_op_new_types(&o, XE_OP_GATHER, (xe_type[]){f, i}, 2);
    ref_expect_infer_error(&o, "gather needs data of rank >= 1");
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
        ref_set_ints(ref_op_new(&o, XE_OP_TILE, &x, 1), "repeats", s.rank, reps);
        ref_expect_run(dev, &o, &x, 1, &os, want, NULL, "tile");
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
    REF_SKIP_WITHOUT_GPU();
    tile_cases(xe_gpu_device());
}

Test(nn_ops, tile_rejects)
{
    ref_op o;
    xe_type f = {XE_F32, ref_shape(2, (int64_t[]){3, 4})};
    ref_op_new_types(&o, XE_OP_TILE, &f, 1);
    ref_expect_infer_error(&o, "needs repeats=[...]");
    ref_op_free(&o);
    ref_set_ints(ref_op_new_types(&o, XE_OP_TILE, &f, 1), "repeats", 1, (int64_t[]){2});
    ref_expect_infer_error(&o, "repeats needs 2 entries, got 1");
    ref_op_free(&o);
    ref_set_ints(ref_op_new_types(&o, XE_OP_TILE, &f, 1), "repeats", 2, (int64_t[]){2, -1});
    ref_expect_infer_error(&o, "repeats[1]=-1 must be >= 0");
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
        ref_set_ints(nd, "pads", 2 * s.rank, pads);
        if (value != 0)
            cr_assert_eq(xe_node_set_float(nd, "value", value, &st), XE_OK);
        ref_expect_run(dev, &o, &x, 1, &os, want, NULL, "pad");
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
    REF_SKIP_WITHOUT_GPU();
    pad_cases(xe_gpu_device());
}

Test(nn_ops, pad_rejects)
{
    ref_op o;
    xe_type f = {XE_F32, ref_shape(2, (int64_t[]){3, 4})}, i = {XE_I32, f.shape};
    ref_op_new_types(&o, XE_OP_PAD, &f, 1);
    ref_expect_infer_error(&o, "needs pads=[begin..., end...] (4 entries)");
    ref_op_free(&o);
    ref_set_ints(ref_op_new_types(&o, XE_OP_PAD, &f, 1), "pads", 2, (int64_t[]){1, 1});
    ref_expect_infer_error(&o, "pads needs 4 entries, got 2");
    ref_op_free(&o);
    ref_set_ints(ref_op_new_types(&o, XE_OP_PAD, &f, 1), "pads", 4, (int64_t[]){0, -3, 0, -2});
    ref_expect_infer_error(&o, "crop dim 1 of size 4 below 0");
    ref_op_free(&o);
    xe_node *nd = ref_op_new_types(&o, XE_OP_PAD, &i, 1);
    ref_set_ints(nd, "pads", 4, (int64_t[]){1, 1, 1, 1});
    cr_assert_eq(xe_node_set_float(nd, "value", 0.5, &st), XE_OK);
    ref_expect_infer_error(&o, "value 0.5 does not fit i32");
    ref_op_free(&o);
}

/* ---- the text format and clustering ------------------------------------------------------ */

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
        const char *msg = ref_parse_error(text);
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

/*
 * Clusters nn_chain at XLAC_AUTO_JIT=level; every NN op must be left out with `reason`, but
 * conv2d when conv_joins (level 2 on the CPU: a library step), which then shares a cluster
 * with the ops on both sides of it.
 */
static void check_left_out(const char *level, const char *reason, bool conv_joins)
{
    xe_status_clear(&st);
    xe_graph *g = xe_parse_string(nn_chain, "nn.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    cr_assert_eq(xe_graph_place(g, XE_PLACE_CPU, &st), XE_OK, "%s", st.msg);
    xlac_flags f;
    cr_assert_eq(xlac_flags_parse(&f, &(xlac_env){.auto_jit = level}, &st), XE_OK, "%s", st.msg);
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
        if (k == 0 && conv_joins) {
            int ia1 = xe_graph_find(g, "a1");
            cr_assert(c->cluster[i] >= 0 && c->cluster[i] == c->cluster[ia] &&
                          c->cluster[i] == c->cluster[ia1],
                      "conv2d does not join the ops around it: %s", c->reason[i] ? c->reason[i] : "");
        } else if (k < 6) {
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
    check_left_out("2", "no code generator", true);
    check_left_out("1", "not fusible at level 1", false);
}
