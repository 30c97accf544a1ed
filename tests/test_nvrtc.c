/*
 * The CUDA side of the code generator. Without a GPU: every module that
 * the differential tests' random graphs produce (the same seeds as
 * test_codegen_diff.c: fixed-shape, shape-generic, and the more_ops menu
 * with compare/logical/cast, argmax, iota, constants and matmul) and the
 * benchmark graphs produce is compiled by NVRTC
 * for sm_90 into a cubin, and ptxas's resource report for that cubin
 * (NVRTC's --ptxas-options=-v log: registers, stack frame, spill stores
 * and loads per kernel; no shell, no cuobjdump, which this toolkit lacks)
 * must show zero spills for every kernel. Runs in builds with the CUDA
 * toolkit; elsewhere each test says it is skipped.
 *
 * With a CUDA device: the same random graphs run compiled on the GPU and
 * are compared with the op-by-op CPU reference. The GPU's math library
 * differs from glibc by an ulp or two, so the tolerances are looser than
 * the CPU test's (f32 1e-4, f64 1e-10 relative to the output's largest
 * magnitude), and graphs with floor, ceil or argmax (an ulp can move
 * them) are left out there.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "plan.h"
#include "support/randgraph.h"
#include "support/ref.h"
#include "xg_impl.h"
#include "xlac/io.h"
#include "xlac/xlac.h"

#define N_RANDOM 240 /* as in test_codegen_diff.c */
#define N_GENERIC 60
#define N_MORE 120

static xe_status st;

static xe_graph *parse(const char *text, xe_type *types)
{
    xe_graph *g = xe_parse_string(text, "rand.xg", &st);
    cr_assert_not_null(g, "%s\n%s", st.msg, text);
    cr_assert_leq(g->n_inputs, 8);
    for (int k = 0; k < g->n_inputs; k++)
        types[k] = g->nodes[g->inputs[k]]->type;
    return g;
}

#ifdef XG_HAVE_CUDA
/*
 * Checks ptxas's report: one "Compiling entry function 'NAME'" block per
 * kernel, each with "N bytes stack frame, S bytes spill stores, L bytes
 * spill loads". Returns the number of kernels seen.
 */
static int check_no_spills(const char *report, const char *source)
{
    int kernels = 0;
    for (const char *f = strstr(report, "Compiling entry function"); f;
         f = strstr(f + 1, "Compiling entry function")) {
        const char *props = strstr(f, "bytes stack frame,");
        cr_assert_not_null(props, "no properties line:\n%s", report);
        long stores = -1, loads = -1;
        cr_assert_eq(sscanf(props, "bytes stack frame, %ld bytes spill stores, %ld bytes spill loads", &stores,
                            &loads), 2, "unreadable report:\n%s", report);
        cr_assert(stores == 0 && loads == 0, "a kernel spills:\n%s\n%s", report, source);
        kernels++;
    }
    return kernels;
}

/* sm_90 is known to NVRTC: the artifact is a cubin, or a pack of cubins (a program compiled in parts). */
static int check_cubins(const void *code, size_t code_len)
{
    int parts = xg_cubins_count(code, code_len);
    cr_assert_geq(parts, 0, "a damaged pack of cubins");
    for (int i = 0; i < (parts ? parts : 1); i++) {
        size_t len = code_len;
        const char *image = parts ? xg_cubins_get(code, i, &len) : code;
        cr_assert(len > 4 && !memcmp(image, "\177ELF", 4), "part %d of %d is not a cubin", i, parts);
    }
    return parts ? parts : 1;
}

/* Whether the bytes of image hold name as a NUL-terminated string (a cubin's symbol names). */
static bool has_symbol(const char *image, size_t len, const char *name)
{
    size_t k = strlen(name) + 1;
    for (size_t i = 0; i + k <= len; i++)
        if (!memcmp(image + i, name, k) && (i == 0 || image[i - 1] == '\0'))
            return true;
    return false;
}

