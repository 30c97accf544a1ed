/*
 * matmul (f32, and u8/i8 x i8 into an exact i32) on the CPU engine: one oneDNN matmul primitive per
 * node and operand shapes, made on the node's first run at those shapes and kept on the shelf of
 * its kernel cache (dnnl_engine.h), for every form matmul.c accepts: 1-D operands promoted, batch
 * dims broadcast (oneDNN broadcasts a batch dim of 1), transpose_a/_b as
 * the operand's strides (no copy).
 *
 * A constant right operand (a const node: a layer's weights) is packed
 * once, when the primitive is made, into the layout the primitive prefers
 * (format `any`, a blocked layout on this machine), and kept; OpenBLAS
 * packs it again on every call. If oneDNN cannot make that primitive, the
 * plain strided layout is used. A non-constant right operand is read in
 * place.
 *
 * When B is one matrix (rank 2, or batch dims of 1) and A is not transposed,
 * A's batch dims are folded into its rows: [b..., M, K] x [K, N] is one
 * [b*M, K] x [K, N] product over the same memory (a transformer's linear
 * layers as exporters write them). The rank-2 primitive takes B packed,
 * where oneDNN 2.6 keeps a broadcast rank-3 B plain, and a taller A: BERT's
 * 128x256x256 product took 125 us as rank 3 and 74 us folded.
 *
 * The 8-bit products are oneDNN's int8 matmul (u8 or s8 source, s8
 * weights, s32 destination, no scales: the quantization arithmetic around
 * it is the graph's), its weights packed as the f32 ones are; u8 weights
 * (MatMulInteger allows them) stay in matmul.c's loop. On a CPU without
 * VNNI oneDNN's u8 x s8 (and s8 x s8) sums pairs of products in int16 with
 * saturation (vpmaddubsw), so 255 x 127 + 255 x 127 comes out wrong
 * (test_int8_matmul, with oneDNN held to AVX2); onnxruntime's AVX2 kernel
 * saturates the same way. There a u8 x constant s8 product is made exact by
 * splitting the weights once (split_weights, below): w = 64 h + l with
 * l = w & 63 in [0, 63] and h = w >> 6 in [-2, 1], stored side by side as
 * one [K, 2N] operand [L | H]. No weight exceeds 63 in magnitude, so a pair
 * sums to at most 2 x 255 x 63 = 32130 and never saturates; one product
 * gives [A L | A H] exactly, and C = A L + 64 A H, wrapping modulo 2^32 as
 * matmul.c's loop does. The split product runs at about the f32 product's
 * speed (twice the columns at twice the rate); the quantize_dynamic BERT of
 * bench/beyond_models.py on a Zen 3 with AVX2 only: 64 -> 13 ms at batch 1
 * (with quant_matmul.c's quantization vectorized). Other int8 products there
 * (s8 activations, two inputs, transposes) stay in the loop.
 *
 * f16 products (models stored in half precision) compute in f32 on the
 * same primitive, rounded once to f16 at the end: A is widened into a
 * scratch buffer per run, constant weights are widened and packed once
 * (oneDNN's reorder from the f16 plain layout to the f32 packed one), other
 * weights widened per run. Before this an f16 product was matmul.c's
 * scalar loop (an fp16 BERT spent 80 % of its time there).
 *
 * Products of at most XE_SMALL_ROWS rows (after the fold above) by constant f32 or f16 weights,
 * a decode step's, run on small_rows.c's kernel where the CPU has AVX2 and FMA but no AVX-512,
 * with B packed once there and no oneDNN primitive: oneDNN 2.6's AVX2 gemm packs B again at every
 * call, which made a decode step's logits product (8 x 256 x 8192) 1.5 ms in the model against
 * 0.28 now. With AVX-512 only single-row products go there: oneDNN packs B once and is faster
 * at 8 rows (xe_small_rows_limit).
 *
 * f64 (and the integer loops) stay in matmul.c: oneDNN has no f64 matmul.
 * XE_ERR_UNSUPPORTED means "run the BLAS path".
 */
#include <stdlib.h>
#include <string.h>

