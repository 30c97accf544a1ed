/*
 * Fusion planning: which values of a cluster live in memory and which
 * kernels compute them.
 *
 *   1. types     every body node's concrete type, from the input types
 *   2. uses      consumers per node (body outputs count as uses)
 *   3. mat       materialize inputs, non-scalar constants, outputs,
 *                reductions, softmax, matmul, values read twice, and
 *                f32 ops that call libm (sin, cos, pow) with their operands
 *   4. steps     one step per materialized computed node, in order
 *   5. merge     consecutive loop steps of one shape become one kernel
 *                with several outputs (multi-output fusion); a libm op's
 *                loop stays alone, so that every other loop vectorizes;
 *                a value that only its own kernel reads loses its
 *                buffer (locals.c)
 *   6. rows      a row reduction and the steps after it that read it back
 *                over the same rows become one row kernel (fusion.c's
 *                row_groups: softmax and layer norm written out)
 *   7. panels    steps after a matmul that run on its rows with it, a range
 *                of rows per thread, after the engine's product (epilogue.c)
 *   8. layouts   values kept channels-last between convs (layout.c)
 *   9. verify    the plan's invariants (xg_plan_verify)
 *
 * What the steps' own files (attention.c, epilogue.c, locals.c) read back
 * about values (a step's kind, a product's operands, a reduction's axes,
 * what a value's computation reads) is values.c's, a leaf below them all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "xlac/op.h"

xe_code xg_body_types(const xe_graph *body, const xe_type *in_types, xe_type *types, xe_status *st)
{
    for (int i = 0; i < body->n_nodes; i++) {
        const xe_node *n = body->nodes[i];
        if (n->op == XE_OP_INPUT) {
            int pos = 0;
            while (pos < body->n_inputs && body->inputs[pos] != i)
                pos++;
            types[i] = in_types[pos];
            continue;
        }
        const xe_op_def *d = xe_op_get(n->op);
        if (!d || !d->infer)
            return xe_fail(st, XE_ERR_UNSUPPORTED,
                           "node %s (%s) cannot be planned: no shape function", n->name,
                           xe_op_name(n->op));
        xe_type few[16], *in = n->n_inputs > 16 ? malloc(sizeof *in * (size_t)n->n_inputs) : few;
        if (!in)
            return xe_fail(st, XE_ERR_NOMEM, "out of memory planning node %s", n->name);
        for (int k = 0; k < n->n_inputs; k++)
            in[k] = types[n->inputs[k]];
        types[i] = n->type;
        xe_code c = d->infer(n, in, n->n_inputs, &types[i], st);
        if (in != few)
            free(in);
        if (c != XE_OK)
            return xe_status_prefix(st, "node %s (%s): ", n->name, xe_op_name(n->op));
    }
    return XE_OK;
}

static bool is_scalar_const(const xe_node *n)
{
    return n->op == XE_OP_CONST && n->value && xe_tensor_numel(n->value) == 1;
}

/* Ops whose value is just an index map of their input: cheap to recompute. */
static bool is_index_map(int op)
{
    return op == XE_OP_RESHAPE || op == XE_OP_TRANSPOSE || op == XE_OP_BROADCAST_TO ||
           op == XE_OP_SLICE || op == XE_OP_IOTA;
}

/*
 * Node i is an f32 (or f16) op whose arithmetic is a libm call that gcc
 * does not vectorize (sin, cos, pow): any loop holding it runs scalar, so
 * it gets a loop of its own, its operands read from memory, and the
 * loops around it vectorize (no slower than the per-op kernels).
 */
static bool scalar_call(const xg_plan *p, int i)
{
    const xe_node *n = p->body->nodes[i];
    xe_dtype dt = p->types[i].dtype;
    return n->op != XE_OP_INPUT && n->op != XE_OP_CONST && (dt == XE_F32 || dt == XE_F16) &&
           (xe_op_get(n->op)->flags & XE_OPF_SCALAR_CALL) != 0;
}

static bool step_has_scalar_call(const xg_plan *p, const xg_step *s)
{
    for (int k = 0; k < s->n_outs; k++)
        if (scalar_call(p, s->outs[k]))
            return true;
    return false;
}

