/*
 * GPU kernels of gather, tile and pad (constant mode). They move raw
 * elements, typed by size (1, 2, 4 or 8 bytes), with one thread per
 * output element in a grid-stride loop.
 *
 * gather checks its indices on the device, even when its output is empty:
 * a thread that meets an index outside [-dim, dim) records the smallest
 * such position in a device word, and the host reads it back after the
 * launches (one synchronisation), so an out-of-range index is the same
 * error as on the CPU; the gather kernel skips such an index meanwhile.
 */
#include "common.cuh"

extern "C" {
#include "nn.h"
}

/* ---- gather ---------------------------------------------------------------------------- */

/* Records in *bad the smallest position j whose index is outside [-dim, dim). */
template <typename I>
__global__ void __launch_bounds__(XK_BLOCK)
    k_nn_check_indices(const I *__restrict__ idx, int64_t nix, int64_t dim, unsigned long long *bad)
{
    int64_t step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < nix; j += step) {
        int64_t v = (int64_t)idx[j];
        if (v < -dim || v >= dim)
            atomicMin(bad, (unsigned long long)j);
    }
}

/* out[o, j, k] = data[o, idx[j] (wrapped once if negative), k] over [outer, nix, inner]; a bad
   index (reported by k_nn_check_indices) leaves its elements unwritten. */
template <typename T, typename I>
__global__ void __launch_bounds__(XK_BLOCK)
    k_nn_gather(const T *__restrict__ data, const I *__restrict__ idx, T *__restrict__ out,
                int64_t n, int64_t nix, int64_t inner, int64_t dim)
{
    int64_t step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t k = i % inner, r = i / inner, j = r % nix, o = r / nix;
        int64_t v = (int64_t)idx[j];
        if (v < -dim || v >= dim)
            continue;
        v = v < 0 ? v + dim : v;
        out[i] = data[(o * dim + v) * inner + k];
    }
}

/* Checks the indices, then gathers (n > 0: there is output to write). */
template <typename T, typename I>
static void launch_gather(const xe_kernel_args *a, int64_t n, int64_t nix, int64_t inner,
                          int64_t dim, unsigned long long *bad)
{
    const I *idx = (const I *)a->in[1]->data;
    k_nn_check_indices<I><<<xk_grid(nix, XK_BLOCK), XK_BLOCK, 0, xk_stream()>>>(idx, nix, dim, bad);
    if (n > 0)
        k_nn_gather<T, I><<<xk_grid(n, XK_BLOCK), XK_BLOCK, 0, xk_stream()>>>(
            (const T *)a->in[0]->data, idx, (T *)a->out->data, n, nix, inner, dim);
}

template <typename T>
static void launch_typed(const xe_kernel_args *a, int64_t n, int64_t nix, int64_t inner,
                         int64_t dim, unsigned long long *bad)
{
    if (a->in[1]->dtype == XE_I32)
        launch_gather<T, int32_t>(a, n, nix, inner, dim, bad);
    else
        launch_gather<T, int64_t>(a, n, nix, inner, dim, bad);
}

/* The error for the first bad index found, read back from the device. */
static xe_code gather_verdict(const xe_kernel_args *a, unsigned long long *bad, int64_t dim,
                              int axis, xe_status *st)
{
    unsigned long long pos = 0;
    if (xe_gpu_copy_to_host(&pos, bad, sizeof pos, st) != XE_OK)
        return xe_status_prefix(st, "node %s (gather): ", a->node->name);
    if (pos == ~0ull)
        return XE_OK;
    int64_t v = 0;
    size_t es = xe_dtype_size(a->in[1]->dtype);
    if (xe_gpu_copy_to_host(&v, (const char *)a->in[1]->data + pos * es, es, st) != XE_OK)
        return xe_status_prefix(st, "node %s (gather): ", a->node->name);
    if (es == 4)
        v = (int64_t)(int32_t)(uint32_t)v;
    return xe_fail(st, XE_ERR_RUNTIME,
                   "node %s (gather): index %lld (at position %llu) is out of range for axis %d of "
                   "size %lld",
                   a->node->name, (long long)v, pos, axis, (long long)dim);
}

extern "C" xe_code xe_gpu_gather(const xe_kernel_args *a, xe_status *st)
{
    const xe_shape *ds = &a->in[0]->shape;
    int axis = 0;
    if (xe_gather_axis(a->node, ds->rank, &axis, st) != XE_OK)
        return xe_status_prefix(st, "node %s (gather): ", a->node->name);
    int64_t dim = ds->dims[axis], outer = 1, inner = 1, nix = xe_tensor_numel(a->in[1]);
    for (int d = 0; d < axis; d++)
        outer *= ds->dims[d];
    for (int d = axis + 1; d < ds->rank; d++)
        inner *= ds->dims[d];
    int64_t n = outer * nix * inner;
    if (nix == 0) /* no indices to check, no output */
        return XE_OK;
    unsigned long long *bad = (unsigned long long *)xe_gpu_alloc(sizeof *bad, st);
    if (!bad)
        return xe_status_prefix(st, "node %s (gather): ", a->node->name);
    xe_code c = xk_check(cudaMemsetAsync(bad, 0xff, sizeof *bad, xk_stream()), a, "memset", st);
    if (c == XE_OK) {
        switch (xe_dtype_size(a->out->dtype)) {
        case 1:
            launch_typed<uint8_t>(a, n, nix, inner, dim, bad);
            break;
        case 2:
            launch_typed<uint16_t>(a, n, nix, inner, dim, bad);
            break;
        case 4:
            launch_typed<uint32_t>(a, n, nix, inner, dim, bad);
            break;
        default:
            launch_typed<uint64_t>(a, n, nix, inner, dim, bad);
            break;
        }
        c = xk_launched(a, "gather kernel", st);
    }
    if (c == XE_OK)
        c = gather_verdict(a, bad, dim, axis, st);
    xe_gpu_free(bad);
    return c;
}

