/*
 * The generated CUDA, run without a GPU: each program is compiled for the
 * host with an emulation of the CUDA built-ins it uses (support/cuda_emu.h)
 * and launched with the GPU launcher's grids for small devices (3, 7 or 64
 * resident blocks, so grid-stride loops, split reductions and the column
 * kernels' chunks all happen), then compared with the op-by-op CPU run.
 * This checks the index math, the block and warp reductions, the
 * last-block-combines counters (every program runs twice: a counter left
 * set would break the second run) and argmax's tie and NaN order; the
 * scalar math is the host's, and blocks run one after another. On a
 * machine with a GPU, test_nvrtc runs the same programs for real. Shared
 * kernels (codegen/plan/share.h) launch the kept kernel with the step's own
 * buffers packed into its arguments, as the GPU launcher does.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/cuda_emu.h"
#include "support/randgraph.h"
#include "support/ref.h"
#include "xlac/xlac.h"

static xe_status st;

static void compare(const xe_tensor *got, const xe_tensor *want, const char *text, int out)
{
    ref_expect_same_output(got, want, ref_tolerance(want->dtype), text, out);
}

/*
 * Runs text's CUDA program (at its declared shapes, or generic) twice in
 * the emulation, on other inputs the second time (a partial or a counter
 * left from the first run would show), comparing each with op by op.
 */
static void check_emulated(const char *text, bool generic, int64_t max_blocks)
{
    xe_graph *g = xe_parse_string(text, "emu.xg", &st);
    cr_assert_not_null(g, "%s\n%s", st.msg, text);
    int n_in = g->n_inputs, n_out = g->n_outputs;
    cr_assert(n_in <= 8 && n_out <= 8);
    xe_type types[8];
    for (int k = 0; k < n_in; k++)
        types[k] = g->nodes[g->inputs[k]]->type;
    cuda_emu *e = cuda_emu_build(g, types, generic, &st);
    cr_assert_not_null(e, "%s\n%s", st.msg, text);
    xe_session *s = xe_session_new(g, &(xe_session_options){.place = XE_PLACE_CPU}, &st);
    cr_assert_not_null(s, "%s", st.msg);
    for (int run = 0; run < 2; run++) {
        xe_tensor *in[8] = {0}, *got[8] = {0}, *want[8] = {0};
        for (int k = 0; k < n_in; k++)
            cr_assert_not_null(in[k] = randgraph_input(&types[k], 1000 + (uint64_t)(k + 100 * run)));
        cr_assert_eq(xe_session_run(s, in, want, &st), XE_OK, "%s\n%s", st.msg, text);
        cr_assert_eq(cuda_emu_run(e, in, got, max_blocks, &st), XE_OK, "%s\n%s", st.msg, text);
        for (int k = 0; k < n_out; k++) {
            compare(got[k], want[k], text, k);
            xe_tensor_release(got[k]);
            xe_tensor_release(want[k]);
        }
        for (int k = 0; k < n_in; k++)
            xe_tensor_release(in[k]);
    }
    cuda_emu_destroy(e);
    xe_session_destroy(s); /* owns g */
}

static const int64_t devices[] = {3, 7, 64};

static void check_seeds(uint64_t from, uint64_t to, bool generic, bool more)
{
    for (uint64_t seed = from; seed < to; seed++) {
        char *text = randgraph_text(seed, &(randgraph_options){.n_ops = generic ? 5 : 4 + (int)(seed % 8),
                                                               .more_ops = more});
        check_emulated(text, generic, devices[seed % 3]);
        free(text);
    }
}

