/*
 * onnxruntime's quantize_static (QDQ format) writes every quantized Conv as
 *
 *   q  = QuantizeLinear(x, xs, xz)                 u8 or i8, per tensor
 *   xd = DequantizeLinear(q, xs, xz)
 *   wd = DequantizeLinear(W, ws, 0, axis=0)        W an i8 constant, ws per tensor or per channel
 *   bd = DequantizeLinear(B, xs * ws, 0, axis=0)   B an i32 constant (or an f32 bias)
 *   y  = Conv(xd, wd, bd)
 *
 * and Conv's builder (conv.c) asks here whether its operands have that form. When they do, the
 * Conv becomes one quant_conv2d(q, W, xs * ws, bias) node (ir/infer/quant_conv.c): the int8
 * convolution of q and W, exact, rescaled per output channel, instead of two dequantizations
 * and an f32 convolution. The numbers follow the QDQ reference, DequantizeLinear then Conv in
 * real arithmetic: the int8 sum is exact where the f32 convolution of the dequantized values
 * rounds, so the two differ by the f32 convolution's own rounding. (onnxruntime's own session
 * fuses the same pairs and also requantizes the output in its kernel; what follows y here is the
 * model's next QuantizeLinear, unchanged.)
 *
 * When the Conv's only reader is a QuantizeLinear with a scale and zero point per tensor (the
 * next layer's input, as quantize_static writes it), quant_conv2d quantizes its output itself
 * (y_scale, y_zero_point: one write of a byte per element instead of an f32 output and the
 * QuantizeLinear's composition), rounding y / y_scale half to even and saturating as
 * QuantizeLinear does; on oneDNN the scales are folded first (scale / y_scale), which can move a
 * value lying within an ulp of a rounding tie by one step.
 *
 * A MatMul between QDQ pairs (MatMul(DQ(q), DQ(W)), W an i8 constant [K, N] per tensor or per
 * column, axis 1), and a Gemm's product the same way (transB: W [N, K] per row, axis 0, taken
 * transposed once at import), is the exact int8 product, centred and rescaled:
 *
 *   y = f32(matmul(q, W) - xz * colsum(W)) * (xs * ws)
 *
 * the product on the engine's int8 matmul (devices/cpu/dnnl_matmul.c, or its exact loop), the
 * rest elementwise steps that clusters fuse.
 *
 * All of this only where the CPU's int8 kernels are the engine's (xe_cpu_int8_engine: VNNI).
 * Without VNNI oneDNN's u8 x s8 pairs saturate in int16 and the exact loops are slower than the
 * f32 engine, so the QDQ pairs keep their f32 form there, as before.
 *
 * An Add between QDQ pairs, QuantizeLinear(Add(DequantizeLinear(a), DequantizeLinear(b))) with
 * every scale and zero point per tensor and a and b of one known shape (a QDQ ResNet's residual
 * add), is one quant_add(a, b) (ir/infer/quant_add.c): the same f32 operations in one pass over
 * bytes, bit for bit the composition's, where the composition ran its casts per op and its
 * arithmetic over f32 tensors (the bench's QDQ ResNet at batch 8, op by op: 12.8 -> 7.1 ms).
 * Also only with VNNI: without it the convolutions around the add are f32, the pairs f32 loops
 * that a cluster fuses with them (ops/quant.c: a DequantizeLinear of a QuantizeLinear reads its
 * f32 value), and a quant_add's narrow values would cut the network into a cluster per conv.
 *
 * The DequantizeLinear nodes stay built for any other reader; when the Conv was their only one,
 * the loader drops them as dead. Scales that are zero, not finite or subnormal keep the f32 form.
 */
#include <math.h>
#include <string.h>

#include "onnx_impl.h"
#include "xlac/device.h"

/* Integer attribute `name` of node np (a node other than b's), or dflt. */
static int64_t node_int(const Onnx__NodeProto *np, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = ox_node_attr(np, name);
    return a ? a->i : dflt;
}