/* A libm op's value and its operands (scalar constants aside) live in memory. */
static void mark_scalar_calls(xg_plan *p)
{
    const xe_graph *b = p->body;
    for (int i = 0; i < b->n_nodes; i++) {
        if (!scalar_call(p, i))
            continue;
        p->mat[i] = true;
        for (int k = 0; k < b->nodes[i]->n_inputs; k++)
            if (!is_scalar_const(b->nodes[b->nodes[i]->inputs[k]]))
                p->mat[b->nodes[i]->inputs[k]] = true;
    }
}

static void mark_materialized(xg_plan *p)
{
    const xe_graph *b = p->body;
    for (int i = 0; i < b->n_outputs; i++)
        p->mat[b->outputs[i]] = true;
    for (int i = 0; i < b->n_nodes; i++) {
        const xe_node *n = b->nodes[i];
        if (n->op == XE_OP_INPUT || (n->op == XE_OP_CONST && !is_scalar_const(n)))
            p->mat[i] = true;
        else if (n->op != XE_OP_CONST && xg_step_kind_of(n) != XG_STEP_LOOP)
            p->mat[i] = true;
        else if (p->uses[i] >= 2 && n->op != XE_OP_CONST && !is_index_map(n->op))
            p->mat[i] = true;
        if (n->op != XE_OP_CONST && n->op != XE_OP_INPUT && xg_step_kind_of(n) == XG_STEP_LIBRARY)
            for (int k = 0; k < n->n_inputs; k++) { /* BLAS reads memory */
                bool flip;
                p->mat[xg_matmul_operand(b, p->types, i, k, &flip)] = true;
            }
    }
    mark_scalar_calls(p);
}

/* Reduced dims are all outside the kept ones and the innermost dim is kept. */
static bool is_column_reduce(const xg_plan *p, const xe_node *n)
{
    const xe_shape *s = &p->types[n->inputs[0]].shape;
    if (s->rank < 2 || xe_op_get(n->op)->cls == XE_CLASS_ARGMAX)
        return false;
    bool mask[XE_MAX_RANK] = {0};
    xg_reduce_mask(n, s->rank, mask); /* no axes: every dim, the innermost too */
    if (mask[s->rank - 1])
        return false;
    bool seen_kept = false;
    for (int d = 0; d < s->rank; d++) {
        if (!mask[d])
            seen_kept = true;
        else if (seen_kept)
            return false;
    }
    return true;
}

/*
 * Whether node (computed inline at the loop's index when `same` holds)
 * reads an output of step prev only at the same index, so that one loop
 * can compute both: the value is then still in a register.
 */
static bool reads_same_index(const xg_plan *p, int node, const xg_step *prev, const xe_shape *shape,
                             bool same, bool root)
{
    for (int k = 0; k < prev->n_outs; k++)
        if (prev->outs[k] == node)
            return same;
    if (p->mat[node] && !root)
        return true;
    const xe_node *n = p->body->nodes[node];
    bool elementwise = xe_op_is_elementwise(n->op);
    for (int k = 0; k < n->n_inputs; k++) {
        int in = n->inputs[k];
        bool child_same = same && elementwise && xe_shape_equal(&p->types[in].shape, shape);
        if (!reads_same_index(p, in, prev, shape, child_same, false))
            return false;
    }
    return true;
}

/* Consecutive loop steps of one shape whose reads of each other are at the same index. */
static void merge_loops(xg_plan *p)
{
    int w = 0;
    for (int r = 0; r < p->n_steps; r++) {
        xg_step *prev = w ? &p->steps[w - 1] : NULL, *cur = &p->steps[r];
        if (prev && prev->kind == XG_STEP_LOOP && cur->kind == XG_STEP_LOOP &&
            prev->n_outs < XG_MAX_OUTS && !step_has_scalar_call(p, prev) &&
            !step_has_scalar_call(p, cur) &&
            xe_shape_equal(&p->types[prev->outs[0]].shape, &p->types[cur->outs[0]].shape) &&
            reads_same_index(p, cur->outs[0], prev, &p->types[cur->outs[0]].shape, true, true)) {
            prev->outs[prev->n_outs++] = cur->outs[0];
            continue;
        }
        p->steps[w++] = *cur;
    }
    p->n_steps = w;
}

/* ---- row kernels ---------------------------------------------------------------- */

