/*
 * GPU kernels of the reductions (reduce_sum, _mean, _max, _min, _prod),
 * argmax and softmax.
 *
 * A reduction is first normalised on the host (red_map): size-1 dims are
 * dropped and adjacent dims that are both kept or both reduced are merged,
 * so any axes list becomes alternating groups of kept and reduced dims.
 * Each output o then reads input offset koff(o) + roff(r) for r in [0, R).
 * Which kernel runs depends on the innermost group:
 *
 *   R <= 16              one thread per output, serial loop (coalesced across outputs)
 *   innermost reduced    "rows": one warp per output (R <= 1024), or one block per
 *                        (output, split) with a block reduction
 *   innermost kept       "columns": 32x8 tiles, 32 consecutive outputs across lanes
 *                        (coalesced), 8 rows of r per step, then a shared-memory combine
 *
 * When there are too few outputs to fill the device, the reduced range is
 * split into S chunks that write partials (partial[s * M + o]) and a second
 * kernel combines the S partials of each output with one warp. Every
 * combine order is fixed by the shapes and the SM count, and there are no
 * float atomics, so results are deterministic run to run.
 *
 * Accumulators: float for f16 and f32, double for f64, int64 for integers
 * (sum and prod wrap, then are truncated to the output width, which equals
 * wrapping arithmetic in the output type). argmax carries (value, index):
 * NaN beats every number, and ties go to the lower index, a combine that is
 * associative and commutative, so any tree gives numpy's first index.
 */
#include "common.cuh"

#define RED_SERIAL_MAX 16   /* R up to which one thread reduces a whole output */
#define RED_WARP_MAX 1024   /* R up to which one warp reduces one row */
#define COL_X 32            /* column tile: outputs per tile (lanes) */
#define COL_Y 8             /* column tile: rows of r per step */

/* ---- the normalised index space ------------------------------------------------- */

typedef struct red_map {
    int nk, nr;                    /* kept and reduced groups */
    int64_t kdims[XE_MAX_RANK], kstride[XE_MAX_RANK];
    int64_t rdims[XE_MAX_RANK], rstride[XE_MAX_RANK];
    int64_t M, R;                  /* outputs, elements per output */
    int64_t inner;                 /* columns: size of the innermost kept group */
    bool rows;                     /* the innermost group is reduced (or there is none) */
} red_map;

/* Groups of in's dims by mask (true: reduced), size-1 dims dropped. */
static void red_build(const xe_shape *in, const bool *mask, red_map *m)
{
    int64_t gdim[XE_MAX_RANK];
    bool gred[XE_MAX_RANK];
    int ng = 0;
    for (int d = 0; d < in->rank; d++) {
        if (in->dims[d] == 1)
            continue;
        if (ng > 0 && gred[ng - 1] == mask[d]) {
            gdim[ng - 1] *= in->dims[d];
            continue;
        }
        gdim[ng] = in->dims[d];
        gred[ng++] = mask[d];
    }
    memset(m, 0, sizeof *m);
    m->M = m->R = 1;
    int64_t stride = 1;
    for (int g = ng - 1; g >= 0; g--) { /* innermost first, so walk back */
        if (gred[g]) {
            m->rdims[m->nr] = gdim[g];
            m->rstride[m->nr++] = stride;
            m->R *= gdim[g];
        } else {
            m->kdims[m->nk] = gdim[g];
            m->kstride[m->nk++] = stride;
            m->M *= gdim[g];
        }
        stride *= gdim[g];
    }
    /* the loops above stored groups innermost first; kernels want them outermost first */
    for (int i = 0, j = m->nk - 1; i < j; i++, j--) {
        int64_t t = m->kdims[i]; m->kdims[i] = m->kdims[j]; m->kdims[j] = t;
        t = m->kstride[i]; m->kstride[i] = m->kstride[j]; m->kstride[j] = t;
    }
    for (int i = 0, j = m->nr - 1; i < j; i++, j--) {
        int64_t t = m->rdims[i]; m->rdims[i] = m->rdims[j]; m->rdims[j] = t;
        t = m->rstride[i]; m->rstride[i] = m->rstride[j]; m->rstride[j] = t;
    }
    m->rows = ng == 0 || gred[ng - 1];
    m->inner = m->rows ? 1 : gdim[ng - 1];
}

