/*
 * Fused attention: a matmul whose panel steps (epilogue.c) are followed by
 * a second matmul that reads what they wrote, softmax(Q·Kᵀ·scale + mask)·V
 * as exporters write it, runs as one step per block of rows: the scores
 * of a block are computed into a tile of the thread's own, the panel steps
 * run on that tile, and the tile times V is written to the output (the C
 * target's attention slot, targets/c/attention_step.c). The score matrix,
 * batch × heads × Lq × Lk, is never written whole.
 *
 * Step i (the Q·Kᵀ matmul) starts one when:
 *   - it is an f32 matmul of rank >= 3 (batch, heads) with panel steps
 *     after it, and the step after those is an f32 matmul (·V) whose left
 *     operand, read as it is (no transpose), is a value the group wrote,
 *     of the scores' shape, and whose right operand is not;
 *   - neither K nor V is a constant: a product with weights (an MLP's
 *     two layers match the rest) keeps the engine's primitive, whose
 *     weights are packed once, where a block's sgemm would pack them
 *     again for every block;
 *   - the ·V product has no panel steps of its own;
 *   - every value the group writes is of the scores' rows: the scores'
 *     shape, or one value per row (a row kernel's reductions);
 *   - the ·V product has the scores' batch dims and rows;
 *   - no value the group writes is a cluster output or read after the ·V
 *     step: the tiles are all there is of them.
 * The match is marked on the step (xg_step.attention); a backend without
 * an attention slot ignores the mark, as one without run_rows ignores
 * panels.
 */
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "xlac/op.h"

static bool f32_matmul(const xg_plan *p, int node)
{
    return p->body->nodes[node]->op == XE_OP_MATMUL && p->types[node].dtype == XE_F32 &&
           p->types[node].shape.rank >= 2;
}

/* The step of the product after step i's panel steps, or -1. */
static int product_after_panels(const xg_plan *p, int i)
{
    int j = i + 1;
    while (j < p->n_steps && p->steps[j].panel)
        j++;
    if (j == i + 1 || j >= p->n_steps || p->steps[j].kind != XG_STEP_LIBRARY)
        return -1;
    return f32_matmul(p, p->steps[j].outs[0]) ? j : -1;
}

/* Marks in group[] the values steps [first, last) write. */
static void mark_group(const xg_plan *p, int first, int last, bool *group)
{
    memset(group, 0, (size_t)p->body->n_nodes * sizeof *group);
    for (int j = first; j < last; j++)
        for (int k = 0; k < p->steps[j].n_outs; k++)
            group[p->steps[j].outs[k]] = true;
}

typedef struct outside_read {
    const bool *group;
    bool hit;
} outside_read;

static void note_read(void *ctx, int buf)
{
    outside_read *r = ctx;
    r->hit |= r->group[buf];
}

/* Whether a value in group[] is a cluster output or read by a step after step pv. */
static bool read_outside(const xg_plan *p, int pv, const bool *group)
{
    for (int k = 0; k < p->body->n_outputs; k++)
        if (group[p->body->outputs[k]])
            return true;
    outside_read r = {.group = group, .hit = false};
    for (int j = pv + 1; j < p->n_steps && !r.hit; j++)
        for (int k = 0; k < p->steps[j].n_outs; k++)
            xg_value_reads(p, p->steps[j].outs[k], note_read, &r);
    return r.hit;
}

int xg_attention_mismatch(const xg_plan *p, int i, const xe_type *types)
{
    int pv_step = product_after_panels(p, i);
    if (pv_step < 0)
        return -1;
    int qk = p->steps[i].outs[0], pv = p->steps[pv_step].outs[0];
    bool flip;
    int pm = xg_matmul_operand(p->body, types, pv, 0, &flip);
    const xe_shape *s = &types[qk].shape, *o = &types[pv].shape;
    int64_t rows = xg_panel_rows(types, qk), lk = s->dims[s->rank - 1];
    if (!xe_shape_equal(&types[pm].shape, s) || o->rank != s->rank ||
        o->dims[o->rank - 2] != s->dims[s->rank - 2])
        return pm;
    for (int d = 0; d + 2 < s->rank; d++)
        if (o->dims[d] != s->dims[d])
            return pv;
    for (int j = i; j < pv_step; j++)
        for (int k = 0; k < p->steps[j].n_outs; k++) {
            int v = p->steps[j].outs[k];
            int64_t n = xe_shape_numel(&types[v].shape);
            if (n != rows * lk && n != rows)
                return v;
        }
    return -1;
}

/* The product step of the fused attention step i starts, or -1 (the conditions above). */
static int attention_at(const xg_plan *p, int i, bool *group)
{
    int qk = p->steps[i].outs[0];
    int pv_step =
        p->steps[i].kind == XG_STEP_LIBRARY && f32_matmul(p, qk) && p->types[qk].shape.rank >= 3
            ? product_after_panels(p, i)
            : -1;
    if (pv_step < 0 || (pv_step + 1 < p->n_steps && p->steps[pv_step + 1].panel))
        return -1;
    int pv = p->steps[pv_step].outs[0];
    bool flip_p, flip_v, flip_k;
    int pm = xg_matmul_operand(p->body, p->types, pv, 0, &flip_p);
    int vm = xg_matmul_operand(p->body, p->types, pv, 1, &flip_v);
    int km = xg_matmul_operand(p->body, p->types, qk, 1, &flip_k);
    mark_group(p, i, pv_step, group);
    if (!group[pm] || flip_p || xe_node_attr_bool(p->body->nodes[pv], "transpose_a", false) ||
        group[vm] || p->types[vm].shape.rank < 2 || p->types[pm].dtype != XE_F32 ||
        p->body->nodes[km]->op == XE_OP_CONST || p->body->nodes[vm]->op == XE_OP_CONST)
        return -1;
    if (xg_attention_mismatch(p, i, p->types) >= 0 || read_outside(p, pv_step, group))
        return -1;
    return pv_step;
}

xe_code xg_plan_attention(xg_plan *p, xe_status *st)
{
    bool *group = calloc((size_t)p->body->n_nodes + 1, sizeof *group);
    if (!group)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory planning fused attention");
    for (int i = 0; i < p->n_steps; i++)
        p->steps[i].attention = attention_at(p, i, group) >= 0;
    free(group);
    return XE_OK;
}

int xg_attention_product(const xg_plan *p, int i)
{
    return p->steps[i].attention ? product_after_panels(p, i) : -1;
}

int xg_attention_start(const xg_plan *p, int j)
{
    int i = j;
    while (i > 0 && (p->steps[i].panel || i == j))
        i--;
    return xg_attention_product(p, i) >= j && i < j ? i : -1;
}