/* The rows of a ROW step: x's shape, its reduced dims (the innermost ones), and the reduced shape.
 */
typedef struct rows {
    xe_shape xs, rs;
    bool mask[XE_MAX_RANK];
} rows;

/*
 * A reduction over the innermost dims (at least one dim kept, not argmax)
 * keeps rows; fills r from it.
 */
static bool row_reduce(const xe_node *n, const xe_type *types, rows *r)
{
    xe_op_class c = xe_op_get(n->op)->cls;
    const xe_shape *s = &types[n->inputs[0]].shape;
    if (c != XE_CLASS_REDUCE || s->rank < 1)
        return false;
    memset(r, 0, sizeof *r);
    xg_reduce_mask(n, s->rank, r->mask);
    if (r->mask[0])
        return false;
    for (int d = 1; d < s->rank; d++)
        if (r->mask[d - 1] && !r->mask[d])
            return false;
    r->xs = *s;
    r->rs = *s;
    for (int d = 0; d < s->rank; d++)
        if (r->mask[d])
            r->rs.dims[d] = 1;
    return true;
}

/*
 * Whether computing node (inline, at its position in the row kernel)
 * reads the values the row step already computes only where they are:
 * a value of the row shape at the same element, a value of the reduced
 * shape at the same row. `aligned` says the node itself is evaluated at
 * its own row position; elementwise ops pass that on to operands of
 * their shape, and from the row shape to the reduced shape (broadcast).
 */
static bool reads_aligned(const xg_plan *p, int node, const bool *in_row, const rows *r,
                          bool aligned, bool root)
{
    if (!root && in_row[node])
        return aligned;
    if (!root && p->mat[node])
        return true;
    const xe_node *n = p->body->nodes[node];
    const xe_shape *s = &p->types[node].shape;
    bool elementwise = xe_op_is_elementwise(n->op),
         reduce = xe_op_get(n->op)->cls == XE_CLASS_REDUCE;
    for (int k = 0; k < n->n_inputs; k++) {
        const xe_shape *si = &p->types[n->inputs[k]].shape;
        bool a = false;
        if (aligned && elementwise)
            a = xe_shape_equal(si, s) || (xe_shape_equal(s, &r->xs) && xe_shape_equal(si, &r->rs));
        else if (aligned && reduce && root)
            a = xe_shape_equal(si, &r->xs);
        if (!reads_aligned(p, n->inputs[k], in_row, r, a, false))
            return false;
    }
    return true;
}

/* Marks in reads[] the outputs of the row step that node reads (through its inline producers). */
static void row_reads(const xg_plan *p, int node, const bool *in_row, bool *reads, bool root)
{
    if (!root && in_row[node]) {
        reads[node] = true;
        return;
    }
    if (!root && p->mat[node])
        return;
    const xe_node *n = p->body->nodes[node];
    for (int k = 0; k < n->n_inputs; k++)
        row_reads(p, n->inputs[k], in_row, reads, false);
}

/* Whether step s can join the row step g with rows r; sets the roles it would get. */
static bool row_joins(const xg_plan *p, const xg_step *g, const xg_step *s, const bool *in_row,
                      const rows *r, xg_row_role *role)
{
    if (g->n_outs + s->n_outs > XG_MAX_OUTS)
        return false;
    if (s->kind == XG_STEP_REDUCE) {
        rows r2;
        const xe_node *n = p->body->nodes[s->outs[0]];
        if (s->column || !row_reduce(n, p->types, &r2) || !xe_shape_equal(&r2.xs, &r->xs) ||
            memcmp(r2.mask, r->mask, sizeof r->mask) != 0 ||
            !reads_aligned(p, s->outs[0], in_row, r, true, true))
            return false;
        role[0] = XG_ROW_REDUCE;
        return true;
    }
    if (s->kind != XG_STEP_LOOP || step_has_scalar_call(p, s))
        return false;
    for (int k = 0; k < s->n_outs; k++) {
        const xe_shape *os = &p->types[s->outs[k]].shape;
        if (xe_shape_equal(os, &r->xs))
            role[k] = XG_ROW_LOOP;
        else if (xe_shape_equal(os, &r->rs))
            role[k] = XG_ROW_SCALAR;
        else
            return false;
        if (!reads_aligned(p, s->outs[k], in_row, r, true, true))
            return false;
    }
    return true;
}