/* Input offset of index i taken row-major over n groups of dims with strides. */
__host__ __device__ __forceinline__ int64_t group_off(const int64_t *dims, const int64_t *stride, int n,
                                                     int64_t i)
{
    int64_t off = 0;
    for (int g = n - 1; g >= 0; g--) {
        int64_t q = i / dims[g];
        off += (i - q * dims[g]) * stride[g];
        i = q;
    }
    return off;
}

/* Input offset of output o (row-major over the kept groups). */
__host__ __device__ __forceinline__ int64_t koff(const red_map &m, int64_t o)
{
    return group_off(m.kdims, m.kstride, m.nk, o);
}

/* Input offset of reduced index r (row-major over the reduced groups). */
__host__ __device__ __forceinline__ int64_t roff(const red_map &m, int64_t r)
{
    return m.nr == 1 ? r * m.rstride[0] : group_off(m.rdims, m.rstride, m.nr, r);
}

/* ---- reduction ops --------------------------------------------------------------- */

/* Accumulator of a storage type: float, double or int64. */
template <typename T> struct AccOf { typedef int64_t type; };
template <> struct AccOf<float> { typedef float type; };
template <> struct AccOf<xe_f16> { typedef float type; };
template <> struct AccOf<double> { typedef double type; };

/* Largest and smallest accumulator values (infinities for floats). */
template <typename A> __device__ __forceinline__ A acc_lowest() { return -(A)INFINITY; }
template <> __device__ __forceinline__ int64_t acc_lowest<int64_t>() { return INT64_MIN; }
template <typename A> __device__ __forceinline__ A acc_highest() { return (A)INFINITY; }
template <> __device__ __forceinline__ int64_t acc_highest<int64_t>() { return INT64_MAX; }

