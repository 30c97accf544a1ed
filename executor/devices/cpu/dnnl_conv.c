/*
 * conv2d (f32) on the CPU engine: one oneDNN convolution primitive per node
 * and shape, made on the node's first run at that shape and kept on the
 * shelf of its kernel cache (xe_kernel_args.cache, dnnl_engine.h), with the
 * reorders around it.
 *
 * The primitive picks its own layouts (format `any`): on AVX-512 that is
 * channels-last (nhwc) or the blocked nChw16c for activations, on AVX2
 * the blocked nChw8c, and OIhw16i16o-like blocks for the weights. The
 * executor's tensors are NCHW, so each run converts the input into that
 * layout and the output back, through per-thread scratch buffers, except
 * where the caller says a side is already in the chain layout
 * (XE_DNNL_SRC_CHAIN, _DST_CHAIN: the convs of a compiled cluster's chain
 * hand each other such values, codegen/plan/layout.c; nhwc or nChw8c,
 * xe_dnnl_chain_layout), which primitives of that layout read in place. Constant weights (a const
 * node of the graph: model weights) are converted once, when the primitive is made, and kept beside
 * it; other weights are converted per run. Groups are oneDNN's grouped weights [g, M/g, C/g, kh,
 * kw]; depthwise is the case C/g = M/g = 1. The algorithm is always direct: the Winograd variant
 * rounds differently and is not what the reference computes.
 *
 * quant_conv2d (int8: xe_dnnl_quant_conv2d) is the same primitive with u8 or s8 activations, s8
 * weights, an f32, u8 or s8 output and the quantization as attributes: per-channel output scales
 * (divided by the output's scale when it is quantized), the zero points of x (oneDNN pads with
 * it: a real zero) and of the output, and the bias divided by the scales, since oneDNN 2.6 adds
 * the bias to the accumulator before scaling (dst = scale * (acc + bias)); oneDNN rounds a
 * quantized output half to even and saturates, as QuantizeLinear. Their values are
 * baked into the primitive, so it is kept only when scale and bias are constants of the graph.
 *
 * What oneDNN refuses (status unimplemented) comes back as
 * XE_ERR_UNSUPPORTED, and conv.c runs its im2col path instead (quant_conv.c its loop).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "dnnl_engine.h"
#include "nn.h"

/* One node's primitive for one geometry, and everything made with it. */
typedef struct conv_prim {
    xe_window p;                   /* the geometry it was made for */
    bool bias;                     /* made with a bias input */
    unsigned post;                 /* XE_DNNL_POST_* applied to the output */
    dnnl_format_tag_t chain;       /* the chained sides' layout (xe_dnnl_chain_layout) */
    const void *w_const;           /* constant weights packed into w_packed; NULL: per run */
    dnnl_data_type_t src_dt, w_dt; /* f32 f32, or u8/s8 s8 (int8: quant_conv2d) */
    const void *q_scale;           /* int8: the scale tensor's data the primitive was made with */
    int32_t x_zero;                /* int8: x's zero point */
    float *q_bias;                 /* int8: bias / scale, the primitive's bias; NULL: none */
    float *q_oscale;               /* int8: scale / y_scale, the output scales */
    dnnl_data_type_t dst_dt;       /* f32, or int8's quantized output u8/s8 */
    float y_scale;                 /* int8: the output's scale (1: f32) and zero point */
    int32_t y_zero;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t conv, src_in, w_in, dst_out; /* reorders NULL where layouts agree */
    dnnl_primitive_t dst_in; /* XE_DNNL_POST_SUM: the residual into dst's layout (NULL: same) */
    dnnl_memory_desc_t src_plain, src_md, w_plain, w_md, b_md, dst_plain, dst_md;
    void *w_packed; /* constant weights in w_md */
} conv_prim;

