/*
 * When each buffer of a program lives: made just before the first step
 * that writes it, released right after the last step that reads it
 * (program.c). A run then holds only the buffers in use, not every
 * intermediate of every layer at once: less memory, and the allocator
 * hands a later layer the pages an earlier one let go, so a first run does
 * not fault in fresh pages for each (the ONNX encoder's first launch was
 * 1.5x its steady one).
 *
 * A loop step whose one output is a reshape of a value in memory only
 * copies it (the plan materializes the reshape because a library step or
 * a row kernel reads it, or because it is a body output): on a host that
 * step does not run, and its buffer is a view of its input's
 * (xe_tensor_alias, which holds the input's bytes while it lives), as op
 * by op. DeBERTa's attention copied 2 MB three times a layer so at batch 8.
 */
#include <limits.h>
#include <stdlib.h>

#include "plan.h"
#include "program_impl.h"

typedef struct read_mark {
    int *dies;
    int step;
} read_mark;

/* Step m.step reads buf: it lives at least until then. */
static void mark_read(void *ctx, int buf)
{
    read_mark *m = ctx;
    if (m->dies[buf] < m->step)
        m->dies[buf] = m->step;
}

int xg_step_view_source(const xg_plan *plan, int i)
{
    const xg_step *s = &plan->steps[i];
    if (s->kind != XG_STEP_LOOP || s->n_outs != 1 || s->panel || s->attention)
        return -1;
    const xe_node *n = plan->body->nodes[s->outs[0]];
    if (n->op != XE_OP_RESHAPE || n->n_inputs != 1 || !plan->mat[n->inputs[0]] ||
        plan->types[n->inputs[0]].dtype != plan->types[s->outs[0]].dtype)
        return -1;
    return n->inputs[0];
}

bool xg_step_is_view(const xg_program *p, int i)
{
    return p->view_of[p->plan->steps[i].outs[0]] >= 0;
}

xe_code xg_lifetimes_build(xg_program *p, xe_status *st)
{
    const xg_plan *plan = p->plan;
    int n = plan->body->n_nodes;
    p->born = malloc(sizeof *p->born * (size_t)(n + 1));
    p->dies = malloc(sizeof *p->dies * (size_t)(n + 1));
    p->view_of = malloc(sizeof *p->view_of * (size_t)(n + 1));
    if (!p->born || !p->dies || !p->view_of)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int j = 0; j < n; j++) {
        p->born[j] = -1; /* inputs and constants: borrowed for the whole run */
        p->dies[j] = -1;
        p->view_of[j] = -1;
    }
    if (xe_device_is_host(p->device)) /* xe_tensor_alias makes host tensors */
        for (int i = 0; i < plan->n_steps; i++)
            p->view_of[plan->steps[i].outs[0]] = xg_step_view_source(plan, i);
    for (int i = 0; i < plan->n_steps; i++)
        for (int k = 0; k < plan->steps[i].n_outs; k++) {
            int o = plan->steps[i].outs[k];
            p->born[o] = i;
            if (p->dies[o] < i)
                p->dies[o] = i;
            xg_value_reads(plan, o, mark_read, &(read_mark){p->dies, i});
        }
    for (int k = 0; k < plan->body->n_outputs; k++)
        p->dies[plan->body->outputs[k]] = INT_MAX; /* handed to the caller */
    for (int j = 0; j < n; j++)
        if (p->born[j] < 0)
            p->dies[j] = INT_MAX;
    return XE_OK;
}

bool xg_runs_attention(const xg_program *p, int i)
{
    return p->plan->steps[i].attention && p->backend->runner.attention &&
           p->backend->runner.run_rows;
}

/* The last step that runs with step i: the panel steps after its matmul (and the product after them
   in a fused attention), or a cuBLASLt epilogue step. */
int xg_group_last(const xg_program *p, int i)
{
    const xg_plan *plan = p->plan;
    xg_blas_epi e;
    xg_conv_epi ce;
    if (plan->steps[i].kind != XG_STEP_LIBRARY)
        return i;
    if (xg_runs_attention(p, i))
        return xg_attention_product(plan, i);
    if (p->backend->runner.conv_epilogue && xg_conv_epilogue(plan, i, &ce))
        return i + 1; /* the epilogue step's output is written by the conv's call */
    if (p->backend->runner.run_rows) {
        int last = i;
        while (last + 1 < plan->n_steps && plan->steps[last + 1].panel)
            last++;
        return last;
    }
    return p->backend->runner.matmul_epilogue && xg_blas_epilogue(plan, i, &e) ? i + 1 : i;
}

xe_code xg_buffers_make(xg_program *p, const xe_type *types, int first, int last, xe_tensor **bufs,
                        void **ptrs, xe_status *st)
{
    for (int j = 0; j < p->body->n_nodes; j++) {
        if (p->born[j] < first || p->born[j] > last || bufs[j])
            continue;
        int v = p->view_of[j];
        if (v >= 0 && !bufs[v]) /* its step reads v, so v lives until it */
            return xe_fail(st, XE_ERR_RUNTIME, "node %s: the buffer it views is gone",
                           p->body->nodes[j]->name);
        bufs[j] = v >= 0 ? xe_tensor_alias(bufs[v], &types[j].shape, st)
                         : xe_tensor_new(types[j].dtype, &types[j].shape, p->device, st);
        if (!bufs[j])
            return st->code;
        ptrs[j] = bufs[j]->data;
    }
    return XE_OK;
}

void xg_buffers_release(const xg_program *p, int done, xe_tensor **bufs, void **ptrs)
{
    for (int j = 0; j < p->body->n_nodes; j++)
        if (bufs[j] && p->born[j] >= 0 && p->dies[j] <= done) {
            xe_tensor_release(bufs[j]);
            bufs[j] = NULL;
            ptrs[j] = NULL;
        }
}