/* NaN-propagating max/min on floats, plain on integers. */
__device__ __forceinline__ float acc_max(float a, float b) { return xe_max_f32(a, b); }
__device__ __forceinline__ double acc_max(double a, double b) { return xe_max_f64(a, b); }
__device__ __forceinline__ int64_t acc_max(int64_t a, int64_t b) { return a > b ? a : b; }
__device__ __forceinline__ float acc_min(float a, float b) { return xe_min_f32(a, b); }
__device__ __forceinline__ double acc_min(double a, double b) { return xe_min_f64(a, b); }
__device__ __forceinline__ int64_t acc_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* Integer sums and products wrap (two's complement) instead of overflowing. */
__device__ __forceinline__ float acc_add(float a, float b) { return a + b; }
__device__ __forceinline__ double acc_add(double a, double b) { return a + b; }
__device__ __forceinline__ int64_t acc_add(int64_t a, int64_t b) { return xe_add_i64(a, b); }
__device__ __forceinline__ float acc_mul(float a, float b) { return a * b; }
__device__ __forceinline__ double acc_mul(double a, double b) { return a * b; }
__device__ __forceinline__ int64_t acc_mul(int64_t a, int64_t b) { return xe_mul_i64(a, b); }

/* Accumulator to storage; integers truncate to the output width (wrapping). */
template <typename T, typename A> __device__ __forceinline__ void acc_store(T *o, int64_t i, A v)
{
    Num<T>::store(o, i, (typename Num<T>::C)v);
}
template <> __device__ __forceinline__ void acc_store<int32_t, int64_t>(int32_t *o, int64_t i, int64_t v)
{
    o[i] = (int32_t)(uint32_t)(uint64_t)v;
}

enum red_kind {
    RED_SUM,  /* reduce_sum: 0 for an empty range */
    RED_MEAN, /* reduce_mean: NaN (floats) or 0 (ints) for an empty range; ints truncate */
    RED_MAX,  /* reduce_max: NaN propagates */
    RED_MIN,  /* reduce_min: NaN propagates */
    RED_PROD, /* reduce_prod: 1 for an empty range */
};

/* The ops a reduction kernel needs: identity, make (element r of value v), combine, put. */
template <typename T, int KIND> struct RedOp {
    typedef typename AccOf<T>::type Acc;
    __device__ static Acc identity()
    {
        return KIND == RED_PROD ? (Acc)1 : KIND == RED_MAX ? acc_lowest<Acc>()
                                       : KIND == RED_MIN   ? acc_highest<Acc>()
                                                           : (Acc)0;
    }
    __device__ static Acc make(typename Num<T>::C v, int64_t) { return (Acc)v; }
    __device__ static Acc combine(Acc a, Acc b)
    {
        switch (KIND) {
        case RED_MAX: return acc_max(a, b);
        case RED_MIN: return acc_min(a, b);
        case RED_PROD: return acc_mul(a, b);
        default: return acc_add(a, b);
        }
    }
    __device__ static void put(void *out, int64_t o, Acc v, int64_t R)
    {
        if constexpr (KIND == RED_MEAN) {
            if constexpr (std::is_same<Acc, int64_t>::value)
                v = R ? v / R : (Acc)0;
            else
                v = v / (Acc)R;
        }
        acc_store<T, Acc>((T *)out, o, v);
    }
    __device__ static Acc shfl(Acc v, int delta) { return __shfl_down_sync(0xffffffffu, v, delta); }
};

/* argmax's accumulator: a value and its reduced index. */
template <typename A> struct ArgAcc {
    A v;
    int64_t i;
};

template <typename T> struct ArgOp {
    typedef typename AccOf<T>::type V;
    typedef ArgAcc<V> Acc;
    __device__ static Acc identity() { return Acc{acc_lowest<V>(), INT64_MAX}; }
    __device__ static Acc make(typename Num<T>::C v, int64_t r) { return Acc{(V)v, r}; }
    __device__ static Acc combine(Acc a, Acc b)
    {
        bool an = a.v != a.v, bn = b.v != b.v; /* always false for integers */
        if (an || bn) {
            if (an && bn)
                return a.i < b.i ? a : b;
            return an ? a : b;
        }
        if (a.v > b.v)
            return a;
        if (b.v > a.v)
            return b;
        return a.i < b.i ? a : b;
    }
    __device__ static void put(void *out, int64_t o, Acc v, int64_t) { ((int64_t *)out)[o] = v.i; }
    __device__ static Acc shfl(Acc v, int delta)
    {
        Acc r;
        r.v = __shfl_down_sync(0xffffffffu, v.v, delta);
        r.i = __shfl_down_sync(0xffffffffu, v.i, delta);
        return r;
    }
};

/* Lane 0 ends with the combine of the warp's 32 values. */
template <typename Op> __device__ __forceinline__ typename Op::Acc warp_reduce(typename Op::Acc v)
{
#pragma unroll
    for (int d = XK_WARP / 2; d > 0; d >>= 1)
        v = Op::combine(v, Op::shfl(v, d));
    return v;
}

/* Thread 0 ends with the combine of the block's values (1-D blocks of XK_BLOCK). */
template <typename Op>
__device__ __forceinline__ typename Op::Acc block_reduce(typename Op::Acc v, typename Op::Acc *sm)
{
    int lane = threadIdx.x % XK_WARP, warp = threadIdx.x / XK_WARP;
    v = warp_reduce<Op>(v);
    if (lane == 0)
        sm[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < XK_BLOCK / XK_WARP ? sm[lane] : Op::identity();
        v = warp_reduce<Op>(v);
    }
    __syncthreads(); /* sm may be reused by the caller's next iteration */
    return v;
}

/* ---- reduction kernels ---------------------------------------------------------------- */

/* One thread per output, r in order. */
template <typename T, typename Op>
__global__ void __launch_bounds__(XK_BLOCK)
    k_red_serial(const T *__restrict__ in, void *out, red_map m)
{
    int64_t step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < m.M; o += step) {
        const T *p = in + koff(m, o);
        typename Op::Acc acc = Op::identity();
        for (int64_t r = 0; r < m.R; r++)
            acc = Op::combine(acc, Op::make(Num<T>::load(p, roff(m, r)), r));
        Op::put(out, o, acc, m.R);
    }
}

