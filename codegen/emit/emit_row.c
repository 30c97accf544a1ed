/*
 * Row kernels (XG_STEP_ROW) and softmax (XG_STEP_SOFTMAX): for each row
 * of a value (the reduced dims last), one or more passes over the row,
 * reductions accumulated in a pass and finished after it. A row is one
 * thread's (the CPU: rows in parallel, each pass a simd loop) or one
 * block's (the GPU: each pass a block-stride loop, reductions combined by
 * the backend's block_reduce, passes separated by its barrier).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_impl.h"
#include "xlac/escape.h"

/* The header of one pass over row o's K elements: all of it (CPU), or a block-stride share (GPU).
 */
static void row_pass_header(em *e)
{
    xg_out(e, "%s", e->b->render.pass_loop);
}

/* ---- row kernels ---------------------------------------------------------------- */

/*
 * One phase's pass over the row: at each element k of row o, the values
 * of the row shape this phase computes (stored), and the reductions it
 * accumulates (into a<N>, N the output's position in the step).
 */
static void emit_row_pass(em *e, const xg_step *s, int ph, const bool *mask, const red_ops *ro)
{
    for (int k = 0; k < s->n_outs; k++)
        if (s->phase[k] == ph && s->role[k] == XG_ROW_REDUCE)
            xg_out(e, "    %s a%d = %s;\n", ro[k].acc_type, k, ro[k].init);
    if (e->b->render.simd_pragmas) {
        xg_out(e, "#pragma omp simd");
        for (int k = 0; k < s->n_outs; k++)
            if (s->phase[k] == ph && s->role[k] == XG_ROW_REDUCE)
                xg_out(e, " reduction(%s : a%d)", ro[k].omp, k);
        xg_out(e, "\n");
    }
    row_pass_header(e);
    int saved = e->n_memo;
    idx ix; /* every value of the row shape is at this idx */
    xg_reduce_idx(e, s->x, mask, "o", "k", false, &ix);
    e->row_ph = ph;
    e->row_x = s->x;
    e->row_ix = &ix;
    for (int k = 0; k < s->n_outs; k++) {
        int node = s->outs[k];
        if (s->phase[k] != ph || s->role[k] == XG_ROW_SCALAR)
            continue;
        char v[16], acc[16], off[24];
        if (s->role[k] == XG_ROW_LOOP) {
            xg_emit_compute(e, node, &ix, v, sizeof v);
            xg_memo_add(e, node, &ix, v);
            xg_flat_of(e, node, &ix, off, sizeof off);
            xg_emit_store(e, node, off, v);
        } else {
            xg_emit_val(e, e->p->body->nodes[node]->inputs[0], &ix, v, sizeof v);
            snprintf(acc, sizeof acc, "a%d", k);
            xg_emit_combine(e, &ro[k], acc, v);
        }
    }
    e->row_ix = NULL;
    e->n_memo = saved;
    xg_out(e, "    }\n");
}

/*
 * After a phase's pass: its reductions finished into r<N> (registers for
 * the rest of the row; on the GPU combined over the block first), then the
 * values of the reduced shape computed after this pass; each stored once.
 */
static void emit_row_after(em *e, const xg_step *s, int ph, const bool *mask, const red_ops *ro)
{
    const char *first = e->b->render.first_thread;
    for (int k = 0; k < s->n_outs; k++) {
        int node = s->outs[k];
        if (s->phase[k] != ph || s->role[k] == XG_ROW_LOOP)
            continue;
        char v[16];
        if (s->role[k] == XG_ROW_REDUCE) {
            char acc[32], sh[16], fin[512];
            snprintf(acc, sizeof acc, ro[k].key ? "xe_of_key_f32(a%d)" : "a%d", k);
            snprintf(sh, sizeof sh, "sh%d", k);
            if (e->b->render.block_reduce)
                e->b->render.block_reduce(e, &ro[k], acc, sh);
            xg_emit_finish(e, e->p->body->nodes[node], e->p->types[node].dtype, acc, "K", fin,
                           sizeof fin);
            new_var(e, v, sizeof v);
            xg_out(e, "    %s %s = %s;\n", value_type(e->p->types[node].dtype), v, fin);
        } else {
            idx ix;
            xg_reduce_idx(e, node, mask, "o", "0", false, &ix);
            xg_emit_compute(e, node, &ix, v, sizeof v);
        }
        snprintf(e->rowvar[node], sizeof e->rowvar[node], "%s", v);
        xg_out(e, "%s", first);
        xg_emit_store(e, node, "o", v);
    }
}

