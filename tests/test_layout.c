/*
 * Chained values between the convs of a cluster (codegen/plan/layout.c):
 * which values of a plan stay in the engine's conv layout (NHWC with
 * AVX-512, nChw8c without: this machine's), and that a cluster with such chains,
 * cut at every kind of border (a body output, a reduction, a per-channel
 * operand, an NCHW operand of a residual add, a conv's weights), computes
 * what op by op computes (xlac-run --compare on the compiled cluster).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "support/plan_of.h"
#include "support/tmpdir.h"
#include "xlac/xlac.h"

#define XLAC_RUN XLAC_BINARY_DIR "/bin/xlac-run"


/* Checks that exactly the nodes named in `chained` (space-separated) hold chained values. */
static void expect_chained(const char *text, const char *chained)
{
    xe_graph *g;
    xg_plan *p = xt_plan_of(text, &g);
    for (int i = 0; i < g->n_nodes; i++) {
        const char *name = g->nodes[i]->name;
        size_t n = strlen(name);
        bool want = false;
        for (const char *q = chained; (q = strstr(q, name)); q += n)
            want = want || ((q == chained || q[-1] == ' ') && (q[n] == ' ' || q[n] == '\0'));
        cr_assert_eq(p->chained[i], want, "node %s: chained %d, want %d\n%s", name, p->chained[i], want, text);
    }
    xg_plan_destroy(p);
    xe_graph_destroy(g);
}

#define HEAD "xlac.graph v1\ninput x: f32[1,8,6,6]\nw = const(f32[8,8,1,1], 0.25)\n"

Test(layout, a_chain_between_convs_stays_channels_last)
{
    /* c1 -> relu -> c2 -> add(c2, r1) -> relu -> c3 -> reduce: the reduction reads c3 in NCHW */
    expect_chained(HEAD "c1 = conv2d(x, w)\nr1 = relu(c1)\nc2 = conv2d(r1, w)\ns = add(c2, r1)\n"
                     "r2 = relu(s)\nc3 = conv2d(r2, w)\nm = reduce_mean(c3, axes=[2,3])\noutput m\n",
                "c1 r1 c2 s r2");
    /* ReLU6 as maximum and minimum with scalars: still elementwise at one index */
    expect_chained(HEAD "c1 = conv2d(x, w)\nz = const(f32[], 0)\nsix = const(f32[], 6)\nmx = maximum(c1, z)\n"
                     "r6 = minimum(mx, six)\nc2 = conv2d(r6, w)\noutput c2\n",
                "c1 mx r6");
}

Test(layout, borders_end_the_chain)
{
    /* a body output is handed back NCHW, and so is what reaches it */
    expect_chained(HEAD "c1 = conv2d(x, w)\nr1 = relu(c1)\nc2 = conv2d(r1, w)\noutput c2\noutput r1\n", "");
    /* a per-channel operand is indexed by channel: its reader and the conv before it stay NCHW */
    expect_chained(HEAD "c1 = conv2d(x, w)\nsc = const(f32[1,8,1,1], [1,2,3,4,5,6,7,8])\nm = mul(c1, sc)\n"
                     "c2 = conv2d(m, w)\noutput c2\n",
                "");
    /* a residual add with the cluster's NCHW input: the add and its conv stay NCHW */
    expect_chained(HEAD "c1 = conv2d(x, w)\nr1 = relu(c1)\nc2 = conv2d(r1, w)\ns = add(c2, x)\nc3 = conv2d(s, w)\n"
                     "output c3\n",
                "c1 r1");
    /* a value read as a conv's weights is not an activation */
    expect_chained("xlac.graph v1\ninput x: f32[8,8,1,1]\ninput y: f32[1,8,6,6]\n"
                "w = const(f32[8,8,1,1], 0.5)\nc1 = conv2d(x, w)\nr = relu(c1)\nc2 = conv2d(y, r)\nr2 = relu(c2)\n"
                "c3 = conv2d(r2, w)\noutput c3\n",
                "c2 r2");
    /* channel counts that are not multiples of 8 (nChw8c would pad them) are not chained: the
       4-channel chain is dropped; of the second, c2 reads the chained r1 and writes 12 channels
       NCHW */
    expect_chained("xlac.graph v1\ninput x: f32[1,4,6,6]\nw = const(f32[4,4,1,1], 0.25)\n"
                "c1 = conv2d(x, w)\nr1 = relu(c1)\nc2 = conv2d(r1, w)\noutput c2\n",
                "");
    expect_chained("xlac.graph v1\ninput x: f32[1,8,6,6]\nw = const(f32[8,8,1,1], 0.25)\n"
                "w12 = const(f32[12,8,1,1], 0.25)\nw3 = const(f32[8,12,1,1], 0.25)\n"
                "c1 = conv2d(x, w)\nr1 = relu(c1)\nc2 = conv2d(r1, w12)\nr2 = relu(c2)\n"
                "c3 = conv2d(r2, w3)\noutput c3\n",
                "c1 r1");
    /* nothing but elementwise ops: nothing to gain, nothing changed */
    expect_chained("xlac.graph v1\ninput x: f32[1,4,6,6]\nr = relu(x)\ne = exp(r)\noutput e\n", "");
}