static void check_cuda(const char *text, bool generic)
{
    xe_type types[8];
    xe_graph *g = parse(text, types);
    xg_options o;
    xg_options_default(&o);
    xg_artifact *a = NULL;
    cr_assert_eq(xg_build(g, types, generic, XG_TARGET_CUDA, 90, &o, &a, &st), XE_OK, "%s\n%s", st.msg, text);
    check_cubins(a->code, a->code_len);
    char *report = xg_nvrtc_resource_report(a->source, 90, false);
    cr_assert_not_null(report, "NVRTC failed on a module it had compiled\n%s", a->source);
    int kernels = check_no_spills(report, a->source);
    cr_assert_geq(kernels, 1, "no kernel in the report:\n%s", report);
    free(report);
    xg_artifact_destroy(a);
    xe_graph_destroy(g);
}

static void check_seeds(uint64_t from, uint64_t to, bool generic, bool more)
{
    for (uint64_t seed = from; seed < to; seed++) {
        char *text = randgraph_text(seed, &(randgraph_options){.n_ops = generic ? 5 : 4 + (int)(seed % 8),
                                                               .more_ops = more});
        check_cuda(text, generic);
        free(text);
    }
}
#define NEEDS_NVRTC()
#else
static void check_seeds(uint64_t from, uint64_t to, bool generic, bool more)
{
    (void)from, (void)to, (void)generic, (void)more;
}
#define NEEDS_NVRTC() cr_skip_test("skipped: built without the CUDA toolkit (no NVRTC)")
#endif

Test(nvrtc, random_modules_1_compile_for_sm90_without_spills, .timeout = 900)
{
    NEEDS_NVRTC();
    check_seeds(1, 1 + N_RANDOM / 3, false, false);
}

Test(nvrtc, random_modules_2_compile_for_sm90_without_spills, .timeout = 900)
{
    NEEDS_NVRTC();
    check_seeds(1 + N_RANDOM / 3, 1 + 2 * N_RANDOM / 3, false, false);
}

Test(nvrtc, random_modules_3_compile_for_sm90_without_spills, .timeout = 900)
{
    NEEDS_NVRTC();
    check_seeds(1 + 2 * N_RANDOM / 3, 1 + N_RANDOM, false, false);
}

Test(nvrtc, more_ops_modules_compile_for_sm90_without_spills, .timeout = 900)
{
    NEEDS_NVRTC();
    check_seeds(3000, 3000 + N_MORE, false, true);
}

Test(nvrtc, dtype_modules_compile_for_sm90_without_spills, .timeout = 900)
{
    NEEDS_NVRTC();
#ifdef XG_HAVE_CUDA
    static const char *const dts[] = {"f32", "f64", "i32"};
    for (int d = 0; d < 3; d++)
        for (uint64_t seed = 2000; seed < 2010; seed++) {
            char *text = randgraph_text(seed, &(randgraph_options){.n_ops = 8, .dtype = dts[d]});
            check_cuda(text, false);
            free(text);
        }
#endif
}

Test(nvrtc, shape_generic_modules_compile_for_sm90_without_spills, .timeout = 900)
{
    NEEDS_NVRTC();
    check_seeds(500, 500 + N_GENERIC, true, false);
}

Test(nvrtc, benchmark_workloads_compile_for_sm90, .timeout = 300)
{
    NEEDS_NVRTC();
#ifdef XG_HAVE_CUDA
    const char *names[] = {"fused_sum", "gelu", "softmax_rows", "layernorm_rows", "column_sum", "adam_step"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/bench/graphs/%s.xg", XLAC_SOURCE_DIR, names[i]);
        FILE *f = fopen(path, "r");
        cr_assert_not_null(f, "%s", path);
        char *text = calloc(1, 1 << 16);
        size_t n = fread(text, 1, (1 << 16) - 1, f);
        text[n] = '\0';
        fclose(f);
        check_cuda(text, false);
        check_cuda(text, true);
        free(text);
    }
#endif
}