static void row_phases(em *e, const xg_step *s, const bool *mask, const red_ops *ro)
{
    for (int ph = 0; ph < s->n_phases; ph++) {
        xg_out(e, "    /* phase %d */\n", ph);
        emit_row_pass(e, s, ph, mask, ro);
        emit_row_after(e, s, ph, mask, ro);
        if (e->b->render.barrier) /* this pass's stores are read by other threads in the next */
            xg_out(e, "%s", e->b->render.barrier);
    }
}

/* Elements of one row: the product of the reduced dims. */
static int64_t row_length(const xe_shape *x, const bool *mask)
{
    int64_t k = 1;
    for (int d = 0; d < x->rank; d++)
        if (mask[d])
            k *= x->dims[d];
    return k;
}

/*
 * Prints the phases with nothing kept: e->rc_phases[node] gets the phases
 * that compute node at their own element; the text, the variable and memo
 * counters and the row registers are put back as they were.
 */
static void row_phases_dry_run(em *e, const xg_step *s, const bool *mask, const red_ops *ro)
{
    int n = e->p->body->n_nodes;
    size_t len = e->text.len, rv_bytes = ((size_t)n + 1) * sizeof *e->rowvar;
    int var = e->var, n_memo = e->n_memo;
    char(*rowvar)[16] = malloc(rv_bytes);
    if (!rowvar) {
        e->oom = true;
        return;
    }
    memcpy(rowvar, e->rowvar, rv_bytes);
    memset(e->rc_phases, 0, sizeof *e->rc_phases * (size_t)n);
    e->rc_dry = true;
    row_phases(e, s, mask, ro);
    e->rc_dry = false;
    xe_text_truncate(&e->text, len);
    e->var = var;
    e->n_memo = n_memo;
    memcpy(e->rowvar, rowvar, rv_bytes);
    free(rowvar);
}

/*
 * The row cache (CPU, static shapes): a value of the row shape that is
 * not stored but computed by several phases with a costly op (softmax's
 * exponentials) is kept by the first of them in a buffer of one row (K
 * elements) on the thread's stack, at most XG_ROW_CACHE_BYTES in all, and
 * read back by the others. Declares the buffers; returns their count.
 */
#define XG_ROW_CACHE_BYTES (64 << 10)
static int row_cache_plan(em *e, const xg_step *s, const bool *mask, const red_ops *ro, int64_t K)
{
    int n = e->p->body->n_nodes;
    for (int i = 0; i < n; i++)
        e->rc_first[i] = -1;
    if (!e->b->render.row_cache || e->p->generic || K <= 0)
        return 0;
    row_phases_dry_run(e, s, mask, ro);
    int64_t bytes = 0;
    int count = 0;
    for (int i = 0; i < n && !e->oom; i++) {
        unsigned ph = e->rc_phases[i];
        xe_dtype dt = e->p->types[i].dtype;
        int64_t b = K * (dt == XE_F64 || dt == XE_I64 ? 8 : 4);
        if ((ph & (ph - 1)) == 0 || !xg_costly_op(e->p->body->nodes[i]->op) ||
            bytes + b > XG_ROW_CACHE_BYTES)
            continue;
        e->rc_first[i] = __builtin_ctz(ph);
        bytes += b;
        count++;
        xg_out(e, "    _Alignas(64) %s rc%d[%lld]; /* ", value_type(dt), i, (long long)K);
        xe_esc_c_comment(&e->text, e->p->body->nodes[i]->name); /* a name is a model's text */
        xg_out(e, ": computed in phase %d, read by later ones */\n", e->rc_first[i]);
    }
    return count;
}

