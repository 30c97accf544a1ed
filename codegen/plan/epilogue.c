/*
 * Matmul epilogues by rows: which steps after a matmul (a LIBRARY step)
 * can run on its product a range of rows at a time, all of them on one
 * range before the next (run/program.c: the engine computes the product
 * whole, then each thread takes a range of rows through every such step
 * while the range is in its cache), instead of one pass over memory per
 * step. The name "panel" is kept from when BLAS wrote each range itself.
 *
 * A matmul of f32 or f64 operands of rank >= 2 takes, in plan order:
 *   1. the loop step right after it, when all its outputs have the
 *      product's shape and read the product (through their inline
 *      producers) only at their own element: bias add, GELU, residual
 *      add, scale, cast;
 *   2. then a row kernel or softmax over the product's shape reducing the
 *      last dim only (rows of the panel are whole rows), reading what
 *      the panel wrote at its own row: the softmax of attention scores;
 *   3. then a loop step as in 1, reading what the earlier steps wrote at
 *      its own element: torch's where(isnan(p), 0, p) after that softmax.
 * Such steps are marked `panel`. The plan stays one for every target; a
 * backend that can run a step over a range of rows (the C backend's
 * run_rows) runs them per panel, the others ignore the mark.
 */
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "plan.h"
#include "xlac/op.h"

/*
 * Whether node reads the values in group[] only at the element it is
 * itself evaluated at (`same`): elementwise ops pass `same` to operands of
 * their own shape; at the root, a reduction or softmax over the last dim
 * reads its operand of the row shape at the row's element.
 */
static bool reads_at_own_element(const xg_plan *p, int node, const bool *group, bool same,
                                 bool root)
{
    if (!root && group[node])
        return same;
    if (!root && p->mat[node])
        return true;
    const xe_node *n = p->body->nodes[node];
    xe_op_class cls = xe_op_get(n->op)->cls;
    bool rows = root && (cls == XE_CLASS_REDUCE || cls == XE_CLASS_SOFTMAX);
    bool passes = same && (xe_op_is_elementwise(n->op) || rows);
    for (int k = 0; k < n->n_inputs; k++) {
        int in = n->inputs[k];
        bool child = passes && (rows || xe_shape_equal(&p->types[in].shape, &p->types[node].shape));
        if (!reads_at_own_element(p, in, group, child, false))
            return false;
    }
    return true;
}

/* The matmul's product qualifies: f32 or f64, operands (as BLAS reads them) and product of rank
 * >= 2. */
static bool panel_matmul(const xg_plan *p, int m)
{
    const xe_node *n = p->body->nodes[m];
    xe_dtype dt = p->types[m].dtype;
    if (n->op != XE_OP_MATMUL || (dt != XE_F32 && dt != XE_F64) || p->types[m].shape.rank < 2)
        return false;
    for (int k = 0; k < n->n_inputs; k++)
        if (p->types[n->inputs[k]].shape.rank < 2)
            return false;
    return true;
}

/* Whether row step s (ROW or SOFTMAX) reduces only the last dim of a value of shape sh. */
static bool last_dim_rows(const xg_plan *p, const xg_step *s, const xe_shape *sh)
{
    const xe_node *n = p->body->nodes[s->outs[0]];
    int x = s->kind == XG_STEP_ROW ? s->x : n->inputs[0];
    if (!xe_shape_equal(&p->types[x].shape, sh))
        return false;
    if (s->kind == XG_STEP_SOFTMAX) {
        int64_t axis = xe_node_attr_int(n, "axis", -1);
        return axis == -1 || axis == sh->rank - 1;
    }
    bool mask[XE_MAX_RANK] = {0};
    xg_reduce_mask(n, sh->rank, mask);
    for (int d = 0; d < sh->rank; d++)
        if (mask[d] != (d == sh->rank - 1))
            return false;
    return true;
}

