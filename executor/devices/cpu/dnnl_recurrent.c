/*
 * recurrent (f32) on the CPU engine: one oneDNN RNN primitive (LSTM, GRU,
 * linear-before-reset GRU or vanilla RNN) per node and shape, kept on the
 * shelf of its kernel cache (dnnl_engine.h), the whole sequence in one call.
 *
 * ONNX's layouts are not oneDNN's: W [dirs, G*H, I] becomes ldigo
 * [1, dirs, I, G, H] with oneDNN's gate order (LSTM i f c o where ONNX has
 * i o f c; GRU z r h in both), R the same over H, the two biases one
 * (summed, except the linear-before-reset GRU's R_h bias, oneDNN's fourth
 * gate) and LSTM's peepholes i f o (ONNX: i o f). The primitive then picks
 * its weights' layout and a reorder packs them; constant weights (model
 * weights) are packed once when the primitive is made, others per run. Y
 * is oneDNN's dst_layer ([S, N, dirs*H]: written into the result directly
 * for one direction, through a scratch buffer for two), Y_h and Y_c its
 * dst_iter and dst_iter_c, written into the result's last rows.
 *
 * What oneDNN refuses comes back as XE_ERR_UNSUPPORTED; recurrent.c runs
 * its loop instead.
 */
#include <stdlib.h>
#include <string.h>

#include "dnnl_engine.h"
#include "recurrent.h"

/* One node's primitive for one shape and one set of constant weights. */
typedef struct rnn_prim {
    int64_t S, N, I, H;
    const void *consts[4]; /* w r b p when every weight is a constant (packed once), else NULLs */
    int gb;                /* oneDNN's bias gates: G, or 4 for the linear-before-reset GRU */
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t rnn, wl_in, wi_in; /* reorders NULL where layouts agree */
    dnnl_memory_desc_t x_md, h_md, wl_plain, wl_md, wi_plain, wi_md, p_md, b_md, y_md;
    void *wl_packed, *wi_packed; /* constant weights in wl_md, wi_md */
    float *b_packed, *p_packed;  /* constant bias and peepholes in oneDNN's order */
} rnn_prim;

static void rnn_prim_free(void *data)
{
    rnn_prim *c = data;
    if (!c)
        return;
    dnnl_primitive_t prims[3] = {c->rnn, c->wl_in, c->wi_in};
    for (int i = 0; i < 3; i++)
        if (prims[i])
            dnnl_primitive_destroy(prims[i]);
    if (c->pd)
        dnnl_primitive_desc_destroy(c->pd);
    free(c->wl_packed);
    free(c->wi_packed);
    free(c->b_packed);
    free(c->p_packed);
    free(c);
}

/* oneDNN's gate of ONNX gate g. */
static int gate_of(const xe_recurrent *r, int g)
{
    static const int lstm[4] = {0, 3, 1, 2}; /* i o f c -> i f c o */
    return r->gates == 4 ? lstm[g] : g;
}

/* ONNX weights [D, G*H, K] (K: I or H) into ldigo [1, D, K, G, H]. */
static void to_ldigo(const xe_recurrent *r, const float *w, int64_t K, int64_t H, float *to)
{
    int64_t G = r->gates;
    for (int d = 0; d < r->dirs; d++)
        for (int64_t g = 0; g < G; g++)
            for (int64_t o = 0; o < H; o++) {
                const float *src = w + ((d * G + g) * H + o) * K;
                float *dst = to + (d * K * G + gate_of(r, (int)g)) * H + o;
                for (int64_t k = 0; k < K; k++)
                    dst[k * G * H] = src[k];
            }
}