static void conv_prim_free(void *data)
{
    conv_prim *c = data;
    if (!c)
        return;
    dnnl_primitive_t prims[5] = {c->conv, c->src_in, c->w_in, c->dst_out, c->dst_in};
    for (int i = 0; i < 5; i++)
        if (prims[i])
            dnnl_primitive_destroy(prims[i]);
    if (c->pd)
        dnnl_primitive_desc_destroy(c->pd);
    free(c->w_packed);
    free(c->q_bias);
    free(c->q_oscale);
    free(c);
}

/* Whether c is an int8 convolution (quant_conv2d). */
static bool is_int8(const conv_prim *c)
{
    return c->w_dt == dnnl_s8;
}

/* oneDNN's type for an int8 operand's dtype dt (u8, i8) or an f32 one. */
static dnnl_data_type_t dnnl_type_of(xe_dtype dt)
{
    return dt == XE_U8 ? dnnl_u8 : dt == XE_I8 ? dnnl_s8 : dnnl_f32;
}

/* Whether c was made for geometry p, bias, constant weights w_const and quantization q. */
static bool conv_prim_fits(const conv_prim *c, const xe_window *p, bool bias, const void *w_const,
                           unsigned post, const xe_dnnl_quant *q)
{
    /* the int64 fields, n through groups, have no padding between them */
    return memcmp(&c->p, p, offsetof(xe_window, ceil_mode)) == 0 && c->bias == bias &&
           c->w_const == w_const && c->post == post && is_int8(c) == (q != NULL) &&
           (!(post & XE_DNNL_LAYOUTS) || c->chain == xe_dnnl_chain_layout()) &&
           (!q || (c->src_dt == dnnl_type_of(q->x_dt) && c->q_scale == q->scale &&
                   c->x_zero == q->x_zero && c->dst_dt == dnnl_type_of(q->y_dt) &&
                   c->y_scale == q->y_scale && c->y_zero == q->y_zero));
}

/* The oneDNN activation of post bits, and its alpha; false when there is none. */
static bool post_act(unsigned post, dnnl_alg_kind_t *alg, float *alpha)
{
    static const struct {
        unsigned bit;
        dnnl_alg_kind_t alg;
        float alpha;
    } acts[] = {{XE_DNNL_POST_GELU, dnnl_eltwise_gelu_erf, 0.0f},
                {XE_DNNL_POST_GELU_TANH, dnnl_eltwise_gelu_tanh, 0.0f},
                {XE_DNNL_POST_SIGMOID, dnnl_eltwise_logistic, 0.0f},
                {XE_DNNL_POST_SILU, dnnl_eltwise_swish, 1.0f},
                {XE_DNNL_POST_HARDSWISH, dnnl_eltwise_hardswish, 0.0f}};
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++)
        if (post & acts[i].bit) {
            *alg = acts[i].alg;
            *alpha = acts[i].alpha;
            return true;
        }
    return false;
}

/* int8: the output scales and x's zero point, as attributes of a new *attr. */
static xe_code quant_attr(const conv_prim *c, dnnl_primitive_attr_t *attr, const xe_node *n,
                          xe_status *st)
{
    dnnl_status_t s = dnnl_primitive_attr_create(attr);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_set_output_scales(*attr, c->p.m, 1 << 1, c->q_oscale);
    if (s == dnnl_success && c->x_zero)
        s = dnnl_primitive_attr_set_zero_points(*attr, DNNL_ARG_SRC, 1, 0, &c->x_zero);
    if (s == dnnl_success && c->y_zero)
        s = dnnl_primitive_attr_set_zero_points(*attr, DNNL_ARG_DST, 1, 0, &c->y_zero);
    if (s != dnnl_success && *attr) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    return xe_dnnl_check(s, n, "int8 attributes", st);
}

