/*
 * Differential tests of the code generator: random graphs (randgraph.c;
 * also with its more_ops menu) compiled whole as one cluster for the C target and run, against the
 * same graph run op by op by the executor (the reference). Tolerances per
 * dtype, relative to the largest reference magnitude of the output (sums
 * reassociate): f64 1e-12, f32 1e-5, i32 exact; NaN must match NaN and
 * infinities must be equal.
 *
 * Shape-generic programs are built at the declared shapes and run at
 * those and at a second shape (the leading dim tripled); a program asked
 * to run outside the shapes it was built for must refuse, not guess.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "plan.h"
#include "support/randgraph.h"
#include "support/ref.h"
#include "xg_impl.h"
#include "xlac/xlac.h"

#define N_RANDOM 240
#define N_GENERIC 60
#define N_MORE 120

static xe_status st;

/* Deterministic inputs in [-2, 2) (ints in [-5, 5]). */
static xe_tensor *input_for(const xe_type *t, uint64_t seed)
{
    xe_tensor *x = randgraph_input(t, seed);
    cr_assert_not_null(x, "cannot allocate an input");
    return x;
}

static double tolerance(xe_dtype dt)
{
    return dt == XE_F64 ? 1e-12 : dt == XE_F32 ? 1e-5 : 0;
}

/* tol < 0: the dtype's tolerance */
static void compare(const xe_tensor *got, const xe_tensor *want, double tol, const char *text,
                    int out)
{
    ref_expect_same_output(got, want, tol < 0 ? tolerance(want->dtype) : tol, text, out);
}

/* Declared input types of g; inputs whose leading dim is `lead` get lead * scale there. */
static void input_types(const xe_graph *g, int64_t lead, int scale, xe_type *types)
{
    for (int k = 0; k < g->n_inputs; k++) {
        types[k] = g->nodes[g->inputs[k]]->type;
        if (scale > 1 && types[k].shape.rank > 0 && types[k].shape.dims[0] == lead && lead > 1)
            types[k].shape.dims[0] *= scale;
    }
}

/*
 * Runs program p and the reference session s on inputs of the given
 * types and compares. Returns false (nothing compared) when the reference
 * itself rejects these shapes: a graph whose attributes pin its shapes.
 */
static bool run_and_compare(xg_program *p, xe_session *s, const xe_graph *g, const xe_type *types,
                            double tol, const char *text)
{
    int n_in = g->n_inputs, n_out = g->n_outputs;
    xe_tensor *in[8] = {0}, *got[8] = {0}, *want[8] = {0};
    for (int k = 0; k < n_in && k < 8; k++)
        in[k] = input_for(&types[k], 1000 + (uint64_t)k);
    bool ran = xe_session_run(s, in, want, &st) == XE_OK;
    if (ran) {
        cr_assert_eq(xg_program_run(p, in, n_in, got, n_out, &st), XE_OK, "%s\n%s", st.msg, text);
        for (int k = 0; k < n_out; k++) {
            compare(got[k], want[k], tol, text, k);
            xe_tensor_release(got[k]);
            xe_tensor_release(want[k]);
        }
    }
    for (int k = 0; k < n_in; k++)
        xe_tensor_release(in[k]);
    return ran;
}

/*
 * Builds the graph of `text` (its declared shapes, which must be known)
 * as one cluster, runs it and compares with the op-by-op run of
 * `ref_text` (the same graph, possibly with unknown leading dims). With
 * generic, also at the leading dim tripled; returns whether that ran. tol < 0:
 * the dtype's tolerance.
 */
static bool check_graph_within(const char *text, const char *ref_text, bool generic, double tol)
{
    xe_graph *g = xe_parse_string(text, "rand.xg", &st);
    cr_assert_not_null(g, "%s\n%s", st.msg, text);
    xe_graph *rg = xe_parse_string(ref_text, "rand_ref.xg", &st);
    cr_assert_not_null(rg, "%s\n%s", st.msg, ref_text);
    cr_assert_leq(g->n_inputs, 8);
    cr_assert_leq(g->n_outputs, 8);
    xe_type types[8], scaled[8];
    int64_t lead = g->nodes[g->inputs[0]]->type.shape.rank ? g->nodes[g->inputs[0]]->type.shape.dims[0] : 0;
    input_types(g, lead, 1, types);
    input_types(g, lead, 3, scaled);
    xg_options o;
    xg_options_default(&o);
    xg_artifact *a = NULL;
    xg_program *p = NULL;
    cr_assert_eq(xg_build(g, types, generic, XG_TARGET_C, 0, &o, &a, &st), XE_OK, "%s\n%s", st.msg, text);
    cr_assert_eq(xg_program_load(a, g, types, &o, &p, &st), XE_OK, "%s", st.msg);
    xe_session *s = xe_session_new(rg, &(xe_session_options){.place = XE_PLACE_CPU}, &st);
    cr_assert_not_null(s, "%s", st.msg);
    cr_assert(run_and_compare(p, s, g, types, tol, text), "the reference failed: %s\n%s", st.msg,
              text);
    bool second = generic && lead > 1 && run_and_compare(p, s, g, scaled, tol, text);
    xe_session_destroy(s);
    xg_program_destroy(p);
    xg_artifact_destroy(a);
    xe_graph_destroy(g);
    return second;
}

static bool check_graph(const char *text, const char *ref_text, bool generic)
{
    return check_graph_within(text, ref_text, generic, -1);
}