/* One warp per output row. */
template <typename T, typename Op>
__global__ void __launch_bounds__(XK_BLOCK)
    k_red_warp(const T *__restrict__ in, void *out, red_map m)
{
    int lane = threadIdx.x % XK_WARP;
    int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / XK_WARP;
    int64_t nw = (int64_t)blockDim.x * gridDim.x / XK_WARP;
    for (int64_t o = w; o < m.M; o += nw) {
        const T *p = in + koff(m, o);
        typename Op::Acc acc = Op::identity();
        for (int64_t r = lane; r < m.R; r += XK_WARP)
            acc = Op::combine(acc, Op::make(Num<T>::load(p, roff(m, r)), r));
        acc = warp_reduce<Op>(acc);
        if (lane == 0)
            Op::put(out, o, acc, m.R);
    }
}

/* One block per (output row, split s); S == 1 stores outputs, else partials[s * M + o]. */
template <typename T, typename Op>
__global__ void __launch_bounds__(XK_BLOCK)
    k_red_block(const T *__restrict__ in, void *out, typename Op::Acc *partial, red_map m, int S)
{
    __shared__ typename Op::Acc sm[XK_BLOCK / XK_WARP];
    int64_t chunk = (m.R + S - 1) / S;
    for (int64_t w = blockIdx.x; w < m.M * S; w += gridDim.x) {
        int64_t o = w / S, s = w - o * S;
        int64_t lo = s * chunk, hi = lo + chunk < m.R ? lo + chunk : m.R;
        const T *p = in + koff(m, o);
        typename Op::Acc acc = Op::identity();
        for (int64_t r = lo + threadIdx.x; r < hi; r += XK_BLOCK)
            acc = Op::combine(acc, Op::make(Num<T>::load(p, roff(m, r)), r));
        acc = block_reduce<Op>(acc, sm);
        if (threadIdx.x == 0) {
            if (S == 1)
                Op::put(out, o, acc, m.R);
            else
                partial[s * m.M + o] = acc;
        }
    }
}

