/*
 * ONNX import (executor/frontends/onnx/): every mapped op runs as a tiny model from
 * tests/data/onnx/ (made by tests/onnx/make_test_models.py) and matches
 * the outputs numpy computed for it; opset variants (an attribute in old
 * opsets, an input in new ones) are among them. Truncated and malformed
 * files are errors naming the byte offset and the field (exit 2 from
 * xlac-run, no crash under ASan); a model with several unsupported nodes
 * lists every one; dim_param dims take their sizes from the feeds;
 * external data is read and may not leave the model's folder; .pb feeds
 * work; --to-xg writes a graph that runs to the same result.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xlac/xlac.h"
#include "support/tmpdir.h"

#define DATA XLAC_SOURCE_DIR "/tests/data/onnx"
#define XLAC_RUN XLAC_BINARY_DIR "/bin/xlac-run"

static xe_status st;

static void setup(void)
{
    xe_status_clear(&st);
    xt_tmp_make("/tmp/xlac-onnx-XXXXXX");
}

static void teardown(void)
{
    cr_assert(xt_tmp_remove());
}

TestSuite(onnx, .init = setup, .fini = teardown);

/* Whether got matches want: dtype, shape, NaN where want has NaN, values within tolerance. */
static bool same(const xe_tensor *got, const xe_tensor *want, char *why, size_t cap)
{
    if (got->dtype != want->dtype || !xe_shape_equal(&got->shape, &want->shape)) {
        char a[128], b[128];
        snprintf(why, cap, "got %s, want %s", xe_type_str(&(xe_type){got->dtype, got->shape}, a, sizeof a),
                 xe_type_str(&(xe_type){want->dtype, want->shape}, b, sizeof b));
        return false;
    }
    for (int64_t i = 0; i < xe_tensor_numel(want); i++) {
        double g = xe_load_f64(got->data, got->dtype, i), w = xe_load_f64(want->data, want->dtype, i);
        bool ok = isnan(w) ? isnan(g) : !isnan(g) && (g == w || fabs(g - w) <= 1e-5 + 1e-4 * fabs(w));
        if (!ok) {
            snprintf(why, cap, "element %lld: got %.9g, want %.9g", (long long)i, g, w);
            return false;
        }
    }
    return true;
}

/* Loads path, runs it on the CPU with inputs, returns its outputs (NULL and *st on failure). */
static xe_tensor **run_model(xe_graph *g, xe_tensor **inputs)
{
    xe_session_options so = {.place = XE_PLACE_CPU};
    xe_session *s = xe_session_new(g, &so, &st);
    if (!s)
        return NULL;
    int n = xe_session_graph(s)->n_outputs;
    xe_tensor **outs = calloc((size_t)n + 1, sizeof *outs);
    if (xe_session_run(s, inputs, outs, &st) != XE_OK) {
        free(outs);
        outs = NULL;
    }
    xe_session_destroy(s);
    return outs;
}

static xe_tensor *npy(const char *name, const char *suffix, int k)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s.%s%d.npy", DATA, name, suffix, k);
    xe_tensor *t = xe_npy_read(p, &st);
    cr_assert_not_null(t, "%s: %s", p, st.msg);
    return t;
}

/* One line of ops.txt: NAME INPUTS OUTPUTS; false and *why when it fails. */
static bool check_op(const char *name, int n_in, int n_out, char *why, size_t cap)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s.onnx", DATA, name);
    xe_graph *g = xe_onnx_load(p, NULL, &st);
    if (!g)
        return snprintf(why, cap, "%s", st.msg), false;
    xe_tensor *in[8] = {0};
    for (int k = 0; k < n_in; k++)
        in[k] = npy(name, "in", k);
    xe_tensor **outs = run_model(g, in);
    bool ok = outs != NULL;
    if (!outs)
        snprintf(why, cap, "%s", st.msg);
    for (int k = 0; ok && k < n_out; k++) {
        xe_tensor *want = npy(name, "out", k);
        ok = same(outs[k], want, why, cap);
        xe_tensor_release(want);
    }
    for (int k = 0; outs && k < n_out; k++)
        xe_tensor_release(outs[k]);
    for (int k = 0; k < n_in; k++)
        xe_tensor_release(in[k]);
    free(outs);
    return ok;
}

