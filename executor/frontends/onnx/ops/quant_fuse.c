/*
 * onnxruntime's quantize_dynamic writes, around every MatMul it quantizes,
 *
 *   (q, xs, zp) = DynamicQuantizeLinear(x)
 *   i   = MatMulInteger(q, W, zp, W_zp)        W int8 constant, W_zp constant zeros (or absent)
 *   f   = Cast(i, to=FLOAT)
 *   s   = Mul(xs, W_scale)                     W_scale a constant f32 scalar
 *   y   = Mul(f, s)
 *
 * (one DynamicQuantizeLinear often feeding several products: attention's Q, K and V). As per-op
 * steps that is some thirty kernels (the range, the scale and zero point, round half to even as
 * a composition, the saturation, the casts, the zero-point terms, the rescale) around one
 * product. DynamicQuantizeLinear's builder looks ahead: each reader chain of that exact form
 * becomes one dynamic_quant_matmul(x, W, W_scale, colsum(W)) node (its CPU kernel:
 * devices/cpu/quant_matmul.c, the same arithmetic as the composition, bit for bit), bound to y,
 * and the chain's ONNX nodes are marked absorbed so the loader skips them. When every reader of
 * the quantization is such a chain, the quantization itself is not built; otherwise it is built
 * as before for the readers left.
 */
#include <string.h>

#include "onnx_impl.h"
#include "xlac/vec.h"

bool ox_absorb(ox_ctx *c, const Onnx__NodeProto *np)
{
    const Onnx__NodeProto **v = XE_VEC_GROW(c->absorbed, c->cap_absorbed, c->n_absorbed + 1, 16);
    if (!v)
        return false;
    c->absorbed = v;
    c->absorbed[c->n_absorbed++] = np;
    return true;
}

bool ox_absorbed(const ox_ctx *c, const Onnx__NodeProto *np)
{
    for (int i = 0; i < c->n_absorbed; i++)
        if (c->absorbed[i] == np)
            return true;
    return false;
}

/* Whether s, a string of the model that may be absent (NULL), is lit. */
static bool is(const char *s, const char *lit)
{
    return s && !strcmp(s, lit);
}

bool ox_op_is(const Onnx__NodeProto *np, const char *type)
{
    return np && is(np->op_type, type) &&
           (!np->domain || !np->domain[0] || is(np->domain, "ai.onnx"));
}

/* How many reads of value `name` (nodes' inputs, graph outputs) graph g holds, with those of the
   subgraphs of its nodes' attributes (If, Loop and Scan bodies read the enclosing graph's values
   by name; a name a subgraph defines for itself counts too, which only refuses a fusion). */
static int uses_in(const Onnx__GraphProto *g, const char *name, int depth)
{
    int n = 0;
    if (!g || depth >= OX_MAX_NESTING)
        return depth >= OX_MAX_NESTING; /* too deep to look: a use, so nothing fuses */
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *np = g->node[i];
        for (size_t j = 0; j < np->n_input; j++)
            n += is(np->input[j], name);
        for (size_t a = 0; a < np->n_attribute; a++) /* the importer's proto has no GRAPHS */
            n += uses_in(np->attribute[a]->g, name, depth + 1);
    }
    for (size_t k = 0; k < g->n_output; k++)
        n += is(g->output[k]->name, name);
    return n;
}

/* The reads of `name` in the top-level graph, its subgraphs' included. */
static int uses(const Onnx__GraphProto *g, const char *name)
{
    return uses_in(g, name, 0);
}

const Onnx__NodeProto *ox_sole_reader(const Onnx__GraphProto *g, const char *name)
{
    if (uses(g, name) != 1)
        return NULL;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t j = 0; j < g->node[i]->n_input; j++)
            if (is(g->node[i]->input[j], name))
                return g->node[i];
    return NULL;
}

const Onnx__NodeProto *ox_writer(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t j = 0; j < g->node[i]->n_output; j++)
            if (is(g->node[i]->output[j], name))
                return g->node[i];
    return NULL;
}

int ox_const_node(ox_b *b, const char *name, xe_dtype dt)
{
    bool found = false;
    int k = name && name[0] ? ox_value_get(b->c, name, &found) : -1;
    const xe_node *n = k >= 0 ? b->c->g->nodes[k] : NULL;
    return n && n->op == XE_OP_CONST && n->value && n->value->dtype == dt ? k : -1;
}

/* Whether MatMulInteger input 3 (B's zero point) is absent or constant zeros. */
static bool zero_point_zero(ox_b *b, const Onnx__NodeProto *mi)
{
    if (mi->n_input < 4 || !mi->input[3][0])
        return true;
    int k = ox_const_node(b, mi->input[3], XE_I8);
    if (k < 0)
        return false;
    const xe_tensor *t = b->c->g->nodes[k]->value;
    for (size_t i = 0; i < t->nbytes; i++)
        if (((const uint8_t *)t->data)[i])
            return false;
    return true;
}

/* One chain found: its nodes and the constants it reads. */
typedef struct chain {
    const Onnx__NodeProto *mi, *cast, *mul, *scales; /* MatMulInteger, Cast, Mul, Mul(xs, ws) */
    int w, ws;                                       /* the const nodes of W and W_scale */
} chain;

/* The operand of two-input node np that is not `name`; NULL unless exactly one input is name. */
static const char *other(const Onnx__NodeProto *np, const char *name)
{
    if (np->n_input != 2 || is(np->input[0], name) == is(np->input[1], name))
        return NULL;
    return is(np->input[0], name) ? np->input[1] : np->input[0];
}