/* ONNX's B [D, 2*G*H] (or none) as oneDNN's bias [1, D, gb, H]. */
static void to_bias(const xe_recurrent *r, const float *b, int64_t H, int gb, float *to)
{
    int64_t G = r->gates;
    memset(to, 0, sizeof *to * (size_t)(r->dirs * gb * H));
    for (int d = 0; b && d < r->dirs; d++) {
        const float *wb = b + d * 2 * G * H, *rb = wb + G * H;
        float *dst = to + d * gb * H;
        for (int64_t g = 0; g < G; g++)
            for (int64_t o = 0; o < H; o++) {
                bool apart = r->gates == 3 && gb == 4 && g == 2; /* lbr GRU: R_h's bias: gate 3 */
                dst[gate_of(r, (int)g) * H + o] = wb[g * H + o] + (apart ? 0 : rb[g * H + o]);
                if (apart)
                    dst[3 * H + o] = rb[g * H + o];
            }
    }
}

/* ONNX's P [D, 3*H] (i o f) as oneDNN's peepholes [1, D, 3, H] (i f o). */
static void to_peep(const xe_recurrent *r, const float *p, int64_t H, float *to)
{
    static const int at[3] = {0, 2, 1};
    for (int d = 0; d < r->dirs; d++)
        for (int g = 0; g < 3; g++)
            memcpy(to + (d * 3 + at[g]) * H, p + (d * 3 + g) * H, sizeof *to * (size_t)H);
}

static void md(dnnl_memory_desc_t *m, int n, const dnnl_dims_t dims, dnnl_format_tag_t tag)
{
    dnnl_memory_desc_init_by_tag(m, n, dims, dnnl_f32, tag);
}

/* The descriptor of c's cell, direction dir, with plain or `any` weights. */
static dnnl_status_t rnn_desc(const rnn_prim *c, const xe_recurrent *r, dnnl_rnn_desc_t *d,
                              dnnl_memory_desc_t *wl, dnnl_memory_desc_t *wi)
{
    dnnl_rnn_direction_t dir = r->dirs == 2 ? dnnl_bidirectional_concat
                               : r->reverse ? dnnl_unidirectional_right2left
                                            : dnnl_unidirectional_left2right;
    /* an LSTM's two states come together (one alone is refused): zeros stand in (rnn_run) */
    bool states = r->h0 >= 0 || r->c0 >= 0;
    const dnnl_memory_desc_t *h = states ? &c->h_md : NULL, *hc = states ? &c->h_md : NULL;
    dnnl_prop_kind_t p = dnnl_forward_inference;
    if (r->gates == 4)
        return dnnl_lstm_forward_desc_init_v2(d, p, dir, &c->x_md, h, hc, wl, wi,
                                              r->p >= 0 ? &c->p_md : NULL, &c->b_md, &c->y_md,
                                              &c->h_md, &c->h_md, 0);
    if (r->gates == 3)
        return (r->lbr ? dnnl_lbr_gru_forward_desc_init : dnnl_gru_forward_desc_init)(
            d, p, dir, &c->x_md, h, wl, wi, &c->b_md, &c->y_md, &c->h_md, 0);
    static const dnnl_alg_kind_t acts[] = {dnnl_eltwise_tanh, dnnl_eltwise_relu,
                                           dnnl_eltwise_logistic};
    return dnnl_vanilla_rnn_forward_desc_init(d, p, acts[r->act], dir, &c->x_md, h, wl, wi,
                                              &c->b_md, &c->y_md, &c->h_md, 0, 0.0f, 0.0f);
}