/* 32x8 tiles: lane x owns output o (consecutive along the innermost kept group). */
template <typename T, typename Op>
__global__ void __launch_bounds__(COL_X *COL_Y)
    k_red_cols(const T *__restrict__ in, void *out, typename Op::Acc *partial, red_map m, int S)
{
    __shared__ typename Op::Acc sm[COL_Y][COL_X + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t per_outer = (m.inner + COL_X - 1) / COL_X, tiles = (m.M / m.inner) * per_outer;
    int64_t chunk = (m.R + S - 1) / S;
    for (int64_t w = blockIdx.x; w < tiles * S; w += gridDim.x) {
        int64_t s = w / tiles, t = w - s * tiles;
        int64_t outer = t / per_outer, j = (t - outer * per_outer) * COL_X + tx;
        int64_t o = outer * m.inner + j;
        bool valid = j < m.inner;
        int64_t lo = s * chunk, hi = lo + chunk < m.R ? lo + chunk : m.R;
        typename Op::Acc acc = Op::identity();
        if (valid) {
            const T *p = in + koff(m, o);
            for (int64_t r = lo + ty; r < hi; r += COL_Y)
                acc = Op::combine(acc, Op::make(Num<T>::load(p, roff(m, r)), r));
        }
        sm[ty][tx] = acc;
        __syncthreads();
        if (ty == 0 && valid) {
            for (int y = 1; y < COL_Y; y++)
                acc = Op::combine(acc, sm[y][tx]);
            if (S == 1)
                Op::put(out, o, acc, m.R);
            else
                partial[s * m.M + o] = acc;
        }
        __syncthreads();
    }
}

/* Second stage: one warp combines the S partials of an output. */
template <typename Op>
__global__ void __launch_bounds__(XK_BLOCK)
    k_red_finish(const typename Op::Acc *__restrict__ partial, void *out, int64_t M, int S, int64_t R)
{
    int lane = threadIdx.x % XK_WARP;
    int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / XK_WARP;
    int64_t nw = (int64_t)blockDim.x * gridDim.x / XK_WARP;
    for (int64_t o = w; o < M; o += nw) {
        typename Op::Acc acc = Op::identity();
        for (int s = lane; s < S; s += XK_WARP)
            acc = Op::combine(acc, partial[(int64_t)s * M + o]);
        acc = warp_reduce<Op>(acc);
        if (lane == 0)
            Op::put(out, o, acc, R);
    }
}

/* ---- reduction launch --------------------------------------------------------------- */

/* Splits of the reduced range so that items * S blocks fill the device. */
static int red_splits(int64_t items, int64_t R, int64_t min_per_split)
{
    int64_t target = 4 * (int64_t)(xe_gpu_sm_count() > 0 ? xe_gpu_sm_count() : 1);
    if (items >= target)
        return 1;
    int64_t s = (target + items - 1) / items, cap = R / min_per_split;
    if (s > cap)
        s = cap;
    return s < 1 ? 1 : (int)s;
}

/* Blocks for a loop over `items` work items, at most 8 per SM. */
static unsigned red_grid(int64_t items)
{
    return xk_grid(items, 1);
}

/* The column or row-block kernel with S splits, then the combine of the partials. */
template <typename T, typename Op>
static xe_code red_split_launch(const xe_kernel_args *a, const red_map &m, xe_status *st)
{
    const T *in = (const T *)a->in[0]->data;
    void *out = a->out->data;
    cudaStream_t s = xk_stream();
    int64_t items = m.rows ? m.M : (m.M / m.inner) * ((m.inner + COL_X - 1) / COL_X);
    int S = red_splits(items, m.R, m.rows ? 2048 : 256);
    typename Op::Acc *partial = NULL;
    if (S > 1) {
        partial = (typename Op::Acc *)xe_gpu_alloc((size_t)S * (size_t)m.M * sizeof *partial, st);
        if (!partial)
            return xe_status_prefix(st, "node %s (%s): ", a->node->name, xe_op_name(a->node->op));
    }
    if (m.rows)
        k_red_block<T, Op><<<red_grid(items * S), XK_BLOCK, 0, s>>>(in, out, partial, m, S);
    else
        k_red_cols<T, Op><<<red_grid(items * S), dim3(COL_X, COL_Y), 0, s>>>(in, out, partial, m, S);
    xe_code c = xk_launched(a, m.rows ? "row reduction kernel" : "column reduction kernel", st);
    if (c == XE_OK && S > 1) {
        k_red_finish<Op><<<xk_grid(m.M * XK_WARP, XK_BLOCK), XK_BLOCK, 0, s>>>(partial, out, m.M, S, m.R);
        c = xk_launched(a, "reduction combine kernel", st);
    }
    xe_gpu_free(partial); /* stream-ordered: freed after the kernels that use it */
    return c;
}

/* Picks the kernel for map m (see the file comment). */
template <typename T, typename Op>
static xe_code red_launch(const xe_kernel_args *a, const red_map &m, xe_status *st)
{
    if (m.M == 0)
        return XE_OK;
    const T *in = (const T *)a->in[0]->data;
    void *out = a->out->data;
    cudaStream_t s = xk_stream();
    if (m.R <= RED_SERIAL_MAX) {
        k_red_serial<T, Op><<<xk_grid(m.M, XK_BLOCK), XK_BLOCK, 0, s>>>(in, out, m);
        return xk_launched(a, "serial reduction kernel", st);
    }
    if (m.rows && m.R <= RED_WARP_MAX) {
        k_red_warp<T, Op><<<xk_grid(m.M * XK_WARP, XK_BLOCK), XK_BLOCK, 0, s>>>(in, out, m);
        return xk_launched(a, "warp reduction kernel", st);
    }
    return red_split_launch<T, Op>(a, m, st);
}

template <int KIND> static xe_code reduce_kind(const xe_kernel_args *a, const red_map &m, xe_status *st)
{
    switch (a->in[0]->dtype) {
    case XE_F32: return red_launch<float, RedOp<float, KIND>>(a, m, st);
    case XE_F64: return red_launch<double, RedOp<double, KIND>>(a, m, st);
    case XE_F16: return red_launch<xe_f16, RedOp<xe_f16, KIND>>(a, m, st);
    case XE_I32: return red_launch<int32_t, RedOp<int32_t, KIND>>(a, m, st);
    case XE_I64: return red_launch<int64_t, RedOp<int64_t, KIND>>(a, m, st);
    default:
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (%s): no GPU kernel for %s", a->node->name,
                       xe_op_name(a->node->op), xe_dtype_name(a->in[0]->dtype));
    }
}

