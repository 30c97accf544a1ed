/*
 * What the fuzz campaigns found (scripts/fuzz.sh, docs/fuzzing.md), each a
 * model (written here by hand with tests/support/pb.h) or a graph checked
 * for what the loader now does; the inputs the fuzzers found are replayed as
 * they are by test_fuzz_replay (tests/data/fuzz/TARGET/).
 *
 * - Resize to 1.5e9 positions along one axis (onnx_ext, 2026-12-01): the
 *   importer built its position and weight tables (12 bytes a position) at
 *   load before anything checked the size, a 12 GB allocation; a scale of
 *   1e30 was converted to int64 unchecked. Now both are refused by name.
 * - Trilu over a declared a: i16[2, 2^31, 4] (onnx, 2026-12-01, inside two
 *   Ifs the mutator wrapped): its mask, a constant of rows x cols, was
 *   built at load, 8 GB; then ReverseSequence's positions over a declared
 *   axis of 2^31 (16 GB). Every constant a builder computes at load (masks,
 *   positions, CumSum's and DFT's matrices, attention masks, Col2Im's
 *   weights) now comes from ox_new_tensor and holds at most OX_FOLD_MAX
 *   elements, as folded ones do.
 * - MaxPool with a dilation of 9.2e18 (onnx, 2026-12-01): the pool's pad
 *   check computed the dilated kernel, d * (k - 1) + 1, in a signed
 *   product that overflowed (UBSan) before the window sizes, which are
 *   checked, were reached. The extent now saturates and the sizes refuse it.
 * - DepthToSpace and SpaceToDepth with a blocksize of INT64_MAX (onnx,
 *   2026-12-01): blocksize squared, and the dims times it, overflowed
 *   signed products; they are now checked and refused by node.
 * - A 3-D Conv with a depth dilation of INT64_MAX (onnx, 2026-12-01): its
 *   depth arithmetic (the dilated kernel, the output depth, the planes
 *   padded after) overflowed signed products; so did auto_pad SAME's. Both
 *   are computed with overflow checks now and refused by node.
 * - Split of a dim not known at load into parts 1.6e18 and 9.2e18 (onnx,
 *   2026-12-01): the parts were checked against the dim only when it was
 *   known, and summed in a signed add that overflowed. They are summed
 *   with overflow checks now, whether the dim is known or not.
 * - Thirty Expands, Pads and friends of 16M elements each in a 1.3 KB
 *   model (onnx, 2026-12-01): every one was folded at load, 18 s under
 *   the fuzzer (a larger model of the same kind: hours). Folds and
 *   load-time constants above 65536 elements now share a budget of twice
 *   the model's weights plus OX_FOLD_MAX; what does not fit runs at run
 *   time. The weights are counted as stored: the campaign's one timeout
 *   was the same model with an initializer declared [2^62] over 32 bytes.
 * - RotaryEmbedding, interleaved, with caches of the wrong shape (onnx,
 *   2026-12-01): once the cache had failed, the builder's helpers took the
 *   failed value's rank, 0, and wrote index -1 of a dims array. They now
 *   return at once for a failed value, as every ox_* helper does.
 * - Col2Im over an image of 2^34 x 2^34 (onnx, 2026-12-01): each dim was
 *   in range but the number of blocks, their product, overflowed. It is
 *   multiplied with overflow checks now and refused by node.
 * - OneHot with a float depth of 7e22 (onnx_ext campaign, 2026-12-01): the
 *   depth was converted to int64 unchecked (UBSan). It is checked in
 *   double now, 1 to OX_FOLD_MAX.
 * - A 54-byte .xg line declaring a constant of 44 million i4 elements
 *   filled from one value (xg, 2026-12-01): each element was converted on
 *   its own, over 11 s under the fuzzer's instrumentation (libFuzzer's
 *   timeout). A one-value constant is now stored once and copied; this
 *   checks that every element of such constants, of every dtype, holds it.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/pb.h"
#include "support/tmpdir.h"
#include "xlac/xlac.h"

static void tensor_i64(pb *t, const char *name, const int64_t *v, int n)
{
    pb_int(t, 1, (uint64_t)n); /* dims: [n] */
    pb_int(t, 2, 7);           /* INT64 */
    pb_str(t, 8, name);
    pb_bytes(t, 9, v, (size_t)n * sizeof *v);
}