/* Whether step s joins the panel group (the product and what earlier panel steps wrote). */
static bool joins(const xg_plan *p, const xg_step *s, const xe_shape *sh, const bool *group)
{
    if (s->kind == XG_STEP_LOOP) {
        for (int k = 0; k < s->n_outs; k++)
            if (!xe_shape_equal(&p->types[s->outs[k]].shape, sh))
                return false;
    } else if (s->kind != XG_STEP_ROW && s->kind != XG_STEP_SOFTMAX) {
        return false;
    } else if (!last_dim_rows(p, s, sh)) {
        return false;
    }
    for (int k = 0; k < s->n_outs; k++) {
        bool same = s->kind != XG_STEP_ROW || s->role[k] != XG_ROW_SCALAR;
        if (!reads_at_own_element(p, s->outs[k], group, same, true))
            return false;
    }
    return true;
}

xe_code xg_plan_panels(xg_plan *p, xe_status *st)
{
    bool *group = calloc((size_t)p->body->n_nodes + 1, sizeof *group);
    if (!group)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory planning matmul epilogues");
    for (int i = 0; i < p->n_steps; i++) {
        int m = p->steps[i].outs[0];
        if (p->steps[i].kind != XG_STEP_LIBRARY || !panel_matmul(p, m))
            continue;
        const xe_shape *sh = &p->types[m].shape;
        memset(group, 0, (size_t)p->body->n_nodes * sizeof *group);
        group[m] = true;
        /* 0: a loop or a row step may come next; 1: a row step; 2: a loop; 3: the group is whole */
        for (int j = i + 1, state = 0; j < p->n_steps && state < 3; j++) {
            xg_step *s = &p->steps[j];
            bool loop = s->kind == XG_STEP_LOOP;
            if ((loop ? state == 1 : state == 2) || !joins(p, s, sh, group))
                break;
            s->panel = true;
            for (int k = 0; k < s->n_outs; k++)
                group[s->outs[k]] = true;
            state = !loop ? 2 : state == 0 ? 1 : 3;
        }
    }
    free(group);
    return XE_OK;
}

int xg_panel_matmul(const xg_plan *p, int i)
{
    if (!p->steps[i].panel)
        return -1;
    while (i > 0 && p->steps[i].panel)
        i--;
    return p->steps[i].kind == XG_STEP_LIBRARY ? p->steps[i].outs[0] : -1;
}

int64_t xg_panel_rows(const xe_type *types, int m)
{
    const xe_shape *s = &types[m].shape;
    int64_t last = s->rank ? s->dims[s->rank - 1] : 1;
    return last ? xe_shape_numel(s) / last : 0;
}

int xg_panel_mismatch(const xg_plan *p, int i, const xe_type *types)
{
    int m = xg_panel_matmul(p, i);
    if (m < 0)
        return -1;
    const xg_step *s = &p->steps[i];
    const xe_node *n = p->body->nodes[s->outs[0]];
    int x = s->kind == XG_STEP_ROW ? s->x : s->kind == XG_STEP_SOFTMAX ? n->inputs[0] : s->outs[0];
    return xe_shape_equal(&types[x].shape, &types[m].shape) ? -1 : x;
}

/* ---- the GPU's matmul epilogues (cuBLASLt) ------------------------------------------ */

/* node, when it is an inline op with one consumer: its op, else -1. */
static int inline_op(const xg_plan *p, int node)
{
    return p->mat[node] || p->uses[node] != 1 ? -1 : p->body->nodes[node]->op;
}

/*
 * x = add(m, bias) or add(bias, m) (x inline or the step's output: the
 * caller's check), bias a buffer of shape [N] or [1, N] of m's dtype:
 * the bias node, else -1.
 */
static int bias_of(const xg_plan *p, int x, int m)
{
    const xe_node *n = p->body->nodes[x];
    if (n->op != XE_OP_ADD)
        return -1;
    int b = n->inputs[0] == m ? n->inputs[1] : n->inputs[1] == m ? n->inputs[0] : -1;
    const xe_shape *bs = b >= 0 ? &p->types[b].shape : NULL, *ms = &p->types[m].shape;
    if (!bs || !p->mat[b] || p->types[b].dtype != p->types[m].dtype || bs->rank < 1 || bs->rank > 2)
        return -1;
    if (bs->dims[bs->rank - 1] != ms->dims[ms->rank - 1] || (bs->rank == 2 && bs->dims[0] != 1))
        return -1;
    return b;
}