/* Repeated layers: later steps launch the first layer's kernels on their own buffers (codegen/plan/share.h). */
Test(cuda_emu, shared_kernels_run_on_their_own_buffers, .timeout = 300)
{
    static const char text[] =
        "xlac.graph v1\ninput x: f32[40,33]\ninput g: f32[33]\n"
        "m1 = reduce_max(x, axes=[1], keepdims=true)\nd1 = sub(x, m1)\nt1 = tanh(d1)\nc1 = reduce_mean(t1, axes=[0])\n"
        "y1 = mul(t1, c1)\n"
        "m2 = reduce_max(y1, axes=[1], keepdims=true)\nd2 = sub(y1, m2)\nt2 = tanh(d2)\nc2 = reduce_mean(t2, axes=[0])\n"
        "y2 = mul(t2, c2)\n"
        "m3 = reduce_max(y2, axes=[1], keepdims=true)\nd3 = sub(y2, m3)\nt3 = tanh(d3)\nc3 = reduce_mean(t3, axes=[0])\n"
        "y3 = mul(t3, c3)\noutput y3\noutput y1\n";
    xe_graph *g = xe_parse_string(text, "layers.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_type types[2] = {g->nodes[g->inputs[0]]->type, g->nodes[g->inputs[1]]->type};
    cuda_emu *e = cuda_emu_build(g, types, false, &st);
    cr_assert_not_null(e, "%s", st.msg);
    cr_assert_geq(cuda_emu_shares(e), 2, "%d shares; the layers should share their kernels", cuda_emu_shares(e));
    cuda_emu_destroy(e);
    xe_graph_destroy(g);
    for (size_t d = 0; d < sizeof devices / sizeof *devices; d++)
        check_emulated(text, false, devices[d]);
}

Test(cuda_emu, random_graphs_match_op_by_op, .timeout = 900)
{
    check_seeds(1, 41, false, false);
}

/* the CUDA text of every unary and binary op of the table (randgraph's table_ops) */
Test(cuda_emu, random_graphs_of_table_ops_match_op_by_op, .timeout = 900)
{
    for (uint64_t seed = 700; seed < 730; seed++) {
        char *text = randgraph_text(seed, &(randgraph_options){.n_ops = 4 + (int)(seed % 8), .table_ops = true});
        check_emulated(text, false, devices[seed % 3]);
        free(text);
    }
}

Test(cuda_emu, shape_generic_random_graphs_match_op_by_op, .timeout = 900)
{
    check_seeds(500, 520, true, false);
}

Test(cuda_emu, random_graphs_with_more_ops_match_op_by_op, .timeout = 900)
{
    check_seeds(3000, 3030, false, true);
}

/*
 * Column reductions: one tile of few outputs over many rows (split into
 * chunks), more tiles than the device holds (grid-stride over tiles), a
 * pair of reduced outer dims; argmax over long rows (a block per output:
 * ties from floor must give the first index, the first NaN from log must
 * win); full reductions split over blocks; softmax and a layer norm as
 * row kernels with more rows than blocks.
 */
Test(cuda_emu, reductions_row_kernels_and_argmax_match_op_by_op, .timeout = 900)
{
    const char *graphs[] = {
        "xlac.graph v1\ninput x: f32[3000,45]\ninput y: f32[3000,45]\np = mul(x, y)\n"
        "s = reduce_sum(p, axes=[0])\nm = reduce_max(x, axes=[0], keepdims=true)\noutput s\noutput m\n",
        "xlac.graph v1\ninput x: i32[700,5]\ns = reduce_sum(x, axes=[0])\noutput s\n",
        "xlac.graph v1\ninput x: f64[300,3,17]\ns = reduce_mean(x, axes=[0,1])\noutput s\n",
        "xlac.graph v1\ninput x: f32[3,3000]\ns = reduce_min(x, axes=[0])\noutput s\n",
        "xlac.graph v1\ninput x: f32[6,700]\nf = floor(x)\na = argmax(f, axis=1)\nb = argmax(f, axis=0)\n"
        "output a\noutput b\n",
        "xlac.graph v1\ninput x: f64[5,300]\nl = log(x)\na = argmax(l, axis=-1, keepdims=true)\noutput a\n",
        "xlac.graph v1\ninput x: f32[40,30]\ne = exp(x)\ns = reduce_sum(e, axes=[0,1])\nm = reduce_max(x)\n"
        "output s\noutput m\n",
        "xlac.graph v1\ninput x: f32[9,300]\ny = softmax(x, axis=-1)\noutput y\n",
        "xlac.graph v1\ninput x: f32[10,100]\nmu = reduce_mean(x, axes=[1], keepdims=true)\nc = sub(x, mu)\n"
        "c2 = mul(c, c)\nv = reduce_mean(c2, axes=[1], keepdims=true)\ne = const(f32[], 1e-5)\nve = add(v, e)\n"
        "r = rsqrt(ve)\ny = mul(c, r)\noutput y\n",
    };
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++)
        for (int generic = 0; generic < 2; generic++)
            check_emulated(graphs[i], generic, devices[i % 3]);
}

/*
 * Row-order reductions to a few outputs: each output's range split into
 * 3 or 4 chunks on the 64-block device (with 3 or more, a counter left set
 * by the first run shows in the second, even with blocks in order).
 */
Test(cuda_emu, few_output_row_reductions_split_and_match, .timeout = 600)
{
    const char *graphs[] = {
        "xlac.graph v1\ninput x: f32[5,9000]\ne = exp(x)\ns = reduce_sum(e, axes=[1])\noutput s\n",
        "xlac.graph v1\ninput x: i32[3,2,9000]\ns = reduce_sum(x, axes=[2])\noutput s\n",
        "xlac.graph v1\ninput x: f64[2,7000]\nn = reduce_min(x, axes=[1], keepdims=true)\noutput n\n",
        "xlac.graph v1\ninput x: f16[3,10000]\nm = reduce_mean(x, axes=[1])\noutput m\n",
    };
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++)
        for (size_t d = 0; d < sizeof devices / sizeof devices[0]; d++)
            check_emulated(graphs[i], d == 2, devices[d]);
}

/* Random graphs of every dtype the generator knows, f16 and i64 included (f16 rounds after every op). */
Test(cuda_emu, random_graphs_of_each_dtype_match_op_by_op, .timeout = 900)
{
    static const char *const dts[] = {"f16", "i64", "f64", "i32"};
    for (int d = 0; d < 4; d++)
        for (uint64_t seed = 2000; seed < 2006; seed++) {
            char *text = randgraph_text(seed, &(randgraph_options){.n_ops = 8, .dtype = dts[d]});
            check_emulated(text, seed % 2, devices[seed % 3]);
            free(text);
        }
}

/*
 * A 700-op chain has an argument block over XG_ARGS_BY_VALUE bytes: its
 * kernels read it through a device pointer (the launcher copies it first).
 */
Test(cuda_emu, large_clusters_take_their_arguments_from_memory, .timeout = 600)
{
    char *text = randgraph_chain(700);
    cr_assert_not_null(text);
    check_emulated(text, false, devices[1]);
    free(text);
}
