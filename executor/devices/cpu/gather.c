/*
 * CPU kernels of the data-movement ops that ONNX needs: gather, tile and
 * pad (constant mode). They move raw elements and never convert them.
 *
 * Each works on rows: the data is seen as [outer, axis, inner] (gather)
 * or as rows of its last dim (tile, pad), and a row is one memcpy. The
 * rows are an OpenMP loop once the op moves enough bytes to pay for it.
 */
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "nn.h"

/* Below this many bytes moved, an op runs on the calling thread. */
#define PARALLEL_MIN_BYTES (1 << 18)

/* ---- gather -------------------------------------------------------------------------- */

/* Index k of an i32 or i64 tensor. */
static int64_t index_at(const xe_tensor *ix, int64_t k)
{
    return ix->dtype == XE_I32 ? ((const int32_t *)ix->data)[k] : ((const int64_t *)ix->data)[k];
}

/*
 * The indices as offsets in [0, dim) (a negative one counts from the end), in *out (malloc'd);
 * every index must be within [-dim, dim): the first bad one is an error that names it.
 */
static xe_code normalised_indices(const xe_kernel_args *a, const xe_tensor *ix, int64_t dim,
                                  int axis, int64_t **out, xe_status *st)
{
    int64_t n = xe_tensor_numel(ix);
    int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v)
        return xe_fail(st, XE_ERR_NOMEM, "node %s (gather): out of memory for %lld indices",
                       a->node->name, (long long)n);
    for (int64_t k = 0; k < n; k++) {
        int64_t x = index_at(ix, k);
        if (x < -dim || x >= dim) {
            free(v);
            return xe_fail(st, XE_ERR_RUNTIME,
                           "node %s (gather): index %lld (at position %lld) is out of range for "
                           "axis %d of size %lld",
                           a->node->name, (long long)x, (long long)k, axis, (long long)dim);
        }
        v[k] = x < 0 ? x + dim : x;
    }
    *out = v;
    return XE_OK;
}

/*
 * Rows [r0, r1) of the output's outer * nix rows of `row` bytes each.
 * Rows of 1, 2, 4 or 8 bytes (a gather along the last axis: a resize's
 * taps, an index table) are copies of a constant size, which the compiler
 * makes single loads and stores. One memcpy call per element and a
 * division per row made such a gather of 8M floats take 4 ms, about a
 * tenth of memory speed.
 */
static void gather_rows(char *dst, const char *src, const int64_t *v, int64_t nix, int64_t dim,
                        size_t row, int64_t r0, int64_t r1)
{
    int64_t o = r0 / nix, k = r0 % nix;
    for (int64_t r = r0; r < r1; o++, k = 0) {
        int64_t m = nix - k < r1 - r ? nix - k : r1 - r; /* the rest of block o, or of the range */
        const char *s = src + (size_t)(o * dim) * row;
        char *d = dst + (size_t)r * row;
#define XE_GATHER_FIXED(N) /* memcpy of a constant size: one load and store, any alignment */      \
    for (int64_t q = 0; q < m; q++)                                                                \
        memcpy(d + (size_t)q * (N), s + (size_t)v[k + q] * (N), (N));
        if (row == 4) {
            XE_GATHER_FIXED(4)
        } else if (row == 8) {
            XE_GATHER_FIXED(8)
        } else if (row == 2) {
            XE_GATHER_FIXED(2)
        } else if (row == 1) {
            XE_GATHER_FIXED(1)
        } else {
            XE_GATHER_FIXED(row)
        }
#undef XE_GATHER_FIXED
        r += m;
    }
}

xe_code xe_cpu_gather(const xe_kernel_args *a, xe_status *st)
{
    const xe_tensor *data = a->in[0], *ix = a->in[1];
    int axis = 0;
    if (xe_gather_axis(a->node, data->shape.rank, &axis, st) != XE_OK)
        return xe_status_prefix(st, "node %s (gather): ", a->node->name);
    int64_t dim = data->shape.dims[axis], outer = 1, inner = 1, nix = xe_tensor_numel(ix);
    for (int d = 0; d < axis; d++)
        outer *= data->shape.dims[d];
    for (int d = axis + 1; d < data->shape.rank; d++)
        inner *= data->shape.dims[d];
    int64_t *v = NULL, rows = outer * nix;
    if (normalised_indices(a, ix, dim, axis, &v, st) != XE_OK)
        return st->code;
    if (rows == 0 || inner == 0) {
        free(v);
        return XE_OK;
    }
    size_t row = (size_t)inner * xe_dtype_size(data->dtype);
    int threads = a->out->nbytes >= PARALLEL_MIN_BYTES ? omp_get_max_threads() : 1;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (int t = 0; t < threads; t++)
        gather_rows(a->out->data, data->data, v, nix, dim, row, rows * t / threads,
                    rows * (t + 1) / threads);
    free(v);
    return XE_OK;
}

/* ---- tile ---------------------------------------------------------------------------- */

/* Row-major coordinates of row r of a shape's rows (all dims but the last). */
static void row_coords(const xe_shape *s, int64_t r, int64_t *c)
{
    for (int d = s->rank - 2; d >= 0; d--) {
        c[d] = r % s->dims[d];
        r /= s->dims[d];
    }
}

