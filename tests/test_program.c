/*
 * How a compiled program runs its steps: shared kernels (codegen/plan/share.h)
 * and buffer lifetimes (codegen/plan/lifetime.c).
 *
 * Shared kernels: a model's repeated layers compile each distinct kernel
 * body once; a later step whose kernel is the same up to its buffers runs
 * the kept one on its own buffers. Checked: the identity of a body
 * (locals, pointers and comments do not count; a literal does), which
 * steps share in graphs with repeated layers (row kernels, matmul
 * epilogues on row panels), that the shared program computes what op by
 * op does (f32: 1e-5 of the largest magnitude; a step reading another's
 * buffers would be far off), that nothing is shared where a constant
 * differs, that the C and CUDA sources hold one body per distinct kernel,
 * and that a module whose share lines are damaged or do not fit the plan
 * is refused at load.
 *
 * Lifetimes: a buffer is made before the first step that writes it and
 * released after the last that reads it, so a chain of layers holds a few
 * buffers at a time, not all; a matmul that reads a transposed operand's
 * source through the BLAS flag keeps that source alive (a random graph
 * once crashed on it).
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "plan.h"
#include "program_impl.h"
#include "share.h"
#include "support/ref.h"
#include "support/tmpdir.h"
#include "support/ref_dev.h"
#include "xg_impl.h"
#include "xlac/op.h"
#include "xlac/xlac.h"

#define MAX_IO 8

static xe_status st;

Test(share, key_ignores_locals_pointers_and_comments)
{
    int o1[8], o2[8], n1 = 0, n2 = 0;
    char *k1 = xg_kernel_key("    float v3 = p7[v2]; /* x */\n    p9[v2] = v3 + rc4[k] * 2.5f;\n", 10, o1, &n1);
    char *k2 = xg_kernel_key("    float v13 = p2[v12]; /* y */\n    p5[v12] = v13 + rc1[k] * 2.5f;\n", 10, o2, &n2);
    cr_assert(k1 && k2);
    cr_assert_str_eq(k1, k2);
    cr_assert_eq(n1, 2);
    cr_assert_eq(n2, 2);
    cr_assert(o1[0] == 7 && o1[1] == 9 && o2[0] == 2 && o2[1] == 5, "pointer order %d %d / %d %d", o1[0], o1[1],
              o2[0], o2[1]);
    char *k3 = xg_kernel_key("    float v3 = p7[v2]; /* x */\n    p9[v2] = v3 + rc4[k] * 3.5f;\n", 10, o1, &n1);
    cr_assert_str_neq(k1, k3, "a literal is part of the body");
    char *k4 = xg_kernel_key("    float v3 = p7[v2];\n    p7[v2] = v3;\n", 10, o1, &n1);
    char *k5 = xg_kernel_key("    float v3 = p7[v2];\n    p8[v2] = v3;\n", 10, o1, &n1);
    cr_assert_str_neq(k4, k5, "one buffer read and written is not two");
    cr_assert_null(xg_kernel_key("    p12[0] = 1;\n", 10, o1, &n1), "a pointer past the nodes has no key");
    free(k1);
    free(k2);
    free(k3);
    free(k4);
    free(k5);
}

static void expect_close(const xe_tensor *got, const xe_tensor *want, double tol, const char *what)
{
    int64_t n = xe_tensor_numel(want);
    cr_assert_eq(xe_tensor_numel(got), n, "%s: sizes differ", what);
    double scale = 1e-30;
    for (int64_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(xe_load_f64(want->data, want->dtype, i)));
    for (int64_t i = 0; i < n; i++) {
        double a = xe_load_f64(got->data, got->dtype, i), b = xe_load_f64(want->data, want->dtype, i);
        cr_assert(fabs(a - b) <= tol * scale, "%s: element %lld is %.9g, want %.9g", what, (long long)i, a, b);
    }
}

typedef struct built {
    xe_graph *g;
    xe_type types[MAX_IO];
    xe_tensor *in[MAX_IO];
    xg_artifact *a;
} built;

static void build(built *b, const char *text)
{
    b->g = xe_parse_string(text, "share.xg", &st);
    cr_assert_not_null(b->g, "%s\n%s", st.msg, text);
    cr_assert_leq(b->g->n_inputs, MAX_IO);
    for (int k = 0; k < b->g->n_inputs; k++) {
        b->types[k] = b->g->nodes[b->g->inputs[k]]->type;
        ref_seed(91 + (uint64_t)k);
        b->in[k] = ref_random_tensor(b->types[k].dtype, &b->types[k].shape, -1, 1);
    }
    xg_options o;
    xg_options_default(&o);
    cr_assert_eq(xg_build(b->g, b->types, false, XG_TARGET_C, 0, &o, &b->a, &st), XE_OK, "%s\n%s", st.msg, text);
}

