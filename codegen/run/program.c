/*
 * Loading and running compiled clusters. A program holds its own copy of
 * the cluster body and its plan; running it fills the sizes array and
 * runs the plan's steps in order, each materialized buffer made on the
 * program's device before the first step that writes it and released
 * after the last that reads it (lifetime.c): generated kernels (launched by the program's
 * backend: backend.h) and library calls (matmul through the device's
 * kernel, on the CPU the engine's primitive kept per program; on a backend
 * with run_rows the epilogue steps after it then run as one pass over the
 * product's rows, a range per thread: epilogue.c; conv2d through the
 * device's kernel with a per-program cache: run_conv).
 * Loading, launching and unloading the compiled code are the backend's;
 * the materialized constants are copied to the program's device here,
 * once, at load.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpenv.h"
#include "plan.h"
#include "program_impl.h"
#include "xlac/session.h"
#include "xlac/trace.h"

/* Every materialized constant on the program's device: the node's own tensor, or a copy made once.
 */
static xe_code load_consts(xg_program *p, xe_status *st)
{
    if (!(p->consts = calloc((size_t)p->body->n_nodes + 1, sizeof *p->consts)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int i = 0; i < p->body->n_nodes; i++) {
        xe_tensor *v = p->body->nodes[i]->value;
        if (!p->plan->mat[i] || p->body->nodes[i]->op != XE_OP_CONST)
            continue;
        p->consts[i] =
            v->device == p->device ? xe_tensor_retain(v) : xe_tensor_to_device(v, p->device, st);
        if (!p->consts[i])
            return st->code;
    }
    return XE_OK;
}

/* The module's metadata must be this plan's text, then the shares the emitter found (share.h). */
static xe_code check_meta(xg_program *p, const xg_artifact *a, xe_status *st)
{
    char *text = xg_plan_text(p->plan, a->target);
    if (!text)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    size_t len = strlen(text);
    bool ok = a->meta && strncmp(text, a->meta, len) == 0 &&
              xg_shares_parse(a->meta + len, p->plan, &p->shares);
    free(text);
    return ok ? XE_OK
              : xe_fail(st, XE_ERR_COMPILE,
                        "the compiled module does not match this cluster's plan");
}

int xg_program_kernel_step(const xg_program *p, int i)
{
    const xg_share *h = xg_shares_find(&p->shares, i);
    return h ? h->from : i;
}

void xg_program_destroy(xg_program *p)
{
    if (!p)
        return;
    p->backend->runner.unload(p);
    for (int i = 0; p->consts && i < p->body->n_nodes; i++)
        xe_tensor_release(p->consts[i]);
    free(p->consts);
    for (int i = 0; p->kcache && i < p->body->n_nodes; i++)
        if (p->kcache[i].free)
            p->kcache[i].free(p->kcache[i].data);
    free(p->kcache);
    xg_plan_destroy(p->plan);
    xg_shares_free(&p->shares);
    free(p->born);
    free(p->dies);
    free(p->view_of);
    free(p->fn);
    xe_graph_destroy(p->body);
    free(p->in_types);
    free(p);
}

xe_code xg_program_load(const xg_artifact *a, const xe_graph *body, const xe_type *in_types,
                        const xg_options *o, xg_program **out, xe_status *st)
{
    xg_program *p = calloc(1, sizeof *p);
    if (!p)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    p->backend = xg_backend_for(a->target);
    p->device = xg_target_device(a->target);
    p->in_types = malloc(sizeof(xe_type) * (size_t)(body->n_inputs + 1));
    xe_code c = p->in_types ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK)
        memcpy(p->in_types, in_types, sizeof(xe_type) * (size_t)body->n_inputs);
    if (c == XE_OK && !(p->body = xe_graph_clone(body, st)))
        c = st->code;
    if (c == XE_OK)
        c = xg_plan_build(p->body, in_types, a->shape_generic, &p->plan, st);
    if (c == XE_OK)
        c = check_meta(p, a, st);
    if (c == XE_OK)
        c = xg_lifetimes_build(p, st);
    if (c == XE_OK && !(p->fn = calloc((size_t)p->plan->n_steps + 1, sizeof *p->fn)))
        c = xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK && !(p->kcache = calloc((size_t)p->body->n_nodes + 1, sizeof *p->kcache)))
        c = xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK)
        c = p->backend->runner.load(p, a, o, st);
    if (c == XE_OK)
        c = load_consts(p, st);
    if (c != XE_OK) {
        xg_program_destroy(p);
        return c;
    }
    *out = p;
    return XE_OK;
}