/*
 * Phases of a ROW step: a value of the row shape, and a reduction, go
 * into the first loop after everything they read is known; a value of
 * the reduced shape is computed after the loop of the last reduction it
 * reads. A reduction is known after its loop, a reduced-shape value after
 * the loop it follows.
 */
static void row_phases(const xg_plan *p, xg_step *g, const bool *in_row, bool *reads)
{
    int n = p->body->n_nodes;
    g->n_phases = 1;
    for (int k = 0; k < g->n_outs; k++) {
        memset(reads, 0, (size_t)n * sizeof *reads);
        row_reads(p, g->outs[k], in_row, reads, true);
        int ph = 0;
        for (int j = 0; j < k; j++) {
            if (!reads[g->outs[j]])
                continue;
            int known = g->role[j] == XG_ROW_LOOP ? g->phase[j] : g->phase[j] + 1;
            if (g->role[k] == XG_ROW_SCALAR && g->role[j] != XG_ROW_LOOP)
                known = g->phase[j]; /* computed after that loop, in order */
            ph = known > ph ? known : ph;
        }
        g->phase[k] = ph;
        g->n_phases = ph + 1 > g->n_phases ? ph + 1 : g->n_phases;
    }
}

/*
 * A value of the row shape that only the row step reads (the centred x
 * of a layer norm, the exponentials of a softmax) needs no buffer: each
 * phase that reads it recomputes it from the row, which is in cache, so
 * memory sees the row read once and the outputs written once.
 */
static void row_drop_buffers(xg_plan *p, xg_step *g, bool *in_row)
{
    int w = 0;
    for (int k = 0; k < g->n_outs; k++) {
        int o = g->outs[k];
        if (g->role[k] == XG_ROW_LOOP && xg_read_only_inside(p, o, in_row)) {
            p->mat[o] = false;
            in_row[o] = false;
            continue;
        }
        g->role[w] = g->role[k];
        g->outs[w++] = o;
    }
    g->n_outs = w;
}

/*
 * Row kernels: a row reduction opens a group; the loop and row-reduction
 * steps right after it join while they read the group's values aligned
 * (softmax: max, exp, sum, divide; layer norm: mean, centre, variance,
 * normalise). A group of two or more steps becomes one ROW step: one pass
 * over memory per row instead of one per step, the row staying in cache.
 */
static xe_code row_groups(xg_plan *p, xe_status *st)
{
    int n = p->body->n_nodes;
    bool *in_row = calloc((size_t)n + 1, sizeof *in_row),
         *reads = calloc((size_t)n + 1, sizeof *reads);
    if (!in_row || !reads) {
        free(in_row);
        free(reads);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory planning row kernels");
    }
    int w = 0;
    for (int i = 0; i < p->n_steps;) {
        rows r;
        xg_step g = p->steps[i];
        if (g.kind != XG_STEP_REDUCE || g.column ||
            !row_reduce(p->body->nodes[g.outs[0]], p->types, &r)) {
            p->steps[w++] = p->steps[i++];
            continue;
        }
        memset(in_row, 0, (size_t)n * sizeof *in_row);
        g.kind = XG_STEP_ROW;
        g.x = p->body->nodes[g.outs[0]]->inputs[0];
        g.role[0] = XG_ROW_REDUCE;
        in_row[g.outs[0]] = true;
        int j = i + 1;
        for (; j < p->n_steps; j++) {
            xg_row_role role[XG_MAX_OUTS];
            const xg_step *s = &p->steps[j];
            if (!row_joins(p, &g, s, in_row, &r, role))
                break;
            for (int k = 0; k < s->n_outs; k++) {
                g.role[g.n_outs] = role[k];
                g.outs[g.n_outs++] = s->outs[k];
                in_row[s->outs[k]] = true;
            }
        }
        if (j == i + 1) { /* nothing joined: a plain reduction */
            p->steps[w++] = p->steps[i++];
            continue;
        }
        row_drop_buffers(p, &g, in_row);
        row_phases(p, &g, in_row, reads);
        p->steps[w++] = g;
        i = j;
    }
    p->n_steps = w;
    free(in_row);
    free(reads);
    return XE_OK;
}