static void tensor_f32(pb *t, const char *name, const float *v, int n)
{
    pb_int(t, 1, (uint64_t)n);
    pb_int(t, 2, 1); /* FLOAT */
    pb_str(t, 8, name);
    pb_bytes(t, 9, v, (size_t)n * sizeof *v);
}

/* x: f32[1,1,2,2] resized by Resize(x, "", scales or "", sizes) -> y, opset 13, written to path. */
static void write_resize(const char *path, const float *scales, const int64_t *sizes)
{
    pb m = {0}, o = {0}, g = {0}, n = {0}, init = {0}, vx = {0}, vy = {0}, type = {0}, tt = {0}, shape = {0};
    pb_str(&n, 1, "x");
    pb_str(&n, 1, "");
    pb_str(&n, 1, scales ? "scales" : "");
    if (sizes)
        pb_str(&n, 1, "sizes");
    pb_str(&n, 2, "y");
    pb_str(&n, 3, "resize");
    pb_str(&n, 4, "Resize");
    if (scales)
        tensor_f32(&init, "scales", scales, 4);
    else
        tensor_i64(&init, "sizes", sizes, 4);
    for (int k = 0; k < 4; k++) {
        pb d = {0};
        pb_int(&d, 1, k < 2 ? 1 : 2);
        pb_msg(&shape, 1, &d);
    }
    pb_int(&tt, 1, 1);
    pb_msg(&tt, 2, &shape);
    pb_msg(&type, 1, &tt);
    pb_str(&vx, 1, "x");
    pb_msg(&vx, 2, &type);
    pb_str(&vy, 1, "y");
    pb_msg(&g, 1, &n);
    pb_str(&g, 2, "g");
    pb_msg(&g, 5, &init);
    pb_msg(&g, 11, &vx);
    pb_msg(&g, 12, &vy);
    pb_str(&o, 1, "");
    pb_int(&o, 2, 13);
    pb_int(&m, 1, 8);
    pb_msg(&m, 8, &o);
    pb_msg(&m, 7, &g);
    pb_write_file(&m, path);
}

/* y = OP(x) for x: f32[dims], opset 17, the node named "node" with int attribute attr (unless
   NULL) = v, written to path. */
static void write_unary_attr(const char *path, const char *op, const int64_t *dims, int rank,
                             const char *attr, int64_t v)
{
    pb m = {0}, o = {0}, g = {0}, n = {0}, vx = {0}, vy = {0};
    pb_str(&n, 1, "x");
    pb_str(&n, 2, "y");
    pb_str(&n, 3, "node");
    pb_str(&n, 4, op);
    if (attr) {
        pb a = {0};
        pb_str(&a, 1, attr);
        pb_int(&a, 20, 2); /* INT */
        pb_int(&a, 3, (uint64_t)v);
        pb_msg(&n, 5, &a);
    }
    pb_value_info(&vx, "x", 1, dims, rank);
    pb_str(&vy, 1, "y");
    pb_msg(&g, 1, &n);
    pb_str(&g, 2, "g");
    pb_msg(&g, 11, &vx);
    pb_msg(&g, 12, &vy);
    pb_str(&o, 1, "");
    pb_int(&o, 2, 17);
    pb_int(&m, 1, 8);
    pb_msg(&m, 8, &o);
    pb_msg(&m, 7, &g);
    pb_write_file(&m, path);
}

static void write_unary(const char *path, const char *op, const int64_t *dims, int rank)
{
    write_unary_attr(path, op, dims, rank, NULL, 0);
}

/* y = Conv(x, w) for x: f32[1,1,4,4(,4)] and w of ones shaped wdims (rank 4 or 5), with dilations
   dil, and auto_pad unless NULL; the node named "node", opset 17, written to path. */
