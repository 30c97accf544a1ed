/*
 * How a plan runs and reads: kernel names, the GPU's launch geometry and
 * argument block (what targets/cuda/program.c launches with), and the plan text,
 * the human-readable plan of the dumps that is also the artifact's
 * metadata (a loaded program re-derives it and must find the same). How
 * a step is launched is the backend's launch_text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "plan.h"
#include "xlac/op.h"

void xg_step_name(int i, char *buf, size_t len)
{
    snprintf(buf, len, "xg_k%d", i);
}

static const char *kind_name(const xg_step *s)
{
    switch (s->kind) {
    case XG_STEP_LOOP:
        return s->n_outs > 1 ? "loop (multi-output)" : "loop";
    case XG_STEP_REDUCE:
        return s->column ? "reduce (column order)" : "reduce (row order)";
    case XG_STEP_SOFTMAX:
        return "softmax rows";
    case XG_STEP_LIBRARY:
        return "library call (BLAS, oneDNN)";
    case XG_STEP_ROW:
        return "row kernel";
    }
    return "?";
}

/* Ops computed inline by a step: the unmaterialized producers of its outputs. */
static void list_ops(const xg_plan *p, int node, bool *seen, char *buf, size_t len)
{
    const xe_node *n = p->body->nodes[node];
    if (seen[node])
        return;
    seen[node] = true;
    for (int k = 0; k < n->n_inputs; k++)
        if (!p->mat[n->inputs[k]])
            list_ops(p, n->inputs[k], seen, buf, len);
    size_t used = strlen(buf);
    if (n->op != XE_OP_CONST && used + 40 < len)
        snprintf(buf + used, len - used, " %s(%s)", n->name, xe_op_name(n->op));
}

/*
 * A node's type as plan text. A shape-generic plan prints its pattern
 * ("f32[?,1,?]": the program depends on ranks and size-1 dims only), so
 * the metadata of a generic artifact is the same at every shape it serves.
 */
static char *plan_type_str(const xg_plan *p, int node, char *buf, size_t len)
{
    if (!p->generic)
        return xe_type_str(&p->types[node], buf, len);
    const xe_type *t = &p->types[node];
    size_t u = (size_t)snprintf(buf, len, "%s[", xe_dtype_name(t->dtype));
    for (int d = 0; d < t->shape.rank && u < len; d++)
        u += (size_t)snprintf(buf + u, len - u, "%s%s", d ? "," : "",
                              t->shape.dims[d] == 1 ? "1" : "?");
    if (u < len)
        snprintf(buf + u, len - u, "]");
    return buf;
}

int64_t xg_launch_blocks(const xg_plan *p, int i, const xe_type *types, const xg_geometry *g,
                         int64_t max_blocks)
{
    bool per_block;
    int64_t items = xg_step_items(p, i, types, g, &per_block);
    if (items <= 0)
        return 0;
    int64_t want = per_block ? items : (items + g->threads - 1) / g->threads;
    want *= xg_step_chunks(p, i, types, g, max_blocks); /* then want <= max_blocks */
    if (xg_step_is_split(p, i, types) && max_blocks > g->split_blocks)
        max_blocks = g->split_blocks;
    return want < max_blocks ? want : max_blocks;
}

/* Bytes of the argument block, as emit_prelude declares struct xg_args: pointers, sizes, workspace.
 */
static size_t args_bytes(const xg_plan *p)
{
    return ((size_t)p->body->n_nodes + (size_t)(p->n_sizes ? p->n_sizes : 1) + 1) * 8;
}

bool xg_args_in_memory(const xg_plan *p)
{
    return args_bytes(p) > XG_ARGS_BY_VALUE;
}

size_t xg_pack_args(const xg_plan *p, void *const *ptrs, const int64_t *S, void *workspace,
                    char *args, size_t cap)
{
    size_t nb = (size_t)p->body->n_nodes, ns = (size_t)(p->n_sizes ? p->n_sizes : 1);
    size_t len = args_bytes(p);
    if (!args) /* asked for the size */
        return len;
    if (len > cap)
        return 0;
    memset(args, 0, len);
    memcpy(args, ptrs, nb * sizeof(void *));
    memcpy(args + nb * 8, S, (size_t)p->n_sizes * sizeof(int64_t));
    memcpy(args + (nb + ns) * 8, &workspace, sizeof(void *));
    return len;
}

/* The items of step i as text: a count, or ? in a shape-generic plan. */
void xg_items_text(const xg_plan *p, int64_t items, const char *unit, char *buf, size_t len)
{
    if (p->generic)
        snprintf(buf, len, "? %s", unit);
    else
        snprintf(buf, len, "%lld %s", (long long)items, unit);
}

char *xg_plan_text(const xg_plan *p, xg_target target)
{
    size_t cap = 4096 + (size_t)p->n_steps * 2048;
    char *buf = calloc(1, cap);
    bool *seen = calloc((size_t)p->body->n_nodes + 1, sizeof *seen);
    if (!buf || !seen) {
        free(buf);
        free(seen);
        return NULL;
    }
    size_t u = (size_t)snprintf(buf, cap, "plan: %d step(s)%s\n", p->n_steps,
                                p->generic ? ", shape-generic (sizes are arguments)" : "");
    const xg_backend *b = xg_backend_for(target);
    if (b->render.plan_header)
        b->render.plan_header(p, buf + u, cap - u);
    u += strlen(buf + u);
    for (int i = 0; i < p->n_steps && u < cap; i++) {
        const xg_step *s = &p->steps[i];
        char name[32], ty[128], ops[768] = "";
        xg_step_name(i, name, sizeof name);
        memset(seen, 0, (size_t)p->body->n_nodes * sizeof *seen);
        for (int k = 0; k < s->n_outs; k++)
            list_ops(p, s->outs[k], seen, ops, sizeof ops);
        int over = s->kind == XG_STEP_REDUCE ? p->body->nodes[s->outs[0]]->inputs[0]
                   : s->kind == XG_STEP_ROW  ? s->x
                                             : s->outs[0];
        char launch[512];
        b->render.launch_text(p, i, launch, sizeof launch);
        u += (size_t)snprintf(buf + u, cap - u, "%s: %s over %s, ops:%s\n  launch: %s\n", name,
                              kind_name(s), plan_type_str(p, over, ty, sizeof ty), ops, launch);
        for (int ph = 0; s->kind == XG_STEP_ROW && ph < s->n_phases && u < cap; ph++) {
            static const char *role[] = {"", "reduce ", "then "};
            u += (size_t)snprintf(buf + u, cap - u, "  phase %d (one pass over the row):", ph);
            for (int k = 0; k < s->n_outs && u < cap; k++)
                if (s->phase[k] == ph)
                    u += (size_t)snprintf(buf + u, cap - u, " %s%s", role[s->role[k]],
                                          p->body->nodes[s->outs[k]]->name);
            if (u < cap)
                u += (size_t)snprintf(buf + u, cap - u, "\n");
        }
    }
    for (int i = 0; i < p->body->n_nodes && u < cap; i++) {
        char ty[128];
        if (p->mat[i])
            u += (size_t)snprintf(buf + u, cap - u, "buffer %s: %s%s\n", p->body->nodes[i]->name,
                                  plan_type_str(p, i, ty, sizeof ty),
                                  p->body->nodes[i]->op == XE_OP_INPUT ? " (input)" : "");
    }
    free(seen);
    return buf;
}