/* Whether Cast node c converts to FLOAT and has no attribute but to (and saturate). */
static bool cast_to_float(const Onnx__NodeProto *c)
{
    bool to_float = false;
    for (size_t a = 0; a < c->n_attribute; a++) {
        if (is(c->attribute[a]->name, "to"))
            to_float = c->attribute[a]->i == 1; /* FLOAT */
        else if (!is(c->attribute[a]->name, "saturate"))
            return false;
    }
    return to_float;
}

/* Whether reader mi of DynamicQuantizeLinear dq starts a chain of the form above (into *ch). */
static bool chain_at(ox_b *b, const Onnx__NodeProto *dq, const Onnx__NodeProto *mi, chain *ch)
{
    const Onnx__GraphProto *g = b->c->model->graph;
    *ch = (chain){.mi = mi};
    if (!ox_op_is(mi, "MatMulInteger") || mi->n_input < 3 || mi->n_output != 1 ||
        !is(mi->input[0], dq->output[0]) || !is(mi->input[2], dq->output[2]) ||
        is(mi->input[1], dq->output[0]) || !zero_point_zero(b, mi))
        return false;
    ch->w = ox_const_node(b, mi->input[1], XE_I8);
    if (ch->w < 0 || ox_type(b, ch->w)->shape.rank != 2)
        return false;
    ch->cast = ox_sole_reader(g, mi->output[0]);
    if (!ox_op_is(ch->cast, "Cast") || ch->cast->n_output != 1 || !cast_to_float(ch->cast))
        return false;
    ch->mul = ox_sole_reader(g, ch->cast->output[0]);
    const char *s = ox_op_is(ch->mul, "Mul") ? other(ch->mul, ch->cast->output[0]) : NULL;
    ch->scales = s ? ox_writer(g, s) : NULL;
    if (!ox_op_is(ch->scales, "Mul") || ch->scales->n_output != 1 ||
        ox_sole_reader(g, s) != ch->mul)
        return false;
    const char *ws = other(ch->scales, dq->output[1]);
    ch->ws = ws ? ox_const_node(b, ws, XE_F32) : -1;
    return ch->ws >= 0 && xe_shape_numel(&ox_type(b, ch->ws)->shape) == 1;
}

int ox_column_sums(ox_b *b, int w)
{
    const xe_tensor *t = b->c->g->nodes[w]->value;
    int64_t K = t->shape.dims[0], N = t->shape.dims[1];
    xe_shape s = {.rank = 1, .dims = {N}};
    xe_tensor *v = ox_new_tensor(b, XE_I32, &s);
    if (!v)
        return -1;
    int32_t *cs = v->data;
    const int8_t *wd = t->data;
    for (int64_t n = 0; n < N; n++)
        cs[n] = 0;
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++)
            cs[n] += wd[k * N + n];
    return ox_const(b, v);
}

/* The fused node of chain ch over x, bound to the chain's result; false when b failed. */
static bool emit_chain(ox_b *b, int x, const chain *ch)
{
    int in[4] = {x, ch->w, ch->ws, ox_column_sums(b, ch->w)};
    int y = in[3] < 0 ? -1 : ox_op(b, XE_OP_DYNAMIC_QUANT_MATMUL, in, 4, NULL, 0);
    if (y < 0 || ox_out_of(b, ch->mul, 0, y) != XE_OK)
        return false;
    const Onnx__NodeProto *nodes[4] = {ch->mi, ch->cast, ch->mul, ch->scales};
    for (int k = 0; k < 4; k++)
        if (!ox_absorbed(b->c, nodes[k]) && !ox_absorb(b->c, nodes[k])) {
            ox_invalid(b, "%s", "out of memory");
            return false;
        }
    return true;
}

bool ox_top_level(const ox_ctx *c, const Onnx__NodeProto *np)
{
    const Onnx__GraphProto *g = c->model->graph;
    for (size_t i = 0; i < g->n_node; i++)
        if (g->node[i] == np)
            return true;
    return false;
}

/* Whether every read of dq's outputs is one of the absorbed chains. */
static bool all_absorbed(const ox_ctx *c, const Onnx__NodeProto *dq)
{
    const Onnx__GraphProto *g = c->model->graph;
    for (size_t k = 0; k < dq->n_output; k++)
        for (size_t i = 0; dq->output[k][0] && i < g->n_node; i++)
            for (size_t j = 0; j < g->node[i]->n_input; j++)
                if (is(g->node[i]->input[j], dq->output[k]) && !ox_absorbed(c, g->node[i]))
                    return false;
    for (size_t k = 0; k < dq->n_output; k++)
        for (size_t o = 0; o < g->n_output; o++)
            if (dq->output[k][0] && is(g->output[o]->name, dq->output[k]))
                return false;
    return true;
}

bool ox_dynamic_quant_fuse(ox_b *b)
{
    const Onnx__NodeProto *dq = b->np;
    const Onnx__GraphProto *g = b->c->model->graph;
    int x = ox_in(b, 0);
    if (b->failed || x < 0 || dq->n_output != 3 || !dq->output[0][0] || !dq->output[1][0] ||
        !dq->output[2][0] || !ox_top_level(b->c, dq))
        return false;
    for (size_t i = 0; i < g->n_node; i++) {
        chain ch;
        if (chain_at(b, dq, g->node[i], &ch) && !emit_chain(b, x, &ch))
            return false;
    }
    if (!all_absorbed(b->c, dq))
        return false;
    for (size_t k = 0; k < 3; k++) /* read by nobody now: any value will do */
        if (ox_value_set(b->c, dq->output[k], x, &b->st) != XE_OK) {
            b->failed = true;
            return false;
        }
    return true;
}