/*
 * The node xg_run_matmul hands the kernel: n itself, or (a transpose read through,
 * xg_matmul_operand) a shallow copy whose transpose_a/_b attrs are flipped in attrs[].
 */
static const xe_node *flagged_node(const xe_node *n, const bool flip[2], xe_node *copy,
                                   xe_attr *attrs)
{
    static const char *const names[2] = {"transpose_a", "transpose_b"};
    if (!flip[0] && !flip[1])
        return n;
    *copy = *n;
    int na = 0;
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, names[0]) != 0 && strcmp(n->attrs[i].name, names[1]) != 0)
            attrs[na++] = n->attrs[i];
    for (int k = 0; k < 2; k++)
        attrs[na++] = (xe_attr){.name = (char *)names[k],
                                .kind = XE_ATTR_BOOL,
                                .i = xe_node_attr_bool(n, names[k], false) != flip[k]};
    copy->attrs = attrs;
    copy->n_attrs = na;
    return copy;
}

/*
 * The matmul node's kernel on dev, with kernel cache slot cache (which may be NULL), transposes
 * as flags.
 */
static xe_code run_matmul(const xg_plan *plan, xe_device dev, int node, xe_tensor **bufs,
                          xe_kernel_cache *cache, xe_status *st)
{
    const xe_node *n = plan->body->nodes[node];
    const xe_op_def *d = xe_op_get(n->op);
    bool flip[2];
    int ia = xg_matmul_operand(plan->body, plan->types, node, 0, &flip[0]);
    int ib = xg_matmul_operand(plan->body, plan->types, node, 1, &flip[1]);
    xe_tensor *in[2] = {bufs[ia], bufs[ib]};
    xe_node copy;
    xe_attr *attrs = malloc(sizeof *attrs * (size_t)(n->n_attrs + 2));
    if (!attrs)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    xe_kernel_args a = {.graph = plan->body,
                        .node = flagged_node(n, flip, &copy, attrs),
                        .n_in = 2,
                        .in = in,
                        .out = bufs[node],
                        .cache = cache};
    xe_kernel_fn kernel = xe_op_kernel(d, dev);
    xe_code c =
        kernel ? kernel(&a, st)
               : xe_fail(st, XE_ERR_RUNTIME, "no %s kernel for %s", xe_device_name(dev), n->name);
    free(attrs);
    return c;
}

xe_code xg_run_matmul(const xg_plan *plan, xe_device dev, int node, xe_tensor **bufs, xe_status *st)
{
    return run_matmul(plan, dev, node, bufs, NULL, st);
}

/*
 * For each share (share.h) of a step in [first, last], its array in
 * shared (one per share, n_nodes + 1 pointers each): the run's buffer
 * pointers with the step's buffers in the places of those its kernel
 * names. Refreshed before each group of steps, as buffers come and go.
 */
static void share_ptrs(const xg_program *p, void *const *ptrs, void **shared, int first, int last)
{
    size_t n = (size_t)p->body->n_nodes + 1;
    for (int j = 0; j < p->shares.n; j++)
        if (p->shares.v[j].step >= first && p->shares.v[j].step <= last)
            xg_share_pointers(&p->shares.v[j], ptrs, shared + n * (size_t)j, n);
}

/* The pointers step i's kernel is launched with: the run's, or its share's (shared_ptrs). */
static void *const *step_ptrs(const xg_program *p, int i, void *const *ptrs, void **shared)
{
    for (int j = 0; j < p->shares.n; j++)
        if (p->shares.v[j].step == i)
            return shared + ((size_t)p->body->n_nodes + 1) * (size_t)j;
    return ptrs;
}

/* What each panel of a matmul runs: the program's panel steps [first, last] over the panel's rows.
 */
typedef struct panel_ctx {
    xg_program *p;
    int first, last;
    void *const *ptrs;
    void **shared;
    const int64_t *S;
} panel_ctx;