/*
 * A cluster of 2500 ops: its argument block (20 KiB) goes through device
 * memory, so NVRTC's 32 KiB limit on kernel parameters is never reached
 * (it was, past about 2040 nodes).
 */
Test(nvrtc, huge_clusters_compile, .timeout = 600)
{
#ifndef XG_HAVE_CUDA
    cr_skip_test("skipped: built without the CUDA toolkit (no NVRTC)");
#else
    char *text = randgraph_chain(2500);
    cr_assert_not_null(text);
    check_cuda(text, false);
    free(text);
#endif
}

/*
 * A program of several kernels compiled in 3 parts: a pack of 3 cubins,
 * every kernel in exactly one of them; damaged packs are refused, and a
 * plain cubin is no pack.
 */
Test(nvrtc, kernels_compile_in_parts, .timeout = 300)
{
    NEEDS_NVRTC();
#ifdef XG_HAVE_CUDA
    char path[512];
    snprintf(path, sizeof path, "%s/bench/graphs/transformer_block.xg", XLAC_SOURCE_DIR);
    char *text = NULL;
    size_t n = 0;
    cr_assert_eq(xe_read_file(path, &text, &n, &st), XE_OK, "%s", st.msg);
    xe_type types[16];
    xe_graph *g = xe_parse_string(text, path, &st);
    cr_assert_not_null(g, "%s", st.msg);
    for (int k = 0; k < g->n_inputs && k < 16; k++)
        types[k] = g->nodes[g->inputs[k]]->type;
    xg_plan *plan = NULL;
    cr_assert_eq(xg_plan_build(g, types, false, &plan, &st), XE_OK, "%s", st.msg);
    char *source = xg_emit_program(plan, XG_TARGET_CUDA, &st);
    cr_assert_not_null(source, "%s", st.msg);
    void *code = NULL;
    size_t len = 0;
    char *log = NULL;
    cr_assert_eq(xg_nvrtc_compile_parts(source, 90, false, 3, &code, &len, &log, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(check_cubins(code, len), 3);
    int kernels = 0;
    for (int i = 0; i < plan->n_steps; i++) {
        if (plan->steps[i].kind == XG_STEP_LIBRARY)
            continue;
        char name[32];
        xg_step_name(i, name, sizeof name);
        int found = 0;
        for (int part = 0; part < 3; part++) {
            size_t l;
            const char *image = xg_cubins_get(code, part, &l);
            found += has_symbol(image, l, name);
        }
        cr_assert_eq(found, 1, "%s is in %d parts", name, found);
        kernels++;
    }
    cr_assert_geq(kernels, 3);
    ((char *)code)[8] = 99; /* more parts than the pack holds */
    cr_assert_eq(xg_cubins_count(code, len), -1);
    cr_assert_eq(xg_cubins_count(code, 15), 0, "too short to be a pack");
    void *one = NULL;
    size_t one_len = 0;
    cr_assert_eq(xg_nvrtc_compile_parts(source, 90, false, 1, &one, &one_len, NULL, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(xg_cubins_count(one, one_len), 0, "one part is a plain cubin");
    free(one);
    free(code);
    free(log);
    free(source);
    xg_plan_destroy(plan);
    xe_graph_destroy(g);
    free(text);
#endif
}

/* ---- on a CUDA device ------------------------------------------------------------ */

static xe_tensor *input_for(const xe_type *t, uint64_t seed)
{
    xe_tensor *x = randgraph_input(t, seed);
    cr_assert_not_null(x, "cannot allocate an input");
    return x;
}

/* The GPU's math library differs from the CPU's by an ulp or two; f16 sums run in another order. */
static void compare(const xe_tensor *got, const xe_tensor *want, const char *text, int out)
{
    double tol = want->dtype == XE_F64   ? 1e-10
                 : want->dtype == XE_F32 ? 1e-4
                 : want->dtype == XE_F16 ? 2e-3
                                         : 0;
    ref_expect_same_output(got, want, tol, text, out);
}

/*
 * Builds text for this GPU, runs it there `runs` times (counters in the
 * workspace must be reset for the next launch) and compares each result
 * with the CPU op-by-op run.
 */
static void check_gpu_runs(const char *text, bool generic, int runs)
{
    xe_type types[8];
    xe_graph *g = parse(text, types);
    int n_in = g->n_inputs, n_out = g->n_outputs;
    xg_options o;
    xg_options_default(&o);
    xg_artifact *a = NULL;
    xg_program *p = NULL;
    cr_assert_eq(xg_build(g, types, generic, XG_TARGET_CUDA, xe_gpu_arch(), &o, &a, &st), XE_OK, "%s\n%s", st.msg,
                 text);
    cr_assert_eq(xg_program_load(a, g, types, &o, &p, &st), XE_OK, "%s\n%s", st.msg, text);
    xe_tensor *in[8] = {0}, *din[8] = {0}, *got[8] = {0}, *want[8] = {0};
    for (int k = 0; k < n_in && k < 8; k++) {
        in[k] = input_for(&types[k], 1000 + (uint64_t)k);
        din[k] = xe_tensor_to_device(in[k], xe_gpu_device(), &st);
        cr_assert_not_null(din[k], "%s", st.msg);
    }
    xe_session *s = xe_session_new(g, &(xe_session_options){.place = XE_PLACE_CPU}, &st);
    cr_assert_not_null(s, "%s", st.msg);
    cr_assert_eq(xe_session_run(s, in, want, &st), XE_OK, "%s\n%s", st.msg, text);
    for (int run = 0; run < runs; run++) {
        cr_assert_eq(xg_program_run(p, din, n_in, got, n_out, &st), XE_OK, "%s\n%s", st.msg, text);
        for (int k = 0; k < n_out; k++) {
            xe_tensor *h = xe_tensor_to_device(got[k], XE_DEV_CPU, &st);
            cr_assert_not_null(h, "%s", st.msg);
            compare(h, want[k], text, k);
            xe_tensor_release(h);
            xe_tensor_release(got[k]);
        }
    }
    for (int k = 0; k < n_out; k++)
        xe_tensor_release(want[k]);
    for (int k = 0; k < n_in; k++) {
        xe_tensor_release(in[k]);
        xe_tensor_release(din[k]);
    }
    xe_session_destroy(s); /* owns g */
    xg_program_destroy(p);
    xg_artifact_destroy(a);
}

static void check_gpu(const char *text, bool generic)
{
    check_gpu_runs(text, generic, 1);
}

Test(nvrtc, gpu_random_graphs_match_the_cpu, .timeout = 900)
{
    if (!xe_gpu_available())
        cr_skip_test("skipped: no CUDA device");
    int ran = 0;
    for (uint64_t seed = 1; seed <= N_RANDOM; seed++) {
        char *text = randgraph_text(seed, &(randgraph_options){.n_ops = 4 + (int)(seed % 8)});
        if (!strstr(text, "floor(")) {
            check_gpu(text, false);
            ran++;
        }
        free(text);
    }
    for (uint64_t seed = 500; seed < 500 + N_GENERIC; seed++) {
        char *text = randgraph_text(seed, &(randgraph_options){.n_ops = 5});
        if (!strstr(text, "floor(")) {
            check_gpu(text, true);
            ran++;
        }
        free(text);
    }
    cr_assert_geq(ran, (N_RANDOM + N_GENERIC) / 2);
}

/* The more_ops menu on the GPU; an ulp can move floor, ceil and argmax (near ties), so those graphs are left out. */
Test(nvrtc, gpu_random_graphs_with_more_ops_match_the_cpu, .timeout = 900)
{
    if (!xe_gpu_available())
        cr_skip_test("skipped: no CUDA device");
    int ran = 0;
    for (uint64_t seed = 3000; seed < 3000 + N_MORE; seed++) {
        char *text = randgraph_text(seed, &(randgraph_options){.n_ops = 4 + (int)(seed % 8), .more_ops = true});
        if (!strstr(text, "floor(") && !strstr(text, "ceil(") && !strstr(text, "argmax(")) {
            check_gpu(text, false);
            ran++;
        }
        free(text);
    }
    cr_assert_geq(ran, N_MORE / 4);
}

Test(nvrtc, gpu_execution_matches_the_cpu)
{
    if (!xe_gpu_available())
        cr_skip_test("skipped: no CUDA device");
    check_gpu("xlac.graph v1\ninput x: f32[300,70]\ninput y: f32[70]\n"
              "a = mul(x, y)\nb = tanh(a)\ns = reduce_sum(b, axes=[1])\nm = reduce_max(b, axes=[0])\n"
              "t = reduce_sum(b, axes=[0,1])\nsm = softmax(b, axis=-1)\noutput s\noutput m\noutput t\noutput sm\n",
              false);
    check_gpu("xlac.graph v1\ninput x: f64[4096,33]\nr = reduce_sum(x, axes=[0])\nc = reduce_min(x, axes=[1])\n"
              "output r\noutput c\n", false);
}

/*
 * Column reductions: few tiles and many rows (the rows split into chunks,
 * the last chunk of a tile combining the partials; three runs, so the
 * tile counters must be reset), more tiles than the device holds at once
 * (grid-stride over tiles), and a reduced pair of outer dims.
 */
Test(nvrtc, gpu_column_reductions_match_the_cpu)
{
    if (!xe_gpu_available())
        cr_skip_test("skipped: no CUDA device");
    const char *graphs[] = {
        ("xlac.graph v1\ninput x: f32[20000,45]\ninput y: f32[20000,45]\np = mul(x, y)\n"
         "s = reduce_sum(p, axes=[0])\nm = reduce_max(x, axes=[0], keepdims=true)\noutput s\noutput m\n"),
        "xlac.graph v1\ninput x: i32[5000,40]\ns = reduce_sum(x, axes=[0])\noutput s\n",
        "xlac.graph v1\ninput x: f64[700,30,17]\ns = reduce_mean(x, axes=[0,1])\noutput s\n",
        "xlac.graph v1\ninput x: f32[3,80000]\ns = reduce_min(x, axes=[0])\noutput s\n",
        "xlac.graph v1\ninput x: f16[4096,33]\ns = reduce_sum(x, axes=[0])\noutput s\n",
    };
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) {
        check_gpu_runs(graphs[i], false, 3);
        check_gpu_runs(graphs[i], true, 3);
    }
}

/*
 * argmax over long rows runs a block per output: ties (floor leaves few
 * values) must give the first index, and the first NaN must win (log of
 * the negative inputs), as on the CPU; short rows keep a thread each.
 */
Test(nvrtc, gpu_argmax_finds_the_first_best)
{
    if (!xe_gpu_available())
        cr_skip_test("skipped: no CUDA device");
    const char *graphs[] = {
        "xlac.graph v1\ninput x: f32[64,5000]\nf = floor(x)\na = argmax(f, axis=1)\nb = argmax(f, axis=0)\n"
        "output a\noutput b\n",
        "xlac.graph v1\ninput x: f64[40,3000]\nl = log(x)\na = argmax(l, axis=-1, keepdims=true)\noutput a\n",
        "xlac.graph v1\ninput x: i32[3,700]\nn = neg(x)\na = argmax(n, axis=1)\nb = argmax(n, axis=0)\n"
        "output a\noutput b\n",
    };
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) {
        check_gpu_runs(graphs[i], false, 2);
        check_gpu_runs(graphs[i], true, 1);
    }
}
