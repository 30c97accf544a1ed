/*
 * Reductions (XG_STEP_REDUCE: reduce_* and argmax): what every target
 * shares: the combine, init and finish of each reduction, the index of
 * the reduced value from the kept index o and the reduced index k, a
 * serial loop over k for one output. How the outputs and the reduced
 * range are shared among threads is the backend's reduce hook
 * (targets/c/backend.c: OpenMP; targets/cuda/backend.c: blocks, warps, split ranges).
 */
#include <stdio.h>
#include <string.h>

#include "emit_impl.h"

red_ops xg_red_ops_for(int op, xe_dtype dt)
{
    red_ops r = {0};
    bool fl = xe_dtype_is_float(dt),
         f64 = dt == XE_F64 || dt == XE_F16; /* f16 accumulates in double */
    r.acc_type = dt == XE_F16 ? "double" : fl ? value_type(dt) : "int64_t";
    switch (op) {
    case XE_OP_REDUCE_SUM:
    case XE_OP_REDUCE_MEAN:
        r.init = "0";
        r.omp = fl ? "+" : "xg_add_i64";
        r.combine = fl ? "%1$s + %2$s" : "xe_add_i64(%1$s, %2$s)";
        break;
    case XE_OP_REDUCE_PROD:
        r.init = "1";
        r.omp = fl ? "*" : "xg_mul_i64";
        r.combine = fl ? "%1$s * %2$s" : "xe_mul_i64(%1$s, %2$s)";
        break;
    case XE_OP_REDUCE_MAX:
        r.init = fl ? "(-1.0 / 0.0)" : "INT64_MIN";
        r.omp = fl ? (dt == XE_F32 ? "xg_max_f32" : "xg_max_f64") : "max";
        r.combine = !fl   ? "(%2$s > %1$s ? %2$s : %1$s)"
                    : f64 ? "xe_max_f64(%1$s, %2$s)"
                          : "xe_max_f32(%1$s, %2$s)";
        break;
    default: /* min */
        r.init = fl ? "(1.0 / 0.0)" : "INT64_MAX";
        r.omp = fl ? (dt == XE_F32 ? "xg_min_f32" : "xg_min_f64") : "min";
        r.combine = !fl   ? "(%2$s < %1$s ? %2$s : %1$s)"
                    : f64 ? "xe_min_f64(%1$s, %2$s)"
                          : "xe_min_f32(%1$s, %2$s)";
        break;
    }
    return r;
}

/*
 * xg_red_ops_for, but an f32 max or min on the CPU (no block reduction)
 * runs over int32 keys, a built-in OpenMP reduction that vectorizes well
 * at any length (row kernels and softmax, whose rows may be short).
 */
red_ops xg_red_ops_vec(const em *e, int op, xe_dtype dt)
{
    red_ops r = xg_red_ops_for(op, dt);
    if (e->b->render.block_reduce || dt != XE_F32 ||
        (op != XE_OP_REDUCE_MAX && op != XE_OP_REDUCE_MIN))
        return r;
    bool max = op == XE_OP_REDUCE_MAX;
    r.acc_type = "int32_t";
    r.init = max ? "XE_MAXKEY_INIT" : "XE_MINKEY_INIT";
    r.omp = max ? "max" : "min";
    r.combine = max ? "(xe_maxkey_f32(%2$s) > %1$s ? xe_maxkey_f32(%2$s) : %1$s)"
                    : "(xe_minkey_f32(%2$s) < %1$s ? xe_minkey_f32(%2$s) : %1$s)";
    r.key = true;
    return r;
}

/* acc = COMBINE(acc, v) */
void xg_emit_combine(em *e, const red_ops *r, const char *acc, const char *v)
{
    xg_out(e, "    %s = ", acc);
    xg_out(e, r->combine, acc, v);
    xg_out(e, ";\n");
}

/* Product of the kept (want=false) or reduced (want=true) dims of x, as text. */
void xg_part_size(const em *e, int x, const bool *mask, bool want, char *buf, size_t len)
{
    const xe_shape *s = shape_of(e, x);
    int64_t lit = 1;
    snprintf(buf, len, "1");
    for (int d = 0; d < s->rank; d++) {
        if (mask[d] != want)
            continue;
        if (e->p->generic) {
            size_t u = strlen(buf);
            snprintf(buf + u, len - u, "*S[%d]", e->p->soff[x] + d);
        } else {
            lit *= s->dims[d];
        }
    }
    if (!e->p->generic)
        snprintf(buf, len, "%lld%s", (long long)lit, LL(e));
}