bool xg_blas_epilogue(const xg_plan *p, int i, xg_blas_epi *e)
{
    if (i + 1 >= p->n_steps || p->steps[i].kind != XG_STEP_LIBRARY || !p->steps[i + 1].panel ||
        p->steps[i + 1].kind != XG_STEP_LOOP || p->steps[i + 1].n_outs != 1)
        return false;
    int m = p->steps[i].outs[0], o = p->steps[i + 1].outs[0];
    if (p->types[m].dtype != XE_F32 || p->types[m].shape.rank != 2 || p->uses[m] != 1)
        return false;
    for (int k = 0; k < p->body->n_outputs; k++)
        if (p->body->outputs[k] == m)
            return false;
    *e = (xg_blas_epi){.matmul = m, .bias = -1, .out = o, .act = XG_EPI_NONE};
    const xe_node *n = p->body->nodes[o];
    int x = o;
    if (n->op == XE_OP_RELU ||
        (n->op == XE_OP_GELU && xe_node_attr_bool(n, "approximate", false))) {
        e->act = n->op == XE_OP_RELU ? XG_EPI_RELU : XG_EPI_GELU;
        x = n->inputs[0];
        if (x == m)
            return true;
    }
    return x != m && (x == o || inline_op(p, x) >= 0) && (e->bias = bias_of(p, x, m)) >= 0;
}

/* ---- the CPU's conv epilogues (oneDNN post-ops) -------------------------------------- */

/* Whether node v is a graph output of the body. */
static bool is_output(const xg_plan *p, int v)
{
    for (int k = 0; k < p->body->n_outputs; k++)
        if (p->body->outputs[k] == v)
            return true;
    return false;
}

/* x = add(m, r) or add(r, m), r a buffer of m's type: r, else -1. */
static int residual_of(const xg_plan *p, int x, int m)
{
    const xe_node *n = p->body->nodes[x];
    if (n->op != XE_OP_ADD)
        return -1;
    int r = n->inputs[0] == m ? n->inputs[1] : n->inputs[1] == m ? n->inputs[0] : -1;
    if (r < 0 || r == m || !p->mat[r] || p->types[r].dtype != p->types[m].dtype ||
        !xe_shape_equal(&p->types[r].shape, &p->types[m].shape))
        return -1;
    return r;
}

/* Whether node s is hard_sigmoid(v) with HardSwish's alpha 1/6 and beta 1/2, inline. */
static bool hard_swish_gate(const xg_plan *p, int s, int v)
{
    const xe_node *n = p->body->nodes[s];
    return n->op == XE_OP_HARD_SIGMOID && n->inputs[0] == v && inline_op(p, s) >= 0 &&
           fabs(xe_node_attr_float(n, "alpha", 0.2) - 1.0 / 6.0) < 1e-7 &&
           xe_node_attr_float(n, "beta", 0.5) == 0.5;
}

/* o = mul(v, gate(v)), SiLU's or HardSwish's gate: the activation and *x = v. */
static xg_conv_act gated(const xg_plan *p, const xe_node *n, int *x)
{
    for (int k = 0; k < 2; k++) {
        int s = n->inputs[k], v = n->inputs[1 - k];
        const xe_node *g = p->body->nodes[s];
        *x = v;
        if (g->op == XE_OP_SIGMOID && g->inputs[0] == v && inline_op(p, s) >= 0)
            return XG_CONV_SILU;
        if (hard_swish_gate(p, s, v))
            return XG_CONV_HARDSWISH;
    }
    return XG_CONV_NONE;
}

/*
 * Node o as act(x): the activation and *x, else XG_CONV_NONE (*x = o).
 * ReLU and Clip are not asked for: oneDNN 2.6's relu and clip turn NaN
 * into 0 (a vector max), where the executor's relu, maximum and minimum
 * keep it (test_plugin_e2e: nan_survives_a_conv_cluster).
 */
static xg_conv_act activation(const xg_plan *p, int o, int *x)
{
    const xe_node *n = p->body->nodes[o];
    xg_conv_act a = XG_CONV_NONE;
    *x = n->n_inputs ? n->inputs[0] : o;
    switch (n->op) {
    case XE_OP_SIGMOID:
        return XG_CONV_SIGMOID;
    case XE_OP_GELU:
        return xe_node_attr_bool(n, "approximate", false) ? XG_CONV_GELU_TANH : XG_CONV_GELU;
    case XE_OP_MUL:
        a = gated(p, n, x);
        break;
    default:
        break;
    }
    if (a == XG_CONV_NONE)
        *x = o;
    return a;
}