/* Input k of np, "" when absent. */
static const char *input(const Onnx__NodeProto *np, size_t k)
{
    return k < np->n_input && np->input[k] ? np->input[k] : "";
}

/* The DequantizeLinear (opset 10 and later, no block_size) that writes input k of b's node (a Conv,
   MatMul, Gemm or Add); else NULL. */
static const Onnx__NodeProto *dq_of(ox_b *b, size_t k)
{
    const Onnx__NodeProto *d = ox_writer(b->c->model->graph, input(b->np, k));
    return ox_op_is(d, "DequantizeLinear") && d->n_input >= 2 && d->n_output == 1 &&
                   node_int(d, "block_size", 0) == 0
               ? d
               : NULL;
}

/* The one value of a constant of n elements, as an integer (*v); false otherwise. */
static bool const_scalar_int(ox_b *b, const char *name, xe_dtype dt, int64_t *v)
{
    *v = 0;
    if (!name[0])
        return true; /* absent: zero */
    int k = ox_const_node(b, name, dt);
    const xe_tensor *t = k >= 0 ? b->c->g->nodes[k]->value : NULL;
    if (!t || xe_tensor_numel(t) != 1)
        return false;
    *v = dt == XE_U8 ? *(const uint8_t *)t->data : *(const int8_t *)t->data;
    return true;
}

/* Whether the constant `name` (dtype dt) is absent or all zeros. */
static bool const_zeros(ox_b *b, const char *name, xe_dtype dt)
{
    if (!name[0])
        return true;
    int k = ox_const_node(b, name, dt);
    const xe_tensor *t = k >= 0 ? b->c->g->nodes[k]->value : NULL;
    for (size_t i = 0; t && i < t->nbytes; i++)
        if (((const uint8_t *)t->data)[i])
            return false;
    return t != NULL;
}

/* The f32 scale constant of DequantizeLinear (or QuantizeLinear) d: one element, or m along
   `axis` (*per_channel); NULL for anything else. */
static const float *scale_of(ox_b *b, const Onnx__NodeProto *d, int64_t m, int64_t axis,
                             bool *per_channel)
{
    int k = ox_const_node(b, input(d, 1), XE_F32);
    const xe_tensor *t = k >= 0 ? b->c->g->nodes[k]->value : NULL;
    int64_t n = t ? xe_tensor_numel(t) : 0;
    *per_channel = n > 1;
    if (t && (n == 1 || (n == m && t->shape.rank == 1 && node_int(d, "axis", 1) == axis)))
        return t->data;
    return NULL;
}

/* x's scale times w's (one, or m when per_channel) as a new f32 const [m]; -1, with nothing
   built, when a product is zero, not finite or subnormal (the f32 form stays then). */
static int combined_scales(ox_b *b, float xs, const float *ws, bool per_channel, int64_t m)
{
    xe_tensor *scale = ox_new_tensor(b, XE_F32, &(xe_shape){.rank = 1, .dims = {m}});
    if (!scale)
        return -1;
    float *s = scale->data;
    for (int64_t i = 0; i < m; i++)
        if (!isnormal(s[i] = xs * ws[per_channel ? i : 0])) {
            xe_tensor_release(scale);
            return -1;
        }
    return ox_const(b, scale);
}

/* f32(t[i]) * s[i] of the i32 constant t [m] (s[0] for every i unless per_channel) as a new f32
   const [m], DequantizeLinear's arithmetic; -1 when out of memory. */
static int dequantized_i32(ox_b *b, const xe_tensor *t, const float *s, bool per_channel, int64_t m)
{
    xe_tensor *v = ox_new_tensor(b, XE_F32, &(xe_shape){.rank = 1, .dims = {m}});
    if (!v)
        return -1;
    for (int64_t i = 0; i < m; i++)
        ((float *)v->data)[i] = (float)((const int32_t *)t->data)[i] * s[per_channel ? i : 0];
    return ox_const(b, v);
}

/* The bias as f32 [m]: Conv input 2 a constant f32, or DequantizeLinear of an i32 constant with
   zero points zero ((float)B * scale, DequantizeLinear's arithmetic). -2: no bias; -1: neither. */
