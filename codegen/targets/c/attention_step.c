/*
 * The C target's fused attention (codegen/plan/attention.c says which
 * steps form one): Q·Kᵀ, the panel steps after it (scale, mask, softmax,
 * where(isnan)) and the product with V, run block of rows by block of
 * rows. Each thread takes a range of the scores' rows (xe_cpu_row_blocks) and
 * walks it in blocks that stay inside one batch matrix; for a block it
 *   1. computes the block's scores, op(Q)[rows]·op(K), into a tile of its
 *      own (xe_cpu_sgemm: OpenBLAS on the calling thread; oneDNN's sgemm
 *      would cost 40-50 ms of kernel generation in a process's first run);
 *   2. runs each panel step's generated kernel on the block's rows, with
 *      the pointers of every value the group writes moved onto the
 *      thread's tiles, so the kernels index them by the same row numbers
 *      they would use in a whole buffer;
 *   3. multiplies the tile the product reads by op(V) into the block's
 *      rows of the output.
 * A tile holds at most 64 rows and 128 KiB of scores, so the block's
 * values stay in the core's cache between the three; the score matrix
 * and softmax of every (batch, head) are never written to memory whole.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "program_impl.h"
#include "xlac/op.h"

enum { TILE_SCORES = 32768, TILE_ROWS = 64 }; /* elements of a block's scores; rows of a block */
enum { TILE_ALIGN = 64 };                     /* each value's tile starts on a cache line */

/* Bytes of one value's tile: block rows of row_bytes, rounded up to TILE_ALIGN. */
static size_t tile_size(size_t row_bytes, int64_t block)
{
    return (row_bytes * (size_t)block + TILE_ALIGN - 1) / TILE_ALIGN * TILE_ALIGN;
}

/* A matrix operand as stored: the buffer, its shape, and whether the product reads it transposed.
 */
typedef struct operand {
    const float *data;
    const xe_shape *shape;
    bool trans;
} operand;

typedef struct att_run {
    xg_program *p;
    int first, pv; /* the Q·Kᵀ step and the product's */
    operand q, k, v;
    const xe_shape *scores; /* [batch..., Lq, Lk] */
    float *out;             /* [batch..., Lq, dv] */
    int p_node;             /* the value the product reads as its left operand */
    void *const *ptrs;
    const int64_t *S;
    int64_t lq, lk, dv, depth, block;
    const int64_t
        *per_row; /* per node of the group: elements per scores' row (0: not in the group) */
    size_t tile_bytes;
    atomic_bool failed;
} att_run;

/* The operand k of matmul node m as stored (transposes read through, xg_matmul_operand). */
static operand operand_of(const xg_program *p, const xe_type *types, int m, int k, xe_tensor **bufs)
{
    bool flip;
    int b = xg_matmul_operand(p->body, types, m, k, &flip);
    const char *attr = k ? "transpose_b" : "transpose_a";
    return (operand){bufs[b]->data, &bufs[b]->shape,
                     xe_node_attr_bool(p->body->nodes[m], attr, false) != flip};
}

/* Elements from x's start to its matrix of the product's batch index b (batch dims broadcast). */
static int64_t batch_offset(const xe_shape *x, const xe_shape *prod, int64_t b)
{
    xe_shape xb = {.rank = x->rank - 2}, pb = {.rank = prod->rank - 2};
    memcpy(xb.dims, x->dims, sizeof *xb.dims * (size_t)xb.rank);
    memcpy(pb.dims, prod->dims, sizeof *pb.dims * (size_t)pb.rank);
    return xe_matmul_batch_index(&xb, &pb, b) * x->dims[x->rank - 1] * x->dims[x->rank - 2];
}

/* Row r0 of op(x)'s matrix b (rows of op(x) are columns of a transposed x) and its leading dim. */
static const float *rows_of(const operand *x, const xe_shape *prod, int64_t b, int64_t r0,
                            int64_t *ld)
{
    *ld = x->shape->dims[x->shape->rank - 1];
    const float *m = x->data + batch_offset(x->shape, prod, b);
    return m + (x->trans ? r0 : r0 * *ld);
}

/* The group's pointers moved so that row r of each value lands at its tile's first row. */
static void onto_tiles(const att_run *a, void **tp, char *tiles, int64_t r)
{
    const xg_plan *plan = a->p->plan;
    size_t at = 0;
    for (int i = 0; i < plan->body->n_nodes; i++) {
        if (!a->per_row[i])
            continue;
        size_t row_bytes = (size_t)a->per_row[i] * xe_dtype_size(plan->types[i].dtype);
        tp[i] = (void *)((uintptr_t)(tiles + at) - (uintptr_t)r * row_bytes);
        at += tile_size(row_bytes, a->block);
    }
}

/* Step j's pointers: the thread's, or (a shared kernel, share.h) its share's made from them. */
static void *const *step_pointers(const xg_program *p, int j, void **tp, void **scratch)
{
    const xg_share *h = xg_shares_find(&p->shares, j);
    if (!h)
        return tp;
    xg_share_pointers(h, tp, scratch, (size_t)p->body->n_nodes + 1);
    return scratch;
}