static void run_panel(void *ctx, int64_t r0, int64_t r1)
{
    const panel_ctx *c = ctx;
    for (int i = c->first; i <= c->last; i++)
        c->p->backend->runner.run_rows(c->p, i, step_ptrs(c->p, i, c->ptrs, c->shared), c->S, r0,
                                       r1);
}

/*
 * LIBRARY step i and the panel steps after it, up to last (epilogue.c):
 * the whole product on the engine (its own blocking and threads, the
 * primitive and packed weights kept in the program's slot), then the
 * epilogue steps one after the other on each range of rows, a range per
 * thread, so that each row's values stay in that core's cache between
 * them. Row panels of single-threaded BLAS calls with the epilogue in the
 * same task lost to this: OpenBLAS repacked the weights for every panel
 * and ran below the engine on each.
 */
static xe_code run_panels(xg_program *p, int i, int last, xe_tensor **bufs, void *const *ptrs,
                          void **shared, const int64_t *S, xe_status *st)
{
    panel_ctx c = {.p = p, .first = i + 1, .last = last, .ptrs = ptrs, .shared = shared, .S = S};
    int m = p->plan->steps[i].outs[0];
    if (run_matmul(p->plan, p->device, m, bufs, &p->kcache[m], st) != XE_OK)
        return st->code;
    const xe_shape *sh = &bufs[m]->shape;
    int64_t cols = sh->rank ? sh->dims[sh->rank - 1] : 1, n = xe_tensor_numel(bufs[m]);
    xe_cpu_rows(cols > 0 ? n / cols : 0, cols, run_panel, &c);
    return XE_OK;
}

/* Whether step i and the next ran as one library call with an epilogue (cuBLASLt); else nothing
 * ran. */
static bool library_epilogue(xg_program *p, int i, xe_tensor **bufs, xe_status *st)
{
    xg_blas_epi e;
    if (!xg_blas_epilogue(p->plan, i, &e))
        return false;
    if (p->backend->runner.matmul_epilogue(p, &e, bufs, st) == XE_OK)
        return true;
    xe_status_clear(st); /* refused: the matmul and the kernel instead */
    return false;
}

/* The inputs' and constants' buffers, borrowed for the run; the others are made as steps need them
 * (lifetime.c). */
static void borrow_buffers(xg_program *p, xe_tensor *const *inputs, xe_tensor **bufs)
{
    const xe_graph *b = p->body;
    for (int k = 0; k < b->n_inputs; k++)
        bufs[b->inputs[k]] = xe_tensor_retain(inputs[k]);
    for (int i = 0; i < b->n_nodes; i++)
        if (p->plan->mat[i] &&
            b->nodes[i]->op == XE_OP_CONST) /* on the program's device since load */
            bufs[i] = xe_tensor_retain(p->consts[i]);
}

/* Same dtype, rank and size-1 dims: what a shape-generic program depends on. */
static bool same_pattern(const xe_type *a, const xe_type *b)
{
    if (a->dtype != b->dtype || a->shape.rank != b->shape.rank)
        return false;
    for (int d = 0; d < a->shape.rank; d++)
        if ((a->shape.dims[d] == 1) != (b->shape.dims[d] == 1))
            return false;
    return true;
}

/*
 * The types of this call must be those the program was built for: equal
 * input types, or for a shape-generic program the same pattern at every
 * node, with the shapes each kernel relies on still holding (the outputs
 * of a multi-output loop share one shape, a row kernel's values are of
 * its rows: xg_step_shape_mismatch). Anything else would index
 * out of bounds, so it is an error, never a guess.
 */
/* max, min and argmax of nothing have no value: not for the program (XE_ERR_UNSUPPORTED: the
   per-op path runs the call and reports the error at the node's line), never the identity. */
static xe_code check_empty_reductions(const xe_graph *b, const xe_type *types, xe_status *st)
{
    for (int i = 0; i < b->n_nodes; i++) {
        const xe_node *n = b->nodes[i];
        if (n->op != XE_OP_REDUCE_MAX && n->op != XE_OP_REDUCE_MIN && n->op != XE_OP_ARGMAX)
            continue;
        if (xe_shape_numel(&types[i].shape) > 0 && xe_shape_numel(&types[n->inputs[0]].shape) == 0)
            return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (%s): %s over an empty axis", n->name,
                           xe_op_name(n->op), xe_op_name(n->op));
    }
    return XE_OK;
}

