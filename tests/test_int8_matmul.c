/*
 * The 8-bit products (issue 37: quantized models on the engine) and the casts around them: matmul of
 * u8/i8 operands gives their exact i32 product, checked against an int64
 * reference element by element, on every path:
 *   - the engine's int8 primitive (u8 or i8 x i8), constant weights packed
 *     (the folded batch included) and two inputs, with transposes;
 *   - the loop for the other pairs (u8 x u8, i8 x u8);
 *   - operands at the extremes (255 x 127, 255 x -128: a pair of products
 *     past int16, which an AVX2 u8 x s8 instruction saturates), also with
 *     oneDNN held to AVX2 (ONEDNN_MAX_CPU_ISA), as on an AVX2-only machine,
 *     where constant s8 weights are split so that no pair saturates.
 */
#include <criterion/criterion.h>
#include <dnnl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/xlac.h"

static xe_status st;

static void setup(void)
{
    xe_status_clear(&st);
}

TestSuite(int8_matmul, .init = setup, .timeout = 120);

static uint64_t rng = 88172645463325252ull;

static uint32_t next_u32(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* A tensor of dtype (u8 or i8): random over the whole range, or every element at one extreme. */
static xe_tensor *filled(xe_dtype dt, const xe_shape *s, int extreme)
{
    xe_tensor *t = xe_tensor_new(dt, s, XE_DEV_CPU, &st);
    cr_assert_not_null(t, "%s", st.msg);
    uint8_t *p = t->data;
    for (size_t i = 0; i < t->nbytes; i++)
        p[i] = extreme > 0 ? (dt == XE_U8 ? 255 : 127) : extreme < 0 ? (dt == XE_U8 ? 0 : 0x80)
                                                                    : (uint8_t)next_u32();
    return t;
}

static int64_t at8(const xe_tensor *t, int64_t i)
{
    return t->dtype == XE_U8 ? ((const uint8_t *)t->data)[i] : ((const int8_t *)t->data)[i];
}

/* c == op(a) op(b) exactly; a [Ba?, M, K] (or its transpose), b [K, N] or [B, K, N]. */
static void check(const xe_tensor *c, const xe_tensor *a, const xe_tensor *b, bool ta, bool tb, const char *what)
{
    int ra = a->shape.rank, rb = b->shape.rank;
    int64_t M = ta ? a->shape.dims[ra - 1] : a->shape.dims[ra - 2], K = ta ? a->shape.dims[ra - 2] : a->shape.dims[ra - 1];
    int64_t N = tb ? b->shape.dims[rb - 2] : b->shape.dims[rb - 1];
    int64_t nb = xe_tensor_numel(c) / (M * N), na = xe_tensor_numel(a) / (M * K), nbb = xe_tensor_numel(b) / (K * N);
    cr_assert_eq(c->dtype, XE_I32, "%s: the product is i32", what);
    for (int64_t q = 0; q < nb; q++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                int64_t s = 0, ab = (na > 1 ? q : 0) * M * K, bb = (nbb > 1 ? q : 0) * K * N;
                for (int64_t k = 0; k < K; k++)
                    s += at8(a, ab + (ta ? k * M + m : m * K + k)) * at8(b, bb + (tb ? n * K + k : k * N + n));
                int32_t got = ((const int32_t *)c->data)[(q * M + m) * N + n];
                cr_assert_eq(got, (int32_t)s, "%s: c[%lld,%lld,%lld] = %d, want %lld", what, (long long)q,
                             (long long)m, (long long)n, got, (long long)s);
            }
}

/* a @ b (b a constant when const_b, else an input), run twice (the second with the packed copy). */
static void product(xe_tensor *a, xe_tensor *b, bool ta, bool tb, bool const_b, const char *what)
{
    xe_graph *g = xe_graph_new("int8.xg");
    xe_type at_ = {a->dtype, a->shape}, bt = {b->dtype, b->shape};
    int in[2] = {xe_graph_add_input(g, "a", &at_, &st), -1};
    if (const_b) {
        in[1] = xe_graph_add_node(g, "b", XE_OP_CONST, NULL, 0, &st);
        g->nodes[in[1]]->value = xe_tensor_retain(b);
        g->nodes[in[1]]->type = bt;
    } else {
        in[1] = xe_graph_add_input(g, "b", &bt, &st);
    }
    int m = xe_graph_add_node(g, "mm", XE_OP_MATMUL, in, 2, &st);
    cr_assert(m >= 0, "%s", st.msg);
    xe_node_set_bool(g->nodes[m], "transpose_a", ta, &st);
    xe_node_set_bool(g->nodes[m], "transpose_b", tb, &st);
    cr_assert_eq(xe_graph_add_output(g, m, &st), XE_OK, "%s", st.msg);
    xe_session_options o = {.place = XE_PLACE_CPU};
    xe_session *s = xe_session_new(g, &o, &st);
    cr_assert_not_null(s, "%s: %s", what, st.msg);
    for (int r = 0; r < 2; r++) {
        xe_tensor *ins[2] = {a, b}, *c = NULL;
        cr_assert_eq(xe_session_run(s, ins, &c, &st), XE_OK, "%s: %s", what, st.msg);
        check(c, a, b, ta, tb, what);
        xe_tensor_release(c);
    }
    xe_session_destroy(s);
}

static void case_of(xe_dtype da, xe_dtype db, int rank_a, const int64_t *ad, int rank_b, const int64_t *bd,
                    bool ta, bool tb, bool const_b, int extreme)
{
    xe_shape as = xe_shape_make(rank_a, ad), bs = xe_shape_make(rank_b, bd);
    if (ta) {
        as.dims[rank_a - 2] = ad[rank_a - 1];
        as.dims[rank_a - 1] = ad[rank_a - 2];
    }
    if (tb) {
        bs.dims[rank_b - 2] = bd[rank_b - 1];
        bs.dims[rank_b - 1] = bd[rank_b - 2];
    }
    xe_tensor *a = filled(da, &as, extreme), *b = filled(db, &bs, extreme < 0 ? 1 : extreme);
    char what[200];
    snprintf(what, sizeof what, "%s x %s, rank %d x %d, ta %d tb %d, %s b, extreme %d", xe_dtype_name(da),
             xe_dtype_name(db), rank_a, rank_b, ta, tb, const_b ? "constant" : "input", extreme);
    product(a, b, ta, tb, const_b, what);
    xe_tensor_release(a);
    xe_tensor_release(b);
}

/* Every path over a few shapes, random and extreme values. */
static void every_path(void)
{
    const xe_dtype pairs[4][2] = {{XE_U8, XE_I8}, {XE_I8, XE_I8}, {XE_U8, XE_U8}, {XE_I8, XE_U8}};
    for (int p = 0; p < 4; p++)
        for (int t = 0; t < 4; t++)
            for (int extreme = -1; extreme <= 1; extreme++) {
                xe_dtype da = pairs[p][0], db = pairs[p][1];
                bool ta = t & 1, tb = t & 2;
                case_of(da, db, 2, (int64_t[]){37, 64}, 2, (int64_t[]){64, 48}, ta, tb, true, extreme);
                case_of(da, db, 2, (int64_t[]){5, 768}, 2, (int64_t[]){768, 33}, ta, tb, false, extreme);
                case_of(da, db, 3, (int64_t[]){2, 5, 40}, 3, (int64_t[]){2, 40, 24}, ta, tb, false, extreme);
            }
    /* a transformer's linear layer: the batch folded into the rows, the weights packed once */
    case_of(XE_U8, XE_I8, 3, (int64_t[]){2, 16, 256}, 2, (int64_t[]){256, 64}, false, false, true, 0);
    case_of(XE_U8, XE_I8, 3, (int64_t[]){2, 16, 256}, 2, (int64_t[]){256, 64}, false, false, true, 1);
    /* without VNNI the constant weights are split in two (dnnl_matmul.c split_weights), here into
       [256, 256] bytes, whose rows the primitive may take padded: the extremes of both signs
       (-128 is 64 x -2 + 0, 127 is 64 x 1 + 63) and random values */
    for (int extreme = -1; extreme <= 1; extreme++)
        case_of(XE_U8, XE_I8, 3, (int64_t[]){2, 16, 256}, 2, (int64_t[]){256, 128}, false, false, true,
                extreme);
}

Test(int8_matmul, exact_on_every_path)
{
    every_path();
}

Test(int8_matmul, exact_with_the_engine_held_to_avx2)
{
    setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1); /* before the engine's first use in this process */
    every_path();
    cr_assert_leq(dnnl_get_effective_cpu_isa(), dnnl_cpu_isa_avx2, "oneDNN was not held to AVX2");
}