int xg_step_shape_mismatch(const xg_plan *p, int i, const xe_type *types)
{
    const xg_step *s = &p->steps[i];
    if (s->kind != XG_STEP_ROW) {
        for (int k = 1; k < s->n_outs; k++)
            if (!xe_shape_equal(&types[s->outs[k]].shape, &types[s->outs[0]].shape))
                return s->outs[k];
        return -1;
    }
    rows r; /* outs[0] is the reduction that opened the row kernel; x is its input */
    row_reduce(p->body->nodes[s->outs[0]], types, &r);
    for (int k = 0; k < s->n_outs; k++) {
        int o = s->outs[k];
        const xe_shape *want = s->role[k] == XG_ROW_SCALAR ? &r.rs : &r.xs;
        const xe_shape *got = s->role[k] == XG_ROW_REDUCE
                                  ? &types[p->body->nodes[o]->inputs[0]].shape
                                  : &types[o].shape;
        if (!xe_shape_equal(got, want))
            return o;
    }
    return -1;
}

bool xg_step_is_split(const xg_plan *p, int i, const xe_type *types)
{
    const xg_step *s = &p->steps[i];
    return s->kind == XG_STEP_REDUCE && p->body->nodes[s->outs[0]]->op != XE_OP_ARGMAX &&
           xe_shape_numel(&types[s->outs[0]].shape) == 1;
}

/* The elements each output of a reduction of x to out is made from. */
static int64_t reduced_count(const xe_shape *x, const xe_shape *out)
{
    int64_t n = xe_shape_numel(out);
    return n ? xe_shape_numel(x) / n : 0;
}

/* Work items of step i at types: elements (loop), outputs (reduce), rows (softmax, row kernels). */
int64_t xg_step_items(const xg_plan *p, int i, const xe_type *types, const xg_geometry *g,
                      bool *block_per_item)
{
    const xg_step *s = &p->steps[i];
    const xe_node *n = p->body->nodes[s->outs[0]];
    const xe_shape *os = &types[s->outs[0]].shape;
    *block_per_item = false;
    switch (s->kind) {
    case XG_STEP_ROW: {
        rows r;
        row_reduce(n, types, &r);
        *block_per_item = true;
        return xe_shape_numel(&r.rs);
    }
    case XG_STEP_SOFTMAX: {
        int64_t axis = xe_node_attr_int(n, "axis", -1);
        if (os->rank == 0)
            return 1;
        axis = (axis % os->rank + os->rank) % os->rank;
        *block_per_item = true;
        return os->dims[axis] ? xe_shape_numel(os) / os->dims[axis] : 0;
    }
    case XG_STEP_REDUCE:
        if (xg_step_is_split(p, i, types)) { /* a thread per input element, at least one */
            int64_t k = xe_shape_numel(&types[n->inputs[0]].shape);
            return k > 1 ? k : 1;
        }
        *block_per_item = g && (n->op != XE_OP_ARGMAX ||
                                reduced_count(&types[n->inputs[0]].shape, os) >= g->argmax_block_k);
        if (s->column && g) /* a block per tile of outputs */
            return (xe_shape_numel(os) + g->col_tile - 1) / g->col_tile;
        return xe_shape_numel(os);
    default:
        return xe_shape_numel(os);
    }
}

/* Chunks a split over `items` block items of `each` elements: enough to fill max_blocks, each of at
 * least min. */
static int64_t chunks_for(int64_t items, int64_t each, int64_t min, int64_t max_blocks,
                          int64_t max_total)
{
    if (items <= 0 || items >= max_blocks)
        return 1;
    int64_t chunks = max_blocks / items;
    if (chunks > each / min)
        chunks = each / min;
    if (chunks > max_total / items)
        chunks = max_total / items;
    return chunks > 1 ? chunks : 1;
}

int64_t xg_step_chunks(const xg_plan *p, int i, const xe_type *types, const xg_geometry *g,
                       int64_t max_blocks)
{
    const xg_step *s = &p->steps[i];
    const xe_node *n = p->body->nodes[s->outs[0]];
    if (s->kind != XG_STEP_REDUCE || n->op == XE_OP_ARGMAX || xg_step_is_split(p, i, types))
        return 1;
    const xe_shape *os = &types[s->outs[0]].shape;
    int64_t outputs = xe_shape_numel(os), each = reduced_count(&types[n->inputs[0]].shape, os);
    if (s->column)
        return chunks_for((outputs + g->col_tile - 1) / g->col_tile, each, g->col_min_rows,
                          max_blocks, g->col_split_max);
    return chunks_for(outputs, each, g->row_min_chunk, max_blocks, g->col_split_max);
}