static xe_code check_types(const xg_program *p, const xe_type *in_types, const xe_type *types,
                           xe_status *st)
{
    const xe_graph *b = p->body;
    char want[128], got[128];
    if (check_empty_reductions(b, types, st) != XE_OK)
        return st->code;
    for (int k = 0; !p->plan->generic && k < b->n_inputs; k++)
        if (in_types[k].dtype != p->in_types[k].dtype ||
            !xe_shape_equal(&in_types[k].shape, &p->in_types[k].shape))
            return xe_fail(st, XE_ERR_RUNTIME,
                           "compiled cluster built for input %d as %s, called with %s", k,
                           xe_type_str(&p->in_types[k], want, sizeof want),
                           xe_type_str(&in_types[k], got, sizeof got));
    if (!p->plan->generic)
        return XE_OK;
    for (int i = 0; i < b->n_nodes; i++)
        if (!same_pattern(&types[i], &p->plan->types[i]))
            return xe_fail(st, XE_ERR_UNSUPPORTED,
                           "shape-generic cluster: node %s is %s, outside the pattern of %s",
                           b->nodes[i]->name, xe_type_str(&types[i], got, sizeof got),
                           xe_type_str(&p->plan->types[i], want, sizeof want));
    for (int i = 0; i < p->plan->n_steps; i++) {
        int bad = xg_step_shape_mismatch(p->plan, i, types);
        if (bad < 0 && (bad = xg_panel_mismatch(p->plan, i, types)) >= 0)
            return xe_fail(st, XE_ERR_UNSUPPORTED,
                           "shape-generic cluster: %s is no longer of its matmul's shape",
                           b->nodes[bad]->name);
        if (bad < 0 && xg_runs_attention(p, i) &&
            (bad = xg_attention_mismatch(p->plan, i, types)) >= 0)
            return xe_fail(st, XE_ERR_UNSUPPORTED,
                           "shape-generic cluster: %s no longer fits its fused attention",
                           b->nodes[bad]->name);
        if (bad >= 0)
            return xe_fail(
                st, XE_ERR_UNSUPPORTED,
                "shape-generic cluster: %s shares a kernel with %s but no longer its shape",
                b->nodes[bad]->name, b->nodes[p->plan->steps[i].outs[0]]->name);
    }
    return XE_OK;
}

/*
 * A conv2d LIBRARY step: the device's per-op kernel (on the CPU the engine's
 * conv primitive, cpu/dnnl_conv.c) with the node's slot of the program's
 * kernel cache, so the primitive is made and the constant weights packed
 * once per program, as op by op they are once per session.
 */
static xe_code run_conv(xg_program *p, int node, xe_tensor **bufs, xe_status *st)
{
    const xe_node *n = p->body->nodes[node];
    const xe_op_def *d = xe_op_get(n->op);
    xe_tensor *in[3] = {NULL, NULL, NULL};
    for (int k = 0; k < n->n_inputs && k < 3; k++)
        in[k] = bufs[n->inputs[k]];
    xe_kernel_args a = {.graph = p->body,
                        .node = n,
                        .n_in = n->n_inputs,
                        .in = in,
                        .out = bufs[node],
                        .cache = &p->kcache[node]};
    xe_kernel_fn kernel = xe_op_kernel(d, p->device);
    if (!kernel)
        return xe_fail(st, XE_ERR_RUNTIME, "no %s kernel for %s", xe_device_name(p->device),
                       n->name);
    return kernel(&a, st); /* the slot's entries are made once, under the engine's lock */
}

/*
 * A conv2d LIBRARY step i on its own: through the backend's library call
 * when a side of it is channels-last (layout.c), else run_conv. The
 * per-op kernel knows NCHW only, so a channels-last conv the engine
 * refuses at this shape is an error of the program (the launch then runs
 * the cluster per op, loudly), never an NCHW read of NHWC data.
 */