/* Reduced-dims mask from the node's axes attribute (default: all dims). */
static xe_code reduce_mask(const xe_kernel_args *a, bool *mask, xe_status *st)
{
    int rank = a->in[0]->shape.rank;
    const xe_attr *ax = xe_node_attr(a->node, "axes");
    for (int d = 0; d < XE_MAX_RANK; d++)
        mask[d] = !ax && d < rank;
    if (ax && ax->kind != XE_ATTR_INTS)
        return xe_fail(st, XE_ERR_RUNTIME, "node %s (%s): axes must be a list of integers",
                       a->node->name, xe_op_name(a->node->op));
    for (int k = 0; ax && k < ax->n; k++) {
        int64_t d = ax->ints[k] < 0 ? ax->ints[k] + rank : ax->ints[k];
        if (d < 0 || d >= rank)
            return xe_fail(st, XE_ERR_RUNTIME, "node %s (%s): bad axes", a->node->name,
                           xe_op_name(a->node->op));
        mask[d] = true;
    }
    return XE_OK;
}

extern "C" xe_code xe_gpu_reduce(const xe_kernel_args *a, xe_status *st)
{
    bool mask[XE_MAX_RANK];
    if (reduce_mask(a, mask, st) != XE_OK)
        return st->code;
    red_map m;
    red_build(&a->in[0]->shape, mask, &m);
    int op = a->node->op;
    if (m.R == 0 && m.M > 0 && (op == XE_OP_REDUCE_MAX || op == XE_OP_REDUCE_MIN))
        return xe_fail(st, XE_ERR_RUNTIME, "node %s (%s): reduction of an empty range has no identity",
                       a->node->name, xe_op_name(op));
    switch (op) {
    case XE_OP_REDUCE_SUM: return reduce_kind<RED_SUM>(a, m, st);
    case XE_OP_REDUCE_MEAN: return reduce_kind<RED_MEAN>(a, m, st);
    case XE_OP_REDUCE_MAX: return reduce_kind<RED_MAX>(a, m, st);
    case XE_OP_REDUCE_MIN: return reduce_kind<RED_MIN>(a, m, st);
    case XE_OP_REDUCE_PROD: return reduce_kind<RED_PROD>(a, m, st);
    default:
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (%s): not a reduction", a->node->name,
                       xe_op_name(op));
    }
}

/* ---- argmax ----------------------------------------------------------------------------- */

