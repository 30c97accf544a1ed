/*
 * Chained values between the convs of a cluster. A conv library step (the
 * engine's primitive) converts its NCHW input into the layout its kernels
 * work in and its output back on every run; in a chain of convs with
 * elementwise ops between them (a bias-free activation, a residual add,
 * ReLU6 as maximum and minimum with scalars) those two conversions cost
 * more than the convs themselves at small channel counts (MobileNetV2 at
 * batch 1: 8.3 ms of reorders against 7.3 ms of convolution per run). So
 * the values of such a chain stay in the engine's layout in memory, typed
 * as before, and only the chain's borders convert. The engine picks that
 * layout per process (executor/devices/cpu/dnnl_engine.h): channels-last
 * (NHWC) where oneDNN's AVX-512 kernels work, blocks of 8 channels
 * (nChw8c) where its AVX2 kernels do; the plan is the same either way.
 *
 * A set S of body nodes holds chained values. Its members are f32 rank-4
 * conv2d nodes, elementwise nodes (unary, binary, compare, logical,
 * select, cast) of rank 3 or 4, and reshapes that only insert or remove
 * spatial dims of 1 (a conv1d's [N, C, W] <-> [N, C, 1, W], Wav2Vec2's
 * feature convs: the bytes of both layouts are the same for either shape,
 * [N][W][C] channels-last, [N][C/8][W][8] blocked, and a reshape keeps
 * the flat index), whose channel count is a multiple of
 * XG_CHAIN_CHANNELS (8: a blocked value without padding, so a loop's flat
 * index covers it exactly), and S is the largest set in which
 *   (a) every operand of an elementwise member is a member or has one
 *       element: the generated loop reads all of them at the same flat
 *       index, so they must agree on the layout (a per-channel operand
 *       of shape [C, 1, 1] would not);
 *   (b) every reader of a member is a member, or a conv reading it as
 *       its input (not its weights): no other kernel indexes a member;
 *   (c) no member is a body output: the cluster hands back NCHW.
 * It is found by starting from every candidate and dropping those that
 * break a rule until none does. The generated code does not change: a
 * loop over same-shaped values is the same loop in any layout of them. Only
 * the convs do, told by the plan which of their sides are chained.
 */
#include <stdbool.h>
#include <string.h>

#include "plan.h"
#include "xlac/op.h"

static bool elementwise(const xe_node *n)
{
    switch (xe_op_get(n->op)->cls) {
    case XE_CLASS_UNARY:
    case XE_CLASS_BINARY:
    case XE_CLASS_COMPARE:
    case XE_CLASS_LOGICAL:
    case XE_CLASS_SELECT:
    case XE_CLASS_CAST:
        return true;
    default:
        return false;
    }
}

/* The spatial dims of s (those after N and C) that are not 1, in order, into d; their count. */
static int spatial_not_one(const xe_shape *s, int64_t *d)
{
    int k = 0;
    for (int a = 2; a < s->rank; a++)
        if (s->dims[a] != 1)
            d[k++] = s->dims[a];
    return k;
}

/* Whether reshape node i only inserts or removes spatial dims of 1 (a conv1d's [N, C, W] to
   [N, C, 1, W] and back), which leaves a chained value's bytes as they are. */
static bool reshape_keeps_bytes(const xg_plan *p, int i)
{
    const xe_shape *to = &p->types[i].shape, *from = &p->types[p->body->nodes[i]->inputs[0]].shape;
    int64_t a[XE_MAX_RANK], b[XE_MAX_RANK];
    if (from->rank < 3 || from->rank > 4 || from->dims[0] != to->dims[0] ||
        from->dims[1] != to->dims[1])
        return false;
    int na = spatial_not_one(from, a), nb = spatial_not_one(to, b);
    return na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0;
}

static bool candidate(const xg_plan *p, int i)
{
    const xe_node *n = p->body->nodes[i];
    const xe_type *t = &p->types[i];
    if (t->shape.rank < 3 || t->shape.rank > 4 || t->shape.dims[1] % XG_CHAIN_CHANNELS != 0 ||
        (t->shape.rank == 3 && n->op == XE_OP_CONV2D))
        return false;
    if (n->op == XE_OP_RESHAPE)
        return t->dtype == p->types[n->inputs[0]].dtype && reshape_keeps_bytes(p, i);
    if (n->op == XE_OP_CONV2D)
        return t->dtype == XE_F32 && n->n_inputs >= 2 && p->types[n->inputs[0]].dtype == XE_F32;
    if (!elementwise(n))
        return false;
    for (int k = 0; k < n->n_inputs; k++) {
        const xe_type *o = &p->types[n->inputs[k]];
        if (xe_shape_numel(&o->shape) != 1 && !xe_shape_equal(&o->shape, &t->shape))
            return false;
    }
    return true;
}

/* Drops from s what breaks rule (a) or (b) once; whether anything was dropped. */
static bool drop_breakers(const xg_plan *p, bool *s)
{
    const xe_graph *b = p->body;
    bool dropped = false;
    for (int j = 0; j < b->n_nodes; j++) {
        const xe_node *n = b->nodes[j];
        bool conv = n->op == XE_OP_CONV2D;
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (s[v] &&
                !(conv ? k == 0 : s[j])) { /* (b): a conv's weights or bias are no activation */
                s[v] = false;
                dropped = true;
            }
            if (s[j] && !conv && !s[v] && xe_shape_numel(&p->types[v].shape) != 1) { /* (a) */
                s[j] = false;
                dropped = true;
            }
        }
    }
    return dropped;
}

/* Whether any conv reads or writes a chained value: else the set is dropped whole (nothing to
   gain). */
static bool any_conv_side(const xg_plan *p, const bool *s)
{
    for (int i = 0; i < p->body->n_nodes; i++) {
        const xe_node *n = p->body->nodes[i];
        if (n->op == XE_OP_CONV2D && (s[i] || s[n->inputs[0]]))
            return true;
    }
    return false;
}

void xg_plan_layouts(xg_plan *p)
{
    const xe_graph *b = p->body;
    bool *s = p->chained;
    for (int i = 0; i < b->n_nodes; i++)
        s[i] = candidate(p, i);
    for (int k = 0; k < b->n_outputs; k++) /* (c) */
        s[b->outputs[k]] = false;
    while (drop_breakers(p, s))
        ;
    if (!any_conv_side(p, s))
        for (int i = 0; i < b->n_nodes; i++)
            s[i] = false;
}
