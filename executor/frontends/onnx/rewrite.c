/*
 * Load-time rewrites that every inference engine does, applied by the
 * builders as they build (the graph never holds the slow form):
 *
 * 1. BatchNormalization right after a Conv whose weights (and bias) are
 *    constants, with constant statistics, and whose output nothing else
 *    reads: folded into the conv's weights and bias,
 *    W'[m] = W[m] * s[m] and b'[m] = (b[m] - mean[m]) * s[m] + beta[m] with
 *    s = gamma / sqrt(var + eps), computed in double. The Conv's builder
 *    does it, looking ahead to its one reader (the folded constants must
 *    come before the conv node: nodes run in index order), and marks the
 *    conv2d @bn_folded; the BatchNorm's builder then passes the conv on.
 * 2. A Transpose that swaps the last two dims and whose one reader is a
 *    MatMul (attention's K^T): no node; the MatMul reads the untransposed
 *    value with transpose_a/_b set, so no copy is made and the product
 *    reads the operand in place (the engine takes it as strides).
 * 3. Pow with a constant integer exponent of 1 to 4 (GELU's x^3): products,
 *    x*x, (x*x)*x, (x*x)*(x*x). powf is a library call per element that no
 *    compiler vectorises, and was 18 % of GPT-2's op-by-op time. The result
 *    differs from powf by the products' roundings (at most 2 ulp for x^3);
 *    NaN, infinities and signed zeros come out as powf gives them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

/* How many ONNX nodes read value `name`, plus one if it is a graph output. */
static int value_uses(const ox_ctx *c, const char *name)
{
    const Onnx__GraphProto *g = c->model->graph;
    int uses = 0;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t j = 0; j < g->node[i]->n_input; j++)
            uses += !strcmp(g->node[i]->input[j], name);
    for (size_t k = 0; k < g->n_output; k++)
        uses += g->output[k]->name && !strcmp(g->output[k]->name, name);
    return uses;
}

/* The ONNX node that reads value `name`, when exactly one does and it is no graph output; else
 * NULL. */
static const Onnx__NodeProto *only_reader(const ox_ctx *c, const char *name)
{
    const Onnx__GraphProto *g = c->model->graph;
    const Onnx__NodeProto *r = NULL;
    if (value_uses(c, name) != 1)
        return NULL;
    for (size_t i = 0; i < g->n_node && !r; i++)
        for (size_t j = 0; j < g->node[i]->n_input; j++)
            if (!strcmp(g->node[i]->input[j], name))
                r = g->node[i];
    for (size_t k = 0; k < g->n_output; k++)
        if (g->output[k]->name && !strcmp(g->output[k]->name, name))
            return NULL;
    return r;
}

/* The constant already built for ONNX value `name` (an initializer), dtype dt, n elements (-1:
 * any). */
/* Whether s, a string of the model that may be absent (NULL), is lit. */
static bool is(const char *s, const char *lit)
{
    return s && !strcmp(s, lit);
}

static const xe_tensor *const_value(ox_b *b, const char *name, xe_dtype dt, int64_t n)
{
    bool found;
    int k = ox_value_get(b->c, name, &found);
    if (k < 0)
        return NULL;
    const xe_node *p = b->c->g->nodes[k];
    if (p->op != XE_OP_CONST || !p->value || p->value->dtype != dt ||
        (n >= 0 && xe_tensor_numel(p->value) != n))
        return NULL;
    return p->value;
}

/* A new const, w scaled per output channel: v[o*per + i] = w[o*per + i] * s[o] + t[o] (w, t NULL:
 * 0). */
static int scaled(ox_b *b, const xe_tensor *w, const double *s, const double *t, int64_t m,
                  int64_t per, const xe_shape *shape, xe_dtype dt)
{
    xe_tensor *v = xe_tensor_new(dt, shape, XE_DEV_CPU, &b->st);
    if (!v) {
        b->failed = true;
        return -1;
    }
    for (int64_t o = 0; o < m; o++)
        for (int64_t i = 0; i < per; i++)
            xe_store_f64(v->data, dt, o * per + i,
                         (w ? xe_load_f64(w->data, dt, o * per + i) : 0.0) * s[o] +
                             (t ? t[o] : 0.0));
    return ox_const(b, v);
}