/* Rows [r, e) of one batch matrix b: scores, the panel steps, the product. */
static void run_block(const att_run *a, void **tp, void **scratch, int64_t b, int64_t r, int64_t e)
{
    int64_t q0 = r - b * a->lq, n = e - r, ldq, ldk, ldv;
    const float *q = rows_of(&a->q, a->scores, b, q0, &ldq);
    const float *k = rows_of(&a->k, a->scores, b, 0, &ldk);
    float *s = (float *)tp[a->p->plan->steps[a->first].outs[0]] + r * a->lk;
    xe_cpu_sgemm(a->q.trans, a->k.trans, n, a->lk, a->depth, q, ldq, k, ldk, s, a->lk);
    for (int j = a->first + 1; j < a->pv; j++)
        a->p->backend->runner.run_rows(a->p, j, step_pointers(a->p, j, tp, scratch), a->S, r, e);
    const float *pm = (const float *)tp[a->p_node] + r * a->lk,
                *v = rows_of(&a->v, a->scores, b, 0, &ldv);
    float *o = a->out + (b * a->lq + q0) * a->dv;
    xe_cpu_sgemm(false, a->v.trans, n, a->dv, a->lk, pm, a->lk, v, ldv, o, a->dv);
}

/* One thread's rows [r0, r1), in blocks inside one batch matrix each. */
static void attention_rows(void *ctx, int64_t r0, int64_t r1)
{
    att_run *a = ctx;
    size_t n = (size_t)a->p->body->n_nodes + 1;
    void **tp = malloc(2 * n * sizeof *tp);
    char *tiles = aligned_alloc(TILE_ALIGN, a->tile_bytes);
    if (!tp || !tiles)
        atomic_store(&a->failed, true);
    else
        memcpy(tp, a->ptrs, n * sizeof *tp);
    for (int64_t r = r0, e; tp && tiles && r < r1; r = e) {
        int64_t b = r / a->lq, end = (b + 1) * a->lq;
        e = r + a->block < end ? r + a->block : end;
        e = e < r1 ? e : r1;
        onto_tiles(a, tp, tiles, r);
        run_block(a, tp, tp + n, b, r, e);
    }
    free(tiles);
    free(tp);
}

/* per_row[] and the bytes of a thread's tiles: each value the group writes, block rows of it. */
static int64_t *group_rows(const xg_program *p, int first, int pv, const xe_type *types,
                           int64_t rows, int64_t block, size_t *bytes)
{
    int64_t *per_row = calloc((size_t)p->body->n_nodes + 1, sizeof *per_row);
    *bytes = 0;
    for (int j = first; per_row && j < pv; j++)
        for (int k = 0; k < p->plan->steps[j].n_outs; k++) {
            int v = p->plan->steps[j].outs[k];
            per_row[v] = xe_shape_numel(&types[v].shape) / rows;
            *bytes += tile_size((size_t)per_row[v] * xe_dtype_size(types[v].dtype), block);
        }
    return per_row;
}

xe_code xg_c_attention(xg_program *p, int first, int pv, const xe_type *types, xe_tensor **bufs,
                       void *const *ptrs, const int64_t *S, xe_status *st)
{
    const xg_plan *plan = p->plan;
    int qk = plan->steps[first].outs[0], out = plan->steps[pv].outs[0];
    const xe_shape *sc = &types[qk].shape, *os = &types[out].shape;
    int64_t rows = xg_panel_rows(types, qk), lk = sc->dims[sc->rank - 1];
    if (rows == 0 || lk == 0 || xe_tensor_numel(bufs[out]) == 0)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "fused attention %s: an empty product",
                       plan->body->nodes[qk]->name);
    bool flip;
    att_run a = {.p = p,
                 .first = first,
                 .pv = pv,
                 .scores = sc,
                 .out = bufs[out]->data,
                 .ptrs = ptrs,
                 .S = S,
                 .q = operand_of(p, types, qk, 0, bufs),
                 .k = operand_of(p, types, qk, 1, bufs),
                 .v = operand_of(p, types, out, 1, bufs),
                 .p_node = xg_matmul_operand(p->body, types, out, 0, &flip),
                 .lq = sc->dims[sc->rank - 2],
                 .lk = lk,
                 .dv = os->dims[os->rank - 1]};
    a.depth =
        a.q.trans ? a.q.shape->dims[a.q.shape->rank - 2] : a.q.shape->dims[a.q.shape->rank - 1];
    if (a.depth == 0) /* BLAS refuses a leading dim of 0 (and writes nothing): per op */
        return xe_fail(st, XE_ERR_UNSUPPORTED, "fused attention %s: heads of width 0",
                       plan->body->nodes[qk]->name);
    a.block = TILE_SCORES / lk < 1           ? 1
              : TILE_SCORES / lk > TILE_ROWS ? TILE_ROWS
                                             : TILE_SCORES / lk;
    atomic_init(&a.failed, false);
    int64_t *per_row = group_rows(p, first, pv, types, rows, a.block, &a.tile_bytes);
    if (!per_row)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    a.per_row = per_row;
    xe_cpu_row_blocks(rows, a.block, attention_rows, &a);
    free(per_row);
    if (atomic_load(&a.failed))
        return xe_fail(st, XE_ERR_NOMEM, "fused attention %s: out of memory for a thread's tiles",
                       plan->body->nodes[qk]->name);
    return XE_OK;
}