Test(codegen_diff, random_graphs_match_op_by_op, .timeout = 900)
{
    for (uint64_t seed = 1; seed <= N_RANDOM; seed++) {
        char *text = randgraph_text(seed, &(randgraph_options){.n_ops = 4 + (int)(seed % 8)});
        check_graph(text, text, false);
        free(text);
    }
}

/*
 * The random graphs above do exercise row kernels (a row reduction read
 * back by the steps after it), with several phases and several
 * reductions in one: planning them alone, count what the plans hold.
 */
Test(codegen_diff, random_graphs_exercise_row_kernels)
{
    int row_steps = 0, multi_phase = 0, two_reductions = 0;
    for (uint64_t seed = 1; seed <= N_RANDOM; seed++) {
        char *text = randgraph_text(seed, &(randgraph_options){.n_ops = 4 + (int)(seed % 8)});
        xe_graph *g = xe_parse_string(text, "rand.xg", &st);
        cr_assert_not_null(g, "%s", st.msg);
        xe_type types[8];
        input_types(g, 0, 1, types);
        xg_plan *p = NULL;
        cr_assert_eq(xg_plan_build(g, types, false, &p, &st), XE_OK, "%s\n%s", st.msg, text);
        for (int i = 0; i < p->n_steps; i++) {
            const xg_step *s = &p->steps[i];
            if (s->kind != XG_STEP_ROW)
                continue;
            int reductions = 0;
            for (int k = 0; k < s->n_outs; k++)
                reductions += s->role[k] == XG_ROW_REDUCE;
            row_steps++;
            multi_phase += s->n_phases > 1;
            two_reductions += reductions > 1;
        }
        xg_plan_destroy(p);
        xe_graph_destroy(g);
        free(text);
    }
    cr_log_info("row kernels in %d random graphs: %d (%d with several phases, %d with several reductions)",
                N_RANDOM, row_steps, multi_phase, two_reductions);
    cr_expect_geq(row_steps, N_RANDOM / 20);
    cr_expect_geq(multi_phase, 3);
    cr_expect_geq(two_reductions, 1);
}

/* The C program generated for text's graph at its declared shapes. */
static char *c_source(const char *text)
{
    xe_graph *g = xe_parse_string(text, "row.xg", &st);
    cr_assert_not_null(g, "%s\n%s", st.msg, text);
    xe_type types[8];
    input_types(g, 0, 1, types);
    xg_plan *p = NULL;
    cr_assert_eq(xg_plan_build(g, types, false, &p, &st), XE_OK, "%s\n%s", st.msg, text);
    char *src = xg_emit_program(p, XG_TARGET_C, &st);
    cr_assert_not_null(src, "%s", st.msg);
    xg_plan_destroy(p);
    xe_graph_destroy(g);
    return src;
}

/*
 * The row cache: softmax written out as ops computes its exponentials in
 * two phases (the sum, then the division); the first keeps them in a row
 * buffer and the second reads it. Over two reduced dims, in f64, with the
 * exponentials also feeding a second reduction, and not for rows too long
 * for the buffer; every one agrees with the op-by-op run.
 */
Test(codegen_diff, row_cache_keeps_values_that_several_phases_compute, .timeout = 300)
{
    static const struct {
        const char *text;
        bool cached;
    } cases[] = {
        {"xlac.graph v1\ninput x: f32[33,1000]\nm = reduce_max(x, axes=[1], keepdims=true)\n"
         "d = sub(x, m)\ne = exp(d)\ns = reduce_sum(e, axes=[1], keepdims=true)\ny = div(e, s)\n"
         "output y\n", true},
        {"xlac.graph v1\ninput x: f64[4,6,35]\nm = reduce_max(x, axes=[1,2], keepdims=true)\n"
         "d = sub(x, m)\ne = exp(d)\ns = reduce_sum(e, axes=[1,2], keepdims=true)\ny = div(e, s)\n"
         "output y\n", true},
        {"xlac.graph v1\ninput x: f32[16,300]\nm = reduce_mean(x, axes=[1], keepdims=true)\n"
         "d = sub(x, m)\nt = tanh(d)\ns = reduce_sum(t, axes=[1], keepdims=true)\n"
         "u = mul(t, s)\nq = reduce_max(u, axes=[1], keepdims=true)\nz = sub(t, q)\n"
         "output z\noutput q\n", true},
        {"xlac.graph v1\ninput x: f32[3,20000]\nm = reduce_max(x, axes=[1], keepdims=true)\n"
         "d = sub(x, m)\ne = exp(d)\ns = reduce_sum(e, axes=[1], keepdims=true)\ny = div(e, s)\n"
         "output y\n", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *src = c_source(cases[i].text);
        bool cached = strstr(src, "rc") && strstr(src, "[k] = ");
        cr_expect_eq(cached, cases[i].cached, "case %zu: row cache %s\n%s", i,
                     cached ? "used" : "not used", src);
        free(src);
        check_graph(cases[i].text, cases[i].text, false);
    }
}

/*
 * Shape-generic programs whose index maps depend on the call's sizes:
 * concat's range ends along a dim that changes, slice's negative begin
 * counted from the end of this call's dim; f16 rounded at every op, int
 * means over an empty axis. Each runs at its declared shapes and at the
 * leading dim tripled.
 */
Test(codegen_diff, generic_concat_slice_f16_and_empty_means, .timeout = 300)
{
    static const char *const graphs[] = {
        "xlac.graph v1\ninput x: f32[4,3]\nc = concat(x, x, axis=0)\nn = neg(c)\noutput n\n",
        "xlac.graph v1\ninput x: f32[4,3]\ninput y: f32[4,2]\nc = concat(y, x, y, axis=1)\n"
        "n = neg(c)\noutput n\n",
        "xlac.graph v1\ninput x: f32[4,3]\nc = concat(x, x, x, axis=0)\ns = reduce_sum(c, axes=[1])\noutput s\n",
        "xlac.graph v1\ninput x: f32[4,3]\nc = concat(x, axis=0)\nn = neg(c)\noutput n\n",
        "xlac.graph v1\ninput x: f32[5,3]\na = neg(x)\nb = slice(a, begin=[-2,1], end=[100,3])\n"
        "c = exp(b)\noutput c\n",
        "xlac.graph v1\ninput x: f32[7,3]\na = neg(x)\nb = slice(a, begin=[-9,-2], end=[-1,3])\n"
        "c = exp(b)\noutput c\n",
        "xlac.graph v1\ninput x: f16[6,5]\na = mul(x, x)\nb = mul(a, a)\nm = reduce_mean(b, axes=[1], keepdims=true)\n"
        "c = sub(b, m)\nd = cast(c, to=f32)\noutput d\n",
        "xlac.graph v1\ninput x: i32[3,0]\na = neg(x)\nm = reduce_mean(a, axes=[1])\noutput m\n",
        /* f16 loads at scattered indices (a transpose, a broadcast through it, a column sum), odd
           sizes so that the last element is the low half of a word (emit.c's word gather) */
        "xlac.graph v1\ninput x: f16[3,5,7]\ninput b: f16[7]\nt = transpose(x, perm=[1,0,2])\n"
        "a = add(t, b)\nn = neg(a)\noutput n\n",
        "xlac.graph v1\ninput x: f16[3,5,7]\ninput b: f16[3]\nt = transpose(x, perm=[2,1,0])\n"
        "a = mul(t, b)\ns = reduce_sum(a, axes=[0])\noutput s\n",
        "xlac.graph v1\ninput x: f16[3,10,7]\ninput b: f16[2,7]\nr = reshape(x, shape=[3,5,14])\n"
        "t = transpose(r, perm=[1,0,2])\ns = reshape(t, shape=[5,3,2,7])\na = add(s, b)\n"
        "n = neg(a)\noutput n\n",
    };
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) {
        check_graph(graphs[i], graphs[i], false);
        check_graph(graphs[i], graphs[i], true);
    }
}