static int bias_of(ox_b *b, int64_t m)
{
    const char *name = input(b->np, 2);
    if (!name[0])
        return -2;
    int k = ox_const_node(b, name, XE_F32);
    if (k >= 0)
        return xe_tensor_numel(b->c->g->nodes[k]->value) == m ? k : -1;
    const Onnx__NodeProto *d = dq_of(b, 2);
    int q = d ? ox_const_node(b, input(d, 0), XE_I32) : -1;
    bool pc;
    const float *s = q >= 0 ? scale_of(b, d, m, 0, &pc) : NULL;
    const xe_tensor *t = q >= 0 ? b->c->g->nodes[q]->value : NULL;
    if (!s || xe_tensor_numel(t) != m || !const_zeros(b, input(d, 2), XE_I32))
        return -1;
    return dequantized_i32(b, t, s, pc, m);
}

/* x's side: q (u8 or i8, not a constant), its scale and zero point, per tensor. */
static bool activation_any_rank(ox_b *b, const Onnx__NodeProto *d, int *q, float *xs, int64_t *xz)
{
    bool found = false;
    *q = ox_value_get(b->c, input(d, 0), &found);
    if (*q < 0 || b->c->g->nodes[*q]->op == XE_OP_CONST)
        return false;
    const xe_type *t = ox_type(b, *q);
    bool pc;
    const float *s = t->dtype == XE_U8 || t->dtype == XE_I8 ? scale_of(b, d, 1, 0, &pc) : NULL;
    if (!s || !const_scalar_int(b, input(d, 2), t->dtype, xz))
        return false;
    *xs = *s;
    return true;
}

/* The same for a Conv's input: [N, C, H, W]. */
static bool activation(ox_b *b, const Onnx__NodeProto *d, int *q, float *xs, int64_t *xz)
{
    return activation_any_rank(b, d, q, xs, xz) && ox_type(b, *q)->shape.rank == 4;
}

/* W's side: the i8 constant [M, C/g, kh, kw] with zero points zero, and its scales (*ws). */
static int weights(ox_b *b, const Onnx__NodeProto *d, const float **ws, bool *pc)
{
    int w = ox_const_node(b, input(d, 0), XE_I8);
    if (w < 0 || ox_type(b, w)->shape.rank != 4 || !const_zeros(b, input(d, 2), XE_I8))
        return -1;
    *ws = scale_of(b, d, ox_type(b, w)->shape.dims[0], 0, pc);
    return *ws ? w : -1;
}

/* The integer option `name` of QuantizeLinear q is absent or equals want. */
static bool option_is(const Onnx__NodeProto *q, const char *name, int64_t want)
{
    return node_int(q, name, want) == want;
}

/* Whether Conv's output goes only to a QuantizeLinear per tensor to u8 or i8 (into m). */
static bool output_quantize(ox_b *b, ox_qdq_conv *m)
{
    const char *y = b->np->n_output ? b->np->output[0] : "";
    const Onnx__NodeProto *q = y[0] ? ox_sole_reader(b->c->model->graph, y) : NULL;
    if (!ox_op_is(q, "QuantizeLinear") || q->n_output != 1 || !q->output[0][0] ||
        strcmp(input(q, 0), y) || !option_is(q, "block_size", 0) || !option_is(q, "saturate", 1) ||
        !option_is(q, "precision", 0))
        return false;
    bool pc;
    const float *s = scale_of(b, q, 1, 0, &pc);
    const char *zp = input(q, 2);
    int64_t od = node_int(q, "output_dtype", 0); /* ONNX: 2 UINT8, 3 INT8 */
    xe_dtype dt = od == 3 ? XE_I8 : XE_U8;
    if (zp[0])
        dt = ox_const_node(b, zp, XE_U8) >= 0 ? XE_U8 : XE_I8;
    if (!s || !isnormal(*s) || *s < 0 || (od && od != (dt == XE_U8 ? 2 : 3)) ||
        !const_scalar_int(b, zp, dt, &m->y_zero))
        return false;
    m->y_dt = dt;
    m->y_scale = *s;
    m->quantize = q;
    return true;
}