extern "C" xe_code xe_gpu_argmax(const xe_kernel_args *a, xe_status *st)
{
    int rank = a->in[0]->shape.rank;
    bool mask[XE_MAX_RANK] = {false};
    const xe_attr *ax = xe_node_attr(a->node, "axis");
    if (ax) { /* one axis; without it the input is flattened */
        int64_t d = ax->i < 0 ? ax->i + rank : ax->i;
        if (ax->kind != XE_ATTR_INT || d < 0 || d >= rank)
            return xe_fail(st, XE_ERR_RUNTIME, "node %s (argmax): bad axis", a->node->name);
        mask[d] = true;
    } else {
        for (int d = 0; d < rank; d++)
            mask[d] = true;
    }
    red_map m;
    red_build(&a->in[0]->shape, mask, &m);
    if (m.R == 0 && m.M > 0)
        return xe_fail(st, XE_ERR_RUNTIME, "node %s (argmax): argmax of an empty range", a->node->name);
    switch (a->in[0]->dtype) {
    case XE_F32: return red_launch<float, ArgOp<float>>(a, m, st);
    case XE_F64: return red_launch<double, ArgOp<double>>(a, m, st);
    case XE_F16: return red_launch<xe_f16, ArgOp<xe_f16>>(a, m, st);
    case XE_I32: return red_launch<int32_t, ArgOp<int32_t>>(a, m, st);
    case XE_I64: return red_launch<int64_t, ArgOp<int64_t>>(a, m, st);
    case XE_BOOL: return red_launch<uint8_t, ArgOp<uint8_t>>(a, m, st); /* first true, as numpy */
    default:
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (argmax): no GPU kernel for %s", a->node->name,
                       xe_dtype_name(a->in[0]->dtype));
    }
}

/* ---- softmax -------------------------------------------------------------------------------- */

/* All lanes end with the same combine (xor butterflies are symmetric). */
template <typename C> __device__ __forceinline__ C warp_all_max(C v)
{
#pragma unroll
    for (int d = XK_WARP / 2; d > 0; d >>= 1)
        v = acc_max(v, __shfl_xor_sync(0xffffffffu, v, d));
    return v;
}
template <typename C> __device__ __forceinline__ C warp_all_sum(C v)
{
#pragma unroll
    for (int d = XK_WARP / 2; d > 0; d >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
}

/* Every thread ends with the same block-wide max (IS_MAX) or sum. */
template <typename C, bool IS_MAX> __device__ C block_all(C v, C *sm)
{
    int lane = threadIdx.x % XK_WARP, warp = threadIdx.x / XK_WARP;
    v = IS_MAX ? warp_all_max(v) : warp_all_sum(v);
    if (lane == 0)
        sm[warp] = v;
    __syncthreads();
    v = sm[0];
    for (int k = 1; k < XK_BLOCK / XK_WARP; k++)
        v = IS_MAX ? acc_max(v, sm[k]) : v + sm[k];
    __syncthreads();
    return v;
}

__device__ __forceinline__ float sm_exp(float x) { return expf(x); }
__device__ __forceinline__ double sm_exp(double x) { return exp(x); }

/* Softmax of contiguous rows of length R: one warp (WARP) or one block per row. */
template <typename T, bool WARP>
__global__ void __launch_bounds__(XK_BLOCK)
    k_softmax_rows(const T *__restrict__ in, T *__restrict__ out, int64_t rows, int64_t R)
{
    typedef typename AccOf<T>::type C;
    __shared__ C sm[XK_BLOCK / XK_WARP];
    int lane = WARP ? threadIdx.x % XK_WARP : threadIdx.x, width = WARP ? XK_WARP : XK_BLOCK;
    int64_t first = WARP ? ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / XK_WARP : blockIdx.x;
    int64_t step = WARP ? (int64_t)blockDim.x * gridDim.x / XK_WARP : gridDim.x;
    for (int64_t row = first; row < rows; row += step) {
        const T *p = in + row * R;
        T *q = out + row * R;
        C mx = -(C)INFINITY, sum = 0;
        for (int64_t r = lane; r < R; r += width)
            mx = acc_max(mx, (C)Num<T>::load(p, r));
        mx = WARP ? warp_all_max(mx) : block_all<C, true>(mx, sm);
        for (int64_t r = lane; r < R; r += width)
            sum += sm_exp((C)Num<T>::load(p, r) - mx);
        sum = WARP ? warp_all_sum(sum) : block_all<C, false>(sum, sm);
        for (int64_t r = lane; r < R; r += width)
            Num<T>::store(q, r, (typename Num<T>::C)(sm_exp((C)Num<T>::load(p, r) - mx) / sum));
    }
}

/* Softmax along a non-innermost axis: one thread per (outer, j), coalesced across j. */
template <typename T>
__global__ void __launch_bounds__(XK_BLOCK)
    k_softmax_cols(const T *__restrict__ in, T *__restrict__ out, int64_t outer, int64_t R, int64_t inner)
{
    typedef typename AccOf<T>::type C;
    int64_t n = outer * inner, step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += step) {
        int64_t o = t / inner, j = t - o * inner;
        const T *p = in + o * R * inner + j;
        T *q = out + o * R * inner + j;
        C mx = -(C)INFINITY, sum = 0;
        for (int64_t r = 0; r < R; r++)
            mx = acc_max(mx, (C)Num<T>::load(p, r * inner));
        for (int64_t r = 0; r < R; r++)
            sum += sm_exp((C)Num<T>::load(p, r * inner) - mx);
        for (int64_t r = 0; r < R; r++)
            Num<T>::store(q, r * inner, (typename Num<T>::C)(sm_exp((C)Num<T>::load(p, r * inner) - mx) / sum));
    }
}

