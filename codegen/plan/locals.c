/*
 * Values kept in registers. A loop value read twice gets a buffer (the
 * plan's step 3), so that it is computed once. When the merge of step 5
 * puts every reader of it into the loop kernel that computes it, that
 * buffer is only ever written: the emitter computes a value once per index
 * in a kernel and hands later readers the same variable (its memo), so the
 * value can stay in a register. Dropping the buffer removes one store per
 * element (act_chain's erf-GELU, read by its sigmoid and by the final add,
 * was 32 MB of writes a run). A drop that would make an inline chain longer
 * than XG_MAX_INLINE (the emitters' recursion bound) is not made.
 *
 * Only values with two or more readers are candidates (a value with one
 * reader has a buffer to cut an inline chain, and keeps it), and clusters
 * of more than XG_LOCALS_MAX_NODES nodes are left as they are: each drop is
 * checked over the whole body, and a 10^5-node chain planned in quadratic
 * time took minutes under ASan (test_hostile).
 */
#include <stdlib.h>
#include <string.h>

#include "plan.h"

enum { XG_LOCALS_MAX_NODES = 5000 };

int xg_inline_depth(const xg_plan *p, int i, const int *depth)
{
    if (p->mat[i])
        return 0;
    const xe_node *nd = p->body->nodes[i];
    int deepest = 0;
    for (int k = 0; k < nd->n_inputs; k++)
        if (nd->inputs[k] < i && depth[nd->inputs[k]] > deepest)
            deepest = depth[nd->inputs[k]];
    return deepest + 1;
}

/* Whether every inline chain stays within XG_MAX_INLINE ops at the current materialization. */
static bool depth_ok(const xg_plan *p, int *depth)
{
    for (int i = 0; i < p->body->n_nodes; i++)
        if ((depth[i] = xg_inline_depth(p, i, depth)) > XG_MAX_INLINE)
            return false;
    return true;
}

/* Drops the outputs of loop step s that only s reads; inside[] marks s's outputs on entry. */
static void drop_in_step(xg_plan *p, xg_step *s, bool *inside, int *depth)
{
    int w = 0;
    for (int k = 0; k < s->n_outs; k++) {
        int o = s->outs[k];
        if (k + 1 < s->n_outs && p->uses[o] >= 2 && xg_read_only_inside(p, o, inside)) {
            p->mat[o] = false;
            if (depth_ok(p, depth)) {
                inside[o] = false; /* now computed inline by its readers, which are inside */
                continue;
            }
            p->mat[o] = true;
        }
        s->outs[w++] = o;
    }
    s->n_outs = w;
}

xe_code xg_plan_locals(xg_plan *p, xe_status *st)
{
    int n = p->body->n_nodes;
    if (n > XG_LOCALS_MAX_NODES)
        return XE_OK;
    bool *inside = calloc((size_t)n + 1, sizeof *inside);
    int *depth = calloc((size_t)n + 1, sizeof *depth);
    if (!inside || !depth) {
        free(inside);
        free(depth);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory planning a cluster");
    }
    for (int i = 0; i < p->n_steps; i++) {
        xg_step *s = &p->steps[i];
        if (s->kind != XG_STEP_LOOP || s->n_outs < 2)
            continue;
        for (int k = 0; k < s->n_outs; k++)
            inside[s->outs[k]] = true;
        drop_in_step(p, s, inside, depth);
        for (int k = 0; k < s->n_outs; k++)
            inside[s->outs[k]] = false;
    }
    free(inside);
    free(depth);
    return XE_OK;
}
