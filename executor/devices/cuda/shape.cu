/*
 * GPU kernels of the shape ops: reshape, transpose, broadcast_to, concat
 * and slice. They move raw elements (typed by size: 1, 2, 4 or 8 bytes),
 * never convert them.
 *
 * transpose, broadcast_to and slice are one gather: the output is written
 * in order and element i reads the input at base + sum(idx_d * stride_d),
 * with per-output-dim input strides (permuted for transpose, 0 where
 * broadcast_to repeats, the input's own for slice plus a base offset for
 * the begin corner). Output dims are merged where the input is contiguous
 * across them; a gather that is left with one unit-stride dim is a
 * memcpy, and a batched 2-D transpose uses a 32x32 shared-memory tile so
 * that reads and writes are both coalesced. reshape is a copy; concat
 * copies each input into its slab of the output with one launch per input.
 */
#include "common.cuh"

#define TILE 32      /* transpose tile edge */
#define TILE_ROWS 8  /* transpose tile: threads per column */

/* ---- gather ---------------------------------------------------------------------- */

/* out[i] = in[base + offsets of i]. */
template <typename T, typename I>
__global__ void __launch_bounds__(XK_BLOCK)
    k_gather(const T *__restrict__ in, T *__restrict__ out, xk_map m, int64_t n)
{
    I step = (I)blockDim.x * gridDim.x;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)n; i += step) {
        int64_t off[1];
        xk_offsets<1, I>(m, i, off);
        out[i] = in[off[0]];
    }
}

/*
 * out[b][q][p] = in[b][p][q] for in of shape [B, P, Q]: a 32x32 tile is
 * read along q (coalesced), stored transposed in shared memory, written
 * along p (coalesced). The +1 column avoids bank conflicts.
 */
template <typename T>
__global__ void __launch_bounds__(TILE *TILE_ROWS)
    k_transpose2d(const T *__restrict__ in, T *__restrict__ out, int64_t B, int64_t P, int64_t Q)
{
    __shared__ T tile[TILE][TILE + 1];
    int64_t tp = (P + TILE - 1) / TILE, tq = (Q + TILE - 1) / TILE, tiles = B * tp * tq;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        int64_t b = t / (tp * tq), rem = t - b * tp * tq;
        int64_t p0 = (rem / tq) * TILE, q0 = (rem % tq) * TILE;
        const T *src = in + b * P * Q;
        T *dst = out + b * P * Q;
        for (int y = threadIdx.y; y < TILE; y += TILE_ROWS) {
            int64_t p = p0 + y, q = q0 + threadIdx.x;
            if (p < P && q < Q)
                tile[y][threadIdx.x] = src[p * Q + q];
        }
        __syncthreads();
        for (int y = threadIdx.y; y < TILE; y += TILE_ROWS) {
            int64_t q = q0 + y, p = p0 + threadIdx.x;
            if (p < P && q < Q)
                dst[q * P + p] = tile[threadIdx.x][y];
        }
        __syncthreads();
    }
}

/* A gather's output dims with input strides, before merging. */
typedef struct gather {
    int rank;
    int64_t dims[XE_MAX_RANK];
    int64_t stride[XE_MAX_RANK];
    int64_t base;
} gather;

/* Drops size-1 dims and merges dim d into d-1 when the input is contiguous across them. */
static xk_map gather_map(const gather *g)
{
    xk_map m;
    memset(&m, 0, sizeof m);
    int r = 0;
    for (int d = 0; d < g->rank; d++) {
        if (g->dims[d] == 1)
            continue;
        if (r > 0 && m.stride[0][r - 1] == g->stride[d] * g->dims[d]) {
            m.dims[r - 1] *= g->dims[d];
            m.stride[0][r - 1] = g->stride[d];
            continue;
        }
        m.dims[r] = g->dims[d];
        m.stride[0][r++] = g->stride[d];
    }
    if (r == 0) {
        m.dims[0] = 1;
        m.stride[0][0] = 1;
        r = 1;
    }
    m.rank = r;
    m.base[0] = g->base;
    return m;
}