template <typename T>
static xe_code launch_softmax(const xe_kernel_args *a, int64_t outer, int64_t R, int64_t inner, xe_status *st)
{
    const T *in = (const T *)a->in[0]->data;
    T *out = (T *)a->out->data;
    cudaStream_t s = xk_stream();
    if (inner > 1)
        k_softmax_cols<T><<<xk_grid(outer * inner, XK_BLOCK), XK_BLOCK, 0, s>>>(in, out, outer, R, inner);
    else if (R <= RED_WARP_MAX)
        k_softmax_rows<T, true><<<xk_grid(outer * XK_WARP, XK_BLOCK), XK_BLOCK, 0, s>>>(in, out, outer, R);
    else
        k_softmax_rows<T, false><<<red_grid(outer), XK_BLOCK, 0, s>>>(in, out, outer, R);
    return xk_launched(a, "softmax kernel", st);
}

extern "C" xe_code xe_gpu_softmax(const xe_kernel_args *a, xe_status *st)
{
    const xe_shape *sh = &a->in[0]->shape;
    if (xe_tensor_numel(a->in[0]) == 0)
        return XE_OK;
    int64_t axis = xe_node_attr_int(a->node, "axis", -1);
    if (axis < 0)
        axis += sh->rank;
    if (axis < 0 || axis >= sh->rank)
        return xe_fail(st, XE_ERR_RUNTIME, "node %s (softmax): bad axis", a->node->name);
    int64_t outer = 1, inner = 1, R = sh->dims[axis];
    for (int d = 0; d < axis; d++)
        outer *= sh->dims[d];
    for (int d = (int)axis + 1; d < sh->rank; d++)
        inner *= sh->dims[d];
    switch (a->in[0]->dtype) {
    case XE_F32: return launch_softmax<float>(a, outer, R, inner, st);
    case XE_F64: return launch_softmax<double>(a, outer, R, inner, st);
    case XE_F16: return launch_softmax<xe_f16>(a, outer, R, inner, st);
    default:
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (softmax): no GPU kernel for %s", a->node->name,
                       xe_dtype_name(a->in[0]->dtype));
    }
}