/* v = reshape(u), u inline and read by v alone: u, else -1. A reshape moves no element (in NCHW,
   or as a chained member, layout.c), so an elementwise post-op may look through it: a conv1d's
   [N, C, 1, W] -> [N, C, W] -> GELU -> [N, C, 1, W] (Wav2Vec2's feature convs). */
static int reshaped(const xg_plan *p, int v)
{
    const xe_node *n = p->body->nodes[v];
    if (n->op != XE_OP_RESHAPE)
        return -1;
    int u = n->inputs[0];
    return !p->mat[u] && p->uses[u] == 1 ? u : -1;
}

/* How many times an activation reads its operand: a gated one (SiLU, HardSwish) twice. */
static int act_reads(xg_conv_act a)
{
    return a == XG_CONV_SILU || a == XG_CONV_HARDSWISH ? 2 : 1;
}

/* The activation of top, o = reshape(top) (reshaped): *x the conv m itself when a reshape of it
   is all that is between, else XG_CONV_NONE (*x = o). */
static xg_conv_act activation_through_reshapes(const xg_plan *p, int o, int top, int m, int *x)
{
    xg_conv_act a = activation(p, top, x);
    if (a == XG_CONV_NONE) {
        *x = o;
        return a;
    }
    const xe_node *n = p->body->nodes[*x];
    if (*x != m && n->op == XE_OP_RESHAPE && n->inputs[0] == m && !p->mat[*x] &&
        p->uses[*x] == act_reads(a) && p->uses[m] == 1)
        *x = m;
    if (*x != m) { /* a residual under a reshape: not taken */
        *x = o;
        return XG_CONV_NONE;
    }
    return a;
}

bool xg_conv_epilogue(const xg_plan *p, int i, xg_conv_epi *e)
{
    if (i + 1 >= p->n_steps || p->steps[i].kind != XG_STEP_LIBRARY || p->steps[i + 1].panel ||
        p->steps[i + 1].kind != XG_STEP_LOOP || p->steps[i + 1].n_outs != 1)
        return false;
    int m = p->steps[i].outs[0], o = p->steps[i + 1].outs[0], x;
    if (p->body->nodes[m]->op != XE_OP_CONV2D || p->types[m].dtype != XE_F32 || is_output(p, m) ||
        !xe_shape_equal(&p->types[o].shape, &p->types[m].shape))
        return false;
    *e = (xg_conv_epi){.conv = m,
                       .out = o,
                       .residual = -1,
                       .act = activation(p, o, &x),
                       .src_chained = p->chained[p->body->nodes[m]->inputs[0]],
                       .dst_chained = p->chained[o]};
    if (p->chained[m] != p->chained[o]) /* the primitive writes o in the conv's layout */
        return false;
    int uses = act_reads(e->act), top = reshaped(p, o);
    if (e->act == XG_CONV_NONE && top >= 0) {
        e->act = activation_through_reshapes(p, o, top, m, &x);
        if (e->act != XG_CONV_NONE)
            return true; /* x is m, read by the reshape alone (activation_through_reshapes) */
    }
    if (e->act != XG_CONV_NONE && x == m)
        return p->uses[m] == uses;
    if (p->uses[m] != 1 || (x != o && (p->mat[x] || p->uses[x] != uses)))
        return false;
    e->residual = residual_of(p, x, m);
    return e->residual >= 0 && p->chained[e->residual] == e->dst_chained;
}

bool xg_conv_layout(const xg_plan *p, int i, xg_conv_epi *e)
{
    if (p->steps[i].kind != XG_STEP_LIBRARY)
        return false;
    int m = p->steps[i].outs[0];
    const xe_node *n = p->body->nodes[m];
    if (n->op != XE_OP_CONV2D || !(p->chained[m] || p->chained[n->inputs[0]]))
        return false;
    *e = (xg_conv_epi){.conv = m,
                       .out = m,
                       .residual = -1,
                       .act = XG_CONV_NONE,
                       .src_chained = p->chained[n->inputs[0]],
                       .dst_chained = p->chained[m]};
    return true;
}