#include "dnnl_engine.h"
#include "half.h"
#include "small_rows.h"

/* The key of a primitive: both operand shapes as stored, transposes, the packed constant. */
typedef struct mm_key {
    xe_shape a, b;
    bool ta, tb;
    dnnl_data_type_t at, bt, ct; /* the operands' and the result's element types */
    bool half;                   /* f16 operands and result, computed in f32 (above) */
    bool split;                  /* int8 without VNNI: B split into [L | H] (above) */
    const void *b_const; /* constant right operand packed into b_packed; NULL: read in place */
} mm_key;

typedef struct mm_prim {
    mm_key key;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t mm, b_in; /* b_in: plain -> packed, NULL when none is needed */
    dnnl_memory_desc_t a_md, b_plain, b_md, c_md;
    void *b_packed;
    float *small_b; /* B packed for small_rows.c, which runs the product: no primitive then */
} mm_prim;

static void mm_prim_free(void *data)
{
    mm_prim *m = data;
    if (!m)
        return;
    if (m->mm)
        dnnl_primitive_destroy(m->mm);
    if (m->b_in)
        dnnl_primitive_destroy(m->b_in);
    if (m->pd)
        dnnl_primitive_desc_destroy(m->pd);
    free(m->b_packed);
    free(m->small_b);
    free(m);
}

static bool shape_eq(const xe_shape *x, const xe_shape *y)
{
    return x->rank == y->rank && memcmp(x->dims, y->dims, sizeof(int64_t) * (size_t)x->rank) == 0;
}

static bool key_eq(const mm_key *x, const mm_key *y)
{
    return shape_eq(&x->a, &y->a) && shape_eq(&x->b, &y->b) && x->ta == y->ta && x->tb == y->tb &&
           x->b_const == y->b_const && x->at == y->at && x->bt == y->bt && x->half == y->half &&
           x->split == y->split;
}

/*
 * The memory descriptor of one operand, rank r: its batch dims right-aligned
 * (1 where it has none), then the logical rows and cols of op(X), with
 * strides reading the stored matrix (transposed or not) in place.
 */
static void operand_md(dnnl_memory_desc_t *md, const xe_shape *s, bool trans, bool is_a, int r,
                       dnnl_data_type_t dt)
{
    int64_t rows, cols; /* stored */
    if (s->rank == 1) {
        rows = is_a ? 1 : s->dims[0];
        cols = is_a ? s->dims[0] : 1;
        trans = false;
    } else {
        rows = s->dims[s->rank - 2];
        cols = s->dims[s->rank - 1];
    }
    dnnl_dims_t dims, strides;
    dims[r - 2] = trans ? cols : rows;
    dims[r - 1] = trans ? rows : cols;
    strides[r - 2] = trans ? 1 : cols;
    strides[r - 1] = trans ? cols : 1;
    int nb = s->rank > 2 ? s->rank - 2 : 0;
    int64_t step = rows * cols;
    for (int d = r - 3; d >= 0; d--) {
        int sd = d - (r - 2 - nb); /* the operand's batch dim, or < 0: a leading 1 */
        dims[d] = sd >= 0 ? s->dims[sd] : 1;
        strides[d] = step;
        step *= dims[d];
    }
    dnnl_memory_desc_init_by_strides(md, r, dims, dt, strides);
}

/*
 * A constant B that the primitive takes plain (oneDNN 2.6's gemm-based matmul
 * on AVX2: no blocked layout) is stored with its rows padded when their
 * stride is a multiple of 256 bytes: the gemm then reads B in place, and
 * rows 4 KB apart fall into the same cache sets. On a Zen 3 (AVX2, 2
 * threads) BERT's 128 x 256 x 1024 product took 0.83 ms with B's rows 4 KB
 * apart and 0.48 ms with them 4 KB + 128 bytes apart; 128 x 768 x 3072 8.9
 * and 4.3 ms. *d: B's plain descriptor with the stride of the dim whose
 * stride is not 1 (of the last two) lengthened by 128 bytes; false when B is
 * not plain or its rows need no padding.
 */