/*
 * f16 softmax: computed in f32 (its max over int32 keys, its sum a simd reduction, as the per-op
 * kernel's), so the sums of the two differ in their order and an output may round to the next f16:
 * within 1e-3 (one f16 step at the top of [0, 1]), at a row length that leaves a vector tail.
 */
Test(codegen_diff, f16_softmax_matches_op_by_op_within_an_f16_step)
{
    const char *text =
        "xlac.graph v1\ninput x: f16[6,37]\nz = mul(x, x)\ny = softmax(z, axis=1)\noutput y\n";
    check_graph_within(text, text, false, 1e-3);
    check_graph_within(text, text, true, 1e-3);
}

/* How many times what occurs in text. */
static int count_of(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/*
 * f16 rows staged in float (codegen/emit/emit_f16_rows.c): a loop nest's f16 loads and stores at
 * its element go through float stack rows the CPU's conversions fill and drain. Rows of 40 (16-,
 * then 8-wide vectors, then a scalar tail), 64 and 17; unrounded values stored (each store
 * rounds its op's float) beyond f16's range (inf), in its denormals, NaN (sqrt of a negative) and
 * in between (x * x + x), so a store that rounded otherwise than to nearest even would fail; a concat along the outer axis (its
 * branches unswitched into one simd loop each); two outputs. The source shows the staging (and
 * no second rounding of a relu's half) and every result is bit for bit the per-op kernels'.
 */
Test(codegen_diff, f16_rows_staged_in_float_match_op_by_op, .timeout = 300)
{
    static const char *const graphs[] = {
        "xlac.graph v1\ninput x: f16[32,40]\ninput y: f16[32,40]\na = add(x, y)\nr = relu(a)\n"
        "output r\n",
        "xlac.graph v1\ninput x: f16[24,64]\nb = const(f16[], 40000)\nt = const(f16[], 0.001)\n"
        "u = mul(x, b)\nq = sqrt(x)\ns = add(u, q)\nv = mul(x, t)\nw = mul(v, t)\n"
        "z = mul(x, x)\no = add(z, x)\noutput s\noutput w\noutput o\n",
        "xlac.graph v1\ninput x: f16[16,17]\ninput y: f16[16,17]\nc = concat(x, y, axis=0)\n"
        "e = exp(c)\nn = neg(e)\noutput n\n",
    };
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) {
        char *src = c_source(graphs[i]);
        /* the concat's loads are at its branches' indices, not the element's: its stores alone */
        cr_expect(strstr(src, "xg_f2h_row(xg_out") && (i == 2 || strstr(src, "xg_h2f_row(p")),
                  "case %zu: no staged f16 rows\n%s", i, src);
        if (i == 0) { /* relu of a half is a half: only the add's result is rounded (keeps_f16) */
            int rounds = count_of(src, "= xe_f16_round_vec(");
            cr_expect_eq(rounds, 1, "relu after add: %d roundings\n%s", rounds, src);
        }
        free(src);
        check_graph(graphs[i], graphs[i], false);
        check_graph(graphs[i], graphs[i], true);
    }
}