static xe_code make_rnn(rnn_prim *c, const xe_recurrent *r, const xe_node *n, xe_status *st)
{
    int64_t D = r->dirs, G = r->gates;
    dnnl_dims_t xd = {c->S, c->N, c->I}, yd = {c->S, c->N, D * c->H}, hd = {1, D, c->N, c->H};
    dnnl_dims_t wld = {1, D, c->I, G, c->H}, wid = {1, D, c->H, G, c->H}, bd = {1, D, c->gb, c->H},
                pd = {1, D, 3, c->H};
    md(&c->x_md, 3, xd, dnnl_tnc);
    md(&c->y_md, 3, yd, dnnl_tnc);
    md(&c->h_md, 4, hd, dnnl_ldnc);
    md(&c->wl_plain, 5, wld, dnnl_ldigo);
    md(&c->wi_plain, 5, wid, dnnl_ldigo);
    md(&c->b_md, 4, bd, dnnl_ldgo);
    md(&c->p_md, 4, pd, dnnl_ldgo);
    dnnl_memory_desc_t wl_any, wi_any;
    md(&wl_any, 5, wld, dnnl_format_tag_any);
    md(&wi_any, 5, wid, dnnl_format_tag_any);
    dnnl_rnn_desc_t d;
    if (xe_dnnl_check(rnn_desc(c, r, &d, &wl_any, &wi_any), n, "RNN descriptor", st) != XE_OK ||
        xe_dnnl_primitive(&d, NULL, &c->rnn, &c->pd, n, st) != XE_OK)
        return st->code;
    c->wl_md = *dnnl_primitive_desc_query_md(c->pd, dnnl_query_weights_md, 0);
    c->wi_md = *dnnl_primitive_desc_query_md(c->pd, dnnl_query_weights_md, 1);
    if (xe_dnnl_reorder_make(&c->wl_plain, &c->wl_md, &c->wl_in, n, st) != XE_OK ||
        xe_dnnl_reorder_make(&c->wi_plain, &c->wi_md, &c->wi_in, n, st) != XE_OK)
        return st->code;
    return XE_OK;
}

/* Scratch-free buffers of one run: weights in the primitive's layouts, bias, peepholes. */
typedef struct rnn_weights {
    const void *wl, *wi;
    const float *b, *p;
    void *own[4]; /* what this run allocated */
} rnn_weights;

static void weights_free(rnn_weights *w)
{
    for (int i = 0; i < 4; i++)
        free(w->own[i]);
}