static bool padded_plain(const dnnl_memory_desc_t *b, dnnl_memory_desc_t *d)
{
    enum { PAD_BYTES = 128, ALIAS_BYTES = 256 };
    int r = b->ndims;
    if (r < 2 || b->format_kind != dnnl_blocked || b->format_desc.blocking.inner_nblks != 0)
        return false;
    const dnnl_dims_t *st = &b->format_desc.blocking.strides;
    int in = (*st)[r - 1] == 1 ? r - 1 : (*st)[r - 2] == 1 ? r - 2 : -1, out = 2 * r - 3 - in;
    size_t elem = dnnl_data_type_size(b->data_type);
    if (in < 0 || elem == 0 || (*st)[out] != b->dims[in] ||
        (size_t)b->dims[in] * elem % ALIAS_BYTES != 0)
        return false;
    dnnl_dims_t strides;
    strides[in] = 1;
    strides[out] = b->dims[in] + (int64_t)(PAD_BYTES / elem);
    int64_t step = strides[out] * b->dims[out];
    for (int k = r - 3; k >= 0; k--) {
        strides[k] = step;
        step *= b->dims[k];
    }
    return dnnl_memory_desc_init_by_strides(d, r, b->dims, b->data_type, strides) == dnnl_success;
}

/* m's primitive remade for padded_plain's layout of B, when it applies and oneDNN takes it; m is
   unchanged otherwise. */
static void pad_plain_weights(mm_prim *m, const xe_node *n)
{
    dnnl_memory_desc_t padded;
    dnnl_matmul_desc_t d;
    dnnl_primitive_t mm;
    dnnl_primitive_desc_t pd;
    xe_status ignore;
    xe_status_clear(&ignore);
    if (!padded_plain(&m->b_md, &padded) ||
        dnnl_matmul_desc_init(&d, &m->a_md, &padded, NULL, &m->c_md) != dnnl_success ||
        xe_dnnl_primitive(&d, NULL, &mm, &pd, n, &ignore) != XE_OK)
        return;
    dnnl_primitive_destroy(m->mm);
    dnnl_primitive_desc_destroy(m->pd);
    m->mm = mm;
    m->pd = pd;
    m->b_md = padded;
}

/* The primitive of m->key, with a packed right operand when it is constant. */
static xe_code make_matmul(mm_prim *m, const xe_node *n, xe_status *st)
{
    const mm_key *k = &m->key;
    int r = k->a.rank > k->b.rank ? k->a.rank : k->b.rank;
    r = r < 2 ? 2 : r;
    xe_shape bs = k->b;
    if (k->split)
        bs.dims[1] *= 2; /* [L | H] */
    operand_md(&m->a_md, &k->a, k->ta, true, r, k->at);
    operand_md(&m->b_plain, &bs, k->tb, false, r, k->bt);
    dnnl_dims_t cd;
    for (int d = 0; d < r; d++) {
        int64_t x = m->a_md.dims[d], y = m->b_plain.dims[d];
        cd[d] = d == r - 2 ? x : d == r - 1 ? y : x > y ? x : y;
    }
    dnnl_dims_t cs; /* the output: plain row-major */
    int64_t step = 1;
    for (int d = r - 1; d >= 0; d--) {
        cs[d] = step;
        step *= cd[d];
    }
    dnnl_memory_desc_init_by_strides(&m->c_md, r, cd, k->ct, cs);
    dnnl_matmul_desc_t d;
    if (k->b_const) { /* try the layout the primitive prefers */
        dnnl_memory_desc_t any = m->b_plain;
        dnnl_memory_desc_init_by_tag(&any, r, m->b_plain.dims, k->half ? dnnl_f32 : k->bt,
                                     dnnl_format_tag_any);
        xe_status ignore;
        xe_status_clear(&ignore);
        if (dnnl_matmul_desc_init(&d, &m->a_md, &any, NULL, &m->c_md) == dnnl_success &&
            xe_dnnl_primitive(&d, NULL, &m->mm, &m->pd, n, &ignore) == XE_OK) {
            m->b_md = *dnnl_primitive_desc_query_md(m->pd, dnnl_query_weights_md, 0);
            pad_plain_weights(m, n);
            return xe_dnnl_reorder_make(&m->b_plain, &m->b_md, &m->b_in, n, st);
        }
    }
    if (k->half &&
        k->b_const) /* f16 weights must be widened: without the packing reorder, the loop */
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (matmul): f16 weights not packed", n->name);
    m->b_md = m->b_plain;
    if (xe_dnnl_check(dnnl_matmul_desc_init(&d, &m->a_md, &m->b_plain, NULL, &m->c_md), n,
                      "matmul descriptor", st) != XE_OK)
        return st->code;
    return xe_dnnl_primitive(&d, NULL, &m->mm, &m->pd, n, st);
}