xe_code xe_cpu_tile(const xe_kernel_args *a, xe_status *st)
{
    const xe_tensor *in = a->in[0];
    xe_tensor *out = a->out;
    int64_t reps[XE_MAX_RANK];
    if (xe_tile_repeats(a->node, in->shape.rank, reps, st) != XE_OK)
        return xe_status_prefix(st, "node %s (tile): ", a->node->name);
    if (out->nbytes == 0)
        return XE_OK;
    int rank = in->shape.rank;
    if (rank == 0) {
        memcpy(out->data, in->data, out->nbytes);
        return XE_OK;
    }
    size_t es = xe_dtype_size(in->dtype), irow = (size_t)in->shape.dims[rank - 1] * es;
    int64_t rows = xe_tensor_numel(out) / out->shape.dims[rank - 1];
    int64_t istride[XE_MAX_RANK];
    xe_shape_strides(&in->shape, istride);
#pragma omp parallel for schedule(static) if (out->nbytes >= PARALLEL_MIN_BYTES)
    for (int64_t r = 0; r < rows; r++) {
        int64_t c[XE_MAX_RANK], off = 0;
        row_coords(&out->shape, r, c);
        for (int d = 0; d < rank - 1; d++)
            off += (c[d] % in->shape.dims[d]) * istride[d];
        char *dst = (char *)out->data + (size_t)r * irow * (size_t)reps[rank - 1];
        for (int64_t k = 0; k < reps[rank - 1]; k++)
            memcpy(dst + (size_t)k * irow, (const char *)in->data + (size_t)off * es, irow);
    }
    return XE_OK;
}

/* ---- pad ----------------------------------------------------------------------------- */

/* Fills n elements of size es at dst with the pattern at val. */
static void fill(char *dst, const char *val, size_t es, int64_t n)
{
    static const char zero[8];
    if (memcmp(val, zero, es) == 0) {
        memset(dst, 0, (size_t)n * es);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        memcpy(dst + (size_t)i * es, val, es);
}

/* pad's value in the output's dtype, as bytes. */
static void pad_value(const xe_kernel_args *a, char *val)
{
    double v = xe_node_attr_float(a->node, "value", 0.0);
    const xe_attr *at = xe_node_attr(a->node, "value");
    if (at && at->kind == XE_ATTR_INT && a->out->dtype == XE_I64)
        memcpy(val, &at->i, sizeof at->i); /* exact beyond 2^53 */
    else
        xe_store_f64(val, a->out->dtype, 0, v);
}

/*
 * Output row r: the input row it comes from (when any), with its column
 * range; every other element is the value.
 */
static void pad_row(const xe_kernel_args *a, const int64_t *b, const int64_t *istride,
                    const char *val, int64_t r)
{
    const xe_shape *is = &a->in[0]->shape, *os = &a->out->shape;
    int rank = os->rank;
    size_t es = xe_dtype_size(a->out->dtype);
    int64_t w = os->dims[rank - 1], c[XE_MAX_RANK], off = 0;
    char *dst = (char *)a->out->data + (size_t)(r * w) * es;
    row_coords(os, r, c);
    bool inside = true;
    for (int d = 0; d < rank - 1 && inside; d++) {
        int64_t i = c[d] - b[d];
        inside = i >= 0 && i < is->dims[d];
        off += i * istride[d];
    }
    int64_t lo = b[rank - 1] > 0 ? b[rank - 1] : 0, hi = b[rank - 1] + is->dims[rank - 1];
    hi = hi < w ? hi : w;
    if (!inside || hi <= lo) {
        fill(dst, val, es, w);
        return;
    }
    fill(dst, val, es, lo);
    memcpy(dst + (size_t)lo * es,
           (const char *)a->in[0]->data + (size_t)(off + lo - b[rank - 1]) * es,
           (size_t)(hi - lo) * es);
    fill(dst + (size_t)hi * es, val, es, w - hi);
}

xe_code xe_cpu_pad(const xe_kernel_args *a, xe_status *st)
{
    int rank = a->in[0]->shape.rank;
    int64_t b[XE_MAX_RANK], e[XE_MAX_RANK], istride[XE_MAX_RANK];
    if (xe_pad_amounts(a->node, rank, b, e, st) != XE_OK)
        return xe_status_prefix(st, "node %s (pad): ", a->node->name);
    if (a->out->nbytes == 0)
        return XE_OK;
    if (rank == 0) {
        memcpy(a->out->data, a->in[0]->data, a->out->nbytes);
        return XE_OK;
    }
    char val[8];
    pad_value(a, val);
    xe_shape_strides(&a->in[0]->shape, istride);
    int64_t rows = xe_tensor_numel(a->out) / a->out->shape.dims[rank - 1];
#pragma omp parallel for schedule(static) if (a->out->nbytes >= PARALLEL_MIN_BYTES)
    for (int64_t r = 0; r < rows; r++)
        pad_row(a, b, istride, val, r);
    return XE_OK;
}
