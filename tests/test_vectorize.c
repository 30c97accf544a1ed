/*
 * A fused loop is never slower than the per-op kernels it replaces: every
 * `omp simd` loop of the generated C must vectorize, whatever ops it holds.
 * The test plans and emits C for a chain of every unary op (and pow), for
 * the row kernels (softmax written out at long and short rows, the softmax
 * op, log-softmax, layer norm) and for a mix of binary and select ops,
 * compiles each with the JIT's flags (codegen/targets/c/cc.c) plus gcc's
 * vectorization report (-fopt-info-vec-optimized), and checks that the
 * loop after each `#pragma omp simd` is reported vectorized. The one
 * exception is a loop that holds an op whose f32 arithmetic is a libm call
 * (sin, cos, pow: XE_OPF_SCALAR_CALL): the fusion planner gives it a loop of
 * its own, so the test checks that such a loop holds nothing else.
 *
 * Needs gcc as `cc` (the report is gcc's); otherwise the tests are skipped.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan.h"
#include "xlac/graph.h"
#include "xlac/io.h"

/* The JIT's flags (codegen/targets/c/cc.c, without --fast_math), the report, no link. */
#define CC_FLAGS                                                                                   \
    "-fno-fast-math -std=c11 -O3 -march=native -fPIC -fopenmp -w -fno-math-errno "                 \
    "-ffp-contract=fast "                                                                          \
    "-fopt-info-vec-optimized -c"

static xe_status st;

/* Whether `cc` is gcc (the only compiler whose report this test reads): gcc's copyright line. */
static bool cc_is_gcc(void)
{
    FILE *p = popen("cc --version 2>/dev/null", "r");
    char line[256];
    bool gcc = false;
    if (!p)
        return false;
    while (fgets(line, sizeof line, p))
        gcc = gcc || strstr(line, "Free Software Foundation") != NULL;
    pclose(p);
    return gcc;
}