Test(onnx, every_mapped_op_matches_numpy)
{
    FILE *f = fopen(DATA "/ops.txt", "r");
    cr_assert_not_null(f);
    char line[256], name[128];
    int n_in, n_out, count = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || sscanf(line, "%127s %d %d", name, &n_in, &n_out) != 3)
            continue;
        char why[XE_STATUS_MSG_MAX + 64];
        xe_status_clear(&st);
        count++;
        if (!check_op(name, n_in, n_out, why, sizeof why)) {
            cr_expect(false, "%s: %s", name, why);
            bad++;
        }
    }
    fclose(f);
    cr_assert_gt(count, 100, "ops.txt lists %d models", count);
    cr_assert_eq(bad, 0);
}

/* Issue 37: Reshape, Flatten, Squeeze, Unsqueeze (both opsets' forms) and Identity cost no copy
 * op by op: each output views its fed input's bytes (the same address), and holds its values. */
Test(onnx, shape_only_ops_view_their_input)
{
    static const char *const names[] = {"Reshape",   "Flatten",     "Squeeze", "Squeeze11",
                                        "Unsqueeze", "Unsqueeze11", "Identity"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s.onnx", DATA, names[k]);
        xe_graph *g = xe_onnx_load(p, NULL, &st);
        cr_assert_not_null(g, "%s: %s", names[k], st.msg);
        xe_tensor *in[1] = {npy(names[k], "in", 0)}, *want = npy(names[k], "out", 0);
        xe_tensor **outs = run_model(g, in);
        cr_assert_not_null(outs, "%s: %s", names[k], st.msg);
        char why[256] = "";
        cr_expect(same(outs[0], want, why, sizeof why), "%s: %s", names[k], why);
        cr_expect(outs[0]->data == in[0]->data, "%s: the output is a copy, not a view",
                  names[k]);
        xe_tensor_release(outs[0]);
        xe_tensor_release(want);
        xe_tensor_release(in[0]);
        free(outs);
    }
}

static char *slurp(const char *path, size_t *len)
{
    char *data;
    cr_assert_eq(xe_read_file(path, &data, len, &st), XE_OK, "%s", st.msg);
    return data;
}

static void spit(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

/* xlac-run ARGS (no plugin), stderr into tmp/err; the exit status or -signal. */
static int run_cli(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "env -u LD_PRELOAD %s %s >%s/out 2>%s/err", XLAC_RUN, args, xt_tmp, xt_tmp);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -WTERMSIG(rc);
}

Test(onnx, truncated_files_name_the_byte_and_field)
{
    size_t len;
    char *data = slurp(DATA "/Gemm.onnx", &len), path[128];
    snprintf(path, sizeof path, "%s/cut.onnx", xt_tmp);
    for (size_t cut = 1; cut < len; cut += cut < 64 ? 1 : 13) {
        spit(path, data, cut);
        xe_status_clear(&st);
        xe_graph *g = xe_onnx_load(path, NULL, &st);
        cr_expect_null(g, "a model cut at byte %zu loaded", cut);
        xe_graph_destroy(g);
        if (st.code == XE_ERR_PARSE)
            cr_expect(strstr(st.msg, "byte ") && strstr(st.msg, "field"), "cut %zu: %s", cut, st.msg);
    }
    spit(path, data, len - 1);
    xe_status_clear(&st);
    cr_assert_null(xe_onnx_load(path, NULL, &st));
    cr_expect_eq(st.code, XE_ERR_PARSE);
    cr_expect(strstr(st.msg, "truncated") && strstr(st.msg, "byte "), "%s", st.msg);
    char args[256];
    snprintf(args, sizeof args, "%s", path);
    cr_expect_eq(run_cli(args), 2);
    free(data);
}

Test(onnx, malformed_field_names_offset_and_field)
{
    size_t len;
    char *data = slurp(DATA "/Gemm.onnx", &len), path[128];
    snprintf(path, sizeof path, "%s/bad.onnx", xt_tmp);
    data[0] = 0x0a; /* field 1 (ir_version, a varint) with wire type 2 */
    spit(path, data, len);
    cr_assert_null(xe_onnx_load(path, NULL, &st));
    cr_expect(strstr(st.msg, "byte 0: field ir_version (number 1) of ModelProto"), "%s", st.msg);
    cr_expect_eq(run_cli(path), 2);
    spit(path, "xlac.graph? no, junk", 20);
    cr_expect_eq(run_cli(path), 2);
    free(data);
}