/*
 * A row kernel (XG_STEP_ROW): for each row, the step's phases in order,
 * each one pass over the row (in cache after the first). CPU: rows in
 * parallel, each pass a simd loop; GPU: a block per row, each pass a
 * block-stride loop, reductions combined across the block.
 */
void xg_emit_row_kernel(em *e, int step, const xg_step *s)
{
    const xe_node *r0 = e->p->body->nodes[s->outs[0]];
    bool mask[XE_MAX_RANK] = {0};
    xg_reduce_mask(r0, shape_of(e, s->x)->rank, mask);
    red_ops ro[XG_MAX_OUTS];
    char O[256], K[256];
    xg_kernel_begin(e, step);
    xg_part_size(e, s->x, mask, false, O, sizeof O);
    xg_part_size(e, s->x, mask, true, K, sizeof K);
    xg_out(e, "    const xg_idx O = %s, K = %s;\n", O, K);
    for (int k = 0; k < s->n_outs; k++) {
        if (s->role[k] != XG_ROW_REDUCE)
            continue;
        const xe_node *r = e->p->body->nodes[s->outs[k]];
        ro[k] = xg_red_ops_vec(e, r->op, e->p->types[r->inputs[0]].dtype);
        if (e->b->render.block_reduce)
            xg_out(e, "    %s %s sh%d[33];\n", e->b->render.shared_kw, ro[k].acc_type, k);
    }
    xg_out(e, "%s", rows_loop(e));
    row_cache_plan(e, s, mask, ro, row_length(shape_of(e, s->x), mask));
    row_phases(e, s, mask, ro);
    xg_out(e, "    }\n}\n\n");
}

/*
 * The start of one of softmax's passes over row o: a simd loop on the CPU
 * (with red's reduction into acc, when given), its header, x's idx at (o, k),
 * the other passes' values forgotten.
 */
static void softmax_pass(em *e, int x, const bool *mask, int saved, bool simd, const red_ops *red,
                         const char *acc, idx *ix)
{
    e->n_memo = saved;
    if (e->b->render.simd_pragmas && simd && red)
        xg_out(e, "#pragma omp simd reduction(%s : %s)\n", red->omp, acc);
    else if (e->b->render.simd_pragmas && simd)
        xg_out(e, "#pragma omp simd\n");
    row_pass_header(e);
    xg_reduce_idx(e, x, mask, "o", "k", false, ix);
}

/* softmax's first pass, the row's maximum into m (on the CPU in f32 over int32 keys). */
static void softmax_max_pass(em *e, int x, const bool *mask, int saved, bool simd,
                             const red_ops *max, bool keep, idx *ix)
{
    xe_dtype dt = e->p->types[x].dtype;
    /* f16 and bf16 are computed in f32: their maximum is f32's, over int32 keys */
    red_ops key = xg_red_ops_vec(e, XE_OP_REDUCE_MAX, dt == XE_F16 || dt == XE_BF16 ? XE_F32 : dt);
    char v[16];
    if (key.key)
        xg_out(e, "    int32_t mk = %s;\n", key.init);
    softmax_pass(e, x, mask, saved, simd, key.key ? &key : max, key.key ? "mk" : "m", ix);
    xg_emit_val(e, x, ix, v, sizeof v);
    if (keep)
        xg_out(e, "    sx[k] = %s;\n", v);
    if (key.key) {
        xg_emit_combine(e, &key, "mk", v);
        xg_out(e, "    }\n    m = xe_of_key_f32(mk);\n");
    } else {
        xg_out(e, "    m = xe_max_%s(m, %s);\n    }\n", sfx(dt), v);
    }
}

/*
 * Whether softmax keeps its f16 or bf16 row's values, as floats, from the max pass for the exp
 * pass in a stack buffer (sx, declared here), as row kernels keep a costly value (the row cache:
 * CPU, static shapes, at most XG_ROW_CACHE_BYTES): the exp pass then reads a float instead of
 * loading, widening and rounding again what the row is made of (fp16 BERT's scores plus the
 * mask: its softmax step was 95 us a layer for 64K elements). An f32 row computed in the kernel
 * is kept too, not computed twice: DeBERTa's scores plus its two relative-position gathers, 620 us
 * a layer for 64K elements.
 */