static void make_tmp(void);

/* A conv1d's [N, C, W] <-> [N, C, 1, W] reshapes keep a chained value's bytes: the chain goes
   through them and the elementwise op between (Wav2Vec2's feature convs); a reshape that moves
   channels does not. */
Test(layout, a_chain_goes_through_reshapes_of_spatial_ones)
{
    expect_chained("xlac.graph v1\ninput x: f32[1,8,1,20]\nw = const(f32[8,8,1,3], 0.25)\n"
                   "c1 = conv2d(x, w)\ns = reshape(c1, shape=[1,8,18])\nt = tanh(s)\n"
                   "u = reshape(t, shape=[1,8,1,18])\nc2 = conv2d(u, w)\noutput c2\n",
                   "c1 s t u");
    expect_chained("xlac.graph v1\ninput x: f32[1,8,1,20]\nw = const(f32[8,8,1,3], 0.25)\n"
                   "w16 = const(f32[8,16,1,3], 0.25)\nc1 = conv2d(x, w)\n"
                   "s = reshape(c1, shape=[1,16,9])\nt = tanh(s)\nu = reshape(t, shape=[1,16,1,9])\n"
                   "c2 = conv2d(u, w16)\noutput c2\n",
                   "");
}

/* Such a chain run clustered against op by op, its convs reading and writing the conv layout and
   taking the activations between the reshapes as post-ops. */
Test(layout, conv1d_chain_matches_op_by_op, .init = make_tmp, .fini = xt_tmp_fini, .timeout = 120)
{
    const char *text =
        "xlac.graph v1\ninput x: f32[2,16,1,40]\nw = const(f32[16,16,1,3], 0.05)\n"
        "c1 = conv2d(x, w, strides=[1,2])\ns1 = reshape(c1, shape=[2,16,19])\ng1 = gelu(s1)\n"
        "u1 = reshape(g1, shape=[2,16,1,19])\nc2 = conv2d(u1, w, strides=[1,2])\n"
        "s2 = reshape(c2, shape=[2,16,9])\nsg = sigmoid(s2)\ng2 = mul(s2, sg)\n"
        "u2 = reshape(g2, shape=[2,16,1,9])\nc3 = conv2d(u2, w)\nt = tanh(c3)\n"
        "s3 = reshape(t, shape=[2,16,7])\no = add(s3, s3)\noutput o\n";
    xt_write_file(xt_path("conv1d.xg"), text);
    char dump[512], plan[600];
    snprintf(dump, sizeof dump, "XLAC_DUMP_TO=%s/dump", xt_tmp);
    snprintf(plan, sizeof plan, "%s/dump/module_0000.cluster_0.plan.txt", xt_tmp);
    const char *env[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--disk_cache=0", dump, NULL};
    const char *argv[] = {XLAC_RUN, xt_path("conv1d.xg"), "--seed", "5", "--compare", NULL};
    xt_result r = xt_run_in(xt_tmp, true, env, argv);
    cr_assert_eq(r.rc, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "op by op against 1 cluster(s)"), "%s%s", r.out, r.err);
    char *p = xt_read_file(plan, NULL);
    cr_assert_not_null(p, "%s", plan);
    cr_assert_eq(xt_occurrences(p, "input converted from NCHW, output in the engine's conv layout"), 1, "%s", p);
    cr_assert_eq(xt_occurrences(p, "input and output in the engine's conv layout"), 1, "%s", p);
    cr_assert_eq(xt_occurrences(p, "output converted to NCHW"), 1, "%s", p);
    /* the GELU and the SiLU between the reshapes run inside the convs as oneDNN post-ops
       (epilogue.c); c3's tanh is not one of theirs */
    cr_assert_eq(xt_occurrences(p, "runs inside it as post-ops"), 2, "%s", p);
    free(p);
    xt_result_free(&r);
}