static void *alloc64(size_t bytes)
{
    return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

/* ONNX weights `from` ([D, G*H, K]) in layout `to` (plain `plain`, reorder `re`), into *out. */
static xe_code pack(const rnn_prim *c, const xe_recurrent *r, const float *from, int64_t K,
                    dnnl_primitive_t re, const dnnl_memory_desc_t *plain,
                    const dnnl_memory_desc_t *to, void **out, const xe_node *n, xe_status *st)
{
    size_t plain_bytes = dnnl_memory_desc_get_size(plain);
    float *p = alloc64(plain_bytes);
    void *q = re ? alloc64(dnnl_memory_desc_get_size(to)) : NULL;
    if (!p || (re && !q)) {
        free(p);
        free(q);
        return xe_fail(st, XE_ERR_NOMEM, "node %s (recurrent): out of memory for weights", n->name);
    }
    to_ldigo(r, from, K, c->H, p);
    if (!re) {
        *out = p;
        return XE_OK;
    }
    xe_code rc = xe_dnnl_reorder_run(re, plain, p, to, q, n, st);
    free(p);
    if (rc != XE_OK) {
        free(q);
        return rc;
    }
    *out = q;
    return XE_OK;
}

/* Every weight operand in the primitive's form into *w (its buffers: w->own). */
static xe_code weights_make(const rnn_prim *c, const xe_recurrent *r, const xe_kernel_args *a,
                            rnn_weights *w, xe_status *st)
{
    const xe_node *n = a->node;
    *w = (rnn_weights){0};
    size_t bb = sizeof(float) * (size_t)(r->dirs * c->gb * c->H),
           pb = sizeof(float) * (size_t)(r->dirs * 3 * c->H);
    float *b = malloc(bb), *p = r->p >= 0 ? malloc(pb) : NULL;
    w->own[2] = b;
    w->own[3] = p;
    if (!b || (r->p >= 0 && !p))
        return xe_fail(st, XE_ERR_NOMEM, "node %s (recurrent): out of memory", n->name);
    to_bias(r, r->b >= 0 ? a->in[r->b]->data : NULL, c->H, c->gb, b);
    if (p)
        to_peep(r, a->in[r->p]->data, c->H, p);
    w->b = b;
    w->p = p;
    if (pack(c, r, a->in[1]->data, c->I, c->wl_in, &c->wl_plain, &c->wl_md, &w->own[0], n, st) !=
            XE_OK ||
        pack(c, r, a->in[2]->data, c->H, c->wi_in, &c->wi_plain, &c->wi_md, &w->own[1], n, st) !=
            XE_OK)
        return st->code;
    w->wl = w->own[0];
    w->wi = w->own[1];
    return XE_OK;
}

/* Whether every weight operand of a (w, r, b, p) is a constant of its graph; their data in k. */
static bool consts_of(const xe_kernel_args *a, const xe_recurrent *r, const void **k)
{
    int at[4] = {1, 2, r->b, r->p};
    bool all = a->cache != NULL;
    for (int i = 0; i < 4; i++) {
        k[i] = at[i] >= 0 ? a->in[at[i]]->data : NULL;
        all &= at[i] < 0 || xe_dnnl_input_is_const(a, at[i]);
    }
    if (!all)
        memset(k, 0, sizeof *k * 4);
    return all;
}

static rnn_prim *rnn_prim_make(const xe_kernel_args *a, const xe_recurrent *r, const rnn_prim *key,
                               xe_status *st)
{
    rnn_prim *c = calloc(1, sizeof *c);
    if (!c) {
        xe_fail(st, XE_ERR_NOMEM, "node %s (recurrent): out of memory", a->node->name);
        return NULL;
    }
    *c = *key;
    rnn_weights w;
    if (make_rnn(c, r, a->node, st) != XE_OK) {
        rnn_prim_free(c);
        return NULL;
    }
    if (!c->consts[0])
        return c;
    if (weights_make(c, r, a, &w, st) != XE_OK) {
        weights_free(&w);
        rnn_prim_free(c);
        return NULL;
    }
    c->wl_packed = w.own[0];
    c->wi_packed = w.own[1];
    c->b_packed = w.own[2];
    c->p_packed = w.own[3];
    return c;
}

static bool rnn_prim_fits(const rnn_prim *c, const rnn_prim *key)
{
    return c->S == key->S && c->N == key->N && c->I == key->I && c->H == key->H &&
           !memcmp(c->consts, key->consts, sizeof c->consts);
}

/* The node's primitive for this shape: kept on its shelf (*owned false), or the caller's. */
static rnn_prim *rnn_prim_get(const xe_kernel_args *a, const xe_recurrent *r, const rnn_prim *key,
                              bool *owned, xe_status *st)
{
    *owned = true;
    if (!a->cache)
        return rnn_prim_make(a, r, key, st);
    xe_dnnl_shelf *s = xe_dnnl_shelf_lock(a->cache, rnn_prim_free);
    if (!s) {
        xe_fail(st, XE_ERR_NOMEM, "node %s (recurrent): out of memory", a->node->name);
        return NULL;
    }
    rnn_prim *c = NULL;
    for (int i = 0; i < s->n && !c; i++)
        if (rnn_prim_fits(s->entry[i], key))
            c = s->entry[i];
    if (c)
        *owned = false;
    else if ((c = rnn_prim_make(a, r, key, st)))
        *owned = !xe_dnnl_shelf_add(s, c);
    xe_dnnl_shelf_unlock();
    return c;
}

/* dst_layer [S, N, 2, H] of two directions into Y's rows of the result [S, 2, N, H]. */
static void split_dirs(const rnn_prim *c, const float *y, float *out)
{
    int64_t H = c->H, N = c->N;
    for (int64_t t = 0; t < c->S; t++)
        for (int64_t n = 0; n < N; n++)
            for (int d = 0; d < 2; d++)
                memcpy(out + ((t * 2 + d) * N + n) * H, y + ((t * N + n) * 2 + d) * H,
                       sizeof *out * (size_t)H);
}

static xe_code rnn_run(const rnn_prim *c, const xe_recurrent *r, const xe_kernel_args *a,
                       xe_status *st)
{
    const xe_node *n = a->node;
    rnn_weights w = {.wl = c->wl_packed, .wi = c->wi_packed, .b = c->b_packed, .p = c->p_packed};
    if (!c->wl_packed && weights_make(c, r, a, &w, st) != XE_OK) {
        weights_free(&w);
        return st->code;
    }
    float *out = a->out->data, *y = out;
    int64_t NH = c->N * c->H, D = r->dirs;
    if (D == 2 &&
        !(y = xe_dnnl_scratch(XE_DNNL_SCRATCH_DST, dnnl_memory_desc_get_size(&c->y_md)))) {
        weights_free(&w);
        return xe_fail(st, XE_ERR_NOMEM, "node %s (recurrent): out of memory", n->name);
    }
    xe_dnnl_arg args[10] = {
        {DNNL_ARG_SRC_LAYER, &c->x_md, a->in[0]->data},
        {DNNL_ARG_WEIGHTS_LAYER, &c->wl_md, w.wl},
        {DNNL_ARG_WEIGHTS_ITER, &c->wi_md, w.wi},
        {DNNL_ARG_BIAS, &c->b_md, w.b},
        {DNNL_ARG_DST_LAYER, &c->y_md, y},
        {DNNL_ARG_DST_ITER, &c->h_md, out + c->S * D * NH},
    };
    int k = 6;
    if (r->gates == 4)
        args[k++] = (xe_dnnl_arg){DNNL_ARG_DST_ITER_C, &c->h_md, out + (c->S + 1) * D * NH};
    void *zeros = NULL;
    if (r->gates == 4 && (r->h0 < 0) != (r->c0 < 0) &&
        !(zeros = calloc((size_t)(D * NH), sizeof(float)))) {
        weights_free(&w);
        return xe_fail(st, XE_ERR_NOMEM, "node %s (recurrent): out of memory", n->name);
    }
    if (r->h0 >= 0 || zeros)
        args[k++] =
            (xe_dnnl_arg){DNNL_ARG_SRC_ITER, &c->h_md, r->h0 >= 0 ? a->in[r->h0]->data : zeros};
    if (r->c0 >= 0 || zeros)
        args[k++] =
            (xe_dnnl_arg){DNNL_ARG_SRC_ITER_C, &c->h_md, r->c0 >= 0 ? a->in[r->c0]->data : zeros};
    if (r->p >= 0)
        args[k++] = (xe_dnnl_arg){DNNL_ARG_WEIGHTS_PEEPHOLE, &c->p_md, w.p};
    xe_code rc = xe_dnnl_execute(c->rnn, args, k, n, st);
    weights_free(&w);
    free(zeros);
    if (rc == XE_OK && D == 2)
        split_dirs(c, y, out);
    return rc;
}

xe_code xe_dnnl_recurrent(const xe_kernel_args *a, const struct xe_recurrent *r, xe_status *st)
{
    const xe_shape *x = &a->in[0]->shape;
    rnn_prim key = {.S = x->dims[0],
                    .N = x->dims[1],
                    .I = x->dims[2],
                    .H = a->out->shape.dims[3],
                    .gb = r->gates == 3 && r->lbr ? 4 : r->gates};
    if (key.S == 0 || key.I == 0 || key.S > INT32_MAX || key.N > INT32_MAX || key.I > INT32_MAX ||
        key.H > INT32_MAX)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (recurrent): not for the engine",
                       a->node->name);
    consts_of(a, r, key.consts);
    bool owned;
    rnn_prim *c = rnn_prim_get(a, r, &key, &owned, st);
    if (!c)
        return st->code;
    xe_code rc = rnn_run(c, r, a, st);
    if (owned)
        rnn_prim_free(c);
    return rc;
}