/* True (with B, P, Q) when map m is in[B,P,Q] -> out[B,Q,P] (B may be 1). */
static bool is_transpose2d(const xk_map *m, int64_t *B, int64_t *P, int64_t *Q)
{
    int r = m->rank;
    if (r < 2 || r > 3 || m->base[0] != 0)
        return false;
    int64_t q = m->dims[r - 2], p = m->dims[r - 1];
    if (m->stride[0][r - 2] != 1 || m->stride[0][r - 1] != q)
        return false;
    if (r == 3 && m->stride[0][0] != p * q)
        return false;
    *B = r == 3 ? m->dims[0] : 1;
    *P = p;
    *Q = q;
    return true;
}

template <typename T> static xe_code gather_typed(const xe_kernel_args *a, const xk_map &m, int64_t n, xe_status *st)
{
    const T *in = (const T *)a->in[0]->data;
    T *out = (T *)a->out->data;
    cudaStream_t s = xk_stream();
    int64_t B, P, Q;
    if (is_transpose2d(&m, &B, &P, &Q)) {
        int64_t tiles = B * ((P + TILE - 1) / TILE) * ((Q + TILE - 1) / TILE);
        k_transpose2d<T><<<xk_grid(tiles, 1), dim3(TILE, TILE_ROWS), 0, s>>>(in, out, B, P, Q);
        return xk_launched(a, "transpose kernel", st);
    }
    if (xk_small(n))
        k_gather<T, uint32_t><<<xk_grid(n, XK_BLOCK), XK_BLOCK, 0, s>>>(in, out, m, n);
    else
        k_gather<T, int64_t><<<xk_grid(n, XK_BLOCK), XK_BLOCK, 0, s>>>(in, out, m, n);
    return xk_launched(a, "gather kernel", st);
}

/* Runs gather g from a->in[0] into a->out. */
static xe_code run_gather(const xe_kernel_args *a, const gather *g, xe_status *st)
{
    int64_t n = xe_tensor_numel(a->out);
    if (n == 0)
        return XE_OK;
    xk_map m = gather_map(g);
    size_t es = xe_dtype_size(a->out->dtype);
    if (m.rank == 1 && m.stride[0][0] == 1)
        return xk_check(cudaMemcpyAsync(a->out->data, (const char *)a->in[0]->data + (size_t)m.base[0] * es,
                                        (size_t)n * es, cudaMemcpyDeviceToDevice, xk_stream()),
                        a, "device copy", st);
    switch (es) {
    case 1: return gather_typed<uint8_t>(a, m, n, st);
    case 2: return gather_typed<uint16_t>(a, m, n, st);
    case 4: return gather_typed<uint32_t>(a, m, n, st);
    case 8: return gather_typed<uint64_t>(a, m, n, st);
    default: return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s: element size %zu", a->node->name, es);
    }
}

/* ---- the ops ------------------------------------------------------------------------ */

extern "C" xe_code xe_gpu_reshape(const xe_kernel_args *a, xe_status *st)
{
    if (!a->out->nbytes)
        return XE_OK;
    if (a->out->nbytes != a->in[0]->nbytes)
        return xe_fail(st, XE_ERR_RUNTIME, "node %s (reshape): %zu bytes into %zu", a->node->name,
                       a->in[0]->nbytes, a->out->nbytes);
    return xk_check(cudaMemcpyAsync(a->out->data, a->in[0]->data, a->out->nbytes,
                                    cudaMemcpyDeviceToDevice, xk_stream()),
                    a, "device copy", st);
}

extern "C" xe_code xe_gpu_transpose(const xe_kernel_args *a, xe_status *st)
{
    const xe_shape *in = &a->in[0]->shape;
    int perm[XE_MAX_RANK];
    if (xe_transpose_perm(a->node, in->rank, perm, st) != XE_OK)
        return xe_status_prefix(st, "node %s (transpose): ", a->node->name);
    int64_t istride[XE_MAX_RANK];
    xe_shape_strides(in, istride);
    gather g = {in->rank, {0}, {0}, 0};
    for (int d = 0; d < in->rank; d++) {
        g.dims[d] = in->dims[perm[d]];
        g.stride[d] = istride[perm[d]];
    }
    return run_gather(a, &g, st);
}