static void write_conv(const char *path, const int64_t *wdims, int rank, const int64_t *dil,
                       const char *auto_pad)
{
    pb m = {0}, o = {0}, g = {0}, n = {0}, w = {0}, a = {0}, vx = {0}, vy = {0};
    const int64_t xdims[5] = {1, 1, 4, 4, 4};
    int64_t count = 1;
    for (int k = 0; k < rank; k++) {
        pb_int(&w, 1, (uint64_t)wdims[k]);
        count *= wdims[k];
    }
    float ones[64];
    for (int k = 0; k < 64; k++)
        ones[k] = 1;
    pb_int(&w, 2, 1);
    pb_str(&w, 8, "w");
    pb_bytes(&w, 9, ones, (size_t)count * sizeof *ones);
    pb_str(&n, 1, "x");
    pb_str(&n, 1, "w");
    pb_str(&n, 2, "y");
    pb_str(&n, 3, "node");
    pb_str(&n, 4, "Conv");
    pb_str(&a, 1, "dilations");
    pb_int(&a, 20, 7); /* INTS */
    for (int k = 0; k < rank - 2; k++)
        pb_int(&a, 8, (uint64_t)dil[k]);
    pb_msg(&n, 5, &a);
    if (auto_pad) {
        pb s = {0};
        pb_str(&s, 1, "auto_pad");
        pb_int(&s, 20, 3); /* STRING */
        pb_str(&s, 4, auto_pad);
        pb_msg(&n, 5, &s);
    }
    pb_value_info(&vx, "x", 1, xdims, rank);
    pb_str(&vy, 1, "y");
    pb_msg(&g, 1, &n);
    pb_str(&g, 2, "g");
    pb_msg(&g, 5, &w);
    pb_msg(&g, 11, &vx);
    pb_msg(&g, 12, &vy);
    pb_str(&o, 1, "");
    pb_int(&o, 2, 17);
    pb_int(&m, 1, 8);
    pb_msg(&m, 8, &o);
    pb_msg(&m, 7, &g);
    pb_write_file(&m, path);
}

/* path does not load, and the message names the node and holds why. */
static void expect_refused_as(const char *path, const char *node, const char *why)
{
    xe_status st;
    xe_status_clear(&st);
    xe_graph *g = xe_onnx_load(path, NULL, &st);
    cr_expect_null(g, "%s loaded", path);
    xe_graph_destroy(g);
    cr_expect(strstr(st.msg, node) && strstr(st.msg, why), "%s: %s", path, st.msg);
}

Test(fuzz_findings, resize_to_billions_of_positions_is_refused_at_load, .timeout = 60)
{
    xt_tmp_make("/tmp/xlac-findings-XXXXXX");
    const int64_t sizes[4] = {1, 1, 2, 1500000000};
    write_resize(xt_path("sizes.onnx"), NULL, sizes);
    expect_refused_as(xt_path("sizes.onnx"), "resize", "beyond"); /* sizes 1.5e9 */
    const float scales[4] = {1, 1, 1, 1e30f};
    write_resize(xt_path("scales.onnx"), scales, NULL);
    expect_refused_as(xt_path("scales.onnx"), "resize", "beyond"); /* scale 1e30 */
    cr_assert(xt_tmp_remove());
}

Test(fuzz_findings, load_time_masks_of_declared_dims_are_bounded, .timeout = 60)
{
    xt_tmp_make("/tmp/xlac-findings-XXXXXX");
    const int64_t huge[2] = {65536, 131072}, fine[2] = {64, 32};
    write_unary(xt_path("trilu.onnx"), "Trilu", huge, 2);
    expect_refused_as(xt_path("trilu.onnx"), "node", "more than");
    write_unary(xt_path("eyelike.onnx"), "EyeLike", huge, 2);
    expect_refused_as(xt_path("eyelike.onnx"), "node", "more than");
    write_unary(xt_path("small.onnx"), "Trilu", fine, 2);
    xe_status st;
    xe_graph *g = xe_onnx_load(xt_path("small.onnx"), NULL, &st);
    cr_expect_not_null(g, "a 64x32 Trilu: %s", st.msg);
    xe_graph_destroy(g);
    cr_assert(xt_tmp_remove());
}

