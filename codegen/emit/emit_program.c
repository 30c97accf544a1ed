/*
 * The emitter's walk over a plan (plan.h's xg_emit_program): the
 * backend's prelude, then each step's kernel by its kind (emit_loop.c,
 * emit_reduce.c, emit_row.c), each closed by xg_kernel_end (emit.c). The
 * top of emit/: it calls the kernels' emitters, which call the helpers
 * below them, and none calls back here.
 */
#include <stdlib.h>

#include "emit_impl.h"

/*
 * Whether a CUDA program can do its index math in 32 bits: fixed shapes,
 * every tensor of the cluster under 2^30 elements (so an index, a flat
 * offset and a grid-stride step past the end all fit). NVRTC compiles
 * such a program a third faster, and the GPU runs fewer instructions.
 */
static bool fits_narrow_index(const xg_plan *p)
{
    if (p->generic)
        return false;
    for (int i = 0; i < p->body->n_nodes; i++)
        if (xe_shape_numel(&p->types[i].shape) >= ((int64_t)1 << 30))
            return false;
    return true;
}

char *xg_emit_program(const xg_plan *p, xg_target target, xe_status *st)
{
    return xg_emit_program_shared(p, target, NULL, st);
}

static void emitter_free(em *e)
{
    if (!e)
        return;
    free(e->rowvar);
    free(e->rc_phases);
    free(e->rc_first);
    free(e->var_flags);
    free(e);
}

/* The emitter's state for plan p on target; NULL (st set) when out of memory. */
static em *emitter_new(const xg_plan *p, xg_target target, xg_shares *shares, xe_status *st)
{
    em *e = calloc(1, sizeof *e);
    if (e) {
        e->rowvar = calloc((size_t)p->body->n_nodes + 1, sizeof *e->rowvar);
        e->rc_phases = calloc((size_t)p->body->n_nodes + 1, sizeof *e->rc_phases);
        e->rc_first = calloc((size_t)p->body->n_nodes + 1, sizeof *e->rc_first);
    }
    if (!e || !e->rowvar || !e->rc_phases || !e->rc_first) {
        emitter_free(e);
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    e->p = p;
    e->shares = shares;
    e->b = xg_backend_for(target);
    e->narrow = e->b->render.narrow_index && fits_narrow_index(p);
    e->row_ph = -1;
    return e;
}

char *xg_emit_program_shared(const xg_plan *p, xg_target target, xg_shares *shares, xe_status *st)
{
    em *e = emitter_new(p, target, shares, st);
    if (!e)
        return NULL;
    e->b->render.prelude(e);
    for (int i = 0; i < p->n_steps; i++) {
        const xg_step *s = &p->steps[i];
        e->panel = s->panel && e->b->render.panel_rows_loop;
        e->step = i;
        e->kernel_at = e->text.len;
        switch (s->kind) {
        case XG_STEP_LOOP:
            xg_emit_loop_kernel(e, i, s);
            break;
        case XG_STEP_REDUCE:
            xg_emit_reduce_kernel(e, i, s);
            break;
        case XG_STEP_SOFTMAX:
            xg_emit_softmax_kernel(e, i, s);
            break;
        case XG_STEP_ROW:
            xg_emit_row_kernel(e, i, s);
            break;
        case XG_STEP_LIBRARY:
            continue;
        }
        xg_kernel_end(e);
    }
    char *text = xe_text_take(&e->text);
    if (e->oom || e->unsupported) {
        if (e->unsupported)
            xe_fail(st, XE_ERR_UNSUPPORTED, "cannot generate code: %s", e->why);
        else
            xe_fail(st, XE_ERR_NOMEM, "out of memory generating code");
        free(text);
        text = NULL;
    }
    xg_kept_free(e);
    emitter_free(e);
    return text;
}