static void assign_sizes(xg_plan *p)
{
    int off = 0;
    for (int i = 0; i < p->body->n_nodes; i++) {
        p->soff[i] = off;
        off += p->types[i].shape.rank;
    }
    p->n_sizes = off;
}

void xg_plan_sizes(const xg_plan *p, int64_t *S)
{
    for (int i = 0; i < p->body->n_nodes; i++)
        for (int d = 0; d < p->types[i].shape.rank; d++)
            S[p->soff[i] + d] = p->types[i].shape.dims[d];
}

void xg_plan_destroy(xg_plan *p)
{
    if (!p)
        return;
    free(p->types);
    free(p->mat);
    free(p->uses);
    free(p->steps);
    free(p->soff);
    free(p->chained);
    free(p);
}

typedef struct ready_check {
    const bool *ready;
    bool ok;
} ready_check;

static void check_ready(void *ctx, int buf)
{
    ready_check *r = ctx;
    r->ok = r->ok && r->ready[buf];
}

/* Whether every buffer computing node reads is written already (ready[]). */
static bool reads_ready(const xg_plan *p, int node, const bool *ready)
{
    ready_check r = {ready, true};
    xg_value_reads(p, node, check_ready, &r);
    return r.ok;
}

/*
 * The plan's invariants, checked between planning and emission: every
 * computed buffer is written by exactly one step, after every buffer it
 * reads; a step writes only buffers of its own kind; the outputs of a
 * multi-output loop share one shape, those of a row kernel are of its
 * rows, each in one of its phases; the sizes array covers every dim.
 */
xe_code xg_plan_verify(const xg_plan *p, xe_status *st)
{
    const xe_graph *b = p->body;
    bool *ready = calloc((size_t)b->n_nodes + 1, sizeof *ready);
    if (!ready)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory verifying a plan");
    xe_code c = XE_OK;
    for (int i = 0; i < b->n_nodes; i++)
        ready[i] = b->nodes[i]->op == XE_OP_INPUT || (b->nodes[i]->op == XE_OP_CONST && p->mat[i]);
    for (int i = 0; c == XE_OK && i < p->n_steps; i++) {
        const xg_step *s = &p->steps[i];
        int mixed = xg_step_shape_mismatch(p, i, p->types);
        for (int k = 0; c == XE_OK && k < s->n_outs; k++) {
            int o = s->outs[k];
            if (o < 0 || o >= b->n_nodes) {
                c = xe_fail(st, XE_ERR_RUNTIME, "plan: step %d writes node %d of %d", i, o,
                            b->n_nodes);
                break;
            }
            const char *name = b->nodes[o]->name;
            xg_step_kind want = s->kind != XG_STEP_ROW        ? s->kind
                                : s->role[k] == XG_ROW_REDUCE ? XG_STEP_REDUCE
                                                              : XG_STEP_LOOP;
            if (!p->mat[o] || ready[o])
                c = xe_fail(st, XE_ERR_RUNTIME, "plan: step %d writes %s, not a fresh buffer", i,
                            name);
            else if (xg_step_kind_of(b->nodes[o]) != want)
                c = xe_fail(st, XE_ERR_RUNTIME, "plan: step %d has the wrong kind for %s", i, name);
            else if (mixed >= 0)
                c = xe_fail(st, XE_ERR_RUNTIME, "plan: step %d mixes shapes (%s)", i,
                            b->nodes[mixed]->name);
            else if (s->kind == XG_STEP_ROW && (s->phase[k] < 0 || s->phase[k] >= s->n_phases))
                c = xe_fail(st, XE_ERR_RUNTIME, "plan: step %d computes %s in no phase", i, name);
            else if (!reads_ready(p, o, ready))
                c = xe_fail(st, XE_ERR_RUNTIME,
                            "plan: step %d reads a buffer before it is written (%s)", i, name);
            else
                ready[o] =
                    true; /* later outputs of a multi-output loop may read it, at the same index */
        }
    }
    for (int i = 0; c == XE_OK && i < b->n_nodes; i++) {
        if (p->mat[i] && !ready[i])
            c = xe_fail(st, XE_ERR_RUNTIME, "plan: no step writes buffer %s", b->nodes[i]->name);
        else if (p->soff[i] < 0 || p->soff[i] + p->types[i].shape.rank > p->n_sizes)
            c = xe_fail(st, XE_ERR_RUNTIME, "plan: sizes of %s out of range", b->nodes[i]->name);
    }
    free(ready);
    return c;
}