Test(fuzz_findings, pool_dilations_beyond_int64_are_refused, .timeout = 60)
{
    static const char *const lines[] = {"max_pool2d(x, kernel=[3,3], dilations=[9218315432181916514,1])",
                                         "avg_pool2d(x, kernel=[3,9223372036854775807], dilations=[1,2])"};
    for (size_t k = 0; k < 2; k++) {
        char text[512];
        snprintf(text, sizeof text, "xlac.graph v1\ninput x: f32[1,1,8,8]\ny = %s\noutput y\n", lines[k]);
        xe_status st;
        xe_graph *g = xe_parse_string(text, "pool.xg", &st); /* the parser infers as it reads */
        bool refused = !g || xe_graph_infer(g, &st) != XE_OK;
        cr_expect(refused && strstr(st.msg, "64-bit"), "%s: %s", lines[k], refused ? st.msg : "inferred");
        xe_graph_destroy(g);
    }
}

Test(fuzz_findings, blocksizes_beyond_int64_are_refused, .timeout = 60)
{
    xt_tmp_make("/tmp/xlac-findings-XXXXXX");
    const int64_t dims[4] = {1, 4, 2, 2};
    static const char *const ops[] = {"DepthToSpace", "SpaceToDepth"};
    const int64_t sizes[] = {INT64_MAX, (int64_t)1 << 32, (int64_t)1 << 62};
    for (int k = 0; k < 6; k++) {
        write_unary_attr(xt_path("m.onnx"), ops[k % 2], dims, 4, "blocksize", sizes[k / 2]);
        expect_refused_as(xt_path("m.onnx"), "node", "64-bit");
    }
    write_unary_attr(xt_path("ok.onnx"), "DepthToSpace", dims, 4, "blocksize", 2);
    xe_status st;
    xe_graph *g = xe_onnx_load(xt_path("ok.onnx"), NULL, &st);
    cr_expect_not_null(g, "blocksize 2: %s", st.msg);
    xe_graph_destroy(g);
    cr_assert(xt_tmp_remove());
}

Test(fuzz_findings, conv_windows_beyond_int64_are_refused, .timeout = 60)
{
    xt_tmp_make("/tmp/xlac-findings-XXXXXX");
    const int64_t w3[5] = {1, 1, 3, 1, 1}, w2[4] = {1, 1, 3, 1};
    const int64_t huge[3] = {INT64_MAX, 1, 1}, fine[3] = {1, 1, 1};
    write_conv(xt_path("c3.onnx"), w3, 5, huge, NULL);
    expect_refused_as(xt_path("c3.onnx"), "node", "64-bit");
    write_conv(xt_path("same.onnx"), w2, 4, huge, "SAME_UPPER");
    expect_refused_as(xt_path("same.onnx"), "node", "64-bit");
    write_conv(xt_path("ok3.onnx"), w3, 5, fine, NULL);
    write_conv(xt_path("ok2.onnx"), w2, 4, fine, "SAME_LOWER");
    static const char *const ok[] = {"ok3.onnx", "ok2.onnx"};
    for (int k = 0; k < 2; k++) {
        xe_status st;
        xe_graph *g = xe_onnx_load(xt_path(ok[k]), NULL, &st);
        cr_expect_not_null(g, "%s: %s", ok[k], st.msg);
        xe_graph_destroy(g);
    }
    cr_assert(xt_tmp_remove());
}

/* a, b = Split(x, split) for x: f32[N] (symbolic), opset 13, the node named "node". */
static void write_split(const char *path, const int64_t *parts)
{
    pb m = {0}, o = {0}, g = {0}, n = {0}, init = {0}, vx = {0}, va = {0}, vb = {0};
    pb type = {0}, tt = {0}, shape = {0}, d = {0};
    pb_str(&n, 1, "x");
    pb_str(&n, 1, "split");
    pb_str(&n, 2, "a");
    pb_str(&n, 2, "b");
    pb_str(&n, 3, "node");
    pb_str(&n, 4, "Split");
    tensor_i64(&init, "split", parts, 2);
    pb_str(&d, 2, "N"); /* dim_param */
    pb_msg(&shape, 1, &d);
    pb_int(&tt, 1, 1);
    pb_msg(&tt, 2, &shape);
    pb_msg(&type, 1, &tt);
    pb_str(&vx, 1, "x");
    pb_msg(&vx, 2, &type);
    pb_str(&va, 1, "a");
    pb_str(&vb, 1, "b");
    pb_msg(&g, 1, &n);
    pb_str(&g, 2, "g");
    pb_msg(&g, 5, &init);
    pb_msg(&g, 11, &vx);
    pb_msg(&g, 12, &va);
    pb_msg(&g, 12, &vb);
    pb_str(&o, 1, "");
    pb_int(&o, 2, 13);
    pb_int(&m, 1, 8);
    pb_msg(&m, 8, &o);
    pb_msg(&m, 7, &g);
    pb_write_file(&m, path);
}