/* s8 weights w [K, N] as [L | H] [K, 2N]: l = w & 63, h = w >> 6, w = 64 h + l (above). */
static int8_t *split_weights(const int8_t *w, int64_t K, int64_t N)
{
    int8_t *s = aligned_alloc(64, ((size_t)(K * 2 * N) + 63) / 64 * 64);
    if (!s)
        return NULL;
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++) {
            int v = w[k * N + n];
            s[k * 2 * N + n] = (int8_t)(v & 63);
            s[k * 2 * N + N + n] = (int8_t)((v - (v & 63)) / 64); /* floor(v / 64), no shift of
                                                                     a negative value */
        }
    return s;
}

/* Constant right operand b into the primitive's layout, once (split first, for int8 without
   VNNI). */
static xe_code pack_b(mm_prim *m, const void *b, const xe_node *n, xe_status *st)
{
    int8_t *split = NULL;
    if (m->key.split) {
        if (!(split = split_weights(b, m->key.b.dims[0], m->key.b.dims[1])))
            return xe_fail(st, XE_ERR_NOMEM, "node %s (matmul): out of memory for split weights",
                           n->name);
        if (!m->b_in) { /* the primitive reads [L | H] as it is */
            m->b_packed = split;
            return XE_OK;
        }
        b = split;
    }
    if (!m->b_in)
        return XE_OK;
    size_t bytes = dnnl_memory_desc_get_size(&m->b_md);
    if (!(m->b_packed = aligned_alloc(64, (bytes + 63) / 64 * 64))) {
        free(split);
        return xe_fail(st, XE_ERR_NOMEM, "node %s (matmul): out of memory for packed weights",
                       n->name);
    }
    memset(m->b_packed, 0, bytes); /* a padded layout's gaps are never read; kept defined */
    xe_code r = xe_dnnl_reorder_run(m->b_in, &m->b_plain, b, &m->b_md, m->b_packed, n, st);
    free(split);
    return r;
}

/* Whether key k is a product of a few rows by constant f32 (or f16) weights, for small_rows.c
   (above): A [M, K] plain with M <= xe_small_rows_limit() (8 on AVX2, 1 on AVX-512), B one
   constant matrix. */
static bool small_rows(const mm_key *k)
{
    return k->b_const && k->a.rank == 2 && k->b.rank == 2 && !k->ta && !k->split &&
           k->at == dnnl_f32 && (k->bt == dnnl_f32 || k->half) &&
           k->a.dims[0] <= xe_small_rows_limit();
}

/* N, the columns of op(B), of a rank-2 B stored [K, N], or [N, K] when transposed. */
static int64_t b_columns(const mm_key *k)
{
    return k->b.dims[k->tb ? 0 : 1];
}

/* key k's constant B packed for small_rows.c. */
static xe_code pack_small(mm_prim *m, const xe_node *n, xe_status *st)
{
    const mm_key *k = &m->key;
    int64_t K = k->a.dims[1], N = b_columns(k), stored_cols = k->b.dims[1];
    m->small_b = xe_small_rows_pack(k->b_const, k->half, K, N, k->tb ? 1 : stored_cols,
                                    k->tb ? stored_cols : 1);
    return m->small_b ? XE_OK
                      : xe_fail(st, XE_ERR_NOMEM, "node %s (matmul): out of memory packing weights",
                                n->name);
}