bool ox_qdq_conv_match(ox_b *b, ox_qdq_conv *m)
{
    *m = (ox_qdq_conv){0};
    if (b->failed || !xe_cpu_int8_engine()) /* first: the other tests scan the graph */
        return false;
    const Onnx__NodeProto *dx = dq_of(b, 0), *dw = dq_of(b, 1);
    if (!dx || !dw || !ox_top_level(b->c, b->np))
        return false;
    float xs;
    const float *ws;
    bool pc;
    int w = weights(b, dw, &ws, &pc);
    if (w < 0 || !activation(b, dx, &m->in[0], &xs, &m->x_zero))
        return false;
    int64_t mo = ox_type(b, w)->shape.dims[0];
    int s = combined_scales(b, xs, ws, pc, mo), bias = s < 0 ? -1 : bias_of(b, mo);
    if (bias == -1)
        return false;
    m->in[1] = w;
    m->in[2] = s;
    m->in[3] = bias;
    m->n_in = bias >= 0 ? 4 : 3;
    m->y_dt = XE_F32;
    output_quantize(b, m);
    return true;
}

/* The f32 constant `name`: one element, or m (rank 1; *per_channel); NULL for anything else. */
static const float *scales_named(ox_b *b, const char *name, int64_t m, bool *per_channel)
{
    int k = ox_const_node(b, name, XE_F32);
    const xe_tensor *t = k >= 0 ? b->c->g->nodes[k]->value : NULL;
    int64_t n = t ? xe_tensor_numel(t) : 0;
    *per_channel = n > 1;
    return t && t->shape.rank <= 1 && (n == 1 || n == m) ? t->data : NULL;
}

/* A scale that quant_conv2d takes as an attribute: one positive normal f32 constant. */
static bool positive_scale(ox_b *b, const char *name, float *v)
{
    bool pc;
    const float *s = scales_named(b, name, 1, &pc);
    *v = s ? *s : 0.0f;
    return s && isnormal(*v) && *v > 0;
}

/* QLinearConv's bias B (input 8): absent (-2), or an i32 constant [m] as f32 B * scale (the
   combined scales' const node s), DequantizeLinear's arithmetic; -1 for anything else. */
static int qlinear_bias(ox_b *b, int s, int64_t m)
{
    const char *name = input(b->np, 8);
    if (!name[0])
        return -2;
    int q = ox_const_node(b, name, XE_I32);
    const xe_tensor *t = q >= 0 ? b->c->g->nodes[q]->value : NULL;
    if (!t || xe_tensor_numel(t) != m)
        return -1;
    return dequantized_i32(b, t, b->c->g->nodes[s]->value->data, true, m);
}

bool ox_qlinear_conv_match(ox_b *b, ox_qdq_conv *m)
{
    *m = (ox_qdq_conv){.y_dt = XE_F32};
    if (b->failed || !xe_cpu_int8_engine() || !ox_top_level(b->c, b->np))
        return false;
    int x = ox_in(b, 0), w = ox_const_node(b, input(b->np, 3), XE_I8), yz = ox_in(b, 7);
    const xe_type *xt = x >= 0 ? ox_type(b, x) : NULL;
    if (!xt || xt->shape.rank != 4 || (xt->dtype != XE_U8 && xt->dtype != XE_I8) || w < 0 ||
        ox_type(b, w)->shape.rank != 4 || !const_zeros(b, input(b->np, 5), XE_I8) || yz < 0)
        return false;
    int64_t mo = ox_type(b, w)->shape.dims[0];
    float xs;
    bool pc;
    const float *ws = scales_named(b, input(b->np, 4), mo, &pc);
    xe_dtype y_dt = ox_type(b, yz)->dtype;
    if (!ws || !positive_scale(b, input(b->np, 1), &xs) ||
        !const_scalar_int(b, input(b->np, 2), xt->dtype, &m->x_zero) ||
        !positive_scale(b, input(b->np, 6), &m->y_scale) || (y_dt != XE_U8 && y_dt != XE_I8) ||
        !const_scalar_int(b, input(b->np, 7), y_dt, &m->y_zero))
        return false;
    int s = combined_scales(b, xs, ws, pc, mo), bias = s < 0 ? -1 : qlinear_bias(b, s, mo);
    if (bias == -1)
        return false;
    *m = (ox_qdq_conv){.in = {x, w, s, bias},
                       .n_in = bias >= 0 ? 4 : 3,
                       .x_zero = m->x_zero,
                       .y_scale = m->y_scale,
                       .y_zero = m->y_zero,
                       .y_dt = y_dt};
    return true;
}