static void make_tmp(void)
{
    xt_tmp_make("/tmp/xlac_layout_XXXXXX");
}

/* A graph with every border above in one cluster, clustered against op by op. */
Test(layout, clusters_with_borders_match_op_by_op, .init = make_tmp, .fini = xt_tmp_fini, .timeout = 120)
{
    const char *text =
        "xlac.graph v1\ninput x: f32[2,8,7,7]\n"
        "w = const(f32[8,8,3,3], 0.03)\nwd = const(f32[8,1,3,3], 0.1)\nb = const(f32[8], 0.2)\n"
        "z = const(f32[], 0)\nsix = const(f32[], 6)\nsc = const(f32[1,8,1,1], [1,2,3,4,5,6,7,8])\n"
        "c1 = conv2d(x, w, b, pads=[1,1,1,1])\nr1 = relu(c1)\n"
        "c2 = conv2d(r1, wd, groups=8, pads=[1,1,1,1])\nmx = maximum(c2, z)\nr6 = minimum(mx, six)\n"
        "c3 = conv2d(r6, w, pads=[1,1,1,1])\ns = add(c3, r1)\n"
        "c4 = conv2d(s, w, pads=[1,1,1,1])\nm = mul(c4, sc)\nc5 = conv2d(m, w, pads=[1,1,1,1])\n"
        "t = add(c5, x)\nr = relu(t)\nc6 = conv2d(r, wd, groups=8, strides=[2,2], pads=[1,1,1,1])\n"
        "g = reduce_mean(c6, axes=[2,3])\noutput g\n";
    xt_write_file(xt_path("borders.xg"), text);
    char dump[512], plan[600];
    snprintf(dump, sizeof dump, "XLAC_DUMP_TO=%s/dump", xt_tmp);
    snprintf(plan, sizeof plan, "%s/dump/module_0000.cluster_0.plan.txt", xt_tmp);
    const char *env[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--disk_cache=0", dump, NULL};
    const char *argv[] = {XLAC_RUN, xt_path("borders.xg"), "--seed", "3", "--compare", NULL};
    xt_result r = xt_run_in(xt_tmp, true, env, argv);
    cr_assert_eq(r.rc, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "op by op against 1 cluster(s)"), "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "compare g: "), "%s%s", r.out, r.err);
    char *p = xt_read_file(plan, NULL);
    cr_assert_not_null(p, "%s", plan);
    /* c1 writes channels-last; c2 and c3 (the residual add of r1 as its post-op) read and write it;
       c4 reads it and writes NCHW for the per-channel mul; c5 and c6 are NCHW (x, the reduction) */
    cr_assert_eq(xt_occurrences(p, "input converted from NCHW, output in the engine's conv layout"), 1, "%s", p);
    cr_assert_eq(xt_occurrences(p, "input and output in the engine's conv layout"), 2, "%s", p);
    cr_assert_eq(xt_occurrences(p, "post-ops; input and output in the engine's conv layout"), 1, "%s", p);
    cr_assert_eq(xt_occurrences(p, "input in the engine's conv layout (NHWC with AVX-512, nChw8c blocks without), output converted to NCHW"), 1, "%s", p);
    free(p);
    xt_result_free(&r);
}