/* The post-ops of c->post: the residual summed into the output first, then the activation. */
static xe_code post_attr(const conv_prim *c, dnnl_primitive_attr_t *attr, const xe_node *n,
                         xe_status *st)
{
    *attr = NULL;
    if (is_int8(c))
        return quant_attr(c, attr, n, st);       /* int8 convs take no post-ops */
    if (!(c->post & ~(unsigned)XE_DNNL_LAYOUTS)) /* layout bits alone: no post-op */
        return XE_OK;
    dnnl_post_ops_t ops;
    if (xe_dnnl_check(dnnl_post_ops_create(&ops), n, "post-ops", st) != XE_OK)
        return st->code;
    dnnl_status_t s = dnnl_success;
    if (c->post & XE_DNNL_POST_SUM)
        s = dnnl_post_ops_append_sum(ops, 1.0f);
    dnnl_alg_kind_t alg;
    float alpha;
    if (s == dnnl_success && post_act(c->post, &alg, &alpha))
        s = dnnl_post_ops_append_eltwise(ops, 1.0f, alg, alpha, 0.0f);
    if (s == dnnl_success && (s = dnnl_primitive_attr_create(attr)) == dnnl_success &&
        (s = dnnl_primitive_attr_set_post_ops(*attr, ops)) != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    dnnl_post_ops_destroy(ops);
    return xe_dnnl_check(s, n, "post-ops", st);
}

/* The plain layouts of the four operands (NCHW, or c->chain where c->post says so; OIHW or GOIHW;
   x). */
static void plain_mds(conv_prim *c, dnnl_memory_desc_t *any_src, dnnl_memory_desc_t *any_w,
                      dnnl_memory_desc_t *any_dst)
{
    const xe_window *p = &c->p;
    int64_t g = p->groups;
    dnnl_dims_t src = {p->n, p->c, p->h, p->w}, dst = {p->n, p->m, p->oh, p->ow}, b = {p->m};
    dnnl_dims_t w = {p->m, p->c / g, p->kh, p->kw}, gw = {g, p->m / g, p->c / g, p->kh, p->kw};
    dnnl_memory_desc_init_by_tag(&c->src_plain, 4, src, c->src_dt,
                                 c->post & XE_DNNL_SRC_CHAIN ? c->chain : dnnl_nchw);
    dnnl_memory_desc_init_by_tag(&c->dst_plain, 4, dst, c->dst_dt,
                                 c->post & XE_DNNL_DST_CHAIN ? c->chain : dnnl_nchw);
    dnnl_memory_desc_init_by_tag(&c->b_md, 1, b, dnnl_f32, dnnl_a);
    if (g == 1)
        dnnl_memory_desc_init_by_tag(&c->w_plain, 4, w, c->w_dt, dnnl_oihw);
    else
        dnnl_memory_desc_init_by_tag(&c->w_plain, 5, gw, c->w_dt, dnnl_goihw);
    dnnl_memory_desc_init_by_tag(any_src, 4, src, c->src_dt, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(any_dst, 4, dst, c->dst_dt, dnnl_format_tag_any);
    if (g == 1)
        dnnl_memory_desc_init_by_tag(any_w, 4, w, c->w_dt, dnnl_format_tag_any);
    else
        dnnl_memory_desc_init_by_tag(any_w, 5, gw, c->w_dt, dnnl_format_tag_any);
}

/* The convolution primitive and the layouts it chose. */
static xe_code make_conv(conv_prim *c, const xe_node *n, xe_status *st)
{
    const xe_window *p = &c->p;
    dnnl_memory_desc_t src, w, dst;
    plain_mds(c, &src, &w, &dst);
    dnnl_dims_t strides = {p->sh, p->sw}, dil = {p->dh - 1, p->dw - 1};
    dnnl_dims_t pad_l = {p->pt, p->pl}, pad_r = {p->pb, p->pr};
    dnnl_convolution_desc_t d;
    dnnl_primitive_attr_t attr;
    if (xe_dnnl_check(dnnl_dilated_convolution_forward_desc_init(
                          &d, dnnl_forward_inference, dnnl_convolution_direct, &src, &w,
                          c->bias ? &c->b_md : NULL, &dst, strides, dil, pad_l, pad_r),
                      n, "convolution descriptor", st) != XE_OK ||
        post_attr(c, &attr, n, st) != XE_OK)
        return st->code;
    xe_code made = xe_dnnl_primitive(&d, attr, &c->conv, &c->pd, n, st);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    if (made != XE_OK)
        return st->code;
    c->src_md = *dnnl_primitive_desc_query_md(c->pd, dnnl_query_src_md, 0);
    c->w_md = *dnnl_primitive_desc_query_md(c->pd, dnnl_query_weights_md, 0);
    c->dst_md = *dnnl_primitive_desc_query_md(c->pd, dnnl_query_dst_md, 0);
    if (xe_dnnl_reorder_make(&c->src_plain, &c->src_md, &c->src_in, n, st) != XE_OK ||
        xe_dnnl_reorder_make(&c->w_plain, &c->w_md, &c->w_in, n, st) != XE_OK ||
        xe_dnnl_reorder_make(&c->dst_md, &c->dst_plain, &c->dst_out, n, st) != XE_OK ||
        ((c->post & XE_DNNL_POST_SUM) &&
         xe_dnnl_reorder_make(&c->dst_plain, &c->dst_md, &c->dst_in, n, st) != XE_OK))
        return st->code;
    return XE_OK;
}

/* Constant weights w into the primitive's layout, once. */
static xe_code pack_weights(conv_prim *c, const void *w, const xe_node *n, xe_status *st)
{
    if (!c->w_in)
        return XE_OK; /* the plain layout is the primitive's: used in place */
    size_t bytes = dnnl_memory_desc_get_size(&c->w_md);
    if (!(c->w_packed = aligned_alloc(64, (bytes + 63) / 64 * 64)))
        return xe_fail(st, XE_ERR_NOMEM, "node %s (conv2d): out of memory for packed weights",
                       n->name);
    return xe_dnnl_reorder_run(c->w_in, &c->w_plain, w, &c->w_md, c->w_packed, n, st);
}

/* int8: q's types and zero point into c, and the primitive's bias, bias / scale. */
static xe_code quant_fields(conv_prim *c, const xe_dnnl_quant *q, const xe_node *n, xe_status *st)
{
    c->src_dt = dnnl_type_of(q->x_dt);
    c->w_dt = dnnl_s8;
    c->dst_dt = dnnl_type_of(q->y_dt);
    c->q_scale = q->scale;
    c->x_zero = q->x_zero;
    c->y_scale = q->y_scale;
    c->y_zero = q->y_zero;
    size_t bytes = (size_t)c->p.m * sizeof(float);
    if (!(c->q_oscale = malloc(bytes)) || (q->bias && !(c->q_bias = malloc(bytes))))
        return xe_fail(st, XE_ERR_NOMEM, "node %s (quant_conv2d): out of memory", n->name);
    for (int64_t m = 0; m < c->p.m; m++) {
        c->q_oscale[m] = q->scale[m] / q->y_scale;
        if (q->bias)
            c->q_bias[m] = q->bias[m] / q->scale[m];
    }
    return XE_OK;
}

/* A new primitive for geometry p (and packed constant weights w_const, when not NULL). */
static conv_prim *conv_prim_make(const xe_kernel_args *a, const xe_window *p, bool bias,
                                 const void *w_const, unsigned post, const xe_dnnl_quant *q,
                                 xe_status *st)
{
    conv_prim *c = calloc(1, sizeof *c);
    if (!c) {
        xe_fail(st, XE_ERR_NOMEM, "node %s (conv2d): out of memory", a->node->name);
        return NULL;
    }
    c->p = *p;
    c->bias = bias;
    c->w_const = w_const;
    c->post = post;
    c->chain = xe_dnnl_chain_layout();
    c->src_dt = c->w_dt = c->dst_dt = dnnl_f32;
    if ((q && quant_fields(c, q, a->node, st) != XE_OK) || make_conv(c, a->node, st) != XE_OK ||
        (w_const && pack_weights(c, w_const, a->node, st) != XE_OK)) {
        conv_prim_free(c);
        return NULL;
    }
    return c;
}

/*
 * The node's primitive for this geometry: one kept on its shelf, or a new
 * one, kept when the shelf has room (*owned: false) or the caller's to free.
 */
static conv_prim *conv_prim_get(const xe_kernel_args *a, const xe_window *p, unsigned post,
                                const xe_dnnl_quant *q, bool *owned, xe_status *st)
{
    bool bias = q ? q->bias != NULL : a->n_in > 2;
    const void *w_const = a->cache && xe_dnnl_input_is_const(a, 1) ? a->in[1]->data : NULL;
    bool keep =
        a->cache &&
        (!q || (xe_dnnl_input_is_const(a, 2) && (a->n_in < 4 || xe_dnnl_input_is_const(a, 3))));
    *owned = true;
    if (!keep)
        return conv_prim_make(a, p, bias, NULL, post, q, st);
    xe_dnnl_shelf *s = xe_dnnl_shelf_lock(a->cache, conv_prim_free);
    if (!s) {
        xe_fail(st, XE_ERR_NOMEM, "node %s (conv2d): out of memory", a->node->name);
        return NULL;
    }
    conv_prim *c = NULL;
    for (int i = 0; i < s->n && !c; i++)
        if (conv_prim_fits(s->entry[i], p, bias, w_const, post, q))
            c = s->entry[i];
    if (c)
        *owned = false;
    else if ((c = conv_prim_make(a, p, bias, w_const, post, q, st)))
        *owned = !xe_dnnl_shelf_add(s, c);
    xe_dnnl_shelf_unlock();
    return c;
}

/* The weights as the primitive reads them: packed once, used in place, or converted now. */
static const void *weights_for_run(const conv_prim *c, const void *w, const xe_node *n,
                                   xe_status *st)
{
    if (c->w_packed)
        return c->w_packed;
    if (!c->w_in)
        return w;
    void *buf = xe_dnnl_scratch(XE_DNNL_SCRATCH_WEIGHTS, dnnl_memory_desc_get_size(&c->w_md));
    if (!buf) {
        xe_fail(st, XE_ERR_NOMEM, "node %s (conv2d): out of memory", n->name);
        return NULL;
    }
    return xe_dnnl_reorder_run(c->w_in, &c->w_plain, w, &c->w_md, buf, n, st) == XE_OK ? buf : NULL;
}

/* The output buffer in dst's layout, holding the residual when the primitive sums it in: *dst. */
static xe_code dst_for_run(const conv_prim *c, const xe_kernel_args *a, const xe_tensor *residual,
                           void **dst, xe_status *st)
{
    const xe_node *n = a->node;
    *dst = a->out->data;
    if (c->dst_out &&
        !(*dst = xe_dnnl_scratch(XE_DNNL_SCRATCH_DST, dnnl_memory_desc_get_size(&c->dst_md))))
        return xe_fail(st, XE_ERR_NOMEM, "node %s (conv2d): out of memory", n->name);
    if (!(c->post & XE_DNNL_POST_SUM))
        return XE_OK;
    if (c->dst_in)
        return xe_dnnl_reorder_run(c->dst_in, &c->dst_plain, residual->data, &c->dst_md, *dst, n,
                                   st);
    if (*dst != residual->data)
        memcpy(*dst, residual->data, residual->nbytes);
    return XE_OK;
}

/* One run of primitive c: input in, convolution (residual summed in, ReLU), output out. */
static xe_code conv_run(const conv_prim *c, const xe_kernel_args *a, const xe_tensor *residual,
                        xe_status *st)
{
    const xe_node *n = a->node;
    const void *src = a->in[0]->data, *w = weights_for_run(c, a->in[1]->data, n, st);
    void *dst = a->out->data;
    if (!w)
        return st->code;
    if (c->src_in) {
        void *buf = xe_dnnl_scratch(XE_DNNL_SCRATCH_SRC, dnnl_memory_desc_get_size(&c->src_md));
        if (!buf)
            return xe_fail(st, XE_ERR_NOMEM, "node %s (conv2d): out of memory", n->name);
        if (xe_dnnl_reorder_run(c->src_in, &c->src_plain, src, &c->src_md, buf, n, st) != XE_OK)
            return st->code;
        src = buf;
    }
    if (dst_for_run(c, a, residual, &dst, st) != XE_OK)
        return st->code;
    xe_dnnl_arg args[4] = {{DNNL_ARG_SRC, &c->src_md, src},
                           {DNNL_ARG_WEIGHTS, &c->w_md, w},
                           {DNNL_ARG_DST, &c->dst_md, dst},
                           {DNNL_ARG_BIAS, &c->b_md,
                            c->q_bias ? c->q_bias
                            : c->bias ? a->in[2]->data
                                      : NULL}};
    if (xe_dnnl_execute(c->conv, args, c->bias ? 4 : 3, n, st) != XE_OK)
        return st->code;
    if (c->dst_out)
        return xe_dnnl_reorder_run(c->dst_out, &c->dst_md, dst, &c->dst_plain, a->out->data, n, st);
    return XE_OK;
}

/* One run of the node's primitive for geometry p (made or found on its shelf). */
static xe_code conv_on(const xe_kernel_args *a, const xe_window *p, const xe_tensor *residual,
                       unsigned post, const xe_dnnl_quant *q, xe_status *st)
{
    bool owned;
    conv_prim *c = conv_prim_get(a, p, post, q, &owned, st);
    if (!c)
        return st->code;
    xe_code r = conv_run(c, a, residual, st);
    if (owned)
        conv_prim_free(c);
    return r;
}

xe_code xe_dnnl_conv2d(const xe_kernel_args *a, xe_status *st)
{
    return xe_dnnl_conv2d_post(a, NULL, 0, st);
}

xe_code xe_dnnl_conv2d_post(const xe_kernel_args *a, const xe_tensor *residual, unsigned post,
                            xe_status *st)
{
    xe_window p;
    if (((post & XE_DNNL_POST_SUM) != 0) != (residual != NULL) ||
        (residual && (residual->dtype != XE_F32 || residual->nbytes != a->out->nbytes)))
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (conv2d): bad residual", a->node->name);
    if (xe_window_read(a->node, &a->in[0]->shape, &a->in[1]->shape, &p, st) != XE_OK)
        return xe_status_prefix(st, "node %s (conv2d): ", a->node->name);
    if (a->out->dtype != XE_F32 || xe_tensor_numel(a->out) == 0 || p.c == 0)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (conv2d): not for the engine",
                       a->node->name);
    /* blocks of 8 channels, none padded: the plan's XG_CHAIN_CHANNELS (codegen/plan/plan.h) */
    if (xe_dnnl_chain_layout() == dnnl_nChw8c && (((post & XE_DNNL_SRC_CHAIN) && p.c % 8 != 0) ||
                                                  ((post & XE_DNNL_DST_CHAIN) && p.m % 8 != 0)))
        return xe_fail(st, XE_ERR_UNSUPPORTED,
                       "node %s (conv2d): a chained side of %lld or %lld channels, not a multiple "
                       "of 8 (nChw8c)",
                       a->node->name, (long long)p.c, (long long)p.m);
    return conv_on(a, &p, residual, post, NULL, st);
}

xe_code xe_dnnl_quant_conv2d(const xe_kernel_args *a, const xe_window *p, const xe_dnnl_quant *q,
                             xe_status *st)
{
    if (xe_tensor_numel(a->out) == 0 || p->c == 0 || !xe_dnnl_int8_exact())
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (quant_conv2d): not for the engine",
                       a->node->name);
    return conv_on(a, p, NULL, 0, q, st);
}