/* W [N, K] (i8 const node w) as a new i8 const [K, N]. */
static int transposed_weights(ox_b *b, int w)
{
    const xe_tensor *t = b->c->g->nodes[w]->value;
    int64_t n = t->shape.dims[0], k = t->shape.dims[1];
    xe_tensor *v = ox_new_tensor(b, XE_I8, &(xe_shape){.rank = 2, .dims = {k, n}});
    if (!v)
        return -1;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < k; j++)
            ((int8_t *)v->data)[j * n + i] = ((const int8_t *)t->data)[i * k + j];
    return ox_const(b, v);
}

/* The weights of a product between QDQ pairs as an i8 constant [K, N] with zero points zero:
   stored so (the scales one or one per column, axis 1), or stored [N, K] when trans (one per row,
   axis 0) and transposed here; the scales in *ws. */
static int product_weights(ox_b *b, const Onnx__NodeProto *d, bool trans, const float **ws,
                           bool *pc)
{
    int w = ox_const_node(b, input(d, 0), XE_I8);
    if (w < 0 || ox_type(b, w)->shape.rank != 2 || !const_zeros(b, input(d, 2), XE_I8))
        return -1;
    *ws = scale_of(b, d, ox_type(b, w)->shape.dims[trans ? 0 : 1], trans ? 0 : 1, pc);
    if (!*ws)
        return -1;
    return trans ? transposed_weights(b, w) : w;
}

int ox_qdq_product(ox_b *b, bool trans_b)
{
    if (b->failed || !xe_cpu_int8_engine()) /* first: the other tests scan the graph */
        return -1;
    const Onnx__NodeProto *dx = dq_of(b, 0), *dw = dq_of(b, 1);
    if (!dx || !dw || !ox_top_level(b->c, b->np))
        return -1;
    int q, w;
    float xs;
    int64_t xz;
    const float *ws;
    bool pc;
    if (!activation_any_rank(b, dx, &q, &xs, &xz) ||
        (w = product_weights(b, dw, trans_b, &ws, &pc)) < 0)
        return -1;
    const xe_shape *qs = &ox_type(b, q)->shape, *wsh = &ox_type(b, w)->shape;
    int64_t n = wsh->dims[1];
    if (qs->rank < 2 || (qs->dims[qs->rank - 1] >= 0 && qs->dims[qs->rank - 1] != wsh->dims[0]))
        return -1;
    int scale = combined_scales(b, xs, ws, pc, n);
    if (scale < 0)
        return -1;
    int in[2] = {q, w};
    int acc = ox_op(b, XE_OP_MATMUL, in, 2, NULL, 0); /* i32, exact */
    if (xz != 0) {                                    /* (q - xz) W = q W - xz colsum(W) */
        int corr = ox_column_sums(b, w);              /* a new const: scaled by xz in place */
        if (corr < 0)
            return -1;
        int32_t *c = b->c->g->nodes[corr]->value->data;
        for (int64_t i = 0; i < n; i++)
            c[i] = (int32_t)((uint32_t)c[i] * (uint32_t)(int32_t)xz);
        int sub[2] = {acc, corr};
        acc = ox_op(b, XE_OP_SUB, sub, 2, NULL, 0);
    }
    int mul[2] = {ox_cast(b, acc, XE_F32), scale};
    return ox_op(b, XE_OP_MUL, mul, 2, NULL, 0);
}