extern "C" xe_code xe_gpu_broadcast_to(const xe_kernel_args *a, xe_status *st)
{
    const xe_shape *in = &a->in[0]->shape, *out = &a->out->shape;
    int64_t istride[XE_MAX_RANK];
    xe_shape_strides(in, istride);
    gather g = {out->rank, {0}, {0}, 0};
    int lead = out->rank - in->rank;
    for (int d = 0; d < out->rank; d++) {
        g.dims[d] = out->dims[d];
        int k = d - lead;
        g.stride[d] = (k < 0 || (in->dims[k] == 1 && out->dims[d] != 1)) ? 0 : istride[k];
    }
    return run_gather(a, &g, st);
}

extern "C" xe_code xe_gpu_slice(const xe_kernel_args *a, xe_status *st)
{
    const xe_shape *in = &a->in[0]->shape;
    const xe_attr *b = xe_node_attr(a->node, "begin"), *e = xe_node_attr(a->node, "end");
    if (!b || !e || b->kind != XE_ATTR_INTS || e->kind != XE_ATTR_INTS || b->n != in->rank ||
        e->n != in->rank)
        return xe_fail(st, XE_ERR_RUNTIME, "node %s (slice): begin and end need %d integers",
                       a->node->name, in->rank);
    int64_t istride[XE_MAX_RANK];
    xe_shape_strides(in, istride);
    gather g = {in->rank, {0}, {0}, 0};
    for (int d = 0; d < in->rank; d++) {
        int64_t lo, hi;
        xe_slice_bounds(b->ints[d], e->ints[d], in->dims[d], &lo, &hi);
        g.dims[d] = hi - lo;
        g.stride[d] = istride[d];
        g.base += lo * istride[d];
    }
    return run_gather(a, &g, st);
}

/* ---- concat --------------------------------------------------------------------------- */

/* Input of shape [outer, w] (w = its axis dim * inner) into columns [col, col + w) of out [outer, W]. */
template <typename T>
__global__ void __launch_bounds__(XK_BLOCK)
    k_concat_part(const T *__restrict__ in, T *__restrict__ out, int64_t outer, int64_t w, int64_t W,
                  int64_t col)
{
    int64_t n = outer * w, step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t o = i / w;
        out[o * W + col + (i - o * w)] = in[i];
    }
}

template <typename T> static xe_code concat_typed(const xe_kernel_args *a, int axis, xe_status *st)
{
    const xe_shape *os = &a->out->shape;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= os->dims[d];
    for (int d = axis + 1; d < os->rank; d++)
        inner *= os->dims[d];
    int64_t W = os->dims[axis] * inner, col = 0;
    for (int k = 0; k < a->n_in; k++) {
        int64_t w = a->in[k]->shape.dims[axis] * inner;
        if (w > 0 && outer > 0) {
            k_concat_part<T><<<xk_grid(outer * w, XK_BLOCK), XK_BLOCK, 0, xk_stream()>>>(
                (const T *)a->in[k]->data, (T *)a->out->data, outer, w, W, col);
            if (xk_launched(a, "concat kernel", st) != XE_OK)
                return st->code;
        }
        col += w;
    }
    return XE_OK;
}

extern "C" xe_code xe_gpu_concat(const xe_kernel_args *a, xe_status *st)
{
    const xe_shape *os = &a->out->shape;
    int64_t axis = xe_node_attr_int(a->node, "axis", 0);
    if (axis < 0)
        axis += os->rank;
    if (axis < 0 || axis >= os->rank)
        return xe_fail(st, XE_ERR_RUNTIME, "node %s (concat): bad axis", a->node->name);
    if (xe_tensor_numel(a->out) == 0)
        return XE_OK;
    switch (xe_dtype_size(a->out->dtype)) {
    case 1: return concat_typed<uint8_t>(a, (int)axis, st);
    case 2: return concat_typed<uint16_t>(a, (int)axis, st);
    case 4: return concat_typed<uint32_t>(a, (int)axis, st);
    case 8: return concat_typed<uint64_t>(a, (int)axis, st);
    default: return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (concat): bad dtype", a->node->name);
    }
}