/* Mutated models (bytes changed, removed, repeated): an error or a graph, never a crash. */
Test(onnx, mutated_models_never_crash)
{
    const char *models[] = {DATA "/Attention.onnx", DATA "/Gemm.onnx", DATA "/Slice.onnx"};
    char path[128];
    snprintf(path, sizeof path, "%s/mut.onnx", xt_tmp);
    uint64_t seed = 12345;
    int loaded = 0, refused = 0;
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        size_t len;
        char *data = slurp(models[m], &len), *buf = malloc(len + 8);
        for (int round = 0; round < 300; round++) {
            memcpy(buf, data, len);
            size_t n = len;
            for (int k = 0; k < 1 + round % 4; k++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                size_t at = (size_t)(seed >> 33) % n;
                if (round % 3 == 0)
                    buf[at] = (char)(seed >> 24);
                else if (round % 3 == 1 && n > 1)
                    memmove(buf + at, buf + at + 1, --n - at);
                else
                    buf[at] ^= (char)(1u << ((seed >> 20) % 8));
            }
            spit(path, buf, n);
            xe_status_clear(&st);
            xe_graph *g = xe_onnx_load(path, NULL, &st);
            if (g)
                loaded++;
            else
                refused++;
            cr_expect(g || st.msg[0], "a refusal without a message");
            xe_graph_destroy(g);
        }
        free(buf);
        free(data);
    }
    cr_expect_gt(refused, 0);
    cr_log_info("mutated models: %d loaded, %d refused", loaded, refused);
}

Test(onnx, every_unsupported_node_is_listed)
{
    xe_graph *g = xe_onnx_load(DATA "/unsupported.onnx", NULL, &st);
    cr_assert_null(g);
    cr_expect_eq(st.code, XE_ERR_GRAPH);
    const char *want[] = {"3 unsupported, 0 invalid", "node 'conv_1' (Conv, domain ai.onnx, opset 17)",
                          "only 1-D to 3-D Conv is supported (input rank 6)",
                          "node 'cast_c64' (Cast", "cast to COMPLEX64 is not supported",
                          "node 'custom_op' (Custom, domain com.example"};
    for (size_t k = 0; k < sizeof want / sizeof *want; k++)
        cr_expect(strstr(st.msg, want[k]), "missing '%s' in: %s", want[k], st.msg);
    cr_expect_null(strstr(st.msg, "'fine'"));
    cr_expect_null(strstr(st.msg, "'after'"));
    cr_expect_eq(run_cli(DATA "/unsupported.onnx"), 2);
}

/* How many nodes of g run op. */
static int count_op(const xe_graph *g, int op)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        n += g->nodes[i]->op == op;
    return n;
}