/*
 * Inline chains are cut every XG_MAX_INLINE ops by a buffer: the emitters
 * walk an inline value's producers recursively, a few stack frames per op,
 * so a chain of thousands of elementwise ops would exhaust a thread's
 * stack (a buffer costs one store and one load per element). Nodes come
 * in topological order.
 */
static xe_code bound_inline_depth(xg_plan *p, xe_status *st)
{
    int n = p->body->n_nodes;
    int *depth = calloc((size_t)n + 1,
                        sizeof *depth); /* inline levels under a node; 0 when it has a buffer */
    if (!depth)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory planning a cluster");
    for (int i = 0; i < n; i++) {
        depth[i] = xg_inline_depth(p, i, depth);
        if (depth[i] > XG_MAX_INLINE) {
            p->mat[i] = true;
            depth[i] = 0;
        }
    }
    free(depth);
    return XE_OK;
}

/* Steps 4 to 9 of the plan (the file's top comment) on p, whose types and materialization are set.
 */
static xe_code plan_steps(xg_plan *p, xe_status *st)
{
    const xe_graph *body = p->body;
    /* 4. one step per materialized computed node */
    for (int i = 0; i < body->n_nodes; i++) {
        const xe_node *nd = body->nodes[i];
        if (!p->mat[i] || nd->op == XE_OP_INPUT || nd->op == XE_OP_CONST)
            continue;
        xg_step *s = &p->steps[p->n_steps++];
        s->kind = xg_step_kind_of(nd);
        s->n_outs = 1;
        s->outs[0] = i;
        s->column = s->kind == XG_STEP_REDUCE && is_column_reduce(p, nd);
    }
    /* 5. multi-output loops, 6. row kernels, 7. matmul epilogues by rows (epilogue.c) and fused
       attention (attention.c) */
    merge_loops(p);
    if (xg_plan_locals(p, st) != XE_OK || row_groups(p, st) != XE_OK ||
        xg_plan_panels(p, st) != XE_OK || xg_plan_attention(p, st) != XE_OK)
        return st->code;
    /* 8. channels-last values between convs (layout.c) */
    xg_plan_layouts(p);
    assign_sizes(p);
    /* 9. verify (cheap: linear in the cluster, so every build runs it) */
    return xg_plan_verify(p, st);
}

xe_code xg_plan_build(const xe_graph *body, const xe_type *in_types, bool generic, xg_plan **out,
                      xe_status *st)
{
    int n = body->n_nodes;
    xg_plan *p = calloc(1, sizeof *p);
    if (!p)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory planning a cluster");
    p->body = body;
    p->generic = generic;
    p->types = calloc((size_t)n + 1, sizeof *p->types);
    p->mat = calloc((size_t)n + 1, sizeof *p->mat);
    p->steps = calloc((size_t)n + 1, sizeof *p->steps);
    p->soff = calloc((size_t)n + 1, sizeof *p->soff);
    p->uses = xe_graph_use_counts(body);
    p->chained = calloc((size_t)n + 1, sizeof *p->chained);
    if (!p->types || !p->mat || !p->steps || !p->soff || !p->uses || !p->chained) {
        xg_plan_destroy(p);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory planning a cluster");
    }
    /* 1. types */
    if (xg_body_types(body, in_types, p->types, st) != XE_OK) {
        xg_plan_destroy(p);
        return st->code;
    }
    /* 2-3. uses (from xe_graph_use_counts) and materialization */
    mark_materialized(p);
    if (bound_inline_depth(p, st) != XE_OK || plan_steps(p, st) != XE_OK) {
        xg_plan_destroy(p);
        return st->code;
    }
    *out = p;
    return XE_OK;
}