/* The generated C of text's graph at its declared shapes. */
static char *emit_c(const char *text)
{
    xe_graph *g = xe_parse_string(text, "vec.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_type types[8];
    cr_assert_leq(g->n_inputs, 8);
    for (int k = 0; k < g->n_inputs; k++)
        types[k] = g->nodes[g->inputs[k]]->type;
    xg_plan *p = NULL;
    cr_assert_eq(xg_plan_build(g, types, false, &p, &st), XE_OK, "%s", st.msg);
    char *src = xg_emit_program(p, XG_TARGET_C, &st);
    cr_assert_not_null(src, "%s", st.msg);
    xg_plan_destroy(p);
    xe_graph_destroy(g);
    return src;
}

/* gcc's vectorization report for src, whole (the caller frees it). */
static char *report_of(const char *src)
{
    char dir[] = "/tmp/xlac-vec-XXXXXX", path[64], rep[64], obj[64], cmd[512];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/k.c", dir);
    snprintf(rep, sizeof rep, "%s/report.txt", dir);
    snprintf(obj, sizeof obj, "%s/k.o", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cd %s && cc " CC_FLAGS " k.c -o k.o 2>report.txt",
             dir); /* names it k.c */
    cr_assert_eq(system(cmd), 0, "cc failed: %s", cmd);
    f = fopen(rep, "r");
    cr_assert_not_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    unlink(path);
    unlink(rep);
    unlink(obj);
    rmdir(dir);
    return strdup(buf);
}

/* The text of the loop body that starts at line `line` (up to its closing "    }"). */
static const char *line_start(const char *src, int line)
{
    const char *p = src;
    for (int l = 1; l < line && p; l++) {
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    return p;
}

/* A loop that holds a libm op (sinf, cosf, powf) and no other op call. */
static bool lone_libm_loop(const char *body)
{
    const char *end = strstr(body, "\n    }\n");
    size_t len = end ? (size_t)(end - body) : strlen(body);
    char *b = strndup(body, len);
    bool libm = strstr(b, "sinf(") || strstr(b, "cosf(") || strstr(b, "powf(");
    bool other = strstr(b, "xe_") != NULL;
    free(b);
    return libm && !other;
}

/*
 * Whether gcc's report rep says a loop in lines [from, to] of k.c was
 * vectorized. gcc names a loop by one of its statements (often the first
 * load), not by its `for`, so the whole body counts; the pragma's own line
 * is left out (gcc's loops over a simd reduction's lanes are named there).
 */
static bool vectorized(const char *rep, int from, int to)
{
    for (const char *r = rep; r && *r; r = strchr(r, '\n') ? strchr(r, '\n') + 1 : NULL) {
        int line = 0;
        const char *eol = strchr(r, '\n'), *v = strstr(r, "optimized: loop vectorized");
        if (sscanf(r, "k.c:%d:", &line) == 1 && line >= from && line <= to && v &&
            (!eol || v < eol))
            return true;
    }
    return false;
}

/* The line of the first "    }" (the emitter's closing of a loop) at or after line `from`. */
static int loop_end(const char *src, int from)
{
    int line = from;
    for (const char *p = line_start(src, from); p && *p; line++) {
        if (strncmp(p, "    }\n", 6) == 0)
            return line;
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    return line;
}

/* Checks every omp simd loop of src's kernels; returns how many it saw. */
static int check_loops(const char *name, const char *src)
{
    char *rep = report_of(src);
    int seen = 0, line = 1;
    for (const char *p = src; *p; line++) {
        const char *nl = strchr(p, '\n');
        if (strncmp(p, "#pragma omp simd", 16) == 0) {
            const char *body = line_start(src, line + 1);
            cr_expect(vectorized(rep, line + 1, loop_end(src, line + 1)) || lone_libm_loop(body),
                      "%s: the loop at line %d of the generated C does not vectorize:\n%.600s",
                      name, line + 1, body);
            seen++;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    free(rep);
    return seen;
}

static void check_graph(const char *name, const char *text, int min_loops)
{
    if (!cc_is_gcc())
        cr_skip_test("skipped: cc is not gcc (the test reads gcc's vectorization report)");
    char *src = emit_c(text);
    int seen = check_loops(name, src);
    cr_expect_geq(seen, min_loops, "%s: %d simd loops, expected at least %d", name, seen,
                  min_loops);
    free(src);
}

Test(vectorize, chain_of_every_unary_op, .timeout = 120)
{
    check_graph(
        "unary chain",
        "xlac.graph v1\ninput x: f32[256,1024]\ninput p: f32[256,1024]\n"
        "a1 = neg(x)\na2 = abs(a1)\na3 = exp(a2)\na4 = log(a3)\na5 = sqrt(a4)\na6 = rsqrt(a5)\n"
        "a7 = tanh(a6)\na8 = sigmoid(a7)\na9 = relu(a8)\na10 = erf(a9)\na11 = sin(a10)\n"
        "a12 = cos(a11)\na13 = floor(a12)\na14 = ceil(a13)\na15 = gelu(a14)\n"
        "a16 = gelu(a15, approximate=true)\na17 = softplus(a16)\na18 = leaky_relu(a17, alpha=0.1)\n"
        "a19 = elu(a18, alpha=1.0)\na20 = hard_sigmoid(a19, alpha=0.2, beta=0.5)\n"
        "a21 = pow(a20, p)\na22 = tanh(a21)\noutput a22\n",
        5);
}

/* An f16 load at an index gcc cannot prove contiguous (attention's split into heads: a reshape, a
 * transpose and a reshape, each index a / and % of the loop's): gcc has no 16-bit gather, so the
 * load reads its aligned 32-bit word (emit.c), and the loop vectorizes. */
/*
 * Whether cc -march=native vectorizes the f16 word gather's load (emit.c:
 * the 32-bit word holding the half, at an int index from the buffer's
 * address rounded down to 4) in a loop of 8. gcc 12 does with Intel's and
 * AMD Zen's tuning; the form before (a 64-bit address rounded down) it
 * found "not suitable for gather load" with Zen's, and, in loops of an
 * fp16 BERT, with Intel's too.
 */
static bool cc_gathers_words(void)
{
    static const char probe[] =
        "#include <stdint.h>\n"
        "void f(uint16_t *restrict a, const uint16_t *restrict b, int64_t R) {\n"
        "    for (int64_t r = 0; r < R; r++) {\n"
        "#pragma omp simd\n"
        "    for (int64_t j = 0; j < 8; j++) {\n"
        "    const int64_t i = r * 8 + j, o = (i / 16) * 1280 + (i % 16) * 3;\n"
        "    int k = (int)(o) + (int)(((__UINTPTR_TYPE__)b >> 1) & 1);\n"
        "    uint32_t w;\n"
        "    __builtin_memcpy(&w, (const uint32_t *)((__UINTPTR_TYPE__)b & ~(__UINTPTR_TYPE__)3) + "
        "(k >> 1), 4);\n"
        "    a[i] = (uint16_t)(w >> ((k & 1) * 16));\n"
        "    }\n"
        "    }\n"
        "}\n";
    char *rep = report_of(probe);
    bool yes = vectorized(rep, 6, 11);
    free(rep);
    return yes;
}

Test(vectorize, f16_through_reshapes_and_a_transpose, .timeout = 120)
{
    if (cc_is_gcc() && !cc_gathers_words())
        cr_skip_test("skipped: cc -march=native does not vectorize the f16 word gather's load on this CPU "
                     "(gcc's Zen tuning: not suitable for gather load)");
    check_graph("f16 heads",
                "xlac.graph v1\ninput x: f16[64,40,32]\ninput b: f16[2,8]\n"
                "r = reshape(x, shape=[64,80,16])\nt = transpose(r, perm=[1,0,2])\n"
                "s = reshape(t, shape=[80,64,2,8])\na = add(s, b)\ne = exp(a)\noutput e\n",
                1);
}

/* fp16 BERT's key transpose, [1,128,256] read as [1,4,64,128] with the bias add and the scale: the
 * read's row index is the inner loop's own (j, not (i / 1) % 128 of i = r * 128 + j), a strided
 * load (a scalar loop of 0.31 ms for 32K halves before), and its heads' merge back, [1,4,128,64] to
 * [1,128,256], a word gather at (j / 64) * 8192 + j % 64. */
Test(vectorize, f16_key_transpose_and_heads_merge, .timeout = 120)
{
    if (cc_is_gcc() && !cc_gathers_words())
        cr_skip_test("skipped: cc -march=native does not vectorize the f16 word gather's load on this CPU");
    check_graph("f16 key transpose",
                "xlac.graph v1\ninput x: f16[1,128,256]\ninput b: f16[256]\ns = const(f16[], 0.125)\n"
                "a = add(x, b)\nr = reshape(a, shape=[1,128,4,64])\n"
                "t = transpose(r, perm=[0,2,3,1])\nm = mul(t, s)\noutput m\n",
                1);
    check_graph("f16 heads merge",
                "xlac.graph v1\ninput x: f16[1,4,128,64]\n"
                "t = transpose(x, perm=[0,2,1,3])\nr = reshape(t, shape=[1,128,256])\n"
                "y = neg(r)\noutput y\n",
                1);
}

Test(vectorize, binary_compare_select, .timeout = 120)
{
    check_graph(
        "binary mix",
        "xlac.graph v1\ninput x: f32[256,1024]\ninput y: f32[1024]\n"
        "a = maximum(x, y)\nb = minimum(a, x)\nc = sub(b, y)\nd = mul(c, c)\ne = div(d, y)\n"
        "g = greater(e, x)\nh = select(g, e, x)\nk = erf(h)\nl = sigmoid(k)\noutput l\n",
        1);
}

/* QuantizeLinear's round half to even as the ONNX import writes it: a select on the logical and of
   two compares (a ?: there stayed scalar on AVX2: gcc 12 if-converts it only with AVX-512 masks) */
Test(vectorize, select_on_a_logical_and, .timeout = 120)
{
    check_graph("round half to even",
                "xlac.graph v1\ninput x: f32[64,4096]\ninput s: f32[1]\ninput h: f32[1]\n"
                "input t: f32[1]\ninput o: f32[1]\nd = div(x, s)\na = add(d, h)\nf = floor(a)\n"
                "e = equal(a, f)\nq = div(f, t)\nr = floor(q)\nm = mul(r, t)\nn = not_equal(m, f)\n"
                "k = logical_and(e, n)\nb = sub(f, o)\ny = select(k, b, f)\noutput y\n",
                1);
}

/* torch's where(isnan(p), 0, p) after an f16 softmax, with an f16 add and exp (each op rounded to f16
   by xe_f16_round_vec): a ?: of f16 values (floats in the loop) with a constant arm stayed scalar on
   AVX2 (13 % of an fp16 BERT's run) */
Test(vectorize, f16_select_of_isnan, .timeout = 120)
{
    check_graph("f16 where isnan",
                "xlac.graph v1\ninput p: f16[64,4,128]\ninput b: f16[128]\nz = const(f16[], 0)\n"
                "a = add(p, b)\ne = exp(a)\nn = not_equal(e, e)\ny = select(n, z, e)\noutput y\n",
                1);
}

Test(vectorize, softmax_rows_long_and_short, .timeout = 120)
{
    static const char *const shapes[] = {"f32[512,4096]", "f32[4,64,64]", "f32[16,1024]"};
    for (int i = 0; i < 3; i++) {
        char text[512];
        int axis = i == 1 ? 2 : 1;
        snprintf(
            text, sizeof text,
            "xlac.graph v1\ninput x: %s\nm = reduce_max(x, axes=[%d], keepdims=true)\nd = sub(x, "
            "m)\n"
            "e = exp(d)\ns = reduce_sum(e, axes=[%d], keepdims=true)\ny = div(e, s)\noutput y\n",
            shapes[i], axis, axis);
        check_graph(shapes[i], text, 3);
    }
}

Test(vectorize, softmax_op_and_log_softmax, .timeout = 120)
{
    check_graph(
        "softmax op",
        "xlac.graph v1\ninput x: f32[64,1024]\nz = mul(x, x)\ny = softmax(z, axis=1)\noutput y\n",
        3);
    /* f16: computed in f32, its max over int32 keys and its sum in float, as f32's */
    check_graph(
        "f16 softmax op",
        "xlac.graph v1\ninput x: f16[64,1024]\nz = mul(x, x)\ny = softmax(z, axis=1)\noutput y\n",
        3);
    check_graph(
        "log-softmax",
        "xlac.graph v1\ninput x: f32[512,1024]\nm = reduce_max(x, axes=[1], keepdims=true)\n"
        "d = sub(x, m)\ne = exp(d)\ns = reduce_sum(e, axes=[1], keepdims=true)\nl = log(s)\n"
        "y = sub(d, l)\noutput y\n",
        3);
}

Test(vectorize, layer_norm_rows, .timeout = 120)
{
    check_graph(
        "layer norm",
        "xlac.graph v1\ninput x: f32[512,4096]\ninput gamma: f32[4096]\ninput beta: f32[4096]\n"
        "eps = const(f32[], 1e-5)\nmu = reduce_mean(x, axes=[1], keepdims=true)\nc = sub(x, mu)\n"
        "c2 = mul(c, c)\nvar = reduce_mean(c2, axes=[1], keepdims=true)\nve = add(var, eps)\n"
        "r = rsqrt(ve)\nn = mul(c, r)\ng = mul(n, gamma)\ny = add(g, beta)\noutput y\n",
        3);
}

/* A transposed read at a constant power-of-two stride along the simd loop (SegFormer's tokens back
   to channels before a gelu): through xg_sN the loop vectorizes; as a literal gcc 12 kept it scalar
   (10 ms where the vectorized loop takes 1.9); a GroupNorm's statistics read once per row (a
   gather per element kept the loop scalar); and a concat along an outer axis, unswitched. */
Test(vectorize, transposed_reads_and_outer_concats, .timeout = 120)
{
    check_graph("transposed gelu",
                "xlac.graph v1\ninput x: f32[8,128,1024]\nt = transpose(x, perm=[0,2,1])\n"
                "g = gelu(t)\noutput g\n",
                1);
    check_graph("group norm's statistics",
                "xlac.graph v1\ninput x: f32[8,192,32,32]\ninput m: f32[8,8,1]\n"
                "input w: f32[192,1,1]\nr = reshape(x, shape=[8,8,24576])\na = sub(r, m)\n"
                "b = reshape(a, shape=[8,192,32,32])\nc = mul(b, w)\nd = sigmoid(c)\n"
                "e = mul(c, d)\noutput e\n",
                1);
    check_graph("outer concat",
                "xlac.graph v1\ninput x: f32[8,256,32,32]\ninput y: f32[8,256,32,32]\n"
                "input s: f32[32]\na = mul(x, s)\nc = concat(a, y, axis=1)\noutput c\n",
                2);
}