/* Whether every dim of q's value is known and equals r's. */
static bool same_known_shape(ox_b *b, int q, int r)
{
    const xe_shape *a = &ox_type(b, q)->shape, *c = &ox_type(b, r)->shape;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] < 0)
            return false;
    return xe_shape_equal(a, c);
}

bool ox_qdq_add(ox_b *b)
{
    if (b->failed || b->n_in != 2 || !ox_top_level(b->c, b->np) || !xe_cpu_int8_engine())
        return false;
    const Onnx__NodeProto *da = dq_of(b, 0), *db = dq_of(b, 1);
    int qa, qb;
    float as, bs;
    int64_t az, bz;
    ox_qdq_conv m = {0};
    if (!da || !db || !activation_any_rank(b, da, &qa, &as, &az) ||
        !activation_any_rank(b, db, &qb, &bs, &bz) || !isnormal(as) || as < 0 || !isnormal(bs) ||
        bs < 0 || !same_known_shape(b, qa, qb) || !output_quantize(b, &m))
        return false;
    int in[2] = {qa, qb};
    ox_at at[7] = {{.name = "a_scale", .kind = XE_ATTR_FLOAT, .f = as},
                   OX_I("a_zero_point", az),
                   {.name = "b_scale", .kind = XE_ATTR_FLOAT, .f = bs},
                   OX_I("b_zero_point", bz),
                   {.name = "y_scale", .kind = XE_ATTR_FLOAT, .f = m.y_scale},
                   OX_I("y_zero_point", m.y_zero),
                   OX_DT("y_dtype", m.y_dt)};
    int y = ox_op(b, XE_OP_QUANT_ADD, in, 2, at, 7);
    if (ox_out_of(b, m.quantize, 0, y) != XE_OK)
        return true; /* b failed */
    if (!ox_absorb(b->c, m.quantize)) {
        ox_invalid(b, "%s", "out of memory");
        return true;
    }
    ox_out(b, 0, y); /* read by nobody now: any value will do */
    return true;
}

/* Input k of b's QLinearAdd (A, As, Az, B, Bs, Bz, Cs, Cz): a per-tensor constant scale (*s) and
   zero point (*z, of input v's dtype; absent: 0). */
static bool ql_operand(ox_b *b, int v, int k, float *s, int64_t *z)
{
    xe_dtype dt = ox_type(b, ox_in(b, v))->dtype;
    return positive_scale(b, input(b->np, k), s) && const_scalar_int(b, input(b->np, k + 1), dt, z);
}

int ox_qlinear_add_step(ox_b *b)
{
    if (b->failed || b->n_in < 7 || !ox_top_level(b->c, b->np) || !xe_cpu_int8_engine())
        return -1;
    int qa = ox_in(b, 0), qb = ox_in(b, 3);
    float as, bs, ys;
    int64_t az, bz, yz;
    xe_dtype y_dt = ox_type(b, qa)->dtype;
    if (qa < 0 || qb < 0 || !same_known_shape(b, qa, qb) || !ql_operand(b, 0, 1, &as, &az) ||
        !ql_operand(b, 3, 4, &bs, &bz) || !positive_scale(b, input(b->np, 6), &ys) ||
        !const_scalar_int(b, input(b->np, 7), y_dt, &yz))
        return -1;
    int in[2] = {qa, qb};
    ox_at at[7] = {{.name = "a_scale", .kind = XE_ATTR_FLOAT, .f = as},
                   OX_I("a_zero_point", az),
                   {.name = "b_scale", .kind = XE_ATTR_FLOAT, .f = bs},
                   OX_I("b_zero_point", bz),
                   {.name = "y_scale", .kind = XE_ATTR_FLOAT, .f = ys},
                   OX_I("y_zero_point", yz),
                   OX_DT("y_dtype", y_dt)};
    return ox_op(b, XE_OP_QUANT_ADD, in, 2, at, 7);
}