static void unbuild(built *b)
{
    for (int k = 0; k < b->g->n_inputs; k++)
        xe_tensor_release(b->in[k]);
    xg_artifact_destroy(b->a);
    xe_graph_destroy(b->g);
}

/* Loads and runs b's artifact; outputs into out. */
static void run_built(built *b, xe_tensor **out)
{
    xg_options o;
    xg_options_default(&o);
    xg_program *p = NULL;
    cr_assert_eq(xg_program_load(b->a, b->g, b->types, &o, &p, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(xg_program_run(p, b->in, b->g->n_inputs, out, b->g->n_outputs, &st), XE_OK, "%s", st.msg);
    xg_program_destroy(p);
}

/* text compiled as one C cluster: `shares` share lines and `bodies` kernels in the source, the run
   against op by op. */
static void check(const char *text, int shares, int bodies)
{
    built b = {0};
    build(&b, text);
    int got_shares = xt_occurrences(b.a->plan_text, "shared: ");
    int got_bodies = xt_occurrences(b.a->source, "\nvoid xg_k");
    cr_assert_eq(got_shares, shares, "%d shares, want %d\n%s", got_shares, shares, b.a->plan_text);
    cr_assert(bodies < 0 || got_bodies == bodies, "%d kernel bodies, want %d\n%s", got_bodies, bodies,
              b.a->plan_text);
    xe_tensor *got[MAX_IO] = {0}, *want[MAX_IO] = {0};
    run_built(&b, got);
    ref_run_graph(text, b.in, want);
    for (int k = 0; k < b.g->n_outputs; k++) {
        expect_close(got[k], want[k], 1e-5, "shared kernels against op by op");
        xe_tensor_release(got[k]);
        xe_tensor_release(want[k]);
    }
    unbuild(&b);
}

/*
 * n layers over f32[R,R]: a product, then work that reads it transposed (so it is a kernel of its own,
 * not a panel epilogue: test_epilogue), a tanh, and a row softmax; layer i scales by c[i].
 */
static char *layers(int n, int R, const double *c)
{
    static char text[8192];
    size_t u = (size_t)snprintf(text, sizeof text, "xlac.graph v1\ninput x: f32[%d,%d]\ninput w: f32[%d,%d]\n",
                                R, R, R, R);
    for (int i = 1; i <= n; i++)
        u += (size_t)snprintf(text + u, sizeof text - u,
                              "c%d = const(f32[], %g)\ny%d = matmul(%s%d, w)\nt%d = transpose(y%d)\n"
                              "s%d = add(y%d, t%d)\nq%d = mul(s%d, c%d)\nh%d = tanh(q%d)\n"
                              "p%d = softmax(h%d, axis=-1)\n",
                              i, c[i - 1], i, i == 1 ? "x" : "p", i == 1 ? 0 : i - 1, i, i, i, i, i, i, i, i, i, i,
                              i, i);
    snprintf(text + u, sizeof text - u, "output p%d\noutput p1\n", n);
    char *x = strstr(text, "matmul(x0, w)");
    if (x)
        memmove(x + 8, x + 9, strlen(x + 9) + 1); /* layer 1 reads the input x */
    return text;
}

/* Three layers of the same kernels on different buffers: each body once, the others shared. */
Test(share, repeated_layers_share_their_kernels, .timeout = 120)
{
    static const double same[] = {0.5, 0.5, 0.5};
    check(layers(3, 37, same), 2, 1);
    check(layers(3, 300, same), 2, 1);
}

/* Two MLP layers: matmul, then bias and GELU on each row panel; the second layer's epilogue is the first's. */
Test(share, panel_epilogues_share, .timeout = 120)
{
    check("xlac.graph v1\ninput x: f32[301,37]\ninput w1: f32[37,37]\ninput b1: f32[37]\n"
          "input w2: f32[37,37]\ninput b2: f32[37]\n"
          "h0 = matmul(x, w1)\nh1 = add(h0, b1)\nh2 = gelu(h1, approximate=true)\n"
          "o0 = matmul(h2, w2)\no1 = add(o0, b2)\no2 = gelu(o1, approximate=true)\noutput o2\n",
          1, 1);
}

/* The same layers with another constant are other bodies. */
Test(share, a_different_constant_is_not_shared, .timeout = 120)
{
    static const double other[] = {0.5, 0.25, 0.5};
    check(layers(3, 37, other), 1, 2); /* layer 3 is layer 1's */
}

/* A module whose share lines are damaged, or name steps and buffers the plan does not have, is refused. */
Test(share, damaged_share_lines_are_refused, .timeout = 120)
{
    static const double same[] = {0.5, 0.5};
    built b = {0};
    build(&b, layers(2, 16, same));
    char *line = strstr(b.a->meta, "shared: ");
    cr_assert_not_null(line, "%s", b.a->meta);
    size_t at = (size_t)(line - b.a->meta);
    char *good = strdup(b.a->meta);
    cr_assert_str_eq(line, "shared: xg_k3 runs the kernel of xg_k1 with buffers 10,15 in place of 3,8\n");
    static const char *const bad[] = {
        "shared: xg_k3 runs the kernel of xg_k3 with buffers 10,15 in place of 3,8\n", /* itself */
        "shared: xg_k1 runs the kernel of xg_k3 with buffers 10,15 in place of 3,8\n", /* a later one */
        "shared: xg_k3 runs the kernel of xg_k2 with buffers 10,15 in place of 3,8\n", /* a library call */
        "shared: xg_k9 runs the kernel of xg_k1 with buffers 10,15 in place of 3,8\n", /* no such step */
        "shared: xg_k3 runs the kernel of xg_k1 with buffers 10,999 in place of 3,8\n", /* no such node */
        "shared: xg_k3 runs the kernel of xg_k1 with buffers 10,2 in place of 3,8\n",   /* not a buffer */
        "shared: xg_k3 runs the kernel of xg_k1 with buffers 10 in place of 3,8\n",     /* counts differ */
        "shared: xg_k3 runs the kernel of xg_k1 with buffers 10,15 in place of 3,8",     /* cut short */
        ("shared: xg_k3 runs the kernel of xg_k1 with buffers 10,15 in place of 3,8\n"
         "shared: xg_k3 runs the kernel of xg_k1 with buffers 10,15 in place of 3,8\n"), /* twice */
        "garbage\n",
    };
    xg_options o;
    xg_options_default(&o);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        free(b.a->meta);
        b.a->meta = malloc(at + strlen(bad[i]) + 1);
        memcpy(b.a->meta, good, at);
        strcpy(b.a->meta + at, bad[i]);
        xg_program *p = NULL;
        cr_assert_neq(xg_program_load(b.a, b.g, b.types, &o, &p, &st), XE_OK, "loaded with %s", bad[i]);
        cr_assert_null(p);
        cr_assert(strstr(st.msg, "does not match"), "%s", st.msg);
    }
    free(b.a->meta);
    b.a->meta = good;
    xe_tensor *out[MAX_IO] = {0};
    run_built(&b, out);
    xe_tensor_release(out[0]);
    unbuild(&b);
}

/* The CUDA program keeps one body per distinct kernel too (compiled by NVRTC in test_nvrtc). */
Test(share, cuda_source_keeps_one_body)
{
    static const double same[] = {0.5, 0.5, 0.5};
    xe_graph *g = xe_parse_string(layers(3, 64, same), "cuda.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_type t[2] = {g->nodes[g->inputs[0]]->type, g->nodes[g->inputs[1]]->type};
    xg_plan *p = NULL;
    cr_assert_eq(xg_plan_build(g, t, false, &p, &st), XE_OK, "%s", st.msg);
    xg_shares sh = {0};
    char *src = xg_emit_program_shared(p, XG_TARGET_CUDA, &sh, &st);
    cr_assert_not_null(src, "%s", st.msg);
    cr_assert_eq(sh.n, 2);
    cr_assert_eq(xt_occurrences(src, "__global__ void xg_k"), 1, "%s", src);
    cr_assert(sh.v[0].step == 3 && sh.v[0].from == 1 && sh.v[1].step == 5 && sh.v[1].from == 1);
    free(src);
    xg_shares_free(&sh);
    xg_plan_destroy(p);
    xe_graph_destroy(g);
}

/* The most made buffers alive at once over p's steps (by its lifetimes, groups as the run loop takes them). */
static int peak_live(const xg_program *p)
{
    int peak = 0;
    for (int i = 0; i < p->plan->n_steps; i = xg_group_last(p, i) + 1) {
        int live = 0, last = xg_group_last(p, i);
        for (int j = 0; j < p->body->n_nodes; j++)
            live += p->born[j] >= 0 && p->born[j] <= last && p->dies[j] >= i;
        peak = live > peak ? live : peak;
    }
    return peak;
}

/* Six layers: the run holds the buffers of about one layer, not of six; outputs live to the end. */
Test(lifetime, a_chain_of_layers_holds_few_buffers, .timeout = 120)
{
    static const double same[] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
    built b = {0};
    build(&b, layers(6, 24, same));
    xg_options o;
    xg_options_default(&o);
    xg_program *p = NULL;
    cr_assert_eq(xg_program_load(b.a, b.g, b.types, &o, &p, &st), XE_OK, "%s", st.msg);
    int made = 0;
    for (int j = 0; j < p->body->n_nodes; j++)
        made += p->born[j] >= 0;
    cr_assert_eq(made, 12, "%d buffers made\n%s", made, b.a->plan_text); /* y and p of each layer */
    cr_assert_leq(peak_live(p), 4, "%d buffers alive at once\n%s", peak_live(p), b.a->plan_text);
    for (int k = 0; k < p->body->n_outputs; k++)
        cr_assert_eq(p->dies[p->body->outputs[k]], INT_MAX, "an output is released");
    xg_program_destroy(p);
    unbuild(&b);
    check(layers(6, 24, same), 5, 1);
}

/* matmul(v8, transpose(v8)) with v8 = transpose(u8) materialized: the product reads u8 through the flag. */
Test(lifetime, a_transposed_operand_keeps_its_source, .timeout = 120)
{
    check("xlac.graph v1\ninput x: f64[5,5]\ninput y: f64[5,5]\n"
          "a = mul(x, y)\nu = tanh(a)\nv = transpose(u, perm=[1,0])\nr = reduce_max(v, axes=[0])\n"
          "vt = transpose(v, perm=[1,0])\nm = matmul(v, vt)\ns = reduce_sum(m, axes=[1], keepdims=true)\n"
          "z = add(r, r)\noutput s\noutput z\n",
          0, -1);
}

/*
 * A reshape of a product, read by another product and handed out: its step only copied the
 * product, so it does not run and its buffer is a view of the product's (lifetime.c). Proven by
 * the two outputs' addresses, the program's view_of, the plan text, and the values against op by
 * op. On the way, a view of a body input (rx) and one of a view (rr).
 */
Test(lifetime, a_copying_reshape_is_a_view, .timeout = 120)
{
    const char *text = "xlac.graph v1\ninput x: f32[4,6]\ninput w: f32[6,8]\n"
                       "m = matmul(x, w)\nr = reshape(m, shape=[2,16])\nrr = reshape(r, shape=[32])\n"
                       "rx = reshape(x, shape=[24])\nwt = const(f32[16,3], 0.25)\n"
                       "q = matmul(r, wt)\noutput m\noutput r\noutput q\noutput rr\noutput rx\n";
    built b = {0};
    build(&b, text);
    cr_assert_geq(xt_occurrences(b.a->plan_text, "launch: none: a view of"), 1, "%s", b.a->plan_text);
    xg_options o;
    xg_options_default(&o);
    xg_program *p = NULL;
    cr_assert_eq(xg_program_load(b.a, b.g, b.types, &o, &p, &st), XE_OK, "%s", st.msg);
    xe_tensor *out[5] = {0};
    cr_assert_eq(xg_program_run(p, b.in, b.g->n_inputs, out, 5, &st), XE_OK, "%s", st.msg);
    int views = 0;
    for (int j = 0; j < p->body->n_nodes; j++)
        views += p->view_of[j] >= 0;
    cr_assert_geq(views, 1, "%s", b.a->plan_text);
    cr_expect_eq(out[1]->data, out[0]->data, "r is not a view of m\n%s", b.a->plan_text);
    cr_expect_eq(out[1]->shape.dims[0], 2);
    xg_program_destroy(p);
    xe_tensor *want[5] = {0};
    ref_run_graph(text, b.in, want);
    for (int k = 0; k < 5; k++) {
        expect_close(out[k], want[k], 1e-6, b.g->nodes[b.g->outputs[k]]->name);
        xe_tensor_release(out[k]);
        xe_tensor_release(want[k]);
    }
    unbuild(&b);
}