static bool softmax_keeps_row(em *e, int x, const bool *mask)
{
    xe_dtype dt = e->p->types[x].dtype;
    int64_t K = row_length(shape_of(e, x), mask);
    bool computed_f32 = dt == XE_F32 && !e->p->mat[x];
    if (!e->b->render.row_cache || e->p->generic ||
        (dt != XE_F16 && dt != XE_BF16 && !computed_f32) || K <= 0 ||
        K * (int64_t)sizeof(float) > XG_ROW_CACHE_BYTES)
        return false;
    xg_out(e, "    _Alignas(64) float sx[%lld]; /* the row's values, from the max pass */\n",
           (long long)K);
    return true;
}

/*
 * softmax: rows along the axis; max, then exp and sum (exp stored), then
 * scale. CPU: a thread per row; GPU: a block per row, max and sum
 * combined across the block (each thread rescales the elements it wrote).
 */
void xg_emit_softmax_kernel(em *e, int step, const xg_step *s)
{
    int node = s->outs[0], x = e->p->body->nodes[node]->inputs[0];
    const xe_shape *sh = shape_of(e, x);
    int64_t axis = xe_node_attr_int(e->p->body->nodes[node], "axis", -1);
    if (axis < 0)
        axis += sh->rank;
    bool mask[XE_MAX_RANK] = {0};
    mask[axis] = true;
    xe_dtype dt = e->p->types[node].dtype;
    const char *vt = value_type(dt), *f = dt == XE_F64 ? "" : "f";
    red_ops max = xg_red_ops_for(XE_OP_REDUCE_MAX, dt), sum = xg_red_ops_for(XE_OP_REDUCE_SUM, dt);
    max.acc_type = sum.acc_type = vt;
    char O[256], K[256], v[16], off[24];
    xg_kernel_begin(e, step);
    xg_part_size(e, x, mask, false, O, sizeof O);
    xg_part_size(e, x, mask, true, K, sizeof K);
    xg_out(e, "    const xg_idx O = %s, K = %s;\n", O, K);
    if (e->b->render.block_reduce)
        xg_out(e, "    %s %s shm[33], shs[33];\n", e->b->render.shared_kw, vt);
    xg_out(e, "%s", rows_loop(e));
    xg_out(e, "    %s m = -1.0%s / 0.0%s, sum = 0;\n", vt, f, f);
    idx ix;
    int saved = e->n_memo;
    /* the reductions declared for these (f16 and bf16 are computed in f32, m and sum floats) */
    bool simd = dt == XE_F32 || dt == XE_F64 || dt == XE_F16 || dt == XE_BF16;
    bool keep = softmax_keeps_row(e, x, mask);
    softmax_max_pass(e, x, mask, saved, simd, &max, keep, &ix);
    if (e->b->render.block_reduce)
        e->b->render.block_reduce(e, &max, "m", "shm");
    softmax_pass(e, x, mask, saved, simd, &sum, "sum", &ix);
    if (keep)
        snprintf(v, sizeof v, "sx[k]");
    else
        xg_emit_val(e, x, &ix, v, sizeof v);
    xg_flat_of(e, x, &ix, off, sizeof off);
    xg_out(e, "    %s ev = %s(%s - m);\n    sum += ev;\n", vt, dt == XE_F64 ? "exp" : "xe_exp_f32",
           v);
    xg_emit_store(e, node, off, "ev");
    xg_out(e, "    }\n");
    if (e->b->render.block_reduce)
        e->b->render.block_reduce(e, &sum, "sum", "shs");
    softmax_pass(e, x, mask, saved, true, NULL, NULL, &ix);
    xg_flat_of(e, x, &ix, off, sizeof off);
    char cur[16];
    xg_emit_load(e, node, &ix, cur, sizeof cur);
    char q[64];
    snprintf(q, sizeof q, "%s / sum", cur);
    xg_emit_store(e, node, off, q);
    xg_out(e, "    }\n");
    if (e->b->render.barrier)
        xg_out(e, "%s", e->b->render.barrier);
    xg_out(e, "    }\n}\n\n");
    e->n_memo = saved;
}