Test(fuzz_findings, split_parts_of_an_unknown_dim_are_checked, .timeout = 60)
{
    xt_tmp_make("/tmp/xlac-findings-XXXXXX");
    const int64_t huge[2] = {1632723774211150004, 9157489675850750998}, negative[2] = {3, -1};
    write_split(xt_path("huge.onnx"), huge);
    expect_refused_as(xt_path("huge.onnx"), "node", "add up");
    write_split(xt_path("neg.onnx"), negative);
    expect_refused_as(xt_path("neg.onnx"), "node", "add up");
    cr_assert(xt_tmp_remove());
}

/* c = Constant(1.0); e = Expand(c, [4096, 4096]); y = Neg(e), written to path. */
static void write_expand_neg(const char *path)
{
    pb m = {0}, o = {0}, g = {0}, k = {0}, a = {0}, t = {0}, ex = {0}, ng = {0}, init = {0}, vy = {0};
    const float one = 1;
    const int64_t to[2] = {4096, 4096};
    pb_int(&t, 2, 1);
    pb_bytes(&t, 9, &one, sizeof one);
    pb_str(&a, 1, "value");
    pb_int(&a, 20, 4); /* TENSOR */
    pb_msg(&a, 5, &t);
    pb_str(&k, 2, "c");
    pb_str(&k, 4, "Constant");
    pb_msg(&k, 5, &a);
    pb_str(&ex, 1, "c");
    pb_str(&ex, 1, "s");
    pb_str(&ex, 2, "e");
    pb_str(&ex, 4, "Expand");
    pb_str(&ng, 1, "e");
    pb_str(&ng, 2, "y");
    pb_str(&ng, 4, "Neg");
    tensor_i64(&init, "s", to, 2);
    pb_str(&vy, 1, "y");
    pb_msg(&g, 1, &k);
    pb_msg(&g, 1, &ex);
    pb_msg(&g, 1, &ng);
    pb_str(&g, 2, "g");
    pb_msg(&g, 5, &init);
    pb_msg(&g, 12, &vy);
    pb_str(&o, 1, "");
    pb_int(&o, 2, 17);
    pb_int(&m, 1, 8);
    pb_msg(&m, 8, &o);
    pb_msg(&m, 7, &g);
    pb_write_file(&m, path);
}

Test(fuzz_findings, large_folds_share_a_budget_from_the_weights, .timeout = 120)
{
    xt_tmp_make("/tmp/xlac-findings-XXXXXX");
    write_expand_neg(xt_path("m.onnx"));
    xe_status st;
    xe_graph *g = xe_onnx_load(xt_path("m.onnx"), NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    int negs = 0, consts = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        negs += g->nodes[k]->op == XE_OP_NEG;
        consts += g->nodes[k]->op == XE_OP_CONST && g->nodes[k]->value &&
                  xe_tensor_numel(g->nodes[k]->value) == 4096 * 4096;
    }
    cr_expect_eq(consts, 1, "the Expand (16M elements, the budget of a model without weights) is folded");
    cr_expect_eq(negs, 1, "the Neg after it is left to run time");
    xe_graph_destroy(g);
    cr_assert(xt_tmp_remove());
}