/* An f32 softmax whose row is computed in its kernel (scores plus a gathered bias, DeBERTa's
   shape of it) keeps the row from its max pass for its exp pass (emit_row.c softmax_keeps_row);
   one of a materialized row does not. Both match op by op. */
Test(codegen_diff, f32_softmax_of_a_computed_row_keeps_it)
{
    static const struct {
        const char *text;
        bool kept;
    } cases[] = {
        {"xlac.graph v1\ninput x: f32[6,37]\ninput b: f32[37]\nz = mul(x, x)\na = add(z, b)\n"
         "y = softmax(a, axis=1)\noutput y\n", true},
        {"xlac.graph v1\ninput x: f32[6,37]\ny = softmax(x, axis=1)\noutput y\n", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *src = c_source(cases[i].text);
        cr_expect_eq(strstr(src, "float sx[") != NULL, cases[i].kept, "case %zu\n%s", i, src);
        free(src);
        check_graph(cases[i].text, cases[i].text, false);
    }
}

/* compare/logical/cast, argmax, NaN- and inf-producing math, pow, reduce_prod, iota, constants, matmul */
Test(codegen_diff, random_graphs_with_more_ops_match_op_by_op, .timeout = 900)
{
    for (uint64_t seed = 3000; seed < 3000 + N_MORE; seed++) {
        char *text = randgraph_text(seed, &(randgraph_options){.n_ops = 4 + (int)(seed % 8), .more_ops = true});
        check_graph(text, text, false);
        free(text);
    }
}

/* unary and binary ops drawn from the whole op table (new ops too), on every dtype randgraph makes */
Test(codegen_diff, random_graphs_of_table_ops_match_op_by_op, .timeout = 900)
{
    static const char *const dts[] = {"f32", "f64", "i32"};
    for (uint64_t seed = 5000; seed < 5000 + N_MORE; seed++) {
        randgraph_options o = {.n_ops = 4 + (int)(seed % 8), .dtype = dts[seed % 3], .table_ops = true};
        char *text = randgraph_text(seed, &o);
        check_graph(text, text, false);
        free(text);
    }
}

Test(codegen_diff, every_dtype_is_covered, .timeout = 300)
{
    static const char *const dts[] = {"f32", "f64", "i32"};
    for (int d = 0; d < 3; d++)
        for (uint64_t seed = 2000; seed < 2010; seed++) {
            char *text = randgraph_text(seed, &(randgraph_options){.n_ops = 8, .dtype = dts[d]});
            check_graph(text, text, false);
            free(text);
        }
}

Test(codegen_diff, shape_generic_programs_run_at_two_shapes, .timeout = 600)
{
    int second = 0;
    for (uint64_t seed = 500; seed < 500 + N_GENERIC; seed++) {
        randgraph_options ro = {.n_ops = 5};
        char *text = randgraph_text(seed, &ro);
        ro.allow_unknown = true;
        char *ref = randgraph_text(seed, &ro);
        second += check_graph(text, ref, true);
        free(text);
        free(ref);
    }
    /* graphs whose reshape/slice/broadcast_to attributes pin a shape are skipped at the second shape */
    cr_assert_geq(second, N_GENERIC / 3, "only %d of %d generic programs ran at a second shape", second,
                  N_GENERIC);
}

Test(codegen_diff, one_generic_program_serves_many_batch_sizes)
{
    const char *text = "xlac.graph v1\ninput x: f32[?,64]\ninput y: f32[?,64]\n"
                       "p = mul(x, y)\nq = add(p, x)\ns = reduce_sum(q, axes=[1])\nm = reduce_max(q, axes=[0])\n"
                       "output s\noutput m\n";
    xe_graph *g = xe_parse_string(text, "dyn.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_type t8 = {XE_F32, {2, {8, 64}}}, t8s[2] = {t8, t8};
    xg_options o;
    xg_options_default(&o);
    xg_artifact *a = NULL;
    xg_program *p = NULL;
    cr_assert_eq(xg_build(g, t8s, true, XG_TARGET_C, 0, &o, &a, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(xg_program_load(a, g, t8s, &o, &p, &st), XE_OK, "%s", st.msg);
    xe_session *s = xe_session_new(g, &(xe_session_options){.place = XE_PLACE_CPU}, &st);
    cr_assert_not_null(s, "%s", st.msg);
    for (int rows = 3; rows <= 3000; rows *= 10) {
        xe_type t[2] = {{XE_F32, {2, {rows, 64}}}, {XE_F32, {2, {rows, 64}}}};
        cr_assert(run_and_compare(p, s, xe_session_graph(s), t, -1, text));
    }
    xe_session_destroy(s);
    xg_program_destroy(p);
    xg_artifact_destroy(a);
}

/* A program refuses inputs outside what it was built for (other shape, or other size-1 pattern). */
Test(codegen_diff, programs_refuse_shapes_they_were_not_built_for)
{
    xe_graph *g = xe_parse_string("xlac.graph v1\ninput x: f32[?,8]\ninput y: f32[?,8]\nz = add(x, y)\noutput z\n",
                                  "r.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_type t[2] = {{XE_F32, {2, {4, 8}}}, {XE_F32, {2, {4, 8}}}};
    xg_options o;
    xg_options_default(&o);
    for (int generic = 0; generic < 2; generic++) {
        xg_artifact *a = NULL;
        xg_program *p = NULL;
        cr_assert_eq(xg_build(g, t, generic, XG_TARGET_C, 0, &o, &a, &st), XE_OK, "%s", st.msg);
        cr_assert_eq(xg_program_load(a, g, t, &o, &p, &st), XE_OK, "%s", st.msg);
        xe_type other = {XE_F32, {2, {generic ? 1 : 5, 8}}};
        xe_tensor *in[2] = {input_for(&t[0], 1), input_for(&other, 2)}, *outp[1] = {NULL};
        /* a fixed-shape program: a runtime error; a generic one: not for this pattern (the cache
           then builds this signature's own program) */
        cr_assert_eq(xg_program_run(p, in, 2, outp, 1, &st), generic ? XE_ERR_UNSUPPORTED : XE_ERR_RUNTIME,
                     "generic=%d ran", generic);
        cr_assert_null(outp[0]);
        xe_tensor_release(in[0]);
        xe_tensor_release(in[1]);
        xg_program_destroy(p);
        xg_artifact_destroy(a);
    }
    xe_graph_destroy(g);
}

/* The metadata of a shape-generic artifact does not depend on the shape it was built at. */
Test(codegen_diff, generic_metadata_is_shape_independent)
{
    xe_graph *g = xe_parse_string("xlac.graph v1\ninput x: f32[?,?]\ny = tanh(x)\ns = reduce_sum(y, axes=[1])\n"
                                  "output s\n", "m.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_type t1 = {XE_F32, {2, {4, 8}}}, t2 = {XE_F32, {2, {40, 3}}};
    xg_options o;
    xg_options_default(&o);
    xg_artifact *a = NULL;
    xg_program *p = NULL;
    cr_assert_eq(xg_build(g, &t1, true, XG_TARGET_C, 0, &o, &a, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(xg_program_load(a, g, &t2, &o, &p, &st), XE_OK, "%s", st.msg);
    cr_assert(strstr(a->meta, "f32[?,?]"), "%s", a->meta);
    xg_program_destroy(p);
    xg_artifact_destroy(a);
    xe_graph_destroy(g);
}

Test(codegen_diff, compile_errors_carry_the_compiler_log)
{
    xg_options o;
    xg_options_default(&o);
    o.cc = "/nonexistent/cc";
    xe_graph *g = xe_parse_string("xlac.graph v1\ninput x: f32[4]\ny = neg(x)\noutput y\n", "e.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_type t = {XE_F32, {1, {4}}};
    xg_artifact *a = NULL;
    cr_assert_eq(xg_build(g, &t, false, XG_TARGET_C, 0, &o, &a, &st), XE_ERR_COMPILE);
    cr_assert(strstr(st.msg, "/nonexistent/cc"), "%s", st.msg);
    cr_assert_not_null(a, "a failed compile keeps its source for the dumps");
    cr_assert(a->source && strstr(a->source, "xg_k0"));
    cr_assert_null(a->code);
    xg_artifact_destroy(a);
    xe_graph_destroy(g);
}

/* A failed compile's one-line warning quotes the log's error, not gcc's "In function" line. */
Test(codegen_diff, warnings_quote_the_compilers_error_line)
{
    char line[200];
    xg_error_line("/tmp/x/cluster.c: In function 'xg_k0':\n/tmp/x/cluster.c:9:5: error: 'else' without a "
                  "previous 'if'\n    9 |     else {\n",
                  line, sizeof line);
    cr_expect_str_eq(line, "/tmp/x/cluster.c:9:5: error: 'else' without a previous 'if'");
    xg_error_line("ld: cannot find -lfoo\n", line, sizeof line);
    cr_expect_str_eq(line, "ld: cannot find -lfoo");
    xg_error_line(NULL, line, sizeof line);
    cr_expect_str_eq(line, "");
}

/* The plan verifier (run by every xg_plan_build) rejects a plan whose steps are out of order. */
Test(codegen_diff, the_plan_verifier_catches_a_broken_plan)
{
    xe_graph *g = xe_parse_string("xlac.graph v1\ninput x: f32[4,8]\ns = reduce_sum(x, axes=[1], keepdims=true)\n"
                                  "y = sub(x, s)\nm = reduce_max(y, axes=[0])\noutput m\noutput y\n", "v.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_type t = {XE_F32, {2, {4, 8}}};
    xg_plan *p = NULL;
    cr_assert_eq(xg_plan_build(g, &t, false, &p, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(p->n_steps, 2); /* a row kernel (s, y), then the column reduction */
    cr_assert_eq(p->steps[0].kind, XG_STEP_ROW);
    cr_assert_eq(xg_plan_verify(p, &st), XE_OK, "%s", st.msg);
    xg_step first = p->steps[0];
    p->steps[0] = p->steps[1];
    p->steps[1] = first;
    cr_assert_eq(xg_plan_verify(p, &st), XE_ERR_RUNTIME);
    cr_assert(strstr(st.msg, "before it is written"), "%s", st.msg);
    p->steps[1] = p->steps[0]; /* one buffer written twice, another never */
    cr_assert_eq(xg_plan_verify(p, &st), XE_ERR_RUNTIME);
    xg_plan_destroy(p);
    xe_graph_destroy(g);
}

/*
 * Long column reductions in generated C: rows split into chunks (few
 * tiles, K >= 1024) whose partials are combined in chunk order, tiles
 * narrower than a row, a NaN that must win a max, at a fixed shape and
 * shape-generic (then at three times the rows).
 */
Test(codegen_diff, long_column_reductions_match_op_by_op, .timeout = 300)
{
    static const char *const graphs[] = {
        ("xlac.graph v1\ninput x: f32[3000,5]\np = mul(x, x)\ns = reduce_sum(p, axes=[0])\n"
         "m = reduce_max(x, axes=[0], keepdims=true)\nn = reduce_mean(p, axes=[0])\noutput s\noutput m\noutput n\n"),
        "xlac.graph v1\ninput x: f64[1500,2,7]\ne = exp(x)\ns = reduce_sum(e, axes=[0,1])\noutput s\n",
        "xlac.graph v1\ninput x: i32[1100,5000]\na = abs(x)\ns = reduce_sum(a, axes=[0])\noutput s\n",
        "xlac.graph v1\ninput x: f16[2048,9]\na = mul(x, x)\nm = reduce_mean(a, axes=[0])\noutput m\n",
        "xlac.graph v1\ninput x: f32[1030,3]\nl = log(x)\nm = reduce_max(l, axes=[0])\noutput m\n",
    };
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) {
        char ref[512]; /* the reference takes any number of rows */
        const char *open = strchr(graphs[i], '['), *comma = strchr(open, ',');
        snprintf(ref, sizeof ref, "%.*s?%s", (int)(open + 1 - graphs[i]), graphs[i], comma);
        check_graph(graphs[i], ref, false);
        cr_assert(check_graph(graphs[i], ref, true), "%s", ref);
    }
}

/* The plan says how each kernel is launched, for either target, with ? for a generic plan's sizes. */
Test(codegen_diff, plans_say_how_each_kernel_launches)
{
    xe_graph *g = xe_parse_string("xlac.graph v1\ninput x: f32[4096,64]\ny = tanh(x)\ns = reduce_sum(y, axes=[0])\n"
                                  "r = reduce_max(y, axes=[1])\noutput s\noutput r\n", "l.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_type t = {XE_F32, {2, {4096, 64}}};
    for (int generic = 0; generic < 2; generic++) {
        xg_plan *p = NULL;
        cr_assert_eq(xg_plan_build(g, &t, generic, &p, &st), XE_OK, "%s", st.msg);
        char *c = xg_plan_text(p, XG_TARGET_C), *cu = xg_plan_text(p, XG_TARGET_CUDA);
        cr_assert(c && cu);
        const char *outputs = generic ? "tiles of ? outputs" : "tiles of 64 outputs";
        cr_assert(strstr(c, "launch: OpenMP parallel for") && strstr(c, outputs), "%s", c);
        cr_assert(strstr(cu, generic ? "a block per item (? tiles of 32 outputs)" : "(2 tiles of 32 outputs)"),
                  "%s", cu);
        cr_assert(strstr(cu, generic ? "(? outputs)" : "(4096 outputs)"), "%s", cu);
        free(c);
        free(cu);
        xg_plan_destroy(p);
    }
    xe_graph_destroy(g);
}

typedef struct emit_job {
    const char *text;
    xe_code code;
    int buffers;
    char msg[256];
} emit_job;

static void *plan_and_emit(void *arg)
{
    emit_job *j = arg;
    xe_status s;
    xe_graph *g = xe_parse_string(j->text, "chain.xg", &s);
    xe_type t = {XE_F32, {1, {64}}};
    xg_plan *p = NULL;
    j->code = g ? xg_plan_build(g, &t, false, &p, &s) : s.code;
    char *src = j->code == XE_OK ? xg_emit_program(p, XG_TARGET_C, &s) : NULL;
    if (j->code == XE_OK && !src)
        j->code = s.code;
    for (int i = 0; p && i < p->body->n_nodes; i++)
        j->buffers += p->mat[i];
    snprintf(j->msg, sizeof j->msg, "%.200s", j->code == XE_OK ? "" : s.msg);
    free(src);
    xg_plan_destroy(p);
    xe_graph_destroy(g);
    return NULL;
}

/*
 * Inline chains are cut by buffers, so the emitters' recursion is bounded:
 * a 3000-op chain plans and emits on a thread with a 512 KiB stack (it
 * overflowed an 8 MiB one before), and a 300-op chain matches op by op.
 */
Test(codegen_diff, long_chains_plan_in_bounded_stack, .timeout = 300)
{
    char *text = randgraph_chain(3000);
    cr_assert_not_null(text);
    emit_job j = {.text = text};
    pthread_attr_t attr;
    pthread_t th;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 512 << 10);
    cr_assert_eq(pthread_create(&th, &attr, plan_and_emit, &j), 0);
    pthread_join(th, NULL);
    pthread_attr_destroy(&attr);
    cr_assert_eq(j.code, XE_OK, "%s", j.msg);
    cr_assert_geq(j.buffers, 3000 / (XG_MAX_INLINE + 1), "%d buffers", j.buffers);
    free(text);
    text = randgraph_chain(300);
    cr_assert_not_null(text);
    check_graph(text, text, false);
    free(text);
}

/* concat of more operands than a step has outputs is still one loop. */
Test(codegen_diff, concat_of_many_operands_matches_op_by_op)
{
    char text[2048];
    size_t u = (size_t)snprintf(text, sizeof text, "xlac.graph v1\ninput x: f32[2,3]\ninput y: f32[1,3]\nc = concat(");
    for (int k = 0; k < 40; k++)
        u += (size_t)snprintf(text + u, sizeof text - u, "%s%s", k ? ", " : "", k % 3 ? "x" : "y");
    snprintf(text + u, sizeof text - u, ", axis=0)\ne = exp(c)\noutput e\n");
    check_graph(text, text, false);
    check_graph(text, text, true);
}

/* CUDA index math is 32-bit for fixed shapes under 2^30 elements, 64-bit otherwise (and always in C). */
Test(codegen_diff, cuda_index_width_follows_the_sizes)
{
    const struct {
        int64_t rows;
        bool generic;
        xg_target target;
        const char *want;
    } cases[] = {
        {1024, false, XG_TARGET_CUDA, "typedef int xg_idx;"},
        {1024, true, XG_TARGET_CUDA, "typedef long long xg_idx;"},
        {(int64_t)1 << 26, false, XG_TARGET_CUDA, "typedef long long xg_idx;"}, /* 2^26 x 16 = 2^30 */
        {1024, false, XG_TARGET_C, "typedef int64_t xg_idx;"},
    };
    xe_graph *g = xe_parse_string("xlac.graph v1\ninput x: f32[?,16]\ny = tanh(x)\ns = reduce_sum(y, axes=[0])\n"
                                  "output s\n", "w.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        xe_type t = {XE_F32, {2, {cases[i].rows, 16}}};
        xg_plan *p = NULL;
        cr_assert_eq(xg_plan_build(g, &t, cases[i].generic, &p, &st), XE_OK, "%s", st.msg);
        char *src = xg_emit_program(p, cases[i].target, &st);
        cr_assert(src && strstr(src, cases[i].want), "case %zu: want %s", i, cases[i].want);
        free(src);
        xg_plan_destroy(p);
    }
    xe_graph_destroy(g);
}

/* The plan of text's graph: whether node `name` has a buffer. */
static bool materialized(const char *text, const char *name)
{
    xe_graph *g = xe_parse_string(text, "mm.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_type types[8];
    input_types(g, 0, 1, types);
    xg_plan *p = NULL;
    cr_assert_eq(xg_plan_build(g, types, false, &p, &st), XE_OK, "%s", st.msg);
    int n = xe_graph_find(g, name);
    cr_assert_geq(n, 0, "%s", name);
    bool m = p->mat[n];
    xg_plan_destroy(p);
    xe_graph_destroy(g);
    return m;
}

/*
 * A transpose of the last two dims feeding a matmul is a BLAS transpose
 * flag (no buffer), for either operand, batched, f64, with the matmul's own
 * flag set too, and still computed where something else reads it; other
 * permutations stay copies. Each against op by op, with an epilogue.
 */
Test(codegen_diff, transposed_matmul_operands_are_blas_flags, .timeout = 300)
{
    static const char *const graphs[] = {
        "xlac.graph v1\ninput x: f32[6,5]\ninput w: f32[7,5]\ninput b: f32[7]\n"
        "t = transpose(w)\ny = matmul(x, t)\nz = add(y, b)\nr = gelu(z)\noutput r\n",
        "xlac.graph v1\ninput x: f64[5,6]\ninput w: f64[5,7]\n"
        "t = transpose(x)\ny = matmul(t, w)\nz = tanh(y)\noutput z\n",
        "xlac.graph v1\ninput x: f32[3,4,5]\ninput w: f32[3,6,5]\n"
        "t = transpose(w, perm=[0,2,1])\ny = matmul(x, t)\nz = relu(y)\noutput z\n",
        "xlac.graph v1\ninput x: f64[3,5,4]\ninput w: f64[3,5,6]\n"
        "ta = transpose(x, perm=[0,2,1])\ntb = transpose(w, perm=[0,2,1])\n"
        "y = matmul(ta, tb, transpose_b=true)\nz = mul(y, y)\noutput z\n",
        "xlac.graph v1\ninput x: f32[4,5]\ninput w: f32[6,5]\n"
        "t = transpose(w)\ny = matmul(x, t)\nu = exp(t)\nz = neg(y)\noutput z\noutput u\n",
        "xlac.graph v1\ninput x: f32[5,4,3]\ninput w: f32[3,5,6]\n"
        "t = transpose(w, perm=[1,0,2])\ny = matmul(x, t)\nz = neg(y)\noutput z\n",
    };
    for (size_t i = 0; i < sizeof graphs / sizeof *graphs; i++)
        check_graph(graphs[i], graphs[i], false);
    cr_assert_not(materialized(graphs[0], "t"), "no copy of w^T");
    cr_assert_not(materialized(graphs[1], "t"), "no copy of x^T");
    cr_assert_not(materialized(graphs[2], "t"), "no copy of a batched transpose");
    cr_assert_not(materialized(graphs[3], "ta") || materialized(graphs[3], "tb"), "both flags");
    cr_assert(materialized(graphs[5], "t"), "perm [1,0,2] is no BLAS flag: copied");
}

/* softmax's passes over a row are simd loops, the max and the sum as simd reductions (f32, f64; the
   f32 max over int32 keys, OpenMP's built-in max). */
Test(codegen_diff, softmax_rows_are_simd_loops)
{
    static const char *const dts[] = {"f32", "f64"};
    for (int i = 0; i < 2; i++) {
        char text[256], want[64];
        snprintf(text, sizeof text, "xlac.graph v1\ninput x: %s[16,1024]\ny = softmax(x)\nz = neg(y)\noutput z\n",
                 dts[i]);
        char *src = c_source(text);
        snprintf(want, sizeof want,
                 i ? "#pragma omp simd reduction(xg_max_f64 : m)\n"
                   : "#pragma omp simd reduction(max : mk)\n");
        cr_assert(strstr(src, want), "%s", src);
        cr_assert(strstr(src, "#pragma omp simd reduction(+ : sum)\n"), "%s", src);
        free(src);
        check_graph(text, text, false);
    }
}

/* A concat along an outer axis tests its ranges once per row: one simd loop per operand (and per
   operand of a concat of it: 3 + 1 here), each with the rest of the loop's body; along the last axis, or with
   more operands than the kernel may copy its loop for, one loop. All match op by op. */
Test(codegen_diff, concat_along_an_outer_axis_runs_a_simd_loop_per_operand, .timeout = 300)
{
    static const char *const texts[] = {
        "xlac.graph v1\ninput x: f32[2,3,4,8]\ninput y: f32[2,5,4,8]\ninput z: f32[2,2,4,8]\n"
        "input w: f32[2,10,1,8]\nc = concat(x, y, z, axis=1)\nd = concat(c, w, axis=2)\n"
        "e = mul(d, d)\nf = exp(e)\noutput f\n",
        "xlac.graph v1\ninput x: f32[2,3,4,8]\ninput y: f32[2,3,4,5]\nc = concat(x, y, axis=3)\n"
        "e = neg(c)\noutput e\n",
    };
    static const int loops[] = {4, 1};
    for (int i = 0; i < 2; i++) {
        char *src = c_source(texts[i]);
        cr_expect_eq(count_of(src, "#pragma omp simd\n"), loops[i], "%s", src);
        free(src);
        check_graph(texts[i], texts[i], false);
        check_graph(texts[i], texts[i], true);
    }
}

/* A transposed read whose stride along the simd loop is a power of two of 32 or more is read
   through xg_sN (gcc 12 vectorizes no such constant stride); one that is not, as a literal. */
Test(codegen_diff, power_of_two_strides_along_the_simd_loop_are_opaque)
{
    const char *pow2 = "xlac.graph v1\ninput x: f32[2,64,32]\nt = transpose(x, perm=[0,2,1])\n"
                       "g = gelu(t)\noutput g\n";
    const char *other = "xlac.graph v1\ninput x: f32[2,64,48]\nt = transpose(x, perm=[0,2,1])\n"
                        "g = gelu(t)\noutput g\n";
    char *src = c_source(pow2);
    cr_expect(strstr(src, "j * (xg_s32)") && strstr(src, "__asm__(\"\" : \"+r\"(xg_s32));"), "%s",
              src);
    free(src);
    src = c_source(other);
    cr_expect(!strstr(src, "xg_s") && strstr(src, "j * (48LL)"), "%s", src);
    free(src);
    check_graph(pow2, pow2, false);
    check_graph(other, other, false);
}

/* A reshape's operand read in a loop nest of L = 8: its dims whose strides are multiples of 8 come
   from the row r (computed once per row, as a GroupNorm's per-group statistics), the others from
   i; both match op by op, fixed and shape-generic (where every dim comes from i). */
Test(codegen_diff, reshape_dims_that_hold_per_row_come_from_the_row)
{
    const char *text = "xlac.graph v1\ninput x: f32[2,8,4,16]\ninput s: f32[2,2,1]\ninput w: f32[8,1,1]\n"
                       "r = reshape(x, shape=[2,2,256])\na = sub(r, s)\nb = reshape(a, shape=[2,8,4,16])\n"
                       "c = mul(b, w)\nt = reshape(c, shape=[2,8,8,8])\ne = exp(t)\noutput e\n";
    char *src = c_source(text);
    cr_expect(strstr(src, "(r / (32LL)) % 2LL") && !strstr(src, "i / (256LL)"), "%s", src);
    free(src);
    check_graph(text, text, false);
    check_graph(text, text, true);
}

/* A reshape whose index is not flat (after a transpose or a broadcast) maps its dims run by run
   (emit.c idx_for_reshape): merged runs ([2,2] -> 4), split ones (6 -> [2,3]), size-1 dims on
   either side, a run that is neither ([4,6] -> [3,8]), and the decode step's key expansion (a
   broadcast over a new head dim, merged, then transposed). Each against op by op; the split of
   a merged run must be the run's own / and %, not the whole flat offset's. */
Test(codegen_diff, reshapes_after_transposes_map_dim_runs, .timeout = 300)
{
    const char *text =
        "xlac.graph v1\ninput x: f32[2,4,6,5]\ninput k: f32[2,2,17,8]\n"
        "t = transpose(x, perm=[0,2,1,3])\n"          /* [2,6,4,5] */
        "r = reshape(t, shape=[2,1,2,3,4,5])\n"       /* split 6, a size-1 dim */
        "u = transpose(r, perm=[0,1,3,2,4,5])\n"      /* [2,1,3,2,4,5] */
        "m = reshape(u, shape=[6,8,5])\n"             /* [2,1,3] -> 6, [2,4] -> 8 */
        "v = transpose(m, perm=[1,0,2])\n"            /* [8,6,5] */
        "w = reshape(v, shape=[4,2,3,10])\n"          /* 8 -> [4,2], [6,5] -> [3,10] */
        "e = exp(w)\n"
        "q = reshape(k, shape=[2,2,1,17,8])\n"
        "b = broadcast_to(q, shape=[2,2,2,17,8])\n"
        "h = reshape(b, shape=[2,4,17,8])\n"
        "s = transpose(h, perm=[0,1,3,2])\n"
        "y = mul(s, s)\noutput e\noutput y\n";
    char *src = c_source(text);
    cr_expect(!strstr(src, "/ (272LL)"), "b's head dims came from h's flat offset:\n%s", src);
    free(src);
    check_graph(text, text, false);
    check_graph(text, text, true);
}