/* A new primitive for key k (its constant right operand packed, when it has one). */
static mm_prim *mm_prim_make(const xe_kernel_args *a, const mm_key *k, xe_status *st)
{
    mm_prim *m = calloc(1, sizeof *m);
    if (!m) {
        xe_fail(st, XE_ERR_NOMEM, "node %s (matmul): out of memory", a->node->name);
        return NULL;
    }
    m->key = *k;
    if (small_rows(k)) {
        if (pack_small(m, a->node, st) == XE_OK)
            return m;
        mm_prim_free(m);
        return NULL;
    }
    if (make_matmul(m, a->node, st) != XE_OK ||
        (k->b_const && pack_b(m, k->b_const, a->node, st) != XE_OK)) {
        mm_prim_free(m);
        return NULL;
    }
    return m;
}

/*
 * The node's primitive for these operands: one kept on its shelf, or a new
 * one, kept when the shelf has room (*owned: false) or the caller's to free.
 */
static mm_prim *mm_prim_get(const xe_kernel_args *a, const mm_key *k, bool *owned, xe_status *st)
{
    *owned = true;
    if (!a->cache)
        return mm_prim_make(a, k, st);
    xe_dnnl_shelf *s = xe_dnnl_shelf_lock(a->cache, mm_prim_free);
    if (!s) {
        xe_fail(st, XE_ERR_NOMEM, "node %s (matmul): out of memory", a->node->name);
        return NULL;
    }
    mm_prim *m = NULL;
    for (int i = 0; i < s->n && !m; i++)
        if (key_eq(&((mm_prim *)s->entry[i])->key, k))
            m = s->entry[i];
    if (m)
        *owned = false;
    else if ((m = mm_prim_make(a, k, st)))
        *owned = !xe_dnnl_shelf_add(s, m);
    xe_dnnl_shelf_unlock();
    return m;
}

/* A's batch dims folded into its rows when B is one matrix and A is read in place (above). */
static void fold_batch(mm_key *k)
{
    if (k->ta || k->a.rank < 3 || k->b.rank < 2)
        return;
    for (int d = 0; d + 2 < k->b.rank; d++)
        if (k->b.dims[d] != 1)
            return;
    int64_t rows = 1;
    for (int d = 0; d + 1 < k->a.rank; d++)
        rows *= k->a.dims[d];
    int64_t cols = k->a.dims[k->a.rank - 1];
    k->a.rank = 2;
    k->a.dims[0] = rows;
    k->a.dims[1] = cols;
    int64_t br = k->b.dims[k->b.rank - 2], bc = k->b.dims[k->b.rank - 1];
    k->b.rank = 2;
    k->b.dims[0] = br;
    k->b.dims[1] = bc;
}

/* The product on m's primitive: A at a, B at b (unless packed), C at c. */
static xe_code run_plain(const xe_kernel_args *ka, const mm_prim *m, const void *a, const void *b,
                         void *c, xe_status *st)
{
    if (m->small_b) {
        xe_small_rows_run(a, m->small_b, c, m->key.a.dims[0], m->key.a.dims[1], b_columns(&m->key));
        return XE_OK;
    }
    xe_dnnl_arg args[3] = {{DNNL_ARG_SRC, &m->a_md, a},
                           {DNNL_ARG_WEIGHTS, &m->b_md, m->b_packed ? m->b_packed : b},
                           {DNNL_ARG_DST, &m->c_md, c}};
    return xe_dnnl_execute(m->mm, args, 3, ka->node, st);
}

/* An f16 product: A (and B unless packed) widened into scratch, C in f32 scratch, rounded once. */
static xe_code run_half(const xe_kernel_args *a, const mm_prim *m, xe_status *st)
{
    int64_t na = xe_tensor_numel(a->in[0]), nb = xe_tensor_numel(a->in[1]),
            nc = xe_tensor_numel(a->out);
    float *fa = xe_dnnl_scratch(XE_DNNL_SCRATCH_SRC, (size_t)na * sizeof(float));
    float *fc = xe_dnnl_scratch(XE_DNNL_SCRATCH_DST, (size_t)nc * sizeof(float));
    float *fb =
        m->b_packed ? NULL : xe_dnnl_scratch(XE_DNNL_SCRATCH_WEIGHTS, (size_t)nb * sizeof(float));
    if (!fa || !fc || (!m->b_packed && !fb))
        return xe_fail(st, XE_ERR_NOMEM, "node %s (matmul): out of memory widening f16",
                       a->node->name);
    xe_cpu_widen_f16(a->in[0]->data, fa, na);
    if (fb)
        xe_cpu_widen_f16(a->in[1]->data, fb, nb);
    if (run_plain(a, m, fa, fb, fc, st) != XE_OK)
        return st->code;
    xe_cpu_narrow_f16(fc, a->out->data, nc);
    return XE_OK;
}