/* The idx of x from the kept index o and the reduced index k (div/mod over each part). */
void xg_reduce_idx(em *e, int x, const bool *mask, const char *o, const char *k, bool column,
                   idx *ix)
{
    const xe_shape *s = shape_of(e, x);
    ix->rank = s->rank;
    ix->flat[0] = '\0';
    for (int part = 0; part < 2; part++) {
        bool reduced = part == 1;
        const char *src = reduced ? k : o;
        int dims[XE_MAX_RANK], nd = 0; /* this part's non-unit dims, innermost first */
        for (int d = s->rank - 1; d >= 0; d--) {
            if (mask[d] != reduced)
                continue;
            if (s->dims[d] == 1)
                snprintf(ix->d[d], sizeof ix->d[d], "0");
            else
                dims[nd++] = d;
        }
        char stride[256] = "1";
        for (int j = 0; j < nd; j++) { /* no % on the outermost dim, no / on the innermost */
            int d = dims[j];
            char dim[32];
            xg_dim_text(e, x, d, dim, sizeof dim);
            if (nd == 1)
                snprintf(ix->d[d], sizeof ix->d[d], "%s", src);
            else if (j == 0)
                xg_let_index(e, ix->d[d], sizeof ix->d[d], "%s %% %s", src, dim);
            else if (j == nd - 1)
                xg_let_index(e, ix->d[d], sizeof ix->d[d], "%s / (%s)", src, stride);
            else
                xg_let_index(e, ix->d[d], sizeof ix->d[d], "(%s / (%s)) %% %s", src, stride, dim);
            size_t u = strlen(stride);
            snprintf(stride + u, sizeof stride - u, "*%s", dim);
        }
    }
    /* contiguous cases: kept dims then reduced dims (row), or the reverse (column) */
    bool row = true, col = true, seen_r = false, seen_k = false;
    for (int d = 0; d < s->rank; d++) {
        if (s->dims[d] == 1)
            continue;
        if (mask[d])
            seen_r = true, col = col && !seen_k;
        else
            seen_k = true, row = row && !seen_r;
    }
    (void)column;
    char K[256], O[256];
    xg_part_size(e, x, mask, true, K, sizeof K);
    xg_part_size(e, x, mask, false, O, sizeof O);
    if (row)
        xg_let_index(e, ix->flat, sizeof ix->flat, "%s * (%s) + %s", o, K, k);
    else if (col)
        xg_let_index(e, ix->flat, sizeof ix->flat, "%s * (%s) + %s", k, O, o);
}

/*
 * acc = COMBINE(acc, x at (o, k)) inside a loop over k: x's inline
 * producers are computed there, and forgotten after (loop-scoped).
 */
void xg_emit_accumulate(em *e, int x, const bool *mask, const char *o, bool column,
                        const red_ops *ro, const char *acc)
{
    idx ix;
    char v[16];
    int saved = e->n_memo;
    xg_reduce_idx(e, x, mask, o, "k", column, &ix);
    xg_emit_val(e, x, &ix, v, sizeof v);
    e->n_memo = saved;
    xg_emit_combine(e, ro, acc, v);
}

void xg_emit_finish(em *e, const xe_node *r, xe_dtype dt, const char *acc, const char *K, char *buf,
                    size_t len)
{
    char v[512];
    if (r->op == XE_OP_REDUCE_MEAN && xe_dtype_is_float(dt))
        snprintf(v, sizeof v, "(%s)(%s / (%s)(%s))", value_type(dt), acc,
                 dt == XE_F32 ? "float" : "double", K);
    else if (r->op == XE_OP_REDUCE_MEAN) /* ints: 0 over an empty axis, as the per-op kernel */
        snprintf(v, sizeof v, "(%s)((%s) ? %s / (%s) : 0)", value_type(dt), K, acc, K);
    else
        snprintf(v, sizeof v, "(%s)%s", value_type(dt), acc);
    if (dt == XE_F16) /* rounded to f16, as the per-op kernel stores it */
        xg_f16_round_text(e, v, buf, len);
    else
        snprintf(buf, len, "%s", v);
}

/*
 * The inner loop of one output o of a reduction or argmax, computed by one
 * thread: accumulator, loop over the reduced index k (with an OpenMP simd
 * reduction when simd), the value of x at (o, k), and the store of out[o].
 */
void xg_emit_serial_reduce(em *e, const xe_node *r, int x, const bool *mask, int node, bool column,
                           bool simd)
{
    xe_dtype dt = e->p->types[x].dtype;
    red_ops ro = xg_red_ops_for(r->op, dt);
    bool argmax = r->op == XE_OP_ARGMAX;
    char v[16], fin[512];
    if (argmax)
        xg_out(e, "    xg_idx best = 0;\n    %s bv = 0;\n", value_type(dt));
    else
        xg_out(e, "    %s acc = %s;\n", ro.acc_type, ro.init);
    if (simd && !argmax)
        xg_out(e, "#pragma omp simd reduction(%s : acc)\n", ro.omp);
    xg_out(e, "    for (xg_idx k = 0; k < K; k++) {\n");
    idx ix;
    int saved = e->n_memo;
    xg_reduce_idx(e, x, mask, "o", "k", column, &ix);
    xg_emit_val(e, x, &ix, v, sizeof v);
    e->n_memo = saved;
    if (argmax)
        xg_out(e,
               "    if (k == 0 || (bv == bv && (%s > bv || %s != %s))) {\n    bv = %s;\n    best = "
               "k;\n    }\n",
               v, v, v, v);
    else
        xg_emit_combine(e, &ro, "acc", v);
    xg_out(e, "    }\n");
    if (argmax)
        snprintf(fin, sizeof fin, "best");
    else
        xg_emit_finish(e, r, e->p->types[node].dtype, "acc", "K", fin, sizeof fin);
    xg_emit_store(e, node, "o", fin);
}

void xg_emit_reduce_kernel(em *e, int step, const xg_step *s)
{
    const xe_node *r = e->p->body->nodes[s->outs[0]];
    int x = r->inputs[0];
    bool mask[XE_MAX_RANK] = {0};
    xg_reduce_mask(r, shape_of(e, x)->rank, mask);
    xg_kernel_begin(e, step);
    e->b->render.reduce(e, step, s, r, x, mask);
    xg_out(e, "}\n\n");
}