/* s = gamma / sqrt(var + eps) and t = beta - mean * s of BatchNorm node bn (in[1..4] constants). */
static bool bn_affine(ox_b *b, const Onnx__NodeProto *bn, xe_dtype dt, int64_t m, double *s,
                      double *t)
{
    const xe_tensor *p[4];
    if (bn->n_input != 5)
        return false;
    for (int k = 0; k < 4; k++) /* gamma, beta, mean, var */
        if (!(p[k] = const_value(b, bn->input[k + 1], dt, m)))
            return false;
    double eps = 1e-5;
    for (size_t a = 0; a < bn->n_attribute; a++) {
        if (is(bn->attribute[a]->name, "epsilon"))
            eps = bn->attribute[a]->f;
        else if (is(bn->attribute[a]->name, "training_mode") && bn->attribute[a]->i)
            return false;
    }
    for (int64_t o = 0; o < m; o++) {
        s[o] = xe_load_f64(p[0]->data, dt, o) / sqrt(xe_load_f64(p[3]->data, dt, o) + eps);
        t[o] = xe_load_f64(p[1]->data, dt, o) - xe_load_f64(p[2]->data, dt, o) * s[o];
    }
    return true;
}

bool ox_conv_fold_batch_norm(ox_b *b, int *wt, int *bias)
{
    const Onnx__NodeProto *bn = b->np->n_output ? only_reader(b->c, b->np->output[0]) : NULL;
    if (b->failed || *wt < 0 || !bn || !is(bn->op_type, "BatchNormalization") || bn->n_input < 1 ||
        strcmp(bn->input[0], b->np->output[0]) ||
        (bn->domain && bn->domain[0] && strcmp(bn->domain, "ai.onnx")) ||
        (bn->n_output > 1 && bn->output[1][0]))
        return false;
    const xe_node *wn = b->c->g->nodes[*wt];
    xe_dtype dt = wn->type.dtype;
    int64_t m = wn->type.shape.dims[0];
    const xe_tensor *w = wn->op == XE_OP_CONST ? wn->value : NULL, *bv = NULL;
    if (!w || m <= 0 ||
        (*bias >= 0 &&
         (b->c->g->nodes[*bias]->op != XE_OP_CONST || !(bv = b->c->g->nodes[*bias]->value) ||
          xe_tensor_numel(bv) != m || bv->dtype != dt)))
        return false;
    double *s = malloc(2 * (size_t)m * sizeof *s), *t = s ? s + m : NULL;
    bool ok = s && bn_affine(b, bn, dt, m, s, t);
    xe_shape bs = {.rank = 1, .dims = {m}};
    int nw = ok ? scaled(b, w, s, NULL, m, xe_tensor_numel(w) / m, &w->shape, dt) : -1;
    int nb = nw >= 0 ? scaled(b, bv, s, t, m, 1, &bs, dt) : -1;
    free(s);
    if (nb < 0)
        return false;
    *wt = nw;
    *bias = nb;
    return true;
}

bool ox_batch_norm_folded(ox_b *b, int x)
{
    return x >= 0 && b->c->g->nodes[x]->op == XE_OP_CONV2D &&
           xe_node_attr_bool(b->c->g->nodes[x], "@bn_folded", false);
}

int ox_pow_small(ox_b *b, int x, int y)
{
    if (x < 0 || y < 0 || b->failed)
        return -1;
    const xe_node *e = b->c->g->nodes[y];
    xe_dtype dt = ox_type(b, x)->dtype;
    if (e->op != XE_OP_CONST || !e->value || xe_tensor_numel(e->value) != 1 ||
        e->value->shape.rank > ox_rank(b, x) || (dt != XE_F32 && dt != XE_F64 && dt != XE_F16))
        return -1;
    double p = xe_load_f64(e->value->data, e->value->dtype, 0);
    if (p == 1)
        return x;
    if (p != 2 && p != 3 && p != 4)
        return -1;
    int sq = ox_bin(b, XE_OP_MUL, x, x);
    return p == 2 ? sq : ox_bin(b, XE_OP_MUL, sq, p == 3 ? x : sq);
}

bool ox_transpose_to_matmul(ox_b *b, int x, const int *perm, int r)
{
    if (x < 0 || b->failed || r < 2 || b->np->n_output != 1)
        return false;
    for (int d = 0; d < r - 2; d++)
        if (perm[d] != d)
            return false;
    const Onnx__NodeProto *rd = only_reader(b->c, b->np->output[0]);
    if (perm[r - 2] != r - 1 || perm[r - 1] != r - 2 || !rd || !is(rd->op_type, "MatMul") ||
        (rd->domain && rd->domain[0] && strcmp(rd->domain, "ai.onnx")) ||
        ox_value_swapped(b->c, b->np->input[0]))
        return false;
    if (ox_value_set_swapped(b->c, b->np->output[0], x, &b->st) != XE_OK)
        b->failed = true;
    return true;
}