static xe_code run_conv_step(xg_program *p, int i, xe_tensor **bufs, xe_status *st)
{
    xg_conv_epi ce;
    if (!p->backend->runner.conv_epilogue || !xg_conv_layout(p->plan, i, &ce))
        return run_conv(p, p->plan->steps[i].outs[0], bufs, st);
    if (p->backend->runner.conv_epilogue(p, &ce, bufs, st) == XE_OK ||
        st->code != XE_ERR_UNSUPPORTED)
        return st->code;
    st->code = XE_ERR_RUNTIME;
    return xe_status_prefix(st, "a channels-last conv step: ");
}

/*
 * Step i, or (a matmul with its epilogue: xg_group_last gave last) the
 * steps that run with it; *next: the step after those that ran.
 */
static xe_code run_step(xg_program *p, int i, int last, const xe_type *types, xe_tensor **bufs,
                        void *const *ptrs, void **shared, const int64_t *S, int *next,
                        xe_status *st)
{
    const xg_step *s = &p->plan->steps[i];
    xg_conv_epi ce;
    *next = i + 1;
    if (xg_step_is_view(p, i))
        return XE_OK; /* its buffer views its input's (lifetime.c) */
    if (xg_runs_attention(p, i)) {
        *next = last + 1;
        return p->backend->runner.attention(p, i, last, types, bufs, ptrs, S, st);
    }
    if (p->backend->runner.conv_epilogue && xg_conv_epilogue(p->plan, i, &ce)) {
        if (p->backend->runner.conv_epilogue(p, &ce, bufs, st) == XE_OK) {
            *next = i + 2;
            return XE_OK;
        }
        if (st->code != XE_ERR_UNSUPPORTED)
            return st->code;
        xe_status_clear(st); /* refused (a shape it cannot take): the conv, then the kernel */
        return run_conv_step(p, i, bufs, st);
    }
    if (s->kind == XG_STEP_LIBRARY && p->backend->runner.run_rows && last > i) {
        *next = last + 1;
        return run_panels(p, i, last, bufs, ptrs, shared, S, st);
    }
    if (s->kind == XG_STEP_LIBRARY && p->backend->runner.matmul_epilogue &&
        library_epilogue(p, i, bufs, st)) {
        *next = i + 2;
        return XE_OK;
    }
    if (s->kind == XG_STEP_LIBRARY && p->body->nodes[s->outs[0]]->op == XE_OP_CONV2D)
        return run_conv_step(p, i, bufs, st);
    if (s->kind == XG_STEP_LIBRARY &&
        xe_device_is_host(p->device)) /* the engine's primitive, kept */
        return run_matmul(p->plan, p->device, s->outs[0], bufs, &p->kcache[s->outs[0]], st);
    if (s->kind == XG_STEP_LIBRARY)
        return xg_run_matmul(p->plan, p->device, s->outs[0], bufs, st);
    return p->backend->runner.launch(p, i, types, step_ptrs(p, i, ptrs, shared), S, st);
}

/*
 * With a trace on, steps [i, next) of a CPU program as one slice inside its cluster launch
 * ("cluster step": the kernel name, what it is, and its output's name), so a trace shows where
 * a cluster's time goes (bench/trace_profile.py sums them). GPU steps are asynchronous: not timed
 * here.
 */
static void trace_step(const xg_program *p, int i, int next, double t0)
{
    static const char *const kinds[] = {[XG_STEP_LOOP] = "loop",
                                        [XG_STEP_REDUCE] = "reduce",
                                        [XG_STEP_SOFTMAX] = "softmax",
                                        [XG_STEP_LIBRARY] = "library",
                                        [XG_STEP_ROW] = "row"};
    const xg_step *s = &p->plan->steps[i];
    const xe_node *out = p->body->nodes[s->outs[0]];
    const char *what = xg_runs_attention(p, i)      ? "fused attention"
                       : s->kind == XG_STEP_LIBRARY ? xe_op_name(out->op)
                                                    : kinds[s->kind];
    char name[96], ename[256], args[400];
    xg_step_name(i, name, sizeof name);
    size_t u = strlen(name);
    snprintf(name + u, sizeof name - u, " %s%s", what,
             next - i > 1 && !s->attention ? " + epilogue" : "");
    xe_trace_json_escape(out->name, ename, sizeof ename);
    snprintf(args, sizeof args, "\"kind\":\"%s\",\"steps\":%d,\"out\":\"%s\"", what, next - i,
             ename);
    xe_trace_slice(name, "cluster step", t0, xe_now_us() - t0, args);
}