/* y = RotaryEmbedding(x: f32[1,2,3,8], cos, sin: f32[1,3,5]), interleaved, opset 23. */
static void write_rotary(const char *path)
{
    pb m = {0}, o = {0}, g = {0}, n = {0}, a = {0}, vx = {0}, vc = {0}, vs = {0}, vy = {0};
    const int64_t xd[4] = {1, 2, 3, 8}, cd[3] = {1, 3, 5};
    pb_str(&n, 1, "x");
    pb_str(&n, 1, "cos");
    pb_str(&n, 1, "sin");
    pb_str(&n, 2, "y");
    pb_str(&n, 3, "node");
    pb_str(&n, 4, "RotaryEmbedding");
    pb_str(&a, 1, "interleaved");
    pb_int(&a, 20, 2);
    pb_int(&a, 3, 1);
    pb_msg(&n, 5, &a);
    pb_value_info(&vx, "x", 1, xd, 4);
    pb_value_info(&vc, "cos", 1, cd, 3);
    pb_value_info(&vs, "sin", 1, cd, 3);
    pb_str(&vy, 1, "y");
    pb_msg(&g, 1, &n);
    pb_str(&g, 2, "g");
    pb_msg(&g, 11, &vx);
    pb_msg(&g, 11, &vc);
    pb_msg(&g, 11, &vs);
    pb_msg(&g, 12, &vy);
    pb_str(&o, 1, "");
    pb_int(&o, 2, 23);
    pb_int(&m, 1, 10);
    pb_msg(&m, 8, &o);
    pb_msg(&m, 7, &g);
    pb_write_file(&m, path);
}

Test(fuzz_findings, rotary_after_a_failed_cache_is_an_error, .timeout = 60)
{
    xt_tmp_make("/tmp/xlac-findings-XXXXXX");
    write_rotary(xt_path("rot.onnx"));
    expect_refused_as(xt_path("rot.onnx"), "node", "caches");
    cr_assert(xt_tmp_remove());
}

/* y = Col2Im(x: f32[1,1,4], image_shape = img, block_shape = [1,1]), opset 18. */
static void write_col2im(const char *path, const int64_t *img)
{
    pb m = {0}, o = {0}, g = {0}, n = {0}, ti = {0}, tb = {0}, vx = {0}, vy = {0};
    const int64_t xd[3] = {1, 1, 4}, blk[2] = {1, 1};
    pb_str(&n, 1, "x");
    pb_str(&n, 1, "img");
    pb_str(&n, 1, "blk");
    pb_str(&n, 2, "y");
    pb_str(&n, 3, "node");
    pb_str(&n, 4, "Col2Im");
    tensor_i64(&ti, "img", img, 2);
    tensor_i64(&tb, "blk", blk, 2);
    pb_value_info(&vx, "x", 1, xd, 3);
    pb_str(&vy, 1, "y");
    pb_msg(&g, 1, &n);
    pb_str(&g, 2, "g");
    pb_msg(&g, 5, &ti);
    pb_msg(&g, 5, &tb);
    pb_msg(&g, 11, &vx);
    pb_msg(&g, 12, &vy);
    pb_str(&o, 1, "");
    pb_int(&o, 2, 18);
    pb_int(&m, 1, 8);
    pb_msg(&m, 8, &o);
    pb_msg(&m, 7, &g);
    pb_write_file(&m, path);
}

Test(fuzz_findings, col2im_block_counts_beyond_int64_are_refused, .timeout = 60)
{
    xt_tmp_make("/tmp/xlac-findings-XXXXXX");
    const int64_t huge[2] = {(int64_t)1 << 34, (int64_t)1 << 34}, fine[2] = {2, 2};
    write_col2im(xt_path("huge.onnx"), huge);
    expect_refused_as(xt_path("huge.onnx"), "node", "64-bit");
    write_col2im(xt_path("ok.onnx"), fine);
    xe_status st;
    xe_graph *g = xe_onnx_load(xt_path("ok.onnx"), NULL, &st);
    cr_expect_not_null(g, "a 2x2 image of 1x1 blocks: %s", st.msg);
    xe_graph_destroy(g);
    cr_assert(xt_tmp_remove());
}