/* Load-time rewrites (executor/frontends/onnx/rewrite.c); every_mapped_op_matches_numpy checks their values. */
Test(onnx, load_time_rewrites_batch_norm_pow_transpose)
{
    xe_graph *g = xe_onnx_load(DATA "/ConvBatchNorm.onnx", NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    cr_expect_eq(count_op(g, XE_OP_CONV2D), 1);
    cr_expect_eq(count_op(g, XE_OP_MUL) + count_op(g, XE_OP_ADD) + count_op(g, XE_OP_RSQRT), 0,
                 "the BatchNorm's per-channel scale and shift are left in the graph");
    xe_graph_destroy(g);
    g = xe_onnx_load(DATA "/PowSmall.onnx", NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    cr_expect_eq(count_op(g, XE_OP_POW), 0, "pow by 2 or 3 is left a pow");
    cr_expect_eq(count_op(g, XE_OP_MUL), 3, "x*x, (x*x)*x and x*x");
    xe_graph_destroy(g);
    g = xe_onnx_load(DATA "/Conv3D.onnx", NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    cr_expect_eq(count_op(g, XE_OP_CONV2D), 3, "a 3-D conv is one conv2d per depth tap");
    xe_graph_destroy(g);
    g = xe_onnx_load(DATA "/MatMulTransposed.onnx", NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    cr_expect_eq(count_op(g, XE_OP_TRANSPOSE), 0, "the transpose before the MatMul is left a node");
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->op == XE_OP_MATMUL)
            cr_expect(xe_node_attr_bool(g->nodes[i], "transpose_b", false), "no transpose_b flag");
    xe_graph_destroy(g);
}

Test(onnx, dim_param_takes_sizes_from_feeds)
{
    xe_graph *g = xe_onnx_load(DATA "/dynamic.onnx", NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    cr_assert_eq(g->nodes[g->inputs[0]]->type.shape.dims[0], XE_DIM_UNKNOWN);
    xe_session *s = xe_session_new(g, &(xe_session_options){.place = XE_PLACE_CPU}, &st);
    cr_assert_not_null(s, "%s", st.msg);
    for (int64_t batch = 2; batch <= 5; batch += 3) {
        xe_shape sh = {.rank = 2, .dims = {batch, 3}};
        xe_tensor *x = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st), *y = NULL;
        for (int64_t i = 0; i < batch * 3; i++)
            ((float *)x->data)[i] = (float)(i % 4) - 1.5f;
        cr_assert_eq(xe_session_run(s, &x, &y, &st), XE_OK, "%s", st.msg);
        cr_assert_eq(y->shape.dims[0], batch);
        for (int64_t r = 0; r < batch; r++) {
            float want = 0;
            for (int c = 0; c < 3; c++)
                want += fmaxf(((float *)x->data)[r * 3 + c], 0);
            cr_expect_float_eq(((float *)y->data)[r], want, 1e-6);
        }
        xe_tensor_release(x);
        xe_tensor_release(y);
    }
    xe_session_destroy(s);
}

Test(onnx, external_data_is_read_and_stays_in_the_folder)
{
    xe_graph *g = xe_onnx_load(DATA "/external.onnx", NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_tensor *w = xe_npy_read(DATA "/external.w.npy", &st);
    cr_assert_not_null(w);
    bool found = false;
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        if (n->op == XE_OP_CONST && n->value->nbytes == w->nbytes)
            found = !memcmp(n->value->data, w->data, w->nbytes);
    }
    cr_expect(found, "the external weight was not read");
    xe_graph_destroy(g);
    xe_tensor_release(w);
    cr_assert_null(xe_onnx_load(DATA "/external_escape.onnx", NULL, &st));
    cr_expect(strstr(st.msg, "inside the model's folder"), "%s", st.msg);
}

Test(onnx, pb_feeds_and_to_xg)
{
    char args[1024], path[256];
    snprintf(args, sizeof args, "%s/pbfeed.onnx --feed %s/pbfeed --save-outputs %s/o", DATA, DATA, xt_tmp);
    cr_assert_eq(run_cli(args), 0);
    snprintf(path, sizeof path, "%s/o/y.npy", xt_tmp);
    xe_tensor *got = xe_npy_read(path, &st), *want = xe_npy_read(DATA "/pbfeed.expected.npy", &st);
    char why[256];
    cr_assert(got && want);
    cr_expect(same(got, want, why, sizeof why), "%s", why);
    xe_tensor_release(got);
    xe_tensor_release(want);
    /* --to-xg: the text parses and runs to the numpy result */
    snprintf(args, sizeof args, "%s/LayerNormalization.onnx --to-xg %s/ln.xg", DATA, xt_tmp);
    cr_assert_eq(run_cli(args), 0);
    snprintf(path, sizeof path, "%s/ln.xg", xt_tmp);
    xe_graph *g = xe_parse_file(path, &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_tensor *in[3] = {npy("LayerNormalization", "in", 0), npy("LayerNormalization", "in", 1),
                        npy("LayerNormalization", "in", 2)};
    xe_tensor **outs = run_model(g, in);
    cr_assert_not_null(outs, "%s", st.msg);
    for (int k = 0; k < 3; k++) {
        want = npy("LayerNormalization", "out", k);
        cr_expect(same(outs[k], want, why, sizeof why), "output %d: %s", k, why);
        xe_tensor_release(want);
        xe_tensor_release(outs[k]);
        xe_tensor_release(in[k]);
    }
    free(outs);
}

/* Range with delta 0 and a Pad that removes more than its dim: errors naming the node, as in onnxruntime
   (both gave an empty result with exit 0). */
Test(onnx, invalid_range_and_pad_name_the_node)
{
    cr_assert_null(xe_onnx_load(DATA "/invalid_range.onnx", NULL, &st));
    cr_expect(strstr(st.msg, "range_zero_delta") && strstr(st.msg, "delta"), "%s", st.msg);
    xe_status_clear(&st);
    cr_assert_null(xe_onnx_load(DATA "/invalid_pad.onnx", NULL, &st));
    cr_expect(strstr(st.msg, "pad_too_much") && strstr(st.msg, "remove more than"), "%s", st.msg);
    char args[512];
    snprintf(args, sizeof args, "%s/invalid_range.onnx --seed 0", DATA);
    cr_expect_eq(run_cli(args), 2);
}

/* symbolic_attention.sK.inJ.npy (make_symbolic_models.py) */
static xe_tensor *sym_npy(int k, const char *what, int j)
{
    char p[512];
    snprintf(p, sizeof p, "%s/symbolic_attention.s%d.%s%d.npy", DATA, k, what, j);
    xe_tensor *t = xe_npy_read(p, &st);
    cr_assert_not_null(t, "%s: %s", p, st.msg);
    return t;
}

/*
 * Shapes computed from symbolic dims (Shape, Gather/Concat/Unsqueeze over
 * shapes, Reshape to them, Range, ConstantOfShape, Trilu, Equal/Where,
 * Expand, Size): one import and one session run the model at every fed
 * size, and agree with onnxruntime at the three committed ones; the other
 * sizes give outputs of the fed size.
 */
Test(onnx, symbolic_dims_run_at_every_size_in_one_session)
{
    xe_graph *g = xe_onnx_load(DATA "/symbolic_attention.onnx", NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    cr_assert_eq(g->nodes[g->inputs[0]]->type.shape.dims[1], XE_DIM_UNKNOWN);
    xe_session *s = xe_session_new(g, &(xe_session_options){.place = XE_PLACE_CPU}, &st);
    cr_assert_not_null(s, "%s", st.msg);
    for (int round = 0; round < 2; round++) /* the second round reuses the specialised graphs */
        for (int k = 0; k < 3; k++) {
            xe_tensor *in[2] = {sym_npy(k, "in", 0), sym_npy(k, "in", 1)}, *y = NULL, *want = sym_npy(k, "out", 0);
            cr_assert_eq(xe_session_run(s, in, &y, &st), XE_OK, "size %d: %s", k, st.msg);
            char why[256];
            cr_expect(same(y, want, why, sizeof why), "size %d: %s", k, why);
            for (int j = 0; j < 2; j++)
                xe_tensor_release(in[j]);
            xe_tensor_release(y);
            xe_tensor_release(want);
        }
    for (int64_t b = 1; b <= 4; b++) /* eight more sizes: past the cache's bound of 8 graphs */
        for (int64_t n = 2; n <= 3; n++) {
            int64_t len = 3 * b + n;
            xe_shape xs = {.rank = 3, .dims = {b, len, 8}}, ms = {.rank = 2, .dims = {b, len}};
            xe_tensor *in[2] = {xe_tensor_new(XE_F32, &xs, XE_DEV_CPU, &st),
                                xe_tensor_new(XE_I64, &ms, XE_DEV_CPU, &st)}, *y = NULL;
            memset(in[0]->data, 0, in[0]->nbytes);
            for (int64_t i = 0; i < b * len; i++)
                ((int64_t *)in[1]->data)[i] = 1;
            cr_assert_eq(xe_session_run(s, in, &y, &st), XE_OK, "%lldx%lld: %s", (long long)b, (long long)len, st.msg);
            cr_expect(y->shape.rank == 3 && y->shape.dims[0] == b && y->shape.dims[1] == len && y->shape.dims[2] == 8);
            /* x = 0: the output is the position term, 0.1 * position / (b * len * 8) */
            float want = 0.1f * (float)(len - 1) / (float)(b * len * 8);
            cr_expect_float_eq(((float *)y->data)[(len - 1) * 8], want, 1e-6);
            xe_tensor_release(in[0]);
            xe_tensor_release(in[1]);
            xe_tensor_release(y);
        }
    xe_session_destroy(s);
}

/* xe_graph_specialise builds a graph at pinned input shapes; a graph without a maker refuses. */
Test(onnx, symbolic_dims_specialise_at_pinned_shapes)
{
    xe_graph *g = xe_onnx_load(DATA "/symbolic_attention.onnx", NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_shape bad[2] = {{.rank = 3, .dims = {2, 5, 8}}, {.rank = 2, .dims = {2, 5}}};
    xe_graph *ok = xe_graph_specialise(g, bad, &st);
    cr_assert_not_null(ok, "%s", st.msg);
    cr_expect_eq(ok->nodes[ok->inputs[0]]->type.shape.dims[1], 5);
    xe_graph_destroy(ok);
    xe_graph *plain = xe_graph_new("x");
    cr_expect_null(xe_graph_specialise(plain, bad, &st));
    cr_expect(strstr(st.msg, "not built per input shape"), "%s", st.msg);
    xe_graph_destroy(plain);
    xe_graph_destroy(g);
}