/* Every step of the plan in order, each group's buffers made before it and released after. */
static xe_code run_steps(xg_program *p, const xe_type *types, xe_tensor **bufs, void **ptrs,
                         void **shared, const int64_t *S, xe_status *st)
{
    xe_code c = XE_OK;
    xg_fpenv env; /* the process's floating-point mode outlives no kernel's */
    xg_fpenv_save(&env);
    for (int i = 0, next = 0; c == XE_OK && i < p->plan->n_steps; i = next) {
        int last = xg_group_last(p, i);
        /* a fused attention's values before its product live in the threads' tiles */
        if ((c = xg_buffers_make(p, types, xg_runs_attention(p, i) ? last : i, last, bufs, ptrs,
                                 st)) != XE_OK)
            break;
        share_ptrs(p, ptrs, shared, i, last);
        double t0 = xe_device_is_host(p->device) && xe_trace_on() && !xg_step_is_view(p, i)
                        ? xe_now_us()
                        : 0;
        c = run_step(p, i, last, types, bufs, ptrs, shared, S, &next, st);
        if (t0 > 0 && c == XE_OK)
            trace_step(p, i, next, t0);
        xg_buffers_release(p, next - 1, bufs, ptrs);
    }
    xg_fpenv_restore(&env);
    return c;
}

xe_code xg_program_run(xg_program *p, xe_tensor *const *inputs, int n_inputs, xe_tensor **outputs,
                       int n_outputs, xe_status *st)
{
    const xe_graph *b = p->body;
    if (n_inputs != b->n_inputs || n_outputs != b->n_outputs)
        return xe_fail(st, XE_ERR_RUNTIME,
                       "compiled cluster called with the wrong number of values");
    xe_type *types = calloc((size_t)b->n_nodes + 1, sizeof *types);
    xe_tensor **bufs = calloc((size_t)b->n_nodes + 1, sizeof *bufs);
    void **ptrs = calloc((size_t)b->n_nodes + 1, sizeof *ptrs);
    int64_t *S = calloc((size_t)p->plan->n_sizes + 1, sizeof *S);
    xe_type *in_types = calloc((size_t)n_inputs + 1, sizeof *in_types);
    xe_code c = (types && bufs && ptrs && S && in_types)
                    ? XE_OK
                    : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int k = 0; c == XE_OK && k < n_inputs; k++)
        in_types[k] = (xe_type){inputs[k]->dtype, inputs[k]->shape};
    if (c == XE_OK && p->plan->generic)
        c = xg_body_types(b, in_types, types, st);
    else if (c == XE_OK)
        memcpy(types, p->plan->types, sizeof *types * (size_t)b->n_nodes);
    if (c == XE_OK)
        c = check_types(p, in_types, types, st);
    if (c == XE_OK)
        borrow_buffers(p, inputs, bufs);
    for (int i = 0; c == XE_OK && i < b->n_nodes; i++) {
        ptrs[i] = bufs[i] ? bufs[i]->data : NULL;
        for (int d = 0; d < types[i].shape.rank; d++)
            S[p->plan->soff[i] + d] = types[i].shape.dims[d];
    }
    void **shared = p->shares.n
                        ? malloc(sizeof *shared * ((size_t)b->n_nodes + 1) * (size_t)p->shares.n)
                        : NULL;
    if (c == XE_OK && p->shares.n && !shared)
        c = xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK)
        c = run_steps(p, types, bufs, ptrs, shared, S, st);
    free(shared);
    for (int k = 0; c == XE_OK && k < n_outputs; k++)
        outputs[k] = xe_tensor_retain(bufs[b->outputs[k]]);
    for (int i = 0; bufs && i < b->n_nodes; i++)
        xe_tensor_release(bufs[i]);
    free(types);
    free(bufs);
    free(ptrs);
    free(S);
    free(in_types);
    return c;
}
