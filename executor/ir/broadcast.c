/*
 * Broadcast iteration (see broadcast.h). Work is split into contiguous
 * ranges of output elements, one per thread; each range is walked row by
 * row from its starting multi-index. Also the [outer, k, inner] view of a
 * shape around one axis, which the axis kernels share.
 */
#include <omp.h>
#include <string.h>

#include "broadcast.h"

void xe_bcast_init_strided(xe_bcast *b, const xe_shape *out, int n_ops,
                           const int64_t (*st)[XE_MAX_RANK])
{
    memset(b, 0, sizeof *b);
    b->n_ops = n_ops;
    b->numel = xe_shape_numel(out);
    /* drop size-1 dims, then merge a dim into the previous one when every
       operand is contiguous across the two (stride_prev == stride * dim) */
    int r = 0;
    for (int d = 0; d < out->rank; d++) {
        int64_t dim = out->dims[d];
        if (dim == 1)
            continue;
        bool merge = r > 0;
        for (int k = 0; merge && k < n_ops; k++)
            merge = b->stride[k][r - 1] == st[k][d] * dim;
        if (merge) {
            b->dims[r - 1] *= dim;
            for (int k = 0; k < n_ops; k++)
                b->stride[k][r - 1] = st[k][d];
            continue;
        }
        b->dims[r] = dim;
        for (int k = 0; k < n_ops; k++)
            b->stride[k][r] = st[k][d];
        r++;
    }
    if (r == 0)
        b->dims[r++] = 1;
    b->rank = r;
}

void xe_bcast_init(xe_bcast *b, const xe_shape *out, const xe_shape *const *ins, int n_ins)
{
    int64_t st[XE_BCAST_MAX_OPERANDS][XE_MAX_RANK];
    int rank = out->rank;
    for (int k = 0; k < n_ins; k++) {
        const xe_shape *s = ins[k];
        int64_t acc = 1;
        for (int d = rank - 1; d >= 0; d--) {
            int sd = d - (rank - s->rank);
            int64_t n = sd >= 0 ? s->dims[sd] : 1;
            st[k][d] = (n == 1 && out->dims[d] != 1) ? 0 : acc;
            acc *= n;
        }
    }
    xe_bcast_init_strided(b, out, n_ins, (const int64_t(*)[XE_MAX_RANK])st);
}

/* Walks output elements [lo, hi) row by row. */
static void walk(const xe_bcast *b, int64_t lo, int64_t hi, xe_bcast_row_fn fn, void *ctx)
{
    int r = b->rank;
    int64_t idx[XE_MAX_RANK], off[XE_BCAST_MAX_OPERANDS] = {0};
    int64_t rem = lo;
    for (int d = r - 1; d >= 0; d--) {
        idx[d] = rem % b->dims[d];
        rem /= b->dims[d];
    }
    for (int k = 0; k < b->n_ops; k++)
        for (int d = 0; d < r; d++)
            off[k] += idx[d] * b->stride[k][d];
    int64_t step[XE_BCAST_MAX_OPERANDS];
    for (int k = 0; k < b->n_ops; k++)
        step[k] = b->stride[k][r - 1];
    int64_t pos = lo;
    while (pos < hi) {
        int64_t n = b->dims[r - 1] - idx[r - 1];
        if (n > hi - pos)
            n = hi - pos;
        fn(ctx, n, pos, off, step);
        pos += n;
        idx[r - 1] += n;
        for (int k = 0; k < b->n_ops; k++)
            off[k] += n * step[k];
        for (int d = r - 1; d > 0 && idx[d] == b->dims[d]; d--) { /* carry */
            idx[d] = 0;
            idx[d - 1]++;
            for (int k = 0; k < b->n_ops; k++)
                off[k] += b->stride[k][d - 1] - b->dims[d] * b->stride[k][d];
        }
    }
}

void xe_bcast_run(const xe_bcast *b, xe_bcast_row_fn fn, void *ctx)
{
    if (b->numel <= 0)
        return;
    if (b->numel < XE_PARALLEL_MIN) {
        walk(b, 0, b->numel, fn, ctx);
        return;
    }
#pragma omp parallel
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        int64_t chunk = (b->numel + nt - 1) / nt;
        int64_t lo = (int64_t)t * chunk, hi = lo + chunk < b->numel ? lo + chunk : b->numel;
        if (lo < hi)
            walk(b, lo, hi, fn, ctx);
    }
}

xe_axis_view xe_axis_view_of(const xe_shape *s, int64_t axis)
{
    int a = (int)(axis < 0 ? axis + s->rank : axis);
    xe_axis_view v = {.axis = a, .outer = 1, .k = 1, .inner = 1};
    if (v.axis >= 0 && v.axis < s->rank)
        v.k = s->dims[v.axis];
    for (int d = 0; d < v.axis && d < s->rank; d++)
        v.outer *= s->dims[d];
    for (int d = v.axis + 1; d < s->rank; d++)
        v.inner *= s->dims[d];
    return v;
}