/* y = OneHot(idx: i64[3], depth: f32[] = depth, values: f32[2]), opset 11, written to path. */
static void write_one_hot(const char *path, float depth)
{
    pb m = {0}, o = {0}, g = {0}, n = {0}, td = {0}, tv = {0}, vi = {0}, vy = {0};
    pb type = {0}, tt = {0}, shape = {0}, d = {0};
    const float values[2] = {0, 1};
    pb_str(&n, 1, "idx");
    pb_str(&n, 1, "depth");
    pb_str(&n, 1, "values");
    pb_str(&n, 2, "y");
    pb_str(&n, 3, "node");
    pb_str(&n, 4, "OneHot");
    pb_int(&td, 2, 1); /* a float scalar */
    pb_str(&td, 8, "depth");
    pb_bytes(&td, 9, &depth, sizeof depth);
    tensor_f32(&tv, "values", values, 2);
    pb_int(&d, 1, 3);
    pb_msg(&shape, 1, &d);
    pb_int(&tt, 1, 7); /* INT64 */
    pb_msg(&tt, 2, &shape);
    pb_msg(&type, 1, &tt);
    pb_str(&vi, 1, "idx");
    pb_msg(&vi, 2, &type);
    pb_str(&vy, 1, "y");
    pb_msg(&g, 1, &n);
    pb_str(&g, 2, "g");
    pb_msg(&g, 5, &td);
    pb_msg(&g, 5, &tv);
    pb_msg(&g, 11, &vi);
    pb_msg(&g, 12, &vy);
    pb_str(&o, 1, "");
    pb_int(&o, 2, 11);
    pb_int(&m, 1, 8);
    pb_msg(&m, 8, &o);
    pb_msg(&m, 7, &g);
    pb_write_file(&m, path);
}

Test(fuzz_findings, one_hot_depths_beyond_int64_are_refused, .timeout = 60)
{
    xt_tmp_make("/tmp/xlac-findings-XXXXXX");
    const float bad[3] = {6.99e22f, -1e30f, 0.5f};
    for (int k = 0; k < 3; k++) {
        write_one_hot(xt_path("bad.onnx"), bad[k]);
        expect_refused_as(xt_path("bad.onnx"), "node", "depth");
    }
    write_one_hot(xt_path("ok.onnx"), 5);
    xe_status st;
    xe_graph *g = xe_onnx_load(xt_path("ok.onnx"), NULL, &st);
    cr_expect_not_null(g, "depth 5: %s", st.msg);
    xe_graph_destroy(g);
    cr_assert(xt_tmp_remove());
}

/* The constant of a one-node graph "c = const(TYPE, VALUE)"; its value checked element by element. */
static void check_splat(const char *type, int64_t numel, double want)
{
    char text[256];
    snprintf(text, sizeof text, "xlac.graph v1\nc = const(%s, %g)\noutput c\n", type, want);
    xe_status st;
    xe_graph *g = xe_parse_string(text, "splat.xg", &st);
    cr_assert_not_null(g, "%s: %s", type, st.msg);
    const xe_tensor *v = g->nodes[0]->value;
    cr_assert_eq(xe_tensor_numel(v), numel, "%s", type);
    for (int64_t k = 0; k < numel; k += k < 64 || numel - k < 64 ? 1 : 9973)
        cr_assert_eq(xe_load_f64(v->data, v->dtype, k), want, "%s: element %lld", type, (long long)k);
    xe_graph_destroy(g);
}

Test(fuzz_findings, one_value_constants_fill_every_element, .timeout = 120)
{
    static const char *const types[] = {"f32", "f64", "f16", "bf16", "i32", "i64", "u64", "i16", "u16",
                                        "i8", "u8", "i4", "u4", "i2", "u2", "bool"};
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        char type[64];
        snprintf(type, sizeof type, "%s[3,5,7]", types[k]);
        check_splat(type, 105, 1);
        snprintf(type, sizeof type, "%s[1]", types[k]);
        check_splat(type, 1, 1);
        snprintf(type, sizeof type, "%s[1000003]", types[k]); /* a prime: the last copy is partial */
        check_splat(type, 1000003, 1);
    }
    check_splat("f32[0,4]", 0, 1);
    check_splat("i4[69,992,9,2,2,9,2]", 44354304, -3); /* the fuzzer's line, 44 million elements */
}