/* The engine's element types of f32 x f32 -> f32 and u8/i8 x i8 -> i32 (k->b_const already set);
   false for anything else. */
static bool engine_types(const xe_kernel_args *a, mm_key *k)
{
    xe_dtype x = a->in[0]->dtype, y = a->in[1]->dtype, z = a->out->dtype;
    if (x == XE_F32 && y == XE_F32 && z == XE_F32) {
        k->at = k->bt = k->ct = dnnl_f32;
        return true;
    }
    if (x == XE_F16 && y == XE_F16 &&
        z == XE_F16) { /* computed in f32; constant weights packed from f16 */
        k->half = true;
        k->at = k->ct = dnnl_f32;
        k->bt = k->b_const ? dnnl_f16 : dnnl_f32;
        return true;
    }
    if ((x == XE_U8 || x == XE_I8) && y == XE_I8 && z == XE_I32) {
        k->split = !xe_dnnl_int8_exact();
        if (k->split && (x != XE_U8 || !k->b_const || k->ta || k->tb || k->b.rank != 2))
            return false; /* saturating pairs and no split: the exact loop */
        k->at = x == XE_U8 ? dnnl_u8 : dnnl_s8;
        k->bt = dnnl_s8;
        k->ct = dnnl_s32;
        return true;
    }
    return false;
}

/* A split int8 product: [A L | A H] into scratch, then C = A L + 64 A H modulo 2^32 (above). */
static xe_code run_split(const xe_kernel_args *a, const mm_prim *m, xe_status *st)
{
    int64_t N = m->key.b.dims[1], M = N > 0 ? xe_tensor_numel(a->out) / N : 0;
    uint32_t *d = xe_dnnl_scratch(XE_DNNL_SCRATCH_PRODUCT, (size_t)(M * 2 * N) * sizeof *d);
    if (!d)
        return xe_fail(st, XE_ERR_NOMEM, "node %s (matmul): out of memory", a->node->name);
    if (run_plain(a, m, a->in[0]->data, NULL, d, st) != XE_OK)
        return st->code;
    uint32_t *c = a->out->data;
#pragma omp parallel for schedule(static) if (M * N >= (1 << 15))
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            c[i * N + j] = d[i * 2 * N + j] + (d[i * 2 * N + N + j] << 6);
    return XE_OK;
}

xe_code xe_dnnl_matmul(const xe_kernel_args *a, xe_status *st)
{
    mm_key k = {.a = a->in[0]->shape,
                .b = a->in[1]->shape,
                .ta = xe_node_attr_bool(a->node, "transpose_a", false),
                .tb = xe_node_attr_bool(a->node, "transpose_b", false),
                .b_const = a->cache && xe_dnnl_input_is_const(a, 1) ? a->in[1]->data : NULL};
    fold_batch(&k);
    if (!engine_types(a, &k) || xe_tensor_numel(a->out) == 0 || !xe_tensor_numel(a->in[0]) ||
        !xe_tensor_numel(a->in[1]))
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (matmul): not for the engine",
                       a->node->name);
    bool owned;
    mm_prim *m = mm_prim_get(a, &k, &owned, st);
    if (!m)
        return st->code;
    xe_code r = k.half    ? run_half(a, m, st)
                : k.split ? run_split(a, m, st)
                          : run_plain(a, m, a->in[0]->data, a->in[1]->data, a->out->data, st);
    if (owned)
        mm_prim_free(m);
    return r;
}