/* cast x (dtype from, n values) to dtype to in a session; the result (the caller releases it). */
static xe_tensor *cast_run(xe_tensor *x, xe_dtype to)
{
    xe_graph *g = xe_graph_new("cast.xg");
    xe_type t = {x->dtype, x->shape};
    int in = xe_graph_add_input(g, "x", &t, &st), c = xe_graph_add_node(g, "c", XE_OP_CAST, &in, 1, &st);
    cr_assert(c >= 0, "%s", st.msg);
    xe_node_set_dtype(g->nodes[c], "to", to, &st);
    cr_assert_eq(xe_graph_add_output(g, c, &st), XE_OK, "%s", st.msg);
    xe_session_options o = {.place = XE_PLACE_CPU};
    xe_session *s = xe_session_new(g, &o, &st);
    cr_assert_not_null(s, "%s", st.msg);
    xe_tensor *y = NULL;
    cr_assert_eq(xe_session_run(s, &x, &y, &st), XE_OK, "%s", st.msg);
    xe_session_destroy(s);
    return y;
}

/* The whole-tensor casts (devices/cpu/cast_fast.c) keep cast's rules: NaN 0, saturation, truncation. */
Test(int8_matmul, quantized_casts_keep_the_cast_rules)
{
    const float special[] = {NAN, INFINITY, -INFINITY, -0.5f, 0.5f, -1.5f, 254.7f, 255.5f, 1e10f, -129.f,
                             127.9f, -128.9f, 3.0f, -3.0f, 0.0f, -0.0f};
    int64_t n = 70000; /* past the parallel threshold */
    xe_shape sh = xe_shape_make(1, &n);
    xe_tensor *f = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    for (int64_t i = 0; i < n; i++)
        ((float *)f->data)[i] = i < 16 ? special[i] : (float)((int64_t)(next_u32() % 100000) - 50000) / 97.0f;
    const xe_dtype ints[2] = {XE_U8, XE_I8};
    for (int k = 0; k < 2; k++) {
        xe_tensor *q = cast_run(f, ints[k]);
        uint8_t want;
        for (int64_t i = 0; i < n; i++) {
            xe_store_f64(&want, ints[k], 0, (double)((float *)f->data)[i]);
            cr_assert_eq(((uint8_t *)q->data)[i], want, "f32 %g -> %s", ((float *)f->data)[i], xe_dtype_name(ints[k]));
        }
        xe_tensor *back = cast_run(q, XE_F32), *wide = cast_run(q, XE_I32);
        for (int64_t i = 0; i < n; i++) {
            int64_t v = at8(q, i);
            cr_assert_eq(((float *)back->data)[i], (float)v);
            cr_assert_eq(((int32_t *)wide->data)[i], (int32_t)v);
        }
        xe_tensor *again = cast_run(wide, XE_F32);
        for (int64_t i = 0; i < n; i++)
            cr_assert_eq(((float *)again->data)[i], (float)at8(q, i));
        xe_tensor_release(again);
        xe_tensor_release(back);
        xe_tensor_release(wide);
        xe_tensor_release(q);
    }
    xe_tensor_release(f);
}