/* ---- tile and pad ---------------------------------------------------------------------- */

/*
 * Output coordinates to input: tile reads in[c mod idims]; pad reads
 * in[c - begin] when inside, else writes the value.
 */
typedef struct nn_map {
    int rank;
    int64_t odims[XE_MAX_RANK];   /* output dims */
    int64_t idims[XE_MAX_RANK];   /* input dims */
    int64_t istride[XE_MAX_RANK]; /* input strides, elements */
    int64_t begin[XE_MAX_RANK];   /* pad: leading pads (negative: crop) */
} nn_map;

template <typename T>
__global__ void __launch_bounds__(XK_BLOCK)
    k_nn_tile(const T *__restrict__ in, T *__restrict__ out, nn_map m, int64_t n)
{
    int64_t step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t r = i, off = 0;
        for (int d = m.rank - 1; d >= 0; d--) {
            int64_t c = r % m.odims[d];
            r /= m.odims[d];
            off += (c % m.idims[d]) * m.istride[d];
        }
        out[i] = in[off];
    }
}

template <typename T>
__global__ void __launch_bounds__(XK_BLOCK)
    k_nn_pad(const T *__restrict__ in, T *__restrict__ out, nn_map m, int64_t n, T value)
{
    int64_t step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        int64_t r = i, off = 0;
        bool inside = true;
        for (int d = m.rank - 1; d >= 0; d--) {
            int64_t c = r % m.odims[d] - m.begin[d];
            r /= m.odims[d];
            inside = inside && c >= 0 && c < m.idims[d];
            off += c * m.istride[d];
        }
        out[i] = inside ? in[off] : value;
    }
}

static nn_map make_map(const xe_tensor *in, const xe_tensor *out)
{
    nn_map m;
    memset(&m, 0, sizeof m);
    m.rank = in->shape.rank;
    xe_shape_strides(&in->shape, m.istride);
    for (int d = 0; d < m.rank; d++) {
        m.odims[d] = out->shape.dims[d];
        m.idims[d] = in->shape.dims[d];
    }
    return m;
}

/* Launches tile (pad == false) or pad with the value's bits. */
template <typename T>
static xe_code launch_map(const xe_kernel_args *a, const nn_map &m, bool pad, uint64_t bits,
                          xe_status *st)
{
    int64_t n = xe_tensor_numel(a->out);
    const T *in = (const T *)a->in[0]->data;
    T *out = (T *)a->out->data;
    T value;
    memcpy(&value, &bits, sizeof value);
    if (pad)
        k_nn_pad<T><<<xk_grid(n, XK_BLOCK), XK_BLOCK, 0, xk_stream()>>>(in, out, m, n, value);
    else
        k_nn_tile<T><<<xk_grid(n, XK_BLOCK), XK_BLOCK, 0, xk_stream()>>>(in, out, m, n);
    return xk_launched(a, pad ? "pad kernel" : "tile kernel", st);
}

static xe_code run_map(const xe_kernel_args *a, const nn_map &m, bool pad, uint64_t bits,
                       xe_status *st)
{
    switch (xe_dtype_size(a->out->dtype)) {
    case 1:
        return launch_map<uint8_t>(a, m, pad, bits, st);
    case 2:
        return launch_map<uint16_t>(a, m, pad, bits, st);
    case 4:
        return launch_map<uint32_t>(a, m, pad, bits, st);
    default:
        return launch_map<uint64_t>(a, m, pad, bits, st);
    }
}

extern "C" xe_code xe_gpu_tile(const xe_kernel_args *a, xe_status *st)
{
    int64_t reps[XE_MAX_RANK];
    if (xe_tile_repeats(a->node, a->in[0]->shape.rank, reps, st) != XE_OK)
        return xe_status_prefix(st, "node %s (tile): ", a->node->name);
    if (a->out->nbytes == 0)
        return XE_OK;
    return run_map(a, make_map(a->in[0], a->out), false, 0, st);
}

extern "C" xe_code xe_gpu_pad(const xe_kernel_args *a, xe_status *st)
{
    int64_t end[XE_MAX_RANK];
    nn_map m = make_map(a->in[0], a->out);
    if (xe_pad_amounts(a->node, m.rank, m.begin, end, st) != XE_OK)
        return xe_status_prefix(st, "node %s (pad): ", a->node->name);
    if (a->out->nbytes == 0)
        return XE_OK;
    uint64_t bits = 0;
    const xe_attr *v = xe_node_attr(a->node, "value");
    if (v && v->kind == XE_ATTR_INT && a->out->dtype == XE_I64)
        memcpy(&bits, &v->i, sizeof v->i);
    else
        xe_store_f64(&bits, a->out->dtype, 0, xe_node_attr_float(a->node, "value", 0.0));
    return run_map(a, m, true, bits, st);
}
